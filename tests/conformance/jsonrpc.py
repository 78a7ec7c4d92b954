"""A JSON-RPC binding of a chain adapter for the conformance runner (no server in between)."""

from __future__ import annotations

from typing import Any

import msgspec

from adapters.base import ChainAdapter
from broker.errors import RpcError

from .runner import Post


class Request(msgspec.Struct):
    method: str
    id: Any = None
    jsonrpc: str = "2.0"
    params: msgspec.Raw = msgspec.Raw(b"[]")


_decode_request = msgspec.json.Decoder(Request).decode


def adapter_post(adapter: ChainAdapter, chain: str) -> Post:
    """``post`` for the runner: calls ``adapter`` and wraps the outcome in a JSON-RPC response."""

    async def post(request_bytes: bytes) -> bytes:
        request = _decode_request(request_bytes)
        response: dict[str, Any] = {"jsonrpc": "2.0", "id": request.id}
        try:
            response["result"] = await adapter.call(chain, request.method, request.params)
        except RpcError as exc:
            error: dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not msgspec.UNSET:
                error["data"] = exc.data
            response["error"] = error
        return msgspec.json.encode(response)

    return post
