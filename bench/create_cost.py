"""What one anchor-create request costs on the embedded default's SQLite, statement by statement.

The sustained benchmark's document (1,000 pages x 2,000 characters, 3 parses) in a SQLite file
of its own under bench/.cache; anchors are created through Django's test client (every
middleware, DRF, the services), each on a random sentence of the reference parse, by its 20
users in turn. Prints the CPU and wall time per create and the time each kind of statement
took per create (an ``execute_wrapper``). Tasks are queued to a filesystem broker nobody reads.

With ``--layers`` it also prints the CPU each layer of the request took per create (the
function that does it, timed with ``time.process_time`` around each call, so a layer includes
the ones it calls and the statements it makes): the whole handler with every middleware, DRF's
dispatch, the token's authentication, the membership and role check, the body's validation,
the item's and the parse's reads, the highlight's cut, the writes with their commit, the
overlap warning.

Run: ``.venv/bin/python bench/create_cost.py [--n 300] [--fresh] [--layers]``. To measure an
older commit, unpack it (``git archive REV | tar -x -C DIR``) and run this file from there.
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib
import os
import pickle
import random
import time
from pathlib import Path

from _embedded import embedded_default

HERE = Path(__file__).resolve().parent

#: The layers ``--layers`` times: (label, module, attribute path), outermost first.
LAYERS = [
    ("handler and every middleware", "django.core.handlers.base", "BaseHandler.get_response"),
    ("DRF dispatch", "rest_framework.views", "APIView.dispatch"),
    ("token authentication", "rest_framework.views", "APIView.perform_authentication"),
    ("membership and role", "rest_framework.views", "APIView.check_permissions"),
    ("body validated", "rest_framework.serializers", "BaseSerializer.is_valid"),
    ("item and set read", "evalsets.anchoring.selectors", "item_in_set"),
    ("parse read", "evalsets.documents.selectors", "parse_in_workspace"),
    ("writes and commit", "evalsets.anchoring.services", "anchor_create_from_highlight"),
    ("highlight cut (inside the writes' figure)", "evalsets.anchoring.services", "_highlighted"),
    ("overlap warning", "evalsets.passages.selectors", "overlapping_evidence"),
]


def time_layers(spent: dict[str, float]) -> None:
    """Wrap each of ``LAYERS`` so its calls add their CPU seconds to ``spent[label]``."""
    for label, module, path in LAYERS:
        owner = importlib.import_module(module)
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        setattr(owner, name, _timed(getattr(owner, name), label, spent))


def _timed(function, label: str, spent: dict[str, float]):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        began = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.process_time() - began

    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="anchors to create and time")
    parser.add_argument("--fresh", action="store_true", help="seed the database again")
    parser.add_argument("--layers", action="store_true", help="the CPU of each layer too")
    args = parser.parse_args()
    var, fresh = embedded_default("create-cost", fresh=args.fresh, seeded="seeded.pickle")
    import django

    django.setup()
    from django.db import connection
    from django.test import Client
    from sustained_bench import seed

    if fresh:
        sizes = argparse.Namespace(documents=1, pages=1000, page_chars=2000, users=20, side_pages=1)
        seeded = seed(argparse.Namespace(**vars(sizes), items_per_user=50))
        (var / "seeded.pickle").write_bytes(pickle.dumps(seeded))
    seeded = pickle.loads((var / "seeded.pickle").read_bytes())
    doc, rng = seeded["docs"][0], random.Random(1)
    people = seeded["people"]
    clients = [Client(HTTP_AUTHORIZATION=f"Token {p['token']}") for p in people]
    api = "/api/workspaces/sustained/evalsets/sustained/items"

    def create(n: int) -> None:
        person = people[n % len(people)]
        start, end = rng.choice(doc["spans"])
        item = person["items"][(n // len(people)) % len(person["items"])]
        body = {"parse": doc["reference"], "start": start, "end": end}
        answer = clients[n % len(people)].post(
            f"{api}/{item}/anchors/", body, content_type="application/json"
        )
        assert answer.status_code == 201, answer.content[:300]

    spent: dict[str, float] = collections.defaultdict(float)
    counted: collections.Counter = collections.Counter()

    def timed(execute, sql, params, many, context):
        began = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent[sql[:72]] += time.perf_counter() - began
            counted[sql[:72]] += 1

    layers: dict[str, float] = collections.defaultdict(float)
    if args.layers:
        time_layers(layers)
    for n in range(len(people)):  # warm: every user's token, the process's caches
        create(n)
    layers.clear()
    with connection.execute_wrapper(timed):
        wall, cpu = time.perf_counter(), time.process_time()
        for n in range(len(people), len(people) + args.n):
            create(n)
        wall = (time.perf_counter() - wall) / args.n * 1000
        cpu = (time.process_time() - cpu) / args.n * 1000
    sql = sum(spent.values()) / args.n * 1000
    print(f"code: {HERE.parent}; load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"per create ({args.n}): CPU {cpu:.2f} ms, wall {wall:.2f} ms, SQL {sql:.2f} ms")
    print(f"statements per create: {sum(counted.values()) / args.n:.1f}")
    for text, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {seconds / args.n * 1000:6.3f} ms  {text}")
    if args.layers:
        print("CPU per create by layer (each includes the layers and statements under it):")
        for label, _module, _path in LAYERS:
            print(f"  {layers[label] / args.n * 1000:6.3f} ms  {label}")


if __name__ == "__main__":
    main()
