"""Job bodies: the only code in the service that calls the referee.

RQ delivers a job *at least* once, so every job here is idempotent:

``play_match(match_id)``
    1. **Claim** with one conditional UPDATE: ``queued`` (or ``running`` with an expired
       lease) becomes ``running`` under a fresh lease token.  A second delivery finds the
       match running under a live lease, or finished, and returns without doing anything.
       The claim's connection goes back to the pool at once: a match holds no database
       connection while it waits on bots.
    2. **Play** with :func:`referee.runner.match.run_match`.  The process's :class:`LeaseKeeper`
       extends the leases of *all* the matches this process plays with one UPDATE every
       third of ``LEASE_S`` (a worker running a hundred matches renews them in one
       statement, not a hundred).  If a lease is lost (another worker took the match over
       after this one stalled), the match is abandoned at the next turn.  At every turn the
       match also obeys its worker (:mod:`arena.jobs.execution`): past its wall-clock budget it
       stops with an error (RQ retries it); when its worker is shutting down it gives itself
       back to the queue; when its worker gave up on it, it stops and writes nothing.  A
       retried attempt deals new cards (:mod:`arena.play.reseed`: its bots saw the last one's).
    3. **Finish** in one transaction: ``running`` with *our* token becomes ``finished``; the
       seats' standings, the bots' idle time and their health judgement are written; then,
       under the family ledger row's lock (taken last, so concurrent finishes wait for each
       other only there, and held for the ledger's own writes only), the result (unique per
       match), the ratings and the rating events (unique per match and bot).  Any conflict
       rolls the whole transaction back, so a result and its ratings are stored exactly
       once.  If the database does not answer then (an outage, a failover), the result is
       kept in Redis and the store tried again with a back-off for ``MATCH_STORE_RETRY_S``
       (:func:`store_patiently`, :mod:`arena.jobs.result_spool`); a later attempt at the
       match stores a kept result instead of playing the match again.

``check_bot(bot_id, check_id=None)``
    Run a health check (the probe: a real match opening, :mod:`referee.runner.health`) and apply
    it (:func:`arena.bots.service.run_check`): admit a submitted bot, switch a bot to a new URL, or
    count a failure.  ``check_id`` names the queued check a web request wrote; without it
    (the sweep) the job writes its own.  A check already done is not run again.

After every finished match, :func:`arena.bots.service.judge_matches` pauses the seated bots that
keep forfeiting or faulting (in the same transaction as the result), and each seat's last raw
answers go to its owner's view of the bot's calls (:mod:`arena.bots.calls`, after the commit).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from flask import Flask, current_app
from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm import Session, joinedload

from arena.bots import service as bot_service
from arena.bots.call_metrics import CallMeter
from arena.bots.calls import CallRecorder
from arena.core import bookkeeping, logs, metrics
from arena.core.jsontext import compact_json
from arena.core.models import (
    Bot,
    LadderSetMatch,
    Match,
    MatchResult,
    MatchSeat,
    utcnow,
)
from arena.core.queue import get_queue
from arena.core.signing import Signing, signing_for
from arena.core.storage import get_db
from arena.live import channel as live
from arena.notify import delivery as webhook_delivery
from arena.notify import events
from arena.play import challenges, reseed
from arena.play.ledger_batch import Applied, apply_batch, count_and_lock
from arena.play.matches import enqueue_match, lease_deadline, limits_of, wire_match_id
from arena.play.ratings import SET_UNKNOWN, rating_outcome
from referee import find_ruleset
from referee.runner.match import Limits, MatchRecord, MatchWatcher, TurnRecord, run_match
from referee.wire.netguard import NetPolicy
from referee.wire.players import HttpPlayer, Player
from referee.wire.redact import scrub_generic

from . import execution, ledger, result_spool
from .backoff import Backoff
from .execution import HandbackRequested, JobAbandonedError, JobControl
from .result_spool import FinishedResult

DATABASE_DOWN = (OperationalError, InterfaceError, PoolTimeoutError)
"""What a store that may succeed later raises: no connection, a connection lost mid-way, a
server that refuses (starting, shutting down, read-only standby), no pooled connection."""

log = logging.getLogger(__name__)


class LeaseLostError(Exception):
    """Another worker took the match over; this attempt must stop without writing."""


def _app() -> Flask:
    """The app of the worker running this job.  The worker owns it and pushes its context
    around every job (:mod:`arena.jobs.worker`); a job body never reaches for the worker."""
    app: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
    return app


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# --- play_match ------------------------------------------------------------------------------


def play_match(match_id: int) -> str:
    """RQ entry point (by dotted path).  Returns what happened, for the job's result."""
    app = _app()
    with app.app_context(), logs.bind(match_id=match_id):
        link = TournamentLink(app, match_id)
        outcome = run_match_job(app, match_id, link)
        if outcome in ("finished", "failed"):
            from arena.tournaments.service import on_tournament_match_done

            with bookkeeping.slot():
                # idempotent; the clock does it too
                on_tournament_match_done(app, link.tournament_id(), match_id)
                link.announce()
                if link.frees_challenge_slot():
                    start_challenges(app, match_id)
        return outcome


