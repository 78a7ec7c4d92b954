"""The plug-in interfaces: chain adapters and account adapters.

A *chain adapter* serves one or more chains (CAIP-2 ids): it answers JSON-RPC calls for them and,
optionally, names the chain family whose subscriptions the broker serves on top of the events it
reports (:class:`SubscriptionFamily`; the EVM profile's, over reported blocks, lives in
:mod:`adapters.evm`). An *account
adapter* holds accounts and implements the signing methods of SPEC area B. Both are loaded through
the entry-point group ``scopecast.adapters`` (see :mod:`adapters.registry`); every adapter's tests
run the shared checks of :mod:`adapters.conformance`.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

import msgspec
import trio

from schemas.errors import InvalidParams, RpcError


@dataclass(frozen=True, slots=True)
class IngestionStatistics:
    """A snapshot of what an adapter's ingestion side counted for one chain, for metrics."""

    #: Blocks reported without their logs (more of them than the adapter fetches for one block).
    blocks_without_logs: int = 0


class NotNow(enum.Enum):
    NOT_NOW = "not now"


NOT_NOW = NotNow.NOT_NOW
"""What :meth:`ChainAdapter.call_now` gives for a call it cannot answer without waiting."""


class Lifetime(enum.IntEnum):
    """How long the answer to a call stays true, for the broker's response cache."""

    NEVER = 0  #: not cached (the default for every method an adapter does not classify)
    UNTIL_HEAD = 1  #: until the chain's next head
    UNTIL_REORG = 2  #: until a reorganisation rewrites served history
    FOREVER = 3  #: never changes


@dataclass(frozen=True, slots=True)
class CacheEpoch:
    """What a chain serves now, as the response cache compares it.

    ``head_id`` changes whenever answers about the head may change (a new head, or any other change
    of the served state); ``reorgs`` whenever served history is rewritten.
    """

    head: int
    head_id: str
    reorgs: int


@dataclass(frozen=True, slots=True)
class ParamDoc:
    """One positional param of a method, for ``rpc.discover`` (OpenRPC content descriptor)."""

    name: str
    schema: Mapping[str, Any]
    required: bool = True
    description: str = ""


@dataclass(frozen=True, slots=True)
class MethodDoc:
    """What a method takes and answers, for ``rpc.discover``.

    ``result`` None describes a notification (sent, never answered). ``errors`` are the wire codes
    and messages the method may answer with beside the JSON-RPC envelope's own.
    """

    summary: str
    params: tuple[ParamDoc, ...] = ()
    result: Mapping[str, Any] | None = None
    errors: tuple[tuple[int, str], ...] = ()
    by_name: bool = False

    @classmethod
    def of(
        cls,
        summary: str,
        params: Iterable[ParamDoc],
        result: Mapping[str, Any] | None,
        *errors: tuple[int, str],
        by_name: bool = False,
    ) -> MethodDoc:
        """A description from its parts as they read best in a table of methods."""
        return cls(summary, tuple(params), result, errors, by_name)


@dataclass(frozen=True, slots=True)
class MethodDocs:
    """An adapter's method descriptions, with the JSON schemas they refer to as
    ``#/components/schemas/NAME``."""

    methods: Mapping[str, MethodDoc] = field(default_factory=dict)
    components: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NetworkSpec:
    """One configured network: its name, CAIP-2 chain id and the adapter's own options."""

    name: str
    chain: str
    adapter: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class DevOptions:
    """What ``scopecast serve`` says of the development chains it serves when no network is
    configured (``--block-time``; ``--genesis``, ``--chain-file``, ``--forkchoice``;
    ``--state-dir``)."""

    block_time: float | None = None
    genesis: Path | None = None
    chain_file: Path | None = None
    forkchoice: Path | None = None
    state_dir: Path | None = None


