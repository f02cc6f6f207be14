"""``python -m referee replay`` on what the arena really serves: the public match log (JSON and
JSON Lines, ``GET /api/matches/<id>/log``) and the owner's calls export (``GET
/api/bots/<id>/calls``), saved as an author would save them, replayed against the bot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from referee.__main__ import main
from tests.referee import sdkbots

from .test_bot_calls import Flaky, Played, calls_json, flaky, played  # noqa: F401

pytestmark = pytest.mark.drill


def test_the_public_log_and_the_calls_export_replay_against_the_bot(
        client: FlaskClient, played: Played, flaky: Flaky, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    paths = {}
    for fmt in ("json", "jsonl"):
        r = client.get(f"/api/matches/{played.match_id}/log?format={fmt}")
        assert r.status_code == 200
        paths[fmt] = tmp_path / f"match.{fmt}"
        paths[fmt].write_bytes(r.get_data())
    export = calls_json(client, played.bot_id, played.token)
    paths["calls"] = tmp_path / "calls.json"
    paths["calls"].write_bytes(export.get_data())
    items = export.get_json()["items"]
    log = json.loads(paths["json"].read_text())
    seat = next(s["seat"] for s in log["seats"] if s["player"] == f"bot:{played.bot_id}")
    # The flaky bot answers by turn: replayed, it does at each turn what it did in the match.
    results = {}
    for kind, path in paths.items():
        args = [str(path), flaky.url, "--allow-private", "--json"]
        if kind != "calls":
            args += ["--seat", str(seat + 1)]  # people count seats from 1
        code = main(["replay", *args])
        doc = json.loads(capsys.readouterr().out)
        assert code == 1, kind  # its garbage and unknown ids are strikes again
        results[kind] = {(x["deal"], x["turn"]): x for x in doc["turns"]}
    def verdicts(kind: str) -> dict[tuple[int, int], tuple[str, str | None, str | None]]:
        return {k: (x["status"], x["now"]["move"], x["now"]["fault"])
                for k, x in results[kind].items()}

    assert verdicts("json") == verdicts("jsonl")
    assert verdicts("calls").items() <= verdicts("json").items()
    assert len(results["calls"]) == len(items)
    for x in results["json"].values():
        if x["logged"]["fault"] is None:
            assert x["status"] == "same"
        else:
            assert x["status"] == "strike" and x["now"]["fault"] == x["logged"]["fault"]
    # A fixed version of the bot (first legal, always): no strike; its differences are the
    # turns where the flaky one had faulted.
    with sdkbots.sdk_bot() as fixed:
        code = main(["replay", str(paths["calls"]), fixed.url, "--allow-private", "--json"])
        doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["summary"]["strike"] == 0
    faulted = {(c["deal"], c["turn"]) for c in items if c["fault"] is not None}
    assert faulted and {(x["deal"], x["turn"]) for x in doc["turns"]
                        if x["status"] == "different"} == faulted
