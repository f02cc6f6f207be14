"""Prometheus metrics (arena/core/metrics.py): ``/metrics`` behind its token, what each part
records, the labels (never a path or a bot), and multiprocess folding.

The registry is the process's own, shared by every app of a test run: each test reads a
value before and after what it does and compares the difference.  A real Prometheus
scraping real processes: tests/deploy/test_prometheus.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from arena.core import bookkeeping, metrics
from arena.core.models import Bot, Match
from arena.core.storage import get_db
from arena.jobs import bodies as jobs
from arena.play.matches import create_match, enqueue_match
from referee.runner.match import Limits
from sample_bots import greedy_bot
from sample_bots.sdk import serve_in_thread

from ..ports import free_port
from .conftest import ADMIN, register, wait_for, worker_env

METRICS_TOKEN = "metrics-token-0123456789abcdefghijklmnop"


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of an exposition (0 when it is not there)."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return 0.0


def scrape(client: FlaskClient, token: str = METRICS_TOKEN) -> str:
    r = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.headers["Content-Type"].startswith("text/plain")
    return r.get_data(as_text=True)


@pytest.fixture
def settings(settings: dict[str, Any]) -> dict[str, Any]:
    return {**settings, "METRICS_TOKEN": METRICS_TOKEN}


# --- the endpoint ------------------------------------------------------------------------------


def test_metrics_answer_only_their_token_or_the_admin_token(client: FlaskClient) -> None:
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 404
    assert "arena_http_request_duration_seconds" in scrape(client)
    assert "arena_http_request_duration_seconds" in scrape(client, ADMIN)


def test_without_any_token_set_there_is_no_metrics_endpoint(
        settings: dict[str, Any]) -> None:
    from arena import create_app

    app = create_app({**settings, "METRICS_TOKEN": "", "ADMIN_TOKEN": ""})
    assert app.test_client().get("/metrics", headers={
        "Authorization": "Bearer "}).status_code == 404


def test_a_weak_metrics_token_refuses_to_start(settings: dict[str, Any]) -> None:
    from arena import create_app
    from arena.core.security import InsecureConfigError

    with pytest.raises(InsecureConfigError, match="METRICS_TOKEN"):
        create_app({**settings, "METRICS_TOKEN": "short"})


def test_latency_is_labelled_by_url_rule_and_status_class_never_by_path(
        client: FlaskClient) -> None:
    rule = "/api/bots/<id:bot_id>"
    before = sample(scrape(client), "arena_http_request_duration_seconds_count",
                    route=rule, method="GET", status="4xx")
    for n in (424242, 434343):
        assert client.get(f"/api/bots/{n}").status_code == 404
    assert client.get("/no/such/page/77777").status_code == 404
    assert client.get("/healthz").status_code == 200
    text = scrape(client)
    assert sample(text, "arena_http_request_duration_seconds_count", route=rule, method="GET",
                  status="4xx") == before + 2
    assert sample(text, "arena_http_request_duration_seconds_count", route="(unmatched)",
                  method="GET", status="4xx") >= 1
    assert sample(text, "arena_http_request_duration_seconds_count", route="/healthz",
                  method="GET", status="2xx") >= 1
    for raw in ("424242", "434343", "77777", "/no/such"):
        assert raw not in text  # no path, id or anything a visitor typed becomes a label


def test_the_scrape_reads_the_queue_and_the_unfinished_matches(
        app: Flask, client: FlaskClient, four_bots: list[int]) -> None:
    with get_db(app).begin() as s:
        bots = list(s.scalars(select(Bot).where(Bot.id.in_(four_bots)).order_by(Bot.id)))
        match = create_match(s, bots=bots, ruleset="standard", deals=1, limits=Limits(),
                             kind="admin", seed=3)
        match_id = match.id
    enqueue_match(app, match_id)
    time.sleep(1.1)  # an age of at least a second (the ages are whole-second precise)
    text = scrape(client)
    assert sample(text, "arena_queue_jobs", state="queued") == 1
    assert sample(text, "arena_queue_oldest_job_age_seconds") >= 1
    assert sample(text, "arena_matches", state="queued") == 1
    assert sample(text, "arena_matches", state="running") == 0
    assert sample(text, "arena_matches_oldest_queued_age_seconds") >= 1
    assert sample(text, "arena_metrics_source_up", source="redis") == 1
    assert sample(text, "arena_metrics_source_up", source="database") == 1


def test_a_scrape_without_redis_still_answers_and_says_so(
        settings: dict[str, Any]) -> None:
    from arena import create_app
    from arena.core.storage import upgrade

    from ..ports import closed_port_url

    app = create_app({**settings, "REDIS_URL": closed_port_url().replace("http", "redis")})
    upgrade(get_db(app))
    text = scrape(app.test_client())
    assert sample(text, "arena_metrics_source_up", source="redis") == 0
    assert sample(text, "arena_metrics_source_up", source="database") == 1
    get_db(app).dispose()


def test_the_database_pool_in_use_is_counted(app: Flask, client: FlaskClient) -> None:
    db = get_db(app)
    base = sample(scrape(client), "arena_db_pool_connections_in_use")
    with db.engine.connect(), db.engine.connect():
        held = sample(scrape(client), "arena_db_pool_connections_in_use")
    assert held >= base + 2
    assert sample(scrape(client), "arena_db_pool_connections_max") >= 1


def test_read_cache_lookups_are_counted(settings: dict[str, Any]) -> None:
    from arena import create_app
    from arena.core.storage import upgrade

    app = create_app({**settings, "READ_CACHE_S": 30.0, "READ_CACHE_SHARED": False})
    upgrade(get_db(app))
    client = app.test_client()
    before = {r: sample(scrape(client), "arena_read_cache_lookups_total", result=r)
              for r in ("hit", "miss")}
    for _ in range(3):
        assert client.get("/api/families").status_code == 200
    text = scrape(client)
    assert sample(text, "arena_read_cache_lookups_total", result="miss") == before["miss"] + 1
    assert sample(text, "arena_read_cache_lookups_total", result="hit") == before["hit"] + 2
    get_db(app).dispose()


def test_rate_limit_refusals_are_counted_by_class(settings: dict[str, Any]) -> None:
    from arena import create_app
    from arena.core.storage import upgrade

    app = create_app({**settings, "RATE_LIMITS_ENABLED": True,
                      "RATE_LIMIT_PAGES_PER_CLIENT": "2 per minute"})
    upgrade(get_db(app))
    client = app.test_client()
    before = sample(scrape(client), "arena_rate_limit_refusals_total", limit="pages")
    codes = [client.get("/api/ratings").status_code for _ in range(4)]
    assert codes == [200, 200, 429, 429]
    assert sample(scrape(client), "arena_rate_limit_refusals_total",
                  limit="pages") == before + 2
    get_db(app).dispose()


# --- a match's calls ---------------------------------------------------------------------------


@pytest.fixture
def slow_bot() -> Iterator[str]:
    """A bot that answers every move after 400 ms: in time for a health check, late for a
    match with a 100 ms deadline."""

    def choose(request: dict[str, Any]) -> Any:
        time.sleep(0.4)
        return greedy_bot.choose(request)

    server = serve_in_thread(choose, name="slow")
    yield server.url
    server.shutdown()
    server.server_close()


def test_a_match_records_outcomes_overshoot_and_time_bank(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str], slow_bot: str) -> None:
    start = scrape(client)
    ids = [register(client, "slow", slow_bot)[0]]
    ids += [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
    with get_db(app).begin() as s:
        bots = [s.get(Bot, b) for b in ids]
        match = create_match(s, bots=[b for b in bots if b is not None], ruleset="standard",
                             deals=1, kind="admin", seed=5,
                             limits=Limits(deadline_ms=100, time_bank_ms=150, max_strikes=3))
        match_id = match.id
    before = scrape(client)
    with app.app_context():
        assert jobs.play_match(match_id) == "finished"
    after = scrape(client)

    def grew(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    # The slow seat timed out three times (then forfeited); the others answered in time.
    assert grew("arena_bot_calls_total", call="move", outcome="timeout", fault="timeout") == 3
    assert grew("arena_bot_calls_total", call="move", outcome="ok", fault="none") > 3
    assert grew("arena_bot_calls_total", call="describe", outcome="ok", fault="none") == 4
    assert grew("arena_bot_call_deadline_overshoot_seconds_count", call="move") == 3
    overshoot = grew("arena_bot_call_deadline_overshoot_seconds_sum", call="move")
    assert 0 <= overshoot < 3 * 0.4  # late by the referee's lateness, not by the bot's
    assert grew("arena_bot_call_duration_seconds_count", call="move") > 3
    assert grew("arena_bot_time_bank_draw_seconds_count") >= 1
    assert grew("arena_bot_time_bank_draw_seconds_sum") == pytest.approx(0.15, abs=0.002)
    assert grew("arena_bot_time_bank_emptied_total") == 1
    assert grew("arena_bot_forfeits_total") == 1
    assert grew("arena_match_jobs_total", outcome="finished") == 1
    assert grew("arena_match_duration_seconds_count") == 1
    assert sample(after, "arena_matches_running") == sample(before, "arena_matches_running")
    assert sample(before, "arena_health_checks_total", purpose="submit", result="passed") \
        - sample(start, "arena_health_checks_total", purpose="submit", result="passed") == 4
    assert f"bot:{ids[0]}" not in after and slow_bot not in after
    # A second delivery of the job plays nothing, and says so.
    with app.app_context():
        assert jobs.play_match(match_id) == "already finished"
    assert sample(scrape(client), "arena_match_jobs_total", outcome="not_played") >= 1


def test_bookkeeping_waits_and_give_ups_are_counted() -> None:
    gate = bookkeeping.Gate(1, wait_s=0.2)
    wait = metrics.BOOKKEEPING_WAIT
    timeouts = metrics.BOOKKEEPING_WENT_AHEAD

    def value(m: Any, suffix: str) -> float:
        got = m.collect()[0].samples
        return sum(s.value for s in got if s.name.endswith(suffix))

    count0, gave0 = value(wait, "_count"), value(timeouts, "_total")
    with gate.slot():
        t = threading.Thread(target=lambda: gate.slot().__enter__())
        t.start()
        t.join()
    assert value(wait, "_count") == count0 + 1
    assert value(timeouts, "_total") == gave0 + 1


# --- processes ---------------------------------------------------------------------------------

_CHILD = textwrap.dedent("""
    import os, sys
    from arena.core import metrics
    metrics.MATCH_JOBS.labels("finished").inc(int(sys.argv[1]))
    metrics.BOT_CALL_SECONDS.labels("move").observe(0.2)
    metrics.MATCHES_RUNNING.inc()
    print(os.getpid())
