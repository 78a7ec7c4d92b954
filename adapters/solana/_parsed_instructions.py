"""``jsonParsed`` instructions, sans-io: the system program's, SPL Token's (Token and Token-2022's
base instructions), the Associated Token Account program's, SPL Memo's and the upgradeable BPF
loader's (program deployment), decoded into the
``{"program", "programId", "parsed": {"type", "info"}, "stackHeight"}`` shape Solana's transaction
status parsers give. An instruction of any other program, or one that does not decode, is
"partially decoded" as Solana leaves it: ``{"programId", "accounts", "data" (base58),
"stackHeight"}`` (so are compute-budget instructions: Solana has no parser for them).

Field names and ``type`` names are Solana's (agave ``transaction-status`` ``parse_*``); amounts of
SPL Token are strings, lamports and space are numbers, as there.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any, Final

from adapters._base58 import b58encode

from ._token import token_amount

SYSTEM_PROGRAM: Final = "11111111111111111111111111111111"
TOKEN_PROGRAMS: Final = frozenset(
    {"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"}
)
ASSOCIATED_TOKEN_PROGRAM: Final = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL"
UPGRADEABLE_LOADER: Final = "BPFLoaderUpgradeab1e11111111111111111111111"
MEMO_PROGRAMS: Final = frozenset(
    {"Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo", "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"}
)

#: SPL Token's authority types, by their byte, as Solana names them.
AUTHORITY_TYPES: Final = (
    "mintTokens",
    "freezeAccount",
    "accountOwner",
    "closeAccount",
    "transferFeeConfig",
    "withheldWithdraw",
    "closeMint",
    "interestRate",
    "permanentDelegate",
    "confidentialTransferMint",
    "transferHookProgramId",
    "confidentialTransferFeeConfig",
    "metadataPointer",
    "groupPointer",
    "groupMemberPointer",
    "scaledUiAmount",
    "pause",
    "permissionedBurn",
)
#: Token-2022's extension types, by their number, as Solana names them.
EXTENSION_TYPES: Final = (
    "uninitialized",
    "transferFeeConfig",
    "transferFeeAmount",
    "mintCloseAuthority",
    "confidentialTransferMint",
    "confidentialTransferAccount",
    "defaultAccountState",
    "immutableOwner",
    "memoTransfer",
    "nonTransferable",
    "interestBearingConfig",
    "cpiGuard",
    "permanentDelegate",
    "nonTransferableAccount",
    "transferHook",
    "transferHookAccount",
    "confidentialTransferFeeConfig",
    "confidentialTransferFeeAmount",
    "metadataPointer",
    "tokenMetadata",
    "groupPointer",
    "groupMemberPointer",
    "tokenGroup",
    "tokenGroupMember",
    "confidentialMintBurn",
    "scaledUiAmount",
    "pausable",
    "pausableAccount",
    "permissionedBurn",
)


class NotParsable(Exception):
    """The instruction does not decode as its program's (it is shown partially decoded)."""


class _Reader:
    """Little-endian fields of instruction data, read in order."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise NotParsable
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def uint(self, size: int) -> int:
        return int.from_bytes(self.take(size), "little")

    def key(self) -> str:
        return b58encode(self.take(32))

    def seed(self) -> str:
        """A bincode string: a u64 length, then UTF-8."""
        try:
            return self.take(self.uint(8)).decode()
        except UnicodeDecodeError:
            raise NotParsable from None

    def optional_key(self) -> str | None:
        """An SPL ``COption<Pubkey>`` in instruction data: one tag byte, then the key."""
        tag = self.uint(1)
        if tag == 0:
            return None
        if tag != 1:
            raise NotParsable
        return self.key()

    def rest(self) -> bytes:
        chunk = self.data[self.at :]
        self.at = len(self.data)
        return chunk


class _Accounts:
    """An instruction's accounts by position, as keys (too few: not parsable)."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = keys

    def need(self, count: int) -> None:
        if len(self.keys) < count:
            raise NotParsable

    def __getitem__(self, position: int) -> str:
        if position >= len(self.keys):
            raise NotParsable
        return self.keys[position]


