"""The rating chart's geometry: every point where its numbers say, to a tenth of a pixel."""

from __future__ import annotations

import random

from arena.web.charts import rating_chart


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
