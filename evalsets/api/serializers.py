"""Input and output shapes of the API. Writes go through ``evalsets.services``."""

from __future__ import annotations

import contextlib

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer

from evalsets import representations
from evalsets.api.storable import StorableInput
from evalsets.models import (
    AnchorResolution,
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    Invitation,
    Membership,
    ParseVersion,
    Role,
    Workspace,
)
from evalsets.portability import item_portability
from evalsets.resolution import parse_health

User = get_user_model()
#: The longest user name an account can have: a longer one is refused before any password is
#: hashed (and before the log-in limit, whose table holds names of at most 255 characters).
USERNAME_MAX_CHARS = User._meta.get_field(User.USERNAME_FIELD).max_length


class TokenRequestSerializer(StorableInput, AuthTokenSerializer):
    """DRF's username and password, with the name's length and text checked first."""

    username = serializers.CharField(
        label="Username", write_only=True, max_length=USERNAME_MAX_CHARS
    )


class WorkspaceSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Workspace
        fields = ["slug", "name", "parser_settings", "created_at", "role"]
        read_only_fields = ["created_at", "role"]

    def get_role(self, obj) -> str | None:
        roles = self.context.get("roles", {})
        return roles.get(obj.pk)


class WorkspaceCreateSerializer(StorableInput, serializers.Serializer):
    slug = serializers.SlugField(max_length=64)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)


class WorkspaceUpdateSerializer(StorableInput, serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    parser_settings = serializers.JSONField(required=False)


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username")

    class Meta:
        model = Membership
        fields = ["username", "role", "created_at"]


class MemberCreateSerializer(StorableInput, serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices)


class InvitationSerializer(serializers.ModelSerializer):
    """What adding a member answers: the invitation, waiting for the invitee to accept.

    The same fields whether or not a user by that name exists (no timestamps, no ids)."""

    status = serializers.SerializerMethodField()

    class Meta:
        model = Invitation
        fields = ["username", "role", "status"]

    def get_status(self, invitation) -> str:
        return "invited"


class PendingInvitationSerializer(serializers.ModelSerializer):
    """A workspace's invitations as its owners see them."""

    invited_by = serializers.CharField(source="invited_by.username", default=None)

    class Meta:
        model = Invitation
        fields = ["username", "role", "invited_by", "created_at"]


class MyInvitationSerializer(serializers.ModelSerializer):
    """An invitation as the invitee sees it."""

    workspace = serializers.CharField(source="workspace.slug")
    workspace_name = serializers.CharField(source="workspace.name")
    invited_by = serializers.CharField(source="invited_by.username", default=None)

    class Meta:
        model = Invitation
        fields = ["workspace", "workspace_name", "role", "invited_by", "created_at"]


class MemberUpdateSerializer(StorableInput, serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class ParseSummarySerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(source="public_id", read_only=True)
    page_count = serializers.IntegerField(read_only=True)
    progress = serializers.SerializerMethodField()
    diagnostics = serializers.JSONField(
        read_only=True,
        help_text="what the parser noted: failed_pages, empty_pages (from 1), encoding, pages",
    )
    warnings = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="the diagnostics a reader should know, as sentences",
    )

    class Meta:
        model = ParseVersion
        fields = [
            "id",
            "parser",
            "parser_version",
            "origin",
            "status",
            "error",
            "error_code",
            "diagnostics",
            "warnings",
            "progress",
            "is_reference",
            "page_count",
            "created_at",
            "updated_at",
        ]

    def get_progress(self, obj) -> dict:
        return {"done": obj.progress_done, "total": obj.progress_total}


class ParseDetailSerializer(ParseSummarySerializer):
    page_starts = serializers.JSONField()
    text = serializers.CharField()
    health = serializers.SerializerMethodField()

    class Meta(ParseSummarySerializer.Meta):
        fields = [*ParseSummarySerializer.Meta.fields, "page_starts", "text", "health"]

    def get_health(self, obj) -> dict:
        return parse_health(obj)


class ParseBlockSerializer(StorableInput, serializers.Serializer):
    """One block of a context-grid ``ParsedDocument``: where it is and on which page."""

    start = serializers.IntegerField(min_value=0)
    end = serializers.IntegerField(min_value=0)
    page = serializers.IntegerField(min_value=1, required=False, allow_null=True)


def _offset(value, where: str, minimum: int = 0) -> int:
    """A whole number at least ``minimum``, as ``IntegerField`` takes it (``3``, ``"3"``)."""
    if isinstance(value, str) and len(value) < 20:
        with contextlib.suppress(ValueError):  # not a number: refused below, with the value
            value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise serializers.ValidationError(f"{where} must be a whole number, got {value!r:.40}")
    if value < minimum:
        raise serializers.ValidationError(f"{where} must be at least {minimum}, got {value}")
    return value


@extend_schema_field(serializers.ListField(child=serializers.IntegerField(min_value=0)))
class PageStartsField(serializers.Field):
    """Page offsets checked in one pass, refusing at the first bad one: a list field of
    integer fields costs a field call a value and answers an error for every bad one (a
    body of a million ``-1`` took 69 s and answered 111 MB)."""

    def to_internal_value(self, data):
        if not isinstance(data, list):
            raise serializers.ValidationError("page_starts must be a list of offsets")
        return [_offset(value, f"page_starts[{index}]") for index, value in enumerate(data)]

    def to_representation(self, value):
        return value


@extend_schema_field(ParseBlockSerializer(many=True))
class BlocksField(serializers.Field):
    """Blocks (start, end, page) checked in one pass, refusing at the first bad one, for the
    reason ``PageStartsField`` gives."""

    def to_internal_value(self, data):
        if not isinstance(data, list):
            raise serializers.ValidationError("blocks must be a list of {start, end, page}")
        return [_block(block, index) for index, block in enumerate(data)]

    def to_representation(self, value):
        return value


def _block(block, index: int) -> dict:
    if not isinstance(block, dict):
        raise serializers.ValidationError(f"blocks[{index}] must be an object")
    for name in ("start", "end"):
        if name not in block:
            raise serializers.ValidationError(f"blocks[{index}].{name} is required")
    page = block.get("page")
    return {
        "start": _offset(block["start"], f"blocks[{index}].start"),
        "end": _offset(block["end"], f"blocks[{index}].end"),
        "page": None if page is None else _offset(page, f"blocks[{index}].page", 1),
    }


class ParseCreateSerializer(StorableInput, serializers.Serializer):
    """A parse made elsewhere: ``text`` plus ``page_starts``, or context-grid style ``blocks``."""

    parser = serializers.CharField(max_length=64)
    parser_version = serializers.CharField(max_length=64, required=False, allow_blank=True)
    text = serializers.CharField(trim_whitespace=False)
    page_starts = PageStartsField(required=False)
    blocks = BlocksField(required=False)
    make_reference = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs):
        blocks = attrs.pop("blocks", None)
        if blocks is not None:
            if "page_starts" in attrs:
                raise serializers.ValidationError("send page_starts or blocks, not both")
            attrs["page_starts"] = page_starts_from_blocks(blocks)
        return attrs


