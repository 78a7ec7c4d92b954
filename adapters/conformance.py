"""Checks every adapter must pass; a plug-in's own tests call them on a started adapter.

Like ``trio.testing.check_two_way_stream`` for streams: the contract of :mod:`adapters.base` is
asserted here once, so that every adapter is held to the same rules the broker relies on.
:func:`check_chain_adapter` runs the chain-neutral checks on every chain an adapter serves, then
the checks of the chain's family where one exists (:func:`check_evm_chain` for ``eip155``,
:func:`check_solana_chain` for ``solana``); :func:`check_account_adapter` likewise
(:func:`check_accounts_neutral`, then :func:`check_evm_accounts` or :func:`check_solana_accounts`).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio
from solders.pubkey import Pubkey

from adapters.base import NOT_NOW, AccountAdapter, ChainAdapter, Lifetime, MethodDocs
from adapters.evm.blocks import ChainBlock
from adapters.evm.chain_adapter import BlockSource
from schemas.caip import is_evm, is_solana, normalize_address
from schemas.errors import InvalidParams, MethodNotFound, RpcError, Unauthorized

_CHAIN_ID = re.compile(r"^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$")
_HASH = re.compile(r"^0x[0-9a-f]{64}$")
_ADDRESS = re.compile(r"^0x[0-9a-f]{40}$")


def _raw(value: object) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode(value))


async def check_chain_adapter(adapter: ChainAdapter) -> None:
    """Assert the ChainAdapter contract on a started adapter (raises AssertionError): the
    chain-neutral checks, then those of each chain's family."""
    chains = list(adapter.chains())
    assert chains, "an adapter serves at least one chain"
    for chain in chains:
        await check_chain_neutral(adapter, chain)
        if is_evm(chain):
            await check_evm_chain(adapter, chain)
        elif is_solana(chain):
            await check_solana_chain(adapter, chain)


async def check_chain_neutral(adapter: ChainAdapter, chain: str) -> None:
    """What every adapter must do on ``chain``, whatever its family."""
    assert _CHAIN_ID.match(chain), f"{chain!r} is not a CAIP-2 chain id"
    methods = adapter.methods(chain)
    assert isinstance(methods, frozenset), "methods() returns a frozenset"
    assert methods, "an adapter answers at least one method"
    assert all(isinstance(m, str) and m for m in methods)
    assert isinstance(adapter.notifications(chain), frozenset)
    docs = adapter.method_docs(chain)
    assert isinstance(docs, MethodDocs), "method_docs() returns MethodDocs"
    assert set(docs.methods) <= methods, "method_docs() describes only methods it answers"
    for method in sorted(methods):
        lifetime = adapter.answer_lifetime(chain, method, b"[]", 0)
        assert isinstance(lifetime, Lifetime), "answer_lifetime() returns a Lifetime"
    try:
        await adapter.call(chain, "no_such_method_anywhere", _raw([]))
    except MethodNotFound:
        pass
    else:
        raise AssertionError("an unknown method raises MethodNotFound (-32601)")
    await _check_now_answers_as_later(adapter, chain, "no_such_method_anywhere", [])
    await _check_events_start_and_stop(adapter, chain)


async def _check_now_answers_as_later(
    adapter: ChainAdapter, chain: str, method: str, params: object
) -> None:
    """:meth:`~ChainAdapter.call_now`, where it answers, answers as :meth:`~ChainAdapter.call`:
    the same result, or an error with the same code."""
    try:
        now = adapter.call_now(chain, method, _raw(params))
    except RpcError as exc:
        code = None
        try:
            await adapter.call(chain, method, _raw(params))
        except RpcError as later:
            code = later.code
        if code != exc.code:
            raise AssertionError(f"call_now({method}) raised {exc!r}, call gave {code}") from exc
        return
    if now is NOT_NOW:
        return
    answer = await adapter.call(chain, method, _raw(params))
    assert _encoded(now) == _encoded(answer), f"call_now({method}) answers as call does"


