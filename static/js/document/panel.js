/* The annotations panel beside the document: the questions with evidence in it (of the set
   the page was opened for, `?set=`, or of every set) and each one's highlights in reading
   order, drawn from the anchors anchors.js read (the document's anchor list in the API) and
   drawn again whenever they change (`gw:anchors`). A highlight's button goes to its place in
   the view shown (text, PDF or rendered); "g a" puts the focus in the list, ↓/↑ move, Enter
   goes. With write access each highlight can be removed, and the removal (like a highlight
   just saved, `gw:anchor-saved` from popover.js) can be undone (../undo.js). At most
   SHOWN highlights are listed at first; "N more" lists the next ones. Collapsible; behind
   its toggle on a narrow screen. */
import * as G from "../api.js";
import { offerUndo, recreateBody } from "../undo.js";
import { api } from "../urls.js";
import { spanIn } from "./anchors.js";

const SHOWN = 100;
const QUOTE_CHARS = 90;
const NARROW = "(max-width: 1099px)";
const OPEN_KEY = "gw-panel-open";

export function setupPanel(ctx) {
  const { cfg } = ctx;
  const panel = document.querySelector("[data-doc-panel]");
  if (!panel) return null;
  const list = panel.querySelector("[data-panel-list]");
  const more = panel.querySelector("[data-panel-more]");
  const empty = panel.querySelector("[data-panel-empty]");
  const count = panel.querySelector("[data-panel-count]");
  const toggle = panel.querySelector("[data-panel-toggle]");
  const body = panel.querySelector("[data-panel-body]");
  let limit = SHOWN;

  /* -- open and closed: remembered on a wide screen, closed at first on a narrow one -------- */
  const searchBox = document.querySelector("[data-doc-search]");
  function setOpen(open, remember) {
    // On a narrow screen the search box and the panel take turns (search.js).
    if (open && searchBox && !searchBox.hidden && window.matchMedia(NARROW).matches && ctx.search) ctx.search.close();
    body.hidden = !open;
    panel.classList.toggle("collapsed", !open);
    toggle.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? "Hide" : "Show";
    if (remember && !window.matchMedia(NARROW).matches) localStorage.setItem(OPEN_KEY, open ? "1" : "0");
  }
  toggle.addEventListener("click", () => setOpen(body.hidden, true));
  setOpen(!window.matchMedia(NARROW).matches && localStorage.getItem(OPEN_KEY) !== "0", false);

  /* -- what the panel lists ------------------------------------------------------------------ */
  function where(a) {
    const span = spanIn(a, cfg.parse);
    return span ? span[0] : Number.MAX_SAFE_INTEGER - 1;
  }
  function pageLabel(a) {
    const span = spanIn(a, cfg.parse);
    const page = span && ctx.pages.pageOf ? ctx.pages.pageOf(span[0]) : a.page_hint;
    return cfg.rendered && cfg.rendered.active ? "" : page ? "p. " + page : "";
  }
  function grouped() {
    const shown = ctx.anchors.all().filter((a) => !cfg.panel_set || a.item.set === cfg.panel_set);
    shown.sort((x, y) => where(x) - where(y));
    const questions = new Map();
    for (const a of shown) {
      const key = a.item.set + "/" + a.item.id;
      if (!questions.has(key)) questions.set(key, { item: a.item, anchors: [] });
      questions.get(key).anchors.push(a);
    }
    return { total: shown.length, questions: Array.from(questions.values()) };
  }

  function highlightRow(q, a) {
    const li = G.el("li", "panel-hl-row");
    const go = G.el("button", "panel-hl g" + a.grade);
    go.type = "button";
    go.dataset.panelAnchor = a.id;
    const page = pageLabel(a);
    if (page) go.append(G.el("span", "panel-page", page));
    const quote = a.quote.length > QUOTE_CHARS ? a.quote.slice(0, QUOTE_CHARS) + "…" : a.quote;
    go.append(G.el("span", "panel-quote", "“" + quote + "”"), G.el("span", "panel-grade", "grade " + a.grade));
    go.title = "Go to this highlight (" + G.words.grade(a.grade) + ")";
    go.addEventListener("click", () => jump(a));
    li.append(go);
    if (cfg.can_write && a.item.state !== "approved") {
      const remove = G.el("button", "quiet small panel-remove", "Remove");
      remove.type = "button";
      remove.dataset.panelRemove = a.id;
      remove.setAttribute("aria-label", "Remove this highlight from " + q.item.id);
      remove.addEventListener("click", () => removeAnchor(a, remove));
      li.append(remove);
    }
    return li;
  }

  function render() {
    const { total, questions } = grouped();
    list.replaceChildren();
    count.textContent = total ? "(" + total + ")" : "";
    empty.hidden = total > 0;
    let listed = 0;
    for (const q of questions) {
      if (listed >= limit) break;
      const li = G.el("li", "panel-q");
      li.dataset.panelItem = q.item.set + "/" + q.item.id;
      const head = G.el("div", "panel-q-head");
      const link = G.el("a", "panel-q-link");
      link.href = ctx.anchors.itemUrl(q.item.set, q.item.id);
      link.append(G.el("code", "", q.item.id), " " + q.item.question);
      head.append(link, " ", G.el("span", "state " + q.item.state, G.words.state(q.item.state)));
      if (!cfg.panel_set) head.append(" ", G.el("span", "muted small", q.item.set));
      const rows = G.el("ul", "panel-hls");
      for (const a of q.anchors) {
        if (listed >= limit) break;
        rows.append(highlightRow(q, a));
        listed += 1;
      }
      li.append(head, rows);
      list.append(li);
    }
    const left = total - listed;
    more.hidden = left <= 0;
    more.textContent = left > 0 ? left + " more" : "";
  }
  more.addEventListener("click", () => {
    limit += SHOWN;
    render();
    const buttons = list.querySelectorAll("[data-panel-anchor]");
    if (buttons[limit - SHOWN]) buttons[limit - SHOWN].focus();
  });

  /* -- going to a highlight, in whichever view shows --------------------------------------- */
  function jump(a) {
    if (ctx.pdf && ctx.pdf.view() === "pdf" && ctx.pdf.info()) { ctx.pdf.goToAnchor(a); return; }
    const span = spanIn(a, cfg.parse);
    if (!span) {
      G.toast("That highlight is not placed in this parse" + (a.page_hint ? "; it was on page " + a.page_hint : ""), "warning");
      if (a.page_hint && ctx.pages.goToPage) ctx.pages.goToPage(a.page_hint, true);
      return;
    }
    if (ctx.pages.jumpTo) { ctx.pages.jumpTo(span[0], span[1]); return; }
    // The rendered view draws and scrolls to a span it is told of (rendered.js).
    document.dispatchEvent(new CustomEvent("gw:jump", {
      cancelable: true,
      detail: { parse: cfg.parse, page: 1, start: span[0], end: span[1], text: a.quote, reason: "panel" },
    }));
  }

  /* -- ↓/↑ between the list's buttons and links ------------------------------------------- */
  list.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    const stops = Array.from(list.querySelectorAll("a, button"));
    const i = stops.indexOf(document.activeElement);
    const next = stops[e.key === "ArrowDown" ? i + 1 : (i === -1 ? stops.length : i) - 1];
    if (next) { e.preventDefault(); next.focus(); }
  });
  panel.addEventListener("gw:chord", () => { if (body.hidden) setOpen(true, false); });
  list.addEventListener("focus", () => {
    const first = list.querySelector("[data-panel-anchor]");
    if (first) first.focus();
  });

  /* -- removing, and undoing a removal or a save ------------------------------------------ */
  async function removeAnchor(a, button) {
    button.disabled = true;
    const { set, id } = a.item;
    try {
      await G.request("DELETE", api.anchor(cfg.workspace, set, id, a.id));
    } catch (err) {
      G.toast(err.message, "error");
      button.disabled = false;
      return;
    }
    await ctx.anchors.refresh();
    offerUndo({
      message: "Removed the highlight from " + id + ".",
      undo: async () => {
        const again = await G.request("POST", api.anchors(cfg.workspace, set, id), recreateBody(a));
        await ctx.anchors.refresh();
        ctx.anchors.followResolution(again.id);
      },
    });
  }
  document.addEventListener("gw:anchor-saved", (e) => {
    const { set, item, anchor, box } = e.detail;
    offerUndo({
      box,
      message: "Saved evidence for " + item + ".",
      undo: async () => {
        await G.request("DELETE", api.anchor(cfg.workspace, set, item, anchor.id));
        await ctx.anchors.refresh();
      },
    });
  });

  document.addEventListener("gw:anchors", render);
  ctx.panel = { render, jump, setOpen };
  return ctx.panel;
}
