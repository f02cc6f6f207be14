"""arena.web.jsonprovider: the API's answers written by orjson, the same JSON values as Flask's
own provider wrote, and Flask's own text wherever orjson would refuse or differ in meaning."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json
import random
import uuid

from flask import Flask
from flask.json.provider import DefaultJSONProvider
from flask.testing import FlaskClient
from markupsafe import Markup

from arena.web.jsonprovider import OrjsonProvider

from .json_values import random_value


@dataclasses.dataclass
class Point:
    x: int
    label: str


def providers() -> tuple[OrjsonProvider, DefaultJSONProvider]:
    app = Flask(__name__)
    ours = OrjsonProvider(app)
    theirs = DefaultJSONProvider(app)
    theirs.sort_keys = False
    return ours, theirs


def test_every_value_is_the_json_value_flask_wrote() -> None:
    ours, theirs = providers()
    leaves = [None, True, False, 0, -3, 2**63 - 1, 1.5, -0.0, 1e300, "", 'é"\\\n<script>',
              "\u2028 \U0001f600", dt.datetime(2026, 12, 7, 19, 30, tzinfo=dt.UTC),
              dt.date(2026, 12, 7), decimal.Decimal("1.10"), uuid.UUID(int=7),
              Point(1, "p"), Markup("<b>x</b>")]
    rng = random.Random(11)

    for _ in range(2000):
        v = random_value(rng, leaves)
        text = ours.dumps(v, separators=(",", ":"))
        assert json.loads(text) == json.loads(theirs.dumps(v, separators=(",", ":"))), v
    # Keys in the order given, not sorted; UTF-8, not escapes.
    assert ours.dumps({"b": 1, "a": "é"}, separators=(",", ":")) == '{"b":1,"a":"é"}'
    # A date is Flask's HTTP date, not orjson's ISO form.
    assert ours.dumps(dt.date(2026, 12, 7)) == theirs.dumps(dt.date(2026, 12, 7))


def test_what_orjson_refuses_is_flasks_own_text() -> None:
    ours, theirs = providers()
    for odd in ({1: [2]}, {"x": [2**70]}, ["\ud800"], {"nested": {"s": "a\udcff"}}):
        assert ours.dumps(odd, separators=(",", ":")) == theirs.dumps(
            odd, separators=(",", ":")), odd
    # Indented (Flask's debug mode): Flask's own.
    assert ours.dumps({"a": [1]}, indent=2) == theirs.dumps({"a": [1]}, indent=2)


def test_a_nan_is_null_valid_json() -> None:
    ours, theirs = providers()
    assert theirs.dumps([float("nan")]) == "[NaN]"  # what Flask wrote: not JSON
    assert json.loads(ours.dumps([float("nan"), float("inf")])) == [None, None]


def test_the_app_answers_with_it(client: FlaskClient) -> None:
    assert isinstance(client.application.json, OrjsonProvider)
    r = client.get("/api/families")
    assert r.status_code == 200 and r.mimetype == "application/json"
    assert json.loads(r.get_data()) == r.get_json()
