"""The core every broker serves, whatever else it has: the dispatcher and its response cache, the
subscription hub, cursors and resume, the event path, and the WebSocket connections over them.

:mod:`broker.compose` builds it (the polled filters and the chain families' subscriptions too) and
hands it to the :class:`~broker.app.Broker`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker.activity import ActivityDemand
from broker.bus import EventBus
from broker.connections import ConnectionHook, Connections
from broker.dispatch import Dispatcher
from broker.event_path import EventPath
from broker.limits import Limits
from broker.metrics import Metrics
from broker.networks import Networks
from broker.resume import ResumeKeeper
from broker.subscriptions import SubscriptionHub


@dataclass(frozen=True, kw_only=True)
class Core:
    """The core's parts."""

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
        """The WebSocket connections over this core, with the hooks of whoever follows them:
        when one ends, its subscriptions end first, then ``on_disconnect`` is called."""
        return Connections(
            self.dispatcher,
            self.limits,
            self.metrics,
            resume=self.resume,
            on_connect=on_connect,
            on_disconnect=(self.hub.drop_connection, *on_disconnect),
        )
