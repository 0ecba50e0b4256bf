"""What one anchor-create request costs on the embedded default's SQLite, statement by statement.

The sustained benchmark's document (1,000 pages x 2,000 characters, 3 parses) in a SQLite file
of its own under bench/.cache; anchors are created through Django's test client (every
middleware, DRF, the services), each on a random sentence of the reference parse, by its 20
users in turn. Prints the CPU and wall time per create and the time each kind of statement
took per create (an ``execute_wrapper``). Tasks are queued to a filesystem broker nobody reads.

Run: ``.venv/bin/python bench/create_cost.py [--n 300] [--fresh]``. To measure an older commit,
unpack it (``git archive REV | tar -x -C DIR``) and run this file from there.
"""

from __future__ import annotations

import argparse
import collections
import os
import pickle
import random
import time
from pathlib import Path

from _embedded import embedded_default

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="anchors to create and time")
    parser.add_argument("--fresh", action="store_true", help="seed the database again")
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

    for n in range(len(people)):  # warm: every user's token, the process's caches
        create(n)
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


if __name__ == "__main__":
    main()
