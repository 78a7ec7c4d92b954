"""An append-only ledger of text entries, served as a chain: the smallest complete adapter.

Each entry is a block: ``ledger_append`` adds one, ``ledger_head`` answers the height,
``ledger_getEntry`` an entry by height. It imports only scopecast's plug-in SDK and wire types.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, ClassVar

import msgspec

from adapters.base import (
    CacheEpoch,
    ChainAdapter,
    Lifetime,
    MethodDoc,
    MethodDocs,
    NetworkSpec,
    ParamDoc,
)
from schemas.errors import InvalidParams, MethodNotFound


class LedgerOptions(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The adapter's own settings (the other keys of its ``[networks.NAME]`` table)."""

    #: Entries the ledger starts with.
    genesis: list[str] = msgspec.field(default_factory=lambda: ["genesis"])


class Entry(msgspec.Struct, frozen=True):
    height: int
    hash: str
    text: str


_INTEGER = {"type": "integer", "minimum": 0}
_ENTRY = {
    "type": "object",
    "properties": {"height": _INTEGER, "hash": {"type": "string"}, "text": {"type": "string"}},
}
DOCS = MethodDocs(
    {
        "ledger_head": MethodDoc("The height of the newest entry", (), _INTEGER),
        "ledger_getEntry": MethodDoc(
            "An entry by height (null past the head)",
            (ParamDoc("height", _INTEGER),),
            {"oneOf": [_ENTRY, {"type": "null"}]},
            ((-32602, "height must be a non-negative integer"),),
        ),
        "ledger_append": MethodDoc(
            "Append a text entry; answers it",
            (ParamDoc("text", {"type": "string"}),),
            _ENTRY,
            ((-32602, "text must be a string"),),
        ),
    }
)


def _params(raw: msgspec.Raw, count: int) -> list[Any]:
    try:
        params = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        raise InvalidParams("params are not JSON") from None
    if not isinstance(params, list) or len(params) != count:
        raise InvalidParams(f"expected {count} positional params")
    return params


class LedgerAdapter(ChainAdapter):
    """The ledger of one network."""

    name: ClassVar[str] = "example-ledger"

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> LedgerAdapter:
        try:
            options = msgspec.convert(dict(spec.options), LedgerOptions)
        except msgspec.ValidationError as exc:
            raise ValueError(str(exc)) from None  # the broker names the network
        return cls(spec.chain, options)

    def __init__(self, chain: str, options: LedgerOptions) -> None:
        self.chain = chain
        self.entries: list[Entry] = []
        for text in options.genesis:
            self._append(text)

    def _append(self, text: str) -> Entry:
        parent = self.entries[-1].hash if self.entries else "0x" + "00" * 32
        digest = hashlib.sha256(f"{parent}{text}".encode()).hexdigest()
        entry = Entry(len(self.entries), "0x" + digest, text)
        self.entries.append(entry)
        return entry

    def chains(self) -> Sequence[str]:
        return [self.chain]

    def methods(self, chain: str) -> frozenset[str]:
        return frozenset(DOCS.methods) if chain == self.chain else frozenset()

    def notifications(self, chain: str) -> frozenset[str]:
        return frozenset()  # no subscriptions: nothing to fan out

    def method_docs(self, chain: str) -> MethodDocs:
        return DOCS if chain == self.chain else MethodDocs()

    async def call(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        if chain != self.chain or method not in DOCS.methods:
            raise MethodNotFound(method)
        if method == "ledger_head":
            _params(params, 0)
            return self.entries[-1].height
        if method == "ledger_getEntry":
            (height,) = _params(params, 1)
            if not isinstance(height, int) or isinstance(height, bool) or height < 0:
                raise InvalidParams("height must be a non-negative integer")
            return self.entries[height] if height < len(self.entries) else None
        (text,) = _params(params, 1)
        if not isinstance(text, str):
            raise InvalidParams("text must be a string")
        return self._append(text)

    # The response cache: an entry never changes once written; the head changes with each append.
    def answer_lifetime(self, chain: str, method: str, params: bytes, head: int) -> Lifetime:
        if method == "ledger_head":
            return Lifetime.UNTIL_HEAD
        if method == "ledger_getEntry":
            try:
                (height,) = msgspec.json.decode(params)
            except (msgspec.DecodeError, TypeError, ValueError):
                return Lifetime.NEVER
            if isinstance(height, int) and 0 <= height <= head:
                return Lifetime.FOREVER
        return Lifetime.NEVER

    def answer_kept(self, chain: str, lifetime: Lifetime, answer: bytes) -> Lifetime:
        return Lifetime.NEVER if answer == b"null" else lifetime

    def cache_epoch(self, chain: str) -> CacheEpoch | None:
        head = self.entries[-1]
        return CacheEpoch(head.height, head.hash, 0)
