"""The one error hierarchy of scopecast, at the bottom of the plug-in SDK.

Every failure that reaches a client is an :class:`RpcError` carrying its wire code. Code anywhere in
the broker or in an adapter raises one of these; the broker's dispatcher is the only place that turns
them into JSON-RPC error objects. Texts follow go-ethereum where geth has one. This module imports
nothing of scopecast's, so a third-party adapter raises these without importing the server.
"""

from __future__ import annotations

from typing import Any, ClassVar

from msgspec import UNSET, UnsetType


class ConfigError(ValueError):
    """A configuration mistake by the operator: reported as one line, never as a traceback."""


class RpcError(Exception):
    """An error with a JSON-RPC wire code, a message and optional data."""

    code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "internal error"

    def __init__(self, message: str | None = None, *, data: Any | UnsetType = UNSET) -> None:
        self.message = message if message is not None else self.default_message
        self.data = data
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.message!r})"


class WireError(RpcError):
    """An error whose code is only known at run time (an upstream node's, an inner method's)."""

    def __init__(self, code: int, message: str, *, data: Any | UnsetType = UNSET) -> None:
        super().__init__(message, data=data)
        self.code = code  # type: ignore[misc]


class ParseError(RpcError):
    code = -32700
    default_message = "parse error"


class InvalidRequest(RpcError):
    code = -32600
    default_message = "invalid request"


class MethodNotFound(RpcError):
    code = -32601

    def __init__(self, method: str) -> None:
        super().__init__(f"the method {method} does not exist/is not available")


class SubscriptionsNeedWebSocket(RpcError):
    """geth's answer to ``eth_subscribe`` over HTTP, which cannot carry notifications."""

    code = -32601
    default_message = "notifications not supported"


class Unauthenticated(RpcError):
    """No credential, or one that opens nothing (an API key, the operator's token)."""

    code = -32001
    default_message = "missing or unknown API key"


class InvalidParams(RpcError):
    code = -32602
    default_message = "invalid params"


class InternalError(RpcError):
    code = -32603
    default_message = "internal error"


class ServerError(RpcError):
    """geth's generic -32000 (``filter not found``, ``subscription not found``, ...)."""

    code = -32000
    default_message = "server error"


class LimitExceeded(RpcError):
    code = -32005
    default_message = "query returned more than 10000 results"


class OverLimit(LimitExceeded):
    """A key's fair-use limit (README "Keys and limits"): ``data`` names the limit, and for a rate
    says when to retry (``retryAfterMs``)."""

    default_message = "limit exceeded"


def rate_limited(retry_after_ms: int) -> OverLimit:
    """The answer to a call over its key's ``requests_per_second``."""
    return OverLimit(data={"limit": "requests_per_second", "retryAfterMs": retry_after_ms})


class AccessDenied(RpcError):
    """A request its key's settings refuse (its Origin); sent with HTTP 403."""

    code = -32002
    default_message = "rejected due to the key's settings"


class MethodNotAllowed(RpcError):
    """A method outside the key's (or its token's) ``methods`` allowlist."""

    code = -32601

    def __init__(self, method: str, rule: str) -> None:
        super().__init__(f"the method {method} is not allowed for this key ({rule})")


class UserRejected(RpcError):
    code = 4001
    default_message = "User rejected the request."


class Unauthorized(RpcError):
    code = 4100
    default_message = "The requested account and/or method has not been authorized by the user."


class UnknownSessionError(RpcError):
    code = 5000
    default_message = "Unknown error with request"


class NetworksUnsupported(RpcError):
    code = 5100
    default_message = "Requested networks are not supported"


class MethodsUnsupported(RpcError):
    code = 5101
    default_message = "Requested methods are not supported"


class NotificationsNotSupported(RpcError):
    code = 5102
    default_message = "Requested notifications are not supported"


class InvalidScopedProperties(RpcError):
    code = 5300
    default_message = "Invalid scopedProperties requested"


class ScopedPropertiesInsideScope(RpcError):
    code = 5301
    default_message = "scopedProperties can only be outside of sessionScopes"


class InvalidSessionProperties(RpcError):
    code = 5302
    default_message = "Invalid sessionProperties requested"


def missing_argument(index: int) -> InvalidParams:
    """geth's text for a required positional argument that was not given."""
    return InvalidParams(f"missing value for required argument {index}")


def invalid_argument(index: int, reason: str) -> InvalidParams:
    """geth's text for a positional argument that could not be decoded."""
    return InvalidParams(f"invalid argument {index}: {reason}")


def too_many_arguments(most: int) -> InvalidParams:
    """geth's text for more positional arguments than a method takes."""
    return InvalidParams(f"too many arguments, want at most {most}")
