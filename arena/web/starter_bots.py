"""The starter bots an author can begin from, one per language, as the "Write a bot" page
(``/docs/starters``) lists them.

The starters themselves live in the repository's ``starters/`` folder (a web process cannot
serve that folder, so the page names it and says what to type); the same table is in the
README's "Writing a bot" section and in ``docs/starters.md``, and ``tests/docs`` checks that
all three name the same folders and commands and that each folder exists.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StarterBot:
    language: str
    folder: str
    """Where it is in the repository."""
    needs: str
    """The toolchain."""
    run: str
    """The command that starts it on port 8000 (run in its folder)."""
    test: str
    """Its own tests (run in its folder)."""
    strategy: str
    """The one file an author edits."""


STARTER_BOTS: tuple[StarterBot, ...] = (
    StarterBot("Python", "sample_bots", "Python 3.11+ (the SDK: sample_bots/sdk.py)",
               "python first_legal.py",
               "python -m referee health http://127.0.0.1:8000 --allow-private",
               "choose() in first_legal.py (the README's example)"),
    StarterBot("TypeScript / JavaScript", "starters/javascript", "Node.js 20+",
               "npm ci && npm run build && npm start", "npm test", "src/strategy.ts"),
    StarterBot("Go", "starters/go", "Go 1.19+ (standard library only)",
               "go run .", "go test ./...", "strategy.go"),
    StarterBot("Java", "starters/java", "Java 17+ with Gson",
               "make build && java -jar build/bigtwo-starter.jar", "make test (or mvn test)",
               "src/main/java/bigtwo/starter/Strategy.java"),
)
"""Python's SDK first (``sample_bots/sdk.py``), then the starters of ``starters/``."""
