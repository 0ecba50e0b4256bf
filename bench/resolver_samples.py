"""Ours + context over many samples of one `resolver_bench.py` suite, passage by passage.

    .venv/bin/python bench/resolver_samples.py pdf --save /tmp/new.json
    .venv/bin/python bench/resolver_samples.py pdf --save /tmp/new.json --compare /tmp/old.json
    .venv/bin/python bench/resolver_samples.py pdf --seeds 7,11,23,42 --time 5

The same suites, truth, scoring and targets as `resolver_bench.py`, without the peers and the
timing (about 30 s for 38 PDF samples against 45 minutes with them): a line per sample, the
pooled line, and with `--compare` every passage whose outcome (right, wrong, miss, false
alarm) differs from a run saved by another resolver version. That is how a rule is weighed
before it is taken: what it turns right, and what it turns wrong. With `--time N` it also
prints ours + context's CPU time per anchor (prepare included, the least of N passes with
garbage collection off, as `resolver_bench.py` times it), to compare two versions run one
after the other on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resolver_bench import (
    SUITES,
    TARGETS,
    best_of,
    build_suite,
    outcome,
    run_ours,
    suite_documents,
)

from evalsets.pure.resolver import RESOLVER_VERSION

#: The 38 PDF samples the resolver 1.6-1.10 rules were weighed over.
SAMPLES = "1,2,3,5,7,11,23,42,100-109,200-209,300-309"


def seeds_of(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        out += range(int(first), int(last or first) + 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("suite", choices=list(SUITES))
    parser.add_argument("--seeds", default=SAMPLES, help=f"default {SAMPLES}")
    parser.add_argument("--save", type=Path, help="write every passage's outcome here (JSON)")
    parser.add_argument("--compare", type=Path, help="a saved run to list the changes against")
    parser.add_argument(
        "--time",
        type=int,
        default=0,
        metavar="N",
        help="also time ours + context: the least CPU time of N passes per sample, ms/anchor",
    )
    args = parser.parse_args()
    docs = suite_documents(args.suite)
    least, most = TARGETS[args.suite]
    runs: dict[str, list[list]] = {}
    pooled: Counter = Counter()
    met = Counter()
    timed: list[float] = []
    print(f"resolver {RESOLVER_VERSION}, suite {args.suite}, ours + context")
    for seed in seeds_of(args.seeds):
        cases, _ = build_suite(docs, SUITES[args.suite][1], seed)
        resolutions: list = []
        spans = run_ours(docs, cases, resolutions=resolutions)
        if args.time:
            _, ms = best_of(partial(run_ours, docs, cases), len(cases), args.time)
            timed.append(ms)
        runs[str(seed)] = [
            [outcome(c, s), r.status, r.reason]
            for c, s, r in zip(cases, spans, resolutions, strict=True)
        ]
        n = Counter(o for o, _, _ in runs[str(seed)])
        survivors = n["right"] + n["wrong"] + n["miss"]
        recall, wrong = n["right"] / survivors, n["wrong"] / survivors
        met.update(
            recall=recall >= least, wrong=wrong <= most, both=recall >= least and wrong <= most
        )
        pooled.update(n)
        print(
            f"seed {seed:>4}: recall {recall:7.2%}, wrong {wrong:6.3%} ({n['wrong']}), "
            f"{n['miss']} missed, {n['false alarm']} false alarms"
        )
    survivors = pooled["right"] + pooled["wrong"] + pooled["miss"]
    print(
        f"{len(runs)} samples: recall >= {least:.1%} on {met['recall']}, wrong <= {most:.1%} on "
        f"{met['wrong']}, both on {met['both']}; pooled recall {pooled['right'] / survivors:.3%}, "
        f"wrong {pooled['wrong'] / survivors:.3%}; {pooled['false alarm']} false alarms"
    )
    if timed:
        print(
            f"ours + context, least of {args.time} passes: {sum(timed) / len(timed):.4f} ms per "
            f"anchor on average, {min(timed):.4f}-{max(timed):.4f} over the samples"
        )
    if args.save:
        args.save.write_text(json.dumps({"version": RESOLVER_VERSION, "runs": runs}))
    if args.compare:
        before = json.loads(args.compare.read_text())
        changes: Counter = Counter()
        for seed, outcomes in runs.items():
            # a seed the saved run lacks compares nothing
            was_run = before["runs"].get(seed, [])
            for i, (now, was) in enumerate(zip(outcomes, was_run, strict=False)):
                if now[0] != was[0]:
                    changes[(was[0], now[0])] += 1
                    print(f"  seed {seed} passage {i}: {was[0]} ({was[2]}) -> {now[0]} ({now[2]})")
        print(
            f"against {before['version']}: "
            + (", ".join(f"{n} {a} -> {b}" for (a, b), n in changes.most_common()) or "no change")
        )


if __name__ == "__main__":
    main()
