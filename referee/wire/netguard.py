"""SSRF guard: decide which bot URLs and addresses the referee may connect to.

Bots are HTTP servers run by strangers, and the referee calls whatever URL a
stranger registered.  Without a guard, a bot owner could register
``http://169.254.169.254/latest/meta-data/`` (cloud credentials),
``http://127.0.0.1:6379/`` (our Redis) or any host on the operator's private
network, and use the referee as a proxy into places only it can reach.

The guard works in two steps, and the second is the one that matters:

1. :func:`parse_target` validates the *spelling* of a URL: only ``http`` and
   ``https``, no userinfo (``http://good@127.0.0.1/`` fools humans and some
   parsers), no percent-encoding, backslashes or control characters in the
   authority, a valid port, and a host that is either a bracketed IPv6 literal
   or a DNS name.  A host whose last label is numeric is an IPv4 address, parsed
   the way browsers (WHATWG URL) and ``inet_aton`` do: ``2130706433``,
   ``0177.0.0.1``, ``0x7f.1`` and ``127.1`` are all ``127.0.0.1``.  Parsing these
   ourselves matters because the system resolver would otherwise quietly turn
   them into loopback addresses.  Non-ASCII names are IDNA-encoded first, which
   also folds full-width digits and dots into ASCII before the numeric check.

2. :func:`resolve_checked` turns a host into addresses (IP literals without any
   lookup; names through a resolver, bounded by the caller's deadline), and
   classifies *every* address.  If any one of them is refused the whole host is
   refused: a name that mixes public and private answers is an attack or a
   misconfiguration, and refusing it is simpler to reason about than filtering.
   The caller must then connect to exactly the returned addresses and never
   resolve the name again; :mod:`referee.wire.httpbot` does so, which is what makes
   DNS rebinding (public answer for the check, private answer for the connect)
   impossible.

Classification (:func:`classify_address`) uses an explicit table taken from the
IANA IPv4 and IPv6 special-purpose address registries rather than
``ipaddress``'s ``is_private``/``is_global``, because those tables have changed
between Python patch releases and we want one stable answer.  As a second line,
anything the table calls global but ``ipaddress`` does not is still refused as
``RESERVED``.  IPv6 forms that carry an IPv4 address (IPv4-mapped,
IPv4-compatible, SIIT-translated, 6to4, NAT64 well-known prefix, Teredo) are
refused when the embedded address is refused, since traffic to them reaches
that IPv4 host.

Policy (:class:`NetPolicy`): by default only globally routable unicast
addresses are allowed.  ``allow_private`` (an operator setting for the local
demo and tests) also admits loopback and private ranges (RFC 1918, CGNAT
100.64/10, ULA fc00::/7).  Link-local ranges, including the cloud metadata
endpoints, need the separate ``allow_link_local`` flag; metadata addresses that
sit inside private ranges (``fd00:ec2::254``, ``100.100.100.200``) are treated
as link-local for that reason.  Unspecified, multicast, broadcast,
documentation, benchmarking, site-local and reserved addresses are never
allowed: connecting to ``0.0.0.0`` on Linux, for instance, reaches the local
host.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

__all__ = [
    "DEFAULT_POLICY",
    "STUCK_RETRY_S",
    "AddressCategory",
    "AddressRefusedError",
    "BadUrlError",
    "GuardError",
    "IPAddress",
    "NetPolicy",
    "ResolveFailedError",
    "ResolveTimeoutError",
    "Resolver",
    "Target",
    "address_allowed",
    "check_address",
    "check_url",
    "classify_address",
    "parse_target",
    "resolve_checked",
    "running_lookups",
    "system_resolver",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: A resolver maps a DNS name to the IP addresses (as text) it currently has.
#: It may block; :func:`resolve_checked` bounds it by the caller's deadline.
Resolver = Callable[[str], Iterable[str]]


# --------------------------------------------------------------------------- errors
# None of these derive from OSError on purpose: urllib3 and requests wrap
# OSErrors raised inside a connection into their own exception types, while
# other exceptions propagate unchanged, so the HTTP caller can tell "the guard
# said no" apart from "the network failed".


class GuardError(Exception):
    """Base class for everything the guard refuses."""


class BadUrlError(GuardError, ValueError):
    """The URL is malformed or uses a form we refuse (scheme, userinfo, port...)."""


class AddressRefusedError(GuardError):
    """The host is, or resolves to, an address the policy does not allow."""

    def __init__(
        self,
        message: str,
        address: IPAddress | None = None,
        category: AddressCategory | None = None,
    ) -> None:
        super().__init__(message)
        self.address = address
        self.category = category


class ResolveTimeoutError(GuardError):
    """Name resolution did not finish before the deadline."""


class ResolveFailedError(GuardError):
    """The name does not resolve (NXDOMAIN, no addresses, resolver error)."""


# --------------------------------------------------------------------------- policy


class AddressCategory(StrEnum):
    """What kind of address an IP is, for policy decisions and error messages."""

    GLOBAL = "global"
    LOOPBACK = "loopback"
    PRIVATE = "private"
    LINK_LOCAL = "link-local"
    METADATA = "cloud-metadata"
    UNSPECIFIED = "unspecified"
    MULTICAST = "multicast"
    BROADCAST = "broadcast"
    DOCUMENTATION = "documentation"
    BENCHMARKING = "benchmarking"
    SITE_LOCAL = "site-local"
    RESERVED = "reserved"


@dataclass(frozen=True, slots=True)
class NetPolicy:
    """Which address categories the referee may connect to.

    The default refuses everything but globally routable unicast addresses,
    which is what a public deployment wants.  ``allow_private`` is for the local
    demo and the tests (bots on loopback or a LAN); ``allow_link_local`` is a
    separate, deliberately awkward switch because link-local space holds the
    cloud metadata services, which must stay unreachable even when private
    addresses are allowed.
    """

    allow_private: bool = False
    allow_link_local: bool = False

    def allows(self, category: AddressCategory) -> bool:
        """Return whether an address of ``category`` may be connected to."""
        if category is AddressCategory.GLOBAL:
            return True
        if category in (AddressCategory.LOOPBACK, AddressCategory.PRIVATE):
            return self.allow_private
        if category in (AddressCategory.LINK_LOCAL, AddressCategory.METADATA):
            return self.allow_link_local
        return False


#: The policy for public deployments: global unicast addresses only.
DEFAULT_POLICY: Final = NetPolicy()


# --------------------------------------------------------------------------- classifier

_C = AddressCategory

# Order matters only where ranges nest: more specific entries come first.
_V4_TABLE: Final[tuple[tuple[ipaddress.IPv4Network, AddressCategory], ...]] = tuple(
    (ipaddress.IPv4Network(net), cat)
    for net, cat in (
        ("0.0.0.0/32", _C.UNSPECIFIED),
        ("0.0.0.0/8", _C.RESERVED),  # "this network"; Linux routes 0.x to the local host
        ("10.0.0.0/8", _C.PRIVATE),
        ("100.100.100.200/32", _C.METADATA),  # Alibaba Cloud, inside CGNAT
        ("100.64.0.0/10", _C.PRIVATE),  # CGNAT / shared address space
        ("127.0.0.0/8", _C.LOOPBACK),
        ("169.254.169.254/32", _C.METADATA),  # AWS, GCP, Azure, OpenStack...
        ("169.254.170.2/32", _C.METADATA),  # AWS ECS task metadata
        ("169.254.0.0/16", _C.LINK_LOCAL),
        ("172.16.0.0/12", _C.PRIVATE),
        ("192.0.0.192/32", _C.METADATA),  # Oracle Cloud
        ("192.0.0.0/24", _C.RESERVED),  # IETF protocol assignments
        ("192.0.2.0/24", _C.DOCUMENTATION),
        ("192.88.99.0/24", _C.RESERVED),  # deprecated 6to4 relay anycast
        ("192.168.0.0/16", _C.PRIVATE),
        ("198.18.0.0/15", _C.BENCHMARKING),
        ("198.51.100.0/24", _C.DOCUMENTATION),
        ("203.0.113.0/24", _C.DOCUMENTATION),
        ("224.0.0.0/4", _C.MULTICAST),
        ("255.255.255.255/32", _C.BROADCAST),
        ("240.0.0.0/4", _C.RESERVED),
    )
)

_V6_TABLE: Final[tuple[tuple[ipaddress.IPv6Network, AddressCategory], ...]] = tuple(
    (ipaddress.IPv6Network(net), cat)
    for net, cat in (
        ("::/128", _C.UNSPECIFIED),
        ("::1/128", _C.LOOPBACK),
        ("100::/64", _C.RESERVED),  # discard-only
        ("64:ff9b:1::/48", _C.RESERVED),  # local-use NAT64
        ("2001:db8::/32", _C.DOCUMENTATION),
        ("3fff::/20", _C.DOCUMENTATION),
        ("2001:2::/48", _C.BENCHMARKING),
        ("2001::/23", _C.RESERVED),  # IETF protocol assignments, incl. Teredo, ORCHID
        ("5f00::/16", _C.RESERVED),  # SRv6 SIDs
        ("fd00:ec2::254/128", _C.METADATA),  # AWS IMDS over IPv6, inside ULA
        ("fc00::/7", _C.PRIVATE),  # unique local addresses
        ("fe80::/10", _C.LINK_LOCAL),
        ("fec0::/10", _C.SITE_LOCAL),  # deprecated site-local
        ("ff00::/8", _C.MULTICAST),
    )
)

_GLOBAL_UNICAST_V6: Final = ipaddress.IPv6Network("2000::/3")
_NAT64_WKP: Final = ipaddress.IPv6Network("64:ff9b::/96")
_SIIT_TRANSLATED: Final = ipaddress.IPv6Network("::ffff:0:0:0/96")
_IPV4_COMPATIBLE: Final = ipaddress.IPv6Network("::/96")

# Categories ordered from most to least permissive, to pick the "worst" of an
# address and the IPv4 addresses embedded in it.
_STRICTNESS: Final[dict[AddressCategory, int]] = {
    _C.GLOBAL: 0,
    _C.PRIVATE: 1,
    _C.LOOPBACK: 2,
    _C.LINK_LOCAL: 3,
    _C.METADATA: 4,
    _C.SITE_LOCAL: 5,
    _C.DOCUMENTATION: 6,
    _C.BENCHMARKING: 7,
    _C.MULTICAST: 8,
    _C.BROADCAST: 9,
    _C.RESERVED: 10,
    _C.UNSPECIFIED: 11,
}


def _classify_v4(ip: ipaddress.IPv4Address) -> AddressCategory:
    for net, cat in _V4_TABLE:
        if ip in net:
            return cat
    # Second line of defence: if the standard library knows a reason this is not
    # a global address that our table lacks, refuse it.
    return _C.GLOBAL if ip.is_global else _C.RESERVED


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Return the IPv4 addresses an IPv6 address carries, for the forms that route to them.

    IPv4-mapped (``::ffff:a.b.c.d``) and IPv4-compatible (``::a.b.c.d``) go
    straight to the IPv4 host on a dual-stack socket; SIIT ``::ffff:0:a.b.c.d``,
    NAT64 ``64:ff9b::a.b.c.d``, 6to4 ``2002:AABB:CCDD::`` and Teredo reach it
    through a translator or relay.
    """
    found: list[ipaddress.IPv4Address] = []
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    elif (
        ip in _SIIT_TRANSLATED or ip in _NAT64_WKP or (ip in _IPV4_COMPATIBLE and int(ip) > 1)
    ):  # int > 1 excludes :: and ::1
        found.append(low32)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found


