"""The Solana methods described for ``rpc.discover`` (summaries, params, results, error codes)."""

from __future__ import annotations

from typing import Any, Final

from adapters.base import MethodDoc, MethodDocs, ParamDoc

_REF: Final = "#/components/schemas/{name}"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _REF.format(name=name)}


def _wrapped(value: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"context": _ref("SolanaContext"), "value": value},
        "required": ["context", "value"],
    }


COMPONENTS: Final[dict[str, Any]] = {
    "SolanaAddress": {"type": "string", "pattern": "^[1-9A-HJ-NP-Za-km-z]{32,44}$"},
    "SolanaHash": {"type": "string", "pattern": "^[1-9A-HJ-NP-Za-km-z]{32,44}$"},
    "SolanaSignature": {"type": "string", "pattern": "^[1-9A-HJ-NP-Za-km-z]{64,88}$"},
    "SolanaContext": {
        "type": "object",
        "properties": {"slot": {"type": "integer"}, "apiVersion": {"type": "string"}},
    },
    "SolanaConfig": {
        "type": "object",
        "properties": {
            "commitment": {"enum": ["processed", "confirmed", "finalized"]},
            "minContextSlot": {"type": "integer", "minimum": 0},
            "encoding": {"type": "string"},
        },
    },
    "SolanaTokenAmount": {
        "type": "object",
        "properties": {
            "amount": {"type": "string"},
            "decimals": {"type": "integer"},
            "uiAmount": {"type": ["number", "null"]},
            "uiAmountString": {"type": "string"},
        },
    },
    "SolanaAccount": {
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "lamports": {"type": "integer"},
                    "owner": _ref("SolanaAddress"),
                    "data": {},
                    "executable": {"type": "boolean"},
                    "rentEpoch": {"type": "integer"},
                    "space": {"type": "integer"},
                },
            },
            {"type": "null"},
        ]
    },
}

_CONFIG: Final = ParamDoc("config", _ref("SolanaConfig"), required=False)
_INTEGER: Final = {"type": "integer", "minimum": 0}
_OBJECT: Final = {"type": "object"}
_INVALID: Final = (-32602, "Invalid params")
_NOT_REACHED: Final = (-32016, "Minimum context slot has not been reached")


def _doc(
    summary: str, params: tuple[ParamDoc, ...], result: dict[str, Any], *errors: tuple[int, str]
) -> MethodDoc:
    return MethodDoc(summary, params, result, (_INVALID, *errors))


def _param(name: str, schema: dict[str, Any]) -> ParamDoc:
    return ParamDoc(name, schema)


_ADDRESS: Final = _param("address", _ref("SolanaAddress"))
_SLOT: Final = _param("slot", _INTEGER)
_TRANSACTION: Final = _param("transaction", {"type": "string"})

