"""A stand-in for OpenAI-compatible chat completions streaming on 127.0.0.1, speaking the real wire protocol.

`POST /v1/chat/completions` with `"stream": true` answers `text/event-stream`: one `data: {chunk}`
line per `chat.completion.chunk`, then a chunk with the usage and `data: [DONE]`, as OpenAI,
Ollama, llama.cpp, vLLM and LiteLLM's proxy send them. The real `openai` client (under Strands'
`OpenAIModel`) parses it as it parses those servers.

Each request takes the next step of `script`, a list of `delta`s (the `choices[0].delta` of each
chunk) and a finish reason; `tool_calls_step` and `text_step` build the usual ones. Requests are
kept (with their Authorization header) so a test can check what the client sent.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.servers.local import LocalServer


def tool_calls_step(calls: list[tuple[str, str, Any]], pieces: int = 3, reasoning: str | None = None) -> dict:
    """A step calling each `(id, name, arguments)` (all in one message), each argument string in `pieces` deltas."""
    deltas: list[dict[str, Any]] = [{"role": "assistant"}]
    if reasoning:
        deltas.append({"reasoning_content": reasoning})
    for index, (call_id, name, arguments) in enumerate(calls):
        text = json.dumps(arguments)
        size = max(1, -(-len(text) // pieces))
        parts = [text[i : i + size] for i in range(0, len(text), size)]
        first = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": parts[0]}}
        deltas.append({"tool_calls": [first]})
        deltas += [{"tool_calls": [{"index": index, "function": {"arguments": part}}]} for part in parts[1:]]
    return {"deltas": deltas, "finish_reason": "tool_calls"}


def text_step(text: str) -> dict:
    """A step answering in text, in two deltas."""
    half = len(text) // 2
    return {
        "deltas": [{"role": "assistant", "content": text[:half]}, {"content": text[half:]}],
        "finish_reason": "stop",
    }


class OpenAIServer(LocalServer):
    """A threaded HTTP server answering chat completions from a script, one step per request."""

    def __init__(self) -> None:
        self.script: list[dict] = []
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if not fake.script:
                    self.send_error(500, "the OpenAI stand-in has no step left for this request")
                    return
                step = fake.script.pop(0)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                model = body.get("model", "local")
                for number, delta in enumerate(step["deltas"]):
                    self.chunk(model, [{"index": 0, "delta": delta, "finish_reason": None}], number)
                self.chunk(model, [{"index": 0, "delta": {}, "finish_reason": step["finish_reason"]}], 0)
                usage = {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}
                self.chunk(model, [], 0, usage=usage)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def chunk(self, model: str, choices: list, number: int, usage: dict | None = None) -> None:
                data = {"id": "chatcmpl-local", "object": "chat.completion.chunk", "created": 0, "model": model}
                data["choices"] = choices
                if usage is not None:
                    data["usage"] = usage
                self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
                self.wfile.flush()

            def log_message(self, *args) -> None:
                pass

        self.serve(Handler)