class EventMatcher(Protocol):
    """One subscription of a chain family, parsed: what it matches among the family's events and
    the ``result`` it sends for one. Subscriptions with equal :attr:`key` render the same bytes
    for the same event, so the broker renders once per key and splices the bytes into each
    subscriber's frame."""

    @property
    def key(self) -> Hashable: ...

    @property
    def notification(self) -> str:
        """The notification method its messages carry (``accountNotification``)."""
        ...

    @property
    def one_shot(self) -> bool:
        """Whether it ends after its first notification (Solana's ``signatureSubscribe``)."""
        ...

    def render(self, event: object) -> bytes | None:
        """The notification's ``result`` for ``event`` as encoded JSON; None when it does not
        match."""
        ...


S = TypeVar("S", bound=Hashable)


class SubscriptionIndex(ABC, Generic[S]):
    """The subscriptions of one chain, as a family finds those an event concerns.

    The broker adds and removes its subscriptions (``S``: opaque to the family) with their
    matchers; per event it asks :meth:`matching` for each payload to send and who receives it,
    and builds each form of frame once around the payload (so a subscriber costs one
    concatenation). An index that skips subscriptions that cannot match (the EVM profile's, by
    log address and first topic) keeps the fan-out fast with many subscribers.
    """

    @abstractmethod
    def add(self, sub: S, matcher: EventMatcher) -> None:
        """Start matching ``sub`` (parsed into ``matcher`` by the family)."""

    @abstractmethod
    def remove(self, sub: S, matcher: EventMatcher) -> None:
        """Stop matching ``sub``."""

    @abstractmethod
    def matching(self, event: object) -> Iterator[tuple[Iterable[S], bytes]]:
        """Each payload (a notification's encoded ``result``) ``event`` makes, with the
        subscriptions it goes to, all of one matcher :attr:`~EventMatcher.key` or all not
        :attr:`~EventMatcher.one_shot`. The broker may remove subscriptions between two items.
        An index that yields the same object for each payload of one group (a filter matching
        several logs of a block) lets the broker send them to each subscriber in one write."""

    def ended(self, event: object) -> Iterable[S]:
        """The subscriptions that end with ``event``, once it is delivered (a transaction's
        last step); default: none."""
        return ()


class GroupedIndex(SubscriptionIndex[S]):
    """The default index: subscriptions grouped by their matcher's key, each group's payload
    rendered once per event (:meth:`EventMatcher.render`)."""

    __slots__ = ("groups",)

    def __init__(self) -> None:
        self.groups: dict[Hashable, tuple[EventMatcher, dict[S, None]]] = {}

    def add(self, sub: S, matcher: EventMatcher) -> None:
        group = self.groups.get(matcher.key)
        if group is None:
            group = self.groups[matcher.key] = (matcher, {})
        group[1][sub] = None

    def remove(self, sub: S, matcher: EventMatcher) -> None:
        group = self.groups.get(matcher.key)
        if group is not None:
            group[1].pop(sub, None)
            if not group[1]:
                del self.groups[matcher.key]

    def matching(self, event: object) -> Iterator[tuple[Iterable[S], bytes]]:
        for matcher, subs in list(self.groups.values()):
            result = matcher.render(event)
            if result is not None:
                yield list(subs), result


class Follower(ABC):
    """Events of a family's own that need the node's answers, not only the chain's events (the
    EVM profile's transaction steps): one per chain, run by the broker wherever that chain's
    subscriptions are held (see :meth:`SubscriptionFamily.follower`)."""

    @abstractmethod
    def on_event(self, event: object) -> None:
        """Every event of the chain, as it is delivered (never waits)."""

    @abstractmethod
    async def serve(
        self,
        index: Callable[[], SubscriptionIndex[Any] | None],
        publish: Callable[[object], None],
    ) -> None:
        """Run until cancelled: look at the subscriptions ``index()`` holds (the family's own
        index of the chain, None before the first) and ``publish`` each event made for them."""


ChainCall = Callable[[str, list[Any]], Awaitable[Any]]
"""A call to a chain's node: method and params in, the decoded result out."""


