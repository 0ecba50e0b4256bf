"""PDF view benchmark: a 1,000-page PDF drawn page by page, against the text view's page fetch.

Why it exists: the targets are that the first page of a 1,000-page PDF be drawn with its
text layer in under 1 s (p95), that any page reached by "go to" be drawn in under 1 s (p95), that
rendering be cached and shared, done by workers where heavy, and bounded in memory. This
starts the stack itself on 127.0.0.1 (a database ``gw_pdfview_bench`` of its own, created
afresh; Redis db 3, emptied; production settings; gunicorn with 2 workers and one Celery
worker), uploads a 1,000-page PDF (built with fpdf2, cached in ``bench/.cache``) through the
API, lets the worker parse it (pypdf as the reference, pdfium for the view) and pre-draw its
first pages, then measures, as one client in sequence:

- **first page**: ``pdf/`` (page sizes) + page 1's image + page 1's text layer, what the
  browser needs before page 1 is drawn with a selectable text layer. *Cold*: the page cache
  emptied before each trial (the image is drawn in the request); *warm*: drawn already (by the
  worker, or an earlier reader).
- **go to page N**: page N's image + text layer, N random over the document; cold (never
  drawn) and warm (the same pages again).
- **peer, same run**: the extracted-text view's fetch of the same pages
  (``parses/{reference}/pages/?from=N&to=N``), what it needs to show page N.

Memory: the web workers' resident size before and after drawing 300 cold pages, and the page
cache's size on disk against its budget (``GROUNDWORK_PAGE_CACHE_MB``, set to 40 here so the
300 pages overflow it and pruning shows).

Run: ``.venv/bin/python bench/pdf_view_bench.py [--trials 40] [--pages 1000]``. The client
runs on the same cores as the server, so its own CPU time is inside every latency here.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import _services as svc
import requests

DATABASE = "gw_pdfview_bench"
REDIS_DB = 3
CACHE_MB = 40
WS = "bench"
PASSWORD = "bench-password-1"
WORDS = re.findall(
    r"\w+",
    """leave policy remote manager approval employee contract notice period salary
