"""Tournament tables (same declarative ``Base`` as :mod:`arena.core.models`; migration 0002).

A tournament is entirely described by these rows plus the matches they point to, so the
``advance`` step (:mod:`arena.tournaments.service`) can always work out what to do next from
the database alone::

    tournaments 1──* tournament_entrants          (bot, seed, rating at the start)
                1──* tournament_rounds 1──* tournament_tables 1──* tournament_matches ──1 matches
                                                        (one per rotation with duplicate play)

Life cycle (``Tournament.state``): ``created`` ──start──▶ ``running`` ──(last round done)──▶
``finished``; ``cancelled`` by the operator.  A round is ``pending`` (scheduled ahead: round
robin), ``playing`` or ``done``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .models import RULESET_NAME_MAX, Base, Bot, Match, utcnow

FORMATS = ("round_robin", "swiss", "knockout")


class Tournament(Base):
    __tablename__ = "tournaments"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    format: Mapped[str] = mapped_column(String(16))
    """``round_robin``, ``swiss`` or ``knockout``."""
    state: Mapped[str] = mapped_column(String(16), default="created")
    ruleset: Mapped[str] = mapped_column(String(RULESET_NAME_MAX))
    family: Mapped[str] = mapped_column(String(64))
    seats: Mapped[int] = mapped_column(Integer)
    deals: Mapped[int] = mapped_column(Integer)
    """Deals per match."""
    limits: Mapped[dict[str, Any]] = mapped_column()
    duplicate: Mapped[bool] = mapped_column(Boolean, default=False)
    """Every table replays its deals once per rotation of the seats."""
    advance: Mapped[int] = mapped_column(Integer, default=2)
    """Knockout: players per table who go through."""
    rounds: Mapped[int | None] = mapped_column(Integer, default=None)
    """Planned rounds (Swiss; round robin once scheduled; knockout once started)."""
    cycles: Mapped[int] = mapped_column(Integer, default=1)
    """Round robin: how many times every pair should meet."""
    rated: Mapped[bool] = mapped_column(Boolean, default=True)
    seed: Mapped[int] = mapped_column(BigInteger)
    current_round: Mapped[int] = mapped_column(Integer, default=0)
    version: Mapped[int] = mapped_column(Integer, default=0)
    """Bumped by every change the advance step makes (live pages compare it)."""
    standings: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    """Final standings, frozen when the tournament finishes."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    finished_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    error: Mapped[str] = mapped_column(Text, default="")

    entrants: Mapped[list[TournamentEntrant]] = relationship(
        back_populates="tournament", order_by="TournamentEntrant.id"
    )
    round_rows: Mapped[list[TournamentRound]] = relationship(
        back_populates="tournament", order_by="TournamentRound.number"
    )


class TournamentEntrant(Base):
    __tablename__ = "tournament_entrants"
    __table_args__ = (UniqueConstraint("tournament_id", "bot_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id"), index=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), index=True)
    seed: Mapped[int | None] = mapped_column(Integer, default=None)
    """1 is the top seed (highest Elo in the tournament's family at the start)."""
    rating: Mapped[float | None] = mapped_column(Float, default=None)
    """Elo in the tournament's family when it started."""

    tournament: Mapped[Tournament] = relationship(back_populates="entrants")
    bot: Mapped[Bot] = relationship()


class TournamentRound(Base):
    __tablename__ = "tournament_rounds"
    __table_args__ = (UniqueConstraint("tournament_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    byes: Mapped[dict[str, Any]] = mapped_column(default=dict)
    """``{"bots": [...]}``: who sits this round out."""
    target: Mapped[int | None] = mapped_column(Integer, default=None)
    """Knockout: how many players go through to the next round."""
    advanced: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    """Knockout, once done: ``{"bots": [...]}`` who went through, in seed order."""
    started_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    finished_at: Mapped[dt.datetime | None] = mapped_column(default=None)

    tournament: Mapped[Tournament] = relationship(back_populates="round_rows")
    tables: Mapped[list[TournamentTable]] = relationship(
        back_populates="round", order_by="TournamentTable.number"
    )


class TournamentTable(Base):
    __tablename__ = "tournament_tables"
    __table_args__ = (UniqueConstraint("round_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id"), index=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("tournament_rounds.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    bots: Mapped[dict[str, Any]] = mapped_column()
    """``{"bots": [...]}``: bot ids in seat order (rotation 0)."""
    seed: Mapped[int] = mapped_column(BigInteger)
    """Match seed shared by every rotation (the same deals)."""
    state: Mapped[str] = mapped_column(String(16), default="pending")
    result: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    """Once done: ``{"lines": [TableLine...]}`` in place order."""

    round: Mapped[TournamentRound] = relationship(back_populates="tables")
    links: Mapped[list[TournamentMatch]] = relationship(
        back_populates="table", order_by="TournamentMatch.rotation"
    )


class TournamentMatch(Base):
    """A match played for a tournament table (rotation ``r`` of its seats)."""

    __tablename__ = "tournament_matches"
    __table_args__ = (UniqueConstraint("table_id", "rotation"),)

    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"), primary_key=True)
    table_id: Mapped[int] = mapped_column(ForeignKey("tournament_tables.id"), index=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id"), index=True)
    rotation: Mapped[int] = mapped_column(Integer)

    table: Mapped[TournamentTable] = relationship(back_populates="links")
    match: Mapped[Match] = relationship()
