"""The live outbox: every match's events of a process sent by one thread, in batches.

On the real Redis.  What a match relies on: its events arrive complete and in order, before
its job returns (:meth:`Outbox.flush`); a Redis that fails, or refuses one stream's command,
stops only the broadcasts it concerns and never a match; memory stays bounded when Redis
cannot keep up; a forked work horse sends its own events.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any

import pytest
from redis import Redis

from arena.live import outbox as outbox_module
from arena.live.outbox import Event, Outbox, outbox_for

from .conftest import wait_for


def keyed(n: int) -> list[str]:
    run = uuid.uuid4().hex[:8]
    return [f"test-outbox:{run}:{i}" for i in range(n)]


def event(key: str, body: str) -> Event:
    return Event(key, "turn", body.encode(), max_len=10_000, ttl_s=600)


def test_many_publishing_threads_get_their_events_complete_and_in_order(redis: Redis) -> None:
    box = Outbox(redis, interval_s=0.01)
    keys = keyed(16)

    def publish(key: str) -> None:
        for i in range(200):
            assert box.put(event(key, str(i)))

    threads = [threading.Thread(target=publish, args=(k,)) for k in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box.flush()
    for key in keys:
        assert [f[b"d"] for _, f in redis.xrange(key)] == [str(i).encode() for i in range(200)]
        assert 0 < redis.ttl(key) <= 600  # each stream's expiry set with its events
    assert box.broken == set()
    redis.delete(*keys)


def test_events_are_sent_without_a_flush_within_the_interval(redis: Redis) -> None:
    box = Outbox(redis, interval_s=0.02)
    (key,) = keyed(1)
    box.put(event(key, "alone"))
    wait_for(lambda: redis.xlen(key) == 1, 30, every_s=0.01, what="the sender's timer")
    redis.delete(key)


def test_a_redis_that_fails_stops_those_broadcasts_and_nothing_else() -> None:
    dead = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
    box = Outbox(dead, interval_s=0.01)
    a, b = keyed(2)
    assert box.put(event(a, "1")) and box.put(event(b, "1"))
    assert box.flush()  # dropped, not waited for forever
    assert box.broken == {a, b}
    assert not box.put(event(a, "2"))  # that stream has stopped for good
    box.forget(a)
    assert box.broken == {b}


def test_a_refused_command_stops_only_its_own_stream(redis: Redis) -> None:
    box = Outbox(redis, interval_s=3600)  # nothing is sent before the flush: one batch
    wrong, right = keyed(2)
    redis.set(wrong, "not a stream")
    assert box.put(event(wrong, "1")) and box.put(event(right, "1"))
    assert box.flush()
    assert box.broken == {wrong}
    assert box.put(event(right, "2")) and box.flush()
    assert [f[b"d"] for _, f in redis.xrange(right)] == [b"1", b"2"]
    redis.delete(wrong, right)


def test_a_sender_that_cannot_keep_up_stops_streams_instead_of_growing(
        redis: Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outbox_module, "MAX_PENDING", 5)
    box = Outbox(redis, interval_s=3600)
    (only,) = keyed(1)
    assert all(box.put(event(only, str(i))) for i in range(5))
    assert not box.put(event(only, "5"))  # the stream that fills the outbox is the one stopped
    assert box.broken == {only}
    assert not box.put(event(only, "6"))  # for good
    assert box.flush() and redis.xlen(only) == 0
    assert len(box._pending) == 0


def test_the_stream_that_floods_is_stopped_not_the_one_whose_event_comes_next(
        redis: Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    # A table of forfeited seats plays its turns at the engine's speed: its events must not
    # stop the broadcast of a slower match that publishes while the outbox is full.
    monkeypatch.setattr(outbox_module, "MAX_PENDING", 10)
    box = Outbox(redis, interval_s=3600)  # nothing is sent before the flush
    slow, fast = keyed(2)
    assert box.put(event(slow, "0")) and box.put(event(slow, "1"))
    assert all(box.put(event(fast, str(i))) for i in range(8))  # the outbox is full now
    assert box.put(event(slow, "2"))
    assert box.broken == {fast}
    assert not box.put(event(fast, "8"))
    assert box.put(event(slow, "3")) and box.flush()
    assert [f[b"d"] for _, f in redis.xrange(slow)] == [b"0", b"1", b"2", b"3"]
    assert redis.xlen(fast) == 0
    redis.delete(slow)


def test_a_forked_process_sends_its_own_events(redis: Redis) -> None:
    parent = outbox_for(redis, 0.01)
    mine, childs = keyed(2)
    assert parent.put(event(mine, "parent")) and parent.flush()  # its sender is running
    pid = os.fork()
    if pid == 0:  # the work horse: the parent's sender thread does not exist here
        ok = False
        try:
            box = outbox_for(redis, 0.01)
            ok = box is not parent and box.put(event(childs, "child")) and box.flush()
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [f[b"d"] for _, f in redis.xrange(childs)] == [b"child"]
    assert outbox_for(redis, 0.01) is parent
    redis.delete(mine, childs)



class FirstBatchBreaks(Redis):
    """The real Redis, except that building the first batch fails with what no Redis error
    is (a bug, say): the sender must go on with the next."""

    broke = False

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        if not self.broke:
            self.broke = True
            raise RuntimeError("a batch that cannot be built")
        return super().pipeline(*args, **kwargs)


def test_the_sender_outlives_a_batch_it_cannot_send(redis_url: str) -> None:
    redis = FirstBatchBreaks.from_url(redis_url)
    box = Outbox(redis, interval_s=3600)
    bad, good = keyed(2)
    assert box.put(event(bad, "1")) and box.flush()  # handled, not waited for in vain
    assert box.broken == {bad}
    assert box.put(event(good, "1")) and box.flush()
    assert redis.xlen(good) == 1 and redis.xlen(bad) == 0
    redis.delete(good)
