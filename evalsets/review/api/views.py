"""Review endpoints: workflow actions, comments, history, assignment queues, the dashboard.

Each view names its row of ``evalsets.access.ROLES`` (the role each action needs), checked before it
touches anything; the services in ``evalsets.review`` (workflow, comments, assignments) hold
the rules (legal transitions, four eyes, row versions, who may be given or ask for which kind
of work).
"""

from __future__ import annotations

import uuid

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils.functional import cached_property
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.response import Response

from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.anchoring.api import serializers as anchoring_serializers
from evalsets.api.scoping import WorkspaceScoped
from evalsets.errors import InvalidInput
from evalsets.models import (
    AssignmentKind,
    Comment,
    EvalItem,
    GoldAnchor,
    ItemAssignment,
    ItemEvent,
)
from evalsets.review import adjudication, assignments, comments, dashboard, workflow
from evalsets.review import selectors as review_selectors
from evalsets.review.api import serializers as rs


class _ReviewScoped(WorkspaceScoped):
    """The eval set and item named in the URL, within the caller's workspace."""

    @cached_property
    def evalset(self):
        return anchoring_selectors.evalset_in(self.workspace, self.kwargs["set_slug"])

    @cached_property
    def item(self) -> EvalItem:
        return get_object_or_404(
            EvalItem.objects.filter(evalset=self.evalset).select_related("evalset__workspace"),
            item_id=self.kwargs["item"],
        )

    def anchor_of_item(self, public_id, field: str = "anchor") -> GoldAnchor | None:
        if public_id is None:
            return None
        anchor = GoldAnchor.objects.filter(item=self.item, public_id=public_id).first()
        if anchor is None:
            raise InvalidInput(
                f"eval item {self.item.item_id!r} has no anchor {str(public_id)!r}", field=field
            )
        return anchor


def _result(item: EvalItem, waiting_for: list[str] | None = None) -> Response:
    data = rs.TransitionResultSerializer({"item": item, "waiting_for": waiting_for or []}).data
    return Response(data)


class WorkflowViewSet(_ReviewScoped, viewsets.GenericViewSet):
    """``submit``, ``approve``, ``request-changes`` and ``reopen`` one item."""

    serializer_class = rs.TransitionResultSerializer
    resource = "workflow"

    @extend_schema(request=rs.SubmitSerializer, responses=rs.TransitionResultSerializer)
    def submit(self, request, *args, **kwargs):
        """Send the item for review (annotator or above)."""
        data = rs.SubmitSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item, waiting = workflow.item_submit(
            item=self.item,
            user=request.user,
            row_version=data.validated_data.get("row_version"),
            comment=data.validated_data.get("comment", ""),
        )
        return _result(item, waiting)

    @extend_schema(request=rs.ApproveSerializer, responses=rs.TransitionResultSerializer)
    def approve(self, request, *args, **kwargs):
        """Approve the version you reviewed (reviewer or owner; not your own item)."""
        data = rs.ApproveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = workflow.item_approve(
            item=self.item,
            user=request.user,
            row_version=data.validated_data["row_version"],
            comment=data.validated_data.get("comment", ""),
        )
        return _result(item)

    @extend_schema(request=rs.RequestChangesSerializer, responses=rs.TransitionResultSerializer)
    def request_changes(self, request, *args, **kwargs):
        """Send the item back with a comment saying what to change (reviewer or owner)."""
        data = rs.RequestChangesSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = workflow.item_request_changes(
            item=self.item,
            user=request.user,
            row_version=data.validated_data["row_version"],
            comment=data.validated_data["comment"],
            anchor=self.anchor_of_item(data.validated_data.get("anchor")),
        )
        return _result(item)

    @extend_schema(request=rs.ReopenSerializer, responses=rs.TransitionResultSerializer)
    def reopen(self, request, *args, **kwargs):
        """Send an approved item back to draft (owner); it leaves future releases."""
        data = rs.ReopenSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = workflow.item_reopen(
            item=self.item, user=request.user, reason=data.validated_data.get("reason", "")
        )
        return _result(item)


class AdjudicationViewSet(_ReviewScoped, viewsets.GenericViewSet):
    """An overlapped item's versions side by side (GET), and settling it (POST): pick one
    annotator's version or keep a chosen subset of anchors (reviewer or owner who did not
    annotate it). See ``evalsets.review.adjudication``."""

    serializer_class = None
    resource = "adjudication"

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def retrieve(self, request, *args, **kwargs):
        return Response(adjudication.versions(self.item, user=request.user))

    @extend_schema(request=rs.AdjudicateSerializer, responses={200: OpenApiTypes.OBJECT})
    def create(self, request, *args, **kwargs):
        data = rs.AdjudicateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        done = adjudication.adjudicate(
            item=self.item,
            user=request.user,
            row_version=fields["row_version"],
            pick=fields.get("pick"),
            keep=fields.get("keep"),
            reason=fields.get("reason", ""),
        )
        item = done["item"]
        return Response(
            {
                "id": item.item_id,
                "state": item.state,
                "row_version": item.row_version,
                "kept": done["kept"],
                "removed": done["removed"],
            }
        )


