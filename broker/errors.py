"""Re-exports :mod:`schemas.errors`, where the error tree lives (the bottom of the plug-in SDK)."""

from schemas.errors import (
    AccessDenied as AccessDenied,
)
from schemas.errors import (
    InternalError as InternalError,
)
from schemas.errors import (
    InvalidParams as InvalidParams,
)
from schemas.errors import (
    InvalidRequest as InvalidRequest,
)
from schemas.errors import (
    InvalidScopedProperties as InvalidScopedProperties,
)
from schemas.errors import (
    InvalidSessionProperties as InvalidSessionProperties,
)
from schemas.errors import (
    LimitExceeded as LimitExceeded,
)
from schemas.errors import (
    MethodNotAllowed as MethodNotAllowed,
)
from schemas.errors import (
    MethodNotFound as MethodNotFound,
)
from schemas.errors import (
    MethodsUnsupported as MethodsUnsupported,
)
from schemas.errors import (
    NetworksUnsupported as NetworksUnsupported,
)
from schemas.errors import (
    NotificationsNotSupported as NotificationsNotSupported,
)
from schemas.errors import (
    OverLimit as OverLimit,
)
from schemas.errors import (
    ParseError as ParseError,
)
from schemas.errors import (
    RpcError as RpcError,
)
from schemas.errors import (
    ScopedPropertiesInsideScope as ScopedPropertiesInsideScope,
)
from schemas.errors import (
    ServerError as ServerError,
)
from schemas.errors import (
    SubscriptionsNeedWebSocket as SubscriptionsNeedWebSocket,
)
from schemas.errors import (
    Unauthenticated as Unauthenticated,
)
from schemas.errors import (
    Unauthorized as Unauthorized,
)
from schemas.errors import (
    UnknownSessionError as UnknownSessionError,
)
from schemas.errors import (
    UserRejected as UserRejected,
)
from schemas.errors import (
    WireError as WireError,
)
from schemas.errors import (
    invalid_argument as invalid_argument,
)
from schemas.errors import (
    missing_argument as missing_argument,
)
from schemas.errors import (
    rate_limited as rate_limited,
)
from schemas.errors import (
    too_many_arguments as too_many_arguments,
)
