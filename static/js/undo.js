/* Undo for the last highlight saved or the last evidence removed: an "Undo" button in the
   status message (a toast) and Ctrl+Z (Cmd+Z) outside text fields, for UNDO_SECONDS or until
   the next action offers its own. Undoing a save deletes the anchor just created; undoing a
   removal creates the anchor again through the API with what the removed one held
   (`recreateBody`): the item's history then holds both the deletion and the new creation. */
import * as G from "./api.js";

const UNDO_SECONDS = 20;
let current = null; // { box, button, undo, timer }

/* What re-creates `anchor` (as the API showed it): a highlight from the same parse and span,
   which gives back the same quote, page, occurrence on its page and context; a typed quote
   with its page, occurrence and context as they were. Same grade either way. */
export function recreateBody(anchor) {
  if (anchor.highlight) {
    const body = { parse: anchor.highlight.parse, start: anchor.highlight.start, end: anchor.highlight.end, grade: anchor.grade };
    const s = anchor.suggested;
    if (s && s.parse) body.suggested = { parse: s.parse, start: s.start, end: s.end, via: s.via || "suggestions", rank: s.rank == null ? null : s.rank };
    return body;
  }
  return {
    source_id: anchor.source_id, quote: anchor.quote, grade: anchor.grade, page_hint: anchor.page_hint,
    occurrence: anchor.occurrence, prefix: anchor.prefix || "", suffix: anchor.suffix || "",
  };
}

function forget() {
  if (!current) return;
  clearTimeout(current.timer);
  current.button.remove();
  current = null;
}

/* Offer to undo the action just done. `box`: its status message (a toast already shown; it is
   kept on screen while the offer lasts), or none to show `message` in a new one. `undo`: an
   async function that reverts the action; its errors are shown in the box. */
export function offerUndo({ box, message, undo }) {
  forget(); // only the last action can be undone
  const toasts = document.querySelector("[data-toasts]");
  if (!toasts) return null;
  let shown;
  if (box && box.isConnected) {
    // A copy in its place: the toast's own timer removes the original, not the copy.
    shown = box.cloneNode(true);
    box.replaceWith(shown);
  } else {
    shown = G.el("div", "toast info", message || "Done. ");
    toasts.appendChild(shown);
  }
  shown.classList.add("undoable");
  const button = G.el("button", "link small undo-button");
  button.type = "button";
  button.dataset.undo = "";
  button.append("Undo ", G.el("kbd", "", "Ctrl"), "+", G.el("kbd", "", "Z"));
  shown.append(" ", button);
  const offer = { box: shown, button, undo };
  offer.timer = setTimeout(() => { if (current === offer) forget(); shown.remove(); }, UNDO_SECONDS * 1000);
  button.addEventListener("click", () => runUndo(offer));
  current = offer;
  return shown;
}

async function runUndo(offer) {
  if (current !== offer) return;
  clearTimeout(offer.timer);
  current = null;
  offer.button.disabled = true;
  try {
    await offer.undo();
    offer.box.replaceChildren(G.el("span", "", "Undone."));
    offer.box.dataset.undone = "1";
  } catch (err) {
    offer.box.replaceChildren(G.el("span", "", "Could not undo: " + err.message));
    offer.box.classList.add("error");
  }
  setTimeout(() => offer.box.remove(), 4000);
}

document.addEventListener("keydown", (e) => {
  if (!current || e.defaultPrevented || e.altKey || e.shiftKey || !(e.ctrlKey || e.metaKey)) return;
  if (e.key !== "z" && e.key !== "Z") return;
  // In a text field Ctrl+Z undoes typing; in an open dialog it belongs to the dialog.
  if (G.isTyping(e.target) || document.querySelector("[data-popover]:not([hidden])")) return;
  e.preventDefault();
  runUndo(current);
});
