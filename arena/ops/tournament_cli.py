"""``arena tournament ...``: create, start, advance, watch and archive tournaments.

    arena tournament create --format knockout --bot a --bot b ... [--duplicate] [--start]
    arena tournament start ID        seed by Elo, schedule, open round 1
    arena tournament advance ID      run the idempotent advance step (all running: no ID)
    arena tournament show ID         standings and the current round, as text (--json)
    arena tournament archive ID OUT  every log + standings (CSV, JSON) in one zip
    arena tournament list
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from flask import Flask
from sqlalchemy import select

from arena.core.models import MAX_ID, Bot
from arena.core.storage import get_db
from arena.core.tournament_models import FORMATS, Tournament
from arena.tournaments import service
from arena.tournaments.present import archive, bracket_json, standings_json, tournament_json
from referee.runner.match import Limits


def _app() -> Flask:
    from .cli_app import command_app

    return command_app()


def standings_text(doc: dict[str, object], width: int = 24) -> str:
    items = doc["items"]
    assert isinstance(items, list)
    lines = [f"{'rank':>4}  {'bot':<{width}} {'points':>6} {'score':>8} {'wins':>5} "
             f"{'strikes':>7}"]
    for x in items:
        lines.append(f"{x['rank']:>4}  {x['bot']['name'][:width]:<{width}} {x['points']:>6g} "
                     f"{x['score']:>8.1f} {x['wins']:>5} {x['strikes']:>7}")
    return "\n".join(lines)


@click.group(help="Tournaments: create, start, advance, show, archive.")
def tournament() -> None:
    pass


@tournament.command("create")
@click.option("--name", default="", help="display name")
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True)
@click.option("--ruleset", default=None, help="preset (default MATCH_RULESET)")
@click.option("--bot", "bots", multiple=True, required=True, help="entrant: bot name or id")
@click.option("--deals", type=int, default=None, help="deals per match")
@click.option("--duplicate/--no-duplicate", default=False)
@click.option("--advance", type=int, default=None,
              help="knockout: players per table who go through (default: half the seats)")
@click.option("--rounds", type=int, default=None, help="Swiss rounds / fixed RR rounds")
@click.option("--cycles", type=int, default=1, show_default=True,
              help="round robin: times every pair meets")
@click.option("--deadline-ms", type=int, default=None)
@click.option("--time-bank-ms", type=int, default=None)
@click.option("--unrated", is_flag=True)
@click.option("--seed", type=int, default=None)
@click.option("--start", "start_now", is_flag=True, help="start at once")
def create(name: str, fmt: str, ruleset: str | None, bots: tuple[str, ...], deals: int | None,
           duplicate: bool, advance: int | None, rounds: int | None, cycles: int,
           deadline_ms: int | None, time_bank_ms: int | None, unrated: bool,
           seed: int | None, start_now: bool) -> None:
    """Create a tournament (and with --start, start it)."""
    app = _app()
    cfg = app.config
    limits = Limits(
        deadline_ms=deadline_ms or int(cfg["MATCH_DEADLINE_MS"]),
        time_bank_ms=time_bank_ms if time_bank_ms is not None
        else int(cfg["MATCH_TIME_BANK_MS"]),
        max_strikes=int(cfg["MATCH_MAX_STRIKES"]),
        call_deadline_ms=int(cfg["MATCH_CALL_DEADLINE_MS"]),
    )
    with get_db(app).begin() as s:
        entrants = []
        for ref in bots:
            numbered = ref.isascii() and ref.isdigit()
            bot = (None if int(ref) > MAX_ID else s.get(Bot, int(ref))) if numbered else \
                s.scalars(select(Bot).where(Bot.name == ref)).first()
            if bot is None or bot.deleted_at is not None:
                raise click.ClickException(f"no bot {ref!r}")
            entrants.append(bot)
        try:
            t = service.create_tournament(
                s, name=name or f"{fmt.replace('_', ' ').title()} tournament", format=fmt,
                ruleset=ruleset or str(cfg["MATCH_RULESET"]), bots=entrants,
                deals=deals or int(cfg["MATCH_DEALS"]), limits=limits, duplicate=duplicate,
                advance=advance, rounds=rounds, cycles=cycles, rated=not unrated, seed=seed)
        except service.TournamentError as exc:
            raise click.ClickException(str(exc)) from None
        tid = t.id
    click.echo(f"created tournament {tid}")
    if start_now:
        click.echo(str(service.start(app, tid)))


@tournament.command("start")
@click.argument("tournament_id", type=int)
def start(tournament_id: int) -> None:
    """Seed the entrants by Elo, schedule, and open the first round."""
    try:
        click.echo(str(service.start(_app(), tournament_id)))
    except service.TournamentError as exc:
        raise click.ClickException(str(exc)) from None


@tournament.command("advance")
@click.argument("tournament_id", type=int, required=False)
def advance(tournament_id: int | None) -> None:
    """Run the advance step (idempotent) for one tournament, or every running one."""
    app = _app()
    if tournament_id is None:
        click.echo(f"advanced {service.advance_all(app)}")
    else:
        click.echo(str(service.advance(app, tournament_id)))


@tournament.command("show")
@click.argument("tournament_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="tournament, standings and bracket")
def show(tournament_id: int, as_json: bool) -> None:
    """Standings and progress of a tournament."""
    app = _app()
    with get_db(app).begin() as s:
        t = s.get(Tournament, tournament_id)
        if t is None:
            raise click.ClickException(f"no tournament {tournament_id}")
        if as_json:
            click.echo(json.dumps({"tournament": tournament_json(s, t),
                                   "standings": standings_json(s, t),
                                   "bracket": bracket_json(s, t)}, indent=1))
            return
        info = tournament_json(s, t)
        p = info["progress"]
        click.echo(f"#{t.id} {t.name}: {t.format.replace('_', ' ')}, {t.ruleset}, "
                   f"{'duplicate, ' if t.duplicate else ''}{t.state}, round "
                   f"{t.current_round}/{t.rounds or '?'}; matches: {p['finished']} finished, "
                   f"{p['running']} running, {p['queued']} queued, {p['failed']} failed")
        click.echo(standings_text(standings_json(s, t)))


@tournament.command("list")
def list_() -> None:
    """Every tournament, newest first."""
    app = _app()
    with get_db(app).begin() as s:
        for t in s.scalars(select(Tournament).order_by(Tournament.id.desc())):
            click.echo(f"#{t.id:<4} {t.state:<9} {t.format:<11} {t.ruleset:<12} {t.name}")


@tournament.command("archive")
@click.argument("tournament_id", type=int)
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
def archive_cmd(tournament_id: int, out: Path) -> None:
    """Write every match log plus the standings (CSV and JSON) as one zip."""
    app = _app()
    with get_db(app).begin() as s:
        t = s.get(Tournament, tournament_id)
        if t is None:
            raise click.ClickException(f"no tournament {tournament_id}")
        data = archive(s, t)
    out.write_bytes(data)
    click.echo(f"wrote {out} ({len(data)} bytes)", file=sys.stderr)
