"""``arena.core.idlists``: a list of ids selects what ``IN`` selects, and on PostgreSQL it is
one array parameter, so the statement's text does not change with the list's length (the
point of it: compiled and converted once, not once per length)."""

from __future__ import annotations

from flask import Flask
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from arena.core.idlists import among, among_bound
from arena.core.models import Bot, utcnow
from arena.core.storage import get_db

from .conftest import both_backends


def add_bots(s: Session, n: int) -> list[int]:
    now = utcnow()
    bots = [Bot(name=f"idlist-{i}", url=f"http://127.0.0.1:9/{i}", token_hash=f"h{i}",
                created_at=now, updated_at=now) for i in range(n)]
    s.add_all(bots)
    s.flush()
    return [b.id for b in bots]


@both_backends
def test_a_list_of_ids_selects_what_in_selects(app: Flask) -> None:
    with get_db(app).begin() as s:
        ids = add_bots(s, 6)
        for wanted in ([], ids[:1], ids[1:4], ids, [*ids, 10**6]):
            expected = list(s.scalars(select(Bot.id).where(Bot.id.in_(wanted))
                                      .order_by(Bot.id)))
            assert list(s.scalars(select(Bot.id).where(among(s, Bot.id, wanted))
                                  .order_by(Bot.id))) == expected, wanted
            bound = select(Bot.id).where(
                among_bound(s.get_bind().dialect.name, Bot.id, "ids")).order_by(Bot.id)
            assert list(s.scalars(bound, {"ids": wanted})) == expected, wanted


@both_backends
def test_on_postgresql_the_statement_does_not_change_with_the_list(app: Flask,
                                                                   backend: str) -> None:
    sent: list[str] = []
    engine = get_db(app).engine

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        with get_db(app).begin() as s:
            ids = add_bots(s, 5)
            sent.clear()
            for n in (1, 3, 5):
                s.execute(select(Bot.id).where(among(s, Bot.id, ids[:n]))).all()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    if backend == "postgres":
        assert len(set(sent)) == 1 and "ANY" in sent[0], sent
    else:
        assert len(set(sent)) == 3, sent  # SQLite: IN, one placeholder per id
