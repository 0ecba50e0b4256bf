"""The REST API. Views are short: declare the role each action needs, validate input, call a
service. ``required_roles`` on each view is read by ``evalsets.api.permissions.RoleRequired``.

URLs use natural keys (workspace slug, document source id, eval-set id, item id), mirroring
context-grid's ids; parses and anchors, which have no natural key, use public UUIDs.
"""

from __future__ import annotations

import django_filters
from django.conf import settings
from django.db.models import Count
from django.shortcuts import get_object_or_404
from django.utils.functional import cached_property
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from evalsets import access, comparison, idempotency, ingest, selectors, services
from evalsets.api import serializers as s
from evalsets.api import throttles
from evalsets.api.body_limit import check_body_size
from evalsets.api.idempotency import Made, create_once
from evalsets.api.storable import StrictJSONParser
from evalsets.models import EvalItem, Invitation, ItemState, Membership, Role, Workspace
from evalsets.portability import evalset_portability


class TokenView(ObtainAuthToken):
    """Exchange a username and password for an API token.

    Failures count towards the same log-in limit as the log-in page (labelling.login_limit):
    ``authenticate()`` gets Django's own request, on which axes marks a lock-out, and axes'
    middleware then answers 429 in the API's error shape instead of this view's 400. A user
    name longer than any account's, or holding text no database stores, is a 400 before any
    password is hashed.
    """

    serializer_class = s.TokenRequestSerializer

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "request": self.request._request}


class WorkspaceScoped:
    """Resolves ``self.membership`` from the URL's workspace; 404 for non-members.

    Each subclass declares ``required_roles`` (action -> least ``Role``), checked by
    ``RoleRequired`` (the default permission class) before the action runs.
    """

    required_roles: dict[str, Role | None]

    @cached_property
    def membership(self) -> Membership:
        return selectors.membership_for(self.request.user, self.kwargs["ws"])

    @property
    def workspace(self) -> Workspace:
        return self.membership.workspace

    def _fake(self) -> bool:
        return getattr(self, "swagger_fake_view", False)


class WorkspaceViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    serializer_class = s.WorkspaceSerializer
    throttle_classes = [throttles.WorkspaceThrottle, throttles.ResolveThrottle]
    required_roles = {
        "list": access.SIGNED_IN,
        "create": access.SIGNED_IN,
        "retrieve": Role.VIEWER,
        "partial_update": Role.OWNER,
        "resolve": Role.OWNER,
    }
    lookup_field = "slug"
    lookup_url_kwarg = "ws"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Workspace.objects.none()
        return Workspace.objects.filter(memberships__user=self.request.user).distinct()

    def _roles(self) -> dict[int, str]:
        return dict(
            Membership.objects.filter(user=self.request.user).values_list("workspace", "role")
        )

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        data = s.WorkspaceSerializer(page, many=True, context={"roles": self._roles()}).data
        return self.get_paginated_response(data)

    @extend_schema(request=s.WorkspaceCreateSerializer, responses={201: s.WorkspaceSerializer})
    def create(self, request, *args, **kwargs):
        data = s.WorkspaceCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        workspace = services.workspace_create(user=request.user, **data.validated_data)
        out = s.WorkspaceSerializer(workspace, context={"roles": self._roles()}).data
        return Response(out, status=status.HTTP_201_CREATED)

    def retrieve(self, request, *args, **kwargs):
        membership = self.membership
        context = {"roles": {membership.workspace_id: membership.role}}
        return Response(s.WorkspaceSerializer(membership.workspace, context=context).data)

    @extend_schema(request=s.WorkspaceUpdateSerializer, responses=s.WorkspaceSerializer)
    def partial_update(self, request, *args, **kwargs):
        membership = self.membership
        data = s.WorkspaceUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        workspace = services.workspace_update(workspace=membership.workspace, **data.validated_data)
        context = {"roles": {workspace.pk: membership.role}}
        return Response(s.WorkspaceSerializer(workspace, context=context).data)

    @extend_schema(request=None, responses={202: None})
    @action(detail=True, methods=["post"])
    def resolve(self, request, *args, **kwargs):
        """Re-resolve every anchor in every parse of this workspace (after a resolver upgrade)."""
        queued = services.workspace_resolve_all(workspace=self.workspace)
        return Response({"queued_parses": queued}, status=status.HTTP_202_ACCEPTED)


class MemberViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    serializer_class = s.MemberSerializer
    required_roles = {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "create": Role.OWNER,
        "partial_update": Role.OWNER,
        "destroy": Role.OWNER,
    }
    lookup_url_kwarg = "username"

    def get_queryset(self):
        if self._fake():
            return Membership.objects.none()
        return Membership.objects.filter(workspace=self.workspace).select_related("user")

    def get_object(self):
        return get_object_or_404(self.get_queryset(), user__username=self.kwargs["username"])

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(s.MemberSerializer(page, many=True).data)

    @extend_schema(request=s.MemberCreateSerializer, responses={201: s.InvitationSerializer})
    def create(self, request, *args, **kwargs):
        """Invite a user by username; they become a member when they accept."""
        data = s.MemberCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        invitation = services.member_invite(
            workspace=self.workspace, by=request.user, **data.validated_data
        )
        return Response(s.InvitationSerializer(invitation).data, status=status.HTTP_201_CREATED)

    def retrieve(self, request, *args, **kwargs):
        return Response(s.MemberSerializer(self.get_object()).data)

    @extend_schema(request=s.MemberUpdateSerializer, responses=s.MemberSerializer)
    def partial_update(self, request, *args, **kwargs):
        data = s.MemberUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        member = services.member_change_role(
            membership=self.get_object(), role=data.validated_data["role"]
        )
        return Response(s.MemberSerializer(member).data)

    def destroy(self, request, *args, **kwargs):
        services.member_remove(membership=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkspaceInvitationViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    """A workspace's pending invitations: its owners list and withdraw them."""

    serializer_class = s.PendingInvitationSerializer
    required_roles = {"list": Role.OWNER, "destroy": Role.OWNER}

    def get_queryset(self):
        if self._fake():
            return Invitation.objects.none()
        return self.workspace.invitations.select_related("invited_by")

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(s.PendingInvitationSerializer(page, many=True).data)

    def destroy(self, request, *args, **kwargs):
        invitation = get_object_or_404(self.get_queryset(), username=self.kwargs["username"])
        services.invitation_decline(invitation=invitation)
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationViewSet(viewsets.GenericViewSet):
    """The caller's own invitations: list them, accept or decline one (by workspace slug).

    These are about the caller, not a workspace they belong to: the URL names the workspace
    as ``workspace`` (not ``ws``), and another person's invitation is missing (404).
    """

    serializer_class = s.MyInvitationSerializer
    required_roles = {
        "list": access.SIGNED_IN,
        "accept": access.SIGNED_IN,
        "decline": access.SIGNED_IN,
    }

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Invitation.objects.none()
        return selectors.invitations_for(self.request.user)

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(s.MyInvitationSerializer(page, many=True).data)

    @extend_schema(request=None, responses={200: s.MemberSerializer})
    @action(detail=True, methods=["post"])
    def accept(self, request, *args, **kwargs):
        invitation = selectors.invitation_for(request.user, kwargs["workspace"])
        membership = services.invitation_accept(invitation=invitation, user=request.user)
        return Response(s.MemberSerializer(membership).data)

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["post"])
    def decline(self, request, *args, **kwargs):
        invitation = selectors.invitation_for(request.user, kwargs["workspace"])
        services.invitation_decline(invitation=invitation)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    serializer_class = s.DocumentSerializer
    throttle_classes = [throttles.UploadThrottle]
    required_roles = {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "anchors": Role.VIEWER,
        "create": Role.ANNOTATOR,
        "reparse": Role.ANNOTATOR,
        "destroy": Role.OWNER,
    }
    parser_classes = [MultiPartParser, FormParser, StrictJSONParser]

    def get_queryset(self):
        if self._fake():
            return selectors.documents(None).none()
        return selectors.documents(self.workspace).select_related("uploaded_by")

    def get_object(self):
        return get_object_or_404(self.get_queryset(), source_id=self.kwargs["doc"])

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(s.DocumentSerializer(page, many=True).data)

    @extend_schema(request=s.DocumentCreateSerializer, responses={201: s.DocumentSerializer})
    def create(self, request, *args, **kwargs):
        data = s.DocumentCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)

        def make() -> Made:
            document, created = services.document_upload(
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
        out = s.DocumentSerializer(self.get_queryset().get(pk=pk)).data
        out["duplicate_of_existing"] = duplicate
        return out

    def retrieve(self, request, *args, **kwargs):
        return Response(s.DocumentSerializer(self.get_object()).data)

    def destroy(self, request, *args, **kwargs):
        services.document_delete(document=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=s.DocumentAnchorSerializer(many=True))
    @action(detail=True, methods=["get"])
    def anchors(self, request, *args, **kwargs):
        """Every anchor on this document, in reading order, with its item and where it lies
        in each parse."""
        page = self.paginate_queryset(selectors.document_anchors(self.get_object()))
        return self.get_paginated_response(s.DocumentAnchorSerializer(page, many=True).data)

    @extend_schema(request=None, responses={202: s.ParseSummarySerializer(many=True)})
    @action(detail=True, methods=["post"])
    def reparse(self, request, *args, **kwargs):
        """Queue parsers whose current version has not read this document yet."""
        queued = ingest.document_reparse(document=self.get_object())
        return Response(
            s.ParseSummarySerializer(queued, many=True).data, status=status.HTTP_202_ACCEPTED
        )


class ParseViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    serializer_class = s.ParseSummarySerializer
    throttle_classes = [throttles.ParseUploadThrottle]
    required_roles = {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        # Adding a parse is an annotator's; making it the reference (make_reference) is not.
        "create": Role.ANNOTATOR,
        "destroy": Role.OWNER,
        "reference": access.CHOOSE_REFERENCE,
    }
    lookup_url_kwarg = "parse"

    @cached_property
    def document(self):
        return get_object_or_404(
            selectors.documents(self.workspace).only("pk", "source_id", "workspace"),
            source_id=self.kwargs["doc"],
        )

    def get_queryset(self):
        if self._fake():
            return selectors.parses(None).none()
        return selectors.parses(self.document)

    def get_object(self):
        return get_object_or_404(self.get_queryset(), public_id=self.kwargs["parse"])

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset().defer("text"))
        return self.get_paginated_response(s.ParseSummarySerializer(page, many=True).data)

    @extend_schema(request=s.ParseCreateSerializer, responses={201: s.ParseDetailSerializer})
    def create(self, request, *args, **kwargs):
        check_body_size(
            request,
            settings.GROUNDWORK_MAX_PARSE_UPLOAD_BYTES,
            "GROUNDWORK_MAX_PARSE_UPLOAD_MB",
            "a parse's body",
        )
        data = s.ParseCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        parse = services.parse_version_add(
            document=self.document, user=request.user, **data.validated_data
        )
        return Response(s.ParseDetailSerializer(parse).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=s.ParseDetailSerializer)
    def retrieve(self, request, *args, **kwargs):
        return Response(s.ParseDetailSerializer(self.get_object()).data)

    def destroy(self, request, *args, **kwargs):
        services.parse_delete(parse=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=s.ParseSummarySerializer)
    @action(detail=True, methods=["post"])
    def reference(self, request, *args, **kwargs):
        """Make this parse the one annotators read and highlight."""
        parse = services.parse_make_reference(parse=self.get_object())
        return Response(s.ParseSummarySerializer(parse).data)


class EvalSetViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    serializer_class = s.EvalSetSerializer
    required_roles = {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "create": Role.OWNER,
        "partial_update": Role.OWNER,
        "destroy": Role.OWNER,
    }

    def get_queryset(self):
        if self._fake():
            return selectors.evalsets(None).none()
        # An aggregate drops Meta.ordering; say it again so pages are stable.
        return (
            selectors.evalsets(self.workspace).annotate(item_count=Count("items")).order_by("slug")
        )

    def get_object(self):
        return get_object_or_404(self.get_queryset(), slug=self.kwargs["set"])

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(s.EvalSetSerializer(page, many=True).data)

    def create(self, request, *args, **kwargs):
        data = s.EvalSetSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        evalset = services.evalset_create(
            workspace=self.workspace,
            user=request.user,
            slug=data.validated_data["slug"],
            name=data.validated_data.get("name", ""),
            meta=data.validated_data.get("meta"),
        )
        return Response(
            s.EvalSetSerializer(self.get_queryset().get(pk=evalset.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    def retrieve(self, request, *args, **kwargs):
        evalset = self.get_object()
        data = s.EvalSetSerializer(evalset).data
        data["portability"] = evalset_portability(evalset)
        data["next_item_id"] = selectors.next_item_id(evalset)
        return Response(data)

    @extend_schema(request=s.EvalSetUpdateSerializer, responses=s.EvalSetSerializer)
    def partial_update(self, request, *args, **kwargs):
        data = s.EvalSetUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        evalset = services.evalset_update(evalset=self.get_object(), **data.validated_data)
        return Response(s.EvalSetSerializer(self.get_queryset().get(pk=evalset.pk)).data)

    def destroy(self, request, *args, **kwargs):
        services.evalset_delete(evalset=self.get_object())
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
        return selectors.search_items(queryset, value)

    def assigned(self, queryset, name, value):
        return queryset.filter(selectors.assigned_to(value))


class _InSet(WorkspaceScoped):
    @cached_property
    def evalset(self):
        return selectors.evalset_in(self.workspace, self.kwargs["set"])


class ItemViewSet(_InSet, viewsets.GenericViewSet):
    serializer_class = s.ItemSerializer
    filterset_class = ItemFilter
    # Setting ``assignee`` needs access.ASSIGN, and an approved item refuses every change
    # until it is reopened: both are checked by the services, on every path.
    required_roles = {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "create": Role.ANNOTATOR,
        "update": Role.ANNOTATOR,
        "partial_update": Role.ANNOTATOR,
        "destroy": Role.ANNOTATOR,
    }
    lookup_url_kwarg = "item"

    def get_queryset(self):
        if self._fake():
            return EvalItem.objects.none()
        return selectors.items(self.evalset)

    def get_object(self):
        return get_object_or_404(self.get_queryset(), item_id=self.kwargs["item"])

    def _shown(self, pk: int) -> dict:
        """The item as the API shows it, read again after a write."""
        (item,) = selectors.with_anchors([self.get_queryset().get(pk=pk)])
        return s.ItemSerializer(item).data

    def list(self, request, *args, **kwargs):
        queryset = self.filter_queryset(self.get_queryset())
        page = selectors.with_anchors(self.paginate_queryset(queryset))
        return self.get_paginated_response(s.ItemSerializer(page, many=True).data)

    @extend_schema(request=s.ItemCreateSerializer, responses={201: s.ItemSerializer})
    def create(self, request, *args, **kwargs):
        data = s.ItemCreateSerializer(data=request.data, context={"workspace": self.workspace})
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)

        def make() -> Made:
            item = services.item_create(
                evalset=self.evalset, user=request.user, item_id=fields.pop("id"), **fields
            )
            return self._shown(item.pk), item.pk, True

        return create_once(request, "item", make, self._shown)

    def retrieve(self, request, *args, **kwargs):
        (item,) = selectors.with_anchors([self.get_object()])
        return Response(s.ItemSerializer(item).data)

    @extend_schema(request=s.ItemUpdateSerializer, responses=s.ItemSerializer)
    def partial_update(self, request, *args, **kwargs):
        data = s.ItemUpdateSerializer(data=request.data, context={"workspace": self.workspace})
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        row_version = changes.pop("row_version")
        item = services.item_update(
            item=self.get_object(), user=request.user, row_version=row_version, **changes
        )
        return Response(self._shown(item.pk))

    @extend_schema(request=s.ItemUpdateSerializer, responses=s.ItemSerializer)
    def update(self, request, *args, **kwargs):
        return self.partial_update(request, *args, **kwargs)

    def destroy(self, request, *args, **kwargs):
        services.item_delete(item=self.get_object(), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AnchorViewSet(_InSet, viewsets.GenericViewSet):
    serializer_class = s.AnchorSerializer
    lookup_url_kwarg = "anchor"
    required_roles = {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "create": Role.ANNOTATOR,
        "partial_update": Role.ANNOTATOR,
        "destroy": Role.ANNOTATOR,
        # placing evidence by hand is annotating: whoever may add the anchor may place it
        "confirm": Role.ANNOTATOR,
        "compare": Role.VIEWER,
    }

    @cached_property
    def item(self):
        return get_object_or_404(self.evalset.items.all(), item_id=self.kwargs["item"])

    @extend_schema(responses={200: dict})
    def compare(self, request, *args, **kwargs):
        """How each parse read this evidence: its text around its span, differences marked."""
        return Response(comparison.anchor_comparison(self.get_object()))

    def get_queryset(self):
        if self._fake():
            return selectors.anchors_with_resolutions().none()
        return selectors.anchors_with_resolutions().filter(item=self.item)

    def get_object(self):
        return get_object_or_404(self.get_queryset(), public_id=self.kwargs["anchor"])

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(s.AnchorSerializer(page, many=True).data)

    @extend_schema(request=s.AnchorCreateSerializer, responses={201: s.AnchorSerializer})
    def create(self, request, *args, **kwargs):
        data = s.AnchorCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)

        def make() -> Made:
            anchor = self._create_anchor(data.validated_data)
            return s.AnchorSerializer(selectors.with_resolutions(anchor)).data, anchor.pk, True

        return create_once(
            request,
            "anchor",
            make,
            lambda pk: s.AnchorSerializer(self.get_queryset().get(pk=pk)).data,
        )

    def _create_anchor(self, fields: dict):
        if "parse" in fields:
            parse = selectors.parse_in_workspace(self.workspace, fields["parse"])
            return services.anchor_create_from_highlight(
                item=self.item,
                user=self.request.user,
                parse=parse,
                start=fields["start"],
                end=fields["end"],
                grade=fields["grade"],
            )
        return services.anchor_create_typed(
            item=self.item,
            user=self.request.user,
            source_id=fields["source_id"],
            quote=fields["quote"],
            grade=fields["grade"],
            page_hint=fields.get("page_hint"),
            occurrence=fields["occurrence"],
        )

    def retrieve(self, request, *args, **kwargs):
        return Response(s.AnchorSerializer(self.get_object()).data)

    @extend_schema(request=s.AnchorUpdateSerializer, responses=s.AnchorSerializer)
    def partial_update(self, request, *args, **kwargs):
        data = s.AnchorUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        anchor = services.anchor_update_grade(
            anchor=self.get_object(), grade=data.validated_data["grade"], user=request.user
        )
        return Response(s.AnchorSerializer(self.get_queryset().get(pk=anchor.pk)).data)

    def destroy(self, request, *args, **kwargs):
        services.anchor_delete(anchor=self.get_object(), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=s.ResolutionConfirmSerializer, responses=s.AnchorSerializer)
    def confirm(self, request, *args, **kwargs):
        """Confirm the candidate offered in a parse, or correct it with a selected span: the
        anchor's ``confirmed`` resolution there, which a re-run never overwrites."""
        data = s.ResolutionConfirmSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        anchor = self.get_object()
        parse = selectors.parse_in_workspace(self.workspace, fields["parse"])
        services.resolution_confirm(
            anchor=anchor,
            parse=parse,
            user=request.user,
            start=fields.get("start"),
            end=fields.get("end"),
        )
        return Response(s.AnchorSerializer(self.get_queryset().get(pk=anchor.pk)).data)
