"""Bot-controlled text never reaches the terminal raw (control characters are escaped)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from referee.__main__ import main
from referee.cli.terminal import printable
from tests.referee import protocolbots as pb

EVIL = "evil\x1b[2J\x1b]0;owned\x07\r\nrank 1 fake\u202etxt.exe\x9b31m\x00"


def test_printable_escapes_every_control_and_format_character() -> None:
    assert printable("plain text, ünïcode ♠") == "plain text, ünïcode ♠"
    assert printable(EVIL) == (
        "evil\\x1b[2J\\x1b]0;owned\\x07\\x0d\\x0arank 1 fake\\u202etxt.exe\\x9b31m\\x00")
    assert printable("a\nb", keep_newlines=True) == "a\nb"
    assert printable("a\u2028b\u200bc\U000e0001") == "a\\u2028b\\u200bc\\U000e0001"
    assert printable(printable(EVIL)) == printable(EVIL)  # already safe text stays as it is


def _assert_clean(text: str) -> None:
    assert not any(not (c.isprintable() or c == "\n") for c in text), repr(text)


def test_play_output_escapes_bot_names_and_fault_details(
        capsys: pytest.CaptureFixture[str]) -> None:
    def bad_turn(request: dict[str, Any]) -> dict[str, Any]:
        return {"move": request["legal_moves"][0]["id"], "turn": EVIL, "say": EVIL}

    evil = pb.ProtocolBot(description={"protocol": 1, "name": EVIL, "author": EVIL,
                                       "version": EVIL}, policy=bad_turn)
    bots = [evil] + [pb.ProtocolBot(name=f"b{i}") for i in range(3)]
    with pb.running(*bots):
        code = main(["play", *[b.url for b in bots], "--deals", "1", "--allow-private",
                     "--max-strikes", "3", "--deadline-ms", "3000"])
    assert code == 0
    out = capsys.readouterr().out
    _assert_clean(out)
    assert "evil\\x1b[2J" in out  # shown, escaped
    assert not any(line.startswith("rank 1 fake") for line in out.splitlines())


def test_verify_output_escapes_the_file_name(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "match.json"
    assert main(["demo", "--deals", "1", "--log", str(good)]) == 0
    evil = tmp_path / "x\x1b[2J\nOK: forged.json"
    shutil.copy(good, evil)
    capsys.readouterr()
    assert main(["verify", str(evil)]) == 0
    out = capsys.readouterr().out
    _assert_clean(out)
    assert len(out.splitlines()) == 1
    assert main(["verify", str(tmp_path / "missing\x07.json")]) == 2
    _assert_clean(capsys.readouterr().err)


def test_every_cli_print_site_goes_through_echo() -> None:
    # One helper at every print site: a bare print() or stream write in the CLI modules
    # would bypass the escaping.
    import ast

    root = Path(__file__).resolve().parents[3] / "referee"
    # Every command module (terminal.py itself is where echo writes; rulesdoc: no bot text).
    modules = [p for p in sorted((root / "cli").glob("*.py")) if p.name != "terminal.py"]
    assert len(modules) >= 8, modules  # the seven commands' modules and the dispatcher
    modules.append(root / "__main__.py")
    offenders = []
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if (isinstance(f, ast.Name) and f.id == "print") or (
                    isinstance(f, ast.Attribute) and f.attr == "write"
                    and not (isinstance(f.value, ast.Name) and f.value.id == "log")):
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, offenders