def _encoded(answer: object) -> bytes:
    return bytes(answer) if isinstance(answer, msgspec.Raw) else msgspec.json.encode(answer)


async def check_evm_chain(adapter: ChainAdapter, chain: str) -> None:
    """What an ``eip155`` chain adapter must do: geth's answers the broker builds on."""
    methods = adapter.methods(chain)
    assert "eth_chainId" in methods, "an EVM adapter answers eth_chainId"
    chain_id = await adapter.call(chain, "eth_chainId", _raw([]))
    if isinstance(chain_id, msgspec.Raw):
        chain_id = msgspec.json.decode(chain_id)
    assert int(chain_id, 16) == int(chain.split(":")[1]), "eth_chainId matches the chain"
    bad: tuple[object, ...] = ({"not": "an array"}, ["not-a-block-tag", "x"])
    await _check_params_errors(adapter, chain, "eth_getBlockByNumber", bad)
    calls: list[tuple[str, object]] = [
        ("eth_chainId", []),
        ("eth_getBlockByNumber", ["0x0", False]),
    ]
    for method, params in [*calls, *(("eth_getBlockByNumber", params) for params in bad)]:
        await _check_now_answers_as_later(adapter, chain, method, params)
    if isinstance(adapter, BlockSource):
        await _check_blocks(adapter, chain)
        await _check_ingestion_starts_and_stops(adapter, chain)


#: Solana's PubSub notifications, and scopecast's one: all a ``solana`` chain may deliver.
SOLANA_NOTIFICATIONS = frozenset(
    {
        "slotNotification",
        "accountNotification",
        "signatureNotification",
        "logsNotification",
        "programNotification",
        "rootNotification",
        "blockNotification",
        "voteNotification",
        "slotsUpdatesNotification",
        # scopecast's own: a transaction's life (``signatureStatusSubscribe``)
        "signatureStatusNotification",
    }
)
#: An address no chain funds (the SHA-256 of "scopecast: never funded", in base58).
_NEVER_FUNDED = "Bd9da5UvqK81ca1dRRgBRePLzvpg28EGDRwg6SBc9B1h"
_BASE58 = re.compile(r"^[1-9A-HJ-NP-Za-km-z]{32,44}$")


async def _decoded(adapter: ChainAdapter, chain: str, method: str, params: object) -> object:
    answer = await adapter.call(chain, method, _raw(params))
    return msgspec.json.decode(answer) if isinstance(answer, msgspec.Raw) else answer


async def check_solana_chain(adapter: ChainAdapter, chain: str) -> None:
    """What a ``solana`` chain adapter must do: the answers Solana clients build on."""
    methods = adapter.methods(chain)
    for method in ("getGenesisHash", "getSlot", "getLatestBlockhash", "getBalance"):
        assert method in methods, f"a Solana adapter answers {method}"
    assert adapter.notifications(chain) <= SOLANA_NOTIFICATIONS, "Solana's notification names"
    genesis = await _decoded(adapter, chain, "getGenesisHash", [])
    assert isinstance(genesis, str)
    assert _BASE58.match(genesis), "the genesis hash is base58"
    assert chain == f"solana:{genesis[:32]}", "the CAIP-2 reference is the genesis hash's prefix"
    slot = await _decoded(adapter, chain, "getSlot", [])
    assert isinstance(slot, int)
    assert slot >= 0
    latest = await _decoded(adapter, chain, "getLatestBlockhash", [])
    assert isinstance(latest, dict)
    assert set(latest) == {"context", "value"}, "{context, value} as Solana wraps answers"
    assert latest["context"]["slot"] >= slot
    assert _BASE58.match(latest["value"]["blockhash"])
    assert isinstance(latest["value"]["lastValidBlockHeight"], int)
    unknown = await _decoded(adapter, chain, "getAccountInfo", [_NEVER_FUNDED])
    assert isinstance(unknown, dict)
    assert unknown["value"] is None, "an account never funded is null"
    bad: tuple[object, ...] = ([], ["not-a-pubkey!"], [17], {"not": "an array"})
    await _check_params_errors(adapter, chain, "getBalance", bad)
    calls: list[tuple[str, object]] = [("getGenesisHash", []), ("getAccountInfo", [_NEVER_FUNDED])]
    for method, params in [*calls, *(("getBalance", params) for params in bad)]:
        await _check_now_answers_as_later(adapter, chain, method, params)


