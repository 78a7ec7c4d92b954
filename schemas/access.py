"""The params of the access-control method a dapp calls itself: ``scopecast_refreshToken``."""

from __future__ import annotations

from typing import Final

import msgspec


class RefreshTokenParams(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """``scopecast_refreshToken(["<jwt>"])``: the WebSocket's fresh token, alone."""

    token: str


refresh_token_params: Final = msgspec.json.Decoder(RefreshTokenParams)