def _parsed(kind: str, info: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "info": info}


# -- system -------------------------------------------------------------------------------------


def _system(data: bytes, accounts: _Accounts) -> dict[str, Any]:
    read = _Reader(data)
    tag = read.uint(4)
    if tag == 0:
        accounts.need(2)
        lamports, space, owner = read.uint(8), read.uint(8), read.key()
        return _parsed(
            "createAccount",
            {
                "source": accounts[0],
                "newAccount": accounts[1],
                "lamports": lamports,
                "space": space,
                "owner": owner,
            },
        )
    if tag == 1:
        accounts.need(1)
        return _parsed("assign", {"account": accounts[0], "owner": read.key()})
    if tag == 2:
        accounts.need(2)
        return _parsed(
            "transfer",
            {"source": accounts[0], "destination": accounts[1], "lamports": read.uint(8)},
        )
    if tag == 3:
        accounts.need(2)
        base, seed = read.key(), read.seed()
        lamports, space, owner = read.uint(8), read.uint(8), read.key()
        return _parsed(
            "createAccountWithSeed",
            {
                "source": accounts[0],
                "newAccount": accounts[1],
                "base": base,
                "seed": seed,
                "lamports": lamports,
                "space": space,
                "owner": owner,
            },
        )
    if tag == 4:
        accounts.need(3)
        return _parsed(
            "advanceNonce",
            {
                "nonceAccount": accounts[0],
                "recentBlockhashesSysvar": accounts[1],
                "nonceAuthority": accounts[2],
            },
        )
    if tag == 5:
        accounts.need(5)
        return _parsed(
            "withdrawFromNonce",
            {
                "nonceAccount": accounts[0],
                "destination": accounts[1],
                "recentBlockhashesSysvar": accounts[2],
                "rentSysvar": accounts[3],
                "nonceAuthority": accounts[4],
                "lamports": read.uint(8),
            },
        )
    if tag == 6:
        accounts.need(3)
        return _parsed(
            "initializeNonce",
            {
                "nonceAccount": accounts[0],
                "recentBlockhashesSysvar": accounts[1],
                "rentSysvar": accounts[2],
                "nonceAuthority": read.key(),
            },
        )
    if tag == 7:
        accounts.need(2)
        return _parsed(
            "authorizeNonce",
            {
                "nonceAccount": accounts[0],
                "nonceAuthority": accounts[1],
                "newAuthorized": read.key(),
            },
        )
    if tag == 8:
        accounts.need(1)
        return _parsed("allocate", {"account": accounts[0], "space": read.uint(8)})
    if tag == 9:
        accounts.need(2)
        base, seed, space, owner = read.key(), read.seed(), read.uint(8), read.key()
        return _parsed(
            "allocateWithSeed",
            {"account": accounts[0], "base": base, "seed": seed, "space": space, "owner": owner},
        )
    if tag == 10:
        accounts.need(2)
        base, seed, owner = read.key(), read.seed(), read.key()
        return _parsed(
            "assignWithSeed", {"account": accounts[0], "base": base, "seed": seed, "owner": owner}
        )
    if tag == 11:
        accounts.need(3)
        lamports, seed, owner = read.uint(8), read.seed(), read.key()
        return _parsed(
            "transferWithSeed",
            {
                "source": accounts[0],
                "sourceBase": accounts[1],
                "destination": accounts[2],
                "lamports": lamports,
                "sourceSeed": seed,
                "sourceOwner": owner,
            },
        )
    if tag == 12:
        accounts.need(1)
        return _parsed("upgradeNonce", {"nonceAccount": accounts[0]})
    raise NotParsable


# -- SPL Token ----------------------------------------------------------------------------------


