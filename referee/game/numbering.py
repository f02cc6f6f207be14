"""How seats, deals and turns are numbered: one rule for people, one for data, never mixed.

* **People count from 1.**  Every number a person reads or types is 1-based: deal 1 is the
  first deal of a match, turn 1 the first turn of a deal, seats run 1 to N.  Pages, the
  replay viewer, the command line's output *and its arguments* (``python -m referee request
  LOG --deal 2 --turn 28`` takes what the bot page shows), and the messages of ``verify``,
  ``replay`` and ``conformance`` all say it so, so a number copied from one into another
  means the same turn.
* **Data counts from 0.**  JSON fields (the wire protocol's ``seat``, ``turn``,
  ``deal_index``; a match log's ``seat``, ``deal``, ``turn``, ``index``; the JSON API and
  ``--json`` outputs) are *indices*: positions in the log's arrays.  A data format does not
  change meaning, so they stay 0-based (docs/logs.md and docs/api.md call them indices).

Code converts at the edge, in this module only: :func:`shown` when it prints an index,
:func:`from_shown` (or :func:`person_number` for ``argparse``) when it reads a number a
person typed.  A message that quotes a JSON value as such writes it as JSON
(``"turn": 27``), never as "turn 27".
"""

from __future__ import annotations

import argparse


def shown(index: int) -> int:
    """The number people read for a 0-based seat, deal or turn index."""
    return int(index) + 1


def from_shown(number: int) -> int:
    """The 0-based index of a number a person gave (1 or more; ``ValueError`` below 1)."""
    if number < 1:
        raise ValueError(f"{number} is not a number people count with: seats, deals and "
                         "turns are numbered from 1")
    return number - 1


def person_number(text: str) -> int:
    """An ``argparse`` type: a 1-based number as typed, returned as the 0-based index."""
    try:
        return from_shown(int(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a whole number from 1 (seats, deals and turns are numbered "
            "from 1, as the pages show them)") from exc


def where(*, seat: int | None = None, deal: int | None = None, turn: int | None = None) -> str:
    """``"seat 2, deal 2, turn 28"`` for 0-based indices (the parts given, in that order)."""
    parts = [f"{name} {shown(i)}" for name, i in (("seat", seat), ("deal", deal),
                                                    ("turn", turn)) if i is not None]
    return ", ".join(parts)


__all__ = ["from_shown", "person_number", "shown", "where"]
