"""The API of workspaces, members and invitations."""
