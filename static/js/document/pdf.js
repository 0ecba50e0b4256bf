/* The PDF "as it looks": each page drawn by pdfium on the server (an image), a transparent text
   layer over it (one span per run of the pdfium parse's text, placed on the glyphs), and the
   anchors drawn over their words. A selection in the text layer is offsets in the pdfium parse
   (run start + characters into the run), handed to the popover like a text-view selection.
   Pages are laid out from their sizes at once and drawn when they come near the viewport.
   Positions are set through the CSSOM (element.style), which the page's CSP allows; the
   markup carries no style attributes. */
import * as G from "../api.js";
import { spanIn } from "./anchors.js";
import { cpLength, pageOf, unitIndexes, unitsAt } from "../offsets.js";
import { api as urls, withQuery } from "../urls.js";

const NEAR = "1200px 0px";   // draw pages this far above and below the viewport
const GAP = 16;              // px between pages
const KEEP = 24;             // drawn pages kept; the farthest others are emptied again

export function setupPdf(ctx) {
  const { cfg } = ctx;
  const root = document.querySelector("[data-pdf-pages]");
  const switcher = document.querySelector("[data-view-switch]");
  if (!root || !switcher || !cfg.pdf) return null;
  const api = urls.pdf(cfg.workspace, cfg.document);
  const status = document.querySelector("[data-doc-status]");
  let info = null;             // GET pdf/: parse, page_count, page_starts, sizes, version
  let loading = null;          // load()'s promise, once the view has been shown
  let zoom = 1.5;              // CSS px per PDF point
  const sections = [];
  const layers = new Map();    // page -> {start, text, runs, spans}
  const drawn = new Set();
  let view = "text";

  /* -- the switch: "As it looks" | "Text (parser X)" -------------------------------------- */
  function setView(next, remember) {
    if (next === "pdf" && !cfg.pdf.available) next = "text";
    view = next;
    for (const b of switcher.querySelectorAll("[data-view]")) b.setAttribute("aria-pressed", String(b.dataset.view === view));
    ctx.pagesEl.hidden = view === "pdf";
    root.hidden = view !== "pdf";
    document.body.classList.toggle("pdf-view", view === "pdf");
    if (remember) {
      const q = new URLSearchParams(window.location.search);
      q.set("view", view);
      history.replaceState(null, "", window.location.pathname + "?" + q.toString() + window.location.hash);
    }
    if (view === "pdf" && !loading) {
      loading = load();
      loading.then(showTotal, (err) => setStatus("Could not open the PDF view: " + err.message));
    }
    showTotal();
    if (ctx.search) ctx.search.refresh(); // the search follows the parse on show
  }
  switcher.addEventListener("click", (e) => {
    const b = e.target.closest("[data-view]");
    if (b && !b.disabled) setView(b.dataset.view, true);
  });
  function setStatus(text) { if (status) status.textContent = text; }
  /* "Page [ ] of N": the PDF's own pages in this view (a parser may have dropped some). */
  const total = document.querySelector("[data-goto-total]");
  const gotoMax = document.querySelector("[data-goto-input]");
  const textTotal = total ? total.textContent : "";
  const textMax = gotoMax ? gotoMax.max : "";
  function showTotal() {
    if (!total || !gotoMax) return;
    const pdfTotal = view === "pdf" && info;
    total.textContent = pdfTotal ? "of " + info.page_count : textTotal;
    gotoMax.max = pdfTotal ? String(info.page_count) : textMax;
  }

  /* -- layout: every page's box at once, from the sizes -------------------------------------- */
  async function load() {
    info = await G.request("GET", api);
    const widest = Math.max(...info.sizes.map((s) => s[0] || 612));
    zoom = Math.min(1.5, Math.max(0.5, (root.clientWidth - 4) / widest));
    const observer = new IntersectionObserver(onVisible, { root: null, rootMargin: NEAR });
    const frag = document.createDocumentFragment();
    info.sizes.forEach((size, i) => {
      const [w, h] = size[0] ? size : [612, 792];
      const section = document.createElement("section");
      section.className = "pdf-page";
      section.dataset.pdfPage = String(i + 1);
      section.setAttribute("aria-label", "Page " + (i + 1));
      section.style.width = Math.round(w * zoom) + "px";
      section.style.height = Math.round(h * zoom) + "px";
      section.style.marginBottom = GAP + "px";
      const no = document.createElement("div");
      no.className = "pdf-page-no";
      no.textContent = "page " + (i + 1) + " of " + info.page_count;
      section.appendChild(no);
      frag.appendChild(section);
      sections.push(section);
      observer.observe(section);
    });
    root.appendChild(frag);
    root.dataset.ready = "1";
    const wanted = /#page=(\d+)/.exec(window.location.hash);
    if (wanted) goToPage(Number(wanted[1]));
  }

  function onVisible(entries) {
    for (const entry of entries) {
      const n = Number(entry.target.dataset.pdfPage);
      if (entry.isIntersecting && !drawn.has(n)) draw(n);
    }
  }

  /* -- one page: image, text layer, highlights ------------------------------------------------- */
  function imageScale() { return zoom * (window.devicePixelRatio || 1) > 1.6 ? 2 : 1.5; }

  async function draw(n) {
    drawn.add(n);
    forgetFarPages(n);
    const section = sections[n - 1];
    section.classList.add("loading");
    const img = new Image();
    img.className = "pdf-image";
    img.alt = "";
    img.decoding = "async";
    const imageDone = new Promise((resolve) => {
      img.onload = () => resolve(true);
      img.onerror = () => resolve(false);
    });
    img.src = withQuery(urls.pdfPageImage(cfg.workspace, cfg.document, n), { scale: imageScale(), v: info.version });
    section.appendChild(img);
    const layerDone = G.request("GET", urls.pdfPageText(cfg.workspace, cfg.document, n)).then(
      (layer) => { if (drawn.has(n)) buildTextLayer(n, layer); return true; },
      (err) => { section.dataset.textError = err.message; return false; },
    );
    const [imageOk] = await Promise.all([imageDone, layerDone]);
    section.classList.remove("loading");
    if (!drawn.has(n)) return;
    if (!imageOk) await placeholder(n, img);
    section.dataset.drawn = "1";
    drawHighlights(n);
  }

  async function placeholder(n, img) {
    const section = sections[n - 1];
    img.remove();
    let reason = "the server did not send its image";
    try { await G.request("GET", img.src); } catch (err) {
      // "page 2 could not be drawn: <why>; ...": the title says the first part already.
      reason = err.message.includes(": ") ? err.message.slice(err.message.indexOf(": ") + 2) : err.message;
    }
    const box = document.createElement("div");
    box.className = "pdf-placeholder";
    box.setAttribute("role", "note");
    box.dataset.pdfBroken = String(n);
    const title = document.createElement("strong");
    title.textContent = "Page " + n + " cannot be drawn.";
    const why = document.createElement("p");
    why.textContent = reason.charAt(0).toUpperCase() + reason.slice(1) + ".";
    const to = document.createElement("button");
    to.type = "button";
    to.className = "secondary small";
    to.textContent = "Read it in the text view";
    to.addEventListener("click", () => { setView("text", true); ctx.pages.goToPage(n); });
    box.append(title, why, to);
    section.appendChild(box);
  }

  /* Far pages go back to empty boxes so a long read holds KEEP pages, not the document. */
  function forgetFarPages(n) {
    if (drawn.size <= KEEP) return;
    const far = Array.from(drawn).sort((a, b) => Math.abs(b - n) - Math.abs(a - n));
    for (const m of far.slice(0, drawn.size - KEEP)) {
      drawn.delete(m);
      layers.delete(m);
      const s = sections[m - 1];
      s.querySelectorAll(".pdf-image, .pdf-text, .pdf-marks, .pdf-placeholder").forEach((el) => el.remove());
      delete s.dataset.drawn;
    }
  }

  function buildTextLayer(n, layer) {
    const section = sections[n - 1];
    const el = document.createElement("div");
    el.className = "pdf-text";
    el.dataset.pdfText = String(n);
    const W = section.clientWidth, H = section.clientHeight, S = layer.scale;
    const spans = [];
    for (const [s, e, x0, y0, x1, y1] of layer.runs) {
      const [a, b] = unitIndexes(layer.text, [s, e]);
      const span = document.createElement("span");
      span.textContent = layer.text.slice(a, b);
      span.dataset.s = String(s);
      const height = ((y1 - y0) / S) * H;
      span.style.left = ((x0 / S) * W).toFixed(1) + "px";
      span.style.top = ((y0 / S) * H).toFixed(1) + "px";
      span.style.fontSize = height.toFixed(2) + "px";
      span.style.lineHeight = height.toFixed(2) + "px";
      el.appendChild(span);
      spans.push({ span, s, e, width: ((x1 - x0) / S) * W });
    }
    section.appendChild(el);
    // One layout for all the measurements, then one write: each run stretched to its glyphs.
    const natural = spans.map((r) => r.span.getBoundingClientRect().width);
    spans.forEach((r, i) => { if (natural[i] > 0) r.span.style.transform = "scaleX(" + (r.width / natural[i]).toFixed(4) + ")"; });
    layers.set(n, { start: layer.start, end: layer.end, text: layer.text, runs: spans });
  }

  /* -- anchors over their words ----------------------------------------------------------------- */
  function spansInView() {
    const out = [];
    for (const a of ctx.anchors.all()) {
      const span = spanIn(a, info.parse);
      if (span) out.push({ id: a.id, start: span[0], end: span[1], grade: a.grade });
    }
    return out;
  }

  /* Marks over the glyphs of the pdfium parse's [start, end) on drawn page n, each made by
     make() and placed in its box (page coordinates); anchors and search hits alike. */
  function marksOver(n, start, end, make) {
    const layer = layers.get(n);
    const out = [];
    if (!layer) return out;
    const a = start - layer.start, b = end - layer.start;
    if (b <= 0 || a >= cpLength(layer.text)) return out;
    const box = sections[n - 1].getBoundingClientRect();
    for (const run of layer.runs) {
      if (run.e <= a || run.s >= b) continue;
      const node = run.span.firstChild;
      const text = node.textContent;
      const range = document.createRange();
      range.setStart(node, unitsAt(text, Math.max(0, a - run.s)));
      range.setEnd(node, unitsAt(text, Math.min(run.e, b) - run.s));
      for (const r of range.getClientRects()) {
        const mark = make();
        mark.style.left = (r.left - box.left).toFixed(1) + "px";
        mark.style.top = (r.top - box.top).toFixed(1) + "px";
        mark.style.width = r.width.toFixed(1) + "px";
        mark.style.height = r.height.toFixed(1) + "px";
        out.push(mark);
      }
    }
    return out;
  }

  function drawHighlights(n) {
    const section = sections[n - 1];
    section.querySelectorAll(".pdf-marks").forEach((el) => el.remove());
    if (!layers.has(n) || !ctx.anchors.all) return;
    const marks = document.createElement("div");
    marks.className = "pdf-marks";
    let first = null;
    for (const hl of spansInView()) {
      const current = goneTo && goneTo.id === hl.id;
      const drawnHere = marksOver(n, hl.start, hl.end, () => {
        const mark = document.createElement("mark");
        mark.className = "pdf-hl g" + hl.grade + (current ? " current" : "");
        mark.dataset.anchors = hl.id;
        return mark;
      });
      if (current && !first) first = drawnHere[0];
      marks.append(...drawnHere);
    }
    section.insertBefore(marks, section.querySelector(".pdf-text"));
    drawSearch(n);
    drawCandidate(n);
    if (first && goneTo.scroll) {
      goneTo.scroll = false;
      window.scrollBy({ top: first.getBoundingClientRect().top - window.innerHeight / 3 });
    }
  }

  /* -- a highlight gone to (the panel): its words marked and scrolled to, as in the text view --
     Its page is brought into view; the marks are drawn (and scrolled to) once the page is. */
  let goneTo = null; // {id, scroll}: marked "current" until another highlight is gone to
  function goToAnchor(a) {
    // Marked (and scrolled to) as soon as it is placed in this parse, if it is not yet.
    goneTo = { id: a.id, scroll: true };
    const span = info && spanIn(a, info.parse);
    if (!span) { goToPage(a.page_hint || 1); return; }
    const n = pageOfOffset(span[0]);
    goToPage(n);
    setStatus("Page " + n + " of " + sections.length + " · highlight");
    redrawHighlights();
  }
  function redrawHighlights() { for (const n of layers.keys()) drawHighlights(n); }

  /* -- a candidate opened from the item page: marked over its words, scrolled to ---------------- */
  let candidate = null;        // {start, end} in the pdfium parse, marked until the page is left
  let toCandidate = false;     // scroll to it once its page is drawn
  function drawCandidate(n) {
    const section = sections[n - 1];
    section.querySelectorAll(".pdf-candidate").forEach((el) => el.remove());
    if (!candidate || !layers.has(n)) return;
    const mine = marksOver(n, candidate.start, candidate.end, () => {
      const mark = document.createElement("mark");
      mark.className = "pdf-candidate-mark";
      return mark;
    });
    if (!mine.length) return;
    const marks = document.createElement("div");
    marks.className = "pdf-candidate";
    marks.append(...mine);
    section.insertBefore(marks, section.querySelector(".pdf-text"));
    if (toCandidate) {
      toCandidate = false;
      window.scrollBy({ top: mine[0].getBoundingClientRect().top - window.innerHeight / 3 });
    }
  }
  /* Open the pdfium parse's [start, end) where it is on its page, marked (the text view's
     jumpTo with keep, for this view). */
  async function showCandidate(start, end) {
    await loading;
    candidate = { start, end };
    toCandidate = true;
    const n = pageOfOffset(start);
    goToPage(n);
    for (const m of layers.keys()) drawCandidate(m);
    setStatus("The candidate is marked on page " + n + ".");
  }

  /* -- search hits (search.js): marked on drawn pages, the current one scrolled to --------------- */
  let searched = { hits: [], current: null }; // the hits in the pdfium parse, and the one gone to
  let scrollTo = null;                       // a hit to bring into view once its page is drawn
  function drawSearch(n) {
    const section = sections[n - 1];
    section.querySelectorAll(".pdf-search").forEach((el) => el.remove());
    if (!layers.has(n) || (!searched.hits.length && !searched.current)) return;
    const layer = layers.get(n);
    const marks = document.createElement("div");
    marks.className = "pdf-search";
    const on = (h) => h.end > layer.start && h.start < layer.end;
    const current = searched.current;
    const others = searched.hits.filter((h) => on(h) && !(current && h.start === current.start && h.end === current.end));
    for (const h of others) marks.append(...marksOver(n, h.start, h.end, () => searchMark("")));
    let first = null;
    if (current && on(current)) {
      const mine = marksOver(n, current.start, current.end, () => searchMark(" current"));
      marks.append(...mine);
      first = mine[0];
    }
    section.insertBefore(marks, section.querySelector(".pdf-text"));
    if (first && scrollTo === current) {
      scrollTo = null;
      window.scrollBy({ top: first.getBoundingClientRect().top - window.innerHeight / 3 });
    }
  }
  function searchMark(extra) {
    const mark = document.createElement("mark");
    mark.className = "pdf-search-hit" + extra;
    return mark;
  }
  function drawSearchAll() { for (const n of layers.keys()) drawSearch(n); }
  const searchParse = () => (cfg.pdf.parse || cfg.parse);
  // The search runs over the pdfium parse while this view shows: its offsets are the layer's.
  ctx.searchParse = () => (view === "pdf" ? searchParse() : cfg.parse);
  document.addEventListener("gw:jump", (e) => {
    const d = e.detail;
    if (view !== "pdf" || !info || d.parse !== info.parse) return;
    e.preventDefault();
    searched = { hits: ctx.search ? ctx.search.hits() : [], current: d };
    scrollTo = d;
    const n = pageOfOffset(d.start);
    goToPage(n);
    drawSearchAll();
    setStatus("Page " + n + " of " + sections.length + " · search hit");
  });
  document.addEventListener("gw:search-hits", (e) => {
    if (!info || e.detail.parse !== info.parse) return;
    searched = { hits: e.detail.hits, current: searched.current };
    drawSearchAll();
  });
  document.addEventListener("gw:search-clear", () => {
    searched = { hits: [], current: null };
    scrollTo = null;
    root.querySelectorAll(".pdf-search").forEach((el) => el.remove());
  });
  document.addEventListener("gw:anchors", () => { if (info) redrawHighlights(); });

  /* Hover: the text layer is on top (it takes the mouse), so the mark under the pointer is
     found by position and its tooltip is the text view's. */
  let hovered = null;
  root.addEventListener("mousemove", (e) => {
    const section = e.target.closest(".pdf-page");
    let hit = null;
    if (section) {
      for (const m of section.querySelectorAll("mark.pdf-hl")) {
        const r = m.getBoundingClientRect();
        if (e.clientX >= r.left && e.clientX <= r.right && e.clientY >= r.top && e.clientY <= r.bottom) { hit = m; break; }
      }
    }
    if (hit === hovered) return;
    hovered = hit;
    if (hit) ctx.anchors.showTipAt(hit.dataset.anchors.split(" "), hit.getBoundingClientRect()); else ctx.anchors.hideTipSoon();
  });

  /* -- selection -> offsets in the pdfium parse --------------------------------------------------- */
  function runOf(node) {
    const el = node && (node.nodeType === 1 ? node : node.parentElement);
    const span = el && el.closest("[data-s]");
    return span && root.contains(span) ? span : null;
  }
  function pointIn(span, node, offset, atEnd) {
    const n = Number(span.closest(".pdf-page").dataset.pdfPage);
    const layer = layers.get(n);
    const run = layer.runs.find((r) => r.span === span);
    const text = span.textContent;
    const units = node === span.firstChild ? offset : (atEnd ? text.length : 0);
    return layer.start + run.s + cpLength(text.slice(0, units));
  }
  function selectionSpan() {
    const sel = window.getSelection();
    if (!sel || !sel.rangeCount || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    if (!root.contains(range.commonAncestorContainer)) return null;
    // The runs the selection touches, in text order (pages in order, runs by offset).
    const touched = [];
    for (const [n, layer] of layers) {
      for (const run of layer.runs) if (range.intersectsNode(run.span)) touched.push({ n, run, abs: layer.start + run.s });
    }
    if (!touched.length) return null;
    touched.sort((x, y) => x.abs - y.abs);
    const first = touched[0], last = touched[touched.length - 1];
    const startRun = runOf(range.startContainer);
    const endRun = runOf(range.endContainer);
    const start = startRun ? pointIn(startRun, range.startContainer, range.startOffset, false) : first.abs;
    const end = endRun ? pointIn(endRun, range.endContainer, range.endOffset, true) : layers.get(last.n).start + last.run.e;
    if (end <= start) return null;
    let quote = "";
    for (const [, layer] of Array.from(layers).sort((x, y) => x[0] - y[0])) {
      const from = Math.max(start, layer.start) - layer.start;
      const to = Math.min(end, layer.end) - layer.start;
      if (to > from) {
        const [a, b] = unitIndexes(layer.text, [from, to]);
        quote += (quote ? "\n\n" : "") + layer.text.slice(a, b);
      }
    }
    if (!quote.trim()) return { error: "that selection is only white space; select some words" };
    return { start, end, quote, range: range.cloneRange(), parse: info.parse };
  }
  function trySelection() {
    if (view !== "pdf") return false;
    const span = selectionSpan();
    if (!span) return false;
    if (span.error) { setStatus(span.error); return true; }
    ctx.popover.open(span);
    return true;
  }
  root.addEventListener("mouseup", () => setTimeout(trySelection, 0));

  /* -- moving around: "go to" page, j / k, Home / End, a or Enter -------------------------------- */
  function currentPage() {
    // The page on screen is the one below the toolbar: "go to" places a page's top at its
    // scroll margin (the toolbar's height), so the page above ends just above that line.
    if (!sections.length) return 1;
    const top = (parseFloat(getComputedStyle(sections[0]).scrollMarginTop) || 80) + 8;
    const i = sections.findIndex((s) => s.getBoundingClientRect().bottom > top);
    return i === -1 ? sections.length : i + 1;
  }
  function goToPage(n) {
    if (!sections.length) return;
    n = Math.max(1, Math.min(sections.length, n));
    sections[n - 1].scrollIntoView({ block: "start" });
    setStatus("Page " + n + " of " + sections.length);
  }
  const pageOfOffset = (offset) => pageOf(info.page_starts, offset);
  function nextHighlight(step) {
    if (!info) return;
    const here = currentPage();
    const pages = spansInView().map((s) => pageOfOffset(s.start)).sort((x, y) => x - y);
    const target = step > 0 ? pages.find((p) => p > here) : pages.reverse().find((p) => p < here);
    if (target) goToPage(target);
    else G.toast(step > 0 ? "No more highlights below" : "No more highlights above");
  }
  const gotoForm = document.querySelector("[data-goto]");
  const gotoInput = document.querySelector("[data-goto-input]");
  if (gotoForm) gotoForm.addEventListener("submit", (e) => {
    if (view !== "pdf") return;
    e.preventDefault();
    e.stopImmediatePropagation();
    goToPage(Number(gotoInput.value) || 1);
    // Leave the box, so j / k and the other single keys work again straight away.
    gotoInput.blur();
  }, { capture: true });
  document.addEventListener("keydown", (e) => {
    if (view !== "pdf" || e.defaultPrevented || e.metaKey || e.altKey || ctx.popover.isOpen() || G.isTyping(e.target)) return;
    // Home and End (with or without Ctrl) as in the text view: the top, the last page.
    if (e.key === "Home") { e.preventDefault(); window.scrollTo({ top: 0 }); return; }
    if (e.key === "End") { e.preventDefault(); goToPage(sections.length); return; }
    if (e.ctrlKey) return;
    if (e.key === "j") { e.preventDefault(); goToPage(currentPage() + 1); }
    else if (e.key === "k") { e.preventDefault(); goToPage(currentPage() - 1); }
    else if (e.key === "n" || e.key === "p") { e.preventDefault(); nextHighlight(e.key === "n" ? 1 : -1); }
    else if (e.key === "c") { e.preventDefault(); setStatus("Caret mode selects in the text view: switch to Text, then press c."); }
    else if (e.key === "a" || (e.key === "Enter" && !e.target.closest("a, button, mark"))) {
      if (trySelection()) e.preventDefault();
    }
  }, { capture: true });

  const asked = new URLSearchParams(window.location.search).get("view");
  // A candidate in another parse than the one this view draws is shown in that parse's text.
  const elsewhere = /#candidate=/.test(window.location.hash) && cfg.parse !== cfg.pdf.parse;
  setView(asked === "text" || elsewhere || !cfg.pdf.available ? "text" : "pdf", false);

  ctx.pdf = { setView, view: () => view, goToPage, goToAnchor, currentPage, selectionSpan, layers, info: () => info, showCandidate };
  return ctx.pdf;
}
