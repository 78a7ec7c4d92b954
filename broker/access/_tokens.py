"""Signed tokens (JWT) for a key: RS256 or ES256, checked with PyJWT, never by hand.

A key's ``jwt_public_key`` fixes the one algorithm a token may use (RS256 for an RSA key, ES256 for
a P-256 key): ``alg: none`` and HS256 signed with the public key as the secret (the classic
confusion) are refused before any signature is looked at. ``exp`` and ``aud`` are required, ``aud``
must be the key, and ``exp``/``nbf`` get ``LEEWAY`` seconds for clocks that disagree. The token may
narrow the key's rules with ``origins`` and ``methods`` claims (the same syntax as the key's): a
request must pass both, so a token never widens what the key allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from broker.access._policy import MethodRule, OriginPattern
from schemas.errors import ConfigError, Unauthenticated

LEEWAY: Final = 60.0


@dataclass(frozen=True, slots=True)
class TokenKey:
    """A key's ``jwt_public_key``, and the one algorithm its tokens are signed with."""

    key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey
    algorithm: str

    @classmethod
    def from_pem(cls, pem: bytes, where: str) -> TokenKey:
        try:
            key = serialization.load_pem_public_key(pem)
        except ValueError as exc:
            raise ConfigError(f"{where}: not a PEM public key ({exc})") from None
        if isinstance(key, rsa.RSAPublicKey):
            if key.key_size < 2048:
                raise ConfigError(f"{where}: an RSA key of {key.key_size} bits (2048 at least)")
            return cls(key, "RS256")
        if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
            return cls(key, "ES256")
        raise ConfigError(f"{where}: an RSA or P-256 (ES256) public key is needed")


@dataclass(frozen=True, slots=True)
class Claims:
    """What a valid token grants: until ``expires`` (Unix seconds), within its narrowing rules."""

    expires: float
    origins: tuple[OriginPattern, ...] | None
    methods: MethodRule | None


def _string_list(payload: dict[str, Any], claim: str) -> list[str] | None:
    value = payload.get(claim)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise Unauthenticated(f"invalid token: the {claim} claim must be a list of strings")
    return value


def verify_token(token: str, key: TokenKey, audience: str) -> Claims:
    """The claims of ``token`` for the key named ``audience``; raises :class:`Unauthenticated`."""
    try:
        payload = jwt.decode(
            token,
            key.key,
            algorithms=[key.algorithm],
            audience=audience,
            leeway=LEEWAY,
            options={"require": ["exp", "aud"]},
        )
    except jwt.PyJWTError as exc:
        raise Unauthenticated(f"invalid token: {exc}") from None
    origins = _string_list(payload, "origins")
    methods = _string_list(payload, "methods")
    try:
        patterns = None if origins is None else tuple(OriginPattern.parse(o) for o in origins)
    except ConfigError as exc:
        raise Unauthenticated(f"invalid token: {exc}") from None
    return Claims(
        float(payload["exp"]),
        patterns,
        None if methods is None else MethodRule(tuple(methods), "the token's methods"),
    )