def start_challenges(app: Flask, match_id: int) -> None:
    """A challenge's match is over, so a challenge slot came free: start the challenges
    waiting for one (the clock does too)."""
    try:
        challenges.dispatch(app)
    except Exception as exc:  # never fails a job: the clock starts them a little later
        log.warning("match %s: waiting challenges not started: %s", match_id, exc)


class TournamentLink:
    """The tournament a match belongs to (if any), looked up once per job: the job tells the
    live relay about it when the match starts, when it ends and when the tournament
    advanced, and a ladder match (most of them) belongs to none."""

    def __init__(self, app: Flask, match_id: int) -> None:
        self.app, self.match_id = app, match_id
        self._looked_up = False
        self._id: int | None = None
        self._kind: str | None = None

    def look_up(self, s: Session) -> None:
        """Look the tournament up in the caller's transaction (one that reads the match)."""
        from arena.core.tournament_models import TournamentMatch

        self.found(s.scalar(select(TournamentMatch.tournament_id)
                            .where(TournamentMatch.match_id == self.match_id)))

    def found(self, tournament_id: int | None, kind: str | None = None) -> None:
        """The tournament, as the caller looked it up (:func:`load_table`), and the match's
        kind when the caller read it."""
        self._id, self._looked_up = tournament_id, True
        self._kind = kind

    def frees_challenge_slot(self) -> bool:
        """Whether the match's end may let a waiting challenge start: only a challenge's own
        match holds a challenge slot (:func:`arena.play.challenges.active`; the slots' number
        changes with the live workers, which the clock's dispatch follows).  A match of
        unknown kind (its result stored by a later attempt, no table read) is assumed to.
        Asking at every other match's end was one more transaction a match, ~2 ms of a
        worker's CPU, for nothing."""
        return self._kind is None or self._kind == challenges.KIND

    def tournament_id(self) -> int | None:
        """The tournament's id (None: none, or the database did not answer: then the clock
        advances the tournament and the relay's page catches up a little later)."""
        if not self._looked_up:
            try:
                with get_db(self.app).begin() as s:
                    self.look_up(s)
            except Exception as exc:  # never fails a job; asked again next time
                log.warning("match %s: its tournament not looked up: %s", self.match_id, exc)
                return None
        return self._id

    def announce(self) -> None:
        """Tell the live relay that the page of the match's tournament (if any) changed."""
        if not self.app.config["LIVE_ENABLED"]:
            return
        tid = self.tournament_id()
        if tid is not None:  # (never raises)
            live.notify_tournament(get_queue(self.app).redis, self.app.config, tid)


def announce_tournament(app: Flask, match_id: int) -> None:
    """Tell the live relay that the page of the match's tournament (if any) changed."""
    TournamentLink(app, match_id).announce()


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


@dataclass(eq=False)
class Lease:
    """A match this process is playing under ``token``; ``lost`` is set when another worker
    holds it now."""

    match_id: int
    token: str
    control: JobControl = execution.NEVER
    lost: threading.Event = field(default_factory=threading.Event)


