"""Layered configuration: defaults, then environment, then test overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena import create_app
from arena.core.config import Defaults, convert, default_settings, from_environment, setting_docs


def test_every_setting_is_documented() -> None:
    docs = setting_docs()
    names = default_settings()
    assert names, "no settings found"
    missing = [n for n in names if not docs.get(n)]
    assert not missing, f"settings without a docstring: {missing}"


def test_environment_overrides_defaults_and_test_config_overrides_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ELO_K", "24")
    monkeypatch.setenv("LADDER_DEALS", "9")
    monkeypatch.setenv("ALLOW_PRIVATE_BOT_URLS", "yes")
    app = create_app({"INSTANCE_PATH": str(tmp_path), "LADDER_DEALS": 3})
    assert app.config["ELO_K"] == 24.0
    assert app.config["LADDER_DEALS"] == 3
    assert app.config["ALLOW_PRIVATE_BOT_URLS"] is True
    assert app.config["ELO_INITIAL"] == Defaults.ELO_INITIAL


def test_secret_key_is_created_once_in_the_instance_folder(tmp_path: Path) -> None:
    a = create_app({"INSTANCE_PATH": str(tmp_path)})
    b = create_app({"INSTANCE_PATH": str(tmp_path)})
    assert a.config["SECRET_KEY"] == b.config["SECRET_KEY"]
    assert len(a.config["SECRET_KEY"]) == 64
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


def test_sqlite_is_the_embedded_default(tmp_path: Path) -> None:
    from arena.core.storage import database_url

    app = create_app({"INSTANCE_PATH": str(tmp_path)})
    assert database_url(app) == f"sqlite:///{tmp_path / 'arena.sqlite3'}"
    app.config["DATABASE_URL"] = "postgres://u@h/db"
    assert database_url(app) == "postgresql+psycopg://u@h/db"


@pytest.mark.parametrize(
    ("raw", "default", "want"),
    [("1", False, True), ("off", True, False), ("12", 3, 12), ("2.5", 1.0, 2.5), ("x", "", "x")],
)
def test_convert(raw: str, default: object, want: object) -> None:
    assert convert("X", raw, default) == want


@pytest.mark.parametrize(("raw", "default"), [("maybe", False), ("1.5", 3), ("abc", 1.0)])
def test_convert_refuses_nonsense(raw: str, default: object) -> None:
    with pytest.raises(ValueError, match="X: expected"):
        convert("X", raw, default)


def test_unknown_environment_variables_are_ignored() -> None:
    assert from_environment({"NOT_A_SETTING": "1", "ELO_K": "10"}) == {"ELO_K": 10.0}


def test_operations_manual_lists_every_setting() -> None:
    manual = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    missing = [name for name in default_settings() if f"`{name}`" not in manual]
    assert not missing, f"docs/operations.md does not describe {missing}"


# --- settings that take one of a few words, or rule set names: refused at start ----------------


@pytest.mark.parametrize(("name", "value", "says"), [
    ("LADDER_FORMAT", "swiss", "LADDER_FORMAT: expected one of plain, duplicate, got 'swiss'"),
    ("LADDER_FORMAT", "", "LADDER_FORMAT: expected one of plain, duplicate, got ''"),
    ("MATCH_RULESET", "standrad", "MATCH_RULESET: 'standrad' is not a rule set"),
    ("LADDER_RULESETS", "standard, nope", "LADDER_RULESETS: 'nope' is not a rule set"),
    ("LADDER_RULESETS", "standard+x=1", "LADDER_RULESETS: 'standard+x=1' is not a rule set"),
])
def test_a_setting_the_code_cannot_use_stops_the_start(
    tmp_path: Path, name: str, value: str, says: str
) -> None:
    from arena.core.config import SettingError

    with pytest.raises(SettingError) as info:
        create_app({"INSTANCE_PATH": str(tmp_path), name: value})
    assert says in str(info.value)


@pytest.mark.parametrize(("name", "value"), [
    ("LADDER_FORMAT", "duplicate"), ("LADDER_FORMAT", " Plain "),  # read stripped, lower-case
    ("MATCH_RULESET", "hong-kong"), ("LADDER_RULESETS", "standard, heads-up,"),
    ("LADDER_RULESETS", ""),  # the ladder's default
])
def test_the_values_the_code_reads_start(tmp_path: Path, name: str, value: str) -> None:
    assert create_app({"INSTANCE_PATH": str(tmp_path), name: value}).config[name] == value


def test_a_process_with_a_bad_ladder_format_refuses_with_the_reason(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "ARENA_INSTANCE_PATH": str(tmp_path), "LADDER_FORMAT": "swiss"}
    done = subprocess.run([sys.executable, "-m", "arena", "config"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr == ("arena: refusing to start: LADDER_FORMAT: expected one of plain, "
                           "duplicate, got 'swiss'\n")  # one line, no traceback
