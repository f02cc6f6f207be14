"""``python -m referee health URL``: the submission health check (a real match opening:
``GET /``, ``/start`` and the first ``/move`` of the bot's seat), printed as JSON; exit status
0 when the bot passes, 1 when it does not."""

from __future__ import annotations

import argparse
import json

from referee.runner.health import health_check
from referee.wire.netguard import NetPolicy

from .signing_args import add_signing_arguments, signing_of
from .terminal import echo


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m referee health", description=__doc__)
    ap.add_argument("url")
    ap.add_argument("--allow-private", action="store_true")
    ap.add_argument("--deadline-ms", type=int, default=1000)
    add_signing_arguments(ap)
    args = ap.parse_args(argv)
    secrets, legacy_v1 = signing_of(args)
    result = health_check(
        args.url, NetPolicy(allow_private=args.allow_private), deadline_ms=args.deadline_ms,
        secrets=secrets, legacy_v1=legacy_v1,
    )
    echo(json.dumps(result.to_json(), indent=2))
    return 0 if result.ok else 1
