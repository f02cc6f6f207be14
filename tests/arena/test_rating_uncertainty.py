"""The rating's 95% interval (:mod:`arena.play.uncertainty`): how it narrows, that it holds the
rating, and that the API (with its schema) and the pages show it."""

from __future__ import annotations

import math
import re

from flask import Flask
from flask.testing import FlaskClient
from hypothesis import given
from hypothesis import strategies as st

from arena.core.families import family_seats
from arena.core.models import Bot, BotVersion, Rating
from arena.core.storage import get_db
from arena.play.uncertainty import C, deviation, interval, margin_of

from .conftest import both_backends

SEATS = st.integers(min_value=2, max_value=4)
SCHEMES = st.sampled_from(["plain", "duplicate"])
KS = st.floats(min_value=4.0, max_value=64.0)


@given(st.integers(0, 5000), st.integers(1, 5000), KS, SEATS, SCHEMES)
def test_more_results_never_widen_the_interval(games: int, more: int, k: float, seats: int,
                                               scheme: str) -> None:
    fewer = deviation(games, k=k, seats=seats, scheme=scheme)
    after = deviation(games + more, k=k, seats=seats, scheme=scheme)
    assert after <= fewer + 1e-9
    assert after > 0  # a fixed K never stops moving a rating: never a zero margin


@given(st.floats(min_value=0, max_value=4000), st.integers(0, 5000), KS, SEATS, SCHEMES)
def test_the_interval_holds_the_rating(rating: float, games: int, k: float, seats: int,
                                       scheme: str) -> None:
    low, high = interval(rating, games, k=k, seats=seats, scheme=scheme)
    assert low < rating < high
    assert math.isclose(rating - low, high - rating)


def test_the_interval_starts_wide_and_settles_at_elos_floor() -> None:
    assert deviation(0, k=32, seats=4) == 350.0  # nothing known yet
    assert deviation(10, k=32, seats=4) < 350.0
    pair_k, q = 32 / 3, 3 / 4
    a = 1 - pair_k * C * q
    floor = math.sqrt(pair_k ** 2 * q / (1 - a * a))
    assert math.isclose(deviation(100_000, k=32, seats=4), floor, rel_tol=1e-9)
    assert 25 < floor < 35  # about ±60 at 95% with the default K
    # A duplicate set moves a rating K times its rotations: one set says more than one
    # match (narrower after the first result), and its floor is wider.
    assert deviation(1, k=32, seats=4, scheme="duplicate") < deviation(1, k=32, seats=4)
    assert deviation(10**5, k=32, seats=4, scheme="duplicate") > floor


def test_families_know_their_seats() -> None:
    assert family_seats("classic") == 4
    assert family_seats("hong-kong") == 4
    assert family_seats("classic/3p") == 3
    assert family_seats("three-player-stock") == 3
    assert family_seats("no-such-family") == 4


def rated_bot(app: Flask, name: str, rating: float, games: int) -> int:
    with get_db(app).begin() as s:
        b = Bot(name=name, url=f"http://127.0.0.1:9/{len(name)}", token_hash="0" * 64,
                check_state="passed")
        s.add(b)
        s.flush()
        s.add(BotVersion(bot_id=b.id, version=1, url=b.url))
        s.add(Rating(bot_id=b.id, family="classic", rating=rating, games=games))
        return b.id


@both_backends
def test_the_api_gives_the_interval(app: Flask, client: FlaskClient) -> None:
    bot_id = rated_bot(app, "steady", 1612.34, 40)
    m = margin_of(app.config, 40, "classic")
    board = client.get("/api/ratings?family=classic").get_json()
    (entry,) = board["items"]
    assert entry["margin"] == round(m, 1)
    assert entry["interval"] == [round(1612.34 - m, 1), round(1612.34 + m, 1)]
    (mine,) = client.get(f"/api/bots/{bot_id}").get_json()["ratings"]
    assert mine["margin"] == entry["margin"] and mine["interval"] == entry["interval"]
    doc = client.get("/api/openapi.json").get_json()
    props = doc["components"]["schemas"]["Rating"]["properties"]
    assert {"margin", "interval"} <= set(props) and "95%" in props["margin"]["description"]


@both_backends
def test_pages_show_the_interval_beside_the_provisional_mark(app: Flask,
                                                             client: FlaskClient) -> None:
    new = rated_bot(app, "<b>newcomer</b>", 1540.0, 3)
    old = rated_bot(app, "veteran", 1580.0, 400)
    wide = round(margin_of(app.config, 3, "classic"))
    narrow = round(margin_of(app.config, 400, "classic"))
    assert wide > narrow
    for url in ("/leaderboard?family=classic", f"/bots/{new}", f"/bots/{old}", "/bots", "/"):
        page = client.get(url).get_data(as_text=True)
        assert "<b>newcomer</b>" not in page, url  # the name typed by a user, escaped
        margins = re.findall(r'data-test="rating-margin" title="95% interval: (\d+) to (\d+) '
                             r'[^"]*">&plusmn;(\d+)</span>', page)
        assert margins, url
        for low, high, pm in margins:
            assert int(high) - int(low) in (2 * int(pm) - 1, 2 * int(pm), 2 * int(pm) + 1)
    board = client.get("/leaderboard?family=classic").get_data(as_text=True)
    assert f"&plusmn;{wide}</span><span class=\"prov\"" in board  # beside the ? mark
    assert f"&plusmn;{narrow}</span>" in board
    assert "95% interval" in board
