/* The anchors on this document, read from the API, drawn where they lie in the shown parse,
   and the tooltip that says each one's question, grade and status in every parse (kept
   current while the workers resolve a new one). */

import * as G from "../api.js";
import { openComparison } from "../compare.js";
import { poll } from "../poll.js";
import { api, pages, withQuery } from "../urls.js";

/* Where an anchor lies in a parse: where it was highlighted there, else where the workers
   found it; null when neither. The text view and the PDF view both draw from this. */
/* What a parse that cannot place anchors (yet) shows in the tooltip instead of a status. */
const PARSE_STATES = { failed: "parse failed", queued: "parsing", parsing: "parsing" };

export function spanIn(anchor, parse) {
  if (anchor.highlight && anchor.highlight.parse === parse) return [anchor.highlight.start, anchor.highlight.end];
  const found = G.labels.found || [];
  const r = anchor.resolutions.find((x) => x.parse === parse && found.includes(x.status) && x.start != null);
  return r ? [r.start, r.end] : null;
}

export function setupAnchors(ctx) {
  const { cfg, pagesEl } = ctx;
  const tip = document.querySelector("[data-tip]");
  const url = withQuery(api.documentAnchors(cfg.workspace, cfg.document), { page_size: 500 });
  let anchors = [];
  let spans = [];
  const byId = new Map();

  function indexAnchors() {
    byId.clear();
    spans = [];
    for (const a of anchors) {
      byId.set(a.id, a);
      const span = spanIn(a, cfg.parse);
      if (span) spans.push({ id: a.id, start: span[0], end: span[1], grade: a.grade });
    }
    spans.sort((x, y) => x.start - y.start || x.end - y.end);
  }

  /* The pages whose marks differ between two span lists: only those are drawn again, so a new
     highlight on page 900 of a 4 MB text redraws page 900 alone. */
  function changedPages(before, after) {
    const key = (s) => s.id + ":" + s.start + ":" + s.end + ":" + s.grade;
    const old = new Set(before.map(key)), now = new Set(after.map(key));
    const pages = new Set();
    const mark = (s) => {
      const last = ctx.pages.pageOf(Math.max(s.start, s.end - 1));
      for (let n = ctx.pages.pageOf(s.start); n <= last; n++) pages.add(n);
    };
    before.filter((s) => !now.has(key(s))).forEach(mark);
    after.filter((s) => !old.has(key(s))).forEach(mark);
    return pages;
  }

  async function refresh() {
    anchors = await G.all(url);
    const before = spans;
    indexAnchors();
    if (ctx.pages.rerenderPages) ctx.pages.rerenderPages(changedPages(before, spans));
    else ctx.pages.rerenderLoaded();
    document.dispatchEvent(new CustomEvent("gw:anchors")); // the PDF view redraws its marks
    if (!tip.hidden) fillTip(tipIds); // statuses arrive while someone reads the tooltip
    return anchors;
  }

  function itemUrl(set, item) {
    return pages.item(cfg.workspace, set, item);
  }

  /* -- the tooltip ------------------------------------------------------------------------- */
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
      q.href = itemUrl(a.item.set, a.item.id);
      q.textContent = a.item.id + ": " + a.item.question;
      const meta = document.createElement("div");
      meta.className = "tip-meta";
      // Who made it: reviewers and owners see everyone's evidence on an overlapped item.
      meta.textContent = "grade " + a.grade + " (" + G.words.grade(a.grade) + ") · " + a.item.set + " · " + G.words.state(a.item.state)
        + (a.created_by ? " · by " + a.created_by : "");
      const list = document.createElement("ul");
      list.className = "badges";
      for (const p of cfg.parses) {
        const r = a.resolutions.find((x) => x.parse === p.id);
        const li = document.createElement("li");
        // No place in a parse that failed (or is still being read) is that, not "pending".
        const status = r ? r.status : PARSE_STATES[p.status] ? p.status : "pending";
        li.className = "badge " + status;
        li.textContent = r ? G.words.resolution(status) : PARSE_STATES[p.status] || G.words.resolution(status);
        const parser = document.createElement("span");
        parser.className = "parser";
        parser.textContent = p.parser + (p.version ? " " + p.version : "") + (p.id === cfg.reference ? " (ref)" : "");
        li.appendChild(parser);
        list.appendChild(li);
      }
      // Why a parse failed, under the badges: "parse failed" alone leaves the reader guessing.
      const why = cfg.parses.filter((p) => p.status === "failed" && p.error).map((p) => {
        const line = document.createElement("div");
        line.className = "tip-meta tip-failed";
        line.textContent = p.parser + ": " + p.error;
        return line;
      });
      const compare = document.createElement("button");
      compare.type = "button";
      compare.className = "link small";
      compare.textContent = "How each parser read it (v)";
      Object.assign(compare.dataset, { compareWs: cfg.workspace, compareSet: a.item.set, compareItem: a.item.id, compareAnchor: a.id });
      box.append(q, meta, list, ...why, compare);
      tip.appendChild(box);
    }
  }
  function showTip(mark) { showTipAt(mark.dataset.anchors.split(" "), mark.getBoundingClientRect()); }
  /* The tooltip for these anchors under a box in viewport coordinates (the rendered view
     passes a mark's box inside its frame, moved by the frame's place on the page). */
  function showTipAt(ids, rect) {
    clearTimeout(hideTimer);
    fillTip(ids);
    tip.hidden = false;
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
    if (m && e.key === "Enter" && !ctx.keys.caret()) {
      const a = byId.get(m.dataset.anchors.split(" ")[0]);
      if (a) window.location.href = itemUrl(a.item.set, a.item.id);
    }
    if (m && e.key === "v" && !ctx.keys.caret()) {
      const a = byId.get(m.dataset.anchors.split(" ")[0]);
      if (a) { e.preventDefault(); tip.hidden = true; openComparison({ ws: cfg.workspace, set: a.item.set, item: a.item.id, anchor: a.id }); }
    }
  });

  /* -- after a save: poll until the workers have placed the new anchor in every parse ------- */
  function resolved(id) {
    const a = anchors.find((x) => x.id === id);
    // Only a ready parse places anchors: a failed one never will.
    const readable = cfg.parses.filter((p) => !p.status || p.status === "ready").length;
    return a && a.resolutions.length >= readable && !a.resolutions.some((r) => r.status === "pending");
  }
  function followResolution(id) {
    if (resolved(id)) return;
    poll(async () => {
      await refresh();
      return !resolved(id);
    }, { every: 500, grow: 1.25, most: 3000, rounds: 60 });
  }

  /* The first read, then the same following for anchors made before this page opened (by
     someone else, an import, a page closed right after its save) whose places the workers
     are still finding: without it their marks appeared only on the next load. */
  async function load() {
    await refresh();
    const unresolved = () => anchors.some((a) => !resolved(a.id));
    if (unresolved()) {
      poll(async () => {
        await refresh();
        return unresolved();
      }, { every: 1000, grow: 1.25, most: 5000, rounds: 60 });
    }
    return anchors;
  }

  /* -- n / p: the next or previous highlight, loading pages to reach it --------------------- */
  function focusHighlight(step) {
    const pages = ctx.pages;
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
    const pivot = here ? here.start : pages.starts[pages.currentPage() - 1];
    const target = step > 0 ? spans.find((s) => s.start > pivot) : spans.slice().reverse().find((s) => s.start < pivot);
    if (target) pages.jumpTo(target.start, target.end);
    else G.toast(step > 0 ? "No more highlights below" : "No more highlights above");
  }

  ctx.anchors = { spans: () => spans, load, refresh, followResolution, focusHighlight, itemUrl, showTipAt, hideTipSoon, all: () => anchors };
  return ctx.anchors;
}
