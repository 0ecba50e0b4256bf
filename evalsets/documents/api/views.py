"""API views of documents and their parses."""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.utils.functional import cached_property
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from evalsets import idempotency
from evalsets.anchoring.api import serializers as anchoring_serializers
from evalsets.api import throttles
from evalsets.api.body_limit import check_body_size
from evalsets.api.idempotency import Made, create_once
from evalsets.api.scoping import WorkspaceScoped
from evalsets.api.storable import StrictJSONParser
from evalsets.documents import ingest
from evalsets.documents import selectors as documents_selectors
from evalsets.documents import services as documents_services
from evalsets.documents.api import serializers as documents_serializers


class DocumentViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    serializer_class = documents_serializers.DocumentSerializer
    throttle_classes = [throttles.UploadThrottle]
    resource = "document"
    parser_classes = [MultiPartParser, FormParser, StrictJSONParser]

    def get_queryset(self):
        if self._fake():
            return documents_selectors.documents(None).none()
        return documents_selectors.documents(self.workspace).select_related("uploaded_by")

    def get_object(self):
        return get_object_or_404(self.get_queryset(), source_id=self.kwargs["doc"])

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(
            documents_serializers.DocumentSerializer(page, many=True).data
        )

    @extend_schema(
        request=documents_serializers.DocumentCreateSerializer,
        responses={201: documents_serializers.DocumentSerializer},
    )
    def create(self, request, *args, **kwargs):
        data = documents_serializers.DocumentCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)

        def make() -> Made:
            document, created = documents_services.document_upload(
                workspace=self.workspace,
                user=request.user,
                upload=data.validated_data["file"],
                source_id=data.validated_data.get("source_id") or None,
            )
            if created:
                # After the upload's commit: a retry whose key was not recorded still finds
                # the same bytes stored (an upload is kept once per content) and gets 200.
                idempotency.record("document", document.pk)
            return self._shown(document.pk, duplicate=not created), document.pk, created

        return create_once(request, "document", make, self._shown)

    def _shown(self, pk: int, duplicate: bool = False) -> dict:
        out = documents_serializers.DocumentSerializer(self.get_queryset().get(pk=pk)).data
        out["duplicate_of_existing"] = duplicate
        return out

    def retrieve(self, request, *args, **kwargs):
        return Response(documents_serializers.DocumentSerializer(self.get_object()).data)

    def destroy(self, request, *args, **kwargs):
        documents_services.document_delete(document=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        request=None, responses=anchoring_serializers.DocumentAnchorSerializer(many=True)
    )
    @action(detail=True, methods=["get"])
    def anchors(self, request, *args, **kwargs):
        """Every anchor on this document, in reading order, with its item and where it lies
        in each parse."""
        page = self.paginate_queryset(
            documents_selectors.document_anchors(self.get_object(), reader=self.membership)
        )
        return self.get_paginated_response(
            anchoring_serializers.DocumentAnchorSerializer(page, many=True).data
        )

    @extend_schema(
        request=None, responses={202: documents_serializers.ParseSummarySerializer(many=True)}
    )
    @action(detail=True, methods=["post"])
    def reparse(self, request, *args, **kwargs):
        """Queue parsers whose current version has not read this document yet."""
        queued = ingest.document_reparse(document=self.get_object())
        return Response(
            documents_serializers.ParseSummarySerializer(queued, many=True).data,
            status=status.HTTP_202_ACCEPTED,
        )


class ParseViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    serializer_class = documents_serializers.ParseSummarySerializer
    throttle_classes = [throttles.ParseUploadThrottle]
    resource = "parse"
    lookup_url_kwarg = "parse"

    @cached_property
    def document(self):
        return get_object_or_404(
            documents_selectors.documents(self.workspace).only("pk", "source_id", "workspace"),
            source_id=self.kwargs["doc"],
        )

    def get_queryset(self):
        if self._fake():
            return documents_selectors.parses(None).none()
        return documents_selectors.parses(self.document)

    def get_object(self):
        return get_object_or_404(self.get_queryset(), public_id=self.kwargs["parse"])

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset().defer("text"))
        return self.get_paginated_response(
            documents_serializers.ParseSummarySerializer(page, many=True).data
        )

    @extend_schema(
        request=documents_serializers.ParseCreateSerializer,
        responses={201: documents_serializers.ParseDetailSerializer},
    )
    def create(self, request, *args, **kwargs):
        check_body_size(
            request,
            settings.GROUNDWORK_MAX_PARSE_UPLOAD_BYTES,
            "GROUNDWORK_MAX_PARSE_UPLOAD_MB",
            "a parse's body",
        )
        data = documents_serializers.ParseCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        parse = documents_services.parse_version_add(
            document=self.document, user=request.user, **data.validated_data
        )
        return Response(
            documents_serializers.ParseDetailSerializer(
                parse, context={"membership": self.membership}
            ).data,
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(responses=documents_serializers.ParseDetailSerializer)
    def retrieve(self, request, *args, **kwargs):
        return Response(
            documents_serializers.ParseDetailSerializer(
                self.get_object(), context={"membership": self.membership}
            ).data
        )

    def destroy(self, request, *args, **kwargs):
        documents_services.parse_delete(parse=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=documents_serializers.ParseSummarySerializer)
    @action(detail=True, methods=["post"])
    def reference(self, request, *args, **kwargs):
        """Make this parse the one annotators read and highlight."""
        parse = documents_services.parse_make_reference(parse=self.get_object())
        return Response(documents_serializers.ParseSummarySerializer(parse).data)