def _classify_v6(ip: ipaddress.IPv6Address) -> AddressCategory:
    own: AddressCategory | None = None
    for net, cat in _V6_TABLE:
        if ip in net:
            own = cat
            break
    embedded = embedded_ipv4(ip)
    if own is None:
        if ip in _NAT64_WKP or ip.ipv4_mapped is not None:
            own = _C.GLOBAL  # judged by the embedded address alone
        elif ip in _IPV4_COMPATIBLE or ip in _SIIT_TRANSLATED:
            own = _C.RESERVED  # deprecated / translator-only forms
        elif ip not in _GLOBAL_UNICAST_V6:
            own = _C.RESERVED  # unallocated outside 2000::/3
        elif ip.is_global or ip.sixtofour is not None:
            own = _C.GLOBAL
        else:
            own = _C.RESERVED
    worst = own
    for v4 in embedded:
        cat = _classify_v4(v4)
        if _STRICTNESS[cat] > _STRICTNESS[worst]:
            worst = cat
    return worst


def classify_address(ip: IPAddress | str) -> AddressCategory:
    """Classify an IP address (object or text, IPv6 scope ids ignored).

    For IPv6 addresses that embed an IPv4 address the stricter of the two
    categories wins, so ``::ffff:127.0.0.1`` is ``LOOPBACK`` and
    ``2002:a9fe:a9fe::`` (6to4 of 169.254.169.254) is ``METADATA``.
    """
    if isinstance(ip, str):
        ip = ipaddress.ip_address(ip)
    if isinstance(ip, ipaddress.IPv4Address):
        return _classify_v4(ip)
    if ip.scope_id is not None:
        ip = ipaddress.IPv6Address(int(ip))
    return _classify_v6(ip)


