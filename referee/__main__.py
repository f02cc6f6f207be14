"""``python -m referee COMMAND``: the engine's command line (see :mod:`referee.cli`)."""

from __future__ import annotations

from referee.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
