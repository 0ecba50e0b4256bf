"""One shape for every API error: ``{"detail": "...", "errors": {field: [messages]}}``.

``detail`` is a sentence a person can act on (it names the field where there is one);
``errors`` lets a form put each message beside its field. Domain errors from the services,
DRF's validation errors, uniqueness races and Django's own validation errors all come out
this way, as 4xx, never as a 500. Storage that is full (a disk, a quota) is a 507 saying
so; a database that is locked or unreachable a 503 (``evalsets.dberrors`` tells those from
bugs by the driver's code). A fault of our own (an exception nothing expected, a NOT NULL
violation or a missing column included) is a 500 that says so, logged with its traceback
and a reference the answer repeats (the request's id, ``labelling.logs``); under ``/api/``
it keeps the same shape and shows no traceback, with ``DEBUG`` on (``make run``) or off:
API views answer it here, anything else through ``server_error``, the site's
``handler500``.
"""

from __future__ import annotations

import errno
import logging
import uuid

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.signals import got_request_exception
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.log import log_response
from django.views import defaults
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from evalsets import dberrors
from evalsets.errors import GroundworkError, RateLimited

log = logging.getLogger(__name__)


def _printable(text) -> str:
    """``text`` as a string that can be sent as UTF-8: an error may echo what was sent,
    and a lone surrogate there (in a key of a dict field, say) must not turn a 400 into a
    500 while the answer is encoded; it is shown escaped, ``\\ud800``."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def _flatten(errors, prefix: str = "") -> dict[str, list[str]]:
    flat: dict[str, list[str]] = {}
    if isinstance(errors, dict):
        for key, value in errors.items():
            name = f"{prefix}.{_printable(key)}" if prefix else _printable(key)
            for sub_key, messages in _flatten(value, name).items():
                flat.setdefault(sub_key, []).extend(messages)
    elif isinstance(errors, list):
        for index, value in enumerate(errors):
            if isinstance(value, dict | list):
                name = f"{prefix}[{index}]" if prefix else f"[{index}]"
                for sub_key, messages in _flatten(value, name).items():
                    flat.setdefault(sub_key, []).extend(messages)
            else:
                flat.setdefault(prefix or "non_field_errors", []).append(_printable(value))
    else:
        flat.setdefault(prefix or "non_field_errors", []).append(_printable(errors))
    return flat


def _sentence(errors: dict[str, list[str]]) -> str:
    field, messages = next(iter(errors.items()))
    if field in ("non_field_errors", "detail"):
        return messages[0]
    return f"{field}: {messages[0]}"


def _body_refused(exc) -> Response:
    """Django's own refusal of a request body (its form fields past
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` or ``DATA_UPLOAD_MAX_NUMBER_FIELDS``), in our shape rather
    than as a bare "Bad Request" page."""
    if isinstance(exc, RequestDataTooBig):
        message = (
            f"the request's form fields pass the {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes "
            "a request may send outside its files; nothing was read"
        )
        code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    else:
        message = (
            f"the request sends more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} form "
            "fields; nothing was read"
        )
        code = status.HTTP_400_BAD_REQUEST
    return Response({"detail": message, "errors": {"body": [message]}}, status=code)


#: ``errno`` values meaning the storage is full: the disk, or the user's quota on it.
STORAGE_FULL = (errno.ENOSPC, errno.EDQUOT)
#: PostgreSQL's SQLSTATE for "disk full"; SQLite says "database or disk is full".
DISK_FULL_SQLSTATE = "53100"


def storage_full(exc: BaseException) -> bool:
    """True when ``exc`` says the server ran out of space, for files or for the database."""
    if isinstance(exc, OSError):
        return exc.errno in STORAGE_FULL
    if isinstance(exc, OperationalError):
        cause = exc.__cause__
        return getattr(cause, "sqlstate", None) == DISK_FULL_SQLSTATE or "disk is full" in str(exc)
    return False


def _storage_full() -> Response:
    """507. An upload's file is stored before the transaction that would point at it, and
    what it wrote is removed when storing fails (``services.document_upload``); a database
    that is full rolls its transaction back: either way the request kept nothing."""
    message = (
        "the server's storage is full, so nothing was saved; try again once space has been "
        "freed, or tell the site's administrator"
    )
    return Response(
        {"detail": message, "errors": {}},
        status=status.HTTP_507_INSUFFICIENT_STORAGE,
        headers={"Retry-After": "60"},
    )


def _written_meanwhile(exc: Exception) -> Response:
    """409: a row this request meant to write was written by another request first (a
    UNIQUE violation; any other integrity error is a bug, answered 500)."""
    log.info("a uniqueness race answered 409: %s", dberrors.describe(exc))
    return Response(
        {
            "detail": "that change conflicts with data written at the same moment; "
            "reload and try again",
            "errors": {},
        },
        status=status.HTTP_409_CONFLICT,
    )


def _database_unavailable(exc: Exception) -> Response:
    """503: a lock not granted in time, or a connection that failed. A connection that
    drops just after COMMIT fails here too, with the change saved, so the answer cannot say
    nothing was saved: a create sent with an Idempotency-Key is safe to send again as it
    was; anything else is reloaded first."""
    log.warning("the database was busy or unreachable, answered 503: %s", dberrors.describe(exc))
    return Response(
        {
            "detail": "the database was busy or its connection failed; the change may or "
            "may not have been saved. A request sent with an Idempotency-Key can be sent "
            "again with the same key; otherwise reload before trying again",
            "errors": {},
        },
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": "2"},
    )


def reference_of(request: HttpRequest | None) -> str:
    """The id an unexpected error's answer and its log line share: the request's own id
    (given to every request by ``labelling.logs.RequestIdMiddleware``), or one made now."""
    reference = getattr(request, "request_id", None)
    if not reference:
        reference = uuid.uuid4().hex[:16]
        if request is not None:
            request.request_id = reference
    return reference


def _unexpected(exc: Exception, context) -> Response:
    """A fault of our own in an API view: logged with its traceback and the request's id as
    Django logs one, and signalled as Django signals one (the test client re-raises it from
    there, Sentry reports it), but answered in the API's shape, never as Django's HTML
    debug page."""
    request = getattr(context.get("request"), "_request", None)
    got_request_exception.send(sender=None, request=request)
    response = server_error_json(reference_of(request))
    log_response(
        "%s: %s",
        "Internal Server Error",
        request.path if request is not None else "",
        response=response,
        request=request,
        exception=exc,
    )
    return response


def exception_handler(exc, context):
    if storage_full(exc):
        return _storage_full()
    if isinstance(exc, GroundworkError):
        message = _printable(exc.message)
        errors = {_printable(exc.field or "non_field_errors"): [message]}
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else None
        return Response(
            {"detail": message, "errors": errors, **exc.extra},
            status=exc.status_code,
            headers=headers,
        )
    if isinstance(exc, RequestDataTooBig | TooManyFieldsSent):
        return _body_refused(exc)
    if isinstance(exc, DjangoValidationError):
        exc = ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if dberrors.unique_race(exc):
        return _written_meanwhile(exc)
    if dberrors.transient(exc):
        return _database_unavailable(exc)
    response = drf_exception_handler(exc, context)
    if response is None:
        return _unexpected(exc, context)
    if isinstance(exc, ValidationError):
        errors = _flatten(response.data)
        response.data = {
            "detail": _sentence(errors) if errors else "invalid input",
            "errors": errors,
        }
    elif isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"detail": str(response.data["detail"]), "errors": {}}
    return response


def server_error(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    """Django's ``handler500``: JSON in the API's error shape under ``/api/``, else the page.

    Django logs the exception with its traceback once this answer is made (the request's
    id on the line); the client gets neither, only the id as the error's reference (in the
    body under ``/api/``, in the ``X-Request-ID`` header everywhere).
    """
    if request.path_info.startswith("/api/"):
        return server_error_json(reference_of(request))
    return defaults.server_error(request, *args, **kwargs)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's ``handler404``: a URL under ``/api/`` that names no endpoint answers in the
    API's shape too, not with the site's HTML page."""
    if request.path_info.startswith("/api/"):
        message = f"there is no API endpoint at {_printable(request.path_info)!r}"
        return JsonResponse({"detail": message, "errors": {}}, status=404)
    return defaults.page_not_found(request, exception)


def server_error_json(reference: str) -> JsonResponse:
    return JsonResponse(
        {
            "detail": "an unexpected error stopped the server answering this request (a "
            "fault of ours, not of what was sent); the error was logged with reference "
            f"{reference}: give that reference to the site's administrator",
            "errors": {},
            "reference": reference,
        },
        status=500,
    )
