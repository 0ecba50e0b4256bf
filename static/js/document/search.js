/* Search inside the document: the whole parse is searched on the server (lazy pages defeat the
   browser's own find), the hits are listed with page and snippet, and a hit is jumped to and
   marked. `/` or Ctrl+F opens the box, Enter / Shift+Enter go to the next / previous hit, Esc
   closes it.

   The hook for other views of the document: going to a hit dispatches a cancelable
   `gw:jump` event on `document` with `detail = {parse, page, start, end, text, reason:
   "search"}` (offsets are code points in `parse`). A view that shows the page itself (a
   rendered PDF or HTML) handles it and calls `preventDefault()`; otherwise the text view
   loads the page, scrolls to the hit and marks it. `gw:search-clear` is dispatched when the
   marks should go. `window.groundworkDocument.search(query)` runs a search from a script. */

import * as G from "../api.js";
import { api, withQuery } from "../urls.js";

const LIMIT = 100; // hits per request

export function setupSearch(ctx) {
  const { cfg, pagesEl } = ctx;
  const panel = document.querySelector("[data-doc-search]");
  const opener = document.querySelector("[data-search-open]");
  if (!panel) return null;
  const form = panel.querySelector("[data-search-form]");
  const input = panel.querySelector("[data-search-input]");
  const countEl = panel.querySelector("[data-search-count]");
  const list = panel.querySelector("[data-search-hits]");
  const more = panel.querySelector("[data-search-more]");
  const prev = panel.querySelector("[data-search-prev]");
  const next = panel.querySelector("[data-search-next]");
  // The parse that backs the view on show (the PDF view's pdfium parse, say: ctx.searchParse).
  const parseNow = () => (ctx.searchParse ? ctx.searchParse() : cfg.parse);
  const urlOf = (parse) => api.parseSearch(cfg.workspace, cfg.document, parse);
  // The text view marks its own hits; a view drawn another way (rendered) has no rangeFor.
  const canMark = !!(window.CSS && CSS.highlights && typeof Highlight !== "undefined") && typeof ctx.pages.rangeFor === "function";

  let query = "";
  let searched = null; // the parse the hits are in
  let hits = [];
  let total = 0;
  let lowerBound = false;
  let nextAfter = null;
  let stoppedPage = null; // the page the server's search stopped at (its work per request), if it did
  let current = -1;
  let asked = 0; // the latest request; older answers are dropped
  let typing = null;

  /* -- where the box sits: never over the annotations panel ------------------------------------
     Beside the panel (a wide screen) the box is fixed just left of it, placed again whenever
     the panel's size changes (shown, hidden, the window resized). On a narrow screen the panel
     is above the document and the box at the foot of the screen (css/search.css); there the
     two take turns: opening one hides the other's list. */
  const docPanel = document.querySelector("[data-doc-panel]");
  const narrow = () => window.matchMedia("(max-width: 1099px)").matches;
  function place() {
    panel.style.right = "";
    if (!docPanel || panel.hidden) return;
    if (narrow()) {
      if (ctx.panel && !docPanel.classList.contains("collapsed")) ctx.panel.setOpen(false, false);
      return;
    }
    const left = docPanel.getBoundingClientRect().left;
    panel.style.right = Math.max(16, document.documentElement.clientWidth - left + 12) + "px";
  }
  if (docPanel) new ResizeObserver(place).observe(docPanel);
  window.addEventListener("resize", place);

  /* -- opening and closing ---------------------------------------------------------------- */
  function open() {
    panel.hidden = false;
    place();
    if (opener) opener.setAttribute("aria-expanded", "true");
    const selected = String(window.getSelection() || "").trim();
    if (selected && selected.length <= 200 && !selected.includes("\n") && !input.value) input.value = selected;
    input.focus();
    input.select();
  }
  function close() {
    panel.hidden = true;
    if (opener) opener.setAttribute("aria-expanded", "false");
    clearMarks();
    document.dispatchEvent(new CustomEvent("gw:search-clear"));
    if (document.activeElement === input) input.blur(); // the page's keys work again
  }
  if (opener) opener.addEventListener("click", () => (panel.hidden ? open() : close()));
  panel.querySelector("[data-search-close]").addEventListener("click", close);

  // Capture on window, so these run before the site-wide "/" (shortcuts.js) and the page keys.
  window.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.altKey) return;
    const ctrlF = (e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F");
    if (ctrlF) {
      if (document.activeElement === input) return; // a second Ctrl+F: the browser's own
      e.preventDefault();
      open();
      return;
    }
    if (e.key === "/" && !e.ctrlKey && !e.metaKey && !G.isTyping(e.target) && !(ctx.keys && ctx.keys.caret())) {
      const dialog = document.querySelector("dialog[open]");
      if (dialog) return;
      e.preventDefault();
      open();
    }
  }, true);

  panel.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); close(); }
  });
  // Esc on the document itself (not in a field, no popover or dialog) clears the marks too.
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || e.defaultPrevented || panel.hidden || G.isTyping(e.target)) return;
    if ((ctx.popover && ctx.popover.isOpen()) || document.querySelector("dialog[open]")) return;
    e.preventDefault();
    close();
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      const q = input.value.trim();
      if (q !== query) { clearTimeout(typing); run(q); }
      else step(e.shiftKey ? -1 : 1);
    }
  });
  input.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { const q = input.value.trim(); if (q !== query) run(q, { jump: false }); }, 350);
  });
  form.addEventListener("submit", (e) => e.preventDefault());
  prev.addEventListener("click", () => step(-1));
  next.addEventListener("click", () => step(1));
  more.addEventListener("click", () => loadMore());
  list.addEventListener("click", (e) => {
    const button = e.target.closest("[data-hit]");
    if (button) go(Number(button.dataset.hit));
  });

  /* -- asking the server ------------------------------------------------------------------ */
  function say(text) { countEl.textContent = text; }
  function counted() {
    // A count stopped by the search's work limit holds what it found so far: "at least".
    const bound = stoppedPage != null ? "at least " + total.toLocaleString() : "more than " + (total - 1).toLocaleString();
    return (lowerBound ? bound : total.toLocaleString()) + " hit" + (total === 1 ? "" : "s") + stoppedNote();
  }
  function stoppedNote() {
    return stoppedPage == null ? "" : " up to page " + stoppedPage + " (the search stops there; More hits goes on)";
  }
  function sayNone() {
    say(stoppedPage == null ? "No hits for “" + query + "” in this parse." : "No hits for “" + query + "”" + stoppedNote() + ".");
  }
  function sayWhere() {
    if (!hits.length) return;
    const hit = hits[current];
    say((current >= 0 ? (current + 1).toLocaleString() + " of " : "") + counted() + (hit ? " · page " + hit.page : ""));
  }

  async function run(q, opts) {
    const jump = !opts || opts.jump !== false;
    query = q;
    searched = parseNow();
    hits = []; total = 0; lowerBound = false; nextAfter = null; stoppedPage = null; current = -1;
    list.replaceChildren();
    clearMarks();
    more.hidden = true;
    updateButtons();
    if (!q) { say("Any case, any spacing. Enter: next hit, Shift+Enter: previous."); return; }
    const mine = ++asked;
    say("Searching…");
    panel.setAttribute("aria-busy", "true");
    try {
      const data = await G.request("GET", withQuery(urlOf(searched), { q, limit: LIMIT }));
      if (mine !== asked) return;
      total = data.total; lowerBound = data.total_is_lower_bound; nextAfter = data.next_after;
      stoppedPage = data.complete === false ? data.searched_to_page : null;
      addHits(data.hits);
      if (!hits.length) { sayNone(); return; }
      sayWhere();
      if (jump) go(0);
      else markLoaded();
    } catch (err) {
      if (mine === asked) say(err.message);
    } finally {
      if (mine === asked) panel.removeAttribute("aria-busy");
    }
  }

  async function loadMore() {
    if (nextAfter == null) return false;
    const mine = asked;
    more.disabled = true;
    try {
      const data = await G.request("GET", withQuery(urlOf(searched), { q: query, limit: LIMIT, after: nextAfter }));
      if (mine !== asked) return false;
      nextAfter = data.next_after;
      stoppedPage = data.complete === false ? data.searched_to_page : null;
      addHits(data.hits);
      if (lowerBound) total = Math.max(total, hits.length); // the count so far, at least
      markLoaded();
      if (hits.length) sayWhere();
      else sayNone();
      return data.hits.length > 0;
    } catch (err) {
      G.toast("Could not load more hits: " + err.message, "error");
      return false;
    } finally {
      more.disabled = false;
    }
  }

  function addHits(found) {
    const frag = document.createDocumentFragment();
    for (const hit of found) {
      const index = hits.length;
      hits.push(hit);
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "hit";
      button.dataset.hit = String(index);
      const page = document.createElement("span");
      page.className = "hit-page";
      page.textContent = "p. " + hit.page;
      const snippet = document.createElement("span");
      snippet.className = "hit-text";
      const strong = document.createElement("strong");
      strong.textContent = hit.match;
      snippet.append((hit.before.length >= 50 ? "…" : "") + hit.before, strong, hit.after + (hit.after.length >= 50 ? "…" : ""));
      button.append(page, snippet);
      li.appendChild(button);
      frag.appendChild(li);
    }
    list.appendChild(frag);
    more.hidden = nextAfter == null;
    updateButtons();
  }

  function updateButtons() {
    const none = hits.length === 0;
    prev.disabled = none;
    next.disabled = none;
    prev.title = none ? "No hits to go to" : "Previous hit (Shift+Enter)";
    next.title = none ? "No hits to go to" : "Next hit (Enter)";
  }

  /* -- going to a hit ---------------------------------------------------------------------- */
  async function step(by) {
    if (!hits.length) return;
    let i = current + by;
    if (i >= hits.length && nextAfter != null) { if (await loadMore()) return go(i); }
    if (i >= hits.length) { i = 0; G.toast("Back to the first hit"); }
    if (i < 0) { i = hits.length - 1; if (nextAfter == null) G.toast("From the last hit"); }
    go(i);
  }

  function go(i) {
    const hit = hits[i];
    if (!hit) return;
    current = i;
    for (const b of list.querySelectorAll(".hit.current")) { b.classList.remove("current"); b.removeAttribute("aria-current"); }
    const button = list.querySelector('[data-hit="' + i + '"]');
    if (button) { button.classList.add("current"); button.setAttribute("aria-current", "true"); button.scrollIntoView({ block: "nearest" }); }
    sayWhere();
    panel.dataset.currentPage = String(hit.page);
    const event = new CustomEvent("gw:jump", {
      cancelable: true,
      detail: { parse: searched, page: hit.page, start: hit.start, end: hit.end, text: hit.match, reason: "search" },
    });
    if (!document.dispatchEvent(event)) return; // a rendered view showed it
    showInText(hit);
  }

  /* -- the text view: load the page, scroll to the hit, mark it --------------------------- */
  async function showInText(hit) {
    const pages = ctx.pages;
    await pages.goToPage(hit.page);
    await pages.ensurePages(hit.page, pages.pageOf(Math.max(hit.start, hit.end - 1)));
    if (hits[current] !== hit) return; // someone moved on meanwhile
    const range = pages.rangeFor(hit.start, hit.end);
    window.scrollBy({ top: range.getBoundingClientRect().top - window.innerHeight / 3 });
    markLoaded();
    pagesEl.dataset.searchHit = hit.start + "-" + hit.end;
    // Pages above that load now change height from their estimate: keep the hit where it was
    // put for a moment, unless the reader scrolls away themselves.
    settling = { hit, until: performance.now() + 2500 };
  }

  let settling = null;
  function settle() {
    if (!settling || hits[current] !== settling.hit || performance.now() > settling.until) { settling = null; return; }
    const hit = settling.hit;
    const top = ctx.pages.rangeFor(hit.start, hit.end).getBoundingClientRect().top;
    if (Math.abs(top - window.innerHeight / 3) > 24) window.scrollBy({ top: top - window.innerHeight / 3 });
  }
  for (const type of ["wheel", "touchmove", "mousedown"]) window.addEventListener(type, () => { settling = null; }, { passive: true });
  window.addEventListener("keydown", (e) => { if (e.target !== input) settling = null; }, true);

  /* The hits changed (a search, more hits, another current one): views drawn another way
     (PDF, rendered) mark the ones on their drawn pages from `gw:search-hits`. */
  function announce() {
    document.dispatchEvent(new CustomEvent("gw:search-hits", { detail: { parse: searched, hits, current: hits[current] || null } }));
  }

  function clearMarks() {
    if (!canMark) return;
    CSS.highlights.delete("gw-search");
    CSS.highlights.delete("gw-search-current");
    delete pagesEl.dataset.searchHit;
  }

  /* Every listed hit on a loaded page gets a light mark, the current one a strong one. */
  function markLoaded() {
    announce();
    if (!canMark || panel.hidden) return;
    const pages = ctx.pages;
    const all = new Highlight();
    let currentRange = null;
    hits.forEach((hit, i) => {
      const last = pages.pageOf(Math.max(hit.start, hit.end - 1));
      if (!pages.loaded.has(hit.page) || !pages.loaded.has(last)) return;
      const range = pages.rangeFor(hit.start, hit.end);
      if (i === current) currentRange = range;
      else all.add(range);
    });
    CSS.highlights.set("gw-search", all);
    if (currentRange) CSS.highlights.set("gw-search-current", new Highlight(currentRange));
    else CSS.highlights.delete("gw-search-current");
  }
  // A page drawn again (its anchors changed, or it just loaded) loses its ranges: mark again.
  let remark = null;
  pagesEl.addEventListener("gw:page-rendered", () => {
    if (!hits.length) return;
    cancelAnimationFrame(remark);
    remark = requestAnimationFrame(() => { settle(); markLoaded(); });
  });

  /* The view now shows another parse (text <-> PDF): the same query again, over that parse. */
  function refresh() {
    if (query && searched !== parseNow()) run(query, { jump: false });
  }

  ctx.search = {
    open, close, refresh, run: (q) => { open(); input.value = q; return run(q.trim()); },
    hits: () => hits, current: () => hits[current], parse: () => searched,
  };
  return ctx.search;
}
