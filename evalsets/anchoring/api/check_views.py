"""Checks a page runs before it saves: nothing is written here.

``POST .../evalsets/{set}/similar/`` answers the set's questions that a question being written
repeats or nearly repeats, with the dashboard's own near-duplicate test
(``dashboard.near_duplicates_of``), so the item editor and the new-item form warn before the
duplicate is saved instead of the dashboard finding it later.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.api.scoping import WorkspaceScoped
from evalsets.api.storable import StorableInput
from evalsets.review import dashboard
from evalsets.validation import MAX_QUESTION_CHARS


class SimilarQuestionSerializer(StorableInput, serializers.Serializer):
    question = serializers.CharField(
        max_length=MAX_QUESTION_CHARS, allow_blank=True, trim_whitespace=False
    )
    exclude = serializers.CharField(
        required=False, allow_blank=True, max_length=128, help_text="the item being edited"
    )


class SimilarSerializer(serializers.Serializer):
    id = serializers.CharField()
    question = serializers.CharField()
    score = serializers.IntegerField(help_text="0-100, word order and case ignored")
    exact = serializers.BooleanField()


class SimilarListSerializer(serializers.Serializer):
    threshold = serializers.IntegerField()
    similar = SimilarSerializer(many=True)


class SimilarQuestionsView(WorkspaceScoped, APIView):
    """The set's questions that ``question`` repeats or nearly repeats (writes nothing)."""

    resource = "similar-questions"
    serializer_class = SimilarQuestionSerializer

    @extend_schema(request=SimilarQuestionSerializer, responses=SimilarListSerializer)
    def post(self, request, ws: str, set_slug: str):
        evalset = anchoring_selectors.evalset_in(self.workspace, set_slug)
        data = SimilarQuestionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        others = anchoring_selectors.questions_of(
            evalset, exclude=data.validated_data.get("exclude", "")
        )
        similar = dashboard.near_duplicates_of(data.validated_data["question"], others)
        return Response({"threshold": dashboard.NEAR_DUPLICATE_SCORE, "similar": similar})
