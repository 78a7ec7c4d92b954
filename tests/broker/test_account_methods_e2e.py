"""Account methods through sessions and the approval policy, recovered with eth-account."""

from typing import Any

import trio
from eth_account import Account
from eth_account.messages import encode_defunct

from broker.compose import ServeOptions
from tests.support.inprocess import RunningBroker, dapp, running_broker, waiting_approval
from tests.support.user_operations import unsigned_user_op

DEV = "eip155:1337"
FIRST = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
SECOND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
SIGNING = ["personal_sign", "eth_signTransaction", "eth_signTypedData_v4"]


def invoke(method: str, params: Any) -> dict[str, Any]:
    return {"scope": DEV, "request": {"method": method, "params": params}}


async def test_personal_sign_in_a_session_recovers_to_the_session_account(
    node: RunningBroker,
) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as conn:
            await conn.result(
                "wallet_createSession",
                {
                    "optionalScopes": {
                        DEV: {
                            "methods": SIGNING,
                            "notifications": [],
                            "accounts": [f"{DEV}:{SECOND}"],
                        }
                    }
                },
            )
            message = b"hello scopecast".hex()
            reply = await conn.result(
                "wallet_invokeMethod", invoke("personal_sign", ["0x" + message, SECOND])
            )
            signature = reply["result"]["result"]
            assert len(bytes.fromhex(signature[2:])) == 65
            signer = Account.recover_message(
                encode_defunct(text="hello scopecast"), signature=signature
            )
            assert signer.lower() == SECOND
            # an account outside the session is not authorised
            denied = await conn.call(
                "wallet_invokeMethod", invoke("personal_sign", ["0x" + message, FIRST])
            )
            assert denied["error"]["code"] == 4100
            malformed = await conn.call("wallet_invokeMethod", invoke("personal_sign", []))
            assert malformed["error"]["code"] == -32602


async def test_signed_transaction_from_a_session_is_mined(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as conn:
            await conn.result(
                "wallet_createSession",
                {
                    "optionalScopes": {
                        DEV: {
                            "methods": [
                                *SIGNING,
                                "eth_sendRawTransaction",
                                "eth_getTransactionReceipt",
                            ],
                            "notifications": [],
                        }
                    }
                },
            )
            tx = {
                "type": "0x2",
                "from": FIRST,
                "to": SECOND,
                "value": "0x1",
                "data": "0x",
                "nonce": (await node.rpc("eth_getTransactionCount", [FIRST, "latest"]))["result"],
                "gasLimit": "0x5208",
                "maxFeePerGas": "0x77359400",
                "maxPriorityFeePerGas": "0x1",
                "chainId": "0x539",
            }
            signed = (
                await conn.result("wallet_invokeMethod", invoke("eth_signTransaction", [tx]))
            )["result"]["result"]
            assert set(signed) >= {"v", "r", "s"}
            assert Account.recover_transaction(signed["raw"]).lower() == FIRST
            sent = await conn.result(
                "wallet_invokeMethod", invoke("eth_sendRawTransaction", [signed["raw"]])
            )
            receipt = await conn.result(
                "wallet_invokeMethod",
                invoke("eth_getTransactionReceipt", [sent["result"]["result"]]),
            )
            assert receipt["result"]["result"]["status"] == "0x1"
            wrong_chain = await conn.call(
                "wallet_invokeMethod", invoke("eth_signTransaction", [{**tx, "chainId": "0x1"}])
            )
            assert wrong_chain["error"]["code"] == 4100


async def test_manual_approval_shows_what_will_be_signed() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(approval="manual")) as node,
            dapp(node.ws_url()) as conn,
        ):
            replies: list[Any] = []

            async def call(method: str, params: Any) -> None:
                replies.append(await conn.call(method, params))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    call,
                    "wallet_createSession",
                    {"optionalScopes": {DEV: {"methods": SIGNING, "notifications": []}}},
                )
                await node.admin("admin_approve", {"id": (await waiting_approval(node))["id"]})
            assert replies.pop()["result"]["sessionScopes"][DEV]["accounts"] == [f"{DEV}:{FIRST}"]

            message = "0x" + b"pay 5 tokens".hex()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    call, "wallet_invokeMethod", invoke("personal_sign", [message, FIRST])
                )
                approval = await waiting_approval(node)
                assert approval["kind"] == "signature"
                assert "pay 5 tokens" in str(approval["request"])
                await node.admin("admin_reject", {"id": approval["id"]})
            assert replies.pop()["error"]["code"] == 4001

            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    call, "wallet_invokeMethod", invoke("personal_sign", [message, FIRST])
                )
                await node.admin("admin_approve", {"id": (await waiting_approval(node))["id"]})
            signature = replies.pop()["result"]["result"]["result"]
            assert (
                Account.recover_message(
                    encode_defunct(text="pay 5 tokens"), signature=signature
                ).lower()
                == FIRST
            )


