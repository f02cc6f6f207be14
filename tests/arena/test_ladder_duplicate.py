"""The ladder's duplicate sets (``LADDER_FORMAT=duplicate``, :mod:`arena.play.duplicate_sets`):
a table plays one match per rotation on the same deals, through the real ladder job path; the
set is rated once, when its last rotation finishes; its deals stay secret until then."""

from __future__ import annotations

from collections import Counter

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

from arena.core.models import LadderSetMatch, Match, MatchSeat, Rating, RatingEvent
from arena.core.storage import get_db
from arena.jobs import bodies as jobs
from arena.play.duplicate_sets import SeatLine, combined_ranks, rotations
from arena.play.ladder import run_round
from arena.play.ratings import check_all
from arena.tournaments import schedule

from .conftest import both_backends, register


def test_duplicate_scores_cancel_the_cards() -> None:
    """Bot 1 scores best with every hand it held: it wins the set even though bot 2 got the
    lucky hand in the rotation that gave the most points."""
    rots = [[SeatLine(1, 10, 1, False), SeatLine(2, 40, 2, False), SeatLine(3, -50, 0, False)],
            [SeatLine(2, 0, 0, False), SeatLine(3, 20, 1, False), SeatLine(1, -20, 0, False)],
            [SeatLine(3, -5, 0, False), SeatLine(1, 45, 2, False), SeatLine(2, -40, 1, False)]]
    assert combined_ranks(rots) == {1: 1, 2: 2, 3: 3}
    level = [[SeatLine(1, 5, 1, False), SeatLine(2, 5, 1, False)]]
    assert combined_ranks(level) == {1: 1, 2: 1}  # equal: a draw
    forfeit = [[SeatLine(1, 50, 0, True), SeatLine(2, -50, 0, False)]]
    assert combined_ranks(forfeit) == {1: 2, 2: 1}  # forfeiting every rotation ranks last


def test_rotations_seat_every_bot_in_every_seat_once() -> None:
    seatings = rotations([7, 8, 9, 10])
    assert seatings == schedule.rotations([7, 8, 9, 10], True)  # the tournaments' convention
    assert len(set(seatings)) == 4
    for seat in range(4):
        assert sorted(r[seat] for r in seatings) == [7, 8, 9, 10]


def set_rows(app: Flask, set_id: int) -> list[int]:
    with get_db(app).begin() as s:
        return list(s.scalars(select(LadderSetMatch.match_id)
                              .where(LadderSetMatch.set_id == set_id)
                              .order_by(LadderSetMatch.rotation)))


def events(app: Flask) -> list[tuple[int, int, int]]:
    with get_db(app).begin() as s:
        return [(e.match_id, e.bot_id, e.games) for e in s.scalars(
            select(RatingEvent).order_by(RatingEvent.id))]


def play(app: Flask, match_id: int) -> None:
    with app.app_context():
        assert jobs.play_match(match_id) == "finished"


@both_backends
def test_a_duplicate_set_plays_every_rotation_and_is_rated_once(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str]) -> None:
    app.config["LADDER_FORMAT"] = "duplicate"
    app.config["LADDER_DEALS"] = 1
    bots = [register(client, n, sample_bots[n])[0]
            for n in ("random", "greedy", "planner", "random-2")]
    created = run_round(app, seed=5)
    assert len(created) == 4  # one table of four: one set of four rotations
    first = created[0]
    assert set_rows(app, first) == created
    with get_db(app).begin() as s:
        matches = [s.get(Match, m) for m in created]
        assert len({m.seed for m in matches if m is not None}) == 1  # the same deals
        seats = s.scalars(select(MatchSeat).where(MatchSeat.match_id.in_(created))).all()
        assert Counter((x.bot_id, x.seat) for x in seats) == Counter(
            {(b, seat): 1 for b in bots for seat in range(4)})  # seat balance: each seat once
    assert run_round(app) == []  # its bots are busy until the whole set is over

    # Out of order, so that the last to finish is not the last created.
    order = [created[2], created[0], created[3], created[1]]
    for i, m in enumerate(order[:-1]):
        play(app, m)
        assert events(app) == []  # no rating moves before the set is complete
        for url in (f"/matches/{m}/replay.json", f"/api/matches/{m}/log"):
            r = client.get(url)
            assert r.status_code == 409 and r.get_json()["error"]["code"] == "deals_in_play"
        assert "seed" not in client.get(f"/api/matches/{m}").get_json()
        if i == 0:
            with app.app_context():
                assert jobs.play_match(m) != "finished"  # a second delivery changes nothing
    play(app, order[-1])

    got = events(app)
    assert sorted(b for _, b, _ in got) == sorted(bots)  # one event per bot: rated once
    assert {m for m, _, _ in got} == {order[-1]} and {g for _, _, g in got} == {1}
    with get_db(app).begin() as s:
        ratings = {r.bot_id: r for r in s.scalars(select(Rating))}
    assert set(ratings) == set(bots) and all(r.games == 1 for r in ratings.values())
    assert abs(sum(r.rating for r in ratings.values()) - 4 * 1500.0) < 1e-6  # zero-sum
    assert max(abs(r.rating - 1500.0) for r in ratings.values()) > 0
    # The recompute replays the set as the finish applied it.
    assert check_all(get_db(app), initial=1500.0, k=float(app.config["ELO_K"])) == (
        ["classic"], [])
    for m in created:  # every rotation over: its deals open
        assert client.get(f"/api/matches/{m}/log").status_code == 200
        assert "seed" in client.get(f"/api/matches/{m}").get_json()
    assert len(run_round(app)) == 4  # and the bots are idle again: the next set


@both_backends
def test_a_set_with_a_failed_rotation_is_not_rated(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str]) -> None:
    app.config["LADDER_FORMAT"] = "duplicate"
    app.config["LADDER_DEALS"] = 1
    for n in ("random", "greedy", "planner", "random-2"):
        register(client, n, sample_bots[n])
    created = run_round(app, seed=8)
    with get_db(app).begin() as s:
        s.execute(update(Match).where(Match.id == created[1])
                  .values(state="failed", error="gave up"))
    for m in [created[0], *created[2:]]:
        play(app, m)
    assert events(app) == []  # luck that does not cancel is not rated
    assert check_all(get_db(app), initial=1500.0, k=float(app.config["ELO_K"]))[1] == []
    assert client.get(f"/api/matches/{created[0]}/log").status_code == 200  # all over


def test_an_unknown_ladder_format_is_refused(app: Flask) -> None:
    app.config["LADDER_FORMAT"] = "swiss"
    with pytest.raises(ValueError, match="LADDER_FORMAT"):
        run_round(app)
