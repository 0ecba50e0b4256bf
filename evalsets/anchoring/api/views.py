"""API views of eval sets, items and anchors."""

from __future__ import annotations

import django_filters
from django.db.models import Count
from django.shortcuts import get_object_or_404
from django.utils.functional import cached_property
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.response import Response

from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.anchoring import services as anchoring_services
from evalsets.anchoring.api import serializers as anchoring_serializers
from evalsets.anchoring.portability import evalset_portability
from evalsets.api.idempotency import Made, create_once
from evalsets.api.scoping import WorkspaceScoped
from evalsets.documents import comparison
from evalsets.documents import selectors as documents_selectors
from evalsets.models import EvalItem, ItemState
from evalsets.passages import selectors as passages_selectors
from evalsets.review import selectors as review_selectors


class EvalSetViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    serializer_class = anchoring_serializers.EvalSetSerializer
    resource = "evalset"

    def get_queryset(self):
        if self._fake():
            return anchoring_selectors.evalsets(None).none()
        # An aggregate drops Meta.ordering; say it again so pages are stable.
        return (
            anchoring_selectors.evalsets(self.workspace)
            .annotate(item_count=Count("items"))
            .order_by("slug")
        )

    def get_object(self):
        return get_object_or_404(self.get_queryset(), slug=self.kwargs["set_slug"])

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(
            anchoring_serializers.EvalSetSerializer(page, many=True).data
        )

    def create(self, request, *args, **kwargs):
        data = anchoring_serializers.EvalSetSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        evalset = anchoring_services.evalset_create(
            workspace=self.workspace,
            user=request.user,
            slug=data.validated_data["slug"],
            name=data.validated_data.get("name", ""),
            meta=data.validated_data.get("meta"),
        )
        return Response(
            anchoring_serializers.EvalSetSerializer(self.get_queryset().get(pk=evalset.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    def retrieve(self, request, *args, **kwargs):
        evalset = self.get_object()
        data = anchoring_serializers.EvalSetSerializer(evalset).data
        data["portability"] = evalset_portability(evalset)
        data["next_item_id"] = anchoring_selectors.next_item_id(evalset)
        return Response(data)

    @extend_schema(
        request=anchoring_serializers.EvalSetUpdateSerializer,
        responses=anchoring_serializers.EvalSetSerializer,
    )
    def partial_update(self, request, *args, **kwargs):
        data = anchoring_serializers.EvalSetUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        evalset = anchoring_services.evalset_update(
            evalset=self.get_object(), **data.validated_data
        )
        return Response(
            anchoring_serializers.EvalSetSerializer(self.get_queryset().get(pk=evalset.pk)).data
        )

    def destroy(self, request, *args, **kwargs):
        anchoring_services.evalset_delete(evalset=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class ItemFilter(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(choices=ItemState.choices)
    qtype = django_filters.CharFilter()
    assignee = django_filters.CharFilter(
        method="assigned",
        label="the item's assignee, or one of the annotators it is assigned to with overlap",
    )
    q = django_filters.CharFilter(
        method="search", label="words each in the item's id, question or answer (any case)"
    )

    class Meta:
        model = EvalItem
        fields = ["state", "qtype", "assignee", "q"]

    def search(self, queryset, name, value):
        return anchoring_selectors.search_items(queryset, value)

    def assigned(self, queryset, name, value):
        return queryset.filter(review_selectors.assigned_to(value))


class _InSet(WorkspaceScoped):
    @cached_property
    def evalset(self):
        return anchoring_selectors.evalset_in(self.workspace, self.kwargs["set_slug"])


class ItemViewSet(_InSet, viewsets.GenericViewSet):
    serializer_class = anchoring_serializers.ItemSerializer
    filterset_class = ItemFilter
    # Setting ``assignee`` needs access.ASSIGN, and an approved item refuses every change
    # until it is reopened: both are checked by the services, on every path.
    resource = "item"
    lookup_url_kwarg = "item"

    def get_queryset(self):
        if self._fake():
            return EvalItem.objects.none()
        return anchoring_selectors.items(self.evalset)

    def get_object(self):
        return get_object_or_404(self.get_queryset(), item_id=self.kwargs["item"])

    def _shown(self, pk: int) -> dict:
        """The item as the API shows it, read again after a write."""
        (item,) = anchoring_selectors.with_anchors(
            [self.get_queryset().get(pk=pk)], reader=self.membership
        )
        return anchoring_serializers.ItemSerializer(item).data

    def list(self, request, *args, **kwargs):
        queryset = self.filter_queryset(self.get_queryset())
        page = anchoring_selectors.with_anchors(
            self.paginate_queryset(queryset), reader=self.membership
        )
        return self.get_paginated_response(
            anchoring_serializers.ItemSerializer(page, many=True).data
        )

    @extend_schema(
        request=anchoring_serializers.ItemCreateSerializer,
        responses={201: anchoring_serializers.ItemSerializer},
    )
    def create(self, request, *args, **kwargs):
        data = anchoring_serializers.ItemCreateSerializer(
            data=request.data, context={"workspace": self.workspace}
        )
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)

        def make() -> Made:
            item = anchoring_services.item_create(
                evalset=self.evalset, user=request.user, item_id=fields.pop("id"), **fields
            )
            return self._shown(item.pk), item.pk, True

        return create_once(request, "item", make, self._shown)

    def retrieve(self, request, *args, **kwargs):
        (item,) = anchoring_selectors.with_anchors([self.get_object()], reader=self.membership)
        return Response(anchoring_serializers.ItemSerializer(item).data)

    @extend_schema(
        request=anchoring_serializers.ItemUpdateSerializer,
        responses=anchoring_serializers.ItemSerializer,
    )
    def partial_update(self, request, *args, **kwargs):
        data = anchoring_serializers.ItemUpdateSerializer(
            data=request.data, context={"workspace": self.workspace}
        )
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        row_version = changes.pop("row_version")
        item = anchoring_services.item_update(
            item=self.get_object(), user=request.user, row_version=row_version, **changes
        )
        return Response(self._shown(item.pk))

    @extend_schema(
        request=anchoring_serializers.ItemUpdateSerializer,
        responses=anchoring_serializers.ItemSerializer,
    )
    def update(self, request, *args, **kwargs):
        return self.partial_update(request, *args, **kwargs)

    def destroy(self, request, *args, **kwargs):
        anchoring_services.item_delete(item=self.get_object(), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AnchorViewSet(_InSet, viewsets.GenericViewSet):
    serializer_class = anchoring_serializers.AnchorSerializer
    lookup_url_kwarg = "anchor"
    resource = "anchor"

    @cached_property
    def item(self):
        """The URL's item, read with its set in one query (every anchor request needs both);
        when there is none, the answer is the 404 the set's or the item's own lookup gives."""
        item = anchoring_selectors.item_in_set(
            self.workspace, self.kwargs["set_slug"], self.kwargs["item"]
        )
        if item is None:
            return get_object_or_404(self.evalset.items.all(), item_id=self.kwargs["item"])
        self.__dict__["evalset"] = item.evalset  # the cached_property's slot: no second read
        return item

    @extend_schema(responses={200: dict})
    def compare(self, request, *args, **kwargs):
        """How each parse read this evidence: its text around its span, differences marked."""
        return Response(comparison.anchor_comparison(self.get_object()))

    def get_queryset(self):
        if self._fake():
            return anchoring_selectors.anchors_with_resolutions().none()
        # Another annotator's anchor on an item worked blind is not found (404), as if absent.
        return anchoring_selectors.anchors_for(self.membership).filter(item=self.item)

    def get_object(self):
        return get_object_or_404(self.get_queryset(), public_id=self.kwargs["anchor"])

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(
            anchoring_serializers.AnchorSerializer(page, many=True).data
        )

    @extend_schema(
        request=anchoring_serializers.AnchorCreateSerializer,
        responses={201: anchoring_serializers.AnchorSerializer},
    )
    def create(self, request, *args, **kwargs):
        data = anchoring_serializers.AnchorCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)

        def make() -> Made:
            anchor = self._create_anchor(data.validated_data)
            return self._created(anchoring_selectors.with_resolutions(anchor)), anchor.pk, True

        return create_once(
            request, "anchor", make, lambda pk: self._created(self.get_queryset().get(pk=pk))
        )

    def _created(self, anchor) -> dict:
        """A new anchor, with the evidence of other questions its highlight overlaps (a
        warning: the same passage may answer two questions, or one was misattached)."""
        out = anchoring_serializers.AnchorSerializer(anchor).data
        out["overlaps"] = passages_selectors.overlapping_evidence(anchor, reader=self.membership)
        return out

    def _create_anchor(self, fields: dict):
        if "parse" in fields:
            parse = documents_selectors.parse_in_workspace(self.workspace, fields["parse"])
            return anchoring_services.anchor_create_from_highlight(
                item=self.item,
                user=self.request.user,
                parse=parse,
                start=fields["start"],
                end=fields["end"],
                grade=fields["grade"],
                suggested=fields.get("suggested"),
            )
        return anchoring_services.anchor_create_typed(
            item=self.item,
            user=self.request.user,
            source_id=fields["source_id"],
            quote=fields["quote"],
            grade=fields["grade"],
            page_hint=fields.get("page_hint"),
            occurrence=fields["occurrence"],
            prefix=fields.get("prefix", ""),
            suffix=fields.get("suffix", ""),
        )

    def retrieve(self, request, *args, **kwargs):
        return Response(anchoring_serializers.AnchorSerializer(self.get_object()).data)

    @extend_schema(
        request=anchoring_serializers.AnchorUpdateSerializer,
        responses=anchoring_serializers.AnchorSerializer,
    )
    def partial_update(self, request, *args, **kwargs):
        data = anchoring_serializers.AnchorUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        anchor = anchoring_services.anchor_update_grade(
            anchor=self.get_object(), grade=data.validated_data["grade"], user=request.user
        )
        return Response(
            anchoring_serializers.AnchorSerializer(self.get_queryset().get(pk=anchor.pk)).data
        )

    def destroy(self, request, *args, **kwargs):
        anchoring_services.anchor_delete(anchor=self.get_object(), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        request=anchoring_serializers.ResolutionConfirmSerializer,
        responses=anchoring_serializers.AnchorSerializer,
    )
    def confirm(self, request, *args, **kwargs):
        """Confirm the candidate offered in a parse, or correct it with a selected span: the
        anchor's ``confirmed`` resolution there, which a re-run never overwrites."""
        data = anchoring_serializers.ResolutionConfirmSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        anchor = self.get_object()
        parse = documents_selectors.parse_in_workspace(self.workspace, fields["parse"])
        anchoring_services.resolution_confirm(
            anchor=anchor,
            parse=parse,
            user=request.user,
            start=fields.get("start"),
            end=fields.get("end"),
        )
        return Response(
            anchoring_serializers.AnchorSerializer(self.get_queryset().get(pk=anchor.pk)).data
        )
