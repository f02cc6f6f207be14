"""Webhooks in a real browser: an account registers two webhooks on its page (the secret shown
once), sends a test event to each, and a real ``arena worker`` delivers them to real receivers
on loopback; the delivery log shows one delivered (status, attempts, response code, latency)
and one that the receiver refused, waiting for its retry."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from arena.ops.procs import Child
from tests.arena.webhook_receiver import Receiver
from tests.waiting import wait_for

PASSWORD = "correct horse battery"


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    ok, refusing = Receiver((200,)), Receiver((500,))
    yield ok, refusing
    ok.close()
    refusing.close()


def register(page: Any, url: str) -> tuple[int, str]:
    page.fill("#webhook-url", url)
    page.click("#new-webhook button[type=submit]")
    secret = page.inner_text("#new-secret").strip()
    head = page.inner_text("[data-test=new-secret] p")
    return int(head.split("#", 1)[1].split(" ", 1)[0]), secret


def log_row(page: Any, hook_id: int) -> Any:
    return page.locator(f"[data-webhook='{hook_id}'] [data-test=deliveries] tbody tr").first


@pytest.mark.drill
def test_the_delivery_log_shows_what_became_of_each_event(
        page: Any, live_server: str, receivers: tuple[Receiver, Receiver], shots: Path,
        start_worker: Callable[[], Child]) -> None:
    ok, refusing = receivers
    start_worker()  # delivers what the page queues: no web request calls a webhook
    page.goto(live_server + "/account/sign-up")
    page.fill("#username", "grace")
    page.fill("#password", PASSWORD)
    page.fill("#password2", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(live_server + "/account")
    page.click("text=Webhooks")
    page.wait_for_url(live_server + "/account/webhooks")
    expect(page.locator("[data-test=no-webhooks]")).to_have_count(1)
    good_id, secret = register(page, ok.url("/arena/events"))
    bad_id, _ = register(page, refusing.url("/broken"))
    mine = live_server + "/account/webhooks"
    page.reload()  # redirect after POST: a reload sends no form again and shows no secret
    assert secret not in page.content()  # shown once
    expect(page.locator("[data-test=note]")).to_contain_text("its secret was shown once")
    page.goto(mine)
    expect(page.locator("[data-webhook]")).to_have_count(2)
    for hook_id in (good_id, bad_id):
        expect(page.locator(f"[data-webhook='{hook_id}'] [data-test=no-deliveries]")) \
            .to_have_count(1)
        page.locator(f"[data-webhook='{hook_id}'] [data-test=send-test]").click()
        expect(page.locator("[data-test=note]")).to_contain_text("Test event queued")

    def state(hook_id: int) -> str:
        page.goto(mine)
        row = log_row(page, hook_id)
        return str(row.get_attribute("data-state")) if row.count() else ""

    wait_for(lambda: state(good_id) == "delivered", 60, what="the test event delivered")
    wait_for(lambda: state(bad_id) == "retrying", 60, what="the refused event retrying")
    good, bad = log_row(page, good_id), log_row(page, bad_id)
    assert good.locator("[data-test=response]").inner_text() == "200"
    assert good.locator("[data-test=attempts]").inner_text().startswith("1 / ")
    assert good.locator("[data-test=latency]").inner_text().endswith(" ms")
    assert good.locator("[data-test=next-retry]").inner_text() == "\u2013"
    assert bad.locator("[data-test=response]").inner_text() == "500"
    assert "UTC" in bad.locator("[data-test=next-retry]").inner_text()
    expect(bad).to_contain_text("answered HTTP 500")
    page.screenshot(path=str(shots / "webhooks.png"), full_page=True)
    # What the receiver got verifies with the secret the page showed.
    assert len(ok.requests) == 1
    assert ok.requests[0].verify(secret) is None
    assert json.loads(ok.requests[0].body)["event"] == "webhook.test"
    page.locator(f"[data-webhook='{bad_id}'] [data-test=delete]").click()
    expect(page.locator(f"[data-webhook='{bad_id}']")).to_have_count(0)
    expect(page.locator(f"[data-webhook='{good_id}']")).to_have_count(1)
