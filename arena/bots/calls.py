"""A bot's last ``/move`` calls, for its owner: the exact request, the raw answer, the verdict.

What bot authors ask an arena for most is the input that broke their bot.  Two sources:

* **The request** is rebuilt from the stored match log (:mod:`referee.runner.requests`),
  exactly the body the bot was sent, so nothing of it is stored twice.  It holds only that
  seat's own view of the deal (its hand, the public table, the card counts), which is the
  owner's to see, and never another seat's cards.
* **The raw answer** is not in a log (a log keeps the move played and the fault), so each
  match records it: :class:`CallRecorder` wraps the match's players, keeps each seat's last
  ``BOT_CALLS_KEPT`` calls in memory while the match runs (answer cut to
  ``BOT_CALLS_ANSWER_MAX`` bytes; of a non-2xx answer, such as a 500 with the bot's
  traceback, the referee reads only that much of the body), and when the match has
  finished pushes them to the bot's capped Redis list ``<ns>:bot-calls:<bot id>``
  (newest first, trimmed to ``BOT_CALLS_KEPT``, expiring ``BOT_CALLS_TTL_S`` after the
  last push).  Only finished matches are pushed, so every call shown has its log and its
  exact request; an attempt that was abandoned and replayed elsewhere pushes nothing.  It
  is debugging data: losing Redis loses it, and nothing else depends on it.

:func:`last_calls` joins the two for the page ``/bots/<id>/calls`` (the owner signed in on
this browser: :mod:`arena.web.owners`) and ``GET /api/bots/<id>/calls`` (the owner token).
"""

from __future__ import annotations

import datetime as dt
import functools
import gzip
import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flask import Flask
from sqlalchemy import Select, bindparam, case, null, select
from sqlalchemy.orm import Session

from arena.core.jsontext import compact_json
from arena.core.models import Match, MatchResult
from arena.core.queue import get_queue
from arena.core.rediskeys import redis_key
from arena.play import deal_secrecy
from referee.game.cards import move_id
from referee.runner.faults import fault_name, plain_fault
from referee.runner.match import FORFEITED, TurnRecord
from referee.runner.requests import move_requests
from referee.wire.players import Player, Reply
from referee.wire.text import printable_bytes, stored_json

log = logging.getLogger(__name__)

OK = "ok"
"""The verdict of a call whose answer was played; any other call's verdict is its fault's name
(:func:`referee.runner.faults.fault_name`: one vocabulary with every page and command)."""


def verdict(fault: str | None) -> str:
    return fault_name(fault) or OK


def key(app: Flask, bot_id: int) -> str:
    return redis_key(app.config, "bot-calls", str(bot_id))


@dataclass
class Call:
    """One ``/move`` call as kept (the request is not: it is rebuilt from the log)."""

    match_id: int
    deal: int
    turn: int
    seat: int
    at: str
    latency_ms: float | None
    fault: str | None
    detail: str
    move: str
    say: str | None
    answer: str
    answer_bytes: int
    answer_truncated: bool


