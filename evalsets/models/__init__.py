"""Every model of the one ``evalsets`` app, one module per domain.

Importers use ``from evalsets.models import X``: this module names each model explicitly.
"""

from evalsets.models.authoring import (
    FOUND_STATUSES,
    AnchorResolution,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ItemState,
    ResolutionStatus,
)
from evalsets.models.documents import (
    Document,
    ParseRange,
    ParseStatus,
    ParseVersion,
    document_upload_to,
    parse_boxes_upload_to,
)
from evalsets.models.experiments import (
    CellStatus,
    Experiment,
    ExperimentCell,
    ExperimentKind,
    ExperimentStatus,
)
from evalsets.models.idempotency import IdempotencyKey
from evalsets.models.inbox import Notification, NotificationKind
from evalsets.models.passages import Passage
from evalsets.models.releases import (
    ImportRecord,
    PendingImportLabel,
    PendingLabelQuerySet,
    PendingLabelStatus,
    Release,
    ReleaseFile,
    ReleaseItem,
    ReleaseStatus,
    release_folder,
    release_upload_to,
)
from evalsets.models.review import (
    TRANSITION_KINDS,
    AssignmentKind,
    AuditTrailIsAppendOnly,
    Comment,
    EventKind,
    ItemAssignment,
    ItemEvent,
    ItemEventQuerySet,
)
from evalsets.models.workspaces import Invitation, Membership, Role, Workspace

__all__ = [
    "FOUND_STATUSES",
    "TRANSITION_KINDS",
    "AnchorResolution",
    "AssignmentKind",
    "AuditTrailIsAppendOnly",
    "CellStatus",
    "Comment",
    "Document",
    "EvalItem",
    "EvalSet",
    "EventKind",
    "Experiment",
    "ExperimentCell",
    "ExperimentKind",
    "ExperimentStatus",
    "GoldAnchor",
    "IdempotencyKey",
    "ImportRecord",
    "Invitation",
    "ItemAssignment",
    "ItemEvent",
    "ItemEventQuerySet",
    "ItemState",
    "Membership",
    "Notification",
    "NotificationKind",
    "ParseRange",
    "ParseStatus",
    "ParseVersion",
    "Passage",
    "PendingImportLabel",
    "PendingLabelQuerySet",
    "PendingLabelStatus",
    "Release",
    "ReleaseFile",
    "ReleaseItem",
    "ReleaseStatus",
    "ResolutionStatus",
    "Role",
    "Workspace",
    "document_upload_to",
    "parse_boxes_upload_to",
    "release_folder",
    "release_upload_to",
]
