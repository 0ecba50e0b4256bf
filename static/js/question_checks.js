/* Checks on a question while it is written (the item editor, the new-item form): its length
   counted against the server's limit (data-max-chars), and the set's questions it repeats or
   nearly repeats, asked of POST .../evalsets/{set}/similar/ (the dashboard's own test) a moment
   after typing stops. Warnings only: the server keeps the rules. */
import * as G from "./api.js";
import { cpLength } from "./offsets.js";
import { api, pages } from "./urls.js";

export function questionChecks(textarea, options) {
  const counter = options.counter;
  const box = options.similarBox;
  const limit = Number(textarea.dataset.maxChars || 0);
  let timer = null, asked = "";

  function update() {
    if (!counter || !limit) return;
    const n = cpLength(textarea.value);
    counter.textContent = n.toLocaleString() + " / " + limit.toLocaleString() + " characters" +
      (n > limit ? ": too long by " + (n - limit).toLocaleString() : "");
    counter.classList.toggle("over", n > limit);
  }

  async function check() {
    const text = textarea.value;
    if (!box || text.trim().length < 8 || text === asked || (limit && cpLength(text) > limit)) return;
    asked = text;
    try {
      const body = await G.request("POST", api.similar(options.workspace, options.set),
        { question: text, exclude: options.exclude ? options.exclude() : "" });
      if (textarea.value !== text) return;
      box.replaceChildren();
      box.hidden = !body.similar.length;
      if (!body.similar.length) return;
      box.append(G.el("p", "", body.similar[0].exact ? "This question is already in the set:" : "A question much like this one is already in the set:"));
      const ul = G.el("ul");
      for (const hit of body.similar) {
        const li = G.el("li");
        const link = G.el("a", "", hit.id);
        link.href = pages.item(options.workspace, options.set, hit.id);
        li.append(link, " ", G.el("span", "", "“" + hit.question + "”"), " ",
          G.el("span", "muted small", hit.exact ? "(same words)" : "(" + hit.score + "% alike)"));
        ul.appendChild(li);
      }
      box.append(ul);
    } catch (err) { /* a warning, not a rule: saving still works */ }
  }

  textarea.addEventListener("input", () => {
    update();
    clearTimeout(timer);
    timer = setTimeout(check, 500);
  });
  update();
  return { update, check };
}
