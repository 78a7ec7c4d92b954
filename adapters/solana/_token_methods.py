"""The SPL Token reads of Solana's RPC (``getTokenAccountBalance``, ``getTokenAccountsByOwner``,
``getTokenAccountsByDelegate``, ``getTokenSupply``, ``getTokenLargestAccounts``), sans-io over a
:class:`~._ledger.Ledger`, for both token programs. Errors are Solana's own texts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from solders.account import Account
from solders.pubkey import Pubkey

from . import _token as token
from . import _wire as wire
from ._errors import invalid_param, invalid_params
from ._ledger import Ledger

#: Accounts ``getTokenLargestAccounts`` lists at most (Solana's).
LARGEST_ACCOUNTS: Final = 20

#: RPC method name -> :class:`TokenMethods` handler attribute.
TOKEN_HANDLERS: Final[dict[str, str]] = {
    "getTokenAccountBalance": "get_token_account_balance",
    "getTokenAccountsByOwner": "get_token_accounts_by_owner",
    "getTokenAccountsByDelegate": "get_token_accounts_by_delegate",
    "getTokenSupply": "get_token_supply",
    "getTokenLargestAccounts": "get_token_largest_accounts",
}

#: ``(config) -> options`` with ``commitment`` and ``minContextSlot`` checked.
ConfigCheck = Callable[[Any], Mapping[str, Any]]
#: ``value -> {"context": …, "value": value}``.
Wrap = Callable[[Any], dict[str, Any]]


class TokenMethods:
    """The token reads; ``config`` and ``wrap`` are :class:`~._methods.SolanaMethods`' own."""

    def __init__(self, ledger: Ledger, config: ConfigCheck, wrap: Wrap) -> None:
        self.ledger = ledger
        self._config = config
        self._wrap = wrap

    def decimals_of(self, mint: bytes) -> int | None:
        """The decimals of the mint at ``mint`` (None: no such mint)."""
        account = self.ledger.account(Pubkey.from_bytes(mint))
        if account is None or account.owner not in token.TOKEN_PROGRAMS:
            return None
        return token.mint_decimals(bytes(account.data))

    def _mint_decimals(self, mint: bytes) -> int:
        decimals = self.decimals_of(mint)
        if decimals is None:
            raise invalid_param("could not find mint")
        return decimals

    def _state(
        self, params: list[Any], is_kind: Callable[[bytes], bool], kind: str
    ) -> tuple[Pubkey, bytes]:
        """The account a ``[address, config?]`` call names and its data, checked to be a token
        program's ``kind`` (``Token mint``, ``Token account``)."""
        address, options = wire.positional(params, 1, 2)
        key = wire.pubkey(address)
        self._config(options)
        account = self.ledger.account(key)
        if account is None:
            raise invalid_param("could not find account")
        data = bytes(account.data)
        if account.owner not in token.TOKEN_PROGRAMS or not is_kind(data):
            raise invalid_param(f"not a {kind}")
        return key, data

    def _mint(self, params: list[Any]) -> tuple[Pubkey, bytes]:
        return self._state(params, token.is_mint, "Token mint")

    def get_token_account_balance(self, params: list[Any], now: float) -> Any:
        _, data = self._state(params, token.is_token_account, "Token account")
        decimals = self._mint_decimals(token.account_mint(data))
        return self._wrap(token.token_amount(token.account_amount(data), decimals))

    def get_token_supply(self, params: list[Any], now: float) -> Any:
        _, data = self._mint(params)
        decimals = token.mint_decimals(data)
        assert decimals is not None  # _mint checked it is a mint
        return self._wrap(token.token_amount(token.mint_supply(data), decimals))

    def get_token_largest_accounts(self, params: list[Any], now: float) -> Any:
        key, data = self._mint(params)
        decimals = token.mint_decimals(data)
        assert decimals is not None
        mint = bytes(key)
        holdings = [
            (token.account_amount(data), str(address))
            for address, data in (
                (address, bytes(held.data)) for address, held in self._token_accounts()
            )
            if token.account_mint(data) == mint
        ]
        # Largest first; equal amounts in address order, so the answer does not change from
        # call to call.
        holdings.sort(key=lambda item: (-item[0], item[1]))
        return self._wrap(
            [
                {"address": address, **token.token_amount(amount, decimals)}
                for amount, address in holdings[:LARGEST_ACCOUNTS]
            ]
        )

    def get_token_accounts_by_owner(self, params: list[Any], now: float) -> Any:
        return self._by_holder(params, token.account_owner)

    def get_token_accounts_by_delegate(self, params: list[Any], now: float) -> Any:
        return self._by_holder(params, token.account_delegate)

    def _by_holder(self, params: list[Any], holder_of: Callable[[bytes], bytes | None]) -> Any:
        """``[holder, {mint} | {programId}, config?]``: the token accounts whose owner (or
        delegate) is ``holder``, of one mint or of one token program."""
        address, selector, value = wire.positional(params, 2, 3)
        holder = bytes(wire.pubkey(address))
        programs, mint = self._selected(selector)
        options = self._config(value)
        encoding = wire.account_encoding(options, "binary")
        window = wire.data_slice(options)
        found = []
        for key, account in self._token_accounts(programs):
            data = bytes(account.data)
            if holder_of(data) != holder or (mint is not None and token.account_mint(data) != mint):
                continue
            encoded = wire.encode_account(account, encoding, window, self.decimals_of)
            found.append({"pubkey": str(key), "account": encoded})
        return self._wrap(found)

    def _selected(self, selector: Any) -> tuple[frozenset[Pubkey], bytes | None]:
        """The token programs and the mint (None: any) a ``{mint}`` / ``{programId}`` names."""
        if not isinstance(selector, dict) or len(selector) != 1:
            raise invalid_params('expected {"mint": <address>} or {"programId": <address>}')
        if "mint" in selector:
            mint = wire.pubkey(selector["mint"])
            account = self.ledger.account(mint)
            if account is None or account.owner not in token.TOKEN_PROGRAMS:
                raise invalid_param("could not find mint")
            return frozenset({account.owner}), bytes(mint)
        if "programId" in selector:
            program = wire.pubkey(selector["programId"])
            if program not in token.TOKEN_PROGRAMS:
                raise invalid_param("unrecognized Token program id")
            return frozenset({program}), None
        raise invalid_params('expected {"mint": <address>} or {"programId": <address>}')

    def _token_accounts(
        self, programs: frozenset[Pubkey] = token.TOKEN_PROGRAMS
    ) -> list[tuple[Pubkey, Account]]:
        """Every token account of ``programs``, in address order (as a validator's index)."""
        found = [
            (key, account)
            for program in programs
            for key, account in self.ledger.program_accounts(program)
            if token.is_token_account(bytes(account.data))
        ]
        found.sort(key=lambda item: bytes(item[0]))
        return found
