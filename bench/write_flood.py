"""The response cache under a flood of writes that change nothing: hit ratio of page reads.

    python bench/write_flood.py                          # this checkout
    python bench/write_flood.py --against /work/main     # and another checkout, side by side
    python bench/write_flood.py --seconds 10 --readers 4 --flooders 4 --json

Before ``arena/core/changes.py``, any successful non-GET emptied the read cache of its process and
the shared tier: 778 sign-outs in 3 s (a CSRF-checked POST that needs nobody signed in) kept
every page uncached for everyone.  For each checkout this serves the app (embedded SQLite,
a private Redis for the shared tier, ``READ_CACHE_S=2``, the rate limits off so the flood
reaches the cache: with them on, a client's sign-outs stop at ``RATE_LIMIT_SIGN_IN_PER_CLIENT``)
on a threaded loopback server, and for ``--seconds`` per phase has ``--readers`` threads read
public pages (home, leaderboard, bot list and page, API lists) while ``--flooders`` threads
send:

* ``quiet``: nothing (the ratio the cache reaches on its own);
* ``sign-outs``: ``POST /bots/<id>/owner/sign-out`` with the visitor's own CSRF token;
* ``no-op writes``: a wrong owner token, a refused form, pausing a running bot, a submission
  whose name is taken, a replayed ``Idempotency-Key``, deleting a bot that does not exist.

A read is a hit when its answer carries ``Age`` (the cache answered it: this process's memory
or the shared tier); the ratio is hits / reads.  Each checkout runs in a process of its own
(``PYTHONPATH`` = the checkout), one after the other, on this machine's cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["/", "/leaderboard", "/bots", "/api/bots", "/api/ratings", "/bots/{bot}"]


def measure(seconds: float, readers: int, flooders: int) -> dict[str, Any]:
    """Serve the checkout that is first on ``sys.path`` and measure each phase."""
    import re

    import requests
    from werkzeug.serving import make_server

    import arena
    from arena import create_app
    try:
        from arena.core.queue import EmbeddedRedis
        from arena.core.storage import get_db, upgrade
    except ImportError:  # a checkout from before arena/ had rooms
        from arena.queue import EmbeddedRedis  # type: ignore[no-redef]
        from arena.storage import get_db, upgrade  # type: ignore[no-redef]

    work = Path(tempfile.mkdtemp(prefix="write-flood-"))
    redis = EmbeddedRedis(work / "redis")  # a private one, stopped at the end
    redis.start()
    app = create_app({
        "INSTANCE_PATH": str(work / "instance"), "DATABASE_URL": "", "REDIS_URL": redis.url,
        "QUEUE_NAME": "write-flood", "SECRET_KEY": "bench-" + "x" * 40,
        "ADMIN_TOKEN": "bench-admin-" + "x" * 30, "ALLOW_PRIVATE_BOT_URLS": True,
        "RATE_LIMITS_ENABLED": False, "READ_CACHE_S": 2.0, "READ_CACHE_SHARED": True,
    })
    upgrade(get_db(app))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        setup = requests.Session()
        made = setup.post(f"{base}/api/bots", json={"name": "resident",
                                                    "url": "http://127.0.0.1:9/r"},
                          headers={"Idempotency-Key": "resident-key"}, timeout=30)
        assert made.status_code == 202, made.text
        bot, token = made.json()["bot"]["id"], made.json()["token"]
        pages = [base + p.format(bot=bot) for p in PAGES]

        def visitor() -> tuple[requests.Session, str]:
            s = requests.Session()
            page = s.get(f"{base}/bots/{bot}", timeout=30).text
            found = re.search(r'name="csrf_token" value="([^"]+)"', page)
            assert found is not None
            return s, found.group(1)

        def sign_outs() -> Callable[[], int]:
            s, csrf = visitor()
            return lambda: s.post(f"{base}/bots/{bot}/owner/sign-out",
                                  data={"csrf_token": csrf}, allow_redirects=False,
                                  timeout=30).status_code

        def no_ops() -> Callable[[], int]:
            s, csrf = visitor()
            owner = {"Authorization": f"Bearer {token}"}
            ops: list[Callable[[], requests.Response]] = [
                lambda: s.post(f"{base}/bots/{bot}/owner", timeout=30,
                               data={"csrf_token": csrf, "owner_token": "wrong"}),
                lambda: s.post(f"{base}/bots/new", timeout=30,
                               data={"csrf_token": csrf, "name": "x", "url": "no"}),
                lambda: s.patch(f"{base}/api/bots/{bot}", json={"paused": False},
                                headers=owner, timeout=30),
                lambda: s.post(f"{base}/api/bots", timeout=30,
                               json={"name": "resident", "url": "http://127.0.0.1:9/o"}),
                lambda: s.post(f"{base}/api/bots", headers={"Idempotency-Key": "resident-key"},
                               json={"name": "resident", "url": "http://127.0.0.1:9/r"},
                               timeout=30),
                lambda: s.delete(f"{base}/api/bots/999999", headers=owner, timeout=30),
            ]
            turn = [0]

            def one() -> int:
                turn[0] += 1
                return ops[turn[0] % len(ops)]().status_code

            return one

        results: dict[str, Any] = {"code": str(Path(arena.__file__).resolve().parent.parent)}
        for phase, make in (("quiet", None), ("sign-outs", sign_outs), ("no-op writes", no_ops)):
            results[phase] = run_phase(pages, make, seconds, readers, flooders)
        return results
    finally:
        server.shutdown()
        get_db(app).dispose()
        redis.stop()


def run_phase(pages: list[str], make: Callable[[], Callable[[], int]] | None,
              seconds: float, readers: int, flooders: int) -> dict[str, Any]:
    import requests

    stop = threading.Event()
    lock = threading.Lock()
    reads = hits = writes = 0
    statuses: dict[int, int] = {}

    def read() -> None:
        nonlocal reads, hits
        s = requests.Session()
        i = 0
        while not stop.is_set():
            r = s.get(pages[i % len(pages)], timeout=30)
            i += 1
            with lock:
                reads += 1
                hits += "Age" in r.headers
        s.close()

    def flood() -> None:
        nonlocal writes
        assert make is not None
        write = make()
        while not stop.is_set():
            status = write()
            with lock:
                writes += 1
                statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=read) for _ in range(readers)]
    if make is not None:
        threads += [threading.Thread(target=flood) for _ in range(flooders)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(60)
    return {"reads": reads, "hits": hits, "hit_ratio": round(hits / max(reads, 1), 3),
            "writes": writes, "writes_per_s": round(writes / seconds, 1),
            "write_statuses": dict(sorted(statuses.items()))}


def run_checkout(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, __file__, "--one", "--seconds", str(args.seconds),
                          "--readers", str(args.readers), "--flooders", str(args.flooders)],
                         env=env, cwd=tree, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{tree}: the measurement failed:\n{out.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--against", type=Path, help="another checkout to measure the same way")
    p.add_argument("--seconds", type=float, default=5.0, help="per phase (default 5)")
    p.add_argument("--readers", type=int, default=4)
    p.add_argument("--flooders", type=int, default=4)
    p.add_argument("--json", action="store_true")
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps(measure(args.seconds, args.readers, args.flooders)))
        return
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])
    results = {str(t): run_checkout(t, args) for t in trees}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.readers} readers, {args.flooders} flooders, {args.seconds:g} s per phase; "
          "hit ratio = reads answered by the cache / reads")
    print(f"{'checkout':<28} {'phase':<13} {'reads':>7} {'hit ratio':>10} {'writes/s':>9}  "
          "write answers")
    for tree, res in results.items():
        for phase in ("quiet", "sign-outs", "no-op writes"):
            r = res[phase]
            print(f"{tree:<28} {phase:<13} {r['reads']:>7} {r['hit_ratio']:>10.3f} "
                  f"{r['writes_per_s']:>9.1f}  {r['write_statuses']}")


if __name__ == "__main__":
    main()
