"""Input and output shapes of the experiments API."""

from __future__ import annotations

from rest_framework import serializers

from evalsets.api.storable import StorableInput
from evalsets.experiments import selectors
from evalsets.models import Experiment, ExperimentCell


class ExperimentCreateSerializer(StorableInput, serializers.Serializer):
    release = serializers.IntegerField(min_value=1)
    parsers = serializers.ListField(child=serializers.CharField(max_length=64), max_length=8)
    chunkers = serializers.ListField(child=serializers.CharField(max_length=128), max_length=8)
    retrievers = serializers.ListField(child=serializers.CharField(max_length=64), max_length=8)
    k = serializers.IntegerField(min_value=1, max_value=50, default=5)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    threshold = serializers.FloatField(required=False, min_value=0.01, max_value=1.0)
    policy = serializers.ChoiceField(
        choices=["coverage", "iou", "containment"], required=False, default="coverage"
    )


class RunUploadSerializer(serializers.Serializer):
    release = serializers.IntegerField(min_value=1)
    file = serializers.FileField()
    chunks = serializers.FileField(required=False)
    format = serializers.ChoiceField(choices=["jsonl", "trec"], default="jsonl")
    name = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    k = serializers.IntegerField(min_value=1, max_value=50, default=5)


class CellSerializer(serializers.ModelSerializer):
    cell = serializers.IntegerField(source="position")
    name = serializers.SerializerMethodField()
    percent = serializers.IntegerField()

    class Meta:
        model = ExperimentCell
        fields = [
            "cell",
            "name",
            "parser",
            "chunker",
            "retriever",
            "status",
            "progress_done",
            "progress_total",
            "percent",
            "attempts",
            "error",
            "summary",
        ]

    def get_name(self, obj) -> str:
        return selectors.row_name(obj)


class ExperimentSerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(source="public_id")
    release = serializers.IntegerField(source="release.version")
    created_by = serializers.CharField(source="created_by.username", default=None)
    cells = CellSerializer(many=True)
    questions = serializers.SerializerMethodField()

    class Meta:
        model = Experiment
        fields = [
            "id",
            "kind",
            "name",
            "release",
            "status",
            "error",
            "parsers",
            "chunkers",
            "retrievers",
            "k",
            "policy",
            "seed",
            "questions",
            "upload",
            "created_by",
            "created_at",
            "finished_at",
            "cells",
        ]

    def get_questions(self, obj) -> int:
        return len(obj.questions)
