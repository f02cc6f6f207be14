"""The owner's view of a bot's last calls, in a real browser: sign in on the bot page with the
owner token, read the requests and answers (a bot's HTML answer shows as text and never runs),
sign out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.arena.test_bot_calls import (  # noqa: F401 - fixtures
    GARBAGE,
    Played,
    flaky,
    played,
)


@pytest.mark.drill
def test_the_owner_signs_in_and_reads_the_calls(
        page: Any, live_server: str, played: Played, shots: Path,  # noqa: F811 - the fixture
) -> None:
    page.goto(f"{live_server}/bots/{played.bot_id}")
    assert page.locator("text=Your bot's last calls").count() == 0
    page.fill("#owner-sign-in-token", played.token)
    page.click("text=Sign in as the owner")
    page.wait_for_url(f"{live_server}/bots/{played.bot_id}/calls")
    rows = page.locator("table.calls tbody tr[id^=call-]")
    assert rows.count() > 0
    assert page.locator("table.calls .chip", has_text="not JSON").count() > 0
    garbage = page.locator("table.calls tr", has_text="strict JSON in UTF-8 is expected").first
    body = garbage.locator("xpath=following-sibling::tr[1]")
    details = body.locator("details")
    if details.get_attribute("open") is None:
        body.locator("summary").click()
    assert details.get_attribute("open") is not None
    answer = body.locator("pre[id^=answer-]")
    assert answer.text_content() == GARBAGE.decode()  # shown as typed, not run
    request = body.locator("pre[id^=request-]")
    assert '"legal_moves"' in request.text_content()
    # The picture: the newest call opened, from the top of the page.
    page.evaluate("document.querySelectorAll('table.calls details')"
                  ".forEach((d, i) => { d.open = i === 0; }); window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "bot-calls.png"), full_page=False)
    page.click("text=Sign out")
    page.wait_for_url(f"{live_server}/bots/{played.bot_id}")
    assert page.locator("#owner-sign-in-token").count() == 1
    # With this browser's cookies (a navigation would log the 403 as a console error):
    assert page.context.request.get(f"{live_server}/bots/{played.bot_id}/calls").status == 403
