"""Bookkeeping slots: a match's heavy work that no deadline waits for, a few threads at a time.

The gate on real threads, and a real match job (real bots over loopback HTTP, the real
database) that waits for a slot to claim its match and to store its result, and only then.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from arena.core import bookkeeping
from arena.core.models import Match
from arena.core.storage import get_db
from arena.jobs.bodies import run_match_job

from .conftest import wait_for
from .test_live import new_match
from .test_matches import counts


def crowd(gate: bookkeeping.Gate, n: int) -> tuple[list[threading.Thread], threading.Event,
                                                    list[int]]:
    """``n`` threads that each take a slot and keep it until the event is set; the list holds
    [inside now, most inside at once]."""
    go = threading.Event()
    seen = [0, 0]
    lock = threading.Lock()

    def work() -> None:
        with gate.slot():
            with lock:
                seen[0] += 1
                seen[1] = max(seen[1], seen[0])
            go.wait(60)
            with lock:
                seen[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(n)]
    for t in threads:
        t.start()
    return threads, go, seen


def test_at_most_the_slots_are_held_and_the_rest_wait() -> None:
    gate = bookkeeping.Gate(2, wait_s=600)
    threads, go, seen = crowd(gate, 8)
    wait_for(lambda: gate.waiting == 6, 30, every_s=0.01, what="six threads to queue")
    assert seen[0] == 2
    go.set()
    for t in threads:
        t.join(30)
    assert seen == [0, 2] and gate.waiting == 0 and gate.went_ahead == 0


def test_a_holder_that_never_lets_go_delays_the_others_by_the_wait_only() -> None:
    """A slot holder stuck where nothing can stop it (a claim on someone's row lock, a dead
    database) must not stop the process's other matches from starting or finishing."""
    gate = bookkeeping.Gate(1, wait_s=0.2)
    stuck, go = threading.Event(), threading.Event()

    def holder() -> None:
        with gate.slot():
            stuck.set()
            go.wait(60)

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert stuck.wait(30)
        with gate.slot():  # after the wait, without a slot
            assert gate.went_ahead == 1
    finally:
        go.set()
        t.join(30)
    with gate.slot():  # the holder's slot came back, and the one never taken was not given
        threads, release, seen = crowd(gate, 1)
        wait_for(lambda: seen[0] == 1, 30, every_s=0.01, what="a newcomer to go ahead")
        assert gate.went_ahead == 2
        release.set()
        for th in threads:
            th.join(30)
    assert gate.waiting == 0
    with gate.slot(), gate.slot():  # exactly one slot: the second waits and goes ahead
        assert gate.went_ahead == 3


def test_no_slots_means_no_limit() -> None:
    gate = bookkeeping.Gate(0)
    threads, go, seen = crowd(gate, 8)
    wait_for(lambda: seen[0] == 8, 30, every_s=0.01, what="all eight inside at once")
    go.set()
    for t in threads:
        t.join(30)
    with pytest.raises(ValueError):
        bookkeeping.Gate(-1)
    with pytest.raises(ValueError):
        bookkeeping.Gate(1, wait_s=0)


@pytest.fixture
def one_slot() -> Iterator[bookkeeping.Gate]:
    bookkeeping.configure(1, wait_s=600)  # (the test holds the slot as long as it needs)
    try:
        yield bookkeeping.gate
    finally:
        bookkeeping.configure(0)


def state(app: Flask, match_id: int) -> str:
    with get_db(app).begin() as s:
        m = s.get(Match, match_id)
        assert m is not None
        return m.state


def test_a_match_claims_and_stores_only_with_a_slot(
        app: Flask, client: FlaskClient, four_bots: list[int],
        one_slot: bookkeeping.Gate) -> None:
    match_id = new_match(client, four_bots, deals=1)
    outcome: list[str] = []

    def job() -> None:
        with app.app_context():
            outcome.append(run_match_job(app, match_id))

    with one_slot.slot():  # a wave of other matches holds the slots: the claim waits
        thread = threading.Thread(target=job)
        thread.start()
        wait_for(lambda: one_slot.waiting == 1, 60, every_s=0.01, what="the claim to queue")
        assert state(app, match_id) == "queued"
    wait_for(lambda: state(app, match_id) == "running", 60, every_s=0.01, what="the claim")
    with one_slot.slot():  # the match plays on, but its deal's replay and result wait
        wait_for(lambda: one_slot.waiting == 1, 120, every_s=0.01, what="the result to queue")
        assert counts(app, match_id) == (0, 0)
    thread.join(120)
    assert outcome == ["finished"] and counts(app, match_id) == (1, 4)
