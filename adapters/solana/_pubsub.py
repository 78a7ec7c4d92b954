"""Solana's PubSub, family side, sans-io: subscribe params parsed into matchers over the ledger's
events, and each notification's ``result`` encoded once per group of alike subscriptions.

The core's subscription hub (chain-neutral) keeps ids and connections; per event it asks each
group's matcher for the result bytes once (:meth:`Matcher.render_all`, through
:class:`SolanaIndex`: ``slotsUpdatesSubscribe`` makes several a slot) and splices them into every
subscriber's ``{"jsonrpc":"2.0","method":<notification>,"params":{"result":…,"subscription":<id>}}``
frame. ``Matcher.key`` names the group: subscriptions with equal keys render identical bytes.
Solana's subscription ids are integers, and ``signatureSubscribe`` ends after one notification
(at once, for a signature that has landed: :meth:`SolanaSubscriptions.initial`). The root, slot
updates, block and vote feeds are rendered from the closed slot a :class:`SlotEvent` carries
(:mod:`._slot_feeds`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, TypeVar

import msgspec

from adapters.base import (
    ChainCall,
    EventCodec,
    EventMatcher,
    Follower,
    GroupedIndex,
    SubscriptionFamily,
)

from . import _slot_feeds as slot_feeds
from . import _wire as wire
from ._errors import invalid_params
from ._event_codec import SolanaEventCodec
from ._events import AccountEvent, SlotEvent, TransactionEvent
from ._signature_life import NOTIFICATION as SIGNATURE_STATUS_NOTIFICATION
from ._signature_life import SUBSCRIBE as SIGNATURE_STATUS
from ._signature_life import UNSUBSCRIBE as SIGNATURE_STATUS_UNSUBSCRIBE
from ._signature_life import (
    Followers,
    SentTransactions,
    SignatureStatusMatcher,
    SignatureStep,
    parse_signature_status,
)
from ._transaction_view import block_shape

#: ``*Subscribe`` method -> (its ``*Unsubscribe``, its notification).
SUBSCRIBE_METHODS: Final[Mapping[str, tuple[str, str]]] = {
    "slotSubscribe": ("slotUnsubscribe", "slotNotification"),
    "accountSubscribe": ("accountUnsubscribe", "accountNotification"),
    "signatureSubscribe": ("signatureUnsubscribe", "signatureNotification"),
    "logsSubscribe": ("logsUnsubscribe", "logsNotification"),
    "programSubscribe": ("programUnsubscribe", "programNotification"),
    "rootSubscribe": ("rootUnsubscribe", "rootNotification"),
    "slotsUpdatesSubscribe": ("slotsUpdatesUnsubscribe", "slotsUpdatesNotification"),
    "blockSubscribe": ("blockUnsubscribe", "blockNotification"),
    "voteSubscribe": ("voteUnsubscribe", "voteNotification"),
    # scopecast's own: a transaction's life (see ._signature_life)
    SIGNATURE_STATUS: (SIGNATURE_STATUS_UNSUBSCRIBE, SIGNATURE_STATUS_NOTIFICATION),
}
UNSUBSCRIBE_METHODS: Final = frozenset(unsubscribe for unsubscribe, _ in SUBSCRIBE_METHODS.values())
NOTIFICATIONS: Final = frozenset(notification for _, notification in SUBSCRIBE_METHODS.values())
_ENCODER: Final = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class Matcher:
    """One subscription's filter and rendering; ``key`` groups subscriptions rendering alike."""

    method: str
    notification: str
    key: tuple[Any, ...]
    #: Ends after its first notification (``signatureSubscribe``).
    one_shot: bool = False

    def render_all(self, event: object) -> list[bytes]:
        """Every notification ``result`` ``event`` makes (``slotsUpdatesSubscribe`` has
        several per slot; the others one at most)."""
        if self.key[0] == "slotsUpdates":
            return slot_feeds.slot_updates(event) if isinstance(event, SlotEvent) else []
        result = self.render(event)
        return [] if result is None else [result]

    def render(self, event: object) -> bytes | None:
        """The notification's ``result`` for ``event`` as JSON bytes; None if it does not match
        (for ``slotsUpdatesSubscribe``: the first of :meth:`render_all`'s)."""
        kind = self.key[0]
        if kind in _SLOT_FEEDS:
            return _render_slot_feed(self.key, event)
        if kind == "slot":
            if isinstance(event, SlotEvent):
                return _ENCODER.encode(
                    {"parent": event.parent, "root": event.root, "slot": event.slot}
                )
            return None
        if kind == "account":
            _, address, encoding, window = self.key
            if isinstance(event, AccountEvent) and event.address == address:
                return _context(event.slot, _account_value(event, encoding, window))
            return None
        if kind == "program":
            _, program, encoding, window, filters = self.key
            if not isinstance(event, AccountEvent) or event.account is None:
                return None
            account = event.account
            if str(account.owner) != program:
                return None
            if not wire.matches_filters(account, _decoded_filters(filters)):
                return None
            value = {
                "pubkey": event.address,
                "account": wire.encode_account(account, encoding, window, event.decimals_of),
            }
            return _context(event.slot, value)
        if not isinstance(event, TransactionEvent):
            return None
        record = event.record
        err = wire.transaction_error(record.err)
        if kind == "signature":
            if record.signature != self.key[1]:
                return None
            return _context(record.slot, {"err": err})
        # logs: "all" or one mentioned address
        mentions = self.key[1]
        if mentions is not None and mentions not in record.accounts:
            return None
        value = {"signature": record.signature, "err": err, "logs": list(record.logs)}
        return _context(record.slot, value)


