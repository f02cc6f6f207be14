"""How fast do ladder ratings find the true order, plain vs duplicate sets?

    python bench/rating_luck.py                 # the default run: 4 seeds a scheme, 2 processes
    python bench/rating_luck.py --json --seeds 6 --matches 1600 --jobs 2

A field of 16 bots of known, graded strength: bot ``i`` (0 best) plays a uniformly random legal
move with probability ``p_i = i / 15`` and the greedy sample bot's move otherwise, so bot 0 is
the greedy bot and bot 15 the random one; the true order is by ``p``.  They play the *real*
ladder: an app from ``create_app`` on a scratch SQLite file, its matches made by the ladder's
own pairing (:func:`arena.play.ladder.create_round`, what the clock's round runs before it
enqueues), each claimed and finished by the worker's own functions
(:func:`arena.jobs.bodies.claim`, :func:`arena.jobs.bodies.finish`, which apply the ratings
under the family lock, duplicate sets included).  Only the seats' players differ from a worker:
in-process functions (``LocalPlayer``) instead of HTTP bots, so no network and no servers.

Both schemes count *matches* (each ``--deals`` deals): a duplicate set of four rotations is
four matches.  After every ladder round the leaderboard (the ``ratings`` rows) is compared
with the true order by Kendall's tau.  Figures per scheme, averaged over ``--seeds`` runs:

* ``matches_to_tau``: matches played until tau first reached ``--tau`` (0.9), and
  ``matches_to_hold``: until it reached it for good (never below again in the run); a run
  that never got there counts as ``--matches`` (and is reported in ``never``);
* ``tau_final`` and, over the last half of each run, ``tau_late_mean``;
* ``rating_sd``: the rating error, the standard deviation of a bot's final rating across the
  seeds (the luck left in a rating), averaged over bots;
* ``interval_coverage``: how often one run's final 95% interval
  (:func:`arena.play.uncertainty.interval`) holds the bot's *settled* rating (its mean over the
  second half of every run of the scheme), a check that the interval is honest;
* ``cpu_s_per_match``: CPU seconds a match costs (ladder, referee, finish), whatever the load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flask import Flask
from sqlalchemy import select

from arena import create_app
from arena.core.models import Bot, BotVersion, Match, MatchSeat, Rating
from arena.core.storage import get_db, upgrade
from arena.jobs.bodies import claim, finish
from arena.play import reseed
from arena.play.ladder import create_round
from arena.play.uncertainty import interval
from referee import find_ruleset
from referee.runner.match import Limits, run_match
from referee.wire.players import LocalPlayer, Player
from sample_bots import greedy_bot, random_bot

FIELD = 16
LIMITS = Limits(deadline_ms=5000, time_bank_ms=60_000, max_strikes=None, call_deadline_ms=5000)


def handicapped(p: float, seed: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The greedy bot's move, or with probability ``p`` a random legal one."""
    rng = random.Random(seed)
    random_choose = random_bot.make_choose(seed)

    def move(request: dict[str, Any]) -> dict[str, Any]:
        got = random_choose(request) if rng.random() < p else greedy_bot.choose(request)
        return {"move": got[0] if isinstance(got, tuple) else got}

    return move


def kendall_tau(order: Sequence[int], truth: Sequence[int]) -> float:
    pos = {b: i for i, b in enumerate(order)}
    true_pos = {b: i for i, b in enumerate(truth)}
    n = len(truth)
    concordant = discordant = 0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = truth[i], truth[j]
            same = (pos[a] - pos[b]) * (true_pos[a] - true_pos[b])
            concordant += same > 0
            discordant += same < 0
    return (concordant - discordant) / (n * (n - 1) / 2)


def make_app(folder: str, scheme: str, deals: int) -> tuple[Flask, list[int]]:
    app = create_app({
        "INSTANCE_PATH": folder,
        "DATABASE_URL": f"sqlite:///{folder}/bench.sqlite3",
        "SECRET_KEY": "bench-pepper-0123456789abcdefghijklmnop",
        "ADMIN_TOKEN": "bench-admin-token-0123456789abcdef",
        "LADDER_FORMAT": scheme,
        "LADDER_DEALS": deals,
        "LADDER_MAX_MATCHES_PER_ROUND": FIELD,
        "LADDER_RULESETS": "standard",
        "HEALTH_PAUSE_FAULT_RATE": 1.0,
    })
    upgrade(get_db(app))
    ids = []
    with get_db(app).begin() as s:
        for i in range(FIELD):
            url = f"http://127.0.0.1:{10_000 + i}/"
            b = Bot(name=f"p{i:02d}", url=url, token_hash="0" * 64, check_state="passed",
                    endpoint=url)
            s.add(b)
            s.flush()
            s.add(BotVersion(bot_id=b.id, version=1, url=url))
            ids.append(b.id)
    return app, ids


def play_one(app: Flask, match_id: int, strength: dict[int, float], seed: int) -> None:
    """What a worker does with a match, with in-process players: claim, play, finish."""
    token = uuid.uuid4().hex
    assert claim(app, match_id, token) == "claimed"
    with get_db(app).begin() as s:
        match = s.get(Match, match_id)
        assert match is not None
        bots = list(s.scalars(select(MatchSeat.bot_id).where(MatchSeat.match_id == match_id)
                              .order_by(MatchSeat.seat)))
        rules = find_ruleset(match.ruleset)
        dealt = reseed.dealt_seed(s, match, match.attempts)
        deals = match.deals
    players: list[Player] = [LocalPlayer(handicapped(strength[b], seed * 131 + i),
                                         name=f"bot:{b}") for i, b in enumerate(bots)]
    record = run_match(rules, players, dealt, deals, LIMITS)
    assert finish(app, match_id, token, record) == "finished"


