"""The test helpers' closed port stays closed: refused, and not bindable by anybody else."""

from __future__ import annotations

import socket

import pytest

from tests.ports import closed_port, free_port


def test_a_closed_port_refuses_and_cannot_be_taken_by_another_server() -> None:
    port = closed_port()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    for reuse in (False, True):  # a server that asks for SO_REUSEADDR does not get it either
        with socket.socket() as other:
            if reuse:
                other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            with pytest.raises(OSError):
                other.bind(("127.0.0.1", port))
    with pytest.raises(ConnectionRefusedError):  # still refused afterwards
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_free_port_can_be_bound_by_the_test_server() -> None:
    with socket.create_server(("127.0.0.1", free_port())) as server:
        assert server.getsockname()[1] > 0
