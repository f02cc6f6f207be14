"""The rating chart's geometry: every point where its numbers say, to a tenth of a pixel; and
the bracket picture drawn, every name escaped."""

from __future__ import annotations

import random
from typing import Any

from arena.web.charts import bracket_layout, bracket_svg, rating_chart


def test_each_point_is_its_coordinates_rounded_to_a_tenth() -> None:
    rng = random.Random(4)
    histories = [(f"b{i}", [(float(g), 1500 + rng.uniform(-300, 300)) for g in range(n)], None)
                 for i, n in enumerate((200, 41, 40, 1))]
    chart = rating_chart(histories)
    longest = 199.0
    lo, hi = float(chart.yticks[0][1]), float(chart.yticks[-1][1])
    pw, ph = chart.width - chart.left - chart.right, chart.height - chart.top - chart.bottom
    for (_, hist, _), line in zip(histories, chart.series, strict=True):
        want = [(round(chart.left + pw * g / longest, 1),
                 round(chart.top + ph * (1 - (v - lo) / (hi - lo)), 1)) for g, v in hist]
        assert line.points == " ".join(f"{a},{b}" for a, b in want)
        assert line.last == want[-1]
        assert line.dots == (want if len(want) <= 40 else [])


# --- the bracket picture, drawn ---------------------------------------------------------------


def _finished_knockout() -> dict[str, Any]:
    """Five bots: a table of four (two go through) and two byes, then the final."""
    names = ['<b>"x"&y</b>', "y" * 21, "z" * 20, "d", "e"]
    bot = [{"id": i + 1, "name": n, "seed": i + 1 if i else None} for i, n in enumerate(names)]

    def lines(seats: list[dict[str, Any]], scores: list[float]) -> list[dict[str, Any]]:
        return [{"bot": b, "place": k + 1, "score": s, "advanced": k < 2}
                for k, (b, s) in enumerate(zip(seats, scores, strict=True))]

    first = {"number": 1, "state": "done", "seats": bot[:4], "result":
             lines(bot[:4], [3.5, 1.0, -0.25, -4.0]),
             "matches": [{"id": 7, "state": "finished"}, {"id": 8, "state": "finished"}]}
    final_seats = [bot[0], bot[1], bot[3], bot[4]]
    final = {"number": 1, "state": "done", "seats": final_seats,
             "result": lines(final_seats, [2.0, 1.5, 0.0, -3.5]),
             "matches": [{"id": 9, "state": "finished"}]}
    return {"state": "finished", "round_sizes": [5, 4], "seats": 4, "rounds": [
        {"number": 1, "state": "done", "byes": bot[3:], "target": 4,
         "advanced": [bot[0], bot[1], bot[3], bot[4]], "tables": [first]},
        {"number": 2, "state": "done", "byes": [], "target": None, "advanced": None,
         "tables": [final]}]}


def test_the_bracket_escapes_and_shortens_names_and_links_every_match_and_bot() -> None:
    svg = str(bracket_svg(bracket_layout(_finished_knockout(), connectors=True),
                          match_href="/m/", bot_href="/b/"))
    assert "<b>" not in svg and "&lt;b&gt;&#34;x&#34;&amp;y&lt;/b&gt;" in svg
    assert f">{'y' * 19}\u2026</text>" in svg and f">{'z' * 20}</text>" in svg
    assert svg.count('href="/b/1"') == 2 and svg.count('href="/b/5"') == 2  # a bye, the final
    assert [f'href="/m/{i}"' in svg for i in (7, 8, 9)] == [True] * 3
    assert ">1</text>" in svg and ">2</text>" in svg and ">\u25b6</text>" in svg  # chips
    assert svg.count('class="connector"') == 4 and svg.count('class="row-champion"') == 1
    assert ">+3.5</text>" in svg and ">-0.2</text>" in svg and ">+1</text>" in svg
    assert svg.startswith('<div class="bracket-scroll">') and svg.endswith("</svg>\n</div>")


def test_a_bracket_not_played_yet_shows_who_is_to_be_decided() -> None:
    bracket = _finished_knockout()
    bracket["state"] = "running"
    del bracket["rounds"][1]
    bracket["rounds"][0]["tables"][0]["result"] = None
    svg = str(bracket_svg(bracket_layout(bracket, connectors=True), match_href="/m/",
                          bot_href="/b/"))
    assert svg.count('class="tbd">to be decided</text>') == 4
    assert 'class="row-champion"' not in svg and 'class="place' not in svg
