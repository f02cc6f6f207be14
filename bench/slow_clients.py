"""Benchmark: /healthz latency of a well-behaved client while slowloris clients trickle their
headers, straight to gunicorn versus through the shipped nginx, side by side in one run.

Starts the production shape on loopback (:mod:`arena.ops.edge`: gunicorn with
``deploy/gunicorn.conf.py``, nginx with ``deploy/nginx.conf`` rendered for loopback ports),
then for each crowd size (0, 16, 300 by default) and each target (gunicorn directly, nginx)
opens that many slowloris connections (a request line, then one header byte a second, never
finishing), waits ``--settle`` seconds, and times ``--probes`` sequential ``GET /healthz``
requests, each on a new connection with a ``--timeout`` (a probe that times out counts as the
timeout and as a failure).  The crowd is closed between cells, and the cells of one crowd
size run back to back, so machine load hits both targets alike.

Usage: ``python bench/slow_clients.py [--json] [--probes N] [--crowds 0,16,300]``.
All traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.ops.edge import nginx_binary, start_gunicorn, start_nginx, wait_http
from arena.ops.procs import Child, stop_all
from tests.deploy.slowclients import Crowd


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def probe(url: str, n: int, timeout_s: float) -> dict[str, float]:
    times, failures = [], 0
    for _ in range(n):
        start = time.perf_counter()
        try:
            r = requests.get(url, timeout=timeout_s)
            ok = r.status_code == 200
        except requests.RequestException:
            ok = False
        elapsed = time.perf_counter() - start
        if not ok:
            failures += 1
            elapsed = max(elapsed, timeout_s)
        times.append(elapsed * 1000)
    return {"p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(percentile(times, 0.95), 1),
            "p99_ms": round(percentile(times, 0.99), 1), "failures": failures}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--probes", type=int, default=30)
    ap.add_argument("--crowds", default="0,16,300")
    ap.add_argument("--timeout", type=float, default=10.0, help="per-probe timeout, seconds")
    ap.add_argument("--settle", type=float, default=2.0,
                    help="seconds between opening a crowd and probing")
    args = ap.parse_args()
    if nginx_binary() is None:
        print("nginx is not installed (Debian: apt-get install nginx)", file=sys.stderr)
        return 2
    runtime = Path(tempfile.mkdtemp(prefix="arena-bench-edge-"))
    env = {**os.environ, "ARENA_INSTANCE_PATH": str(runtime / "instance"),
           "SECRET_KEY": uuid.uuid4().hex * 2, "TRUSTED_PROXY_HOPS": "1",
           "RATE_LIMITS_ENABLED": "0"}
    env.pop("ADMIN_TOKEN", None)
    children: list[Child] = []
    rows = []
    try:
        gport, nport = free_port(), free_port()
        children.append(start_gunicorn(host="127.0.0.1", port=gport, env=env))
        wait_http(f"http://127.0.0.1:{gport}/healthz", timeout_s=120, child=children[0])
        children.append(start_nginx(listen_host="127.0.0.1", listen_port=nport,
                                    upstream=f"127.0.0.1:{gport}",
                                    runtime_dir=runtime / "nginx"))
        wait_http(f"http://127.0.0.1:{nport}/healthz", timeout_s=60, child=children[1])
        targets = {"gunicorn": gport, "nginx": nport}
        for crowd_size in [int(x) for x in args.crowds.split(",")]:
            for name, port in targets.items():
                crowd = Crowd("127.0.0.1", port, every_s=1.0)
                try:
                    crowd.open("slowloris", crowd_size)
                    crowd.start()
                    time.sleep(args.settle)
                    figures = probe(f"http://127.0.0.1:{port}/healthz", args.probes,
                                    args.timeout)
                finally:
                    crowd.close()
                rows.append({"slowloris": crowd_size, "target": name, **figures})
                wait_http(f"http://127.0.0.1:{port}/healthz", timeout_s=120)  # recovered
    finally:
        stop_all(children)
    if args.json:
        print(json.dumps({"probes": args.probes, "timeout_s": args.timeout, "rows": rows},
                         indent=2))
    else:
        print(f"/healthz, {args.probes} probes per cell (timeout {args.timeout:.0f} s)")
        print(f"{'slowloris':>9}  {'target':<9} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} "
              f"{'failed':>6}")
        for r in rows:
            print(f"{r['slowloris']:>9}  {r['target']:<9} {r['p50_ms']:>9} {r['p95_ms']:>9} "
                  f"{r['p99_ms']:>9} {r['failures']:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