class LeaseKeeper:
    """Renews every lease of one process (and app) in one statement per ``LEASE_S / 3``.

    Its thread runs while the process holds leases and ends when it holds none.  A lease
    whose execution was abandoned (:mod:`arena.jobs.execution`) is no longer renewed, so it runs
    out and the reconciler hands the match to another worker.
    """

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.pid = os.getpid()
        self._leases: dict[str, Lease] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def hold(self, match_id: int, token: str,
             control: JobControl = execution.NEVER) -> Iterator[Lease]:
        lease = Lease(match_id, token, control)
        with self._lock:
            self._leases[token] = lease
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="lease-keeper")
                self._thread.start()
        try:
            yield lease
        finally:
            with self._lock:
                self._leases.pop(token, None)

    def _run(self) -> None:
        period = float(self.app.config["LEASE_S"]) / 3
        next_at = time.monotonic() + period
        while True:
            time.sleep(max(0.0, next_at - time.monotonic()))
            next_at += period
            with self._lock:
                if not self._leases:
                    self._thread = None
                    return
                leases = [x for x in self._leases.values() if not x.control.abandoned.is_set()]
            try:
                self.renew(leases)
            except Exception as exc:  # database hiccup: try again next period
                log.warning("renewing %d lease(s) failed: %s", len(leases), exc)

    def renew(self, leases: list[Lease]) -> None:
        """Extend the given leases; mark the ones no longer ours as lost."""
        if not leases:
            return
        ids = [x.match_id for x in leases]
        tokens = [x.token for x in leases]
        ours = and_(Match.id.in_(ids), Match.lease_token.in_(tokens), Match.state == "running")
        with get_db(self.app).begin() as s:
            s.execute(update(Match).where(ours).values(lease_expires_at=lease_deadline(self.app)))
            held = set(s.scalars(select(Match.lease_token).where(ours)))
        for lease in leases:
            if lease.token not in held:
                lease.lost.set()


def leases(app: Flask) -> LeaseKeeper:
    """The lease keeper of this process for ``app`` (a forked child gets its own)."""
    keeper: LeaseKeeper | None = app.extensions.get("arena.leases")
    if keeper is None or keeper.pid != os.getpid():
        keeper = app.extensions["arena.leases"] = LeaseKeeper(app)
    return keeper


OUTCOMES = {"finished": "finished", "failed": "failed", "lease lost": "lease_lost",
            "lease lost before finishing": "lease_lost", "duplicate result refused": "lease_lost",
            "abandoned": "abandoned"}
"""What :func:`run_match_job` returned -> the ``outcome`` label of ``arena_match_jobs_total``
(a hand-back's text names its new job: ``handed_back``; a match not claimed: ``not_played``)."""


def outcome_label(outcome: str) -> str:
    if outcome.startswith("handed back"):
        return "handed_back"
    return OUTCOMES.get(outcome, "not_played")


def run_match_job(app: Flask, match_id: int, link: TournamentLink | None = None) -> str:
    try:
        outcome = _run_match_job(app, match_id, link or TournamentLink(app, match_id))
    except Exception:
        metrics.MATCH_JOBS.labels("error").inc()
        raise
    metrics.MATCH_JOBS.labels(outcome_label(outcome)).inc()
    return outcome


