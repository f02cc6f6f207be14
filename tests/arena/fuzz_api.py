"""Fuzz the app through its OpenAPI document (schemathesis) and count the 5xx answers.

Every operation of ``/api/openapi.json`` gets ``max_examples`` generated requests of each
generation mode (positive: what the document allows; negative: what it does not), sent to
the real app in this process (WSGI, schemathesis's own transport), with the operator's
token so the admin operations are reached too.  A 5xx is never a right answer to anything a
client sends: :func:`fuzz` returns each one found (operation, status, the request), and the
bench (``bench/schemathesis_run.py``) and the test (``tests/arena/test_schemathesis.py``)
both count them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import schemathesis
from flask import Flask
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from .conftest import admin_headers


@dataclass
class Found:
    """One 5xx answer: the operation, the status and the request that got it."""

    operation: str
    status: int
    request: str


@dataclass
class FuzzReport:
    """What one run sent and which answers were 5xx."""

    requests: int = 0
    errors: list[Found] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per operation (both modes), to see where a run's time goes."""

    def by_operation(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for e in self.errors:
            counts[e.operation] = counts.get(e.operation, 0) + 1
        return counts


def _describe(case: Any) -> str:
    return (f"{case.method} {case.formatted_path} query={case.query!r:.200} "
            f"body={getattr(case, 'body', None)!r:.300}")


def _run_operation(op: Any, mode: GenerationMode, max_examples: int, seed: int | None,
                   report: FuzzReport) -> None:
    label = f"{op.method.upper()} {op.path}"
    headers = admin_headers()

    @settings(max_examples=max_examples, deadline=None, database=None, derandomize=seed is None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
              report_multiple_bugs=False)
    @given(case=op.as_strategy(generation_mode=mode))
    def probe(case: Any) -> None:
        report.requests += 1
        response = case.call(headers=headers)
        if response.status_code >= 500:
            report.errors.append(Found(label, response.status_code, _describe(case)))

    if seed is not None:
        from hypothesis import seed as with_seed
        probe = with_seed(seed)(probe)
    probe()


def fuzz(app: Flask, *, max_examples: int = 20, seed: int | None = None,
         modes: tuple[GenerationMode, ...] = (GenerationMode.POSITIVE,
                                              GenerationMode.NEGATIVE)) -> FuzzReport:
    """Run every operation of the app's OpenAPI document; the 5xx answers found.
    ``seed`` None: the same examples every run (derandomized), for a test."""
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", app)
    report = FuzzReport()
    quiet = logging.getLogger("arena.web.errors")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # each 5xx is returned; no traceback per example
    try:
        for result in schema.get_all_operations():
            op = result.ok()
            started = time.monotonic()
            for mode in modes:
                try:
                    _run_operation(op, mode, max_examples, seed, report)
                except Unsatisfiable:
                    continue  # nothing to send that breaks the document (no parameters)
                except Exception as exc:  # an operation the generator cannot serve
                    report.skipped.append(f"{op.method.upper()} {op.path} ({mode.value}): "
                                          f"{type(exc).__name__}: {str(exc)[:200]}")
            report.seconds[f"{op.method.upper()} {op.path}"] = time.monotonic() - started
    finally:
        quiet.setLevel(level)
    return report


__all__ = ["Found", "FuzzReport", "fuzz"]
