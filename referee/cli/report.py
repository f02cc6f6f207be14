"""Plain-text reports of a match record (what the command line prints).

Seats, deals and turns are numbered from 1, as people count (:mod:`referee.game.numbering`):
what ``python -m referee request`` takes and the pages show.

Every field a bot controls (names, fault details) goes through
:func:`referee.cli.terminal.printable`, so a report has no control characters but its own line
breaks.
"""

from __future__ import annotations

from referee.game.numbering import shown, where
from referee.runner.faults import fault_line
from referee.runner.match import MatchRecord

from .terminal import printable as _p


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def result_table(rec: MatchRecord, *, max_strikes_shown: int = 10) -> str:
    """Standings with scores, wins, strikes and latency, then strikes, forfeits and notes."""
    lat = {x.seat: x for x in rec.latency}
    lines = [
        f"match {_p(rec.match_id)}: {rec.rules.name}, {rec.deals_planned} deals, seed {rec.seed}",
        "",
        f"{'rank':>4} {'seat':>4}  {'bot':<24} {'score':>6} {'wins':>4} {'strikes':>7} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}",
    ]
    for s in rec.standings:
        x = lat.get(s.seat)
        who = _p(s.name) + (" (forfeited)" if s.forfeited else "")
        lines.append(
            f"{s.rank:>4} {shown(s.seat):>4}  {who[:24]:<24} {s.score:>6} {s.wins:>4} "
            f"{s.strikes:>7} "
            f"{_ms(x.p50_ms if x else None):>7} {_ms(x.p95_ms if x else None):>7} "
            f"{_ms(x.max_ms if x else None):>7}"
        )
    if rec.strikes:
        lines += ["", f"strikes ({len(rec.strikes)}):"]
        for k in rec.strikes[:max_strikes_shown]:
            at = where(seat=k.seat, deal=k.deal, turn=k.turn)
            lines.append(f"  {at}: {_p(fault_line(k.reason, k.detail))}")
        if len(rec.strikes) > max_strikes_shown:
            lines.append(f"  ... and {len(rec.strikes) - max_strikes_shown} more")
    for f in rec.forfeits:
        lines.append(f"{where(seat=f.seat)} forfeited at {where(deal=f.deal, turn=f.turn)}")
    for n in rec.notes:
        lines.append(f"note: {where(seat=n.seat)} {n.call} failed: "
                     f"{_p(fault_line(n.fault, n.detail))}")
    return "\n".join(lines)


def deal_line(rec: MatchRecord, index: int) -> str:
    """One line per deal: winner, cards left, scores."""
    d = rec.deals[index]
    out = d.outcome
    if out is None:
        return f"deal {shown(index):>2}: unfinished"
    who = "nobody"
    if out.winner is not None:
        who = f"{where(seat=out.winner)} ({_p(rec.seats[out.winner].name)})"
    how = "" if out.termination.value == "played-out" else f" [{out.termination.value}]"
    return (
        f"deal {shown(index):>2}: {who} wins{how}, cards left {list(out.cards_left)}, "
        f"scores {list(out.scores)}"
    )
