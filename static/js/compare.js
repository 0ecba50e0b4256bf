/* "How each parser read this evidence": a dialog with each parse's text around an anchor's
   span side by side, the differences from the reference parse's reading marked (ligatures,
   lost spaces, hyphenation, moved or missing text), with each parse's status and score.

   Any element with data-compare-ws, -set, -item and -anchor opens it on click (the item
   page's evidence list, the document page's anchor tooltip); `openComparison({ws, set,
   item, anchor})` opens it from a script. The data comes from
   .../items/{item}/anchors/{anchor}/compare/ (evalsets/comparison.py); every piece of
   document text enters the page as text (textContent), never as HTML. The page must carry
   templates/labelling/_compare.html. */

import * as G from "./api.js";
import { api } from "./urls.js";

const dialog = document.querySelector("[data-compare]");

const el = G.el;

function kindWords(kind) {
  return ((G.labels && G.labels.differences) || {})[kind] || kind;
}

function summary(parse) {
  const kinds = Object.entries(parse.differences || {});
  if (!kinds.length) return parse.is_reference ? "the reading the others are compared with" : "reads as the reference does";
  return kinds.map(([kind, n]) => n + " × " + kindWords(kind)).join(", ");
}

function segmentNode(segment) {
  if (segment.op === "equal") return document.createTextNode(segment.text);
  const words = kindWords(segment.kind);
  let node;
  if (segment.op === "missing") {
    // A lost space or line break is drawn as ␣, or it would be invisible.
    node = el("del", "diff diff-" + segment.kind, /^\s+$/.test(segment.ref) ? "\u2423" : segment.ref);
    node.title = words + ": the reference has this, this parse does not";
  } else if (segment.op === "extra") {
    node = el("ins", "diff diff-" + segment.kind, segment.text);
    node.title = words + ": this parse has this, the reference does not";
  } else {
    node = el("ins", "diff diff-" + segment.kind, segment.text);
    node.title = words + ": the reference reads “" + segment.ref + "”";
  }
  node.dataset.kind = segment.kind;
  if (segment.text && /^\s+$/.test(segment.text)) node.classList.add("blank");
  return node;
}

function column(parse) {
  const col = el("section", "compare-col" + (parse.is_reference ? " reference" : ""));
  col.dataset.parser = parse.parser;
  col.dataset.status = parse.status;
  const head = el("header", "compare-col-head");
  const name = el("h3", "", parse.parser + (parse.parser_version ? " " + parse.parser_version : ""));
  if (parse.is_reference) name.appendChild(el("span", "muted small", " (reference)"));
  const badge = el("span", "badge " + parse.status, G.words.resolution(parse.status));
  if (parse.score != null && parse.status !== "pending") badge.appendChild(el("span", "parser", "score " + Math.round(parse.score * 100) + "%"));
  const where = el("span", "muted small", parse.page ? "page " + parse.page + " · characters " + parse.start.toLocaleString() + "–" + parse.end.toLocaleString() : "");
  head.append(name, badge, " ", where);
  col.appendChild(head);
  if (parse.start == null) {
    const why = {
      pending: "Not resolved in this parse yet: the workers are on it.",
      ambiguous: "Found in " + parse.candidates + " equally good places: nothing tells them apart, so none is shown.",
      not_found: "Lost: this parse does not have this text, or reads it too differently to find.",
    }[parse.status] || "No span in this parse.";
    col.appendChild(el("p", "compare-none", why));
    return col;
  }
  col.appendChild(el("p", "compare-summary small", summary(parse)));
  const text = el("div", "compare-text");
  text.append(el("span", "ctx", parse.before));
  const span = el("span", "span");
  for (const segment of parse.segments) span.appendChild(segmentNode(segment));
  text.append(span);
  if (parse.truncated) text.append(el("span", "muted", " … (the rest of a long span is not compared)"));
  text.append(el("span", "ctx", parse.after));
  col.appendChild(text);
  return col;
}

function legend(kinds) {
  const list = dialog.querySelector("[data-compare-legend]");
  list.replaceChildren();
  for (const kind of kinds) {
    const li = el("li", "diff diff-" + kind, kindWords(kind));
    list.appendChild(li);
  }
}

export async function openComparison({ ws, set, item, anchor }) {
  if (!dialog) return;
  const status = dialog.querySelector("[data-compare-status]");
  const columns = dialog.querySelector("[data-compare-columns]");
  dialog.querySelector("[data-compare-quote]").textContent = "";
  dialog.querySelector("[data-compare-note]").textContent = "";
  columns.replaceChildren();
  status.textContent = "Loading each parse's text…";
  dialog.setAttribute("aria-busy", "true");
  if (!dialog.open) dialog.showModal();
  const url = api.compareAnchor(ws, set, item, anchor);
  try {
    const data = await G.request("GET", url);
    dialog.querySelector("[data-compare-quote]").textContent = data.quote;
    dialog.querySelector("[data-compare-note]").textContent =
      data.source_id + " · " + data.parses.length + " parse" + (data.parses.length === 1 ? "" : "s") +
      " · differences against " + (data.compared_with === "reference" ? "the reference parse's reading" : "the quote (the reference parse has no span)") +
      "; " + data.context + " characters of context either side, in grey. Hover a mark for what the reference reads.";
    legend(data.kinds);
    for (const parse of data.parses) columns.appendChild(column(parse));
    status.textContent = data.parses.length ? "" : "This document has no ready parse.";
  } catch (err) {
    status.textContent = "Could not load the comparison: " + err.message;
  } finally {
    dialog.removeAttribute("aria-busy");
  }
}

document.addEventListener("click", (e) => {
  const opener = e.target.closest && e.target.closest("[data-compare-anchor]");
  if (!opener) return;
  e.preventDefault();
  const d = opener.dataset;
  openComparison({ ws: d.compareWs, set: d.compareSet, item: d.compareItem, anchor: d.compareAnchor });
});

