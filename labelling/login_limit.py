"""Slow password guessing on the log-in page: a few failures per username and address, then a pause.

Failed log-ins are counted in Django's cache under a key made of the username (case-folded)
and the client's address (``REMOTE_ADDR``; behind a proxy that is the proxy, so the count is
then effectively per username). After ``GROUNDWORK_LOGIN_ATTEMPTS`` failures within
``GROUNDWORK_LOGIN_WINDOW_S`` seconds of the first, the form answers 429 with how long to
wait, without checking the password at all, until the window has passed. A successful log-in
clears the count. The default cache is per process (LocMem); when several web processes run,
configure a shared cache (Redis) so they count together. The API's token endpoint has its
own limit (DRF throttle scope ``login``, see ``evalsets.api.views.LoginThrottle``).
"""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import cache


def _limits() -> tuple[int, int]:
    return settings.GROUNDWORK_LOGIN_ATTEMPTS, settings.GROUNDWORK_LOGIN_WINDOW_S


def _keys(username: str, address: str) -> tuple[str, str]:
    digest = hashlib.sha256(f"{username.casefold()}\x00{address}".encode()).hexdigest()
    return f"login-failures:{digest}", f"login-window:{digest}"


def client_address(request) -> str:
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def seconds_to_wait(username: str, address: str) -> int:
    """0 when another attempt may be made now, else the seconds until the window ends."""
    attempts, window = _limits()
    count_key, start_key = _keys(username, address)
    if (cache.get(count_key) or 0) < attempts:
        return 0
    started = cache.get(start_key)
    if started is None:
        return 0
    return max(1, math.ceil(started + window - time.time()))


def record_failure(username: str, address: str) -> int:
    """Count one failed attempt; return the failures so far in this window."""
    _, window = _limits()
    count_key, start_key = _keys(username, address)
    cache.add(start_key, time.time(), timeout=window)
    cache.add(count_key, 0, timeout=window)
    try:
        return cache.incr(count_key)
    except ValueError:  # the window ran out between the two calls: start a new one
        cache.set(start_key, time.time(), timeout=window)
        cache.set(count_key, 1, timeout=window)
        return 1


def clear(username: str, address: str) -> None:
    cache.delete_many(list(_keys(username, address)))


class LoginView(auth_views.LoginView):
    """Django's log-in page with a per-username-and-address limit on failed attempts."""

    # LoginView would also take the form by PUT; a log-in is a POST.
    http_method_names = ["get", "post", "head", "options"]

    def post(self, request, *args, **kwargs):
        username = request.POST.get("username", "")
        address = client_address(request)
        wait = seconds_to_wait(username, address)
        if wait:
            return self._locked_out(wait)
        response = super().post(request, *args, **kwargs)
        if request.user.is_authenticated and response.status_code == 302:
            clear(username, address)
        return response

    def form_invalid(self, form):
        username = self.request.POST.get("username", "")
        address = client_address(self.request)
        attempts, _ = _limits()
        if record_failure(username, address) >= attempts:
            return self._locked_out(seconds_to_wait(username, address) or 1)
        return super().form_invalid(form)

    def _locked_out(self, wait: int):
        message = f"Too many failed log-in attempts; try again in {wait} s."
        context = self.get_context_data(
            form=self.get_form_class()(self.request), locked_out=message
        )
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(wait)
        return response
