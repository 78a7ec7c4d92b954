"""A node producing a slot every 0.4 s with transfers (as Solana does), behind the broker: every
slot reaches the subscriber once, in order, and every change of the watched accounts once, in its
slot, with the lamports the node's own blocks say, judged against the node's ``getBlocks`` and
``getBlock``."""

from __future__ import annotations

from typing import Any

import trio

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from tests.support.inprocess import dapp
from tests.support.processes import start_scopecast

from .nodes import entry, front, node_result

ACCOUNTS = [str(keypair.pubkey()) for keypair in derive_keypairs(DEV_MNEMONIC, 10)]


async def test_every_slot_and_account_change_of_a_timed_chain(nursery: trio.Nursery) -> None:
    with trio.fail_after(90):
        node = await start_scopecast(nursery, "--block-time", "0.4")
        served = await front(nursery, [entry(node)])
        slots: list[int] = []
        changes: list[tuple[int, str, int]] = []
        async with dapp(served.ws_url) as conn:
            await conn.result("slotSubscribe", [])
            ids = [
                await conn.result("accountSubscribe", [a, {"encoding": "base64"}]) for a in ACCOUNTS
            ]
            while len(slots) < 12:
                message: dict[str, Any] = await conn.notification()
                result = message["params"]["result"]
                if message["method"] == "slotNotification":
                    slots.append(result["slot"])
                else:
                    address = ACCOUNTS[ids.index(message["params"]["subscription"])]
                    changes.append(
                        (result["context"]["slot"], address, result["value"]["lamports"])
                    )
        assert slots == list(range(slots[0], slots[-1] + 1))
        # The blocks closed while subscribed: from the first slot seen to the one before the last.
        # Each written account once per slot, in the order the block first wrote it, with its
        # lamports after the block's last transaction naming it.
        expected: dict[tuple[int, str], int] = {}
        for slot in await node_result(node, "getBlocks", slots[0], slots[-1] - 1):
            block = await node_result(node, "getBlock", slot, {"rewards": False})
            for tx in block["transactions"]:
                payer_and_payee = tx["transaction"]["message"]["accountKeys"][:2]
                for index, key in enumerate(payer_and_payee):
                    if key in ACCOUNTS:
                        expected[(slot, key)] = tx["meta"]["postBalances"][index]
        assert expected, "the node made transfers"
        assert changes == [(slot, key, lamports) for (slot, key), lamports in expected.items()]
