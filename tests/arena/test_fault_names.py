"""One name per fault (issue 19 §4): every fault code reads by the same plain-words name on
every surface, and no sentence is printed twice.

The match page once said ``not_json``, the calls page grouped the same strike as
``malformed`` (and an HTTP 500 with a body as ``no answer``), and the calls page printed
``timeout no complete answer ... (no complete answer ...)``.  Here every code of
:data:`referee.runner.faults.FAULTS` is stored as a strike of a finished match and as a kept
call of its bot, and each surface is read: the match page, the bot page, the owner's calls
page, the replay viewer's names, the match and calls APIs, the command line's match report,
``replay``'s strike line, the health check's reason, the conformance kit's line and
docs/protocol.md's table.  (A real match with real faults: tests/arena/test_bot_calls.py.)
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import asdict
from pathlib import Path

from flask import Flask
from sqlalchemy import select

from arena.bots.calls import Call, key
from arena.core.models import Bot, MatchResult, MatchSeat
from arena.core.queue import get_queue
from arena.core.security import hash_token
from arena.core.storage import get_db
from referee import find_ruleset
from referee.cli.judging import MoveVerdict
from referee.cli.replay import Outcome, line
from referee.cli.replay_source import Logged
from referee.cli.report import result_table
from referee.runner.faults import FAULTS, fault_line, fault_name, plain_fault
from referee.runner.health import failure_reason
from referee.runner.match import Strike, run_match
from referee.wire.players import LocalPlayer

from .test_bot_calls import sign_in
from .test_read_path import first_legal, seed

ROOT = Path(__file__).resolve().parents[2]
CODES = list(FAULTS)
TOKEN = "owner-token-of-the-busy-bot"


def store_every_fault(app: Flask) -> tuple[int, int]:
    """Every code as a strike of the busy bot in its newest finished match, and as a kept
    call; (bot id, match id)."""
    data = seed(app, 12)
    app.config["BOT_PAGE_STRIKES"] = len(CODES) + 5
    with get_db(app).begin() as s:
        match_id, seat = s.execute(
            select(MatchSeat.match_id, MatchSeat.seat).join(MatchResult, MatchResult.match_id
                                                           == MatchSeat.match_id)
            .where(MatchSeat.bot_id == data.busy).order_by(MatchSeat.match_id.desc())
            .limit(1)).one()
        for result in s.scalars(select(MatchResult)):
            result.totals = {**result.totals, "strikes": []}
        result = s.scalars(select(MatchResult).where(MatchResult.match_id == match_id)).one()
        result.totals = {**result.totals, "strikes": [
            {"seat": seat, "deal": 0, "turn": t, "reason": code, "detail": ""}
            for t, code in enumerate(CODES)]}
        bot = s.get(Bot, data.busy)
        assert bot is not None
        with app.app_context():
            bot.token_hash = hash_token(TOKEN)
    calls = [Call(match_id=match_id, deal=0, turn=t, seat=seat, at="2027-01-01T00:00:00Z",
                  latency_ms=3.0, fault=code, detail="", move="pass", say=None, answer="",
                  answer_bytes=0, answer_truncated=False) for t, code in enumerate(CODES)]
    redis = get_queue(app).redis
    redis.delete(key(app, data.busy))
    redis.lpush(key(app, data.busy), *(json.dumps(asdict(c)) for c in calls))
    return data.busy, match_id


def page(app: Flask, url: str, client: object = None) -> str:
    c = client or app.test_client()
    resp = c.get(url)  # type: ignore[attr-defined]
    assert resp.status_code == 200, (url, resp.status_code)
    return str(resp.get_data(as_text=True))


def test_every_fault_has_one_name_on_every_surface(app: Flask) -> None:
    bot_id, match_id = store_every_fault(app)
    names = {code: fault_name(code) for code in CODES}
    assert all(names.values()) and all("_" not in n for n in names.values())

    # The pages: each strike shows its fault's name (the code only as an attribute).
    match_page = page(app, f"/matches/{match_id}")
    bot_page = page(app, f"/bots/{bot_id}")
    for code, name in names.items():
        assert f'<strong data-fault="{code}">{html.escape(name)}</strong>' in match_page, code
        assert f'<td data-fault="{code}">{html.escape(name)}</td>' in bot_page, code
        assert re.search(rf'<span class="chip warn">{re.escape(html.escape(name))} &times; '
                         r'\d+</span>', bot_page), code
    # The replay viewer names faults from the same table.
    found = re.search(r"data-fault-names='([^']*)'", match_page)
    assert found is not None
    assert json.loads(html.unescape(found.group(1))) == names

    # The owner's calls page: the name once, then the sentence once (never a second wording).
    client = app.test_client()
    assert sign_in(client, bot_id, TOKEN).status_code == 303
    calls_page = page(app, f"/bots/{bot_id}/calls", client)
    for code, name in names.items():
        chip = re.search(rf'<span class="chip warn" data-fault="{code}">([^<]*)</span>'
                         r'(?: <span class="muted">([^<]*)</span>)?', calls_page)
        assert chip is not None, code
        assert html.unescape(chip.group(1)) == name
        sentence = plain_fault(code, "")
        assert html.unescape(chip.group(2) or "") == sentence
        assert calls_page.count(html.escape(sentence, quote=True)) <= names_with_sentence(
            sentence), code

    # The APIs: the code in its field, the name beside it.
    strikes = app.test_client().get(f"/api/matches/{match_id}").get_json()["strikes"]
    assert {s["reason"]: s["name"] for s in strikes} == names
    items = app.test_client().get(f"/api/bots/{bot_id}/calls", headers={
        "Authorization": f"Bearer {TOKEN}"}).get_json()["items"]
    assert {c["fault"]: c["verdict"] for c in items} == names
    assert all("reason" not in c for c in items)

    # The command line: the match report, replay's strike line, the health check, the kit.
    rec = run_match(find_ruleset("standard"), [LocalPlayer(first_legal) for _ in range(4)],
                    seed=5, deals=1)
    rec.strikes[:] = [Strike(0, 0, t, code, plain_fault(code, "")) for t, code in
                      enumerate(CODES)]
    report = result_table(rec, max_strikes_shown=len(CODES))
    for t, (code, name) in enumerate(names.items()):
        assert f"seat 1, deal 1, turn {t + 1}: {name}: " in report, code
        logged = Logged("m", 0, t, 0, {}, "pass", None, 1.0, 1000)
        verdict = MoveVerdict(code, plain_fault(code, ""), "fix it", None, None, 1.0)
        assert f": STRIKE: {name}: " in line(Outcome(logged, verdict, "strike", False),
                                              with_match=False), code
        reason, silent = failure_reason("POST /move", code, "", 500, 1.0)
        assert silent or reason.startswith(f"POST /move: {name}: "), (code, reason)
        assert fault_line(code, "").startswith(f"{name}: ")

    # The docs: docs/protocol.md's table is this table (every strike code, name, sentence).
    doc = (ROOT / "docs" / "protocol.md").read_text()
    rows = {c: (n, t) for c, n, t in re.findall(
        r"^\| `(\w+)` \| ([^|]+?) \| (.+?) \|$", doc, re.M)}
    for code, kind in FAULTS.items():
        if code in ("exception", "bad_description"):  # not strikes of an HTTP bot
            continue
        assert rows.get(code) == (kind.name, kind.text), code


def names_with_sentence(sentence: str) -> int:
    """How many codes share this sentence (each row of the calls page shows it once)."""
    return sum(plain_fault(code, "") == sentence for code in FAULTS)
