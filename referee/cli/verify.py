"""``python -m referee verify LOG``: replay a match log and check every move and score.

Exit status 0 and a one-line summary when the log is valid; 1 with the first bad place
(deal index, turn index, what differs) when it is not; 2 when the file cannot be read or is
not a match log at all (JSON without ``"format": "bigtwo-match-log"``), as docs/logs.md says.
"""

from __future__ import annotations

import argparse
import sys

from referee.runner import log

from .terminal import echo


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m referee verify", description=__doc__)
    ap.add_argument("log", help="a match log, JSON or JSON Lines")
    args = ap.parse_args(argv)
    try:
        doc = log.read(args.log)
    except (OSError, UnicodeDecodeError, log.LogError) as exc:
        echo(f"{args.log}: cannot read: {exc}", file=sys.stderr, keep_newlines=False)
        return 2
    if doc.get("format") != log.FORMAT:
        echo(
            f"{args.log}: cannot read: not a match log "
            f"(its 'format' is {doc.get('format')!r}, a log's is {log.FORMAT!r})",
            file=sys.stderr,
            keep_newlines=False,
        )
        return 2
    verdict = log.verify(doc)
    if verdict.ok:
        echo(f"{args.log}: {verdict.summary}", keep_newlines=False)
        return 0
    echo(f"{args.log}: INVALID at {verdict.where()}: {verdict.problem}", keep_newlines=False)
    return 1
