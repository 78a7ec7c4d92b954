"""How long an EVM node answer stays true: the rules the response cache applies to EVM chains.

An answer is cached as its encoded bytes under (chain, method, params) with one of four lifetimes:

- ``FOREVER``: it can never change (``eth_chainId``).
- ``UNTIL_REORG``: history that only a reorganisation rewrites (a block by hash or by a number
  at or below the head, a mined transaction or receipt, logs of a range wholly at or below the head).
- ``UNTIL_HEAD``: true of the current head (``latest``, ``safe``, ``finalized``, balances, calls,
  fees, logs of ranges that reach past the head), until the next head.
- ``NEVER``: ``pending`` state, anything that sends, and every method not named here.

An answer that says "not found" (``null``) or "not mined yet" (``blockNumber`` null) is never
cached: the transaction may arrive any moment, and polling for it is what dapps do.
"""

from __future__ import annotations

from typing import Final

import msgspec

from adapters.base import Lifetime
from adapters.evm.log_filter import filter_members

_BY_HASH: Final = frozenset(
    {
        "eth_getBlockByHash",
        "eth_getBlockReceipts",
        "eth_getTransactionByHash",
        "eth_getTransactionReceipt",
        "eth_getTransactionByBlockHashAndIndex",
        "eth_getBlockTransactionCountByHash",
        "eth_getUncleByBlockHashAndIndex",
        "eth_getUncleCountByBlockHash",
    }
)
#: Methods whose block reference is positional argument ``index``.
_BY_NUMBER: Final = {
    "eth_getBlockByNumber": 0,
    "eth_getTransactionByBlockNumberAndIndex": 0,
    "eth_getBlockTransactionCountByNumber": 0,
    "eth_getUncleByBlockNumberAndIndex": 0,
    "eth_getUncleCountByBlockNumber": 0,
}
#: State reads at a block (argument ``index``); a tag or number, default ``latest``.
_STATE_AT: Final = {
    "eth_getBalance": 1,
    "eth_getCode": 1,
    "eth_getTransactionCount": 1,
    "eth_getStorageAt": 2,
    "eth_call": 1,
    "eth_estimateGas": 1,
}
_HEAD_ONLY: Final = frozenset(
    {
        "eth_blockNumber",
        "eth_gasPrice",
        "eth_maxPriorityFeePerGas",
        "eth_blobBaseFee",
        "eth_feeHistory",
        "eth_syncing",
    }
)
_FOREVER: Final = frozenset({"eth_chainId", "net_version"})
_HEAD_TAGS: Final = frozenset({"latest", "safe", "finalized"})

_params_decoder: Final = msgspec.json.Decoder(list[object])


def lifetime(method: str, params: bytes, head: int) -> Lifetime:
    """How long the answer to ``method(params)`` may be cached, with the chain's head at ``head``.

    ``params`` is the request's raw params JSON. Anything unexpected (not an array, odd block
    references) is ``NEVER``: the cache only ever skips work it is sure of.
    """
    if method in _FOREVER:
        return Lifetime.FOREVER
    if method in _HEAD_ONLY:
        return Lifetime.UNTIL_HEAD
    if b"pending" in params:
        return Lifetime.NEVER
    if method in _BY_HASH:
        return Lifetime.UNTIL_REORG
    try:
        args = _params_decoder.decode(params) if params else []
    except msgspec.DecodeError:
        return Lifetime.NEVER
    if method in _BY_NUMBER:
        index = _BY_NUMBER[method]
        return _at_block(args[index] if len(args) > index else None, head, default=None)
    if method in _STATE_AT:
        index = _STATE_AT[method]
        return _at_block(args[index] if len(args) > index else "latest", head, default="latest")
    if method == "eth_getLogs":
        return _logs(args, head)
    return Lifetime.NEVER


def _block_number(ref: object) -> int | None:
    if isinstance(ref, str) and ref.startswith("0x") and len(ref) > 2:
        try:
            return int(ref, 16)
        except ValueError:
            return None
    return None


def _head_tag(ref: object) -> bool:
    """Whether ``ref`` names the head (a list or an object there is no tag: unhashable, too)."""
    return isinstance(ref, str) and ref in _HEAD_TAGS


def _at_block(ref: object, head: int, *, default: str | None) -> Lifetime:
    if ref is None:
        ref = default
    if isinstance(ref, dict):  # EIP-1898 {blockHash} / {blockNumber}
        if "blockHash" in ref:
            return Lifetime.UNTIL_REORG
        ref = ref.get("blockNumber")
    if _head_tag(ref):
        return Lifetime.UNTIL_HEAD
    if ref == "earliest":
        return Lifetime.UNTIL_REORG
    number = _block_number(ref)
    if number is None:
        return Lifetime.NEVER
    return Lifetime.UNTIL_REORG if number <= head else Lifetime.UNTIL_HEAD


def _logs(args: list[object], head: int) -> Lifetime:
    if len(args) != 1 or not isinstance(args[0], dict):
        return Lifetime.NEVER
    members = filter_members(args[0])  # keys of any case, a null member absent: as geth reads
    if "blockhash" in members:
        return Lifetime.UNTIL_REORG
    end = members.get("toblock", "latest")
    start = members.get("fromblock", "latest")
    if _block_number(start) is None and start != "earliest":
        return Lifetime.UNTIL_HEAD if _head_tag(start) else Lifetime.NEVER
    number = _block_number(end)
    if number is None:
        return Lifetime.UNTIL_HEAD if _head_tag(end) else Lifetime.NEVER
    return Lifetime.UNTIL_REORG if number <= head else Lifetime.UNTIL_HEAD


def kept(lifetime_: Lifetime, encoded: bytes) -> Lifetime:
    """The lifetime of an answer, given what it says: "not found" and "not yet mined" are not
    cached at all (dapps poll for them, and they change without a new head)."""
    if lifetime_ is Lifetime.NEVER:
        return lifetime_
    if encoded == b"null" or b'"blockNumber":null' in encoded:
        return Lifetime.NEVER
    return lifetime_
