"""Sending a call to the upstreams: priority order, failover, benching and probing back.

A call goes to the first healthy upstream (config order). When that upstream gives no usable answer
(cannot connect, times out, HTTP 429/5xx, a reply that is not JSON-RPC), a read-only call moves on to
the next one; a write moves on only if the request certainly never left (the connection could not be
opened), because a node that timed out may still have accepted the transaction. A JSON-RPC error is
the node's answer and goes back to the client as it came. Upstreams failing ``bench_after`` times in a
row are benched (see :mod:`._health`); when their bench runs out, one light call probes them, and once
it answers they take their place in the order again.

Probes run in the background when ingestion runs (:meth:`Forwarder.serve_probes`), and otherwise
alongside the call that finds them due, so an upstream comes back even in a process with no ingestion.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import msgspec
import outcome
import trio

from schemas.errors import RpcError, ServerError

from ._health import HealthBoard, State, UpstreamStatus
from ._options import BaseUpstreamOptions
from ._transport import HttpUpstream, UpstreamFailure

log = logging.getLogger(__name__)

_NO_PARAMS: Final = b"[]"
_str_decoder: Final = msgspec.json.Decoder(str)


@dataclass(frozen=True, slots=True)
class ChainCheck:
    """How an upstream shows which chain it serves, and that it is alive (the part of probing
    that depends on the chain family: ``eth_chainId`` and ``eth_blockNumber`` for EVM chains).

    ``matches`` reads the identity method's ``result``; ``expected`` is what it should answer, as
    logs show it.
    """

    chain: str
    identity_method: str
    liveness_method: str
    matches: Callable[[msgspec.Raw], bool]
    expected: str


def evm_chain_check(chain_id: int) -> ChainCheck:
    """``eth_chainId`` must answer ``chain_id``; ``eth_blockNumber`` probes a confirmed node."""

    def matches(result: msgspec.Raw) -> bool:
        try:
            return int(_str_decoder.decode(result), 16) == chain_id
        except (msgspec.DecodeError, ValueError):
            return False

    return ChainCheck(
        f"eip155:{chain_id}", "eth_chainId", "eth_blockNumber", matches, hex(chain_id)
    )


class UpstreamUnavailable(ServerError):
    """No upstream answered (the message never names them: their URLs may hold API keys)."""

    default_message = "no upstream node available"


class MaybeSubmitted(ServerError):
    """A write reached an upstream that then failed: it may or may not have taken effect."""

    default_message = (
        "the upstream node failed after receiving the request; it may or may not have been applied"
    )


class Forwarder:
    """The upstreams of one network and the health of each."""

    def __init__(
        self,
        network: str,
        check: ChainCheck,
        upstreams: Sequence[HttpUpstream],
        options: BaseUpstreamOptions,
    ) -> None:
        self.network = network
        self.check = check
        self.upstreams = list(upstreams)
        self.options = options
        self.board = HealthBoard(
            [u.label for u in upstreams],
            bench_after=options.bench_after,
            bench_base=options.bench_base,
            bench_max=options.bench_max,
        )
        self._writes = frozenset(options.write_methods)
        self._benched = trio.Event()

    async def aclose(self) -> None:
        for upstream in self.upstreams:
            await upstream.aclose()

    def statistics(self) -> list[UpstreamStatus]:
        """Each upstream's health, in priority order."""
        return self.board.statistics()

    # -- calls ----------------------------------------------------------------------------------

    async def call(
        self,
        method: str,
        params: bytes,
        *,
        prefer: int | None = None,
        max_results: int | None = None,
    ) -> msgspec.Raw:
        """The ``result`` of ``method`` from the first upstream that answers."""
        result, _index = await self.call_tracked(
            method, params, prefer=prefer, max_results=max_results
        )
        return result

    async def call_tracked(
        self,
        method: str,
        params: bytes,
        *,
        prefer: int | None = None,
        only: int | None = None,
        max_results: int | None = None,
    ) -> tuple[msgspec.Raw, int]:
        """Like :meth:`call`, also saying which upstream answered. ``only`` tries just that one."""
        order = [only] if only is not None else self.board.order(prefer=prefer)
        if not self.board.due_probes(trio.current_time()):
            return await self._failover(method, params, order, max_results)
        # Probe alongside this call; its own outcome is kept out of the nursery's exception group.
        async with trio.open_nursery() as probes:
            self.start_due_probes(probes)
            answer = await outcome.acapture(self._failover, method, params, order, max_results)
        return answer.unwrap()

    async def _failover(
        self, method: str, params: bytes, order: list[int], max_results: int | None
    ) -> tuple[msgspec.Raw, int]:
        write = method in self._writes
        timeout = self.options.attempt_timeout(method)
        failure: UpstreamFailure | None = None
        for index in order:
            upstream = self.upstreams[index]
            with trio.move_on_after(timeout) as attempt:
                try:
                    result = await upstream.request(method, params, max_results=max_results)
                except UpstreamFailure as exc:
                    # Kept without its traceback, which holds this frame: a cycle otherwise (a
                    # frozen one is never collected: broker.operator.gc_keeper).
                    failure = exc.with_traceback(None)
                except RpcError:
                    self._answered(index)
                    raise
                else:
                    self._answered(index)
                    return result, index
            if attempt.cancelled_caught:
                failure = UpstreamFailure(f"no reply within {timeout:g} s", delivered=True)
            assert failure is not None
            self._failed(index, method, failure)
            if write and failure.delivered:
                raise MaybeSubmitted()
        if failure is not None and failure.reply_error is not None:
            raise failure.reply_error
        raise UpstreamUnavailable()

    def _answered(self, index: int) -> None:
        if self.board.success(index):
            log.info("%s: %s answers again", self.network, self.upstreams[index].label)

    def _failed(self, index: int, method: str, failure: UpstreamFailure) -> None:
        benched = self.board.failure(index, trio.current_time())
        label = self.upstreams[index].label
        if benched is None:
            log.info("%s: %s failed %s: %s", self.network, label, method, failure.reason)
            return
        log.warning(
            "%s: %s benched for %g s (%d failures in a row; the last: %s on %s)",
            self.network,
            label,
            benched,
            self.options.bench_after,
            failure.reason,
            method,
        )
        self._benched.set()

    # -- probes ---------------------------------------------------------------------------------

    def start_due_probes(self, nursery: trio.Nursery) -> None:
        """Start probing every upstream whose bench is over."""
        now = trio.current_time()
        for index in self.board.due_probes(now):
            self.board.claim_probe(index, now)
            nursery.start_soon(self.probe, index)

    async def first_probes(self) -> str | None:
        """Probe every upstream at start (concurrently, each within ``probe_timeout``): None when
        one is usable; otherwise what each probe found, for the adapter's start-up error, with
        the pooled connections closed (the broker closes only the adapters that started)."""
        outcomes: list[str] = []

        async def verify(index: int) -> None:
            outcomes.append(await self.probe(index))

        now = trio.current_time()
        async with trio.open_nursery() as nursery:
            for index in self.board.due_probes(now):
                self.board.claim_probe(index, now)
                nursery.start_soon(verify, index)
        if any(self.board.usable(i) for i in range(len(self.board))):
            return None
        with trio.CancelScope(shield=True):
            await self.aclose()
        return "; ".join(sorted(outcomes))

    async def probe(self, index: int) -> str:
        """Check a claimed upstream with one light call; returns what was found, for logs.

        An upstream whose chain was never confirmed is asked the check's identity method
        (``eth_chainId``; excluded for good if it serves another chain); a confirmed one is asked
        its liveness method (``eth_blockNumber``).
        """
        finished = False
        try:
            outcome = await self._probe(index)
            finished = True
            return outcome
        finally:
            if not finished and self.board.state(index) is State.PROBING:
                self.board.release_probe(index)

    async def _probe(self, index: int) -> str:
        upstream = self.upstreams[index]
        verified = self.board.verified(index)
        method = self.check.liveness_method if verified else self.check.identity_method
        outcome: str | None = None
        result: msgspec.Raw | None = None
        with trio.move_on_after(self.options.probe_timeout) as attempt:
            try:
                result = await upstream.request(method, _NO_PARAMS)
            except UpstreamFailure as exc:
                outcome = exc.reason
            except RpcError as exc:
                # The node answered, so it is up; but an unconfirmed chain id stays unconfirmed.
                outcome = None if verified else f"{method} failed: {exc.code} {exc.message}"
        if attempt.cancelled_caught:
            outcome = f"no reply within {self.options.probe_timeout:g} s"
        if outcome is None and not verified:
            outcome = self._check_chain(index, result)
            if outcome is not None:
                return outcome
        if outcome is not None:
            benched = self.board.probe_failed(index, trio.current_time())
            self._benched.set()
            log.warning(
                "%s: %s probe failed (%s); benched for %s s",
                self.network,
                upstream.label,
                outcome,
                "?" if benched is None else f"{benched:g}",
            )
            return f"{upstream.label}: {outcome}"
        self.board.probe_ok(index, verified=not verified)
        log.info("%s: %s is in service", self.network, upstream.label)
        return f"{upstream.label}: ok"

    def _check_chain(self, index: int, result: msgspec.Raw | None) -> str | None:
        check = self.check
        label = self.upstreams[index].label
        shown = bytes(result).decode("utf-8", "replace")[:80] if result is not None else "nothing"
        if result is not None and check.matches(result):
            return None
        self.board.exclude(index)
        log.error(
            "%s: %s answered %s %s but the network's chain is %s (%s); it will not be used",
            self.network,
            label,
            check.identity_method,
            shown,
            check.chain,
            check.expected,
        )
        return f"{label}: wrong chain ({check.identity_method} {shown}, expected {check.expected})"

    async def serve_probes(self) -> None:
        """Probe benched upstreams as soon as their bench is over, until cancelled."""
        async with trio.open_nursery() as nursery:
            while True:
                self.start_due_probes(nursery)
                self._benched = trio.Event()
                next_at = self.board.next_probe_at()
                with trio.move_on_at(math.inf if next_at is None else next_at):
                    await self._benched.wait()
