"""The demo's showcase table: sample bots that think a visible time, so that a newcomer who
opens the demo's ``/live`` page sees a match being played, turn by turn.

The demo's other bots answer in a millisecond or two: its knockout is over about two
seconds after the banner says "watch it live".  The showcase bots wait
:data:`SHOWCASE_THINK_MS` before every move (``--think-ms``, :mod:`sample_bots.sdk`), half
a default deadline's worth at most, so a showcase match of :data:`SHOWCASE_DEALS` deals
lasts a few minutes; the demo starts the next one when one ends (:meth:`Showcase.keep_playing`).
The showcase bots are ordinary registered bots: the ladder may seat them too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import requests

from .procs import Child, start_bot

SHOWCASE_THINK_MS = 250
"""Each showcase bot's wait before every move (well under the 1000 ms deadline)."""
SHOWCASE_DEALS = 4
"""Deals of a showcase match: about 4 x 50 moves x 0.25 s, some minutes to watch."""
SHOWCASE_BOTS = [
    ("show-planner", "planner_bot"),
    ("show-greedy", "greedy_bot"),
    ("show-random", "random_bot"),
    ("show-planner-2", "planner_bot"),
]
"""(name, sample_bots module) of the showcase table's four seats."""


@dataclass
class Showcase:
    base: str
    admin: str
    bots: list[int] = field(default_factory=list)
    match: int | None = None

    def start_match(self) -> int:
        """Queue one unrated showcase match of :data:`SHOWCASE_DEALS` deals; its id."""
        r = requests.post(f"{self.base}/api/matches", timeout=30,
                          headers={"Authorization": f"Bearer {self.admin}"},
                          json={"bots": self.bots, "deals": SHOWCASE_DEALS, "rated": False})
        r.raise_for_status()
        self.match = int(r.json()["id"])
        return self.match

    def keep_playing(self) -> int | None:
        """Start the next showcase match when the last one is over (the new id, or None)."""
        if self.match is not None:
            state = requests.get(f"{self.base}/api/matches/{self.match}", timeout=30).json()
            if state.get("state") not in ("finished", "failed"):
                return None
        return self.start_match()


def start_showcase(base: str, admin: str, children: list[Child],
                   wait_for_check: Callable[[str], dict[str, object] | None],
                   say: Callable[[str], None]) -> Showcase | None:
    """Start the showcase bots (as children), register them, wait for their health checks
    and queue the first showcase match; None (said why) when a bot could not join."""
    show = Showcase(base, admin)
    for name, module in SHOWCASE_BOTS:
        bot = start_bot(module, args=["--think-ms", str(SHOWCASE_THINK_MS)])
        children.append(bot)
        r = requests.post(f"{base}/api/bots", json={"name": name, "url": bot.url}, timeout=30)
        if r.status_code != 202:
            say(f"showcase: could not register {name}: {r.status_code} {r.text}")
            return None
        check = wait_for_check(base + r.json()["check_url"])
        if check is None or check.get("state") != "passed":
            say(f"showcase: {name} did not pass its health check: {check}")
            return None
        show.bots.append(int(r.json()["bot"]["id"]))
    match = show.start_match()
    say(f"\nshowcase: match #{match}, bots thinking {SHOWCASE_THINK_MS} ms a move "
        f"({SHOWCASE_DEALS} deals; the next starts when it ends)")
    say(f"watch it live: {base}/live")
    return show
