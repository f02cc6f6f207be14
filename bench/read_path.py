"""Read path at volume: latency and SQL statements of every page and API endpoint.

    python bench/read_path.py                    # full scale: 10,000 bots, 1,000,000 matches
    python bench/read_path.py --scale 0.1        # 1,000 bots, 100,000 matches
    python bench/read_path.py --scale 0.01 --requests 20 --json
    PYTHONPATH=/work/main python bench/read_path.py --scale 0.1   # another checkout's code

1. **Seed** a PostgreSQL database of its own (``arena_bench_<pid>``, created here and dropped
   at the end; ``--keep`` keeps it) with the schema of the code under test (its Alembic
   migrations), then set-based SQL (``INSERT ... SELECT generate_series``): bots with a
   version and health checks, finished four-seat matches with their seats, results (a real
   match log each), rating events (``games`` numbered per bot) and ratings, one bot (#1) in
   one match of 16 (the busy bot).  Secondary indexes, unique and foreign-key constraints
   are dropped before the load and re-created after it, so PostgreSQL validates every one
   of them over the whole data at the end (faster than row by row, and just as strict).
   Two 256-entrant tournaments (Swiss: round 1 played, round 2 paired by the code under
   test and half played; knockout: round 1 half played) are made through the service code.
   So are the rows of the signed-in pages (:func:`fixtures`, also on ``--reuse`` when
   missing): an account owning the busy bot, with an API token and a webhook with its
   deliveries, and a finished challenge whose calls the busy bot's owner reads.  Every GET
   rule of the app is listed (:func:`url_list`) or left out with a reason (``UNMEASURED``);
   tests/bench/test_read_path_urls.py checks it.
2. **Serve** the app as deployed: ``gunicorn -c deploy/gunicorn.conf.py "arena:create_app()"``
   on a loopback port (the checkout's own config: 2 workers x 8 threads by default).
3. **Measure** each URL: ``--requests`` requests one at a time, then with ``--clients``
   concurrent clients (keep-alive connections, each URL on its own; the clients are
   processes, so none waits for another's interpreter lock), printing p50/p95/p99
   in ms, the server's own time per request (p50/p95 of gunicorn's ``%(D)s``: without the
   wait for a free worker thread), the body size, and the SQL statements one request sends
   (counted in this process with an SQLAlchemy listener on the same code and database,
   through the Flask test
   client).  Every URL gets at most ``--budget-s`` seconds per mode; a URL that did not
   finish its requests in time says how many it finished.  A URL listed with
   `` [revalidate]`` is asked as a browser polls it: with the ``If-None-Match`` of its ETag.

Every request goes to 127.0.0.1.  Seeding the full scale takes a few minutes and about
6 GB of disk (watch ``df -h``).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import http.client
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: its code wins
# A Redis namespace of its own, set before the arena (and RQ) is imported: RQ takes its key
# prefix from it once, and the seeded database's derived namespace is not known yet.
os.environ.setdefault("REDIS_NAMESPACE", f"bench-read-{os.getpid()}")

import psycopg
from sqlalchemy import event, select

import arena
from arena import create_app
from arena.core.storage import get_db, upgrade

try:  # the listings' counts (migration 0014); older code has none to fill
    from arena.core.counts import RECOUNT_SQL
except ImportError:
    RECOUNT_SQL = ""

FULL_BOTS = 10_000
FULL_MATCHES = 1_000_000
BUSY_EVERY = 16
"""Bot #1 sits in one match of this many (62,500 matches at full scale)."""
ENTRANTS = 256


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- database --------------------------------------------------------------------------------


def admin_url() -> str:
    given = os.environ.get("ARENA_BENCH_PG_URL")
    for url in [given] if given else ["postgresql://root@127.0.0.1:5432/test",
                                      "postgresql://postgres@127.0.0.1:5432/test"]:
        try:
            with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
                conn.execute("SELECT 1")
            return url
        except Exception:
            continue
    raise SystemExit("no PostgreSQL on 127.0.0.1:5432 (set ARENA_BENCH_PG_URL)")


def real_log_gz() -> bytes:
    """One real match log (one deal of four first-legal players), gzip-compressed."""
    from referee import find_ruleset
    from referee.runner import log as referee_log
    from referee.runner.match import run_match
    from referee.wire.players import LocalPlayer

    rec = run_match(find_ruleset("standard"),
                    [LocalPlayer(lambda r: {"move": r["legal_moves"][0]["id"]})
                     for _ in range(4)], seed=5, deals=1)
    doc = referee_log.to_document(rec)
    return gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), mtime=0)


def drop_secondary(conn: psycopg.Connection[Any]) -> list[str]:
    """Drop every foreign key, unique constraint and secondary index of the public schema;
    return the statements that re-create them (foreign keys last)."""
    cons = conn.execute("""
        SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid), c.contype
        FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = 'public' AND c.contype IN ('f', 'u')""").fetchall()
    idx = conn.execute("""
        SELECT i.indexname, i.indexdef FROM pg_indexes i
        WHERE i.schemaname = 'public' AND NOT EXISTS (
            SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)""").fetchall()
    for table, name, _, _kind in sorted(cons, key=lambda c: c[3] != "f"):  # FKs first
        conn.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _ in idx:
        conn.execute(f'DROP INDEX "{name}"')
    again = [d for _, d in idx]
    again += [f'ALTER TABLE {t} ADD CONSTRAINT "{n}" {d}' for t, n, d, k in cons if k == "u"]
    again += [f'ALTER TABLE {t} ADD CONSTRAINT "{n}" {d}' for t, n, d, k in cons if k == "f"]
    return again


