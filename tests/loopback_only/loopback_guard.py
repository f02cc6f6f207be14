"""Tests talk to this machine only: a guard on Python's sockets, for the test process and for
every Python process it starts.

The suite's rule (README, "Development") is that tests send traffic only to loopback
(127.0.0.0/8, ::1) or into network namespaces they create.  A test that reaches for anything
else -- a bot URL that the SSRF guard should have refused, a library phoning home, a name that
needs a real resolver -- fails at once with :class:`OutsideLoopbackError` naming the address,
before any packet leaves.  Unix sockets are allowed; so are names that resolve locally
(``localhost``, ``*.localhost``, this machine's host name) and IP literals (checked when used).

Installed by tests/conftest.py in the test process, and in child Python processes through
``sitecustomize.py`` in this folder, which conftest puts on ``PYTHONPATH``.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

ENV_FLAG = "ARENA_TESTS_LOOPBACK_ONLY"


class OutsideLoopbackError(ConnectionRefusedError):
    """A test tried to reach an address outside loopback."""


def _loopback(host: Any) -> bool:
    if not isinstance(host, str):
        return False
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _check(sock: socket.socket, address: Any) -> None:
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    host = address[0] if isinstance(address, tuple) and address else address
    if not _loopback(host):
        raise OutsideLoopbackError(f"tests may only connect to loopback, not {address!r}")


def _local_name(host: Any) -> bool:
    if host is None or not isinstance(host, str | bytes):
        return True
    name = host.decode() if isinstance(host, bytes) else host
    name = name.rstrip(".").lower()
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
        return True  # a literal: connect() checks it
    except ValueError:
        pass
    return (
        name in ("", "localhost", socket.gethostname().lower())
        or name.endswith(".localhost")
    )


def install() -> None:
    """Patch connect, connect_ex, sendto and getaddrinfo (idempotent)."""
    if getattr(socket, "_arena_loopback_guard", False):
        return
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_sendto = socket.socket.sendto
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        _check(self, address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _check(self, address)
        return real_connect_ex(self, address)

    def sendto(self: socket.socket, data: Any, *args: Any) -> int:
        _check(self, args[-1])
        return real_sendto(self, data, *args)  # type: ignore[arg-type]

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _local_name(host):
            raise socket.gaierror(
                socket.EAI_NONAME, f"tests resolve no outside names (asked for {host!r})"
            )
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.socket.sendto = sendto  # type: ignore[assignment]
    socket.getaddrinfo = getaddrinfo
    socket._arena_loopback_guard = True  # type: ignore[attr-defined]
