// Home page: accept or decline a workspace invitation through the API; mark inbox
// notifications read (one, or all) and keep the header's count in step.
import * as G from "./api.js";
import { api } from "./urls.js";

const box = document.querySelector("[data-invitations]");
// the answers are drawn disabled: they work from here on
if (box) box.querySelectorAll("button[data-invitation]").forEach((b) => { b.disabled = false; });
if (box) box.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-invitation]");
  if (!button) return;
  const slug = button.dataset.invitation;
  const answer = button.dataset.answer;
  button.disabled = true;
  try {
    await G.request("POST", api.invitation(slug, answer));
    window.location.reload();
  } catch (err) {
    button.disabled = false;
    G.toast(err.message, "error");
  }
});

const inbox = document.querySelector("[data-inbox]");
if (inbox) inboxPanel(inbox);

function inboxPanel(inbox) {
  const all = inbox.querySelector("[data-inbox-all]");
  const summary = inbox.querySelector("[data-inbox-summary]");

  function showUnread(unread) {
    summary.textContent = unread ? unread + " unread" : "nothing unread";
    G.setInboxCount(unread);
    if (all) {
      all.disabled = unread === 0;
      all.title = unread === 0 ? "Nothing is unread" : "";
    }
  }

  function markShown(li) {
    li.classList.remove("unread");
    const button = li.querySelector("[data-mark-read]");
    if (button) button.remove();
  }

  async function markRead(ids, button) {
    if (button) button.disabled = true;
    try {
      const body = await G.request("POST", api.inboxRead(), ids ? { ids: ids } : {});
      const rows = ids ? ids.map((id) => inbox.querySelector('[data-notification="' + CSS.escape(id) + '"]'))
        : Array.from(inbox.querySelectorAll("[data-notification]"));
      rows.forEach((li) => li && markShown(li));
      showUnread(body.unread);
      return true;
    } catch (err) {
      if (button) button.disabled = false;
      G.toast(err.message, "error");
      return false;
    }
  }

  inbox.addEventListener("click", (event) => {
    const button = event.target.closest("[data-mark-read]");
    if (button) {
      const li = button.closest("[data-notification]");
      const next = li.nextElementSibling && li.nextElementSibling.querySelector("[data-mark-read], a");
      markRead([li.dataset.notification], button).then((done) => { if (done && next) next.focus(); });
      return;
    }
    // Opening a notification's item reads it; the request must not hold up the link.
    const link = event.target.closest("[data-notification-link]");
    if (link) {
      const li = link.closest("[data-notification]");
      if (li.classList.contains("unread")) {
        G.request("POST", api.inboxRead(), { ids: [li.dataset.notification] }, { keepalive: true })
          .catch(() => { /* still unread: the next visit shows it again */ });
      }
    }
  });
  if (all) all.addEventListener("click", () => markRead(null, all));
}