def _signers(
    info: dict[str, Any], accounts: _Accounts, position: int, single: str, multisig: str
) -> dict[str, Any]:
    """The authority at ``position``: one signer (``single``), or a multisig followed by its
    signers (``multisig`` and ``signers``), as Solana tells them apart."""
    keys = accounts.keys
    if len(keys) > position + 1:
        info[multisig] = keys[position]
        info["signers"] = list(keys[position + 1 :])
    elif len(keys) > position:
        info[single] = keys[position]
    return info


#: Token instructions whose data is the tag and, for some, one u64 amount: ``(type, account field
#: names, position of the authority, its field alone, its field as a multisig, has an amount)``.
_SIMPLE_TOKEN: Final[dict[int, tuple[str, tuple[str, ...], int, str, str, bool]]] = {
    3: ("transfer", ("source", "destination"), 2, "authority", "multisigAuthority", True),
    4: ("approve", ("source", "delegate"), 2, "owner", "multisigOwner", True),
    5: ("revoke", ("source",), 1, "owner", "multisigOwner", False),
    7: ("mintTo", ("mint", "account"), 2, "mintAuthority", "multisigMintAuthority", True),
    8: ("burn", ("account", "mint"), 2, "authority", "multisigAuthority", True),
    9: ("closeAccount", ("account", "destination"), 2, "owner", "multisigOwner", False),
    10: (
        "freezeAccount",
        ("account", "mint"),
        2,
        "freezeAuthority",
        "multisigFreezeAuthority",
        False,
    ),
    11: (
        "thawAccount",
        ("account", "mint"),
        2,
        "freezeAuthority",
        "multisigFreezeAuthority",
        False,
    ),
}
#: The ``*Checked`` instructions: an amount and the mint's decimals.
_CHECKED_TOKEN: Final[dict[int, tuple[str, tuple[str, ...], int, str, str]]] = {
    12: (
        "transferChecked",
        ("source", "mint", "destination"),
        3,
        "authority",
        "multisigAuthority",
    ),
    13: ("approveChecked", ("source", "mint", "delegate"), 3, "owner", "multisigOwner"),
    14: ("mintToChecked", ("mint", "account"), 2, "mintAuthority", "multisigMintAuthority"),
    15: ("burnChecked", ("account", "mint"), 2, "authority", "multisigAuthority"),
}


