"""Serializers of eval sets, items, anchors and resolutions."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from rest_framework import serializers

from evalsets.anchoring.portability import item_portability
from evalsets.api.storable import StorableInput
from evalsets.models import (
    AnchorResolution,
    EvalItem,
    EvalSet,
    GoldAnchor,
)
from evalsets.pure.guidelines import MAX_GUIDELINES_CHARS, render_guidelines
from evalsets.releases import representations

User = get_user_model()


class EvalSetSerializer(StorableInput, serializers.ModelSerializer):
    id = serializers.SlugField(source="slug", max_length=100)
    item_count = serializers.IntegerField(read_only=True, default=None, allow_null=True)
    guidelines_html = serializers.SerializerMethodField()

    class Meta:
        model = EvalSet
        fields = [
            "id",
            "name",
            "version",
            "source",
            "meta",
            "guidelines",
            "guidelines_html",
            "qtypes",
            "created_at",
            "item_count",
        ]
        # Set with PATCH, where they are checked (an owner's action).
        read_only_fields = ["version", "source", "created_at", "guidelines", "qtypes"]

    def get_guidelines_html(self, obj) -> str:
        """The guidelines rendered from Markdown and sanitised: safe to insert as HTML."""
        return render_guidelines(obj.guidelines)


class EvalSetUpdateSerializer(StorableInput, serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    meta = serializers.DictField(required=False)
    guidelines = serializers.CharField(
        max_length=MAX_GUIDELINES_CHARS,
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Markdown shown to annotators where they work",
    )
    qtypes = serializers.ListField(
        child=serializers.CharField(max_length=64, allow_blank=True),
        max_length=100,
        required=False,
        help_text="the question types items may have; an empty list allows any text",
    )


class ResolutionSerializer(serializers.ModelSerializer):
    parse = serializers.UUIDField(source="parse.public_id")
    parser = serializers.CharField(source="parse.parser")
    parser_version = serializers.CharField(source="parse.parser_version")

    class Meta:
        model = AnchorResolution
        fields = [
            "parse",
            "parser",
            "parser_version",
            "status",
            "start",
            "end",
            "score",
            "candidates",
            "detail",
            "resolver_version",
        ]

    def to_representation(self, instance) -> dict:
        return representations.resolution_data(instance)


class AnchorSerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(source="public_id", read_only=True)
    highlight = serializers.SerializerMethodField()
    resolutions = ResolutionSerializer(source="prefetched_resolutions", many=True, read_only=True)
    pending = serializers.SerializerMethodField()
    created_by = serializers.CharField(
        source="created_by.username", default=None, allow_null=True, read_only=True
    )

    class Meta:
        model = GoldAnchor
        fields = [
            "id",
            "source_id",
            "quote",
            "grade",
            "page_hint",
            "occurrence",
            "highlight",
            "prefix",
            "suffix",
            "pending",
            "resolutions",
            "suggested",
            "created_by",
            "created_at",
        ]

    # The method fields declare the schema; rendering is representations.anchor_data's.
    def get_highlight(self, obj) -> dict | None:
        return representations.highlight(obj)

    def get_pending(self, obj) -> bool:
        return representations.is_pending(obj)

    def to_representation(self, instance) -> dict:
        return representations.anchor_data(instance)


class AnchorItemSerializer(serializers.Serializer):
    """The item an anchor is evidence for, as a document's anchor list names it."""

    set = serializers.CharField(source="evalset.slug")
    id = serializers.CharField(source="item_id")
    question = serializers.CharField()
    state = serializers.CharField()


class DocumentAnchorSerializer(AnchorSerializer):
    """An anchor on a document, with the item it answers (the document page draws these)."""

    item = AnchorItemSerializer(read_only=True)

    class Meta(AnchorSerializer.Meta):
        fields = [*AnchorSerializer.Meta.fields, "item"]

    def to_representation(self, instance) -> dict:
        item = self.fields["item"].to_representation(instance.item)
        return {**representations.anchor_data(instance), "item": item}


class SuggestedPassageSerializer(serializers.Serializer):
    """The suggested passage a highlight started from (a search result or a suggestion)."""

    # Kept as text: it is stored in the anchor's JSON as sent (a parse's public id).
    parse = serializers.RegexField(
        r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        error_messages={"invalid": "the suggested passage's parse must be a parse's id"},
    )
    start = serializers.IntegerField(min_value=0, max_value=2**31 - 1)
    end = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    via = serializers.ChoiceField(choices=["suggestions", "search"], required=False)
    rank = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=1000)


