"""The engine every broker serves (:class:`broker.engine.Engine`), built from networks whose adapters
exist already: the dispatcher and its response cache, the subscription hub with the chain
families' subscriptions, the EVM profile's subscription and filter methods, cursors and resume,
``rpc.discover``, and the event path (with each chain's ingestion where this process ingests)."""

from __future__ import annotations

from collections.abc import Collection

from adapters.evm.filters import FilterRegistry
from adapters.evm.subscriptions import follows_activity
from broker.app import Broker
from broker.engine import Engine
from broker.events import stream_methods
from broker.events.activity import ActivityDemand
from broker.events.bus import EventBus, MemoryBus
from broker.events.event_path import EventPath, chain_families
from broker.events.resume import MemoryResumeStore, ResumeKeeper, ResumeStore
from broker.events.session_changes import SessionChangeBus
from broker.events.subscriptions import SubscriptionHub
from broker.metrics import Metrics
from broker.rpc.chain_calls import CachedChainCalls
from broker.rpc.discover import DiscoverMethod
from broker.rpc.dispatch import Dispatcher
from broker.rpc.filter_logs import adapters_get_logs
from broker.rpc.networks import Networks
from broker.rpc.response_cache import ResponseStore
from broker.transport.limits import Limits


def build_engine(
    networks: Networks,
    limits: Limits,
    *,
    bus: EventBus | None = None,
    ingest: bool = True,
    resume_store: ResumeStore | None = None,
    process_id: str = "",
    changes: SessionChangeBus | None = None,
    operator_api: bool = False,
    activity: ActivityDemand | None = None,
) -> Engine:
    """The engine of ``networks``: events from ``bus`` (default: in memory), ingested here if
    ``ingest`` (else a worker does, with Redis); resume records in ``resume_store`` (default: in
    memory), naming ``process_id``, replaying the session ``changes`` (None: no sessions);
    ``operator_api``: ``rpc.discover`` lists the operator API's methods; ``activity``: where the
    hub's activity subscriptions are counted (default: in this process, lingering for the
    resume window)."""
    metrics = Metrics()
    cache = ResponseStore(limits.response_cache) if limits.response_cache else None
    dispatcher = Dispatcher(networks, metrics, cache=CachedChainCalls(cache))
    if cache is not None:
        metrics.watch_response_cache(cache)
    window = limits.resume_window
    bus = bus or MemoryBus(window=window)
    hub = SubscriptionHub(metrics)
    activity = activity or ActivityDemand(linger=window)
    activity.follow(lambda chain: follows_activity(hub.index(chain)))
    # The chain families' events (Solana's) travel on the bus, or stay in this process (a log
    # per chain) when the family cannot encode them.
    family_logs = chain_families(networks, hub, bus, window=window, ingest=ingest)
    resume = None
    if window > 0:
        resume = ResumeKeeper(
            hub,
            bus,
            resume_store or MemoryResumeStore(),
            window=window,
            process_id=process_id,
            changes=changes,
            family_logs=family_logs,
        )
        hub.cursors = resume  # they use each other
    filters = FilterRegistry(adapters_get_logs(networks))
    stream_methods.install(dispatcher, hub, filters)
    dispatcher.register("rpc.discover", DiscoverMethod(dispatcher, operator_api=operator_api))
    events = EventPath(
        networks,
        bus,
        hub,
        filters,
        dispatcher.cache.epochs,
        metrics,
        family_logs=family_logs,
        resume=resume,
        ingest=ingest,
        activity=activity,
    )
    return Engine(
        networks=networks,
        limits=limits,
        metrics=metrics,
        dispatcher=dispatcher,
        hub=hub,
        bus=bus,
        resume=resume,
        events=events,
        activity=activity,
    )


def build_bare_broker(
    networks: Networks,
    *,
    api_keys: Collection[str] = (),
    limits: Limits | None = None,
    bus: EventBus | None = None,
    ingest: bool = True,
) -> Broker:
    """A broker of ``networks``, whose adapters are built already, with the engine alone: chain
    calls, subscriptions, polled filters, resume and the event path; no sessions, key rules or
    operator API. For tests and benchmarks that bring adapter instances of their own;
    :func:`broker.compose.build_broker` builds the whole broker a config describes."""
    engine = build_engine(networks, limits or Limits(), bus=bus, ingest=ingest)
    return Broker(engine, engine.connections(), api_keys=api_keys)
