"""Signatures as the Standard Webhooks specification has them (sans-io).

A secret is ``whsec_`` and the base64 of its key bytes. A delivery is signed over
``<webhook-id>.<webhook-timestamp>.<body>`` with HMAC-SHA256, and the ``webhook-signature`` header
is ``v1,`` and the base64 of that MAC: what the ``standardwebhooks`` libraries verify, in any
language.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Final

SECRET_PREFIX: Final = "whsec_"
#: Key bytes in a new secret (the specification asks for 24 to 64).
SECRET_BYTES: Final = 32


def new_secret() -> str:
    """A new random signing secret, ``whsec_<base64>``."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The key bytes of a ``whsec_`` secret."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a webhook secret starts with whsec_")
    return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)


def signature(key: bytes, delivery_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header of one attempt at a delivery."""
    signed = b"%s.%d.%s" % (delivery_id.encode(), timestamp, body)
    mac = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def signed_headers(
    key: bytes, delivery_id: str, timestamp: int, body: bytes
) -> list[tuple[bytes, bytes]]:
    """The three headers of the specification for one attempt (a retry keeps the id and signs
    its own timestamp, so a receiver's replay window holds for every attempt)."""
    return [
        (b"webhook-id", delivery_id.encode()),
        (b"webhook-timestamp", str(timestamp).encode()),
        (b"webhook-signature", signature(key, delivery_id, timestamp, body).encode()),
    ]
