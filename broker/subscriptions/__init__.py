"""Subscriptions and fan-out for every chain family (the EVM profile's ``eth_subscribe``,
Solana's PubSub), direct or in a session.

One event becomes one payload per matching group, encoded once; for each form of notification (a
direct one, or the session's ``wallet_notify``) the frame is split around the subscription id
once, so delivering to a subscriber is one concatenation and one non-blocking write.
"""

from broker.subscriptions._hub import SubscriptionHub as SubscriptionHub
from broker.subscriptions._model import MAX_PER_CONNECTION as MAX_PER_CONNECTION
from broker.subscriptions._model import CursorKeeper as CursorKeeper
from broker.subscriptions._model import Subscriber as Subscriber
from broker.subscriptions._model import Subscription as Subscription
