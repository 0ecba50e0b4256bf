/* Workspace search and suggested evidence: ranked passages of the workspace's documents
   (GET .../search/ and .../items/<id>/suggestions/), each a link that opens its document at
   the passage with it selected (#suggest=start-end;rank=n;via=...; document/main.js reads
   it), so the annotator trims and saves, and the saved evidence records the suggestion.
   Snippets enter the page as text nodes; the matched words (`marks`, code points in the
   snippet) are wrapped in <mark> elements built here. Keys: ↓/↑ move through the results
   (↓ from the search box to the first), Enter opens the focused one. */
import * as G from "./api.js";
import { cpLength, unitIndexes } from "./offsets.js";
import { api, pages, withQuery } from "./urls.js";

const SUGGESTIONS = 5;

/* Where a result opens: the document page's text view at the passage, pre-selected, for
   `set`/`item` (the text view: a PDF's or a rendered document's own view is another). */
export function passageHref(ws, hit, via, set, item) {
  const query = { set: set || null, item: item || null, parse: hit.parse, view: "text" };
  const url = withQuery(pages.document(ws, hit.document), query);
  return url + "#suggest=" + hit.start + "-" + hit.end + ";rank=" + hit.rank + ";via=" + via;
}

/* The snippet as text with its matched words marked. */
function snippetNode(hit) {
  const span = G.el("span", "passage-text");
  const text = hit.snippet;
  const points = hit.marks.flat();
  const units = unitIndexes(text, points);
  let at = 0;
  if (hit.snippet_start > hit.start) span.append("…");
  for (let i = 0; i < hit.marks.length; i++) {
    const s = units[2 * i], e = units[2 * i + 1];
    if (s > at) span.append(text.slice(at, s));
    span.append(G.el("mark", "", text.slice(s, e)));
    at = e;
  }
  span.append(text.slice(at));
  if (hit.snippet_start + cpLength(text) < hit.end) span.append("…");
  return span;
}

export function renderPassages(list, results, hrefOf) {
  list.replaceChildren();
  for (const hit of results) {
    const li = G.el("li");
    const link = G.el("a", "passage");
    link.href = hrefOf(hit);
    link.dataset.passage = hit.document + "@" + hit.start;
    const where = G.el("span", "passage-where");
    where.append(G.el("strong", "", hit.document), " · page " + hit.page);
    link.append(where, snippetNode(hit));
    li.append(link);
    list.append(li);
  }
}

/* ↓/↑ move through the list's links; ↓ from `input` (if any) enters it, ↑ from the first
   goes back to it. Enter on a link opens it, as links do. */
export function listKeys(list, input) {
  list.addEventListener("keydown", (e) => {
    const links = Array.from(list.querySelectorAll("a.passage"));
    const i = links.indexOf(document.activeElement);
    if (e.key === "ArrowDown" && i + 1 < links.length) { e.preventDefault(); links[i + 1].focus(); }
    if (e.key === "ArrowUp") {
      e.preventDefault();
      if (i > 0) links[i - 1].focus(); else if (input) input.focus();
    }
  });
  if (input) input.addEventListener("keydown", (e) => {
    const first = list.querySelector("a.passage");
    if (e.key === "ArrowDown" && first) { e.preventDefault(); first.focus(); }
  });
}

function counted(body, none) {
  if (!body.results.length) return none;
  const n = body.results.length;
  const partial = body.partial ? " (the workspace has more passages than one index holds: only the first were searched)" : "";
  return n + (n === 1 ? " passage" : " passages") + ", best first. ↓ and ↑ move, Enter opens." + partial;
}

function setupSearch(root) {
  const ws = root.dataset.workspace, set = root.dataset.set, item = root.dataset.item;
  const form = root.querySelector("[data-ps-form]");
  const input = root.querySelector("[data-ps-input]");
  const status = root.querySelector("[data-ps-status]");
  const list = root.querySelector("[data-ps-results]");
  let seq = 0;
  listKeys(list, input);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const q = input.value.trim();
    if (!q) { status.textContent = "Type the words the evidence would use."; return; }
    const mine = ++seq;
    status.textContent = "Searching…";
    try {
      const body = await G.request("GET", withQuery(api.search(ws), { q: q }));
      if (mine !== seq) return;
      renderPassages(list, body.results, (hit) => passageHref(ws, hit, "search", set, item));
      status.textContent = counted(body, "No passage has those words. Try other words, or fewer.");
    } catch (err) {
      if (mine === seq) status.textContent = err.message;
    }
  });
}

async function setupSuggestions(root) {
  const ws = root.dataset.workspace, set = root.dataset.set, item = root.dataset.item;
  const status = root.querySelector("[data-sugg-status]");
  const list = root.querySelector("[data-sugg-results]");
  listKeys(list, null);
  try {
    const body = await G.request("GET", withQuery(api.suggestions(ws, set, item), { limit: SUGGESTIONS }));
    renderPassages(list, body.results, (hit) => passageHref(ws, hit, "suggestions", set, item));
    status.textContent = counted(body, "No passage shares words with this question yet (documents are indexed once parsed).");
  } catch (err) {
    status.textContent = "Could not load suggestions: " + err.message;
  }
}

document.querySelectorAll("[data-passage-search]").forEach(setupSearch);
document.querySelectorAll("[data-suggestions]").forEach(setupSuggestions);
