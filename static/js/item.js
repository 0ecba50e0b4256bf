/* Item editor: save with the row_version read, errors beside their fields, evidence with a
   resolution badge per parse (polled while the workers resolve), grade changes, removal,
   unanswerable and submit for review. When someone else saves (a 409 on save, or a change
   live.js reports) the conflict view shows both versions and merges field by field; with no
   edit of mine pending their version simply replaces the form. Before saving, a question
   that repeats another in the set is named, and its length is counted against the limit.
   The page's other parts come with it: the live banner, the discussion, the comparison. */
import "./passages.js";
import * as G from "./api.js";
import "./compare.js";
import "./discussion.js";
import "./live.js";
import { cpLength, unitsAt } from "./offsets.js";
import { poll } from "./poll.js";
import { questionChecks } from "./question_checks.js";
import { offerUndo, recreateBody } from "./undo.js";
import { api, pages, withQuery } from "./urls.js";

const editor = document.querySelector("[data-item-editor]");
if (editor) itemEditor(editor);

function itemEditor(root) {
  const ws = root.dataset.workspace, set = root.dataset.set;
  const canWrite = root.dataset.canWrite === "1";
  const itemId = root.dataset.item;
  const itemUrl = api.item(ws, set, itemId);
  const form = root.querySelector("[data-item-form]");
  const rowVersion = root.querySelector("[data-row-version]");
  const stateBadge = root.querySelector("[data-state]");
  const list = root.querySelector("[data-anchors]");
  const noAnchors = root.querySelector("[data-no-anchors]");
  const resolving = root.querySelector("[data-resolving]");
  const conflict = root.querySelector("[data-conflict]");
  const savedNote = root.querySelector("[data-saved]");
  const gradeText = (g) => g + " · " + G.words.grade(g);
  let item = JSON.parse(document.getElementById("item-data").textContent);

  const el = G.el;

  function docLink(sourceId, parse, start, end) {
    const url = withQuery(pages.document(ws, sourceId), { set: set, item: item.id, parse: parse || null });
    return url + (start != null ? "#at=" + start + "-" + end : "");
  }

  /* That parse at the candidate, which stays marked: the document page opens the PDF view
     when that parse is the one it draws (pdfium's), else the parse's text. */
  function candidateLink(sourceId, parse, start, end) {
    const url = withQuery(pages.document(ws, sourceId), { set: set, item: item.id, parse: parse });
    return url + "#candidate=" + start + "-" + end;
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
      // Who made it: on an item several people annotate, reviewers tell the versions apart.
      const src = el("span", "src", a.source_id + (a.page_hint ? " · page " + a.page_hint : "") + (a.created_by ? " · by " + a.created_by : ""));
      head.append(src);
      // A person chose and trimmed it, starting from a suggested passage: a reviewer can tell.
      if (a.suggested) head.append(" ", el("span", "badge suggested", "from a suggestion"));
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
        if (r.status === "confirmed") b.title = (r.detail && r.detail.detail) || "placed by hand";
        badges.appendChild(b);
      }
      if (!a.pending && !a.resolutions.length) badges.appendChild(el("li", "badge pending", "resolving…"));
      li.append(head, quote, badges);
      const offers = a.resolutions.filter((r) => r.status === "not_found" || r.status === "ambiguous");
      if (canWrite && offers.length) li.append(placeByHand(a, offers));
      list.appendChild(li);
    }
    resolving.hidden = !item.anchors.some(isResolving);
  }

  const FIELDS = [["question", "Question"], ["qtype", "Question type"], ["answer", "Answer"]];
  // The fields as last loaded or saved: what "my edit" is measured against.
  let base = fieldsOf(item);

  function fieldsOf(source) {
    return { question: source.question || "", qtype: source.qtype || "", answer: source.answer || "" };
  }
  function formFields() {
    return { question: form.elements.question.value, qtype: form.elements.qtype.value.trim(), answer: form.elements.answer.value };
  }
  function dirty() {
    const mine = formFields();
    return FIELDS.some(([name]) => mine[name] !== base[name]);
  }

  /* Not found (or ambiguous) in a parse: confirm the candidate the resolver offered, or
     correct it by selecting the passage in that parse. Either makes it "confirmed" evidence
     for that parse, which a re-run of the resolver never overwrites. */
  function placeByHand(a, offers) {
    const box = el("div", "place-by-hand");
    // an approved item's evidence is locked: the buttons are disabled, #why-save says why
    const locked = (refusals[item.state] || {}).save;
    const lock = (button) => {
      if (!locked) return;
      button.disabled = true;
      button.setAttribute("aria-describedby", "why-save");
    };
    for (const r of offers) {
      const d = r.detail || {};
      const row = el("p", "offer small");
      row.dataset.offerParse = r.parse;
      const offered = d.offered_start != null;
      row.append(el("span", "muted", r.parser + ": " + (offered ? "best candidate offered, " + Math.round(r.score * 100) + "% similar. " : "not placed. ")));
      if (offered) {
        const show = el("a", "jump", "Show candidate");
        show.href = candidateLink(a.source_id, r.parse, d.offered_start, d.offered_end);
        const confirm = el("button", "secondary small", "Confirm");
        confirm.type = "button";
        confirm.dataset.confirm = "";
        confirm.setAttribute("aria-label", "Confirm the candidate in " + r.parser);
        confirm.addEventListener("click", () => place(a, r, null, confirm));
        lock(confirm);
        row.append(show, " ", confirm, " ");
      }
      const correct = el("button", "quiet small", offered ? "Correct…" : "Select it…");
      correct.type = "button";
      correct.dataset.correct = "";
      correct.addEventListener("click", () => openCorrection(a, r, row, correct));
      lock(correct);
      row.append(correct);
      box.append(row);
    }
    return box;
  }

  async function place(a, r, span, button) {
    button.disabled = true;
    const body = { parse: r.parse };
    if (span) { body.start = span[0]; body.end = span[1]; }
    try {
      await G.request("POST", api.confirmAnchor(ws, set, itemId, a.id), body);
      await refresh(false);
      G.toast(span ? "Evidence placed by hand in " + r.parser : "Candidate confirmed in " + r.parser);
    } catch (err) { G.toast(err.message, "error"); button.disabled = false; }
  }

  /* The page of that parse holding the candidate (or the quote's hinted page), as text to
     select in; offsets are counted in code points, as the API counts them. */
  async function openCorrection(a, r, row, button) {
    const open = row.parentNode.querySelector("[data-correction]");
    if (open) open.remove();
    button.disabled = true;
    const d = r.detail || {};
    const page = d.page || a.page_hint || 1;
    const url = withQuery(api.parsePages(ws, a.source_id, r.parse), { from: page, to: page });
    let body;
    try { body = await G.request("GET", url); }
    catch (err) { G.toast(err.message, "error"); button.disabled = false; return; }
    button.disabled = false;
    const pg = body.pages[0];
    const panel = el("div", "correction");
    panel.dataset.correction = "";
    panel.append(el("p", "small", "Select the passage in " + r.parser + " (page " + pg.number + "), then use the selection."));
    const text = el("pre", "correction-text");
    text.tabIndex = 0;
    text.setAttribute("aria-label", r.parser + " text, page " + pg.number);
    const a0 = d.offered_start != null ? d.offered_start - pg.start : -1;
    const a1 = d.offered_end != null ? d.offered_end - pg.start : -1;
    if (a0 >= 0 && a1 <= cpLength(pg.text) && a0 < a1) {
      const u0 = unitsAt(pg.text, a0), u1 = unitsAt(pg.text, a1);
      text.append(pg.text.slice(0, u0), el("mark", "", pg.text.slice(u0, u1)), pg.text.slice(u1));
    } else text.append(pg.text);
    const use = el("button", "secondary small", "Use selection");
    use.type = "button";
    use.dataset.useSelection = "";
    const cancel = el("button", "quiet small", "Cancel");
    cancel.type = "button";
    const note = el("span", "muted small", "");
    note.setAttribute("aria-live", "polite");
    use.addEventListener("click", () => {
      const span = selectedSpan(text, pg.start);
      if (!span) { note.textContent = "Select some text of this page first."; return; }
      place(a, r, span, use);
    });
    cancel.addEventListener("click", () => { panel.remove(); button.focus(); });
    panel.append(text, use, " ", cancel, " ", note);
    row.after(panel);
    text.focus({ preventScroll: true });
    // The candidate may lie far down a long page: scroll the text to it, a third from the top.
    const mark = text.querySelector("mark");
    if (mark) text.scrollTop += mark.getBoundingClientRect().top - text.getBoundingClientRect().top - text.clientHeight / 3;
    panel.scrollIntoView({ block: "nearest" });
  }

  function selectedSpan(container, pageStart) {
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed || !sel.rangeCount) return null;
    const range = sel.getRangeAt(0);
    if (!container.contains(range.startContainer) || !container.contains(range.endContainer)) return null;
    const upTo = (node, offset) => {
      const r = document.createRange();
      r.setStart(container, 0);
      r.setEnd(node, offset);
      return cpLength(r.toString()); // code points, as the API counts
    };
    const start = upTo(range.startContainer, range.startOffset);
    const end = upTo(range.endContainer, range.endOffset);
    return end > start ? [pageStart + start, pageStart + end] : null;
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
    if (replaceFields) base = fieldsOf(item);
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
  function pollResolutions() {
    if (!item.anchors.some(isResolving)) return;
    poll(async () => {
      const next = await G.request("GET", itemUrl);
      // Only the evidence: the form and its row_version stay as the person left them.
      item.anchors = next.anchors;
      renderAnchors();
      return item.anchors.some(isResolving);
    }, { every: 600, grow: 1.25, most: 3000, rounds: 120 });
  }

  /* -- the conflict view: mine and theirs, field by field ------------------------------------- */
  const mergeRows = root.querySelector("[data-merge-rows]");
  let theirs = null; // the saved item the conflict is with

  function whoSaved(changes) {
    const names = Array.from(new Set((changes || []).map((c) => c.by).filter(Boolean)));
    if (!names.length) return "Someone";
    return names.map((n) => (n === root.dataset.me ? "You, in another tab or window," : n)).join(" and ");
  }

  function cell(name, side, value, checked) {
    const td = el("td", "merge-" + side);
    const label = el("label", "merge-choice");
    const radio = document.createElement("input");
    radio.type = "radio";
    radio.name = "merge-" + name;
    radio.value = side;
    radio.checked = checked;
    radio.setAttribute("aria-label", "Keep " + (side === "mine" ? "yours" : "theirs") + " for " + name);
    label.append(radio, el("span", "merge-value" + (value ? "" : " muted"), value || "(empty)"));
    td.appendChild(label);
    return td;
  }

  async function openConflict(headline, detail) {
    theirs = await G.request("GET", itemUrl);
    const mine = formFields(), saved = fieldsOf(theirs);
    mergeRows.replaceChildren();
    let differing = 0;
    for (const [name, label] of FIELDS) {
      if (mine[name] === saved[name]) continue;
      differing += 1;
      // My edit wins where I changed the field; theirs where I did not touch it.
      const mineChanged = mine[name] !== base[name];
      const tr = el("tr");
      tr.dataset.mergeField = name;
      const head = el("th", "", label);
      head.scope = "row";
      tr.append(head, cell(name, "mine", mine[name], mineChanged), cell(name, "theirs", saved[name], !mineChanged));
      mergeRows.appendChild(tr);
    }
    if (!differing) { // nothing of mine stands against theirs: take their version and move on
      applyItem(theirs, true);
      conflict.hidden = true;
      return;
    }
    root.querySelector("[data-conflict-text]").textContent = headline;
    root.querySelector("[data-conflict-detail]").textContent = detail || "";
    conflict.hidden = false;
    conflict.querySelector("[data-merge-save]").focus();
  }

  function chosen(all) {
    const saved = fieldsOf(theirs), mine = formFields(), out = {};
    for (const [name] of FIELDS) {
      const radio = conflict.querySelector('input[name="merge-' + name + '"]:checked');
      const side = all || (radio ? radio.value : "theirs");
      out[name] = side === "mine" ? mine[name] : saved[name];
    }
    return out;
  }

  async function resolveConflict(all) {
    const values = chosen(all);
    const saved = fieldsOf(theirs);
    applyItem(theirs, true); // their row_version, and base = theirs
    form.elements.question.value = values.question;
    form.elements.qtype.value = values.qtype;
    form.elements.answer.value = values.answer;
    conflict.hidden = true;
    mergeRows.replaceChildren();
    updateCount();
    if (FIELDS.every(([name]) => values[name] === saved[name])) {
      savedNote.textContent = "Kept their version.";
      return;
    }
    await save();
  }

  function handle(err) {
    if (err.status === 409 && err.errors && err.errors.row_version) {
      const fields = err.body.changed && err.body.changed.length ? " They changed: " + err.body.changed.join(", ") + "." : "";
      openConflict(whoSaved(err.body.changes) + " saved this item while you were editing.", err.message + fields)
        .catch((e) => G.toast(e.message, "error"));
    } else G.showErrors(form, err);
  }

  /* -- live: someone else's change to this item (live.js) ----------------------------------- */
  const CONTENT = new Set(["edited", "submitted", "approved", "changes_requested", "reopened", "anchor_created", "anchor_deleted", "anchor_grade_changed", "annotation_done"]);
  let following = Promise.resolve();
  document.addEventListener("gw:change", (event) => {
    const change = event.detail;
    if (!CONTENT.has(change.kind)) return;
    following = following.then(async () => {
      const who = change.source === "you" ? "You, in another tab," : change.by;
      if (change.kind === "edited" && dirty()) {
        await openConflict(who + " " + change.what + " while you were editing.", "");
        return;
      }
      const next = await G.request("GET", itemUrl);
      applyItem(next, !dirty());
      if (!dirty()) updateCount();
    }).catch(() => { /* the next change or save will tell */ });
  });
  /* A keyboard shortcut for a refused control says why instead of asking the API. */
  function refused(action) {
    const reason = (refusals[item.state] || {})[action];
    if (reason) G.toast(reason, "error");
    return Boolean(reason);
  }

  async function save() {
    if (refused("save")) return false;
    G.clearErrors(form);
    savedNote.textContent = "Saving…";
    try {
      const next = await G.request("PATCH", itemUrl, {
        row_version: Number(rowVersion.value),
        question: form.elements.question.value,
        qtype: form.elements.qtype.value.trim() || null,
        answer: form.elements.answer.value === "" ? null : form.elements.answer.value,
      });
      applyItem(next, false);
      base = fieldsOf(next);
      savedNote.textContent = "Saved.";
      return true;
    } catch (err) {
      savedNote.textContent = "";
      handle(err);
      return false;
    }
  }

  /* Resolves true once the item (or my part of it, with overlap) is submitted. */
  async function submitForReview() {
    if (refused("submit")) return false;
    G.clearErrors(form);
    const button = root.querySelector("[data-submit-review]");
    button.disabled = true;
    savedNote.textContent = "Submitting…";
    try {
      if (!(await save())) return false;
      const body = await G.request("POST", api.itemAction(ws, set, itemId, "submit"), { row_version: Number(rowVersion.value) });
      if (body && body.state) { stateBadge.textContent = G.words.stateLabel(body.state); stateBadge.className = "state " + body.state; }
      await refresh(false);
      savedNote.textContent = "Submitted for review.";
      G.toast("Submitted " + item.id + " for review");
      return true;
    } catch (err) {
      savedNote.textContent = "";
      if (err.status === 404 || err.status === 405) {
        G.showErrors(form, new G.ApiError(err.status, { detail: "Submitting for review is not available on this server yet (" + err.message + ").", errors: {} }));
      } else handle(err);
      return false;
    } finally {
      applyRefusals(item.state);
    }
  }

  /* The task stream: submit, then open the next item waiting in my queue. */
  async function submitAndNext(event) {
    const href = event.currentTarget.dataset.nextHref;
    if (await submitForReview()) window.location.assign(href);
  }

  async function changeGrade(anchor, grade, select) {
    select.disabled = true;
    try {
      await G.request("PATCH", api.anchor(ws, set, itemId, anchor.id), { grade: grade });
      await refresh(false);
      G.toast("Grade changed to " + grade);
    } catch (err) { G.toast(err.message, "error"); select.value = String(anchor.grade); }
    finally { select.disabled = false; }
  }

  async function removeAnchor(anchor, button) {
    button.disabled = true;
    try {
      await G.request("DELETE", api.anchor(ws, set, itemId, anchor.id));
      await refresh(false);
      // Undo creates it again from what it held (../undo.js).
      offerUndo({ message: "Evidence removed.", undo: async () => {
        await G.request("POST", api.anchors(ws, set, itemId), recreateBody(anchor));
        await refresh(false);
        pollResolutions();
      } });
    } catch (err) { G.toast(err.message, "error"); button.disabled = false; }
  }

  /* Unanswerable: qtype "unanswerable" and no evidence (confirm first if there is some). */
  const confirmBox = root.querySelector("[data-unanswerable-confirm]");
  async function markUnanswerable() {
    confirmBox.hidden = true;
    form.elements.qtype.value = "unanswerable";
    if (!(await save())) return;
    try {
      for (const a of item.anchors) await G.request("DELETE", api.anchor(ws, set, itemId, a.id));
      await refresh(false);
      G.toast(item.id + " is marked unanswerable");
    } catch (err) { G.toast(err.message, "error"); }
  }

  if (canWrite) {
    form.addEventListener("submit", (e) => { e.preventDefault(); save(); });
    root.querySelector("[data-submit-review]").addEventListener("click", submitForReview);
    const submitNext = root.querySelector("[data-submit-next]");
    if (submitNext) submitNext.addEventListener("click", submitAndNext);
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
  conflict.querySelector("[data-merge-save]").addEventListener("click", () => resolveConflict(null));
  conflict.querySelector("[data-keep-mine]").addEventListener("click", () => resolveConflict("mine"));
  conflict.querySelector("[data-keep-theirs]").addEventListener("click", async () => {
    await resolveConflict("theirs");
    G.clearErrors(form);
    form.elements.question.focus();
  });

  /* -- evidence for an unanswerable item: warn first ------------------------------------------ */
  const add = root.querySelector("[data-add-evidence]");
  if (add) {
    const warning = add.querySelector("[data-unanswerable-warning]");
    const open = () => { window.location.href = docLink(add.elements.doc.value, null, null, null); };
    add.addEventListener("submit", (e) => {
      e.preventDefault();
      if (form.elements.qtype.value.trim().toLowerCase() === "unanswerable" && warning.hidden) {
        warning.hidden = false;
        warning.querySelector("[data-open-anyway]").focus();
        return;
      }
      open();
    });
    warning.querySelector("[data-open-anyway]").addEventListener("click", open);
  }

  /* -- the question: its length against the limit, and questions it repeats ------------------ */
  const checks = questionChecks(form.elements.question, {
    workspace: ws, set: set, exclude: () => item.id,
    counter: root.querySelector('[data-char-count="f-question"]'),
    similarBox: canWrite ? root.querySelector("[data-similar]") : null,
  });
  function updateCount() { checks.update(); }

  renderAnchors();
  pollResolutions();
}
