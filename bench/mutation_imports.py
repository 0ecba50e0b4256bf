"""Mutation testing of the import side: do the import tests notice when a reader is wrong?

Runs mutmut over the readers in `evalsets/pure/formats/` and over
`evalsets/releases/imports.py`, with only the import tests (`tests/test_imports.py`,
`tests/test_format_readers.py`) deciding whether a mutant is caught, and prints killed / total
with every survivor named. With `--suite resolver` it does the same for the quote resolver's
rules (`RESOLVER`), judged by `tests/test_resolver.py` alone, with `--suite lease` for the
resolving lease (`LEASE`), judged by `tests/test_coalesce.py`, and with `--suite budget` for the
import budget (`BUDGET`), judged by the import tests and `tests/test_import_budget.py`, and with
`--suite limits` for quotas and throttles (`LIMITS`), judged by `tests/test_quotas.py` and
`tests/test_throttles.py`.

It works in a scratch copy (`var/mutation/imports/`, git-ignored) so the checkout never
gets a `mutants/` folder and the project's own configuration is not touched: the copy gets
a `[tool.mutmut]` section of its own. Mutants are limited to the reading functions (the
writers are the export side's), by default to the functions where past import defects lived
(`FOCUSED`; `--all` takes every reader); `--jobs` bounds the CPU it takes (default 1).

    .venv/bin/python bench/mutation_imports.py            # run, then print the figure
    .venv/bin/python bench/mutation_imports.py --report   # print the last run's figure
    .venv/bin/python bench/mutation_imports.py --recheck  # today's tests on its survivors
    .venv/bin/python bench/mutation_imports.py --suite resolver --jobs 2
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "var" / "mutation" / "imports"  # `--work` names another, to keep a run
MUTMUT = ROOT / ".venv" / "bin" / "mutmut"

#: Every function that reads a file or plans an import, by module (`*`: all of it). About
#: 3,500 mutants: some three hours with one job on this machine (`--all`).
READERS: dict[str, tuple[str, ...]] = {
    "evalsets/pure/formats/reading.py": (
        "whole_number",
        "decode_text",
        "csv_reader",
        "delimiter_hint",
        "spreadsheet_marked",
    ),
    "evalsets/pure/formats/locating.py": (
        "all_occurrences",
        "locate_quote",
        "anchor_from_span",
        "trimmed_span",
        "anchor_from_context",
        "span_from_context",
        "check_span_text",
    ),
    "evalsets/pure/formats/results.py": (
        "check_duplicates",
        "ǁPendingLabelǁplaced",
        "ǁPendingLabelǁspan_in",
    ),
    "evalsets/pure/formats/deepset.py": (
        "question_id",
        "filters_pairs",
        "read",
        "_read_row",
        "_offsets",
        "_filters",
        "_group",
        "_label",
        "_placed",
        "_quote",
    ),
    "evalsets/pure/formats/legalbench.py": ("*",),
    "evalsets/pure/formats/contextgrid_jsonl.py": (
        "read",
        "_read_header",
        "item_from_record",
        "_anchor",
        "_int_field",
    ),
    "evalsets/pure/formats/contextgrid_csv.py": ("match_columns", "read", "_row_item", "_number"),
    "evalsets/pure/formats/beir.py": ("read", "_qrels", "_read_queries", "_read_qrels"),
    "evalsets/releases/imports.py": ("*",),
}
#: The default run: the reading and planning code where past import defects lived (number
#: spellings, filters, placing labels through their context, LegalBench answers and paths,
#: what each format carries, evidence identity, review). About 440 mutants, ~50 minutes
#: with one job on the shared 2-core machine.
FOCUSED: dict[str, tuple[str, ...]] = {
    "evalsets/pure/formats/reading.py": ("whole_number",),
    "evalsets/pure/formats/locating.py": (
        "anchor_from_context",
        "span_from_context",
        "trimmed_span",
        "check_span_text",
    ),
    "evalsets/pure/formats/deepset.py": ("question_id", "filters_pairs", "_offsets", "_filters"),
    "evalsets/pure/formats/legalbench.py": (
        "_parts",
        "_is_tail",
        "path_matches",
        "match_path",
        "ǁ_Matcherǁ__call__",
    ),
    "evalsets/releases/imports.py": (
        "ǁCarriesǁnarrowed",
        "_meta",
        "_file_fields",
        "_changes",
        "_plan_anchors",
        "_review",
        "ǁEvidenceǁsame",
    ),
}
TESTS = ["tests/test_imports.py", "tests/test_format_readers.py", "tests/test_import_fidelity.py"]
#: The resolver's rules added in 1.6 (lines laid out as rows, lines moved, ends refit, the
#: context folded next to the quote and cut placeholders left out), with the 1.4-1.5 rules
#: they call, and 1.7's (lines of symbols alone, a section number at one end, a table's
#: context counted over both sides), 1.8's (symbols between the quote's other lines, the
#: context's lines folded next to the quote) and 1.9's (edge lines read just outside a fuzzy
#: span, a short edge fixed by a context with letters, a literal copy cutting a word, an end
#: refit to the row recorded next to the quote).
#: About 1,100 mutants.
RESOLVER: dict[str, tuple[str, ...]] = {
    "evalsets/pure/resolver.py": (
        "ǁPreparedTextǁ_by_pieces",
        "ǁPreparedTextǁ_line_start",
        "ǁPreparedTextǁ_place_rows",
        "ǁPreparedTextǁ_moved_lines",
        "ǁPreparedTextǁ_refit_ends",
        "ǁ_Contextǁ__init__",
        "ǁ_Contextǁ_fold",
        "_lines_fit",
        "_holds_all",
        "_place_pieces",
        "ǁPreparedTextǁ_symbol_lines_moved",
        "ǁPreparedTextǁ_by_copies",
        "_symbol_line",
        "_fixes_ends",
        "_rows_context_fits",
        "ǁPreparedTextǁ_with_symbols_between",
        "ǁ_Contextǁlines",
        "_folded_lines",
        "ǁPreparedTextǁ_with_edge_lines",
        "_telling",
        "ǁPreparedTextǁresolve",
        "ǁPreparedTextǁ_splits_word",
        "ǁPreparedTextǁ_cut_edges",
        "ǁPreparedTextǁ_splits_number",
        "_word_edge",
        "ǁPreparedTextǁ_row_at",
        "ǁ_Contextǁrows",
        "ǁPreparedTextǁ_rewrapped_only",
    ),
}
#: The resolving lease: one ``resolve_document`` task at a time per document.
LEASE: dict[str, tuple[str, ...]] = {
    "evalsets/anchoring/resolution.py": (
        "resolve_pending",
        "_take_resolving",
        "_held_by",
        "_renew_resolving",
        "resolve_in_parse",
    ),
}
#: The import budget: the problems, lines and questions one file may cost before reading stops.
BUDGET: dict[str, tuple[str, ...]] = {
    "evalsets/pure/formats/results.py": (
        "ǁImportResultǁadd",
        "ǁImportResultǁcount_lines",
        "ǁImportResultǁcheck_items",
    ),
    "evalsets/pure/formats/reading.py": ("physical_lines",),
}
#: What a user or workspace may hold and how fast it may ask: quotas and per-user throttles.
LIMITS: dict[str, tuple[str, ...]] = {
    "evalsets/workspaces/quotas.py": (
        "check_workspace_count",
        "check_document_count",
        "stored_bytes",
        "check_room",
        "check_releases_today",
        "_wait",
    ),
    "evalsets/api/throttles.py": (
        "rate_setting",
        "ǁScopedThrottleǁallow_request",
        "ǁScopedThrottleǁget_rate",
        "ǁScopedThrottleǁthrottle_failure",
    ),
}
#: Which functions and which tests, per suite: (every function, the default run, the tests).
SUITES = {
    "imports": (READERS, FOCUSED, TESTS),
    "resolver": (RESOLVER, RESOLVER, ["tests/test_resolver.py"]),
    "lease": (LEASE, LEASE, ["tests/test_coalesce.py"]),
    "budget": (BUDGET, BUDGET, [*TESTS, "tests/test_import_budget.py"]),
    "limits": (LIMITS, LIMITS, ["tests/test_quotas.py", "tests/test_throttles.py"]),
}


def patterns(selection: dict[str, tuple[str, ...]]) -> list[str]:
    """mutmut mutant-name globs (`evalsets.pure.formats.deepset.x_read__mutmut_*`)."""
    found = []
    for path, names in selection.items():
        module = path.removesuffix(".py").replace("/", ".")
        for name in names:
            if name == "*":
                found.append(f"{module}.*")
            elif name.startswith("ǁ"):
                found.append(f"{module}.x{name}__mutmut_*")
            else:
                found.append(f"{module}.x_{name}__mutmut_*")
    return found


#: Which tests a run selects by marker (`--mark` narrows it, e.g. to tests without a database).
MARK = "not services and not e2e"


def prepare(selection: dict[str, tuple[str, ...]], tests: list[str]) -> None:
    """A fresh copy of the tracked files (as they are in the working tree) plus config."""
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            target = WORK / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (WORK / ".venv").symlink_to(ROOT / ".venv")
    only = ", ".join(f'"{path}"' for path in selection)
    chosen = ", ".join(f'"{arg}"' for arg in [*tests, "-m", MARK])
    with (WORK / "pyproject.toml").open("a", encoding="utf-8") as config:
        config.write(
            "\n[tool.mutmut]\n"
            'source_paths = ["evalsets"]\n'
            f"only_mutate = [{only}]\n"
            'also_copy = ["labelling", "templates", "static", "manage.py", "bench"]\n'
            f"pytest_add_cli_args_test_selection = [{chosen}]\n"
            # Tables from the models, not the migrations: each mutant is a fresh test session.
            'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", "--tb=no", '
            '"--no-migrations"]\n'
        )


def run(jobs: int, selection: dict[str, tuple[str, ...]], tests: list[str]) -> int:
    prepare(selection, tests)
    command = [str(MUTMUT), "run", "--max-children", str(jobs), *patterns(selection)]
    return subprocess.run(command, cwd=WORK, check=False).returncode


def report(selection: dict[str, tuple[str, ...]]) -> int:
    listed = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"],
        cwd=WORK,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    wanted = [re.compile(re.escape(p).replace(r"\*", ".*") + "$") for p in patterns(selection)]
    by_module: dict[str, Counter] = {}
    survivors = []
    for line in listed.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if not name or not any(p.match(name) for p in wanted) or status == "not checked":
            continue
        module = name.split(".x", 1)[0]
        by_module.setdefault(module, Counter())[status] += 1
        if status != "killed":
            survivors.append(f"{name}: {status}")
    print(f"{'module':38} {'killed':>7} {'total':>6} {'score':>7}")
    killed = total = 0
    for module, counts in sorted(by_module.items()):
        done = sum(counts.values())
        killed, total = killed + counts["killed"], total + done
        print(f"{module:38} {counts['killed']:7d} {done:6d} {counts['killed'] / done:7.1%}")
    score = killed / total if total else 0.0
    print(f"{'all':38} {killed:7d} {total:6d} {score:7.1%}")
    print(f"\nkilled/total: {killed}/{total}")
    if survivors:
        print(f"\n{len(survivors)} not killed (`mutmut show NAME` in {WORK.relative_to(ROOT)}):")
        print("\n".join(f"  {line}" for line in survivors))
    return 0


def recheck(selection: dict[str, tuple[str, ...]], tests: list[str]) -> int:
    """Run today's tests against each mutant the last run left alive.

    Tests written after a run are not in mutmut's record of which tests cover what, so a
    survivor is checked again by applying it to today's source in the copy (`mutmut
    apply`), running today's tests there, and restoring the file. Only meaningful for
    functions unchanged since the run; rerun changed ones with `--only`.
    """
    listed = subprocess.run(
        [str(MUTMUT), "results"], cwd=WORK, check=True, capture_output=True, text=True
    ).stdout
    wanted = [re.compile(re.escape(p).replace(r"\*", ".*") + "$") for p in patterns(selection)]
    survivors = [
        name
        for name, _, status in (line.strip().rpartition(": ") for line in listed.splitlines())
        if name and status != "not checked" and any(p.match(name) for p in wanted)
    ]
    # Today's code and tests; a survivor's function must be unchanged since the run, since
    # `mutmut apply` swaps that one function for its mutant in today's module.
    for folder in ("evalsets", "tests"):
        shutil.copytree(ROOT / folder, WORK / folder, dirs_exist_ok=True)
    python = str(ROOT / ".venv" / "bin" / "python")
    args = ["-m", "pytest", *tests, "-m", MARK, "-x", "-q", "--tb=no"]
    args += ["-p", "no:cacheprovider", "--no-migrations"]
    if subprocess.run([python, *args], cwd=WORK, capture_output=True).returncode:
        print("the tests fail on today's code without any mutant; fix that first")
        return 1
    alive = []
    for name in survivors:
        source = WORK / (name.split(".x", 1)[0].replace(".", "/") + ".py")
        original = source.read_bytes()
        subprocess.run([str(MUTMUT), "apply", name], cwd=WORK, check=True, capture_output=True)
        try:
            caught = subprocess.run([python, *args], cwd=WORK, capture_output=True).returncode
        finally:
            source.write_bytes(original)
        print(f"  {'killed' if caught else 'ALIVE '} {name}")
        if not caught:
            alive.append(name)
    print(f"\nrecheck: {len(survivors) - len(alive)} of {len(survivors)} survivors now killed")
    return 0


def main() -> int:
    global WORK, MARK
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--report", action="store_true", help="only print the last run")
    parser.add_argument("--all", action="store_true", help="every reader, not only the focus")
    parser.add_argument(
        "--recheck", action="store_true", help="run the current tests on the last survivors"
    )
    parser.add_argument("--suite", choices=SUITES, default="imports", help="what to mutate")
    parser.add_argument("--work", type=Path, help=f"scratch folder (default {WORK}, per suite)")
    parser.add_argument(
        "--only", nargs="+", metavar="MODULE:FUNCTION", help="just these, e.g. base.py:whole_number"
    )
    parser.add_argument("--tests", nargs="+", help="judge with these test files instead")
    parser.add_argument(
        "--mark",
        help=f'and only tests of this marker expression (default "{MARK}"), e.g. '
        '"not django_db and not services and not e2e" for a quick run of pure rules',
    )
    args = parser.parse_args()
    every, focused, tests = SUITES[args.suite]
    tests = args.tests or tests
    if args.mark:
        MARK = args.mark
    selection = every if args.all else focused
    if args.only:
        selection = {}
        for entry in args.only:
            module, _, name = entry.partition(":")
            path = next(p for p in every if p.endswith("/" + module))
            selection.setdefault(path, ())
            selection[path] += (name,)
    WORK = args.work.resolve() if args.work else WORK.parent / args.suite
    if args.recheck:
        return recheck(selection, tests)
    if not args.report:
        run(args.jobs, selection, tests)
    return report(selection)


if __name__ == "__main__":
    sys.exit(main())
