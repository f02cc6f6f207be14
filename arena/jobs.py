"""Job bodies: the only code in the service that calls the referee.

RQ delivers a job *at least* once, so every job here is idempotent:

``play_match(match_id)``
    1. **Claim** with one conditional UPDATE: ``queued`` (or ``running`` with an expired
       lease) becomes ``running`` under a fresh lease token.  A second delivery finds the
       match running under a live lease, or finished, and returns without doing anything.
    2. **Play** with :func:`referee.match.run_match`, while a heartbeat thread extends the
       lease (``LEASE_S``) every third of it.  If the lease is lost (another worker took the
       match over after this one stalled), the match is abandoned at the next turn.
    3. **Finish** in one transaction: ``running`` with *our* token becomes ``finished``; the
       family ledger row is locked; the result (unique per match), the seats' standings and
       the rating events (unique per match and bot) are written.  Any conflict rolls the
       whole transaction back, so a result and its ratings are stored exactly once.

``check_bot(bot_id, check_id=None)``
    Run a health check (the probe: a real match opening, :mod:`referee.health`) and apply
    it (:func:`arena.bots.run_check`): admit a submitted bot, switch a bot to a new URL, or
    count a failure.  ``check_id`` names the queued check a web request wrote; without it
    (the sweep) the job writes its own.  A check already done is not run again.

After every finished match, :func:`arena.bots.judge_matches` pauses the seated bots that keep
forfeiting or faulting (in the same transaction as the result).
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import socket
import threading
import uuid
from typing import Any

from flask import Flask, current_app, has_app_context
from sqlalchemy import and_, or_, select, update
from sqlalchemy.exc import IntegrityError

from referee import find_ruleset
from referee import log as match_log
from referee.match import MatchRecord, TurnRecord, run_match
from referee.netguard import NetPolicy
from referee.players import HttpPlayer
from referee.redact import scrub_generic

from . import bots as bot_service
from .matches import lease_deadline, limits_of, wire_match_id
from .models import Bot, Match, MatchResult, MatchSeat, utcnow
from .ratings import Placement, apply_result, lock_family
from .signing import secret_bytes
from .storage import get_db

log = logging.getLogger(__name__)


class LeaseLostError(Exception):
    """Another worker took the match over; this attempt must stop without writing."""


def _app() -> Flask:
    if has_app_context():
        app: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
        return app
    from .worker import worker_app

    return worker_app()


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# --- play_match ------------------------------------------------------------------------------


def play_match(match_id: int) -> str:
    """RQ entry point (by dotted path).  Returns what happened, for the job's result."""
    app = _app()
    with app.app_context():
        outcome = run_match_job(app, match_id)
        if outcome in ("finished", "failed"):
            from .tournaments.service import on_match_done

            on_match_done(app, match_id)  # idempotent; the clock does it too
        return outcome


def claim(app: Flask, match_id: int, token: str) -> str:
    """Try to take the match; returns ``claimed`` or why not."""
    db = get_db(app)
    now = utcnow()
    max_attempts = int(app.config["MATCH_MAX_ATTEMPTS"])
    claimable = or_(
        Match.state == "queued",
        and_(Match.state == "running", Match.lease_expires_at < now),
    )
    with db.begin() as s:
        res = s.execute(
            update(Match)
            .where(Match.id == match_id, claimable, Match.attempts < max_attempts)
            .values(
                state="running",
                lease_token=token,
                lease_owner=owner_id(),
                lease_expires_at=lease_deadline(app),
                attempts=Match.attempts + 1,
                started_at=now,
            )
        )
        if res.rowcount == 1:  # type: ignore[attr-defined]
            return "claimed"
        match = s.get(Match, match_id)
        if match is None:
            return "missing"
        if match.state in ("finished", "failed"):
            return f"already {match.state}"
        if match.attempts >= max_attempts and s.execute(
            update(Match)
            .where(Match.id == match_id, claimable)
            .values(state="failed", error=f"gave up after {match.attempts} attempts",
                    finished_at=now, lease_token=None)
        ).rowcount == 1:  # type: ignore[attr-defined]
            return "failed"
        return "held by another worker"


class Heartbeat:
    """Extends the lease every third of ``LEASE_S``; sets ``lost`` if it cannot."""

    def __init__(self, app: Flask, match_id: int, token: str) -> None:
        self.app, self.match_id, self.token = app, match_id, token
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="lease-heartbeat")

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        period = float(self.app.config["LEASE_S"]) / 3
        while not self._stop.wait(period):
            try:
                self.beat()
            except Exception as exc:  # database hiccup: try again next period
                log.warning("lease heartbeat of match %s failed: %s", self.match_id, exc)

    def beat(self) -> None:
        with get_db(self.app).begin() as s:
            res = s.execute(
                update(Match)
                .where(Match.id == self.match_id, Match.lease_token == self.token,
                       Match.state == "running")
                .values(lease_expires_at=lease_deadline(self.app))
            )
            if res.rowcount != 1:  # type: ignore[attr-defined]
                self.lost.set()


def run_match_job(app: Flask, match_id: int) -> str:
    token = uuid.uuid4().hex
    outcome = claim(app, match_id, token)
    if outcome != "claimed":
        log.info("match %s: not played (%s)", match_id, outcome)
        return outcome
    try:
        with Heartbeat(app, match_id, token) as hb:
            record = play(app, match_id, hb)
        return finish(app, match_id, token, record)
    except LeaseLostError:
        log.warning("match %s: lease lost, abandoning this attempt", match_id)
        return "lease lost"
    except Exception as exc:
        release(app, match_id, token, scrub_generic(f"{type(exc).__name__}: {exc}"))
        raise


