/* Workspace page: upload documents (drop or file input, several at once) with upload
   progress, then follow each parse's status and progress until it is ready or failed.
   An owner's "new eval set" form posts to the API and opens the new set. */
import "./passages.js";
import * as G from "./api.js";
import "./backlog.js";
import { poll } from "./poll.js";
import { api, pages } from "./urls.js";

const section = document.querySelector("[data-documents]");
if (section) documentsSection(section);

function documentsSection(section) {
  const ws = section.dataset.workspace;
  const rows = section.querySelector("[data-doc-rows]");
  const template = section.querySelector("[data-doc-row-template]");
  const dropzone = section.querySelector("[data-dropzone]");
  const input = section.querySelector("[data-file-input]");
  const uploads = section.querySelector("[data-uploads]");
  const docsUrl = api.documents(ws);
  const ACTIVE = ["queued", "parsing"];

  const el = G.el;

  function renderParses(cell, parses) {
    cell.replaceChildren();
    if (!parses.length) cell.appendChild(el("span", "muted", "no parser for this kind"));
    for (const p of parses) {
      const chip = el("span", "parse " + p.status);
      chip.dataset.parse = p.id;
      chip.dataset.status = p.status;
      const name = el("span", "parser", p.parser);
      if (p.is_reference) { name.append(" "); const ab = el("abbr", "", "ref"); ab.title = "reference parse"; name.appendChild(ab); }
      chip.append(name, " ", el("span", "status", p.status));
      if (ACTIVE.includes(p.status)) {
        const bar = document.createElement("progress");
        bar.max = Math.max(1, p.progress.total || 1);
        if (p.progress.total) bar.value = p.progress.done; else if (p.status === "queued") bar.value = 0; else bar.removeAttribute("value");
        bar.setAttribute("aria-label", p.parser + " progress");
        chip.append(" ", bar);
      }
      if (p.status === "ready") {
        chip.append(" ", el("span", "muted", p.page_count + " p."));
        for (const w of p.warnings || []) { const warn = el("span", "warn", w); warn.dataset.warning = ""; chip.append(" ", warn); }
      }
      if (p.status === "failed") { const err = el("span", "error", p.error); chip.append(" ", err); }
      cell.appendChild(chip);
    }
  }

  function rowFor(sourceId) {
    return Array.from(rows.querySelectorAll("tr[data-doc]")).find((tr) => tr.dataset.doc === sourceId);
  }

  function upsertRow(doc) {
    let tr = rowFor(doc.source_id);
    if (!tr) {
      tr = template.content.firstElementChild.cloneNode(true);
      tr.dataset.doc = doc.source_id;
      const empty = rows.querySelector("[data-empty]");
      if (empty) empty.remove();
      rows.appendChild(tr);
    }
    const link = tr.querySelector("[data-doc-link]");
    link.textContent = doc.source_id;
    link.href = pages.document(ws, doc.source_id);
    tr.querySelector("[data-kind]").textContent = doc.kind;
    tr.querySelector("[data-size]").textContent = G.humanSize(doc.size);
    renderParses(tr.querySelector("[data-parses]"), doc.parses);
    return tr;
  }

  /* -- following parses ------------------------------------------------------------------ */
  let following = null; // the poller, while any parse is queued or running
  function activeDocs() {
    return Array.from(rows.querySelectorAll("tr[data-doc]")).filter((tr) =>
      Array.from(tr.querySelectorAll("[data-status]")).some((c) => ACTIVE.includes(c.dataset.status)));
  }
  async function look() {
    const active = activeDocs();
    if (!active.length) return false;
    await Promise.all(active.map(async (tr) => {
      try {
        const doc = await G.request("GET", api.document(ws, tr.dataset.doc));
        upsertRow(doc);
        if (!doc.parses.some((p) => ACTIVE.includes(p.status))) {
          const failed = doc.parses.filter((p) => p.status === "failed").length;
          G.toast(doc.source_id + (failed ? ": " + failed + " parse(s) failed" : " is ready to read"), failed ? "error" : "info");
          settleNote(doc, failed);
        }
      } catch (err) {
        if (err.status === 404) tr.remove();
      }
    }));
    return activeDocs().length > 0;
  }
  /* An upload's note says "parsing…" until the table says the parses are done: then it says
     what the table says (ready, or how many failed). */
  const parsingNotes = new Map(); // source id -> its upload's note
  function settleNote(doc, failed) {
    const note = parsingNotes.get(doc.source_id);
    if (!note) return;
    parsingNotes.delete(doc.source_id);
    const total = doc.parses.length;
    note.className = failed ? "note error" : "note muted";
    note.textContent = !failed ? "uploaded and read: ready"
      : failed === total ? "uploaded; every parse failed (see the table)"
      : "uploaded; " + failed + " of " + total + " parses failed (see the table), the others are ready";
  }

  function startPolling() {
    if (following) return;
    following = poll(look, { first: 0, every: 700, grow: 1.3, most: 3000 });
    following.done.then(() => { following = null; });
  }

  /* -- uploading ------------------------------------------------------------------------- */
  function entryFor(file) {
    const li = el("li", "upload");
    const name = el("span", "name", file.name);
    const bar = document.createElement("progress");
    bar.max = file.size || 1; bar.value = 0;
    bar.setAttribute("aria-label", "uploading " + file.name);
    const note = el("span", "note muted", "waiting…");
    li.append(name, " ", bar, " ", note);
    uploads.appendChild(li);
    return { file, li, bar, note };
  }

  async function uploadOne({ file, li, bar, note }) {
    note.textContent = "uploading…";
    const data = new FormData();
    data.append("file", file, file.name);
    try {
      const doc = await G.upload(docsUrl, data, (loaded) => { bar.value = loaded; });
      bar.value = bar.max;
      const parsing = doc.parses.some((p) => ACTIVE.includes(p.status));
      if (doc.duplicate_of_existing) {
        // The same bytes are stored once: say which document they are, especially when the
        // name differs (a renamed copy adds nothing, and nothing is stored under its name).
        li.classList.add("duplicate");
        note.className = "note warn";
        note.textContent = doc.source_id === file.name
          ? "already here as " + doc.source_id + ": the same file was uploaded before; nothing new was stored"
          : "not added: its bytes are identical to " + doc.source_id + ", already here, so it is that document and nothing is stored as " + file.name;
      } else {
        note.textContent = parsing ? "uploaded; parsing…" : "uploaded and read";
        if (parsing) parsingNotes.set(doc.source_id, note);
      }
      upsertRow(doc);
      startPolling();
    } catch (err) {
      li.classList.add("failed");
      bar.remove();
      note.className = "note error";
      note.textContent = err.message;
    }
    // Notes stay until dismissed: a note that vanishes is a note nobody read.
    const dismiss = el("button", "quiet small", "Dismiss");
    dismiss.type = "button";
    dismiss.setAttribute("aria-label", "Dismiss the note about " + file.name);
    dismiss.addEventListener("click", () => li.remove());
    li.append(" ", dismiss);
  }

  const queue = [];
  let draining = false;
  async function drain() {
    draining = true;
    while (queue.length) await uploadOne(queue.shift());
    draining = false;
  }

  function uploadAll(files) {
    const list = Array.from(files || []);
    if (!list.length) return;
    // One after another (each with its own progress bar and its own error): the server
    // hashes and stores each file in one transaction, and SQLite serialises writers anyway.
    queue.push(...list.map(entryFor));
    if (!draining) drain();
  }

  if (input) {
    const chosen = () => { uploadAll(input.files); input.value = ""; };
    input.addEventListener("change", chosen);
    // Files chosen while this module was still loading fired their change before anyone
    // listened: upload them now rather than leave them sitting in the input.
    if (input.files && input.files.length) chosen();
  }
  if (dropzone) {
    ["dragenter", "dragover"].forEach((t) => dropzone.addEventListener(t, (e) => {
      e.preventDefault(); dropzone.classList.add("over");
    }));
    ["dragleave", "drop"].forEach((t) => dropzone.addEventListener(t, (e) => {
      e.preventDefault(); dropzone.classList.remove("over");
    }));
    dropzone.addEventListener("drop", (e) => uploadAll(e.dataTransfer && e.dataTransfer.files));
    // Files dropped anywhere else on the page should not replace the page.
    window.addEventListener("dragover", (e) => e.preventDefault());
    window.addEventListener("drop", (e) => e.preventDefault());
  }
  document.addEventListener("keydown", (e) => {
    if (e.key === "u" && input && !e.ctrlKey && !e.metaKey && !e.altKey && !G.isTyping(e.target)) {
      e.preventDefault(); input.click();
    }
  });

  startPolling();

  /* -- new eval set (owners) ------------------------------------------------------------- */
  const setForm = document.querySelector("[data-new-evalset]");
  if (setForm) {
    setForm.addEventListener("submit", async (e) => {
      e.preventDefault();
      G.clearErrors(setForm);
      const button = setForm.querySelector("button[type=submit]");
      button.disabled = true;
      const id = setForm.elements.id.value.trim();
      try {
        await G.request("POST", api.evalsets(ws), { id: id, name: setForm.elements.name.value.trim() });
        window.location.href = pages.evalset(ws, id);
      } catch (err) {
        G.showErrors(setForm, err);
        button.disabled = false;
      }
    });
  }
}
