"""``manage.py experiment_gate``: fail (exit 1) when a candidate run is worse than a
baseline by more than the eval set can detect, for a team's CI.

    manage.py experiment_gate --workspace acme --evalset quiz \\
        --baseline <experiment id>[:<cell>] --candidate <experiment id>[:<cell>]
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from evalsets.errors import GroundworkError
from evalsets.experiments import selectors
from evalsets.models import EvalSet


class Command(BaseCommand):
    help = "Fail when a candidate run is worse than a baseline by more than the set can detect."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--workspace", required=True)
        parser.add_argument("--evalset", required=True)
        parser.add_argument("--baseline", required=True, help="<experiment id>[:<cell>]")
        parser.add_argument("--candidate", required=True, help="<experiment id>[:<cell>]")
        parser.add_argument("--metric", default=None, help="recall (default), ndcg, mrr, ...")
        parser.add_argument("--tolerance", type=float, default=0.0)
        parser.add_argument("--json", action="store_true", help="print the whole answer")

    def handle(self, *args, **options) -> None:
        evalset = EvalSet.objects.filter(
            workspace__slug=options["workspace"], slug=options["evalset"]
        ).first()
        if evalset is None:
            raise CommandError(f"no eval set {options['evalset']!r} in {options['workspace']!r}")
        try:
            answer = selectors.gate(
                selectors.cell_by_ref(evalset, options["baseline"], "baseline"),
                selectors.cell_by_ref(evalset, options["candidate"], "candidate"),
                options["metric"],
                options["tolerance"],
            )
        except GroundworkError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(json.dumps(answer, indent=2) if options["json"] else answer["reason"])
        if not answer["passed"]:
            raise CommandError("gate failed: " + answer["reason"], returncode=1)
