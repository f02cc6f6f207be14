"""The conformance kit's findings: one :class:`Check` per line, a :class:`Report` for the run.

``Report.to_json`` is the ``--json`` document; its fields are documented in
``docs/conformance.md`` and only ever added to (``kit_version`` says which).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from referee.runner.match import Limits, percentile

KIT_VERSION = 1
"""Version of the ``--json`` document (``kit_version``); fields are only ever added."""

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"

WARN_RATIO = 0.5
"""A call type whose p95 latency exceeds this share of its deadline is a warning."""


@dataclass
class Check:
    """One line of the report (``--json``: one item of ``checks``)."""

    id: str
    family: str
    title: str
    status: str
    detail: str = ""
    fix: str = ""
    call: str = ""
    latency_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Report:
    """Everything the kit found (``--json``: the whole document)."""

    url: str
    limits: Limits
    secret_checked: bool
    checks: list[Check] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(c.status == FAIL for c in self.checks)

    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.checks) for s in (PASS, WARN, FAIL, SKIP)}

    def latency_rows(self) -> list[dict[str, Any]]:
        rows = []
        for call, values in self.latencies.items():
            rows.append({
                "call": call, "calls": len(values),
                "p50_ms": round(percentile(values, 0.5), 3),
                "p95_ms": round(percentile(values, 0.95), 3),
                "max_ms": round(max(values), 3),
                "deadline_ms": deadline_ms(call, self.limits),
            })
        return rows

    def to_json(self) -> dict[str, Any]:
        return {
            "kit_version": KIT_VERSION,
            "url": self.url,
            "ok": self.ok,
            "secret_checked": self.secret_checked,
            "deadlines": {"move_ms": self.limits.deadline_ms,
                          "call_ms": self.limits.call_deadline_ms, "warn_ratio": WARN_RATIO},
            "summary": self.counts(),
            "checks": [c.to_json() for c in self.checks],
            "latency": self.latency_rows(),
        }


def deadline_ms(call: str, limits: Limits) -> int:
    """The arena's deadline for a call type (``POST /move``: the per-move deadline)."""
    return limits.deadline_ms if call == "POST /move" else limits.call_deadline_ms


def dumps(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2, ensure_ascii=True)


__all__ = ["FAIL", "KIT_VERSION", "PASS", "SKIP", "WARN", "WARN_RATIO", "Check", "Report",
           "deadline_ms", "dumps"]
