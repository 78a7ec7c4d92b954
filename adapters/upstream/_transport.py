"""One upstream node over HTTP: JSON-RPC calls on pooled connections (httpx, on trio).

The request body is built around the caller's params bytes (never re-encoded) and the reply's
``result`` is returned as the node sent it. Replies are streamed: a size cap bounds every reply, and
for ``eth_getLogs`` a :class:`ResultCounter` stops reading past the result limit.

What can go wrong is sorted for the failover logic: :class:`UpstreamFailure` (no usable answer,
with whether the request may have reached the node), a JSON-RPC error (:class:`WireError`, the
node's own answer), or a reply the broker refuses (:class:`LimitExceeded`, :class:`ReplyTooLarge`).
Timeouts are the caller's (a ``trio`` cancel scope around :meth:`HttpUpstream.request`), except the
connect timeout, which lives in the client so that "never connected" stays distinguishable.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import AsyncIterator
from typing import Final

import httpx
import msgspec
from msgspec import UNSET, UnsetType

from schemas.errors import LimitExceeded, ServerError, WireError

from ._options import BaseUpstreamOptions, Endpoint, endpoint_label
from ._result_counter import ResultCounter, TooManyResults

_HEADERS: Final = {"content-type": "application/json", "accept": "application/json"}

#: Before these, nothing was sent: any method may go to another upstream.
_NOT_SENT: Final = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class _ErrorObject(msgspec.Struct):
    code: int
    message: str = ""
    data: msgspec.Raw | UnsetType = UNSET


class _Reply(msgspec.Struct):
    result: msgspec.Raw | UnsetType = UNSET
    error: _ErrorObject | UnsetType = UNSET


_reply_decoder: Final = msgspec.json.Decoder(_Reply)
#: What a finished response's stream is replaced with (:meth:`HttpUpstream.request`).
_CLOSED: Final = httpx.ByteStream(b"")


class UpstreamFailure(Exception):
    """The upstream gave no usable answer.

    ``delivered`` is False only when the request certainly never reached the node (it could not
    even connect); ``reply_error`` is the JSON-RPC error an HTTP 429/5xx reply carried, if any.
    """

    def __init__(self, reason: str, *, delivered: bool, reply_error: WireError | None = None):
        super().__init__(reason)
        self.reason = reason
        self.delivered = delivered
        self.reply_error = reply_error


class ReplyTooLarge(ServerError):
    default_message = "upstream reply too large"


class _Body(httpx.AsyncByteStream):
    """A request body of one chunk, without an async generator: httpx's own one is left
    suspended when a write fails, and trio warns when the garbage collector finds it."""

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data

    def __aiter__(self) -> _Body:
        return self

    async def __anext__(self) -> bytes:
        # No checkpoint: hands the one body over; the transport's send of it has them.
        if self._data is None:
            raise StopAsyncIteration
        data, self._data = self._data, None
        return data


async def _abandon(response: httpx.Response, body: AsyncIterator[bytes]) -> None:
    """Stop reading a reply midway: close its connection, then let httpx's nested body
    generators run into the closed connection so that each one finishes (an abandoned,
    suspended one would be finalised by the garbage collector, which trio warns about)."""
    await response.aclose()
    with contextlib.suppress(Exception):
        async for _chunk in body:
            pass


def _wire_error(error: _ErrorObject) -> WireError:
    return WireError(error.code, error.message, data=error.data)


def _reply_error(reply: _Reply | None) -> WireError | None:
    """The JSON-RPC error ``reply`` carries (None: it carries none)."""
    return None if reply is None or reply.error is UNSET else _wire_error(reply.error)


def _decode_reply(body: bytes) -> _Reply | None:
    try:
        return _reply_decoder.decode(body)
    except msgspec.DecodeError:
        return None


def _quiet_httpx() -> None:
    """httpx logs every request with its full URL at INFO: one line per forwarded call, and
    provider URLs carry API keys. Unless the operator configured that logger, keep it to warnings."""
    httpx_log = logging.getLogger("httpx")
    if httpx_log.level == logging.NOTSET:
        httpx_log.setLevel(logging.WARNING)


class HttpUpstream:
    """JSON-RPC over HTTP to one node, on a pool of keep-alive connections."""

    def __init__(self, index: int, endpoint: Endpoint, options: BaseUpstreamOptions) -> None:
        _quiet_httpx()
        self.index = index
        self.endpoint = endpoint
        self.label = endpoint_label(index, endpoint.http)
        self._max_bytes = options.max_response_bytes
        self._ids = itertools.count(1)
        self._client = httpx.AsyncClient(
            limits=httpx.Limits(
                max_connections=options.max_connections,
                max_keepalive_connections=options.max_connections,
            ),
            # Only connecting has its own limit: the whole request is bounded by the caller.
            timeout=httpx.Timeout(None, connect=options.connect_timeout),
            trust_env=False,
            follow_redirects=False,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    def _body(self, method: str, params: bytes) -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}' % (
            next(self._ids),
            method.encode(),
            params,
        )

    async def request(
        self, method: str, params: bytes, *, max_results: int | None = None
    ) -> msgspec.Raw:
        """Call ``method`` with ``params`` (encoded JSON); returns the reply's ``result`` bytes."""
        counter = ResultCounter(max_results) if max_results is not None else None
        data = self._body(method, params)
        request = self._client.build_request(
            "POST", self.endpoint.http, content=data, headers=_HEADERS
        )
        request.stream = _Body(data)  # same bytes; the headers (length, host) stay as built
        try:
            response = await self._client.send(request, stream=True)
        except _NOT_SENT as exc:
            raise UpstreamFailure(f"cannot connect: {exc!r}", delivered=False) from exc
        except httpx.HTTPError as exc:
            raise UpstreamFailure(f"transport error: {exc!r}", delivered=True) from exc
        status = response.status_code
        chunks: list[bytes] = []
        size = 0
        body = response.aiter_bytes()
        try:
            async for chunk in body:
                size += len(chunk)
                if size > self._max_bytes:
                    raise ReplyTooLarge(
                        f"upstream reply to {method} exceeds {self._max_bytes} bytes"
                    )
                if counter is not None:
                    counter.feed(chunk)
                chunks.append(chunk)
        except (TooManyResults, ReplyTooLarge) as exc:
            await _abandon(response, body)
            if isinstance(exc, ReplyTooLarge):
                raise
            raise LimitExceeded(f"query returned more than {exc.limit} results") from None
        except httpx.HTTPError as exc:
            raise UpstreamFailure(f"transport error: {exc!r}", delivered=True) from exc
        finally:
            try:
                await response.aclose()
            finally:
                # httpx binds the response's stream to the response: a cycle. Cut, so that a
                # call under way when the garbage keeper froze it is still freed by reference
                # counting once it ends (a frozen cycle is never collected: gc_keeper).
                response.stream = _CLOSED
        return self._result(status, b"".join(chunks))

    @staticmethod
    def _result(status: int, body: bytes) -> msgspec.Raw:
        # The errors are raised as they are made, never held in a local: a traceback keeps this
        # frame, and a frame holding its own exception is a cycle (see the stream above).
        reply = _decode_reply(body)
        if status == 429 or status >= 500:
            raise UpstreamFailure(f"HTTP {status}", delivered=True, reply_error=_reply_error(reply))
        if reply is not None and reply.error is not UNSET:
            raise _wire_error(reply.error)
        if status >= 300 or reply is None or reply.result is UNSET:
            shown = body[:120].decode("utf-8", "replace")
            raise UpstreamFailure(f"HTTP {status}, not a JSON-RPC reply: {shown!r}", delivered=True)
        return reply.result
