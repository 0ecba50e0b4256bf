"""Serializers of documents and parses."""

from __future__ import annotations

import contextlib

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from evalsets.anchoring.resolution import parse_health
from evalsets.api.storable import StorableInput
from evalsets.models import (
    Document,
    ParseVersion,
)


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
        # A member sees the counts of the anchors they may read (blind overlap).
        return parse_health(obj, reader=self.context.get("membership"))


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
