"""A stand-in for OpenAI-compatible chat completions streaming on 127.0.0.1, speaking the real wire protocol.

`POST /v1/chat/completions` with `"stream": true` answers `text/event-stream`: one `data: {chunk}`
line per `chat.completion.chunk`, then a chunk with the usage and `data: [DONE]`, as OpenAI,
Ollama, llama.cpp, vLLM and LiteLLM's proxy send them. The real `openai` client (under Strands'
`OpenAIModel`) parses it as it parses those servers.

Each request takes the next step of `script`, a list of `delta`s (the `choices[0].delta` of each
chunk) and a finish reason; `tool_calls_step` and `text_step` build the usual ones. Many cases in
flight at once arrive in no fixed order, so `answer(body)`, when set, picks each request's step
from what it asks instead (`tests.servers.orders.openai_answer`), and a step may be an HTTP error
(`throttled_step`: a 429 with `Retry-After`, as OpenAI and its look-alikes throttle). `delay` is
the seconds each answered request waits before its answer, the latency of a real model call. Requests are
kept (with their Authorization header, and when each arrived and was answered, by
`time.monotonic()`) so a test can check what the client sent and when.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
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


def throttled_step(retry_after: str | None = "1") -> dict:
    """A 429 as OpenAI sends one, with `Retry-After` (seconds) unless it is None."""
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    error = {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}
    return {"status": 429, "headers": headers, "error": error}


class OpenAIServer(LocalServer):
    """A threaded HTTP server answering chat completions from a script (or `answer`), one step per request."""

    def __init__(self, answer: Callable[[dict], dict] | None = None, delay: float = 0.0) -> None:
        self.script: list[dict] = []
        self.answer, self.delay = answer, delay
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                request = {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                request["arrived"] = time.monotonic()
                fake.requests.append(request)
                if fake.answer is None and not fake.script:
                    self.send_error(500, "the OpenAI stand-in has no step left for this request")
                    return
                step = fake.answer(body) if fake.answer is not None else fake.script.pop(0)
                request["status"] = step.get("status", 200)
                if "status" not in step:  # a refusal is quick; an answer takes the model's time
                    fake.stopped.wait(fake.delay)
                try:
                    self.play(step, body.get("model", "local"))
                except OSError:
                    pass  # the client gave up first
                request["answered"] = time.monotonic()
                self.close_connection = True

            def play(self, step: dict, model: str) -> None:
                if "status" in step:
                    data = json.dumps({"error": step["error"]}).encode()
                    self.send_response(step["status"])
                    for name, value in step["headers"].items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for number, delta in enumerate(step["deltas"]):
                    self.chunk(model, [{"index": 0, "delta": delta, "finish_reason": None}], number)
                self.chunk(model, [{"index": 0, "delta": {}, "finish_reason": step["finish_reason"]}], 0)
                usage = {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}
                self.chunk(model, [], 0, usage=usage)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

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


def factory_module(timeout: float, max_retries: int | None = None) -> str:
    """A user's `models.py` whose `local()` builds an `OpenAIModel` for this server (`LOCAL_OPENAI_URL`).

    Without `max_retries` the openai client keeps its own default retries, as the provider's
    documentation shows a factory.
    """
    retries = "" if max_retries is None else f', "max_retries": {max_retries}'
    return f"""
import os

from strands.models.openai import OpenAIModel


def local():
    client_args = {{"base_url": os.environ["LOCAL_OPENAI_URL"], "api_key": "sk-local", "timeout": {timeout}{retries}}}
    return OpenAIModel(client_args=client_args, model_id="llama-3.2-local", params={{"temperature": 0}})
"""
