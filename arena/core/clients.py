"""One rule for "one client": what every counter of the service counts per client.

Why
---
Several parts of the service count or scope by client: the rate limits
(:mod:`arena.web.limits`), the live relay's streams per client (:mod:`arena.live.relay`) and
the scope of an anonymous ``Idempotency-Key`` (:mod:`arena.web.idempotency`).  If each decided
on its own what one client is, a visitor would be one client to one counter and 2**64
clients to another: an IPv6 subscriber is usually given a whole /64 and may use any of its
addresses, so counting exact IPv6 addresses lets one visitor open as many live streams as
they like while the rate limits (which counted /64s) held.  Every counter therefore asks
:func:`client_key`, and ``tests/arena/test_clients.py`` checks each of them.

The rule
--------
* IPv4: the exact address (``203.0.113.7``);
* IPv6: its /64 (``2001:db8:1:2::/64``), the block one subscriber usually gets;
* IPv4-mapped IPv6 (``::ffff:203.0.113.7``, what a dual-stack socket reports for an IPv4
  peer): the IPv4 address, so the same visitor is one client on either kind of socket;
* anything that is not an address (a test client, a Unix socket): the text as given.

The address itself is the TCP peer, or what ``TRUSTED_PROXY_HOPS`` trusted proxies put in
``X-Forwarded-For`` (the web app's ProxyFix, the relay's own reading of the header): never
a client's own claim.  No Flask here: the relay (an asyncio process) uses it too.
"""

from __future__ import annotations

import ipaddress

IPV6_PREFIX = 64
"""The IPv6 block counted as one client."""


def client_key(addr: str | None) -> str:
    """The client an address belongs to, as every counter counts it (see the module
    docstring): ``"203.0.113.7"``, ``"2001:db8:1:2::/64"``, or ``addr`` as given."""
    text = (addr or "").strip()
    if not text:
        return "unknown"
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    bare = bare.split("%", 1)[0]  # an IPv6 zone (fe80::1%eth0) names the link, not the client
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        return text
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/{IPV6_PREFIX}", strict=False))
    return str(ip)
