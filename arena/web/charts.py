"""Geometry of the server-rendered SVG charts (rating histories) and of the bracket picture,
and the bracket picture drawn.

The rating chart's numbers are drawn by ``templates/_chart.html`` (every name through Jinja's
autoescape).  The bracket is drawn here (:func:`bracket_svg`): a 256-entrant page draws 16
tables of boxes, rows, chips and links, some 3,400 template statements that were most of the
tournament page's render; every text in it goes through :func:`markupsafe.escape`, as the
template's autoescape did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jinja2.filters import do_int
from markupsafe import Markup, escape

PALETTE = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#db2777", "#0891b2",
           "#65a30d", "#475569", "#ea580c"]


@dataclass
class Series:
    name: str
    color: str
    points: str
    """SVG ``points`` attribute."""
    last: tuple[float, float]
    href: str | None = None
    dots: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class Chart:
    width: int
    height: int
    left: int
    top: int
    right: int
    bottom: int
    series: list[Series]
    yticks: list[tuple[float, str]]
    xticks: list[tuple[float, str]]
    empty: bool = False


def nice_step(span: float, target: int = 5) -> float:
    raw = span / max(1, target)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def rating_chart(
    histories: Sequence[tuple[str, Sequence[tuple[float, float]], str | None]],
    *,
    width: int = 1080,
    height: int = 300,
    x_label: str = "games",
) -> Chart:
    """Lines of rating after each game: ``histories`` holds (name, points, link), each point
    ``(games played, rating after them)``, the first at 0 games (the rating before its first
    game).  The points are already downsampled (:func:`arena.play.ratings.rating_series`), so
    the picture costs the same for 10 or 100,000 games."""
    left, right, top, bottom = 48, 16, 12, 28
    values = [v for _, h, _ in histories for _, v in h]
    longest = max((h[-1][0] for _, h, _ in histories if h), default=0.0)
    if not values or longest < 1:
        return Chart(width, height, left, top, right, bottom, [], [], [], empty=True)
    lo, hi = min(values), max(values)
    if hi - lo < 20:
        mid = (hi + lo) / 2
        lo, hi = mid - 10, mid + 10
    step = nice_step(hi - lo)
    lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
    pw, ph = width - left - right, height - top - bottom

    def x(g: float) -> float:
        return left + pw * g / longest

    def y(v: float) -> float:
        return top + ph * (1 - (v - lo) / (hi - lo))

    series = []
    for k, (name, hist, href) in enumerate(histories):
        if not hist:
            continue
        # The points attribute formatted straight from the floats (``.1f`` is exactly
        # ``round(_, 1)``), no tuple a point: 8 lines of 200 points 2.9 -> 1.6 ms.  x() and
        # y() written out (the same expressions, so the same floats): two calls a point
        # were 3,200 calls a leaderboard.
        span = hi - lo
        xy = [(left + pw * g / longest, top + ph * (1 - (v - lo) / span)) for g, v in hist]
        dotted = len(xy) <= 40
        pts = [(round(a, 1), round(b, 1)) for a, b in (xy if dotted else xy[-1:])]
        series.append(Series(name, PALETTE[k % len(PALETTE)],
                             " ".join([f"{a:.1f},{b:.1f}" for a, b in xy]), pts[-1], href,
                             pts if dotted else []))
    yticks = []
    v = lo
    while v <= hi + 1e-9:
        yticks.append((round(y(v), 1), f"{v:.0f}"))
        v += step
    xstep = max(1, int(nice_step(longest, 6)))
    xticks = [(round(x(i), 1), str(i)) for i in range(0, int(longest) + 1, xstep)]
    return Chart(width, height, left, top, right, bottom, series, yticks, xticks)


# --- the bracket picture ---------------------------------------------------------------------

COL_W = 230
COL_GAP = 56
ROW_H = 22
HEAD_H = 26
PAD = 8
TABLE_GAP = 18
TOP = 50
"""Room above the boxes for the column titles."""


def placeholder_rounds(bracket: dict[str, Any]) -> list[dict[str, Any]]:
    """The knockout rounds not drawn yet, as empty tables ("to be decided"), so the bracket
    shows its whole shape from the start."""
    sizes = bracket.get("round_sizes") or []
    seats = int(bracket.get("seats") or 4)
    out: list[dict[str, Any]] = []
    fake = 0
    for number in range(len(bracket["rounds"]) + 1, len(sizes) + 1):
        tables = []
        for i in range(max(1, sizes[number - 1] // seats)):
            row = []
            for _ in range(seats):
                fake -= 1
                row.append({"id": fake, "name": "to be decided", "seed": None})
            tables.append({"number": i + 1, "state": "pending", "seats": row, "matches": [],
                           "result": None})
        out.append({"number": number, "state": "pending", "byes": [],
                    "target": sizes[number] if number < len(sizes) else None,
                    "advanced": None, "tables": tables})
    return out


def _box_height(rows: int) -> int:
    return HEAD_H + ROW_H * rows + PAD


def _column_height(rnd: dict[str, Any]) -> int:
    """Height of a round's column: its table boxes and its byes box, each with its gap."""
    h = sum(_box_height(len(table["seats"])) + TABLE_GAP for table in rnd["tables"])
    if rnd["byes"]:
        h += _box_height(len(rnd["byes"])) + TABLE_GAP
    return h


