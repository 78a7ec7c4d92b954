"""The ``solana-dev`` chain adapter: an in-process Solana runtime (``solders.litesvm``) served as a
Solana JSON-RPC node.

Slots: with ``block_time`` S > 0 a slot is produced every S seconds, with demo SOL transfers between
the dev accounts; with 0 each accepted transaction lands in a new slot at once. The dev method
``scopecast_advanceSlots`` produces slots on demand. LiteSVM answers in microseconds, so calls run
in the event loop, one at a time (no await between reading and changing the ledger).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Final

import msgspec
import trio

from adapters._options import decode_options
from adapters.base import (
    NOT_NOW,
    DevOptions,
    MethodDocs,
    NetworkChainAdapter,
    NetworkSpec,
    SubscriptionFamily,
)
from schemas.errors import ConfigError, MethodNotFound

from . import _wire as wire
from ._docs import solana_docs
from ._errors import invalid_params
from ._events import SolanaEvent
from ._ledger import Ledger
from ._methods import Handler, SolanaMethods
from ._options import SolanaDevOptions
from ._pubsub import NOTIFICATIONS, SolanaSubscriptions

log = logging.getLogger(__name__)

NAMESPACE: Final = "solana"
#: The methods that change the ledger (and so may make events to publish).
WRITE_METHODS: Final = frozenset({"sendTransaction", "requestAirdrop", "scopecast_advanceSlots"})
#: Events buffered per :meth:`SolanaDevAdapter.serve_events` consumer.
EVENT_BUFFER: Final = 256


def solana_chain_id(genesis_hash: str) -> str:
    """The CAIP-2 id of a Solana chain: ``solana:`` and its genesis hash's first 32 characters."""
    return f"{NAMESPACE}:{genesis_hash[:32]}"


#: The name of the Solana dev network ``scopecast serve`` serves by default.
SOLANA_NETWORK: Final = "solana"


def dev_chain_id(options: dict[str, Any] | None = None) -> str:
    """The CAIP-2 id a ``solana-dev`` network with ``options`` serves (without starting it)."""
    spec = NetworkSpec("solana", "solana:?", SolanaDevAdapter.name, options or {})
    decoded = decode_options(spec, SolanaDevOptions, SolanaDevAdapter.name)
    return solana_chain_id(Ledger.genesis_of(decoded))


