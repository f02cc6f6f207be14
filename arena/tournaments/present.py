"""Tournaments as plain data: the JSON of the API and the context of the web pages.

One shape for both, so the page a spectator sees and the JSON a script reads never disagree.

Every function here reads a fixed number of statements whatever the number of entrants,
rounds, tables and matches: rounds come with their tables, links and matches eagerly loaded
(:func:`load_rounds`), and the seats of unfinished tables' matches in one query
(:func:`seats_by_match`).  The web pages show one round at a time, its tables paginated
(``TOURNAMENT_PAGE_TABLES``), so a 256-entrant page stays small; the JSON API gives the
whole bracket.
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Integer, Select, bindparam, func, select
from sqlalchemy.orm import Session

from arena.core.idlists import among_bound
from arena.core.jsontext import indented_json
from arena.core.models import Bot, Match, MatchResult, MatchSeat
from arena.core.tournament_models import (
    Tournament,
    TournamentEntrant,
    TournamentMatch,
    TournamentRound,
    TournamentTable,
)
from arena.core.zipwriter import ZipWriter
from arena.play import deal_secrecy
from referee.wire.text import stored_json_bytes

from .schedule import knockout_sizes
from .scoring import TIE_BREAKS
from .service import compute_standings, entrant_seed, table_lines


def iso(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


@functools.cache
def _entrants_statement() -> Select[*tuple[Any, ...]]:
    """:func:`entrants`' statement, built once (the tournament bound at execution: ``t``)."""
    return (select(TournamentEntrant.bot_id, TournamentEntrant.seed, Bot.name)
            .outerjoin(Bot, Bot.id == TournamentEntrant.bot_id)
            .where(TournamentEntrant.tournament_id == bindparam("t", type_=Integer)))


def entrants(s: Session, t: Tournament) -> tuple[dict[int, str], dict[int, int]]:
    """The entrants' names and their seeds (:func:`arena.tournaments.service.seed_map`'s,
    an unseeded entrant after every seeded one) in one statement: the bracket and the
    standings read both, and read them as two statements before."""
    names: dict[int, str] = {}
    seeds: dict[int, int] = {}
    for bot_id, seed, name in s.execute(_entrants_statement(), {"t": t.id}):
        seeds[bot_id] = entrant_seed(bot_id, seed)
        if name is not None:
            names[bot_id] = name
    return names, seeds


class BotCards(dict[int, dict[str, Any]]):
    """A bot as the bracket shows it (``id``, ``name``, ``seed``), one dict per bot shared by
    every place it is shown (a 256-bot Swiss bracket shows each bot about 70 times), made
    for every entrant up front so that each place is a plain lookup, ``cards[bot]``; a bot
    that is not an entrant is made on first use, named ``?`` with no seed."""

    def __init__(self, names: dict[int, str], seeds: dict[int, int]) -> None:
        super().__init__({b: {"id": b, "name": names.get(b, "?"), "seed": seed}
                          for b, seed in seeds.items()})
        self._names = names

    def __missing__(self, bot: int) -> dict[str, Any]:
        card = self[bot] = {"id": bot, "name": self._names.get(bot, "?"), "seed": None}
        return card


@dataclass(slots=True)
class MatchState:
    """What the bracket shows of a table's match.

    This and the views below are read, never changed, but not ``frozen``: a frozen
    dataclass sets each field through ``object.__setattr__`` (1.9 µs an object against
    0.25), and a 256-entrant bracket builds about 400 of them per render."""

    id: int
    state: str


@dataclass(slots=True)
class LinkView:
    """A table's match (a ``TournamentMatch`` with its match's state), as columns."""

    match_id: int
    rotation: int
    match: MatchState


@dataclass(slots=True)
class TableView:
    """A ``TournamentTable`` as the bracket reads it, with its links in rotation order."""

    id: int
    number: int
    state: str
    bots: dict[str, Any]
    result: dict[str, Any] | None
    links: list[LinkView] = field(default_factory=list)


