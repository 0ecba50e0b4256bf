"""Mutation testing of the export path: runs mutmut and prints killed / total per function.

    .venv/bin/python bench/mutation.py            # run, then print the table
    .venv/bin/python bench/mutation.py --report   # print the table of the last run only

mutmut (pinned in requirements.txt) is configured in setup.cfg (`[mutmut]`): it
copies `evalsets/` into `mutants/` (git-ignored), mutates the export modules, and runs only
`tests/test_formats.py`, `tests/test_releases.py` and `tests/test_format_meaning.py` against
each mutant. `FUNCTIONS` below restricts the run to the export writers and the
release/bridge code that feeds them; the readers in the same modules belong to the import
suite. Surviving mutants are listed with `mutmut show NAME`; each is killed by a test or
explained in the record
(``git show b7b8f47:bench/README.md``, "Mutation testing").
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

ROOT = Path(__file__).resolve().parent.parent

#: Mutant-name patterns (mutmut's mangled names) of the functions under test.
FUNCTIONS = (
    # deepset writers
    "evalsets.pure.formats.deepset.x__answer_in*",
    "evalsets.pure.formats.deepset.x__context*",
    "evalsets.pure.formats.deepset.x__evidence*",
    "evalsets.pure.formats.deepset.x__filters_cell*",
    "evalsets.pure.formats.deepset.x__json*",
    "evalsets.pure.formats.deepset.x__rows*",
    "evalsets.pure.formats.deepset.x__scalar*",
    "evalsets.pure.formats.deepset.x__write__*",
    "evalsets.pure.formats.deepset.x_resolved_positions*",
    "evalsets.pure.formats.deepset.x_write_*",
    "evalsets.pure.formats.deepset.xǁ_Rowǁ*",
    "evalsets.pure.formats.deepset.xǁ_Talliesǁordered*",
    # BEIR ids, the CSV formula policy
    "evalsets.pure.formats.beir.x_unreadable_id*",
    "evalsets.pure.formats.beir.x_check_ids*",
    "evalsets.pure.formats.writing.x_looks_like_formula*",
    "evalsets.pure.formats.writing.x_spreadsheet_safe*",
    "evalsets.pure.formats.writing.x_formula_tally*",
    "evalsets.pure.formats.contextgrid_csv.x_write_for_spreadsheets*",
    # what each file means to its reader: anchors in the reader's terms, checked with it
    "evalsets.pure.formats.landing.*",
    "evalsets.pure.formats.locating.x_unique_passage*",
    "evalsets.pure.formats.locating.x__back_over_space*",
    "evalsets.pure.formats.locating.x__on_over_space*",
    "evalsets.pure.formats.beir.x_write*",
    "evalsets.pure.formats.contextgrid_jsonl.x_write*",
    "evalsets.releases.services.xǁ_Freezerǁ_for_reader*",
    "evalsets.releases.services.xǁ_Freezerǁ_text*",
    # positions and review, from the tables to the writers
    "evalsets.releases.bridge.x_review_meta*",
    "evalsets.releases.bridge.x_anchor_span*",
    "evalsets.releases.services.x__approval*",
    "evalsets.releases.services.x__where_missing*",
    "evalsets.releases.services.xǁ_Unplacedǁ*",
    "evalsets.releases.services.xǁ_Frozenǁ*",
)


def _metas() -> list[Path]:
    return sorted((ROOT / "mutants" / "evalsets").rglob("*.meta"))


def recheck_survivors() -> None:
    """Forget every verdict but "killed", so mutants that survived meet today's tests.

    mutmut keeps a verdict while the mutated function is unchanged, even when a test was
    added since to kill it; a killed mutant stays killed when tests are only added.
    """
    for meta in _metas():
        data = json.loads(meta.read_text())
        codes = data["exit_code_by_key"]
        for name, code in codes.items():
            if code is not None and status_by_exit_code[code] != "killed":
                codes[name] = None
        meta.write_text(json.dumps(data, indent=4))


def run() -> None:
    recheck_survivors()
    mutmut = str(Path(sys.executable).with_name("mutmut"))
    subprocess.run([mutmut, "run", "--max-children", "2", *FUNCTIONS], cwd=ROOT, check=False)


def report() -> int:
    by_function: dict[str, Counter] = {}
    survivors: list[str] = []
    unchecked = 0
    for meta in _metas():
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for name, code in codes.items():
            if not any(fnmatch.fnmatch(name, p) for p in FUNCTIONS):
                continue
            if code is None:
                unchecked += 1
                continue
            function = name.rsplit("__mutmut_", 1)[0]
            status = status_by_exit_code[code]
            by_function.setdefault(function, Counter())[status] += 1
            if status != "killed":
                survivors.append(f"{name}: {status}")
    if not by_function:
        print("no results: run `.venv/bin/python bench/mutation.py` first")
        return 1
    print(f"{'function':<64} {'killed':>7} {'total':>6}")
    killed = total = 0
    for function, counts in sorted(by_function.items()):
        n = sum(counts.values())
        killed += counts["killed"]
        total += n
        print(f"{function:<64} {counts['killed']:>7} {n:>6}")
    print(f"{'TOTAL':<64} {killed:>7} {total:>6}")
    print(f"\nmutation score: {killed} killed / {total} total ({unchecked} not checked yet)")
    for line in survivors:
        print("  not killed:", line)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--report", action="store_true", help="only print the last run")
    if not parser.parse_args().report:
        run()
    sys.exit(report())
