/* A selection becomes an anchor: the selection's offsets in the parse (code points), and the
   popover that attaches it to an existing question (searched through the items API) or a new
   one, with a grade. */
import * as G from "../api.js";
import { cpLength, unitsAt } from "../offsets.js";
import { listKeys, passageHref, renderPassages } from "../passages.js";
import { spanIn } from "./anchors.js";
import { api, withQuery } from "../urls.js";

const SEARCH_RESULTS = 20;

export function setupPopover(ctx) {
  const { cfg, pagesEl } = ctx;
  const pop = document.querySelector("[data-popover]");

  /* -- selection -> offsets ------------------------------------------------------------- */
  function selectionSpan() {
    const sel = window.getSelection();
    if (!sel || !sel.rangeCount || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    if (!pagesEl.contains(range.commonAncestorContainer)) return null;
    const { sections, loaded } = ctx.pages;
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
  const qtypePick = pop.querySelector("[data-pop-qtype-pick]");
  const qtypeList = pop.querySelector("[data-pop-qtype-list]");
  const qtypeFree = pop.querySelector("[data-pop-qtype-free]");
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
    const setUrl = api.evalset(cfg.workspace, popSet.value);
    try {
      const [data, evalset] = await Promise.all([
        G.request("GET", withQuery(api.items(cfg.workspace, popSet.value), { page_size: SEARCH_RESULTS, q: popSearch.value })),
        G.request("GET", setUrl),
      ]);
      if (seq !== searchSeq) return;
      if (!popId.value || popId.dataset.auto === "1") { popId.value = evalset.next_item_id; popId.dataset.auto = "1"; }
      showQtypes(evalset.qtypes || []);
      popResults.replaceChildren();
      for (const it of data.results) {
        const li = document.createElement("li");
        li.setAttribute("role", "option");
        li.tabIndex = -1;
        li.dataset.item = it.id;
        const id = document.createElement("code");
        id.textContent = it.id;
        li.append(id, " ", it.question);
        if (it.state === "approved" && cfg.locked_reason) {
          // An approved item refuses new evidence until it is reopened: say so, do not offer it.
          li.setAttribute("aria-disabled", "true");
          li.classList.add("locked");
          li.dataset.why = cfg.locked_reason.replace("ITEM_ID", it.id);
          li.append(" ", G.el("span", "why", li.dataset.why));
        }
        if ((it.qtype || "").toLowerCase() === "unanswerable") {
          li.dataset.unanswerable = "1"; // evidence for it is allowed, with a warning (choose)
          li.append(" ", G.el("span", "why", "typed unanswerable"));
        }
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
  /* A new question's type: picked from the set's list when it keeps one, else typed. */
  function showQtypes(qtypes) {
    qtypePick.hidden = !qtypes.length;
    qtypeFree.hidden = qtypes.length > 0;
    const chosen = qtypeList.value;
    qtypeList.replaceChildren(G.el("option", "", "(none)"));
    qtypeList.firstChild.value = "";
    for (const q of qtypes) { const o = G.el("option", "", q); o.value = q; qtypeList.append(o); }
    qtypeList.value = qtypes.includes(chosen) ? chosen : "";
  }
  function newQtype() {
    const value = qtypePick.hidden ? qtypeFree.querySelector("input").value.trim() : qtypeList.value;
    return value || null;
  }
  let searchTimer = null;
  popSearch.addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(search, 150); });
  popSet.addEventListener("change", () => { localStorage.setItem("gw-set:" + cfg.workspace, popSet.value); chosenItem = null; popId.dataset.auto = "1"; search(); overlapNotice(); });
  function choose(li) {
    if (li.getAttribute("aria-disabled") === "true") { popError("non_field_errors", li.dataset.why); return; }
    chosenItem = li.dataset.item;
    popResults.querySelectorAll("[role=option]").forEach((o) => o.setAttribute("aria-selected", String(o === li)));
    clearPopErrors();
    listSuggestions();
    overlapNotice();
    if (li.dataset.unanswerable) popError("non_field_errors", chosenItem + " is typed unanswerable: this evidence says the documents answer it. Save anyway only if it is answerable after all, then change its type.");
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
    // A span from the PDF view names its own parse (pdfium); the server places it in the reference.
    if (!span.parse && !cfg.is_reference) { G.toast("Switch to the reference parse to add evidence", "error"); return; }
    if (!cfg.sets.length) { G.toast("There is no eval set yet; an owner creates one on the workspace page", "error"); return; }
    current = span;
    returnFocus = ctx.keys.caret() ? pagesEl : document.activeElement;
    clearPopErrors();
    pop.querySelector("[data-pop-quote]").textContent = span.quote.length > 280 ? span.quote.slice(0, 280) + "…" : span.quote;
    if (!span.rect) pendingHighlight(span.range); // a selection in the rendered view's frame shows itself
    pop.hidden = false;
    const rect = span.rect || span.range.getBoundingClientRect();
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
    listSuggestions();
    overlapNotice();
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

    const grade = Number(pop.querySelector("[data-pop-grade]:checked").value);
    let itemId = chosenItem;
    popBusy.hidden = false;
    popSave.disabled = true;
    try {
      if (mode() === "new") {
        try {
          const item = await G.request("POST", api.items(cfg.workspace, set), { id: popId.value.trim(), question: popQuestion.value, qtype: newQtype() });
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
      const anchor = await G.request("POST", api.anchors(cfg.workspace, set, itemId), {
        parse: current.parse || cfg.parse, start: current.start, end: current.end, grade: grade,
        suggested: suggestedFor(current),
      });
      window.getSelection().removeAllRanges();
      closePopover();
      const box = announceSaved(set, itemId, anchor);
      // The annotations panel offers to undo it (panel.js).
      document.dispatchEvent(new CustomEvent("gw:anchor-saved", { detail: { set, item: itemId, anchor, box } }));
      if (anchor.overlaps && anchor.overlaps.length) announceOverlaps(anchor.overlaps);
      await ctx.anchors.refresh();
      ctx.anchors.followResolution(anchor.id);
    } catch (err) {
      popError("non_field_errors", err.message);
    } finally {
      popBusy.hidden = true;
      popSave.disabled = false;
    }
  }

  /* -- suggested passages: opened pre-selected, recorded with the evidence made from them -- */
  let suggestion = null; // {parse, start, end, rank, via}: the passage this page opened at
  function suggestedFor(span) {
    if (!suggestion || span.parse || span.end <= suggestion.start || span.start >= suggestion.end) return null;
    return suggestion;
  }

  async function selectSuggested(passage) {
    suggestion = { parse: cfg.parse, start: passage.start, end: passage.end, rank: passage.rank, via: passage.via };
    await ctx.pages.jumpTo(passage.start, passage.end);
    // Enter anchors the selection unless a highlight has the focus (jumpTo gives it one).
    if (document.activeElement && document.activeElement.closest("mark")) document.activeElement.blur();
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(ctx.pages.rangeFor(passage.start, passage.end));
    ctx.pages.setStatus("Suggested passage selected (page " + ctx.pages.pageOf(passage.start) +
      "). Trim it to the words that answer (Shift+arrows, or select with the mouse), then press Enter to attach it.");
  }

  /* The popover's list of suggestions for the chosen question, in this document. */
  const popSuggested = pop.querySelector("[data-pop-suggested]");
  let suggestSeq = 0;
  async function listSuggestions() {
    if (!popSuggested) return;
    const list = popSuggested.querySelector("ol");
    const seq = ++suggestSeq;
    list.replaceChildren();
    popSuggested.hidden = true;
    if (mode() !== "existing" || !chosenItem || !popSet.value) return;
    try {
      const url = withQuery(api.suggestions(cfg.workspace, popSet.value, chosenItem), { document: cfg.document, limit: 3 });
      const body = await G.request("GET", url);
      if (seq !== suggestSeq || !body.results.length) return;
      renderPassages(list, body.results, (hit) => passageHref(cfg.workspace, hit, "suggestions", popSet.value, chosenItem));
      popSuggested.hidden = false;
    } catch (err) { /* suggestions help; saving works without them */ }
  }
  if (popSuggested) {
    const list = popSuggested.querySelector("ol");
    listKeys(list, null);
    list.addEventListener("click", (e) => {
      const link = e.target.closest("a.passage");
      // Outside the text view (a PDF's or a rendered document's view) the link opens it.
      if (!link || !ctx.pages.jumpTo || (ctx.pdf && ctx.pdf.view() !== "text")) return;
      e.preventDefault();
      const m = /#suggest=(\d+)-(\d+);rank=(\d+)/.exec(link.getAttribute("href"));
      closePopover();
      selectSuggested({ start: Number(m[1]), end: Number(m[2]), rank: Number(m[3]), via: "suggestions" });
    });
  }

  /* Before saving: the evidence of other questions this selection overlaps, in this parse
     (the anchors the page already drew), as near-duplicate questions are named. */
  const popOverlap = pop.querySelector("[data-pop-overlap]");
  function overlapNotice() {
    if (!popOverlap) return;
    popOverlap.replaceChildren();
    const span = current;
    const others = !span || span.parse ? [] : ctx.anchors.all().filter((a) => {
      if (a.item.set === popSet.value && a.item.id === chosenItem) return false;
      const at = spanIn(a, cfg.parse);
      return at && at[0] < span.end && span.start < at[1];
    });
    popOverlap.hidden = !others.length;
    if (!others.length) return;
    popOverlap.append(G.el("p", "", "This passage is already evidence for another question:"));
    const ul = G.el("ul");
    for (const a of others.slice(0, 5)) {
      const li = G.el("li");
      const link = G.el("a", "", a.item.set + " / " + a.item.id);
      link.href = ctx.anchors.itemUrl(a.item.set, a.item.id);
      li.append(link, " “" + a.item.question + "”");
      ul.append(li);
    }
    popOverlap.append(ul);
  }

  function announceOverlaps(overlaps) {
    const box = G.toast("This passage is already evidence for another question: ", "warning");
    if (!box) return;
    box.classList.add("overlap-note");
    box.dataset.overlaps = "1";
    const ul = G.el("ul");
    for (const o of overlaps) {
      const li = G.el("li");
      const link = G.el("a", "", o.set + " / " + o.item);
      link.href = ctx.anchors.itemUrl(o.set, o.item);
      li.append(link, " “" + o.question + "”");
      ul.append(li);
    }
    box.append(ul);
  }

  function announceSaved(set, itemId, anchor) {
    const box = G.toast("Saved evidence for " + itemId + " (page " + anchor.page_hint + "). ");
    if (!box) return;
    const link = document.createElement("a");
    link.href = ctx.anchors.itemUrl(set, itemId);
    link.textContent = "Open " + itemId;
    link.dataset.openItem = itemId;
    box.appendChild(link);
    return box;
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
    if (span.error) { ctx.pages.setStatus(span.error); return true; }
    openPopover(span);
    return true;
  }
  pagesEl.addEventListener("mouseup", () => setTimeout(trySelection, 0));
  pagesEl.addEventListener("keyup", (e) => {
    if (e.shiftKey && e.key.startsWith("Arrow")) {
      const span = selectionSpan();
      if (span && !span.error) ctx.pages.setStatus("Selected " + cpLength(span.quote) + " characters: press Enter to anchor them.");
    }
  });

  ctx.popover = { selectionSpan, trySelection, selectSuggested, isOpen: () => !pop.hidden, open: openPopover };
  return ctx.popover;
}
