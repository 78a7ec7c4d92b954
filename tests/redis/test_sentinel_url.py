"""``redis+sentinel://`` URLs: what they name, and the clear error a malformed one gets."""

from __future__ import annotations

import pytest

from broker.redis import SentinelUrl, redacted
from schemas.errors import ConfigError


def test_a_sentinel_url_names_its_sentinels_master_and_database() -> None:
    parsed = SentinelUrl.parse("redis+sentinel://:s3cret@10.0.0.1:26379,sentinel-b:26380/cache/2")
    assert parsed.sentinels == (("10.0.0.1", 26379), ("sentinel-b", 26380))
    assert (parsed.master, parsed.db, parsed.password, parsed.username) == (
        "cache",
        2,
        "s3cret",
        None,
    )
    assert SentinelUrl.parse("redis+sentinel://h:1/m").db == 0


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+sentinel://h:1", "MASTER_NAME"),
        ("redis+sentinel://h/m", "HOST:PORT"),
        ("redis+sentinel://h:1,:2/m", "HOST:PORT"),
        ("redis+sentinel://h:99999/m", "HOST:PORT"),
        ("redis+sentinel://h:1/m/x", "not a number"),
        ("redis+sentinel://h:1/m/0/more", "MASTER_NAME"),
    ],
)
def test_a_malformed_sentinel_url_is_a_config_error(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        SentinelUrl.parse(url)


def test_passwords_are_redacted_in_every_kind_of_url() -> None:
    assert redacted("redis+sentinel://:pw@h:1,h:2/m") == "redis+sentinel://:***@h:1,h:2/m"
    assert redacted("redis://user:pw@h:1/0") == "redis://user:***@h:1/0"
    assert redacted("redis://h:1/0") == "redis://h:1/0"
