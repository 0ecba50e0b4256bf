"""Real documents for the resolver benchmark, fetched from Debian's archive and cached.

The benchmark needs documents that two different extractors read differently, and the only
outside world this machine reaches is the package registries. Debian's documentation
packages ship real PDFs (LaTeX manuals: ligatures, hyphenation, running headers) and real
HTML (DocBook manuals: links, code, tables), so they are fetched with `apt-get download`,
unpacked with `dpkg-deb -x` and parsed by two extractors each. Everything lands under
`bench/.cache/` (git-ignored) so a second run does not touch the network or re-parse.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache"

#: (package, path of the PDF inside it) -- small LaTeX manuals, 26 to 59 pages each.
PDF_SOURCES = [
    ("camlidl-doc", "usr/share/doc/camlidl/camlidl-1.04.doc.pdf"),
    ("fasta3-doc", "usr/share/doc/fasta3/fasta_guide.pdf"),
    ("4ti2-doc", "usr/share/doc/4ti2/4ti2_manual.pdf"),
]

#: (package, HTML paths inside it) used for the cross-extractor suite.
HTML_SOURCES = [
    (
        "debian-reference-en",
        [f"usr/share/debian-reference/ch{n:02d}.en.html" for n in (3, 4, 5, 8)],
    ),
    (
        "aptitude-doc-en",
        [
            "usr/share/doc/aptitude/html/en/ch01s01s04.html",
            "usr/share/doc/aptitude/html/en/ch01s02.html",
            "usr/share/doc/aptitude/html/en/ch02s01s02.html",
        ],
    ),
]

#: Extra HTML only used to make the ~2 MB parse of the scaling row: every debian-reference
#: chapter, and every page of the Debian Administrator's Handbook (DocBook chunked into
#: distinct pages; the table-of-contents page is left out as it repeats the titles).
SCALE_SOURCES = [
    (
        "debian-reference-en",
        [f"usr/share/debian-reference/ch{n:02d}.en.html" for n in range(1, 13)],
    ),
    ("debian-handbook", ["usr/share/doc/debian-handbook/html/en-US/*.html"]),
]
SKIP_PAGES = {"index.html"}


def package_root(package: str) -> Path:
    root = CACHE / "pkg" / package
    if (root / ".done").exists():
        return root
    debs = CACHE / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    existing = list(debs.glob(f"{package}_*.deb"))
    if not existing:
        subprocess.run(
            ["apt-get", "download", package],
            cwd=debs,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        existing = list(debs.glob(f"{package}_*.deb"))
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(existing[0]), str(root)], check=True)
    (root / ".done").touch()
    return root


def _cached(name: str, build):  # type: ignore[no-untyped-def]
    path = CACHE / "parsed" / f"{name}.json"
    if path.exists():
        return json.loads(path.read_text())
    value = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return value


def _join_pages(pages: list[str]) -> tuple[str, list[int]]:
    starts, parts, offset = [], [], 0
    for page in pages:
        starts.append(offset)
        parts.append(page + "\n\f")
        offset += len(page) + 2
    return "".join(parts), starts


def pdf_documents() -> list[dict]:
    """Each PDF read page by page by pypdf and by pdfminer.six, with real page starts."""
    docs = []
    for package, rel in PDF_SOURCES:
        path = package_root(package) / rel

        def build(path: Path = path) -> dict:
            from pdfminer.high_level import extract_pages
            from pdfminer.layout import LTTextContainer
            from pypdf import PdfReader

            pypdf_pages = [page.extract_text() or "" for page in PdfReader(str(path)).pages]
            miner_pages = [
                "".join(el.get_text() for el in page if isinstance(el, LTTextContainer))
                for page in extract_pages(str(path))
            ]
            return {"pypdf": pypdf_pages, "pdfminer": miner_pages}

        pages = _cached(f"pdf-{path.stem}", build)
        a_text, a_starts = _join_pages(pages["pdfminer"])
        b_text, b_starts = _join_pages(pages["pypdf"])
        docs.append(
            {"id": path.name, "a": a_text, "a_pages": a_starts, "b": b_text, "b_pages": b_starts}
        )
    return docs


def html_plain(html: str) -> str:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    for node in tree.css("script,style,head"):
        node.decompose()
    body = tree.body
    return body.text() if body is not None else ""


def html_markdown(html: str) -> str:
    import html2text

    converter = html2text.HTML2Text()
    return converter.handle(html)


def html_markitdown(html: str) -> str:
    import io

    from markitdown import MarkItDown

    data = io.BytesIO(html.encode("utf-8"))
    return MarkItDown().convert_stream(data, file_extension=".html").text_content


#: The HTML-to-Markdown converters a target parse can come from.
MARKDOWN_CONVERTERS = {"html2text": html_markdown, "markitdown": html_markitdown}


def html_documents(sources: list | None = None, converter: str = "html2text") -> list[dict]:
    """Each HTML page as plain text (selectolax) and as Markdown (html2text or markitdown)."""
    convert = MARKDOWN_CONVERTERS[converter]
    docs = []
    for package, rels in sources or HTML_SOURCES:
        root = package_root(package)
        paths = []
        for rel in rels:
            if "*" in rel:
                paths += sorted(p for p in root.glob(rel) if p.name not in SKIP_PAGES)
            else:
                paths.append(root / rel)
        for path in paths:

            def build(path: Path = path) -> dict:
                html = path.read_text(encoding="utf-8", errors="replace")
                return {"plain": html_plain(html), "markdown": convert(html)}

            suffix = "" if converter == "html2text" else f"-{converter}"
            parsed = _cached(f"html-{package}-{path.stem}{suffix}", build)
            docs.append(
                {
                    "id": path.name,
                    "a": parsed["plain"],
                    "a_pages": None,
                    "b": parsed["markdown"],
                    "b_pages": None,
                    "markdown": True,
                }
            )
    return docs
