/* The owner's controls on any page, wired by data- attributes; each calls the JSON API.

   <form data-api data-method="PATCH" data-url="..." data-done="note">: its fields go as JSON
   (a multiple select or checkboxes sharing a name become a list, type=number a number,
   data-json on a field parses its value); errors land beside the fields.
   <button data-api-action data-method="POST" data-url="..." data-confirm="sentence" or
   data-confirm-dialog="id">: asks first when told to (a sentence, or a <dialog> that lists
   what goes with it and has a [data-confirm-yes] button), then calls the API.
   On success the page reloads (or goes to data-next) and shows data-done in a note that
   stays until dismissed. A disabled control carries its reason next to it (aria-describedby). */
import * as G from "./api.js";
import { pages } from "./urls.js";
const NOTE_KEY = "groundwork:owner-note";

function showNote(text) {
  const main = document.getElementById("main");
  if (!main || !text) return;
  const note = G.el("div", "banner done");
  note.setAttribute("role", "status");
  note.dataset.ownerNote = "";
  const words = G.el("p", "", text);
  const close = G.el("button", "quiet", "Dismiss");
  close.type = "button";
  close.addEventListener("click", () => note.remove());
  note.append(words, close);
  main.prepend(note);
}

function finish(source, body) {
  let done = source.dataset.done || "Done.";
  if (body && body.status === "invited") done = "Invited " + body.username + " as " + body.role + "; they join when they accept on their home page.";
  if (body && Array.isArray(body.created)) {
    done = "Assigned " + body.created.length + " item(s)" + (body.skipped && body.skipped.length ? "; skipped " + body.skipped.map((s) => s.item + " (" + s.reason + ")").join(", ") : "") + ".";
  }
  try { sessionStorage.setItem(NOTE_KEY, done); } catch (e) { /* private mode: no note */ }
  if (source.dataset.next) window.location.href = source.dataset.next;
  else window.location.reload();
}

function valueOf(form) {
  const out = {};
  for (const field of Array.from(form.elements)) {
    if (!field.name || field.disabled || field.type === "submit" || field.type === "button") continue;
    if (field.type === "checkbox") {
      if (field.dataset.single !== undefined) { out[field.name] = field.checked; continue; }
      out[field.name] = out[field.name] || [];
      if (field.checked) out[field.name].push(field.value);
      continue;
    }
    if (field.type === "radio") { if (field.checked) out[field.name] = field.value; continue; }
    if (field.multiple) {
      const chosen = Array.from(field.selectedOptions).map((o) => o.value);
      if (chosen.length || field.dataset.optional === undefined) out[field.name] = chosen;
      continue;
    }
    if (field.value === "" && field.dataset.optional !== undefined) continue;
    if (field.type === "number") out[field.name] = Number(field.value);
    else if (field.dataset.json !== undefined) out[field.name] = JSON.parse(field.value);
    else out[field.name] = field.value.trim();
  }
  return out;
}

/* Forms whose JSON is not one value per field. */
const builders = {
  workspace(form) {
    const slug = form.elements.slug.value.trim();
    form.dataset.next = pages.workspace(slug);
    return { slug: slug, name: form.elements.name.value.trim() || slug };
  },
  evalsetSettings(form) {
    const qtypes = form.elements.qtypes.value.split("\n").map((q) => q.trim()).filter(Boolean);
    return { guidelines: form.elements.guidelines.value, qtypes: qtypes };
  },
  parserSettings(form) {
    const parsers = {}, reference = {};
    form.querySelectorAll("[data-parser-of]").forEach((box) => {
      const kind = box.dataset.parserOf;
      parsers[kind] = parsers[kind] || [];
      if (box.checked) parsers[kind].push(box.value);
    });
    form.querySelectorAll("[data-reference-of]:checked").forEach((radio) => { reference[radio.dataset.referenceOf] = radio.value; });
    return { name: form.elements.name.value.trim(), parser_settings: { parsers: parsers, reference: reference } };
  },
};

document.querySelectorAll("form[data-api]").forEach((form) => {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    G.clearErrors(form);
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    let body;
    try {
      const data = form.dataset.build ? builders[form.dataset.build](form) : valueOf(form);
      body = await G.request(form.dataset.method || "POST", form.dataset.url, data);
    } catch (err) {
      G.showErrors(form, err);
      if (button) button.disabled = false;
      return;
    }
    finish(form, body);
  });
});

async function run(button) {
  button.disabled = true;
  try {
    const body = await G.request(button.dataset.method || "POST", button.dataset.url, button.dataset.body ? JSON.parse(button.dataset.body) : undefined);
    finish(button, body);
  } catch (err) {
    button.disabled = false;
    const slot = button.closest("form, [data-api-scope]");
    if (slot) G.showErrors(slot, err); else G.toast(err.message, "error");
  }
}

/* A confirm step for a plain sentence: a modal <dialog> (Esc or Cancel closes it). */
function confirmDialog(button) {
  const dialog = G.el("dialog", "confirm-dialog");
  dialog.setAttribute("aria-label", "Confirm: " + button.textContent.trim());
  const yes = G.el("button", "danger", button.textContent.trim());
  yes.type = "button";
  yes.dataset.confirmYes = "";
  const no = G.el("button", "secondary", "Cancel");
  no.type = "button";
  no.addEventListener("click", () => dialog.close());
  const actions = G.el("div", "actions");
  actions.append(yes, " ", no);
  dialog.append(G.el("p", "", button.dataset.confirm), actions);
  dialog.addEventListener("close", () => dialog.remove());
  document.body.appendChild(dialog);
  return dialog;
}

document.querySelectorAll("[data-api-action]").forEach((button) => {
  button.addEventListener("click", () => {
    const dialog = button.dataset.confirmDialog ? document.getElementById(button.dataset.confirmDialog)
      : button.dataset.confirm ? confirmDialog(button) : null;
    if (!dialog) { run(button); return; }
    const yes = dialog.querySelector("[data-confirm-yes]");
    yes.onclick = () => { dialog.close(); run(button); };
    dialog.showModal();
    yes.focus();
  });
});

document.querySelectorAll("dialog [data-confirm-no]").forEach((no) => {
  no.addEventListener("click", () => no.closest("dialog").close());
});

let pending;
try { pending = sessionStorage.getItem(NOTE_KEY); sessionStorage.removeItem(NOTE_KEY); } catch (e) { pending = null; }
if (pending) showNote(pending);
