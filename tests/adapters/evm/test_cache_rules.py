"""Which EVM answers the response cache keeps, and for how long."""

from __future__ import annotations

import pytest

from adapters.base import Lifetime
from adapters.evm.cache_rules import kept, lifetime

HEAD = 100
H = "0x" + "ab" * 32
A = "0x" + "11" * 20


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("eth_chainId", "[]", Lifetime.FOREVER),
        ("eth_blockNumber", "[]", Lifetime.UNTIL_HEAD),
        ("eth_getBlockByNumber", '["latest",false]', Lifetime.UNTIL_HEAD),
        ("eth_getBlockByNumber", '["finalized",true]', Lifetime.UNTIL_HEAD),
        ("eth_getBlockByNumber", '["pending",false]', Lifetime.NEVER),
        ("eth_getBlockByNumber", '["earliest",false]', Lifetime.UNTIL_REORG),
        ("eth_getBlockByNumber", '["0x64",false]', Lifetime.UNTIL_REORG),  # the head itself
        ("eth_getBlockByNumber", '["0x65",false]', Lifetime.UNTIL_HEAD),  # not there yet
        ("eth_getBlockByNumber", '["0xzz",false]', Lifetime.NEVER),
        ("eth_getBlockByNumber", "{}", Lifetime.NEVER),
        ("eth_getBlockByHash", f'["{H}",false]', Lifetime.UNTIL_REORG),
        ("eth_getTransactionReceipt", f'["{H}"]', Lifetime.UNTIL_REORG),
        ("eth_getBalance", f'["{A}"]', Lifetime.UNTIL_HEAD),
        ("eth_getBalance", f'["{A}","latest"]', Lifetime.UNTIL_HEAD),
        ("eth_getBalance", f'["{A}","0x10"]', Lifetime.UNTIL_REORG),
        ("eth_getBalance", f'["{A}",{{"blockHash":"{H}"}}]', Lifetime.UNTIL_REORG),
        ("eth_getBalance", f'["{A}","pending"]', Lifetime.NEVER),
        ("eth_getStorageAt", f'["{A}","0x0","latest"]', Lifetime.UNTIL_HEAD),
        ("eth_call", f'[{{"to":"{A}"}},"latest"]', Lifetime.UNTIL_HEAD),
        ("eth_getLogs", '[{"fromBlock":"0x1","toBlock":"0x10"}]', Lifetime.UNTIL_REORG),
        ("eth_getLogs", '[{"fromBlock":"0x1","toBlock":"0x200"}]', Lifetime.UNTIL_HEAD),
        ("eth_getLogs", '[{"fromBlock":"0x1"}]', Lifetime.UNTIL_HEAD),
        ("eth_getLogs", f'[{{"blockHash":"{H}"}}]', Lifetime.UNTIL_REORG),
        # The filter object read as geth reads it: keys of any case, a null member absent.
        ("eth_getLogs", f'[{{"BLOCKHASH":"{H}"}}]', Lifetime.UNTIL_REORG),
        ("eth_getLogs", '[{"FromBlock":"0x1","TOBLOCK":"0x10"}]', Lifetime.UNTIL_REORG),
        ("eth_getLogs", '[{"fromBlock":"0x1","toBlock":null}]', Lifetime.UNTIL_HEAD),
        ("eth_getLogs", '[{"fromBlock":"pending"}]', Lifetime.NEVER),
        ("eth_getLogs", '[{"fromBlock":"bogus"}]', Lifetime.NEVER),
        ("eth_getLogs", "[1,2]", Lifetime.NEVER),
        ("eth_sendRawTransaction", '["0x00"]', Lifetime.NEVER),
        ("eth_getFilterChanges", '["0x1"]', Lifetime.NEVER),
        ("evm_mine", "[]", Lifetime.NEVER),
        ("eth_getTransactionCount", f'["{A}","pending"]', Lifetime.NEVER),
        # Block references of the wrong type (found by the soak's fuzzer: they raised TypeError,
        # unhashable, and the call was answered -32603 instead of reaching the chain's checks)
        ("eth_getBalance", f'["{A}",[1]]', Lifetime.NEVER),
        ("eth_getBalance", f'["{A}",{{"blockNumber":[1]}}]', Lifetime.NEVER),
        ("eth_getBlockByNumber", '[{"x":{}},false]', Lifetime.NEVER),
        ("eth_getLogs", '[{"fromBlock":[1]}]', Lifetime.NEVER),
        ("eth_getLogs", '[{"fromBlock":"0x1","toBlock":{"a":1}}]', Lifetime.NEVER),
    ],
)
def test_lifetimes(method: str, params: str, expected: Lifetime) -> None:
    assert lifetime(method, params.encode(), HEAD) is expected


def test_not_found_and_not_yet_mined_answers_are_never_kept() -> None:
    assert kept(Lifetime.UNTIL_REORG, b"null") is Lifetime.NEVER
    assert kept(Lifetime.UNTIL_REORG, b'{"hash":"0x1","blockNumber":null}') is Lifetime.NEVER
    assert kept(Lifetime.UNTIL_REORG, b'{"hash":"0x1","blockNumber":"0x5"}') is Lifetime.UNTIL_REORG
    assert kept(Lifetime.UNTIL_HEAD, b"[]") is Lifetime.UNTIL_HEAD