def address_allowed(ip: IPAddress | str, policy: NetPolicy) -> bool:
    """Return whether ``policy`` allows connecting to ``ip``."""
    return policy.allows(classify_address(ip))


def check_address(ip: IPAddress | str, policy: NetPolicy) -> None:
    """Raise :class:`AddressRefusedError` unless ``policy`` allows ``ip``."""
    addr = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    category = classify_address(addr)
    if not policy.allows(category):
        raise AddressRefusedError(f"address {addr} is {category}", addr, category)


# --------------------------------------------------------------------------- URL parsing

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_LABEL_RE: Final = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
_FORBIDDEN_URL_CHARS: Final = re.compile(r"[\x00-\x20\x7f\\]")


@dataclass(frozen=True, slots=True)
class Target:
    """A validated bot URL.

    ``host`` is canonical: a lower-case ASCII DNS name without trailing dot, or
    the compressed text of an IP address (no brackets).  ``literal`` is set when
    the URL named an IP address in any spelling.  ``base_path`` has no trailing
    slash (empty for the root).  ``query`` (without the ``?``) is kept and sent with every
    request: hosted bots often take a key there (``?code=...``), next to a secret path.
    """

    scheme: str
    host: str
    port: int
    literal: IPAddress | None
    base_path: str
    query: str = ""

    @property
    def origin(self) -> str:
        """``scheme://host[:port]`` with IPv6 brackets and the default port omitted."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port == _DEFAULT_PORTS[self.scheme]:
            return f"{self.scheme}://{host}"
        return f"{self.scheme}://{host}:{self.port}"

    def url(self, path: str) -> str:
        """Join ``path`` (with or without a leading slash) onto the base URL, before its
        query: ``https://h/s3cr3t?key=k`` + ``/move`` is ``https://h/s3cr3t/move?key=k``."""
        joined = f"{self.origin}{self.base_path}/{path.lstrip('/')}"
        return f"{joined}?{self.query}" if self.query else joined


