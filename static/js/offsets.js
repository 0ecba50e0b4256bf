/* Offsets: the server counts code points; JavaScript strings count UTF-16 units. Each page
   knows its start (code points) and its text, so a DOM position inside a page becomes
   page.start + cpLength(page.text.slice(0, units)), and back with unitsAt. Which page holds
   an offset is pageOf. Every page module counts with these; none counts by itself. No DOM
   here: tests/js runs these in Node. */

/* The length of s in code points. */
export function cpLength(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/* UTF-16 index of code point `cp` in s. */
export function unitsAt(s, cp) {
  let i = 0, n = 0;
  while (n < cp && i < s.length) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
    n++;
  }
  return i;
}

/* UTF-16 indexes of ascending code-point offsets in s, walking the text once. */
export function unitIndexes(s, points) {
  const units = [];
  let i = 0, cp = 0;
  for (const p of points) {
    while (cp < p && i < s.length) {
      const c = s.charCodeAt(i);
      i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
      cp++;
    }
    units.push(i);
  }
  return units;
}

/* The first index in ascending `sorted` whose value is not below x (sorted.length if none). */
export function lowerBound(sorted, x) {
  let lo = 0, hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The 1-based page holding code-point `offset`, from the pages' ascending start offsets: the
   last page starting at or before it; page 1 for an offset before the first start. */
export function pageOf(starts, offset) {
  let lo = 0, hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid] <= offset) lo = mid + 1;
    else hi = mid;
  }
  return Math.max(1, lo);
}