SEED_SQL = [
    ("bots", """
     INSERT INTO bots (id, name, url, version, token_hash, created_at, updated_at, deleted_at,
                       owner_paused, health_paused, health_failures, last_health_at,
                       last_health_reason, idle_since, info)
     SELECT g, 'bot-' || lpad(g::text, greatest(5, length(%(bots)s::text)), '0'),
            'http://127.0.0.1:9/' || g, 1, repeat('0', 64),
            TIMESTAMP '2026-01-01' + g * INTERVAL '1 second', TIMESTAMP '2026-01-01',
            NULL, false, false, 0, TIMESTAMP '2026-06-01', '', TIMESTAMP '2026-06-01',
            json_build_object('name', 'bot ' || g, 'author', 'bench')
     FROM generate_series(1, %(bots)s) g"""),
    ("bot_versions", """
     INSERT INTO bot_versions (id, bot_id, version, url, created_at, info)
     SELECT g, g, 1, 'http://127.0.0.1:9/' || g, TIMESTAMP '2026-01-01', '{}'::json
     FROM generate_series(1, %(bots)s) g"""),
    ("health_checks", """
     INSERT INTO health_checks (id, bot_id, at, url, ok, reason, describe_ms, move_ms,
                                purpose)
     SELECT g, 1 + (g - 1) %% %(bots)s, TIMESTAMP '2026-06-01' + g * INTERVAL '1 second',
            'http://127.0.0.1:9/', true, '', 2.0, 3.0,
            CASE WHEN g <= %(bots)s THEN 'submit' ELSE 'sweep' END  -- a submission, then sweeps
     FROM generate_series(1, %(bots)s * 5) g"""),
    ("matches", """
     INSERT INTO matches (id, kind, state, ruleset, family, deals, seed, limits, rated,
                          created_at, queued_at, started_at, finished_at, attempts, enqueues,
                          job_id, lease_token, lease_owner, lease_expires_at, error)
     SELECT g, 'ladder', 'finished', 'standard', 'classic', 2, g,
            '{"deadline_ms": 1000, "time_bank_ms": 10000, "max_strikes": 10,
              "call_deadline_ms": 5000}'::json, true,
            TIMESTAMP '2026-01-01' + g * INTERVAL '10 seconds',
            TIMESTAMP '2026-01-01' + g * INTERVAL '10 seconds',
            TIMESTAMP '2026-01-01' + g * INTERVAL '10 seconds' + INTERVAL '1 second',
            TIMESTAMP '2026-01-01' + g * INTERVAL '10 seconds' + INTERVAL '9 seconds',
            1, 1, 'match-' || g || '-1', NULL, NULL, NULL, ''
     FROM generate_series(1, %(matches)s) g"""),
    # Seats: three consecutive bots from a hashed base (ids 2..N), the fourth bot #1 in one
    # match of BUSY_EVERY and otherwise the next consecutive bot; ranks rotate.
    ("match_seats", """
     INSERT INTO match_seats (id, match_id, seat, bot_id, bot_version_id, rank, score, wins,
                              strikes, forfeited, calls, p50_ms, p95_ms, max_ms)
     SELECT (m - 1) * 4 + s + 1, m, s, b, b, 1 + (s + m) %% 4, 3 - (s + m) %% 4 * 2,
            (3 - (s + m) %% 4) / 2, 0, false, 30, 3.5 + s, 9.0 + s, 15.0 + s
     FROM (SELECT m, s,
                  CASE WHEN s = 3 AND m %% %(busy)s = 0 THEN 1
                       ELSE 2 + (m::bigint * 7919 %% (%(bots)s - 4)) + s END AS b
           FROM generate_series(1, %(matches)s) m, generate_series(0, 3) s) x"""),
    ("match_results", """
     INSERT INTO match_results (id, match_id, family, created_at, totals, log_gz)
     SELECT g, g, 'classic', TIMESTAMP '2026-01-01' + g * INTERVAL '10 seconds',
            '{"totals": [3, 1, -1, -3], "strikes": [], "forfeits": [], "notes": [],
              "seats": []}'::json, %(log)s
     FROM generate_series(1, %(matches)s) g"""),
    # Rating events: one per seat, numbered per bot in match order (``games``), with a
    # rating curve that wanders (not Elo arithmetic: the read path only draws it).
    ("rating_events", """
     INSERT INTO rating_events (id, result_id, match_id, bot_id, family, before, after, games,
                                created_at)
     SELECT id, match_id, match_id, bot_id, 'classic',
            1500 + 120 * sin((games - 1) / 40.0 + bot_id) + bot_id %% 97,
            1500 + 120 * sin(games / 40.0 + bot_id) + bot_id %% 97, games,
            TIMESTAMP '2026-01-01' + match_id * INTERVAL '10 seconds'
     FROM (SELECT id, match_id, bot_id,
                  row_number() OVER (PARTITION BY bot_id ORDER BY match_id) AS games
           FROM match_seats) x"""),
    ("ratings", """
     INSERT INTO ratings (bot_id, family, rating, games, updated_at)
     SELECT bot_id, 'classic', max(after) FILTER (WHERE games = n), max(n),
            TIMESTAMP '2026-06-01'
     FROM (SELECT bot_id, after, games, count(*) OVER (PARTITION BY bot_id) AS n
           FROM rating_events) x GROUP BY bot_id"""),
    ("rating_families", """
     INSERT INTO rating_families (name, results) VALUES ('classic', %(matches)s)"""),
    # The listings' maintained totals (migration 0014), counted from the rows just seeded
    # (the code under test may predate them: then there is no such table to fill).
    ("listing_counts", "INSERT INTO listing_counts (name, n) " + RECOUNT_SQL),
]