def _parse_ipv4_number(part: str) -> int | None:
    """One dotted part, in the WHATWG / inet_aton way: 0x hex, leading-0 octal, decimal."""
    if part.startswith(("0x", "0X")):
        digits = part[2:]
        if digits == "":
            return 0
        return int(digits, 16) if re.fullmatch(r"[0-9a-fA-F]+", digits) else None
    if len(part) > 1 and part.startswith("0"):
        return int(part, 8) if re.fullmatch(r"[0-7]+", part) else None
    return int(part) if re.fullmatch(r"[0-9]+", part) else None


def _ends_in_number(host: str) -> bool:
    last = host.rsplit(".", 1)[-1]
    return bool(re.fullmatch(r"[0-9]+", last) or re.fullmatch(r"0[xX][0-9a-fA-F]*", last))


def parse_ipv4_any(host: str) -> ipaddress.IPv4Address | None:
    """Parse every IPv4 spelling a browser or ``inet_aton`` accepts; ``None`` if not one.

    ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``0x7f.1``, ``127.1`` and
    ``127.0.0.1`` all give ``127.0.0.1``.  Out-of-range parts return ``None``.
    """
    parts = host.split(".")
    if len(parts) > 4 or any(p == "" for p in parts):
        return None
    numbers: list[int] = []
    for p in parts:
        n = _parse_ipv4_number(p)
        if n is None:
            return None
        numbers.append(n)
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _parse_host(raw: str) -> tuple[str, IPAddress | None]:
    """Validate and canonicalise the host part of an authority (brackets already removed)."""
    if raw == "":
        raise BadUrlError("empty host")
    if "%" in raw:
        raise BadUrlError("percent-encoding in host")
    host = raw
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise BadUrlError(f"invalid international host name: {exc}") from None
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if host == "" or host.endswith("."):
        raise BadUrlError("malformed host")
    if _ends_in_number(host):
        v4 = parse_ipv4_any(host)
        if v4 is None:
            raise BadUrlError(f"host {raw!r} looks like an IPv4 address but is not a valid one")
        return str(v4), v4
    if len(host) > 253 or not all(_LABEL_RE.match(label) for label in host.split(".")):
        raise BadUrlError(f"invalid host name {raw!r}")
    return host, None


