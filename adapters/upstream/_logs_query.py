"""The broker's own checks of an ``eth_getLogs`` request, before any upstream sees it (sans-io).

SPEC §8: a filter names at most 5,000 addresses and topics, and ``blockhash`` excludes
``fromBlock``/``toBlock``. Keys are compared case-insensitively, as geth decodes them.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from adapters.evm.log_filter import parse_criteria
from schemas.errors import InvalidParams, missing_argument

_decoder: Final = msgspec.json.Decoder()


def check_logs_params(params: bytes) -> None:
    """Raise :class:`InvalidParams` (geth's texts) when the broker must refuse the query."""
    try:
        args: Any = _decoder.decode(params)
    except msgspec.DecodeError as exc:
        raise InvalidParams(f"invalid argument 0: {exc}") from exc
    if not isinstance(args, list):
        raise InvalidParams("non-array args")
    if not args:
        raise missing_argument(0)
    if len(args) > 1:
        raise InvalidParams("too many arguments, want at most 1")
    criteria = args[0]
    if isinstance(criteria, dict):
        given = {key.lower() for key, value in criteria.items() if value is not None}
        if "blockhash" in given and given & {"fromblock", "toblock"}:
            raise InvalidParams(
                "invalid argument 0: cannot specify both BlockHash and FromBlock/ToBlock, "
                "choose one or the other"
            )
    parse_criteria(criteria)