@dataclass(slots=True)
class RoundView:
    """A ``TournamentRound`` as the bracket reads it, with its tables in number order."""

    id: int
    number: int
    state: str
    byes: dict[str, Any]
    target: int | None
    advanced: dict[str, Any] | None
    tables: list[TableView] = field(default_factory=list)


@dataclass(frozen=True)
class RoundStatements:
    """:func:`load_rounds`' statements, built once per dialect (:func:`_round_statements`)
    with their values bound at execution: ``t`` (the tournament), ``numbers`` (the rounds
    asked for), ``ids`` (rounds', then tables' ids).  Building them anew was about a third
    of a bracket's render."""

    rounds: Select[*tuple[Any, ...]]
    some_rounds: Select[*tuple[Any, ...]]
    tables: Select[*tuple[Any, ...]]
    links: Select[*tuple[Any, ...]]


@functools.cache
def _round_statements(dialect: str) -> RoundStatements:
    rounds = (select(TournamentRound.id, TournamentRound.number, TournamentRound.state,
                     TournamentRound.byes, TournamentRound.target, TournamentRound.advanced)
              .where(TournamentRound.tournament_id == bindparam("t", type_=Integer))
              .order_by(TournamentRound.number))
    return RoundStatements(
        rounds=rounds,
        some_rounds=rounds.where(among_bound(dialect, TournamentRound.number, "numbers")),
        tables=(select(TournamentTable.round_id, TournamentTable.id, TournamentTable.number,
                       TournamentTable.state, TournamentTable.bots, TournamentTable.result)
                .where(among_bound(dialect, TournamentTable.round_id, "ids"))
                .order_by(TournamentTable.round_id, TournamentTable.number)),
        links=(select(TournamentMatch.table_id, TournamentMatch.match_id,
                      TournamentMatch.rotation, Match.state)
               .join(Match, Match.id == TournamentMatch.match_id)
               .where(among_bound(dialect, TournamentMatch.table_id, "ids"))
               .order_by(TournamentMatch.table_id, TournamentMatch.rotation)))


def load_rounds(s: Session, t: Tournament, numbers: Sequence[int] | None = None, *,
                links: bool = True) -> list[RoundView]:
    """The tournament's rounds (or only those ``numbers``) with their tables, the tables'
    links and the linked matches' states (``links=False``: no links, one statement less):
    three column statements however large the tournament (as ORM objects, 64 tables and
    128 matches built a graph of 200 rows: most of the bracket's time)."""
    stmts = _round_statements(s.get_bind().dialect.name)
    if numbers is None:
        found = s.execute(stmts.rounds, {"t": t.id})
    else:
        found = s.execute(stmts.some_rounds, {"t": t.id, "numbers": list(numbers)})
    rounds = [RoundView(*row) for row in found]
    if not rounds:
        return rounds
    by_round = {r.id: r for r in rounds}
    tables: list[TableView] = []
    for round_id, *columns in s.execute(stmts.tables, {"ids": list(by_round)}):
        table = TableView(*columns)
        tables.append(table)
        by_round[round_id].tables.append(table)
    if links:
        load_links(s, tables)
    return rounds


def load_links(s: Session, tables: Sequence[TableView]) -> None:
    """Append to each of these tables (read without links) its links and the linked
    matches' states, in one statement (none for no tables)."""
    if not tables:
        return
    by_id = {table.id: table for table in tables}
    stmt = _round_statements(s.get_bind().dialect.name).links
    for table_id, match_id, rotation, state in s.execute(stmt, {"ids": list(by_id)}):
        by_id[table_id].links.append(LinkView(match_id, rotation,
                                              MatchState(match_id, state)))


