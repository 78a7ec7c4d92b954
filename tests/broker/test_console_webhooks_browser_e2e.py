"""The webhooks in the operator console, in Chromium: a webhook parked as failed shows its failed
delivery and its cursor; "Replay" sends its events again once the receiver is fixed; "Delete"
removes it."""

from __future__ import annotations

import trio
from playwright.sync_api import Page, expect

from broker.compose import ServeOptions
from broker.config import Config, ServerConfig
from tests.broker.test_console_browser_e2e import signed_in
from tests.broker.test_subscriptions_e2e import mine
from tests.broker.test_webhooks_e2e import create, listed
from tests.support.browser import open_browser
from tests.support.inprocess import running_broker
from tests.support.waiting import eventually
from tests.support.webhook_receiver import webhook_receiver

PARKS_FAST = ServerConfig(
    webhook_timeout=0.3,
    webhook_backoff_initial=0.02,
    webhook_backoff_max=0.05,
    webhook_retry_for=0.2,
)


async def test_a_parked_webhook_is_shown_replayed_and_deleted() -> None:
    healthy = trio.Event()
    with trio.fail_after(90):
        async with (
            open_browser() as browser,
            running_broker(ServeOptions(block_time=0), config=Config(server=PARKS_FAST)) as node,
            webhook_receiver(lambda n: 200 if healthy.is_set() else 500) as receiver,
        ):
            hook = await create(node, receiver, ["newHeads"])
            await mine(node, 2)

            async def parked() -> bool:
                return (await listed(node, hook))["state"] == "failed"

            await eventually(parked, "the webhook parked")
            page = await signed_in(browser, node.base)

            def shown_failed(page: Page) -> None:
                card = page.get_by_role("article", name=receiver.url)
                expect(card).to_contain_text("failed")
                expect(card).to_contain_text("HTTP 500")
                expect(card.get_by_role("heading", name="Failed deliveries")).to_be_visible()

            await browser.run(shown_failed, page)
            healthy.set()
            await browser.run(lambda: page.get_by_role("button", name=f"Replay {hook}").click())
            await receiver.until(lambda: len(receiver.accepted) >= 2)

            def shown_active(page: Page) -> None:
                card = page.get_by_role("article", name=receiver.url)
                expect(card.get_by_role("definition").nth(3)).to_have_text("active")
                page.get_by_role("button", name=f"Delete {hook}").click()
                expect(card).to_have_count(0)
                expect(page.get_by_text("No webhook.")).to_be_visible()

            await browser.run(shown_active, page)
    assert receiver.bad_signatures == 0