def seed(url: str, bots: int, matches: int) -> dict[str, float]:
    """Fill the (migrated, empty) database; returns seconds per step."""
    steps = [(name, sql) for name, sql in SEED_SQL if name != "listing_counts" or RECOUNT_SQL]
    times: dict[str, float] = {}
    params = {"bots": bots, "matches": matches, "busy": BUSY_EVERY, "log": real_log_gz()}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute("SET work_mem = '256MB'")
        t0 = time.monotonic()
        again = drop_secondary(conn)
        for name, sql in steps:
            t = time.monotonic()
            conn.execute(sql, params)
            times[name] = round(time.monotonic() - t, 1)
            log(f"seeded {name} in {times[name]} s")
        t = time.monotonic()
        for stmt in again:
            conn.execute(stmt)  # re-creating a constraint validates it over every row
        times["indexes_and_constraints"] = round(time.monotonic() - t, 1)
        log(f"re-created {len(again)} indexes and constraints in "
            f"{times['indexes_and_constraints']} s")
        for table in ("bots", "bot_versions", "health_checks", "matches", "match_results",
                      "match_seats", "rating_events"):
            conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                         f"(SELECT max(id) FROM {table}))")
        t = time.monotonic()
        conn.execute("VACUUM ANALYZE")
        times["vacuum_analyze"] = round(time.monotonic() - t, 1)
        times["total"] = round(time.monotonic() - t0, 1)
    return times


def finish_by_sql(url: str, match_ids: list[int], log_gz: bytes | None = None, *,
                  count: bool = True) -> None:
    """Finish tournament matches as the finishing job would leave them (unrated), each with
    ``log_gz`` (default: :func:`real_log_gz`); ``count``: add them to the family's count of
    results (the home page's figure)."""
    if not match_ids:
        return
    with psycopg.connect(url, autocommit=False) as conn:
        conn.execute("UPDATE matches SET state = 'finished', started_at = now(), "
                     "finished_at = now(), attempts = 1 WHERE id = ANY(%s)", (match_ids,))
        conn.execute("""UPDATE match_seats SET rank = 1 + (seat + match_id) %% 4,
                        score = 3 - (seat + match_id) %% 4 * 2, wins = 1, strikes = 0,
                        forfeited = false, calls = 30, p50_ms = 4, p95_ms = 9, max_ms = 12
                        WHERE match_id = ANY(%s)""", (match_ids,))
        conn.execute("""INSERT INTO match_results (match_id, family, created_at, totals, log_gz)
                        SELECT m, 'classic', now(), '{"totals": [3, 1, -1, -3],
                        "strikes": [], "forfeits": [], "notes": [], "seats": []}'::json, %s
                        FROM unnest(%s::int[]) m""", (log_gz or real_log_gz(), match_ids))
        if count:
            conn.execute("UPDATE rating_families SET results = results + %s "
                         "WHERE name = 'classic'", (len(match_ids),))
        conn.commit()


