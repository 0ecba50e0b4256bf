"""Experiment endpoints: short views over ``evalsets.experiments.services`` and
``selectors``. Every member reads; a reviewer or owner starts, cancels and uploads runs."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.utils.functional import cached_property
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.api import throttles
from evalsets.api.scoping import WorkspaceScoped
from evalsets.errors import InvalidInput
from evalsets.experiments import selectors, services
from evalsets.experiments.api import serializers as s


class _Base(WorkspaceScoped, APIView):
    resource = "experiment"
    throttle_classes = [throttles.ExperimentThrottle]

    @cached_property
    def evalset(self):
        return anchoring_selectors.evalset_in(self.workspace, self.kwargs["set_slug"])

    def experiment(self):
        return selectors.experiment_in(self.evalset, self.kwargs["experiment"])


class ExperimentListView(_Base):
    @extend_schema(
        operation_id="workspaces_evalsets_experiments_list",
        responses=inline_serializer(
            "ExperimentList", {"results": s.ExperimentSerializer(many=True)}
        ),
    )
    def get(self, request, *args, **kwargs):
        found = selectors.experiments(self.evalset)
        return Response({"results": s.ExperimentSerializer(found, many=True).data})

    @extend_schema(request=s.ExperimentCreateSerializer, responses={202: s.ExperimentSerializer})
    def post(self, request, *args, **kwargs):
        data = s.ExperimentCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        policy = {"policy": fields.pop("policy")}
        if "threshold" in fields:
            policy["threshold"] = fields.pop("threshold")
        experiment = services.experiment_start(
            evalset=self.evalset, user=request.user, policy=policy, **fields
        )
        found = selectors.experiment_in(self.evalset, experiment.public_id)
        return Response(s.ExperimentSerializer(found).data, status=status.HTTP_202_ACCEPTED)


class ExperimentDetailView(_Base):
    @extend_schema(responses=s.ExperimentSerializer)
    def get(self, request, *args, **kwargs):
        return Response(s.ExperimentSerializer(self.experiment()).data)


class ExperimentCancelView(_Base):
    @extend_schema(request=None, responses=s.ExperimentSerializer)
    def post(self, request, *args, **kwargs):
        experiment = services.experiment_cancel(experiment=self.experiment(), user=request.user)
        found = selectors.experiment_in(self.evalset, experiment.public_id)
        return Response(s.ExperimentSerializer(found).data)


class ExperimentRerunView(_Base):
    @extend_schema(request=None, responses={202: s.ExperimentSerializer})
    def post(self, request, *args, **kwargs):
        experiment = services.experiment_rerun(experiment=self.experiment(), user=request.user)
        found = selectors.experiment_in(self.evalset, experiment.public_id)
        return Response(s.ExperimentSerializer(found).data, status=status.HTTP_202_ACCEPTED)


class ExperimentResultsView(_Base):
    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    def get(self, request, *args, **kwargs):
        fmt = kwargs["fmt"]
        if fmt not in selectors.DOWNLOADS:
            known = ", ".join(selectors.DOWNLOADS)
            raise InvalidInput(f"no {fmt!r} download; choose from {known}", field="fmt")
        experiment = self.experiment()
        render, media_type = selectors.DOWNLOADS[fmt]
        response = HttpResponse(render(experiment), content_type=f"{media_type}; charset=utf-8")
        name = f"{self.evalset.slug}-experiment-{experiment.public_id}.{fmt}"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class ExperimentMissesView(_Base):
    @extend_schema(responses={200: dict})
    def get(self, request, *args, **kwargs):
        return Response({"results": selectors.misses(self.experiment())})


def _row(view, ref: str | None, field: str):
    """A row named by ``<experiment id>:<cell>``, or by a cell of the experiment in the path."""
    if ref and ":" in ref:
        return selectors.cell_by_ref(view.evalset, ref, field)
    return selectors.cell_of(view.experiment(), ref or 0)


class ExperimentCompareView(_Base):
    @extend_schema(responses={200: dict})
    def get(self, request, *args, **kwargs):
        params = request.query_params
        left = _row(self, params.get("left"), "left")
        right = _row(self, params.get("right"), "right")
        return Response(selectors.compare(left, right, params.get("metric")))


class ExperimentGateView(_Base):
    """The candidate is a row of the experiment in the path (``?cell=``, 0 by default), the
    baseline any row of the set (``?baseline=<experiment id>:<cell>``)."""

    @extend_schema(responses={200: dict})
    def get(self, request, *args, **kwargs):
        params = request.query_params
        candidate = _row(self, params.get("cell"), "cell")
        baseline = _row(self, params.get("baseline"), "baseline")
        try:
            tolerance = float(params.get("tolerance", 0))
        except ValueError:
            raise InvalidInput("tolerance must be a number", field="tolerance") from None
        return Response(selectors.gate(baseline, candidate, params.get("metric"), tolerance))


class _RunUpload(_Base):
    parser_classes = [MultiPartParser, FormParser]

    def read_input(self, request):
        data = s.RunUploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        # One byte past the limit is enough for the reader to name the file as too large,
        # and a huge upload is never read whole into memory.
        limit = settings.GROUNDWORK_MAX_RUN_BYTES
        for key in ("file", "chunks"):
            upload = fields.get(key)
            if upload is not None:
                fields[key] = (upload.read(limit + 1), upload.name or "run")
        return fields


class RunPreviewView(_RunUpload):
    @extend_schema(request=s.RunUploadSerializer, responses={200: dict})
    def post(self, request, *args, **kwargs):
        fields = self.read_input(request)
        plan = services.run_preview(
            evalset=self.evalset,
            user=request.user,
            release=fields["release"],
            data=fields["file"][0],
            chunks=fields["chunks"][0] if "chunks" in fields else None,
            fmt=fields["format"],
        )
        return Response(plan.to_dict())


class RunCommitView(_RunUpload):
    @extend_schema(request=s.RunUploadSerializer, responses={201: s.ExperimentSerializer})
    def post(self, request, *args, **kwargs):
        fields = self.read_input(request)
        experiment = services.run_commit(
            evalset=self.evalset,
            user=request.user,
            release=fields["release"],
            data=fields["file"][0],
            filename=fields["file"][1],
            name=fields["name"],
            k=fields["k"],
            chunks=fields["chunks"][0] if "chunks" in fields else None,
            fmt=fields["format"],
        )
        found = selectors.experiment_in(self.evalset, experiment.public_id)
        return Response(s.ExperimentSerializer(found).data, status=status.HTTP_201_CREATED)
