"""Random bot: a uniformly random legal move, pass included when listed.

    python -m sample_bots.random_bot --port 8001
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from sample_bots.sdk import legal_ids, run

NAME = "random"


def make_choose(seed: int | None = None) -> Callable[[dict[str, Any]], str]:
    """A ``choose`` function drawing from its own ``random.Random(seed)``."""
    rng = random.Random(seed)

    def choose(request: dict[str, Any]) -> str:
        return rng.choice(legal_ids(request))

    return choose


choose = make_choose()


if __name__ == "__main__":
    run(choose, name=NAME, author="Big Two Arena samples", version="1")