async def _check_params_errors(
    adapter: ChainAdapter, chain: str, method: str, bad: tuple[object, ...]
) -> None:
    """Each of the ``bad`` params of ``method`` is refused with -32602."""
    for params in bad:
        try:
            await adapter.call(chain, method, _raw(params))
        except RpcError as exc:
            # The wire code is the contract: a proxy passes a node's -32602 on as it came.
            if exc.code == InvalidParams.code:
                continue
            raise AssertionError(f"bad params must be -32602, got {exc!r}") from exc
        raise AssertionError(f"{method} accepted {params!r}")


async def _check_blocks(adapter: BlockSource, chain: str) -> None:
    number = await adapter.call(chain, "eth_blockNumber", _raw([]))
    if isinstance(number, msgspec.Raw):
        number = msgspec.json.decode(number)
    head = await adapter.fetch_block(chain, number=int(number, 16))
    assert isinstance(head, ChainBlock), "fetch_block(number=head) returns the head block"
    assert head.number == int(number, 16)
    assert _HASH.match(head.hash), "block hashes are lowercase 0x hex"
    assert msgspec.json.decode(head.header_json)["hash"] == head.hash, "header_json is the header"
    for log in head.logs:
        assert _ADDRESS.match(log.address)
        assert all(_HASH.match(t) for t in log.topics)
        assert log.json.count(b'"removed":false') == 1
    same = await adapter.fetch_block(chain, block_hash=head.hash)
    assert same is not None
    assert same.hash == head.hash, "fetch_block(block_hash=) finds the same block"
    if head.number > 0:
        parent = await adapter.fetch_block(chain, block_hash=head.parent_hash)
        assert parent is not None
        assert parent.number == head.number - 1, "parents link by hash"
    assert await adapter.fetch_block(chain, block_hash="0x" + "ee" * 32) is None


async def _check_ingestion_starts_and_stops(adapter: BlockSource, chain: str) -> None:
    async def ignore(block: ChainBlock) -> None:
        return None  # a block dropped at once: nothing to wait for (no checkpoint)

    await _check_starts_and_stops(
        lambda task_status: adapter.serve_ingestion(chain, ignore, task_status=task_status)
    )


async def _check_events_start_and_stop(adapter: ChainAdapter, chain: str) -> None:
    async def ignore(event: object) -> None:
        return None  # an event dropped at once: nothing to wait for (no checkpoint)

    await _check_starts_and_stops(
        lambda task_status: adapter.serve_events(chain, ignore, task_status=task_status)
    )


async def _check_starts_and_stops(
    serve: Callable[[trio.TaskStatus[None]], Awaitable[None]],
) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(serve)
            nursery.cancel_scope.cancel()


def check_account_adapter(adapter: AccountAdapter) -> None:
    """Assert the AccountAdapter contract on a started adapter (raises AssertionError): the
    chain-neutral checks on every chain it holds accounts on, then those of the chain's family
    (:func:`check_evm_accounts`, :func:`check_solana_accounts`)."""
    chains = list(adapter.chains())
    assert chains, "an account adapter holds accounts on at least one chain"
    for chain in chains:
        check_accounts_neutral(adapter, chain)
        if is_evm(chain):
            check_evm_accounts(adapter, chain)
        elif is_solana(chain):
            check_solana_accounts(adapter, chain)


