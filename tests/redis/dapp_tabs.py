"""Dapp tabs for the Redis loss and failover tests (and the soak's rows of them): each tab is one
WebSocket of a dapp, reading every message in a task of its own, so that the test can call methods
on it while it counts heads."""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import msgspec
import trio

from tests.support.rawws import RawWebSocket

DEV = "eip155:1337"
SCOPES = {
    DEV: {"methods": ["eth_subscribe", "eth_blockNumber"], "notifications": ["eth_subscription"]}
}

_ids = itertools.count(1)
_decode = msgspec.json.Decoder(dict[str, Any]).decode


@dataclass
class Tab:
    """One connection of the dapp ``origin``: the heads it received (number, hash), in order, its
    last cursor, the ``wallet_sessionChanged`` and ``scopecast_resumed`` it was sent."""

    port: int
    origin: str
    conn: RawWebSocket | None = None
    heads: list[tuple[int, str]] = field(default_factory=list)
    cursor: str | None = None
    session_changes: list[Any] = field(default_factory=list)
    resumed: list[tuple[int, bool]] = field(default_factory=list)
    closed: tuple[int | None, str] | None = None
    _replies: dict[int, dict[str, Any]] = field(default_factory=dict)
    _arrived: trio.Event = field(default_factory=trio.Event)

    async def open(self, nursery: trio.Nursery, resume: str | None = None) -> None:
        """Connect (with ``?resume=`` when given) and start reading."""
        path = "/ws/v3/dev" + (f"?resume={quote(resume)}" if resume else "")
        self.conn = await RawWebSocket.connect(self.port, path, origin=self.origin)
        self.closed = None
        nursery.start_soon(self._read, self.conn)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        """The reply (``result`` or ``error``) to one call."""
        assert self.conn is not None
        call_id = next(_ids)
        await self.conn.call({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params})
        while call_id not in self._replies:
            if self.closed is not None:
                raise ConnectionError(f"{self.origin}: closed during {method}: {self.closed}")
            await self._arrived.wait()
        return self._replies.pop(call_id)

    async def result(self, method: str, params: Any) -> Any:
        reply = await self.call(method, params)
        assert "error" not in reply, (self.origin, method, reply)
        return reply["result"]

    async def create_and_subscribe(self) -> None:
        """``wallet_createSession`` with :data:`SCOPES`, then ``newHeads`` in the session."""
        await self.result("wallet_createSession", {"optionalScopes": SCOPES})
        await self.subscribe()

    async def subscribe(self) -> None:
        await self.result(
            "wallet_invokeMethod",
            {"scope": DEV, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
        )

    async def session_scopes(self) -> dict[str, Any]:
        """``sessionScopes`` as ``wallet_getSession`` answers now."""
        found = await self.result("wallet_getSession", {})
        return dict(found.get("sessionScopes", {}))

    def _woken(self) -> None:
        self._arrived.set()
        self._arrived = trio.Event()

    async def _read(self, conn: RawWebSocket) -> None:
        try:
            while True:
                try:
                    frame = await conn.frame()
                except (OSError, trio.ClosedResourceError):  # dropped, or closed by the test
                    frame = None
                if frame is None:
                    self.closed = (None, "")
                    return
                opcode, payload = frame
                if opcode == 0x8:
                    code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                    self.closed = (code, payload[2:].decode())
                    return
                if opcode == 0x9:
                    await conn.send_text(payload, opcode=0xA)  # a pong, or the server closes
                    continue
                if opcode == 0x1:
                    self._message(_decode(payload))
        finally:
            self._woken()

    def _message(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            self._replies[int(message["id"])] = message
            self._woken()
            return
        params = message.get("params") or {}
        if method == "wallet_notify":
            result = params["notification"]["params"]["result"]
            self.heads.append((int(result["number"], 16), result["hash"]))
            self.cursor = params.get("cursor", self.cursor)
        elif method == "wallet_sessionChanged":
            self.session_changes.append(params)
            self.cursor = params.get("cursor", self.cursor)
        elif method == "scopecast_resumed":
            self.resumed.append((params["replayed"], params["complete"]))
        self._woken()


def gaps_and_repeats(heads: list[tuple[int, str]]) -> tuple[list[int], list[int]]:
    """The heights missing between the first and last head, and the heights received twice (a
    chain with no reorganisation: every head is its predecessor's child)."""
    numbers = [number for number, _ in heads]
    seen: set[int] = set()
    repeats: list[int] = []
    for number in numbers:
        if number in seen:
            repeats.append(number)
        seen.add(number)
    missing = sorted(set(range(numbers[0], numbers[-1] + 1)) - seen) if numbers else []
    return missing, repeats
