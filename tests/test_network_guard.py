"""The network guard of tests/conftest.py: on for every test, loopback only when a test asks.

Each test provokes refusals on purpose, asserts them, and clears `network_guard.refused` so the
guard's teardown check (which fails a test whose refused attempt was swallowed) stays quiet.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

ELSEWHERE = ("192.0.2.1", 80)  # TEST-NET-1: documentation only, never routed


@pytest.fixture
def listening():
    """A TCP listener on 127.0.0.1 (the kernel completes a connection from its backlog), and its port."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def test_by_default_every_connection_and_look_up_is_refused(network_guard, listening):
    with pytest.raises(AssertionError, match="network connection.*mark the test @pytest.mark.local_servers"):
        socket.create_connection(ELSEWHERE, timeout=1)
    with pytest.raises(AssertionError, match="network connection"), socket.socket() as raw:
        raw.connect(("127.0.0.1", listening))  # even loopback, unless the test asks
    with pytest.raises(AssertionError, match="network connection"):
        socket.getaddrinfo("example.com", 443)
    with pytest.raises(AssertionError, match="network connection"):
        socket.gethostbyname("example.com")
    assert network_guard.refused == [
        "create_connection '192.0.2.1'",
        "connect '127.0.0.1'",
        "getaddrinfo 'example.com'",
        "gethostbyname 'example.com'",
    ]
    network_guard.refused.clear()


@pytest.mark.local_servers
def test_a_test_that_asks_reaches_127_0_0_1_and_nothing_else(network_guard, listening):
    with socket.create_connection(("127.0.0.1", listening), timeout=5):
        pass
    with pytest.raises(AssertionError, match="only 127.0.0.1 is allowed here"):
        socket.create_connection(ELSEWHERE, timeout=1)
    with pytest.raises(AssertionError, match="only 127.0.0.1 is allowed here"):
        socket.getaddrinfo("example.com", 443)
    with network_guard.refusing_all(), pytest.raises(AssertionError, match="network connection"):
        socket.create_connection(("127.0.0.1", listening), timeout=5)
    assert network_guard.refused == [
        "create_connection '192.0.2.1'",
        "getaddrinfo 'example.com'",
        "create_connection '127.0.0.1'",
    ]
    network_guard.refused.clear()


def test_unix_sockets_are_not_network_and_stay_open(tmp_path):
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as client:
        server.bind(path)
        server.listen()
        client.connect(path)


def test_a_swallowed_refusal_still_fails_the_test(pytester):
    """A library that catches the refusal cannot hide it: the test errors at teardown, naming the attempt."""
    pytester.makeconftest(Path(__file__).with_name("conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(
        """
        import socket

        def test_swallows_it():
            try:
                socket.create_connection(("192.0.2.1", 80), timeout=1)
            except Exception:
                pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:nbval")  # a bare pytest, quick to start
    result.assert_outcomes(passed=1, errors=1)
    refused = "the network guard refused 1 attempt(s) in this test: create_connection '192.0.2.1'"
    result.stdout.fnmatch_lines([f"*{refused}*"])
