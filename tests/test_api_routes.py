"""The API's URL conf, recorded: every route, its name, its view and its actions.

``ROUTES`` and ``RESOLVED`` are a recorded snapshot of the URL conf as it stood before the
routes moved into each domain's ``api/urls.py``; they pin existing behaviour, not a design.
``ROUTES`` lists every pattern under ``evalsets.api.urls`` in the order Django tries them, with
the view class, the viewset actions and the ``as_view`` arguments. ``RESOLVED`` says which
route and which arguments a sample path for each pattern lands on; a route with a document id
is filled twice, once with a plain id and once with an id that holds ``/`` and ends like a
more specific document route, so a catch-all tried too early would change the answer.

One entry changed on purpose after the recording: the workspace's pending-work view moved,
unchanged, from ``evalsets.api.ops_views`` to ``evalsets.workspaces.api.pending_views``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from uuid import UUID

from django.urls import URLPattern, URLResolver, get_resolver, resolve

URLCONF = "evalsets.api.urls"
#: The schema and docs routes are the root's own; they share no prefix with any other route,
#: so where they sit among the domains' routes changes nothing Django resolves.
ROOT_ONLY = {"api-schema", "api-docs", "api-redoc"}

PLAIN = {
    "slug": "s-{name}",
    "str": "str-{name}",
    "path": "dir/{name}.pdf",
    "uuid": "00000000-0000-4000-8000-000000000001",
    "int": "7",
}
#: A document id with '/' that ends like the document's own sub-routes.
TRICKY = {**PLAIN, "path": "dir/parses/00000000-0000-4000-8000-000000000001/anchors"}
CONVERTER = re.compile(r"<(\w+):(\w+)>")


def _view_class(callback: object) -> str:
    cls = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    return f"{cls.__module__}.{cls.__qualname__}" if cls else repr(callback)


def _walk(patterns: list, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, route)
        else:
            yield route, pattern


def _actions(callback: object) -> tuple | None:
    actions = dict(getattr(callback, "actions", None) or {})
    # DRF adds 'head' as the 'get' action to a viewset's map on its first request, in place;
    # a 'head' that is the 'get' action serves the same either way.
    if "get" in actions and actions.get("head") == actions["get"]:
        del actions["head"]
    return tuple(sorted(actions.items())) or None


def routes() -> list[tuple]:
    found = []
    for route, pattern in _walk(get_resolver(URLCONF).url_patterns):
        callback = pattern.callback
        initkwargs = getattr(callback, "initkwargs", {})
        found.append(
            (
                route,
                pattern.name,
                _view_class(callback),
                _actions(callback),
                tuple(sorted((k, repr(v)) for k, v in initkwargs.items())),
            )
        )
    return found


def _fill(route: str, values: dict[str, str]) -> str:
    return "/" + CONVERTER.sub(lambda m: values[m[1]].format(name=m[2]), route)


def resolved() -> list[tuple]:
    found = []
    for route, *_ in routes():
        for values in (PLAIN, TRICKY):
            if values is TRICKY and "<path:" not in route:
                continue
            path = _fill(route, values)
            match = resolve(path, urlconf=URLCONF)
            found.append((path, match.url_name, tuple(sorted(match.kwargs.items(), key=str))))
    return found


def test_every_route_keeps_its_string_name_view_and_actions() -> None:
    assert sorted(routes()) == sorted(ROUTES)


def test_the_domains_routes_are_tried_in_the_recorded_order() -> None:
    def ordered(found: list[tuple]) -> list[tuple]:
        return [entry for entry in found if entry[1] not in ROOT_ONLY]

    assert ordered(routes()) == ordered(ROUTES)


def test_every_sample_path_lands_on_the_recorded_route_with_the_recorded_arguments() -> None:
    def by_path(found: list[tuple]) -> dict[str, tuple]:
        return {path: rest for path, *rest in found}

    assert by_path(resolved()) == by_path(RESOLVED)


#: Recorded from the URL conf before the move; see the module docstring.
ROUTES = [
    ("auth/token/", "api-token", "evalsets.workspaces.api.views.TokenView", None, ()),
    ("schema/", "api-schema", "drf_spectacular.views.SpectacularAPIView", None, ()),
    (
        "docs/",
        "api-docs",
        "drf_spectacular.views.SpectacularSwaggerSplitView",
        None,
        (("template_name", "'api_docs/swagger_ui.html'"), ("url_name", "'api-schema'")),
    ),
    (
        "redoc/",
        "api-redoc",
        "drf_spectacular.views.SpectacularRedocView",
        None,
        (("template_name", "'api_docs/redoc.html'"), ("url_name", "'api-schema'")),
    ),
    (
        "workspaces/",
        "workspace-list",
        "evalsets.workspaces.api.views.WorkspaceViewSet",
        (("get", "list"), ("post", "create")),
        (),
    ),
    (
        "workspaces/<slug:ws>/",
        "workspace-detail",
        "evalsets.workspaces.api.views.WorkspaceViewSet",
        (("get", "retrieve"), ("patch", "partial_update")),
        (),
    ),
    (
        "workspaces/<slug:ws>/resolve/",
        "workspace-resolve",
        "evalsets.workspaces.api.views.WorkspaceViewSet",
        (("post", "resolve"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/pending/",
        "workspace-pending",
        "evalsets.workspaces.api.pending_views.PendingView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/members/",
        "member-list",
        "evalsets.workspaces.api.views.MemberViewSet",
        (("get", "list"), ("post", "create")),
        (),
    ),
    (
        "workspaces/<slug:ws>/members/<str:username>/",
        "member-detail",
        "evalsets.workspaces.api.views.MemberViewSet",
        (("delete", "destroy"), ("get", "retrieve"), ("patch", "partial_update")),
        (),
    ),
    (
        "workspaces/<slug:ws>/invitations/",
        "workspace-invitation-list",
        "evalsets.workspaces.api.views.WorkspaceInvitationViewSet",
        (("get", "list"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/invitations/<str:username>/",
        "workspace-invitation-detail",
        "evalsets.workspaces.api.views.WorkspaceInvitationViewSet",
        (("delete", "destroy"),),
        (),
    ),
    (
        "invitations/",
        "invitation-list",
        "evalsets.workspaces.api.views.InvitationViewSet",
        (("get", "list"),),
        (),
    ),
    (
        "invitations/<slug:workspace>/accept/",
        "invitation-accept",
        "evalsets.workspaces.api.views.InvitationViewSet",
        (("post", "accept"),),
        (),
    ),
    (
        "invitations/<slug:workspace>/decline/",
        "invitation-decline",
        "evalsets.workspaces.api.views.InvitationViewSet",
        (("post", "decline"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/",
        "document-list",
        "evalsets.documents.api.views.DocumentViewSet",
        (("get", "list"), ("post", "create")),
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/parses/<uuid:parse>/reference/",
        "parse-reference",
        "evalsets.documents.api.views.ParseViewSet",
        (("post", "reference"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/parses/<uuid:parse>/",
        "parse-detail",
        "evalsets.documents.api.views.ParseViewSet",
        (("delete", "destroy"), ("get", "retrieve")),
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/parses/",
        "parse-list",
        "evalsets.documents.api.views.ParseViewSet",
        (("get", "list"), ("post", "create")),
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/parses/<uuid:parse>/pages/",
        "parse-pages",
        "evalsets.documents.api.document_pages.DocumentPagesView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/pdf/",
        "document-pdf",
        "evalsets.documents.api.pdf_pages.PdfView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/pdf/pages/<int:page>/image",
        "pdf-page-image",
        "evalsets.documents.api.pdf_pages.PdfPageImageView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/pdf/pages/<int:page>/text/",
        "pdf-page-text",
        "evalsets.documents.api.pdf_pages.PdfPageTextView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/parses/<uuid:parse>/search/",
        "parse-search",
        "evalsets.documents.api.document_pages.DocumentSearchView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/rendered/",
        "document-rendered",
        "evalsets.documents.api.document_rendered.DocumentRenderedView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/anchors/",
        "document-anchors",
        "evalsets.documents.api.views.DocumentViewSet",
        (("get", "anchors"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/reparse/",
        "document-reparse",
        "evalsets.documents.api.views.DocumentViewSet",
        (("post", "reparse"),),
        (("pagination_class", "None"),),
    ),
    (
        "workspaces/<slug:ws>/documents/<path:doc>/",
        "document-detail",
        "evalsets.documents.api.views.DocumentViewSet",
        (("delete", "destroy"), ("get", "retrieve")),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/",
        "evalset-list",
        "evalsets.anchoring.api.views.EvalSetViewSet",
        (("get", "list"), ("post", "create")),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/",
        "evalset-detail",
        "evalsets.anchoring.api.views.EvalSetViewSet",
        (("delete", "destroy"), ("get", "retrieve"), ("patch", "partial_update")),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/",
        "item-list",
        "evalsets.anchoring.api.views.ItemViewSet",
        (("get", "list"), ("post", "create")),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/",
        "item-detail",
        "evalsets.anchoring.api.views.ItemViewSet",
        (
            ("delete", "destroy"),
            ("get", "retrieve"),
            ("patch", "partial_update"),
            ("put", "update"),
        ),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/anchors/",
        "anchor-list",
        "evalsets.anchoring.api.views.AnchorViewSet",
        (("get", "list"), ("post", "create")),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/anchors/<uuid:anchor>/",
        "anchor-detail",
        "evalsets.anchoring.api.views.AnchorViewSet",
        (("delete", "destroy"), ("get", "retrieve"), ("patch", "partial_update")),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/anchors/<uuid:anchor>/confirm/",
        "anchor-confirm",
        "evalsets.anchoring.api.views.AnchorViewSet",
        (("post", "confirm"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/anchors/<uuid:anchor>/compare/",
        "anchor-compare",
        "evalsets.anchoring.api.views.AnchorViewSet",
        (("get", "compare"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/submit/",
        "item-submit",
        "evalsets.review.api.views.WorkflowViewSet",
        (("post", "submit"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/approve/",
        "item-approve",
        "evalsets.review.api.views.WorkflowViewSet",
        (("post", "approve"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/request-changes/",
        "item-request-changes",
        "evalsets.review.api.views.WorkflowViewSet",
        (("post", "request_changes"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/adjudication/",
        "item-adjudication",
        "evalsets.review.api.views.AdjudicationViewSet",
        (("get", "retrieve"), ("post", "create")),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/reopen/",
        "item-reopen",
        "evalsets.review.api.views.WorkflowViewSet",
        (("post", "reopen"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/comments/",
        "item-comments",
        "evalsets.review.api.views.CommentViewSet",
        (("get", "list"), ("post", "create")),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/history/",
        "item-history",
        "evalsets.review.api.views.HistoryViewSet",
        (("get", "list"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/assignments/",
        "assignment-list",
        "evalsets.review.api.views.AssignmentViewSet",
        (("get", "list"), ("post", "create")),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/assignments/<uuid:assignment>/",
        "assignment-detail",
        "evalsets.review.api.views.AssignmentViewSet",
        (("delete", "destroy"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/next/",
        "next-item",
        "evalsets.review.api.views.NextItemViewSet",
        (("get", "retrieve"),),
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/dashboard/",
        "evalset-dashboard",
        "evalsets.review.api.views.DashboardViewSet",
        (("get", "retrieve"),),
        (),
    ),
    ("inbox/", "inbox", "evalsets.review.api.inbox_views.InboxView", None, ()),
    ("inbox/read/", "inbox-read", "evalsets.review.api.inbox_views.InboxReadView", None, ()),
    (
        "workspaces/<slug:ws>/changes/",
        "workspace-changes",
        "evalsets.review.api.inbox_views.ChangesView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/similar/",
        "similar-questions",
        "evalsets.anchoring.api.check_views.SimilarQuestionsView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/releases/",
        "release-list",
        "evalsets.releases.api.views.ReleaseListView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/releases/<int:version>/",
        "release-detail",
        "evalsets.releases.api.views.ReleaseDetailView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/releases/<int:version>/files/<slug:fmt>",
        "release-file",
        "evalsets.releases.api.views.ReleaseFileView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/releases/<int:version>/compare/<int:other>/",
        "release-compare",
        "evalsets.releases.api.views.ReleaseCompareView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/imports/preview/",
        "import-preview",
        "evalsets.releases.api.views.ImportPreviewView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/imports/",
        "import-commit",
        "evalsets.releases.api.views.ImportCommitView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/imports/preview/",
        "new-import-preview",
        "evalsets.releases.api.views.NewSetImportPreviewView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/imports/",
        "new-import-commit",
        "evalsets.releases.api.views.NewSetImportCommitView",
        None,
        (),
    ),
    # Added with the experiments domain, after the recording.
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/experiments/",
        "experiment-list",
        "evalsets.experiments.api.views.ExperimentListView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/experiments/runs/preview/",
        "run-preview",
        "evalsets.experiments.api.views.RunPreviewView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/experiments/runs/",
        "run-commit",
        "evalsets.experiments.api.views.RunCommitView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/experiments/<uuid:experiment>/",
        "experiment-detail",
        "evalsets.experiments.api.views.ExperimentDetailView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/experiments/<uuid:experiment>/cancel/",
        "experiment-cancel",
        "evalsets.experiments.api.views.ExperimentCancelView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/experiments/<uuid:experiment>/rerun/",
        "experiment-rerun",
        "evalsets.experiments.api.views.ExperimentRerunView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/experiments/<uuid:experiment>/misses/",
        "experiment-misses",
        "evalsets.experiments.api.views.ExperimentMissesView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/experiments/<uuid:experiment>/compare/",
        "experiment-compare",
        "evalsets.experiments.api.views.ExperimentCompareView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/experiments/<uuid:experiment>/gate/",
        "experiment-gate",
        "evalsets.experiments.api.views.ExperimentGateView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/experiments/<uuid:experiment>/results/<slug:fmt>",
        "experiment-results",
        "evalsets.experiments.api.views.ExperimentResultsView",
        None,
        (),
    ),
    # Added after the move: workspace search and suggested evidence.
    (
        "workspaces/<slug:ws>/search/",
        "workspace-search",
        "evalsets.passages.api.views.WorkspaceSearchView",
        None,
        (),
    ),
    (
        "workspaces/<slug:ws>/evalsets/<slug:set_slug>/items/<str:item>/suggestions/",
        "item-suggestions",
        "evalsets.passages.api.views.ItemSuggestionsView",
        None,
        (),
    ),
]

#: Recorded from the URL conf before the move; see the module docstring.
RESOLVED = [
    ("/auth/token/", "api-token", ()),
    ("/schema/", "api-schema", ()),
    ("/docs/", "api-docs", ()),
    ("/redoc/", "api-redoc", ()),
    ("/workspaces/", "workspace-list", ()),
    ("/workspaces/s-ws/", "workspace-detail", (("ws", "s-ws"),)),
    ("/workspaces/s-ws/resolve/", "workspace-resolve", (("ws", "s-ws"),)),
    ("/workspaces/s-ws/pending/", "workspace-pending", (("ws", "s-ws"),)),
    ("/workspaces/s-ws/members/", "member-list", (("ws", "s-ws"),)),
    (
        "/workspaces/s-ws/members/str-username/",
        "member-detail",
        (("username", "str-username"), ("ws", "s-ws")),
    ),
    ("/workspaces/s-ws/invitations/", "workspace-invitation-list", (("ws", "s-ws"),)),
    (
        "/workspaces/s-ws/invitations/str-username/",
        "workspace-invitation-detail",
        (("username", "str-username"), ("ws", "s-ws")),
    ),
    ("/invitations/", "invitation-list", ()),
    ("/invitations/s-workspace/accept/", "invitation-accept", (("workspace", "s-workspace"),)),
    ("/invitations/s-workspace/decline/", "invitation-decline", (("workspace", "s-workspace"),)),
    ("/workspaces/s-ws/documents/", "document-list", (("ws", "s-ws"),)),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/parses/00000000-0000-4000-8000-000000000001/reference/",
        "parse-reference",
        (
            ("doc", "dir/doc.pdf"),
            ("parse", UUID("00000000-0000-4000-8000-000000000001")),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/parses/00000000-0000-4000-8000-000000000001/reference/",
        "parse-reference",
        (
            ("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"),
            ("parse", UUID("00000000-0000-4000-8000-000000000001")),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/parses/00000000-0000-4000-8000-000000000001/",
        "parse-detail",
        (
            ("doc", "dir/doc.pdf"),
            ("parse", UUID("00000000-0000-4000-8000-000000000001")),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/parses/00000000-0000-4000-8000-000000000001/",
        "parse-detail",
        (
            ("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"),
            ("parse", UUID("00000000-0000-4000-8000-000000000001")),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/parses/",
        "parse-list",
        (("doc", "dir/doc.pdf"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/parses/",
        "parse-list",
        (("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/parses/00000000-0000-4000-8000-000000000001/pages/",
        "parse-pages",
        (
            ("doc", "dir/doc.pdf"),
            ("parse", UUID("00000000-0000-4000-8000-000000000001")),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/parses/00000000-0000-4000-8000-000000000001/pages/",
        "parse-pages",
        (
            ("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"),
            ("parse", UUID("00000000-0000-4000-8000-000000000001")),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/pdf/",
        "document-pdf",
        (("doc", "dir/doc.pdf"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/pdf/",
        "document-pdf",
        (("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/pdf/pages/7/image",
        "pdf-page-image",
        (("doc", "dir/doc.pdf"), ("page", 7), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/pdf/pages/7/image",
        "pdf-page-image",
        (
            ("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"),
            ("page", 7),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/pdf/pages/7/text/",
        "pdf-page-text",
        (("doc", "dir/doc.pdf"), ("page", 7), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/pdf/pages/7/text/",
        "pdf-page-text",
        (
            ("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"),
            ("page", 7),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/parses/00000000-0000-4000-8000-000000000001/search/",
        "parse-search",
        (
            ("doc", "dir/doc.pdf"),
            ("parse", UUID("00000000-0000-4000-8000-000000000001")),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/parses/00000000-0000-4000-8000-000000000001/search/",
        "parse-search",
        (
            ("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"),
            ("parse", UUID("00000000-0000-4000-8000-000000000001")),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/rendered/",
        "document-rendered",
        (("doc", "dir/doc.pdf"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/rendered/",
        "document-rendered",
        (("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/anchors/",
        "document-anchors",
        (("doc", "dir/doc.pdf"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/anchors/",
        "document-anchors",
        (("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/reparse/",
        "document-reparse",
        (("doc", "dir/doc.pdf"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/reparse/",
        "document-reparse",
        (("doc", "dir/parses/00000000-0000-4000-8000-000000000001/anchors"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/doc.pdf/",
        "document-detail",
        (("doc", "dir/doc.pdf"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/documents/dir/parses/00000000-0000-4000-8000-000000000001/anchors/",
        "document-anchors",
        (("doc", "dir/parses/00000000-0000-4000-8000-000000000001"), ("ws", "s-ws")),
    ),
    ("/workspaces/s-ws/evalsets/", "evalset-list", (("ws", "s-ws"),)),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/",
        "evalset-detail",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/",
        "item-list",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/",
        "item-detail",
        (("item", "str-item"), ("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/anchors/",
        "anchor-list",
        (("item", "str-item"), ("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/anchors/00000000-0000-4000-8000-000000000001/",
        "anchor-detail",
        (
            ("anchor", UUID("00000000-0000-4000-8000-000000000001")),
            ("item", "str-item"),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/anchors/00000000-0000-4000-8000-000000000001/confirm/",
        "anchor-confirm",
        (
            ("anchor", UUID("00000000-0000-4000-8000-000000000001")),
            ("item", "str-item"),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/anchors/00000000-0000-4000-8000-000000000001/compare/",
        "anchor-compare",
        (
            ("anchor", UUID("00000000-0000-4000-8000-000000000001")),
            ("item", "str-item"),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/submit/",
        "item-submit",
        (("item", "str-item"), ("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/approve/",
        "item-approve",
        (("item", "str-item"), ("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/request-changes/",
        "item-request-changes",
        (("item", "str-item"), ("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/adjudication/",
        "item-adjudication",
        (("item", "str-item"), ("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/reopen/",
        "item-reopen",
        (("item", "str-item"), ("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/comments/",
        "item-comments",
        (("item", "str-item"), ("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/history/",
        "item-history",
        (("item", "str-item"), ("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/assignments/",
        "assignment-list",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/assignments/00000000-0000-4000-8000-000000000001/",
        "assignment-detail",
        (
            ("assignment", UUID("00000000-0000-4000-8000-000000000001")),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/next/",
        "next-item",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/dashboard/",
        "evalset-dashboard",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    ("/inbox/", "inbox", ()),
    ("/inbox/read/", "inbox-read", ()),
    ("/workspaces/s-ws/changes/", "workspace-changes", (("ws", "s-ws"),)),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/similar/",
        "similar-questions",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/releases/",
        "release-list",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/releases/7/",
        "release-detail",
        (("set_slug", "s-set_slug"), ("version", 7), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/releases/7/files/s-fmt",
        "release-file",
        (("fmt", "s-fmt"), ("set_slug", "s-set_slug"), ("version", 7), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/releases/7/compare/7/",
        "release-compare",
        (("other", 7), ("set_slug", "s-set_slug"), ("version", 7), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/imports/preview/",
        "import-preview",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/imports/",
        "import-commit",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    ("/workspaces/s-ws/imports/preview/", "new-import-preview", (("ws", "s-ws"),)),
    ("/workspaces/s-ws/imports/", "new-import-commit", (("ws", "s-ws"),)),
    # Added with the experiments domain, after the recording.
    (
        "/workspaces/s-ws/evalsets/s-set_slug/experiments/",
        "experiment-list",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/experiments/runs/preview/",
        "run-preview",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/experiments/runs/",
        "run-commit",
        (("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/experiments/00000000-0000-4000-8000-000000000001/",
        "experiment-detail",
        (
            ("experiment", UUID("00000000-0000-4000-8000-000000000001")),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/experiments/00000000-0000-4000-8000-000000000001/cancel/",
        "experiment-cancel",
        (
            ("experiment", UUID("00000000-0000-4000-8000-000000000001")),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/experiments/00000000-0000-4000-8000-000000000001/rerun/",
        "experiment-rerun",
        (
            ("experiment", UUID("00000000-0000-4000-8000-000000000001")),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/experiments/00000000-0000-4000-8000-000000000001/misses/",
        "experiment-misses",
        (
            ("experiment", UUID("00000000-0000-4000-8000-000000000001")),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/experiments/00000000-0000-4000-8000-000000000001/compare/",
        "experiment-compare",
        (
            ("experiment", UUID("00000000-0000-4000-8000-000000000001")),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/experiments/00000000-0000-4000-8000-000000000001/gate/",
        "experiment-gate",
        (
            ("experiment", UUID("00000000-0000-4000-8000-000000000001")),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/experiments/00000000-0000-4000-8000-000000000001/results/s-fmt",
        "experiment-results",
        (
            ("experiment", UUID("00000000-0000-4000-8000-000000000001")),
            ("fmt", "s-fmt"),
            ("set_slug", "s-set_slug"),
            ("ws", "s-ws"),
        ),
    ),
    ("/workspaces/s-ws/search/", "workspace-search", (("ws", "s-ws"),)),
    (
        "/workspaces/s-ws/evalsets/s-set_slug/items/str-item/suggestions/",
        "item-suggestions",
        (("item", "str-item"), ("set_slug", "s-set_slug"), ("ws", "s-ws")),
    ),
]
