"""``python -m referee verify`` on a tournament zip, a folder and several files at once."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from referee.__main__ import main
from referee.runner import log as mlog


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A valid log and an invalid one (a turn's legal-move count changed)."""
    folder = tmp_path_factory.mktemp("logs")
    good = folder / "good.json"
    assert main(["demo", "--deals", "2", "--seed", "3", "--log", str(good)]) == 0
    doc = mlog.read(good)
    doc["deals"][1]["turns"][4]["legal"] += 2
    bad = folder / "bad.json"
    mlog.write(doc, bad)
    return good, bad


def tournament_zip(path: Path, *logs: Path) -> Path:
    """A zip laid out like the arena's tournament archive."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("tournament-1/tournament.json", json.dumps({"id": 1}))
        z.writestr("tournament-1/standings.json", json.dumps([{"rank": 1}]))
        z.writestr("tournament-1/standings.csv", "rank,bot\n1,a\n")
        for n, log in enumerate(logs, 1):
            z.writestr(f"tournament-1/logs/match-{n}.json", log.read_bytes())
    return path


def test_a_tournament_zip_checks_every_log_and_skips_the_rest(
    tmp_path: Path, logs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    good, _ = logs
    archive = tournament_zip(tmp_path / "t.zip", good, good)
    capsys.readouterr()
    assert main(["verify", str(archive)]) == 0
    out = capsys.readouterr().out
    assert out.count(": valid: match") == 2
    assert "standings.json: skipped: not a match log" in out
    assert "2 logs: 2 valid, 0 invalid, 0 unreadable" in out


def test_one_bad_log_in_a_zip_fails_the_run_and_is_named(
    tmp_path: Path, logs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tournament_zip(tmp_path / "t.zip", *logs)
    capsys.readouterr()
    assert main(["verify", str(archive)]) == 1
    out = capsys.readouterr().out
    assert "logs/match-2.json: INVALID at deal 2, turn 5" in out  # deals[1].turns[4]
    assert "2 logs: 1 valid, 1 invalid" in out


def test_a_folder_and_several_files(
    tmp_path: Path, logs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = logs
    assert bad.parent == good.parent
    assert main(["verify", str(good.parent)]) == 1
    assert main(["verify", str(good), str(good)]) == 0
    assert "2 logs: 2 valid" in capsys.readouterr().out
    assert main(["verify", str(tmp_path)]) == 2  # an empty folder
    assert "no .json or .jsonl file" in capsys.readouterr().err


def test_a_binary_file_is_unreadable_in_plain_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blob = tmp_path / "log.json"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    assert main(["verify", str(blob)]) == 2
    err = capsys.readouterr().err
    assert "cannot read: not UTF-8 text" in err and "codec" not in err


def test_a_zip_without_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "empty.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("readme.txt", "nothing here")
    assert main(["verify", str(archive)]) == 2
    assert "no .json or .jsonl member" in capsys.readouterr().err
    only_other = tournament_zip(tmp_path / "t.zip")
    assert main(["verify", str(only_other)]) == 2
    assert "no match log found" in capsys.readouterr().err
