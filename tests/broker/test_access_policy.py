"""The access rules without I/O: origin patterns, method globs, the GCRA arithmetic, the tokens."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import jwt
import pytest
from prometheus_client import CollectorRegistry

from broker.access import AccessControl, AccessMetrics, KeyAccess, KeyPolicy, MemoryLimiter
from broker.access._keys import key_policy
from broker.access._policy import (
    MethodRule,
    OriginPattern,
    Rate,
    Taken,
    gcra_take,
    origin_allowed,
    share,
)
from broker.access._tokens import TokenKey, verify_token
from broker.compose import build_broker
from broker.config import KeyConfig, load_config
from schemas.errors import ConfigError, Unauthenticated
from tests.support.tokens import SigningKey

PATTERNS = (
    OriginPattern.parse("https://app.example.com"),
    OriginPattern.parse("https://*.example.org"),
)


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("https://app.example.com", True),  # exact
        ("https://a.example.org", True),  # wildcard label
        ("HTTPS://App.Example.COM", True),  # schemes and hosts are case-insensitive
        ("https://A.EXAMPLE.org", True),
        (None, False),  # no Origin: a key restricted to origins is for browsers
        ("null", False),  # sandboxed frames, file: pages
        ("https://example.org.evil.com", False),  # the look-alike
        ("https://example.org", False),  # `*` is one label, not none
        ("https://a.b.example.org", False),  # nor two
        ("https://evilexample.org", False),
        ("http://app.example.com", False),  # another scheme
        ("https://app.example.com:8443", False),  # another port
        ("https://app.example.com/", False),  # not an origin
        ("https://app.example.com.", False),
        ("", False),
    ],
)
def test_origins(origin: str | None, allowed: bool) -> None:
    assert origin_allowed(PATTERNS, origin) is allowed


def test_no_origin_rules_let_anything_in() -> None:
    assert origin_allowed(None, None)
    assert origin_allowed(None, "null")


def test_null_is_allowed_only_when_listed() -> None:
    assert origin_allowed((OriginPattern.parse("null"),), "null")
    assert not origin_allowed((OriginPattern.parse("null"),), "https://null")


@pytest.mark.parametrize(
    "pattern",
    [
        "app.example.com",
        "https://*",
        "https://*.com",
        "https://a.example.com/path",
        "https://a*.example.com",
    ],
)
def test_bad_origin_patterns_are_refused_at_start(pattern: str) -> None:
    with pytest.raises(ConfigError, match="origin"):
        OriginPattern.parse(pattern)


def test_method_globs() -> None:
    rule = MethodRule(("eth_*", "wallet_getSession"), "keys.k.methods")
    assert rule.allows("eth_blockNumber")
    assert rule.allows("wallet_getSession")
    assert not rule.allows("wallet_createSession")
    assert not rule.allows("ETH_blockNumber")
    assert not rule.allows("debug_traceTransaction")
    assert rule.describe() == "keys.k.methods = ['eth_*', 'wallet_getSession']"


def test_gcra_admits_the_burst_then_the_rate() -> None:
    rate = Rate(5, 5)  # 5 a second, 5 at once: one every 200 ms
    tat, now = 0, 1_000_000_000
    admitted = 0
    for _ in range(10):
        taken = gcra_take(tat, now, rate, 1)
        tat = taken.tat
        admitted += taken.admitted
    assert admitted == 5
    assert taken.retry_after_us == 200_000
    assert gcra_take(tat, now + 199_999, rate, 1).admitted == 0
    assert gcra_take(tat, now + 200_000, rate, 1).admitted == 1
    # After a second idle, the whole burst again.
    assert gcra_take(tat, now + 1_000_000, rate, 10).admitted == 5


def test_gcra_admits_part_of_a_batch_and_the_rest_waits() -> None:
    rate = Rate(50, 50)
    taken = gcra_take(0, 10**9, rate, 1000)
    assert taken.admitted == 50
    assert taken.retry_after_us == 20_000  # one more call's worth


def test_one_answer_for_several_requests_is_shared_first_come_first_served() -> None:
    shares = share(Taken(5, 200_000, 0), [2, 2, 3, 1])
    assert [t.admitted for t in shares] == [2, 2, 1, 0]
    assert [t.retry_after_us for t in shares] == [0, 0, 200_000, 200_000]


def test_a_key_policy_reads_its_secret_from_env_or_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K_SECRET", "s3cret\n")
    assert key_policy("k", KeyConfig(secret="env:K_SECRET")).secret == b"s3cret"
    (tmp_path / "secret").write_text("from-file")
    assert key_policy("k", KeyConfig(secret=f"file:{tmp_path}/secret")).secret == b"from-file"
    with pytest.raises(ConfigError, match=r"keys\.k\.secret: expected env:VARIABLE"):
        key_policy("k", KeyConfig(secret="plain"))
    with pytest.raises(ConfigError, match="NOT_SET is not set"):
        key_policy("k", KeyConfig(secret="env:NOT_SET"))


def test_a_key_policy_checks_its_numbers() -> None:
    assert key_policy("k", KeyConfig(requests_per_second=2.5)).rate == Rate(2.5, 3)
    with pytest.raises(ConfigError, match="burst: only with requests_per_second"):
        key_policy("k", KeyConfig(burst=3))
    with pytest.raises(ConfigError, match="max_connections: must be positive"):
        key_policy("k", KeyConfig(max_connections=0))


@pytest.fixture(scope="module")
def signer() -> SigningKey:
    return SigningKey.rsa()


def test_a_valid_token_passes(signer: SigningKey) -> None:
    key = TokenKey.from_pem(signer.public_pem, "test")
    assert key.algorithm == "RS256"
    claims = verify_token(signer.token("k"), key, "k", now=time.time())
    assert claims.origins is None
    assert claims.methods is None


REFUSED: dict[str, Callable[[SigningKey], str]] = {
    "expired": lambda s: s.token("k", expires_in=-120),  # past the 60 s leeway
    "not yet valid": lambda s: s.token("k", nbf=9_999_999_999),
    "wrong key": lambda s: SigningKey.rsa().token("k"),
    "wrong audience": lambda s: s.token("other"),
    "alg none": lambda s: s.unsigned("k"),
    "HS256 with the public key": lambda s: s.hs256_with_public_key("k"),
    "no exp": lambda s: jwt.encode({"aud": "k"}, s.private, algorithm="RS256"),
    "garbage": lambda s: "not.a.token",
}


@pytest.mark.parametrize("case", REFUSED)
def test_every_other_token_is_refused(signer: SigningKey, case: str) -> None:
    key = TokenKey.from_pem(signer.public_pem, "test")
    token = REFUSED[case](signer)
    with pytest.raises(Unauthenticated, match="invalid token"):
        verify_token(token, key, "k", now=time.time())


def test_a_token_a_little_expired_passes_within_the_leeway(signer: SigningKey) -> None:
    key = TokenKey.from_pem(signer.public_pem, "test")
    verify_token(signer.token("k", expires_in=-30), key, "k", now=time.time())


def test_a_token_is_checked_at_the_time_it_is_given() -> None:
    # The broker's wall clock gives the time (never PyJWT's own reading of the system's clock),
    # with the same leeway on both sides.
    signer = SigningKey.ec()
    key = TokenKey.from_pem(signer.public_pem, "test")
    issued = 1_000_000_000.0
    token = signer.token("k", expires_in=100, now=issued, nbf=int(issued), iat=int(issued))
    for now in (issued, issued - 60, issued + 100 + 59):
        assert verify_token(token, key, "k", now=now).expires == issued + 100
    with pytest.raises(Unauthenticated, match="Signature has expired"):
        verify_token(token, key, "k", now=issued + 160)
    with pytest.raises(Unauthenticated, match=r"not yet valid \(nbf\)"):
        verify_token(token, key, "k", now=issued - 61)
    stamped = signer.token("k", now=issued, iat=int(issued))
    with pytest.raises(Unauthenticated, match=r"not yet valid \(iat\)"):
        verify_token(stamped, key, "k", now=issued - 61)
    for claim in ("exp", "nbf", "iat"):
        odd = jwt.encode({"aud": "k", "exp": int(issued), claim: "soon"}, signer.private, "ES256")
        with pytest.raises(Unauthenticated, match=rf"\({claim}\) must be an integer"):
            verify_token(odd, key, "k", now=issued)


def test_es256_tokens_and_claims_that_narrow() -> None:
    signer = SigningKey.ec()
    key = TokenKey.from_pem(signer.public_pem, "test")
    assert key.algorithm == "ES256"
    claims = verify_token(
        signer.token("k", origins=["https://app.example.com"], methods=["eth_call"]),
        key,
        "k",
        now=time.time(),
    )
    assert claims.methods is not None
    assert claims.methods.allows("eth_call")
    assert not claims.methods.allows("eth_blockNumber")
    assert origin_allowed(claims.origins, "https://app.example.com")
    assert not origin_allowed(claims.origins, "https://other.example.com")
    with pytest.raises(Unauthenticated, match="origins claim must be a list of strings"):
        verify_token(signer.token("k", origins="https://x.example"), key, "k", now=time.time())


def test_a_public_key_that_is_not_rsa_or_p256_is_refused() -> None:
    with pytest.raises(ConfigError, match="not a PEM public key"):
        TokenKey.from_pem(b"-----BEGIN PUBLIC KEY-----\nxx\n-----END PUBLIC KEY-----\n", "k")


def test_a_mistake_in_a_key_table_stops_the_start_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "scopecast.toml"
    config.write_text('[keys.k]\norigins = ["https://*.com"]\n')
    with pytest.raises(ConfigError, match=r"origin 'https://\*.com': a wildcard must sit under"):
        build_broker(load_config(config))
    config.write_text("[keys.k]\nrequests_per_minute = 5\n")
    with pytest.raises(ConfigError, match="unknown field `requests_per_minute`"):
        load_config(config)


@dataclass(eq=False)
class FakeSocket:
    context: SimpleNamespace


def test_sockets_close_token_grace_seconds_after_their_token_expires(signer: SigningKey) -> None:
    key = TokenKey.from_pem(signer.public_pem, "test")
    policy = KeyPolicy("k", token_key=key)
    control = AccessControl(
        {"k": policy}, MemoryLimiter(), AccessMetrics(CollectorRegistry(), ["k"]), token_grace=30
    )
    claims = verify_token(signer.token("k", expires_in=100), key, "k", now=time.time())
    socket = FakeSocket(SimpleNamespace(access=KeyAccess(control, policy, claims, None)))
    control.watch(socket)  # type: ignore[arg-type]
    assert control.expired(claims.expires + 29.9) == []
    assert control.expired(claims.expires + 30) == [socket]
    control.unwatch(socket)  # type: ignore[arg-type]
    assert control.expired(claims.expires + 60) == []
