"""Helpers for the Solana upstream tests: ``scopecast serve`` processes play the Solana nodes
(their ``solana`` dev network, one slot per transaction), and a broker in this trio run fronts
them with the ``solana-upstream`` adapter."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import trio
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.base import NetworkSpec
from adapters.solana import dev_chain_id
from adapters.solana.upstream import SolanaUpstreamAdapter
from broker.compose import build_bare_broker
from broker.rpc.networks import Network, Networks
from broker.transport.limits import Limits
from tests.support.processes import ScopecastProcess, start_scopecast

NETWORK: Final = "solana"
CHAIN: Final = dev_chain_id()
(ALICE,) = derive_keypairs(DEV_MNEMONIC, 1)
#: Quick failure handling, so that a test sees failover, benching and reconnects in seconds.
FAST: Final[dict[str, Any]] = {
    "request_timeout": 2.0,
    "connect_timeout": 1.0,
    "probe_timeout": 1.0,
    "bench_after": 1,
    "bench_base": 0.2,
    "bench_max": 0.5,
    "reconnect_base": 0.1,
    "reconnect_max": 0.5,
    "poll_interval": 0.3,
    "ws_ping_interval": 0.5,
    "block_wait": 2.0,
}


async def solana_node(nursery: trio.Nursery, config: Path | None = None) -> ScopecastProcess:
    """A node: ``scopecast serve`` with its Solana dev network (a slot per transaction)."""
    args = ["--block-time", "0"] if config is None else ["--config", str(config)]
    return await start_scopecast(nursery, *args)


async def solana_nodes(nursery: trio.Nursery, *configs: Path | None) -> list[ScopecastProcess]:
    """One node per config (None: the default dev network), started side by side."""
    nodes: list[ScopecastProcess | None] = [None] * len(configs)

    async def start(index: int) -> None:
        nodes[index] = await solana_node(nursery, configs[index])

    async with trio.open_nursery() as starting:
        for index in range(len(configs)):
            starting.start_soon(start, index)
    return [node for node in nodes if node is not None]


def entry(node: ScopecastProcess) -> dict[str, str]:
    return {"http": node.http_url(network=NETWORK), "ws": node.ws_url(network=NETWORK)}


async def rpc(url: str, method: str, *params: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}
        reply: dict[str, Any] = (await client.post(url, json=body)).json()
    return reply


async def result(url: str, method: str, *params: Any) -> Any:
    reply = await rpc(url, method, *params)
    assert "error" not in reply, f"{method}: {reply}"
    return reply["result"]


async def node_result(node: ScopecastProcess, method: str, *params: Any) -> Any:
    return await result(node.http_url(network=NETWORK), method, *params)


async def advance(node: ScopecastProcess, count: int) -> int:
    """Produce ``count`` slots on ``node``; its slot after."""
    return int(await node_result(node, "scopecast_advanceSlots", count))


async def level(*nodes: ScopecastProcess) -> int:
    """Bring the nodes to one slot (each is a chain of its own; slots only have to line up)."""
    slots = [await node_result(node, "getSlot") for node in nodes]
    top = max(slots)
    for node, slot in zip(nodes, slots, strict=True):
        if slot < top:
            await advance(node, top - slot)
    return int(top)


async def signed_transfer(url: str, to: str, lamports: int) -> tuple[str, str]:
    """A transfer from the first dev account, signed with a blockhash from ``url``: (its
    signature, the transaction in base64)."""
    blockhash = (await result(url, "getLatestBlockhash"))["value"]["blockhash"]
    instruction = transfer(
        TransferParams(
            from_pubkey=ALICE.pubkey(), to_pubkey=Pubkey.from_string(to), lamports=lamports
        )
    )
    tx = Transaction([ALICE], Message([instruction], ALICE.pubkey()), Hash.from_string(blockhash))
    return str(tx.signatures[0]), base64.b64encode(bytes(tx)).decode()


def fresh_address() -> str:
    return str(Keypair().pubkey())


@dataclass
class FrontBroker:
    adapter: SolanaUpstreamAdapter
    port: int

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{NETWORK}/v3/dev"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/{NETWORK}/ws/v3/dev"


async def front(
    nursery: trio.Nursery,
    upstreams: list[dict[str, str]],
    *,
    chain: str = CHAIN,
    response_cache: int = 0,
    **options: Any,
) -> FrontBroker:
    """A broker serving one ``solana-upstream`` network, started (upstreams checked)."""
    spec = NetworkSpec(
        NETWORK, chain, "solana-upstream", {"upstreams": upstreams, **FAST, **options}
    )
    adapter = SolanaUpstreamAdapter(spec)
    broker = build_bare_broker(
        Networks([Network(NETWORK, chain, adapter)]), limits=Limits(response_cache=response_cache)
    )
    port = await nursery.start(broker.serve, "127.0.0.1", 0)
    return FrontBroker(adapter, port)