def make_tournaments(app: Any, url: str) -> dict[str, int]:
    """A Swiss and a knockout tournament of ENTRANTS bots, through the service code."""
    from arena.core.models import Bot, Match
    from arena.core.tournament_models import TournamentMatch
    from arena.tournaments import service
    from referee.runner.match import Limits

    db = get_db(app)
    out: dict[str, int] = {}

    def queued(tid: int) -> list[int]:
        with db.begin() as s:
            return list(s.scalars(select(TournamentMatch.match_id)
                                  .join(Match, Match.id == TournamentMatch.match_id)
                                  .where(TournamentMatch.tournament_id == tid,
                                         Match.state == "queued").order_by(Match.id)))

    for fmt in ("swiss", "knockout"):
        with db.begin() as s:
            bots = s.scalars(select(Bot).order_by(Bot.id).limit(ENTRANTS)).all()
            t = service.create_tournament(s, name=f"Bench {fmt} {ENTRANTS}", format=fmt,
                                          ruleset="standard", bots=bots, deals=1,
                                          limits=Limits(), rated=False, seed=1)
            tid = t.id
        t0 = time.monotonic()
        service.start(app, tid)
        log(f"{fmt}: started in {time.monotonic() - t0:.1f} s")
        out[fmt] = tid
        ids = queued(tid)
        if fmt == "swiss":
            finish_by_sql(url, ids)
            t0 = time.monotonic()
            service.advance(app, tid)
            log(f"swiss: round 2 paired in {time.monotonic() - t0:.1f} s (advance step)")
            ids = queued(tid)
        finish_by_sql(url, ids[: len(ids) // 2])
        service.advance(app, tid)
    return out


# --- the signed-in pages' rows: an account, its token and webhook, a challenge -------------


def fixtures(app: Any, ids: Ids) -> None:
    """Make (when missing) the rows the signed-in pages and the challenge pages read, through
    the service code: the account ``bench-owner`` owning the busy bot, its API token, its
    webhook with ``DELIVERIES`` deliveries, a finished challenge of the busy bot against three
    others; then this run's credentials (:data:`CREDENTIALS`: the session cookie and the token
    are signed with this run's ``SECRET_KEY``, so the token's hash and a reset link are
    written anew) and the busy bot's last calls in this run's Redis namespace.  On a reused
    database that is all it writes.  A checkout without accounts gets none of it."""
    try:
        from arena.accounts import service as accounts
        from arena.accounts import sessions
        from arena.bots.calls import CallRecorder
        from arena.core.models import Bot, Challenge
        from arena.core.security import hash_token
        from arena.notify import webhooks
        from arena.notify.events import new_delivery
        from arena.play import challenges
    except ImportError:
        return
    from flask import session as cookie_session

    from arena.core.models import utcnow
    from referee import find_ruleset
    from referee.runner import log as referee_log
    from referee.runner.match import run_match
    from referee.wire.players import LocalPlayer

    db = get_db(app)
    with app.app_context(), db.begin() as s:
        account = accounts.find(s, BENCH_USER) or accounts.sign_up(
            s, app, username=BENCH_USER, password=secrets.token_urlsafe(18))
        s.flush()
        busy = s.get(Bot, ids.busy)
        assert busy is not None
        if busy.account_id != account.id:
            busy.account_id = account.id
        token = next((t for t in accounts.live_tokens(s, account) if t.name == BENCH_TOKEN),
                     None)
        if token is None:
            token, _ = accounts.create_token(s, account, BENCH_TOKEN, ["bots:read"])
        plain = accounts.TOKEN_PREFIX + secrets.token_urlsafe(24)
        token.token_hash = hash_token(plain)  # this run's pepper (SECRET_KEY)
        ids.reset = accounts.start_reset(s, app, account)
        owner = webhooks.Owner(account_id=account.id)
        hook = next(iter(webhooks.owned(s, owner)), None)
        if hook is None:
            hook, _ = webhooks.create(app, s, owner, WEBHOOK_URL)
        have = len(webhooks.deliveries(s, hook, limit=DELIVERIES))
        for i in range(have, DELIVERIES):
            row = new_delivery(s, hook, "match.forfeited", {
                "bot": {"id": busy.id, "name": busy.name}, "match_id": ids.recent - i})
            row.state, row.attempts, row.response_status, row.latency_ms = (
                "delivered", 1, 200, 40 + i)
            row.last_attempt_at = row.delivered_at = utcnow()
            row.next_attempt_at = None
        ids.webhook = hook.id
        ch = s.scalar(select(Challenge).where(Challenge.bot_id == busy.id)
                      .order_by(Challenge.id).limit(1))
        if ch is None:
            opponents = list(s.scalars(select(Bot.id).where(Bot.id != busy.id)
                                       .order_by(Bot.id).limit(3)))
            ch = challenges.create_challenge(s, app.config, busy, challenges.Wanted(
                opponents=opponents, ruleset="standard", deals=1, rated=False))
            # Started as challenges.dispatch starts it, without enqueueing (no worker).
            if challenges._start(s, app.config, ch) is None:
                raise SystemExit(f"the bench challenge was refused: {ch.reason}")
        s.flush()
        ids.challenge = ch.id
        match_id, bot_ids = ch.match_id, [busy.id, *[o.bot_id for o in ch.opponents]]
        finished = ch.match is not None and ch.match.state == "finished"
        account_id = account.id
    with app.app_context(), app.test_request_context():
        recorder = CallRecorder(app)
        players = recorder.wrap([LocalPlayer(lambda r: {"move": r["legal_moves"][0]["id"]},
                                             label=f"bot:{b}") for b in bot_ids], bot_ids)
        rec = run_match(find_ruleset("standard"), players, seed=7, deals=1,
                        on_turn=recorder.on_turn)
        if not finished and match_id is not None:
            doc = referee_log.to_document(rec)
            finish_by_sql(make_psycopg_url(app), [match_id], gzip.compress(
                json.dumps(doc, separators=(",", ":")).encode(), mtime=0),
                count=False)  # a reused database's seeded figures stay as they were
        if match_id is not None:
            recorder.flush(match_id)  # the busy bot's last calls, in this run's namespace
        with db.begin() as s:
            from arena.core.models import Account

            row = s.get(Account, account_id)
            assert row is not None
            sessions.sign_in(row)
            value = app.session_interface.get_signing_serializer(app).dumps(
                dict(cookie_session))
    CREDENTIALS[SIGNED_IN] = {"Cookie": f"{app.config['SESSION_COOKIE_NAME']}={value}"}
    CREDENTIALS[BEARER] = {"Authorization": f"Bearer {plain}"}


def make_psycopg_url(app: Any) -> str:
    """The app's database as a plain (psycopg) URL."""
    url = get_db(app).engine.url.render_as_string(hide_password=False)
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


# --- serving and measuring -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_gunicorn(env: dict[str, str], port: int,
                   access_log: Path) -> subprocess.Popen[bytes]:
    """The checkout's gunicorn as deployed, logging each request's path and the time the
    server spent on it (``%(D)s``, microseconds: from the request parsed by a worker thread
    to the answer written, i.e. without the wait for a free thread)."""
    repo = Path(arena.__file__).resolve().parent.parent
    conf = repo / "deploy" / "gunicorn.conf.py"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(conf), "--access-logfile",
         str(access_log), "--access-logformat", "%(U)s?%(q)s %(D)s", "arena:create_app()"],
        env={**env, "HOST": "127.0.0.1", "PORT": str(port)}, cwd=str(repo),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/healthz")
            if c.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("gunicorn did not answer /healthz within 60 s")


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


REVALIDATE = " [revalidate]"
"""A URL listed with this suffix is asked as a browser polls it: with the ``If-None-Match``
of its current ``ETag`` (a 304 while nothing changed)."""


