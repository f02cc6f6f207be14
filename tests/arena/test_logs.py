"""Structured logs (arena/core/logs.py): JSON lines with the request id on every line of a
web request, and the match id (and job id) on every line of a match job and a live stream,
in real worker and relay processes."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from redis import Redis
from sqlalchemy import select

from arena import create_app
from arena.core import logs
from arena.core.models import Bot, Match
from arena.core.storage import get_db, upgrade
from arena.live.channel import match_key, prefix_of
from arena.play.matches import create_match, enqueue_match
from referee.runner.match import Limits

from ..ports import closed_port_url, free_port
from .conftest import wait_for, worker_env
from .sse import Stream


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """Every record of this process as JSON lines, while the test runs."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logs.JsonFormatter())
    handler.addFilter(logs.ContextFilter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield out
    root.removeHandler(handler)
    root.setLevel(level)


def lines_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_json_line_has_the_documented_fields(captured: io.StringIO) -> None:
    log = logging.getLogger("arena.test")
    with logs.bind(request_id="req-12345678", match_id=7, job_id="match-7-1"):
        log.info("hello %s", "there", extra={"outcome": "finished"})
    try:
        raise ValueError("bad")
    except ValueError:
        log.exception("it failed")
    first, second = lines_of(captured.getvalue())
    assert first["msg"] == "hello there" and first["level"] == "INFO"
    assert first["logger"] == "arena.test" and first["outcome"] == "finished"
    assert (first["request_id"], first["match_id"], first["job_id"]) == (
        "req-12345678", 7, "match-7-1")
    assert first["ts"].endswith("Z") and first["pid"] == os.getpid()
    assert "request_id" not in second and "ValueError: bad" in second["exc"]


def test_an_unknown_log_format_refuses_to_start(settings: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="LOG_FORMAT"):
        create_app({**settings, "LOG_FORMAT": "xml"})


def test_every_line_of_a_request_carries_its_request_id(
        settings: dict[str, Any], captured: io.StringIO) -> None:
    # Redis is unreachable: /readyz logs why from inside the view (with a traceback).
    app = create_app({**settings, "LOG_FORMAT": "json",
                      "REDIS_URL": closed_port_url().replace("http", "redis")})
    upgrade(get_db(app))
    client = app.test_client()
    answers = []

    def probe() -> None:
        answers.append(client.get("/readyz"))

    threads = [threading.Thread(target=probe) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = {r.headers["X-Request-ID"] for r in answers}
    assert len(ids) == 3 and all(r.status_code == 503 for r in answers)
    lines = [x for x in lines_of(captured.getvalue()) if x["logger"].startswith("arena")]
    summaries = [x for x in lines if x["logger"] == "arena.web.observe"]
    assert {x["request_id"] for x in summaries} == ids
    assert all(x["route"] == "/readyz" and x["status"] == 503 for x in summaries)
    inside = [x for x in lines if x["logger"] == "arena.routes.site"]
    assert inside, "the view logged nothing"
    assert all(x.get("request_id") in ids for x in lines), lines
    get_db(app).dispose()


@pytest.mark.parametrize(("hops", "sent", "kept"), [
    (1, "0123456789abcdef0123456789abcdef", True),   # nginx's $request_id
    (0, "0123456789abcdef0123456789abcdef", False),  # no trusted proxy: ours
    (1, "evil id <script>", False),                    # not a plain token: ours
    (1, "x" * 65, False),
])
def test_the_proxy_request_id_is_kept_only_when_trusted_and_plain(
        settings: dict[str, Any], hops: int, sent: str, kept: bool) -> None:
    app = create_app({**settings, "TRUSTED_PROXY_HOPS": hops})
    r = app.test_client().get("/healthz", headers={"X-Request-ID": sent})
    assert (r.headers["X-Request-ID"] == sent) is kept
    assert len(r.headers["X-Request-ID"]) in ((32,) if not kept else (len(sent),))


# --- real processes ----------------------------------------------------------------------------


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    """Every line a process wrote: each must be one JSON object."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            out.append(json.loads(line))  # fails the test on any line that is not JSON
    return out


@pytest.mark.drill
def test_every_line_of_a_match_job_carries_the_match_id(
        app: Flask, four_bots: list[int], tmp_path: Path) -> None:
    from arena.core.processes import PARENT_PID_ENV
    from arena.ops.procs import Child, stop_all

    with get_db(app).begin() as s:
        bots = list(s.scalars(select(Bot).where(Bot.id.in_(four_bots)).order_by(Bot.id)))
        ids = [create_match(s, bots=bots, ruleset="standard", deals=1, limits=Limits(),
                            kind="admin", seed=n).id for n in (1, 2)]
    err = tmp_path / "worker.log"
    env = {**worker_env(app), "LOG_FORMAT": "json", PARENT_PID_ENV: str(os.getpid())}
    with err.open("wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "arena", "worker", "--no-clock"],
                                env=env, stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                                start_new_session=True)
    worker = Child("worker", proc)
    try:
        for match_id in ids:
            enqueue_match(app, match_id)

        def finished() -> bool:
            with get_db(app).begin() as s:
                return set(s.scalars(select(Match.state).where(Match.id.in_(ids)))) == {
                    "finished"}

        wait_for(finished, 180, what="the worker to play both matches")
    finally:
        stop_all([worker])
    lines = read_json_lines(err)
    assert all(x["process"] == "worker" for x in lines)
    for match_id in ids:
        mine = [x for x in lines if x["msg"].startswith(f"match {match_id}:")
                or f"match-{match_id}-" in x["msg"]]
        assert any(x["msg"] == f"match {match_id}: finished" for x in mine), mine
        for x in mine:
            assert x.get("job_id", "").startswith(f"match-{match_id}-"), x
            if x["msg"].startswith(f"match {match_id}:"):
                assert x["match_id"] == match_id, x
        # ...and no line of this match's job names the other match.
        in_job = [x for x in lines if x.get("match_id") == match_id]
        assert in_job and all(x["job_id"].startswith(f"match-{match_id}-") for x in in_job)


def test_the_relay_lines_of_a_stream_carry_its_request_and_match_ids(
        app: Flask, redis: Redis, tmp_path: Path) -> None:
    from arena.core.processes import PARENT_PID_ENV
    from arena.ops.procs import Child, stop_all

    err = tmp_path / "live.log"
    port = free_port()
    env = {**worker_env(app), "LOG_FORMAT": "json", "TRUSTED_PROXY_HOPS": "1",
           PARENT_PID_ENV: str(os.getpid())}
    key = match_key(prefix_of(app.config), 41)
    redis.xadd(key, {"t": "start", "d": '{"n":0}'})
    redis.xadd(key, {"t": "end", "d": '{"state":"finished"}'})
    with err.open("wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "arena", "live", "--host", "127.0.0.1",
                                 "--port", str(port)], env=env, stdin=subprocess.DEVNULL,
                                stdout=f, stderr=f, start_new_session=True)
    relay = Child("live", proc)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _up(f"{base}/live/healthz"), 60, what="the relay")
        rid = "feedfacefeedfacefeedfacefeedface"
        stream = Stream(f"{base}/live/matches/41/events", headers={"X-Request-ID": rid})
        assert stream.status == 200
        assert [e.event for e in stream.events()] == ["start", "end"]
        stream.close()
        refused = Stream(f"{base}/live/matches/42/events", headers={"X-Request-ID": rid[::-1]})
        assert refused.status == 404
        refused.close()
        wait_for(lambda: "closed" in err.read_text(), 30, what="the stream's closing line")
    finally:
        stop_all([relay])
    lines = [x for x in read_json_lines(err) if "live stream" in x["msg"]]
    assert [x["msg"].split(" after")[0] for x in lines] == [
        "live stream of match 41 opened", "live stream of match 41 closed",
        "live stream of match 42 refused: not_live"]
    assert [(x["request_id"], x["match_id"]) for x in lines] == [
        (rid, 41), (rid, 41), (rid[::-1], 42)]
    assert all(x["process"] == "live" for x in read_json_lines(err))


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        time.sleep(0.1)
        return False
