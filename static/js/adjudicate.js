/* The adjudication page: an overlapped item's versions side by side; the reviewer keeps one
   annotator's version (pick) or a chosen subset of anchors (merge).
   1-9 pick that version · m merge · s settle. Picking checks exactly that version's anchors;
   checking or unchecking an anchor by hand turns the decision into a merge. The API holds
   every rule (role, row version, one adjudication per item); a refusal is shown as it says. */
import * as G from "./api.js";
import { api } from "./urls.js";

const root = document.querySelector("[data-adjudicate]");
if (root) adjudicatePage(root);

/* Keys are for typing in a text box, not on a radio button or a check box (the keys move
   between those). */
function typing(target) {
  if (target && target.matches && target.matches("input[type=radio], input[type=checkbox]")) return false;
  return G.isTyping(target);
}

function adjudicatePage(root) {
  const form = root.querySelector("[data-adjudicate-form]");
  const status = root.querySelector("[data-status]");
  const errorBox = root.querySelector("[data-error]");
  const picks = Array.from(root.querySelectorAll("[data-pick]"));
  const merge = root.querySelector("[data-merge]");
  const boxes = Array.from(root.querySelectorAll("[data-anchor]"));
  let busy = false;

  function fail(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
  }

  function pick(radio) {
    radio.checked = true;
    for (const box of boxes) box.checked = box.dataset.by === radio.dataset.pick;
    radio.focus();
  }

  for (const radio of picks) radio.addEventListener("change", () => pick(radio));
  for (const box of boxes) box.addEventListener("change", () => { merge.checked = true; });

  function decision() {
    const chosen = picks.find((r) => r.checked);
    if (chosen) return { pick: chosen.dataset.pick };
    if (merge.checked) return { keep: boxes.filter((b) => b.checked).map((b) => b.value) };
    return null;
  }

  async function settle() {
    if (busy || form.hidden) return;
    const body = decision();
    if (!body) { fail("Choose a version to keep (1-9), or merge (m) and check the anchors to keep."); return; }
    body.row_version = Number(root.dataset.rowVersion);
    const reason = root.querySelector("[data-reason]").value.trim();
    if (reason) body.reason = reason;
    busy = true;
    errorBox.hidden = true;
    try {
      const data = await G.request("POST", api.itemAction(root.dataset.workspace, root.dataset.set, root.dataset.item, "adjudication"), body);
      status.textContent = root.dataset.item + " settled: kept " + data.kept.length + ", removed " + data.removed.length + ". Back to the review...";
      form.hidden = true;
      window.location.assign(root.dataset.reviewUrl);
    } catch (err) {
      fail(err.message);
    } finally {
      busy = false;
    }
  }

  form.addEventListener("submit", (e) => { e.preventDefault(); settle(); });

  window.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target) || form.hidden) return;
    let act = null;
    if (/^[1-9]$/.test(e.key) && picks[Number(e.key) - 1]) act = () => pick(picks[Number(e.key) - 1]);
    else if (e.key === "m") act = () => { merge.checked = true; merge.focus(); };
    else if (e.key === "s") act = settle;
    if (!act) return;
    e.preventDefault();
    e.stopPropagation();
    act();
  }, true);
}
