"""The README and docs/ say only what is true of the tree they ship in.

Docs drift silently: a link to a page that moved, a setting added without a line anywhere, a
benchmark flag renamed. Each check here reads the Markdown and the code it describes, so the
drift fails a test instead of misleading the next reader.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, ROOT / "bench" / "README.md", *DOCS]
#: Where environment variables are read: the settings, and the archive limits (read before
#: Django's settings exist, by the parsing child process too).
ENV_READERS = [ROOT / "labelling" / "settings.py", ROOT / "evalsets" / "pure" / "archive.py"]
ENV_CALLS = {"env_str", "env_int", "env_bool", "env_list", "env_rate", "get", "getenv", "read"}
#: The first screen of a terminal or a repository page: both commands must be on it.
FIRST_SCREEN_LINES = 25
#: A page another branch writes; linked before it lands, checked once it exists.
WRITTEN_ELSEWHERE = {ROOT / "docs" / "operations.md"}

LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
BENCH_COMMAND = re.compile(r"\bbench/(\w+\.py)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")
#: A row of measurements (three decimals or more: "29.8  95.1  144.0", "99.85% | 0.07% | 10.6x")
#: and the dashed rule under a printed table's header.
MEASURED_ROW = re.compile(r"(\d+\.\d+\D+){2}\d+\.\d+")
COLUMN_RULE = re.compile(r"^-{8,}\s+-{4,}")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", text, re.M)}


def _links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    return [m.group(1) for m in LINK.finditer(text)]


def _broken_link(page: Path, link: str) -> str | None:
    """Why `link` on `page` leads nowhere, or None when it leads somewhere real."""
    if re.match(r"^[a-z]+:", link):
        return None  # an address on the web; not this tree's to check
    path, _, fragment = link.partition("#")
    target = (page.parent / path).resolve() if path else page
    if not target.exists():
        return None if target in WRITTEN_ELSEWHERE else f"{link}: no file {target}"
    if fragment and target.suffix == ".md" and fragment not in _anchors(target):
        return f"{link}: no heading with anchor #{fragment} in {target.name}"
    return None


def _env_names(source: Path) -> set[str]:
    """The environment variables `source` reads: the first argument of its env helpers."""
    names = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0]
        value = first.value if isinstance(first, ast.Constant) else None
        if name in ENV_CALLS and isinstance(value, str) and re.fullmatch(r"[A-Z][A-Z0-9_]+", value):
            names.add(value)
    return names


def _bench_flag_problems(page: Path) -> list[str]:
    """Each benchmark a code block runs must exist, with every flag given to it, and every
    flag a "Flags:" paragraph lists must be one of the block's scripts' own."""
    problems: list[str] = []
    scripts: list[Path] = []
    paragraph: list[str] = []
    for block in re.split(r"\n\s*\n", page.read_text()):
        if block.lstrip().startswith("```"):
            scripts = []
            for line in block.splitlines():
                for name in BENCH_COMMAND.findall(line):
                    script = ROOT / "bench" / name
                    if not script.exists():
                        problems.append(f"{line.strip()}: no bench/{name}")
                        continue
                    scripts.append(script)
                    source = script.read_text()
                    problems += [
                        f"{line.strip()}: bench/{name} has no {flag}"
                        for flag in FLAG.findall(line)
                        if f'"{flag}"' not in source
                    ]
        elif block.startswith("Flags:"):
            paragraph = FLAG.findall(block)
            sources = "".join(script.read_text() for script in scripts)
            problems += [
                f"Flags: {flag} is in none of {scripts}"
                for flag in paragraph
                if f'"{flag}"' not in sources
            ]
    return problems


def test_every_relative_link_in_the_docs_leads_to_a_file_and_heading_that_exist():
    broken = [
        f"{page.relative_to(ROOT)}: {why}"
        for page in PAGES
        for link in _links(page)
        if (why := _broken_link(page, link))
    ]

    assert not broken, "\n".join(broken)


def test_the_readme_shows_make_run_and_make_test_on_its_first_screen():
    first_screen = "\n".join(README.read_text().splitlines()[:FIRST_SCREEN_LINES])

    assert re.search(r"^make run\b", first_screen, re.M), first_screen
    assert re.search(r"^make test\b", first_screen, re.M), first_screen


def test_every_environment_variable_the_settings_read_is_documented():
    documented = "\n".join(page.read_text() for page in DOCS)
    read = set().union(*(_env_names(source) for source in ENV_READERS))
    undocumented = sorted(name for name in read if not re.search(rf"\b{name}\b", documented))

    assert len(read) > 40, f"found only {sorted(read)}: has the way settings read changed?"
    assert not undocumented, "read in the code, named in no page of docs/: " + ", ".join(
        undocumented
    )


def test_every_benchmark_command_in_the_docs_exists_with_the_flags_it_is_given():
    pages = [ROOT / "docs" / "benchmarks.md", README, ROOT / "bench" / "README.md"]
    problems = [problem for page in pages for problem in _bench_flag_problems(page)]

    assert not problems, "\n".join(problems)


def test_the_docs_paste_no_benchmark_tables():
    """Benchmarks print their tables; a pasted one is a dated figure passed off as current."""
    pasted = [
        f"{page.relative_to(ROOT)}: {line.strip()}"
        for page in PAGES
        for line in page.read_text().splitlines()
        if not BENCH_COMMAND.search(line) and (MEASURED_ROW.search(line) or COLUMN_RULE.match(line))
    ]

    assert not pasted, "\n".join(pasted)
