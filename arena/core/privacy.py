"""Scrub bot URLs out of stored match data (logs, results, health records).

New data never holds a URL: the referee's records name seats by player label and scrub every
fault detail (:mod:`referee.wire.redact`).  This module applies the same scrubbing to what was
stored before that (log v1 seats carried ``url``; strike, note and health texts could carry
host, path and query), once, from migration 0005.  The functions are pure so that a test can
check them on the shapes the arena stored.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable, Iterable
from typing import Any

from referee.wire.redact import UrlRedactor

Scrub = Callable[[str], str]


def _details(items: Iterable[dict[str, Any]], scrub: Scrub) -> None:
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("detail"), str):
            item["detail"] = scrub(item["detail"])


def _seats(seats: Any) -> None:
    for seat in seats if isinstance(seats, list) else []:
        if isinstance(seat, dict) and "url" in seat:
            seat["url"] = None  # v1 keeps its shape (url: string or null); verify ignores it


def scrub_log(doc: dict[str, Any], scrub: Scrub) -> dict[str, Any]:
    """A copy of a log document (either version) without URLs."""
    out = copy.deepcopy(doc)
    _seats(out.get("seats"))
    for deal in out.get("deals") or []:
        _details(deal.get("turns") or [], scrub)
    result = out.get("result")
    if isinstance(result, dict):
        _details(result.get("strikes") or [], scrub)
        _details(result.get("notes") or [], scrub)
    return out


def scrub_totals(totals: dict[str, Any], scrub: Scrub) -> dict[str, Any]:
    """A copy of ``MatchResult.totals`` without URLs."""
    out = copy.deepcopy(totals)
    _seats(out.get("seats"))
    _details(out.get("strikes") or [], scrub)
    _details(out.get("notes") or [], scrub)
    return out


def scrub_log_gz(log_gz: bytes, scrub: Scrub) -> bytes:
    doc = json.loads(gzip.decompress(log_gz))
    return gzip.compress(json.dumps(scrub_log(doc, scrub), separators=(",", ":")).encode(),
                         mtime=0)


def redactor(urls: Iterable[str | None]) -> UrlRedactor:
    return UrlRedactor([u for u in urls if u])


__all__ = ["redactor", "scrub_log", "scrub_log_gz", "scrub_totals"]
