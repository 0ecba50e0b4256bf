/* Document view: a parse rendered page by page, loaded lazily as the reader scrolls, with
   every anchor highlighted, and a popover that turns a selection into an anchor.

   Offsets: the server counts code points; JavaScript strings count UTF-16 units. Each page
   knows its start (code points) and its text, so a DOM position inside a page becomes
   page.start + codePoints(page.text.slice(0, units)), and back. Document text only ever
   enters the page as text nodes (textContent), never as HTML. */
(function () {
  "use strict";
  const G = window.Groundwork;
  const cfg = JSON.parse(document.getElementById("doc-config").textContent);
  const pagesEl = document.querySelector("[data-pages]");
  const statusEl = document.querySelector("[data-doc-status]");
  const tip = document.querySelector("[data-tip]");
  const pop = document.querySelector("[data-popover]");
  const FOUND = ["exact", "normalised", "fuzzy"];
  const BATCH = 20;
  const SEARCH_RESULTS = 20;
  const wsUrl = "/w/" + encodeURIComponent(cfg.workspace);

  const switcher = document.querySelector("[data-parse-switch]");
  if (switcher) switcher.addEventListener("change", () => {
    const q = new URLSearchParams(window.location.search);
    q.set("parse", switcher.value);
    window.location.search = q.toString();
  });
  if (!pagesEl || !cfg.parse_ready) return;

  const starts = cfg.page_starts;
  const pageCount = starts.length;
  const pagesUrl = G.apiBase(cfg.workspace) + "/documents/" + G.pathOf(cfg.document) + "/parses/" + cfg.parse + "/pages/";
  const loaded = new Map(); // page number -> {start, text}
  const inflight = new Set();
  const wanted = new Set();
  let anchors = [];

  /* -- code points <-> UTF-16 units ----------------------------------------------------- */
  function cpLength(s) {
    let n = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) i++;
      }
      n++;
    }
    return n;
  }
  /* UTF-16 index of code point `cp` in s. */
  function unitsAt(s, cp) {
    let i = 0, n = 0;
    while (n < cp && i < s.length) {
      const c = s.charCodeAt(i);
      i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
      n++;
    }
    return i;
  }
  function pageOf(offset) { // 1-based page holding a code-point offset
    let lo = 0, hi = starts.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (starts[mid] <= offset) lo = mid + 1; else hi = mid; }
    return Math.max(1, lo);
  }
  function pageEnd(n) { return n < pageCount ? starts[n] : cfg.length; }

  /* -- the page skeleton: one sized placeholder per page --------------------------------- */
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

  /* -- loading pages --------------------------------------------------------------------- */
  let loadTimer = null;
  function scheduleLoad() {
    if (loadTimer) return;
    loadTimer = setTimeout(() => { loadTimer = null; loadWanted(); }, 30);
  }
  function setStatus(text) { statusEl.textContent = text; }

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
      const data = await G.request("GET", pagesUrl + "?from=" + first + "&to=" + last);
      for (const page of data.pages) {
        loaded.set(page.number, { start: page.start, text: page.text });
        renderPage(page.number);
      }
      setStatus("");
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

  /* -- anchors on the shown parse ------------------------------------------------------- */
  function spanOf(anchor) {
    if (anchor.highlight && anchor.highlight.parse === cfg.parse) return [anchor.highlight.start, anchor.highlight.end];
    const r = anchor.resolutions.find((x) => x.parse === cfg.parse && FOUND.includes(x.status) && x.start != null);
    return r ? [r.start, r.end] : null;
  }
  let spans = [];
  const byId = new Map();
  function indexAnchors() {
    byId.clear();
    spans = [];
    for (const a of anchors) {
      byId.set(a.id, a);
      const span = spanOf(a);
      if (span) spans.push({ id: a.id, start: span[0], end: span[1], grade: a.grade });
    }
    spans.sort((x, y) => x.start - y.start || x.end - y.end);
  }
  indexAnchors();

  function renderPage(n) {
    const page = loaded.get(n);
    const section = sections[n - 1];
    const el = section.querySelector("[data-page-text]");
    const pStart = page.start;
    const pEnd = pStart + cpLength(page.text);
    const here = spans.filter((s) => s.start < pEnd && s.end > pStart);
    const cuts = new Set([0, pEnd - pStart]);
    for (const s of here) { cuts.add(Math.max(0, s.start - pStart)); cuts.add(Math.min(pEnd, s.end) - pStart); }
    const points = Array.from(cuts).sort((a, b) => a - b);
    // Walk the text once, turning code-point cuts into UTF-16 indexes.
    const units = [];
    let i = 0, cp = 0;
    for (const p of points) {
      while (cp < p && i < page.text.length) {
        const c = page.text.charCodeAt(i);
        i += c >= 0xd800 && c <= 0xdbff && i + 1 < page.text.length ? 2 : 1;
        cp++;
      }
      units.push(i);
    }
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
  }

  function rerenderLoaded() {
    for (const n of Array.from(loaded.keys()).sort((a, b) => a - b)) renderPage(n);
  }

  const anchorsUrl = G.apiBase(cfg.workspace) + "/documents/" + G.pathOf(cfg.document) + "/anchors/?page_size=500";
  async function refreshAnchors() {
    anchors = await G.all(anchorsUrl);
    indexAnchors();
    rerenderLoaded();
    if (!tip.hidden) fillTip(tipIds); // statuses arrive while someone reads the tooltip
    return anchors;
  }

  /* -- the tooltip: question, grade and status in every parse ------------------------------ */
  let hideTimer = null;
  let tipIds = [];
  function fillTip(ids) {
    tipIds = ids;
    tip.replaceChildren();
    for (const id of ids) {
      const a = byId.get(id);
      if (!a) continue;
      const box = document.createElement("div");
      box.className = "tip-anchor";
      const q = document.createElement("a");
      q.className = "tip-q";
      q.href = wsUrl + "/sets/" + encodeURIComponent(a.item.set) + "/items/" + encodeURIComponent(a.item.id) + "/";
      q.textContent = a.item.id + ": " + a.item.question;
      const meta = document.createElement("div");
      meta.className = "tip-meta";
      meta.textContent = "grade " + a.grade + " (" + G.words.grade(a.grade) + ") · " + a.item.set + " · " + G.words.state(a.item.state);
      const list = document.createElement("ul");
      list.className = "badges";
      for (const p of cfg.parses) {
        const r = a.resolutions.find((x) => x.parse === p.id);
        const li = document.createElement("li");
        const status = r ? r.status : "pending";
        li.className = "badge " + status;
        li.textContent = G.words.resolution(status);
        const parser = document.createElement("span");
        parser.className = "parser";
        parser.textContent = p.parser + (p.version ? " " + p.version : "") + (p.id === cfg.reference ? " (ref)" : "");
        li.appendChild(parser);
        list.appendChild(li);
      }
      box.append(q, meta, list);
      tip.appendChild(box);
    }
  }
  function showTip(mark) {
    clearTimeout(hideTimer);
    fillTip(mark.dataset.anchors.split(" "));
    tip.hidden = false;
    const rect = mark.getBoundingClientRect();
    const width = Math.min(380, window.innerWidth - 16);
    tip.style.width = width + "px";
    tip.style.left = Math.max(8, Math.min(window.scrollX + rect.left, window.scrollX + window.innerWidth - width - 8)) + "px";
    tip.style.top = window.scrollY + rect.bottom + 6 + "px";
  }
  function hideTipSoon() { clearTimeout(hideTimer); hideTimer = setTimeout(() => { tip.hidden = true; }, 250); }
  pagesEl.addEventListener("mouseover", (e) => { const m = e.target.closest("mark.hl"); if (m) showTip(m); });
  pagesEl.addEventListener("mouseout", (e) => { if (e.target.closest("mark.hl")) hideTipSoon(); });
  pagesEl.addEventListener("focusin", (e) => { const m = e.target.closest("mark.hl"); if (m) showTip(m); });
  pagesEl.addEventListener("focusout", (e) => { if (e.target.closest("mark.hl")) hideTipSoon(); });
  tip.addEventListener("mouseenter", () => clearTimeout(hideTimer));
  tip.addEventListener("mouseleave", hideTipSoon);
  pagesEl.addEventListener("keydown", (e) => {
    const m = e.target.closest && e.target.closest("mark.hl");
    if (m && e.key === "Enter" && !caret) {
      const a = byId.get(m.dataset.anchors.split(" ")[0]);
      if (a) window.location.href = wsUrl + "/sets/" + encodeURIComponent(a.item.set) + "/items/" + encodeURIComponent(a.item.id) + "/";
    }
  });

  /* -- moving around --------------------------------------------------------------------- */
  function currentPage() {
    const top = (document.querySelector("[data-doc-toolbar]") || {}).offsetHeight || 0;
    for (const s of sections) { if (s.getBoundingClientRect().bottom > top + 8) return Number(s.dataset.page); }
    return pageCount;
  }
  function goToPage(n) {
    n = Math.max(1, Math.min(pageCount, n));
    sections[n - 1].scrollIntoView({ block: "start" });
    return ensurePages(n, n + 1).then(() => sections[n - 1].scrollIntoView({ block: "start" }));
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

  async function jumpTo(start, end) {
    const n = pageOf(start);
    await goToPage(n);
    await ensurePages(n, pageOf(Math.max(start, end - 1)));
    const range = rangeFor(start, end);
    const rect = range.getBoundingClientRect();
    window.scrollBy({ top: rect.top - window.innerHeight / 3 });
    flash(range);
    const mark = (range.startContainer.parentElement || pagesEl).closest("mark.hl");
    if (mark) mark.focus({ preventScroll: true });
  }

  function focusHighlight(step) {
    const marks = Array.from(pagesEl.querySelectorAll("mark.hl[tabindex='0']"));
    const active = document.activeElement;
    let index = marks.indexOf(active);
    if (index === -1) {
      const top = 80;
      index = marks.findIndex((m) => m.getBoundingClientRect().top > top);
      index = step > 0 ? index - 1 : index;
      if (index < -1) index = marks.length - 1;
    }
    const next = marks[index + step];
    if (next) { next.focus(); next.scrollIntoView({ block: "center" }); return; }
    // Not loaded yet: find the next anchor by offset and jump there.
    const here = active && active.dataset && active.dataset.first ? spans.find((s) => s.id === active.dataset.first) : null;
    const pivot = here ? here.start : starts[currentPage() - 1];
    const target = step > 0 ? spans.find((s) => s.start > pivot) : spans.slice().reverse().find((s) => s.start < pivot);
    if (target) jumpTo(target.start, target.end);
    else G.toast(step > 0 ? "No more highlights below" : "No more highlights above");
  }

  const gotoForm = document.querySelector("[data-goto]");
  const gotoInput = document.querySelector("[data-goto-input]");
  gotoForm.addEventListener("submit", (e) => { e.preventDefault(); goToPage(Number(gotoInput.value) || 1); });
  G.chords.p = () => { gotoInput.focus(); gotoInput.select(); };

  /* -- caret mode: select text with the keyboard ----------------------------------------- */
  let caret = false;
  const caretButton = document.querySelector("[data-caret-toggle]");
  function setCaret(on) {
    caret = on;
    pagesEl.contentEditable = on ? "true" : "false";
    pagesEl.classList.toggle("caret", on);
    caretButton.setAttribute("aria-pressed", String(on));
    if (on) {
      pagesEl.focus({ preventScroll: true });
      const el = sections[currentPage() - 1].querySelector("[data-page-text]");
      const sel = window.getSelection();
      sel.removeAllRanges();
      const r = document.createRange();
      r.setStart(el, 0);
      r.collapse(true);
      sel.addRange(r);
      setStatus("Caret mode: arrows move, Shift+arrows select, Enter anchors, Esc leaves.");
    } else setStatus("");
  }
  caretButton.addEventListener("click", () => setCaret(!caret));
  // Caret mode makes the text editable only so the keyboard can select; nothing may change it.
  for (const type of ["beforeinput", "paste", "cut", "drop"]) pagesEl.addEventListener(type, (e) => e.preventDefault());
  pagesEl.addEventListener("input", rerenderLoaded);

  /* -- selection -> offsets ------------------------------------------------------------- */
  function selectionSpan() {
    const sel = window.getSelection();
    if (!sel || !sel.rangeCount || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    if (!pagesEl.contains(range.commonAncestorContainer)) return null;
    const touched = sections.filter((s) => range.intersectsNode(s.querySelector("[data-page-text]")));
    if (!touched.length) return null;
    if (touched.some((s) => !loaded.has(Number(s.dataset.page)))) {
      return { error: "part of that selection is still loading; wait a moment and select again" };
    }
    const first = touched[0].querySelector("[data-page-text]");
    const last = touched[touched.length - 1].querySelector("[data-page-text]");
    const unitsIn = (el, node, offset) => { const r = document.createRange(); r.setStart(el, 0); r.setEnd(node, offset); return r.toString().length; };
    const a = first.contains(range.startContainer) || first === range.startContainer ? unitsIn(first, range.startContainer, range.startOffset) : 0;
    const b = last.contains(range.endContainer) || last === range.endContainer ? unitsIn(last, range.endContainer, range.endOffset) : last.textContent.length;
    const p1 = loaded.get(Number(first.dataset.pageText));
    const p2 = loaded.get(Number(last.dataset.pageText));
    const start = p1.start + cpLength(p1.text.slice(0, a));
    const end = p2.start + cpLength(p2.text.slice(0, b));
    if (end <= start) return null;
    let quote = "";
    for (const s of touched) {
      const page = loaded.get(Number(s.dataset.page));
      const from = Math.max(start, page.start) - page.start;
      const to = Math.min(end, page.start + cpLength(page.text)) - page.start;
      quote += page.text.slice(unitsAt(page.text, from), unitsAt(page.text, to));
    }
    if (!quote.trim()) return { error: "that selection is only white space; select some words" };
    return { start, end, quote, range: range.cloneRange() };
  }

  /* -- the popover --------------------------------------------------------------------- */
  const popSet = pop.querySelector("[data-pop-set]");
  const popSearch = pop.querySelector("[data-pop-search]");
  const popResults = pop.querySelector("[data-pop-results]");
  const popExisting = pop.querySelector("[data-pop-existing]");
  const popNew = pop.querySelector("[data-pop-new]");
  const popId = pop.querySelector("[data-pop-id]");
  const popQuestion = pop.querySelector("[data-pop-question]");
  const popBusy = pop.querySelector("[data-pop-busy]");
  const popSave = pop.querySelector("[data-pop-save]");
  let current = null; // {start, end, quote, range}
  let chosenItem = cfg.item || null;
  let returnFocus = null;
  const remembered = localStorage.getItem("gw-set:" + cfg.workspace);
  popSet.value = cfg.item ? cfg.set : (cfg.sets.includes(remembered) ? remembered : cfg.set);

  function mode() { return pop.querySelector("[data-pop-mode]:checked").value; }
  function setMode(value) {
    pop.querySelector('[data-pop-mode][value="' + value + '"]').checked = true;
    popExisting.hidden = value !== "existing";
    popNew.hidden = value !== "new";
  }
  pop.querySelectorAll("[data-pop-mode]").forEach((r) => r.addEventListener("change", () => setMode(mode())));

  function popError(field, message) {
    const slot = pop.querySelector('[data-pop-error="' + field + '"]') || pop.querySelector('[data-pop-error="non_field_errors"]');
    slot.textContent = message;
  }
  function clearPopErrors() { pop.querySelectorAll("[data-pop-error]").forEach((e) => { e.textContent = ""; }); }

  let searchSeq = 0;
  async function search() {
    const seq = ++searchSeq;
    if (!popSet.value) { popResults.replaceChildren(); return; }
    const setUrl = G.apiBase(cfg.workspace) + "/evalsets/" + encodeURIComponent(popSet.value) + "/";
    try {
      const [data, evalset] = await Promise.all([
        G.request("GET", setUrl + "items/?page_size=" + SEARCH_RESULTS + "&q=" + encodeURIComponent(popSearch.value)),
        G.request("GET", setUrl),
      ]);
      if (seq !== searchSeq) return;
      if (!popId.value || popId.dataset.auto === "1") { popId.value = evalset.next_item_id; popId.dataset.auto = "1"; }
      popResults.replaceChildren();
      for (const it of data.results) {
        const li = document.createElement("li");
        li.setAttribute("role", "option");
        li.tabIndex = -1;
        li.dataset.item = it.id;
        const id = document.createElement("code");
        id.textContent = it.id;
        li.append(id, " ", it.question);
        li.setAttribute("aria-selected", String(it.id === chosenItem));
        popResults.appendChild(li);
      }
      if (!data.results.length) {
        const li = document.createElement("li");
        li.className = "muted";
        li.textContent = popSearch.value ? "No question matches; write a new one." : "No questions in this set yet.";
        popResults.appendChild(li);
        if (!popSearch.value) setMode("new");
      }
    } catch (err) { popError("non_field_errors", err.message); }
  }
  let searchTimer = null;
  popSearch.addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(search, 150); });
  popSet.addEventListener("change", () => { localStorage.setItem("gw-set:" + cfg.workspace, popSet.value); chosenItem = null; popId.dataset.auto = "1"; search(); });
  function choose(li) {
    chosenItem = li.dataset.item;
    popResults.querySelectorAll("[role=option]").forEach((o) => o.setAttribute("aria-selected", String(o === li)));
  }
  popResults.addEventListener("click", (e) => { const li = e.target.closest("[role=option]"); if (li) choose(li); });
  popResults.addEventListener("keydown", (e) => {
    const options = Array.from(popResults.querySelectorAll("[role=option]"));
    const i = options.indexOf(document.activeElement);
    if (e.key === "ArrowDown" && i + 1 < options.length) { e.preventDefault(); options[i + 1].focus(); }
    if (e.key === "ArrowUp") { e.preventDefault(); (i > 0 ? options[i - 1] : popSearch).focus(); }
    if ((e.key === "Enter" || e.key === " ") && i >= 0) { e.preventDefault(); choose(options[i]); }
  });
  popSearch.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown") { const first = popResults.querySelector("[role=option]"); if (first) { e.preventDefault(); first.focus(); } }
    if (e.key === "Enter") { e.preventDefault(); const first = popResults.querySelector("[role=option]"); if (first) choose(first); }
  });
  popId.addEventListener("input", () => { popId.dataset.auto = "0"; });

  function pendingHighlight(range) {
    if (!window.CSS || !CSS.highlights || typeof Highlight === "undefined") return;
    if (range) CSS.highlights.set("gw-pending", new Highlight(range));
    else CSS.highlights.delete("gw-pending");
  }

  function openPopover(span) {
    if (!cfg.can_write) { G.toast("Your role can read this document but not add evidence", "error"); return; }
    if (!cfg.is_reference) { G.toast("Switch to the reference parse to add evidence", "error"); return; }
    if (!cfg.sets.length) { G.toast("There is no eval set yet; an owner creates one on the workspace page", "error"); return; }
    current = span;
    returnFocus = caret ? pagesEl : document.activeElement;
    clearPopErrors();
    pop.querySelector("[data-pop-quote]").textContent = span.quote.length > 280 ? span.quote.slice(0, 280) + "…" : span.quote;
    pendingHighlight(span.range);
    pop.hidden = false;
    const rect = span.range.getBoundingClientRect();
    const width = Math.min(420, window.innerWidth - 16);
    pop.style.width = width + "px";
    pop.style.left = Math.max(8, Math.min(window.scrollX + rect.left, window.scrollX + window.innerWidth - width - 8)) + "px";
    let top = window.scrollY + rect.bottom + 8;
    const height = pop.offsetHeight;
    if (rect.bottom + height + 8 > window.innerHeight && rect.top > height + 8) top = window.scrollY + rect.top - height - 8;
    pop.style.top = top + "px";
    if (!popSearch.value && popResults.children.length === 0) setMode("existing");
    search().then(() => {
      if (mode() === "new") popQuestion.focus(); else popSearch.focus();
    });
  }

  function closePopover() {
    pop.hidden = true;
    current = null;
    pendingHighlight(null);
    if (returnFocus && returnFocus.focus) returnFocus.focus({ preventScroll: true });
  }

  async function save() {
    if (!current) return;
    clearPopErrors();
    const set = popSet.value;
    const itemsUrl = G.apiBase(cfg.workspace) + "/evalsets/" + encodeURIComponent(set) + "/items/";
    const grade = Number(pop.querySelector("[data-pop-grade]:checked").value);
    let itemId = chosenItem;
    popBusy.hidden = false;
    popSave.disabled = true;
    try {
      if (mode() === "new") {
        try {
          const item = await G.request("POST", itemsUrl, { id: popId.value.trim(), question: popQuestion.value });
          itemId = item.id;
        } catch (err) {
          for (const [field, messages] of Object.entries(err.errors || {})) popError(field, messages.join(" "));
          if (!Object.keys(err.errors || {}).length) popError("non_field_errors", err.message);
          return;
        }
        // From now on this question exists: a retry attaches to it instead of creating it again.
        chosenItem = itemId;
        popQuestion.value = "";
        popId.dataset.auto = "1";
        popSearch.value = itemId;
        setMode("existing");
      } else if (!itemId) {
        popError("non_field_errors", "choose a question from the list, or write a new one");
        return;
      }
      const anchor = await G.request("POST", itemsUrl + encodeURIComponent(itemId) + "/anchors/", {
        parse: cfg.parse, start: current.start, end: current.end, grade: grade,
      });
      window.getSelection().removeAllRanges();
      closePopover();
      announceSaved(set, itemId, anchor);
      await refreshAnchors();
      followResolution(anchor.id);
    } catch (err) {
      popError("non_field_errors", err.message);
    } finally {
      popBusy.hidden = true;
      popSave.disabled = false;
    }
  }

  function announceSaved(set, itemId, anchor) {
    const box = G.toast("Saved evidence for " + itemId + " (page " + anchor.page_hint + "). ");
    if (!box) return;
    const link = document.createElement("a");
    link.href = wsUrl + "/sets/" + encodeURIComponent(set) + "/items/" + encodeURIComponent(itemId) + "/";
    link.textContent = "Open " + itemId;
    link.dataset.openItem = itemId;
    box.appendChild(link);
  }

  /* After a save, poll until the workers have placed the new anchor in every parse. */
  function followResolution(id, round) {
    round = round || 0;
    const a = anchors.find((x) => x.id === id);
    const done = a && a.resolutions.length >= cfg.parses.length && !a.resolutions.some((r) => r.status === "pending");
    if (done || round > 60) return;
    setTimeout(() => refreshAnchors().then(() => followResolution(id, round + 1), () => {}), Math.min(3000, 500 + round * 200));
  }

  popSave.addEventListener("click", save);
  pop.querySelector("[data-pop-cancel]").addEventListener("click", closePopover);
  pop.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.preventDefault(); closePopover(); return; }
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); return; }
    const inText = e.target.matches("input[type=search], input:not([type]), input[type=text], textarea");
    if (!inText && ["0", "1", "2"].includes(e.key) && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      pop.querySelector('[data-pop-grade][value="' + e.key + '"]').checked = true;
    }
  });
  document.addEventListener("mousedown", (e) => {
    if (!pop.hidden && !pop.contains(e.target)) closePopover();
  });

  function trySelection() {
    const span = selectionSpan();
    if (!span) return false;
    if (span.error) { setStatus(span.error); return true; }
    openPopover(span);
    return true;
  }
  pagesEl.addEventListener("mouseup", () => setTimeout(trySelection, 0));
  pagesEl.addEventListener("keyup", (e) => {
    if (e.shiftKey && e.key.startsWith("Arrow")) {
      const span = selectionSpan();
      if (span && !span.error) setStatus("Selected " + cpLength(span.quote) + " characters: press Enter to anchor them.");
    }
  });

  /* -- keys ------------------------------------------------------------------------------ */
  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || !pop.hidden) return;
    if (caret) {
      if (e.key === "Escape") { e.preventDefault(); setCaret(false); return; }
      if (e.key === "Enter" || e.key === "a") { e.preventDefault(); trySelection(); return; }
      return;
    }
    if (G.isTyping(e.target)) return;
    const key = e.key;
    if (key === "j") { e.preventDefault(); goToPage(currentPage() + 1); }
    else if (key === "k") { e.preventDefault(); goToPage(currentPage() - 1); }
    else if (key === "n") { e.preventDefault(); focusHighlight(1); }
    else if (key === "p") { e.preventDefault(); focusHighlight(-1); }
    else if (key === "c") { e.preventDefault(); setCaret(true); }
    else if (key === "a" || (key === "Enter" && !e.target.closest("a, button, mark"))) {
      if (trySelection()) e.preventDefault();
    }
  });

  /* -- where to start ------------------------------------------------------------------- */
  refreshAnchors().catch((err) => setStatus("Could not load the highlights: " + err.message));
  const at = /#at=(\d+)-(\d+)/.exec(window.location.hash);
  const pageHash = /#page=(\d+)/.exec(window.location.hash);
  if (at) jumpTo(Number(at[1]), Number(at[2]));
  else if (pageHash) goToPage(Number(pageHash[1]));

  window.groundworkDocument = { pageOf, jumpTo, goToPage, selectionSpan, loaded, refreshAnchors };
})();
