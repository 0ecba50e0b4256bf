/* The review card's picture of the evidence on its PDF page: the page as the PDF view draws it
   (its page image at scale 1, from the shared page cache) cut to the lines around the quote,
   with the quote boxed. The box comes from the page's text layer (the pdfium parse's runs and
   their boxes, the PDF view's own endpoint). Drawn only for the card on screen, at most
   MAX_CROPS per card, so a long review queue costs nothing until it is reached. */
import * as G from "./api.js";
import { boxOf } from "./pdfbox.js";
import { api, withQuery } from "./urls.js";

/* The most pictures one card draws (the rest keep their text and their link). */
const MAX_CROPS = 6;
/* Page height (of 1) shown above and below the boxed lines. */
const MARGIN = 0.06;

function loadImage(url) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve(img);
    img.onerror = () => reject(new Error("the page image could not be drawn"));
    img.src = url;
  });
}

function paint(canvas, img, box, scale) {
  const W = img.naturalWidth, H = img.naturalHeight;
  const top = Math.max(0, Math.floor((box[1] / scale - MARGIN) * H));
  const bottom = Math.min(H, Math.ceil((box[3] / scale + MARGIN) * H));
  canvas.width = W;
  canvas.height = Math.max(1, bottom - top);
  const g = canvas.getContext("2d");
  g.drawImage(img, 0, top, W, bottom - top, 0, 0, W, bottom - top);
  const x = (box[0] / scale) * W - 2, y = (box[1] / scale) * H - top - 2;
  const w = ((box[2] - box[0]) / scale) * W + 4, h = ((box[3] - box[1]) / scale) * H + 4;
  g.fillStyle = "rgba(255, 213, 0, 0.28)";
  g.fillRect(x, y, w, h);
  g.strokeStyle = "#c92a2a";
  g.lineWidth = 2;
  g.strokeRect(x, y, w, h);
}

async function drawOne(fig, ws) {
  fig.dataset.drawn = "1";
  const page = Number(fig.dataset.page);
  const status = fig.querySelector("[data-pdf-status]");
  try {
    const layer = await G.request("GET", api.pdfPageText(ws, fig.dataset.doc, page));
    const box = boxOf(layer, Number(fig.dataset.start), Number(fig.dataset.end));
    if (!box) throw new Error("the quote is not on that page's text layer");
    const img = await loadImage(withQuery(api.pdfPageImage(ws, fig.dataset.doc, page), { scale: 1 }));
    paint(fig.querySelector("[data-pdf-canvas]"), img, box, layer.scale);
    fig.dataset.ready = "1";
  } catch (err) {
    status.textContent = "Page " + page + " could not be shown: " + err.message;
    fig.dataset.failed = "1";
  }
}

/* Draw the pictures of one card (those not drawn yet). */
export function drawCrops(card, ws) {
  const figures = Array.from(card.querySelectorAll("[data-pdf-crop]")).slice(0, MAX_CROPS);
  return Promise.all(figures.filter((f) => !f.dataset.drawn).map((f) => drawOne(f, ws)));
}
