"""A real Prometheus scrapes the real processes while they play real matches.

gunicorn (``deploy/gunicorn.conf.py``: several worker processes, multiprocess mode, its
``/metrics`` behind ``METRICS_TOKEN``), an ``arena worker`` (the thread pool) and the live
relay (``arena live``), each on loopback; real sample bots and one slow bot whose moves time
out; a spectator watching a match as it is played.  Prometheus (Debian's ``prometheus``,
run here with a configuration and a storage of this test's own) scrapes all three every
second, and its HTTP API must answer the deadline overshoot histogram and the others with
data.  The shipped ``deploy/prometheus.yml`` passes ``promtool check config``.

Without Prometheus the test is skipped, saying so; where CI is set (``CI=true``, as .ci/run
runs, which installs it) or ``ARENA_REQUIRE_PROMETHEUS``, it fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from arena.ops.edge import start_gunicorn, wait_http
from arena.ops.procs import Child, start_arena, start_bot, start_relay, stop_all
from sample_bots import greedy_bot
from sample_bots.sdk import serve_in_thread
from tests.arena.conftest import wait_for
from tests.arena.sse import Stream

from .test_slow_clients import free_port, redis_url

ADMIN = "prometheus-test-admin-token-0123456789abc"
METRICS_TOKEN = "prometheus-test-metrics-token-0123456789"
SHIPPED = Path(__file__).resolve().parents[2] / "deploy" / "prometheus.yml"


def prometheus_binary() -> str | None:
    return shutil.which("prometheus") or (
        "/usr/bin/prometheus" if os.access("/usr/bin/prometheus", os.X_OK) else None)


def required() -> bool:
    return os.environ.get("CI", "").lower() == "true" or bool(
        os.environ.get("ARENA_REQUIRE_PROMETHEUS"))


def skip_or_fail(why: str) -> None:
    if required():
        pytest.fail(f"{why}, but CI (or ARENA_REQUIRE_PROMETHEUS) needs this test to run")
    pytest.skip(why)


@dataclass
class Deployment:
    web: str
    relay: str
    prometheus: str
    bot_urls: list[str] = field(default_factory=list)

    def api(self, path: str, **query: str) -> Any:
        url = f"{self.prometheus}/api/v1/{path}?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.loads(r.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("query", query=expr)["result"]
        return result

    def value(self, expr: str) -> float | None:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None

    def post(self, path: str, body: dict[str, Any]) -> Any:
        req = urllib.request.Request(f"{self.web}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {ADMIN}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.web}{path}", timeout=30) as r:
            return json.loads(r.read())


def prometheus_config(ports: dict[str, int], token_file: Path) -> str:
    return f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: arena-web
    authorization:
      type: Bearer
      credentials_file: {token_file}
    static_configs:
      - targets: ["127.0.0.1:{ports['web']}"]
  - job_name: arena-worker
    static_configs:
      - targets: ["127.0.0.1:{ports['worker']}"]
  - job_name: arena-live
    static_configs:
      - targets: ["127.0.0.1:{ports['live']}"]
"""


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    binary = prometheus_binary()
    if binary is None:
        skip_or_fail("Prometheus is not installed (Debian: apt-get install prometheus)")
    assert binary is not None
    url = redis_url()
    if url is None:
        skip_or_fail("no Redis on 127.0.0.1:6379")
    assert url is not None
    runtime = Path(tempfile.mkdtemp(prefix="arena-prometheus-"))
    ports = {"web": free_port(), "worker": free_port(), "live": free_port(),
             "prometheus": free_port()}
    env = {**os.environ, "ARENA_INSTANCE_PATH": str(runtime / "instance"),
           "DATABASE_URL": f"sqlite:///{runtime / 'arena.sqlite3'}", "REDIS_URL": url,
           "QUEUE_NAME": f"arena-prometheus-{uuid.uuid4().hex[:8]}",
           "SECRET_KEY": uuid.uuid4().hex + uuid.uuid4().hex, "ADMIN_TOKEN": ADMIN,
           "METRICS_TOKEN": METRICS_TOKEN, "ALLOW_PRIVATE_BOT_URLS": "1",
           "RATE_LIMITS_ENABLED": "0", "WEB_CONCURRENCY": "2", "WORKER_CLOCK": "0",
           "HEALTH_DEADLINE_MS": "10000",
           "WORKER_METRICS_PORT": str(ports["worker"]),
           "LIVE_METRICS_PORT": str(ports["live"])}
    for key in ("PROMETHEUS_MULTIPROC_DIR", "LOG_FORMAT"):
        env.pop(key, None)
    children: list[Child] = []
    bots: list[Any] = []
    try:
        subprocess.run([sys.executable, "-m", "arena", "init-db"], env=env, check=True,
                       capture_output=True, timeout=120)
        gunicorn = start_gunicorn(host="127.0.0.1", port=ports["web"], env=env)
        children.append(gunicorn)
        worker = start_arena(["worker", "--no-clock"], env=env, name="worker")
        children.append(worker)
        relay = start_relay({**env, "LIVE_WEB_URL": f"http://127.0.0.1:{ports['web']}"})
        children.append(relay)
        assert relay.url is not None
        for module in ("random_bot", "greedy_bot", "planner_bot"):
            children.append(start_bot(module))
        token_file = runtime / "metrics_token"
        token_file.write_text(METRICS_TOKEN)
        conf = runtime / "prometheus.yml"
        conf.write_text(prometheus_config(ports, token_file))
        prom = subprocess.Popen(
            [binary, f"--config.file={conf}", f"--storage.tsdb.path={runtime / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{ports['prometheus']}",
             "--web.enable-lifecycle"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=(runtime / "prometheus.log").open("wb"), start_new_session=True)
        children.append(Child("prometheus", prom))
        wait_http(f"http://127.0.0.1:{ports['web']}/healthz", timeout_s=120, child=gunicorn)
        base = f"http://127.0.0.1:{ports['prometheus']}"
        wait_http(f"{base}/-/ready", timeout_s=60, child=children[-1])
        dep = Deployment(f"http://127.0.0.1:{ports['web']}", relay.url, base)
        # The slow bot answers after 1.2 s: in time for its health check, late for the
        # matches' 500 ms deadline (its seat times out, then forfeits).
        slow = serve_in_thread(lambda request: (time.sleep(1.2),
                                                greedy_bot.choose(request))[1], name="slow")
        bots.append(slow)
        dep.bot_urls = [slow.url] + [c.url for c in children if c.name.endswith("_bot")]
        yield dep
    finally:
        for b in bots:
            b.shutdown()
            b.server_close()
        stop_all(children)
        shutil.rmtree(runtime, ignore_errors=True)


def register(dep: Deployment, name: str, url: str) -> int:
    req = urllib.request.Request(f"{dep.web}/api/bots",
                                 data=json.dumps({"name": name, "url": url}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        bot_id: int = json.loads(r.read())["bot"]["id"]
    wait_for(lambda: dep.get(f"/api/bots/{bot_id}/check")["done"], 120,
             what=f"the health check of {name}")
    assert dep.get(f"/api/bots/{bot_id}/check")["state"] == "passed"
    return bot_id


@pytest.mark.drill
def test_prometheus_scrapes_overshoot_and_the_rest_during_real_matches(
        deployment: Deployment) -> None:
    dep = deployment
    ids = [register(dep, f"bot-{i}", url) for i, url in enumerate(dep.bot_urls)]
    limits = {"deadline_ms": 500, "time_bank_ms": 0, "max_strikes": 4}
    matches = [dep.post("/api/matches", {"bots": ids, "deals": 2, "seed": n,
                                         "limits": limits})["id"] for n in (1, 2)]
    # A spectator watches the first match through the relay while it is played.
    stream = wait_for(lambda: _open(f"{dep.relay}/live/matches/{matches[0]}/events"), 120,
                      what="the first match's live stream")
    kinds = [e.event for e in stream.events()]
    stream.close()
    assert kinds[-1] == "end"
    wait_for(lambda: all(dep.get(f"/api/matches/{m}")["state"] == "finished"
                         for m in matches), 300, what="both matches to finish")

    def scraped() -> bool:
        return (dep.value('sum(arena_match_jobs_total{outcome="finished"})') or 0) >= 2
    wait_for(scraped, 60, what="Prometheus to scrape both finished matches")

    # Every process is scraped.  Waited for, not read once: on a saturated machine one scrape
    # may miss its 1 s timeout (``up`` 0 until the next one).
    def all_up() -> dict[str, str] | None:
        up = {r["metric"]["job"]: r["value"][1] for r in dep.query("up")}
        return up if up == {"arena-web": "1", "arena-worker": "1", "arena-live": "1"} else None
    wait_for(all_up, 60, what="every target to be up in Prometheus")
    # The deadline overshoot histogram: the slow seat's timed-out moves, one observation
    # each (it forfeits at its fourth strike in each match; a well-behaved bot slowed down
    # by a loaded machine may add its own), and a p99 from its buckets.
    series = dep.query("arena_bot_call_deadline_overshoot_seconds_bucket")
    assert series and {s["metric"]["job"] for s in series} == {"arena-worker"}
    timeouts = dep.value('sum(arena_bot_call_deadline_overshoot_seconds_count{call="move"})')
    assert timeouts is not None and timeouts >= 8
    # Over the buckets as counted since the worker started (this test's whole run), not an
    # increase(): on a loaded machine Prometheus may first scrape the worker after the
    # timeouts, and an increase() over samples that never rose is 0 everywhere (a NaN p99).
    p99 = dep.value("histogram_quantile(0.99, sum by (le) "
                    "(arena_bot_call_deadline_overshoot_seconds_bucket))")
    assert p99 is not None and 0 <= p99 < 1.0
    assert dep.value('sum(arena_bot_calls_total{call="move",fault="timeout"})') == timeouts
    assert (dep.value('sum(arena_bot_calls_total{call="move",outcome="ok"})') or 0) > 8
    assert (dep.value("sum(arena_bot_forfeits_total)") or 0) >= 2
    assert (dep.value('sum(arena_health_checks_total{result="passed"})') or 0) >= 4
    # The web tier: gunicorn's processes added up, by URL rule.
    assert (dep.value('sum(arena_http_request_duration_seconds_count{route="/api/matches",'
                      'method="POST",status="2xx"})') or 0) == 2
    assert dep.query('arena_http_request_duration_seconds_count{route="/api/bots/<id:bot_id>'
                     '/check"}')
    # Gauges read at the scrape: the newest sample may predate the last finish by a scrape
    # interval (longer on a saturated machine), so they are waited for.
    wait_for(lambda: dep.value('max(arena_queue_jobs{state="queued"})') == 0, 60,
             what="the queued-jobs gauge to read 0")
    wait_for(lambda: dep.value('max(arena_matches{state="running"})') == 0, 60,
             what="the running-matches gauge to read 0")
    # The relay relayed the match's events to its spectator as they came.
    assert (dep.value("sum(arena_live_events_relayed_total)") or 0) > 0
    assert dep.query("arena_live_event_lag_seconds_bucket")
    # No label holds a bot's URL or id.
    labels = dep.api("labels")
    for name in labels:
        values = dep.api(f"label/{name}/values")
        assert not [v for v in values if "127.0.0.1:" in v and name != "instance"], name
        assert name not in ("bot", "bot_id", "url", "match_id")


def _open(url: str) -> Stream | None:
    try:
        stream = Stream(url, timeout_s=120)
    except OSError:
        return None
    if stream.status == 200:
        return stream
    stream.close()
    time.sleep(0.1)
    return None


def test_the_shipped_prometheus_config_passes_promtool(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        skip_or_fail("promtool is not installed (Debian: apt-get install prometheus)")
    assert promtool is not None
    token = tmp_path / "metrics_token"
    token.write_text(METRICS_TOKEN)
    conf = tmp_path / "prometheus.yml"
    conf.write_text(SHIPPED.read_text().replace("/run/secrets/metrics_token", str(token)))
    done = subprocess.run([promtool, "check", "config", str(conf)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