def _run_match_job(app: Flask, match_id: int, link: TournamentLink) -> str:
    control = execution.current()
    token = uuid.uuid4().hex
    try:
        with bookkeeping.slot():
            outcome = claim(app, match_id, token)
    except DATABASE_DOWN as exc:
        # The claim may have committed without this job hearing so (the connection was
        # lost with its answer, a failover): the match would be held under our token, with
        # no lease renewed, until LEASE_S ran out.  Once the database answers, give back
        # whatever we hold (nothing, if the claim never committed); RQ's retry of the job
        # then claims it at once.  (Outside the bookkeeping slot: waiting holds none.)
        release_patiently(app, match_id, token, scrub_generic(
            f"{type(exc).__name__}: {exc}"), control)
        raise
    with bookkeeping.slot():
        if outcome != "claimed":
            log.info("match %s: not played (%s)", match_id, outcome)
            return outcome
        # An earlier attempt played the match to its end but could not store the result:
        # store that one instead of playing again (arena.jobs.result_spool).
        kept = result_spool.find(app, match_id)
    table = None
    publisher = None
    if kept is None:
        try:
            table = load_table(app, match_id, token, link)
        except LeaseLostError:
            log.warning("match %s: lease lost, abandoning this attempt", match_id)
            return "lease lost"
        except DATABASE_DOWN as exc:
            # Claimed, then the database went away (a failover): give the match back once
            # it answers, so that RQ's retry of this job claims it at once instead of
            # finding it held under a lease nobody renews until it runs out (LEASE_S).
            release_patiently(app, match_id, token, scrub_generic(
                f"{type(exc).__name__}: {exc}"), control)
            raise
        publisher = start_broadcast(app, match_id, link, table)
    log.info("match %s: claimed", match_id)
    claimed_at = time.perf_counter()
    metrics.MATCHES_RUNNING.inc()
    stopped: dict[str, Any] = {"state": "stopped"}
    calls = CallRecorder(app)
    try:
        with leases(app).hold(match_id, token, control) as lease:
            if kept is not None:
                log.info("match %s: storing the result its attempt %s kept", match_id,
                         kept.attempt_match_id)
                return store_patiently(app, match_id, token, kept, control)
            record = play(app, match_id, lease, control, publisher, calls, table)
            result = FinishedResult.of(record)
            outcome = store_patiently(app, match_id, token, result, control)
        if outcome == "finished":
            stopped = {"state": "finished", "totals": result.final}
            with bookkeeping.slot():
                calls.flush(match_id)  # only a stored log's calls: each has its exact request
        if outcome == "finished":
            metrics.MATCH_SECONDS.observe(time.perf_counter() - claimed_at)
        log.info("match %s: %s", match_id, outcome, extra={"outcome": outcome})
        return outcome
    except LeaseLostError:
        log.warning("match %s: lease lost, abandoning this attempt", match_id)
        return "lease lost"
    except HandbackRequested:
        release(app, match_id, token, "handed back: its worker was shutting down")
        job_id = enqueue_match(app, match_id, only_if=Match.state == "queued")
        log.info("match %s: handed back to the queue as %s", match_id, job_id)
        return f"handed back (re-enqueued as {job_id})"
    except JobAbandonedError:
        release(app, match_id, token, "abandoned by its worker")
        log.warning("match %s: its worker gave up on this attempt; handed back", match_id)
        return "abandoned"
    except Exception as exc:
        why = scrub_generic(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, DATABASE_DOWN):  # the release would fail now too: wait for it
            release_patiently(app, match_id, token, why, control)
        else:
            release(app, match_id, token, why)
        raise
    finally:
        metrics.MATCHES_RUNNING.dec()
        if publisher is not None:
            publisher.publish("end", stopped)
            publisher.close()
            link.announce()


@dataclass(frozen=True)
class Table:
    """What an attempt at a match needs from the database, read in one transaction when it
    starts (the live broadcast's ``start`` event and the players both come from it)."""

    ruleset: str
    deals: int
    attempt: int
    limits: Limits
    seed: int
    """The seed this attempt deals from (:func:`arena.play.reseed.dealt_seed`)."""
    wire_id: str
    shared: bool
    """Whether other matches deal the same cards (:func:`arena.play.reseed.deals_shared`)."""
    seats: list[tuple[str, Signing, str]]
    """Each seat: the URL of the version sitting there, the bot's signing secrets in force,
    and the label the log names the seat by (the bot's id, never its URL)."""
    bot_ids: list[int]
    names: list[str]


def load_table(app: Flask, match_id: int, token: str,
               link: TournamentLink | None = None) -> Table:
    """The match's :class:`Table`, for the attempt holding ``token`` (raises
    :class:`LeaseLostError` when another one took it over: its attempts count is not ours).
    With ``link``, the match's tournament is looked up in the same transaction."""
    with bookkeeping.slot(), get_db(app).begin() as s:
        match = s.get(Match, match_id)
        assert match is not None
        if match.lease_token != token:
            raise LeaseLostError()
        # The seats with their versions and bots in one statement (not two lazy loads a
        # seat): a worker starting a hundred matches at once shares a few connections.
        seats = s.scalars(
            select(MatchSeat).where(MatchSeat.match_id == match_id)
            .options(joinedload(MatchSeat.bot_version), joinedload(MatchSeat.bot))
            .order_by(MatchSeat.seat)
        ).all()
        # A rotation of the secrets takes effect from the next match; during its grace
        # period the previous secret signs too.
        now = utcnow()
        shared, tournament_id = reseed.shared_and_tournament(s, match_id)
        # A retry deals new cards: its bots saw the last attempt's (arena.play.reseed).  The
        # log records the seed dealt, so verify and the replay re-deal exactly what was played.
        seed = match.seed if shared else reseed.attempt_seed(match.seed, match.attempts)
        if link is not None:
            link.found(tournament_id, match.kind)
        return Table(
            ruleset=match.ruleset, deals=match.deals, attempt=match.attempts,
            limits=limits_of(match), seed=seed,
            wire_id=wire_match_id(app.config, match_id, match.attempts), shared=shared,
            seats=[(seat.bot_version.url, signing_for(app, seat.bot, now),
                    f"bot:{seat.bot_id}") for seat in seats],
            bot_ids=[seat.bot_id for seat in seats], names=[seat.bot.name for seat in seats])


