"""What the pages say (issue 11): the match list and the bot list page by keyset through
their own links, with every filter; the bot page's strike counts cover every strike its
chips count; seats, deals and turns read from 1 on the pages; the API docs page shows every
endpoint and schema of the OpenAPI document.  (Statement counts: test_read_path.py.)"""

from __future__ import annotations

import html
import re
from collections import Counter
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from markupsafe import escape
from sqlalchemy import select, update

from arena.core.models import Bot, Match, MatchResult, MatchSeat, utcnow
from arena.core.storage import get_db

from .conftest import both_backends
from .test_read_path import Seeded, add_matches, seed


def text(client: FlaskClient, url: str) -> str:
    resp = client.get(url)
    assert resp.status_code == 200, (url, resp.status_code)
    return resp.get_data(as_text=True)


def next_link(page: str) -> str | None:
    found = re.search(r'rel="next" href="([^"]+)"', page)
    return html.unescape(found.group(1)) if found else None


def walk(client: FlaskClient, url: str, row: str) -> list[str]:
    """Every row of a paged list, following its "next"/"older" links."""
    out: list[str] = []
    for _ in range(1000):
        page = text(client, url)
        out += re.findall(row, page)
        link = next_link(page)
        if link is None:
            return out
        url = link
    raise AssertionError("the pages never end")


MATCH_ROW = r'<td><a href="/matches/(\d+)">#'
BOT_ROW = r'<td><a class="bot" href="/bots/\d+">([^<]+)</a>'


def ids(rows: list[str]) -> list[int]:
    return [int(x) for x in rows]


# --- the match list --------------------------------------------------------------------------


@both_backends
def test_the_match_list_pages_through_every_filter_and_stays_stable(app: Flask) -> None:
    app.config["PAGE_SIZE"] = 5
    data = seed(app, 12)
    client = app.test_client()
    with get_db(app).begin() as s:
        every = list(s.scalars(select(Match.id).order_by(Match.id.desc())))
        by_state = {st: list(s.scalars(select(Match.id).where(Match.state == st)
                                       .order_by(Match.id.desc())))
                    for st in ("queued", "finished")}
        busy_name = s.scalar(select(Bot.name).where(Bot.id == data.busy))
        busy = list(s.scalars(select(MatchSeat.match_id).where(MatchSeat.bot_id == data.busy)
                              .order_by(MatchSeat.match_id.desc())))
        busy_queued = [m for m in busy if m in by_state["queued"]]
        s.execute(update(Match).where(Match.id == every[-1]).values(ruleset="hong-kong"))
    assert len(every) > 10 and by_state["queued"] and busy_queued
    assert ids(walk(client, "/matches", MATCH_ROW)) == every
    for state, want in by_state.items():
        assert ids(walk(client, f"/matches?state={state}", MATCH_ROW)) == want
    assert ids(walk(client, f"/matches?bot={busy_name}", MATCH_ROW)) == busy
    assert ids(walk(client, f"/matches?bot={busy_name}&state=queued", MATCH_ROW)) \
        == busy_queued
    assert ids(walk(client, "/matches?ruleset=hong-kong", MATCH_ROW)) == [every[-1]]
    assert ids(walk(client, f"/matches?ruleset=standard&bot={busy_name}&state=queued",
                    MATCH_ROW)) == [m for m in busy_queued if m != every[-1]]
    # Nothing shown twice or skipped while new matches arrive between pages.
    first = text(client, "/matches")
    add_matches(app, data.bots, 3)
    rest = walk(client, next_link(first) or "", MATCH_ROW)
    assert ids(re.findall(MATCH_ROW, first) + rest) == every
    # A filter naming no bot says so; a state that does not exist is a 400 page.
    page = text(client, "/matches?bot=nobody-at-all")
    assert 'data-test="no-bot"' in page and re.findall(MATCH_ROW, page) == []
    assert client.get("/matches?state=sleeping").status_code == 400
    assert client.get("/matches?cursor=not-a-cursor").status_code == 400
    assert client.get("/matches?cursor=" + next_link(first).split("cursor=")[1].replace(
        "&", "")).status_code == 200
    # The winner is the seat ranked first, in bold.
    finished = by_state["finished"][0]
    with get_db(app).begin() as s:
        winner = s.scalar(select(Bot.name).join(MatchSeat, MatchSeat.bot_id == Bot.id)
                          .where(MatchSeat.match_id == finished, MatchSeat.rank == 1))
    row = text(client, "/matches?state=finished").split(f'href="/matches/{finished}"')[1]
    row = row.split("</tr>")[0]
    assert re.search(rf'<strong><a class="bot" href="/bots/\d+">{winner}</a></strong>', row)


