/* The parse page by page: one sized placeholder per page, the text of the pages near the
   viewport fetched from the API a few at a time, each page drawn as text nodes with the
   anchors' marks (never as HTML), and moving around (page numbers, offsets). */
import { cpLength, pageOf as pageAt, unitIndexes, unitsAt } from "../offsets.js";
import { request } from "../api.js";
import { api, withQuery } from "../urls.js";

const BATCH = 20; // pages per request at most

export function setupPages(ctx) {
  const { cfg, pagesEl } = ctx;
  const statusEl = document.querySelector("[data-doc-status]");
  const starts = cfg.page_starts;
  const pageCount = starts.length;
  const pagesUrl = api.parsePages(cfg.workspace, cfg.document, cfg.parse);
  const loaded = new Map(); // page number -> {start, text}
  const inflight = new Set();
  const wanted = new Set();

  function setStatus(text) { statusEl.textContent = text; }

  const pageOf = (offset) => pageAt(starts, offset); // 1-based page holding a code-point offset
  function pageEnd(n) { return n < pageCount ? starts[n] : cfg.length; }

  /* -- the skeleton ------------------------------------------------------------------------ */
  const probe = document.createElement("div");
  probe.className = "page-text";
  probe.textContent = "x";
  pagesEl.appendChild(probe);
  const lineHeight = probe.getBoundingClientRect().height || 24;
  const textWidth = probe.getBoundingClientRect().width || 700;
  probe.remove();
  const charsPerLine = Math.max(30, Math.floor(textWidth / (lineHeight * 0.36)));

  function estimatedHeight(n) {
    const chars = pageEnd(n) - starts[n - 1];
    return Math.max(3, Math.ceil(chars / charsPerLine) + Math.ceil(chars / 400)) * lineHeight;
  }

  const sections = [];
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (entry.isIntersecting) {
        const n = Number(entry.target.dataset.page);
        if (!loaded.has(n)) wanted.add(n);
      }
    }
    scheduleLoad();
  }, { rootMargin: "1200px 0px" });

  const frag = document.createDocumentFragment();
  for (let n = 1; n <= pageCount; n++) {
    const section = document.createElement("section");
    section.className = "page placeholder";
    section.dataset.page = String(n);
    section.id = "page-" + n;
    const label = document.createElement("div");
    label.className = "page-no";
    label.contentEditable = "false";
    label.textContent = "Page " + n + " of " + pageCount;
    const text = document.createElement("div");
    text.className = "page-text";
    text.dataset.pageText = String(n);
    const height = estimatedHeight(n);
    text.style.height = height + "px";
    // Off-screen pages keep this size (content-visibility), so the scrollbar is right at once.
    section.style.containIntrinsicSize = "auto " + Math.round(height + 80) + "px";
    section.append(label, text);
    frag.appendChild(section);
    sections.push(section);
  }
  pagesEl.appendChild(frag);
  sections.forEach((s) => observer.observe(s));

  /* -- loading pages ----------------------------------------------------------------------- */
  let loadTimer = null;
  function scheduleLoad() {
    if (loadTimer) return;
    loadTimer = setTimeout(() => { loadTimer = null; loadWanted(); }, 30);
  }

  function loadWanted() {
    const todo = Array.from(wanted).filter((n) => !loaded.has(n) && !inflight.has(n)).sort((a, b) => a - b);
    wanted.clear();
    let i = 0;
    const runs = [];
    while (i < todo.length) {
      const first = todo[i];
      let last = first;
      while (i + 1 < todo.length && todo[i + 1] === last + 1 && last - first + 1 < BATCH) { i++; last = todo[i]; }
      runs.push([first, last]);
      i++;
    }
    return Promise.all(runs.map(([a, b]) => fetchPages(a, b)));
  }

  const waiters = [];
  async function fetchPages(first, last) {
    for (let n = first; n <= last; n++) inflight.add(n);
    setStatus("Loading pages " + first + (last > first ? "–" + last : "") + "…");
    try {
      const data = await request("GET", withQuery(pagesUrl, { from: first, to: last }));
      for (const page of data.pages) {
        loaded.set(page.number, { start: page.start, text: page.text });
        renderPage(page.number);
      }
      setStatus(kept ? kept.note : "");
    } catch (err) {
      setStatus("Could not load pages " + first + "–" + last + ": " + err.message);
    } finally {
      for (let n = first; n <= last; n++) inflight.delete(n);
      for (const w of waiters.splice(0)) w();
    }
  }

  /* Resolve once pages a..b are loaded (asking for them if need be). */
  function ensurePages(a, b) {
    a = Math.max(1, a); b = Math.min(pageCount, b);
    const missing = () => { for (let n = a; n <= b; n++) if (!loaded.has(n)) return true; return false; };
    if (!missing()) return Promise.resolve();
    for (let n = a; n <= b; n++) if (!loaded.has(n)) wanted.add(n);
    loadWanted();
    return new Promise((resolve) => {
      const check = () => { if (!missing()) resolve(); else waiters.push(check); };
      waiters.push(check);
    });
  }

  /* -- drawing a page with its marks -------------------------------------------------------- */
  function renderPage(n) {
    const page = loaded.get(n);
    const section = sections[n - 1];
    const el = section.querySelector("[data-page-text]");
    const pStart = page.start;
    const pEnd = pStart + cpLength(page.text);
    const here = ctx.anchors.spans().filter((s) => s.start < pEnd && s.end > pStart);
    const cuts = new Set([0, pEnd - pStart]);
    for (const s of here) { cuts.add(Math.max(0, s.start - pStart)); cuts.add(Math.min(pEnd, s.end) - pStart); }
    const points = Array.from(cuts).sort((a, b) => a - b);
    const units = unitIndexes(page.text, points);
    const nodes = [];
    for (let k = 0; k + 1 < points.length; k++) {
      const segText = page.text.slice(units[k], units[k + 1]);
      if (!segText) continue;
      const a = pStart + points[k], b = pStart + points[k + 1];
      const covering = here.filter((s) => s.start <= a && s.end >= b);
      if (!covering.length) { nodes.push(document.createTextNode(segText)); continue; }
      const mark = document.createElement("mark");
      mark.textContent = segText;
      mark.dataset.anchors = covering.map((s) => s.id).join(" ");
      mark.className = "hl g" + Math.max(...covering.map((s) => s.grade)) + (covering.length > 1 ? " multi" : "");
      // One tab stop per anchor: the piece where it begins.
      const starting = covering.find((s) => s.start === a);
      if (starting) { mark.tabIndex = 0; mark.dataset.first = starting.id; } else mark.tabIndex = -1;
      mark.setAttribute("aria-describedby", "anchor-tip");
      nodes.push(mark);
    }
    el.replaceChildren(...nodes);
    el.style.height = "";
    section.classList.remove("placeholder");
    section.classList.add("loaded");
    observer.unobserve(section);
    pagesEl.dispatchEvent(new CustomEvent("gw:page-rendered", { detail: { page: n } }));
    // A page above the one "go to page" showed changed its height: keep that one in place.
    if (pinned && n < pinned) scrollToPage(pinned);
    if (kept) markKept(n);
  }

  function rerenderLoaded() {
    for (const n of Array.from(loaded.keys()).sort((a, b) => a - b)) renderPage(n);
  }
  /* Draw again only these pages (those not loaded yet get their marks when they load). */
  function rerenderPages(numbers) {
    for (const n of numbers) if (loaded.has(n)) renderPage(n);
  }

  /* -- moving around ------------------------------------------------------------------------ */
  /* Where the sticky header and toolbar end once stuck: what is above this line is hidden. */
  function hiddenTop() {
    const bar = document.querySelector("[data-doc-toolbar]");
    if (!bar) return 0;
    return (parseFloat(getComputedStyle(bar).top) || 0) + bar.offsetHeight;
  }
  function currentPage() {
    const top = hiddenTop();
    for (const s of sections) { if (s.getBoundingClientRect().bottom > top + 8) return Number(s.dataset.page); }
    return pageCount;
  }
  /* The page's heading just below the toolbar, not under it. */
  function scrollToPage(n) {
    const top = sections[n - 1].getBoundingClientRect().top + window.scrollY - hiddenTop() - 6;
    window.scrollTo({ top: Math.max(0, top) });
  }
  /* The page a reader's "go to page" (the box, g p, #page=N) put below the toolbar stays there
     while the pages above it load (their real heights replace estimates), until the reader
     scrolls or presses a key. */
  let pinned = 0;
  for (const type of ["wheel", "touchstart", "keydown", "mousedown"]) {
    window.addEventListener(type, () => { pinned = 0; if (kept) kept.held = false; }, { capture: true, passive: true });
  }
  function goToPage(n, pin) {
    n = Math.max(1, Math.min(pageCount, n));
    pinned = pin ? n : 0; // a reader's "go to page"; a jump to a passage places itself after
    scrollToPage(n);
    return ensurePages(n, n + 1).then(() => { if (!pin || pinned === n) scrollToPage(n); });
  }

  function rangeFor(start, end) {
    const first = pageOf(start), last = pageOf(Math.max(start, end - 1));
    const point = (n, offset) => {
      const page = loaded.get(n);
      const el = sections[n - 1].querySelector("[data-page-text]");
      let units = unitsAt(page.text, offset - page.start);
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      let node = walker.nextNode();
      while (node) {
        if (units <= node.data.length) return [node, units];
        units -= node.data.length;
        node = walker.nextNode();
      }
      return [el, el.childNodes.length];
    };
    const range = document.createRange();
    range.setStart(...point(first, start));
    range.setEnd(...point(last, end));
    return range;
  }

  function flash(range) {
    if (!window.CSS || !CSS.highlights || typeof Highlight === "undefined") return;
    CSS.highlights.set("gw-flash", new Highlight(range));
    setTimeout(() => CSS.highlights.delete("gw-flash"), 2500);
  }

  /* A candidate opened to judge stays marked, and its note stays, while pages load and are
     drawn again around it (drawing a page writes its text anew, which a range would lose);
     it stays a third from the top while pages above it change height, until the reader
     scrolls or presses a key. */
  let kept = null; // {start, end, page, note, held}
  function markKept(rendered) {
    const last = pageOf(Math.max(kept.start, kept.end - 1));
    if (rendered != null && rendered > last) return;
    for (let n = kept.page; n <= last; n++) if (!loaded.has(n)) return;
    const range = rangeFor(kept.start, kept.end);
    if (window.CSS && CSS.highlights && typeof Highlight !== "undefined") CSS.highlights.set("gw-candidate", new Highlight(range));
    if (kept.held) window.scrollBy({ top: range.getBoundingClientRect().top - window.innerHeight / 3 });
  }

  /* Scroll to a passage and flash it; ``keep`` leaves it marked (a candidate someone opened
     from the item page to judge). */
  async function jumpTo(start, end, keep = false) {
    const n = pageOf(start);
    await goToPage(n);
    await ensurePages(n, pageOf(Math.max(start, end - 1)));
    const range = rangeFor(start, end);
    const rect = range.getBoundingClientRect();
    window.scrollBy({ top: rect.top - window.innerHeight / 3 });
    if (keep && window.CSS && CSS.highlights && typeof Highlight !== "undefined") {
      kept = { start, end, page: n, note: "The candidate is marked on page " + n + ".", held: true };
      markKept();
      setStatus(kept.note);
    } else flash(range);
    const mark = (range.startContainer.parentElement || pagesEl).closest("mark.hl");
    if (mark) mark.focus({ preventScroll: true });
  }

  ctx.pages = {
    starts, pageCount, loaded, sections, setStatus, pageOf, ensurePages, rerenderLoaded, rerenderPages,
    currentPage, goToPage, jumpTo, rangeFor,
  };
  return ctx.pages;
}
