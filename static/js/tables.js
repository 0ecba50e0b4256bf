/* Wide tables scroll sideways inside their .table-scroll box; when one is wider than its box,
   say so (a hint above it and a shadow on the side with more) instead of cutting it off. */
function mark(box) {
  const wide = box.scrollWidth > box.clientWidth + 1;
  box.classList.toggle("overflowing", wide);
  box.classList.toggle("more-left", wide && box.scrollLeft > 0);
  box.classList.toggle("more-right", wide && box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
  let hint = box.previousElementSibling;
  if (!hint || !hint.hasAttribute("data-scroll-hint")) hint = null;
  if (wide && !hint) {
    hint = document.createElement("p");
    hint.className = "scroll-hint muted small";
    hint.setAttribute("data-scroll-hint", "");
    hint.textContent = "This table is wider than the window: scroll it sideways (or focus it and use the arrow keys) to see every column →";
    box.before(hint);
  } else if (!wide && hint) hint.remove();
}
const boxes = Array.from(document.querySelectorAll(".table-scroll"));
boxes.forEach((box) => {
  mark(box);
  box.addEventListener("scroll", () => mark(box), { passive: true });
});
if (window.ResizeObserver) {
  const observer = new ResizeObserver((entries) => entries.forEach((e) => mark(e.target)));
  boxes.forEach((box) => observer.observe(box));
} else window.addEventListener("resize", () => boxes.forEach(mark));