async def test_direct_signing_only_on_the_dev_network(node: RunningBroker) -> None:
    reply = await node.rpc("personal_sign", ["0x68656c6c6f", FIRST])
    assert (
        Account.recover_message(encode_defunct(text="hello"), signature=reply["result"]).lower()
        == FIRST
    )
    for params in ("0x68656c6c6f", 17, None):  # neither positional nor one object
        refused = await node.rpc("personal_sign", params)
        assert refused["error"] == {"code": -32602, "message": "non-array args"}, params


def user_op_hash(op: dict[str, str], entry_point: str, chain_id: int) -> bytes:
    """EntryPoint v0.6's getUserOpHash, computed here independently of the adapter."""
    from eth_abi import encode
    from eth_hash.auto import keccak

    def b(value: str) -> bytes:
        return bytes.fromhex(value[2:])

    def n(value: str) -> int:
        return int(value, 16)

    packed = encode(
        [
            "address",
            "uint256",
            "bytes32",
            "bytes32",
            "uint256",
            "uint256",
            "uint256",
            "uint256",
            "uint256",
            "bytes32",
        ],
        [
            op["sender"],
            n(op["nonce"]),
            keccak(b(op["initCode"])),
            keccak(b(op["callData"])),
            n(op["callGasLimit"]),
            n(op["verificationGasLimit"]),
            n(op["preVerificationGas"]),
            n(op["maxFeePerGas"]),
            n(op["maxPriorityFeePerGas"]),
            keccak(b(op["paymasterAndData"])),
        ],
    )
    return bytes(
        keccak(encode(["bytes32", "address", "uint256"], [keccak(packed), entry_point, chain_id]))
    )


async def test_user_operation_prepare_patch_sign_in_a_session(node: RunningBroker) -> None:
    entry_point = "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789"
    methods = ["eth_prepareUserOperation", "eth_patchUserOperation", "eth_signUserOperation"]
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as conn:
            await conn.result(
                "wallet_createSession",
                {"optionalScopes": {DEV: {"methods": methods, "notifications": []}}},
            )
            intents = [{"to": SECOND, "value": "0x1", "data": "0x"}]
            details = (
                await conn.result(
                    "wallet_invokeMethod", invoke("eth_prepareUserOperation", intents)
                )
            )["result"]["result"]
            assert details["nonce"] == "0x0"
            assert details["initCode"].startswith("0x9406cc6185a346906296840746125a0e44976454")
            assert details["callData"].startswith("0xb61d27f6")  # execute(address,uint256,bytes)
            assert len(bytes.fromhex(details["dummySignature"][2:])) == 65
            op = unsigned_user_op(details)
            patch = (
                await conn.result("wallet_invokeMethod", invoke("eth_patchUserOperation", [op]))
            )["result"]["result"]
            op["paymasterAndData"] = patch["paymasterAndData"]
            signed = (
                await conn.result(
                    "wallet_invokeMethod", invoke("eth_signUserOperation", [op, entry_point])
                )
            )["result"]["result"]
            digest = user_op_hash(op, entry_point, 1337)
            signer = Account.recover_message(encode_defunct(primitive=digest), signature=signed)
            assert signer.lower() == FIRST
