"""What the blind-overlap rule costs a read of anchors: an annotator's reads (filtered by
``evalsets.review.blind``) against the same reads by a reviewer (who sees every version, so no
filter), in the same run, on the embedded default's SQLite.

A set of ``--items`` items, every one assigned to two annotators (overlap 2), each of whom
gave ``--anchors`` typed anchors per item; half the items adjudicated. Each reader asks, through
Django's test client (every middleware, DRF), for the item list (first page) and for the
anchors of ``--reads`` items in turn. Prints CPU and wall milliseconds per request and the
statements per request, for each reader.

Run: ``.venv/bin/python bench/blind_bench.py [--items 2000] [--anchors 3] [--reads 200] [--fresh]``.
"""

from __future__ import annotations

import argparse
import time

from _embedded import embedded_default


def _seed(items: int, anchors: int) -> None:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from evalsets.models import (
        EvalItem,
        EvalSet,
        GoldAnchor,
        ItemAssignment,
        Membership,
        Role,
        Workspace,
    )

    users = {
        name: get_user_model().objects.create_user(name, password="x")
        for name in ("ann", "bob", "rita")
    }
    workspace = Workspace.objects.create(slug="blind", name="Blind")
    for name, role in (("ann", Role.ANNOTATOR), ("bob", Role.ANNOTATOR), ("rita", Role.REVIEWER)):
        Membership.objects.create(workspace=workspace, user=users[name], role=role)
    evalset = EvalSet.objects.create(workspace=workspace, slug="blind", name="Blind")
    made = EvalItem.objects.bulk_create(
        EvalItem(evalset=evalset, item_id=f"q{n}", question=f"Question {n}?") for n in range(items)
    )
    ItemAssignment.objects.bulk_create(
        ItemAssignment(item=item, user=users[name], kind="annotate")
        for item in made
        for name in ("ann", "bob")
    )
    GoldAnchor.objects.bulk_create(
        GoldAnchor(item=item, source_id="a.txt", quote=f"{name} {n} {k}", created_by=users[name])
        for n, item in enumerate(made)
        for name in ("ann", "bob")
        for k in range(anchors)
    )
    EvalItem.objects.filter(pk__in=[i.pk for i in made[::2]]).update(adjudicated_at=timezone.now())


def _measure(client, urls: list[str]) -> tuple[float, float, float]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    cpu, wall = time.process_time(), time.perf_counter()
    statements = 0
    for url in urls:
        with CaptureQueriesContext(connection) as seen:
            answer = client.get(url)
        assert answer.status_code == 200, answer.content[:300]
        statements += len(seen.captured_queries)
    n = len(urls)
    return (
        (time.process_time() - cpu) * 1000 / n,
        (time.perf_counter() - wall) * 1000 / n,
        statements / n,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--anchors", type=int, default=3, help="anchors per annotator per item")
    parser.add_argument("--reads", type=int, default=200, help="items whose anchors are read")
    parser.add_argument("--fresh", action="store_true", help="seed the database again")
    args = parser.parse_args()
    var, fresh = embedded_default("blind", fresh=args.fresh, seeded="seeded")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    if fresh:
        _seed(args.items, args.anchors)
        (var / "seeded").write_text(f"{args.items} {args.anchors}\n")
    api = "/api/workspaces/blind/evalsets/blind/items/"
    urls = [api] * 20 + [f"{api}q{n}/anchors/" for n in range(min(args.reads, args.items))]
    rows = []
    for name, who in (("ann", "annotator, blind filter"), ("rita", "reviewer, no filter (peer)")):
        client = Client()
        client.force_login(get_user_model().objects.get(username=name))
        client.get(api)  # warm up
        rows.append((who, *_measure(client, urls)))
    print(
        f"{len(urls)} requests each (20 item lists, the rest one item's anchors); seeded: "
        f"{(var / 'seeded').read_text().strip()} (items, anchors per annotator per item)"
    )
    print(f"{'reader':<30} {'CPU ms/req':>11} {'wall ms/req':>12} {'statements/req':>15}")
    for who, cpu, wall, statements in rows:
        print(f"{who:<30} {cpu:>11.2f} {wall:>12.2f} {statements:>15.1f}")


if __name__ == "__main__":
    main()
