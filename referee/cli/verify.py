"""``python -m referee verify PATH...``: replay match logs and check every move and score.

Each PATH is a match log (JSON or JSON Lines), a zip (a tournament's archive: every log in
it is checked, its standings and bracket are skipped) or a folder (every ``.json`` and
``.jsonl`` file below it).  One line per log; with more than one log, a summary line.

Exit status, as docs/logs.md says: 0 when every log is valid; 1 when any log is invalid (the
first bad place of each: deal index, turn index, what differs); 2 when nothing was invalid but
something could not be read, or a file named on its own is not a match log at all (JSON
without ``"format": "bigtwo-match-log"``).  Inside a zip or a folder, JSON that is not a match
log (standings, the bracket) is skipped, not an error.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from referee.runner import log

from .terminal import echo

LOG_SUFFIXES = (".json", ".jsonl")


@dataclass(frozen=True)
class Source:
    """One candidate log: where it came from, its text (or why it has none), and whether it
    was named on its own (then a JSON document that is no match log is an error)."""

    name: str
    text: str | None
    error: str = ""
    named: bool = False


def _decode(name: str, data: bytes, named: bool) -> Source:
    try:
        return Source(name, data.decode("utf-8"), named=named)
    except UnicodeDecodeError as exc:
        return Source(name, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})", named)


def sources(path: Path) -> Iterator[Source]:
    """Every log candidate ``path`` stands for: the file, a zip's members, a folder's files."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in LOG_SUFFIXES)
        if not files:
            yield Source(str(path), None, "no .json or .jsonl file in this folder", named=True)
        for file in files:
            yield _decode(str(file), file.read_bytes(), named=False)
        return
    try:
        is_zip = zipfile.is_zipfile(path)
    except OSError as exc:
        yield Source(str(path), None, str(exc), named=True)
        return
    if is_zip:
        with zipfile.ZipFile(path) as z:
            members = [m for m in z.namelist() if m.endswith(LOG_SUFFIXES)]
            if not members:
                yield Source(str(path), None, "no .json or .jsonl member in this zip", True)
            for member in members:
                yield _decode(f"{path}:{member}", z.read(member), named=False)
        return
    try:
        data = path.read_bytes()
    except OSError as exc:
        yield Source(str(path), None, str(exc), named=True)
        return
    yield _decode(str(path), data, named=True)


def check(source: Source) -> int | None:
    """Verify one candidate and print its line; its exit status, or None when skipped."""
    if source.text is None:
        echo(f"{source.name}: cannot read: {source.error}", file=sys.stderr, keep_newlines=False)
        return 2
    try:
        doc = log.loads(source.text)
    except log.LogError as exc:
        if not source.named:
            echo(f"{source.name}: skipped: not a match log ({exc})", keep_newlines=False)
            return None
        echo(f"{source.name}: cannot read: {exc}", file=sys.stderr, keep_newlines=False)
        return 2
    if doc.get("format") != log.FORMAT:
        if not source.named:
            echo(f"{source.name}: skipped: not a match log", keep_newlines=False)
            return None
        echo(
            f"{source.name}: cannot read: not a match log "
            f"(its 'format' is {doc.get('format')!r}, a log's is {log.FORMAT!r})",
            file=sys.stderr,
            keep_newlines=False,
        )
        return 2
    verdict = log.verify(doc)
    if verdict.ok:
        echo(f"{source.name}: {verdict.summary}", keep_newlines=False)
        return 0
    echo(f"{source.name}: INVALID at {verdict.where()}: {verdict.problem}", keep_newlines=False)
    return 1


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m referee verify", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", metavar="PATH",
                    help="a match log (JSON or JSON Lines), a tournament zip, or a folder")
    args = ap.parse_args(argv)
    statuses = [s for p in args.paths for src in sources(Path(p)) if (s := check(src)) is not None]
    if not statuses:
        echo("no match log found in " + ", ".join(args.paths), file=sys.stderr,
             keep_newlines=False)
        return 2
    if len(statuses) > 1:
        valid, invalid = statuses.count(0), statuses.count(1)
        echo(f"{len(statuses)} logs: {valid} valid, {invalid} invalid, "
             f"{len(statuses) - valid - invalid} unreadable", keep_newlines=False)
    if 1 in statuses:
        return 1
    return 2 if 2 in statuses else 0
