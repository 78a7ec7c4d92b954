"""Subscriptions and fan-out for every chain family (the EVM profile's ``eth_subscribe``,
Solana's PubSub), direct or in a session.

One event becomes one payload per matching group and item (a block's logs), encoded once; for
each form of notification (a direct one, or the session's ``wallet_notify``) the frames are split
around the subscription id once, so delivering an event to a subscriber is one join and one
non-blocking write, however many frames it makes. Fan-outs run in order, in slices, so that a large
one does not hold up the calls that arrive meanwhile (``_delivery``).
"""

from broker.events.subscriptions._hub import SubscriptionHub as SubscriptionHub
from broker.events.subscriptions._model import MAX_PER_CONNECTION as MAX_PER_CONNECTION
from broker.events.subscriptions._model import CursorKeeper as CursorKeeper
from broker.events.subscriptions._model import Subscriber as Subscriber
from broker.events.subscriptions._model import Subscription as Subscription
