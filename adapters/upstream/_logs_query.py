"""The broker's own checks of an ``eth_getLogs`` request, before any upstream sees it (sans-io).

SPEC §8: a filter names at most 5,000 addresses and topics, and ``blockhash`` excludes
``fromBlock``/``toBlock``; the filter object is read as geth reads it
(:func:`adapters.evm.log_filter.parse_filter`).
"""

from __future__ import annotations

from adapters.evm.log_filter import parse_filter
from schemas.filter_params import filter_object_params
from schemas.params import decode_positional


def check_logs_params(params: bytes) -> None:
    """Raise :class:`~schemas.errors.InvalidParams` (geth's texts) when the broker must refuse
    the query."""
    parse_filter(decode_positional(params, filter_object_params).criteria)
