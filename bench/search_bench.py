"""Search inside a 1,000-page, 50 MB document: the server's search against the browser's way.

The document page loads pages lazily, so the browser's own find sees only what is loaded. The
alternative to a server-side search is what a script in the page would have to do: fetch
every page from the pages API (50 pages a request, the most it gives) and scan the text. Both
run in the same process against the same gunicorn + PostgreSQL, one after the other, for the
same queries:

- a phrase on page 900 (in any case, across a line break): the whole text is scanned;
- a word with no hits: the whole text is scanned;
- a common word: the first 50 hits and a count up to 1,000.

The first search of the parse in a web process reads the text from PostgreSQL and prepares
it (``first search`` row); later ones come from the process's cache. Every gunicorn worker
is warmed once before timing, so the warm rows are what an annotator sees after the first.

    .venv/bin/python bench/search_bench.py [--pages 1000] [--page-kb 50] [--samples 20] [--as-pdf]

With ``--as-pdf`` the filler is as a PDF parser reads it (ligatures, words broken at lines' ends),
which the search then steps over: the price of that against the plain text is the difference.

The hostile rows come first, in this process and in CPU time (no server needed, ``--hostile-only``
runs just them): a text of ``a a a ...`` (``--hostile-mb``, 10 by default) and a 99-word query of
it that never matches, searched by the regular expression the search used to run (the query's
words with any run of whitespace between them, which tries every position anew) and by the
matcher it runs now (``evalsets.pure.textsearch``: one ``str.find`` over the copy with its runs of
whitespace written as one space), with the positions the new one examined.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time

import _services as svc
import requests

sys.path.insert(0, str(svc.ROOT))
from evalsets.pure import textsearch  # pure Python, no Django

DATABASE = "gw_search_bench"
REDIS_DB = 5
QUERIES = {
    "phrase on page 900": "the QUARTERLY zebra   audit",
    "no hits": "xylophone warranty",
    "common word": "revenue",
}


def seed(pages: int, page_kb: int, as_pdf: bool = False) -> tuple[str, str, str, int]:
    """A user with a token, a workspace and a document of ``pages`` pages; the phrase on 900."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from evalsets.documents import services as documents_services
    from evalsets.models import Document
    from evalsets.workspaces import services as workspaces_services

    user = get_user_model().objects.create_user("bench", password="bench-pass-1")
    token = Token.objects.create(user=user).key
    workspace = workspaces_services.workspace_create(user=user, slug="bench", name="Bench")
    filler = PDF_FILLER if as_pdf else "Revenue grew in every region and the board noted it. "
    texts, starts, at = [], [], 0
    for n in range(1, pages + 1):
        body = f"Page {n}. " + filler * (page_kb * 1024 // len(filler))
        if n == min(900, pages):
            body += "Here the quarterly\nzebra audit is described.\n"
        body += "\n"
        starts.append(at)
        at += len(body)
        texts.append(body)
    text = "".join(texts)
    doc = Document.objects.create(
        workspace=workspace, source_id="report.txt", sha256="3" * 64, size=len(text), kind="text"
    )
    parse = documents_services.parse_version_add(
        document=doc, parser="plaintext", parser_version="1", text=text, page_starts=starts
    )
    return token, str(parse.public_id), "report.txt", len(text)


#: Filler as a PDF parser reads a page: ligatures ("ﬁ") and words hyphenated across lines,
#: which a search must step over (``evalsets.pure.textsearch``) and a plain text does not have.
PDF_FILLER = "Revenue grew in every region; the board conﬁrmed the ﬁ-\ngures in its re-\nport. "


def server_search(session, base: str, parse: str, query: str) -> int:
    url = f"{base}/api/workspaces/bench/documents/report.txt/parses/{parse}/search/"
    response = session.get(url, params={"q": query, "limit": 50})
    response.raise_for_status()
    return response.json()["total"]


def browser_scan(session, base: str, parse: str, query: str, pages: int) -> int:
    """Fetch every page (50 a request) and scan the text as a page script would."""
    url = f"{base}/api/workspaces/bench/documents/report.txt/parses/{parse}/pages/"
    words = query.lower().split()
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)
    parts = []
    for first in range(1, pages + 1, 50):
        response = session.get(url, params={"from": first, "to": first + 49})
        response.raise_for_status()
        parts.extend(page["text"] for page in response.json()["pages"])
    return sum(1 for _ in pattern.finditer("".join(parts)))


