""""Write a bot": the starter bots page (``/docs/starters``), the links to it from the home
page and the submit page, and the one table it shares with the README and docs/starters.md.

The web process cannot serve the repository's ``starters/`` folder, so the page names each
folder and its commands; those must name folders that exist and say the same as the docs."""

from __future__ import annotations

from pathlib import Path

from flask.testing import FlaskClient
from markupsafe import escape

from arena.web.starter_bots import STARTER_BOTS

ROOT = Path(__file__).resolve().parents[2]


def test_the_page_lists_every_starter_with_its_commands(client: FlaskClient) -> None:
    resp = client.get("/docs/starters")
    assert resp.status_code == 200 and resp.mimetype == "text/html"
    page = resp.get_data(as_text=True)
    assert "<h1>Write a bot</h1>" in page
    for s in STARTER_BOTS:
        for text in (s.language, s.folder, s.needs, s.run, s.test, s.strategy):
            assert str(escape(text)) in page, text
    # Commands hold "&&": shown escaped, never as raw markup.
    assert "npm ci &amp;&amp; npm run build" in page
    assert 'href="/bots/new"' in page


def test_home_and_submit_pages_link_to_it(client: FlaskClient) -> None:
    for url in ("/", "/bots/new"):
        page = client.get(url).get_data(as_text=True)
        assert '<a href="/docs/starters">Write a bot</a>' in page, url


def test_every_starter_folder_exists_with_its_strategy_file() -> None:
    for s in STARTER_BOTS[1:]:  # the first is Python's SDK, whose bot is the README's example
        folder = ROOT / s.folder
        assert (folder / "README.md").is_file(), s.folder
        assert (folder / s.strategy).is_file(), (s.folder, s.strategy)
    assert (ROOT / "sample_bots" / "sdk.py").is_file()


def test_the_readme_and_docs_say_what_the_page_says() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Writing a bot", 1)[1].split("\n## ", 1)[0]
    doc = (ROOT / "docs" / "starters.md").read_text(encoding="utf-8")
    for s in STARTER_BOTS:
        assert f"| `{s.run}` |" in doc, s.run
        assert f"`{s.strategy.split(' ')[0]}`" in doc, s.strategy
        if s.folder.startswith("starters/"):
            assert f"[`{s.folder}`]({s.folder})" in section, s.folder
            assert f"| `{s.run}` | `{s.test.split(' (')[0]}`" in section, s.run
            assert f"[`{s.folder}`](../{s.folder})" in doc, s.folder
    assert "[docs/starters.md](docs/starters.md)" in section