def parse_target(url: str) -> Target:
    """Validate the form of a bot base URL and return it canonicalised.

    Raises :class:`BadUrlError`.  Does no DNS and does not look at address policy;
    see :func:`check_url` for that.
    """
    scheme, authority, tail, query = _split_url(url)
    host, literal, port_text = _parse_authority(authority)
    port = _parse_port(port_text, scheme)
    # Paths may legitimately contain escapes; only reject malformed ones.
    if "%" in tail and re.search(r"%(?![0-9a-fA-F]{2})", tail):
        raise BadUrlError("malformed percent-escape in path")
    if "%" in query and re.search(r"%(?![0-9a-fA-F]{2})", query):
        raise BadUrlError("malformed percent-escape in query")
    return Target(
        scheme=scheme,
        host=host,
        port=port,
        literal=literal,
        base_path=tail.rstrip("/"),
        query=query,
    )


def _split_url(url: str) -> tuple[str, str, str, str]:
    """(scheme, authority, path, query) of an ``http(s)://`` URL without a fragment."""
    if not isinstance(url, str) or _FORBIDDEN_URL_CHARS.search(url):
        raise BadUrlError("URL contains whitespace, control characters or backslashes")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in _DEFAULT_PORTS:
        raise BadUrlError("only http:// and https:// URLs are allowed")
    authority_end = len(rest)
    for ch in "/?#":
        idx = rest.find(ch)
        if idx != -1:
            authority_end = min(authority_end, idx)
    authority, tail = rest[:authority_end], rest[authority_end:]
    if "#" in tail:
        raise BadUrlError("the base URL must not have a fragment")
    tail, _, query = tail.partition("?")
    if "@" in authority:
        raise BadUrlError("userinfo (user@host) is not allowed in bot URLs")
    return scheme, authority, tail, query


def _parse_authority(authority: str) -> tuple[str, IPAddress | None, str | None]:
    """(canonical host, the IP literal if it is one, port text or None) of ``host[:port]``."""
    if authority.startswith("["):
        return _parse_bracketed(authority)
    host_text, colon, port_part = authority.partition(":")
    if ":" in port_part:
        raise BadUrlError("IPv6 literals must be in brackets")
    host, literal = _parse_host(host_text)
    return host, literal, port_part if colon else None


def _parse_bracketed(authority: str) -> tuple[str, IPAddress | None, str | None]:
    """``[IPv6]`` or ``[IPv6]:port``: no zone identifier, nothing else after the bracket."""
    close = authority.find("]")
    if close == -1:
        raise BadUrlError("unterminated IPv6 literal")
    inner, after = authority[1:close], authority[close + 1 :]
    if "%" in inner:
        raise BadUrlError("IPv6 zone identifiers are not allowed")
    try:
        v6 = ipaddress.IPv6Address(inner)
    except ValueError:
        raise BadUrlError(f"invalid IPv6 literal {inner!r}") from None
    if after and not after.startswith(":"):
        raise BadUrlError("garbage after IPv6 literal")
    return v6.compressed, v6, after[1:] if after else None


def _parse_port(port_text: str | None, scheme: str) -> int:
    """The port given (1-65535, plain decimal digits), or the scheme's default."""
    if port_text is None or port_text == "":
        return _DEFAULT_PORTS[scheme]
    if not re.fullmatch(r"[0-9]{1,5}", port_text) or not 0 < int(port_text) <= 65535:
        raise BadUrlError(f"invalid port {port_text!r}")
    return int(port_text)