_SLOT_FEEDS: Final = frozenset({"root", "slotsUpdates", "block", "vote"})


def _render_slot_feed(key: tuple[Any, ...], event: object) -> bytes | None:
    if not isinstance(event, SlotEvent):
        return None
    kind = key[0]
    if kind == "root":
        return slot_feeds.root(event)
    if kind == "vote":
        return slot_feeds.vote(event)
    if kind == "block":
        return slot_feeds.block(event, key[1], key[2])
    updates = slot_feeds.slot_updates(event)
    return updates[0] if updates else None


S = TypeVar("S", bound=Hashable)


class SolanaIndex(GroupedIndex[S]):
    """The grouped index, with every payload of a matcher that makes several per event, and the
    ``signatureStatusSubscribe`` subscriptions by signature, each with its own matcher (its own
    life), for their follower."""

    def __init__(self) -> None:
        super().__init__()
        self.signatures: dict[str, dict[S, SignatureStatusMatcher]] = {}

    def add(self, sub: S, matcher: EventMatcher) -> None:
        if isinstance(matcher, SignatureStatusMatcher):
            self.signatures.setdefault(matcher.signature, {})[sub] = matcher
            matcher.wake()  # where it stands, at once
            return
        super().add(sub, matcher)

    def remove(self, sub: S, matcher: EventMatcher) -> None:
        if isinstance(matcher, SignatureStatusMatcher):
            following = self.signatures.get(matcher.signature)
            if following is not None:
                following.pop(sub, None)
                if not following:
                    del self.signatures[matcher.signature]
            return
        super().remove(sub, matcher)

    def _steps_of(self, event: SignatureStep) -> list[S]:
        following = self.signatures.get(event.matcher.signature, {})
        return [sub for sub, matcher in following.items() if matcher is event.matcher]

    def ended(self, event: object) -> Iterable[S]:
        """A signature's last step (finalized, dropped) ends its subscription."""
        if not isinstance(event, SignatureStep) or not event.final:
            return ()
        return self._steps_of(event)

    def matching(self, event: object) -> Iterator[tuple[Iterable[S], bytes]]:
        if isinstance(event, SignatureStep):
            following = self._steps_of(event)
            if following:
                yield following, event.result
            return
        for matcher, subs in list(self.groups.values()):
            if not isinstance(matcher, Matcher):
                continue
            for result in matcher.render_all(event):
                yield list(subs), result


def _context(slot: int, value: Any) -> bytes:
    return _ENCODER.encode({"context": {"slot": slot}, "value": value})


def _account_value(event: AccountEvent, encoding: str, window: tuple[int, int] | None) -> Any:
    if event.account is None:  # closed: Solana notifies an empty system account
        return {
            "lamports": 0,
            "data": wire.encode_data(None, b"", encoding, None),
            "owner": "11111111111111111111111111111111",
            "executable": False,
            "rentEpoch": wire.RENT_EXEMPT_EPOCH,
            "space": 0,
        }
    return wire.encode_account(event.account, encoding, window, event.decimals_of)


def _frozen_filters(filters: list[dict[str, Any]]) -> tuple[Any, ...]:
    frozen: list[Any] = []
    for item in filters:
        if "dataSize" in item:
            frozen.append(("dataSize", item["dataSize"]))
        else:
            offset, wanted = item["memcmp"]
            frozen.append(("memcmp", offset, wanted))
    return tuple(frozen)


