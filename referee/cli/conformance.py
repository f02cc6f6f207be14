"""``python -m referee conformance URL``: will this bot survive the arena?  (See
:mod:`referee.cli.conformance_kit` for the checks and ``docs/conformance.md``.)

Prints one line per check as it runs (``PASS``, ``WARN``, ``FAIL``, ``SKIP``; a failure or a
warning says what to fix), then a summary.  ``--json`` prints one JSON document instead
(fields in ``docs/conformance.md``).  Exit status: 0 when no check failed (warnings
allowed), 1 when one did, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys

from referee.runner.match import Limits
from referee.wire.netguard import NetPolicy

from .conformance_kit import FAIL, PASS, SKIP, WARN, Check, Kit, Report, dumps
from .terminal import echo, printable

LABELS = {PASS: "PASS", WARN: "WARN", FAIL: "FAIL", SKIP: "SKIP"}


def line(check: Check) -> str:
    """One check on one line: status, what was checked, what happened, what to fix."""
    text = f"{LABELS.get(check.status, check.status.upper())}  {check.title}"
    if check.detail:
        text += f": {check.detail}"
    if check.latency_ms is not None and check.status in (PASS, WARN) and check.family != (
            "latency"):
        text += f" ({check.latency_ms:.0f} ms)"
    if check.fix and check.status in (FAIL, WARN, SKIP):
        text += f". Fix: {check.fix}"
    return printable(text)


def summary(report: Report) -> str:
    n = report.counts()
    words = (f"{n[PASS]} passed, {n[WARN]} warnings, {n[FAIL]} failed, {n[SKIP]} skipped "
             f"of {len(report.checks)} checks")
    if not report.ok:
        verdict = "NOT ready for the arena: fix each FAIL above and run the kit again"
    elif n[WARN]:
        verdict = "ready for the arena, with warnings worth fixing"
    else:
        verdict = "ready for the arena"
    signing = "" if report.secret_checked else (
        "\nsigning not checked: run again with --secret S (the bot's secret) to check it")
    return f"summary: {words}: {verdict}{signing}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m referee conformance",
        description="Check that a bot will survive the arena: every request type and phase, "
                    "every preset's move shapes, unknown fields, signatures, keep-alive, long "
                    "histories and latency. Exit status 0: no check failed; 1: some did.")
    ap.add_argument("url", metavar="URL", help="the bot's URL, as you would register it")
    ap.add_argument("--secret", help="the signing secret the bot verifies: checks signed, "
                    "unsigned, wrongly signed and replayed requests (without it they are "
                    "skipped)")
    ap.add_argument("--json", action="store_true", help="one JSON document (docs/conformance.md)")
    ap.add_argument("--allow-private", action="store_true",
                    help="allow loopback and private addresses (a bot on this machine)")
    ap.add_argument("--deadline-ms", type=int, default=Limits.deadline_ms,
                    help=f"the /move deadline (default {Limits.deadline_ms}, the arena's)")
    ap.add_argument("--call-deadline-ms", type=int, default=Limits.call_deadline_ms,
                    help=f"the GET /, /start and /end deadline (default "
                         f"{Limits.call_deadline_ms}, the arena's)")
    args = ap.parse_args(argv)
    if args.deadline_ms <= 0 or args.call_deadline_ms <= 0:
        ap.error("deadlines must be positive")
    limits = Limits(deadline_ms=args.deadline_ms, call_deadline_ms=args.call_deadline_ms)
    progress = None if args.json else (lambda c: echo(line(c), keep_newlines=False))
    if not args.json:
        echo(printable(f"conformance of {args.url}: /move deadline {limits.deadline_ms} ms, "
                       f"other calls {limits.call_deadline_ms} ms"), keep_newlines=False)
    kit = Kit(args.url, secret=args.secret.encode("utf-8") if args.secret else None,
              policy=NetPolicy(allow_private=args.allow_private), limits=limits,
              progress=progress)
    report = kit.run()
    if args.json:
        echo(dumps(report))
    else:
        echo(summary(report))
    sys.stdout.flush()
    return 0 if report.ok else 1
