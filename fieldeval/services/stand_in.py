"""A stand-in for Bedrock's ConverseStream on 127.0.0.1 that answers from a predictions file, not a model.

`python -m fieldeval.commands.stand_in` starts it (see that command); `record --model fieldeval.services.stand_in:model`
points the real `BedrockModel` at it, so the whole record, replay, score loop can be tried on
one's own cases with no cloud account. It speaks the real wire protocol:
`POST /model/{modelId}/converse-stream` answers `application/vnd.amazon.eventstream`, AWS
event-stream messages (a prelude with its CRC32, string headers, a JSON payload, a CRC32 of the
whole), which botocore decodes as it decodes Bedrock.

For each request it finds the case whose `input` appears in the first user message (the longest
such input), then answers in one of two ways:

- the case has tool calls (`--tool-calls`) and the conversation has no assistant message yet:
  one message calling each of those tools, several `toolUse` blocks in one message;
- otherwise: one call of the structured-output tool (the schema's class name) with the case's
  prediction as its input.

Every answer says what it is: `messageStop.additionalModelResponseFields.standIn` names the
predictions file, and the recorder copies that into the cassette's provenance, so a cassette made
this way is never taken for a recording of a model. Usage is counted as characters / 4 and says so.
"""

from __future__ import annotations

import binascii
import json
import struct
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from fieldeval.exchanges.provenance import STAND_IN_FIELD

STRING = 7  # the event-stream header value type for a UTF-8 string
CHUNK = 23  # characters per streamed tool-input fragment, so fragments end mid-token as Bedrock's do
MODEL_ID = "local-stand-in"
DEFAULT_URL = "http://127.0.0.1:8765"  # where `eval-stand-in` listens by default
URL_VARIABLE = "EVAL_STAND_IN_URL"


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude, prelude CRC, headers, payload, message CRC."""
    encoded = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += struct.pack(">B", len(raw_name)) + raw_name + struct.pack(">BH", STRING, len(raw_value)) + raw_value
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + encoded + payload
    return body + struct.pack(">I", binascii.crc32(body) & 0xFFFFFFFF)


def event(event_type: str, payload: dict[str, Any]) -> bytes:
    """A ConverseStream event message (`messageStart`, `contentBlockDelta`, `metadata`, ...)."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps(payload).encode())


def exception(exception_type: str, message: str) -> bytes:
    """An in-stream exception message (e.g. `validationException`), as Bedrock sends one."""
    headers = {":exception-type": exception_type, ":content-type": "application/json", ":message-type": "exception"}
    return encode_message(headers, json.dumps({"message": message}).encode())


