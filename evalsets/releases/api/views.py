"""Release and import endpoints: short views over ``evalsets.releases.services`` and
``evalsets.releases.imports``.

Everyone in the workspace can list releases, read them, compare them and download their
files; only an owner can make a release or import into a set.
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils.functional import cached_property
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets import validation
from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.api import downloads, throttles
from evalsets.api.scoping import WorkspaceScoped
from evalsets.api.storable import StrictJSONParser
from evalsets.errors import Conflict, InvalidInput
from evalsets.models import Release, ReleaseStatus
from evalsets.releases import imports
from evalsets.releases import services as releases_services
from evalsets.releases.api import serializers as s


class _ReleaseBase(WorkspaceScoped, APIView):
    resource = "release"
    throttle_classes = [throttles.ReleaseThrottle]

    @cached_property
    def evalset(self):
        return anchoring_selectors.evalset_in(self.workspace, self.kwargs["set_slug"])

    def releases(self):
        return (
            Release.objects.filter(evalset=self.evalset)
            .select_related("evalset__workspace", "created_by")
            .prefetch_related("files")
        )

    def release(self, version) -> Release:
        return get_object_or_404(self.releases(), version=version)


class ReleaseListView(_ReleaseBase):
    @extend_schema(
        operation_id="workspaces_evalsets_releases_list",
        responses=inline_serializer("ReleaseList", {"results": s.ReleaseSerializer(many=True)}),
    )
    def get(self, request, *args, **kwargs):
        return Response({"results": s.ReleaseSerializer(self.releases(), many=True).data})

    @extend_schema(request=s.ReleaseCreateSerializer, responses={202: s.ReleaseSerializer})
    def post(self, request, *args, **kwargs):
        data = s.ReleaseCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        release = releases_services.release_create(
            evalset=self.evalset, user=request.user, **data.validated_data
        )
        out = s.ReleaseSerializer(self.release(release.version)).data
        return Response(out, status=status.HTTP_202_ACCEPTED)


class ReleaseDetailView(_ReleaseBase):
    @extend_schema(responses=s.ReleaseSerializer)
    def get(self, request, *args, **kwargs):
        return Response(s.ReleaseSerializer(self.release(kwargs["version"])).data)


def _not_ready(release: Release) -> str:
    """Why a file of a release that is not ready is not served: its bytes are final only
    once the whole release is built, and what a client downloads must never change."""
    if release.status == ReleaseStatus.FAILED:
        return f"release {release.version} failed, so it has no files: {release.error}"
    return (
        f"release {release.version} is {release.status} ({release.percent}% built); its files "
        "can be downloaded once it is ready"
    )


class ReleaseFileView(_ReleaseBase):
    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    def get(self, request, *args, **kwargs):
        release = self.release(kwargs["version"])
        if release.status != ReleaseStatus.READY:
            raise Conflict(_not_ready(release), field="status")
        stored = release.files.filter(format=kwargs["fmt"]).first()
        if stored is None:
            built = ", ".join(f.format for f in release.files.all()) or "none yet"
            raise Http404(
                f"release {release.version} has no {kwargs['fmt']!r} file; built: {built}"
            )
        # Streamed from the storage a chunk at a time, never read whole into this process.
        response = downloads.stored_file(
            request,
            name=stored.file.name,
            store=stored.file.storage,
            size=stored.size,
            filename=stored.filename,
            content_type=stored.media_type,
            etag=f'"{stored.sha256}"',
        )
        response["X-Content-SHA256"] = stored.sha256
        return response


class ReleaseCompareView(_ReleaseBase):
    @extend_schema(responses={200: dict})
    def get(self, request, *args, **kwargs):
        older = self.release(kwargs["version"])
        newer = self.release(kwargs["other"])
        return Response(releases_services.release_compare(older, newer))


# -- imports ----------------------------------------------------------------------------------


class _ImportBase(WorkspaceScoped, APIView):
    resource = "import"
    throttle_classes = [throttles.ImportThrottle]
    parser_classes = [MultiPartParser, FormParser, StrictJSONParser]
    serializer_class = s.ImportSerializer

    def read_input(self, request):
        data = self.serializer_class(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        validation.check_upload_size(upload.size, upload.name, settings.GROUNDWORK_MAX_UPLOAD_BYTES)
        try:
            content = upload.read()
        except OSError as exc:
            raise InvalidInput(f"the upload could not be read: {exc}", field="file") from None
        return data.validated_data, content, upload.name or "upload"

    def target(self, fields):
        """``(evalset or None, evalset id)``."""
        return self.evalset, self.evalset.slug

    @cached_property
    def evalset(self):
        return anchoring_selectors.evalset_in(self.workspace, self.kwargs["set_slug"])


class ImportPreviewView(_ImportBase):
    @extend_schema(request=s.ImportSerializer, responses={200: dict})
    def post(self, request, *args, **kwargs):
        fields, content, filename = self.read_input(request)
        evalset, slug = self.target(fields)
        plan = imports.import_plan(
            workspace=self.workspace,
            evalset=evalset,
            evalset_id=slug,
            data=content,
            filename=filename,
            fmt=fields.get("format"),
            user=request.user,
        )
        return Response(plan.to_dict())


class ImportCommitView(_ImportBase):
    @extend_schema(request=s.ImportSerializer, responses={201: dict})
    def post(self, request, *args, **kwargs):
        fields, content, filename = self.read_input(request)
        evalset, slug = self.target(fields)
        evalset, plan, record = imports.import_commit(
            workspace=self.workspace,
            user=request.user,
            evalset=evalset,
            evalset_id=slug,
            data=content,
            filename=filename,
            fmt=fields.get("format"),
            token=fields.get("token") or None,
            name=fields.get("name", ""),
        )
        out = plan.to_dict()
        out["evalset"] = evalset.slug
        out["import"] = str(record.public_id)
        changed = plan.counts()["create"] + plan.counts()["update"]
        return Response(out, status=status.HTTP_201_CREATED if changed else status.HTTP_200_OK)


class _NewSet:
    serializer_class = s.NewSetImportSerializer

    def target(self, fields):
        slug = fields["evalset"]
        if anchoring_selectors.evalsets(self.workspace).filter(slug=slug).exists():
            raise Conflict(
                f"an eval set called {slug!r} already exists in {self.workspace.slug!r}; "
                f"import into it at /api/workspaces/{self.workspace.slug}/evalsets/{slug}/imports/",
                field="evalset",
            )
        return None, slug


class NewSetImportPreviewView(_NewSet, ImportPreviewView):
    pass


class NewSetImportCommitView(_NewSet, ImportCommitView):
    pass
