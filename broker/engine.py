"""The engine every broker serves, whatever else it has: the dispatcher and its response cache, the
subscription hub, cursors and resume, the event path, and the WebSocket connections over them.

:mod:`broker.compose` builds it (the polled filters and the chain families' subscriptions too) and
hands it to the :class:`~broker.app.Broker`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker.connections import ConnectionHook, Connections
from broker.events.activity import ActivityDemand
from broker.events.bus import EventBus
from broker.events.event_path import EventPath
from broker.events.resume import ResumeKeeper
from broker.events.subscriptions import SubscriptionHub
from broker.metrics import Metrics
from broker.rpc.dispatch import Dispatcher
from broker.rpc.networks import Networks
from broker.transport.limits import Limits


@dataclass(frozen=True, kw_only=True)
class Engine:
    """The engine's parts."""

    networks: Networks
    limits: Limits
    metrics: Metrics
    dispatcher: Dispatcher
    hub: SubscriptionHub
    bus: EventBus
    #: Cursors and resume (None when ``resume_window`` is 0).
    resume: ResumeKeeper | None
    #: Chain events to the subscribers (its ``start`` is the broker's first service).
    events: EventPath
    #: Which chains' activity subscriptions want their blocks' transactions (the hub's, and any
    #: other follower's registered with it: the webhooks').
    activity: ActivityDemand

    def connections(
        self,
        *,
        on_connect: Sequence[ConnectionHook] = (),
        on_disconnect: Sequence[ConnectionHook] = (),
    ) -> Connections:
        """The WebSocket connections over this engine, with the hooks of whoever follows them:
        when one ends, its subscriptions end first, then ``on_disconnect`` is called."""
        return Connections(
            self.dispatcher,
            self.limits,
            self.metrics,
            resume=self.resume,
            on_connect=on_connect,
            on_disconnect=(self.hub.drop_connection, *on_disconnect),
        )
