/* The item page's discussion: comments (on the item or one piece of evidence), replies, and
   the history. Posting goes through the comments API; the section is then re-rendered by the
   server and swapped in, so the page never reloads and there is one way to draw a comment. */
import * as G from "./api.js";
import { api } from "./urls.js";

function section() { return document.querySelector("[data-discussion]"); }

async function refresh() {
  const response = await fetch(window.location.pathname, { credentials: "same-origin" });
  const html = await response.text();
  const fresh = new DOMParser().parseFromString(html, "text/html").querySelector("[data-discussion]");
  if (fresh) section().replaceWith(fresh);
}

document.addEventListener("click", (event) => {
  const reply = event.target.closest("[data-reply]");
  const cancel = event.target.closest("[data-cancel-reply]");
  const form = section() && section().querySelector("[data-comment-form]");
  if (!form) return;
  if (reply) {
    form.querySelector("[data-parent]").value = reply.dataset.reply;
    form.querySelector("[data-replying-to]").textContent = reply.dataset.replyAuthor;
    form.querySelector("[data-replying]").hidden = false;
    form.querySelector("textarea").focus();
  } else if (cancel) {
    form.querySelector("[data-parent]").value = "";
    form.querySelector("[data-replying]").hidden = true;
  }
});

document.addEventListener("submit", async (event) => {
  const form = event.target.closest("[data-comment-form]");
  if (!form) return;
  event.preventDefault();
  G.clearErrors(form);
  const data = { body: form.elements.body.value };
  if (form.elements.parent.value) data.parent = form.elements.parent.value;
  if (form.elements.anchor && form.elements.anchor.value) data.anchor = form.elements.anchor.value;
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const d = section().dataset;
    await G.request("POST", api.comments(d.workspace, d.set, d.item), data);
    await refresh();
    G.toast("Comment added.", "info");
  } catch (err) {
    G.showErrors(form, err);
    button.disabled = false;
  }
});

document.addEventListener("keydown", (event) => {
  const form = event.target.closest && event.target.closest("[data-comment-form]");
  if (form && event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    form.requestSubmit();
  }
});
