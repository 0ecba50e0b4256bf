"""Input and output shapes of the release and import API."""

from __future__ import annotations

from rest_framework import serializers

from evalsets.api.storable import StorableInput
from evalsets.models import Release, ReleaseFile
from evalsets.releases import representations


class ReleaseCreateSerializer(StorableInput, serializers.Serializer):
    formats = serializers.ListField(child=serializers.CharField(max_length=32))
    #: Defaults to approved only; any other state must be named here explicitly.
    include_states = serializers.ListField(
        child=serializers.CharField(max_length=20), required=False
    )
    gold_parser = serializers.CharField(max_length=64, required=False, allow_blank=True)
    #: Per document kind: a parser, or "reference" (each document's own reference parse).
    gold_parsers = serializers.DictField(
        child=serializers.CharField(max_length=64, allow_blank=True), required=False
    )


class ReleaseFileSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = ReleaseFile
        fields = [
            "format",
            "filename",
            "media_type",
            "size",
            "sha256",
            "rows",
            "notes",
            "counts",
            "url",
        ]

    def get_url(self, obj) -> str:
        return representations.release_file_url(obj)

    def to_representation(self, instance) -> dict:
        return representations.release_file_data(instance)


class ReleaseSerializer(serializers.ModelSerializer):
    evalset = serializers.CharField(source="evalset.slug")
    created_by = serializers.CharField(source="created_by.username", default=None, allow_null=True)
    percent = serializers.IntegerField()
    files = ReleaseFileSerializer(many=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Release
        fields = [
            "evalset",
            "version",
            "status",
            "percent",
            "progress_done",
            "progress_total",
            "created_by",
            "created_at",
            "frozen_at",
            "finished_at",
            "resolver_version",
            "include_states",
            "includes_unapproved",
            "formats",
            "gold_parser",
            "gold_parsers",
            "parses_used",
            "item_count",
            "notes",
            "error",
            "files",
            "url",
        ]

    def get_url(self, obj) -> str:
        return representations.release_url(obj)

    def to_representation(self, instance) -> dict:
        return representations.release_data(instance)


class ImportSerializer(StorableInput, serializers.Serializer):
    file = serializers.FileField()
    format = serializers.CharField(max_length=32, required=False, allow_blank=True)
    token = serializers.CharField(max_length=64, required=False, allow_blank=True)


class NewSetImportSerializer(ImportSerializer):
    evalset = serializers.SlugField(max_length=100)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
