"""``column IN (a list of ids)`` as one array parameter on PostgreSQL.

``column.in_(ids)`` is an *expanding* parameter: every execution renders one placeholder per
value (SQLAlchemy's post-compile step, with a cast each), and the SQL text differs with the
list's length, so psycopg converts every such statement anew (its query cache keeps short,
repeated texts).  Profiled at 10,000 bots and 1,000,000 matches (issue 20 §3), that was
1-2 ms of CPU per statement for a page of 50 matches or a bracket of 64 tables, more than
PostgreSQL took to run it.  ``column = ANY(:ids)`` with the list bound as one array is one
fixed text: compiled once, converted once, and planned as the ``IN`` list is (PostgreSQL
reads ``IN (...)`` as ``= ANY(ARRAY[...])``).  SQLite has no arrays: it keeps ``IN``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, any_, bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session


def among(s: Session, column: Any, values: Iterable[Any]) -> ColumnElement[bool]:
    """``column IN values`` for ``s``'s database: one array parameter on PostgreSQL
    (``column = ANY(:values)``), the usual expanding ``IN`` elsewhere."""
    listed = list(values)
    if s.get_bind().dialect.name != "postgresql":
        return column.in_(listed)  # type: ignore[no-any-return]
    return column == any_(bindparam(None, listed, type_=ARRAY(column.type)))  # type: ignore[no-any-return]


def among_bound(dialect: str, column: Any, name: str) -> ColumnElement[bool]:
    """:func:`among` with the list left to bind at execution (``{name: ids}``), for a
    statement built once per dialect and kept (``dialect``: ``Dialect.name``)."""
    if dialect != "postgresql":
        return column.in_(bindparam(name, expanding=True))  # type: ignore[no-any-return]
    return column == any_(bindparam(name, type_=ARRAY(column.type)))  # type: ignore[no-any-return]
