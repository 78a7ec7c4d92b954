"""Peer (c): the constant-reply JSON-RPC endpoint as a plain ASGI app under hypercorn.

It does what scopecast's constant-reply ceiling does: read the POST body, decode the JSON-RPC
envelope (msgspec, params left undecoded), answer the request's id with the same pre-encoded result.
The result bytes come from the file named by ``BENCH_REPLY``. Served with
``hypercorn --workers 1 bench.peers.hypercorn_app:app`` (asyncio worker, hypercorn's defaults).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

RESULT = Path(os.environ["BENCH_REPLY"]).read_bytes() if "BENCH_REPLY" in os.environ else b"null"


class Envelope(msgspec.Struct):
    method: str
    jsonrpc: str = ""
    id: msgspec.Raw = msgspec.Raw(b"null")
    params: msgspec.Raw = msgspec.Raw(b"[]")


decoder = msgspec.json.Decoder(Envelope)
HEADERS = [(b"content-type", b"application/json")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    request = decoder.decode(body)
    reply = b'{"jsonrpc":"2.0","id":' + bytes(request.id) + b',"result":' + RESULT + b"}"
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*HEADERS, (b"content-length", str(len(reply)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": reply})
