"""The five FCC documents: labels, the selection, the snapshot they come from, their cases.

The notebook extracts the first five rows in dataset order whose verified label has at most
`MAX_LINE_ITEMS` line items, because list fields are paired by Hungarian matching, whose cost
grows with the cube of the list length. A row whose label is missing or does not validate is
reported and skipped, with its id. Live, the rows come from the Hugging Face datasets server;
in replay mode from the committed snapshot (file reads only, no socket).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from strands_evals import Case

from fieldeval.errors import EvalError
from fieldeval.files import DATA_DIR
from walkthroughs.fcc.datasets_server import (
    SERVICE,
    DatasetsServerClient,
    RowsRequest,
    SnapshotError,
    live_rows,
    read_snapshot,
    snapshot_rows,
    write_snapshot,
)
from walkthroughs.fcc.schema import MAX_TEXT_CHARS, FccInvoice, FccLineItem, build_prompt

FCC_DATA_DIR = DATA_DIR / "fcc"
SNAPSHOT_PATH = FCC_DATA_DIR / "snapshot.json"
# The snapshot's five documents as a case file (`name`, `input`, `expected_output`, `metadata`
# per line), the form the general recorder and scorer read; `make record-fcc` writes both.
CASES_PATH = FCC_DATA_DIR / "cases.jsonl"
RECORD_COMMAND = "make record-fcc"

DATASET = "amazon-agi/RealKIE-FCC-Verified"
CONFIG = "default"
SPLIT = "test"
# Ten rows per page: the five documents usually sit in the first page or two, and the
# snapshot holds only the pages fetched, so it stays small.
FCC_REQUEST = RowsRequest(DATASET, CONFIG, SPLIT, page_length=10)
DOCUMENT_COUNT = 5
MAX_LINE_ITEMS = 12


class LabelError(EvalError, ValueError):
    """A row's verified label is missing or does not validate as `FccInvoice`."""


@dataclass(frozen=True)
class FccDocument:
    """One selected document: its dataset id and position, OCR text and verified label."""

    id: str
    row_idx: int
    text: str
    label: FccInvoice
    schema_differences: tuple[str, ...] = ()

    @property
    def line_items(self) -> int:
        return len(self.label.LineItems)

    @property
    def truncated(self) -> bool:
        return len(self.text) > MAX_TEXT_CHARS

    def prompt(self) -> str:
        return build_prompt(self.text)


@dataclass(frozen=True)
class SkippedRow:
    """A row the selection passed over, and why."""

    id: str
    row_idx: int
    reason: str


@dataclass
class Selection:
    """The documents chosen, and every row skipped on the way to them."""

    documents: list[FccDocument] = field(default_factory=list)
    skipped: list[SkippedRow] = field(default_factory=list)


def read_label(value: Any) -> FccInvoice:
    """Validate a `json_response` cell, given as an object or as a JSON string.

    Raises:
        LabelError: If the label is missing, not JSON, or does not validate; the message
            names the first failing field.
    """
    if value is None or value == "":
        raise LabelError("label missing (json_response is empty)")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise LabelError(f"label is not JSON ({exc.msg})") from exc
    try:
        return FccInvoice.model_validate(value)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(map(str, error["loc"])) or "(root)"
        raise LabelError(f"label does not validate: field {where}: {error['msg']}") from exc


def schema_differences(value: Any) -> tuple[str, ...]:
    """How the row's `json_schema` disagrees with `FccInvoice`, field by field; empty if it agrees.

    Pydantic drops label fields the model does not declare without a word, so a field the
    dataset added would silently vanish from the ground truth: this makes it visible.
    """
    try:
        schema = json.loads(value) if isinstance(value, str) else value
        top = _properties(schema, schema)
        items = _properties(schema, top.get("LineItems", {}).get("items", {}))
    except (ValueError, TypeError, AttributeError, KeyError):
        return ("json_schema missing or unreadable",)
    found = []
    for prefix, theirs, ours in (("", top, FccInvoice), ("LineItems.", items, FccLineItem)):
        found += [f"{prefix}{name} only in the dataset" for name in sorted(set(theirs) - set(ours.model_fields))]
        found += [f"{prefix}{name} not in the dataset" for name in sorted(set(ours.model_fields) - set(theirs))]
    return tuple(found)