def _token(data: bytes, accounts: _Accounts) -> dict[str, Any]:
    read = _Reader(data)
    tag = read.uint(1)
    if tag in _SIMPLE_TOKEN:
        kind, names, authority, single, multisig, has_amount = _SIMPLE_TOKEN[tag]
        accounts.need(authority + 1)
        info: dict[str, Any] = {name: accounts[i] for i, name in enumerate(names)}
        if has_amount:
            info["amount"] = str(read.uint(8))
        return _parsed(kind, _signers(info, accounts, authority, single, multisig))
    if tag in _CHECKED_TOKEN:
        kind, names, authority, single, multisig = _CHECKED_TOKEN[tag]
        accounts.need(authority + 1)
        info = {name: accounts[i] for i, name in enumerate(names)}
        amount, decimals = read.uint(8), read.uint(1)
        info["tokenAmount"] = token_amount(amount, decimals)
        return _parsed(kind, _signers(info, accounts, authority, single, multisig))
    if tag in (0, 20):  # InitializeMint, InitializeMint2
        accounts.need(2 if tag == 0 else 1)
        decimals, mint_authority, freeze = read.uint(1), read.key(), read.optional_key()
        info = {"mint": accounts[0], "decimals": decimals, "mintAuthority": mint_authority}
        if tag == 0:
            info["rentSysvar"] = accounts[1]
        if freeze is not None:
            info["freezeAuthority"] = freeze
        return _parsed("initializeMint" if tag == 0 else "initializeMint2", info)
    if tag == 1:
        accounts.need(4)
        return _parsed(
            "initializeAccount",
            {
                "account": accounts[0],
                "mint": accounts[1],
                "owner": accounts[2],
                "rentSysvar": accounts[3],
            },
        )
    if tag in (16, 18):  # InitializeAccount2, InitializeAccount3: the owner in the data
        accounts.need(3 if tag == 16 else 2)
        info = {"account": accounts[0], "mint": accounts[1], "owner": read.key()}
        if tag == 16:
            info["rentSysvar"] = accounts[2]
        return _parsed("initializeAccount2" if tag == 16 else "initializeAccount3", info)
    if tag in (2, 19):  # InitializeMultisig, InitializeMultisig2
        first_signer = 2 if tag == 2 else 1
        accounts.need(first_signer + 1)
        info = {"multisig": accounts[0]}
        if tag == 2:
            info["rentSysvar"] = accounts[1]
        info["signers"] = list(accounts.keys[first_signer:])
        info["m"] = read.uint(1)
        return _parsed("initializeMultisig" if tag == 2 else "initializeMultisig2", info)
    if tag == 6:
        accounts.need(2)
        authority_type = read.uint(1)
        if authority_type >= len(AUTHORITY_TYPES):
            raise NotParsable
        owned = "account" if authority_type in (2, 3) else "mint"
        info = {
            owned: accounts[0],
            "authorityType": AUTHORITY_TYPES[authority_type],
            "newAuthority": read.optional_key(),
        }
        return _parsed(
            "setAuthority", _signers(info, accounts, 1, "authority", "multisigAuthority")
        )
    if tag in (17, 22):  # SyncNative, InitializeImmutableOwner
        accounts.need(1)
        return _parsed(
            "syncNative" if tag == 17 else "initializeImmutableOwner", {"account": accounts[0]}
        )
    if tag == 21:
        accounts.need(1)
        info = {"mint": accounts[0]}
        raw = read.rest()
        if len(raw) % 2:
            raise NotParsable
        numbers = [int.from_bytes(raw[i : i + 2], "little") for i in range(0, len(raw), 2)]
        if any(number >= len(EXTENSION_TYPES) for number in numbers):
            raise NotParsable
        if numbers:
            info["extensionTypes"] = [EXTENSION_TYPES[number] for number in numbers]
        return _parsed("getAccountDataSize", info)
    if tag == 23:
        accounts.need(1)
        return _parsed("amountToUiAmount", {"mint": accounts[0], "amount": str(read.uint(8))})
    if tag == 24:
        accounts.need(1)
        try:
            text = read.rest().decode()
        except UnicodeDecodeError:
            raise NotParsable from None
        return _parsed("uiAmountToAmount", {"mint": accounts[0], "uiAmount": text})
    raise NotParsable  # Token-2022's extension instructions are left partially decoded


# -- associated token account, memo --------------------------------------------------------------


def _associated_token(data: bytes, accounts: _Accounts) -> dict[str, Any]:
    if data in (b"", b"\0", b"\1"):
        accounts.need(6)
        names: tuple[str, ...] = (
            "source",
            "account",
            "wallet",
            "mint",
            "systemProgram",
            "tokenProgram",
        )
        kind = "createIdempotent" if data == b"\1" else "create"
        return _parsed(kind, {name: accounts[i] for i, name in enumerate(names)})
    if data == b"\2":
        accounts.need(7)
        names = (
            "nestedSource",
            "nestedMint",
            "destination",
            "nestedOwner",
            "ownerMint",
            "wallet",
            "tokenProgram",
        )
        return _parsed("recoverNested", {name: accounts[i] for i, name in enumerate(names)})
    raise NotParsable


# -- the upgradeable BPF loader (program deployment) ---------------------------------------------


def _optional(accounts: _Accounts, position: int) -> str | None:
    return accounts.keys[position] if len(accounts.keys) > position else None


