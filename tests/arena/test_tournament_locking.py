"""Pairing a Swiss round happens outside the tournament's row lock, and a pairing made from
rows that changed meanwhile is thrown away (the version check)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import create_engine, select, text
from sqlalchemy.exc import OperationalError

from arena.core.models import Bot, Match
from arena.core.storage import get_db
from arena.core.tournament_models import TournamentMatch, TournamentRound
from arena.tournaments import schedule, service
from referee.runner.match import Limits

from .test_read_path import finish_directly, real_log, seed


def swiss_with_round_one_played(app: Flask) -> int:
    seed(app, 12)
    db = get_db(app)
    with db.begin() as s:
        bots = s.scalars(select(Bot).order_by(Bot.id.desc()).limit(8)).all()
        t = service.create_tournament(s, name="locking", format="swiss", ruleset="standard",
                                      bots=bots, deals=1, limits=Limits(), rounds=3, seed=3)
        tid = t.id
    service.start(app, tid)
    with db.begin() as s:
        ids = list(s.scalars(select(TournamentMatch.match_id)
                             .join(Match, Match.id == TournamentMatch.match_id)
                             .where(TournamentMatch.tournament_id == tid,
                                    Match.state == "queued")))
    log_gz, totals = real_log()
    for m in ids:
        finish_directly(app, m, log_gz, totals, random.Random(m))
    return tid


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_swiss_pairing_runs_without_the_tournament_lock_and_rechecks_the_version(
        app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    tid = swiss_with_round_one_played(app)
    other = create_engine(str(get_db(app).engine.url))
    calls: list[bool] = []  # per pairing: was the tournament row locked meanwhile?
    real = schedule.swiss_round

    def spying(*args: Any, **kwargs: Any) -> schedule.Round:
        with other.connect() as conn:
            try:
                conn.execute(text("SELECT id FROM tournaments WHERE id = :t FOR UPDATE NOWAIT"),
                             {"t": tid})
                locked = False
            except OperationalError:
                locked = True
            if not calls and not locked:  # someone changes the tournament meanwhile
                conn.execute(text("UPDATE tournaments SET version = version + 1 "
                                  "WHERE id = :t"), {"t": tid})
            conn.commit()
        calls.append(locked)
        return real(*args, **kwargs)

    monkeypatch.setattr(schedule, "swiss_round", spying)
    report = service.advance(app, tid)
    other.dispose()
    assert report.closed_rounds == [1] and report.opened_rounds == [2]
    assert calls == [False, False]  # paired twice (the first went stale), never locked
    with get_db(app).begin() as s:
        numbers = list(s.scalars(select(TournamentRound.number)
                                 .where(TournamentRound.tournament_id == tid)))
    assert sorted(numbers) == [1, 2]


@pytest.mark.drill
@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_pairing_that_keeps_going_stale_is_finally_made_under_the_lock(
        app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    tid = swiss_with_round_one_played(app)
    other = create_engine(str(get_db(app).engine.url))
    calls: list[bool] = []
    real = schedule.swiss_round

    def always_stale(*args: Any, **kwargs: Any) -> schedule.Round:
        with other.connect() as conn:
            try:
                conn.execute(text("SELECT id FROM tournaments WHERE id = :t FOR UPDATE NOWAIT"),
                             {"t": tid})
                conn.execute(text("UPDATE tournaments SET version = version + 1 "
                                  "WHERE id = :t"), {"t": tid})
                calls.append(False)
            except OperationalError:
                calls.append(True)
            conn.commit()
        return real(*args, **kwargs)

    monkeypatch.setattr(schedule, "swiss_round", always_stale)
    report = service.advance(app, tid)
    other.dispose()
    assert report.opened_rounds == [2]
    assert calls == [False] * service.PAIRING_ATTEMPTS + [True]  # the last one, locked
