"""Parse scaling: one 1,000-page PDF read by 1 and by 2 Celery workers, in page ranges.

Why it exists: a long PDF used to be one task, so its parse took as long however many
workers ran (pdfminer.six: about 90 s for 1,000 pages). Now a PDF longer than
``GROUNDWORK_PARSE_RANGE_PAGES`` is split into ranges any worker can take
(``evalsets.documents.ingest``). This measures the real path -- ``parse_version`` queued on Redis,
real ``celery worker`` processes (concurrency 1 each, as one per host would be) reading
the file from media storage and writing to PostgreSQL -- from queueing the parse until it
is ready, for each PDF parser:

- the peer, in the same run: the single-task parse (``GROUNDWORK_PARSE_RANGE_PAGES=0``),
  one worker, exactly what ran before ranges existed;
- ranges, one worker (what splitting costs when there is nobody to share with);
- ranges, two workers (the speed-up; the target is about 1.8x).

Each split parse's text and page starts (and pdfium's character-box file, the PDF view's)
are checked byte for byte against the single-task parse's. The PDF
(``bench/.cache/parse-scaling-<pages>.pdf``, made once with fpdf2) holds a page of dense
prose per page, about 2,400 characters, as a contract or a report does.

Run: ``.venv/bin/python bench/parse_scaling_bench.py [--pages 1000] [--range-pages N]
[--parsers pypdf pdfminer pdfium] [--timeline]`` (ranges of each parser's own
``pages_per_range`` unless ``--range-pages`` says; ``--timeline`` prints who read which
range when). Uses a database ``gw_bench_ranges`` of its own and Redis db 2 (``--database``,
``--redis-db``), both emptied first; everything on 127.0.0.1. The machine is shared: the
load average before and after each row is printed, and a busy machine lowers the speed-up
(two workers need two idle cores).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
from pathlib import Path

import _services as svc
from load_bench import page_sentences

DATABASE = "gw_bench_ranges"
REDIS_DB = 2
UNICODE_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def make_long_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` pages of prose, cached: generating 1,000 pages takes a while."""
    path = svc.CACHE / f"parse-scaling-{pages}.pdf"
    if path.exists():
        return path.read_bytes()
    from fpdf import FPDF

    rng = random.Random(18)
    pdf = FPDF()
    pdf.set_auto_page_break(False)
    if os.path.exists(UNICODE_FONT):
        pdf.add_font("DejaVu", fname=UNICODE_FONT)
        pdf.set_font("DejaVu", size=9)
    else:
        pdf.set_font("Helvetica", size=9)
    for page in range(1, pages + 1):
        pdf.add_page()
        pdf.multi_cell(
            0,
            4.6,
            f"Section {page}. Terms of the agreement, part {page}",
            new_x="LMARGIN",
            new_y="NEXT",
        )
        pdf.multi_cell(0, 4.6, " ".join(page_sentences(rng, 1, page, 2400)))
    data = bytes(pdf.output())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def seed(data: bytes):
    """A workspace with the long PDF as a document; returns the document."""
    from django.contrib.auth import get_user_model
    from django.core.files.base import ContentFile

    from evalsets.models import Document, Membership, Workspace

    owner = get_user_model().objects.create_user("owner")
    workspace = Workspace.objects.create(slug="scaling", name="Parse scaling")
    Membership.objects.create(workspace=workspace, user=owner, role="owner")
    document = Document(
        workspace=workspace,
        source_id="long.pdf",
        kind="pdf",
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
    )
    document.file.save("long.pdf", ContentFile(data), save=False)
    document.save()
    return document


def wait_for_workers(count: int) -> None:
    from labelling.celery import app

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=1.0) or []
        if sum(1 for reply in replies for key in reply if key.startswith("bench")) >= count:
            return
    raise RuntimeError(f"{count} workers did not answer a ping within 120 s")


def timed_parse(
    env,
    document,
    parser: str,
    label: str,
    workers: int,
    range_pages: int | None,
    timeline: bool = False,
):
    """Queue one parse of the document and time it until ready, with ``workers`` fresh
    workers; returns (seconds, parse)."""
    from evalsets import queue
    from evalsets.models import ParseVersion
    from evalsets.pure import parsers

    parse = ParseVersion.objects.create(
        document=document,
        parser=parser,
        parser_version=f"{parsers.get_parser(parser).version}-{label}",
        status="queued",
    )
    with svc.Stack(env) as stack:
        for n in range(workers):
            stack._spawn(
                [
                    svc.PYTHON,
                    "-m",
                    "celery",
                    "-A",
                    "labelling",
                    "worker",
                    "--loglevel=WARNING",
                    "--concurrency=1",
                    "--without-gossip",
                    "--without-mingle",
                    f"--hostname=bench{n}-{os.getpid()}@%h",
                ],
                kind="workers",
                **(
                    {}
                    if range_pages is None
                    else {"GROUNDWORK_PARSE_RANGE_PAGES": str(range_pages)}
                ),
            )
        wait_for_workers(workers)
        meter = svc.CpuMeter()  # the parsers' children run in sessions of their own
        meter.start()
        started = time.monotonic()
        queue.send("parse_version", parse.pk)
        seen: dict[int, dict[str, float | str]] = {}  # range id -> when it was seen read, by whom
        while True:
            parse.refresh_from_db()
            if timeline:
                _note_ranges(parse, seen, time.monotonic() - started)
            if parse.status not in ("queued", "parsing"):
                break
            time.sleep(0.1)
        seconds = time.monotonic() - started
        cpu = meter.stop()
        parse_cpu = parser_cpu_seconds(stack)
    if parse.status != "ready":
        raise RuntimeError(f"{parser} {label}: {parse.status}: {parse.error}")
    print(
        f"  {parser:9} {label:18} {seconds:7.1f} s   parsers' CPU {parse_cpu:6.1f} s   {cpu}",
        flush=True,
    )
    if timeline and seen:
        _print_timeline(parse, seen)
    return seconds, parse_cpu, parse