def start_broadcast(app: Flask, match_id: int, link: TournamentLink | None = None,
                    table: Table | None = None) -> live.LivePublisher | None:
    """The live publisher of this attempt, its ``start`` event sent (None: live is off, or
    the broadcast could not start; the match is played all the same).  ``table``: the
    attempt's, when the caller read it already."""
    if not app.config["LIVE_ENABLED"]:
        return None
    try:
        if table is None:
            with get_db(app).begin() as s:
                match = s.get(Match, match_id)
                if match is None:
                    return None
                token = match.lease_token or ""
            table = load_table(app, match_id, token)
        rules = find_ruleset(table.ruleset)
        # ``state``: what the match page's badge shows from now on (static/replay.js).
        start = {"match_id": match_id, "state": "running", "ruleset": table.ruleset,
                 "players": rules.players,
                 "deals": table.deals, "attempt": table.attempt,
                 "seats": [{"seat": i, "name": name, "bot_id": bot_id}
                           for i, (name, bot_id) in enumerate(zip(table.names, table.bot_ids,
                                                                  strict=True))]}
        # Hands are revealed at each deal's end only when the same deals are not to be
        # dealt again: not in a duplicate table's rotations.  A retried attempt of any
        # other match deals new cards (arena.play.reseed), and a later retry newer ones still.
        reveal = not table.shared
        publisher = live.LivePublisher(get_queue(app).redis, app.config, match_id, rules,
                                       reveal=reveal)
    except Exception as exc:
        log.warning("match %s: no live broadcast: %s", match_id, exc)
        return None
    publisher.publish("start", {**start, "reveal": reveal})
    (link or TournamentLink(app, match_id)).announce()
    return publisher


class _Held(Protocol):
    """What :func:`play` needs of its lease: the token it claimed with, and whether it was
    lost since."""

    token: str
    lost: threading.Event


def play(app: Flask, match_id: int, hb: _Held,
         control: JobControl = execution.NEVER,
         watcher: MatchWatcher | None = None,
         calls: CallRecorder | None = None,
         table: Table | None = None) -> MatchRecord:
    """Play the attempt holding ``hb``; ``table``: the attempt's, when the caller read it
    already (:func:`load_table`)."""
    if table is None:
        table = load_table(app, match_id, hb.token)
    rules = find_ruleset(table.ruleset)
    sitting, bot_ids = table.seats, table.bot_ids
    seed, wire_id, deals, limits = table.seed, table.wire_id, table.deals, table.limits
    policy = NetPolicy(allow_private=bool(app.config["ALLOW_PRIVATE_BOT_URLS"]))
    # Of a non-2xx answer, the body's first bytes are read for the owner's view of the calls
    # (a bot's 500 traceback): one more than is kept, so the view can say it was cut.
    error_body = int(app.config["BOT_CALLS_ANSWER_MAX"]) + 1 if calls is not None else 0
    # Request bodies written by orjson: the same bytes as the referee's own encoder (a
    # request holds no float), 80 -> 25 us a move in a pool worker (arena.core.jsontext).
    players: list[Player] = [HttpPlayer(url, secrets=signing.secrets,
                                        legacy_v1=signing.legacy_v1, policy=policy,
                                        label=label, error_body_max=error_body,
                                        encoder=compact_json)
                             for url, signing, label in sitting]
    if calls is not None:  # each seat's raw answers, for its owner (arena.bots.calls)
        players = calls.wrap(players, bot_ids)
    meter = CallMeter(limits)  # outcomes, latency, deadline overshoot (arena.bots.call_metrics)
    players = meter.wrap(players)

    def on_turn(turn: TurnRecord) -> None:
        meter.on_turn(turn)
        if calls is not None:
            calls.on_turn(turn)
        if hb.lost.is_set():
            raise LeaseLostError()
        control.check()

    try:
        record = run_match(rules, players, seed, deals, limits,
                           match_id=wire_id, on_turn=on_turn,
                           watcher=watcher)
        meter.finished(record)
        return record
    finally:
        for p in players:
            p.close()


