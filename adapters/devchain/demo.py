"""Demo traffic on the dev chain: the token's deployment and random transfers between dev accounts."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from .accounts import DevAccount
from .token import DECIMALS, init_code, transfer_calldata

SEED_AMOUNT: Final = 10_000 * 10**DECIMALS
#: The last dev accounts the demo traffic leaves alone (their nonces and ether balances stay as at
#: start, under ``make run`` too), so that a reader's examples on them hold as written.
SPARED: Final = 2
PRIORITY_FEE: Final = 10**9
TRANSFER_GAS: Final = 100_000
DEPLOY_GAS: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class TokenTransfer:
    """``sender`` sends ``amount`` tokens to ``to``."""

    sender: DevAccount
    to: bytes
    amount: int


class DemoTraffic:
    """Chooses random transfers between the dev accounts."""

    def __init__(self, accounts: Sequence[DevAccount], *, seed: int | None = None) -> None:
        if len(accounts) < 2:
            raise ValueError("demo traffic needs at least two accounts")
        self._accounts = tuple(accounts[: max(2, len(accounts) - SPARED)])
        self._random = random.Random(seed)

    def plan(self, count: int) -> list[TokenTransfer]:
        """``count`` transfers of 1 to 100 tokens, each between two distinct accounts."""
        transfers = []
        for _ in range(count):
            sender, receiver = self._random.sample(self._accounts, 2)
            amount = self._random.randint(1, 100) * 10**DECIMALS
            transfers.append(TokenTransfer(sender, receiver.address, amount))
        return transfers


def seed_plan(accounts: Sequence[DevAccount]) -> list[TokenTransfer]:
    """The first account hands :data:`SEED_AMOUNT` tokens to each of the others."""
    return [TokenTransfer(accounts[0], a.address, SEED_AMOUNT) for a in accounts[1:]]


def sign_transaction(
    vm_class: Any,
    account: DevAccount,
    *,
    chain_id: int,
    nonce: int,
    to: bytes,
    data: bytes,
    gas: int,
    base_fee: int,
) -> Any:
    """A signed EIP-1559 transaction, decoded by ``vm_class`` so that blocks accept it."""
    builder = vm_class.get_transaction_builder()
    unsigned = builder.new_unsigned_dynamic_fee_transaction(
        chain_id=chain_id,
        nonce=nonce,
        max_priority_fee_per_gas=PRIORITY_FEE,
        max_fee_per_gas=2 * base_fee + PRIORITY_FEE,
        gas=gas,
        to=to,
        value=0,
        data=data,
        access_list=(),
    )
    return builder.decode(unsigned.as_signed_transaction(account.key).encode())


def sign_transfer(
    vm_class: Any,
    transfer: TokenTransfer,
    token: bytes,
    *,
    chain_id: int,
    nonce: int,
    base_fee: int,
) -> Any:
    return sign_transaction(
        vm_class,
        transfer.sender,
        chain_id=chain_id,
        nonce=nonce,
        to=token,
        data=transfer_calldata(transfer.to, transfer.amount),
        gas=TRANSFER_GAS,
        base_fee=base_fee,
    )


def sign_deployment(
    vm_class: Any, account: DevAccount, *, chain_id: int, nonce: int, base_fee: int
) -> Any:
    return sign_transaction(
        vm_class,
        account,
        chain_id=chain_id,
        nonce=nonce,
        to=b"",
        data=init_code(),
        gas=DEPLOY_GAS,
        base_fee=base_fee,
    )
