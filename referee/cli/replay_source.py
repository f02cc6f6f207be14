"""What ``python -m referee replay`` re-sends: the ``/move`` requests a seat received, with
the answers the log kept, from a match log or from an owner's calls export.

* **A match log** (JSON or JSON Lines, as ``python -m referee play --log`` writes it and the
  arena serves it at ``GET /api/matches/<id>/log``): the requests are rebuilt from the log
  by :func:`referee.runner.requests.move_requests`, the code behind the owner's calls page,
  byte for byte the bodies the seat was sent.  The logged answer is the turn's ``move``
  and ``fault``.
* **An owner's calls export** (the JSON of ``GET /api/bots/<id>/calls``: ``{"bot_id",
  "kept", "items": [...]}``, or the bare list of items): each item holds the exact request
  (rebuilt by the arena the same way), the move played and the fault.  Its JSON objects keep
  the wire's key order, so encoding a request again as the wire does
  (:data:`referee.game.view.WIRE_JSON`) gives back the bytes that were sent.  Items are
  newest first; they are replayed oldest first.  An item whose request the arena could not
  rebuild (its log is gone) is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.game.numbering import where
from referee.game.view import wire_bytes
from referee.runner import log
from referee.runner.requests import move_requests


class SourceError(ValueError):
    """A file that is neither a match log nor a calls export, or one that does not replay."""


class WireRequest(dict[str, Any]):
    """A decoded request that sends itself as the wire encodes it (``encoded()``)."""

    def encoded(self) -> bytes:
        return wire_bytes(self)


@dataclass(frozen=True)
class Logged:
    """One request the seat was sent, and what came of it then."""

    match_id: str
    deal: int
    turn: int
    seat: int
    request: Mapping[str, Any]
    """Its ``encoded()`` is the exact body that was sent."""
    move: str
    """The move played (the default move when ``fault`` is set)."""
    fault: str | None
    latency_ms: float | None
    deadline_ms: int
    """The per-move deadline of the match (the call could also draw on the time bank)."""


@dataclass(frozen=True)
class Source:
    """Where the requests come from (``kind``: ``log`` or ``calls``) and the requests."""

    kind: str
    name: str
    """The match (``match m-42, standard, 8 deals``) or the export (``calls of bot 7``)."""
    items: list[Logged]


def load(path: str | Path, seat: int | None) -> Source:
    """Read ``path`` and pick ``seat``'s requests (a match log needs ``seat``; in a calls
    export every item is the bot's own, and ``seat`` only filters).  ``seat`` is the 0-based
    index; the command line reads it as people count."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SourceError("not UTF-8 text: neither a match log nor a calls export") from None
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list) or (isinstance(whole, dict) and "items" in whole):
        return from_calls(whole, seat)
    try:
        doc = log.loads(text)
    except log.LogError as exc:
        raise SourceError(f"not a match log or a calls export: {exc}") from None
    if doc.get("format") != log.FORMAT:
        raise SourceError("not a match log (no \"format\": \"bigtwo-match-log\") or a calls "
                          "export (no \"items\")")
    if seat is None:
        raise SourceError("a match log holds every seat: say which with --seat N (from 1, "
                          "as the match page numbers them)")
    return from_log(doc, seat)


def from_log(doc: dict[str, Any], seat: int) -> Source:
    """``seat``'s requests of a match log, in match order."""
    try:
        players = int(doc["rules"]["options"]["players"])
        turns = {(d["index"], t["turn"]): t for d in doc["deals"] for t in d["turns"]}
        deadline = int(doc["limits"]["deadline_ms"])
        match_id = str(doc["match_id"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SourceError(f"malformed match log: {exc}") from None
    if not 0 <= seat < players:
        raise SourceError(f"the match has seats 1 to {players} (numbered from 1, as the "
                          "match page shows them)")
    items = []
    try:
        for deal, turn, s, request in move_requests(doc, seat=seat):
            t = turns[(deal, turn)]
            items.append(Logged(match_id, deal, turn, s, request, t["move"], t["fault"],
                                t["latency_ms"], deadline))
    except ValueError as exc:
        raise SourceError(str(exc)) from None
    name = (f"match {match_id}, {doc['rules']['name']}, {len(doc['deals'])} deals, "
            f"{where(seat=seat)}")
    return Source("log", name, items)


def from_calls(doc: Any, seat: int | None) -> Source:
    """The requests of an owner's calls export (oldest first), ``seat``'s only when given."""
    raw = doc if isinstance(doc, list) else doc.get("items")
    if not isinstance(raw, list):
        raise SourceError("a calls export holds a list of calls in \"items\"")
    items = []
    for entry in reversed(raw):
        try:
            request = entry["request"]
            if request is None or (seat is not None and entry["seat"] != seat):
                continue
            items.append(Logged(str(entry["match_id"]), int(entry["deal"]), int(entry["turn"]),
                                int(entry["seat"]), WireRequest(request), str(entry["move"]),
                                entry["fault"], entry["latency_ms"],
                                int(request["deadline_ms"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise SourceError(f"malformed calls export: {exc}") from None
    bot = doc.get("bot_id") if isinstance(doc, dict) else None
    name = f"calls of bot {bot}" if bot is not None else "calls export"
    if seat is not None:
        name += f", {where(seat=seat)}"
    return Source("calls", name, items)


__all__ = ["Logged", "Source", "SourceError", "WireRequest", "from_calls", "from_log", "load"]
