/* Site-wide keys: "?" opens the shortcut list, "/" focuses the page's search or first field,
   "g h" goes home. Pages add their own keys in their own script. */
(function () {
  "use strict";
  const dialog = document.querySelector("[data-shortcuts]");
  let pendingG = false;
  /* "g <key>" chords a page adds: Groundwork.chords.p = () => ... */
  const chords = { h: () => { window.location.href = "/"; } };

  function typing(target) {
    if (!target || !target.closest) return false;
    if (target.closest("input, textarea, select, [contenteditable=true], [contenteditable='']")) return true;
    return false;
  }

  function toggle() {
    if (!dialog) return;
    if (dialog.open) dialog.close();
    else dialog.showModal();
  }

  document.querySelectorAll("[data-shortcuts-open]").forEach((b) => b.addEventListener("click", toggle));

  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    if (typing(e.target)) return;
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
      if (chords[e.key]) chords[e.key]();
      return;
    }
    if (e.key === "g") { e.preventDefault(); pendingG = true; setTimeout(() => { pendingG = false; }, 1200); }
  });

  window.Groundwork = Object.assign(window.Groundwork || {}, { isTyping: typing, chords: chords });
})();
