"""Suggested evidence and workspace search on about 130 real documents, against two baselines.

The corpus is every chapter of the Debian Reference and every page of the Debian
Administrator's Handbook (HTML, fetched and cached by ``resolver_corpus.py``, read as plain
text), cut into pages of about 3,000 characters at line ends. Items are built from the
documents themselves, deterministically (``--seed``): a sentence of 60-250 characters with at
least six content words becomes a question made of 40% of those words, reordered, a third of
them in another form (plural for singular, "-ing" for "-ed": the paraphrase an annotator's
question is of its evidence, some words shared, the order and forms not), and its gold
evidence is that sentence. A suggestion hits when it is a passage of the gold document
overlapping the gold sentence.

Three rankers answer each question from the same passages (Groundwork's, cut from each
document's reference parse with the default ``GROUNDWORK_PASSAGE_CHARS``):

- ``groundwork BM25``: ``evalsets.passages.selectors.search``, what the API answers;
- ``keyword overlap``: the passages sharing most distinct lowered words with the question;
- ``context-grid tf-idf``: context-grid's ``TfidfEmbedder`` fitted on the passages, cosine.

It then times, on the embedded default (SQLite, in this process, CPU time), the worker's
passage writing per 1,000 pages (``index_parse``), the ranking index's build per 1,000 pages
(the first search after a change), and the workspace search endpoint (``GET .../search/``,
through Django's test client with a token, every question once): p50 and p95 of wall time
and of CPU time per request.

With ``--embeddings`` (the extra installed: ``make embeddings``) the run has
``GROUNDWORK_SEARCH_EMBEDDINGS`` on: it times the passages' encoding (``embed_passages``, CPU
seconds per 1,000 passages), tunes the fusion weight (``ranking.DENSE_WEIGHT``) on the even
questions and prints the sweep, then adds two rows over all questions: ``dense alone`` (the
question's cosine to each passage) and ``BM25 + dense`` (what the API answers with the extra
on, at the chosen weight), and the same rows on the odd (held-out) questions.

    .venv/bin/python bench/suggest_bench.py [--per-document 3] [--seed 7] [--keep 0.4]
        [--reform 0.3] [--embeddings]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
VAR = HERE / ".cache" / "suggest-bench"
PAGE_CHARS = 3000
#: The share of a sentence's content words a question keeps, and of those, the share it
#: writes in another form (plural for singular, "-ing" for "-ed", ...).
KEEP, REINFLECT = 0.4, 0.3
SENTENCE = re.compile(r"[A-Z][^.!?\n]{58,248}[.!?]")
WORD = re.compile(r"\w+")


def paged(text: str) -> tuple[str, list[int]]:
    """``text`` with page starts every ~``PAGE_CHARS`` characters, at a line's end."""
    starts, at = [0], 0
    while len(text) - at > PAGE_CHARS:
        cut = text.rfind("\n", at + PAGE_CHARS // 2, at + PAGE_CHARS)
        at = cut + 1 if cut > at else at + PAGE_CHARS
        starts.append(at)
    return text, starts


def questions(
    text: str, rng: random.Random, per_document: int, stop: frozenset, keep: float, reform: float
) -> list[dict]:
    """Questions paraphrasing sentences of ``text``: 60% of their content words, reordered."""
    found = []
    for m in SENTENCE.finditer(text):
        content = [w for w in WORD.findall(m.group()) if len(w) > 3 and w.lower() not in stop]
        if len(content) >= 6:
            found.append((m.start(), m.end(), content))
    out = []
    for start, end, content in rng.sample(found, min(per_document, len(found))):
        kept = rng.sample(content, max(3, round(len(content) * keep)))
        asked = [reinflect(w, rng, reform) for w in kept]
        out.append({"question": "What " + " ".join(asked) + "?", "gold": (start, end)})
    return out


def reinflect(word: str, rng: random.Random, reform: float) -> str:
    """``word`` in another form, ``reform`` of the time: a question's words are not always
    in the evidence's forms."""
    if rng.random() >= reform:
        return word
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    if word.endswith("ed"):
        return word[:-2] + "ing"
    if word.endswith("ing"):
        return word[:-3] + "ed"
    return word + "s"


def setup_django(embeddings: bool) -> None:
    os.environ.update(
        GROUNDWORK_SEARCH_EMBEDDINGS="1" if embeddings else "0",
        GROUNDWORK_EMBEDDING_CPU_S=str(10**9),
        DATABASE_URL=f"sqlite:///{VAR / 'groundwork.sqlite3'}",
        CELERY_BROKER_URL="filesystem://",
        GROUNDWORK_VAR_DIR=str(VAR),
        DJANGO_MEDIA_ROOT=str(VAR / "media"),
        GROUNDWORK_LOG_LEVEL="WARNING",
        GROUNDWORK_RATE_SEARCH="1000000/min",
        DJANGO_SETTINGS_MODULE="labelling.settings",
    )
    shutil.rmtree(VAR, ignore_errors=True)
    (VAR / "media").mkdir(parents=True)
    manage = [sys.executable, "manage.py", "migrate", "--noinput"]
    subprocess.run(manage, cwd=HERE.parent, check=True, stdout=subprocess.DEVNULL)
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    import django

    django.setup()


def seed(documents: list[dict]):
    """A workspace holding every document with a ready reference parse (not yet indexed)."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from evalsets.models import Document, ParseStatus, ParseVersion
    from evalsets.workspaces import services as workspaces_services

    user = get_user_model().objects.create_user("bench", password="bench-pass-1")
    token = Token.objects.create(user=user).key
    workspace = workspaces_services.workspace_create(user=user, slug="bench", name="Bench")
    parses = []
    for n, doc in enumerate(documents):
        document = Document.objects.create(
            workspace=workspace, source_id=doc["id"], sha256=f"{n:064d}", kind="text"
        )
        parses.append(
            ParseVersion.objects.create(
                document=document,
                parser="plaintext",
                parser_version="1",
                text=doc["text"],
                page_starts=doc["starts"],
                status=ParseStatus.READY,
                is_reference=True,
            )
        )
    return workspace, token, parses


def hit_ranks(ranked: list[tuple[str, int, int]], doc: str, gold: tuple[int, int]) -> int | None:
    """The rank (from 1) of the first result overlapping the gold span, or None."""
    for rank, (d, s, e) in enumerate(ranked, start=1):
        if d == doc and s < gold[1] and gold[0] < e:
            return rank
    return None


def scores(ranks: list[int | None]) -> tuple[float, float, float]:
    n = len(ranks)
    hit1 = sum(1 for r in ranks if r == 1) / n
    hit5 = sum(1 for r in ranks if r is not None and r <= 5) / n
    mrr = sum(1 / r for r in ranks if r is not None) / n
    return hit1, hit5, mrr


class Baselines:
    """Keyword overlap and context-grid's tf-idf over the same passages."""

    def __init__(self, passages: list[tuple[str, int, int, str]]) -> None:
        from contextgrid.embed.local import TfidfEmbedder

        self.passages = passages
        self.words = [set(w.lower() for w in WORD.findall(p[3])) for p in passages]
        self.tfidf = TfidfEmbedder()
        self.tfidf.prepare([p[3] for p in passages])
        self.vectors = self.tfidf.embed_documents([p[3] for p in passages]).vectors

    def _top(self, values: np.ndarray, k: int) -> list[tuple[str, int, int]]:
        order = np.argsort(-values, kind="stable")[:k]
        return [self.passages[i][:3] for i in order if values[i] > 0]

    def overlap(self, question: str, k: int) -> list[tuple[str, int, int]]:
        asked = set(w.lower() for w in WORD.findall(question))
        return self._top(np.array([len(asked & words) for words in self.words], float), k)

    def tfidf_rank(self, question: str, k: int) -> list[tuple[str, int, int]]:
        query = self.tfidf.embed_queries([question]).vectors[0]
        return self._top(self.vectors @ query, k)


def table(rankers: dict, items: list[dict]) -> None:
    print(f"{'ranker':<22} {'hit@1':>7} {'hit@5':>7} {'MRR@10':>7}")
    for name, rank in rankers.items():
        found = [hit_ranks(rank(it["question"], 10), it["doc"], it["gold"]) for it in items]
        hit1, hit5, mrr = scores(found)
        print(f"{name:<22} {hit1:>7.3f} {hit5:>7.3f} {mrr:>7.3f}")


def dense_rankers(index, items: list[dict], selectors, workspace) -> dict:
    """BM25 alone (the extra on, BM25's scores only), dense alone, and BM25 + dense at the
    weight best on the even questions (the sweep printed)."""
    from evalsets.models import Passage
    from evalsets.passages import ranking, vectors
    from evalsets.pure.passages import terms as words

    where = {
        p.pk: (p.document.source_id, p.start, p.end)
        for p in Passage.objects.select_related("document").only(
            "start", "end", "document__source_id"
        )
    }
    asked = {
        it["question"]: v
        for it, v in zip(items, vectors.encode([i["question"] for i in items]), strict=True)
    }

    def dense(q: str, k: int) -> list[tuple[str, int, int]]:
        cosine = index.vectors @ asked[q]
        return [where[int(index.ids[i])] for i in np.argsort(-cosine, kind="stable")[:k]]

    def fused(q: str, k: int) -> list[tuple[str, int, int]]:
        return [where[pk] for pk, _ in index.top(words(q), k, dense=asked[q])]

    tuning = items[0::2]
    print("fusion weight (share of the cosine), on the even (tuning) questions:")
    print(f"{'weight':<22} {'hit@1':>7} {'hit@5':>7} {'MRR@10':>7}")
    best = (-1.0, ranking.DENSE_WEIGHT)
    for weight in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        ranking.DENSE_WEIGHT = weight
        hit1, hit5, mrr = scores(
            [hit_ranks(fused(it["question"], 10), it["doc"], it["gold"]) for it in tuning]
        )
        print(f"{weight:<22} {hit1:>7.3f} {hit5:>7.3f} {mrr:>7.3f}")
        best = max(best, (mrr, weight))
    ranking.DENSE_WEIGHT = best[1]
    print(f"chosen: {best[1]} (best MRR@10 on the tuning half)\n")
    return {
        "groundwork BM25": lambda q, k: [where[pk] for pk, _ in index.top(words(q), k)],
        "dense alone": dense,
        "BM25 + dense (API)": lambda q, k: [
            (r["document"], r["start"], r["end"])
            for r in selectors.search(workspace, q, limit=k)["results"]
        ],
    }


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-document", type=int, default=3, help="questions per document")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=float, default=KEEP, help="share of words kept")
    parser.add_argument("--reform", type=float, default=REINFLECT, help="share reinflected")
    parser.add_argument(
        "--embeddings", action="store_true", help="add dense and BM25 + dense (the extra)"
    )
    args = parser.parse_args()

    import resolver_corpus as corpus

    raw = corpus.html_documents(corpus.SCALE_SOURCES)
    setup_django(args.embeddings)
    from django.test import Client

    from evalsets.models import Passage
    from evalsets.passages import ranking, selectors, services, vectors
    from evalsets.pure.passages import STOP_WORDS

    documents = []
    for doc in raw:
        text, starts = paged(doc["a"])
        if len(text) >= 500:
            documents.append({"id": doc["id"], "text": text, "starts": starts})
    rng = random.Random(args.seed)
    items = [
        {**q, "doc": doc["id"]}
        for doc in documents
        for q in questions(doc["text"], rng, args.per_document, STOP_WORDS, args.keep, args.reform)
    ]
    workspace, token, parses = seed(documents)
    pages = sum(len(d["starts"]) for d in documents)

    cpu = time.process_time()
    for parse in parses:
        services.parse_index(parse.pk)
    write_cpu = time.process_time() - cpu
    encode_cpu = 0.0
    if args.embeddings:
        vectors.model()  # loading the weights is once a process, not per passage
        cpu = time.process_time()
        for parse in parses:
            vectors.embed_parse(parse.pk)
        encode_cpu = time.process_time() - cpu
    cpu = time.process_time()
    index = ranking.indexes.get(workspace.pk)
    build_cpu = time.process_time() - cpu

    passages = [
        (p.document.source_id, p.start, p.end, p.text)
        for p in Passage.objects.select_related("document").order_by("id")
    ]
    print(
        f"corpus: {len(documents)} documents, {pages} pages, "
        f"{sum(len(d['text']) for d in documents):,} characters, {len(passages)} passages, "
        f"{len(items)} questions (seed {args.seed}, keep {args.keep}, reform {args.reform})\n"
    )
    baselines = Baselines(passages)
    rankers = {
        "groundwork BM25": lambda q, k: [
            (r["document"], r["start"], r["end"])
            for r in selectors.search(workspace, q, limit=k)["results"]
        ],
        "keyword overlap": baselines.overlap,
        "context-grid tf-idf": baselines.tfidf_rank,
    }
    if args.embeddings:
        rankers.update(dense_rankers(index, items, selectors, workspace))
    table(rankers, items)
    if args.embeddings:
        print("\nthe same, on the odd (held-out) questions:")
        table(rankers, items[1::2])

    client = Client(HTTP_AUTHORIZATION=f"Token {token}")
    walls, cpus = [], []
    for it in items:
        wall, cpu = time.perf_counter(), time.process_time()
        answer = client.get("/api/workspaces/bench/search/", {"q": it["question"][:200]})
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        assert answer.status_code == 200, answer.content
    per_k = 1000 / pages
    print(f"\nworkspace search, {len(items)} requests (SQLite, test client, ms):")
    print(f"{'':<10} {'p50':>7} {'p95':>7} {'max':>7}")
    for name, values in (("wall", walls), ("CPU", cpus)):
        p50, p95 = percentile(values, 50), percentile(values, 95)
        print(f"{name:<10} {p50:>7.1f} {p95:>7.1f} {max(values):>7.1f}")
    print(f"\nindex build, CPU seconds per 1,000 pages ({pages} pages):")
    print(f"  passages cut and written (index_parse):   {write_cpu * per_k:.2f}")
    print(f"  ranking index built (first search):       {build_cpu * per_k:.2f}")
    if args.embeddings:
        print(
            f"  passages encoded (embed_passages):        "
            f"{encode_cpu * 1000 / len(passages):.2f} per 1,000 passages"
        )
    print(f"  mean latency (wall) of all requests:      {statistics.mean(walls):.1f} ms")


if __name__ == "__main__":
    main()
