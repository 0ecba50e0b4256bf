"""Refusing a request body by its declared size, before any of it is read or parsed.

Parsing JSON costs CPU in the web process for every byte sent, even when the body is then
refused: the size is checked first, from ``Content-Length``. Django reads a body only up to
its ``Content-Length`` (a request without one has an empty body), so the header is the
body's size, not a claim about it.
"""

from __future__ import annotations

from evalsets.errors import TooLarge, limit_named
from evalsets.pure.archive import MB, limit_text, size_text


def declared_size(request) -> int:
    """The body's size as the request declares it; 0 when it declares none (or nonsense)."""
    raw = request.META.get("CONTENT_LENGTH") or "0"
    try:
        return max(0, int(raw))
    except ValueError:
        return 0


def check_body_size(request, limit: int, setting: str, what: str) -> None:
    """Raise ``TooLarge`` (413) naming ``setting`` when the body is larger than ``limit``."""
    size = declared_size(request)
    if size > limit:
        raise TooLarge(
            f"{what} is {size_text(size)}, past the {limit_text(limit)} limit ({setting}); "
            "nothing was read",
            field="body",
            extra=limit_named(setting, round(limit / MB, 3)),
        )