def release(app: Flask, match_id: int, token: str, error: str) -> None:
    """Give a claimed match back (state ``queued``) after an infrastructure error, so a
    retry of the job can claim it at once."""
    try:
        give_back(app, match_id, token, error)
    except Exception as exc:  # the lease will simply expire
        log.warning("match %s: could not release: %s", match_id, exc)


def give_back(app: Flask, match_id: int, token: str, error: str) -> None:
    """One try of :func:`release`'s ``UPDATE`` (raises what the database raised)."""
    with get_db(app).begin() as s:
        s.execute(
            update(Match)
            .where(Match.id == match_id, Match.lease_token == token, Match.state == "running")
            .values(state="queued", lease_token=None, lease_expires_at=None, error=error[:2000])
        )


def release_patiently(app: Flask, match_id: int, token: str, error: str,
                      control: JobControl = execution.NEVER) -> None:
    """:func:`release`, tried again while the database does not answer (the back-off of
    :func:`store_patiently`), for as long as the claim's lease would hold the match anyway
    (``LEASE_S``): after that the reconciler gives it to another job."""
    give_up_at = time.monotonic() + float(app.config["LEASE_S"])
    backoff = Backoff(0.5, float(app.config["MATCH_STORE_RETRY_MAX_WAIT_S"]))
    while True:
        try:
            give_back(app, match_id, token, error)
            return
        except DATABASE_DOWN as exc:
            left = give_up_at - time.monotonic()
            if left <= 0 or control.abandoned.is_set():
                log.warning("match %s: could not release: %s", match_id, exc)
                return
            control.abandoned.wait(min(backoff.take(), left))
        except Exception as exc:  # the lease will simply expire
            log.warning("match %s: could not release: %s", match_id, exc)
            return


def store_patiently(app: Flask, match_id: int, token: str, result: FinishedResult,
                    control: JobControl = execution.NEVER) -> str:
    """:func:`finish`, tried again while the database does not answer.

    A match that was played to its end is worth waiting for: at the first failure its
    result is kept in Redis (:mod:`arena.jobs.result_spool`), then the store is tried again
    with a back-off (half a second doubling up to ``MATCH_STORE_RETRY_MAX_WAIT_S``) for
    ``MATCH_STORE_RETRY_S``, each try in a bookkeeping slot of its own (never held while
    waiting).  The lease stays held (the caller's) and is renewed once the database is
    back.  Past the bound, or when the worker gives up on the job, the error is raised: the
    job fails, and the next attempt at the match stores the kept result.  A store that
    committed but whose answer was lost is recognised at the next try (the stored log is
    this one), so a result and its ratings are applied once."""
    bound = float(app.config["MATCH_STORE_RETRY_S"])
    backoff = Backoff(0.5, float(app.config["MATCH_STORE_RETRY_MAX_WAIT_S"]))
    give_up_at = time.monotonic() + bound
    kept = False
    failures = 0
    while True:
        try:
            # (no slot here: the batch's leader takes one, and a finish waiting for its
            # batch holds none)
            outcome = finish(app, match_id, token, result)
        except DATABASE_DOWN as exc:
            failures += 1
            if not kept:
                kept = result_spool.keep(app, match_id, result)
            left = give_up_at - time.monotonic()
            if left <= 0 or control.abandoned.is_set():
                log.error("match %s: result not stored after %d tries (%s); %s", match_id,
                          failures, type(exc).__name__,
                          "kept in Redis for the next attempt" if kept else "it will be replayed")
                raise
            wait = min(backoff.take(), left)
            log.warning("match %s: database unreachable while storing the result (%s); "
                        "trying again in %.1f s", match_id, type(exc).__name__, wait)
            control.abandoned.wait(wait)
            continue
        if failures and outcome != "finished" and stored_is(app, match_id, result):
            outcome = "finished"  # an earlier try committed, or a later attempt stored it
        if failures:
            log.info("match %s: result stored after %d failed tries", match_id, failures)
        if kept:
            result_spool.drop(app, match_id)
        return outcome