class EventCodec(ABC):
    """How a chain family's events travel between processes (a worker appends them to the chain's
    Redis Stream, every web process reads them back): the family owns the encoding and versions
    it. The broker stores :attr:`version` beside each encoded event and hands it back to
    :meth:`decode`, so a family that changes its encoding keeps reading what an older release
    appended (a rolling deploy, or a resume across it) or refuses it clearly.

    The decoded event must render exactly as the original does, for every matcher (a family's
    tests compare :meth:`EventMatcher.render` of both).
    """

    #: The version :meth:`encode` writes.
    version: ClassVar[int]

    @abstractmethod
    def encode(self, event: object) -> bytes:
        """One of the family's events as bytes."""

    @abstractmethod
    def decode(self, data: bytes, version: int) -> object:
        """The event :meth:`encode` made of it, at encoding ``version``.

        Raises:
            ValueError: ``data`` is not an event of that version, or the version is unknown.
        """


class SubscriptionFamily(ABC):
    """A chain family's subscriptions over the WebSocket (its PubSub), as the broker serves them
    for every adapter of the family: the broker owns ids, connections, session scoping
    (``wallet_notify``), fan-out, slow consumers and resume; the family parses params into
    :class:`EventMatcher` s over the events its adapters report, and finds the subscriptions an
    event concerns (:meth:`new_index`)."""

    #: Each subscribe method and its unsubscribe method.
    methods: ClassVar[Mapping[str, str]]
    #: Subscription ids are integers (as Solana's); False: ``0x`` and 32 hex digits, quoted (as
    #: geth's).
    integer_ids: ClassVar[bool] = True

    @abstractmethod
    def parse(self, method: str, params: Any) -> EventMatcher:
        """The matcher of a subscribe call (raising an :class:`~schemas.errors.RpcError`, e.g.
        ``InvalidParams``, for bad params)."""

    @classmethod
    def unsubscribe_methods(cls) -> frozenset[str]:
        return frozenset(cls.methods.values())

    def notifications(self) -> frozenset[str]:
        """The notification methods the family's messages carry (default: none declared)."""
        return frozenset()

    #: Seconds between a subscribe call's answer and its :meth:`initial` notification.
    initial_delay: ClassVar[float] = 0.0

    def initial(self, matcher: EventMatcher) -> bytes | None:
        """The ``result`` of a notification due as soon as a subscription starts, sent after the
        subscribe call's answer (:attr:`initial_delay` after it) (Solana: ``signatureSubscribe``
        of a signature that has a status already); a one-shot subscription ends with it.
        Default: none."""
        return None

    def method_docs(self) -> MethodDocs:
        """Descriptions of the family's subscribe and unsubscribe methods, and of its
        notifications (a :class:`MethodDoc` without a result), for ``rpc.discover`` (default:
        none)."""
        return MethodDocs()

    def kind(self, method: str, matcher: EventMatcher) -> str:
        """A subscription's kind, as the broker's metrics label it (default: its method)."""
        return method

    def new_index(self) -> SubscriptionIndex[Any]:
        """An empty index of one chain's subscriptions (default: :class:`GroupedIndex`)."""
        return GroupedIndex()

    def unsubscribe_id(self, method: str, params: Any) -> str | None:
        """The id an unsubscribe call names, as the broker keys it (its JSON text for an integer),
        or None for one that names no subscription; raises for bad params. Default: one integer,
        Solana's texts."""
        sub_id = params[0] if isinstance(params, list) and len(params) == 1 else None
        if not isinstance(sub_id, int) or isinstance(sub_id, bool):
            raise InvalidParams("Invalid params: expected one subscription id (an integer).")
        return str(sub_id)

    def unknown_subscription(self) -> RpcError:
        """The error for an unsubscribe naming no subscription of the caller's (default:
        Solana's)."""
        return InvalidParams("Invalid subscription id.")

    def follower(self, chain: str, call: ChainCall) -> Follower | None:
        """What makes the family's events that need the node's answers on ``chain`` (``call``
        asks its node); None (the default): every event comes from the adapter's reports."""
        return None

    def interest(self, matcher: EventMatcher) -> str | None:
        """What the chain's ingestion must read for a subscription to get its events, in the
        terms of the family's adapters (Solana's upstream: the account of an ``accountSubscribe``,
        or every written account for a ``programSubscribe``); None (the default): nothing beyond
        what the ingestion reads anyway. Where another process ingests the chain (a worker), a
        web process shares this before it answers the subscribe call (see
        :meth:`ChainAdapter.interests`)."""
        return None

    def event_codec(self) -> EventCodec | None:
        """How the family's events travel between processes, so that a worker ingests its chains
        once and every web process serves their subscriptions (cursors and resume included);
        None (the default): they cannot, and each process that serves a chain of the family
        follows it itself (the broker says so at start-up). A family whose events come from
        reported blocks (the EVM profile's) needs none: the broker carries the blocks."""
        return None


