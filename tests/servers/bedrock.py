"""A stand-in for Bedrock's ConverseStream on 127.0.0.1, speaking the real wire protocol.

`POST /model/{modelId}/converse-stream` answers `application/vnd.amazon.eventstream`: AWS
event-stream messages, each a prelude (total length, headers length, CRC32 of those eight
bytes), string headers (`:event-type`, `:content-type`, `:message-type` event or exception),
a JSON payload and a CRC32 of everything before it. botocore decodes it as it decodes Bedrock,
so the real `BedrockModel` and `Agent` run against it through boto3's endpoint override
(`AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, see `bedrock_environment`).

Each request takes the next step of `script` (a good tool-use stream by default):

- `("stream", messages)`: a 200 with those encoded messages (`tool_use_stream` builds a good one);
- `("error", status, error_type, message)`: an HTTP error as AWS sends one (e.g. 403 AccessDenied);
- `("broken", messages, cut)`: the stream, then only `cut` bytes of one more message's chunk, then close;
- `("stall", seconds)`: accept the request and say nothing (until the test stops the server);
- `("hang", messages, seconds)`: start the stream, then say nothing more.

Use it as a context manager: leaving it stops the serving thread and every stalled handler.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from fieldeval.services.stand_in import event, exception  # noqa: F401 (exception: re-exported to the tests)
from tests.servers.local import LocalServer

# The wire encoding is the installed stand-in's (fieldeval.services.stand_in); this server adds the
# scripted failures a test needs.


def usage(inputs: int, outputs: int) -> dict[str, Any]:
    """A `metadata` event's payload: token usage and latency."""
    return {
        "usage": {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": inputs + outputs},
        "metrics": {"latencyMs": 5},
    }


def tool_use_stream(
    tool_name: str, tool_input: dict[str, Any] | list[str], pieces: int = 4, tool_use_id: str = "tooluse_1"
):
    """A good stream: the model calls `tool_name` with `tool_input`, streamed in `pieces` chunks.

    The JSON is split at fixed character offsets, so chunks end mid-token as Bedrock's do; a
    list of strings is streamed as those chunks exactly (e.g. a stored exchange's `inputChunks`).
    """
    name = tool_name
    if isinstance(tool_input, list):
        chunks = tool_input
    else:
        text = json.dumps(tool_input)
        size = max(1, -(-len(text) // pieces))
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
    return [
        event("messageStart", {"role": "assistant"}),
        event(
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": tool_use_id, "name": name}}},
        ),
        *[event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": c}}}) for c in chunks],
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("messageStop", {"stopReason": "tool_use"}),
        event("metadata", usage(50, 20)),
    ]


def text_stream(text: str) -> list:
    """A stream in which the model answers in text and calls no tool."""
    return [
        event("messageStart", {"role": "assistant"}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}}),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("messageStop", {"stopReason": "end_turn"}),
        event("metadata", usage(50, 5)),
    ]


class BedrockServer(LocalServer):
    """A threaded HTTP server answering ConverseStream calls from a script, one step per request."""

    def __init__(self, default: tuple | None = None) -> None:
        self.script: list[tuple] = []
        self.default = default
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                fake.requests.append({"path": self.path, "body": json.loads(body or b"{}")})
                step = fake.script.pop(0) if fake.script else fake.default
                try:
                    self.play(step)
                except OSError:
                    pass  # the client gave up first
                self.close_connection = True

            def play(self, step: tuple | None) -> None:
                if step is None:
                    raise AssertionError("the Bedrock stand-in has no step left for this request")
                kind = step[0]
                if kind == "stall":
                    fake.stopped.wait(step[1])
                    return
                if kind == "error":
                    _, status, error_type, message = step
                    data = json.dumps({"message": message}).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("x-amzn-ErrorType", f"{error_type}:http://internal.amazon.com/coral/")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if kind not in ("stream", "broken", "hang"):
                    raise ValueError(f"unknown step {step!r}")
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.amazon.eventstream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")  # one request per connection: never a stale pooled one
                self.end_headers()
                for message in step[1]:  # one HTTP chunk per message, as a live stream arrives
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(message), message))
                    self.wfile.flush()
                if kind == "hang":  # the stream started, then nothing more
                    fake.stopped.wait(step[2])
                    return
                if kind == "broken":  # a chunk announced in full, cut short, and the connection closed
                    message = event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{"}}})
                    self.wfile.write(b"%x\r\n%s" % (len(message), message[: step[2]]))
                    self.wfile.flush()
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def log_message(self, *args) -> None:
                pass

        self.serve(Handler)


def bedrock_environment(url: str, region: str = "us-east-1") -> dict[str, str]:
    """Variables that point boto3's bedrock-runtime client at `url` with static dummy credentials."""
    return {
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url,
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLELOCALONLY",
        "AWS_SECRET_ACCESS_KEY": "local-stand-in-secret",
        "AWS_REGION": region,
        "AWS_EC2_METADATA_DISABLED": "true",
    }
