"""The signing gateway: account methods reach the account adapter only through the approval policy.

A call to an account method (``personal_sign``, ``eth_signTransaction``, ...) that the chain
adapter does not answer comes here, as the dispatcher's fallback. The gateway decides which
accounts the caller may sign with (a session scope's, inside ``wallet_invokeMethod``; the dev
network's own, for a direct call where direct signing is allowed), has the adapter validate and
describe the request, waits for the approval policy's yes, and lets the adapter sign. Keys never
leave the adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from broker.rpc.dispatch import CallContext, Dispatcher
from broker.rpc.networks import Networks
from broker.sessions import Identity
from broker.sessions.approvals import ApprovalPolicy
from schemas.errors import InvalidParams, MethodNotFound, Unauthorized

#: An account method's params: positional (EVM's) or one object (Solana's account methods); the
#: adapter reads them further.
_account_args: Final = msgspec.json.Decoder(list[Any] | dict[str, Any])


class SigningGateway:
    """Account methods, through the approval policy: the dispatcher's fallback for them
    (:meth:`call` for the methods :meth:`methods` names; wired by :mod:`broker.compose`)."""

    def __init__(self, networks: Networks, dispatcher: Dispatcher, policy: ApprovalPolicy) -> None:
        """``dispatcher`` reads the chain for the adapter (nonces, fees) as the caller would."""
        self._networks = networks
        self._dispatcher = dispatcher
        self.policy = policy

    def methods(self, chain: str) -> frozenset[str]:
        """The account methods served on ``chain``."""
        adapter = self._networks.accounts_for(chain)
        return frozenset() if adapter is None else adapter.methods(chain)

    async def call(self, ctx: CallContext, chain: str, method: str, params: msgspec.Raw) -> Any:
        """Carry out one account method once the policy approves (raises ``RpcError``)."""
        adapter = self._networks.accounts_for(chain)
        if adapter is None or method not in adapter.methods(chain):
            raise MethodNotFound(method)
        if ctx.accounts is not None:
            permitted: Sequence[str] = ctx.accounts
        elif ctx.network.direct_signing and ctx.network.chain == chain:
            permitted = adapter.accounts(chain)
        else:
            raise Unauthorized()
        try:
            args = _account_args.decode(params)
        except msgspec.ValidationError:
            raise InvalidParams("non-array args") from None
        request = adapter.prepare(chain, method, args, permitted)
        await self.policy.approve_signature(Identity.of(ctx.api_key, ctx.origin), request)

        async def read(read_method: str, read_params: list[Any]) -> Any:
            result = await self._dispatcher.call_chain(
                ctx, chain, read_method, msgspec.Raw(msgspec.json.encode(read_params))
            )
            return msgspec.json.decode(result) if isinstance(result, msgspec.Raw) else result

        return await adapter.execute(request, read)