def run(job: tuple[str, int, int, int, float]) -> dict[str, Any]:
    scheme, seed, matches, deals, _tau = job
    t0, cpu0 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as folder:
        app, ids = make_app(folder, scheme, deals)
        strength = {b: i / (FIELD - 1) for i, b in enumerate(ids)}
        truth = list(ids)
        rng = random.Random(seed)
        played = 0
        curve: list[tuple[int, float]] = []
        late_sum = dict.fromkeys(range(FIELD), 0.0)
        late_n = 0
        while played < matches:
            created = create_round(app, seed=rng.getrandbits(32))
            assert created, "the ladder made no table"
            for m in created:
                play_one(app, m, strength, rng.getrandbits(32))
            played += len(created)
            with get_db(app).begin() as s:
                rows = {r.bot_id: r for r in s.scalars(select(Rating))}
            ratings = {b: rows[b].rating if b in rows else 1500.0 for b in ids}
            order = sorted(ids, key=lambda b: (-ratings[b], b))
            curve.append((played, kendall_tau(order, truth)))
            if played >= matches / 2:
                late_n += 1
                for i, b in enumerate(ids):
                    late_sum[i] += ratings[b]
        final = {i: (rows[b].rating, rows[b].games) for i, b in enumerate(ids)}
        get_db(app).dispose()
    return {"scheme": scheme, "seed": seed, "curve": curve, "final": final,
            "settled": {i: v / max(1, late_n) for i, v in late_sum.items()},
            "elapsed_s": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0}


def summarise(results: list[dict[str, Any]], scheme: str, matches: int, tau_goal: float,
              k: float) -> dict[str, Any]:
    runs = [r for r in results if r["scheme"] == scheme]
    reach, hold, never = [], [], 0
    for r in runs:
        curve = r["curve"]
        first = next((m for m, t in curve if t >= tau_goal), None)
        never += first is None
        reach.append(first if first is not None else matches)
        held = matches
        for m, t in reversed(curve):
            if t < tau_goal:
                break
            held = m
        hold.append(held)
    finals = [r["final"] for r in runs]
    sds, covered, total = [], 0, 0
    for i in range(FIELD):
        values = [f[i][0] for f in finals]
        if len(values) > 1:
            sds.append(statistics.stdev(values))
        # The bot's settled rating: its mean over the second half of every run.
        mean = statistics.fmean(r["settled"][i] for r in runs)
        for f in finals:
            lo, hi = interval(f[i][0], f[i][1], k=k, seats=4,
                              scheme=scheme)
            covered += lo <= mean <= hi
            total += 1
    late = [statistics.fmean(t for m, t in r["curve"] if m >= matches / 2) for r in runs]
    return {
        "runs": len(runs),
        "matches_to_tau": round(statistics.fmean(reach), 1),
        "matches_to_tau_each": reach,
        "matches_to_hold": round(statistics.fmean(hold), 1),
        "never": never,
        "tau_final": round(statistics.fmean(r["curve"][-1][1] for r in runs), 3),
        "tau_late_mean": round(statistics.fmean(late), 3),
        "rating_sd": round(statistics.fmean(sds), 1) if sds else None,
        "interval_coverage": round(covered / total, 3) if total else None,
        "elapsed_s": round(sum(r["elapsed_s"] for r in runs), 1),
        "cpu_s_per_match": round(sum(r["cpu_s"] for r in runs) / (len(runs) * matches), 4),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=4, help="runs per scheme (default 4)")
    ap.add_argument("--matches", type=int, default=800,
                    help="matches per run (default 800)")
    ap.add_argument("--deals", type=int, default=4, help="deals per match (LADDER_DEALS)")
    ap.add_argument("--tau", type=float, default=0.9, help="Kendall tau to reach")
    ap.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    ap.add_argument("--schemes", default="plain,duplicate")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    schemes = [x.strip() for x in args.schemes.split(",") if x.strip()]
    work = [(scheme, 1000 + i, args.matches, args.deals, args.tau)
            for i in range(args.seeds) for scheme in schemes]
    t0 = time.perf_counter()
    if args.jobs > 1:
        with multiprocessing.Pool(args.jobs) as pool:
            results = pool.map(run, work, chunksize=1)
    else:
        results = [run(w) for w in work]
    k = 32.0
    out: dict[str, Any] = {
        "field": FIELD, "matches": args.matches, "deals": args.deals, "tau": args.tau,
        "seeds": args.seeds, "wall_s": round(time.perf_counter() - t0, 1),
        "schemes": {s: summarise(results, s, args.matches, args.tau, k) for s in schemes},
    }
    if "plain" in out["schemes"] and "duplicate" in out["schemes"]:
        p, d = out["schemes"]["plain"], out["schemes"]["duplicate"]
        out["duplicate_over_plain"] = round(d["matches_to_tau"] / p["matches_to_tau"], 3)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for s, f in out["schemes"].items():
            print(f"{s:10s} matches to tau>={args.tau}: {f['matches_to_tau']:7.1f} "
                  f"(each {f['matches_to_tau_each']}, held {f['matches_to_hold']}) "
                  f"tau final {f['tau_final']} late {f['tau_late_mean']} "
                  f"rating sd {f['rating_sd']} coverage {f['interval_coverage']} "
                  f"cpu/match {f['cpu_s_per_match']} s")
        if "duplicate_over_plain" in out:
            print(f"duplicate / plain matches: {out['duplicate_over_plain']}")
        print(f"wall {out['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
