/* Every URL the browser code builds, in one place: the JSON API's paths (`api`) and the pages
   it links to (`pages`). A script never joins "/api/..." strings itself, so a path the server
   changes is changed here once. URLs the server hands over whole (a form's data-url, a release's
   `url` in an API answer) are used as they come.

   Each id is encoded as one path segment, except a document's source id, which may hold "/"
   (a folder in the upload): its parts are encoded one by one and keep their slashes. */

const seg = encodeURIComponent;

/* A document's source id as URL path: "reports/2024 q1.pdf" -> "reports/2024%20q1.pdf". */
export function pathOf(sourceId) {
  return String(sourceId).split("/").map(seg).join("/");
}

const workspace = (ws) => "/api/workspaces/" + seg(ws) + "/";
const documentOf = (ws, doc) => workspace(ws) + "documents/" + pathOf(doc) + "/";
const evalset = (ws, set) => workspace(ws) + "evalsets/" + seg(set) + "/";
const item = (ws, set, id) => evalset(ws, set) + "items/" + seg(id) + "/";
const anchor = (ws, set, id, anchorId) => item(ws, set, id) + "anchors/" + seg(anchorId) + "/";

export const api = {
  /* The workspace's changes feed (live.js) and its background work (backlog.js). */
  changes: (ws) => workspace(ws) + "changes/",
  pending: (ws) => workspace(ws) + "pending/",

  documents: (ws) => workspace(ws) + "documents/",
  document: documentOf,
  documentAnchors: (ws, doc) => documentOf(ws, doc) + "anchors/",
  rendered: (ws, doc) => documentOf(ws, doc) + "rendered/",
  pdf: (ws, doc) => documentOf(ws, doc) + "pdf/",
  pdfPageImage: (ws, doc, page) => documentOf(ws, doc) + "pdf/pages/" + page + "/image",
  pdfPageText: (ws, doc, page) => documentOf(ws, doc) + "pdf/pages/" + page + "/text/",
  parsePages: (ws, doc, parse) => documentOf(ws, doc) + "parses/" + seg(parse) + "/pages/",
  parseSearch: (ws, doc, parse) => documentOf(ws, doc) + "parses/" + seg(parse) + "/search/",

  /* Workspace search and an item's suggested evidence (passages.js). */
  search: (ws) => workspace(ws) + "search/",
  suggestions: (ws, set, id) => item(ws, set, id) + "suggestions/",

  evalsets: (ws) => workspace(ws) + "evalsets/",
  evalset,
  similar: (ws, set) => evalset(ws, set) + "similar/",
  items: (ws, set) => evalset(ws, set) + "items/",
  item,
  /* An item's workflow step: "submit", "approve", "request-changes". */
  itemAction: (ws, set, id, action) => item(ws, set, id) + action + "/",
  comments: (ws, set, id) => item(ws, set, id) + "comments/",
  anchors: (ws, set, id) => item(ws, set, id) + "anchors/",
  anchor,
  confirmAnchor: (ws, set, id, anchorId) => anchor(ws, set, id, anchorId) + "confirm/",
  compareAnchor: (ws, set, id, anchorId) => anchor(ws, set, id, anchorId) + "compare/",

  /* Answer an invitation: "accept" or "decline". */
  invitation: (ws, answer) => "/api/invitations/" + seg(ws) + "/" + answer + "/",
  inboxRead: () => "/api/inbox/read/",
};

export const pages = {
  workspace: (ws) => "/w/" + seg(ws) + "/",
  document: (ws, doc) => "/w/" + seg(ws) + "/documents/" + pathOf(doc),
  evalset: (ws, set) => "/w/" + seg(ws) + "/sets/" + seg(set) + "/",
  item: (ws, set, id) => "/w/" + seg(ws) + "/sets/" + seg(set) + "/items/" + seg(id) + "/",
};

/* A URL with a query string added: withQuery("/x/", {from: 1, to: 2}) -> "/x/?from=1&to=2".
   Keys whose value is null or undefined are left out. */
export function withQuery(url, params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value != null) q.set(key, String(value));
  const text = q.toString();
  return text ? url + (url.includes("?") ? "&" : "?") + text : url;
}
