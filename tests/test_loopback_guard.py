"""The suite's loopback guard refuses outside addresses before any packet leaves."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from loopback_guard import OutsideLoopbackError

# Documentation ranges (RFC 5737, RFC 3849): never routed, and the guard refuses them before
# connect() is reached in any case.
OUTSIDE = [("192.0.2.1", socket.AF_INET), ("2001:db8::1", socket.AF_INET6)]


@pytest.mark.parametrize(("host", "family"), OUTSIDE)
def test_connect_outside_loopback_is_refused(host: str, family: int) -> None:
    with socket.socket(family, socket.SOCK_STREAM) as s, pytest.raises(OutsideLoopbackError):
        s.connect((host, 80))
    with socket.socket(family, socket.SOCK_DGRAM) as s, pytest.raises(OutsideLoopbackError):
        s.sendto(b"x", (host, 53))
    with socket.socket(family, socket.SOCK_STREAM) as s, pytest.raises(OutsideLoopbackError):
        s.connect_ex((host, 80))


def test_outside_names_are_not_resolved() -> None:
    with pytest.raises(socket.gaierror, match="no outside names"):
        socket.getaddrinfo("example.com", 80)
    assert socket.getaddrinfo("localhost", 80)


def test_loopback_still_works() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass


def test_child_python_processes_are_guarded_too() -> None:
    code = (
        "import socket\n"
        "s = socket.socket()\n"
        "try:\n"
        "    s.connect(('192.0.2.1', 80))\n"
        "except ConnectionRefusedError as e:\n"
        "    print('refused:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "tests may only connect to loopback" in out