def split(label: str) -> tuple[str, bool]:
    """The path of a listed URL, and whether it is asked conditionally."""
    for suffix in (SIGNED_IN, BEARER):
        label = label.removesuffix(suffix)
    if label.endswith(REVALIDATE):
        return label[: -len(REVALIDATE)], True
    return label, False


def client_for(app: Any, label: str, client: Any) -> Any:
    """The Flask test client to ask a listed URL with: ``client``, except for a signed-in
    one, which gets a client without a cookie jar of its own (Werkzeug's client replaces a
    ``Cookie`` header with its jar's cookies; a signed-in jar would sign in every later
    URL)."""
    if not label.endswith(SIGNED_IN):
        return client
    if "jarless" not in CLIENTS:
        CLIENTS["jarless"] = app.test_client(use_cookies=False)
    return CLIENTS["jarless"]


CLIENTS: dict[str, Any] = {}


def credentials(label: str) -> dict[str, str]:
    """The headers that sign a listed URL's request in (:data:`SIGNED_IN`, :data:`BEARER`)."""
    for suffix in (SIGNED_IN, BEARER):
        if label.endswith(suffix):
            return dict(CREDENTIALS[suffix])
    return {}


def hit(conn: http.client.HTTPConnection, path: str,
        headers: dict[str, str] | None = None) -> tuple[float, int, int]:
    t = time.perf_counter()
    conn.request("GET", path, headers=headers or {})
    resp = conn.getresponse()
    body = resp.read()
    return (time.perf_counter() - t) * 1000, resp.status, len(body)


def conditional_headers(port: int, label: str) -> dict[str, str]:
    """What a poll of ``label`` sends: the current ETag's ``If-None-Match``, or nothing."""
    path, conditional = split(label)
    signed = credentials(label)
    if not conditional:
        return signed
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path, headers=signed)
        resp = conn.getresponse()
        resp.read()
        etag = resp.getheader("ETag")
    finally:
        conn.close()
    return {**signed, "If-None-Match": etag} if etag else signed


Sample = tuple[list[float], set[int], list[int]]


def client_loop(port: int, path: str, headers: dict[str, str], count: int, stop_at: float,
                timeout_s: float) -> Sample:
    """One client: ``count`` requests in a row on one keep-alive connection."""
    lat: list[float] = []
    statuses: set[int] = set()
    sizes: list[int] = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        for _ in range(count):
            if time.monotonic() > stop_at:
                break
            ms, status, size = hit(conn, path, headers)
            lat.append(ms)
            statuses.add(status)
            sizes.append(size)
    except OSError:
        statuses.add(0)
    finally:
        conn.close()
    return lat, statuses, sizes


def in_processes(n: int, run: Callable[[], Sample]) -> list[Sample]:
    """``run()`` in ``n`` forked processes at once; their samples, sent back through pipes.
    (Plain forks: a multiprocessing pool's shutdown hung on a worker stuck in its queue's
    lock.)"""
    children: list[tuple[int, int]] = []
    for _ in range(n):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the client
            os.close(read_end)
            code = 1
            try:
                lat, statuses, sizes = run()
                with os.fdopen(write_end, "w") as out:
                    json.dump([lat, sorted(statuses), sizes], out)
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        children.append((pid, read_end))
    samples: list[Sample] = []
    for pid, read_end in children:
        with os.fdopen(read_end) as got:
            text = got.read()
        os.waitpid(pid, 0)
        if text:
            lat, statuses, sizes = json.loads(text)
            samples.append((lat, set(statuses), sizes))
        else:  # the client died: counted as a failed connection
            samples.append(([], {0}, []))
    return samples


def measure(port: int, label: str, requests: int, clients: int,
            budget_s: float) -> dict[str, Any]:
    """``requests`` requests of ``label`` spread over ``clients`` keep-alive connections
    (each sequential), stopping at ``budget_s``.

    Several clients are as many processes, not threads of this one: a client's time is
    measured from its request to the end of the answer, and sixteen threads of one
    interpreter would add their own wait for its lock (the GIL) to every figure, as if the
    server were slower.  (They still share the machine's cores with the server.)"""
    path, _ = split(label)
    headers = conditional_headers(port, label)
    per_client = max(1, requests // clients)
    timeout_s = max(5.0, budget_s)
    t0 = time.monotonic()
    stop_at = t0 + budget_s
    if clients == 1:
        samples = [client_loop(port, path, headers, per_client, stop_at, timeout_s)]
    else:
        samples = in_processes(clients, lambda: client_loop(port, path, headers, per_client,
                                                            stop_at, timeout_s))
    wall = time.monotonic() - t0
    lat = [ms for one, _, _ in samples for ms in one]
    statuses = {st for _, sts, _ in samples for st in sts}
    sizes = [n for _, _, ns in samples for n in ns]
    return {"done": len(lat), "asked": per_client * clients, "p50": pct(lat, 0.50),
            "p95": pct(lat, 0.95), "p99": pct(lat, 0.99),
            "rps": round(len(lat) / wall, 1) if wall else None,
            "bytes": int(statistics.median(sizes)) if sizes else None,
            "status": sorted(statuses)}


def drain(port: int, limit_s: float = 120.0) -> None:
    """Wait until the server answers ``/healthz`` quickly again: requests abandoned at a
    budget's end are still being served, and must not slow the next URL's figures."""
    deadline = time.monotonic() + limit_s
    quick = 0
    while quick < 3 and time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=limit_s)
            ms, _, _ = hit(conn, "/healthz")
            conn.close()
        except OSError:
            ms = limit_s * 1000
        quick = quick + 1 if ms < 50 else 0
        time.sleep(0.05)


