"""Who may do what in a workspace: one table of the role each action needs, the rules that
sit on one field, and the refusal sentence.

``ROLES`` names, for each resource the API serves, the least role each of its actions needs
(an API viewset's action name, or an ``APIView``'s lower-case HTTP method). An API view names
its row (``resource = "document"``) and ``evalsets.api.permissions.RoleRequired`` reads it;
the pages ask ``allows`` what to offer from the same rows, so a page never offers what the API
would refuse. An action the table does not name is refused (``Undeclared``). Some writes need
more than the endpoint that carries them: choosing a document's reference parse is an owner's
decision whether it comes as ``POST .../reference/`` or as ``make_reference`` on a new parse;
giving someone work is an owner's whether it comes through the assignments endpoints or an
item's ``assignee``. Those rules are named here once: the table uses them for the endpoints,
and the services check them for the fields, so every path that can reach a field meets the
same rule. Every refusal for want of a role is worded by ``refusal``, whoever refuses.
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
#: Starting or cancelling an experiment and uploading a run: it spends shared worker CPU.
RUN_EXPERIMENTS = Role.REVIEWER
#: The role each kind of work needs: who may be assigned it, who may ask for the next item.
WORK = {AssignmentKind.ANNOTATE: Role.ANNOTATOR, AssignmentKind.REVIEW: Role.REVIEWER}

#: The least role each action of each resource needs (``SIGNED_IN``: any signed-in user).
ROLES: dict[str, dict[str, Role | None]] = {
    "workspace": {
        "list": SIGNED_IN,
        "create": SIGNED_IN,
        "retrieve": Role.VIEWER,
        "partial_update": Role.OWNER,
        "resolve": Role.OWNER,
    },
    "member": {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "create": Role.OWNER,
        "partial_update": Role.OWNER,
        "destroy": Role.OWNER,
    },
    "workspace-invitation": {"list": Role.OWNER, "destroy": Role.OWNER},
    "my-invitation": {"list": SIGNED_IN, "accept": SIGNED_IN, "decline": SIGNED_IN},
    "workflow": {
        "submit": Role.ANNOTATOR,
        "approve": Role.REVIEWER,
        "request_changes": Role.REVIEWER,
        "reopen": Role.OWNER,
    },
    # Comparing an overlapped item's versions and settling them: a reviewer's decision (the
    # service also refuses anyone who annotated the item).
    "adjudication": {"retrieve": Role.REVIEWER, "create": Role.REVIEWER},
    "comment": {"list": Role.VIEWER, "create": Role.ANNOTATOR},
    "history": {"list": Role.VIEWER},
    "assignment": {"list": Role.VIEWER, "create": ASSIGN, "destroy": ASSIGN},
    "next-item": {"retrieve": Role.VIEWER},
    "dashboard": {"retrieve": Role.VIEWER},
    "inbox": {"get": SIGNED_IN},
    "inbox-read": {"post": SIGNED_IN},
    "changes": {"get": Role.VIEWER},
    "release": {"get": Role.VIEWER, "post": Role.OWNER},
    "import": {"post": Role.OWNER},
    "pending": {"get": Role.VIEWER},
    "parse-pages": {"get": Role.VIEWER},
    "parse-search": {"get": Role.VIEWER},
    "document-rendered": {"get": Role.VIEWER},
    "document": {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "anchors": Role.VIEWER,
        "create": Role.ANNOTATOR,
        "reparse": Role.ANNOTATOR,
        "destroy": Role.OWNER,
    },
    "parse": {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "create": Role.ANNOTATOR,
        "destroy": Role.OWNER,
        "reference": CHOOSE_REFERENCE,
    },
    "pdf": {"get": Role.VIEWER},
    "pdf-page-image": {"get": Role.VIEWER},
    "pdf-page-text": {"get": Role.VIEWER},
    "evalset": {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "create": Role.OWNER,
        "partial_update": Role.OWNER,
        "destroy": Role.OWNER,
    },
    "item": {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "create": Role.ANNOTATOR,
        "update": Role.ANNOTATOR,
        "partial_update": Role.ANNOTATOR,
        "destroy": Role.ANNOTATOR,
    },
    "anchor": {
        "list": Role.VIEWER,
        "retrieve": Role.VIEWER,
        "create": Role.ANNOTATOR,
        "partial_update": Role.ANNOTATOR,
        "destroy": Role.ANNOTATOR,
        "confirm": Role.ANNOTATOR,
        "compare": Role.VIEWER,
    },
    "similar-questions": {"post": Role.VIEWER},
    # Every member reads an experiment's numbers (as they read releases); starting one,
    # cancelling it or uploading a run spends worker CPU, which a reviewer may decide.
    "experiment": {"get": Role.VIEWER, "post": RUN_EXPERIMENTS},
    "workspace-search": {"get": Role.VIEWER},
    "item-suggestions": {"get": Role.VIEWER},
}


class Undeclared(LookupError):
    """An action the table does not name: refused, whoever asks."""


def required_role(resource: str, action: str) -> Role | None:
    """The least role ``action`` on ``resource`` needs; ``Undeclared`` when the table is silent."""
    try:
        return ROLES[resource][action]
    except KeyError:
        raise Undeclared(f"no role is declared for {action!r} on {resource!r}") from None


def allows(membership: Membership, resource: str, action: str) -> bool:
    """Whether the member may do ``action`` on ``resource``: what a page offers to do."""
    needed = required_role(resource, action)
    return needed is SIGNED_IN or membership.allows(needed)


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
