/* Eval set page: the search box, filters and paging swap the items table in place (the server
   renders the partial) and keep what was asked in the URL ("/" goes to the search box, as
   shortcuts.js does for any [data-search]); the
   "new item" form creates an item through the API and opens it. */
import * as G from "./api.js";
import { questionChecks } from "./question_checks.js";
import { api, pages } from "./urls.js";

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

const search = filters && filters.querySelector("[data-item-search]");
let lastQuery = null;
function applyFilters() {
  const params = new URLSearchParams(new FormData(filters));
  for (const [k, v] of Array.from(params.entries())) if (!v.trim()) params.delete(k);
  const query = params.toString();
  if (query === lastQuery) return;
  lastQuery = query;
  load(window.location.pathname + (query ? "?" + query : ""), true);
}
if (filters && table) {
  lastQuery = window.location.search.replace(/^\?/, "");
  let typing = null;
  filters.addEventListener("change", (e) => { if (e.target !== search) applyFilters(); });
  filters.addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(typing); applyFilters(); });
  if (search) {
    search.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(applyFilters, 250); });
    search.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && search.value) { e.preventDefault(); search.value = ""; applyFilters(); }
    });
  }
  table.addEventListener("click", (e) => {
    const link = e.target.closest("[data-page-link]");
    if (!link) return;
    e.preventDefault();
    load(link.href, true);
  });
  window.addEventListener("popstate", () => {
    const params = new URLSearchParams(window.location.search);
    for (const sel of filters.querySelectorAll("select")) sel.value = params.get(sel.name) || "";
    if (search) search.value = params.get("q") || "";
    lastQuery = window.location.search.replace(/^\?/, "");
    load(window.location.href, false);
  });
}

const form = document.querySelector("[data-new-item]");
if (form) newItemForm(form);

function newItemForm(form) {
  const ws = form.dataset.workspace;
  const set = form.dataset.set;
  questionChecks(form.elements.question, {
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
      const item = await G.request("POST", api.items(ws, set), data);
      window.location.href = pages.item(ws, set, item.id);
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
}
