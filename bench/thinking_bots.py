"""Loopback bots for the concurrency benchmark: many connections, fixed thinking time, cheap.

    python bench/thinking_bots.py --think think100=100 --think think500=500 --hang hang

One asyncio process serves every bot given, each on its own loopback port, and prints
``<name> listening on http://127.0.0.1:<port>`` to stderr for each.  A ``--think NAME=MS`` bot
answers every ``/move`` after sleeping MS milliseconds (the lowest legal play, or a pass where
allowed: every deal then ends after the same 49 turns, so matches with one seed have one
length); a ``--hang NAME`` bot never answers a match's ``/move`` (it answers the health
check's probe, whose ``match_id`` starts with ``health-``, so it can be registered), which is
how the benchmark measures how late the referee's deadlines fire.

Why not the sample bots: they run a thread per connection and a strategy per move; a
benchmark of the worker with hundreds of matches needs hundreds of concurrent keep-alive
connections from a bot side that costs as little CPU as possible (it shares the machine with
the worker), so this one is an event loop that parses the request and sleeps.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from typing import Any

DESCRIBE = {"protocol": 1, "author": "bench", "version": "1"}


def answer(status: int, body: dict[str, Any]) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    reason = "OK" if status == 200 else "Not Found"
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: keep-alive\r\n\r\n").encode() + data


def choose(request: dict[str, Any]) -> dict[str, Any]:
    ids = [m["id"] for m in request.get("legal_moves", [])]
    move = "pass" if "pass" in ids else (ids[0] if ids else "pass")
    return {"move": move, "turn": request.get("turn")}


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                           name: str, think_s: float | None) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            # Several bots may share a port under path prefixes (``/s0/move``): the arena
            # seats one endpoint (scheme, host, port, path) once per match.
            last = path.rstrip("/").rsplit("/", 1)[-1]
            path = f"/{last}" if last in ("move", "start", "end") else "/"
            length = 0
            for line in lines[1:]:
                if line[:15].lower() == "content-length:":
                    length = int(line[15:].strip())
            body = await reader.readexactly(length) if length else b""
            if method == "GET" and path == "/":
                out = answer(200, {**DESCRIBE, "name": name})
            elif method == "POST" and path in ("/start", "/end"):
                out = answer(200, {})
            elif method == "POST" and path == "/move":
                request = json.loads(body)
                probe = str(request.get("match_id", "")).startswith("health-")
                if think_s is None and not probe:
                    await reader.read()  # hang until the referee gives up and closes
                    return
                if think_s and not probe:
                    await asyncio.sleep(think_s)
                out = answer(200, choose(request))
            else:
                out = answer(404, {"error": "not found"})
            writer.write(out)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def main_async(bots: list[tuple[str, float | None]]) -> None:
    servers = []
    for name, think_s in bots:
        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter,
                         name: str = name, think_s: float | None = think_s) -> None:
            await serve_connection(r, w, name, think_s)

        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        port = server.sockets[0].getsockname()[1]
        print(f"{name} listening on http://127.0.0.1:{port}", file=sys.stderr, flush=True)
        servers.append(server)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--think", action="append", default=[], metavar="NAME=MS")
    ap.add_argument("--hang", action="append", default=[], metavar="NAME")
    args = ap.parse_args()
    bots: list[tuple[str, float | None]] = []
    for spec in args.think:
        name, ms = spec.split("=", 1)
        bots.append((name, float(ms) / 1000))
    bots += [(name, None) for name in args.hang]
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main_async(bots))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
