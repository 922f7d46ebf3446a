"""The serving loop every local test server shares: 127.0.0.1, a free port, a bounded stop."""

from __future__ import annotations

import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class _Server(ThreadingHTTPServer):
    # Connections waiting to be accepted: socketserver's default of 5 refuses some of the dozens a run
    # with many cases in flight opens at once on a busy machine, where a provider's own servers would not.
    request_queue_size = 128

    def server_bind(self) -> None:
        """Bind as TCPServer does, without HTTPServer's reverse look-up of 127.0.0.1 (a DNS query)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class LocalServer:
    """A threaded HTTP server on 127.0.0.1; use it as a context manager so it always stops.

    Subclasses build their request handler and call `serve(Handler)` from `__init__`.
    `stopped` is set on exit, so a handler that is holding a response back returns at once.
    """

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.stopped = threading.Event()
        self.server = _Server(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll interval so shutdown() returns at once rather than after 0.5 s.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