class CommentViewSet(_ReviewScoped, viewsets.GenericViewSet):
    """Comments on an item or one of its anchors, threaded by ``parent``; oldest first."""

    serializer_class = rs.CommentSerializer
    resource = "comment"

    def get_queryset(self):
        if self._fake():
            return Comment.objects.none()
        return Comment.objects.filter(item=self.item).select_related("author", "parent")

    @extend_schema(
        parameters=[OpenApiParameter("anchor", str, description="only comments on this anchor")]
    )
    def list(self, request, *args, **kwargs):
        queryset = self.get_queryset()
        anchor = request.query_params.get("anchor")
        if anchor:
            queryset = queryset.filter(anchor_uuid=_uuid(anchor, "anchor"))
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(rs.CommentSerializer(page, many=True).data)

    @extend_schema(request=rs.CommentCreateSerializer, responses={201: rs.CommentSerializer})
    def create(self, request, *args, **kwargs):
        data = rs.CommentCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        parent = None
        if data.validated_data.get("parent"):
            parent = Comment.objects.filter(
                item=self.item, public_id=data.validated_data["parent"]
            ).first()
            if parent is None:
                raise InvalidInput(
                    f"eval item {self.item.item_id!r} has no comment "
                    f"{str(data.validated_data['parent'])!r} to reply to",
                    field="parent",
                )
        comment = comments.comment_add(
            item=self.item,
            user=request.user,
            body=data.validated_data["body"],
            anchor=self.anchor_of_item(data.validated_data.get("anchor")),
            parent=parent,
        )
        return Response(
            rs.CommentSerializer(self.get_queryset().get(pk=comment.pk)).data,
            status=status.HTTP_201_CREATED,
        )


def _uuid(value: str, field: str):
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidInput(
            f"{field} must be an anchor id (a UUID), got {value!r}", field=field
        ) from None


class HistoryViewSet(_ReviewScoped, viewsets.GenericViewSet):
    """An item's audit trail, oldest first; it outlives the item and its eval set."""

    serializer_class = rs.EventSerializer
    resource = "history"

    def get_queryset(self):
        if self._fake():
            return ItemEvent.objects.none()
        return review_selectors.history(
            workspace=self.workspace,
            evalset_slug=self.kwargs["set_slug"],
            item_id=self.kwargs["item"],
            reader=self.membership,
        )

    def list(self, request, *args, **kwargs):
        queryset = self.get_queryset()
        if not queryset.exists():
            raise Http404("no such eval item, and no history for that id")
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(rs.EventSerializer(page, many=True).data)


class AssignmentViewSet(_ReviewScoped, viewsets.GenericViewSet):
    """Who has which item to annotate or review; owners assign."""

    serializer_class = rs.AssignmentSerializer
    lookup_url_kwarg = "assignment"
    resource = "assignment"

    def get_queryset(self):
        if self._fake():
            return ItemAssignment.objects.none()
        return ItemAssignment.objects.filter(item__evalset=self.evalset).select_related(
            "item", "user", "assigned_by"
        )

    @extend_schema(
        parameters=[
            OpenApiParameter("user", str),
            OpenApiParameter("kind", str, enum=AssignmentKind.values),
            OpenApiParameter("open", bool, description="only those not done yet"),
        ]
    )
    def list(self, request, *args, **kwargs):
        queryset = self.get_queryset()
        params = request.query_params
        if params.get("user"):
            queryset = queryset.filter(user__username=params["user"])
        if params.get("kind"):
            if params["kind"] not in AssignmentKind.values:
                raise InvalidInput(
                    f"kind must be annotate or review, got {params['kind']!r}", field="kind"
                )
            queryset = queryset.filter(kind=params["kind"])
        if params.get("open") in ("1", "true", "yes"):
            queryset = queryset.filter(review_selectors.open_assignments())
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(rs.AssignmentSerializer(page, many=True).data)

    @extend_schema(
        request=rs.AssignmentCreateSerializer, responses={201: rs.AssignmentResultSerializer}
    )
    def create(self, request, *args, **kwargs):
        """Assign the listed items (or the whole set) round-robin over ``users`` (owner)."""
        data = rs.AssignmentCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = assignments.assignments_create(
            evalset=self.evalset,
            by=request.user,
            usernames=data.validated_data["users"],
            kind=data.validated_data["kind"],
            item_ids=data.validated_data.get("items"),
            overlap=data.validated_data["overlap"],
        )
        return Response(rs.AssignmentResultSerializer(result).data, status=status.HTTP_201_CREATED)

    def destroy(self, request, *args, **kwargs):
        assignment = get_object_or_404(self.get_queryset(), public_id=kwargs["assignment"])
        assignments.assignment_delete(assignment=assignment, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class NextItemViewSet(_ReviewScoped, viewsets.GenericViewSet):
    """The next item in my queue: ``?role=annotate`` or ``?role=review``.

    Any member may ask; the queue itself needs the role of its kind of work (``access.WORK``),
    checked by ``selectors.queue``.
    """

    serializer_class = anchoring_serializers.ItemSerializer
    resource = "next-item"

    @extend_schema(
        parameters=[OpenApiParameter("role", str, enum=AssignmentKind.values, required=True)],
        responses=rs.NextItemSerializer,
    )
    def retrieve(self, request, *args, **kwargs):
        query = rs.NextItemQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        role = query.validated_data["role"]
        mine = review_selectors.queue(evalset=self.evalset, user=request.user, role=role)
        first = mine.first()
        item = None
        if first is not None:
            (shown,) = anchoring_selectors.with_anchors(
                [anchoring_selectors.items(self.evalset).get(pk=first.item_id)],
                reader=self.membership,
            )
            item = anchoring_serializers.ItemSerializer(shown).data
        return Response({"role": role, "remaining": mine.count(), "item": item})


class DashboardViewSet(_ReviewScoped, viewsets.GenericViewSet):
    """The eval set's figures: states, people, throughput, resolution health, agreement."""

    serializer_class = None
    resource = "dashboard"

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def retrieve(self, request, *args, **kwargs):
        return Response(dashboard.evalset_dashboard(self.evalset))
