"""The console's files (shipped in this package, read once) and the headers every answer carries.

The policy allows scripts, styles and connections from this origin only: no inline script, no
``eval``, no frames (``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``: a wallet approval
must never be click-jacked from another page).
"""

from __future__ import annotations

from importlib import resources
from typing import Final

from broker.transport.http import HttpResponse

CONTENT_SECURITY_POLICY: Final = (
    b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: Final = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]
_TYPES: Final = {
    "html": b"text/html; charset=utf-8",
    "js": b"text/javascript; charset=utf-8",
    "css": b"text/css; charset=utf-8",
}
#: ``/console`` is the page; ``/console/<name>`` its other files.
PAGE: Final = "console.html"


def _load() -> dict[str, tuple[bytes, bytes]]:
    files = resources.files("broker.operator.console").joinpath("static")
    found = {}
    for entry in files.iterdir():
        kind = entry.name.rsplit(".", 1)[-1]
        if kind in _TYPES:
            found[entry.name] = (_TYPES[kind], entry.read_bytes())
    return found


_FILES: Final = _load()


def secured(response: HttpResponse) -> HttpResponse:
    """``response`` with the console's security headers."""
    response.headers = [*(response.headers or []), *SECURITY_HEADERS]
    return response


def file_response(name: str | None) -> HttpResponse:
    """The console file ``name`` (None: the page), or 404."""
    found = _FILES.get(name or PAGE)
    if found is None:
        return secured(
            HttpResponse(404, b"no such console file", [(b"content-type", b"text/plain")])
        )
    content_type, body = found
    return secured(HttpResponse(200, body, [(b"content-type", content_type)]))