EventHandler = Callable[[object], Awaitable[None]]
"""``await on_event(event)``: one event of a chain family's adapter, in order."""

InterestSource = Callable[[], Awaitable[frozenset[str]]]
"""``await interests()``: what the subscriptions held in other processes need a chain's ingestion
to read (:meth:`ChainAdapter.set_interest_source`), as they stand when it is asked."""

StreamTail = Callable[[int], Awaitable[Sequence[object]]]
"""``await tail(count)``: up to the last ``count`` events a chain's stream holds (a previous
ingestion's reports, read back), oldest first; fewer when it holds fewer (none: a new stream)."""


class ChainAdapter(ABC):
    """Serves JSON-RPC for chains and reports their blocks."""

    #: The entry-point name of the adapter (``devchain``, ``upstream``, ...).
    name: ClassVar[str]
    #: Whether its chains live inside the process (a development chain): never shared between
    #: processes, paced by ``--block-time``, signed for directly with the account adapter's
    #: development keys (see :meth:`AccountAdapter.complete_options`).
    embedded: ClassVar[bool] = False

    def chain_note(self, chain: str) -> str | None:
        """What the banner and ``GET /healthz`` say of ``chain`` beside its id (None, the
        default: nothing), e.g. that a local chain uses another network's id."""
        return None

    @classmethod
    def dev_network(cls, options: DevOptions) -> NetworkSpec | None:
        """The network this adapter serves when no network is configured (a development chain),
        or None (the default: none).

        Raises:
            ConfigError: the options (a genesis file, say) are unusable.
        """
        return None

    @classmethod
    @abstractmethod
    def from_spec(cls, spec: NetworkSpec) -> ChainAdapter:
        """Build the adapter of one configured network.

        Args:
            spec: The network's name, CAIP-2 chain id and the adapter's own options (the other
                keys of its ``[networks.NAME]`` table); the adapter decodes and checks them.

        Raises:
            ValueError: the options are invalid (shown as a configuration error).
        """

    # The two hooks' defaults do nothing, and are called once each: no checkpoint.
    async def start(self) -> None:  # noqa: B027 - optional hook
        """Prepare the adapter (build or import a chain, verify upstreams). Called once."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release what :meth:`start` acquired."""

    @abstractmethod
    def chains(self) -> Sequence[str]:
        """The CAIP-2 ids this adapter serves."""

    @abstractmethod
    def methods(self, chain: str) -> frozenset[str]:
        """The JSON-RPC methods this adapter answers for ``chain``."""

    def notifications(self, chain: str) -> frozenset[str]:
        """The notifications this adapter can deliver for ``chain``: by default those of its
        :meth:`subscription_family` (none without one)."""
        family = self.subscription_family(chain)
        return family.notifications() if family is not None else frozenset()

    @abstractmethod
    async def call(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        """Answer one call. ``params`` is the undecoded JSON of the request's params (``[]`` when
        absent). Returns a JSON-encodable value or a :class:`msgspec.Raw` holding encoded JSON;
        raises :class:`schemas.errors.RpcError` for failures."""

    def call_now(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        """The answer :meth:`call` would give, when the adapter has it without waiting (an
        in-process chain computing it there and then); :data:`NOT_NOW`, the default, otherwise.

        Optional. The broker asks it first for a plain HTTP call on a chain whose answers it does
        not cache, and answers inline when it gets one (no task switch: see README "Extending
        it"). It must answer exactly as :meth:`call` (the conformance checks compare them), raise
        the same errors, and never block on I/O.
        """
        return NOT_NOW

    def subscription_family(self, chain: str) -> SubscriptionFamily | None:
        """The family whose subscriptions ``chain`` serves (the EVM profile's ``eth_subscribe``,
        Solana's PubSub); None (the default): none. An adapter that returns one reports the
        family's events through :meth:`serve_events` (an EVM adapter: its blocks, through
        :class:`adapters.evm.chain_adapter.BlockSource`)."""
        return None

    async def serve_events(
        self,
        chain: str,
        on_event: EventHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Report the chain family's events (see :meth:`subscription_family`) to ``on_event``, in
        order, until cancelled. Default: none ever."""
        task_status.started()
        await trio.sleep_forever()

    async def serve_events_after(
        self,
        chain: str,
        tail: StreamTail,
        on_event: EventHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """As :meth:`serve_events`, continuing a previous run's reports: ``tail`` reads back what
        it reported last (a worker taking a chain's lease over reads its predecessor's appends
        from the chain's stream), and an adapter that can reports from right after them, so that
        nothing between the two runs is missed or reported twice. Default: ``tail`` unread, the
        events reported from the present (:meth:`serve_events`)."""
        await self.serve_events(chain, on_event, task_status=task_status)

    def interests(self, chain: str) -> frozenset[str] | None:
        """What this process's subscriptions on ``chain`` need the chain's ingestion to read (the
        family's own terms: :meth:`SubscriptionFamily.interest`), those it keeps reading for a
        while after their subscriptions left included; None (the default): the ingestion needs
        no interests. A web process shares them (through Redis) with the worker that ingests
        the chain, which gives their union to its adapter (:meth:`set_interest_source`)."""
        return None

    def set_interest_source(  # noqa: B027 - optional hook
        self, chain: str, source: InterestSource
    ) -> None:
        """Where the ingestion of ``chain`` in this process finds the interests of the
        subscriptions held elsewhere (:meth:`interests` of the web processes): ``await
        source()`` answers their union as it stands, and never raises. An adapter that needs
        interests asks it when it is about to read what they concern (Solana's upstream: after
        a slot's block, before the accounts it wrote), so that a subscription answered before the
        change was made gets it; it reads the union of those and of its own :meth:`interests`.
        Default: ignored."""

    def ingestion_statistics(self, chain: str) -> IngestionStatistics | None:
        """What the ingestion side counted for ``chain`` so far; None (the default) if the
        adapter counts nothing. Read by the broker's metrics at every scrape."""
        return None

    def method_docs(self, chain: str) -> MethodDocs:
        """Descriptions of the methods served on ``chain``, for ``rpc.discover`` (default: none;
        an undescribed method is listed with untyped params)."""
        return MethodDocs()

    def answer_lifetime(self, chain: str, method: str, params: bytes, head: int) -> Lifetime:
        """How long the answer to ``method`` with the raw JSON ``params`` may be cached, the head
        being at height ``head``. Default: never (an adapter opts in method by method)."""
        return Lifetime.NEVER

    def answer_kept(self, chain: str, lifetime: Lifetime, answer: bytes) -> Lifetime:
        """The lifetime of an encoded ``answer`` whose call was given ``lifetime``: an adapter may
        shorten it for what the answer says ("not found" may change any moment). Default: as is."""
        return lifetime

    def cache_epoch(self, chain: str) -> CacheEpoch | None:
        """What ``chain`` serves at this instant, if the adapter knows it synchronously (an
        in-process chain does). None (the default): the broker follows the adapter's heads."""
        return None


class NetworkChainAdapter(ChainAdapter):
    """A chain adapter built for one configured network, serving its one chain: subclass it to
    be given ``spec``, :meth:`from_spec`, :meth:`chains` and :meth:`_check_chain`."""

    def __init__(self, spec: NetworkSpec) -> None:
        self.spec = spec

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> Self:
        return cls(spec)

    def chains(self) -> list[str]:
        return [self.spec.chain]

    def _check_chain(self, chain: str) -> None:
        if chain != self.spec.chain:
            raise ValueError(f"{self.name} serves {self.spec.chain}, not {chain}")


ChainReader = Callable[[str, list[Any]], Awaitable[Any]]
"""``await read(method, params)``: a node call on the chain a signing request is for."""


@dataclass(frozen=True, slots=True)
class SigningRequest:
    """A validated account-method call, ready for the approval policy.

    ``account`` is the lowercase address that will sign (None when the method signs for no single
    account of the session); ``summary`` is a readable rendering of what will be signed, shown to the
    wallet operator; ``payload`` is the adapter's own parsed form of the params.
    """

    chain: str
    method: str
    account: str | None
    summary: Mapping[str, Any]
    payload: Any


class AccountAdapter(ABC):
    """Holds accounts and implements account methods (SPEC area B)."""

    name: ClassVar[str]

    @classmethod
    def complete_options(
        cls,
        chains: Sequence[str],
        options: Mapping[str, Any],
        *,
        dev_chains: Sequence[str],
        configured: bool,
    ) -> Mapping[str, Any]:
        """The options to build with (:meth:`from_options`): ``options`` with this adapter's
        defaults for development. ``dev_chains``: the embedded development chains served;
        ``configured``: whether the config has an ``[accounts]`` table. The default: ``options``
        unchanged.

        Raises:
            ConfigError: ``options`` are incomplete for ``chains``.
        """
        return options

    @classmethod
    @abstractmethod
    def from_options(cls, chains: Sequence[str], options: Mapping[str, Any]) -> AccountAdapter:
        """Build from the ``[accounts]`` config table.

        Args:
            chains: The CAIP-2 ids to hold accounts for.
            options: The table's other keys (less ``adapter`` and ``chains``); the adapter decodes
                and validates them itself.

        Raises:
            ValueError: the options are invalid (the message is shown as a configuration error).
        """

    # The default does nothing, and is called once: no checkpoint.
    async def start(self) -> None:  # noqa: B027 - optional hook
        """Load keys. Called once."""

    @abstractmethod
    def chains(self) -> Sequence[str]:
        """The CAIP-2 ids this adapter holds accounts for."""

    @abstractmethod
    def accounts(self, chain: str) -> Sequence[str]:
        """The addresses held for ``chain``, in the wallet's order, each in its namespace's
        canonical CAIP-10 form (:func:`schemas.caip.normalize_address`: EVM lowercase ``0x`` hex,
        Solana base58 as it is written)."""

    @abstractmethod
    def methods(self, chain: str) -> frozenset[str]:
        """The account methods implemented for ``chain``."""

    @abstractmethod
    def prepare(
        self, chain: str, method: str, params: list[Any] | dict[str, Any], permitted: Sequence[str]
    ) -> SigningRequest:
        """Validate ``params`` (raising ``InvalidParams`` naming the field) and describe the request.

        ``params`` is the call's array, or its object for methods that take one (Solana's
        ``signMessage {account, message}``).

        ``permitted`` are the accounts the caller may use on ``chain``; an account outside them
        raises ``Unauthorized``.
        """

    @abstractmethod
    async def execute(self, request: SigningRequest, read: ChainReader) -> Any:
        """Carry out an approved request and return the method's result."""

    def method_docs(self, chain: str) -> MethodDocs:
        """Descriptions of the account methods for ``chain``, for ``rpc.discover`` (default:
        none)."""
        return MethodDocs()
