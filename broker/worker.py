"""``scopecast worker``: each chain's ingestion, run once across all workers and published to Redis.

Every chain has a lease in Redis (``SET NX PX``). The worker holding it runs the chain's
:class:`~broker.events.ingest.ChainIngestion` and renews the lease well before it expires; any other
worker stands by and takes the lease within ``ttl + standby_poll`` seconds of the leader's death.
A new leader resumes where the stream stops: it seeds its head tracker with the last published head
(and a few ancestors, so that a reorganisation across the hand-over is still seen as one), backfills
to the node's current head, then follows the adapter. Every append carries the lease token and Redis
refuses it once the lease has moved (fencing), so a paused old leader cannot publish after a
take-over. Nothing is published twice: the append script refuses to repeat the last event (a
retried append), and a new leader reads what its predecessor appended after the published head (a
batch cut short, e.g. in the middle of a reorganisation) and does not append those events again.

Every worker remembers the last published head it saw (its own appends, and while standing by,
Redis's record of it): when Redis lost its data, the worker that takes the lease resumes after that
block, not at the node's head, so the heights mined meanwhile are published, not skipped (a block
remembered a little stale is published again, and readers drop the repeat).

A chain whose adapter reports a family's own events (Solana's slots, accounts and transactions)
is led the same way when the family says how its events travel (its
:meth:`~adapters.base.SubscriptionFamily.event_codec`): the leader appends what the adapter's
:meth:`~adapters.base.ChainAdapter.serve_events_after` reports, fenced by the lease. A new leader
resumes where the stream stops: the adapter reads the stream's last events back (its
predecessor's) and reports from right after them (Solana's upstream: after the last slot on the
stream, the slots since filled from the node); an adapter that cannot resumes at its present. The
append script refuses a repeat of the last event. The adapter reads what the web processes'
subscriptions need (:meth:`~adapters.base.ChainAdapter.set_interest_source`: Solana's watched
accounts, shared through Redis by :class:`~broker.redis.InterestSharing`). A family without a
codec is not led: the worker says so at start-up, in one line per chain. Every worker remembers
the stream's last family events it saw (its own appends, and while standing by, the stream's tail
read at each look): a leader that finds the stream empty (Redis lost its data) hands the adapter
that remembered tail, so that it resumes after the last slot seen, not at the node's present (a
tail remembered a little stale is reported again, and readers drop the repeat).
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, NoReturn

import anyio
import trio
from coredis.exceptions import RedisError

from adapters.backoff import Backoff
from adapters.base import ChainAdapter
from adapters.evm.blocks import ChainBlock
from adapters.evm.chain_adapter import BlockSource
from broker.events.activity import ActivityDemand, RedisActivityDemand
from broker.events.bus import EventBus, EventHandler, Position
from broker.events.chain_events import ChainEvent, FamilyEvent, HeadEvent, HubEvent
from broker.events.family_codecs import stays_in_process, travelling_codec
from broker.events.ingest import ChainIngestion
from broker.metrics import Metrics
from broker.redis import (
    ChainLease,
    EventDeduper,
    LeaseLost,
    LeaseTiming,
    PublishedHead,
    RedisEventBus,
    RedisFailure,
    RedisInterests,
    SharedInterests,
    completes,
    hold_redis,
    process_name,
    redis_client,
)
from broker.rpc.networks import Network

log = logging.getLogger(__name__)

#: Ancestors of the last published head a new leader loads, to see reorganisations that deep.
SEED_DEPTH: Final = 8
#: A leadership term shorter than this that ends in failure delays the next attempt (backoff).
STABLE_TERM: Final = 30.0
RELEASE_TIMEOUT: Final = 1.0
#: Family events a worker remembers of the stream's end (its own appends while leading).
REMEMBERED_TAIL: Final = 1024
#: Family events a standby reads of the stream's end at each look.
STANDBY_TAIL: Final = 64
DEFAULT_TIMING: Final = LeaseTiming()


class _FencedBus(EventBus):
    """The ingestion's view of the bus: every append carries the current lease token, and an event
    the stream already carries (as readers would see it) is not appended again."""

    def __init__(self, bus: RedisEventBus, lease: ChainLease, leader: ChainLeader) -> None:
        self._bus = bus
        self._lease = lease
        self._leader = leader
        self._on_stream = EventDeduper()

    def already_appended(self, events: Sequence[ChainEvent]) -> None:
        """Note events on the stream that this term's ingestion has not produced yet."""
        for event in events:
            self._on_stream.record(event)

    async def publish(self, event: HubEvent) -> None:
        if isinstance(event, FamilyEvent):
            await self._bus.append(event, lease_token=self._lease.token)
            return
        if self._on_stream.is_repeat(event):
            log.info(
                "%s: block %s's %s already on the stream",
                event.chain,
                event.block.hash,
                "head" if isinstance(event, HeadEvent) else "logs",
            )
            return
        await self._bus.append(event, lease_token=self._lease.token)
        self._on_stream.record(event)  # only once it is on the stream
        self._leader.appended(event)

    async def serve_reader(
        self,
        chains: list[str],
        handler: EventHandler,
        *,
        task_status: trio.TaskStatus[dict[str, Position]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        await self._bus.serve_reader(chains, handler, task_status=task_status)

    async def read_range(
        self, chain: str, after: Position, upto: Position
    ) -> list[tuple[Position, HubEvent]] | None:
        return await self._bus.read_range(chain, after, upto)


class ChainLeader:
    """Stands by for one chain's lease and runs the chain's ingestion while holding it: the
    adapter's blocks (a :class:`BlockSource`), else its family's events (the bus carries them)."""

    def __init__(
        self,
        bus: RedisEventBus,
        adapter: ChainAdapter,
        chain: str,
        *,
        metrics: Metrics,
        timing: LeaseTiming = DEFAULT_TIMING,
        owner: str | None = None,
        activity: ActivityDemand | None = None,
    ) -> None:
        """``activity``: whether blocks must carry their transactions (None: never)."""
        self.bus = bus
        self.activity = activity
        self.adapter = adapter
        self.chain = chain
        self.metrics = metrics
        self.timing = timing
        self.lease = ChainLease(bus.client, bus.keys(chain).lease, timing, owner or process_name())
        #: Whether this process holds the chain's lease now (the status endpoint reports it).
        self.leading = False
        #: The newest published head this process saw: where it resumes if Redis lost its own.
        self.last_published: PublishedHead | None = None
        #: The stream's last family events this process saw, oldest first: where a family resumes
        #: if Redis lost the stream.
        self.last_tail: deque[object] = deque(maxlen=REMEMBERED_TAIL)

    async def serve(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> NoReturn:
        """Lead whenever the lease is free, until cancelled (then release it)."""
        task_status.started()
        backoff = Backoff(1.0, 10.0)
        while True:
            # A new token every term, even for this worker: an append of its term before (held up
            # by a pause) carries the old token, which the append script refuses from now on.
            self.lease.new_term()
            await self._wait_for_lease()
            began = trio.current_time()
            failed = False
            self.leading = True
            try:
                await self._lead()
            except* LeaseLost:
                log.warning("%s: another worker holds the lease now; standing by", self.chain)
            except* RedisError as group:
                failed = True
                log.warning("%s: Redis failed while leading (%s)", self.chain, group.exceptions[0])
            except* Exception:
                failed = True
                log.exception("%s: ingestion failed; giving the lease up", self.chain)
            finally:
                self.leading = False
                await self._release()
            if failed:
                # Give a healthier worker the chance to take over before trying again.
                if trio.current_time() - began > STABLE_TERM:
                    backoff.succeeded()
                await trio.sleep(backoff.failed())

    def appended(self, event: HubEvent) -> None:
        """``event`` is on the stream now."""
        done = completes(event)
        if done is not None:
            self.last_published = PublishedHead(done.number, done.hash, done.parent_hash)

    async def _wait_for_lease(self) -> None:
        told: bytes | None = None
        unreachable = Backoff(self.timing.standby_poll, 10.0)
        while True:
            try:
                holder = await self.lease.acquire()
                if holder is not None:
                    # Standing by: keep up with the leader's progress, in case Redis forgets it.
                    self.last_published = (
                        await self.bus.published_head(self.chain) or self.last_published
                    )
                    if not isinstance(self.adapter, BlockSource):
                        await self._remember_tail(STANDBY_TAIL)
            except RedisFailure as exc:
                delay = unreachable.failed()
                log.warning("%s: cannot reach Redis to take the lease (%s)", self.chain, exc)
                await trio.sleep(delay)
                continue
            unreachable.succeeded()
            if holder is None:
                return
            if holder != told:
                log.info("%s: standing by; %s leads", self.chain, holder.decode(errors="replace"))
                told = holder
            await trio.sleep(self.timing.standby_poll)

    async def _release(self) -> None:
        with trio.move_on_after(RELEASE_TIMEOUT) as scope:
            scope.shield = True
            # Else it expires by itself. A client already closed counts too: at shutdown the
            # client's own task group may close the connection under several chains' releases.
            with contextlib.suppress(*RedisFailure, anyio.ClosedResourceError):
                await self.lease.release()

    async def _lead(self) -> None:
        """Ingest until the lease is lost (returns) or something fails (raises)."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._keep_lease, nursery.cancel_scope)
            bus = _FencedBus(self.bus, self.lease, self)
            if not isinstance(self.adapter, BlockSource):
                await self._lead_family(bus)
                return
            wanted = self.activity.wanted if self.activity is not None else None
            ingestion = ChainIngestion(self.adapter, self.chain, bus, self.metrics, activity=wanted)
            await self._resume(ingestion, bus)
            await ingestion.serve()

    async def _lead_family(self, bus: _FencedBus) -> None:
        chain = self.chain

        async def on_event(event: object) -> None:
            await bus.publish(FamilyEvent(chain, event))
            self.last_tail.append(event)  # only once it is on the stream

        async def tail(count: int) -> list[object]:
            events = await self._remember_tail(count)
            if events or not self.last_tail:
                return events
            remembered = list(self.last_tail)[-count:]
            log.warning(
                "%s: the stream is empty (Redis lost its data?); resuming after its last %d "
                "events this worker saw, so that nothing decided meanwhile is skipped",
                chain,
                len(remembered),
            )
            return remembered

        log.info("%s: leading; publishing the family's events from the stream's end", chain)
        await self.adapter.serve_events_after(chain, tail, on_event)

    async def _remember_tail(self, count: int) -> list[object]:
        """The stream's last ``count`` family events; remembered unless there are none."""
        events = [
            e.event for e in await self.bus.tail(self.chain, count) if isinstance(e, FamilyEvent)
        ]
        if events:
            self.last_tail.clear()
            self.last_tail.extend(events)
        return events

    @property
    def _blocks(self) -> BlockSource:
        assert isinstance(self.adapter, BlockSource)  # only a block source's leader resumes
        return self.adapter

    async def _keep_lease(self, leading: trio.CancelScope) -> None:
        valid_until = trio.current_time() + self.timing.ttl
        while True:
            await trio.sleep(self.timing.renew_every)
            try:
                with trio.fail_after(self.timing.renew_every):
                    renewed = await self.lease.renew()
            except RedisFailure as exc:
                # Keep publishing while the lease may still be ours: Redis fences us if it is not.
                if trio.current_time() + self.timing.renew_every < valid_until:
                    log.warning("%s: lease renewal failed (%s); retrying", self.chain, exc)
                    continue
                log.warning("%s: could not renew the lease in time (%s)", self.chain, exc)
                leading.cancel()
                return
            if not renewed:
                log.warning("%s: the lease expired before it was renewed", self.chain)
                leading.cancel()
                return
            valid_until = trio.current_time() + self.timing.ttl

    async def _resume(self, ingestion: ChainIngestion, bus: _FencedBus) -> None:
        """Seed the tracker with what was published last, then publish up to the node's head."""
        began = trio.current_time()
        published = await self.bus.published_head(self.chain)
        if published is None and self.last_published is not None:
            published = self.last_published
            log.warning(
                "%s: Redis has no published head (it lost its data?); resuming after block %d, "
                "the last this worker saw published, so that no height is skipped",
                self.chain,
                published.number,
            )
        # A batch the last leader did not finish: the tracker produces these events again.
        unfinished = await self.bus.unfinished(self.chain)
        bus.already_appended(unfinished)
        if unfinished:
            log.info(
                "%s: %d events after the published head are on the stream already",
                self.chain,
                len(unfinished),
            )
        if published is None:
            log.info("%s: leading; nothing published yet, starting at the node's head", self.chain)
        else:
            for block in await self._ancestry(published):
                ingestion.tracker.offer([block])  # fills the window; its events were published
        latest = await self._latest()
        if latest is not None:
            await ingestion.on_block(latest)
        head = ingestion.tracker.head
        log.info(
            "%s: leading from block %s (resumed in %.0f ms)",
            self.chain,
            head.number if head is not None else "?",
            (trio.current_time() - began) * 1000,
        )

    async def _ancestry(self, published: PublishedHead) -> list[ChainBlock]:
        """The last published block and up to SEED_DEPTH ancestors, oldest first."""
        block = await self._blocks.fetch_block(self.chain, block_hash=published.hash)
        if block is None:
            log.warning(
                "%s: the node does not know the last published block %s (height %d); "
                "a reorganisation of it will not report its logs as removed",
                self.chain,
                published.hash,
                published.number,
            )
            block = ChainBlock(published.number, published.hash, published.parent_hash, b"")
        blocks = [block]
        for _ in range(SEED_DEPTH):
            parent = await self._blocks.fetch_block(self.chain, block_hash=blocks[0].parent_hash)
            if parent is None:
                break
            blocks.insert(0, parent)
        return blocks

    async def _latest(self) -> ChainBlock | None:
        try:
            return await self._blocks.fetch_head(self.chain)
        except Exception as exc:  # the adapter's next report fills the gap instead
            log.warning("%s: cannot read the node's head to backfill (%r)", self.chain, exc)
            return None


class ChainLeaders:
    """A :class:`ChainLeader` per chain of ``networks`` whose events travel (blocks, or a family's
    events with a codec, which ``bus`` is told of); calling it starts them in a nursery (which
    makes it a broker service, for ``scopecast serve --role all`` with Redis)."""

    def __init__(
        self,
        networks: Sequence[Network],
        bus: RedisEventBus,
        metrics: Metrics,
        timing: LeaseTiming = DEFAULT_TIMING,
        *,
        activity: ActivityDemand | None = None,
    ) -> None:
        """``activity``: which chains' blocks must carry their transactions (None: none)."""
        self.leaders = []
        for network in networks:
            codec = travelling_codec(network)
            if codec is not None:
                bus.carry(network.chain, codec)
                source = SharedInterests(
                    RedisInterests(bus.client, prefix=bus.prefix), network.chain
                )
                network.adapter.set_interest_source(network.chain, source)
            elif stays_in_process(network):
                log.warning(
                    "%s: not ingested here: its family's events cannot travel between processes "
                    "(the family has no event codec); each web process follows the chain itself",
                    network.chain,
                )
                continue
            elif not isinstance(network.adapter, BlockSource):
                continue
            self.leaders.append(
                ChainLeader(
                    bus,
                    network.adapter,
                    network.chain,
                    metrics=metrics,
                    timing=timing,
                    activity=activity,
                )
            )

    async def __call__(self, nursery: trio.Nursery) -> None:
        for leader in self.leaders:
            await nursery.start(leader.serve)


class Worker:
    """The ``scopecast worker`` process: Redis, the chain adapters and a leader per chain."""

    def __init__(
        self,
        networks: Sequence[Network],
        redis_url: str,
        *,
        maxlen: int,
        timing: LeaseTiming = DEFAULT_TIMING,
        linger: float = 0.0,
    ) -> None:
        """``linger``: seconds a chain's blocks still carry their transactions after the last
        activity subscription goes (the resume window)."""
        self.networks = list(networks)
        self.redis_url = redis_url
        self.client = redis_client(redis_url)
        self.bus = RedisEventBus(self.client, maxlen=maxlen)
        self.metrics = Metrics()
        #: The activity subscriptions of every process (this one's: its webhooks'), announced.
        self.activity = RedisActivityDemand(self.client, process_name(), linger=linger)
        self.leaders = ChainLeaders(
            self.networks, self.bus, self.metrics, timing, activity=self.activity
        )
        #: More that runs while Redis is held, started after the leaders (the webhooks' leader).
        self.services: list[Callable[[trio.Nursery], Awaitable[None]]] = []
        self._whole = trio.CancelScope()
        self._leading: trio.CancelScope | None = None
        self._adapters = list({id(n.adapter): n.adapter for n in self.networks}.values())

    async def start_adapters(self) -> None:
        """Start every chain adapter once (their errors are configuration errors, said once);
        if one fails, close those already started before raising."""
        for started, adapter in enumerate(self._adapters):
            try:
                await adapter.start()
            except BaseException:
                with trio.CancelScope(shield=True):
                    for opened in reversed(self._adapters[:started]):
                        await opened.aclose()
                raise

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run until :meth:`shutdown` (after :meth:`start_adapters`)."""
        try:
            with self._whole:
                async with hold_redis(self.client, self.redis_url):
                    with trio.CancelScope() as self._leading:
                        async with trio.open_nursery() as nursery:
                            await self.leaders(nursery)
                            nursery.start_soon(self.activity.serve_announcer, self._block_chains)
                            for service in self.services:
                                await service(nursery)
                            task_status.started()
                            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                for adapter in self._adapters:
                    await adapter.aclose()

    @property
    def _block_chains(self) -> list[str]:
        return [n.chain for n in self.networks if isinstance(n.adapter, BlockSource)]

    def health(self) -> dict[str, Any]:
        """What the status endpoint's ``/healthz`` says: each chain, led here or standing by."""
        return {
            "status": "ok",
            "chains": {
                leader.chain: "leading" if leader.leading else "standby"
                for leader in self.leaders.leaders
            },
        }

    def shutdown(self) -> None:
        """Stop: the leaders release their leases (while Redis is still held), then the rest."""
        if self._leading is not None:
            self._leading.cancel()
        else:  # still waiting for Redis or the adapters: nothing to release
            self._whole.cancel()
