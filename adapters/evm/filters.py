"""Polled filters: ``eth_newFilter``, ``eth_newBlockFilter``, ``eth_getFilterChanges``,
``eth_getFilterLogs``, ``eth_uninstallFilter`` (geth semantics).

Filters are fed by the same chain events as subscriptions, so ``eth_getFilterChanges`` returns what
happened since the last poll, including logs removed by a reorganisation. ``eth_getFilterLogs`` runs
the filter's whole query through ``eth_getLogs``. A filter not polled for ``FILTER_TIMEOUT`` is
removed. A filter belongs to the API key that created it; other keys get ``filter not found``.

The events are kept once, in a journal shared by every filter (each filter holds only its place in
it), from the oldest place a filter still has to read: memory grows with the events of the last
``FILTER_TIMEOUT``, not with the number of filters times their events. A filter left more than
``MAX_BUFFERED`` events behind (the journal's bound) gets ``LimitExceeded`` on its next poll.
Params are decoded by the Structs of :mod:`schemas.filter_params`, the filter object as geth reads it
(:func:`adapters.evm.log_filter.parse_filter`).
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

import msgspec
import trio

from adapters.evm.blocks import ChainEvent, HeadEvent, LogsEvent
from adapters.evm.log_filter import LogCriteria, parse_filter
from adapters.evm.subscriptions import log_payload
from schemas.errors import InvalidParams, LimitExceeded, ServerError
from schemas.filter_params import filter_id_params, filter_object_params
from schemas.params import decode_positional

FILTER_TIMEOUT: Final = 15 * 60.0
MAX_BUFFERED: Final = 10_000
_TAGS: Final = frozenset({"latest", "earliest", "pending", "safe", "finalized"})

Params: TypeAlias = msgspec.Raw | list[Any]
"""A method's params: as they arrive, or decoded already."""

GetLogs = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""``await get_logs(chain, filter_object)``: the chain's ``eth_getLogs``."""


def _bound(value: Any, name: str) -> int | None:
    """A numeric block bound, or None for a tag / absent (no bound on live changes)."""
    if value is None or (isinstance(value, str) and value in _TAGS):
        return None
    if isinstance(value, str) and value.startswith("0x"):
        try:
            return int(value, 16)
        except ValueError:
            pass
    raise InvalidParams(f"invalid argument 0: invalid {name} {value!r}")


@dataclass(slots=True)
class _Filter:
    id: str
    api_key: str
    chain: str
    kind: str  # "logs" | "blocks"
    spec: dict[str, Any] = field(default_factory=dict)
    criteria: LogCriteria | None = None
    from_block: int | None = None
    to_block: int | None = None
    #: ``fromBlock`` is ``pending``: ``eth_getFilterLogs`` refuses it (SPEC §2.5).
    from_pending: bool = False
    #: The journal position of the first event this filter has not returned yet.
    position: int = 0
    last_poll: float = 0.0


@dataclass(frozen=True, slots=True)
class FilterStatistics:
    """A snapshot of the registry: installed filters and the events its journal holds."""

    filters: int
    journal_events: int


