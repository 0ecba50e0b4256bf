/* The document page (templates/labelling/document.html): a parse read page by page, every
   anchor highlighted, and a selection turned into an anchor. Native ES modules, no build:
     pages.js    the page skeleton, lazy loading of page text from the API, moving around
     anchors.js  the anchors from the API, drawn on the pages; hover status; n/p
     popover.js  selection -> offsets -> the "attach to a question" popover
     keys.js     the page's keys and caret mode
     rendered.js the document as it looks (HTML, Markdown, Word) in a sandboxed frame
     pdf.js      the PDF as it looks (page images, text layer, anchors), switched with the text
     search.js   search the whole parse on the server; hits listed, jumped to, marked
     panel.js    the annotations panel: questions and highlights here, each a click away
     ../compare.js  how each parser read an anchor's evidence (from the tooltip)
     ../live.js  others' changes to this document, which redraw the highlights
     ../offsets.js  code points <-> UTF-16 units, the page of an offset (shared with item.js)
     ./solid.js  the rendered view's alignment to the parse, by solid characters
   Modules share one context object (`ctx`) and reach each other through it at event time.
   Document text only ever enters the page as text nodes (textContent), never as HTML. */
import { setupAnchors } from "./anchors.js";
import { setupKeys } from "./keys.js";
import { setupPages } from "./pages.js";
import { setupPanel } from "./panel.js";
import { setupPdf } from "./pdf.js";
import { setupPopover } from "./popover.js";
import { setupRendered } from "./rendered.js";
import { setupSearch } from "./search.js";
import { request } from "../api.js";
import "../compare.js";
import "../live.js";
import { poll } from "../poll.js";
import { api } from "../urls.js";

const cfg = JSON.parse(document.getElementById("doc-config").textContent);

/* Opened while parsing: ask until the parse shown (or, with none yet, the reference) is done,
   then open it (ready) or say it failed, without a reload by hand. */
if (!cfg.parse_ready && document.querySelector("[data-parse-waiting]")) {
  poll(async () => {
    const doc = await request("GET", api.document(cfg.workspace, cfg.document));
    const shown = doc.parses.find((p) => (cfg.parse ? p.id === cfg.parse : p.is_reference));
    if (!shown || ["queued", "parsing"].includes(shown.status)) return true;
    window.location.reload();
    return false;
  }, { every: 1000, grow: 1.3, most: 5000 });
}
const pagesEl = document.querySelector("[data-pages]");
const renderedEl = document.querySelector("[data-rendered]");

const switcher = document.querySelector("[data-parse-switch]");
if (switcher) switcher.addEventListener("change", () => {
  const q = new URLSearchParams(window.location.search);
  q.set("parse", switcher.value);
  window.location.search = q.toString();
});

/* The view "as it looks": the same anchors and popover, drawn into the frame by rendered.js. */
if (renderedEl && cfg.parse_ready) {
  const ctx = { cfg, pagesEl: renderedEl };
  setupRendered(ctx);
  setupAnchors(ctx);
  setupPopover(ctx);
  setupSearch(ctx); // over the reference parse, which the frame is aligned to
  setupPanel(ctx);
  ctx.anchors.refresh().then(ctx.anchors.followPending, (err) => ctx.pages.setStatus("Could not load the highlights: " + err.message));
  window.groundworkDocument = { rendered: ctx.rendered, refreshAnchors: ctx.anchors.refresh, search: ctx.search && ctx.search.run };
}

if (pagesEl && cfg.parse_ready) {
  const ctx = { cfg, pagesEl };
  setupPages(ctx);
  setupAnchors(ctx);
  setupPopover(ctx);
  setupKeys(ctx);
  setupSearch(ctx);
  setupPdf(ctx); // after the keys: in the PDF view its own keys go first
  setupPanel(ctx);

  const drawn = ctx.anchors.refresh().then(ctx.anchors.followPending, (err) => ctx.pages.setStatus("Could not load the highlights: " + err.message));
  const at = /#at=(\d+)-(\d+)/.exec(window.location.hash);
  const candidate = /#candidate=(\d+)-(\d+)/.exec(window.location.hash);
  const pageHash = /#page=(\d+)/.exec(window.location.hash);
  const suggested = /#suggest=(\d+)-(\d+)(?:;rank=(\d+))?(?:;via=(\w+))?/.exec(window.location.hash);
  // Selected once the highlights are drawn: drawing them writes the pages' text anew.
  if (suggested) drawn.then(() => ctx.popover.selectSuggested({
    start: Number(suggested[1]), end: Number(suggested[2]),
    rank: suggested[3] ? Number(suggested[3]) : null, via: suggested[4] === "search" ? "search" : "suggestions",
  }));
  else if (candidate) ctx.pages.jumpTo(Number(candidate[1]), Number(candidate[2]), true);
  else if (at) ctx.pages.jumpTo(Number(at[1]), Number(at[2]));
  else if (pageHash) ctx.pages.goToPage(Number(pageHash[1]), true);

  window.groundworkDocument = {
    pageOf: ctx.pages.pageOf,
    jumpTo: ctx.pages.jumpTo,
    goToPage: ctx.pages.goToPage,
    selectionSpan: ctx.popover.selectionSpan,
    loaded: ctx.pages.loaded,
    refreshAnchors: ctx.anchors.refresh,
    search: ctx.search && ctx.search.run,
  };
}
