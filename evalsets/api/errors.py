"""One shape for every API error: ``{"detail": "...", "errors": {field: [messages]}}``.

``detail`` is a sentence a person can act on (it names the field where there is one);
``errors`` lets a form put each message beside its field. Domain errors from the services,
DRF's validation errors, database integrity races and Django's own validation errors all
come out this way, as 4xx, never as a 500. A fault of our own (an exception nothing
expected) is still a 500, but under ``/api/`` it keeps the same shape and shows no traceback:
``server_error`` is the site's ``handler500``.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from evalsets.errors import GroundworkError, RateLimited


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


def exception_handler(exc, context):
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
    if isinstance(exc, IntegrityError):
        return Response(
            {
                "detail": "that change conflicts with data written at the same moment; "
                "reload and try again",
                "errors": {},
            },
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, OperationalError):
        # A locked SQLite file in embedded mode, or a dropped database connection: nothing
        # was written (the request's transaction rolled back), so the client may simply retry.
        return Response(
            {
                "detail": "the database is busy or unreachable; nothing was saved, try again",
                "errors": {},
            },
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "2"},
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
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

    Django has already logged the exception with its traceback; the client gets neither.
    """
    if request.path_info.startswith("/api/"):
        return JsonResponse(
            {
                "detail": "the server failed while answering this request; the error was "
                "logged, try again later or tell the site's administrator",
                "errors": {},
            },
            status=500,
        )
    return defaults.server_error(request, *args, **kwargs)
