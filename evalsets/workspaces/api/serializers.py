"""Serializers of tokens, workspaces, members and invitations."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer

from evalsets.api.storable import StorableInput
from evalsets.models import (
    Invitation,
    Membership,
    Role,
    Workspace,
)

User = get_user_model()

#: The longest user name an account can have: a longer one is refused before any password is
#: hashed (and before the log-in limit, whose table holds names of at most 255 characters).
USERNAME_MAX_CHARS = User._meta.get_field(User.USERNAME_FIELD).max_length


class TokenRequestSerializer(StorableInput, AuthTokenSerializer):
    """DRF's username and password, with the name's length and text checked first."""

    username = serializers.CharField(
        label="Username", write_only=True, max_length=USERNAME_MAX_CHARS
    )


class WorkspaceSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Workspace
        fields = ["slug", "name", "parser_settings", "created_at", "role"]
        read_only_fields = ["created_at", "role"]

    def get_role(self, obj) -> str | None:
        roles = self.context.get("roles", {})
        return roles.get(obj.pk)


class WorkspaceCreateSerializer(StorableInput, serializers.Serializer):
    slug = serializers.SlugField(max_length=64)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)


class WorkspaceUpdateSerializer(StorableInput, serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    parser_settings = serializers.JSONField(required=False)


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username")

    class Meta:
        model = Membership
        fields = ["username", "role", "created_at"]


class MemberCreateSerializer(StorableInput, serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices)


class InvitationSerializer(serializers.ModelSerializer):
    """What adding a member answers: the invitation, waiting for the invitee to accept.

    The same fields whether or not a user by that name exists (no timestamps, no ids)."""

    status = serializers.SerializerMethodField()

    class Meta:
        model = Invitation
        fields = ["username", "role", "status"]

    def get_status(self, invitation) -> str:
        return "invited"


class PendingInvitationSerializer(serializers.ModelSerializer):
    """A workspace's invitations as its owners see them."""

    invited_by = serializers.CharField(source="invited_by.username", default=None)

    class Meta:
        model = Invitation
        fields = ["username", "role", "invited_by", "created_at"]


class MyInvitationSerializer(serializers.ModelSerializer):
    """An invitation as the invitee sees it."""

    workspace = serializers.CharField(source="workspace.slug")
    workspace_name = serializers.CharField(source="workspace.name")
    invited_by = serializers.CharField(source="invited_by.username", default=None)

    class Meta:
        model = Invitation
        fields = ["workspace", "workspace_name", "role", "invited_by", "created_at"]


class MemberUpdateSerializer(StorableInput, serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)
