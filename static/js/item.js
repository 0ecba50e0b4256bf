/* Item editor: save with the row_version read (a 409 says who changed what and offers a
   reload), errors beside their fields, evidence with a resolution badge per parse (polled
   while the workers resolve), grade changes, removal, unanswerable and submit for review. */
(function () {
  "use strict";
  const G = window.Groundwork;
  const root = document.querySelector("[data-item-editor]");
  if (!root) return;
  const ws = root.dataset.workspace, set = root.dataset.set;
  const canWrite = root.dataset.canWrite === "1";
  const itemUrl = G.apiBase(ws) + "/evalsets/" + encodeURIComponent(set) + "/items/" + encodeURIComponent(root.dataset.item) + "/";
  const docUrlTemplate = root.dataset.documentUrl; // ends in "DOC"
  const form = root.querySelector("[data-item-form]");
  const rowVersion = root.querySelector("[data-row-version]");
  const stateBadge = root.querySelector("[data-state]");
  const list = root.querySelector("[data-anchors]");
  const noAnchors = root.querySelector("[data-no-anchors]");
  const resolving = root.querySelector("[data-resolving]");
  const conflict = root.querySelector("[data-conflict]");
  const saved = root.querySelector("[data-saved]");
  const gradeText = (g) => g + " · " + G.words.grade(g);
  let item = JSON.parse(document.getElementById("item-data").textContent);

  const el = G.el;

  function docLink(sourceId, parse, start, end) {
    const base = docUrlTemplate.slice(0, -3) + G.pathOf(sourceId);
    const q = new URLSearchParams({ set: set, item: item.id });
    if (parse) q.set("parse", parse);
    return base + "?" + q.toString() + (start != null ? "#at=" + start + "-" + end : "");
  }

  function isResolving(anchor) {
    if (anchor.pending) return false;
    return !anchor.resolutions.length || anchor.resolutions.some((r) => r.status === "pending");
  }

  function renderAnchors() {
    list.replaceChildren();
    noAnchors.hidden = item.anchors.length > 0;
    for (const a of item.anchors) {
      const li = el("li", "anchor");
      li.dataset.anchor = a.id;
      const head = el("div", "anchor-head");
      const quote = el("blockquote", "quote", a.quote);
      const src = el("span", "src", a.source_id + (a.page_hint ? " · page " + a.page_hint : ""));
      head.append(src);
      if (a.highlight) {
        const jump = el("a", "jump", "Show in document");
        jump.href = docLink(a.source_id, a.highlight.parse, a.highlight.start, a.highlight.end);
        head.append(" ", jump);
      }
      if (!a.pending) {
        const compare = el("button", "link small", "How each parser read it");
        compare.type = "button";
        Object.assign(compare.dataset, { compareWs: ws, compareSet: set, compareItem: item.id, compareAnchor: a.id });
        head.append(" ", compare);
      }
      if (canWrite) {
        const grade = document.createElement("select");
        grade.setAttribute("aria-label", "Grade of this evidence");
        for (const g of [2, 1, 0]) {
          const o = el("option", "", gradeText(g)); o.value = String(g); if (a.grade === g) o.selected = true; grade.appendChild(o);
        }
        grade.addEventListener("change", () => changeGrade(a, Number(grade.value), grade));
        const remove = el("button", "quiet small", "Remove");
        remove.type = "button";
        remove.setAttribute("aria-label", "Remove this evidence");
        remove.addEventListener("click", () => removeAnchor(a, remove));
        // An approved item's evidence is locked too: disabled, and #why-save says why.
        const locked = (refusals[item.state] || {}).save;
        if (locked) {
          grade.disabled = remove.disabled = true;
          grade.setAttribute("aria-describedby", "why-save");
          remove.setAttribute("aria-describedby", "why-save");
        }
        head.append(" ", grade, " ", remove);
      } else {
        head.append(" ", el("span", "grade", "grade " + gradeText(a.grade)));
      }
      const badges = el("ul", "badges");
      badges.setAttribute("aria-label", "Resolution in each parse");
      if (a.pending) badges.appendChild(el("li", "badge pending", "document not uploaded yet"));
      for (const r of a.resolutions) {
        const b = el("li", "badge " + r.status);
        b.dataset.status = r.status;
        const label = G.words.resolution(r.status);
        if (r.start != null) {
          const link = el("a", "", label);
          link.href = docLink(a.source_id, r.parse, r.start, r.end);
          link.title = "Show where " + r.parser + " has it";
          b.appendChild(link);
        } else b.append(label);
        b.append(el("span", "parser", r.parser + (r.parser_version ? " " + r.parser_version : "")));
        if (r.status === "ambiguous") b.title = r.candidates + " equally good places";
        badges.appendChild(b);
      }
      if (!a.pending && !a.resolutions.length) badges.appendChild(el("li", "badge pending", "resolving…"));
      li.append(head, quote, badges);
      list.appendChild(li);
    }
    resolving.hidden = !item.anchors.some(isResolving);
  }

  /* Controls the item's state forbids are disabled with the API's reason beside them
     (the sentences come from the server, per state: evalsets/review/workflow.refusals). */
  const refusalsEl = document.getElementById("item-refusals");
  const refusals = refusalsEl ? JSON.parse(refusalsEl.textContent) : {};
  function applyRefusals(state) {
    const now = refusals[state] || {};
    root.querySelectorAll("[data-refusal]").forEach((control) => {
      const reason = now[control.dataset.refusal];
      control.disabled = Boolean(reason);
      if (control.tagName !== "BUTTON" && control.tagName !== "SELECT") { control.disabled = false; control.readOnly = Boolean(reason) || !canWrite; }
    });
    root.querySelectorAll("[data-why]").forEach((why) => {
      const reason = now[why.dataset.why];
      why.textContent = reason || "";
      why.hidden = !reason;
    });
  }

  function applyItem(next, replaceFields) {
    item = next;
    applyRefusals(item.state);
    rowVersion.value = item.row_version;
    stateBadge.textContent = G.words.stateLabel(item.state);
    stateBadge.className = "state " + item.state;
    if (replaceFields) {
      form.elements.question.value = item.question;
      form.elements.qtype.value = item.qtype || "";
      form.elements.answer.value = item.answer || "";
    }
    renderAnchors();
  }

  async function refresh(replaceFields) {
    const next = await G.request("GET", itemUrl);
    applyItem(next, replaceFields);
    return next;
  }

  /* Poll while any anchor waits for the workers. */
  let polls = 0;
  function pollResolutions() {
    if (!item.anchors.some(isResolving) || polls > 120) return;
    polls += 1;
    setTimeout(async () => {
      try {
        const next = await G.request("GET", itemUrl);
        // Only the evidence: the form and its row_version stay as the person left them.
        item.anchors = next.anchors;
        renderAnchors();
      } catch (err) { /* try again next round */ }
      pollResolutions();
    }, Math.min(3000, 600 + polls * 150));
  }

  function showConflict(err) {
    const changed = err.body.changed && err.body.changed.length ? " Changed: " + err.body.changed.join(", ") + "." : "";
    root.querySelector("[data-conflict-text]").textContent = "Someone else saved this item while you were editing. " + err.message + changed;
    conflict.hidden = false;
    conflict.querySelector("[data-reload]").focus();
  }

  function handle(err) {
    if (err.status === 409 && err.errors && err.errors.row_version) showConflict(err);
    else G.showErrors(form, err);
  }

  /* A keyboard shortcut for a refused control says why instead of asking the API. */
  function refused(action) {
    const reason = (refusals[item.state] || {})[action];
    if (reason) G.toast(reason, "error");
    return Boolean(reason);
  }

  async function save() {
    if (refused("save")) return false;
    G.clearErrors(form);
    saved.textContent = "Saving…";
    try {
      const next = await G.request("PATCH", itemUrl, {
        row_version: Number(rowVersion.value),
        question: form.elements.question.value,
        qtype: form.elements.qtype.value.trim() || null,
        answer: form.elements.answer.value === "" ? null : form.elements.answer.value,
      });
      applyItem(next, false);
      saved.textContent = "Saved.";
      return true;
    } catch (err) {
      saved.textContent = "";
      handle(err);
      return false;
    }
  }

  async function submitForReview() {
    if (refused("submit")) return;
    G.clearErrors(form);
    const button = root.querySelector("[data-submit-review]");
    button.disabled = true;
    saved.textContent = "Submitting…";
    try {
      if (!(await save())) return;
      const body = await G.request("POST", itemUrl + "submit/", { row_version: Number(rowVersion.value) });
      if (body && body.state) { stateBadge.textContent = G.words.stateLabel(body.state); stateBadge.className = "state " + body.state; }
      await refresh(false);
      saved.textContent = "Submitted for review.";
      G.toast("Submitted " + item.id + " for review");
    } catch (err) {
      saved.textContent = "";
      if (err.status === 404 || err.status === 405) {
        G.showErrors(form, new G.ApiError(err.status, { detail: "Submitting for review is not available on this server yet (" + err.message + ").", errors: {} }));
      } else handle(err);
    } finally {
      applyRefusals(item.state);
    }
  }

  async function changeGrade(anchor, grade, select) {
    select.disabled = true;
    try {
      await G.request("PATCH", itemUrl + "anchors/" + anchor.id + "/", { grade: grade });
      await refresh(false);
      G.toast("Grade changed to " + grade);
    } catch (err) { G.toast(err.message, "error"); select.value = String(anchor.grade); }
    finally { select.disabled = false; }
  }

  async function removeAnchor(anchor, button) {
    button.disabled = true;
    try {
      await G.request("DELETE", itemUrl + "anchors/" + anchor.id + "/");
      await refresh(false);
      G.toast("Evidence removed");
    } catch (err) { G.toast(err.message, "error"); button.disabled = false; }
  }

  /* Unanswerable: qtype "unanswerable" and no evidence (confirm first if there is some). */
  const confirmBox = root.querySelector("[data-unanswerable-confirm]");
  async function markUnanswerable() {
    confirmBox.hidden = true;
    form.elements.qtype.value = "unanswerable";
    if (!(await save())) return;
    try {
      for (const a of item.anchors) await G.request("DELETE", itemUrl + "anchors/" + a.id + "/");
      await refresh(false);
      G.toast(item.id + " is marked unanswerable");
    } catch (err) { G.toast(err.message, "error"); }
  }

  if (canWrite) {
    form.addEventListener("submit", (e) => { e.preventDefault(); save(); });
    root.querySelector("[data-submit-review]").addEventListener("click", submitForReview);
    root.querySelector("[data-unanswerable]").addEventListener("click", () => {
      if (!item.anchors.length) { markUnanswerable(); return; }
      root.querySelector("[data-unanswerable-text]").textContent =
        "An unanswerable question has no evidence. Remove its " + item.anchors.length + " piece(s) of evidence?";
      confirmBox.hidden = false;
      confirmBox.querySelector("[data-unanswerable-yes]").focus();
    });
    root.querySelector("[data-unanswerable-yes]").addEventListener("click", markUnanswerable);
    root.querySelector("[data-unanswerable-no]").addEventListener("click", () => { confirmBox.hidden = true; });
    document.addEventListener("keydown", (e) => {
      if (!(e.ctrlKey || e.metaKey)) return;
      // Ctrl+Enter inside the discussion sends the comment, not the item.
      if (e.defaultPrevented || (e.target.closest && e.target.closest("[data-comment-form]"))) return;
      if (e.key === "s") { e.preventDefault(); save(); }
      if (e.key === "Enter") { e.preventDefault(); submitForReview(); }
    });
  }
  root.querySelector("[data-reload]").addEventListener("click", async () => {
    try { await refresh(true); conflict.hidden = true; G.clearErrors(form); saved.textContent = "Reloaded: this is the latest version."; form.elements.question.focus(); }
    catch (err) { G.toast(err.message, "error"); }
  });
  const add = root.querySelector("[data-add-evidence]");
  if (add) add.addEventListener("submit", (e) => {
    e.preventDefault();
    window.location.href = docLink(add.elements.doc.value, null, null, null);
  });

  renderAnchors();
  pollResolutions();
})();