#: The finding's query: 98 words of the text and one that is not in it.
HOSTILE_QUERY = " ".join(["a"] * 98 + ["b"])


def old_regex_search(text: str, query: str, limit: int = 1001) -> int:
    """Hits as the search counted them before: the query's words, any whitespace between,
    one regular expression run over the lowered text."""
    words = query.translate(textsearch._LOWER).split()
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    lowered = text.translate(textsearch._LOWER)
    return sum(1 for _ in zip(range(limit), pattern.finditer(lowered), strict=False))


def cpu_ms(fn) -> tuple[float, object]:
    t0 = time.process_time()
    result = fn()
    return (time.process_time() - t0) * 1000, result


def hostile_rows(megabytes: int) -> list[list]:
    """The old matcher and the new on the hostile input, in CPU time."""
    text = "a " * (megabytes * 1024 * 1024 // 2)
    old_ms, old_hits = cpu_ms(lambda: old_regex_search(text, HOSTILE_QUERY))
    prepare_ms, prepared = cpu_ms(lambda: textsearch.prepare_search(text))
    new_ms, found = cpu_ms(lambda: prepared.search(HOSTILE_QUERY))
    what = f"{megabytes} MB of 'a a a', 99-word query"
    return [
        [f"old: regular expression ({what})", f"{old_ms:,.0f}", "-", old_hits],
        [
            "new: prepare once per parse (lower, write runs as one space)",
            f"{prepare_ms:,.0f}",
            "-",
            "-",
        ],
        [
            f"new: str.find over the copy ({what})",
            f"{new_ms:,.1f}",
            f"{found.examined:,}",
            found.total,
        ],
    ]


def print_hostile(megabytes: int) -> None:
    print(f"hostile search, {megabytes} MB, in this process (CPU time):", flush=True)
    rows = hostile_rows(megabytes)
    print(svc.table(["matcher", "CPU ms", "positions examined", "hits"], rows), flush=True)
    print()


def timed(fn, samples: int) -> list[float]:
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--page-kb", type=int, default=50, help="size of each page (50 -> 50 MB)")
    parser.add_argument("--samples", type=int, default=20, help="timed searches per row (ours)")
    parser.add_argument("--peer-samples", type=int, default=3, help="timed scans per row (peer)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument(
        "--as-pdf",
        action="store_true",
        help="a text as a PDF parser reads it: ligatures and words broken at lines' ends",
    )
    parser.add_argument("--hostile-mb", type=int, default=10, help="size of the hostile text")
    parser.add_argument(
        "--hostile-only", action="store_true", help="only the hostile rows (no server needed)"
    )
    args = parser.parse_args()

    print_hostile(args.hostile_mb)
    if args.hostile_only:
        return
    env = svc.prepare(DATABASE, REDIS_DB)
    token, parse, _doc, length = seed(args.pages, args.page_kb, args.as_pdf)
    print(f"document: {args.pages:,} pages, {length / 1e6:.1f} M characters", flush=True)
    with svc.Stack(env) as stack:
        base = stack.gunicorn(workers=args.workers)
        session = requests.Session()
        session.headers["Authorization"] = f"Token {token}"
        # The first search in a fresh worker reads and prepares the text; then warm every worker.
        first = timed(lambda: server_search(session, base, parse, "zebra"), 1)[0]
        for _ in range(args.workers * 4):
            server_search(session, base, parse, "warm")
        rows = [["server: first search (reads, prepares)", 1, first, first, first, "-"]]
        for name, query in QUERIES.items():
            hits = server_search(session, base, parse, query)
            times = timed(lambda q=query: server_search(session, base, parse, q), args.samples)
            rows.append([f"server search: {name}", len(times), *_stats(times), hits])
        for name, query in QUERIES.items():
            hits = 0
            times = []
            for _ in range(args.peer_samples):
                t0 = time.perf_counter()
                hits = browser_scan(session, base, parse, query, args.pages)
                times.append((time.perf_counter() - t0) * 1000)
            rows.append([f"peer, fetch all pages + scan: {name}", len(times), *_stats(times), hits])
    print()
    print(
        svc.table(["path", "samples", "p50 ms", "p95 ms", "max ms", "hits (total)"], rows),
        flush=True,
    )
    print(f"load average after: {svc.load_average()}")


def _stats(times: list[float]) -> list[float]:
    return [statistics.median(times), svc.percentile(times, 95), max(times)]


if __name__ == "__main__":
    main()