def check_accounts_neutral(adapter: AccountAdapter, chain: str) -> None:
    """What every account adapter must do on ``chain``, whatever its family: accounts in their
    namespace's canonical CAIP-10 form, once each; its methods a frozenset, described by
    ``method_docs``; an unknown method refused with MethodNotFound."""
    assert _CHAIN_ID.match(chain), f"{chain!r} is not a CAIP-2 chain id"
    accounts = list(adapter.accounts(chain))
    for account in accounts:
        assert isinstance(account, str), "accounts are address strings"
        try:
            canonical = normalize_address(chain, account)
        except ValueError as exc:
            raise AssertionError(f"{account!r} is not an address of {chain}: {exc}") from exc
        assert canonical == account, (
            f"accounts are in their namespace's canonical form ({account!r}, not {canonical!r})"
        )
    assert len(set(accounts)) == len(accounts), "each account is listed once"
    methods = adapter.methods(chain)
    assert isinstance(methods, frozenset), "methods() returns a frozenset"
    assert all(isinstance(m, str) and m for m in methods)
    docs = adapter.method_docs(chain)
    assert isinstance(docs, MethodDocs), "method_docs() returns MethodDocs"
    assert set(docs.methods) <= methods, "method_docs() describes only methods it answers"
    try:
        adapter.prepare(chain, "no_such_method_anywhere", [], permitted=accounts)
    except MethodNotFound:
        pass
    else:
        raise AssertionError("an unknown method raises MethodNotFound (-32601)")


def check_evm_accounts(adapter: AccountAdapter, chain: str) -> None:
    """What an ``eip155`` account adapter must do: lowercase ``0x`` addresses, and
    ``personal_sign`` (where offered) held to the accounts permitted."""
    accounts = list(adapter.accounts(chain))
    assert all(_ADDRESS.match(a) for a in accounts), "EVM accounts are lowercase 0x hex"
    if accounts and "personal_sign" in adapter.methods(chain):
        _check_signing(
            adapter,
            chain,
            "personal_sign",
            lambda account: ["0x68656c6c6f", account],
            missing=[],
        )


def check_solana_accounts(adapter: AccountAdapter, chain: str) -> None:
    """What a ``solana`` account adapter must do: base58 ed25519 public keys (32 bytes, on the
    curve: a key that can sign), and ``signMessage`` (where offered) held to the accounts
    permitted."""
    accounts = list(adapter.accounts(chain))
    for account in accounts:
        try:
            key = Pubkey.from_string(account)
        except ValueError as exc:
            raise AssertionError(f"{account!r} is not a base58 32-byte public key") from exc
        assert str(key) == account, f"{account!r} is base58 as Solana writes it"
        assert key.is_on_curve(), f"{account!r} is an ed25519 public key (on the curve)"
    if accounts and "signMessage" in adapter.methods(chain):
        hello = base64.b64encode(b"hello").decode()
        _check_signing(
            adapter,
            chain,
            "signMessage",
            lambda account: {"account": {"address": account}, "message": hello},
            missing={},
        )


def _check_signing(
    adapter: AccountAdapter,
    chain: str,
    method: str,
    params_for: Callable[[str], list[Any] | dict[str, Any]],
    *,
    missing: list[Any] | dict[str, Any],
) -> None:
    """``method`` signs only for the accounts permitted, refuses ``missing`` params, names the
    signing account and describes the request for the operator."""
    account = adapter.accounts(chain)[0]
    try:
        adapter.prepare(chain, method, params_for(account), permitted=())
    except Unauthorized:
        pass
    else:
        raise AssertionError(f"{method} for an account outside `permitted` must raise Unauthorized")
    try:
        adapter.prepare(chain, method, missing, permitted=[account])
    except InvalidParams:
        pass
    else:
        raise AssertionError(f"{method} with missing params must raise InvalidParams")
    request = adapter.prepare(chain, method, params_for(account), permitted=[account])
    assert request.account == account, "the signing account is the one named"
    assert request.summary, "a signing request carries a readable summary for the operator"
