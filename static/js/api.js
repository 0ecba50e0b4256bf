/* Shared helpers for every page: JSON calls with the session's CSRF token, the API's error
 shape ({detail, errors: {field: [...]}}) shown beside form fields, and toasts. Imported by
 the page modules; never loaded by a <script> tag of its own. */
function cookie(name) {
  const hit = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
  return hit ? decodeURIComponent(hit.slice(name.length + 1)) : "";
}

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.detail) || "the server answered " + status);
    this.status = status;
    this.body = body || {};
    this.errors = (body && body.errors) || {};
  }
}

/* This page load's tab id: the server writes it on each change this tab makes, so the
   pages that poll for changes (live.js) tell this tab, my other tabs and other people apart. */
export const tab = (window.crypto && crypto.randomUUID) ? crypto.randomUUID()
  : Date.now().toString(36) + "-" + Math.random().toString(36).slice(2);

/* A browser drops a "." or ".." part of a URL's path (plain or as %2e) together with the
   part before it, and reads "\\" as "/": a request built from an id holding one would go to
   another URL (a document named "../../acme/evalsets/quiz" made its Remove button delete
   that eval set). The server refuses such ids when they are written; this refuses to send a
   request to one stored before that, whoever built the URL. */
function rewrittenByBrowser(url) {
  const path = String(url).split(/[?#]/, 1)[0];
  return path.includes("\\") || path.split("/").some((part) => /^(?:\.|%2e){1,2}$/i.test(part));
}

function refuseRewritten(url) {
  if (rewrittenByBrowser(url)) {
    throw new ApiError(0, { detail: "this names an id with a '.' or '..' part or a '\\', which no URL can carry, so nothing was sent", errors: {} });
  }
}

/* A fresh key for one user action (crypto.randomUUID needs a secure context; plain http
   on another host has only getRandomValues). */
function idempotencyKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/* The creates the server makes once per Idempotency-Key (items, anchors, documents): only
   these are sent again by themselves; another POST (a comment, an approval) is not, as
   the server would do it twice. */
const KEYED_CREATE = /\/(items|anchors|documents)\/(\?.*)?$/;

/* A create is one user action: it carries a fresh Idempotency-Key, and when the answer is
   lost (the connection failed, or the server's database did: 503) it is sent once more
   with the same key, so a create that did commit is answered with what it made instead
   of being made twice. */
export async function request(method, url, data, options) {
  if (method !== "POST" || !KEYED_CREATE.test(url)) return send(method, url, data, options);
  const headers = Object.assign({ "Idempotency-Key": idempotencyKey() }, (options && options.headers) || {});
  const once = Object.assign({}, options, { headers: headers });
  try {
    return await send(method, url, data, once);
  } catch (err) {
    if (!(err instanceof ApiError) || (err.status !== 0 && err.status !== 503)) throw err;
    await new Promise((done) => setTimeout(done, 2000));
    return send(method, url, data, once);
  }
}

async function send(method, url, data, options) {
  refuseRewritten(url);
  const init = { method: method, credentials: "same-origin", headers: { Accept: "application/json", "X-Groundwork-Tab": tab } };
  if (options && options.keepalive) init.keepalive = true;
  if (method !== "GET" && method !== "HEAD") init.headers["X-CSRFToken"] = cookie("csrftoken");
  if (data instanceof FormData) init.body = data;
  else if (data !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(data);
  }
  Object.assign(init.headers, (options && options.headers) || {});
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    throw new ApiError(0, { detail: "could not reach the server; check your connection and try again" });
  }
  if (response.status === 204) return null;
  const type = response.headers.get("Content-Type") || "";
  const body = type.includes("json") ? await response.json().catch(() => null) : null;
  if (!response.ok) {
    const fallback = response.status === 404 ? "not found (" + url + ")" : "the server answered " + response.status;
    throw new ApiError(response.status, body && body.detail ? body : { detail: fallback, errors: {} });
  }
  return body;
}

/* Every result of a paginated API list, following its "next" links. */
export async function all(url) {
  const out = [];
  while (url) {
    const page = await request("GET", url);
    out.push(...page.results);
    url = page.next;
  }
  return out;
}

/* Upload with progress (fetch cannot report upload progress; XHR can). */
export function upload(url, formData, onProgress) {
  return new Promise((resolve, reject) => {
    refuseRewritten(url);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    xhr.setRequestHeader("X-CSRFToken", cookie("csrftoken"));
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("Idempotency-Key", idempotencyKey());
    xhr.upload.onprogress = (e) => { if (e.lengthComputable && onProgress) onProgress(e.loaded, e.total); };
    xhr.onload = () => {
      let body;
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else reject(new ApiError(xhr.status, body && body.detail ? body : { detail: "the server answered " + xhr.status }));
    };
    xhr.onerror = () => reject(new ApiError(0, { detail: "the upload was interrupted; try again" }));
    xhr.send(formData);
  });
}

/* Put each message beside its field ([data-error-for=name] inside root); the rest on top. */
export function showErrors(root, err, attr) {
  attr = attr || "data-error-for";
  clearErrors(root, attr);
  const errors = (err && err.errors) || {};
  let placed = false;
  for (const [field, messages] of Object.entries(errors)) {
    const slot = root.querySelector("[" + attr + '="' + CSS.escape(field) + '"]');
    if (slot && field !== "non_field_errors") {
      slot.textContent = messages.join(" ");
      const input = root.querySelector('[name="' + CSS.escape(field) + '"]');
      if (input) input.setAttribute("aria-invalid", "true");
      placed = true;
    }
  }
  const general = root.querySelector("[" + attr + '="non_field_errors"]');
  if (general && (!placed || errors.non_field_errors)) general.textContent = err.message;
  else if (!general && !placed) toast(err.message, "error");
}

export function clearErrors(root, attr) {
  attr = attr || "data-error-for";
  root.querySelectorAll("[" + attr + "]").forEach((el) => { el.textContent = ""; });
  root.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
}

export function toast(message, kind) {
  const box = document.querySelector("[data-toasts]");
  if (!box) return;
  const el = document.createElement("div");
  el.className = "toast " + (kind || "info");
  el.textContent = message;
  box.appendChild(el);
  setTimeout(() => el.remove(), kind === "error" || kind === "warning" ? 9000 : 4500);
  return el;
}

/* An element with a class and text (never HTML). */
export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

/* A file's size as the server's pages write it (Django's filesizeformat, with its no-break
   space): "1 byte", "900 bytes", "1.5 KB", "2.0 MB". */
export function humanSize(bytes) {
  const unit = (n, name) => n + "\u00a0" + name;
  if (bytes < 1024) return unit(bytes, bytes === 1 ? "byte" : "bytes");
  if (bytes < 1024 ** 2) return unit((bytes / 1024).toFixed(1), "KB");
  if (bytes < 1024 ** 3) return unit((bytes / 1024 ** 2).toFixed(1), "MB");
  return unit((bytes / 1024 ** 3).toFixed(1), "GB");
}

/* Is this key press typing into a field (where a page's single-letter keys must not act)? */
export function isTyping(target) {
  if (!target || !target.closest) return false;
  return Boolean(target.closest("input, textarea, select, [contenteditable=true], [contenteditable='']"));
}

/* Words and colours for states, statuses and grades, sent once by the server
   (labelling/labels.py) in <script type="application/json" id="gw-labels">. */
const labelsEl = document.getElementById("gw-labels");
export const labels = labelsEl ? JSON.parse(labelsEl.textContent) : { states: {}, resolutions: {}, grades: {} };
export const words = {
  state: (s) => (labels.states[s] || {}).words || s,
  stateLabel: (s) => (labels.states[s] || {}).label || s,
  resolution: (s) => (labels.resolutions[s] || {}).words || s,
  grade: (g) => labels.grades[String(g)] || String(g),
};

/* The header's inbox count (base.html), after marking read or a poll. */
export function setInboxCount(unread) {
  const link = document.querySelector("[data-inbox-link]");
  if (!link) return;
  let count = link.querySelector("[data-inbox-count]");
  if (!unread) { if (count) count.remove(); return; }
  if (!count) { count = el("span", "count"); count.dataset.inboxCount = ""; link.append(" ", count); }
  count.textContent = String(unread);
  count.setAttribute("aria-label", unread + " unread");
}
