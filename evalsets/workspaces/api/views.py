"""API views of tokens, workspaces, members and invitations."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.response import Response

from evalsets.anchoring import services as anchoring_services
from evalsets.api import throttles
from evalsets.api.scoping import WorkspaceScoped
from evalsets.models import Invitation, Membership, Workspace
from evalsets.workspaces import selectors as workspaces_selectors
from evalsets.workspaces import services as workspaces_services
from evalsets.workspaces.api import serializers as workspaces_serializers


class TokenView(ObtainAuthToken):
    """Exchange a username and password for an API token.

    Failures count towards the same log-in limit as the log-in page (labelling.login_limit):
    ``authenticate()`` gets Django's own request, on which axes marks a lock-out, and axes'
    middleware then answers 429 in the API's error shape instead of this view's 400. A user
    name longer than any account's, or holding text no database stores, is a 400 before any
    password is hashed.
    """

    serializer_class = workspaces_serializers.TokenRequestSerializer

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "request": self.request._request}


class WorkspaceViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    serializer_class = workspaces_serializers.WorkspaceSerializer
    throttle_classes = [throttles.WorkspaceThrottle, throttles.ResolveThrottle]
    resource = "workspace"
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
        data = workspaces_serializers.WorkspaceSerializer(
            page, many=True, context={"roles": self._roles()}
        ).data
        return self.get_paginated_response(data)

    @extend_schema(
        request=workspaces_serializers.WorkspaceCreateSerializer,
        responses={201: workspaces_serializers.WorkspaceSerializer},
    )
    def create(self, request, *args, **kwargs):
        data = workspaces_serializers.WorkspaceCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        workspace = workspaces_services.workspace_create(user=request.user, **data.validated_data)
        out = workspaces_serializers.WorkspaceSerializer(
            workspace, context={"roles": self._roles()}
        ).data
        return Response(out, status=status.HTTP_201_CREATED)

    def retrieve(self, request, *args, **kwargs):
        membership = self.membership
        context = {"roles": {membership.workspace_id: membership.role}}
        return Response(
            workspaces_serializers.WorkspaceSerializer(membership.workspace, context=context).data
        )

    @extend_schema(
        request=workspaces_serializers.WorkspaceUpdateSerializer,
        responses=workspaces_serializers.WorkspaceSerializer,
    )
    def partial_update(self, request, *args, **kwargs):
        membership = self.membership
        data = workspaces_serializers.WorkspaceUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        workspace = workspaces_services.workspace_update(
            workspace=membership.workspace, **data.validated_data
        )
        context = {"roles": {workspace.pk: membership.role}}
        return Response(workspaces_serializers.WorkspaceSerializer(workspace, context=context).data)

    @extend_schema(request=None, responses={202: None})
    @action(detail=True, methods=["post"])
    def resolve(self, request, *args, **kwargs):
        """Re-resolve every anchor in every parse of this workspace (after a resolver upgrade)."""
        queued = anchoring_services.workspace_resolve_all(workspace=self.workspace)
        return Response({"queued_parses": queued}, status=status.HTTP_202_ACCEPTED)


class MemberViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    serializer_class = workspaces_serializers.MemberSerializer
    resource = "member"
    lookup_url_kwarg = "username"

    def get_queryset(self):
        if self._fake():
            return Membership.objects.none()
        return Membership.objects.filter(workspace=self.workspace).select_related("user")

    def get_object(self):
        return get_object_or_404(self.get_queryset(), user__username=self.kwargs["username"])

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(
            workspaces_serializers.MemberSerializer(page, many=True).data
        )

    @extend_schema(
        request=workspaces_serializers.MemberCreateSerializer,
        responses={201: workspaces_serializers.InvitationSerializer},
    )
    def create(self, request, *args, **kwargs):
        """Invite a user by username; they become a member when they accept."""
        data = workspaces_serializers.MemberCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        invitation = workspaces_services.member_invite(
            workspace=self.workspace, by=request.user, **data.validated_data
        )
        return Response(
            workspaces_serializers.InvitationSerializer(invitation).data,
            status=status.HTTP_201_CREATED,
        )

    def retrieve(self, request, *args, **kwargs):
        return Response(workspaces_serializers.MemberSerializer(self.get_object()).data)

    @extend_schema(
        request=workspaces_serializers.MemberUpdateSerializer,
        responses=workspaces_serializers.MemberSerializer,
    )
    def partial_update(self, request, *args, **kwargs):
        data = workspaces_serializers.MemberUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        member = workspaces_services.member_change_role(
            membership=self.get_object(), role=data.validated_data["role"]
        )
        return Response(workspaces_serializers.MemberSerializer(member).data)

    def destroy(self, request, *args, **kwargs):
        workspaces_services.member_remove(membership=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkspaceInvitationViewSet(WorkspaceScoped, viewsets.GenericViewSet):
    """A workspace's pending invitations: its owners list and withdraw them."""

    serializer_class = workspaces_serializers.PendingInvitationSerializer
    resource = "workspace-invitation"

    def get_queryset(self):
        if self._fake():
            return Invitation.objects.none()
        return self.workspace.invitations.select_related("invited_by")

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(
            workspaces_serializers.PendingInvitationSerializer(page, many=True).data
        )

    def destroy(self, request, *args, **kwargs):
        invitation = get_object_or_404(self.get_queryset(), username=self.kwargs["username"])
        workspaces_services.invitation_decline(invitation=invitation)
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationViewSet(viewsets.GenericViewSet):
    """The caller's own invitations: list them, accept or decline one (by workspace slug).

    These are about the caller, not a workspace they belong to: the URL names the workspace
    as ``workspace`` (not ``ws``), and another person's invitation is missing (404).
    """

    serializer_class = workspaces_serializers.MyInvitationSerializer
    resource = "my-invitation"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Invitation.objects.none()
        return workspaces_selectors.invitations_for(self.request.user)

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(
            workspaces_serializers.MyInvitationSerializer(page, many=True).data
        )

    @extend_schema(request=None, responses={200: workspaces_serializers.MemberSerializer})
    @action(detail=True, methods=["post"])
    def accept(self, request, *args, **kwargs):
        invitation = workspaces_selectors.invitation_for(request.user, kwargs["workspace"])
        membership = workspaces_services.invitation_accept(invitation=invitation, user=request.user)
        return Response(workspaces_serializers.MemberSerializer(membership).data)

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["post"])
    def decline(self, request, *args, **kwargs):
        invitation = workspaces_selectors.invitation_for(request.user, kwargs["workspace"])
        workspaces_services.invitation_decline(invitation=invitation)
        return Response(status=status.HTTP_204_NO_CONTENT)