def _table_box(table: dict[str, Any], rnd: dict[str, Any], x: float, y: float, *,
               final: bool) -> dict[str, Any]:
    """A table's box: its seats, in finishing order once it has a result."""
    lines = {line["bot"]["id"]: line for line in (table["result"] or [])}
    rows = []
    for seat, b in enumerate(table["seats"]):
        line = lines.get(b["id"])
        rows.append({"bot": b, "seat": seat, "line": line,
                     "y": y + HEAD_H + ROW_H * seat,
                     "adv": bool(line and line.get("advanced")),
                     "champion": bool(final and line and line["place"] == 1)})
    if table["result"]:
        order = {line["bot"]["id"]: i for i, line in enumerate(table["result"])}
        rows.sort(key=lambda r: order.get(r["bot"]["id"], 99))
        for i, r in enumerate(rows):
            r["y"] = y + HEAD_H + ROW_H * i
    return {"kind": "table", "x": x, "y": y, "w": COL_W, "h": _box_height(len(rows)),
            "title": f"Table {table['number']}", "state": table["state"],
            "rows": rows, "matches": table["matches"], "round": rnd["number"]}


def _byes_box(rnd: dict[str, Any], x: float, y: float) -> dict[str, Any]:
    """The box of a round's byes (players who sit the round out and go through)."""
    went_through = {b["id"] for b in rnd.get("advanced") or []}
    rows = [{"bot": b, "seat": None, "line": None, "y": y + HEAD_H + ROW_H * i,
             "adv": b["id"] in went_through, "champion": False}
            for i, b in enumerate(rnd["byes"])]
    return {"kind": "byes", "x": x, "y": y, "w": COL_W, "h": _box_height(len(rows)),
            "title": "Byes", "state": rnd["state"], "rows": rows, "matches": [],
            "round": rnd["number"]}


def _column_boxes(rnd: dict[str, Any], x: float, y: float, *,
                  final: bool) -> list[dict[str, Any]]:
    """A round's boxes, top to bottom from ``y``: its tables, then its byes."""
    boxes = []
    for table in rnd["tables"]:
        box = _table_box(table, rnd, x, y, final=final)
        boxes.append(box)
        y += box["h"] + TABLE_GAP
    if rnd["byes"]:
        boxes.append(_byes_box(rnd, x, y))
    return boxes


def _connector_curves(rounds: list[dict[str, Any]],
                      rows_at: dict[tuple[int, int], tuple[float, float, float]]) -> list[str]:
    """An SVG path from each player who went through to its row in the next round."""
    curves = []
    for rnd in rounds:
        for b in rnd.get("advanced") or []:
            a = rows_at.get((rnd["number"], b["id"]))
            z = rows_at.get((rnd["number"] + 1, b["id"]))
            if a is None or z is None:
                continue
            x1, y1, x2, y2 = a[1], a[2], z[0], z[2]
            mid = (x1 + x2) / 2
            curves.append(f"M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} {mid:.1f},{y2:.1f} "
                          f"{x2:.1f},{y2:.1f}")
    return curves


