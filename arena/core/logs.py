"""Log lines: plain text for a person at a terminal, or JSON lines for a log pipeline.

``LOG_FORMAT=text`` (the default, what ``arena demo`` prints) keeps the familiar
``time logger message`` lines.  ``LOG_FORMAT=json`` writes one JSON object per line and per
event, with the same fields every time (docs/operations.md, "Logs"):

``ts``
    the time, ISO 8601 in UTC with milliseconds;
``level``, ``logger``, ``msg``
    the record's level name, logger name and formatted message;
``process``, ``pid``, ``thread``
    which kind of arena process wrote it (web, worker, clock, live, ...), its pid, the
    thread's name;
``request_id``
    the web request (or live stream) the line belongs to: nginx's ``X-Request-ID`` when the
    app trusts the proxy, else one made up by the app; every answer carries it back in
    ``X-Request-ID``;
``match_id``, ``job_id``
    the match a worker's line belongs to, and the RQ job running it;
``exc``
    the traceback, when the record has one;

plus any ``extra={...}`` fields the call gave (``route``, ``status``, ``duration_ms`` of a
request's summary line, ``outcome`` of a match).  Fields without a value are left out.

The ids travel in :mod:`contextvars`: set once where a request or a job starts
(:func:`bind`), they are on every line written in that request's or job's thread or task,
whichever module writes it (RQ's, SQLAlchemy's), without passing them around.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id",
                                                                          default=None)
MATCH_ID: contextvars.ContextVar[int | None] = contextvars.ContextVar("match_id", default=None)
JOB_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("job_id", default=None)

CONTEXT: dict[str, contextvars.ContextVar[Any]] = {
    "request_id": REQUEST_ID, "match_id": MATCH_ID, "job_id": JOB_ID}
"""The fields that come from the context, by name."""

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(name)s %(message)s"

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message", "asctime", "taskName"}
"""Attributes every log record has: the others came from ``extra=``."""

_process_kind = "arena"


@contextmanager
def bind(**ids: Any) -> Iterator[None]:
    """Put ``request_id``, ``match_id`` or ``job_id`` on every line written in the block."""
    tokens = [(CONTEXT[name], CONTEXT[name].set(value)) for name, value in ids.items()]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            "process": _process_kind,
            "pid": record.process,
            "thread": record.threadName,
        }
        for name, var in CONTEXT.items():
            # Copied onto the record where it was made (ContextFilter), else from here.
            value = record.__dict__[name] if name in record.__dict__ else var.get()
            if value is not None:
                out[name] = value
        for key, value in record.__dict__.items():
            if (key not in _STANDARD and key not in CONTEXT and key not in out
                    and not key.startswith("_") and value is not None):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exc"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class ContextFilter(logging.Filter):
    """Copies the context's ids onto the record (``%(request_id)s`` in a text format), so a
    handler that formats later, in another thread, still has them."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in CONTEXT.items():
            if not hasattr(record, name):
                setattr(record, name, var.get())
        return True


def formatter(fmt: str) -> logging.Formatter:
    if fmt not in FORMATS:
        raise ValueError(f"LOG_FORMAT: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    return JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT)


def configure(fmt: str, *, process: str, level: int = logging.INFO) -> None:
    """Send this process's log records to stderr in ``fmt`` (``text`` or ``json``), once:
    the root logger gets one handler (replacing any an earlier call installed)."""
    global _process_kind
    _process_kind = process
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(fmt))
    handler.addFilter(ContextFilter())
    handler.set_name("arena")
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "arena"]:
        root.removeHandler(old)
    if fmt == "json":  # one format per stream: nothing else writes its own lines beside ours
        for old in list(root.handlers):
            root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)


def gunicorn_logconfig(fmt: str) -> dict[str, Any]:
    """gunicorn's ``logconfig_dict`` for ``fmt``: its own error log and the app's records
    through one handler, JSON lines when ``fmt`` is ``json`` (deploy/gunicorn.conf.py)."""
    fmt = fmt if fmt in FORMATS else "text"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"arena": {"()": f"{__name__}.formatter", "fmt": fmt}},
        "filters": {"context": {"()": f"{__name__}.ContextFilter"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "arena",
                                "filters": ["context"], "stream": "ext://sys.stderr"}},
        "root": {"level": "INFO", "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["stderr"], "propagate": False},
        },
    }


def set_process(kind: str) -> None:
    """Name the kind of process in every JSON line (``web`` in gunicorn's workers)."""
    global _process_kind
    _process_kind = kind


def log_format_from_env() -> str:
    return os.environ.get("LOG_FORMAT", "text").strip().lower() or "text"
