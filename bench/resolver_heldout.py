"""Held-out benchmark of `evalsets.pure.resolver`: every shipped parser pair, split by document.

Run as `.venv/bin/python bench/resolver_heldout.py` (`--help` for the flags).

Corpus: `bench/resolver_heldout_corpus.py` -- 99 real documents in three batches, read by
every parser the product ships, frozen by checksum in `bench/resolver_heldout_manifest.json`.
The first batch (43: 21 PDF excerpts in seven languages and scripts, 14 HTML pages in five
languages, 8 Word documents made from other real pages) was looked at while the resolver was
written; the second (22: 12 PDF excerpts, 6 HTML pages, 4 Word documents, from other packages)
and the third (34: 18 PDF excerpts, 10 HTML pages, 6 Word documents, from packages neither
earlier batch uses) were each frozen and measured before anyone looked at them. The second
put only 4 documents in its held-out half, the third 14. `--batch NAME` prints one batch
alone; a batch's absent passages are filled from its own documents, so its cases are the
same alone and in the whole corpus. Pairs: the reference parse to each other parse of its
kind, and the PDF view's pdfium parse back to the reference.

Split: a document is in the held-out half when the first byte of the sha256 of its id is odd,
else in the tuning half. The split is by document, so no passage of a held-out document was
seen while a rule was chosen; every figure is printed for both halves.

Quotes: word runs of varied length (3 to 60 words) sampled with a seeded generator (the seed is
the sha256 of pair and document) from the source parse, recorded as a highlight records them:
the page they start on, their occurrence on that page (`occurrence_at`), and 32 characters of
context either side.

Gold, independent of any resolver: both parses are split into words (NFKC + casefold) and
aligned (unique shared words as anchors, difflib between them: `resolver_bench.align_words`).
A quote survives when its first and last words align, at least 90% of its words align, in
order, within a span at most 1.3x the quote's words; its true span runs from the first to the
last aligned word. Quotes whose words moved outside that span or whose ends are not fixed by
the words (a slice of a table of digits) are left out and counted (`resolver_bench.moved_out`,
`loose_end`). A resolver's span is right when both ends are within 3 characters of the truth.

Absent passages, built to tempt: a real head of a passage of the document (30-60% of its
words) spliced onto the tail of a passage of another document of the same kind and batch
(80%), or a real passage's first and last words (15-25% each) around another document's
middle (bookends, 20%); a document alone of its kind, half and batch has none. Fillers whose
word trigrams are in the target are dropped. Passages the target lost (<= 30% of words
aligned, <= 20% of trigrams present, and at most 20% of the 8-character pieces of its words
run together found in the target's words run together, so a passage kept with its words
glued, a line inserted or a label dropped is not "lost") count as absent too. Any span
returned for an absent passage is a false alarm. Glyph placeholders (pdfminer's "(cid:12)",
pypdf's control character) are not words in either parse.

"Offered" counts surviving quotes a resolver did not find but for which it offered a passage
overlapping at least half of the true span (ours only: the peers offer nothing); "offered,
absent" counts absent passages for which it offered anything (noise).

`--show` lists every answer of ours that is not right; `--calibrate` prints a table of the
tuning half for each threshold at values around its chosen one; `--ablate` weighs each rule.

CPU time (this process, `time.process_time`) per anchor includes each resolver's per-parse
set-up: our `prepare()`, context-grid's `ParsedDocument`, the naive baseline's collapsing;
the least of `--repeats` passes, the resolvers taking turns pass by pass.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import resolver_heldout_corpus as corpus
from resolver_bench import (
    LENGTHS,
    TOLERANCE,
    _anchor,
    align_words,
    best_of,
    loose_end,
    make_cg,
    moved_out,
    outcome,
    run_ours,
    tokens,
)

import evalsets.pure.resolver as resolver_module
from evalsets.pure.resolver import RESOLVER_VERSION, RULES, THRESHOLDS, Rules, Thresholds

HALVES = ("tuning", "held-out")
#: Surviving quotes sampled per document and pair; absent passages are a fifth of that.
PER_DOC = 60
#: Share of absent passages built as bookends (the rest are real heads on foreign tails).
BOOKENDS = 0.2


def half_of(doc_id: str) -> str:
    """The half a document is in: fixed by its id alone, never by what it contains."""
    return HALVES[hashlib.sha256(doc_id.encode("utf-8")).digest()[0] % 2]


def _rng(*parts: str) -> random.Random:
    return random.Random(hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest())


# ---------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------


def pair_documents(docs: list[dict], pair: tuple[str, str, str]) -> list[dict]:
    """The corpus documents of the pair's kind, as resolver_bench's suites shape them."""
    kind, source, target = pair
    out = []
    for doc in docs:
        if doc["kind"] != kind:
            continue
        a, b = doc["parses"][source], doc["parses"][target]
        out.append(
            {
                "id": doc["id"],
                "a": a["text"],
                "a_pages": a["page_starts"] if kind == "pdf" else None,
                "b": b["text"],
                "b_pages": b["page_starts"] if kind == "pdf" else None,
                "markdown": target == "markitdown",
                "batch": doc.get("batch"),
            }
        )
    return out


def _trigrams(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[k : k + 3]) for k in range(len(words) - 2)}


def _presence(words: list[str], trigrams: set) -> float:
    grams = [tuple(words[k : k + 3]) for k in range(len(words) - 2)] or [tuple(words)]
    return sum(g in trigrams for g in grams) / len(grams)


#: Characters in a piece of a passage's words run together (`_squashed_presence`).
SQUASHED_GRAM = 8


def _squashed_presence(squashed: str, target: str) -> float:
    """The share of the `SQUASHED_GRAM`-character pieces of a passage's words run together
    found in the target's words run together: a passage the target keeps with its words
    glued ("majorpartoftheadditions"), a line of another column put between two of its
    lines, or a label line dropped is not lost, though few of its words align."""
    k = SQUASHED_GRAM
    pieces = {squashed[i : i + k] for i in range(len(squashed) - k + 1)} or {squashed}
    return sum(piece in target for piece in pieces) / len(pieces)


def _survivor(
    doc: dict, ta: list, tb: list, mapping: dict, i: int, j: int
) -> tuple[str, dict | None]:
    """Whether the quote of source words i..j survives in the target, with its gold span."""
    n = j - i + 1
    mapped = [mapping.get(k) for k in range(i, j + 1)]
    got = [m for m in mapped if m is not None]
    words = [w for w, _, _ in ta[i : j + 1]]
    target_words = [w for w, _, _ in tb]
    anchor = _anchor(doc, ta, i, j)
    if doc["a_pages"] is None:
        anchor["page_hint"] = None
    ends = mapped[0] is not None and mapped[-1] is not None
    if (
        ends
        and len(got) >= 0.9 * n
        and got == sorted(got)
        and mapped[-1] - mapped[0] + 1 <= 1.3 * n + 5
    ):
        if moved_out(words, mapped, target_words):
            return "left out: reordered", None
        if loose_end(words, mapped, target_words):
            return "left out: span end not fixed by the words", None
        return "survives", {**anchor, "truth": (tb[mapped[0]][1], tb[mapped[-1]][2])}
    if len(got) <= 0.3 * n and _presence(words, _trigrams(target_words)) <= 0.2:
        # the alignment can miss a copy whose words the target splits or joins otherwise
        # ("infor-\nmation", words without spaces): one with the same letters is not lost
        squashed = "".join(words)
        if squashed in doc["squashed"] or _squashed_presence(squashed, doc["squashed"]) > 0.2:
            return "left out: present with other word breaks", None
        return "lost", {**anchor, "truth": None}
    return "left out: partly aligned", None


def _filler(rng: random.Random, other: dict, words: int, target_grams: set) -> str | None:
    toks = tokens(other["a"])
    if len(toks) <= words + 1:
        return None
    o = rng.randrange(0, len(toks) - words)
    text = other["a"][toks[o][1] : toks[o + words - 1][2]]
    if _presence([w for w, _, _ in toks[o : o + words]], target_grams) > 0.2:
        return None
    return text


def _tempting(
    rng: random.Random, doc: dict, other: dict, ta: list, target_grams: set
) -> dict | None:
    """One absent passage: a real head on a foreign tail, or real bookends round a foreign
    middle. The page hint, occurrence and context are those of the real words."""
    n = rng.choice(LENGTHS[5:])
    if len(ta) <= n + 1:
        return None
    i = rng.randrange(0, len(ta) - n)
    src = doc["a"]
    if rng.random() < BOOKENDS:
        k = max(1, round(n * rng.uniform(0.15, 0.25)))
        middle = _filler(rng, other, n - 2 * k, target_grams)
        if middle is None:
            return None
        head = src[ta[i][1] : ta[i + k - 1][2]]
        tail = src[ta[i + n - k][1] : ta[i + n - 1][2]]
        anchor = _anchor(doc, ta, i, i + n - 1)
        anchor["quote"] = f"{head} {middle} {tail}"
        kind = "bookends"
    else:
        k = max(2, round(n * rng.uniform(0.3, 0.6)))
        tail = _filler(rng, other, n - k, target_grams)
        if tail is None:
            return None
        anchor = _anchor(doc, ta, i, i + k - 1)
        anchor["quote"] = f"{src[ta[i][1] : ta[i + k - 1][2]]} {tail}"
        anchor["suffix"] = ""
        kind = "spliced head"
    anchor["occurrence"] = 0
    if doc["a_pages"] is None:
        anchor["page_hint"] = None
    return {**anchor, "truth": None, "kind": kind}


def _filler_source(docs: list[dict], d_index: int) -> dict | None:
    """The document whose words fill a document's absent passages: the next one of its own
    batch, so a batch added later changes no case of an older one, and a batch printed
    alone (`--batch`) has the cases it has in the whole corpus."""
    batch = docs[d_index].get("batch")
    same = [k for k, d in enumerate(docs) if d.get("batch") == batch]
    if len(same) < 2:
        return None
    return docs[same[(same.index(d_index) + 1) % len(same)]]


def build_cases(docs: list[dict], pair_name: str, per_doc: int) -> tuple[list[dict], Counter]:
    """Sampled quotes over the pair's documents, each with `truth` (gold span) or None."""
    cases: list[dict] = []
    counts: Counter = Counter()
    for d_index, doc in enumerate(docs):
        rng = _rng(pair_name, doc["id"])
        ta, tb = tokens(doc["a"]), tokens(doc["b"], doc["markdown"])
        if not ta or not tb:
            counts["left out: empty parse"] += 1
            continue
        mapping = align_words([w for w, _, _ in ta], [w for w, _, _ in tb])
        doc["squashed"] = "".join(w for w, _, _ in tb)
        for _ in range(per_doc):
            n = rng.choice(LENGTHS)
            if len(ta) <= n:
                continue
            i = rng.randrange(0, len(ta) - n)
            kind, case = _survivor(doc, ta, tb, mapping, i, i + n - 1)
            counts[kind] += 1
            if case is not None:
                cases.append({**case, "doc": d_index, "kind": kind})
        other = _filler_source(docs, d_index)
        grams = _trigrams([w for w, _, _ in tb])
        for _ in range(per_doc // 5 if other is not None else 0):
            case = _tempting(rng, doc, other, ta, grams)
            counts[case["kind"] if case else "left out: filler present"] += 1
            if case is not None:
                cases.append({**case, "doc": d_index})
    return cases, counts


# ---------------------------------------------------------------------------
# the naive baseline
# ---------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def _collapsed(text: str) -> tuple[str, list[int]]:
    """`text` with each whitespace run made one space, and where each character came from."""
    parts, where, last = [], [], 0
    for m in _SPACE.finditer(text):
        parts.append(text[last : m.start()])
        where.extend(range(last, m.start()))
        parts.append(" ")
        where.append(m.start())
        last = m.end()
    parts.append(text[last:])
    where.extend(range(last, len(text)))
    where.append(len(text))
    return "".join(parts), where


def run_naive(docs: list[dict], cases: list[dict]) -> list:
    """`str.find` of the whitespace-collapsed quote in the whitespace-collapsed parse, from
    the hinted page's start, skipping `occurrence` copies."""
    collapsed: dict[int, tuple[str, list[int]]] = {}
    out = []
    for c in cases:
        doc = docs[c["doc"]]
        if c["doc"] not in collapsed:
            collapsed[c["doc"]] = _collapsed(doc["b"])
        text, where = collapsed[c["doc"]]
        quote = " ".join(c["quote"].split())
        page, starts = c["page_hint"], doc["b_pages"]
        first = starts[page - 1] if page and starts and page <= len(starts) else 0
        begin = next((k for k, w in enumerate(where) if w >= first), 0) if first else 0
        pos = text.find(quote, begin)
        for _ in range(c["occurrence"]):
            pos = text.find(quote, pos + 1) if pos != -1 else -1
        out.append(
            None if pos == -1 or not quote else (where[pos], where[pos + len(quote) - 1] + 1)
        )
    return out


# ---------------------------------------------------------------------------
# scoring and tables
# ---------------------------------------------------------------------------


def _offered_right(case: dict, offered: tuple[int, int] | None) -> bool:
    truth = case["truth"]
    if truth is None or offered is None:
        return False
    overlap = min(truth[1], offered[1]) - max(truth[0], offered[0])
    return overlap >= 0.5 * (truth[1] - truth[0])


def tally(cases: list[dict], spans: list, offered: list | None = None) -> Counter:
    """Counts of one resolver over cases: right, wrong, miss, false alarm, absent, offered
    (the right passage, for a miss) and offered for an absent passage (noise, if many)."""
    n: Counter = Counter()
    for k, (c, span) in enumerate(zip(cases, spans, strict=True)):
        result = outcome(c, span)
        n[result] += 1
        if result == "miss" and offered is not None and _offered_right(c, offered[k]):
            n["offered"] += 1
        if result == "absent" and offered is not None and offered[k] is not None:
            n["offered absent"] += 1
    return n


def figures(n: Counter, cpu_s: float, anchors: int) -> dict:
    survivors = n["right"] + n["wrong"] + n["miss"]
    absent = n["false alarm"] + n["absent"]
    return {
        "survivors": survivors,
        "absent": absent,
        "right": n["right"],
        "wrong": n["wrong"],
        "miss": n["miss"],
        "false_alarms": n["false alarm"],
        "offered": n["offered"],
        "offered_absent": n["offered absent"],
        "recall": n["right"] / max(1, survivors),
        "cpu_s": cpu_s,
        "anchors": anchors,
        "ms_per_anchor": 1000 * cpu_s / max(1, anchors),
    }


def run_contenders(
    docs: list[dict], cases: list[dict], peers: bool, repeats: int
) -> tuple[dict[str, dict], list]:
    """Each resolver's figures over the cases (timed, set-up included), and our
    resolutions."""
    contenders: list[tuple[str, Callable]] = []
    if peers:
        contenders += [("naive", run_naive), ("context-grid", make_cg(False))]
    contenders.append(("ours", run_ours))
    # the timed passes take turns, resolver by resolver: a shared machine's speed drifts by a
    # fifth within minutes, and passes run one resolver after another left the whole drift
    # to whichever ran while it lasted
    answers: dict[str, list] = {}
    least = dict.fromkeys((name for name, _ in contenders), math.inf)
    for _ in range(max(1, repeats)):
        for name, fn in contenders:
            spans, ms = best_of(lambda fn=fn: fn(docs, cases), len(cases), 1)
            answers.setdefault(name, spans)
            least[name] = min(least[name], ms)
    resolutions: list = []
    run_ours(docs, cases, resolutions=resolutions)
    offered = [r.offered for r in resolutions]
    out = {}
    for name, _ in contenders:
        counts = tally(cases, answers[name], offered if name == "ours" else None)
        out[name] = figures(counts, least[name] * len(cases) / 1000, len(cases))
    return out, resolutions


def _clip(text: str, limit: int = 160) -> str:
    return repr(text if len(text) <= limit else f"{text[:limit]}...")


def listing(pair: str, docs: list[dict], cases: list[dict], resolutions: list) -> list[str]:
    """Each false alarm, wrong span and miss of ours, and each passage offered for an absent
    one: the document, the quote, what we answered and why, the gold span and the offer."""
    lines = []
    for c, r in zip(cases, resolutions, strict=True):
        result = outcome(c, r.span)
        if result in ("right", "absent") and not (result == "absent" and r.offered):
            continue
        label = "offered for an absent passage" if result == "absent" else result
        text = docs[c["doc"]]["b"]
        lines.append(
            f"- {label} | {pair} | {docs[c['doc']]['id']} | {c['kind']} | page "
            f"{c['page_hint']} occurrence {c['occurrence']} | {r.status} ({r.reason})"
        )
        lines.append(f"    quote  {_clip(c['quote'])}")
        for name, span in (("ours", r.span), ("gold", c["truth"]), ("offer", r.offered)):
            if span is not None:
                lines.append(f"    {name:<6} {span[0]}-{span[1]} {_clip(text[span[0] : span[1]])}")
        lines.append(f"    why    {r.detail}")
    return lines


def _row(pair: str, name: str, f: dict, peer: dict | None) -> str:
    speed = (
        f"{peer['ms_per_anchor'] / f['ms_per_anchor']:5.1f}x"
        if peer and f["ms_per_anchor"]
        else "    -"
    )
    wrong = f["wrong"] / max(1, f["survivors"])
    return (
        f"| {pair:<24} | {name:<12} | {f['survivors']:>5} | {f['recall']:7.2%} | {f['wrong']:>4} "
        f"({wrong:6.2%}) | {f['false_alarms']:>3} of {f['absent']:<4} | {f['offered']:>3} of "
        f"{f['miss']:<4} | {f['offered_absent']:>3} of {f['absent']:<4} | "
        f"{f['ms_per_anchor']:9.3f} | {speed} |"
    )


TABLE_HEAD = (
    "| pair                     | resolver     | quotes |  recall | wrong spans   | false alarms |"
    " offered    | offered, absent | ms/anchor | vs cg |\n"
    "|--------------------------|--------------|--------|---------|---------------|--------------|"
    "------------|-----------------|-----------|-------|"
)


def pooled(rows: list[dict]) -> dict:
    keys = (
        "survivors",
        "absent",
        "right",
        "wrong",
        "miss",
        "false_alarms",
        "offered",
        "offered_absent",
        "cpu_s",
        "anchors",
    )
    total = {k: sum(r[k] for r in rows) for k in keys}
    total["recall"] = total["right"] / max(1, total["survivors"])
    total["ms_per_anchor"] = 1000 * total["cpu_s"] / max(1, total["anchors"])
    return total


def run(
    docs: list[dict],
    per_doc: int = PER_DOC,
    peers: bool = True,
    repeats: int = 1,
    only_pairs: list[str] | None = None,
    log: Callable[[str], None] = print,
    show: bool = False,
) -> dict:
    """Every pair on both halves: {half: {pair: {resolver: figures}}}, tables printed; with
    `show`, each half's false alarms, wrong spans, misses and offers for absent passages."""
    results: dict = {half: {} for half in HALVES}
    for half in HALVES:
        shown: list[str] = []
        in_half = [d for d in docs if half_of(d["id"]) == half]
        log(f"\n### {half} half: {len(in_half)} documents")
        log(TABLE_HEAD)
        for pair in corpus.pairs():
            name = f"{pair[1]} -> {pair[2]}"
            if only_pairs and name not in only_pairs:
                continue
            pdocs = pair_documents(in_half, pair)
            if not pdocs:
                continue
            cases, counts = build_cases(pdocs, name, per_doc)
            figs, resolutions = run_contenders(pdocs, cases, peers, repeats)
            shown += listing(name, pdocs, cases, resolutions) if show else []
            results[half][name] = {**figs, "sampling": dict(counts), "documents": len(pdocs)}
            for rname, f in figs.items():
                log(_row(name, rname, f, figs.get("context-grid")))
        for rname in ("naive", "context-grid", "ours"):
            rows = [p[rname] for p in results[half].values() if rname in p]
            if rows:
                results[half].setdefault("overall", {})[rname] = pooled(rows)
        overall = results[half].get("overall", {})
        for rname, f in overall.items():
            log(_row("overall", rname, f, overall.get("context-grid")))
        if show:
            log(f"\nours on the {half} half, every answer not right:")
            log("\n".join(shown) or "(none)")
    return results


# ---------------------------------------------------------------------------
# the ledger: what each rule earns, measured by switching it off
# ---------------------------------------------------------------------------

#: How good an outcome is, to tell a passage a rule turns better from one it turns worse.
RANK = {"right": 2, "absent": 2, "miss": 1, "wrong": 0, "false alarm": 0}
LEDGER = Path(__file__).resolve().parent / "resolver_ledger.json"


def all_cases(docs: list[dict], per_doc: int) -> dict[str, list[tuple[list[dict], list[dict]]]]:
    """Every pair's documents and cases, per half (sampled once, reused by every variant)."""
    out: dict[str, list] = {half: [] for half in HALVES}
    for half in HALVES:
        in_half = [d for d in docs if half_of(d["id"]) == half]
        for pair in corpus.pairs():
            pdocs = pair_documents(in_half, pair)
            if pdocs:
                out[half].append((pdocs, build_cases(pdocs, f"{pair[1]} -> {pair[2]}", per_doc)[0]))
    return out


def _labelled(case: dict, resolution: Any) -> str:
    """A case's outcome, with ", offered" for a miss whose right passage is offered and for
    an absent passage offered anything."""
    result = outcome(case, resolution.span)
    offered = resolution.offered
    if (result == "miss" and _offered_right(case, offered)) or (
        result == "absent" and offered is not None
    ):
        return f"{result}, offered"
    return result


def ours_outcomes(
    cases_by_half: dict, rules: Rules, thresholds: Thresholds | None = None
) -> dict[str, list[str]]:
    """Ours' outcome on every case (`_labelled`), per half, with `rules` (and `thresholds`)
    in force."""
    saved = resolver_module.RULES, resolver_module.THRESHOLDS
    resolver_module.RULES = rules
    resolver_module.THRESHOLDS = thresholds or saved[1]
    try:
        out: dict[str, list[str]] = {}
        for half, groups in cases_by_half.items():
            out[half] = []
            for pdocs, cases in groups:
                resolutions: list = []
                run_ours(pdocs, cases, resolutions=resolutions)
                out[half] += map(_labelled, cases, resolutions)
        return out
    finally:
        resolver_module.RULES, resolver_module.THRESHOLDS = saved


def weigh(on: list[str], off: list[str]) -> dict:
    """What a rule does on one half: passages it turns better and worse, and the totals.
    Offers are weighed apart (an offer is not an answer): `offer_gain` is the misses it
    makes offer the right passage, less the absent passages it makes offer anything."""
    base_on, base_off = ([label.split(",")[0] for label in side] for side in (on, off))
    better = sum(RANK[a] > RANK[b] for a, b in zip(base_on, base_off, strict=True))
    worse = sum(RANK[a] < RANK[b] for a, b in zip(base_on, base_off, strict=True))
    # the base outcome of every passage, and how many of them carry an offer
    n_on = Counter(base_on) + Counter(label for label in on if "," in label)
    n_off = Counter(base_off) + Counter(label for label in off if "," in label)
    totals = {
        f"{k}_{side}": n[k]
        for k in ("right", "wrong", "false alarm", "miss, offered", "absent, offered")
        for side, n in (("on", n_on), ("off", n_off))
    }
    offer_gain = (n_on["miss, offered"] - n_off["miss, offered"]) - (
        n_on["absent, offered"] - n_off["absent, offered"]
    )
    return {
        "better": better,
        "worse": worse,
        "gain": better - worse,
        "offer_gain": offer_gain,
        **totals,
    }


def ablate(docs: list[dict], per_doc: int, log: Callable[[str], None] = print) -> dict:
    """Each rule of `Rules` switched off alone, on both halves; kept only when it gains on
    the held-out half (answers, or offers net of offers for absent passages), turns no
    held-out answer worse and adds no net offer noise there."""
    cases = all_cases(docs, per_doc)
    base = ours_outcomes(cases, RULES)
    # rules weighed before stay in the ledger, with the version that weighed them
    ledger = json.loads(LEDGER.read_text()) if LEDGER.exists() else {"rules": {}}
    log("| rule | tuning: better / worse, offers | held-out: better / worse, offers | kept |")
    log("|------|--------------------------------|----------------------------------|------|")
    for field in dataclasses.fields(Rules):
        if not getattr(RULES, field.name):
            continue
        off = ours_outcomes(cases, dataclasses.replace(RULES, **{field.name: False}))
        halves = {half: weigh(base[half], off[half]) for half in HALVES}
        held = halves["held-out"]
        gains = held["better"] > 0 or held["offer_gain"] > 0
        kept = gains and held["worse"] == 0 and held["offer_gain"] >= 0
        ledger["rules"][field.name] = {
            **halves,
            "held_out_gain": held["gain"],
            "kept": kept,
            "weighed_by": RESOLVER_VERSION,
            "per_doc": per_doc,
        }
        t = halves["tuning"]
        tuning = f"{t['better']} / {t['worse']}, {t['offer_gain']:+d}"
        held_out = f"{held['better']} / {held['worse']}, {held['offer_gain']:+d}"
        log(f"| {field.name} | {tuning} | {held_out} | {kept} |")
    return ledger


# ---------------------------------------------------------------------------
# calibration: each threshold tried at values around the chosen one, on the tuning half
# ---------------------------------------------------------------------------


def around(value: float) -> list[float]:
    """The values a threshold's calibration table tries: the chosen one and two either side
    (a share +-0.05 and +-0.1, kept within 0..1; a count or a length x0.5, x0.75, x1.25, x1.5,
    at least 1; another number +-10% and +-20%)."""
    if isinstance(value, int):
        tried = {max(1, round(value * f)) for f in (0.5, 0.75, 1, 1.25, 1.5)}
    elif 0 < value <= 1:
        tried = {round(min(1.0, max(0.0, value + d)), 2) for d in (-0.1, -0.05, 0, 0.05, 0.1)}
    else:
        tried = {round(value * f, 2) for f in (0.8, 0.9, 1, 1.1, 1.2)}
    return sorted(tried | {value})


CALIBRATION_HEAD = (
    "| value | recall | wrong | false alarms | right passage offered | offered, absent |\n"
    "|-------|--------|-------|--------------|-----------------------|-----------------|"
)


def calibration_row(value: object, labels: list[str], mark: str = "") -> str:
    """One row of a calibration table from `_labelled` outcomes."""
    n = Counter(label.split(",")[0] for label in labels)
    n_offers = Counter(labels)
    survivors = n["right"] + n["wrong"] + n["miss"]
    absent = n["absent"] + n["false alarm"]
    return (
        f"| {value}{mark} | {n['right'] / max(1, survivors):.2%} | {n['wrong']} | "
        f"{n['false alarm']} of {absent} | {n_offers['miss, offered']} of {n['miss']} | "
        f"{n_offers['absent, offered']} of {absent} |"
    )


def calibrate(docs: list[dict], per_doc: int, log: Callable[[str], None] = print) -> None:
    """For each threshold of `Thresholds`, a table of the tuning half at values around the
    chosen one (marked *), then both halves at the chosen values."""
    cases = all_cases(docs, per_doc)
    tuning = {"tuning": cases["tuning"]}
    base = ours_outcomes(cases, RULES)
    for field in dataclasses.fields(Thresholds):
        chosen = getattr(THRESHOLDS, field.name)
        log(f"\n`{field.name}` (chosen: {chosen}), tuning half")
        log(CALIBRATION_HEAD)
        for value in around(chosen):
            if value == chosen:
                log(calibration_row(value, base["tuning"], " *"))
                continue
            tried = dataclasses.replace(THRESHOLDS, **{field.name: type(chosen)(value)})
            try:
                labels = ours_outcomes(tuning, RULES, tried)["tuning"]
            except (ValueError, ZeroDivisionError) as error:
                log(f"| {value} | cannot run: {error} | | | | |")
                continue
            log(calibration_row(value, labels))
    log("\nboth halves at the chosen values")
    log(CALIBRATION_HEAD.replace("| value |", "| half  |", 1))
    for half in HALVES:
        log(calibration_row(half, base[half]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--per-doc", type=int, default=PER_DOC, help="quotes sampled per document and pair"
    )
    parser.add_argument(
        "--ours-only", action="store_true", help="skip the naive and context-grid rows"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="timed passes per row, the least kept"
    )
    parser.add_argument("--pair", action="append", help='only this pair, e.g. "pypdf -> pdfium"')
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--freeze",
        action="store_true",
        help="add to the manifest and the frozen parses the documents they lack",
    )
    parser.add_argument(
        "--ablate", action="store_true", help="switch each rule off alone and write the ledger"
    )
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="print each threshold's table on the tuning half around its chosen value (slow)",
    )
    parser.add_argument(
        "--show",
        action="store_true",
        help="list each false alarm, wrong span, miss and offer for an absent passage",
    )
    parser.add_argument(
        "--batch",
        choices=list(corpus.BATCHES),
        help="only this batch's documents (the ledger is then printed, not written)",
    )
    parser.add_argument(
        "--rule-off",
        action="append",
        default=[],
        choices=[f.name for f in dataclasses.fields(Rules)],
        help="print the tables with this rule of the resolver switched off (not --ablate)",
    )
    args = parser.parse_args()
    t0 = time.perf_counter()
    docs, drift = corpus.load(freeze=args.freeze)
    docs = [d for d in docs if args.batch in (None, d["batch"])]
    print(
        f"resolver {RESOLVER_VERSION}; right = both ends within {TOLERANCE} chars of the gold span"
    )
    batch = f" of batch {args.batch}" if args.batch else ""
    print(f"{len(docs)} documents{batch}; load average at start {os.getloadavg()[0]:.2f}")
    if args.rule_off:
        print(f"rules switched off: {', '.join(args.rule_off)}")
        resolver_module.RULES = dataclasses.replace(RULES, **dict.fromkeys(args.rule_off, False))
    if drift:
        print(f"WARNING: {len(drift)} parses differ from the manifest, figures are not comparable:")
        print("\n".join(f"  {d}" for d in drift))
    if args.ablate:
        ledger = ablate(docs, args.per_doc)
        if args.batch is None:
            LEDGER.write_text(json.dumps(ledger, indent=1, sort_keys=True) + "\n")
            print(f"ledger written to {LEDGER.name}")
        return
    if args.calibrate:
        calibrate(docs, args.per_doc)
        return
    results = run(docs, args.per_doc, not args.ours_only, args.repeats, args.pair, show=args.show)
    if args.json:
        args.json.write_text(
            json.dumps({"version": RESOLVER_VERSION, "results": results}, indent=1)
        )
    wall = time.perf_counter() - t0
    print(f"\nwall time {wall:.0f} s; load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