def _properties(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A JSON-schema node's `properties`, following a local `$ref` such as `#/$defs/Item`."""
    if "$ref" in node:
        path = node["$ref"].removeprefix("#/").split("/")
        node = root
        for part in path:
            node = node[part]
    return node["properties"]


def select_documents(
    rows: Iterable[dict[str, Any]],
    count: int = DOCUMENT_COUNT,
    max_line_items: int = MAX_LINE_ITEMS,
) -> Selection:
    """The first `count` rows in dataset order whose label has at most `max_line_items` items.

    Stops reading `rows` as soon as it has `count` documents, so a lazy page iterator asks
    the server for no more pages than needed.
    """
    selection = Selection()
    for entry in rows:
        row = entry["row"]
        row_idx = int(entry.get("row_idx", -1))
        doc_id = str(row.get("id") or f"(row {row_idx}, no id)")
        try:
            label = read_label(row.get("json_response"))
        except LabelError as exc:
            selection.skipped.append(SkippedRow(doc_id, row_idx, str(exc)))
            continue
        if len(label.LineItems) > max_line_items:
            reason = f"{len(label.LineItems)} line items, above the limit of {max_line_items}"
            selection.skipped.append(SkippedRow(doc_id, row_idx, reason))
            continue
        if not isinstance(row.get("text"), str) or not row["text"].strip():
            selection.skipped.append(SkippedRow(doc_id, row_idx, "no OCR text"))
            continue
        differences = schema_differences(row.get("json_schema"))
        selection.documents.append(FccDocument(doc_id, row_idx, row["text"], label, differences))
        if len(selection.documents) == count:
            break  # before asking for another row, which could mean another page request
    return selection


@dataclass
class FccSource:
    """The documents selected from a snapshot or a download, and where they came from."""

    selection: Selection
    provenance: dict[str, Any]
    pages: list[dict[str, Any]]

    @property
    def documents(self) -> list[FccDocument]:
        return self.selection.documents


def from_snapshot(path: Path = SNAPSHOT_PATH) -> FccSource:
    """Select the documents from a stored snapshot; file reads only, no socket.

    Raises:
        SnapshotError: If the snapshot is missing (naming `make record-fcc`), malformed, or
            selects fewer than `DOCUMENT_COUNT` documents.
    """
    snapshot = read_snapshot(path, RECORD_COMMAND)
    selection = select_documents(snapshot_rows(snapshot, RECORD_COMMAND))
    if len(selection.documents) < DOCUMENT_COUNT:
        raise SnapshotError(
            f"{path}: selects {len(selection.documents)} of the {DOCUMENT_COUNT} documents a run needs "
            f"({len(selection.skipped)} rows skipped); a replay would score fewer documents than recorded. "
            f"Re-record the snapshot with `{RECORD_COMMAND}`"
        )
    return FccSource(selection, snapshot.provenance, snapshot.pages)


def fetch_live(client: DatasetsServerClient | None = None) -> FccSource:
    """Download rows page by page until five documents are selected; write nothing.

    Raises:
        DatasetsServerError: If the service cannot be reached or answers with an error.
    """
    client = client or DatasetsServerClient()
    pages: list[dict[str, Any]] = []
    selection = select_documents(live_rows(client, FCC_REQUEST, pages))
    provenance = {
        "hand_authored": False,
        "source": f"{SERVICE} {client.base_url}/rows",
        "note": f"pages of {DATASET} ({CONFIG}/{SPLIT}) as the server returned them",
    }
    return FccSource(selection, provenance, pages)


def save_source(source: FccSource, path: Path, recorded: str | None = None) -> Path:
    """Write the pages a live run fetched to `path`, as a snapshot replay mode can read."""
    provenance = dict(source.provenance, recorded=recorded)
    return write_snapshot(path, FCC_REQUEST, source.pages, provenance)


def case_record(document: FccDocument, hand_authored: bool = False) -> dict[str, Any]:
    """One line of the case file: the prompt as input, the label as expected output, the row as metadata.

    `metadata.hand_authored` carries the snapshot's word on where the document came from, so a
    reader of the case file alone (the notebook) can say whether it shows dataset rows.
    """
    return {
        "name": document.id,
        "input": document.prompt(),
        "expected_output": document.label.model_dump(mode="json"),
        "metadata": {"row_idx": document.row_idx, "hand_authored": hand_authored},
    }


def case_lines(documents: Iterable[FccDocument], hand_authored: bool = False) -> str:
    """The case file of `documents` (JSONL, one `case_record` per line), as `CASES_PATH` holds it."""
    return "".join(json.dumps(case_record(doc, hand_authored), ensure_ascii=False) + "\n" for doc in documents)


def fcc_cases(documents: Iterable[FccDocument]) -> list[Case]:
    """One evaluation case per document, as the case file describes it, with the label as a model."""
    return [Case(**dict(case_record(doc), expected_output=doc.label)) for doc in documents]