class ServerTimes:
    """Reads the access log written since the last call: server times (ms) of one path."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def take(self, url: str) -> list[float]:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        want = url if "?" in url else url + "?"
        out = []
        for line in data[:end].decode("latin-1").splitlines():
            target, _, micros = line.rpartition(" ")
            if target == want and micros.isdigit():
                out.append(int(micros) / 1000)
        return out


def count_statements(app: Any, paths: list[str],
                     clear: Callable[[], None] | None = None) -> dict[str, int]:
    """Statements one request sends, in this process (same code, same database); ``clear``:
    called before the counted request (``render_time.py --cold``: count a render cache's
    miss)."""
    out: dict[str, int] = {}
    engine = get_db(app).engine
    client = app.test_client()
    for label in paths:
        path, conditional = split(label)
        signed, asker = credentials(label), client_for(app, label, client)
        first = asker.get(path, headers=signed)
        etag = first.headers.get("ETag")
        headers = {**signed, "If-None-Match": etag} if conditional and etag else signed
        seen: list[str] = []
        if clear is not None:
            clear()

        def before(*args: Any, seen: list[str] = seen) -> None:
            seen.append(args[2])

        event.listen(engine, "before_cursor_execute", before)
        try:
            asker.get(path, headers=headers)
        finally:
            event.remove(engine, "before_cursor_execute", before)
        out[label] = len(seen)
        log(f"{label}: {len(seen)} statements")
    return out


UNMEASURED = {
    # Flask's files (CSS, scripts): read from disk, no render, no SQL.
    "static": "a file from arena/static, no render",
    # The operator's Prometheus scrape: needs METRICS_TOKEN, is no page anyone reads, and
    # tests/arena/test_metrics.py counts its statements.
    "metrics.scrape": "the operator's scrape (METRICS_TOKEN), not a page",
}
"""GET endpoints the bench does not measure, and why: every other GET rule of the app is in
:func:`url_list` (tests/bench/test_read_path_urls.py fails otherwise)."""

SIGNED_IN = " [signed in]"
"""A URL listed with this suffix is asked by a browser signed in as the bench's account (its
session cookie, signed with this run's ``SECRET_KEY``)."""
BEARER = " [token]"
"""A URL listed with this suffix is asked with the bench account's API token (``Authorization:
Bearer``, ``bots:read``)."""

CREDENTIALS: dict[str, dict[str, str]] = {SIGNED_IN: {}, BEARER: {}}
"""The headers of :data:`SIGNED_IN` and :data:`BEARER` for this run, set by :func:`fixtures`."""

BENCH_USER = "bench-owner"
BENCH_TOKEN = "bench read path"
WEBHOOK_URL = "http://127.0.0.1:9/bench-webhook"  # never called: nothing here sends deliveries
DELIVERIES = 30
"""The bench webhook's deliveries: more than a page of the account's log and of the API's."""


@dataclass
class Ids:
    """The rows the listed URLs name (the seeded data's, and :func:`fixtures`')."""

    busy: int
    quiet: int
    recent: int
    swiss: int
    knockout: int
    busy_name: str = "bot-00001"
    deep: str = "page=1000"
    challenge: int | None = None
    webhook: int | None = None
    reset: str = ""


def url_list(ids: Ids) -> list[str]:
    """Every page and API endpoint, some twice (the busy bot and a quiet one, a deep page);
    the signed-in ones (:data:`SIGNED_IN`, :data:`BEARER`) when :func:`fixtures` made the
    account."""
    busy, quiet, recent, sw, ko = ids.busy, ids.quiet, ids.recent, ids.swiss, ids.knockout
    out = [
        "/", "/leaderboard", "/leaderboard?page=20", "/leaderboard?q=bot-012",
        "/live", "/api/live", "/bots", "/bots?q=bot-012",
        "/bots?q=nobody-has-this",  # a search with no hit: every name, without the trigrams
        "/matches", "/matches?state=finished", f"/matches?bot={ids.busy_name}",
        f"/bots/{busy}", f"/bots/{quiet}", f"/bots/{busy}/welcome", f"/matches/{recent}",
        f"/matches/{recent}/replay.json", "/tournaments", f"/tournaments/{sw}",
        f"/tournaments/{sw}/live", f"/tournaments/{sw}/live{REVALIDATE}",
        f"/tournaments/{ko}", f"/tournaments/{ko}/live",
        "/tournaments/new", "/bots/new", "/challenges/new", f"/challenges/new?bot={busy}",
        "/docs/api", "/docs/starters", "/account/sign-in", "/account/sign-up",
        "/healthz", "/readyz",
        "/api/bots", "/api/bots?page=100", f"/api/bots/{busy}",
        f"/api/bots/{busy}/versions", f"/api/bots/{busy}/health", f"/api/bots/{busy}/check",
        f"/api/bots/{busy}/ratings", f"/api/bots/{busy}/matches",
        f"/api/bots/{busy}/matches?{ids.deep}", "/api/families", "/api/ratings",
        "/api/ratings?page=100&limit=50", "/api/matches", "/api/matches?state=finished",
        f"/api/matches?bot={busy}", f"/api/matches/{recent}", f"/api/matches/{recent}/log",
        "/api/tournaments", f"/api/tournaments/{sw}", f"/api/tournaments/{sw}/standings",
        f"/api/tournaments/{sw}/bracket", f"/api/tournaments/{ko}/bracket",
        f"/api/tournaments/{sw}/archive", "/api/openapi.json",
    ]
    if ids.challenge is not None:
        out += [f"/challenges/{ids.challenge}", f"/api/challenges/{ids.challenge}"]
    if ids.webhook is not None:
        out += [f"/account{SIGNED_IN}", f"/account/webhooks{SIGNED_IN}",
                f"/bots/{busy}/calls{SIGNED_IN}", f"/account/reset?token={ids.reset}",
                f"/api/account/bots{BEARER}", f"/api/webhooks{BEARER}",
                f"/api/webhooks/{ids.webhook}/deliveries{BEARER}",
                f"/api/bots/{busy}/calls{BEARER}"]
    return out