@dataclass(slots=True)
class PageRead:
    """What the tournament page's bracket and standings both read, read once
    (:func:`read_for_page`): the entrants' names and seeds (:func:`entrants`) and every
    round with its tables, without their links (the bracket reads those of the tables it
    shows, :func:`load_links`).  Each read them on its own before: the entrants twice, the
    rounds and tables of the page's round twice, and the round sizes once more."""

    names: dict[int, str]
    seeds: dict[int, int]
    rounds: list[RoundView]

    def sizes(self) -> dict[int, int]:
        """Tables per round number, in number order (0 for a round without tables): what
        the page's round and table navigation needs."""
        return {rnd.number: len(rnd.tables) for rnd in self.rounds}


def read_for_page(s: Session, t: Tournament) -> PageRead:
    names, seeds = entrants(s, t)
    return PageRead(names, seeds, load_rounds(s, t, links=False))


SEAT_RESULT_COLUMNS = (MatchSeat.match_id, MatchSeat.bot_id, MatchSeat.seat, MatchSeat.rank,
                       MatchSeat.score, MatchSeat.wins, MatchSeat.strikes, MatchSeat.forfeited)
"""What a table's result reads of a seat (:func:`arena.tournaments.service.table_lines`)."""


def seats_by_match(s: Session, match_ids: Sequence[int]) -> dict[int, list[Any]]:
    """The seats of these matches (seat order; :data:`SEAT_RESULT_COLUMNS`, read as a
    ``MatchSeat`` is), in one statement."""
    out: dict[int, list[Any]] = {m: [] for m in match_ids}
    if match_ids:
        for x in s.execute(_seats_statement(s.get_bind().dialect.name),
                           {"ids": list(match_ids)}):
            out[x.match_id].append(x)
    return out


@functools.cache
def _seats_statement(dialect: str) -> Select[*tuple[Any, ...]]:
    """:func:`seats_by_match`' statement, built once per dialect (``ids`` bound)."""
    return (select(*SEAT_RESULT_COLUMNS).where(among_bound(dialect, MatchSeat.match_id, "ids"))
            .order_by(MatchSeat.match_id, MatchSeat.seat))


@functools.cache
def _list_statements(dialect: str) -> tuple[Select[*tuple[Any, ...]], ...]:
    """The statements of :func:`summaries` (entrants counted, matches counted per state)
    and :func:`tournaments_json` (entrants with their names), built once per dialect with
    the tournaments' ids bound at execution (``ids``)."""
    counted = (select(TournamentEntrant.tournament_id, func.count())
               .where(among_bound(dialect, TournamentEntrant.tournament_id, "ids"))
               .group_by(TournamentEntrant.tournament_id))
    by_state = (select(TournamentMatch.tournament_id, Match.state, func.count())
                .join(Match, Match.id == TournamentMatch.match_id)
                .where(among_bound(dialect, TournamentMatch.tournament_id, "ids"))
                .group_by(TournamentMatch.tournament_id, Match.state))
    named = (select(TournamentEntrant.tournament_id, TournamentEntrant.bot_id,
                    TournamentEntrant.seed, TournamentEntrant.rating, Bot.name)
             .join(Bot, Bot.id == TournamentEntrant.bot_id)
             .where(among_bound(dialect, TournamentEntrant.tournament_id, "ids")))
    return counted, by_state, named


def progress_of(s: Session, ids: Sequence[int]) -> dict[int, dict[str, int]]:
    """Each tournament's matches counted per state (every state of
    :data:`PROGRESS_STATES`, 0 when none), for a whole list in one grouped statement."""
    states: dict[int, dict[str, int]] = {i: {} for i in ids}
    if ids:
        by_state = _list_statements(s.get_bind().dialect.name)[1]
        for tid, state, n in s.execute(by_state, {"ids": list(ids)}):
            states[tid][state] = int(n)
    return {tid: {k: c.get(k, 0) for k in PROGRESS_STATES} for tid, c in states.items()}