# --- the bot list ----------------------------------------------------------------------------


@both_backends
def test_the_bot_list_pages_by_name_and_searches_whatever_the_case(app: Flask) -> None:
    app.config["PAGE_SIZE"] = 4
    data = seed(app, 12)
    client = app.test_client()
    with get_db(app).begin() as s:
        s.execute(update(Bot).where(Bot.id == data.bots[3]).values(deleted_at=utcnow()))
        names = list(s.scalars(select(Bot.name).where(Bot.deleted_at.is_(None))
                               .order_by(Bot.name)))
    assert len(names) == 11
    assert walk(client, "/bots", BOT_ROW) == names
    assert walk(client, "/bots?q=BOT-000", BOT_ROW) == [n for n in names if "bot-000" in n]
    assert walk(client, "/bots?q=1", BOT_ROW) == [n for n in names if "1" in n]
    for q in ("%", "_", "bot-0%", "\\"):  # wildcards are literal text
        assert walk(client, "/bots?" + f"q={q.replace('%', '%25')}", BOT_ROW) == []
    page = text(client, "/bots?q=zzz")
    assert 'data-test="no-bots"' in page
    assert client.get("/bots?cursor=bm9wZQ").status_code == 400
    # Each row links to the bot's matches.
    assert f'href="/matches?bot={names[0]}"' in text(client, "/bots")


# --- the bot page's counts -------------------------------------------------------------------


def strike_rows(page: str) -> int:
    strikes = page.split("<h2>Strikes</h2>")[1].split("</section>")[0]
    return strikes.count("<tr><td><a href=\"/matches/")


def test_the_bot_page_counts_every_strike_of_the_matches_it_lists(app: Flask) -> None:
    """Issue 11: "20 strikes in the last 16 matches" next to reason chips adding up to 159.
    The count, the chips and the table's "newest n of total" describe the same strikes."""
    data = seed(app, 12)
    app.config["RECENT_MATCHES"] = 8
    app.config["BOT_PAGE_STRIKES"] = 5
    reasons = ["timeout", "illegal", "timeout"]
    with get_db(app).begin() as s:
        for result in s.scalars(select(MatchResult)):
            seat = s.scalar(select(MatchSeat.seat).where(MatchSeat.match_id == result.match_id,
                                                         MatchSeat.bot_id == data.busy))
            strikes = [{"seat": seat if seat is not None else 0, "deal": 0, "turn": t,
                        "reason": r, "detail": ""} for t, r in enumerate(reasons)]
            strikes.append({"seat": 3 if seat != 3 else 2, "deal": 0, "turn": 9,
                            "reason": "malformed", "detail": "another seat's"})
            result.totals = {**result.totals, "strikes": strikes}
        listed = list(s.scalars(select(MatchSeat.match_id)
                                .where(MatchSeat.bot_id == data.busy)
                                .order_by(MatchSeat.match_id.desc()).limit(8)))
        finished = [m for m in listed if s.scalar(select(Match.state).where(
            Match.id == m)) == "finished"]
    want = Counter({"timeout": 2 * len(finished), "illegal play": len(finished)})  # names
    assert sum(want.values()) > 5  # more strikes than the table lists
    page = text(app.test_client(), f"/bots/{data.busy}")
    stat = re.search(r'<span class="stat-n">(\d+)</span><span class="stat-l">strikes? in the '
                     r'last (\d+) finished match', page)
    assert stat is not None, page
    assert (int(stat.group(1)), int(stat.group(2))) == (sum(want.values()), len(finished))
    chips = {r: int(n) for r, n in re.findall(
        r'<span class="chip warn">([\w ]+) &times; (\d+)', page)}
    assert chips == dict(want)
    assert strike_rows(page) == 5
    assert f"The newest 5 of {sum(want.values())} strikes" in page


# --- numbering for people --------------------------------------------------------------------


def test_pages_number_seats_deals_and_turns_from_one(app: Flask) -> None:
    """The stored strike is seat 0, deal 0, turn 1 (the log's numbering); the pages say
    seat 1, deal 1, turn 2, and the seat columns run 1 to 4 (docs/logs.md, "Numbering")."""
    data: Seeded = seed(app, 12)
    client = app.test_client()
    match_id = data.matches[-1]
    with get_db(app).begin() as s:
        first = s.scalar(select(Bot.name).join(MatchSeat, MatchSeat.bot_id == Bot.id)
                         .where(MatchSeat.match_id == match_id, MatchSeat.seat == 0))
    page = text(client, f"/matches/{match_id}")
    assert f"seat 1 ({first}), deal 1, turn 2:" in page
    seats = page.split("<tbody>")[1].split("</tbody>")[0]
    cells = re.findall(r'<td class="num rank">[^<]*</td>\s*<td class="num">(\d+)</td>', seats)
    assert sorted(int(c) for c in cells) == [1, 2, 3, 4], seats
    page = text(client, f"/bots/{data.busy}")  # the busy bot sits in seat 0 of each match
    recent = page.split("<h2>Recent matches")[1].split("</table>")[0]
    assert 'href="/matches?bot=bot-0000"' in recent  # the link to every match of the bot
    assert re.findall(r'</td>\s*<td class="num">(\d+)</td>\s*<td class="num">\d*</td>',
                      recent)[0] == "1"
    strikes = page.split("<h2>Strikes</h2>")[1].split("</table>")[0]
    assert re.search(r'<td class="num">1</td><td class="num">2</td><td data-fault="timeout">'
                     r'timeout</td>', strikes)


