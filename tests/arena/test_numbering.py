"""One numbering for people and tools (issue 19 §4): a turn copied from a page means the same
turn to every command.

A real match is played by the job body with a bot that strikes late in each deal
(:class:`tests.arena.test_bot_calls.Flaky`).  The strike the bot page lists is fed, as the
page shows it, to ``python -m referee request``, which must print the very body the bot was
sent at that turn (the one it answered wrongly); ``replay`` and ``verify`` must name that turn
with the page's numbers, and the calls page, the match page and the bot page must agree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from referee.__main__ import main

from .test_bot_calls import GARBAGE, Flaky, Played, flaky, played, sign_in  # noqa: F401


def text(client: FlaskClient, url: str) -> str:
    resp = client.get(url)
    assert resp.status_code == 200, (url, resp.status_code)
    return resp.get_data(as_text=True)


def first_strike_on_the_bot_page(client: FlaskClient, bot_id: int) -> tuple[int, int, int]:
    """(match id, deal, turn) of the first row of the bot page's strike table, as shown."""
    page = text(client, f"/bots/{bot_id}")
    table = page.split("<h2>Strikes</h2>")[1].split("</table>")[0]
    rows = re.findall(r'<a href="/matches/(\d+)">#\d+</a></td><td class="num">(\d+)</td>'
                      r'<td class="num">(\d+)</td>', table)
    assert rows, table
    match_id, deal, turn = rows[0]
    return int(match_id), int(deal), int(turn)


def test_a_strike_copied_from_the_bot_page_gets_the_request_that_struck(
        client: FlaskClient, played: Played, flaky: Flaky, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    match_id, deal, turn = first_strike_on_the_bot_page(client, played.bot_id)
    assert match_id == played.match_id
    log_path = tmp_path / f"match-{match_id}.json"
    log_path.write_bytes(client.get(f"/api/matches/{match_id}/log").get_data())
    doc = json.loads(log_path.read_text())
    capsys.readouterr()
    assert main(["request", str(log_path), "--deal", str(deal), "--turn", str(turn)]) == 0
    printed = json.loads(capsys.readouterr().out)
    sent = flaky.received[(f"{doc['match_id']}/{deal - 1}", turn - 1)]
    assert printed == json.loads(sent)  # the very request the bot got at that turn
    assert flaky.answer(sent) in (GARBAGE, b'{"move": "no-such-move"}')  # and answered wrongly
    # The JSON keeps its indices: a data format does not change meaning.
    assert (printed["deal_index"], printed["turn"]) == (deal - 1, turn - 1)

    # The match page names that strike with the same numbers, and the seat people see.
    page = text(client, f"/matches/{match_id}")
    found = re.search(rf"seat (\d) \(flaky\), deal {deal}, turn {turn}:", page)
    assert found, page
    seat = int(found.group(1))
    assert doc["seats"][seat - 1]["player"] == f"bot:{played.bot_id}"

    # replay, given the seat the page shows, names the turn as the page does.
    capsys.readouterr()
    assert main(["replay", str(log_path), "--seat", str(seat), flaky.url,
                 "--allow-private"]) == 1
    out = capsys.readouterr().out
    assert re.search(rf"^deal {deal}, turn {turn}: STRIKE: ", out, re.M), out
    assert f"seat {seat}" in out.splitlines()[0]

    # verify, on a log broken at that turn, names it as the page does.
    doc["deals"][deal - 1]["turns"][turn - 1]["legal"] += 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["verify", str(bad)]) == 1
    assert f"INVALID at deal {deal}, turn {turn}: " in capsys.readouterr().out

    # The owner's calls page lists the call with the same numbers and the command to copy.
    assert sign_in(client, played.bot_id, played.token).status_code == 303
    calls = text(client, f"/bots/{played.bot_id}/calls")
    rows = set(re.findall(r'data-test="deal">(\d+)</td>\s*<td class="num" data-test="turn">'
                          r'(\d+)</td>', calls))
    assert (str(deal), str(turn)) in rows
    assert (f"python -m referee request match-{match_id}.json --deal {deal} --turn {turn}"
            in calls)
