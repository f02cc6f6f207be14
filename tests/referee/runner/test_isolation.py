"""No bot can cost another bot a turn: hostile bots in the same process as a well-behaved one.

A worker plays many matches at once, on threads of one process (the arena's pool worker), so
whatever the referee keeps per process is shared by every bot it calls.  Here matches run the
same way, on threads, through :func:`referee.runner.match.run_match` and real
:class:`~referee.wire.players.HttpPlayer` clients: bots whose names hang in DNS (their name
server never answers: the resolver every client of the test is given blocks, on real threads,
until the test ends), bots at an address that is slow to refuse (a loopback listener whose
accept queue is full, so the kernel drops the SYN and ``connect`` waits), and one well-behaved
bot on a loopback server (:func:`sample_bots.sdk.serve_in_thread`) whose name resolves at
once.  The well-behaved bot must get no strike and no failed call; each hostile bot is charged
its own faults.
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from referee import find_ruleset
from referee.runner.match import Limits, MatchRecord, TurnRecord, run_match
from referee.wire.httpbot import BotClient
from referee.wire.netguard import NetPolicy
from referee.wire.players import HttpPlayer, LocalPlayer, Player
from sample_bots.sdk import BotServer, serve_in_thread

LOCAL = NetPolicy(allow_private=True)
STANDARD = find_ruleset("standard")

N_HANGING = 40
"""More names hanging at once than the 32 process-wide lookup slots the resolver used to have."""
N_SLOW = 8

HOSTILE = Limits(deadline_ms=50, time_bank_ms=0, max_strikes=None, call_deadline_ms=50)
"""Short deadlines: the hostile bots miss every one, whatever the machine's load."""
GENEROUS = Limits(deadline_ms=5000, time_bank_ms=10_000, max_strikes=2, call_deadline_ms=5000)
"""The well-behaved bot's table: no healthy bot misses 5 s.  (Two strikes end its calls, so a
referee that starves it fails the test in seconds rather than after a whole match of them.)"""


def first_legal(request: dict[str, Any]) -> dict[str, Any]:
    return {"move": request["legal_moves"][0]["id"]}


class Dns:
    """The name server of the test, behind the clients' resolver seam (``BotClient(resolver=)``).

    Names in ``answers`` resolve at once; names in ``hanging`` never answer: the lookup blocks,
    on the real thread the referee started for it, until :meth:`release` (then it fails as
    ``getaddrinfo`` does when its name servers time out).
    """

    def __init__(self) -> None:
        self.answers: dict[str, list[str]] = {}
        self.hanging: set[str] = set()
        self.asked: Counter[str] = Counter()
        self._released = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, host: str) -> list[str]:
        with self._lock:
            self.asked[host] += 1
        if host in self.hanging:
            self._released.wait(300)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return self.answers[host]

    def release(self) -> None:
        self._released.set()


@pytest.fixture
def dns() -> Iterator[Dns]:
    server = Dns()
    yield server
    server.release()


@pytest.fixture
def good_bot() -> Iterator[BotServer]:
    server = serve_in_thread(first_legal, host="127.0.0.1", port=0, name="well-behaved")
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def slow_to_refuse() -> Iterator[int]:
    """A loopback port whose accept queue is full: the kernel drops further SYNs, so a
    connection attempt neither succeeds nor is refused until the caller gives up."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers: list[socket.socket] = []
    while True:  # fill the queue: one attempt more than it holds
        probe = socket.socket()
        probe.settimeout(0.5)
        fillers.append(probe)
        try:
            probe.connect(("127.0.0.1", port))
        except TimeoutError:
            break
    yield port
    for sock in [*fillers, listener]:
        sock.close()


def http_player(url: str, dns: Dns, label: str) -> HttpPlayer:
    return HttpPlayer(url, label=label, client=BotClient(url, policy=LOCAL, resolver=dns))


def play_on_thread(seats: list[Player], limits: Limits, seed: int,
                   records: dict[int, MatchRecord], errors: list[BaseException],
                   playing: threading.Semaphore | None = None) -> threading.Thread:
    """Run a one-deal match on a thread; ``playing`` is released at its first turn."""
    first_turn = threading.Event()

    def on_turn(turn: TurnRecord) -> None:
        if playing is not None and not first_turn.is_set():
            first_turn.set()
            playing.release()

    def run() -> None:
        try:
            records[seed] = run_match(STANDARD, seats, seed, 1, limits, on_turn=on_turn)
        except BaseException as exc:  # reported by the test, not lost on a thread
            errors.append(exc)

    thread = threading.Thread(target=run, name=f"match-{seed}", daemon=True)
    thread.start()
    return thread


def test_hanging_names_and_slow_addresses_cost_a_well_behaved_bot_nothing(
        dns: Dns, good_bot: BotServer, slow_to_refuse: int) -> None:
    tag = uuid.uuid4().hex[:8]  # names of their own: lookups are remembered per process
    port = good_bot.server_address[1]
    good_name = f"good-{tag}.test"
    dns.answers[good_name] = ["127.0.0.1"]
    hanging = [f"hang-{i}-{tag}.test" for i in range(N_HANGING)]
    dns.hanging.update(hanging)
    slow = [f"slow-{i}-{tag}.test" for i in range(N_SLOW)]
    for name in slow:
        dns.answers[name] = ["127.0.0.1"]

    records: dict[int, MatchRecord] = {}
    errors: list[BaseException] = []
    players: list[Player] = []
    threads: list[threading.Thread] = []
    try:
        hostile_urls = ([f"http://{name}:{port}/" for name in hanging]
                        + [f"http://{name}:{slow_to_refuse}/" for name in slow])
        tables = len(hostile_urls) // 4
        playing = threading.Semaphore(0)
        for table in range(tables):
            seats: list[Player] = [http_player(url, dns, f"hostile:{table}:{i}")
                                   for i, url in enumerate(hostile_urls[4 * table:][:4])]
            players.extend(seats)
            threads.append(
                play_on_thread(seats, HOSTILE, 100 + table, records, errors, playing))
        # Every hostile bot has been called (GET /, /start) before the good bot plays: each
        # hanging name has had its lookup started and stuck in this process.
        for _ in range(tables):
            assert playing.acquire(timeout=120), "the hostile matches never started"

        good = http_player(f"http://{good_name}:{port}/", dns, "good")
        players.append(good)
        innocent: list[Player] = [good, LocalPlayer(first_legal), LocalPlayer(first_legal),
                                  LocalPlayer(first_legal)]
        threads.append(play_on_thread(innocent, GENEROUS, 1, records, errors))
        for thread in threads:
            thread.join(300)
        assert not errors, errors
        assert not any(thread.is_alive() for thread in threads)
    finally:
        dns.release()
        for player in players:
            player.close()

    good_record = records[1]
    assert [(s.seat, s.reason, s.detail) for s in good_record.strikes if s.seat == 0] == []
    assert [n for n in good_record.notes if n.seat == 0] == []
    assert good_record.forfeits == []
    # Each hanging name was asked once, however many calls its bot got: the calls after the
    # first failed at once, charged to that bot, without asking its name server again.
    assert all(dns.asked[name] == 1 for name in hanging), dns.asked
    for table in range(len(hostile_urls) // 4):
        record = records[100 + table]
        assert {s.reason for s in record.strikes} == {"timeout"}
        assert {s.seat for s in record.strikes} == {0, 1, 2, 3}
