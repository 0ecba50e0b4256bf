/* The document as it looks (HTML, Markdown, Word): sanitised sections from the API drawn into
   a sandboxed frame that runs no script (templates/labelling/document_frame.html), a few at a
   time as the reader scrolls; a selection there becomes an anchor in the reference parse, and
   the anchors are drawn where they lie.

   The frame and the parse are tied by "solid" characters, those that are not white space:
   each section says which of its solid characters are which of the parse's (runs of
   [rendered, parse, length], evalsets/rendering.py). A selection is counted in solid
   characters from its section's start, mapped through the runs to the parse's text, and the
   anchor is created from those offsets exactly as the text view does (solid.js counts). */
import * as G from "../api.js";
import { poll } from "../poll.js";
import { unitsAt } from "../offsets.js";
import { api, withQuery } from "../urls.js";
import { countSolid, parseSolidFrom, parseSolidUpTo, piecesOf as solidPieces, solidOffsets, unitAfterSolid, unitOfSolid } from "./solid.js";

const BATCH = 4; // sections per request
const MARGIN = 1500; // px above and below the frame's viewport drawn ahead of the reader

export function setupRendered(ctx) {
  const { cfg } = ctx;
  const host = ctx.pagesEl;
  const iframe = host.querySelector("[data-rendered-frame]");
  const statusEl = document.querySelector("[data-doc-status]");
  const apiUrl = api.rendered(cfg.workspace, cfg.document);
  const sectionsUrl = (from, to) => withQuery(apiUrl, { from, to });
  const loaded = new Map(); // section number -> {payload, el, offsets, key}
  const inflight = new Set();
  const sectionEls = [];
  let doc = null, win = null, count = 0;
  let readyResolve;
  const ready = new Promise((resolve) => { readyResolve = resolve; });

  function setStatus(text) { statusEl.textContent = text; }

  /* -- the skeleton and lazy loading ------------------------------------------------------ */
  function frameDocument() {
    const d = iframe.contentDocument;
    return d && d.readyState === "complete" && d.querySelector("[data-rendered-sections]") ? d : null;
  }
  function whenFrameReady() {
    return new Promise((resolve) => {
      const d = frameDocument();
      if (d) resolve(d);
      else iframe.addEventListener("load", () => resolve(frameDocument()), { once: true });
    });
  }

  async function start() {
    doc = await whenFrameReady();
    if (!doc) { setStatus("The view could not be drawn; use the Text view."); return; }
    win = iframe.contentWindow;
    setStatus("Drawing the document…");
    const asked = Date.now();
    let first = null;
    await poll(async () => {
      try {
        first = await G.request("GET", sectionsUrl(1, BATCH));
      } catch (err) {
        first = null;
        setStatus("Could not draw the document as it looks: " + err.message + " Use the Text view.");
        return false;
      }
      if (!first.preparing) return false;
      // 202: a worker is building the view (a large page takes seconds); ask again shortly.
      const seconds = Math.round((Date.now() - asked) / 1000);
      setStatus("Preparing the document as it looks" + (seconds ? " (" + seconds + " s so far)" : "") + "…");
      return undefined;
    }, { first: 0, every: 1000, grow: 1.5, most: 5000 }).done;
    if (!first || first.preparing) return;
    count = first.section_count;
    parseStarts = first.section_parse_starts || [];
    const main = doc.querySelector("[data-rendered-sections]");
    const frag = doc.createDocumentFragment();
    for (let n = 1; n <= count; n++) {
      const el = doc.createElement("section");
      el.className = "placeholder";
      el.dataset.section = String(n);
      // About 1 px of height per 3 characters of HTML until the section is drawn.
      el.style.height = Math.max(40, Math.round(first.section_sizes[n - 1] / 3)) + "px";
      frag.appendChild(el);
      sectionEls.push(el);
    }
    main.replaceChildren(frag);
    for (const s of first.sections) place(s);
    wire();
    setStatus("");
    readyResolve();
    loadVisible();
  }

  function place(payload) {
    const el = sectionEls[payload.number - 1];
    loaded.set(payload.number, { payload, el, offsets: solidOffsets(payload.parse_text), key: null });
    el.classList.remove("placeholder");
    el.classList.add("loaded");
    // The placeholder's height goes: the section sizes itself now. (Reading the attribute first
    // makes Chromium write out the style it holds, which removing it then really removes.)
    el.style.removeProperty("height");
    if (el.getAttribute("style") !== null) el.removeAttribute("style");
    draw(payload.number);
    if (hitsNow.length || currentHit) markSearch();
  }

  function visibleSections() {
    const h = win.innerHeight;
    const out = [];
    for (const el of sectionEls) {
      const r = el.getBoundingClientRect();
      if (r.bottom < -MARGIN) continue;
      if (r.top > h + MARGIN) break;
      out.push(Number(el.dataset.section));
    }
    return out;
  }

  let loadTimer = null;
  function loadVisible() {
    clearTimeout(loadTimer);
    loadTimer = setTimeout(async () => {
      const todo = visibleSections().filter((n) => !loaded.has(n) && !inflight.has(n));
      if (!todo.length) return;
      const from = todo[0], to = Math.min(todo[todo.length - 1], from + BATCH - 1);
      for (let n = from; n <= to; n++) inflight.add(n);
      setStatus("Drawing sections " + from + (to > from ? "–" + to : "") + " of " + count + "…");
      try {
        const data = await G.request("GET", sectionsUrl(from, to));
        if (data.preparing) { // the reference parse changed: its view is being built
          setStatus("The reference parse changed; reload the page to see the view aligned to it.");
          return;
        }
        for (const s of data.sections) place(s);
        setStatus("");
      } catch (err) {
        setStatus("Could not draw sections " + from + "–" + to + ": " + err.message);
      } finally {
        for (let n = from; n <= to; n++) inflight.delete(n);
      }
      loadVisible();
    }, 30);
  }

  /* -- anchors drawn where they lie -------------------------------------------------------- */
  /* The solid ranges [a, b) of a section that show the parse span [start, end). */
  const piecesOf = (sec, start, end) => solidPieces(sec.payload, sec.offsets, start, end);

  function draw(number) {
    const sec = loaded.get(number);
    const pieces = [];
    for (const s of ctx.anchors.spans()) {
      for (const [a, b] of piecesOf(sec, s.start, s.end)) pieces.push({ a, b, id: s.id, grade: s.grade });
    }
    const key = pieces.map((p) => p.id + ":" + p.a + ":" + p.b + ":" + p.grade).join(" ");
    if (key === sec.key) return; // nothing changed here: the section is not drawn again
    sec.key = key;
    sec.el.innerHTML = sec.payload.html; // sanitised on the server; parsed in the frame
    for (const { node, spans } of inNodes(sec.el, pieces)) {
      const text = node.data;
      const cuts = Array.from(new Set([0, text.length, ...spans.flatMap((s) => [s.u0, s.u1])])).sort((x, y) => x - y);
      const out = [];
      for (let k = 0; k + 1 < cuts.length; k++) {
        const seg = text.slice(cuts[k], cuts[k + 1]);
        if (!seg) continue;
        const covering = spans.filter((s) => s.u0 <= cuts[k] && s.u1 >= cuts[k + 1]).map((s) => s.p);
        if (!covering.length) { out.push(doc.createTextNode(seg)); continue; }
        const mark = doc.createElement("mark");
        mark.textContent = seg;
        mark.className = "hl g" + Math.max(...covering.map((p) => p.grade)) + (covering.length > 1 ? " multi" : "");
        mark.dataset.anchors = Array.from(new Set(covering.map((p) => p.id))).join(" ");
        out.push(mark);
      }
      node.replaceWith(...out);
    }
  }

  /* Where solid ranges {a, b} of a section's element fall in its text nodes: per node touched,
     its pieces as UTF-16 [u0, u1). A piece that goes on past a node keeps the node's spaces at
     that end, so one anchor reads as one mark across bold words and links. */
  function inNodes(el, pieces) {
    const out = [];
    if (!pieces.length) return out;
    const walker = doc.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    const nodes = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) nodes.push(node);
    let at = 0;
    for (const node of nodes) {
      const text = node.data;
      const from = at, to = at + countSolid(text);
      at = to;
      const here = pieces.filter((p) => p.a < to && p.b > from);
      if (!here.length) continue;
      out.push({
        node,
        spans: here.map((p) => ({
          p,
          u0: p.a < from ? 0 : unitOfSolid(text, p.a - from),
          u1: p.b > to ? text.length : unitAfterSolid(text, p.b - from - 1),
        })),
      });
    }
    return out;
  }

  function redrawAll() { for (const n of loaded.keys()) draw(n); markSearch(); }

  /* -- search hits (search.js): the section loaded, the hit marked and scrolled to ----------- */
  let parseStarts = []; // where each section starts in the parse (null: none of it is there)
  let hitsNow = [], currentHit = null, settling = null;
  const canMark = () => !!(win && win.CSS && win.CSS.highlights && typeof win.Highlight !== "undefined");

  /* The section showing parse offset `at`: the last one that starts at or before it. */
  function sectionAt(at) {
    let found = 1;
    parseStarts.forEach((s, i) => { if (s != null && s <= at) found = i + 1; });
    return found;
  }
  /* Frame ranges over the parse span [start, end) in the drawn sections. */
  function rangesOf(start, end) {
    const out = [];
    for (const sec of loaded.values()) {
      for (const { node, spans } of inNodes(sec.el, piecesOf(sec, start, end).map(([a, b]) => ({ a, b })))) {
        for (const { u0, u1 } of spans) {
          const r = doc.createRange();
          r.setStart(node, u0);
          r.setEnd(node, u1);
          out.push(r);
        }
      }
    }
    return out;
  }
  function markSearch() {
    if (!canMark()) return;
    const all = new win.Highlight(), now = new win.Highlight();
    for (const hit of hitsNow) {
      if (currentHit && hit.start === currentHit.start && hit.end === currentHit.end) continue;
      for (const r of rangesOf(hit.start, hit.end)) all.add(r);
    }
    if (currentHit) for (const r of rangesOf(currentHit.start, currentHit.end)) now.add(r);
    win.CSS.highlights.set("gw-search", all);
    win.CSS.highlights.set("gw-search-current", now);
    if (settling && settling.hit === currentHit && performance.now() < settling.until) {
      const first = rangesOf(currentHit.start, currentHit.end)[0];
      if (first) {
        const top = first.getBoundingClientRect().top;
        if (Math.abs(top - win.innerHeight / 3) > 24) win.scrollBy({ top: top - win.innerHeight / 3 });
      }
    }
  }
  /* Sections from..to drawn (fetched a batch at a time when missing). */
  async function ensureSections(from, to) {
    for (let n = from; n <= to; n++) {
      if (loaded.has(n)) continue;
      const last = Math.min(to, n + BATCH - 1, count);
      const data = await G.request("GET", sectionsUrl(n, last));
      if (data.preparing) throw new Error("the view is being prepared again; go to the hit once more in a moment");
      for (const s of data.sections) if (!loaded.has(s.number)) place(s);
      n = last;
    }
  }
  document.addEventListener("gw:jump", async (e) => {
    const d = e.detail;
    if (d.parse !== cfg.parse) return;
    e.preventDefault();
    await ready;
    hitsNow = ctx.search ? ctx.search.hits() : [d];
    currentHit = d;
    const first = sectionAt(d.start), last = sectionAt(Math.max(d.start, d.end - 1));
    try {
      setStatus("Drawing section " + first + " of " + count + "…");
      await ensureSections(first, last);
      setStatus("");
    } catch (err) {
      setStatus("Could not draw the section of that hit: " + err.message);
      return;
    }
    if (currentHit !== d) return; // someone moved on meanwhile
    // Sections above that load now change height from their estimate: keep the hit where it
    // was put for a moment, unless the reader scrolls away themselves.
    settling = { hit: d, until: performance.now() + 2500 };
    const range = rangesOf(d.start, d.end)[0];
    if (range) win.scrollBy({ top: range.getBoundingClientRect().top - win.innerHeight / 3 });
    else sectionEls[first - 1].scrollIntoView({ block: "start" });
    markSearch();
  });
  document.addEventListener("gw:search-hits", (e) => {
    if (e.detail.parse !== cfg.parse) return;
    hitsNow = e.detail.hits;
    markSearch();
  });
  document.addEventListener("gw:search-clear", () => {
    hitsNow = []; currentHit = null; settling = null;
    if (canMark()) { win.CSS.highlights.delete("gw-search"); win.CSS.highlights.delete("gw-search-current"); }
  });

  /* -- selection -> offsets in the reference parse ----------------------------------------- */
  function sectionOf(node) {
    const el = node.nodeType === 1 ? node : node.parentElement;
    const s = el && el.closest("section[data-section]");
    return s ? loaded.get(Number(s.dataset.section)) : null;
  }
  function solidBefore(sec, node, offset) {
    const r = doc.createRange();
    r.setStart(sec.el, 0);
    r.setEnd(node, offset);
    return countSolid(r.toString());
  }

  function selectionSpan() {
    if (!win) return null;
    const sel = win.getSelection();
    if (!sel || !sel.rangeCount || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    const first = sectionOf(range.startContainer), last = sectionOf(range.endContainer);
    if (!first || !last) return { error: "part of that selection is still loading; wait a moment and select again" };
    const a = solidBefore(first, range.startContainer, range.startOffset);
    const b = solidBefore(last, range.endContainer, range.endOffset);
    const startK = parseSolidFrom(first.payload.runs, a);
    const endK = parseSolidUpTo(last.payload.runs, b);
    if (startK == null || endK == null) {
      return { error: "that text is not in the reference parse (" + cfg.rendered.parser + " leaves it out), so it cannot be evidence" };
    }
    const start = first.payload.parse_start + first.offsets[startK];
    const end = last.payload.parse_start + last.offsets[endK] + 1;
    if (end <= start) return { error: "that text is not in the reference parse (" + cfg.rendered.parser + " leaves it out), so it cannot be evidence" };
    let quote = range.toString();
    if (first === last) {
      const t = first.payload.parse_text;
      quote = t.slice(unitsAt(t, start - first.payload.parse_start), unitsAt(t, end - first.payload.parse_start));
    }
    if (!quote.trim()) return { error: "that selection is only white space; select some words" };
    const box = range.getBoundingClientRect(), frame = iframe.getBoundingClientRect();
    const rect = { left: box.left + frame.left, right: box.right + frame.left, top: box.top + frame.top, bottom: box.bottom + frame.top };
    return { start, end, quote, range, rect };
  }

  function trySelection() {
    const span = selectionSpan();
    if (!span) return false;
    if (span.error) { setStatus(span.error); return true; }
    setStatus("");
    ctx.popover.open(span);
    return true;
  }

  /* -- events in the frame ----------------------------------------------------------------- */
  function wire() {
    win.addEventListener("scroll", loadVisible, { passive: true });
    win.addEventListener("resize", loadVisible);
    doc.addEventListener("mouseup", () => setTimeout(trySelection, 0));
    doc.addEventListener("mouseover", (e) => {
      const m = e.target.closest && e.target.closest("mark.hl");
      if (!m) return;
      const box = m.getBoundingClientRect(), frame = iframe.getBoundingClientRect();
      ctx.anchors.showTipAt(m.dataset.anchors.split(" "), { left: box.left + frame.left, right: box.right + frame.left, top: box.top + frame.top, bottom: box.bottom + frame.top });
    });
    doc.addEventListener("mouseout", (e) => { if (e.target.closest && e.target.closest("mark.hl")) ctx.anchors.hideTipSoon(); });
    doc.addEventListener("click", (e) => { if (e.target.closest && e.target.closest("a")) e.preventDefault(); });
    const keys = (e) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || ctx.popover.isOpen()) return;
      if (G.isTyping(e.target)) return;
      if (e.key === "a" || e.key === "Enter") { if (trySelection()) e.preventDefault(); }
    };
    doc.addEventListener("keydown", keys);
    document.addEventListener("keydown", keys);
    // The frame has its own keys: search's "/", Ctrl+F and Esc reach the page's search from it.
    doc.addEventListener("keydown", (e) => {
      if (!ctx.search || e.defaultPrevented || e.altKey || ctx.popover.isOpen()) return;
      const ctrlF = (e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F");
      if (ctrlF || (e.key === "/" && !e.ctrlKey && !e.metaKey)) { e.preventDefault(); ctx.search.open(); }
      else if (e.key === "Escape") { e.preventDefault(); ctx.search.close(); }
    });
    for (const type of ["wheel", "touchmove", "mousedown"]) doc.addEventListener(type, () => { settling = null; }, { passive: true });
  }

  start();

  // The pieces of the shared context the anchors and the popover use.
  ctx.pages = {
    setStatus, pageOf: () => 1, rerenderLoaded: redrawAll, rerenderPages: redrawAll,
    loaded, sections: [], starts: [0], pageCount: 1, currentPage: () => 1,
  };
  ctx.keys = { caret: () => false };
  ctx.rendered = { ready, loaded, selectionSpan, trySelection, frame: iframe, count: () => count };
  return ctx.rendered;
}
