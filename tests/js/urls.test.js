// The one place the browser code builds URLs (static/js/urls.js): ids become path segments,
// encoded, and a document's source id keeps its folders.
import assert from "node:assert/strict";
import { test } from "node:test";

import { api, pages, pathOf, withQuery } from "../../static/js/urls.js";

test("it keeps the folders of a document's source id and encodes each part", () => {
  assert.equal(pathOf("reports/2024 q1.pdf"), "reports/2024%20q1.pdf");
  assert.equal(pathOf("a?b#c.txt"), "a%3Fb%23c.txt");
});

test("it builds the API paths of a document", () => {
  assert.equal(api.document("acme", "reports/q1.pdf"), "/api/workspaces/acme/documents/reports/q1.pdf/");
  assert.equal(api.parsePages("acme", "h.txt", "p1"), "/api/workspaces/acme/documents/h.txt/parses/p1/pages/");
  assert.equal(api.pdfPageImage("acme", "h.pdf", 3), "/api/workspaces/acme/documents/h.pdf/pdf/pages/3/image");
  assert.equal(api.pdfPageText("acme", "h.pdf", 3), "/api/workspaces/acme/documents/h.pdf/pdf/pages/3/text/");
});

test("it encodes an item id as one path segment", () => {
  assert.equal(api.item("acme", "quiz", "q 1/2"), "/api/workspaces/acme/evalsets/quiz/items/q%201%2F2/");
  assert.equal(api.itemAction("acme", "quiz", "q1", "request-changes"), "/api/workspaces/acme/evalsets/quiz/items/q1/request-changes/");
  assert.equal(api.compareAnchor("acme", "quiz", "q1", "an1"), "/api/workspaces/acme/evalsets/quiz/items/q1/anchors/an1/compare/");
});

test("it builds the pages' paths", () => {
  assert.equal(pages.item("acme", "quiz", "q1"), "/w/acme/sets/quiz/items/q1/");
  assert.equal(pages.document("acme", "reports/q1.pdf"), "/w/acme/documents/reports/q1.pdf");
  assert.equal(pages.workspace("new space"), "/w/new%20space/");
});

test("it adds a query, leaving out what is null and joining one already there", () => {
  assert.equal(withQuery("/x/", { from: 1, to: 2 }), "/x/?from=1&to=2");
  assert.equal(withQuery("/x/", { parse: null, q: "a&b" }), "/x/?q=a%26b");
  assert.equal(withQuery("/x/?document=a.txt", { after: 7 }), "/x/?document=a.txt&after=7");
  assert.equal(withQuery("/x/", {}), "/x/");
});
