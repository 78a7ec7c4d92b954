"""Access control and fair use per API key (README "Keys and limits").

:mod:`._policy` holds the rules without I/O (origins, method globs, GCRA), :mod:`._tokens` the JWT
checks, :mod:`._keys` the ``[keys.*]`` tables, :mod:`._limiter` where counts live (memory or Redis)
and :mod:`._control` the trio shell the broker calls.

:mod:`.origins` says which origins may read which answers (CORS, endpoint by endpoint). May
import transport, rpc, Redis, the sessions' floor and :mod:`broker.config`; the connections, the
operator's packages and the app import it.
"""

from broker.access._control import CLOSE_TOKEN_EXPIRED as CLOSE_TOKEN_EXPIRED
from broker.access._control import REFRESH_METHOD as REFRESH_METHOD
from broker.access._control import AccessControl as AccessControl
from broker.access._control import AccessMetrics as AccessMetrics
from broker.access._control import KeyAccess as KeyAccess
from broker.access._keys import KeyPolicy as KeyPolicy
from broker.access._keys import key_policies as key_policies
from broker.access._limiter import Limiter as Limiter
from broker.access._limiter import LimiterUnavailable as LimiterUnavailable
from broker.access._limiter import MemoryLimiter as MemoryLimiter
from broker.access._limiter import RedisLimiter as RedisLimiter
from broker.access._policy import OriginPattern as OriginPattern
from broker.access._policy import origin_allowed as origin_allowed