def check_url(url: str, policy: NetPolicy) -> Target:
    """Validate a URL and, when its host is an IP literal, the address too.

    Meant for bot registration, so users learn at once that ``http://0x7f.1/``
    will never work.  Names are not resolved here: DNS answers change, so the
    address check that protects a connection happens when it is made
    (:func:`resolve_checked`).
    """
    target = parse_target(url)
    if target.literal is not None:
        check_address(target.literal, policy)
    _check_special_name(target.host, policy)
    return target


def _check_special_name(host: str, policy: NetPolicy) -> None:
    """RFC 6761: ``localhost`` and ``*.localhost`` are loopback whatever DNS says."""
    if (host == "localhost" or host.endswith(".localhost")) and not policy.allows(
        AddressCategory.LOOPBACK
    ):
        raise AddressRefusedError(
            f"{host} is {AddressCategory.LOOPBACK}", category=AddressCategory.LOOPBACK
        )


# --------------------------------------------------------------------------- resolution


def system_resolver(host: str) -> list[str]:
    """Resolve ``host`` with the operating system's resolver (TCP-capable addresses)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise ResolveFailedError(f"cannot resolve {host!r}: {exc}") from None
    seen: dict[str, None] = {}
    for family, _type, _proto, _canon, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            seen.setdefault(str(sockaddr[0]), None)
    return list(seen)


# --------------------------------------------------------------------------- lookups, name by name

STUCK_RETRY_S: Final = 5.0
"""How long a name whose lookup outlived a call's deadline and then failed is answered with
:class:`ResolveTimeoutError` at once, without asking its name server again (a short negative
cache: a name server that just let a lookup hang for seconds is not asked again at once)."""

_LookupKey = tuple[Resolver, str]


class _Lookup:
    """One lookup of one name on its own daemon thread; every caller of that name waits on it."""

    __slots__ = ("done", "error", "result", "started", "stuck")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: list[str] = []
        self.error: BaseException | None = None
        self.started = time.monotonic()
        self.stuck = False
        """A caller gave up waiting for it: it has outlived a call's deadline."""


