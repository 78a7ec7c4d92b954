"""Signed tokens (JWT) for a key: RS256 or ES256, checked with PyJWT, never by hand.

A key's ``jwt_public_key`` fixes the one algorithm a token may use (RS256 for an RSA key, ES256 for
a P-256 key): ``alg: none`` and HS256 signed with the public key as the secret (the classic
confusion) are refused before any signature is looked at. ``exp`` and ``aud`` are required, ``aud``
must be the key, and ``exp``/``nbf``/``iat`` get ``LEEWAY`` seconds for clocks that disagree. The
token may narrow the key's rules with ``origins`` and ``methods`` claims (the same syntax as the
key's): a request must pass both, so a token never widens what the key allows.

PyJWT checks the signature, the algorithm, the audience and that the claims are there; the time
claims are compared here with the ``now`` the caller gives (PyJWT would read the system's clock,
and the broker's wall clock is given to it: :mod:`broker.sessions.wall_clock`), as PyJWT compares them.
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


#: The time claims, as PyJWT names them in its errors.
_TIME_CLAIMS: Final = {"exp": "Expiration Time", "nbf": "Not Before", "iat": "Issued At"}


def _whole_seconds(payload: dict[str, Any], claim: str) -> int:
    try:
        return int(payload[claim])
    except (ValueError, TypeError, OverflowError):
        name = _TIME_CLAIMS[claim]
        raise Unauthenticated(
            f"invalid token: {name} claim ({claim}) must be an integer."
        ) from None


def _check_times(payload: dict[str, Any], now: float) -> None:
    """Refuse a token expired at ``now`` (Unix seconds), or not valid yet, beyond ``LEEWAY``."""
    if _whole_seconds(payload, "exp") <= now - LEEWAY:
        raise Unauthenticated("invalid token: Signature has expired")
    for claim in ("nbf", "iat"):
        if claim in payload and _whole_seconds(payload, claim) > now + LEEWAY:
            raise Unauthenticated(f"invalid token: The token is not yet valid ({claim})")


def verify_token(token: str, key: TokenKey, audience: str, *, now: float) -> Claims:
    """The claims of ``token`` for the key named ``audience`` at ``now`` (Unix seconds); raises
    :class:`Unauthenticated`."""
    try:
        payload = jwt.decode(
            token,
            key.key,
            algorithms=[key.algorithm],
            audience=audience,
            options={
                "require": ["exp", "aud"],
                "verify_exp": False,
                "verify_nbf": False,
                "verify_iat": False,
            },
        )
    except jwt.PyJWTError as exc:
        raise Unauthenticated(f"invalid token: {exc}") from None
    _check_times(payload, now)
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