def stored_is(app: Flask, match_id: int, result: FinishedResult) -> bool:
    """Whether the match's stored result is this one (its log, byte for byte)."""
    with get_db(app).begin() as s:
        stored = s.scalar(select(MatchResult.log_gz).where(MatchResult.match_id == match_id))
    return stored is not None and bytes(stored) == result.log_gz


def finish(app: Flask, match_id: int, token: str,
           played: MatchRecord | FinishedResult) -> str:
    """Store the result and apply ratings, all or nothing (see the module docstring), in
    the process's next group commit (:mod:`arena.jobs.ledger`)."""
    result = played if isinstance(played, FinishedResult) else FinishedResult.of(played)
    batcher = ledger.batcher_for(app, lambda works: store_batch(app, works), bookkeeping.slot)
    return batcher.submit((match_id, token, result))


@dataclass
class _Own:
    """A match whose own writes are done in the batch's transaction: what its ledger writes
    need."""

    match_id: int
    family: str
    rated: bool
    seats: list[MatchSeat]
    result: FinishedResult


def store_batch(app: Flask,
                works: list[tuple[int, str, FinishedResult]]) -> list[str | Exception]:
    """Store finished matches in one transaction (:mod:`arena.jobs.ledger`): an outcome per
    match, or the error its store raised.  A batch that fails for any reason but the
    database's (a result stored already, a match whose data does not fit) is stored again
    one match per transaction, so the failure is that match's alone; a database that does
    not answer fails the batch (every match's store tries again, :func:`store_patiently`)."""
    try:
        return list(_store_together(app, works))
    except DATABASE_DOWN:
        raise
    except Exception as exc:
        if len(works) > 1:
            return [_store_alone(app, work) for work in works]
        if isinstance(exc, IntegrityError):
            log.warning("match %s: result already stored; nothing written", works[0][0])
            return ["duplicate result refused"]
        raise


def _store_alone(app: Flask, work: tuple[int, str, FinishedResult]) -> str | Exception:
    try:
        return store_batch(app, [work])[0]
    except DATABASE_DOWN:
        raise
    except Exception as exc:  # this match's own error, raised in its own job's thread
        return exc


def _store_together(app: Flask, works: list[tuple[int, str, FinishedResult]]) -> list[str]:
    now = utcnow()
    outcomes = ["lease lost before finishing"] * len(works)
    own: list[tuple[int, _Own]] = []
    try:
        with get_db(app).begin() as s:
            for i, (match_id, token, result) in enumerate(works):
                try:  # (a lost lease is found by the first statement: nothing written)
                    own.append((i, _own_writes(app, s, match_id, token, result, now)))
                except LeaseLostError:
                    continue
            if not own:
                raise LeaseLostError()
            owns = [o for _, o in own]
            # Which are rotations of duplicate sets is fixed when a match is made: read
            # before the lock, which is held for as few statements as can be.
            in_sets = set(s.scalars(select(LadderSetMatch.match_id).where(
                LadderSetMatch.match_id.in_([o.match_id for o in owns]))))
            # The families' ledger locks serialise every finish of a family: taken only
            # now, after the writes that concern each match alone, so concurrent batches
            # overlap in those (in name order: two batches never wait for each other's).
            counts = Counter(o.family for o in owns)
            for name in sorted(counts):
                count_and_lock(s, name, counts[name])
            _ledger_writes(app, s, owns, in_sets, now)
            for i, _ in own:
                outcomes[i] = "finished"
    except LeaseLostError:
        pass
    return outcomes