def page_starts_from_blocks(blocks: list[dict]) -> list[int]:
    """Where each page begins, from blocks that carry page numbers (context-grid's layout)."""
    firsts: dict[int, int] = {}
    for index, block in enumerate(blocks):
        if block["end"] < block["start"]:
            raise serializers.ValidationError(
                {f"blocks[{index}]": [f"end {block['end']} is before start {block['start']}"]}
            )
        page = block.get("page")
        if page is not None:
            firsts[page] = min(firsts.get(page, block["start"]), block["start"])
    if not firsts:
        return [0]
    starts = [firsts[page] for page in sorted(firsts)]
    starts[0] = 0
    return starts


class DocumentSerializer(serializers.ModelSerializer):
    parses = ParseSummarySerializer(many=True, read_only=True)
    uploaded_by = serializers.CharField(
        source="uploaded_by.username", default=None, allow_null=True
    )

    class Meta:
        model = Document
        fields = ["source_id", "sha256", "size", "kind", "uploaded_by", "created_at", "parses"]


class DocumentCreateSerializer(StorableInput, serializers.Serializer):
    file = serializers.FileField(allow_empty_file=False)
    source_id = serializers.CharField(max_length=255, required=False, allow_blank=True)


class EvalSetSerializer(StorableInput, serializers.ModelSerializer):
    id = serializers.SlugField(source="slug", max_length=100)
    item_count = serializers.IntegerField(read_only=True, default=None, allow_null=True)

    class Meta:
        model = EvalSet
        fields = ["id", "name", "version", "source", "meta", "created_at", "item_count"]
        read_only_fields = ["version", "source", "created_at"]


class EvalSetUpdateSerializer(StorableInput, serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    meta = serializers.DictField(required=False)


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

    def validate(self, attrs):
        highlight = "parse" in attrs
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
