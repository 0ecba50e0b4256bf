// The offset helpers every page counts with (static/js/offsets.js): the server counts code
// points, JavaScript strings UTF-16 units, and an anchor is only right if the two agree.
import assert from "node:assert/strict";
import { test } from "node:test";

import { cpLength, lowerBound, pageOf, unitIndexes, unitsAt } from "../../static/js/offsets.js";

const FACE = "\u{1F600}"; // one code point, two UTF-16 units
const MIXED = "a" + FACE + "b\u00e9" + FACE + "\n" + FACE;

test("it counts a character outside the BMP as one code point", () => {
  assert.equal(cpLength("abc"), 3);
  assert.equal(cpLength("a" + FACE + "b"), 3);
  assert.equal(cpLength(""), 0);
});

test("it counts a lone surrogate as one code point, as Python does", () => {
  assert.equal(cpLength("a\ud83d"), 2);
  assert.equal(cpLength("\ude00b"), 2);
});

test("it finds the UTF-16 index of a code point", () => {
  assert.equal(unitsAt("a" + FACE + "b", 0), 0);
  assert.equal(unitsAt("a" + FACE + "b", 1), 1);
  assert.equal(unitsAt("a" + FACE + "b", 2), 3);
  assert.equal(unitsAt("a" + FACE + "b", 3), 4);
});

test("it stops at the end of the text for a code point past it", () => {
  assert.equal(unitsAt("ab", 9), 2);
});

test("it maps every code point there and back", () => {
  for (let cp = 0; cp <= cpLength(MIXED); cp++) {
    assert.equal(cpLength(MIXED.slice(0, unitsAt(MIXED, cp))), cp, "code point " + cp);
  }
});

test("it maps ascending code points to units in one walk, as one by one", () => {
  const points = [0, 1, 2, 3, 4, 5, 6, 7];
  assert.deepEqual(unitIndexes(MIXED, points), points.map((p) => unitsAt(MIXED, p)));
  assert.deepEqual(unitIndexes("a" + FACE + "b" + FACE, [0, 1, 2, 3, 4]), [0, 1, 3, 4, 6]);
});

test("it finds the first index not below a value", () => {
  assert.equal(lowerBound([1, 3, 3, 7], 0), 0);
  assert.equal(lowerBound([1, 3, 3, 7], 3), 1);
  assert.equal(lowerBound([1, 3, 3, 7], 4), 3);
  assert.equal(lowerBound([1, 3, 3, 7], 8), 4);
  assert.equal(lowerBound([], 1), 0);
});

test("it names the page whose start is the last at or before an offset", () => {
  const starts = [0, 10, 20];
  assert.equal(pageOf(starts, 0), 1);
  assert.equal(pageOf(starts, 9), 1);
  assert.equal(pageOf(starts, 10), 2);
  assert.equal(pageOf(starts, 19), 2);
  assert.equal(pageOf(starts, 20), 3);
  assert.equal(pageOf(starts, 10_000), 3);
});

test("it answers page 1, never nothing, before the first page or without pages", () => {
  assert.equal(pageOf([5, 10], 2), 1);
  assert.equal(pageOf([], 7), 1);
});

test("it skips empty pages that start where the next one does", () => {
  // A page with no text starts at the same offset as the page after it: the offset is there.
  assert.equal(pageOf([0, 4, 4, 9], 4), 3);
  assert.equal(pageOf([0, 4, 4, 9], 3), 1);
});
