"""What is waiting in the background for one workspace, and how fast it drains.

After a broker outage the writes are saved but some of their background work may not have
been queued; ``evalsets.sweep`` queues it again. This endpoint lets a person (or a page) see
what is still outstanding meanwhile, counted only over the caller's workspace.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets import sweep
from evalsets.api.scoping import WorkspaceScoped


class PendingSerializer(serializers.Serializer):
    parses_queued = serializers.IntegerField(help_text="parses waiting for a worker")
    parses_running = serializers.IntegerField(help_text="parses a worker is reading now")
    parses_missing_resolutions = serializers.IntegerField(
        help_text="ready parses in which some anchors are not resolved yet"
    )
    resolutions_missing = serializers.IntegerField(
        help_text="anchor x parse resolutions still to compute"
    )
    anchors_waiting_for_their_file = serializers.IntegerField(
        help_text="imported anchors whose document is not uploaded yet"
    )
    releases_queued = serializers.IntegerField(help_text="releases waiting for a worker")
    releases_building = serializers.IntegerField(help_text="releases being built now")
    waiting = serializers.IntegerField(
        help_text="everything above that workers will finish by themselves (not the anchors "
        "waiting for their file); the workspace page refreshes while this is above zero"
    )
    resolutions_done_last_minute = serializers.IntegerField(
        help_text="resolutions written in the last minute: how fast the backlog drains"
    )
    resolutions_per_second = serializers.FloatField(
        help_text="resolutions_done_last_minute per second, to two decimals"
    )
    resolutions_eta_seconds = serializers.IntegerField(
        allow_null=True,
        help_text="resolutions_missing at the last minute's rate, in seconds; null while "
        "nothing is missing or nothing was resolved in the last minute",
    )


class PendingView(WorkspaceScoped, APIView):
    """Background work still outstanding in this workspace (any member may read it)."""

    resource = "pending"
    serializer_class = PendingSerializer

    @extend_schema(responses=PendingSerializer)
    def get(self, request, ws: str):
        summary = sweep.pending_summary(workspace=self.workspace)
        return Response(PendingSerializer(summary).data)