def summaries(s: Session, rows: Sequence[Tournament]) -> list[dict[str, Any]]:
    """What a list of tournaments shows (no entrant list): entrants counted and matches
    per state, for every tournament of the list in two grouped statements."""
    ids = [t.id for t in rows]
    entrants: dict[int, int] = {}
    if ids:
        counted = _list_statements(s.get_bind().dialect.name)[0]
        entrants = {tid: int(n) for tid, n in s.execute(counted, {"ids": ids})}
    states = progress_of(s, ids)
    out = []
    for t in rows:
        out.append({"id": t.id, "name": t.name, "format": t.format, "state": t.state,
                    "ruleset": t.ruleset, "duplicate": t.duplicate, "rounds": t.rounds,
                    "current_round": t.current_round, "entrant_count": entrants.get(t.id, 0),
                    "progress": states[t.id]})
    return out


def progress(s: Session, t: Tournament) -> dict[str, int]:
    rows = s.execute(
        select(Match.state, func.count()).join(TournamentMatch,
                                               TournamentMatch.match_id == Match.id)
        .where(TournamentMatch.tournament_id == t.id).group_by(Match.state)).all()
    counts = dict(rows)
    return {k: int(counts.get(k, 0)) for k in ("queued", "running", "finished", "failed")}


PROGRESS_STATES = ("queued", "running", "finished", "failed")


def live_tag(s: Session, t: Tournament, p: dict[str, int] | None = None) -> str:
    """Changes whenever anything a spectator sees changes (a match starts or finishes, a
    round opens or closes).  ``p``: the tournament's :func:`progress`, when the caller read
    it already (the page shows it too)."""
    return _tag(t.id, t.version, progress(s, t) if p is None else p)


def _tag(tournament_id: int, version: int, p: dict[str, int]) -> str:
    return (f'"t{tournament_id}-v{version}-{p["queued"]}-{p["running"]}-{p["finished"]}'
            f'-{p["failed"]}"')


def live_state(s: Session, tournament_id: int) -> tuple[str, str] | None:
    """The tournament's :func:`live_tag` and state, read in one statement (the tournament's
    row and its matches counted per state), or None when there is no such tournament: what
    a poll of the live fragment needs to answer 304, without loading the tournament."""
    counts = [func.count(Match.id).filter(Match.state == state) for state in PROGRESS_STATES]
    row = s.execute(
        select(Tournament.version, Tournament.state, *counts)
        .outerjoin(TournamentMatch, TournamentMatch.tournament_id == Tournament.id)
        .outerjoin(Match, Match.id == TournamentMatch.match_id)
        .where(Tournament.id == tournament_id)
        .group_by(Tournament.id, Tournament.version, Tournament.state)).first()
    if row is None:
        return None
    version, state, *n = row
    return _tag(tournament_id, int(version), dict(zip(PROGRESS_STATES, map(int, n),
                                                      strict=True))), str(state)


def tournament_json(s: Session, t: Tournament) -> dict[str, Any]:
    return tournaments_json(s, [t])[0]


def tournaments_json(s: Session, rows: Sequence[Tournament]) -> list[dict[str, Any]]:
    """The JSON of each tournament, for a whole list in two statements (entrants with
    their names, and matches per state), never a query per tournament."""
    ids = [t.id for t in rows]
    entrants: dict[int, list[tuple[int, int | None, float | None, str]]] = {i: [] for i in ids}
    if ids:  # columns, not entrant objects: 512 of them for two tournaments of 256
        # Unpacked into plain tuples once: three attribute reads of a row per entrant, in
        # the sort and the list, were most of the list's time.
        named = _list_statements(s.get_bind().dialect.name)[2]
        for tid, bot_id, seed, rating, name in s.execute(named, {"ids": ids}):
            entrants[tid].append((bot_id, seed, rating, name))
    counts = progress_of(s, ids)  # (not summaries(): its entrant count is not shown here)
    out = []
    for t in rows:
        listed = sorted(entrants[t.id], key=lambda x: (x[1] or 10**6, x[0]))
        out.append({
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
            # Every table's deals derive from it: shown once nothing is left to play.
            "seed": t.seed if t.state in ("finished", "cancelled") else None,
            "limits": t.limits,
            "current_round": t.current_round,
            "version": t.version,
            "created_at": iso(t.created_at),
            "started_at": iso(t.started_at),
            "finished_at": iso(t.finished_at),
            "progress": counts[t.id],
            "entrants": [{"bot": {"id": bot_id, "name": name}, "seed": seed,
                          "rating": None if rating is None else round(rating, 1)}
                         for bot_id, seed, rating, name in listed],
        })
    return out


