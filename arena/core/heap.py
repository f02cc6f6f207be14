"""The interpreter's garbage collector in a long-running arena process (pool worker, web
worker).

Every collection holds the interpreter (the GIL): no other thread runs meanwhile, so no
match's deadline fires and no request is answered.  A full collection walks every tracked
object; right after start-up a process holds ~170,000 of them that live as long as it does
(the imported service: SQLAlchemy, RQ, Flask, Jinja, the rules' tables), which made each
full collection a 50-140 ms pause: the tail of the deadline overshoot that
``bench/concurrency.py`` measured with 100 matches in one process, and of one-at-a-time page
times (a 40 ms leaderboard page at p50 took 90-140 ms at p95).  :func:`settle_heap` takes
them out of the walks once start-up is done; :func:`gc_thresholds` reads the pool worker's
thresholds setting (``WORKER_GC_THRESHOLDS``).
"""

from __future__ import annotations

import gc


def gc_thresholds(text: str) -> tuple[int, ...]:
    """``WORKER_GC_THRESHOLDS`` as numbers: one to three positive integers, comma-separated
    (empty: none, Python's stay)."""
    if not text.strip():
        return ()
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        values = ()
    if not 1 <= len(values) <= 3 or min(values) < 1:
        raise ValueError(f"WORKER_GC_THRESHOLDS must be one to three positive integers, "
                         f"comma-separated: {text!r}")
    return values


def settle_heap() -> int:
    """Take what the process holds for good out of the collector's walks (call once
    start-up is done); returns how many objects that is.

    They are frozen (``gc.freeze``) after one collection; the collector then walks only
    what the process creates afterwards.  Reference counting still frees frozen objects
    that become garbage; only cycles among them are never collected, and start-up made none
    that will be dropped.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