def bracket_layout(bracket: dict[str, Any], *, connectors: bool) -> dict[str, Any]:
    """Positions of every round column, table box and row of the bracket JSON
    (:func:`arena.tournaments.present.bracket_json`), and the connector curves from each
    player who went through to the row where it sits in the next round."""
    rounds = list(bracket["rounds"]) + placeholder_rounds(bracket)
    heights = [_column_height(rnd) for rnd in rounds]
    total_h = max(heights, default=0) + TOP
    rows_at: dict[tuple[int, int], tuple[float, float, float]] = {}
    columns = []
    boxes: list[dict[str, Any]] = []
    last_number = rounds[-1]["number"] if rounds else 0
    sizes = bracket.get("round_sizes")
    for ci, rnd in enumerate(rounds):
        final = (connectors and rnd["number"] == last_number
                 and bracket.get("state") == "finished")
        x = 10 + ci * (COL_W + COL_GAP)
        final_round = sizes and rnd["number"] == len(sizes)
        columns.append({"x": x, "title": "Final" if final_round else f"Round {rnd['number']}",
                        "state": rnd["state"], "number": rnd["number"],
                        "target": rnd.get("target")})
        column = _column_boxes(rnd, x, TOP + (total_h - TOP - heights[ci]) / 2, final=final)
        for box in column:
            for r in box["rows"]:
                rows_at[(rnd["number"], r["bot"]["id"])] = (x, x + COL_W, r["y"] + ROW_H / 2)
        boxes.extend(column)
    curves = _connector_curves(rounds, rows_at) if connectors else []
    width = 20 + len(rounds) * (COL_W + COL_GAP) - COL_GAP
    return {"width": max(width, COL_W + 20), "height": total_h + 10, "columns": columns,
            "boxes": boxes, "curves": curves, "row_h": ROW_H, "head_h": HEAD_H}


# --- the bracket picture, drawn --------------------------------------------------------------


def bracket_svg(layout: dict[str, Any], *, match_href: str, bot_href: str) -> Markup:
    """The bracket picture of :func:`bracket_layout` as SVG, byte for byte what the
    ``_bracket.html`` template wrote (its whitespace too).  ``match_href`` and ``bot_href``:
    a match's and a bot's page URL without the id (routed once a page, not once a link).

    Python, not a template: the template spent 10-12 ms of a 256-entrant page's render on
    attribute lookups, conversions and escapes of a few thousand values; this is the same
    work without the interpreter of the template around each value."""
    w, h = layout["width"], layout["height"]
    out = ['<div class="bracket-scroll">\n'
           f'<svg class="bracket" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
           'aria-label="bracket: rounds as columns, tables with their bots">\n  ']
    for c in layout["columns"]:
        x, state = c["x"] + 4, escape(c["state"])
        target = f" &middot; {escape(c['target'])} go through" if c["target"] else ""
        out.append(f'\n  <text x="{x}" y="18" class="col-title">{escape(c["title"])}</text>\n'
                   f'  <text x="{x}" y="36" class="col-state col-{state}">{state}{target}'
                   '</text>\n  ')
    out.append("\n  ")
    for d in layout["curves"]:
        out.append(f'\n  <path d="{escape(d)}" class="connector"/>\n  ')
    out.append("\n  ")
    row_h = layout["row_h"]
    for b in layout["boxes"]:
        out.append(_svg_box(b, row_h, match_href, bot_href))
    out.append("\n</svg>\n</div>")
    return Markup("".join(out))


