"""Slow password guessing: django-axes, keyed the way Django itself identifies users and clients.

Both ways in, the log-in page and the API's token endpoint, go through ``authenticate()`` with
the HTTP request, so axes (its backend first in ``AUTHENTICATION_BACKENDS``) counts failures
for both in one place (its ``AccessAttempt`` table). What is refused, before any password is
checked, until ``GROUNDWORK_LOGIN_WINDOW_S`` seconds have passed since the last failure:

- a user from one address after ``GROUNDWORK_LOGIN_ATTEMPTS`` failures for that user there;
- an address after as many failures from it, whatever the names;
- never a user as such: locking an account wherever it logs in from would let anyone lock
  anyone out by failing on purpose. A user with that many failures from all addresses
  together is slowed instead: an address that has failed for them waits
  ``GROUNDWORK_LOGIN_SLOWDOWN_S`` seconds after each of its failures before trying again
  (so each of many addresses guesses slowly), and an address that has not failed for them
  (the user's own, unless they mistyped) is not held up at all.

A success clears the count of that user at that address only: signing in to one's own
account does not wipe what the address did to others.

The keys are what defeats the bypasses a hand-written limiter had:

- the user is counted by the **canonical** name: Django's log-in form normalises a user name
  with NFKC before looking it up (``UsernameField``, ``AbstractBaseUser.normalize_username``),
  so full-width and other compatibility spellings reach the same account; we count NFKC then
  case-folded, so every spelling of a name shares one count (never fewer than Django accepts);
- the client is the socket's address (``REMOTE_ADDR``) unless ``GROUNDWORK_PROXY_COUNT``
  trusted proxies are configured, because any client can write ``X-Forwarded-For``.

A user name longer than any account's is refused (400) before a password is hashed or a
failure is counted. A refusal by the limit answers 429 with ``Retry-After``: the page says
when to try again, the API answers in its JSON error shape.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import unicodedata
from datetime import timedelta

from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.validators import MaxLengthValidator
from django.db.models import Max, Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from evalsets.errors import InvalidInput
from evalsets.validation import check_storable_text

User = get_user_model()
#: The longest user name an account can have (a longer one matches nobody).
USERNAME_MAX_CHARS = User._meta.get_field(User.USERNAME_FIELD).max_length
#: The longest user name axes' table holds; a longer canonical name is stored as a digest.
COUNTED_NAME_MAX_CHARS = AccessAttempt._meta.get_field("username").max_length


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


class LoginForm(AuthenticationForm):
    """Django's log-in form, refusing a user name longer than any account's before
    ``clean()`` hashes a password (Django sets the field's ``max_length`` after the field is
    built, so by itself it only tells the browser)."""

    def __init__(self, request=None, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        self.fields["username"].validators.append(MaxLengthValidator(USERNAME_MAX_CHARS))


class LoginView(auth_views.LoginView):
    """Django's log-in page; axes' middleware swaps in the lock-out page when it applies."""

    form_class = LoginForm
    # LoginView would also take the form by PUT; a log-in is a POST.
    http_method_names = ["get", "post", "head", "options"]

    def form_invalid(self, form):
        """A user name that no account can have is a bad request (400); a wrong password is
        the form shown again (200), as Django answers it."""
        response = super().form_invalid(form)
        if "username" in form.errors:
            response.status_code = 400
        return response


class LoginLimitHandler(AxesDatabaseHandler):
    """Axes' database handler, slowing a user under attack instead of locking them, and
    clearing on success only what the successful address did to that user."""

    def is_locked(self, request, credentials: dict | None = None) -> bool:
        return super().is_locked(request, credentials) or slowdown_wait(request, credentials) > 0

    def reset_user_attempts(self, request, credentials: dict | None = None) -> int:
        username = get_client_username(request, credentials)
        count, _ = AccessAttempt.objects.filter(
            username=username, ip_address=request.axes_ip_address
        ).delete()
        return count


def failure_limit(request: HttpRequest | None, credentials: dict | None) -> int:
    return settings.GROUNDWORK_LOGIN_ATTEMPTS


def cool_off(request: HttpRequest | None) -> timedelta:
    return timedelta(seconds=settings.GROUNDWORK_LOGIN_WINDOW_S)


def canonical(username: str) -> str:
    """One key for every spelling Django would take for this name (NFKC, then case-folded).

    Normalising can lengthen a name (one character may become eighteen), and a name may hold
    text no database stores: such a key is kept as a digest, which counts the same."""
    key = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username).casefold())
    try:
        check_storable_text(key, "username")
    except InvalidInput:
        return _digest(key)
    return key if len(key) <= COUNTED_NAME_MAX_CHARS else _digest(key)


def _digest(key: str) -> str:
    return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


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


def _summary(attempts) -> dict:
    return attempts.aggregate(failures=Sum("failures_since_start"), last=Max("attempt_time"))


def _recent(request: HttpRequest):
    return AccessAttempt.objects.filter(attempt_time__gte=timezone.now() - cool_off(request))


def slowdown_wait(request: HttpRequest, credentials: dict | None) -> float:
    """Seconds this address must still wait before trying this user again: more than 0 only
    when the user has the limit's number of failures from all addresses together and this
    address is one of them."""
    username = get_client_username(request, credentials)
    if username is None:
        return 0.0
    mine = _recent(request).filter(username=username)
    if (_summary(mine)["failures"] or 0) < failure_limit(request, credentials):
        return 0.0
    here = _summary(mine.filter(ip_address=request.axes_ip_address))["last"]
    if here is None:
        return 0.0
    delay = timedelta(seconds=settings.GROUNDWORK_LOGIN_SLOWDOWN_S)
    return (here + delay - timezone.now()).total_seconds()


def seconds_to_wait(request: HttpRequest, credentials: dict | None) -> int:
    """Seconds until the address, or this user at it, may try again (at least 1)."""
    handler = AxesProxyHandler.get_implementation()
    limit = failure_limit(request, credentials)
    now = timezone.now()
    waits = [0.0, slowdown_wait(request, credentials)]
    for attempts in handler.get_user_attempts(request, credentials):
        summary = _summary(attempts)
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
        context = {"form": LoginForm(request), "locked_out": message}
        response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(wait)
    return response
