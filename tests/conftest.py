"""The network guard, on for every unit test: no connection and no name lookup leaves this process.

A replay proves something only if it cannot reach the network, so every test runs with socket
`connect`, `connect_ex`, `create_connection` and the DNS look-ups (`getaddrinfo`,
`gethostbyname*`, `gethostbyaddr`) refused. A test that starts a local server asks for it, with
`@pytest.mark.local_servers` or through a server fixture that requests the `local_servers`
fixture: it may then reach 127.0.0.1 (and ::1), and nothing else. A fixture of wider scope than
one test holds `network_guard.allowing_loopback()` while its server runs, and a test that must
prove a step opens no socket at all, even to its own server, wraps that step in
`network_guard.refusing_all()`.

A refused attempt raises at once and is also remembered, so a library that swallows the error
still fails the test at teardown; a test that provokes a refusal on purpose clears
`network_guard.refused` after asserting on it. Unix sockets are not network and stay open (a
process pool's forkserver uses one). The notebooks are not affected: their kernels are separate
processes, run in replay mode (the root conftest.py).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import pytest

MARKER = "local_servers"
NETWORK_FAMILIES = (socket.AF_INET, socket.AF_INET6)
# What a server binds to when it listens on every interface; looking it up asks no name server.
WILDCARDS = ("", "0.0.0.0", "::")


class NetworkRefused(AssertionError):
    """A test opened a connection or looked up a name it did not ask for."""


def is_loopback(host: object) -> bool:
    """127.0.0.0/8, ::1 or `localhost`: the only hosts a test that asks may reach."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


class NetworkGuard:
    """What the patched socket functions ask before doing anything: is this host allowed now?"""

    def __init__(self) -> None:
        self.loopback = False
        self.refused: list[str] = []

    def check(self, what: str, host: object, wildcard_ok: bool = False) -> None:
        if self.loopback and (is_loopback(host) or (wildcard_ok and host in WILDCARDS)):
            return
        self.refused.append(f"{what} {host!r}")
        allowed = "only 127.0.0.1 is allowed here" if self.loopback else f"mark the test @pytest.mark.{MARKER}"
        raise NetworkRefused(
            f"a test tried to open a network connection ({what} {host!r}); tests never reach the network "
            f"(to reach a local server on 127.0.0.1, {allowed})"
        )

    def allowing_loopback(self):
        """Within the block, 127.0.0.1 may be reached (a local server); any other host is still refused."""
        return self._loopback(True)

    def refusing_all(self):
        """Within the block, every connection is refused, loopback included: a replay opens no socket."""
        return self._loopback(False)

    @contextmanager
    def _loopback(self, allowed: bool) -> Iterator[None]:
        before, self.loopback = self.loopback, allowed
        try:
            yield
        finally:
            self.loopback = before


def _guarded(patch: pytest.MonkeyPatch, guard: NetworkGuard) -> None:
    """Route every way out of the process through `guard.check`."""

    def on_socket(name: str):
        original = getattr(socket.socket, name)

        def guarded(self, address, *args):
            if self.family in NETWORK_FAMILIES:
                guard.check(name, address[0])
            return original(self, address, *args)

        patch.setattr(socket.socket, name, guarded)

    def on_module(name: str, host_of=lambda args: args[0]):
        original = getattr(socket, name)

        def guarded(*args, **kwargs):
            host = host_of(args) if args else kwargs.get("host")
            if host is not None:  # getaddrinfo(None, port): the local wildcard for a bind, no look-up
                guard.check(name, host, wildcard_ok=name == "getaddrinfo")
            return original(*args, **kwargs)

        patch.setattr(socket, name, guarded)

    for name in ("connect", "connect_ex"):
        on_socket(name)
    on_module("create_connection", host_of=lambda args: args[0][0])
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr"):
        on_module(name)


@pytest.fixture(scope="session", autouse=True)
def network_guard() -> Iterator[NetworkGuard]:
    """The guard, installed once for the whole session, so fixtures of every scope run under it."""
    guard = NetworkGuard()
    with pytest.MonkeyPatch.context() as patch:
        _guarded(patch, guard)
        yield guard


@pytest.fixture
def local_servers(network_guard: NetworkGuard) -> Iterator[None]:
    """Ask for local servers: within this test (and the fixture that requests this) 127.0.0.1 may be reached."""
    with network_guard.allowing_loopback():
        yield


@pytest.fixture(autouse=True)
def _network_for_this_test(request, network_guard: NetworkGuard) -> Iterator[None]:
    """Loopback for a test marked `local_servers`, nothing for the others; fail on any refused attempt."""
    network_guard.refused.clear()
    asked = request.node.get_closest_marker(MARKER) is not None
    with network_guard.allowing_loopback() if asked else nullcontext():
        yield
    refused, network_guard.refused[:] = list(network_guard.refused), []
    if refused:
        pytest.fail(f"the network guard refused {len(refused)} attempt(s) in this test: {', '.join(refused)}")