class AnchorCreateSerializer(StorableInput, serializers.Serializer):
    """Either a highlight (``parse``, ``start``, ``end``) or a typed ``source_id`` + ``quote``."""

    storable_model = GoldAnchor

    parse = serializers.UUIDField(required=False)
    start = serializers.IntegerField(required=False, min_value=0)
    end = serializers.IntegerField(required=False, min_value=0)
    source_id = serializers.CharField(required=False, max_length=255)
    quote = serializers.CharField(required=False, trim_whitespace=False, allow_blank=True)
    grade = serializers.IntegerField(required=False, default=2)
    page_hint = serializers.IntegerField(required=False, allow_null=True)
    occurrence = serializers.IntegerField(required=False, default=0)
    # The text around a typed quote (an undone deletion sends the deleted anchor's back).
    prefix = serializers.CharField(
        required=False, max_length=64, allow_blank=True, trim_whitespace=False
    )
    suffix = serializers.CharField(
        required=False, max_length=64, allow_blank=True, trim_whitespace=False
    )
    suggested = SuggestedPassageSerializer(required=False, allow_null=True)

    def validate(self, attrs):
        highlight = "parse" in attrs
        context = [k for k in ("prefix", "suffix") if k in attrs]
        if highlight and context:
            raise serializers.ValidationError(
                {
                    k: ["a highlight takes its context from the parse; send it without"]
                    for k in context
                }
            )
        if attrs.get("suggested") and not highlight:
            raise serializers.ValidationError(
                {"suggested": ["a suggested passage goes with a highlight (parse, start, end)"]}
            )
        typed = "quote" in attrs or "source_id" in attrs
        if highlight and typed:
            raise serializers.ValidationError(
                "send either a highlight (parse, start, end) or a typed quote "
                "(source_id, quote), not both"
            )
        if highlight:
            missing = [k for k in ("start", "end") if k not in attrs]
            if missing:
                raise serializers.ValidationError(
                    {k: ["a highlight needs parse, start and end"] for k in missing}
                )
        elif typed:
            missing = [k for k in ("source_id", "quote") if k not in attrs]
            if missing:
                raise serializers.ValidationError(
                    {k: ["a typed anchor needs source_id and quote"] for k in missing}
                )
        else:
            raise serializers.ValidationError(
                "send either a highlight (parse, start, end) or a typed quote (source_id, quote)"
            )
        return attrs


class AnchorUpdateSerializer(StorableInput, serializers.Serializer):
    storable_model = GoldAnchor

    grade = serializers.IntegerField()


class ResolutionConfirmSerializer(StorableInput, serializers.Serializer):
    """Place an anchor in one parse by hand: the offered candidate (no ``start``/``end``), or
    the span selected in that parse (code points, half-open)."""

    parse = serializers.UUIDField()
    start = serializers.IntegerField(required=False, min_value=0)
    end = serializers.IntegerField(required=False, min_value=0)


class ItemSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="item_id")
    author = serializers.CharField(source="author.username", default=None, allow_null=True)
    assignee = serializers.CharField(source="assignee.username", default=None, allow_null=True)
    anchors = AnchorSerializer(source="prefetched_anchors", many=True, read_only=True)
    is_answerable = serializers.SerializerMethodField()
    is_portable = serializers.SerializerMethodField()
    portability = serializers.SerializerMethodField()

    class Meta:
        model = EvalItem
        fields = [
            "id",
            "question",
            "qtype",
            "answer",
            "meta",
            "state",
            "author",
            "assignee",
            "row_version",
            "is_answerable",
            "is_portable",
            "portability",
            "anchors",
            "created_at",
            "updated_at",
        ]

    def get_is_answerable(self, obj) -> bool:
        return bool(obj.prefetched_anchors)

    def get_is_portable(self, obj) -> bool:
        return bool(obj.prefetched_anchors)

    def get_portability(self, obj) -> list[dict]:
        """Per parse version seen: how many of this item's anchors it found."""
        return item_portability(obj)

    def to_representation(self, instance) -> dict:
        return representations.item_data(instance)


class _UsernameField(serializers.SlugRelatedField):
    """A member of the context's ``workspace``, by username.

    Anyone else gets one answer, whether or not a user by that name exists, so the field
    cannot be used to find out which usernames exist.
    """

    def __init__(self, **kwargs):
        super().__init__(slug_field="username", queryset=User.objects.all(), **kwargs)

    def get_queryset(self):
        return User.objects.filter(memberships__workspace=self.context["workspace"])

    def to_internal_value(self, data):
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError:
            raise serializers.ValidationError(
                f"{str(data)!r} is not a member of {self.context['workspace'].slug!r}"
            ) from None


class ItemCreateSerializer(StorableInput, serializers.Serializer):
    storable_model = EvalItem

    id = serializers.CharField(max_length=128)
    question = serializers.CharField(allow_blank=True, trim_whitespace=False)
    qtype = serializers.CharField(max_length=64, required=False, allow_null=True, allow_blank=True)
    answer = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    meta = serializers.DictField(required=False)
    assignee = _UsernameField(required=False, allow_null=True)


class ItemUpdateSerializer(StorableInput, serializers.Serializer):
    storable_model = EvalItem

    row_version = serializers.IntegerField(
        help_text="the row_version you read; a stale one is refused with 409"
    )
    question = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    qtype = serializers.CharField(max_length=64, required=False, allow_null=True, allow_blank=True)
    answer = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    meta = serializers.DictField(required=False)
    assignee = _UsernameField(required=False, allow_null=True)
