"""A finished match's result, kept while the database cannot take it.

Found in a drill: 140 matches that finished during a 20 s PostgreSQL outage were played
again from the start (their store failed, the job raised, RQ retried it, and a retry deals
new cards).  A match's result is worth keeping: :func:`arena.jobs.bodies.store_patiently`
retries its store with a back-off for ``MATCH_STORE_RETRY_S``, and meanwhile keeps the
result here, in Redis, for ``MATCH_STORE_SPOOL_TTL_S``.  If the worker dies or gives up
before the database answers, the next attempt at the match (another worker, once the
lease has run out and the reconciler enqueued it again) finds the result here and stores
it instead of playing the match again.  Only when this copy is lost too (Redis lost as
well) is the match replayed, as before.

The result is a plain JSON document (:class:`FinishedResult`): the gzipped log, the seats'
standings and latencies, and the totals, exactly what the finish transaction writes.  It
is stored at most once whoever stores it: the finish transaction is conditional on the
match still running under the storer's lease, and the result row is unique per match.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
from dataclasses import asdict, dataclass
from typing import Any

from flask import Flask

from arena.core.jsontext import compact_json
from arena.core.queue import get_queue
from arena.core.rediskeys import redis_key
from referee.runner import log as match_log
from referee.runner.match import LatencyStats, MatchRecord, Standing

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FinishedResult:
    """What the finish transaction stores of a played match (JSON round trip)."""

    log_gz: bytes
    totals: dict[str, Any]
    """The result row's ``totals`` document (seed, totals, strikes, forfeits, notes, seats)."""
    final: list[int]
    """The match's final scores (the live ``end`` event)."""
    standings: list[Standing]
    latency: list[LatencyStats]
    attempt_match_id: str
    """The wire match id the log was played under (names the attempt)."""

    @classmethod
    def of(cls, record: MatchRecord) -> FinishedResult:
        document = match_log.to_document(record)
        log_gz = gzip.compress(compact_json(document), mtime=0)
        return cls(log_gz=log_gz, totals=totals_of(record), final=list(record.totals),
                   standings=list(record.standings), latency=list(record.latency),
                   attempt_match_id=record.match_id)

    def to_json(self) -> str:
        return json.dumps({
            "log_gz": base64.b64encode(self.log_gz).decode(),
            "totals": self.totals, "final": self.final,
            "standings": [asdict(x) for x in self.standings],
            "latency": [asdict(x) for x in self.latency],
            "attempt_match_id": self.attempt_match_id,
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> FinishedResult:
        raw = json.loads(text)
        return cls(log_gz=base64.b64decode(raw["log_gz"]), totals=raw["totals"],
                   final=[int(x) for x in raw["final"]],
                   standings=[Standing(**x) for x in raw["standings"]],
                   latency=[LatencyStats(**x) for x in raw["latency"]],
                   attempt_match_id=str(raw["attempt_match_id"]))


def totals_of(record: MatchRecord) -> dict[str, Any]:
    return {
        "seed": record.seed,  # the seed dealt, as in the log (arena.play.reseed.shown_seed)
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


def _key(app: Flask, match_id: int) -> str:
    return redis_key(app.config, "finished", str(match_id))


def keep(app: Flask, match_id: int, result: FinishedResult) -> bool:
    """Keep the result for a later attempt (best effort: False when Redis is away too)."""
    try:
        get_queue(app).redis.set(_key(app, match_id), result.to_json(),
                                 ex=max(1, int(float(app.config["MATCH_STORE_SPOOL_TTL_S"]))))
        return True
    except Exception as exc:
        log.warning("match %s: its result could not be kept in Redis either: %s", match_id, exc)
        return False


def find(app: Flask, match_id: int) -> FinishedResult | None:
    """A result an earlier attempt kept, if there is one (None when Redis is away)."""
    try:
        raw = get_queue(app).redis.get(_key(app, match_id))
    except Exception as exc:
        log.warning("match %s: could not look for a kept result: %s", match_id, exc)
        return None
    if raw is None:
        return None
    try:
        return FinishedResult.from_json(raw)
    except (ValueError, KeyError, TypeError) as exc:
        log.error("match %s: a kept result is unreadable (%s); playing the match", match_id, exc)
        return None


def drop(app: Flask, match_id: int) -> None:
    """The result is stored: forget the kept copy (it would expire anyway)."""
    try:
        get_queue(app).redis.delete(_key(app, match_id))
    except Exception as exc:
        log.warning("match %s: kept result not dropped (it expires): %s", match_id, exc)
