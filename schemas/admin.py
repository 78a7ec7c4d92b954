"""The operator API's params (``POST /admin``), as msgspec Structs decoded once at the door.

Each method takes one object (or an array holding one object, as some JSON-RPC clients send).
Member types are checked by msgspec; a mistake is -32602 naming the member.
"""

from __future__ import annotations

from typing import Any, Final, Generic, TypeVar

import msgspec

from schemas.errors import InvalidParams
from schemas.params import Mistake, convert_named

T = TypeVar("T", bound=msgspec.Struct)


class DappParams(msgspec.Struct, kw_only=True):
    """A dapp identity: its API key and Origin (``-`` when it sent none)."""

    apiKey: str
    origin: str = "-"


class UpdateSessionParams(DappParams, kw_only=True):
    sessionScopes: dict[str, Any]


class RevokeSessionParams(DappParams, kw_only=True):
    scopes: list[str] | None = None


class ApprovalParams(msgspec.Struct, kw_only=True):
    """Names a waiting request. ``admin_listApprovals`` gives ids as strings; the number an
    operator types from one (``{"id": 2}``) names the same request."""

    id: str | int

    @property
    def approval_id(self) -> str:
        return str(self.id)


class ApproveParams(ApprovalParams, kw_only=True):
    accounts: list[str] | None = None
    sessionScopes: dict[str, Any] | None = None


class RejectParams(ApprovalParams, kw_only=True):
    pass


class WebhookSubscription(msgspec.Struct, kw_only=True):
    """What a client would send to subscribe on the chain (``eth_subscribe`` and its params)."""

    method: str
    params: Any = msgspec.field(default_factory=list)


class CreateWebhookParams(msgspec.Struct, kw_only=True):
    url: str
    chain: str
    subscription: WebhookSubscription
    allowPrivate: bool = False


class WebhookIdParams(msgspec.Struct, kw_only=True):
    id: str


class ReplayWebhookParams(msgspec.Struct, kw_only=True):
    id: str
    cursor: str


class ParamsDecoder(Generic[T]):
    """One method's params as ``kind``: an object, an array holding one object, or nothing
    (``null``, ``[]``: an object with no members). Build one per method, at module level."""

    __slots__ = ("_decoder", "kind")

    def __init__(self, kind: type[T]) -> None:
        self.kind = kind
        # The object straight to its Struct; an array or null is read, then converted.
        self._decoder: msgspec.json.Decoder[T | list[Any] | None] = msgspec.json.Decoder(
            kind | list[Any] | None
        )

    def decode(self, raw: bytes) -> T:
        """``raw`` params as :attr:`kind` (InvalidParams naming the member on a mistake)."""
        try:
            value = self._decoder.decode(raw)
        except msgspec.ValidationError as exc:
            mistake = Mistake.of(exc)
            raise (_invalid(mistake) if mistake.path else _not_an_object()) from None
        except msgspec.DecodeError as exc:
            raise InvalidParams(f"params are not JSON: {exc}") from None
        if isinstance(value, self.kind):
            return value
        if not value:  # null or []
            return convert_named({}, self.kind, _invalid)
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
            return convert_named(value[0], self.kind, _invalid)  # [ {...} ], as some clients send
        raise _not_an_object()


update_session_params: Final = ParamsDecoder(UpdateSessionParams)
revoke_session_params: Final = ParamsDecoder(RevokeSessionParams)
approve_params: Final = ParamsDecoder(ApproveParams)
reject_params: Final = ParamsDecoder(RejectParams)
create_webhook_params: Final = ParamsDecoder(CreateWebhookParams)
webhook_id_params: Final = ParamsDecoder(WebhookIdParams)
replay_webhook_params: Final = ParamsDecoder(ReplayWebhookParams)


def _invalid(mistake: Mistake) -> InvalidParams:
    return InvalidParams(f"invalid params: {mistake.text}")


def _not_an_object() -> InvalidParams:
    return InvalidParams("params must be an object")
