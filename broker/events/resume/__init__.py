"""Resuming a dropped WebSocket connection where it stopped (README "Resume after a drop").

Every notification carries a cursor: the connection's resume token and the position, on each log
it follows (the session changes and each subscribed chain's events), of the last entry it was
sent. A client reconnecting with ``?resume=<cursor>`` gets its subscriptions back with the same
ids, every notification it missed read back from those logs in order, then ``scopecast_resumed``.
"""

from broker.events.cursors import Cursor as Cursor
from broker.events.cursors import FeedPositions as FeedPositions
from broker.events.cursors import ResumeState as ResumeState
from broker.events.cursors import format_cursor as format_cursor
from broker.events.cursors import parse_cursor as parse_cursor
from broker.events.resume._keeper import ResumeKeeper as ResumeKeeper
from broker.events.resume._records import MemoryResumeStore as MemoryResumeStore
from broker.events.resume._records import RedisResumeStore as RedisResumeStore
from broker.events.resume._records import ResumeRecord as ResumeRecord
from broker.events.resume._records import ResumeStore as ResumeStore
from broker.events.resume._records import SubscriptionRecord as SubscriptionRecord
