"""What needs me, and what changed while I looked: the inbox and the changes feed.

``/api/inbox/`` lists the caller's notifications (changes requested on their items, items
assigned to them, reviews waiting for them, replies to their comments) with the unread count;
``/api/inbox/read/`` marks some or all of them read. ``/api/workspaces/{ws}/changes/`` is the
cheap "changed since" poll of the item and document pages: the audit events after the last
one the page saw, each saying who did what and whether it came from this very tab, the same
person's other tab or someone else (``evalsets.origin``).
"""

from __future__ import annotations

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets import origin
from evalsets.api.scoping import WorkspaceScoped
from evalsets.api.storable import StorableInput
from evalsets.errors import InvalidInput
from evalsets.models import EventKind, ItemEvent, Notification
from evalsets.releases.representations import iso_time
from evalsets.review import inbox
from evalsets.review import selectors as review_selectors

# -- the inbox ------------------------------------------------------------------------------------


class NotificationSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="public_id")
    kind = serializers.CharField()
    workspace = serializers.CharField(source="workspace.slug")
    evalset = serializers.CharField(source="evalset_slug")
    item = serializers.CharField(source="item_key")
    item_state = serializers.SerializerMethodField(help_text="null once the item is deleted")
    by = serializers.CharField(source="actor_name")
    text = serializers.CharField()
    at = serializers.DateTimeField(source="created_at")
    read = serializers.SerializerMethodField()

    def get_item_state(self, obj: Notification) -> str | None:
        return obj.item.state if obj.item is not None else None

    def get_read(self, obj: Notification) -> bool:
        return obj.read_at is not None


class InboxSerializer(serializers.Serializer):
    unread = serializers.IntegerField()
    results = NotificationSerializer(many=True)


class MarkReadSerializer(StorableInput, serializers.Serializer):
    ids = serializers.ListField(
        child=serializers.CharField(max_length=36),
        required=False,
        max_length=1000,
        help_text="the notifications to mark read (their ids); leave out to mark every one read",
    )

    def validate_ids(self, ids: list[str]) -> list[str]:
        for index, value in enumerate(ids):
            try:
                uuid.UUID(value)
            except ValueError:
                raise serializers.ValidationError(
                    f"ids[{index}] is {value!r}, not a notification id"
                ) from None
        return ids


class MarkedSerializer(serializers.Serializer):
    marked = serializers.IntegerField()
    unread = serializers.IntegerField()


class InboxView(APIView):
    """My notifications, newest first (``?unread=1``: only unread ones), and the unread count."""

    resource = "inbox"
    serializer_class = InboxSerializer

    @extend_schema(
        parameters=[OpenApiParameter("unread", OpenApiTypes.BOOL, required=False)],
        responses=InboxSerializer,
    )
    def get(self, request):
        unread_only = request.query_params.get("unread") in ("1", "true", "yes")
        data = {
            "unread": review_selectors.unread_count(request.user),
            "results": review_selectors.inbox(request.user, unread_only=unread_only),
        }
        return Response(InboxSerializer(data).data)


class InboxReadView(APIView):
    """Mark notifications read: ``{"ids": [...]}``, or ``{}`` for all of them."""

    resource = "inbox-read"
    serializer_class = MarkReadSerializer

    @extend_schema(request=MarkReadSerializer, responses=MarkedSerializer)
    def post(self, request):
        data = MarkReadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ids = data.validated_data.get("ids")
        marked = inbox.notifications_mark_read(user=request.user, ids=ids)
        return Response({"marked": marked, "unread": review_selectors.unread_count(request.user)})


# -- the changes feed -----------------------------------------------------------------------------

