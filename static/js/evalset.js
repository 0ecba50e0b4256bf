/* Eval set page: filters and paging swap the items table in place (the server renders the
   partial), and the "new item" form creates an item through the API and opens it. */
(function () {
  "use strict";
  const G = window.Groundwork;
  const filters = document.querySelector("[data-item-filters]");
  const table = document.querySelector("[data-items-table]");
  const busy = filters && filters.querySelector("[data-busy]");

  async function load(url, push) {
    if (busy) busy.hidden = false;
    try {
      const response = await fetch(url, { headers: { "X-Partial": "items" }, credentials: "same-origin" });
      if (!response.ok) throw new Error("the server answered " + response.status);
      table.innerHTML = await response.text(); // our own server-rendered, escaped partial
      if (push) history.pushState({ items: true }, "", url);
    } catch (err) {
      G.toast("Could not load the items: " + err.message, "error");
    } finally {
      if (busy) busy.hidden = true;
    }
  }

  if (filters && table) {
    filters.addEventListener("change", () => {
      const params = new URLSearchParams(new FormData(filters));
      for (const [k, v] of Array.from(params.entries())) if (!v) params.delete(k);
      const query = params.toString();
      load(window.location.pathname + (query ? "?" + query : ""), true);
    });
    table.addEventListener("click", (e) => {
      const link = e.target.closest("[data-page-link]");
      if (!link) return;
      e.preventDefault();
      load(link.href, true);
    });
    window.addEventListener("popstate", () => {
      const params = new URLSearchParams(window.location.search);
      for (const sel of filters.querySelectorAll("select")) sel.value = params.get(sel.name) || "";
      load(window.location.href, false);
    });
  }

  const form = document.querySelector("[data-new-item]");
  if (!form) return;
  const ws = form.dataset.workspace;
  const set = form.dataset.set;
  G.questionChecks(form.elements.question, {
    workspace: ws, set: set,
    counter: form.querySelector('[data-char-count="new-question"]'),
    similarBox: form.querySelector("[data-similar]"),
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    G.clearErrors(form);
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    const data = {
      id: form.elements.id.value.trim(),
      question: form.elements.question.value,
      qtype: form.elements.qtype.value.trim() || null,
      answer: form.elements.answer.value.trim() || null,
    };
    try {
      const item = await G.request("POST", G.apiBase(ws) + "/evalsets/" + encodeURIComponent(set) + "/items/", data);
      window.location.href = "/w/" + encodeURIComponent(ws) + "/sets/" + encodeURIComponent(set) + "/items/" + encodeURIComponent(item.id) + "/";
    } catch (err) {
      G.showErrors(form, err);
      button.disabled = false;
    }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "n" && !e.ctrlKey && !e.metaKey && !e.altKey && !e.defaultPrevented && !G.isTyping(e.target)) {
      e.preventDefault();
      form.elements.question.focus();
    }
  });
})();
