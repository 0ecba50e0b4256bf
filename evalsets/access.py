"""Who may do what in a workspace: the rules that sit on one field, and the refusal sentence.

Each endpoint declares the least role its actions need where it is defined (an API view's
``required_roles``, a page's ``@requires``). Some writes need more than the endpoint that
carries them: choosing a document's reference parse is an owner's decision whether it comes
as ``POST .../reference/`` or as ``make_reference`` on a new parse; giving someone work is an
owner's whether it comes through the assignments endpoints or an item's ``assignee``. Those
rules are named here once: the views declare them for their endpoints, and the services check
them for the fields, so every path that can reach a field meets the same rule. Every refusal
for want of a role is worded by ``refusal``, whoever refuses.
"""

from __future__ import annotations

from evalsets.errors import Forbidden
from evalsets.models import AssignmentKind, Membership, Role, Workspace

#: Declared by an action about the caller rather than one workspace (listing their
#: workspaces, creating one): any signed-in user may.
SIGNED_IN = None

#: Choosing the parse annotators read: ``POST .../reference/`` and ``make_reference``.
CHOOSE_REFERENCE = Role.OWNER
#: Giving people work: the assignments endpoints and an item's ``assignee``.
ASSIGN = Role.OWNER
#: The role each kind of work needs: who may be assigned it, who may ask for the next item.
WORK = {AssignmentKind.ANNOTATE: Role.ANNOTATOR, AssignmentKind.REVIEW: Role.REVIEWER}


def refusal(workspace: str, role: Role | str | None, needed: Role, what: str = "this") -> str:
    """The sentence a refused caller reads: their role, and the role ``what`` needs."""
    who = f"your role in {workspace!r} is {Role(role)}" if role else f"you are not in {workspace!r}"
    return f"{who}; {what} needs the {Role(needed)} role or above"


def last_owner_refusal(username: str, workspace: str) -> str:
    """Why the last owner cannot be removed or given a lesser role."""
    return f"{username!r} is the last owner of {workspace!r}; make someone else an owner first"


def check(membership: Membership, needed: Role, *, what: str = "this", field=None) -> None:
    """Refuse (403) unless ``membership`` holds ``needed`` or a role above it."""
    if not membership.allows(needed):
        raise Forbidden(
            refusal(membership.workspace.slug, membership.role, needed, what), field=field
        )


def check_user(*, user, workspace: Workspace, needed: Role, what: str, field: str) -> None:
    """``check`` for a service, which knows the user and the workspace but not the membership.

    ``user=None`` is the system itself (a command or a task acting for nobody), which every
    rule lets through; a request always passes its user.
    """
    if user is None:
        return
    role = (
        Membership.objects.filter(workspace=workspace, user=user)
        .values_list("role", flat=True)
        .first()
    )
    if role is None or not Role(role).at_least(needed):
        raise Forbidden(refusal(workspace.slug, role, needed, what), field=field)
