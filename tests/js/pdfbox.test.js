// The box the review card draws around a quote on its PDF page (static/js/pdfbox.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { boxOf } from "../../static/js/pdfbox.js";

const layer = {
  start: 100, // the page begins at offset 100 of the parse
  runs: [
    [0, 10, 1000, 2000, 11000, 3000], // line 1: ten characters, 1000 units each
    [11, 21, 1000, 4000, 11000, 5000], // line 2
  ],
};

test("a quote inside one line is boxed from its first to its last character", () => {
  assert.deepEqual(boxOf(layer, 102, 105), [3000, 2000, 6000, 3000]);
});

test("a quote across two lines is boxed around both", () => {
  assert.deepEqual(boxOf(layer, 105, 115), [1000, 2000, 11000, 5000]);
});

test("a quote on no run of the page has no box", () => {
  assert.equal(boxOf(layer, 50, 60), null);
  assert.equal(boxOf(layer, 110, 111), null); // the line break between the runs
});