""")

_READ = textwrap.dedent("""
    import sys
    from arena.core import metrics
    if len(sys.argv) > 1:
        metrics.mark_process_dead(int(sys.argv[1]))
    sys.stdout.write(metrics.exposition()[0].decode())
""")


@pytest.mark.drill
def test_a_dead_process_is_folded_into_the_archive(tmp_path: Path) -> None:
    """Multiprocess mode: a gunicorn worker or a work horse that died stops counting in
    the live gauges, and its counters and histograms are kept, in one archive file per
    kind, its own files removed (else a folder grows by two files per process ever)."""
    env = {**os.environ, metrics.MULTIPROC_ENV: str(tmp_path)}

    def run(code: str, *args: str) -> str:
        return subprocess.run([sys.executable, "-c", code, *args], env=env, check=True,
                              capture_output=True, text=True).stdout

    first, second = int(run(_CHILD, "2")), int(run(_CHILD, "3"))
    live = run(_READ)
    assert sample(live, "arena_match_jobs_total", outcome="finished") == 5
    assert sample(live, "arena_matches_running") == 2
    folded = run(_READ, str(first))
    assert sample(folded, "arena_match_jobs_total", outcome="finished") == 5
    assert sample(folded, "arena_bot_call_duration_seconds_count", call="move") == 2
    assert sample(folded, "arena_bot_call_duration_seconds_bucket", call="move",
                  le="0.25") == 2
    assert sample(folded, "arena_matches_running") == 1
    run(_READ, str(second))
    names = {p.name for p in tmp_path.glob("*.db")}
    assert {"counter_archive.db", "histogram_archive.db"} <= names
    assert not [n for n in names if str(first) in n or str(second) in n], names
    assert sample(run(_READ), "arena_match_jobs_total", outcome="finished") == 5


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        body: bytes = r.read()
        return body.decode()


@pytest.mark.drill
def test_the_forking_worker_counts_its_horses_calls(
        app: Flask, client: FlaskClient, four_bots: list[int]) -> None:
    """RQ's forking worker plays each match in a horse that exits after it: with a metrics
    port the worker runs in multiprocess mode over a folder of its own, so the horses' calls
    reach its port, and each horse's files are folded away after it."""
    from arena.ops.procs import start_arena, stop_all

    port = free_port()
    env = {**worker_env(app), "WORKER_CONCURRENCY": "0", "WORKER_METRICS_PORT": str(port)}
    env.pop(metrics.MULTIPROC_ENV, None)
    worker = start_arena(["worker", "--no-clock"], env=env, name="forking worker")
    try:
        with get_db(app).begin() as s:
            bots = list(s.scalars(select(Bot).where(Bot.id.in_(four_bots)).order_by(Bot.id)))
            ids = [create_match(s, bots=bots, ruleset="standard", deals=1, limits=Limits(),
                                kind="admin", seed=n).id for n in (1, 2)]
        for match_id in ids:
            enqueue_match(app, match_id)

        def both_finished() -> bool:
            with get_db(app).begin() as s:
                states = set(s.scalars(select(Match.state).where(Match.id.in_(ids))))
            return states == {"finished"}

        wait_for(both_finished, 180, what="two matches played by the forking worker")
        text = wait_for(lambda: (t := _get(f"http://127.0.0.1:{port}/metrics")) and sample(
            t, "arena_match_jobs_total", outcome="finished") == 2 and t, 30,
            what="the worker's port to show both horses' matches")
        assert sample(text, "arena_bot_calls_total", call="move", outcome="ok",
                      fault="none") > 0
        folder = Path(wait_for(lambda: _private_folder(worker.pid), 10,
                               what="the worker's private metrics folder"))

        def horses_files() -> list[str]:
            return [p.name for p in folder.glob("*.db")
                    if not p.name.startswith(("counter_archive", "histogram_archive"))
                    and str(worker.pid) not in p.name]
        # Folded once the worker has seen the horse exit: a moment after the match is stored.
        wait_for(lambda: not horses_files(), 60, what="the horses' metrics files folded away")
    finally:
        stop_all([worker])


def _private_folder(pid: int) -> str | None:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    for item in environ:
        if item.startswith(metrics.PRIVATE_ENV.encode() + b"="):
            return item.split(b"=", 1)[1].decode()
    return None


def test_every_fault_has_an_outcome_class() -> None:
    """A new fault in the referee's table must be classed for the calls metric (else it
    would read ``failed``, hiding what it is)."""
    from arena.bots.call_metrics import OUTCOME_CLASSES, outcome_labels
    from referee.runner.faults import FAULTS

    assert set(FAULTS) <= set(OUTCOME_CLASSES)
    assert outcome_labels(None) == ("ok", "none")
    assert outcome_labels("http_status") == ("http_error", "http_status")
    assert outcome_labels("made-up") == ("failed", "other")
