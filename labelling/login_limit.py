"""Slow password guessing: django-axes, keyed the way Django itself identifies users and clients.

Both ways in, the log-in page and the API's token endpoint, go through ``authenticate()`` with
the HTTP request, so axes (its backend first in ``AUTHENTICATION_BACKENDS``) counts failures
for both in one place (its ``AccessAttempt`` table). A user name or a client address with
``GROUNDWORK_LOGIN_ATTEMPTS`` failures within ``GROUNDWORK_LOGIN_WINDOW_S`` seconds is refused
until that time has passed since its last failure, before any password is checked.

The two keys are what defeats the bypasses a hand-written limiter had:

- the user is counted by the **canonical** name: Django's log-in form normalises a user name
  with NFKC before looking it up (``UsernameField``, ``AbstractBaseUser.normalize_username``),
  so full-width and other compatibility spellings reach the same account; we count NFKC then
  case-folded, so every spelling of a name shares one count (never fewer than Django accepts);
- the client is the socket's address (``REMOTE_ADDR``) unless ``GROUNDWORK_PROXY_COUNT``
  trusted proxies are configured, because any client can write ``X-Forwarded-For``.

A lock-out answers 429 with ``Retry-After``: the page says when to try again, the API answers
in its JSON error shape.
"""

from __future__ import annotations

import ipaddress
import math
import unicodedata
from datetime import timedelta

from axes.backends import AxesStandaloneBackend
from axes.handlers.proxy import AxesProxyHandler
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Max, Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone


class LoginLimitBackend(AxesStandaloneBackend):
    """Axes' gate, for log-ins that come with an HTTP request.

    Django's test client ``login()`` and code run in a shell authenticate with no request:
    there is no client to count, so axes would refuse them outright. Every log-in over HTTP in
    this app (the page, the token endpoint, the admin) passes its request and is counted.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class LoginView(auth_views.LoginView):
    """Django's log-in page; axes' middleware swaps in the lock-out page when it applies."""

    # LoginView would also take the form by PUT; a log-in is a POST.
    http_method_names = ["get", "post", "head", "options"]


def failure_limit(request: HttpRequest | None, credentials: dict | None) -> int:
    return settings.GROUNDWORK_LOGIN_ATTEMPTS


def cool_off(request: HttpRequest | None) -> timedelta:
    return timedelta(seconds=settings.GROUNDWORK_LOGIN_WINDOW_S)


def canonical(username: str) -> str:
    """One key for every spelling Django would take for this name (NFKC, then case-folded)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username).casefold())


def canonical_username(request: HttpRequest | None, credentials: dict | None) -> str | None:
    name = (credentials or {}).get("username")
    if name is None and request is not None:
        name = request.POST.get("username")
    return canonical(str(name)) if name is not None else None


def client_address(request: HttpRequest) -> str:
    """The client as the deployment defines it: the socket, or what the trusted proxies saw.

    With ``GROUNDWORK_PROXY_COUNT = n`` each of the ``n`` proxies appends the address it was
    reached from to ``X-Forwarded-For``, so the client is the ``n``-th entry from the right;
    anything further left was written by the client and proves nothing. A header too short
    (or not an address) means the request did not come through the proxies: the socket then.
    """
    remote = request.META.get("REMOTE_ADDR") or "0.0.0.0"
    count = settings.GROUNDWORK_PROXY_COUNT
    if count <= 0:
        return remote
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    hops = [hop for hop in hops if hop]
    if len(hops) < count:
        return remote
    try:
        return str(ipaddress.ip_address(hops[-count]))
    except ValueError:
        return remote


def seconds_to_wait(request: HttpRequest, credentials: dict | None) -> int:
    """Seconds until the user or address that is locked may try again (at least 1)."""
    handler = AxesProxyHandler.get_implementation()
    limit = failure_limit(request, credentials)
    now = timezone.now()
    waits = [0.0]
    for attempts in handler.get_user_attempts(request, credentials):
        summary = attempts.aggregate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        if (summary["failures"] or 0) >= limit and summary["last"] is not None:
            waits.append((summary["last"] + cool_off(request) - now).total_seconds())
    return max(1, math.ceil(max(waits)))


def lockout_message(wait: int) -> str:
    return f"Too many failed log-in attempts; try again in {wait} s."


def locked_out_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict | None
) -> HttpResponse:
    """Axes' answer to a locked-out attempt: 429 with when to try again, as page or JSON."""
    wait = seconds_to_wait(request, credentials)
    message = lockout_message(wait)
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(
            {"detail": message, "errors": {"non_field_errors": [message]}}, status=429
        )
    else:
        context = {"form": AuthenticationForm(request), "locked_out": message}
        response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(wait)
    return response