# --- the API docs ----------------------------------------------------------------------------


def test_the_api_docs_page_shows_every_endpoint_parameter_and_schema(
        client: FlaskClient) -> None:
    doc: dict[str, Any] = client.get("/api/openapi.json").get_json()
    resp = client.get("/docs/api")
    assert resp.status_code == 200 and resp.mimetype == "text/html"
    page = resp.get_data(as_text=True)
    assert "<script" not in page  # readable without JavaScript
    assert re.search(r'<script|https?://(?!127\.0\.0\.1)[^"\s]*\.(js|css)', page) is None
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method == "parameters":
                continue
            anchor = f'<span class="method method-{method}">{method.upper()}</span> ' \
                     f'<code class="path">{escape(path)}</code>'
            assert anchor in page, (method, path)
            assert escape(op["summary"]) in page
            for status in op["responses"]:
                assert f'<span class="status status-{str(status)[0]}">{status}</span>' in page
        for p in item.get("parameters", []):
            assert f"<code>{p['name']}</code>" in page
    for name in doc["components"]["schemas"]:
        assert f'id="schema-{name}"' in page
    # Request bodies come with their fields and an example built from the schema.
    post_bots = page.split('<code class="path">/api/bots</code>')[2].split("</article>")[0]
    assert "<code>name</code> <span class=\"req\"" in post_bots
    assert "Example" in post_bots and "&#34;url&#34;: &#34;https://bot.example/&#34;" \
        in post_bots
    # The nav's "API" opens this page; the raw JSON is linked from it.
    home = client.get("/").get_data(as_text=True)
    assert '<a href="/docs/api">API</a>' in home
    assert 'href="/api/openapi.json"' in page


# --- the match list reads indexes ------------------------------------------------------------


@both_backends
def test_every_match_list_query_reads_an_index(app: Flask) -> None:
    """Each statement the match list sends, for every filter, is planned on an index
    (SQLite: no sort, and with a WHERE every table step is a SEARCH or a SCAN of an index;
    PostgreSQL, with sequential scans priced out so the planner shows whether an index can
    serve: no ``Seq Scan``)."""
    from sqlalchemy import event

    seed(app, 12)
    client = app.test_client()
    db = get_db(app)
    for url in ("/matches", "/matches?state=failed", "/matches?bot=bot-0000",
                "/matches?bot=bot-0000&state=queued", "/matches?ruleset=standard",
                "/matches?ruleset=standard&state=finished"):
        sent: list[tuple[str, Any]] = []

        def keep(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
            if statement.lstrip().upper().startswith("SELECT"):
                sent.append((statement, parameters))  # noqa: B023 - used before the next url

        event.listen(db.engine, "before_cursor_execute", keep)
        try:
            assert client.get(url).status_code == 200
        finally:
            event.remove(db.engine, "before_cursor_execute", keep)
        assert sent, url
        with db.engine.connect() as conn:
            for statement, parameters in sent:
                if db.dialect == "sqlite":
                    plan = [row[-1] for row in conn.exec_driver_sql(
                        "EXPLAIN QUERY PLAN " + statement, parameters)]
                    table_steps = [p for p in plan if p.startswith(("SCAN", "SEARCH"))]
                    assert table_steps, (url, statement, plan)
                    assert not any("TEMP B-TREE" in p for p in plan), (url, statement, plan)
                    if " WHERE " not in statement:  # the newest matches: the rowid, backwards
                        continue
                    for step in table_steps:
                        assert step.startswith("SEARCH") or "INDEX" in step, \
                            (url, statement, plan)
                else:
                    conn.exec_driver_sql("SET enable_seqscan = off")
                    plan = "\n".join(row[0] for row in conn.exec_driver_sql(
                        "EXPLAIN " + statement, parameters))
                    assert "Seq Scan" not in plan, (url, statement, plan)
                    conn.rollback()