METHOD_DOCS: Final[dict[str, MethodDoc]] = {
    "getVersion": _doc("The RPC API spoken", (), {"type": "object"}),
    "getHealth": _doc("ok while the node serves", (), {"const": "ok"}),
    "getGenesisHash": _doc("The genesis hash (base58)", (), _ref("SolanaHash")),
    "getSlot": _doc("The current slot", (_CONFIG,), _INTEGER, _NOT_REACHED),
    "getBlockHeight": _doc("The current block height", (_CONFIG,), _INTEGER, _NOT_REACHED),
    "getTransactionCount": _doc("Transactions processed", (_CONFIG,), _INTEGER, _NOT_REACHED),
    "getEpochInfo": _doc("The current epoch", (_CONFIG,), {"type": "object"}, _NOT_REACHED),
    "getLatestBlockhash": _doc(
        "The blockhash to sign with, and the last block height it is valid at",
        (_CONFIG,),
        _wrapped({"type": "object"}),
    ),
    "isBlockhashValid": _doc(
        "Whether a blockhash is still valid",
        (_param("blockhash", _ref("SolanaHash")), _CONFIG),
        _wrapped({"type": "boolean"}),
    ),
    "getBalance": _doc("Lamports of an account", (_ADDRESS, _CONFIG), _wrapped(_INTEGER)),
    "getAccountInfo": _doc(
        "An account (null if none)", (_ADDRESS, _CONFIG), _wrapped(_ref("SolanaAccount"))
    ),
    "getMultipleAccounts": _doc(
        "Up to 100 accounts",
        (_param("addresses", {"type": "array", "items": _ref("SolanaAddress")}), _CONFIG),
        _wrapped({"type": "array", "items": _ref("SolanaAccount")}),
    ),
    "getProgramAccounts": _doc(
        "The accounts a program owns (filters: dataSize, memcmp)",
        (_param("program", _ref("SolanaAddress")), _CONFIG),
        {"type": "array"},
    ),
    "getMinimumBalanceForRentExemption": _doc(
        "Lamports an account of this size needs", (_param("size", _INTEGER), _CONFIG), _INTEGER
    ),
    "getFeeForMessage": _doc(
        "The fee of a base64 message (null if its blockhash expired)",
        (_param("message", {"type": "string"}), _CONFIG),
        _wrapped({"oneOf": [_INTEGER, {"type": "null"}]}),
    ),
    "getSignatureStatuses": _doc(
        "Statuses of up to 256 signatures",
        (_param("signatures", {"type": "array", "items": _ref("SolanaSignature")}), _CONFIG),
        _wrapped({"type": "array"}),
    ),
    "getSignaturesForAddress": _doc(
        "Signatures naming an address, newest first", (_ADDRESS, _CONFIG), {"type": "array"}
    ),
    "getTransaction": _doc(
        "A landed transaction (null if unknown)",
        (_param("signature", _ref("SolanaSignature")), _CONFIG),
        {"oneOf": [{"type": "object"}, {"type": "null"}]},
        (-32015, "Transaction version is not supported by the requesting client"),
    ),
    "getBlock": _doc(
        "A slot's block (transactionDetails: full, signatures, none)",
        (_param("slot", _INTEGER), _CONFIG),
        {"type": "object"},
        (-32004, "Block not available for slot"),
        (-32001, "Block cleaned up"),
    ),
    "getBlockTime": _doc(
        "A block's unix time",
        (_param("slot", _INTEGER),),
        _INTEGER,
        (-32004, "Block not available for slot"),
    ),
    "getBlocks": _doc(
        "The slots with a block in a range (every slot here)",
        (_param("start", _INTEGER), ParamDoc("end", _INTEGER, required=False), _CONFIG),
        {"type": "array", "items": _INTEGER},
    ),
    "getFirstAvailableBlock": _doc("The oldest slot still kept", (), _INTEGER),
    "sendTransaction": _doc(
        "Submit a signed transaction (base58, or base64 with encoding)",
        (_TRANSACTION, _CONFIG),
        _ref("SolanaSignature"),
        (-32002, "Transaction simulation failed"),
        (-32003, "Transaction signature verification failure"),
    ),
    "simulateTransaction": _doc(
        "Run a transaction without keeping it",
        (_TRANSACTION, _CONFIG),
        _wrapped({"type": "object"}),
        (-32003, "Transaction signature verification failure"),
    ),
    "requestAirdrop": _doc(
        "Lamports from the dev faucet",
        (_ADDRESS, _param("lamports", _INTEGER), _CONFIG),
        _ref("SolanaSignature"),
    ),
    "getTokenAccountBalance": _doc(
        "A token account's balance",
        (_param("account", _ref("SolanaAddress")), _CONFIG),
        _wrapped(_ref("SolanaTokenAmount")),
    ),
    "getTokenAccountsByOwner": _doc(
        "The token accounts of an owner, of one mint or one token program",
        (_ADDRESS, _param("filter", {"type": "object"}), _CONFIG),
        _wrapped({"type": "array"}),
    ),
    "getTokenAccountsByDelegate": _doc(
        "The token accounts a delegate may spend from, of one mint or one token program",
        (_ADDRESS, _param("filter", {"type": "object"}), _CONFIG),
        _wrapped({"type": "array"}),
    ),
    "getTokenSupply": _doc(
        "A mint's supply",
        (_param("mint", _ref("SolanaAddress")), _CONFIG),
        _wrapped(_ref("SolanaTokenAmount")),
    ),
    "getTokenLargestAccounts": _doc(
        "The 20 largest accounts of a mint",
        (_param("mint", _ref("SolanaAddress")), _CONFIG),
        _wrapped({"type": "array"}),
    ),
    "getRecentPrioritizationFees": _doc(
        "Per recent slot, the lowest compute-unit price paid (of transactions writing the "
        "addresses, up to 128)",
        (ParamDoc("addresses", {"type": "array"}, required=False),),
        {"type": "array"},
    ),
    "getEpochSchedule": _doc("The epoch schedule (432,000 slots, no warm-up)", (), _OBJECT),
    "getRecentPerformanceSamples": _doc(
        "Slots and transactions per 60 s of block time, newest first",
        (ParamDoc("limit", _INTEGER, required=False),),
        {"type": "array"},
    ),
    "getSupply": _doc("Lamports in existence", (_CONFIG,), _wrapped(_OBJECT)),
    "getLargestAccounts": _doc(
        "The 20 largest accounts (filter: circulating, nonCirculating)",
        (_CONFIG,),
        _wrapped({"type": "array"}),
    ),
    "getBlockCommitment": _doc(
        "A block's commitment (null: rooted) and the total stake", (_SLOT,), _OBJECT
    ),
    "getBlocksWithLimit": _doc(
        "Up to limit slots with a block from start",
        (_param("start", _INTEGER), _param("limit", _INTEGER), _CONFIG),
        {"type": "array", "items": _INTEGER},
    ),
    "getIdentity": _doc("The node's identity", (), _OBJECT),
    "getSlotLeader": _doc(
        "The current slot's leader (the node)", (_CONFIG,), _ref("SolanaAddress")
    ),
    "getSlotLeaders": _doc(
        "The leaders of up to 5,000 slots from start",
        (_param("start", _INTEGER), _param("limit", _INTEGER)),
        {"type": "array"},
    ),
    "getClusterNodes": _doc("The cluster's nodes (this one)", (), {"type": "array"}),
    "getLeaderSchedule": _doc(
        "The epoch's leader schedule (the node leads every slot)",
        (ParamDoc("slot", _INTEGER, required=False), _CONFIG),
        {"oneOf": [_OBJECT, {"type": "null"}]},
    ),
    "getVoteAccounts": _doc("The vote accounts (the node's)", (_CONFIG,), _OBJECT),
    "getInflationGovernor": _doc("Solana's default inflation schedule", (_CONFIG,), _OBJECT),
    "getInflationRate": _doc("The inflation rates of this epoch", (), _OBJECT),
    "getInflationReward": _doc(
        "Inflation rewards of addresses (null: none is paid here)",
        (_param("addresses", {"type": "array"}), _CONFIG),
        {"type": "array"},
    ),
    "getStakeMinimumDelegation": _doc(
        "The stake program's minimum delegation", (_CONFIG,), _wrapped(_INTEGER)
    ),
    "getHighestSnapshotSlot": _doc(
        "The highest snapshot (none here)", (), _OBJECT, (-32008, "No snapshot")
    ),
    "minimumLedgerSlot": _doc("The oldest slot kept", (), _INTEGER),
    "scopecast_advanceSlots": _doc(
        "Dev: produce slots now (1 to 10,000)",
        (ParamDoc("count", _INTEGER, required=False),),
        _INTEGER,
    ),
}


def solana_docs(methods: frozenset[str]) -> MethodDocs:
    """The descriptions of ``methods``."""
    return MethodDocs({m: METHOD_DOCS[m] for m in sorted(methods) if m in METHOD_DOCS}, COMPONENTS)
