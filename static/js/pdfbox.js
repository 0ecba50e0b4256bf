/* Where a span of a PDF parse lies on its page, from the page's text layer (the PDF view's
   runs: [start, end, x0, y0, x1, y1], offsets from the page's first character, boxes in
   0..scale of the page). No DOM: the review card (pdfcrop.js) and the tests use it. */

/* The box of characters [start, end) of the parse on this page, in the layer's units: the
   runs it crosses, cut in proportion where it starts or ends inside one. */
export function boxOf(layer, start, end) {
  const s = start - layer.start, e = end - layer.start;
  let box = null;
  for (const [rs, re, x0, y0, x1, y1] of layer.runs) {
    if (re <= s || rs >= e || re <= rs) continue;
    const per = (x1 - x0) / (re - rs);
    const left = x0 + per * Math.max(0, s - rs);
    const right = x1 - per * Math.max(0, re - e);
    box = box ? [Math.min(box[0], left), Math.min(box[1], y0), Math.max(box[2], right), Math.max(box[3], y1)]
      : [left, y0, right, y1];
  }
  return box;
}
