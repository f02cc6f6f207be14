"""``python -m referee protocol-example``: print the real ``/move`` request and answer that
``docs/protocol.md`` shows (built by :func:`referee.wire.protocol.example_exchange`)."""

from __future__ import annotations

import argparse
import json

from referee.wire.protocol import example_exchange

from .terminal import echo


def main(argv: list[str]) -> int:
    argparse.ArgumentParser(
        prog="python -m referee protocol-example", description=__doc__
    ).parse_args(argv)
    request, answer = example_exchange()
    echo(json.dumps(request, indent=2))
    echo(json.dumps(answer, indent=2))
    return 0
