"""Redis for several processes (README "Several processes (Redis)"): the client, the streams
every web process follows, chain events and session changes on them, the session store, and each chain's lease.

May import the events' bus and types (:mod:`broker.events`' bottom) and the sessions' model; the
events' followers (resume, webhooks), the worker, sessions' service and access import it.
"""

from broker.redis._changes import DEFAULT_CHANGES_MAXLEN as DEFAULT_CHANGES_MAXLEN
from broker.redis._changes import RedisChangeBus as RedisChangeBus
from broker.redis._client import CONNECT_TIMEOUT as CONNECT_TIMEOUT
from broker.redis._client import DEFAULT_PREFIX as DEFAULT_PREFIX
from broker.redis._client import RedisClient as RedisClient
from broker.redis._client import RedisFailure as RedisFailure
from broker.redis._client import SentinelUrl as SentinelUrl
from broker.redis._client import hold_redis as hold_redis
from broker.redis._client import redacted as redacted
from broker.redis._client import redis_client as redis_client
from broker.redis._client import wait_for_redis as wait_for_redis
from broker.redis._epoch import EPOCH_CHECK as EPOCH_CHECK
from broker.redis._epoch import EpochWatch as EpochWatch
from broker.redis._epoch import Repair as Repair
from broker.redis._events import DEFAULT_EVENTS_MAXLEN as DEFAULT_EVENTS_MAXLEN
from broker.redis._events import ChainKeys as ChainKeys
from broker.redis._events import EventDeduper as EventDeduper
from broker.redis._events import LeaseLost as LeaseLost
from broker.redis._events import PublishedHead as PublishedHead
from broker.redis._events import RedisEventBus as RedisEventBus
from broker.redis._events import completes as completes
from broker.redis._events import decode_stream_event as decode_stream_event
from broker.redis._events import event_key as event_key
from broker.redis._interests import InterestSharing as InterestSharing
from broker.redis._interests import RedisInterests as RedisInterests
from broker.redis._interests import SharedInterests as SharedInterests
from broker.redis._lease import ChainLease as ChainLease
from broker.redis._lease import LeaseTiming as LeaseTiming
from broker.redis._lease import process_name as process_name
from broker.redis._store import LIST_BATCH as LIST_BATCH
from broker.redis._store import RedisSessionStore as RedisSessionStore
from broker.redis._streams import entry_fields as entry_fields
from broker.redis._streams import follow_streams as follow_streams
from broker.redis._streams import read_stream_range as read_stream_range
