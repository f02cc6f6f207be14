"""Tournaments as plain data: the JSON of the API and the context of the web pages.

One shape for both, so the page a spectator sees and the JSON a script reads never disagree.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zipfile
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..models import Bot, Match, MatchResult
from .models import Tournament, TournamentEntrant, TournamentMatch, TournamentRound
from .schedule import knockout_sizes
from .scoring import TIE_BREAKS
from .service import compute_standings, seed_map, table_lines


def iso(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def bot_names(s: Session, t: Tournament) -> dict[int, str]:
    rows = s.execute(select(Bot.id, Bot.name).join(
        TournamentEntrant, TournamentEntrant.bot_id == Bot.id)
        .where(TournamentEntrant.tournament_id == t.id)).all()
    return dict(rows)


def progress(s: Session, t: Tournament) -> dict[str, int]:
    rows = s.execute(
        select(Match.state, func.count()).join(TournamentMatch,
                                               TournamentMatch.match_id == Match.id)
        .where(TournamentMatch.tournament_id == t.id).group_by(Match.state)).all()
    counts = dict(rows)
    return {k: int(counts.get(k, 0)) for k in ("queued", "running", "finished", "failed")}


def live_tag(s: Session, t: Tournament) -> str:
    """Changes whenever anything a spectator sees changes (a match starts or finishes, a
    round opens or closes)."""
    p = progress(s, t)
    return f'"t{t.id}-v{t.version}-{p["queued"]}-{p["running"]}-{p["finished"]}-{p["failed"]}"'


def tournament_json(s: Session, t: Tournament) -> dict[str, Any]:
    names = bot_names(s, t)
    entrants = sorted(t.entrants, key=lambda e: (e.seed or 10**6, e.bot_id))
    return {
        "id": t.id,
        "name": t.name,
        "format": t.format,
        "state": t.state,
        "ruleset": t.ruleset,
        "family": t.family,
        "seats": t.seats,
        "deals": t.deals,
        "duplicate": t.duplicate,
        "advance": t.advance if t.format == "knockout" else None,
        "rounds": t.rounds,
        "cycles": t.cycles if t.format == "round_robin" else None,
        "rated": t.rated,
        "seed": t.seed,
        "limits": t.limits,
        "current_round": t.current_round,
        "version": t.version,
        "created_at": iso(t.created_at),
        "started_at": iso(t.started_at),
        "finished_at": iso(t.finished_at),
        "progress": progress(s, t),
        "entrants": [{"bot": {"id": e.bot_id, "name": names.get(e.bot_id, "?")},
                      "seed": e.seed,
                      "rating": None if e.rating is None else round(e.rating, 1)}
                     for e in entrants],
    }


def standings_json(s: Session, t: Tournament) -> dict[str, Any]:
    names = bot_names(s, t)
    rows = compute_standings(s, t)
    items = []
    for r in rows:
        d = r.to_json()
        d["bot"] = {"id": r.bot, "name": names.get(r.bot, "?")}
        items.append(d)
    keys = (["round reached", "place in that round", "score", "seed"]
            if t.format == "knockout" else TIE_BREAKS)
    return {"tournament": t.id, "format": t.format, "state": t.state, "final": t.state ==
            "finished", "order": keys, "items": items}


def bracket_json(s: Session, t: Tournament) -> dict[str, Any]:
    """Every round with its tables, their seats, matches and (once done) results."""
    names = bot_names(s, t)
    seeds = seed_map(s, t)
    rounds = s.scalars(select(TournamentRound).where(TournamentRound.tournament_id == t.id)
                       .order_by(TournamentRound.number)).all()
    out_rounds = []

    def bot(b: int) -> dict[str, Any]:
        return {"id": b, "name": names.get(b, "?"), "seed": seeds.get(b)}

    for rnd in rounds:
        advanced = set(rnd.advanced["bots"]) if rnd.advanced else set()
        tables = []
        for table in rnd.tables:
            matches = [{"id": link.match_id, "rotation": link.rotation,
                        "state": link.match.state} for link in table.links]
            if table.result is not None:
                lines = table.result["lines"]
            elif any(m["state"] == "finished" for m in matches):
                lines = [x.to_json() for x in table_lines(s, t, table, seeds)]  # partial
            else:
                lines = None
            result = None
            if lines is not None:
                result = [{**x, "bot": bot(x["bot"]), "advanced": x["bot"] in advanced}
                          for x in lines]
            tables.append({
                "number": table.number,
                "state": table.state,
                "seats": [bot(b) for b in table.bots["bots"]],
                "matches": matches,
                "result": result,
                "final": table.state == "done",
            })
        out_rounds.append({
            "number": rnd.number,
            "state": rnd.state,
            "byes": [bot(b) for b in rnd.byes["bots"]],
            "target": rnd.target,
            "advanced": [bot(b) for b in rnd.advanced["bots"]] if rnd.advanced else None,
            "tables": tables,
        })
    planned: list[int] | None = None
    if t.format == "knockout":
        planned = knockout_sizes(len(seeds), t.seats, t.advance)
    return {"tournament": t.id, "format": t.format, "state": t.state, "seats": t.seats,
            "current_round": t.current_round, "rounds_planned": t.rounds,
            "round_sizes": planned, "rounds": out_rounds}


# --- the archive -----------------------------------------------------------------------------

CSV_FIELDS = ["rank", "bot_id", "bot", "seed", "points", "score", "buchholz", "wins",
              "strikes", "tables", "byes", "firsts"]


def standings_csv(doc: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for x in doc["items"]:
        w.writerow([x["rank"], x["bot"]["id"], x["bot"]["name"], x["seed"], x["points"],
                    x["score"], x["buchholz"], x["wins"], x["strikes"], x["tables"],
                    x["byes"], x["firsts"]])
    return buf.getvalue()


def archive(s: Session, t: Tournament) -> bytes:
    """A zip of every finished match's log (``logs/match-<id>.json``) plus the standings as
    CSV and JSON, the bracket and the tournament itself as JSON."""
    buf = io.BytesIO()
    standings = standings_json(s, t)
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        prefix = f"tournament-{t.id}/"
        z.writestr(prefix + "tournament.json", json.dumps(tournament_json(s, t), indent=1))
        z.writestr(prefix + "standings.json", json.dumps(standings, indent=1))
        z.writestr(prefix + "standings.csv", standings_csv(standings))
        z.writestr(prefix + "bracket.json", json.dumps(bracket_json(s, t), indent=1))
        rows = s.execute(
            select(MatchResult.match_id, MatchResult.log_gz)
            .join(TournamentMatch, TournamentMatch.match_id == MatchResult.match_id)
            .where(TournamentMatch.tournament_id == t.id).order_by(MatchResult.match_id)
        ).all()
        for match_id, log_gz in rows:
            z.writestr(f"{prefix}logs/match-{match_id}.json", gzip.decompress(log_gz))
    return buf.getvalue()
