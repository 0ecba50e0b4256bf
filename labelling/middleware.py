"""Two small middlewares: refuse a URL no database can look up, and remember the tab.

``RefuseUnstorableUrl``: refuse a URL no database can look up, before any view queries with it.

PostgreSQL takes no NUL in a text parameter, so ``/items/q%001/`` or ``?q=a%00b`` reached the
database and ended as a 500 on every page and API read that looks something up by it. Django
already turns bytes that are not UTF-8 into U+FFFD, so NUL is the one character left to refuse;
the check is ``evalsets.validation.check_storable_text``, the same one request bodies get.

``RememberTab``: the browser tab a write came from goes on its audit entry (``evalsets.origin``).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from evalsets import origin
from evalsets.errors import InvalidInput
from evalsets.validation import check_storable_text


class RefuseUnstorableUrl:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            check_storable_text(request.path, "the URL's path")
            for name, values in request.GET.lists():
                check_storable_text(name, "a query parameter's name")
                for value in values:
                    check_storable_text(value, f"query parameter {name!r}")
        except InvalidInput as exc:
            if request.path_info.startswith("/api/"):
                return JsonResponse({"detail": exc.message, "errors": {}}, status=400)
            return HttpResponseBadRequest(exc.message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class RememberTab:
    """Put the request's browser tab id (``X-Groundwork-Tab``) where the audit trail reads
    it (``evalsets.origin``) for the length of the request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = origin.set_tab(request.headers.get(origin.HEADER))
        try:
            return self.get_response(request)
        finally:
            origin.reset_tab(token)
