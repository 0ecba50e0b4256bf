"""``manage.py sweep``: queue again background work that was lost (see evalsets.sweep)."""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand

from evalsets.sweep import pending_summary, stale_after, sweep


class Command(BaseCommand):
    help = "Queue again parses and resolutions that a lost worker or broker left unfinished."

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than",
            type=int,
            default=None,
            help=f"seconds without progress after which work counts as lost "
            f"(default {int(stale_after().total_seconds())})",
        )

    def handle(self, *args, older_than: int, **options):
        queued = sweep(None if older_than is None else timedelta(seconds=older_than))
        self.stdout.write(
            f"Queued again: {queued['parses']} parses, {queued['ranges']} page ranges, "
            f"{queued['resolutions']} documents to resolve, {queued['releases']} releases, "
            f"{queued['labels']} documents with imported labels to attach; "
            f"removed {queued['files']} orphaned files."
        )
        for name, count in pending_summary().items():
            self.stdout.write(f"  {name.replace('_', ' ')}: {count}")
