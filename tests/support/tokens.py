"""Signing keys and tokens for the access tests: real RS256/ES256 tokens (PyJWT), and the forged
ones a server must refuse (``alg: none``, HS256 signed with the public key as the secret)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class SigningKey:
    private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
    algorithm: str

    @classmethod
    def rsa(cls) -> SigningKey:
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")

    @classmethod
    def ec(cls) -> SigningKey:
        return cls(ec.generate_private_key(ec.SECP256R1()), "ES256")

    @property
    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def write_public(self, path: Path) -> str:
        """Write the public key to ``path``; the ``file:`` source naming it."""
        path.write_bytes(self.public_pem)
        return f"file:{path}"

    def token(
        self, audience: str, *, expires_in: float = 300, now: float | None = None, **claims: Any
    ) -> str:
        """A token for ``audience`` expiring ``expires_in`` seconds after ``now`` (Unix seconds;
        default the system's time: a broker on another wall clock is given its own)."""
        issued = time.time() if now is None else now
        payload = {"aud": audience, "exp": int(issued + expires_in), **claims}
        return jwt.encode(payload, self.private, algorithm=self.algorithm)

    def unsigned(self, audience: str) -> str:
        """``alg: none``: no signature at all."""
        payload = {"aud": audience, "exp": int(time.time() + 300)}
        header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
        return f"{header}.{_b64(json.dumps(payload).encode())}."

    def hs256_with_public_key(self, audience: str) -> str:
        """The algorithm confusion: HS256, the public key (which everyone has) as the secret."""
        payload = {"aud": audience, "exp": int(time.time() + 300)}
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        signing_input = f"{header}.{_b64(json.dumps(payload).encode())}"
        mac = hmac.new(self.public_pem, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(mac)}"