class SolanaDevAdapter(NetworkChainAdapter):
    """A Solana dev chain in process (options: :class:`SolanaDevOptions`)."""

    name: ClassVar[str] = "solana-dev"
    embedded: ClassVar[bool] = True

    @classmethod
    def dev_network(cls, options: DevOptions) -> NetworkSpec:
        """The Solana dev network (``solana``), served beside the dev chain."""
        chain_options: dict[str, object] = {"block_time": options.block_time or 0.0}
        return NetworkSpec(SOLANA_NETWORK, dev_chain_id(chain_options), cls.name, chain_options)

    def __init__(self, spec: NetworkSpec) -> None:
        super().__init__(spec)
        self.options = decode_options(spec, SolanaDevOptions, self.name)
        expected = solana_chain_id(Ledger.genesis_of(self.options))
        if spec.chain != expected:
            raise ConfigError(
                f"networks.{spec.name} ({self.name} adapter): this chain is {expected} (from its "
                f"genesis_hash or genesis_seed), not {spec.chain}"
            )
        self._started = False
        self._chain: tuple[Ledger, dict[str, Handler]] | None = None
        self._slots_running = False
        self._event_consumers: set[trio.MemorySendChannel[SolanaEvent]] = set()
        self._family = SolanaSubscriptions(self._status_of)

    def chain_note(self, chain: str) -> str | None:
        claimed = self.options.genesis_hash
        if claimed is None:
            return None
        return f"a local solana-dev chain using the id of genesis hash {claimed} (not that cluster)"

    @property
    def ledger(self) -> Ledger:
        """The chain, made at its first use (a broker never asked about Solana pays nothing)."""
        return self._made()[0]

    def _made(self) -> tuple[Ledger, dict[str, Handler]]:
        if self._chain is None:
            if not self._started:
                raise RuntimeError("SolanaDevAdapter.start() has not run")
            ledger = Ledger(self.options, time.time())
            methods = SolanaMethods(
                ledger, automine=self.options.block_time == 0, sent=self._family.sent.remember
            )
            self._chain = ledger, methods.table()
        return self._chain

    async def start(self) -> None:
        # The options were checked when the adapter was built; the runtime (LiteSVM, about 11 ms)
        # is made by the first call that needs it, or now when programs are loaded from files
        # (a file that is no program fails the start, not a dapp's first call).
        self._started = True
        if self.options.programs:
            try:
                self._made()
            except Exception as exc:  # LiteSVM's own error for a file it cannot load
                raise ConfigError(
                    f"networks.{self.spec.name} ({self.name} adapter): a program of `programs` "
                    f"could not be loaded: {exc}"
                ) from exc

    def methods(self, chain: str) -> frozenset[str]:
        self._check_chain(chain)
        return SolanaMethods.METHODS

    def method_docs(self, chain: str) -> MethodDocs:
        return solana_docs(self.methods(chain))

    def notifications(self, chain: str) -> frozenset[str]:
        self._check_chain(chain)
        return NOTIFICATIONS

    def subscription_family(self, chain: str) -> SubscriptionFamily:
        self._check_chain(chain)
        return self._family

    def _status_of(self, signature: str) -> tuple[int, Any] | None:
        """A landed signature's slot and error (for ``signatureSubscribe``)."""
        record = self.ledger.transactions.get(signature)
        if record is None:
            return None
        return record.slot, wire.transaction_error(record.err)

    async def call(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        result = self._answer(chain, method, params)
        await self._publish_events()
        return result

    def call_now(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        """Readings answer at once; what changes the ledger goes through :meth:`call`, which
        publishes the events it makes."""
        if method in WRITE_METHODS:
            return NOT_NOW
        return self._answer(chain, method, params)

    def _answer(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        self._check_chain(chain)
        if method not in SolanaMethods.METHODS:
            raise MethodNotFound(method)
        handler = self._made()[1][method]
        try:
            decoded = msgspec.json.decode(params)
        except msgspec.DecodeError:
            raise invalid_params("params are not JSON") from None
        # Synchronous on purpose: a handler reads and changes the ledger with no await between,
        # so two calls never interleave on it (no lock needed while this stays so).
        return handler(decoded, time.time())

    async def serve_slots(
        self, chain: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Produce timed slots (when ``block_time`` > 0) until cancelled; once per adapter, however
        many event consumers run it (:meth:`serve_events` does)."""
        self._check_chain(chain)
        if self.options.block_time <= 0 or self._slots_running:
            task_status.started()
            await trio.sleep_forever()
        self._slots_running = True
        try:
            task_status.started()
            deadline = trio.current_time()
            while True:
                deadline += self.options.block_time
                await trio.sleep_until(deadline)
                self.produce_slot()
                await self._publish_events()
        finally:
            self._slots_running = False

    def produce_slot(self) -> None:
        """One timed slot: demo transfers in the current slot, then the next slot opens."""
        ledger = self.ledger
        try:
            ledger.demo_traffic()
        except Exception:  # the demo must never stop the chain
            log.exception("%s: demo traffic failed", self.spec.name)
        ledger.advance(time.time())

    # -- events (for Solana's PubSub: see _pubsub) -----------------------------------------------

    async def serve_events(
        self,
        chain: str,
        on_event: Callable[[SolanaEvent], Awaitable[None]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Hand every ledger event (slots, transactions, written accounts) to ``on_event`` in
        order, until cancelled: the feed a Solana subscription hub renders notifications from.
        A consumer falling :data:`EVENT_BUFFER` events behind holds up the ledger's callers.
        Timed slots are produced meanwhile (:meth:`serve_slots`)."""
        self._check_chain(chain)
        send, receive = trio.open_memory_channel[SolanaEvent](EVENT_BUFFER)
        self._event_consumers.add(send)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.serve_slots, chain)
                task_status.started()
                async with receive:
                    async for event in receive:
                        await on_event(event)
        finally:
            self._event_consumers.discard(send)

    async def _publish_events(self) -> None:
        events = self.ledger.take_events()
        for send in list(self._event_consumers):
            for event in events:
                try:
                    await send.send(event)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    self._event_consumers.discard(send)
                    break
