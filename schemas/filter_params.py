"""The params of geth's log queries and polled filters, as positional Structs read by
:func:`schemas.params.decode_positional`: ``eth_getLogs`` and ``eth_newFilter`` take a filter
object, ``eth_getFilterChanges``, ``eth_getFilterLogs`` and ``eth_uninstallFilter`` a filter id.

The filter object stays a JSON object: geth matches its keys case-insensitively, which a Struct
cannot express; :mod:`adapters.evm.log_filter` reads it.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec


class FilterObjectParams(msgspec.Struct, array_like=True, forbid_unknown_fields=True, frozen=True):
    """``[filter]``: ``eth_getLogs``, ``eth_newFilter``."""

    criteria: Any


class FilterIdParams(msgspec.Struct, array_like=True, forbid_unknown_fields=True, frozen=True):
    """``[id]``: ``eth_getFilterChanges``, ``eth_getFilterLogs``, ``eth_uninstallFilter``."""

    id: str


filter_object_params: Final = msgspec.json.Decoder(FilterObjectParams)
filter_id_params: Final = msgspec.json.Decoder(FilterIdParams)
