"""Which origins may read which answers: CORS as the application's policy, endpoint by endpoint.

The HTTP machine (:mod:`broker.transport.http_protocol`) adds no header of its own; the broker decides here:

- the JSON-RPC paths grant browser dapps: any origin for a key without ``origins``, and for a key
  with them the request's ``Origin`` when they allow it (echoed, with ``Vary: Origin``), nothing
  otherwise (the request itself is refused with 403 by the access layer);
- ``/admin``, ``/console`` and ``/metrics`` grant nothing, and ``/admin`` refuses a request whose
  ``Origin`` is not the server's own (:func:`same_origin`): a page on another site must not drive
  the operator API with the dev token, and a browser sends ``Origin`` with every POST. Scripts send
  none, and the console page served from this origin sends its own. While the operator API
  takes the public dev token (loopback), it also refuses a ``Host`` that is not a loopback name
  (:func:`loopback_host`): a page whose name was rebound to 127.0.0.1 (DNS rebinding) is of its
  own origin to the browser, but names itself in ``Host``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Final

from broker.access import OriginPattern, origin_allowed

_METHODS_AND_HEADERS: Final = [
    (b"access-control-allow-methods", b"POST, GET, OPTIONS"),
    (b"access-control-allow-headers", b"content-type, authorization"),
    (b"access-control-max-age", b"86400"),
]
#: The grant of the JSON-RPC paths for a key without ``origins``.
ANY_ORIGIN: Final = [(b"access-control-allow-origin", b"*"), *_METHODS_AND_HEADERS]
#: :data:`ANY_ORIGIN` as header lines, for the answers the HTTP shell builds itself.
ANY_ORIGIN_LINES: Final = b"".join(name + b": " + value + b"\r\n" for name, value in ANY_ORIGIN)


def rpc_grant(
    origins: Sequence[OriginPattern] | None, origin: bytes | None
) -> list[tuple[bytes, bytes]]:
    """The CORS headers of an answer on a JSON-RPC path whose key allows ``origins`` (None: any),
    to a request sent with the ``Origin`` header ``origin``."""
    if origins is None:
        return ANY_ORIGIN
    if origin is None or not origin_allowed(origins, origin.decode("latin-1")):
        return [(b"vary", b"origin")]
    return [(b"access-control-allow-origin", origin), (b"vary", b"origin"), *_METHODS_AND_HEADERS]


def same_origin(request_origin: bytes | None, host: bytes | None) -> bool:
    """Whether a request's ``Origin`` (None: a script's request, without one) names the host it
    was sent to (its ``Host``), as a page served by this server sends it. The scheme is not
    compared: behind a TLS proxy, the page's origin is https and the request reaches us as http."""
    if request_origin is None:
        return True
    scheme, sep, authority = request_origin.lower().partition(b"://")
    if not sep or host is None:
        return False  # "null" (a sandboxed frame, a file: page), or no Host to compare with
    default = _DEFAULT_PORTS.get(scheme)
    host = host.lower()
    if default is not None:
        authority = authority.removesuffix(default)
        host = host.removesuffix(default)
    return authority == host


_DEFAULT_PORTS: Final = {b"http": b":80", b"https": b":443"}


def loopback_host(host: bytes | None) -> bool:
    """Whether a ``Host`` header names this machine by a loopback name or address (``localhost``,
    ``*.localhost``, ``127.0.0.1``, ``[::1]``, with or without a port)."""
    if host is None:
        return False
    text = host.decode("latin-1").lower()
    if text.startswith("["):  # an IPv6 literal, maybe with a port after it
        name = text[1:].partition("]")[0]
    else:
        name, _, port = text.rpartition(":")
        if not name or not port.isdigit():
            name = text
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