def play(app: Flask, match_id: int, hb: Heartbeat) -> MatchRecord:
    db = get_db(app)
    with db.begin() as s:
        match = s.get(Match, match_id)
        assert match is not None
        seats = s.scalars(
            select(MatchSeat).where(MatchSeat.match_id == match_id).order_by(MatchSeat.seat)
        ).all()
        # Each seat: the URL of the version that sits there, the bot's current signing
        # secret (a rotation takes effect from the next match), and the label the log names
        # the seat by: the bot's id, never its URL.
        sitting = [(seat.bot_version.url, secret_bytes(app, seat.bot), f"bot:{seat.bot_id}")
                   for seat in seats]
        rules = find_ruleset(match.ruleset)
        seed, deals, limits = match.seed, match.deals, limits_of(match)
    policy = NetPolicy(allow_private=bool(app.config["ALLOW_PRIVATE_BOT_URLS"]))
    players = [HttpPlayer(url, secret=secret, policy=policy, label=label)
               for url, secret, label in sitting]

    def on_turn(turn: TurnRecord) -> None:
        if hb.lost.is_set():
            raise LeaseLostError()

    try:
        return run_match(rules, players, seed, deals, limits,
                         match_id=wire_match_id(app.config, match_id), on_turn=on_turn)
    finally:
        for p in players:
            p.close()


def release(app: Flask, match_id: int, token: str, error: str) -> None:
    """Give a claimed match back (state ``queued``) after an infrastructure error, so a
    retry of the job can claim it at once."""
    try:
        with get_db(app).begin() as s:
            s.execute(
                update(Match)
                .where(Match.id == match_id, Match.lease_token == token,
                       Match.state == "running")
                .values(state="queued", lease_token=None, lease_expires_at=None,
                        error=error[:2000])
            )
    except Exception as exc:  # the lease will simply expire
        log.warning("match %s: could not release: %s", match_id, exc)


def finish(app: Flask, match_id: int, token: str, record: MatchRecord) -> str:
    """Store the result and apply ratings, all or nothing (see the module docstring)."""
    document = match_log.to_document(record)
    log_gz = gzip.compress(json.dumps(document, separators=(",", ":")).encode(), mtime=0)
    db = get_db(app)
    now = utcnow()
    try:
        with db.begin() as s:
            moved = s.execute(
                update(Match)
                .where(Match.id == match_id, Match.lease_token == token,
                       Match.state == "running")
                .values(state="finished", finished_at=now, lease_token=None,
                        lease_expires_at=None, error="")
            )
            if moved.rowcount != 1:  # type: ignore[attr-defined]
                raise LeaseLostError()
            match = s.get(Match, match_id)
            assert match is not None
            family = lock_family(s, match.family)
            result = MatchResult(
                match_id=match_id,
                family=match.family,
                created_at=now,
                totals=_totals(record),
                log_gz=log_gz,
            )
            s.add(result)
            s.flush()
            seats = {x.seat: x for x in s.scalars(
                select(MatchSeat).where(MatchSeat.match_id == match_id))}
            lat = {x.seat: x for x in record.latency}
            for st in record.standings:
                seat = seats[st.seat]
                seat.rank, seat.score, seat.wins = st.rank, st.score, st.wins
                seat.strikes, seat.forfeited = st.strikes, st.forfeited
                if st.seat in lat:
                    x = lat[st.seat]
                    seat.calls, seat.p50_ms, seat.p95_ms, seat.max_ms = (
                        x.calls, x.p50_ms, x.p95_ms, x.max_ms)
            if match.rated:
                apply_result(
                    s,
                    family=match.family,
                    result_id=result.id,
                    match_id=match_id,
                    placements=[Placement(x.bot_id, x.rank or 0) for x in seats.values()],
                    initial=float(app.config["ELO_INITIAL"]),
                    k=float(app.config["ELO_K"]),
                )
            family.results += 1
            seated = [x.bot_id for x in seats.values()]
            s.execute(update(Bot).where(Bot.id.in_(seated)).values(idle_since=now))
            paused = bot_service.judge_matches(app, s, seated)
            if paused:
                log.info("match %s: paused bots %s (forfeits or faults)", match_id, paused)
    except LeaseLostError:
        return "lease lost before finishing"
    except IntegrityError:
        log.warning("match %s: result already stored; nothing written", match_id)
        return "duplicate result refused"
    return "finished"


def _totals(record: MatchRecord) -> dict[str, Any]:
    return {
        "totals": list(record.totals),
        "strikes": [
            {"seat": x.seat, "deal": x.deal, "turn": x.turn, "reason": x.reason,
             "detail": x.detail}
            for x in record.strikes
        ],
        "forfeits": [{"seat": f.seat, "deal": f.deal, "turn": f.turn} for f in record.forfeits],
        "notes": [
            {"seat": n.seat, "call": n.call, "fault": n.fault, "detail": n.detail}
            for n in record.notes
        ],
        "seats": [s.to_json() for s in record.seats],
    }


# --- check_bot -------------------------------------------------------------------------------


def check_bot(bot_id: int, check_id: int | None = None) -> str:
    """RQ entry point: run one health check of a bot and apply it."""
    app = _app()
    with app.app_context():
        return bot_service.run_check(app, bot_id, check_id)
