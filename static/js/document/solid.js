/* How the rendered view (HTML, Markdown, Word drawn as they look) lines up with the reference
   parse's text: by "solid" characters, those that are not white space. A section of the view
   says which of its solid characters are which of the parse's, as runs [rendered, parse,
   length] of solid-character indexes (evalsets/rendering.py), so a selection counted in solid
   characters maps to parse offsets and a parse span maps back to pieces of the section.
   No DOM here: tests/js runs these in Node. */
import { lowerBound } from "../offsets.js";

// White space, the same characters as evalsets/rendering.py WHITE (Python's str.isspace).
// eslint-disable-next-line no-control-regex -- \x1c-\x1f are white space to Python, and so here
const WHITE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

const isHigh = (c) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c) => c >= 0xdc00 && c <= 0xdfff;

/* How many solid code points s holds. */
export function countSolid(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    if (i > 0 && isLow(s.charCodeAt(i)) && isHigh(s.charCodeAt(i - 1))) continue;
    if (!WHITE.test(s[i])) n++;
  }
  return n;
}

/* For each solid code point of s, its code-point offset in s. */
export function solidOffsets(s) {
  const out = [];
  let cp = 0;
  for (let i = 0; i < s.length; i++) {
    const pair = isHigh(s.charCodeAt(i)) && i + 1 < s.length && isLow(s.charCodeAt(i + 1));
    if (!WHITE.test(s[i])) out.push(cp);
    if (pair) i++;
    cp++;
  }
  return out;
}

/* UTF-16 index in s of its k-th solid code point (s.length when there are fewer). */
export function unitOfSolid(s, k) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    if (i > 0 && isLow(s.charCodeAt(i)) && isHigh(s.charCodeAt(i - 1))) continue;
    if (!WHITE.test(s[i])) { if (n === k) return i; n++; }
  }
  return s.length;
}

/* UTF-16 index in s just after its k-th solid code point. */
export function unitAfterSolid(s, k) {
  const i = unitOfSolid(s, k);
  if (i >= s.length) return s.length;
  return isHigh(s.charCodeAt(i)) && i + 1 < s.length ? i + 2 : i + 1;
}

/* The solid ranges [a, b) of a section that show the parse span [start, end) (code points).
   `payload` is the section as the API sends it (parse_start, parse_end, runs); `offsets` is
   solidOffsets(payload.parse_text). */
export function piecesOf(payload, offsets, start, end) {
  if (payload.parse_start == null || end <= payload.parse_start || start >= payload.parse_end) return [];
  const lo = lowerBound(offsets, start - payload.parse_start);
  const hi = lowerBound(offsets, end - payload.parse_start);
  const out = [];
  for (const [ri, pj, n] of payload.runs) {
    const a = Math.max(lo, pj), b = Math.min(hi, pj + n);
    if (a < b) out.push([ri + a - pj, ri + b - pj]);
  }
  return out;
}

/* The parse's solid index where a selection starting at the section's a-th solid character
   begins: the first one shown at or after it; null when nothing from there is in the parse. */
export function parseSolidFrom(runs, a) {
  for (const [ri, pj, n] of runs) if (ri + n > a) return pj + Math.max(0, a - ri);
  return null;
}

/* The parse's solid index of the last character a selection ending before the section's b-th
   solid character takes in; null when nothing before it is in the parse. */
export function parseSolidUpTo(runs, b) {
  let last = null;
  for (const [ri, pj, n] of runs) if (ri < b) last = pj + Math.min(n, b - ri) - 1;
  return last;
}