def tool_calls_message(calls: Sequence[tuple[str, str, Any]], *, stop_fields: dict[str, Any] | None = None) -> list:
    """One assistant message calling each `(tool_use_id, name, input)`, inputs streamed in fragments."""
    messages = [event("messageStart", {"role": "assistant"})]
    for index, (tool_use_id, name, tool_input) in enumerate(calls):
        text = json.dumps(tool_input, ensure_ascii=False)
        start = {"toolUse": {"toolUseId": tool_use_id, "name": name}}
        messages.append(event("contentBlockStart", {"contentBlockIndex": index, "start": start}))
        for offset in range(0, len(text), CHUNK):
            delta = {"toolUse": {"input": text[offset : offset + CHUNK]}}
            messages.append(event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
        messages.append(event("contentBlockStop", {"contentBlockIndex": index}))
    stop: dict[str, Any] = {"stopReason": "tool_use"}
    if stop_fields:
        stop["additionalModelResponseFields"] = stop_fields
    messages.append(event("messageStop", stop))
    return messages


class StandIn:
    """The stand-in server; use it as a context manager (tests) or call `serve_forever` (the command).

    Args:
        cases: `(name, input)` of every case.
        predictions: The structured output to answer for each case name.
        tool_calls: For some case names, `(tool name, input)` pairs to call first, in one message.
        tool_name: The structured-output tool (the schema's class name).
        label: What the stand-in says it answers from (the predictions file's name).
        port: 0 for any free port.
    """

    def __init__(
        self,
        cases: Sequence[tuple[str, str]],
        predictions: dict[str, Any],
        *,
        tool_name: str,
        label: str,
        tool_calls: dict[str, list[tuple[str, Any]]] | None = None,
        port: int = 0,
    ):
        self.cases = sorted(cases, key=lambda case: -len(case[1]))  # the longest input that matches wins
        self.predictions = predictions
        self.tool_calls = tool_calls or {}
        self.tool_name = tool_name
        self.note = f"answers from {label}, written by hand or by another run; no model was called"
        self.requests: list[dict[str, Any]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                stand_in.requests.append({"path": self.path, "body": body})
                try:
                    self.answer(stand_in.respond(body))
                except OSError:
                    pass  # the client gave up first
                self.close_connection = True

            def answer(self, messages: list[bytes]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.amazon.eventstream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")  # one request per connection: never a stale pooled one
                self.end_headers()
                for message in messages:  # one HTTP chunk per message, as a live stream arrives
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(message), message))
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread: threading.Thread | None = None

    def respond(self, body: dict[str, Any]) -> list[bytes]:
        """The event-stream messages that answer one ConverseStream request."""
        messages = body.get("messages") or []
        prompt = next(
            ("".join(b.get("text", "") for b in m.get("content", [])) for m in messages if m.get("role") == "user"), ""
        )
        name = next((name for name, text in self.cases if text and text in prompt), None)
        if name is None:
            return [exception("validationException", "the stand-in knows no case whose input is in this prompt")]
        offered = [spec.get("toolSpec", {}).get("name") for spec in body.get("toolConfig", {}).get("tools", [])]
        answered = any(m.get("role") == "assistant" for m in messages)
        calls = self.tool_calls.get(name, [])
        if calls and not answered:
            ids = [(f"tooluse_standin_{name}_{n}", tool, tool_input) for n, (tool, tool_input) in enumerate(calls, 1)]
            return [*tool_calls_message(ids), self._usage(body, ids)]
        if self.tool_name not in offered:
            return [exception("validationException", f"the agent did not offer the {self.tool_name} tool")]
        call = [(f"tooluse_standin_{name}_answer", self.tool_name, self.predictions[name])]
        return [*tool_calls_message(call, stop_fields={STAND_IN_FIELD: self.note}), self._usage(body, call)]

    def _usage(self, body: dict[str, Any], calls: list) -> bytes:
        """Token usage counted as characters / 4 (the stand-in has no tokenizer)."""
        inputs = len(json.dumps(body)) // 4
        outputs = len(json.dumps([tool_input for _, _, tool_input in calls])) // 4
        usage = {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": inputs + outputs}
        return event("metadata", {"usage": usage, "metrics": {"latencyMs": 0}})

    def serve_forever(self) -> None:
        self.server.serve_forever(poll_interval=0.05)

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


def read_tool_calls(path: Path, case_names: Sequence[str]) -> dict[str, list[tuple[str, Any]]]:
    """`{"name": case, "calls": [{"name": tool, "input": {...}}, ...]}` per line, checked line by line.

    Raises:
        ValueError: naming the file, the line, the field and the fix.
    """
    calls: dict[str, list[tuple[str, Any]]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc}); write one JSON object per line") from exc
        if not isinstance(record, dict) or set(record) != {"name", "calls"}:
            raise ValueError(f'{where}: write {{"name": case, "calls": [{{"name": tool, "input": {{...}}}}]}}')
        if record["name"] not in case_names:
            raise ValueError(f"{where}: field 'name' {record['name']!r} is no case of the case file")
        items = record["calls"]
        if not isinstance(items, list) or not items:
            raise ValueError(f"{where}: field 'calls' must be a non-empty list of tool calls")
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or "input" not in item:
                raise ValueError(f"{where}: field 'calls' holds an entry without 'name' and 'input'")
        calls[record["name"]] = [(item["name"], item["input"]) for item in items]
    return calls


def stand_in_model(url: str) -> Any:
    """A real `BedrockModel` pointed at a stand-in at `url`, with placeholder credentials (none are real)."""
    import boto3
    from botocore.config import Config
    from strands.models import BedrockModel

    session = boto3.Session(aws_access_key_id="stand-in", aws_secret_access_key="stand-in", region_name="us-east-1")
    config = Config(connect_timeout=2, read_timeout=10, retries={"mode": "standard", "total_max_attempts": 1})
    return BedrockModel(
        boto_session=session, boto_client_config=config, endpoint_url=url, model_id=MODEL_ID, temperature=0.0
    )


def model() -> Any:
    """The `--model` factory for `record`: the real BedrockModel pointed at the stand-in at `EVAL_STAND_IN_URL`."""
    import os

    return stand_in_model(os.environ.get(URL_VARIABLE, DEFAULT_URL))
