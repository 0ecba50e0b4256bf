"""Small input and output shapes for the review endpoints, one pair per workflow action."""

from __future__ import annotations

from rest_framework import serializers

from evalsets.anchoring.api.serializers import ItemSerializer
from evalsets.api.storable import StorableInput
from evalsets.models import AssignmentKind, Comment, EventKind, ItemAssignment, ItemEvent
from evalsets.review.comments import MAX_COMMENT_CHARS


class SubmitSerializer(StorableInput, serializers.Serializer):
    row_version = serializers.IntegerField(
        required=False, help_text="the row_version you read; a stale one is refused with 409"
    )
    comment = serializers.CharField(required=False, allow_blank=True, max_length=MAX_COMMENT_CHARS)


class ApproveSerializer(StorableInput, serializers.Serializer):
    row_version = serializers.IntegerField(
        help_text="the row_version you reviewed; if the item changed since, approving is refused"
    )
    comment = serializers.CharField(required=False, allow_blank=True, max_length=MAX_COMMENT_CHARS)


class RequestChangesSerializer(StorableInput, serializers.Serializer):
    row_version = serializers.IntegerField(help_text="the row_version you reviewed")
    comment = serializers.CharField(
        allow_blank=True,
        trim_whitespace=False,
        max_length=MAX_COMMENT_CHARS,
        help_text="what to change (required)",
    )
    anchor = serializers.UUIDField(
        required=False, allow_null=True, help_text="the anchor the comment is about"
    )


class ReopenSerializer(StorableInput, serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=MAX_COMMENT_CHARS)


class AdjudicateSerializer(StorableInput, serializers.Serializer):
    row_version = serializers.IntegerField(
        help_text="the row_version you compared; if the item changed since, it is refused (409)"
    )
    pick = serializers.CharField(
        required=False,
        max_length=150,
        help_text="keep this annotator's version (their username); every other anchor goes",
    )
    keep = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        max_length=500,
        help_text="merge: the ids of the anchors to keep, from any versions; the rest go",
    )
    reason = serializers.CharField(required=False, allow_blank=True, max_length=MAX_COMMENT_CHARS)


class TransitionResultSerializer(serializers.Serializer):
    id = serializers.CharField(source="item.item_id")
    state = serializers.CharField(source="item.state")
    row_version = serializers.IntegerField(source="item.row_version")
    waiting_for = serializers.ListField(
        child=serializers.CharField(),
        help_text="with overlap: the assigned annotators who have not submitted yet",
    )


class CommentSerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(source="public_id", read_only=True)
    author = serializers.CharField(source="author.username", default=None, allow_null=True)
    parent = serializers.UUIDField(source="parent.public_id", default=None, allow_null=True)
    anchor = serializers.UUIDField(source="anchor_uuid", default=None, allow_null=True)

    class Meta:
        model = Comment
        fields = ["id", "body", "kind", "author", "created_at", "parent", "anchor"]


class CommentCreateSerializer(StorableInput, serializers.Serializer):
    body = serializers.CharField(allow_blank=True, max_length=MAX_COMMENT_CHARS)
    parent = serializers.UUIDField(required=False, allow_null=True)
    anchor = serializers.UUIDField(required=False, allow_null=True)


class EventSerializer(serializers.ModelSerializer):
    kind = serializers.CharField(help_text=f"one of {', '.join(EventKind.values)}")
    actor = serializers.CharField(source="actor_name")
    item = serializers.CharField(source="item_key")
    evalset = serializers.CharField(source="evalset_slug")
    anchor = serializers.UUIDField(source="anchor_uuid", default=None, allow_null=True)

    class Meta:
        model = ItemEvent
        fields = [
            "evalset",
            "item",
            "kind",
            "actor",
            "at",
            "from_state",
            "to_state",
            "reason",
            "anchor",
            "data",
        ]


class AssignmentSerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(source="public_id", read_only=True)
    item = serializers.CharField(source="item.item_id")
    user = serializers.CharField(source="user.username")
    assigned_by = serializers.CharField(
        source="assigned_by.username", default=None, allow_null=True
    )
    kind = serializers.CharField(help_text="annotate or review")

    class Meta:
        model = ItemAssignment
        fields = ["id", "item", "user", "kind", "assigned_by", "created_at", "done_at"]


class AssignmentCreateSerializer(StorableInput, serializers.Serializer):
    users = serializers.ListField(
        child=serializers.CharField(max_length=150),
        allow_empty=False,
        help_text="usernames to share the items between, round-robin",
    )
    kind = serializers.CharField(help_text="annotate or review")
    items = serializers.ListField(
        child=serializers.CharField(max_length=128),
        required=False,
        allow_empty=False,
        help_text="item ids; leave out to assign the whole set",
    )
    overlap = serializers.IntegerField(
        required=False, default=1, min_value=1, help_text="annotators per item, for agreement"
    )

    def validate_kind(self, value: str) -> str:
        if value not in AssignmentKind.values:
            raise serializers.ValidationError(f"kind must be annotate or review, got {value!r}")
        return value


class AssignmentResultSerializer(serializers.Serializer):
    created = AssignmentSerializer(many=True)
    skipped = serializers.ListField(child=serializers.DictField())


class NextItemQuerySerializer(StorableInput, serializers.Serializer):
    role = serializers.ChoiceField(
        choices=AssignmentKind.values,
        error_messages={"invalid_choice": "role must be annotate or review, got {input!r}"},
    )


class NextItemSerializer(serializers.Serializer):
    """What ``next/`` answers: the first item in my queue (or null) and how many are left."""

    role = serializers.CharField(help_text="annotate or review")
    remaining = serializers.IntegerField()
    item = ItemSerializer(allow_null=True)