class _Recording(Player):
    """A player that remembers the raw body of its last ``/move`` answer."""

    def __init__(self, inner: Player) -> None:
        self.inner = inner
        self.label = inner.label
        self.last: Reply | None = None

    def scrub(self, text: str) -> str:
        return self.inner.scrub(text)

    def describe(self, deadline_s: float) -> Reply:
        return self.inner.describe(deadline_s)

    def start(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return self.inner.start(info, deadline_s)

    def move(self, request: dict[str, Any], deadline_s: float) -> Reply:
        self.last = self.inner.move(request, deadline_s)
        return self.last

    def end(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return self.inner.end(info, deadline_s)

    def close(self) -> None:
        self.inner.close()


class CallRecorder:
    """The calls of one match's seats, kept until the match has finished (one per match)."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.kept = max(0, int(app.config["BOT_CALLS_KEPT"]))
        self.answer_max = int(app.config["BOT_CALLS_ANSWER_MAX"])
        self.bot_ids: list[int] = []
        self.players: list[_Recording] = []
        self.calls: list[deque[tuple[TurnRecord, bytes, int, float]]] = []

    def wrap(self, players: Sequence[Player], bot_ids: Sequence[int]) -> list[Player]:
        """The players to seat instead of ``players`` (the bots ``bot_ids``, seat by seat)."""
        self.bot_ids = list(bot_ids)
        self.players = [_Recording(p) for p in players]
        self.calls = [deque(maxlen=self.kept) for _ in self.players]
        return list(self.players)

    def on_turn(self, turn: TurnRecord) -> None:
        """Pair a finished turn with the answer its seat gave (a forfeited seat gave none).
        Runs at every turn, so it only keeps references; :meth:`flush` does the rest."""
        if turn.fault == FORFEITED or not self.kept:
            return
        reply = self.players[turn.seat].last
        body = reply.body if reply is not None else b""
        # Cut here, not at flush: a bot answering 64 KiB every turn must not make a match
        # hold megabytes of its answers.
        self.calls[turn.seat].append((turn, body[:self.answer_max], len(body), time.time()))

    def _call(self, match_id: int, turn: TurnRecord, kept: bytes, size: int,
              at: float) -> Call:
        # As it came, in a form every reader encodes: bytes that are not UTF-8 as \xNN, NUL as
        # \x00 (referee.wire.text; the say and the detail were checked at the wire).
        answer = printable_bytes(kept)
        if turn.fault is not None:
            # A refused answer (a 500's traceback, a body that is not JSON) is scrubbed like
            # every fault text: it may echo the bot's URL or an address (referee.wire.redact).
            answer = self.players[turn.seat].scrub(answer)
        return Call(
            match_id=match_id, deal=turn.deal, turn=turn.turn, seat=turn.seat,
            at=dt.datetime.fromtimestamp(at, dt.UTC).isoformat(), latency_ms=turn.latency_ms,
            fault=turn.fault, detail=turn.detail, move=move_id(turn.move), say=turn.say,
            answer=answer, answer_bytes=size,
            answer_truncated=size > len(kept))

    def flush(self, match_id: int) -> None:
        """Push the kept calls to each bot's list (after the match finished; never raises:
        the record is for debugging, the match result is what counts)."""
        if not self.kept:
            return
        ttl = max(1, int(float(self.app.config["BOT_CALLS_TTL_S"])))
        try:
            pipe = get_queue(self.app).redis.pipeline(transaction=False)
            for bot_id, calls in zip(self.bot_ids, self.calls, strict=True):
                if not calls:
                    continue
                k = key(self.app, bot_id)
                # vars(), not asdict(): a Call is flat, and asdict's deep copy of every
                # field was most of this flush's time (200 calls a match).
                pipe.lpush(k, *(compact_json(vars(self._call(match_id, *c)))
                                for c in calls))  # the newest ends up first
                pipe.ltrim(k, 0, self.kept - 1)
                pipe.expire(k, ttl)
            pipe.execute()
        except Exception as exc:  # Redis down: the owner's view misses this match
            log.warning("match %s: could not keep the bots' calls: %s", match_id, exc)


def _stored(app: Flask, bot_id: int, limit: int) -> list[Call]:
    raw = get_queue(app).redis.lrange(key(app, bot_id), 0, max(0, limit - 1))
    calls = []
    for item in raw:
        try:
            # Repaired: a call kept before the text rule may hold NUL or a lone surrogate
            # (stored_json: only an item whose text has such an escape is walked).
            calls.append(Call(**stored_json(item if isinstance(item, bytes) else item.encode())))
        except (TypeError, ValueError):
            continue  # written by another version: skip rather than fail the page
    return calls


@functools.cache
def _logs_statement() -> Select[int, bool, bytes | None]:
    """Of the calls' matches (``ids`` bound), each one's id, whether another match still
    plays its deals (:func:`arena.play.deal_secrecy.in_play_sql`) and, only when none does,
    its stored log: one round trip where the secrecy check and the logs were two, and a
    secret match's log is never read.  Built once (its six aliases cost more than running
    it)."""
    in_play = deal_secrecy.in_play_sql(Match.id)
    return (select(Match.id, in_play, case((in_play, null()), else_=MatchResult.log_gz))
            .outerjoin(MatchResult, MatchResult.match_id == Match.id)
            .where(Match.id.in_(bindparam("ids", expanding=True))))


def last_calls(app: Flask, s: Session, bot_id: int, limit: int | None = None) -> list[
        dict[str, Any]]:
    """The bot's newest calls (at most ``limit``, default ``BOT_CALLS_KEPT``), newest first,
    each with its verdict, reason and exact request (None when the match's log is gone or
    does not seat this bot there).  Calls of a match whose deals a sibling rotation still
    plays are held back until it has finished (:mod:`arena.play.deal_secrecy`): the bot's own hands
    there are other seats' hands at the sibling table.  Raises ``redis`` errors: the caller
    says Redis is down."""
    kept = int(app.config["BOT_CALLS_KEPT"])
    calls = _stored(app, bot_id, min(kept, limit) if limit is not None else kept)
    logs: dict[int, bytes | None] = {}
    secret: set[int] = set()
    if calls:
        for match_id, in_play, log_gz in s.execute(
                _logs_statement(), {"ids": sorted({c.match_id for c in calls})}):
            if in_play:
                secret.add(match_id)
            else:
                logs[match_id] = log_gz
    calls = [c for c in calls if c.match_id not in secret]
    wanted: dict[int, set[tuple[int, int]]] = {}
    for c in calls:
        wanted.setdefault(c.match_id, set()).add((c.deal, c.turn))
    requests: dict[tuple[int, int, int], dict[str, Any]] = {}
    for match_id, turns in wanted.items():
        log_gz = logs.get(match_id)
        if log_gz is None:  # the log is gone: the calls show no request
            continue
        doc = stored_json(gzip.decompress(log_gz))
        seat = next((x["seat"] for x in doc.get("seats", [])
                     if x.get("player") == f"bot:{bot_id}"), None)
        if seat is None:
            continue
        try:
            for deal, turn, _, body in move_requests(doc, seat=seat, turns=turns):
                requests[(match_id, deal, turn)] = body
        except ValueError as exc:
            log.warning("match %s: log does not replay: %s", match_id, exc)
    out = []
    for c in calls:
        # In words also when kept before the referee wrote them so (plain_fault).
        # An answer played has a detail only when its say was dropped (referee.wire.protocol).
        # vars(), not asdict(): a Call is flat, and asdict's deep copy was a tenth of the
        # answer's time.
        out.append({**vars(c), "detail": plain_fault(c.fault, c.detail) if c.fault else c.detail,
                    "verdict": verdict(c.fault),
                    "request": requests.get((c.match_id, c.deal, c.turn))})
    return out