def _note_ranges(parse, seen: dict, now: float) -> None:
    """When each range was first seen being read and read (polled every 0.1 s), and by
    which worker: where two workers sit idle shows as a gap."""
    for pk, status, holder in parse.ranges.values_list("pk", "status", "claimed_by"):
        marks = seen.setdefault(pk, {})
        if status in ("parsing", "ready") and "holder" not in marks:
            marks["start"], marks["holder"] = now, holder.rsplit(":", 1)[0]  # host:pid
        if status == "ready" and "ready" not in marks:
            marks["ready"] = now


def _print_timeline(parse, seen: dict) -> None:
    holders = sorted({str(marks.get("holder", "")) for marks in seen.values()})
    pages = dict(parse.ranges.values_list("pk", "start_page"))
    for pk in sorted(seen, key=lambda pk: pages.get(pk, 0)):
        marks = seen[pk]
        worker = holders.index(str(marks.get("holder", ""))) + 1
        start, ready = marks.get("start", float("nan")), marks.get("ready", float("nan"))
        print(
            f"      pages {pages.get(pk, 0) + 1:>5}-  worker {worker}  "
            f"{start:6.1f} s .. {ready:6.1f} s",
            flush=True,
        )


def box_file(parse) -> bytes | None:
    """The parse's character box file (pdfium's, for the PDF view), None without one."""
    if not parse.char_boxes:
        return None
    with parse.char_boxes.open("rb") as handle:
        return handle.read()


def parser_cpu_seconds(stack) -> float:
    """CPU time of the parsers' child processes so far: each ran in a session of its own,
    and its time is added to the pool process that waited for it (``cutime``/``cstime``
    of the workers' processes, read before they stop). A machine-independent figure for
    what splitting costs: wall time on a shared machine also counts everyone else's work."""
    groups = {process.pid for process in stack.processes if process.poll() is None}
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in groups:  # pgrp
            ticks += int(fields[13]) + int(fields[14])  # cutime + cstime: waited-for children
    return ticks / os.sysconf("SC_CLK_TCK")


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--pages", type=int, default=1000)
    options.add_argument(
        "--range-pages", type=int, default=None, help="pages a range (default: each parser's own)"
    )
    options.add_argument("--parsers", nargs="+", default=["pypdf", "pdfminer", "pdfium"])
    options.add_argument("--database", default=DATABASE, help="emptied first")
    options.add_argument("--redis-db", type=int, default=REDIS_DB, help="emptied first")
    options.add_argument(
        "--timeline", action="store_true", help="when each range was read, and by which worker"
    )
    args = options.parse_args()

    print(f"making (or reading the cached) {args.pages}-page PDF ...", flush=True)
    data = make_long_pdf(args.pages)
    env = svc.prepare(args.database, args.redis_db)
    env["GROUNDWORK_PARSE_TIMEOUT_S"] = "3000"  # the single-task peer on a busy machine
    env["GROUNDWORK_TASK_TIME_LIMIT_S"] = "3600"
    env["GROUNDWORK_TASK_SOFT_TIME_LIMIT_S"] = "3500"
    env["GROUNDWORK_MAX_PAGES"] = str(max(2000, args.pages))
    document = seed(data)
    sizes = args.range_pages or "each parser's own pages_per_range"
    print(f"PDF: {args.pages} pages, {len(data) / 1024**2:.1f} MB; ranges of {sizes}")

    rows = []
    for parser in args.parsers:
        print(f"load average before {parser}: {svc.load_average()}", flush=True)
        single, single_cpu, reference = timed_parse(env, document, parser, "single task", 1, 0)
        one, one_cpu, split_one = timed_parse(
            env, document, parser, "ranges, 1 worker", 1, args.range_pages, args.timeline
        )
        two, two_cpu, split_two = timed_parse(
            env, document, parser, "ranges, 2 workers", 2, args.range_pages, args.timeline
        )
        same = all(
            p.text.encode("utf-8") == reference.text.encode("utf-8")
            and p.page_starts == reference.page_starts
            and box_file(p) == box_file(reference)
            for p in (split_one, split_two)
        )
        rows.append(
            [
                parser,
                f"{single:.1f}",
                f"{one:.1f}",
                f"{two:.1f}",
                f"{single / two:.2f}x",
                f"{one / two:.2f}x",
                f"{single_cpu:.1f} / {one_cpu:.1f} / {two_cpu:.1f}",
                split_two.range_count,
                "yes" if same else "NO",
            ]
        )
    print(f"load average after: {svc.load_average()}")
    print()
    headers = [
        "parser",
        "single task s",
        "ranges 1 worker s",
        "ranges 2 workers s",
        "speed-up vs single",
        "2 vs 1 worker",
        "parsers' CPU s: single / 1 / 2",
        "ranges",
        "same text",
    ]
    print(svc.table(headers, rows))
    return 0 if all(row[-1] == "yes" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