class _Lookups:
    """The DNS lookups of one process: at most one at a time per name (and resolver).

    ``getaddrinfo`` cannot be interrupted, so a lookup whose name server never answers keeps
    its thread until the system resolver gives up (10-30 s with the usual ``resolv.conf``),
    long after the call that started it timed out.  Lookups run on daemon threads so that a
    hung one can neither hold its caller past the deadline nor hold up interpreter exit.

    What a hung lookup keeps is its own name's entry, nothing shared: there is no process-wide
    pool of lookup slots, so the names of other bots always get a lookup of their own, however
    many names hang (a pool of 32 slots held by 32 hanging names used to make every other
    bot's calls in the process time out, charged to those bots).  The number of lookup threads
    is bounded by the names being looked up, one each: a call for a name whose lookup is
    already running waits for that one (within its own deadline), and once that lookup has
    outlived a caller's deadline (it is *stuck*), further calls for the name fail at once with
    :class:`ResolveTimeoutError`, charged to the bot whose name it is, without starting another;
    a stuck lookup that ends in failure keeps the name refused that way for
    :data:`STUCK_RETRY_S`.  A stuck lookup that finally succeeds lifts the refusal: the next
    call asks again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[_LookupKey, _Lookup] = {}
        self._refused_until: dict[_LookupKey, float] = {}

    def resolve(self, resolver: Resolver, host: str, timeout: float) -> list[str]:
        """The resolver's answers for ``host``, waiting at most ``timeout`` seconds."""
        end = time.monotonic() + timeout
        if timeout <= 0:
            raise ResolveTimeoutError(f"resolving {host!r} exceeded the deadline")
        key = (resolver, host)
        with self._lock:
            box = self._running.get(key)
            fresh = box is None
            if box is None:
                self._refuse_if_recently_stuck(key, host)
                box = self._running[key] = _Lookup()
            elif box.stuck:
                waited = time.monotonic() - box.started
                raise ResolveTimeoutError(
                    f"an earlier lookup of {host!r} is still unanswered after {waited:.1f}s"
                )
        if fresh:
            self._start(resolver, host, key, box)
        if not box.done.wait(max(0.0, end - time.monotonic())):
            with self._lock:
                if not box.done.is_set():
                    box.stuck = True
                    raise ResolveTimeoutError(f"resolving {host!r} exceeded the deadline")
        if box.error is not None:
            if isinstance(box.error, GuardError):
                raise box.error
            raise ResolveFailedError(f"cannot resolve {host!r}: {box.error}")
        return list(box.result)

    def _refuse_if_recently_stuck(self, key: _LookupKey, host: str) -> None:
        until = self._refused_until.get(key)
        if until is None:
            return
        left = until - time.monotonic()
        if left <= 0:
            del self._refused_until[key]
            return
        raise ResolveTimeoutError(
            f"{host!r} did not resolve in time; its name server is not asked again for {left:.1f}s"
        )

    def _start(self, resolver: Resolver, host: str, key: _LookupKey, box: _Lookup) -> None:
        try:
            threading.Thread(
                target=self._run, args=(resolver, host, key, box), name="bigtwo-dns", daemon=True
            ).start()
        except BaseException:
            # The thread may or may not be running (an exception raised by a signal handler
            # can land inside start()); either way the name must not stay taken for good.
            self._finish(key, box)
            raise

    def _run(self, resolver: Resolver, host: str, key: _LookupKey, box: _Lookup) -> None:
        try:
            box.result = [str(a) for a in resolver(host)]
        except BaseException as exc:  # reported to the callers still waiting, if any
            box.error = exc
        finally:
            self._finish(key, box)

    def _finish(self, key: _LookupKey, box: _Lookup) -> None:
        with self._lock:
            if self._running.get(key) is box:
                del self._running[key]
            if box.stuck and box.error is not None:
                now = time.monotonic()
                if len(self._refused_until) >= 1024:  # drop the expired ones
                    self._refused_until = {
                        k: t for k, t in self._refused_until.items() if t > now
                    }
                self._refused_until[key] = now + STUCK_RETRY_S
            else:
                self._refused_until.pop(key, None)
            box.done.set()

    def running(self) -> int:
        """How many lookups are running now (stuck ones included): one per name at most."""
        with self._lock:
            return len(self._running)


_lookups = _Lookups()


def _reset_after_fork() -> None:
    # Lookup threads do not survive fork(): their names would stay taken for good.
    global _lookups
    _lookups = _Lookups()


os.register_at_fork(after_in_child=_reset_after_fork)


def _bounded_lookup(resolver: Resolver, host: str, timeout: float) -> list[str]:
    return _lookups.resolve(resolver, host, timeout)


def running_lookups() -> int:
    """How many DNS lookups this process is running (stuck ones included), for operators."""
    return _lookups.running()


def resolve_checked(
    host: str, policy: NetPolicy, *, timeout: float, resolver: Resolver | None = None
) -> list[IPAddress]:
    """Return the addresses to connect to for ``host``, all allowed by ``policy``.

    ``host`` may be an IP literal in any spelling :func:`parse_target` accepts
    (then no resolver is consulted) or a DNS name, which is resolved by
    ``resolver`` (default :func:`system_resolver`) within ``timeout`` seconds.
    Raises :class:`AddressRefusedError` if any answer is refused,
    :class:`ResolveTimeoutError` or :class:`ResolveFailedError`.  The caller must connect
    only to the returned addresses.
    """
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    literal: IPAddress | None
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        if ":" in host:
            raise BadUrlError(f"invalid IPv6 literal {host!r}") from None
        host, literal = _parse_host(host)
    if literal is not None:
        check_address(literal, policy)
        return [literal]
    _check_special_name(host, policy)
    answers = _bounded_lookup(resolver or system_resolver, host, timeout)
    addresses: list[IPAddress] = []
    for text in answers:
        try:
            addr = ipaddress.ip_address(text)
        except ValueError:
            raise ResolveFailedError(f"resolver gave a non-address {text!r} for {host!r}") from None
        category = classify_address(addr)
        if not policy.allows(category):
            raise AddressRefusedError(
                f"{host} resolves to {addr}, which is {category}", addr, category
            )
        if addr not in addresses:
            addresses.append(addr)
    if not addresses:
        raise ResolveFailedError(f"{host!r} has no addresses")
    return addresses
