"""A dev chain network's options are checked: a typo or a wrong type is an error naming the
network, never silently ignored."""

from __future__ import annotations

import pytest

from adapters.base import NetworkSpec
from adapters.devchain import DevChainAdapter
from adapters.devchain._options import DevChainOptions
from broker.config import ConfigError

from .conftest import CHAIN, dev_spec


def test_defaults_and_given_options() -> None:
    assert DevChainAdapter(dev_spec()).options == DevChainOptions()
    adapter = DevChainAdapter(dev_spec(block_time=2, accounts=3, mnemonic="a b c"))
    assert adapter.options == DevChainOptions(block_time=2.0, accounts=3, mnemonic="a b c")
    assert isinstance(adapter.options.block_time, float)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"block_tme": 2}, "unknown field `block_tme`"),
        ({"block_time": "fast"}, "Expected `float`, got `str` - at `$.block_time`"),
        ({"accounts": 2.5}, "Expected `int`, got `float` - at `$.accounts`"),
        ({"block_time": -1}, "`block_time` must not be negative"),
        ({"chain_file": "chain.rlp"}, "the `chain_file` and `forkchoice` options need a `genesis`"),
        ({"forkchoice": "fcu.json"}, "need a `genesis`"),
    ],
)
def test_bad_options_are_a_config_error_naming_the_network(
    options: dict[str, object], message: str
) -> None:
    spec = NetworkSpec(name="local", chain=CHAIN, adapter="devchain", options=options)
    with pytest.raises(ConfigError, match=r"^networks\.local \(devchain adapter\): ") as caught:
        DevChainAdapter(spec)
    assert message in str(caught.value)
