"""The command line (``python -m referee COMMAND``): one small module per command.

Every command is a thin shell over the other rooms (a demo or live match from
:mod:`referee.runner`, a health check, legal-move lists from :mod:`referee.game`); this
package may import all of them and none of them imports it.  Everything a bot controls is
printed through :func:`referee.cli.terminal.echo`, which makes it safe for a terminal.
This module only dispatches: a command's module is imported when it runs, so
``python -m referee legal`` never loads the HTTP caller.
"""

from __future__ import annotations

import importlib
import sys

from .terminal import echo

COMMANDS = {
    "legal": ("referee.cli.legal", "legal-move lists for JSON Lines cases on stdin"),
    "demo": ("referee.cli.demo", "a demo match of in-process players, printing the result"),
    "rules-doc": ("referee.game.rulesdoc", "print docs/rules.md (options, presets, conventions)"),
    "play": ("referee.cli.play", "a match between live bot URLs, printing the result table"),
    "verify": ("referee.cli.verify", "replay a match log and check every move and score"),
    "request": ("referee.cli.request", "the exact /move body a logged turn's seat was sent"),
    "replay": ("referee.cli.replay", "re-send a seat's logged requests to a bot: what "
               "changed, what would be a strike"),
    "health": ("referee.cli.health", "the submission health check of one bot URL"),
    "conformance": ("referee.cli.conformance", "will a bot survive the arena? every check, "
                    "with what to fix"),
    "protocol-example": ("referee.cli.protocol", "the example /move request in docs/protocol.md"),
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
