// The rendered view's alignment helpers (static/js/document/solid.js): the view and the
// reference parse are tied by their solid (non-white-space) characters, counted as the
// server counts them (evalsets/rendering.py, Python's str.isspace).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  countSolid,
  parseSolidFrom,
  parseSolidUpTo,
  piecesOf,
  solidOffsets,
  unitAfterSolid,
  unitOfSolid,
} from "../../static/js/document/solid.js";

const FACE = "\u{1F600}";
// Every code point Python's str.isspace() is true for (the whole of Unicode).
const PYTHON_SPACE = [
  ...range(0x09, 0x0d), ...range(0x1c, 0x20), 0x85, 0xa0, 0x1680, ...range(0x2000, 0x200a),
  0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
];

function range(first, last) {
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

test("it counts as white space exactly what Python does", () => {
  for (const cp of PYTHON_SPACE) assert.equal(countSolid(String.fromCodePoint(cp)), 0, cp.toString(16));
  // JavaScript's \s says these are white space; Python, and so the server, does not.
  for (const cp of [0xfeff, 0x200b, 0x180e]) assert.equal(countSolid(String.fromCodePoint(cp)), 1, cp.toString(16));
});

test("it counts solid code points, a surrogate pair as one", () => {
  assert.equal(countSolid("a b\tc\n"), 3);
  assert.equal(countSolid(FACE + " x"), 2);
  assert.equal(countSolid(""), 0);
});

test("it gives each solid character its code-point offset", () => {
  assert.deepEqual(solidOffsets("a " + FACE + "b"), [0, 2, 3]);
  assert.deepEqual(solidOffsets("  "), []);
});

test("it finds the UTF-16 index of a solid character and the index after it", () => {
  const s = "a " + FACE + "b";
  assert.equal(unitOfSolid(s, 0), 0);
  assert.equal(unitOfSolid(s, 1), 2);
  assert.equal(unitAfterSolid(s, 1), 4); // after both halves of the pair
  assert.equal(unitOfSolid(s, 2), 4);
  assert.equal(unitAfterSolid(s, 2), 5);
});

test("it answers the end of the text for a solid character past the last", () => {
  assert.equal(unitOfSolid("a b", 5), 3);
  assert.equal(unitAfterSolid("a b", 5), 3);
});

// A section whose parse text is "ab cd" from offset 100: solid characters a b c d.
const PARSE = { parse_text: "ab cd", parse_start: 100, parse_end: 105 };
const OFFSETS = solidOffsets(PARSE.parse_text);

test("it maps a parse span to the section's solid ranges", () => {
  const same = { ...PARSE, runs: [[0, 0, 4]] };
  assert.deepEqual(piecesOf(same, OFFSETS, 100, 105), [[0, 4]]);
  assert.deepEqual(piecesOf(same, OFFSETS, 103, 105), [[2, 4]]);
});

test("it leaves out of a span what the view does not show", () => {
  // The view shows a b, then d; the parse's c is not in it.
  const gap = { ...PARSE, runs: [[0, 0, 2], [2, 3, 1]] };
  assert.deepEqual(piecesOf(gap, OFFSETS, 100, 105), [[0, 2], [2, 3]]);
  assert.deepEqual(piecesOf(gap, OFFSETS, 103, 105), [[2, 3]]);
  assert.deepEqual(piecesOf(gap, OFFSETS, 103, 104), []);
});

test("it maps nothing for a span outside the section or a section outside the parse", () => {
  const same = { ...PARSE, runs: [[0, 0, 4]] };
  assert.deepEqual(piecesOf(same, OFFSETS, 0, 100), []);
  assert.deepEqual(piecesOf(same, OFFSETS, 105, 200), []);
  assert.deepEqual(piecesOf({ parse_start: null, runs: [] }, [], 0, 10), []);
});

test("it maps a selection in the view to the parse's solid characters", () => {
  const gap = [[0, 0, 2], [2, 3, 1]];
  assert.equal(parseSolidFrom(gap, 0), 0);
  assert.equal(parseSolidFrom(gap, 2), 3);
  assert.equal(parseSolidUpTo(gap, 3), 3);
  assert.equal(parseSolidUpTo(gap, 2), 1);
});

test("it maps a selection of text the parse leaves out to nothing", () => {
  // The view's first two solid characters are not in the parse.
  const late = [[2, 0, 2]];
  assert.equal(parseSolidUpTo(late, 2), null);
  assert.equal(parseSolidFrom([[0, 0, 2]], 5), null);
});
