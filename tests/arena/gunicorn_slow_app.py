"""The arena app plus deliberately slow routes, for the gunicorn deadline tests only
(``gunicorn "tests.arena.gunicorn_slow_app:create()"``).  Never part of the service."""

from __future__ import annotations

import threading

from flask import Flask, jsonify
from flask.typing import ResponseReturnValue
from sqlalchemy import text

from arena import create_app
from arena.core.storage import get_db


def create() -> Flask:
    app = create_app()

    @app.get("/test-slow/python")
    def spin() -> ResponseReturnValue:
        n = 0
        while True:  # a runaway loop in Python code
            n += 1

    @app.get("/test-slow/sql")
    def slow_sql() -> ResponseReturnValue:
        with get_db().engine.connect() as conn:
            conn.execute(text("SELECT pg_sleep(60)"))
        return jsonify(ok=True)

    @app.get("/test-slow/blocked")
    def blocked() -> ResponseReturnValue:
        threading.Event().wait()  # blocked in C: no bytecode runs
        return jsonify(ok=True)

    return app
