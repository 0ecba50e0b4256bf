/* Site-wide keys: "?" opens the shortcut list, "/" focuses the page's search or first field,
   "g h" goes home, and "g <key>" focuses the page's field marked data-chord="<key>" (the
   document page's "g p" and its page box). Pages add their own keys in their own script. */
import { isTyping } from "./api.js";

const dialog = document.querySelector("[data-shortcuts]");
let pendingG = false;

function toggle() {
  if (!dialog) return;
  if (dialog.open) dialog.close();
  else dialog.showModal();
}

function chord(key) {
  if (key === "h") { window.location.href = "/"; return; }
  const target = document.querySelector('[data-chord="' + CSS.escape(key) + '"]');
  if (!target) return;
  // A part behind a toggle opens first (the document's annotations panel, on gw:chord), and a
  // <summary> opens its <details> (the guidelines, "g i").
  target.dispatchEvent(new CustomEvent("gw:chord", { bubbles: true }));
  if (target.tagName === "SUMMARY" && target.parentElement) target.parentElement.open = true;
  target.focus();
  if (target.select) target.select();
}

document.querySelectorAll("[data-shortcuts-open]").forEach((b) => b.addEventListener("click", toggle));

document.addEventListener("keydown", (e) => {
  if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
  if (isTyping(e.target)) return;
  if (e.key === "?") { e.preventDefault(); toggle(); return; }
  if (dialog && dialog.open) return;
  if (e.key === "/") {
    const target = document.querySelector("[data-search]") || document.querySelector("main input, main textarea, main select");
    if (target) { e.preventDefault(); target.focus(); }
    return;
  }
  if (pendingG) {
    pendingG = false;
    e.preventDefault();
    chord(e.key);
    return;
  }
  if (e.key === "g") { e.preventDefault(); pendingG = true; setTimeout(() => { pendingG = false; }, 1200); }
});
