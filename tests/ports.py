"""Loopback ports for tests: one where nothing listens, and one that is free to bind.

A "closed" port used to be picked by binding port 0 and closing the socket at once. The port
was then free for anybody: under a saturated CI run (two suites side by side, each with many
xdist workers binding port 0) another test's server took it, and a call that had to be refused
reached that server and read its HTTP status instead (test_private_urls, CI of 05234a8).

:func:`closed_port` therefore keeps the socket bound, and never listening, for the rest of the
process: the kernel refuses every connection to it (a SYN to a port without a listener gets a
reset), and no other socket can bind it meanwhile, so the refusal holds for as long as the test
needs it. :func:`free_port` is for a port that a server of the test will bind itself; that
one is released on purpose, and the server binds it a moment later.
"""

from __future__ import annotations

import socket

_held: list[socket.socket] = []  # bound, never listening: kept open so the port stays ours


def closed_port() -> int:
    """A loopback port that refuses every connection for the life of this process."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _held.append(s)
    port: int = s.getsockname()[1]
    return port


def closed_port_url() -> str:
    """``http://127.0.0.1:<port>`` where nothing listens, and nothing can start to."""
    return f"http://127.0.0.1:{closed_port()}"


def free_port() -> int:
    """A loopback port that is free now, for a server that the test starts to bind."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