class FilterRegistry:
    """The installed filters of this process."""

    def __init__(self, get_logs: GetLogs) -> None:
        self._get_logs = get_logs
        self._filters: dict[str, _Filter] = {}
        #: Chain events not yet returned to every filter; ``_start`` is the first one's position.
        self._journal: deque[ChainEvent] = deque()
        self._start = 0

    def __len__(self) -> int:
        return len(self._filters)

    def statistics(self) -> FilterStatistics:
        return FilterStatistics(len(self._filters), len(self._journal))

    @property
    def _end(self) -> int:
        return self._start + len(self._journal)

    def new_log_filter(self, api_key: str, chain: str, params: Params) -> str:
        """``eth_newFilter``: install a log filter; its id."""
        spec = decode_positional(params, filter_object_params).criteria
        members, criteria = parse_filter(spec)
        return self._install(
            _Filter(
                "",
                api_key,
                chain,
                "logs",
                spec=spec,
                criteria=criteria,
                from_block=_bound(members.get("fromblock"), "fromBlock"),
                to_block=_bound(members.get("toblock"), "toBlock"),
                from_pending=members.get("fromblock") == "pending",
            )
        )

    def new_block_filter(self, api_key: str, chain: str) -> str:
        return self._install(_Filter("", api_key, chain, "blocks"))

    def _install(self, flt: _Filter) -> str:
        flt.id = "0x" + secrets.token_hex(16)
        flt.last_poll = trio.current_time()
        flt.position = self._end
        self._filters[flt.id] = flt
        return flt.id

    def _lookup(self, api_key: str, params: Params) -> _Filter:
        fid = decode_positional(params, filter_id_params).id
        flt = self._filters.get(fid)
        if flt is None or flt.api_key != api_key:
            raise ServerError("filter not found")
        flt.last_poll = trio.current_time()
        return flt

    def changes(self, api_key: str, params: Params) -> list[msgspec.Raw | str]:
        """What the filter saw since the last poll."""
        flt = self._lookup(api_key, params)
        start, flt.position = flt.position, self._end
        found: list[msgspec.Raw | str] = []
        overflowed = start < self._start  # events it had not read were dropped
        for index in range(max(start, self._start) - self._start, len(self._journal)):
            if overflowed:
                break
            found.extend(_changes(flt, self._journal[index]))
            overflowed = len(found) > MAX_BUFFERED
        self._trim()
        if overflowed:
            raise LimitExceeded(
                f"filter changes exceeded {MAX_BUFFERED} entries since the last poll; poll more often"
            )
        return found

    async def logs(self, api_key: str, params: Params) -> Any:
        """Every log matching the filter (``eth_getLogs`` with its criteria)."""
        flt = self._lookup(api_key, params)
        if flt.kind != "logs":
            raise ServerError("filter not found")
        if flt.from_pending:
            raise InvalidParams(
                "invalid argument 0: pending is not supported as fromBlock of a filter"
            )
        return await self._get_logs(flt.chain, flt.spec)

    def uninstall(self, api_key: str, params: Params) -> bool:
        try:
            flt = self._lookup(api_key, params)
        except ServerError:
            return False
        del self._filters[flt.id]
        self._trim()
        return True

    def expire(self, now: float) -> int:
        """Remove filters not polled for ``FILTER_TIMEOUT``; returns how many."""
        stale = [f.id for f in self._filters.values() if now - f.last_poll > FILTER_TIMEOUT]
        for fid in stale:
            del self._filters[fid]
        self._trim()
        return len(stale)

    def on_event(self, event: ChainEvent) -> None:
        """Keep a chain event for the filters (none installed: nothing to keep)."""
        if not self._filters:
            return
        self._journal.append(event)
        if len(self._journal) > MAX_BUFFERED:  # the laggards' next poll says so
            self._journal.popleft()
            self._start += 1

    def _trim(self) -> None:
        """Drop the events every filter has read."""
        oldest = min((f.position for f in self._filters.values()), default=self._end)
        while self._journal and self._start < oldest:
            self._journal.popleft()
            self._start += 1

    async def serve_expiry(self) -> None:
        """Remove stale filters once a minute, until cancelled."""
        while True:
            await trio.sleep(60)
            self.expire(trio.current_time())


def _changes(flt: _Filter, event: ChainEvent) -> list[msgspec.Raw | str]:
    """What ``event`` adds to ``flt``'s changes."""
    if flt.chain != event.chain:
        return []
    if flt.kind == "blocks":
        return [event.block.hash] if isinstance(event, HeadEvent) else []
    if not isinstance(event, LogsEvent):
        return []
    number = event.block.number
    if flt.from_block is not None and number < flt.from_block:
        return []
    if flt.to_block is not None and number > flt.to_block:
        return []
    criteria = flt.criteria
    assert criteria is not None
    return [
        msgspec.Raw(log_payload(log.json, event.removed))
        for log in event.block.logs
        if criteria.matches(log.address, log.topics)
    ]
