"""1,000 spectators of one live match, then of one live bracket, against the production shape:
``/healthz`` and page latency with 0 viewers and with 1,000, side by side, in one run.

    python bench/live_viewers.py                     # 1,000 viewers, 20 s per phase
    python bench/live_viewers.py --viewers 2000 --window 30 --json

Everything is real and on loopback: nginx with ``deploy/nginx.conf`` in front of gunicorn with
``deploy/gunicorn.conf.py`` (``/``) and the live relay ``arena live`` (``/live/``), one
``arena worker``, the machine's Redis (a queue name of the run's own) and a fresh SQLite
database.  Four bots that think 40 ms per move (a process of their own) play a long match
and a knockout tournament's table, so events flow for the whole run.

Phases (each ``--window`` seconds): **baseline** (no viewer), **match** (``--viewers``
streams of the running match through nginx), **bracket** (as many streams of the running
tournament).  A probe starts every 50 ms on a connection of its own, alternately
``GET /healthz`` and the watched page (the match page, then the tournament page), each in a
thread (open loop).  The viewers run in a child process (asyncio), so their work does not
slow the probes' process; they measure each event's delivery lag as the time it arrived
minus the time in its Redis stream id (when the worker published it; same clock).  The
relay's RSS and CPU time come from ``/proc``.  Match viewers join at the live edge
(``?last=``, as a browser that reconnects): what is measured is the fan-out of live events,
not the transfer of the match so far that a first visit also receives.

The relay allows ``LIVE_MAX_VIEWERS_PER_IP`` streams per address (16 by default); every
viewer here comes from 127.0.0.1, so the bench raises it.  The open-file limit is raised to
the hard limit for the bench and its children.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import requests

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

PROBE_EVERY_S = 0.05
_STREAM_ID_MS = re.compile(rb"^id: (\d{13})-\d+$", re.M)
"""The publishing time (Redis stream id, ms since the epoch) of each event in a chunk."""
THINK_S = 0.04


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))], 1)


# --- child: slow bots -------------------------------------------------------------------------


def serve_bots(n: int) -> None:
    from sample_bots import greedy_bot
    from sample_bots.sdk import serve_in_thread

    def think(request: dict[str, Any]) -> str:
        time.sleep(THINK_S)
        return str(greedy_bot.choose(request))

    servers = [serve_in_thread(think, name=f"thinker-{i}") for i in range(n)]
    print(json.dumps([s.url for s in servers]), flush=True)
    sys.stdin.read()  # until the parent closes our stdin


# --- child: viewers ---------------------------------------------------------------------------


async def _viewer(host: str, port: int, path: str, stats: dict[str, Any],
                  opened: asyncio.Event, stop: asyncio.Event) -> None:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        stats["failed"] += 1
        return
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                 "Accept: text/event-stream\r\n\r\n".encode())
    try:
        status = await reader.readline()
        if b" 200 " not in status:
            stats["failed"] += 1
            code = status.decode(errors="replace").split(" ")[1:2]
            stats["why"][code[0] if code else "no answer"] = \
                stats["why"].get(code[0] if code else "no answer", 0) + 1
            return
        stats["open"] += 1
        if stats["open"] + stats["failed"] >= stats["want"]:
            opened.set()
        while not stop.is_set():
            chunk = await reader.read(65536)
            if not chunk:
                stats["closed"] += 1
                return
            if stats["measure"]:
                now = time.time() * 1000
                stats["events"] += chunk.count(b"\nevent: ") + chunk.startswith(b"event: ")
                stats["lags"].extend(now - int(ms) for ms in _STREAM_ID_MS.findall(chunk))
    except (OSError, asyncio.IncompleteReadError):
        stats["closed"] += 1
    finally:
        writer.close()


async def _viewers(host: str, port: int, path: str, n: int) -> None:
    stats: dict[str, Any] = {"want": n, "open": 0, "failed": 0, "closed": 0, "events": 0,
                             "lags": [], "measure": False, "why": {}}
    opened, stop = asyncio.Event(), asyncio.Event()
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(_viewer(host, port, path, stats, opened, stop)))
        if i % 50 == 49:
            await asyncio.sleep(0.05)  # a crowd arriving, not one SYN flood
    await asyncio.wait_for(opened.wait(), 120)
    print(json.dumps({"ready": stats["open"], "failed": stats["failed"],
                      "failed_with": stats["why"]}), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.readline)  # "measure"
    stats["measure"] = True
    await loop.run_in_executor(None, sys.stdin.readline)  # "stop"
    stats["measure"] = False
    lags = stats["lags"]
    print(json.dumps({"open": stats["open"], "failed": stats["failed"],
                      "closed": stats["closed"], "events": stats["events"],
                      "lag_p50_ms": pct(lags, 0.5), "lag_p99_ms": pct(lags, 0.99),
                      "lag_max_ms": round(max(lags), 1) if lags else None}), flush=True)
    stop.set()
    for t in tasks:
        t.cancel()


# --- parent -----------------------------------------------------------------------------------


def raise_nofile() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def proc_usage(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) and RSS in MiB of a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    return cpu, rss


def probe_phase(base: str, page: str, window_s: float) -> dict[str, Any]:
    times: dict[str, list[float]] = {"healthz": [], "page": []}
    errors = 0
    lock = threading.Lock()

    def probe(kind: str, url: str) -> None:
        nonlocal errors
        t0 = time.perf_counter()
        try:
            r = requests.get(url, timeout=30)
            ok = r.status_code == 200
        except requests.RequestException:
            ok = False
        ms = (time.perf_counter() - t0) * 1000
        with lock:
            if ok:
                times[kind].append(ms)
            else:
                errors += 1

    threads = []
    end = time.monotonic() + window_s
    i = 0
    while time.monotonic() < end:
        kind, url = ("healthz", f"{base}/healthz") if i % 2 == 0 else ("page", base + page)
        t = threading.Thread(target=probe, args=(kind, url), daemon=True)
        t.start()
        threads.append(t)
        i += 1
        time.sleep(PROBE_EVERY_S)
    for t in threads:
        t.join(60)
    return {f"{k}_{m}": v for k, vals in times.items()
            for m, v in (("p50_ms", pct(vals, 0.5)), ("p95_ms", pct(vals, 0.95)),
                         ("n", len(vals)))} | {"errors": errors}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--viewers", type=int, default=1000)
    ap.add_argument("--window", type=float, default=20.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve-bots", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--view", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_bots:
        serve_bots(args.serve_bots)
        return 0
    if args.view:
        host, port, path = args.view.split(" ", 2)
        asyncio.run(_viewers(host, int(port), path, args.viewers))
        return 0

    raise_nofile()
    from arena.ops.edge import start_gunicorn, start_nginx, wait_http
    from arena.ops.procs import Child, start_arena, start_relay, stop_all
    from tests.deploy.test_slow_clients import free_port

    runtime = Path(tempfile.mkdtemp(prefix="arena-live-bench-"))
    admin = uuid.uuid4().hex
    env = {**os.environ, "ARENA_INSTANCE_PATH": str(runtime / "instance"),
           "SECRET_KEY": uuid.uuid4().hex * 2, "ADMIN_TOKEN": admin,
           "TRUSTED_PROXY_HOPS": "1", "QUEUE_NAME": f"arena-live-bench-{uuid.uuid4().hex[:6]}",
           "REDIS_URL": "redis://127.0.0.1:6379/0", "RATE_LIMITS_ENABLED": "0",
           "ALLOW_PRIVATE_BOT_URLS": "1", "WORKER_CLOCK": "0",
           "LIVE_MAX_VIEWERS_PER_IP": str(args.viewers * 4),
           "PYTHONPATH": str(HERE)}
    children: list[Child] = []
    helpers: list[subprocess.Popen[str]] = []
    out: dict[str, Any] = {"viewers": args.viewers, "window_s": args.window}
    try:
        subprocess.run([sys.executable, "-m", "arena", "init-db"], env=env, check=True,
                       capture_output=True)
        bots = subprocess.Popen([sys.executable, __file__, "--serve-bots", "4"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        helpers.append(bots)
        assert bots.stdout is not None
        urls = json.loads(bots.stdout.readline())
        gport, nport = free_port(), free_port()
        gunicorn = start_gunicorn(host="127.0.0.1", port=gport, env=env)
        children.append(gunicorn)
        relay = start_relay({**env, "LIVE_WEB_URL": f"http://127.0.0.1:{gport}"})
        children.append(relay)
        children.append(start_arena(["worker", "--no-clock"], env=env, name="worker"))
        wait_http(f"http://127.0.0.1:{gport}/healthz", 120, child=gunicorn)
        assert relay.url is not None
        nginx = start_nginx(listen_host="127.0.0.1", listen_port=nport,
                            upstream=f"127.0.0.1:{gport}", runtime_dir=runtime / "nginx",
                            live_upstream=relay.url.removeprefix("http://"))
        children.append(nginx)
        base = f"http://127.0.0.1:{nport}"
        wait_http(f"{base}/live/healthz", 60, child=nginx)
        auth = {"Authorization": f"Bearer {admin}"}
        ids = []
        for i, url in enumerate(urls):
            r = requests.post(f"{base}/api/bots", json={"name": f"thinker-{i}", "url": url},
                              timeout=30)
            ids.append(r.json()["bot"]["id"])
            check = base + r.json()["check_url"]
            while not requests.get(check, timeout=30).json().get("done"):
                time.sleep(0.2)
        r = requests.post(f"{base}/api/matches", json={"bots": ids, "deals": 100}, headers=auth,
                          timeout=30)
        match_id = r.json()["id"]
        # Started only once its viewers watch (bracket phase): its table's match (2 deals)
        # starts and finishes within the window, and each change is pushed to every viewer.
        r = requests.post(f"{base}/api/tournaments", headers=auth, timeout=30, json={
            "name": "bench", "format": "knockout", "bots": ids, "deals": 2})
        tid = r.json()["id"]
        while requests.get(f"{base}/api/matches/{match_id}", timeout=30).json()["state"] \
                != "running":
            time.sleep(0.2)
        relay_pid = relay.pid
        from redis import Redis

        rds = Redis.from_url(env["REDIS_URL"])

        def phase(name: str, page: str, stream: str | None, then: Any = None) -> None:
            viewer = None
            if stream is not None:
                if "/matches/" in stream:  # join at the live edge, as a reconnecting browser
                    last = rds.xrevrange(f"{env['QUEUE_NAME']}:live:match:{match_id}", count=1)
                    stream += f"?last={last[0][0].decode()}"
                viewer = subprocess.Popen(
                    [sys.executable, __file__, "--viewers", str(args.viewers), "--view",
                     f"127.0.0.1 {nport} {stream}"], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, text=True)
                helpers.append(viewer)
                assert viewer.stdout is not None and viewer.stdin is not None
                ready = json.loads(viewer.stdout.readline())
                viewer.stdin.write("measure\n")
                viewer.stdin.flush()
            cpu0, _ = proc_usage(relay_pid)
            t0 = time.monotonic()
            if then is not None:
                then()
            res = probe_phase(base, page, args.window)
            cpu1, rss = proc_usage(relay_pid)
            res["relay_cpu_pct"] = round(100 * (cpu1 - cpu0) / (time.monotonic() - t0), 1)
            res["relay_rss_mib"] = round(rss, 1)
            if viewer is not None:
                assert viewer.stdin is not None and viewer.stdout is not None
                viewer.stdin.write("stop\n")
                viewer.stdin.flush()
                res["streams"] = {**ready, **json.loads(viewer.stdout.readline())}
                viewer.stdin.close()
                viewer.wait(30)
            res["load_avg"] = Path("/proc/loadavg").read_text().split()[:3]
            out[name] = res

        phase("baseline_match_page", f"/matches/{match_id}", None)
        phase("match_viewers", f"/matches/{match_id}", f"/live/matches/{match_id}/events")
        phase("baseline_tournament_page", f"/tournaments/{tid}", None)
        phase("bracket_viewers", f"/tournaments/{tid}", f"/live/tournaments/{tid}/events",
              then=lambda: requests.post(f"{base}/api/tournaments/{tid}/start", headers=auth,
                                         timeout=30))
    finally:
        for h in helpers:
            if h.poll() is None:
                h.kill()
        stop_all(children)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{args.viewers} viewers, {args.window:.0f} s per phase "
          f"(load average at the end: {' '.join(out['bracket_viewers']['load_avg'])})")
    print(f"{'phase':<26} {'healthz p50/p95 ms':>19} {'page p50/p95 ms':>17} {'errors':>6} "
          f"{'relay CPU %':>11} {'RSS MiB':>8}")
    for name in ("baseline_match_page", "match_viewers", "baseline_tournament_page",
                 "bracket_viewers"):
        x = out[name]
        print(f"{name:<26} {x['healthz_p50_ms']!s:>9}/{x['healthz_p95_ms']!s:<9} "
              f"{x['page_p50_ms']!s:>8}/{x['page_p95_ms']!s:<8} {x['errors']:>6} "
              f"{x['relay_cpu_pct']:>11} {x['relay_rss_mib']:>8}")
        if "streams" in x:
            s = x["streams"]
            print(f"{'':<26} streams open {s['open']}, failed {s['failed']} "
                  f"{s.get('failed_with') or ''}, closed "
                  f"{s['closed']}, events {s['events']}, delivery lag p50 {s['lag_p50_ms']} ms"
                  f" p99 {s['lag_p99_ms']} ms max {s['lag_max_ms']} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