def _svg_box(b: dict[str, Any], row_h: int, match_href: str, bot_href: str) -> str:
    """One box of :func:`bracket_svg`: its frame, title, match chips and rows."""
    x, y, w = b["x"], b["y"], b["w"]
    table = b["kind"] == "table"
    playing = table and b["state"] == "playing"
    out = [f'\n  <g class="box box-{escape(b["kind"])} box-{escape(b["state"])}" '
           f'data-round="{escape(b["round"])}">\n'
           f'    <rect x="{x}" y="{y}" width="{w}" height="{b["h"]}" rx="8" class="box-bg"/>'
           '\n    ']
    if playing:
        out.append(f'<circle cx="{x + 13}" cy="{y + 13}" r="4" class="live-dot"/>')
    out.append(f'\n    <text x="{x + (22 if playing else 10)}" y="{y + 17}" class="box-title">'
               f'{escape(b["title"])}</text>\n    ')
    if table:
        out.append("\n      ")
        matches = b["matches"]
        n = len(matches)
        for i, m in enumerate(matches):
            chip_x = x + w - 12 - 20 * (n - i)
            state = escape(m["state"])
            label = i + 1 if n > 1 else "\u25b6"
            what = "live now: watch it" if m["state"] == "running" else state
            out.append(f'\n      <a href="{escape(match_href)}{escape(m["id"])}" '
                       'class="match-link">\n'
                       f'        <rect x="{chip_x}" y="{y + 5}" width="17" height="15" rx="3" '
                       f'class="mchip mchip-{state}"/>\n'
                       f'        <text x="{chip_x + 8.5}" y="{y + 16}" text-anchor="middle" '
                       f'class="mchip-text">{label}</text>\n'
                       f'        <title>match #{escape(m["id"])} ({what})</title>\n'
                       '      </a>\n      ')
        out.append("\n    ")
    out.append("\n    ")
    for r in b["rows"]:
        out.append(_svg_row(r, x, w, row_h, bot_href))
    out.append("\n  </g>\n  ")
    return "".join(out)


def _svg_row(r: dict[str, Any], x: float, w: float, row_h: int, bot_href: str) -> str:
    """One row of a box of :func:`bracket_svg`: a bot, its place, seed and score."""
    adv = r["adv"] or r["champion"]
    line, bot, y = r["line"], r["bot"], r["y"]
    out = ["\n      \n      "]
    if adv:
        kind = "row-champion" if r["champion"] else "row-adv"
        out.append(f'<rect x="{x + 3}" y="{y + 1}" width="{w - 6}" height="{row_h - 2}" '
                   f'rx="4" class="{kind}"/>')
    out.append("\n      ")
    if line:
        first = " first" if line["place"] == 1 else ""
        out.append(f'<text x="{x + 12}" y="{y + 15}" class="place{first}">'
                   f'{escape(line["place"])}</text>')
    out.append("\n      ")
    if bot["id"] > 0:
        name = bot["name"]
        if len(name) > 20:  # Jinja's truncate(20, True, "…", 0)
            name = name[:19] + "\u2026"
        marks = (" adv" if adv else "") + (" champ" if r["champion"] else "")
        out.append(f'<a href="{escape(bot_href)}{escape(bot["id"])}">\n'
                   f'        <text x="{x + 28}" y="{y + 15}" class="name{marks}">'
                   f'{escape(name)}</text>\n      </a>')
    else:
        out.append(f'<text x="{x + 28}" y="{y + 15}" class="tbd">{escape(bot["name"])}</text>')
    out.append("\n      ")
    if bot["seed"]:
        out.append(f'<text x="{x + 160}" y="{y + 15}" text-anchor="end" class="seed">'
                   f'#{escape(bot["seed"])}</text>')
    out.append("\n      ")
    if line:
        score = line["score"]
        # The template's ``'%+.1f' % score if score != score|int else '%+d' % score``.
        shown = f"{score:+.1f}" if score != do_int(score) else f"{int(score):+d}"
        out.append(f'<text x="{x + w - 10}" y="{y + 15}" text-anchor="end" '
                   f'class="score{" adv" if adv else ""}">{escape(shown)}</text>')
    out.append("\n    ")
    return "".join(out)