review annual budget office travel expense claim report training safety record access
system data backup incident response benefit pension holiday""",
)


def make_pdf(pages: int) -> Path:
    """A ``pages``-page PDF of numbered paragraphs (cached: fpdf2 takes a while)."""
    path = svc.CACHE / f"pdf-view-{pages}.pdf"
    if path.exists():
        return path
    from fpdf import FPDF

    rng = random.Random(15)
    pdf = FPDF()
    font = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    pdf.add_font("DejaVu", fname=str(font))
    for n in range(1, pages + 1):
        pdf.add_page()
        pdf.set_font("DejaVu", size=16)
        pdf.cell(0, 10, f"Section {n}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("DejaVu", size=10)
        for p in range(6):
            words = " ".join(rng.choice(WORDS) for _ in range(60))
            pdf.multi_cell(
                0, 5, f"{n}.{p + 1} {words.capitalize()}.", new_x="LMARGIN", new_y="NEXT"
            )
            pdf.ln(2)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def seed() -> None:
    from django.contrib.auth import get_user_model

    from evalsets.workspaces import services as workspaces_services

    user = get_user_model().objects.create_user(username="owner", password=PASSWORD)
    workspace = workspaces_services.workspace_create(user=user, slug=WS, name="Bench")
    workspaces_services.workspace_update(
        workspace=workspace,
        parser_settings={"parsers": {"pdf": ["pypdf", "pdfium"]}, "reference": {"pdf": "pypdf"}},
    )


def rss_mb(stack: svc.Stack, kind: str = "web") -> float:
    """Resident memory of every live process of ``kind`` the stack started, in MB."""
    groups = {p.pid for p in stack.processes if p.poll() is None and stack.kinds[p.pid] == kind}
    total = 0
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) not in groups:
                continue
            for line in (status.parent / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total / 1024


def folder_mb(path: Path) -> float:
    if not path.exists():
        return 0.0
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1024 / 1024


def timed(sessions: list[requests.Session], steps: list[list[str]]) -> float:
    """Milliseconds to fetch ``steps`` one after another, the URLs of a step at once (as the
    browser fetches a page's image and its text layer together)."""
    started = time.perf_counter()
    for urls in steps:
        with ThreadPoolExecutor(max_workers=len(urls)) as pool:
            for response in pool.map(
                lambda pair: pair[0].get(pair[1], timeout=60), zip(sessions, urls, strict=False)
            ):
                response.raise_for_status()
                response.content  # noqa: B018  (read the body: the browser does)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--trials", type=int, default=40)
    args.add_argument("--pages", type=int, default=1000)
    options = args.parse_args()

    started = time.perf_counter()
    pdf = make_pdf(options.pages)
    print(
        f"{options.pages}-page PDF: {pdf.stat().st_size / 1e6:.1f} MB "
        f"(built in {time.perf_counter() - started:.1f} s or cached)",
        flush=True,
    )
    env = svc.prepare(DATABASE, REDIS_DB)
    env["GROUNDWORK_PAGE_CACHE_MB"] = str(CACHE_MB)
    env["GROUNDWORK_PAGE_CACHE_DIR"] = str(svc.CACHE / "page-cache")
    page_cache = Path(env["GROUNDWORK_PAGE_CACHE_DIR"])
    shutil.rmtree(page_cache, ignore_errors=True)
    seed()

    with svc.Stack(env) as stack:
        base = stack.gunicorn(workers=2)
        stack.celery_workers(1)
        session = requests.Session()
        token = session.post(
            f"{base}/api/auth/token/", json={"username": "owner", "password": PASSWORD}
        ).json()["token"]
        session.headers["Authorization"] = f"Token {token}"
        second = requests.Session()
        second.headers["Authorization"] = f"Token {token}"
        sessions = [session, second]
        api = f"{base}/api/workspaces/{WS}"

        t0 = time.perf_counter()
        with pdf.open("rb") as handle:
            session.post(
                f"{api}/documents/", files={"file": ("big.pdf", handle)}
            ).raise_for_status()
        parsed = {}
        while len(parsed) < 2:
            for p in session.get(f"{api}/documents/big.pdf/parses/").json()["results"]:
                if p["status"] == "failed":
                    sys.exit(f"{p['parser']} failed: {p.get('error')}")
                if p["status"] == "ready" and p["parser"] not in parsed:
                    parsed[p["parser"]] = (time.perf_counter() - t0, p["id"])
            time.sleep(0.5)
        deadline = time.monotonic() + 120
        while not (page_cache.exists() and any(page_cache.rglob("3@1.5.jpg"))):
            if time.monotonic() > deadline:
                sys.exit("the worker did not pre-draw the first pages within 120 s")
            time.sleep(0.2)
        predrawn = time.perf_counter() - t0
        reference = parsed["pypdf"][1]
        pdf_api = f"{api}/documents/big.pdf/pdf/"
        info = session.get(pdf_api).json()
        pages = info["page_count"]
        box_file = (svc.CACHE / "media" / "parses" / WS / f"{info['parse']}.boxes").stat().st_size
        print(
            f"ready after upload (one worker, one parse at a time): pypdf "
            f"{parsed['pypdf'][0]:.1f} s, pdfium {parsed['pdfium'][0]:.1f} s (its boxes: "
            f"{box_file / 1e6:.1f} MB for {pages} pages), first pages pre-drawn "
            f"{predrawn:.1f} s; load {svc.load_average()}",
            flush=True,
        )

        v = info["version"]

        def page_urls(n: int) -> list[list[str]]:
            return [[f"{pdf_api}pages/{n}/image?scale=1.5&v={v}", f"{pdf_api}pages/{n}/text/"]]

        def text_url(n: int) -> list[list[str]]:
            return [[f"{api}/documents/big.pdf/parses/{reference}/pages/?from={n}&to={n}"]]

        rng = random.Random(3)
        rows = []
        rss_before = rss_mb(stack)

        warm_first = [timed(sessions, [[pdf_api], *page_urls(1)]) for _ in range(options.trials)]
        cold_first = []
        for _ in range(options.trials):
            shutil.rmtree(page_cache, ignore_errors=True)
            cold_first.append(timed(sessions, [[pdf_api], *page_urls(1)]))
        text_first = [timed(sessions, text_url(1)) for _ in range(options.trials)]
        targets = rng.sample(range(2, pages + 1), options.trials)
        cold_goto = [timed(sessions, page_urls(n)) for n in targets]
        warm_goto = [timed(sessions, page_urls(n)) for n in targets]
        text_goto = [timed(sessions, text_url(n)) for n in targets]

        for name, values in (
            ("first page, PDF view, warm (worker pre-drew it)", warm_first),
            ("first page, PDF view, cold (drawn in the request)", cold_first),
            ("first page, text view (peer)", text_first),
            ('"go to" page N, PDF view, cold', cold_goto),
            ('"go to" page N, PDF view, warm', warm_goto),
            ('"go to" page N, text view (peer)', text_goto),
        ):
            rows.append(
                [
                    name,
                    len(values),
                    svc.percentile(values, 50),
                    svc.percentile(values, 95),
                    max(values),
                ]
            )
        print()
        print(svc.table(["ms per page shown", "n", "p50", "p95", "max"], rows))

        # Memory: 300 more cold pages through the web workers, then their size and the cache's.
        more = rng.sample(range(1, pages + 1), 300)
        for n in more[:150]:
            timed(sessions, page_urls(n))
        rss_half = rss_mb(stack)
        for n in more[150:]:
            timed(sessions, page_urls(n))
        rss_after = rss_mb(stack)
        print()
        print(
            svc.table(
                ["memory", "MB"],
                [
                    ["web workers' RSS (2 gunicorn workers) before the page requests", rss_before],
                    ["... after 150 more pages (most drawn in the request)", rss_half],
                    ["... after 300 more pages", rss_after],
                    [
                        f"page cache on disk (budget {CACHE_MB} MB, pruned every 25 writes)",
                        folder_mb(page_cache),
                    ],
                ],
            )
        )


if __name__ == "__main__":
    os.chdir(svc.ROOT)
    main()
