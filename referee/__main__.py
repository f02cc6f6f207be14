"""``python -m referee COMMAND``: the engine's command line.

Commands live in small modules (``referee/cli_*.py``) so each stays readable; this file only
dispatches.
"""

from __future__ import annotations

import importlib
import sys

from referee.terminal import echo

COMMANDS = {
    "legal": ("referee.cli_legal", "legal-move lists for JSON Lines cases on stdin"),
    "demo": ("referee.cli_demo", "a demo match of in-process players, printing the result"),
    "rules-doc": ("referee.rulesdoc", "print docs/rules.md (options, presets, conventions)"),
    "play": ("referee.cli_play", "a match between live bot URLs, printing the result table"),
    "verify": ("referee.cli_verify", "replay a match log and check every move and score"),
    "health": ("referee.cli_health", "the submission health check of one bot URL"),
    "protocol-example": ("referee.cli_protocol", "the example /move request in docs/protocol.md"),
}


def usage() -> str:
    lines = ["usage: python -m referee COMMAND [ARGS]", "", "commands:"]
    lines += [f"  {name:<17} {doc}" for name, (_, doc) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        echo(usage())
        return 0 if args else 2
    name = args[0]
    if name not in COMMANDS:
        echo(f"unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    result: int = module.main(args[1:])
    return result


if __name__ == "__main__":
    raise SystemExit(main())
