"""Answers for the purchase-order sample (`examples/your_own_agent`) picked by what each request asks.

With many cases in flight, requests reach a server in no fixed order, so a scripted list of
answers would hand one case's answer to another. `OrderAnswers` finds the case whose document is
in the request's first user message and answers as a model would: first the case's `lookup_sku`
calls (`baseline_tool_calls.jsonl`), all in one message, then, once the tool results are in the
conversation, the `PurchaseOrder` call with the case's baseline answer (`baseline_answers.jsonl`).
Every id is made from the case name, so the same case gets the same bytes in any run and order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.sample_project import FOLDER
from tests.servers.openai import tool_calls_step


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class OrderAnswers:
    """The sample's cases and answers; `cases` may be renamed copies (`copies`), each answered by its document."""

    def __init__(self, cases: list[dict[str, Any]] | None = None, *, lookups: bool = True) -> None:
        self.cases = cases if cases is not None else _lines(FOLDER / "cases.jsonl")
        self.lookups = lookups
        self.answers = {line["name"]: line["output"] for line in _lines(FOLDER / "baseline_answers.jsonl")}
        self.calls = {line["name"]: line["calls"] for line in _lines(FOLDER / "baseline_tool_calls.jsonl")}
        self.origin = {case["name"]: case.get("origin", case["name"]) for case in self.cases}

    def case_of(self, prompt: str) -> str:
        """The name of the case whose document is in `prompt` (the longest such document)."""
        found = [case for case in self.cases if case["input"] in prompt]
        if not found:
            raise AssertionError(f"no case of the purchase-order sample has its document in {prompt[:80]!r}")
        return max(found, key=lambda case: len(case["input"]))["name"]

    def openai_answer(self, body: dict[str, Any]) -> dict:
        """The step (`tests.servers.openai`) answering one chat-completions request."""
        messages = body.get("messages") or []
        user = next(message for message in messages if message.get("role") == "user")
        name = self.case_of(_text(user.get("content")))
        origin = self.origin[name]
        if self.lookups and not any(message.get("role") == "tool" for message in messages):
            lookups = [(f"call_{name}_{n}", c["name"], c["input"]) for n, c in enumerate(self.calls[origin], 1)]
            return tool_calls_step(lookups)
        return tool_calls_step([(f"call_{name}_answer", "PurchaseOrder", self.answers[origin])], pieces=5)


def copies(count: int) -> list[dict[str, Any]]:
    """`count` cases cycling through the sample's five, each renamed and its document given a reference line."""
    sample = _lines(FOLDER / "cases.jsonl")
    made = []
    for number in range(1, count + 1):
        case = dict(sample[(number - 1) % len(sample)])
        case["origin"] = case["name"]
        case["name"] = f"{case['name']}-copy-{number:04d}"
        case["input"] = f"{case['input']}\nInternal reference: {case['name']}."
        made.append(case)
    return made


def write_cases(path: Path, cases: list[dict[str, Any]]) -> Path:
    """A case file of `cases` (name, input, expected output), as `load_cases` reads it."""
    keys = ("name", "input", "expected_output")
    text = "".join(json.dumps({key: case[key] for key in keys}) + "\n" for case in cases)
    path.write_text(text, encoding="utf-8")
    return path


def _text(content: Any) -> str:
    """A message's text, whether the client sent a string or a list of parts."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
