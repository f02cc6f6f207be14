"""``python -m arena ...`` is the ``arena`` command."""

from arena.ops.cli import main

raise SystemExit(main())
