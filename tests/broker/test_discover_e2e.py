"""rpc.discover on a live broker: a valid OpenRPC document listing exactly what is answered."""

from __future__ import annotations

import copy
import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import trio
import trio_websocket
from referencing import Registry
from referencing.jsonschema import DRAFT7

from adapters.evm.openrpc import ACCOUNT_METHODS, DEV_METHODS, NODE_METHODS
from broker.rpc.discover import ADMIN_METHODS, BROKER_METHODS, NOTIFICATIONS
from tests.support.inprocess import RunningBroker

INTEROP = Path(__file__).resolve().parents[1] / "interop"


@cache
def validator() -> jsonschema.Draft7Validator:
    """The OpenRPC meta-schema as npm @open-rpc/meta-schema ships it (tests/interop installs it);
    the JSON Schema meta-schema it refers to is draft 7's, which jsonschema ships."""
    script = 'const m = require("@open-rpc/meta-schema"); process.stdout.write(JSON.stringify(m.default || m))'
    meta = json.loads(
        subprocess.run(
            ["node", "-e", script], cwd=INTEROP, capture_output=True, text=True, check=True
        ).stdout
    )
    draft7 = DRAFT7.create_resource(jsonschema.Draft7Validator.META_SCHEMA)
    registry: Registry[Any] = Registry().with_resource("https://meta.json-schema.tools", draft7)
    return jsonschema.Draft7Validator(meta, registry=registry)


def errors_of(document: Any) -> list[str]:
    return [f"{list(e.path)}: {e.message}" for e in validator().iter_errors(document)]


async def discover_over_ws(node: RunningBroker) -> Any:
    async with trio_websocket.open_websocket_url(node.ws_url()) as ws:
        await ws.send_message(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "rpc.discover"}))
        return json.loads(await ws.get_message())["result"]


async def test_the_document_is_valid_openrpc_over_both_transports(node: RunningBroker) -> None:
    with trio.fail_after(60):
        over_http = (await node.rpc("rpc.discover"))["result"]
        over_ws = await discover_over_ws(node)
    assert over_http == over_ws
    assert over_http["openrpc"].startswith("1.")
    assert errors_of(over_http) == []
    broken = copy.deepcopy(over_http)
    del broken["methods"][0]["params"]  # the validator does look: a method needs params
    assert errors_of(broken) != []


async def test_every_method_answered_is_listed_and_nothing_else(node: RunningBroker) -> None:
    with trio.fail_after(120):
        document = (await node.rpc("rpc.discover"))["result"]
        methods = document["methods"]
        listed = {m["name"] for m in methods if "servers" not in m and "x-notification" not in m}
        candidates = {
            *listed,
            *BROKER_METHODS,
            *NODE_METHODS,
            *DEV_METHODS,
            *ACCOUNT_METHODS,
            *ADMIN_METHODS,
            *NOTIFICATIONS,
            "eth_sign",
            "eth_sendTransaction",
            "debug_traceTransaction",
            "nonsense",
        }
        answered = set()
        for name in sorted(candidates):
            reply = await node.rpc(name, [])
            error = reply.get("error") or {}
            if not (error.get("code") == -32601 and "does not exist" in error.get("message", "")):
                answered.add(name)
    assert answered == listed
    assert [m["name"] for m in methods if m.get("x-undescribed")] == []
    notifications = {m["name"] for m in methods if m.get("x-notification")}
    assert notifications == {"eth_subscription", "wallet_notify", "wallet_sessionChanged"}
    operator = {
        m["name"]
        for m in methods
        if m.get("servers") == [{"name": "operator API", "url": "/admin"}]
    }
    admin = node.broker.admin
    assert admin is not None
    assert operator == set(admin._dispatcher._handlers)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["eth_getLogs", "wallet_createSession", "eth_subscribe"])
async def test_methods_carry_params_results_and_error_codes(node: RunningBroker, name: str) -> None:
    with trio.fail_after(30):
        document = (await node.rpc("rpc.discover"))["result"]
    method = next(m for m in document["methods"] if m["name"] == name)
    assert method["params"]
    assert "result" in method
    assert method["errors"]
    for descriptor in (*method["params"], method["result"]):
        for ref in _refs(descriptor["schema"]):
            assert ref.removeprefix("#/components/schemas/") in document["components"]["schemas"]


def _refs(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        own = [schema["$ref"]] if "$ref" in schema else []
        return own + [r for value in schema.values() for r in _refs(value)]
    if isinstance(schema, list):
        return [r for value in schema for r in _refs(value)]
    return []
