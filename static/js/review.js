/* The review page: one item at a time, decided from the keyboard.
   a approve · c request changes (Ctrl+Enter sends) · j/k next/previous · ? help · Esc close.
   Decisions go to the API with the row_version on screen, so an item that changed since the
   page loaded is refused (409) instead of approved unseen. */
import * as G from "./api.js";
import "./compare.js";
import { drawCrops } from "./pdfcrop.js";
import { api } from "./urls.js";

const root = document.querySelector("[data-review]");
if (root) reviewPage(root);

function reviewPage(root) {
  const cards = Array.from(root.querySelectorAll("[data-review-item]"));
  const status = root.querySelector("[data-status]");
  const errorBox = root.querySelector("[data-error]");
  const help = root.querySelector("[data-review-help]");
  const position = root.querySelector("[data-position]");
  const ws = root.dataset.workspace, set = root.dataset.set;
  let index = 0;
  let busy = false;

  function say(message) {
    errorBox.hidden = true;
    status.textContent = message;
  }

  function fail(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
  }

  function show(next) {
    if (!cards.length) return;
    index = Math.max(0, Math.min(cards.length - 1, next));
    cards.forEach((card, i) => { card.hidden = i !== index; });
    if (position) position.textContent = (index + 1) + " of " + cards.length;
    const form = cards[index].querySelector("[data-changes-form]");
    if (form) form.hidden = true;
    drawCrops(cards[index], ws);
  }

  /* An item with several blind versions: open the page that compares them. */
  function adjudicate() {
    const link = current() && current().querySelector("[data-adjudicate]");
    if (link) window.location.assign(link.href);
  }

  function current() { return cards[index]; }

  function post(card, action, body) {
    return G.request("POST", api.itemAction(ws, set, card.dataset.itemId, action), body);
  }

  function decided(card, data, words) {
    card.dataset.state = data.state;
    card.dataset.rowVersion = data.row_version;
    const label = card.querySelector("[data-state-label]");
    label.textContent = G.words.state(data.state);
    label.className = "state state-" + data.state;
    card.querySelectorAll("[data-approve], [data-open-changes]").forEach((b) => { b.disabled = true; });
    // The disabled buttons say why: the item has been decided.
    card.querySelectorAll(".why").forEach((p) => p.remove());
    const actions = card.querySelector(".actions");
    if (actions) actions.after(G.el("p", "why", "Already decided: " + card.dataset.itemId + " is " + G.words.state(data.state) + " now."));
    card.classList.add("decided");
    say(card.dataset.itemId + " " + words + ".");
    if (index < cards.length - 1) show(index + 1);
    else say(card.dataset.itemId + " " + words + ". That was the last item on this page.");
  }

  async function approve() {
    const card = current();
    if (!card || busy || card.dataset.canReview !== "true") return;
    if (card.dataset.canApprove !== "true") {
      fail(card.querySelector("[data-barred]")
        ? "You wrote or anchored " + card.dataset.itemId + "; someone else must approve it."
        : card.dataset.itemId + " is " + G.words.state(card.dataset.state) + "; only a submitted item can be approved.");
      return;
    }
    busy = true;
    try {
      const data = await post(card, "approve", { row_version: Number(card.dataset.rowVersion) });
      decided(card, data, "approved");
    } catch (err) {
      fail(err.message);
    } finally {
      busy = false;
    }
  }

  function openChanges() {
    const card = current();
    if (!card || card.dataset.canReview !== "true" || card.dataset.state !== "submitted") return;
    const form = card.querySelector("[data-changes-form]");
    form.hidden = false;
    form.querySelector("[data-comment]").focus();
  }

  async function sendChanges(card) {
    const form = card.querySelector("[data-changes-form]");
    const comment = form.querySelector("[data-comment]").value.trim();
    if (!comment) { fail("Say what should change before sending it back."); return; }
    const about = form.querySelector("[data-about]");
    const body = { row_version: Number(card.dataset.rowVersion), comment: comment };
    if (about && about.value) body.anchor = about.value;
    busy = true;
    try {
      const data = await post(card, "request-changes", body);
      form.hidden = true;
      decided(card, data, "sent back for changes");
    } catch (err) {
      fail(err.message);
    } finally {
      busy = false;
    }
  }

  cards.forEach((card) => {
    const approveButton = card.querySelector("[data-approve]");
    if (approveButton) approveButton.addEventListener("click", approve);
    const changesButton = card.querySelector("[data-open-changes]");
    if (changesButton) changesButton.addEventListener("click", openChanges);
    const form = card.querySelector("[data-changes-form]");
    if (!form) return;
    form.addEventListener("submit", (e) => { e.preventDefault(); sendChanges(card); });
    form.querySelector("[data-cancel]").addEventListener("click", () => { form.hidden = true; });
    form.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); sendChanges(card); }
      if (e.key === "Escape") { e.preventDefault(); form.hidden = true; card.focus(); }
    });
  });

  function toggleHelp() {
    if (help.open) help.close();
    else help.showModal();
  }

  /* Capture on window, so this page's keys win over the site-wide ones. */
  window.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || G.isTyping(e.target)) return;
    if (help.open && e.key !== "?") return;
    if (document.querySelector("dialog.compare[open]")) return; // its own keys: Esc closes it
    const actions = {
      a: approve,
      c: openChanges,
      j: () => show(index + 1),
      k: () => show(index - 1),
      v: adjudicate,
      "?": toggleHelp,
    };
    const act = actions[e.key];
    if (!act) return;
    e.preventDefault();
    e.stopPropagation();
    act();
  }, true);

  cards.forEach((card) => { card.tabIndex = -1; });
  // "#review-q7" (the adjudication page sends the reviewer back so) opens on that item.
  const asked = cards.findIndex((card) => "#" + card.id === decodeURIComponent(window.location.hash));
  show(asked >= 0 ? asked : 0);
}
