"""``manage.py find_unaddressable_keys``: rows stored before keys that URLs carry were checked.

A document's ``source_id`` or an item's id with a ``.`` or ``..`` part (or a backslash, or
an empty part) cannot be reached by a browser: it rewrites the URL first. New ones are
refused; older ones are left as they are (renaming a ``source_id`` would move it away from
the anchors that name it), and the pages refuse to send their buttons' requests. This lists
them so an administrator can remove or re-upload each (``evalsets.documents.services`` from
``manage.py shell``). It exits with status 1 when it finds any, for a deployment check.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from evalsets.documents.selectors import keys_no_url_can_carry


class Command(BaseCommand):
    help = "List documents and items whose keys no URL can carry (stored before they were refused)."

    def handle(self, *args, **options):
        found = keys_no_url_can_carry()
        for workspace, kind, key, problem in found:
            self.stdout.write(f"{workspace}: {kind} {key!r} {problem}")
        if found:
            raise CommandError(f"{len(found)} key(s) no URL can carry; see above")
        self.stdout.write("Every document and item key can be carried by a URL.")