#: The upgradeable loader's instructions with no data beyond their tag: ``(type, account field
#: names)``; fields past the accounts given are null (the optional ones).
_LOADER_PLAIN: Final[dict[int, tuple[str, tuple[str, ...], int]]] = {
    3: (
        "upgrade",
        (
            "programDataAccount",
            "programAccount",
            "bufferAccount",
            "spillAccount",
            "rentSysvar",
            "clockSysvar",
            "authority",
        ),
        7,
    ),
    4: ("setAuthority", ("account", "authority", "newAuthority"), 2),
    5: ("close", ("account", "recipient", "authority", "programAccount"), 3),
    7: ("setAuthorityChecked", ("account", "authority", "newAuthority"), 3),
}


def _upgradeable_loader(data: bytes, accounts: _Accounts) -> dict[str, Any]:
    read = _Reader(data)
    tag = read.uint(4)
    if tag == 0:
        accounts.need(1)
        info: dict[str, Any] = {"account": accounts[0]}
        if len(accounts.keys) > 1:
            info["authority"] = accounts[1]
        return _parsed("initializeBuffer", info)
    if tag == 1:
        accounts.need(2)
        offset = read.uint(4)
        chunk = read.take(read.uint(8))
        return _parsed(
            "write",
            {
                "offset": offset,
                "bytes": base64.b64encode(chunk).decode(),
                "account": accounts[0],
                "authority": accounts[1],
            },
        )
    if tag == 2:
        accounts.need(8)
        names: tuple[str, ...] = (
            "payerAccount",
            "programDataAccount",
            "programAccount",
            "bufferAccount",
            "rentSysvar",
            "clockSysvar",
            "systemProgram",
            "authority",
        )
        info = {"maxDataLen": read.uint(8)}
        info.update({name: accounts[i] for i, name in enumerate(names)})
        return _parsed("deployWithMaxDataLen", info)
    if tag in _LOADER_PLAIN:
        kind, names, needed = _LOADER_PLAIN[tag]
        accounts.need(needed)
        return _parsed(kind, {name: _optional(accounts, i) for i, name in enumerate(names)})
    if tag == 6:
        accounts.need(2)
        additional = read.uint(4)
        names = ("programDataAccount", "programAccount", "systemProgram", "payerAccount")
        info = {"additionalBytes": additional}
        info.update({name: _optional(accounts, i) for i, name in enumerate(names)})
        return _parsed("extendProgram", info)
    raise NotParsable


def memo_text(data: bytes) -> str:
    """A memo instruction's text (its data as UTF-8)."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise NotParsable from None


_PARSERS: Final[dict[str, tuple[str, Callable[[bytes, _Accounts], Any]]]] = {
    SYSTEM_PROGRAM: ("system", _system),
    ASSOCIATED_TOKEN_PROGRAM: ("spl-associated-token-account", _associated_token),
    UPGRADEABLE_LOADER: ("bpf-upgradeable-loader", _upgradeable_loader),
    **{program: ("spl-token", _token) for program in TOKEN_PROGRAMS},
    **{program: ("spl-memo", lambda data, _accounts: memo_text(data)) for program in MEMO_PROGRAMS},
}


def parse_instruction(
    program_id: str, accounts: Sequence[str], data: bytes, stack_height: int | None
) -> dict[str, Any]:
    """One instruction in ``jsonParsed``: parsed when Solana parses its program and it
    decodes, else partially decoded."""
    parser = _PARSERS.get(program_id)
    if parser is not None:
        program, parse = parser
        try:
            parsed = parse(data, _Accounts(accounts))
        except NotParsable:
            pass
        else:
            return {
                "program": program,
                "programId": program_id,
                "parsed": parsed,
                "stackHeight": stack_height,
            }
    return {
        "programId": program_id,
        "accounts": list(accounts),
        "data": b58encode(data),
        "stackHeight": stack_height,
    }
