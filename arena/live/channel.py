"""The live channel of a match or tournament in Redis, and the worker's publisher.

Each match has one Redis stream, ``<ns>:live:match:<id>`` (``<ns>``: the deployment's Redis
namespace, :mod:`arena.core.rediskeys`): its events in order, each entry
``{"t": type, "d": JSON}``.  The stream is the replay buffer for reconnecting viewers and the
feed the relay reads; it is capped (``LIVE_STREAM_MAX_EVENTS``) and expires
``LIVE_STREAM_TTL_S`` after its last event.  Event types:

``start``     the seats (arena names and bot ids), rule set, deals, ``state`` (``running``);
              a retried match starts again with a new ``start`` (viewers begin afresh)
``deal``      a deal begins: card counts, who leads (:func:`referee.game.spectator.deal_started`)
``turn``      one turn, public part only (:func:`referee.game.spectator.turn_played`)
``deal_end``  the outcome, the totals and, when it is safe, the deal's full replay frames
              (hands, faults' details, ``say`` texts): see :class:`LivePublisher`
``end``       the match is over (``state``: finished, failed, or ``stopped`` when the attempt
              gave up and the match went back to the queue)

A tournament has a stream ``<ns>:live:tournament:<id>`` of ``changed`` events (a match of it
started or finished, a round opened): the relay re-reads the tournament's live fragment.

Events are queued, and one thread per process sends them in batches (:mod:`arena.live.outbox`);
a publisher's :meth:`~LivePublisher.close` waits until its events are in Redis.  Publishing
never stops a match: a Redis error is logged once and the match plays on without its
broadcast.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from redis import Redis
from redis.exceptions import RedisError

from arena.core import bookkeeping
from arena.core.jsontext import compact_json
from arena.core.rediskeys import redis_key
from arena.play.replay import deal_frames
from referee.game import spectator
from referee.game.rules import RuleSet
from referee.game.state import Deal
from referee.runner.log import deal_json
from referee.runner.match import DealRecord, TurnRecord

from .outbox import Event, outbox_for

log = logging.getLogger(__name__)

TOURNAMENT_STREAM_MAX = 32
"""``changed`` events kept per tournament (only the newest matters)."""


def prefix_of(config: Mapping[str, Any]) -> str:
    """Where the deployment's live streams are in Redis (:mod:`arena.core.rediskeys`)."""
    return redis_key(config, "live")


def match_key(prefix: str, match_id: int) -> str:
    return f"{prefix}:match:{match_id}"


def tournament_key(prefix: str, tournament_id: int) -> str:
    return f"{prefix}:tournament:{tournament_id}"


def encode(data: Mapping[str, Any]) -> bytes:
    """An event's JSON, compact UTF-8 written by orjson (a worker encodes one per move, and
    a deal's revealed replay at each deal's end: :func:`arena.core.jsontext.compact_json`).
    No newline is left raw in it, so the relay can put it on one ``data:`` line.  Bytes, so
    that ``LIVE_EVENT_MAX_BYTES`` counts bytes: beyond ASCII a text has fewer characters."""
    return compact_json(data)


class LivePublisher:
    """Publishes one match attempt's events (a :class:`referee.runner.match.MatchWatcher`).

    ``reveal``: whether a deal's hands are published at its end.  Not when the same deals are
    still to be played elsewhere: the other rotations of a duplicate table, or this match again
    if the attempt is a retry.  Then the hands come with the replay, after the match.
    """

    def __init__(self, redis: Redis, config: Mapping[str, Any], match_id: int,
                 rules: RuleSet, *, reveal: bool) -> None:
        self.rules, self.reveal = rules, reveal
        self.key = match_key(prefix_of(config), match_id)
        self.max_len = int(config["LIVE_STREAM_MAX_EVENTS"])
        self.ttl = int(config["LIVE_STREAM_TTL_S"])
        self.max_bytes = int(config["LIVE_EVENT_MAX_BYTES"])
        self.outbox = outbox_for(redis, float(config["LIVE_FLUSH_MS"]) / 1000)

    @property
    def broken(self) -> bool:
        """Whether this stream's broadcast has stopped (a Redis error; the match plays on)."""
        return self.key in self.outbox.broken

    def publish(self, kind: str, data: Mapping[str, Any]) -> None:
        if not self.broken:
            self.send(kind, encode(data))

    def send(self, kind: str, body: bytes) -> None:
        """Queue one encoded event for the stream (:mod:`arena.live.outbox` sends it)."""
        if len(body) > self.max_bytes:
            log.warning("%s: %s event of %d bytes not published", self.key, kind, len(body))
            return
        self.outbox.put(Event(self.key, kind, body, self.max_len, self.ttl))

    def flush(self) -> None:
        """Wait until this publisher's events so far are in Redis (or given up on)."""
        if not self.outbox.flush():
            log.warning("%s: live events still unsent after the wait", self.key)

    def close(self) -> None:
        """The attempt is over: its events are sent, the stream's stopped mark forgotten."""
        self.flush()
        self.outbox.forget(self.key)

    # --- referee.runner.match.MatchWatcher --------------------------------------------------------
    def deal_started(self, record: DealRecord, deal: Deal) -> None:
        self.publish("deal", spectator.deal_started(deal))

    def turn_played(self, turn: TurnRecord, deal: Deal) -> None:
        self.publish("turn", spectator.turn_played(deal, turn.turn, turn.latency_ms,
                                                   turn.fault, turn.bank_ms))

    def deal_ended(self, record: DealRecord, deal: Deal) -> None:
        out = record.outcome
        data: dict[str, Any] = {
            "deal": record.index,
            "outcome": None if out is None else out.to_json(),
            "totals": list(record.totals),
            "revealed": False,
        }
        if self.reveal:
            # The replay frames are milliseconds of work that nobody's deadline waits for,
            # and matches dealt alike end their deals together: a bookkeeping slot each.
            with bookkeeping.slot():
                body = encode({**data, "revealed": True,
                               "frames": deal_frames(self.rules, deal_json(record))})
                if len(body) <= self.max_bytes:
                    self.send("deal_end", body)
                    return
        self.publish("deal_end", data)


def notify_tournament(redis: Redis, config: Mapping[str, Any],
                      tournament_id: int | None) -> None:
    """Tell the relay that a tournament's page changed (never raises)."""
    if tournament_id is None:
        return
    key = tournament_key(prefix_of(config), tournament_id)
    try:
        pipe = redis.pipeline(transaction=False)
        pipe.xadd(key, {"t": "changed", "d": "{}"}, maxlen=TOURNAMENT_STREAM_MAX,
                  approximate=True)
        pipe.expire(key, 24 * 3600)
        pipe.execute()
    except RedisError as exc:
        log.warning("tournament %s: change not announced (%s)", tournament_id, exc)
