"""Workspaces, their members and invitations, parser settings and quotas."""