def standings_json(s: Session, t: Tournament, read: PageRead | None = None,
                   top: int | None = None) -> dict[str, Any]:
    """The standings; ``read``: the entrants and rounds, when the caller read them
    (:func:`read_for_page`); ``top``: only the first ``top`` items (the page shows 64 of
    256; there is one row per entrant, ``len(read.seeds)`` in all)."""
    if read is None:
        # The rounds and tables as columns, not ORM objects (256 entrants: 130 objects).
        read = read_for_page(s, t)
    names = read.names
    rows = compute_standings(s, t, read.rounds, seeds=read.seeds)
    items = []
    for r in rows[:top]:
        d = r.to_json()
        d["bot"] = {"id": r.bot, "name": names.get(r.bot, "?")}
        items.append(d)
    keys = (KNOCKOUT_ORDER if t.format == "knockout" else TIE_BREAKS)
    return {"tournament": t.id, "format": t.format, "state": t.state, "final": t.state ==
            "finished", "order": keys, "items": items}


def _bracket_rounds(s: Session, t: Tournament, only_round: int | None, tables: slice | None,
                    read: PageRead | None) -> tuple[dict[int, str], dict[int, int],
                                                    list[RoundView], dict[int, list[TableView]]]:
    """:func:`bracket_json`'s reading: the entrants' names and seeds, the rounds drawn, and
    per round number the tables shown, with their links (read here for those only when the
    caller's ``read`` holds the rounds)."""
    if read is None:
        names, seeds = entrants(s, t)
        rounds = load_rounds(s, t, None if only_round is None else [only_round])
    else:
        names, seeds = read.names, read.seeds
        rounds = [rnd for rnd in read.rounds if only_round in (None, rnd.number)]
    shown: dict[int, list[TableView]] = {
        rnd.number: list(rnd.tables if tables is None else rnd.tables[tables])
        for rnd in rounds}
    if read is not None:
        load_links(s, [table for rnd in rounds for table in shown[rnd.number]])
    return names, seeds, rounds, shown


def bracket_json(s: Session, t: Tournament, *, only_round: int | None = None,
                 tables: slice | None = None, read: PageRead | None = None) -> dict[str, Any]:
    """Every round with its tables, their seats, matches and (once done) results; or only
    round ``only_round``, and of its tables only the slice ``tables`` (the web pages).
    ``read``: the entrants and rounds, read by the caller without links
    (:func:`read_for_page`); the links of the tables shown are added to them."""
    names, seeds, rounds, shown = _bracket_rounds(s, t, only_round, tables, read)
    # Tables still being played show their partial result: the seats of their finished
    # matches, for every such table of the page in one statement.
    partial = [link.match_id for rnd in rounds for table in shown[rnd.number]
               if table.result is None for link in table.links
               if link.match.state == "finished"]
    seats = seats_by_match(s, partial)
    out_rounds = []
    cards = BotCards(names, seeds)
    for rnd in rounds:
        advanced = set(rnd.advanced["bots"]) if rnd.advanced else set()
        out_tables = []
        for table in shown[rnd.number]:
            matches = [{"id": link.match_id, "rotation": link.rotation,
                        "state": link.match.state} for link in table.links]
            if table.result is not None:
                lines = table.result["lines"]
            elif any(m["state"] == "finished" for m in matches):
                lines = [x.to_json() for x in table_lines(s, t, table, seeds,
                                                          seats_of=seats)]  # partial
            else:
                lines = None
            result = None
            if lines is not None:
                result = [{**x, "bot": cards[x["bot"]], "advanced": x["bot"] in advanced}
                          for x in lines]
            out_tables.append({
                "number": table.number,
                "state": table.state,
                "seats": [cards[b] for b in table.bots["bots"]],
                "matches": matches,
                "result": result,
                "final": table.state == "done",
            })
        out_rounds.append({
            "number": rnd.number,
            "state": rnd.state,
            "byes": [cards[b] for b in rnd.byes["bots"]],
            "target": rnd.target,
            "advanced": [cards[b] for b in rnd.advanced["bots"]] if rnd.advanced else None,
            "table_count": len(rnd.tables),
            "tables": out_tables,
        })
    planned: list[int] | None = None
    if t.format == "knockout":
        planned = knockout_sizes(len(seeds), t.seats, t.advance)
    return {"tournament": t.id, "format": t.format, "state": t.state, "seats": t.seats,
            "current_round": t.current_round, "rounds_planned": t.rounds,
            "round_sizes": planned, "rounds": out_rounds}


