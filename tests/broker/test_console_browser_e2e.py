"""The operator console in a real browser (headless Chromium), against a real ``scopecast serve
--approval manual`` and real dapps on its WebSocket.

Elements are found as a screen reader finds them: by role and accessible name. Screenshots of the
main states go to ``$SCOPECAST_SCREENSHOTS`` (or a pytest temp folder, printed).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from eth_account import Account
from eth_account.messages import encode_defunct
from playwright.sync_api import Page, expect

from adapters.base import SigningRequest
from broker.compose import ServeOptions
from broker.config import Config, ServerConfig
from broker.sessions import Identity
from tests.support.browser import BrowserThread, open_browser
from tests.support.inprocess import (
    Dapp,
    RunningBroker,
    dapp,
    running_broker,
    waiting_approval,
)
from tests.support.processes import ScopecastProcess, start_scopecast
from tests.support.user_operations import unsigned_user_op

DEV = "eip155:1337"
FIRST = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
SECOND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
METHODS = ["eth_blockNumber", "eth_getBalance", "personal_sign"]
REQUEST = {"optionalScopes": {DEV: {"methods": METHODS, "notifications": ["eth_subscription"]}}}
ORIGIN = "https://dapp.example"
# What a hostile dapp sends, hoping the console renders it as HTML.
HOSTILE = "<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>"

expect.set_options(timeout=15_000)


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("SCOPECAST_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("console-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"console screenshots: {folder}")
    return folder


@asynccontextmanager
async def manual_server() -> AsyncIterator[ScopecastProcess]:
    async with trio.open_nursery() as nursery:
        node = await start_scopecast(nursery, "--approval", "manual", "--block-time", "0")
        try:
            yield node
        finally:
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def browser_and_broker_in_process() -> AsyncIterator[tuple[BrowserThread, RunningBroker]]:
    """Chromium and a broker in the test's own process (``--approval manual``), for the tests that
    reach inside it (its store, its policy)."""
    config = Config(server=ServerConfig(approval="manual"))
    async with (
        open_browser() as browser,
        running_broker(ServeOptions(block_time=0), config=config) as node,
    ):
        yield browser, node


def sign_in(page: Page, url: str, token: str) -> None:
    page.goto(url)
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Sign in").click()


async def signed_in(browser: BrowserThread, base_url: str, *, width: int = 1000) -> Page:
    page: Page = await browser.run(browser.new_page, width)
    await browser.run(sign_in, page, f"{base_url}/console", "dev")
    await browser.run(
        lambda: expect(page.get_by_role("heading", name="Live sessions")).to_be_visible()
    )
    return page


async def while_asking(
    ask: Callable[[], Awaitable[Any]], operate: Callable[[], Awaitable[None]]
) -> Any:
    """Run ``ask`` (a dapp call waiting for the operator) while ``operate`` answers it."""
    replies: list[Any] = []

    async def asking() -> None:
        replies.append(await ask())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(asking)
        await operate()
    return replies[0]


async def approve_as_asked(browser: BrowserThread, page: Page, a: Dapp) -> None:
    """The dapp asks for a session; the operator approves it unchanged."""

    def approve() -> None:
        card = page.get_by_role("article", name="Session request")
        card.get_by_role("button", name="Approve").click()
        expect(card).to_have_count(0)

    reply = await while_asking(
        lambda: a.call("wallet_createSession", REQUEST), lambda: browser.run(approve)
    )
    assert "result" in reply, reply


async def test_the_operator_narrows_a_session_and_the_dapp_gets_the_narrowed_one(
    screenshots: Path,
) -> None:
    with trio.fail_after(120):
        async with open_browser() as browser, manual_server() as node:
            page = await signed_in(browser, node.base_url)
            await browser.run(
                lambda: expect(
                    page.get_by_text("Signed in with the public dev token")
                ).to_be_visible()
            )

            def narrow_and_approve() -> None:
                card = page.get_by_role("article", name="Session request #1")
                expect(card).to_be_visible()
                expect(card.get_by_text(ORIGIN)).to_be_visible()
                expect(card.get_by_text("Times out in")).to_be_visible()
                chain = card.get_by_role("group", name=DEV)
                methods = chain.get_by_role("group", name="Methods")
                methods.get_by_role("checkbox", name="eth_getBalance").uncheck()
                chain.get_by_role("group", name="Notifications").get_by_role(
                    "checkbox", name="eth_subscription"
                ).uncheck()
                accounts = chain.get_by_role("group", name="Accounts")
                accounts.get_by_role("checkbox", name=FIRST).uncheck()
                accounts.get_by_role("checkbox", name=SECOND).check()
                page.screenshot(path=screenshots / "1-session-request.png", full_page=True)
                card.get_by_role("button", name="Approve").click()
                expect(card).to_have_count(0)

            async with dapp(node.ws_url(), origin=ORIGIN) as a:
                reply = await while_asking(
                    lambda: a.call("wallet_createSession", REQUEST),
                    lambda: browser.run(narrow_and_approve),
                )
                assert reply["result"]["sessionScopes"][DEV] == {
                    "methods": ["eth_blockNumber", "personal_sign"],
                    "notifications": [],
                    "accounts": [f"{DEV}:{SECOND}"],
                }

                def session_is_listed() -> None:
                    card = page.get_by_role("article", name=ORIGIN)
                    expect(card).to_be_visible()
                    expect(card.get_by_text(f"{DEV}:{SECOND}")).to_be_visible()
                    expect(
                        page.get_by_role("button", name=f"Revoke session of {ORIGIN}")
                    ).to_be_visible()

                await browser.run(session_is_listed)

                def approve_signature() -> None:
                    card = page.get_by_role("article", name="personal_sign request #2")
                    expect(card.get_by_text("Welcome to dapp.example")).to_be_visible()
                    page.screenshot(path=screenshots / "0-console.png")
                    card.get_by_role("button", name="Approve").click()
                    expect(card).to_have_count(0)

                sign = {"method": "personal_sign", "params": ["Welcome to dapp.example", SECOND]}
                signed = await while_asking(
                    lambda: a.call("wallet_invokeMethod", {"scope": DEV, "request": sign}),
                    lambda: browser.run(approve_signature),
                )
                signature = signed["result"]["result"]["result"]
                message = encode_defunct(text="Welcome to dapp.example")
                assert Account.recover_message(message, signature=signature).lower() == SECOND


async def test_a_signature_shows_its_text_reject_gives_4001_and_dapp_html_stays_text(
    screenshots: Path,
) -> None:
    hostile_origin = f"https://x.example/{HOSTILE}"
    message = f"Sign in to dapp.example\nnonce 42\n{HOSTILE}"
    with trio.fail_after(120):
        async with open_browser() as browser, manual_server() as node:
            page = await signed_in(browser, node.base_url, width=400)
            async with dapp(node.ws_url(), origin=hostile_origin) as a:
                await approve_as_asked(browser, page, a)

                def rendered_as_text() -> None:
                    card = page.get_by_role("article", name="personal_sign request")
                    expect(card).to_be_visible()
                    expect(card.get_by_role("heading", name="Message")).to_be_visible()
                    # The decoded text, exactly, as text: the markup shows, nothing of it runs.
                    expect(card.get_by_text("nonce 42")).to_have_text(message)
                    expect(card.get_by_text(hostile_origin, exact=True)).to_be_visible()
                    assert page.evaluate("() => window.__pwned") is None
                    assert page.locator("img, script:not([src])").count() == 0
                    # Readable at 400 px: nothing wider than the window.
                    assert page.evaluate("() => document.documentElement.scrollWidth") <= 400
                    page.screenshot(
                        path=screenshots / "2-signature-request-400px.png", full_page=True
                    )
                    card.get_by_role("button", name="Reject").click()
                    expect(card).to_have_count(0)
                    assert page.evaluate("() => window.__pwned") is None

                sign = {"method": "personal_sign", "params": ["0x" + message.encode().hex(), FIRST]}
                reply = await while_asking(
                    lambda: a.call("wallet_invokeMethod", {"scope": DEV, "request": sign}),
                    lambda: browser.run(rendered_as_text),
                )
                assert reply["error"] == {"code": 4001, "message": "User rejected the request."}


async def test_revoke_reaches_every_connection_of_the_dapp(screenshots: Path) -> None:
    other = "https://other.example"
    with trio.fail_after(120):
        async with open_browser() as browser, manual_server() as node:
            page = await signed_in(browser, node.base_url)
            async with (
                dapp(node.ws_url(), origin=ORIGIN) as a,
                dapp(node.ws_url(), origin=ORIGIN) as a2,
                dapp(node.ws_url(), origin=other) as b,
            ):
                await approve_as_asked(browser, page, a)
                await approve_as_asked(browser, page, b)
                assert (await a2.notification())["method"] == "wallet_sessionChanged"

                def listed_with_two_connections() -> None:
                    card = page.get_by_role("article", name=ORIGIN)
                    expect(card.get_by_role("definition").nth(2)).to_have_text("2")
                    page.screenshot(path=screenshots / "3-live-sessions.png", full_page=True)
                    page.get_by_role("button", name=f"Revoke session of {ORIGIN}").click()
                    expect(card).to_have_count(0)
                    page.get_by_role("button", name=f"Revoke {DEV} of {other}").click()
                    expect(page.get_by_role("article", name=other)).to_have_count(0)
                    expect(page.get_by_text("No live session.")).to_be_visible()

                await browser.run(listed_with_two_connections)
                ended = {"sessionScopes": {}}
                for connection in (a, a2, b):
                    changed = await connection.notification()
                    assert changed["method"] == "wallet_sessionChanged"
                    assert changed["params"] == ended


async def test_a_wrong_token_shows_the_error_and_no_data(screenshots: Path) -> None:
    with trio.fail_after(120):
        async with open_browser() as browser, manual_server() as node:
            page = await signed_in(browser, node.base_url)
            async with dapp(node.ws_url(), origin=ORIGIN) as a:
                await approve_as_asked(browser, page, a)  # a session exists: there is data to leak
                stranger: Page = await browser.run(browser.new_page, 1000)

                def refused() -> None:
                    sign_in(stranger, f"{node.base_url}/console", "wrong")
                    expect(stranger.get_by_role("alert")).to_have_text(
                        "Wrong admin token: the server did not accept it."
                    )
                    expect(stranger.get_by_role("article")).to_have_count(0)
                    expect(stranger.get_by_role("heading", name="Live sessions")).to_be_hidden()
                    expect(stranger.get_by_text(ORIGIN)).to_have_count(0)
                    expect(stranger.get_by_label("Admin token")).to_be_visible()
                    assert stranger.evaluate("() => sessionStorage.length") == 0
                    assert "wrong" not in stranger.url
                    stranger.screenshot(path=screenshots / "4-wrong-token.png", full_page=True)

                await browser.run(refused)


def _stats(page: Page) -> dict[str, Any]:
    stats: dict[str, Any] = page.evaluate(
        """() => ({
            renders: performance.getEntriesByName('console-render').map(e => e.duration),
            articles: document.querySelectorAll('article').length,
            elements: document.getElementsByTagName('*').length,
        })"""
    )
    return stats


async def test_a_thousand_sessions_and_a_hundred_requests_render_what_is_visible(
    screenshots: Path,
) -> None:
    """In-process server (the sessions are written to its store directly, the requests parked with
    its policy); the figures go to console-figures.txt beside the screenshots."""
    with trio.fail_after(180):
        async with (
            browser_and_broker_in_process() as (browser, node),
            trio.open_nursery() as waiting,
        ):
            sessions = node.broker.sessions
            assert sessions is not None
            async with dapp(node.ws_url(), origin="https://template.example") as a:
                asked = await while_asking(
                    lambda: a.call("wallet_createSession", REQUEST),
                    lambda: _approve_first(node),
                )
                assert "result" in asked
            template = await sessions.store.get(Identity.of("dev", "https://template.example"))
            assert template is not None
            for i in range(999):
                identity = Identity.of("dev", f"https://dapp-{i:04}.example")
                copy = msgspec.structs.replace(template, identity=identity)
                await sessions.store.modify(identity, lambda _current, s=copy: (s, None))

            def park(i: int) -> None:
                request = SigningRequest(
                    DEV,
                    "personal_sign",
                    FIRST,
                    {"account": FIRST, "message": f"request {i}", "encoding": "utf-8"},
                    None,
                )
                identity = Identity.of("dev", f"https://asker-{i:03}.example")
                waiting.start_soon(sessions.policy.approve_signature, identity, request)

            for i in range(100):
                park(i)
            await trio.testing.wait_all_tasks_blocked()
            assert len(sessions.policy.pending()) == 100

            page: Page = await browser.run(browser.new_page, 1000)

            def first_render() -> float:
                page.goto(f"{node.base}/console")
                page.get_by_label("Admin token").fill("dev")
                started = time.perf_counter()
                page.get_by_role("button", name="Sign in").click()
                expect(page.get_by_role("heading", name="Waiting requests (100)")).to_be_visible()
                expect(page.get_by_role("heading", name="Live sessions (1000)")).to_be_visible()
                expect(
                    page.get_by_role("article", name="personal_sign request #101")
                ).to_be_visible()
                return time.perf_counter() - started

            shown = await browser.run(first_render)
            before = await browser.run(_stats, page)
            # Only what is visible is built: a page of requests and a page of sessions.
            assert before["articles"] == 20 + 50

            started = time.perf_counter()
            park(100)
            await browser.run(
                lambda: expect(
                    page.get_by_role("article", name="personal_sign request #102")
                ).to_be_visible()
            )
            new_request = time.perf_counter() - started

            def scroll_for_more() -> None:
                page.get_by_role("button", name="Show more sessions").scroll_into_view_if_needed()
                expect(page.get_by_role("article")).to_have_count(20 + 100)

            await browser.run(scroll_for_more)
            after = await browser.run(_stats, page)
            await browser.run(lambda: page.screenshot(path=screenshots / "5-thousand-sessions.png"))
            figures = (
                f"1,000 sessions and 100 waiting requests (Chromium {await browser.run(browser.version)}):\n"
                f"  sign-in to both lists shown: {shown * 1000:.0f} ms\n"
                f"  longest render: {max(after['renders']):.1f} ms over {len(after['renders'])} renders\n"
                f"  a new request shown after it started waiting: {new_request * 1000:.0f} ms\n"
                f"  elements in the page: {before['elements']} (articles {before['articles']}),"
                f" after one scroll {after['elements']}\n"
            )
            (screenshots / "console-figures.txt").write_text(figures)
            print(figures)
            assert new_request < 1.0, figures
            assert max(after["renders"]) < 250, figures
            waiting.cancel_scope.cancel()


async def _approve_first(node: RunningBroker) -> None:
    approval = await waiting_approval(node)
    await node.admin("admin_approve", {"id": approval["id"]})


TYPED_DATA = {
    "types": {
        "EIP712Domain": [
            {"name": "name", "type": "string"},
            {"name": "chainId", "type": "uint256"},
        ],
        "Order": [
            {"name": "buyer", "type": "address"},
            {"name": "amount", "type": "uint256"},
            {"name": "note", "type": "string"},
        ],
    },
    "primaryType": "Order",
    "domain": {"name": "Shop", "chainId": 1337},
    "message": {"buyer": SECOND, "amount": "42", "note": HOSTILE},
}
ENTRY_POINT = "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789"
ONE_AND_A_HALF_ETH = hex(15 * 10**17)


def invoke(method: str, params: Any) -> dict[str, Any]:
    return {"scope": DEV, "request": {"method": method, "params": params}}


async def test_typed_data_a_transaction_and_a_user_operation_are_readable(
    screenshots: Path,
) -> None:
    """In-process server: the user operation is prepared through the operator API first."""
    methods = ["eth_signTypedData_v4", "eth_signTransaction", "eth_prepareUserOperation"]
    methods.append("eth_signUserOperation")
    scopes = {"optionalScopes": {DEV: {"methods": methods, "notifications": []}}}
    with trio.fail_after(120):
        async with (
            browser_and_broker_in_process() as (browser, node),
            dapp(node.ws_url(), origin=ORIGIN) as a,
        ):
            assert "result" in await while_asking(
                lambda: a.call("wallet_createSession", scopes), lambda: _approve_first(node)
            )
            intents = [{"to": SECOND, "value": "0x0", "data": "0xa9059cbb"}]
            prepared = await while_asking(
                lambda: a.call("wallet_invokeMethod", invoke("eth_prepareUserOperation", intents)),
                lambda: _approve_first(node),
            )
            details = prepared["result"]["result"]["result"]
            op = unsigned_user_op(details)
            transaction = {
                "type": "0x2",
                "from": FIRST,
                "to": SECOND,
                "value": ONE_AND_A_HALF_ETH,
                "data": "0x",
                "nonce": "0x0",
                "gasLimit": "0x5208",
                "maxFeePerGas": "0x77359400",
                "maxPriorityFeePerGas": "0x1",
                "chainId": "0x539",
            }
            page = await signed_in(browser, node.base)

            def readable() -> None:
                typed = page.get_by_role("article", name="eth_signTypedData_v4 request")
                expect(typed.get_by_role("heading", name="Domain")).to_be_visible()
                expect(typed.get_by_role("heading", name="Message (Order)")).to_be_visible()
                expect(typed.get_by_role("listitem").filter(has_text="name:")).to_have_text(
                    'name: "Shop"'
                )
                expect(typed.get_by_text(f'"{SECOND}"')).to_be_visible()
                expect(typed.get_by_text(HOSTILE)).to_be_visible()  # as text
                signed_tx = page.get_by_role("article", name="eth_signTransaction request")
                expect(signed_tx.get_by_text("1.5 ETH")).to_be_visible()
                expect(signed_tx.get_by_text(SECOND, exact=True)).to_be_visible()
                user_op = page.get_by_role("article", name="eth_signUserOperation request")
                expect(user_op.get_by_text(details["sender"], exact=True)).to_be_visible()
                expect(user_op.get_by_role("heading", name="Calls")).to_be_visible()
                expect(user_op.get_by_text("4 bytes, selector 0xa9059cbb")).to_be_visible()
                expect(user_op.get_by_role("heading", name="Gas")).to_be_visible()
                expect(user_op.get_by_role("term").filter(has_text="callGasLimit")).to_be_visible()
                assert page.evaluate("() => window.__pwned") is None
                page.screenshot(path=screenshots / "6-readable-requests.png", full_page=True)
                for name in (
                    "eth_signTypedData_v4",
                    "eth_signTransaction",
                    "eth_signUserOperation",
                ):
                    card = page.get_by_role("article", name=f"{name} request")
                    card.get_by_role("button", name="Reject").click()
                    expect(card).to_have_count(0)

            calls = [
                ("eth_signTypedData_v4", [FIRST, TYPED_DATA]),
                ("eth_signTransaction", [transaction]),
                ("eth_signUserOperation", [op, ENTRY_POINT]),
            ]
            replies: list[Any] = []
            async with trio.open_nursery() as nursery:
                for method, params in calls:
                    nursery.start_soon(_collect, replies, node.ws_url(), method, params)
                await browser.run(readable)
            assert [reply["error"]["code"] for reply in replies] == [4001, 4001, 4001]


async def _collect(replies: list[Any], url: str, method: str, params: Any) -> None:
    """One call on a connection of its own (of the same dapp, so in its session)."""
    async with dapp(url, origin=ORIGIN) as connection:
        replies.append(await connection.call("wallet_invokeMethod", invoke(method, params)))


async def test_a_new_request_leaves_the_operators_ticks_and_focus_alone() -> None:
    with trio.fail_after(120):
        async with (
            browser_and_broker_in_process() as (browser, node),
            dapp(node.ws_url(), origin=ORIGIN) as a,
            dapp(node.ws_url(), origin="https://later.example") as b,
            trio.open_nursery() as asking,
        ):
            page = await signed_in(browser, node.base)
            asking.start_soon(a.call, "wallet_createSession", REQUEST)

            def untick() -> None:
                card = page.get_by_role("article", name="Session request #1")
                card.get_by_role("checkbox", name="eth_getBalance").uncheck()
                expect(card.get_by_role("checkbox", name="eth_getBalance")).to_be_focused()

            await browser.run(untick)
            asking.start_soon(b.call, "wallet_createSession", REQUEST)

            def still_in_place() -> None:
                expect(page.get_by_role("article", name="Session request #2")).to_be_visible()
                first = page.get_by_role("article", name="Session request #1")
                expect(first.get_by_role("checkbox", name="eth_getBalance")).to_be_focused()
                expect(first.get_by_role("checkbox", name="eth_getBalance")).not_to_be_checked()
                expect(first.get_by_role("checkbox", name="personal_sign")).to_be_checked()

            await browser.run(still_in_place)
            asking.cancel_scope.cancel()