_DONE = {
    EventKind.CREATED: "created it",
    EventKind.DELETED: "deleted it",
    EventKind.SUBMITTED: "submitted it for review",
    EventKind.ANNOTATION_DONE: "finished their part",
    EventKind.APPROVED: "approved it",
    EventKind.CHANGES_REQUESTED: "requested changes",
    EventKind.REOPENED: "reopened it",
    EventKind.ANCHOR_CREATED: "added evidence",
    EventKind.ANCHOR_GRADE_CHANGED: "changed the grade of evidence",
    EventKind.ANCHOR_DELETED: "removed evidence",
    EventKind.COMMENTED: "commented",
    EventKind.ASSIGNED: "assigned it",
    EventKind.UNASSIGNED: "unassigned it",
}
_FIELD_WORDS = {"qtype": "question type", "assignee": "assignee", "meta": "meta"}


def _what(event: ItemEvent) -> str:
    if event.kind == EventKind.EDITED:
        fields = sorted(event.data.get("changes", {}))
        names = [_FIELD_WORDS.get(name, name) for name in fields] or ["item"]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return "changed the " + listed
    return _DONE.get(event.kind, event.get_kind_display().lower())


class ChangeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    what = serializers.CharField(help_text="what was done, in words: 'changed the question'")
    by = serializers.CharField()
    source = serializers.ChoiceField(
        choices=["this_tab", "you", "other"],
        help_text="this_tab: the tab that polls made it; you: the caller in another tab or "
        "session; other: someone else",
    )
    at = serializers.CharField()
    evalset = serializers.CharField()
    item = serializers.CharField()
    fields = serializers.ListField(child=serializers.CharField())
    quote = serializers.CharField(allow_null=True)
    state = serializers.CharField(allow_blank=True, help_text="the state a transition led to")


class ChangesSerializer(serializers.Serializer):
    last = serializers.IntegerField(help_text="pass as ?after= next time")
    more = serializers.BooleanField(help_text="more changes wait than one answer carries")
    changes = ChangeSerializer(many=True)


def _int_param(request, name: str) -> int:
    raw = request.query_params.get(name, "0")
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, got {raw!r}", field=name) from None
    if value < 0 or value > 2**62:
        raise InvalidInput(f"{name} must be between 0 and 2**62, got {value}", field=name)
    return value


class ChangesView(WorkspaceScoped, APIView):
    """Changes after audit event ``after`` to one item (``set`` and ``item``) or to the
    evidence on one document (``document``), oldest first. Polled by the open pages."""

    resource = "changes"
    serializer_class = ChangesSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("after", OpenApiTypes.INT, required=False),
            OpenApiParameter("set", OpenApiTypes.STR, required=False),
            OpenApiParameter("item", OpenApiTypes.STR, required=False),
            OpenApiParameter("document", OpenApiTypes.STR, required=False),
        ],
        responses=ChangesSerializer,
    )
    def get(self, request, ws: str):
        after = _int_param(request, "after")
        params = request.query_params
        item_key, source_id = params.get("item", ""), params.get("document", "")
        if bool(item_key) == bool(source_id):
            raise InvalidInput("name either an item (set and item) or a document", field="item")
        if item_key and not params.get("set"):
            raise InvalidInput("name the item's eval set (set=...)", field="set")
        events = review_selectors.changes_after(
            self.workspace,
            after=after,
            evalset_slug=params.get("set", ""),
            item_key=item_key,
            source_id=source_id,
            reader=self.membership,
        )
        tab = origin.clean(request.headers.get(origin.HEADER))
        changes = [
            {
                "id": e.id,
                "kind": e.kind,
                "what": _what(e),
                "by": e.actor_name,
                "source": (
                    "other"
                    if e.actor_id != request.user.pk
                    else ("this_tab" if tab and e.tab == tab else "you")
                ),
                "at": iso_time(e.at),
                "evalset": e.evalset_slug,
                "item": e.item_key,
                "fields": sorted(e.data.get("changes", {})),
                "quote": e.data.get("quote"),
                "state": e.to_state,
            }
            for e in events
        ]
        last = events[-1].id if events else after
        more = len(events) == review_selectors.CHANGES_LIMIT
        return Response(ChangesSerializer({"last": last, "more": more, "changes": changes}).data)
