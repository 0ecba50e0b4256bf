"""A 50 MB HTML page and a 50 MB text file, as they look and as extracted text: same run.

Run: ``.venv/bin/python bench/rendered_view_bench.py`` (``--mb 50``, ``--skip-browser``).

Sets up a throwaway SQLite database and media folder under ``bench/.cache/rendered/``, uploads
two generated documents with tasks run in-process, and measures:

- **worker**: building and storing the HTML page's view (``renditions.rendition_build``, what
  the ``render_document`` task runs when the reference parse is ready), with the bytes stored;
- **server**: one request of what each view asks for first, and for the end of the document,
  through the whole Django stack (test client: no network), with the bytes it answers; the
  first request for the HTML view reads the stored view, and its peak Python memory is shown;
- **browser** (Chromium, Django's live server thread): from navigation to the first text on
  screen, and to the end of the document drawn; and for the text file, how long drawing a new
  highlight takes.

Peers in the same run: the HTML page's extracted-text view (its selectolax parse is one page,
so the text view loads all of it at once), and the same text file read as one page (what
plaintext 1, before form-feed pages, produced: uploaded here as a parse with ``[0]``).
Wall-clock times, median of ``--repeat`` runs; the machine is shared, so read them as sizes.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache" / "rendered"
sys.path.insert(0, str(ROOT))

WORDS = [
    "policy",
    "staff",
    "leave",
    "month",
    "year",
    "budget",
    "line",
    "report",
    "table",
    "figure",
    "section",
    "review",
    "approval",
    "director",
    "travel",
    "train",
    "journey",
    "hours",
    "remote",
    "work",
    "limit",
    "carry",
    "over",
    "settled",
    "pooled",
    "estimate",
    "variance",
    "sites",
    "results",
    "consistent",
    "correction",
    "applied",
    "annual",
    "quarterly",
    "region",
    "revenue",
]


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 18))]
    return " ".join(words).capitalize() + "."


def make_html(mb: float, rng: random.Random) -> bytes:
    parts = ["<html><head><title>Big</title></head><body>"]
    size, n = 0, 0
    while size < mb * 1024 * 1024:
        n += 1
        block = f"<h2>Section {n}</h2>" if n % 20 == 1 else ""
        block += f"<p>Paragraph {n}. " + " ".join(sentence(rng) for _ in range(5)) + "</p>\n"
        parts.append(block)
        size += len(block)
    parts.append("</body></html>")
    return "".join(parts).encode()


def make_text(mb: float, pages: int, rng: random.Random) -> bytes:
    per_page = int(mb * 1024 * 1024 / pages)
    out = []
    for page in range(1, pages + 1):
        lines, size = [f"Page {page}"], 0
        while size < per_page:
            line = sentence(rng)
            lines.append(line)
            size += len(line) + 1
        out.append("\n".join(lines) + "\n")
    return "\f".join(out).encode()


def setup_django(mb: float) -> None:
    shutil.rmtree(CACHE, ignore_errors=True)
    (CACHE / "media").mkdir(parents=True)
    os.environ.update(
        {
            "DATABASE_URL": f"sqlite:///{CACHE / 'bench.sqlite3'}",
            "CELERY_TASK_ALWAYS_EAGER": "true",
            "DJANGO_MEDIA_ROOT": str(CACHE / "media"),
            "GROUNDWORK_MAX_UPLOAD_MB": str(int(mb) + 10),
            "DJANGO_SETTINGS_MODULE": "labelling.settings",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-browser", action="store_true")
    args = parser.parse_args()
    setup_django(args.mb)

    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    from evalsets.anchoring import services as anchoring_services
    from evalsets.documents import renditions
    from evalsets.documents import services as documents_services
    from evalsets.workspaces import services as workspaces_services

    rng = random.Random(15)
    user = get_user_model().objects.create_user("bench", password="x")
    workspace = workspaces_services.workspace_create(user=user, slug="bench", name="Bench")
    evalset = anchoring_services.evalset_create(
        workspace=workspace, user=user, slug="quiz", name="Quiz"
    )
    item = anchoring_services.item_create(
        evalset=evalset, user=user, item_id="q1", question="Where?"
    )
    html_bytes = make_html(args.mb, rng)
    text_bytes = make_text(args.mb, args.pages, rng)
    print(
        f"documents: big.html {len(html_bytes) / 2**20:.1f} MB, big.txt "
        f"{len(text_bytes) / 2**20:.1f} MB with {args.pages} form-feed pages; parsing ...",
        flush=True,
    )
    t0 = time.perf_counter()
    html_doc, _ = documents_services.document_upload(
        workspace=workspace, user=user, upload=SimpleUploadedFile("big.html", html_bytes)
    )
    text_doc, _ = documents_services.document_upload(
        workspace=workspace, user=user, upload=SimpleUploadedFile("big.txt", text_bytes)
    )
    print(f"parsed in {time.perf_counter() - t0:.1f} s", flush=True)
    html_ref = html_doc.parses.get(is_reference=True)
    text_ref = text_doc.parses.get(is_reference=True)
    assert len(text_ref.page_starts) == args.pages, len(text_ref.page_starts)
    one_page = documents_services.parse_version_add(
        document=text_doc,
        parser="plaintext-one-page",
        parser_version="1",
        text=text_ref.text,
        page_starts=[0],
        origin="uploaded",
    )

    client = Client()
    client.force_login(user)
    api = "/api/workspaces/bench/documents"
    rows: list[tuple[str, str, str, str]] = []

    def get(url: str):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
        return response

    # -- server --------------------------------------------------------------------------------
    # The worker's build (``render_document``), timed on its own: the upload above built and
    # stored it already (tasks in-process); the peer is what a request used to do the same.
    renditions.forget(renditions.document_dir(html_doc))
    t0 = time.perf_counter()
    count = renditions.rendition_build(parse=html_ref)
    build = time.perf_counter() - t0
    stored = sum(f.stat().st_size for f in renditions.parse_dir(html_doc, html_ref).iterdir())
    rows.append(
        (
            "HTML, worker",
            "build + store the view (sanitise, align, write)",
            _ms(build),
            f"{stored / 2**20:,.1f} MB stored",
        )
    )
    t0 = time.perf_counter()
    first = get(f"{api}/big.html/rendered/?from=1&to=4")
    cold = time.perf_counter() - t0
    assert first.json()["section_count"] == count
    rows.append(
        (
            "HTML as it looks",
            "first 4 sections, first request (from the store)",
            f"{cold * 1000:,.0f}",
            f"{len(first.content) / 1024:,.0f} KB",
        )
    )
    warm, resp = timed(lambda: get(f"{api}/big.html/rendered/?from=1&to=4"), args.repeat)
    rows.append(("HTML as it looks", "first 4 sections, again", f"{warm * 1000:,.0f}", _kb(resp)))
    end, resp = timed(
        lambda: get(f"{api}/big.html/rendered/?from={count - 3}&to={count}"), args.repeat
    )
    rows.append(
        ("HTML as it looks", f"last 4 of {count:,} sections (go to end)", _ms(end), _kb(resp))
    )
    tracemalloc.start()
    get(f"{api}/big.html/rendered/?from={count // 2}&to={count // 2 + 3}")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    memory = f"{peak / 2**20:.1f} MB"
    rows.append(("HTML as it looks", "4 sections: peak Python memory", "", memory))
    pages = f"{api}/big.html/parses/{html_ref.public_id}/pages/"
    text_view, resp = timed(lambda: get(pages + "?from=1&to=20"), args.repeat)
    rows.append(("HTML text view (peer)", "page 1 of 1: the whole text", _ms(text_view), _kb(resp)))
    pages = f"{api}/big.txt/parses/{text_ref.public_id}/pages/"
    first_page, resp = timed(lambda: get(pages + "?from=1&to=2"), args.repeat)
    rows.append(("Text, form-feed pages", "pages 1-2", _ms(first_page), _kb(resp)))
    far, resp = timed(lambda: get(pages + "?from=900&to=901"), args.repeat)
    rows.append(("Text, form-feed pages", "pages 900-901 (go to)", _ms(far), _kb(resp)))
    pages = f"{api}/big.txt/parses/{one_page.public_id}/pages/"
    whole, resp = timed(lambda: get(pages + "?from=1&to=2"), args.repeat)
    rows.append(("Text as one page (peer)", "page 1 of 1: the whole text", _ms(whole), _kb(resp)))
    _table(
        "server: one request through Django (median ms)", rows, ("view", "request", "ms", "answer")
    )

    if not args.skip_browser:
        browser_rows(args, user, html_doc, text_doc, text_ref, one_page, item, count)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def _kb(response) -> str:
    return f"{len(response.content) / 1024:,.0f} KB"


def _table(title: str, rows, header) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    line = " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    print(line)
    print("-" * len(line))
    for row in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


FRAME_READY = """() => { const f = document.querySelector("[data-rendered-frame]");
  const d = f && f.contentDocument; return !!(d && d.querySelector("section.loaded")); }"""
FRAME_END = """(n) => {
  const d = document.querySelector("[data-rendered-frame]").contentDocument;
  const s = d.querySelector(`section[data-section="${n}"]`);
  return !!(s && s.classList.contains("loaded"));
}"""


def browser_rows(args, user, html_doc, text_doc, text_ref, one_page, item, count) -> None:
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.test import Client
    from django.test.testcases import LiveServerThread
    from playwright.sync_api import sync_playwright

    from evalsets.anchoring import services as anchoring_services

    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    server = LiveServerThread("127.0.0.1", StaticFilesHandler, port=0)
    server.daemon = True
    server.start()
    server.is_ready.wait()
    if server.error:
        raise server.error
    base = f"http://127.0.0.1:{server.port}"
    client = Client()
    client.force_login(user)
    session = client.cookies["sessionid"].value
    rows = []
    limit = 120_000
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            headless=True,
            args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"],
        )

        def fresh():
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
            context.set_default_timeout(limit)
            return context, context.new_page()

        def measure(label, what, url, ready, then=None):
            samples, extra = [], []
            for _ in range(args.repeat):
                context, page = fresh()
                t0 = time.perf_counter()
                try:
                    page.goto(url, wait_until="commit")
                    page.wait_for_function(ready[0], arg=ready[1])
                    samples.append(time.perf_counter() - t0)
                    if then:
                        extra.append(then(page))
                except Exception as exc:  # a view that never draws is a result, not a crash
                    samples.append(float("inf"))
                    print(f"  {label}: {type(exc).__name__}", flush=True)
                context.close()
            rows.append((label, what, _fmt(statistics.median(samples))))
            return extra

        doc = f"{base}/w/bench/documents"

        def go_to_end(page):
            t0 = time.perf_counter()
            page.evaluate(
                "() => document.querySelector('[data-rendered-frame]').contentWindow"
                ".scrollTo(0, 1e9)"
            )
            page.wait_for_function(FRAME_END, arg=count)
            return time.perf_counter() - t0

        ends = measure(
            "HTML as it looks",
            "first text on screen",
            f"{doc}/big.html",
            (FRAME_READY, None),
            then=go_to_end,
        )
        rows.append(
            (
                "HTML as it looks",
                "scroll to the end, last section drawn",
                _fmt(statistics.median(ends)),
            )
        )
        page_ready = "(n) => !!document.querySelector(`.page.loaded[data-page='${n}']`)"
        measure(
            "HTML text view (peer)",
            "first text on screen",
            f"{doc}/big.html?view=text",
            (page_ready, 1),
        )

        def add_highlight(page, parse):
            at = parse.text.index("Page 900\n") + 10
            anchor = anchoring_services.anchor_create_from_highlight(
                item=item, user=user, parse=parse, start=at, end=at + 30
            )
            t0 = time.perf_counter()
            page.evaluate("() => window.groundworkDocument.refreshAnchors()")
            page.wait_for_function(
                "() => document.querySelectorAll('.page.loaded mark.hl').length > 0"
            )
            took = time.perf_counter() - t0
            anchor.delete()
            return took

        for label, parse, start_page in (
            ("Text, form-feed pages", text_ref, 900),
            ("Text as one page (peer)", one_page, 1),
        ):
            url = f"{doc}/big.txt?parse={parse.public_id}#page={start_page}"
            took = measure(
                label,
                f"page {start_page} on screen",
                url,
                (page_ready, start_page),
                then=lambda page, parse=parse: add_highlight(page, parse),
            )
            finite = [t for t in took if t != float("inf")]
            median = statistics.median(finite) if finite else float("inf")
            rows.append((label, "a new highlight drawn", _fmt(median)))
        browser.close()
    server.terminate()
    _table("browser: Chromium, median ms", rows, ("view", "until", "ms"))


def _fmt(seconds: float) -> str:
    return "did not finish" if seconds == float("inf") else f"{seconds * 1000:,.0f}"


if __name__ == "__main__":
    main()
