"""A scripted stand-in for the Hugging Face datasets server's `/rows` endpoint on 127.0.0.1.

Each request takes the next step of `script` (a page by default). Steps are tuples:

- `("page",)`: the page the query asks for; `("status", code, body[, headers])`: that answer;
- `("sleep", seconds)`: wait, then a page; `("drop",)`: close before answering;
- `("trickle", seconds)`: headers, then the body one byte per `seconds` (until stopped);
- `("cut",)`: headers and half the body, then close; `("bad-chunk",)`: a malformed chunked body;
- `("gzip", body)`: `body` gzip-compressed; `("not-gzip",)`: claims gzip, sends plain bytes;
- `("redirect",)`: a 302 back to the same URL.

Use it as a context manager: leaving it stops the serving thread and every handler loop.
"""

from __future__ import annotations

import gzip
import json
import socket
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlparse

from tests.servers.local import LocalServer

FEATURES = [{"feature_idx": 0, "name": "id", "type": {"dtype": "string", "_type": "Value"}}]


class DatasetsServer(LocalServer):
    """A threaded HTTP server whose answers follow a script, one step per request."""

    def __init__(self, total_rows: int = 5) -> None:
        self.total_rows = total_rows
        self.script: list[tuple] = []
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                query = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                fake.requests.append({"query": query, "auth": self.headers.get("Authorization")})
                step = fake.script.pop(0) if fake.script else ("page",)
                try:
                    self.play(step, query)
                except OSError:
                    pass  # the client gave up (timeout) before the answer
                self.close_connection = True

            def play(self, step: tuple, query: dict) -> None:
                kind = step[0]
                if kind == "drop":
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif kind == "sleep":
                    fake.stopped.wait(step[1])
                    self.reply(200, fake.page_for(query))
                elif kind == "page":
                    self.reply(200, fake.page_for(query))
                elif kind == "status":
                    self.reply(step[1], step[2], step[3] if len(step) > 3 else {})
                elif kind == "trickle":
                    data = json.dumps(fake.page_for(query)).encode()
                    self.head(200, len(data))
                    for byte in data:
                        if fake.stopped.wait(step[1]):
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                elif kind == "cut":
                    data = json.dumps(fake.page_for(query)).encode()
                    self.head(200, len(data))
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif kind == "bad-chunk":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(b"zz-not-a-size\r\n{}\r\n0\r\n\r\n")
                elif kind == "gzip":
                    self.reply(200, gzip.compress(step[1]), {"Content-Encoding": "gzip"})
                elif kind == "not-gzip":
                    self.reply(200, b"plainly not gzip", {"Content-Encoding": "gzip"})
                elif kind == "redirect":
                    self.send_response(302)
                    self.send_header("Location", self.path)
                    self.send_header("Content-Length", "0")
                    self.send_header("Connection", "close")
                    self.end_headers()
                else:
                    raise ValueError(f"unknown step {step!r}")

            def head(self, status: int, length: int, headers: dict | None = None) -> None:
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(length))
                self.send_header("Connection", "close")  # each request on its own connection
                self.end_headers()

            def reply(self, status: int, body, headers: dict | None = None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.head(status, len(data), headers)
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.serve(Handler)

    def page_for(self, query: dict) -> dict:
        return self.page(int(query["offset"]), int(query["length"]))

    def page(self, offset: int, length: int) -> dict:
        end = min(offset + length, self.total_rows)
        rows = [{"row_idx": i, "row": {"id": f"doc-{i}"}, "truncated_cells": []} for i in range(offset, end)]
        return {
            "features": FEATURES,
            "rows": rows,
            "num_rows_total": self.total_rows,
            "num_rows_per_page": 100,
            "partial": False,
        }