def _decoded_filters(frozen: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [
        {"dataSize": item[1]} if item[0] == "dataSize" else {"memcmp": (item[1], item[2])}
        for item in frozen
    ]


def parse(method: str, params: Any) -> Matcher:
    """The matcher of a ``*Subscribe`` call of Solana's (raises Solana's -32602 for bad
    params)."""
    if method not in SUBSCRIBE_METHODS or method == SIGNATURE_STATUS:
        raise ValueError(f"not a Solana subscription method: {method}")
    notification = SUBSCRIBE_METHODS[method][1]
    if method == "slotSubscribe":
        wire.positional(params, 0, 0)
        return Matcher(method, notification, ("slot",))
    if method == "accountSubscribe":
        address, raw = wire.positional(params, 1, 2)
        options = wire.config(raw)
        account_key = (
            "account",
            str(wire.pubkey(address)),
            wire.account_encoding(options, "binary"),
            wire.data_slice(options),
        )
        return Matcher(method, notification, account_key)
    if method == "programSubscribe":
        program, raw = wire.positional(params, 1, 2)
        options = wire.config(raw)
        filters = _frozen_filters(wire.program_filters(options.get("filters")))
        program_key = (
            "program",
            str(wire.pubkey(program)),
            wire.account_encoding(options, "binary"),
            wire.data_slice(options),
            filters,
        )
        return Matcher(method, notification, program_key)
    if method in ("rootSubscribe", "slotsUpdatesSubscribe", "voteSubscribe"):
        wire.positional(params, 0, 0)
        kind = {"rootSubscribe": "root", "slotsUpdatesSubscribe": "slotsUpdates"}.get(
            method, "vote"
        )
        return Matcher(method, notification, (kind,))
    if method == "blockSubscribe":
        selector, raw = wire.positional(params, 1, 2)
        options = wire.config(raw)
        if selector == "all":
            mentions = None
        elif isinstance(selector, dict) and "mentionsAccountOrProgram" in selector:
            mentions = str(wire.pubkey(selector["mentionsAccountOrProgram"]))
        else:
            raise invalid_params(
                'blockSubscribe takes "all" or {"mentionsAccountOrProgram": <address>}'
            )
        shape = block_shape(options, rewards_key="showRewards")
        return Matcher(method, notification, ("block", mentions, shape))
    if method == "signatureSubscribe":
        signature, raw = wire.positional(params, 1, 2)
        wire.config(raw)
        return Matcher(method, notification, ("signature", str(wire.signature(signature))), True)
    selector, raw = wire.positional(params, 1, 2)
    wire.config(raw)
    if selector in ("all", "allWithVotes"):
        return Matcher(method, notification, ("logs", None))
    mentions = selector.get("mentions") if isinstance(selector, dict) else None
    if not isinstance(mentions, list) or len(mentions) != 1:
        raise invalid_params(
            'logsSubscribe takes "all", "allWithVotes" or {"mentions": [<one address>]}'
        )
    return Matcher(method, notification, ("logs", str(wire.pubkey(mentions[0]))))


def notification_frame(notification: str, subscription: int, result: bytes) -> bytes:
    """The whole notification message for one subscriber, ``result`` spliced in as encoded."""
    return _ENCODER.encode(
        {
            "jsonrpc": "2.0",
            "method": notification,
            "params": {"result": msgspec.Raw(result), "subscription": subscription},
        }
    )


_CODEC: Final = SolanaEventCodec()

#: ``signature -> (slot, err as JSON)`` of a transaction that has landed, None if none has.
StatusLookup = Callable[[str], tuple[int, Any] | None]


class SolanaSubscriptions(SubscriptionFamily):
    """Solana's PubSub as the broker serves it (see :class:`adapters.base.SubscriptionFamily`);
    ``status_of`` finds a landed signature's status, so that ``signatureSubscribe`` of one
    notifies at once (one per chain: each adapter has its own)."""

    methods: ClassVar[Mapping[str, str]] = {
        subscribe: unsubscribe for subscribe, (unsubscribe, _) in SUBSCRIBE_METHODS.items()
    }

    # @solana/kit drops a notification that arrives with the subscription's answer (its iterator
    # is not polling yet); a validator notifies a landed signature at its next slot. So the
    # initial notification follows the answer by one slot time (Solana's 400 ms).
    initial_delay: ClassVar[float] = 0.4

    def __init__(self, status_of: StatusLookup | None = None) -> None:
        self._status_of = status_of
        self._followers = Followers()
        #: The transactions this process sent on the chain (see :class:`SentTransactions`).
        self.sent = SentTransactions()

    def parse(self, method: str, params: Any) -> Matcher | SignatureStatusMatcher:
        if method == SIGNATURE_STATUS:
            return parse_signature_status(params, self._followers.wake, self.sent)
        return parse(method, params)

    def follower(self, chain: str, call: ChainCall) -> Follower:
        """The signatures' steps, asked of the node (:mod:`._signature_life`)."""
        return self._followers.new(call)

    def notifications(self) -> frozenset[str]:
        return NOTIFICATIONS

    def new_index(self) -> SolanaIndex[Any]:
        return SolanaIndex()

    def event_codec(self) -> EventCodec:
        return _CODEC

    def initial(self, matcher: EventMatcher) -> bytes | None:
        # Every slot is final as soon as it is produced, so a landed signature has its status
        # at every commitment: a client subscribing after sendTransaction (solana-py's and
        # kit's confirmation helpers do) would otherwise wait for an event that has passed.
        if self._status_of is None or not isinstance(matcher, Matcher):
            return None
        if matcher.key[0] != "signature":
            return None
        status = self._status_of(matcher.key[1])
        if status is None:
            return None
        slot, err = status
        return _context(slot, {"err": err})
