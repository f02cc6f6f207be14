"""Where a bot is called: the normalized endpoint of its URL.

A pure rule on a URL, in the core because three rooms apply it: a submission is refused when
its endpoint belongs to another live bot (:mod:`arena.bots.service`), a match never seats one
endpoint twice (:mod:`arena.play.matches`) and the ladder groups its candidates by it
(:mod:`arena.play.ladder`).
"""

from __future__ import annotations

from functools import lru_cache

from referee.wire.netguard import GuardError, NetPolicy, check_url


@lru_cache(maxsize=1 << 17)
def endpoint_of(url: str) -> str | None:
    """The normalized endpoint of a bot URL: ``scheme://host:port/path``, with the host in
    the SSRF guard's canonical form (lower case, IP literals in one spelling), the port
    explicit and no trailing slash; query, fragment and user info dropped.  None when the
    URL does not parse.  Two URLs with one endpoint reach the same bot; host names that are
    aliases of each other are not detected (that would take DNS).

    Remembered per URL (a pure rule): a ladder round groups every idle bot by it, and at
    100,000 bots the guard's parse of each URL took most of the round (~25 MB for as many
    URLs)."""
    try:
        t = check_url(url, NetPolicy(allow_private=True))
    except GuardError:
        return None
    host = f"[{t.host}]" if ":" in t.host else t.host
    return f"{t.scheme}://{host}:{t.port}{t.base_path or '/'}"
