"""Jobs: the job bodies RQ runs (:mod:`.bodies`, with :mod:`.result_spool` keeping a finished
match's result while the database is away) and the processes that run them: the worker
(:mod:`.worker`, :mod:`.threadpool_worker`, :mod:`.execution`), its supervision
(:mod:`.supervisor`, :mod:`.backoff`), the clock (:mod:`.clock`) and the reconciler
(:mod:`.reconcile`).

RQ finds a job's function by its dotted name, stored in Redis with the job.  Jobs enqueued
before the rooms (``arena.jobs.play_match``, ``arena.jobs.check_bot``) can still wait in a
queue when a deployment upgrades, so those two names resolve here to the bodies, imported
only when asked for.
"""

from __future__ import annotations

from typing import Any

_FORMER_JOB_NAMES = ("play_match", "check_bot")


def __getattr__(name: str) -> Any:
    if name in _FORMER_JOB_NAMES:
        from . import bodies

        return getattr(bodies, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