# --- the archive -----------------------------------------------------------------------------

CSV_FIELDS = ["rank", "bot_id", "bot", "seed", "points", "score", "buchholz", "wins",
              "strikes", "tables", "byes", "firsts", "round_reached", "place_in_round"]
"""Columns of ``standings.csv``; the last two are a knockout's order keys (empty in the other
formats, and ``place_in_round`` while the bot's table plays or after a bye)."""

KNOCKOUT_ORDER = ["round_reached (later first)", "place_in_round (not placed yet first)",
                  "score", "seed"]
"""The ``order`` of a knockout's standings: its own keys, by their JSON names."""


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def standings_csv(doc: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for x in doc["items"]:
        w.writerow([x["rank"], x["bot"]["id"], x["bot"]["name"], x["seed"], x["points"],
                    x["score"], x["buchholz"], x["wins"], x["strikes"], x["tables"],
                    x["byes"], x["firsts"], _cell(x.get("round_reached")),
                    _cell(x.get("place_in_round"))])
    return buf.getvalue()


@functools.cache
def _archive_logs_statement() -> Select[int, bytes]:
    """:func:`archive`'s logs, built once (the tournament bound at execution: ``t``):
    building the secrecy predicate's six aliases was a tenth of a download's time."""
    return (select(MatchResult.match_id, MatchResult.log_gz)
            .join(TournamentMatch, TournamentMatch.match_id == MatchResult.match_id)
            .where(TournamentMatch.tournament_id == bindparam("t", type_=Integer),
                   ~deal_secrecy.in_play_sql(MatchResult.match_id))
            .order_by(MatchResult.match_id))


def archive(s: Session, t: Tournament) -> bytes:
    """A zip of every finished match's log (``logs/match-<id>.json``) plus the standings as
    CSV and JSON, the bracket and the tournament itself as JSON (indented for reading:
    :func:`arena.core.jsontext.indented_json`).  A finished match whose deals a sibling
    rotation still plays is left out by the query (:mod:`arena.play.deal_secrecy`): its
    log is never read.  The entrants and rounds are read once for the standings and the
    bracket (:func:`read_for_page`).  Each log's stored deflate stream goes into the zip as
    it is (:meth:`arena.core.zipwriter.ZipWriter.add_gzip`): deflating every log again was
    a third of the download."""
    read = read_for_page(s, t)
    standings = standings_json(s, t, read)
    z = ZipWriter()
    prefix = f"tournament-{t.id}/"
    z.add(prefix + "tournament.json", indented_json(tournament_json(s, t)).encode())
    z.add(prefix + "standings.json", indented_json(standings).encode())
    z.add(prefix + "standings.csv", standings_csv(standings).encode())
    z.add(prefix + "bracket.json", indented_json(bracket_json(s, t, read=read)).encode())
    for match_id, log_gz in s.execute(_archive_logs_statement(), {"t": t.id}):
        # As stored; one stored before the text rule is repaired (referee.wire.text).
        z.add_gzip(f"{prefix}logs/match-{match_id}.json", log_gz, stored_json_bytes)
    return z.finish()