def _own_writes(app: Flask, s: Session, match_id: int, token: str, result: FinishedResult,
                now: dt.datetime) -> _Own:
    """A match's writes that no other match's wait for: ``finished`` under our lease, its
    seats' standings, its bots' idle time and health judgement."""
    moved = s.execute(
        update(Match)
        .where(Match.id == match_id, Match.lease_token == token, Match.state == "running")
        .values(state="finished", finished_at=now, lease_token=None, lease_expires_at=None,
                error="")
        .returning(Match.family, Match.rated, Match.ruleset)
    ).first()
    if moved is None:
        raise LeaseLostError()
    seats = {x.seat: x for x in s.scalars(
        select(MatchSeat).where(MatchSeat.match_id == match_id))}
    lat = {x.seat: x for x in result.latency}
    for st in result.standings:
        seat = seats[st.seat]
        seat.rank, seat.score, seat.wins = st.rank, st.score, st.wins
        seat.strikes, seat.forfeited = st.strikes, st.forfeited
        if st.seat in lat:
            x = lat[st.seat]
            seat.calls, seat.p50_ms, seat.p95_ms, seat.max_ms = (
                x.calls, x.p50_ms, x.p95_ms, x.max_ms)
    s.flush()
    # The bots' idle time and health judgement concern the ledger no more than the seats
    # do: written before the ledger lock (no transaction locks a bot row while it holds the
    # ledger lock, so the two cannot deadlock).
    seated = [x.bot_id for x in seats.values()]
    s.execute(update(Bot).where(Bot.id.in_(seated)).values(idle_since=now))
    paused = bot_service.judge_matches(app, s, seated)
    if paused:
        log.info("match %s: paused bots %s (forfeits or faults)", match_id, paused)
    tell_forfeits(app, s, MatchFacts(match_id, moved.ruleset, moved.rated), seats.values())
    return _Own(match_id, moved.family, moved.rated, list(seats.values()), result)


def _ledger_writes(app: Flask, s: Session, owns: list[_Own], in_sets: set[int],
                   now: dt.datetime) -> None:
    """Under the families' locks: the results, then the ratings and their events, a few
    statements for the whole batch (:mod:`arena.play.ledger_batch`).  The results are
    inserted under the lock and their ratings applied in the order of their ids, so results
    are numbered in the order their ratings are applied (what ``arena ratings --check``
    replays)."""
    k, initial = float(app.config["ELO_K"]), float(app.config["ELO_INITIAL"])
    rows = [{"match_id": o.match_id, "family": o.family, "created_at": now,
             "totals": o.result.totals, "log_gz": o.result.log_gz} for o in owns]
    ids = dict(s.execute(
        insert(MatchResult).returning(MatchResult.match_id, MatchResult.id), rows).all())
    applied: dict[str, list[Applied]] = {}
    for o in sorted(owns, key=lambda o: ids[o.match_id]):
        if not o.rated:
            continue
        # A rotation of a ladder duplicate set moves no rating until the one that
        # completes the set, which applies the set's combined result (rating_outcome).
        outcome = rating_outcome(s, o.match_id, k, seats=o.seats, set_id=(
            SET_UNKNOWN if o.match_id in in_sets else None))
        if outcome is not None:
            applied.setdefault(o.family, []).append(
                Applied(ids[o.match_id], o.match_id, outcome.placements, outcome.k))
    for family, items in applied.items():
        apply_batch(s, family, items, initial=initial, now=now)


class MatchFacts(NamedTuple):
    """What :func:`tell_forfeits` says of a match (the finish reads no ``Match`` row)."""

    id: int
    ruleset: str
    rated: bool


def tell_forfeits(app: Flask, s: Session, match: Match | MatchFacts,
                  seats: Iterable[MatchSeat]) -> None:
    """``match.forfeited`` to the owner of each bot that forfeited, sent once the finishing
    transaction commits (a finish that rolls back tells nobody)."""
    for seat in sorted(seats, key=lambda x: x.seat):
        if seat.forfeited:
            events.emit(app, s, "match.forfeited", bot_ids=[seat.bot_id], data={
                "match": {"id": match.id, "ruleset": match.ruleset, "rated": match.rated},
                "seat": seat.seat, "strikes": seat.strikes})


# --- check_bot -------------------------------------------------------------------------------


def check_bot(bot_id: int, check_id: int | None = None) -> str:
    """RQ entry point: run one health check of a bot and apply it."""
    app = _app()
    with app.app_context():
        outcome = bot_service.run_check(app, bot_id, check_id)
        log.info("bot %s: health check %s", bot_id, outcome, extra={"bot_id": bot_id})
        return outcome


# --- deliver_webhook -------------------------------------------------------------------------


def deliver_webhook(delivery_id: int, attempt: int) -> str:
    """RQ entry point: one attempt at sending a webhook event (:mod:`arena.notify.delivery`)."""
    app = _app()
    with app.app_context():
        outcome = webhook_delivery.attempt(app, delivery_id, attempt)
        log.info("webhook delivery %s, attempt %s: %s", delivery_id, attempt, outcome)
        return outcome
