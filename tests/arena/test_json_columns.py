"""JSON columns decoded by orjson (arena.core.storage.json_from_driver): the values json gave,
exactly, and json's own decoding for what orjson refuses or would read differently."""

from __future__ import annotations

import json
import random

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

from arena.core.models import Bot
from arena.core.storage import get_db, json_from_driver

from .conftest import both_backends, submit
from .json_values import random_value


def test_every_document_decodes_to_jsons_value() -> None:
    leaves = [None, True, False, 0, -3, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1,
              10**30, 1.5, -0.0, 1e300, 0.1, "", 'é"\\\n<script>', "\u2028 \U0001f600",
              "\x00", "\ud800", float("nan"), float("-inf")]
    rng = random.Random(5)

    for _ in range(3000):
        text = json.dumps(random_value(rng, leaves), ensure_ascii=rng.random() < 0.5)
        for data in (text, text.encode("utf-8", "surrogatepass")):
            ours, theirs = json_from_driver(data), json.loads(text)
            # repr: NaN equals nothing, and 2**64 must stay an int, not a float.
            assert repr(ours) == repr(theirs), text


@both_backends
def test_a_bots_description_comes_back_as_stored(app: Flask, client: FlaskClient) -> None:
    """Through the database: a description holding an integer past 64 bits, a lone
    surrogate's escape (kept before the text rule) and text beyond ASCII."""
    bot_id, _ = submit(client, "described", "http://127.0.0.1:9/")
    info = {"name": "é \U0001f600", "version": "1", "big": 2**70, "odd": "\ud800"}
    with get_db(app).begin() as s:
        s.execute(update(Bot).where(Bot.id == bot_id).values(info=info))
    with get_db(app).begin() as s:
        back = s.scalar(select(Bot.info).where(Bot.id == bot_id))
    assert back["big"] == 2**70 and isinstance(back["big"], int)
    assert back["name"] == "é \U0001f600"
    assert back["odd"] == "\\ud800"  # the text rule's repair on read (BotSaidJSON)