def endpoint_of(app: Any, label: str) -> str | None:
    """The endpoint a listed URL reaches (None: no rule of this app's, e.g. an older
    checkout's)."""
    from werkzeug.exceptions import HTTPException

    path = split(label)[0].split("?", 1)[0]
    try:
        endpoint, _ = app.url_map.bind("localhost").match(path, "GET")
    except HTTPException:
        return None
    return str(endpoint)


def unmeasured(app: Any, labels: list[str]) -> set[str]:
    """The app's GET endpoints that no listed URL reaches and :data:`UNMEASURED` leaves out."""
    rules = {r.endpoint for r in app.url_map.iter_rules() if "GET" in (r.methods or set())}
    return rules - {endpoint_of(app, u) for u in labels} - set(UNMEASURED)


def urls(app: Any, tids: dict[str, int], bots: int, matches: int) -> list[str]:
    """:func:`url_list` with the seeded database's ids (and :func:`fixtures`' rows, made if
    missing), keeping the URLs this checkout routes.  The deep page of the busy bot's
    matches: keyset cursor where the code has one, ``page=1000`` where it has not."""
    from arena.core.models import Bot, MatchSeat

    ids = Ids(busy=1, quiet=bots // 2 + 1, recent=matches, swiss=tids["swiss"],
              knockout=tids["knockout"])
    with get_db(app).begin() as s:
        ids.busy_name = str(s.scalar(select(Bot.name).where(Bot.id == ids.busy)))
    try:
        here = Path(arena.__file__).parent
        if not any((here / where / "pagination.py").exists() for where in (".", "web")):
            raise ImportError("no keyset pagination in this checkout")  # (an editable
        from arena.web.pagination import encode_cursor  # install could find another one)

        with get_db(app).begin() as s:
            mid = s.scalar(select(MatchSeat.match_id).where(MatchSeat.bot_id == ids.busy)
                           .order_by(MatchSeat.match_id.desc()).offset(50 * 999).limit(1))
        ids.deep = f"cursor={encode_cursor('bot-matches', int(mid or 1) + 1)}"
    except ImportError:
        pass
    fixtures(app, ids)
    return [u for u in url_list(ids) if endpoint_of(app, u) is not None]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0,
                    help="fraction of 10,000 bots / 1,000,000 matches (0.1: 1k / 100k)")
    ap.add_argument("--bots", type=int, help="bots to seed (instead of the scale's)")
    ap.add_argument("--matches", type=int, help="matches to seed (instead of the scale's)")
    ap.add_argument("--requests", type=int, default=60, help="per URL and mode")
    ap.add_argument("--clients", type=int, default=16, help="concurrent clients")
    ap.add_argument("--budget-s", type=float, default=30.0, help="per URL and mode")
    ap.add_argument("--one-only", action="store_true",
                    help="only the requests one at a time (no concurrent clients)")
    ap.add_argument("--keep", action="store_true", help="keep the database")
    ap.add_argument("--reuse", metavar="DATABASE",
                    help="measure a database seeded (and kept) by an earlier run instead of "
                         "seeding one; it is kept")
    ap.add_argument("--seed-only", action="store_true",
                    help="seed (and keep) the database, print its name and stop: later runs "
                         "measure it with --reuse, the seeding paid once")
    ap.add_argument("--only", metavar="SUBSTRING", action="append",
                    help="measure only the URLs containing this (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up (finally) on TERM
    bots = max(ENTRANTS, int(FULL_BOTS * args.scale))
    matches = max(1000, int(FULL_MATCHES * args.scale))
    bots, matches = args.bots or bots, args.matches or matches  # 100k / 10M: --scale 10
    admin = admin_url()
    name = args.reuse or f"arena_bench_{os.getpid()}"
    base = admin.rsplit("/", 1)[0]
    pg_url = f"{base}/{name}"
    sa_url = "postgresql+psycopg://" + pg_url.split("://", 1)[1]
    if not args.reuse:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    instance = Path(f"/tmp/{name}")
    secret = secrets.token_hex(32)  # placeholder secrets stop the service from starting
    env = {**os.environ, "DATABASE_URL": sa_url, "SECRET_KEY": secret,
           "RATE_LIMITS_ENABLED": "0",  # every request comes from 127.0.0.1: measure the
           # read path, not the per-client limits
           "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13"),
           "QUEUE_NAME": f"bench-read-{uuid.uuid4().hex[:8]}",
           "ARENA_INSTANCE_PATH": str(instance), "WORKER_CLOCK": "0"}
    gunicorn: subprocess.Popen[bytes] | None = None
    report: dict[str, Any] = {"code": str(Path(arena.__file__).resolve().parent),
                              "bots": bots, "matches": matches}
    try:
        app = create_app({"DATABASE_URL": sa_url, "SECRET_KEY": secret,
                          "RATE_LIMITS_ENABLED": False,
                          "READ_CACHE_S": 0,  # count the statements of a render, not a hit
                          "REDIS_URL": env["REDIS_URL"], "QUEUE_NAME": env["QUEUE_NAME"],
                          "INSTANCE_PATH": str(instance)})
        if args.reuse:
            with psycopg.connect(pg_url) as conn:
                bots = int(conn.execute("SELECT count(*) FROM bots").fetchone()[0])  # type: ignore[index]
                matches = int(conn.execute(  # type: ignore[index]
                    "SELECT count(*) FROM matches WHERE kind = 'ladder'").fetchone()[0])
                tids = {f: int(i) for f, i in conn.execute(
                    "SELECT format, min(id) FROM tournaments GROUP BY format")}
                # Seeds made before every bot's first check was its submission's: without
                # one, /api/bots/<id>/check measured its 404.
                conn.execute("UPDATE health_checks SET purpose = 'submit' "
                             "WHERE id <= %s AND purpose = 'sweep'", (bots,))
            report.update({"bots": bots, "matches": matches, "seed_s": {"total": "reused"}})
        else:
            upgrade(get_db(app))
            log(f"seeding {bots} bots and {matches} matches into {name} ({report['code']})")
            report["seed_s"] = seed(pg_url, bots, matches)
            t0 = time.monotonic()
            tids = make_tournaments(app, pg_url)
            report["tournaments_s"] = round(time.monotonic() - t0, 1)
        if args.seed_only:
            args.keep = True
            log(f"seeded and kept {name}: measure it with --reuse {name}")
            return 0
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
            report["database_bytes"] = conn.execute(
                "SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
        paths = urls(app, tids, bots, matches)
        if args.only:
            paths = [p for p in paths if any(o in p for o in args.only)]
        log("counting statements per request")
        statements = count_statements(app, paths)
        get_db(app).dispose()
        port = free_port()
        access_log = instance / "bench-access.log"
        instance.mkdir(parents=True, exist_ok=True)
        access_log.write_bytes(b"")
        gunicorn = start_gunicorn(env, port, access_log)
        server = ServerTimes(access_log)
        rows = []
        for label in paths:
            path, _ = split(label)
            warm = http.client.HTTPConnection("127.0.0.1", port, timeout=args.budget_s + 30)
            with contextlib.suppress(OSError):
                hit(warm, path, credentials(label))
            warm.close()
            drain(port)
            server.take(path)
            one = measure(port, label, args.requests, 1, args.budget_s)
            one["server_p50"], one["server_p95"] = (pct(times := server.take(path), 0.5),
                                                    pct(times, 0.95))
            if args.one_only:
                many = {"done": 0, "asked": 0, "p50": None, "p95": None, "p99": None,
                        "rps": None, "bytes": None, "status": one["status"],
                        "server_p50": None, "server_p95": None}
            else:
                drain(port)
                server.take(path)
                many = measure(port, label, args.requests * 2, args.clients, args.budget_s)
                time.sleep(0.5)  # the log's last lines
                many["server_p50"], many["server_p95"] = (
                    pct(times := server.take(path), 0.5), pct(times, 0.95))
            row = {"path": label, "statements": statements.get(label), "one": one,
                   "concurrent": many}
            rows.append(row)
            log(f"{label}: one p50 {one['p50']} p95 {one['p95']} ms; {args.clients} clients "
                f"p95 {many['p95']} ms; {statements.get(label)} statements")
        report["rows"] = rows
    finally:
        if gunicorn is not None:
            os.killpg(gunicorn.pid, signal.SIGTERM)
            try:
                gunicorn.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(gunicorn.pid, signal.SIGKILL)
        if not args.keep and not args.reuse:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        try:
            from redis import Redis

            Redis.from_url(env["REDIS_URL"]).delete(
                f"{os.environ['REDIS_NAMESPACE']}:rq:queue:{env['QUEUE_NAME']}")
        except Exception:
            pass
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"code: {report['code']}  bots: {bots}  matches: {matches}  "
          f"seed: {report['seed_s'].get('total')} s  database: "
          f"{report['database_bytes'] / 2**30:.2f} GiB")
    head = (f"{'path':58} {'stmts':>5} {'bytes':>8} | {'p50':>7} {'p95':>7} {'p99':>7} "
            f"{'srv95':>7} | {args.clients}x: {'p50':>7} {'p95':>7} {'p99':>7} {'srv50':>7} "
            f"{'srv95':>7} {'rps':>6} done")
    print(head)
    print("-" * len(head))
    fmt: Callable[[Any], str] = lambda v: "-" if v is None else str(v)  # noqa: E731
    for r in report["rows"]:
        o, c = r["one"], r["concurrent"]
        print(f"{r['path'][:58]:58} {fmt(r['statements']):>5} {fmt(o['bytes']):>8} | "
              f"{fmt(o['p50']):>7} {fmt(o['p95']):>7} {fmt(o['p99']):>7} "
              f"{fmt(o['server_p95']):>7} | "
              f"{'':4}{fmt(c['p50']):>7} {fmt(c['p95']):>7} {fmt(c['p99']):>7} "
              f"{fmt(c['server_p50']):>7} {fmt(c['server_p95']):>7} "
              f"{fmt(c['rps']):>6} {c['done']}/{c['asked']}"
              + ("" if o["status"] == c["status"] == [304 if split(r["path"])[1] else 200]
                 else f"  status {o['status']} {c['status']}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
