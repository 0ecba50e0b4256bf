/* The document page's keys: j/k pages, Home/End the top and the last page, n/p highlights,
   c caret mode (select with Shift+arrows), a or Enter anchors the selection. The site-wide
   keys are shortcuts.js, "g p" (a page number) among them: the page box has data-chord="p". */

import { isTyping } from "../api.js";

export function setupKeys(ctx) {
  const { pagesEl } = ctx;
  const { pages, anchors, popover } = ctx;

  const gotoForm = document.querySelector("[data-goto]");
  const gotoInput = document.querySelector("[data-goto-input]");
  gotoForm.addEventListener("submit", (e) => {
    e.preventDefault();
    pages.goToPage(Number(gotoInput.value) || 1, true);
    gotoInput.blur(); // single keys (j / k, n / p...) work again without Esc
  });
  // The page box follows scrolling (unless someone is typing a number into it), in the view
  // on screen: the hidden text view's pages have no place, and would read as the last page.
  let following = false;
  function shownPage() {
    return ctx.pdf && ctx.pdf.view() === "pdf" ? ctx.pdf.currentPage() : pages.currentPage();
  }
  function follow() {
    following = false;
    if (document.activeElement !== gotoInput) gotoInput.value = String(shownPage());
  }
  window.addEventListener("scroll", () => {
    if (!following) { following = true; requestAnimationFrame(follow); }
  }, { passive: true });
  gotoInput.addEventListener("blur", follow);
  follow();

  /* -- caret mode: select text with the keyboard --------------------------------------------- */
  let caret = false;
  const caretButton = document.querySelector("[data-caret-toggle]");
  function setCaret(on) {
    caret = on;
    pagesEl.contentEditable = on ? "true" : "false";
    pagesEl.classList.toggle("caret", on);
    caretButton.setAttribute("aria-pressed", String(on));
    if (on) {
      pagesEl.focus({ preventScroll: true });
      const el = pages.sections[pages.currentPage() - 1].querySelector("[data-page-text]");
      const sel = window.getSelection();
      sel.removeAllRanges();
      const r = document.createRange();
      r.setStart(el, 0);
      r.collapse(true);
      sel.addRange(r);
      pages.setStatus("Caret mode: arrows move, Shift+arrows select, Enter anchors, Esc leaves.");
    } else pages.setStatus("");
  }
  caretButton.addEventListener("click", () => setCaret(!caret));
  // Caret mode makes the text editable only so the keyboard can select; nothing may change it.
  for (const type of ["beforeinput", "paste", "cut", "drop"]) pagesEl.addEventListener(type, (e) => e.preventDefault());
  pagesEl.addEventListener("input", pages.rerenderLoaded);

  /* -- keys ---------------------------------------------------------------------------------- */
  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.metaKey || e.altKey || popover.isOpen()) return;
    // Home and End (with or without Ctrl) jump to the top and to the last page. The browser's
    // own smooth scroll flies over pages sized by estimate, fetches some on its way, and stops
    // short of the end when their real heights come in.
    if ((e.key === "Home" || e.key === "End") && !caret && !isTyping(e.target)) {
      e.preventDefault();
      if (e.key === "Home") window.scrollTo({ top: 0 });
      else pages.goToPage(pages.pageCount, true);
      return;
    }
    if (e.ctrlKey) return;
    if (caret) {
      if (e.key === "Escape") { e.preventDefault(); setCaret(false); return; }
      if (e.key === "Enter" || e.key === "a") { e.preventDefault(); popover.trySelection(); return; }
      return;
    }
    if (isTyping(e.target)) return;
    const key = e.key;
    if (key === "j") { e.preventDefault(); pages.goToPage(pages.currentPage() + 1); }
    else if (key === "k") { e.preventDefault(); pages.goToPage(pages.currentPage() - 1); }
    else if (key === "n") { e.preventDefault(); anchors.focusHighlight(1); }
    else if (key === "p") { e.preventDefault(); anchors.focusHighlight(-1); }
    else if (key === "c") { e.preventDefault(); setCaret(true); }
    else if (key === "a" || (key === "Enter" && !e.target.closest("a, button, mark"))) {
      if (popover.trySelection()) e.preventDefault();
    }
  });

  ctx.keys = { caret: () => caret };
  return ctx.keys;
}
