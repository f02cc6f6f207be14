"""The SSRF guard: URL spellings, address classification, and "no connection attempted".

Network rule for this file: nothing here connects anywhere.  The refusal
tables run with ``socket.connect``, ``create_connection`` and ``getaddrinfo``
replaced by functions that record the attempt, and names are answered by fake
resolvers, so the proofs hold without touching any private or public address.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from referee.wire import netguard
from referee.wire.httpbot import BotClient, Fault
from referee.wire.netguard import (
    AddressCategory,
    AddressRefusedError,
    BadUrlError,
    NetPolicy,
    ResolveFailedError,
    ResolveTimeoutError,
    check_url,
    classify_address,
    parse_ipv4_any,
    parse_target,
    resolve_checked,
)

PUBLIC = NetPolicy()
LOCAL = NetPolicy(allow_private=True)
LINK = NetPolicy(allow_private=True, allow_link_local=True)
C = AddressCategory

# Fake DNS: names the refusal tables use.  Never consulted for a literal.
FAKE_DNS: dict[str, list[str]] = {
    "localhost": ["127.0.0.1", "::1"],
    "internal.example": ["10.0.0.5"],
    "router.example": ["192.168.1.1"],
    "cgnat.example": ["100.64.0.1"],
    "metadata.example": ["169.254.169.254"],
    "imds6.example": ["fd00:ec2::254"],
    "ula.example": ["fd12:3456::1"],
    "mapped.example": ["::ffff:127.0.0.1"],
    "nat64.example": ["64:ff9b::a9fe:a9fe"],
    "zero.example": ["0.0.0.0"],
    "mixed.example": ["93.184.216.34", "10.0.0.1"],
    "public.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
}


def fake_resolver(host: str) -> list[str]:
    try:
        return FAKE_DNS[host]
    except KeyError:
        raise AssertionError(f"unexpected DNS lookup for {host!r}") from None


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Record (and fail) every connection or real DNS attempt; assert none happened."""
    attempts: list[object] = []

    def forbidden(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise AssertionError(f"network attempt: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", forbidden)
    monkeypatch.setattr(socket.socket, "connect_ex", forbidden)
    monkeypatch.setattr(socket, "create_connection", forbidden)
    monkeypatch.setattr(socket, "getaddrinfo", forbidden)
    yield attempts
    assert attempts == [], "a refused URL led to a network attempt"


# --------------------------------------------------------------------------- the table

# URL -> the Fault the caller reports, with the default (public-only) policy.
REFUSED = Fault.REFUSED_ADDRESS
BAD = Fault.BAD_URL
REFUSED_URLS: dict[str, Fault] = {
    # loopback, every spelling
    "http://127.0.0.1/": REFUSED,
    "http://127.0.0.1:8080/bot": REFUSED,
    "http://127.1/": REFUSED,
    "http://127.0.1/": REFUSED,
    "http://2130706433/": REFUSED,
    "http://0x7f000001/": REFUSED,
    "http://0X7F000001/": REFUSED,
    "http://017700000001/": REFUSED,
    "http://0177.0.0.1/": REFUSED,
    "http://0177.0000.0000.0001/": REFUSED,
    "http://0x7f.1/": REFUSED,
    "http://0x7f.0x0.0x0.0x1/": REFUSED,
    "http://127.0.0.1./": REFUSED,
    "http://127.255.255.254/": REFUSED,
    "HTTP://127.0.0.1/": REFUSED,
    "http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/": REFUSED,  # full-width
    "http://127\u30020\u30020\u30021/": REFUSED,  # ideographic full stops
    "http://[::1]/": REFUSED,
    "http://[0:0:0:0:0:0:0:1]:80/": REFUSED,
    "http://localhost/": REFUSED,
    "http://LOCALHOST./": REFUSED,
    "http://bot.localhost/": REFUSED,  # RFC 6761: never even asked of DNS
    # IPv6 forms embedding IPv4
    "http://[::ffff:127.0.0.1]/": REFUSED,
    "http://[::ffff:7f00:1]/": REFUSED,
    "http://[0:0:0:0:0:ffff:127.0.0.1]/": REFUSED,
    "http://[::FFFF:A9FE:A9FE]/": REFUSED,
    "http://[::127.0.0.1]/": REFUSED,  # IPv4-compatible
    "http://[::ffff:0:127.0.0.1]/": REFUSED,  # SIIT translated
    "http://[2002:7f00:1::]/": REFUSED,  # 6to4 of 127.0.0.1
    "http://[2002:a9fe:a9fe::1]/": REFUSED,  # 6to4 of the metadata address
    "http://[2002:c0a8:101::]/": REFUSED,  # 6to4 of 192.168.1.1
    "http://[64:ff9b::127.0.0.1]/": REFUSED,  # NAT64
    "http://[64:ff9b::a00:1]/": REFUSED,  # NAT64 of 10.0.0.1
    "http://[64:ff9b:1::a00:1]/": REFUSED,  # local-use NAT64
    "http://[2001:0:7f00:1::]/": REFUSED,  # Teredo, server 127.0.0.1
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/": REFUSED,  # Teredo
    "http://mapped.example/": REFUSED,
    "http://nat64.example/": REFUSED,
    # private, CGNAT, ULA
    "http://10.0.0.1/": REFUSED,
    "http://10.1/": REFUSED,
    "http://167772161/": REFUSED,
    "http://012.0.0.1/": REFUSED,
    "http://0xa.0.0.1/": REFUSED,
    "http://172.16.0.1/": REFUSED,
    "http://172.31.255.255/": REFUSED,
    "http://192.168.1.1/": REFUSED,
    "http://3232235777/": REFUSED,
    "http://192.168.257/": REFUSED,  # 192.168.1.1 in three parts
    "http://100.64.0.1/": REFUSED,
    "http://100.127.255.254/": REFUSED,
    "http://[fc00::1]/": REFUSED,
    "http://[fd12:3456::1]/": REFUSED,
    "http://internal.example/": REFUSED,
    "http://router.example:8443/": REFUSED,
    "http://cgnat.example/": REFUSED,
    "http://ula.example/": REFUSED,
    "http://mixed.example/": REFUSED,  # one bad answer refuses the host
    # link-local and cloud metadata
    "http://169.254.169.254/latest/meta-data/": REFUSED,
    "http://2852039166/": REFUSED,
    "http://0xa9fea9fe/": REFUSED,
    "http://0251.0376.0251.0376/": REFUSED,
    "http://169.254.1.1/": REFUSED,
    "http://169.254.170.2/": REFUSED,
    "http://100.100.100.200/": REFUSED,
    "http://[fd00:ec2::254]/": REFUSED,
    "http://[fe80::1]/": REFUSED,
    "http://[FE80::1]/": REFUSED,
    "http://metadata.example/": REFUSED,
    "http://imds6.example/": REFUSED,
    # unspecified, broadcast, multicast, reserved, documentation, benchmarking
    "http://0.0.0.0/": REFUSED,
    "http://0/": REFUSED,
    "http://0.0.0.0:8080/": REFUSED,
    "http://0.1.2.3/": REFUSED,
    "http://[::]/": REFUSED,
    "http://zero.example/": REFUSED,
    "http://255.255.255.255/": REFUSED,
    "http://4294967295/": REFUSED,
    "http://224.0.0.1/": REFUSED,
    "http://239.255.255.250/": REFUSED,
    "http://[ff02::1]/": REFUSED,
    "http://240.0.0.1/": REFUSED,
    "http://192.0.0.8/": REFUSED,
    "http://192.0.2.1/": REFUSED,
    "http://198.51.100.7/": REFUSED,
    "http://203.0.113.9/": REFUSED,
    "http://198.18.0.1/": REFUSED,
    "http://198.19.255.255/": REFUSED,
    "http://[2001:db8::1]/": REFUSED,
    "http://[3fff::1]/": REFUSED,
    "http://[fec0::1]/": REFUSED,
    "http://[100::1]/": REFUSED,
    "http://[::2]/": REFUSED,
    "http://[4000::1]/": REFUSED,
    # forms refused outright
    "http://good@127.0.0.1/": BAD,
    "http://good.example@127.0.0.1/": BAD,
    "http://user:pass@public.example/": BAD,
    "http://@127.0.0.1/": BAD,
    "http://public.example\\@127.0.0.1/": BAD,
    "http://%31%32%37.0.0.1/": BAD,
    "http://127.0.0.%31/": BAD,
    "http://loc%61lhost/": BAD,
    "http://[fe80::1%25eth0]/": BAD,
    "http://[::ffff:127.0.0.1/": BAD,
    "http://::1/": BAD,
    "http://[v1.abc]/": BAD,
    "http://256.0.0.1/": BAD,
    "http://1.2.3.4.5/": BAD,
    "http://0x100000000/": BAD,
    "http://4294967296/": BAD,
    "http://08.0.0.1/": BAD,
    "http://internal.example.10/": BAD,
    "http://127.0.0.1 .public.example/": BAD,
    "http://127.0.0.1\t/": BAD,
    " http://127.0.0.1/": BAD,
    "http://pub..example/": BAD,
    "http://-bad.example/": BAD,
    "http:///127.0.0.1/": BAD,
    "http://public.example:0/": BAD,
    "http://public.example:65536/": BAD,
    "http://public.example:-1/": BAD,
    "http://public.example:8o/": BAD,
    "http://public.example:80:80/": BAD,
    "http://public.example:+80/": BAD,
    "http://public.example/?q=%zz": BAD,
    "http://public.example/#x": BAD,
    "ftp://public.example/": BAD,
    "file:///etc/passwd": BAD,
    "gopher://127.0.0.1:6379/_INFO": BAD,
    "dict://127.0.0.1:11211/": BAD,
    "javascript:alert(1)": BAD,
    "//127.0.0.1/": BAD,
    "127.0.0.1": BAD,
    "": BAD,
}


@pytest.mark.parametrize(("url", "fault"), REFUSED_URLS.items(), ids=list(REFUSED_URLS))
def test_refused_without_any_connection(url: str, fault: Fault,
                                        no_network: list[object]) -> None:
    with BotClient(url, resolver=fake_resolver) as client:
        result = client.call("/move", {"hand": []}, 1.0)
        assert result.fault is fault, result
        assert not result.ok and result.status is None and result.detail
    assert no_network == []


LITERAL_SPELLINGS = [u for u, f in REFUSED_URLS.items()
                     if f is REFUSED and ".example" not in u]


@pytest.mark.parametrize("url", LITERAL_SPELLINGS)
def test_literal_spellings_are_refused_at_registration(url: str) -> None:
    # No resolver at all: literals must be recognised as addresses, not names.
    with pytest.raises(AddressRefusedError):
        check_url(url, PUBLIC)


@pytest.mark.parametrize("url", [u for u, f in REFUSED_URLS.items() if f is BAD])
def test_bad_forms_are_bad_url(url: str) -> None:
    with pytest.raises(BadUrlError):
        parse_target(url)


def test_a_query_in_the_base_url_is_kept_after_the_call_path() -> None:
    target = parse_target("https://Bots.Example/s3cr3t-path/?key=hunter2&x=1")
    assert (target.base_path, target.query) == ("/s3cr3t-path", "key=hunter2&x=1")
    assert target.url("/move") == "https://bots.example/s3cr3t-path/move?key=hunter2&x=1"
    assert parse_target("http://public.example/").url("move") == "http://public.example/move"


def test_refused_hostnames_are_never_handed_to_the_system_resolver(
        no_network: list[object]) -> None:
    # A literal spelling must be decided without any resolver.
    def no_dns(host: str) -> list[str]:
        raise AssertionError(f"resolver called for {host!r}")

    for url in LITERAL_SPELLINGS:
        with BotClient(url, resolver=no_dns) as client:
            assert client.call("/x", {}, 1.0).fault is Fault.REFUSED_ADDRESS


# --------------------------------------------------------------------------- spelling


@pytest.mark.parametrize(("spelling", "expected"), [
    ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("0x7f.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("10.1", "10.0.0.1"),
    ("192.168.257", "192.168.1.1"),
    ("0", "0.0.0.0"),
    ("0x", "0.0.0.0"),
    ("1.2.3.4", "1.2.3.4"),
    ("8.8.8.8", "8.8.8.8"),
    ("0xff.0xff.0xff.0xff", "255.255.255.255"),
])
def test_ipv4_spellings(spelling: str, expected: str) -> None:
    assert parse_ipv4_any(spelling) == ipaddress.IPv4Address(expected)


@pytest.mark.parametrize("spelling", ["256.1.1.1", "1.2.3.4.5", "09", "0x1g", "1..2", "",
                                      "4294967296", "1.16777216", "a.b.c.d"])
def test_ipv4_non_spellings(spelling: str) -> None:
    assert parse_ipv4_any(spelling) is None


def test_target_is_canonical() -> None:
    t = parse_target("HTTPS://Bot.Example.COM.:8443/v1/bot/")
    assert (t.scheme, t.host, t.port, t.literal, t.base_path) == (
        "https", "bot.example.com", 8443, None, "/v1/bot")
    assert t.url("/move") == "https://bot.example.com:8443/v1/bot/move"
    t = parse_target("http://[2606:4700:0:0::1111]")
    assert t.host == "2606:4700::1111" and t.port == 80
    assert t.url("move") == "http://[2606:4700::1111]/move"
    t = parse_target("http://0x5d.0xb8.0xd8.0x22:8080")
    assert t.host == "93.184.216.34" and t.literal == ipaddress.IPv4Address("93.184.216.34")
    assert parse_target("http://bücher.example/").host == "xn--bcher-kva.example"
    assert parse_target("http://bot.example:/").port == 80


@pytest.mark.parametrize("url", [
    "http://93.184.216.34/",
    "https://1.1.1.1/",
    "http://1572395042/",  # 93.184.216.34 as one number: odd, but a public address
    "http://[2606:4700::1111]/",
    "http://[::ffff:8.8.8.8]/",
    "http://[2002:808:808::]/",  # 6to4 of 8.8.8.8
    "http://[64:ff9b::8.8.8.8]/",
    "https://bot.example.com/",
    "https://bot_1.example.com:8443/api",
])
def test_public_urls_pass_registration(url: str) -> None:
    # Only checked, never connected to.
    check_url(url, PUBLIC)


# --------------------------------------------------------------------------- policy


@pytest.mark.parametrize(("address", "public", "local", "link"), [
    ("127.0.0.1", False, True, True),
    ("::1", False, True, True),
    ("10.0.0.1", False, True, True),
    ("100.64.0.1", False, True, True),
    ("fd12::1", False, True, True),
    ("::ffff:192.168.0.1", False, True, True),
    ("169.254.169.254", False, False, True),
    ("169.254.1.1", False, False, True),
    ("fe80::1", False, False, True),
    ("fd00:ec2::254", False, False, True),
    ("100.100.100.200", False, False, True),
    ("::ffff:169.254.169.254", False, False, True),
    ("0.0.0.0", False, False, False),
    ("::", False, False, False),
    ("255.255.255.255", False, False, False),
    ("224.0.0.251", False, False, False),
    ("ff02::fb", False, False, False),
    ("192.0.2.1", False, False, False),
    ("2001:db8::1", False, False, False),
    ("198.18.0.1", False, False, False),
    ("fec0::1", False, False, False),
    ("240.0.0.1", False, False, False),
    ("::127.0.0.1", False, False, False),
    ("8.8.8.8", True, True, True),
    ("2606:4700::1111", True, True, True),
])
def test_policy_matrix(address: str, public: bool, local: bool, link: bool) -> None:
    cat = classify_address(address)
    assert (PUBLIC.allows(cat), LOCAL.allows(cat), LINK.allows(cat)) == (public, local, link)


def test_categories() -> None:
    assert classify_address("127.0.0.1") is C.LOOPBACK
    assert classify_address("10.1.2.3") is C.PRIVATE
    assert classify_address("169.254.169.254") is C.METADATA
    assert classify_address("fd00:ec2::254") is C.METADATA
    assert classify_address("fe80::1%eth0") is C.LINK_LOCAL
    assert classify_address("0.0.0.0") is C.UNSPECIFIED
    assert classify_address("255.255.255.255") is C.BROADCAST
    assert classify_address("239.1.1.1") is C.MULTICAST
    assert classify_address("203.0.113.1") is C.DOCUMENTATION
    assert classify_address("198.18.5.5") is C.BENCHMARKING
    assert classify_address("fec0::1") is C.SITE_LOCAL
    assert classify_address("::ffff:10.0.0.1") is C.PRIVATE
    assert classify_address("2002:a9fe:a9fe::") is C.METADATA
    assert classify_address("64:ff9b::7f00:1") is C.LOOPBACK
    assert classify_address("1.1.1.1") is C.GLOBAL


def test_allow_private_does_not_allow_metadata(no_network: list[object]) -> None:
    for url in ("http://169.254.169.254/", "http://[fd00:ec2::254]/", "http://metadata.example/",
                "http://[::ffff:169.254.169.254]/", "http://0.0.0.0/"):
        with BotClient(url, policy=LOCAL, resolver=fake_resolver) as client:
            assert client.call("/x", {}, 1.0).fault is Fault.REFUSED_ADDRESS, url


# --------------------------------------------------------------------------- resolution


def test_resolve_checked_literals_skip_the_resolver() -> None:
    def boom(host: str) -> list[str]:
        raise AssertionError("resolver called")

    assert resolve_checked("0x7f.1", LOCAL, timeout=1, resolver=boom) == [
        ipaddress.IPv4Address("127.0.0.1")]
    assert resolve_checked("[::1]", LOCAL, timeout=1, resolver=boom) == [
        ipaddress.IPv6Address("::1")]


def test_resolve_checked_names() -> None:
    got = resolve_checked("public.example", PUBLIC, timeout=1, resolver=fake_resolver)
    assert [str(a) for a in got] == FAKE_DNS["public.example"]
    with pytest.raises(AddressRefusedError) as info:
        resolve_checked("mixed.example", PUBLIC, timeout=1, resolver=fake_resolver)
    assert info.value.category is C.PRIVATE
    with pytest.raises(ResolveFailedError):
        resolve_checked("empty.example", PUBLIC, timeout=1, resolver=lambda h: [])
    with pytest.raises(ResolveFailedError):
        resolve_checked("junk.example", PUBLIC, timeout=1, resolver=lambda h: ["not-an-ip"])


def test_resolve_checked_is_bounded_by_the_deadline() -> None:
    release = threading.Event()

    def hung_resolver(host: str) -> list[str]:
        release.wait(10)
        return ["8.8.8.8"]

    try:
        t0 = time.monotonic()
        with pytest.raises(ResolveTimeoutError):
            resolve_checked("slow.example", PUBLIC, timeout=0.2, resolver=hung_resolver)
        assert time.monotonic() - t0 < 1.5
    finally:
        release.set()


# --------------------------------------------------------------------------- one name's lookups


class HangingNameServer:
    """A resolver whose ``hanging`` names block (on the real lookup thread) until released, and
    which counts how often each name was asked.  Other names answer ``answer`` at once."""

    def __init__(self, *hanging: str, answer: str = "8.8.8.8",
                 then: str | None = None) -> None:
        self.hanging = set(hanging)
        self.answer = answer
        self.then = then  # the hanging names' answer once released; None: they fail
        self.asked: dict[str, int] = {}
        self.released = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, host: str) -> list[str]:
        with self._lock:
            self.asked[host] = self.asked.get(host, 0) + 1
        if host not in self.hanging:
            return [self.answer]
        self.released.wait(60)
        if self.then is None:
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return [self.then]


@pytest.fixture
def unique() -> str:
    """A name suffix of the test's own: lookups are remembered per process."""
    return f"{uuid.uuid4().hex[:10]}.example"


def stuck(name: str, dns: HangingNameServer) -> None:
    """Start a lookup of ``name`` that hangs past its caller's short deadline."""
    with pytest.raises(ResolveTimeoutError):
        resolve_checked(name, PUBLIC, timeout=0.05, resolver=dns)


def test_a_stuck_name_is_not_asked_again_and_its_calls_fail_at_once(unique: str) -> None:
    dns = HangingNameServer(f"hang.{unique}")
    try:
        stuck(f"hang.{unique}", dns)
        for _ in range(50):  # however many calls its bot gets, and however long their deadlines
            with pytest.raises(ResolveTimeoutError, match="still unanswered"):
                resolve_checked(f"hang.{unique}", PUBLIC, timeout=30, resolver=dns)
        assert dns.asked == {f"hang.{unique}": 1}
    finally:
        dns.released.set()


def test_other_names_resolve_however_many_names_hang(unique: str) -> None:
    # The lookups used to share 32 process-wide slots, and a hung lookup kept its slot long
    # after its call timed out: 32 hanging names made every other name's lookup time out.
    names = [f"hang{i}.{unique}" for i in range(100)]
    dns = HangingNameServer(*names)
    try:
        for name in names:
            with pytest.raises(ResolveTimeoutError):
                resolve_checked(name, PUBLIC, timeout=0.01, resolver=dns)
        got = resolve_checked(f"fine.{unique}", PUBLIC, timeout=30, resolver=dns)
        assert got == [ipaddress.IPv4Address("8.8.8.8")]
        assert all(dns.asked[name] == 1 for name in names)
    finally:
        dns.released.set()


def wait_until_settled(name: str, dns: HangingNameServer) -> BaseException | None:
    """Call until the stuck lookup of ``name`` has ended (the answer is no longer "still
    unanswered"); return what the last call raised."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            resolve_checked(name, PUBLIC, timeout=5, resolver=dns)
        except (ResolveTimeoutError, ResolveFailedError) as exc:
            if "still unanswered" not in str(exc):
                return exc
        else:
            return None
        time.sleep(0.01)
    raise AssertionError(f"the lookup of {name} never ended")


def test_a_stuck_name_that_failed_is_refused_for_a_while(
        unique: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netguard, "STUCK_RETRY_S", 600.0)
    dns = HangingNameServer(f"hang.{unique}")
    stuck(f"hang.{unique}", dns)
    dns.released.set()  # now its lookup fails, as getaddrinfo does when it gives up
    refused = wait_until_settled(f"hang.{unique}", dns)
    assert refused is not None and "not asked again" in str(refused)
    assert dns.asked == {f"hang.{unique}": 1}


def test_a_refused_name_is_asked_again_after_the_pause(
        unique: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netguard, "STUCK_RETRY_S", 0.0)
    dns = HangingNameServer(f"hang.{unique}")
    stuck(f"hang.{unique}", dns)
    dns.released.set()
    settled = wait_until_settled(f"hang.{unique}", dns)
    assert isinstance(settled, ResolveFailedError)  # a new lookup, which failed at once
    assert dns.asked[f"hang.{unique}"] == 2


def test_a_stuck_name_that_answers_late_resolves_on_the_next_call(unique: str) -> None:
    dns = HangingNameServer(f"slow.{unique}", then="1.1.1.1")
    stuck(f"slow.{unique}", dns)
    dns.released.set()
    assert wait_until_settled(f"slow.{unique}", dns) is None
    assert resolve_checked(f"slow.{unique}", PUBLIC, timeout=30, resolver=dns) == [
        ipaddress.IPv4Address("1.1.1.1")]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_looks_up_a_name_stuck_in_its_parent_afresh(unique: str) -> None:
    # The parent's lookup thread does not exist in the child: the name must not stay taken.
    dns = HangingNameServer(f"hang.{unique}")
    try:
        stuck(f"hang.{unique}", dns)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: report and leave without running pytest's teardown
            code = 1
            try:
                try:
                    resolve_checked(f"hang.{unique}", PUBLIC, timeout=0.05, resolver=dns)
                    said = "resolved"
                except ResolveTimeoutError as exc:
                    said = str(exc)
                os.write(write_end, said.encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            said = pipe.read().decode()
        _, status = os.waitpid(pid, 0)
    finally:
        dns.released.set()
    assert os.waitstatus_to_exitcode(status) == 0
    assert "exceeded the deadline" in said, said


# --------------------------------------------------------------------------- properties

TEN_SLASH_8 = st.integers(min_value=0x0A000000, max_value=0x0AFFFFFF)


def _spell_part(value: int, radix: str) -> str:
    if radix == "hex":
        return hex(value)
    if radix == "oct":
        return "0" + format(value, "o")
    return str(value)


@given(TEN_SLASH_8, st.integers(min_value=1, max_value=4),
       st.lists(st.sampled_from(["dec", "hex", "oct"]), min_size=4, max_size=4),
       st.booleans())
def test_any_spelling_of_ten_slash_eight_is_refused(value: int, nparts: int, radices: list[str],
                                                    trailing_dot: bool) -> None:
    octets = list(value.to_bytes(4, "big"))
    head = octets[: nparts - 1]
    last = int.from_bytes(bytes(octets[nparts - 1:]), "big")
    parts = [_spell_part(p, radices[i]) for i, p in enumerate(head)]
    parts.append(_spell_part(last, radices[3]))
    host = ".".join(parts) + ("." if trailing_dot else "")
    assert parse_ipv4_any(host.rstrip(".")) == ipaddress.IPv4Address(value)
    with pytest.raises(AddressRefusedError):
        check_url(f"http://{host}/", PUBLIC)
    check_url(f"http://{host}/", LOCAL)  # the operator switch admits it


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_embedded_ipv4_is_never_more_permissive(value: int) -> None:
    v4 = ipaddress.IPv4Address(value)
    inner = classify_address(v4)
    for v6 in (f"::ffff:{v4}", f"64:ff9b::{v4}", f"2002:{value >> 16:x}:{value & 0xFFFF:x}::1"):
        outer = classify_address(v6)
        for policy in (PUBLIC, LOCAL, LINK):
            if not policy.allows(inner):
                assert not policy.allows(outer), (v4, v6, inner, outer)


@given(st.ip_addresses(v=4))
def test_ipv4_classifier_agrees_with_stdlib_on_globality(ip: ipaddress.IPv4Address) -> None:
    # Anything we call global the standard library calls global too.
    if classify_address(ip) is C.GLOBAL:
        assert ip.is_global and not ip.is_multicast


@given(st.ip_addresses(v=6))
def test_ipv6_global_implies_2000_slash_3_or_translated(ip: ipaddress.IPv6Address) -> None:
    if classify_address(ip) is C.GLOBAL:
        assert (ip in ipaddress.IPv6Network("2000::/3")
                or ip.ipv4_mapped is not None
                or ip in ipaddress.IPv6Network("64:ff9b::/96"))
