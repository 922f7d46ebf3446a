"""FCC political-advertising invoices: the schema, the prompt, the documents and their replays.

The live notebook extracts five invoices of `amazon-agi/RealKIE-FCC-Verified` (config
`default`, split `test`): the first five in dataset order whose verified label has at most
`MAX_LINE_ITEMS` line items, because list fields are paired by Hungarian matching, whose
cost grows with the cube of the list length. A row whose label is missing or does not
validate is reported and skipped, with its id.

Live, the rows come from the Hugging Face datasets server; in replay mode from the snapshot
in `data/fcc/`, with each model response replayed from `data/exchanges/fcc/<id>.json`. The
recorder (`make record-fcc`) writes both together, so a snapshot never pairs with
extractions of other documents; a fixture recorded for another document is refused anyway.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import stickler
from pydantic import BaseModel, Field, ValidationError
from stickler import (
    ComparableField,
    DateComparator,
    ExactComparator,
    LevenshteinComparator,
    NumericComparator,
    StructuredModel,
)
from strands.models import Model
from strands_evals import Case

from helpers.exchanges.fixtures import EXCHANGES_DIR, Exchange, FixtureError, load_exchange
from helpers.exchanges.replay import ReplayModel
from helpers.files import REPO_ROOT
from helpers.services.bedrock import MODEL_ID, check_credentials, live_model, resolve_region
from helpers.services.datasets_server import (
    SERVICE,
    DatasetsServerClient,
    RowsRequest,
    live_rows,
    read_snapshot,
    snapshot_rows,
    write_snapshot,
)

ROOT = REPO_ROOT
DATA_DIR = ROOT / "data" / "fcc"
SNAPSHOT_PATH = DATA_DIR / "snapshot.json"
# A live notebook run writes what it downloaded here, not over the committed snapshot, which
# must stay paired with the committed exchanges; `make record-fcc` replaces both together.
LIVE_SNAPSHOT_PATH = DATA_DIR / "live_snapshot.json"
FCC_EXCHANGES_DIR = EXCHANGES_DIR / "fcc"
RECORD_COMMAND = "make record-fcc"

DATASET = "amazon-agi/RealKIE-FCC-Verified"
CONFIG = "default"
SPLIT = "test"
# Ten rows per page: the five documents usually sit in the first page or two, and the
# snapshot holds only the pages fetched, so it stays small.
FCC_REQUEST = RowsRequest(DATASET, CONFIG, SPLIT, page_length=10)
DOCUMENT_COUNT = 5
MAX_LINE_ITEMS = 12
# OCR text beyond this many characters is cut before it reaches the model. 40,000
# characters is about 10,000 tokens: room for every invoice of at most 12 line items with
# its boilerplate, while one runaway document cannot dominate the run's cost and latency.
# The documents table says whether a document was cut.
MAX_TEXT_CHARS = 40_000


# --- schema -------------------------------------------------------------------------------


class FccLineItem(BaseModel):
    """One line of the invoice: a program or daypart, its flight dates, air days and rate."""

    LineItemDescription: str | None = Field(None, description="Program or daypart as printed")
    LineItemStartDate: str | None = Field(None, description="First air date, as printed")
    LineItemEndDate: str | None = Field(None, description="Last air date, as printed")
    LineItemDays: str | None = Field(None, description="Air days as printed, e.g. M-F")
    LineItemRate: float | None = Field(None, description="Rate per spot, in dollars")


class FccInvoice(BaseModel):
    """An FCC political-advertising invoice from a broadcast station."""

    Agency: str = Field(description="Advertising agency billed, as printed")
    Advertiser: str = Field(description="Advertiser or campaign, as printed")
    GrossTotal: float | None = Field(None, description="Gross total, in dollars")
    PaymentTerms: str | None = Field(None, description="Payment terms as printed")
    AgencyCommission: float | None = Field(None, description="Agency commission, in dollars")
    NetAmountDue: float | None = Field(None, description="Net amount due, in dollars")
    LineItems: list[FccLineItem] = Field(description="Every line-item row, in document order")


PROMPT = """Extract the fields of this FCC political-advertising invoice.

- Return null for any field that is not on the document; never guess a value.
- Transcribe dates exactly as printed (10/05/16 stays 10/05/16).
- Include every line-item row, one entry per row, in the order printed.
- Write amounts as plain numbers in dollars, without currency symbols or commas.

<document>
{text}
</document>"""


def build_prompt(text: str) -> str:
    """The extraction prompt for one document, its OCR text cut at `MAX_TEXT_CHARS`."""
    return PROMPT.format(text=text[:MAX_TEXT_CHARS])


# --- the tuned StructuredModel (notebook section 7) --------------------------------------


def _described(model: type[BaseModel], name: str) -> str | None:
    """The plain schema's description of a field, so both schemas tell the model the same."""
    return model.model_fields[name].description


class FccLineItemTuned(StructuredModel):
    """One line of the invoice: a program or daypart, its flight dates, air days and rate."""

    # The docstring above is the plain schema's: it travels to the model as the description,
    # so the comparison choices are explained here instead. Dates are compared as dates
    # (2016-10-05 matches a printed 10/05/16, 10/06/16 does not); the rate to the cent; air
    # days exactly. `match_threshold` is the score at which a predicted line pairs with a
    # labelled one (Hungarian matching reads it from this element class).
    match_threshold: ClassVar[float] = 0.75

    LineItemDescription: str | None = ComparableField(
        comparator=LevenshteinComparator(),
        threshold=0.7,
        weight=1.0,
        description=_described(FccLineItem, "LineItemDescription"),
    )
    LineItemStartDate: str | None = ComparableField(
        comparator=DateComparator(),
        threshold=0.95,
        weight=1.5,
        description=_described(FccLineItem, "LineItemStartDate"),
    )
    LineItemEndDate: str | None = ComparableField(
        comparator=DateComparator(), threshold=0.95, weight=1.5, description=_described(FccLineItem, "LineItemEndDate")
    )
    LineItemDays: str | None = ComparableField(
        comparator=ExactComparator(case_sensitive=False),
        threshold=1.0,
        weight=0.5,
        description=_described(FccLineItem, "LineItemDays"),
    )
    LineItemRate: float | None = ComparableField(
        comparator=NumericComparator(absolute_tolerance=0.005),
        threshold=1.0,
        weight=2.0,
        description=_described(FccLineItem, "LineItemRate"),
    )


class FccInvoiceTuned(StructuredModel):
    """An FCC political-advertising invoice from a broadcast station."""

    # Amounts must match to the cent and weigh double; names tolerate OCR noise up to 0.8.
    # `match_threshold` is declared here, but StructuredOutputSimilarity passes its own
    # (default 0.7) to stickler, which overrides it: pass it to the evaluator explicitly.

    match_threshold: ClassVar[float] = 0.8

    Agency: str = ComparableField(
        comparator=LevenshteinComparator(), threshold=0.8, weight=1.0, description=_described(FccInvoice, "Agency")
    )
    Advertiser: str = ComparableField(
        comparator=LevenshteinComparator(), threshold=0.8, weight=1.0, description=_described(FccInvoice, "Advertiser")
    )
    GrossTotal: float | None = ComparableField(
        comparator=NumericComparator(absolute_tolerance=0.005),
        threshold=1.0,
        weight=2.0,
        description=_described(FccInvoice, "GrossTotal"),
    )
    PaymentTerms: str | None = ComparableField(
        comparator=LevenshteinComparator(),
        threshold=0.7,
        weight=0.5,
        description=_described(FccInvoice, "PaymentTerms"),
    )
    AgencyCommission: float | None = ComparableField(
        comparator=NumericComparator(absolute_tolerance=0.005),
        threshold=1.0,
        weight=1.0,
        description=_described(FccInvoice, "AgencyCommission"),
    )
    NetAmountDue: float | None = ComparableField(
        comparator=NumericComparator(absolute_tolerance=0.005),
        threshold=1.0,
        weight=2.0,
        description=_described(FccInvoice, "NetAmountDue"),
    )
    LineItems: list[FccLineItemTuned] = ComparableField(weight=2.0, description=_described(FccInvoice, "LineItems"))


# --- documents and selection -------------------------------------------------------------


class LabelError(ValueError):
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
    """The documents of one run, and where they came from."""

    mode: str
    selection: Selection
    provenance: dict[str, Any]
    pages: list[dict[str, Any]]
    snapshot_path: Path

    @property
    def documents(self) -> list[FccDocument]:
        return self.selection.documents


def from_snapshot(path: Path = SNAPSHOT_PATH) -> FccSource:
    """Select the documents from a stored snapshot; file reads only, no socket.

    Raises:
        SnapshotError: If the snapshot is missing (naming `make record-fcc`) or malformed.
    """
    snapshot = read_snapshot(path, RECORD_COMMAND)
    selection = select_documents(snapshot_rows(snapshot, RECORD_COMMAND))
    return FccSource("replay", selection, snapshot.provenance, snapshot.pages, Path(path))


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
    return FccSource("live", selection, provenance, pages, LIVE_SNAPSHOT_PATH)


def save_source(source: FccSource, path: Path, recorded: str | None = None) -> Path:
    """Write the pages a live run fetched to `path`, as a snapshot replay mode can read."""
    provenance = dict(source.provenance, recorded=recorded)
    return write_snapshot(path, FCC_REQUEST, source.pages, provenance)


def load_documents(
    mode: str,
    *,
    client: DatasetsServerClient | None = None,
    snapshot_path: Path = SNAPSHOT_PATH,
    live_snapshot_path: Path = LIVE_SNAPSHOT_PATH,
) -> FccSource:
    """The run's documents: downloaded in live mode (and saved), else read from the snapshot.

    Raises:
        DatasetsServerError: Live, if the service cannot be reached (after bounded retries).
        SnapshotError: In replay mode, if the snapshot is missing or malformed.
    """
    if mode == "live":
        source = fetch_live(client)
        source.snapshot_path = Path(live_snapshot_path)
        save_source(source, source.snapshot_path)
        return source
    return from_snapshot(snapshot_path)


# --- recorded exchanges ------------------------------------------------------------------


def exchange_path(document_id: str, directory: Path = FCC_EXCHANGES_DIR) -> Path:
    """Where the recorded extraction of one document lives: `<directory>/<id>.json`."""
    return directory / f"{re.sub(r'[^A-Za-z0-9._-]', '_', document_id)}.json"


def load_document_exchange(document_id: str, directory: Path = FCC_EXCHANGES_DIR) -> Exchange:
    """Load and validate the recorded extraction of one document.

    Raises:
        FixtureError: If the file is missing (naming `make record-fcc`), malformed, calls
            another tool than `FccInvoice`, or was recorded for another document.
    """
    path = exchange_path(document_id, directory)
    exchange = load_exchange(path, tool_name=FccInvoice.__name__, record_command=RECORD_COMMAND)
    recorded_for = exchange.provenance.get("document_id")
    if recorded_for != document_id:
        raise FixtureError(
            f"{path}: field 'provenance.document_id' is {recorded_for!r}, but this replay is for "
            f"document {document_id!r}; the exchange belongs to another document. "
            f"Re-record the snapshot and the exchanges together with `{RECORD_COMMAND}`"
        )
    return exchange


def case_model(document_id: str, mode: str, live: Model | None = None) -> Model:
    """The model one case's agent talks to: the shared live model, or a replay of its exchange.

    Raises:
        FixtureError: In replay mode, if the document has no valid exchange of its own.
    """
    if mode == "live":
        if live is None:
            raise ValueError("live mode needs the shared live model (helpers.services.bedrock.live_model())")
        return live
    return ReplayModel(load_document_exchange(document_id))


def fcc_cases(documents: Iterable[FccDocument]) -> list[Case]:
    """One evaluation case per document: the prompt as input, the verified label as expected."""
    return [
        Case(name=doc.id, input=doc.prompt(), expected_output=doc.label, metadata={"row_idx": doc.row_idx})
        for doc in documents
    ]


def date_comparison(label: str, predictions: Iterable[str]) -> list[dict[str, Any]]:
    """Score printed-date variants under edit distance and under the date comparator.

    Each bar is read from the schema's own configuration: what stickler infers for the plain
    `str` date (`LevenshteinComparator@0.7`) and what `FccLineItemTuned` declares (0.95).
    """
    path = "LineItems.LineItemStartDate"
    edit, dates = LevenshteinComparator(), DateComparator()
    edit_bar = stickler.eval_for(FccInvoice).explain()[path]["threshold"]
    date_bar = stickler.eval_for(FccInvoiceTuned).explain()[path]["threshold"]
    rows = []
    for prediction in predictions:
        edit_score, date_score = edit.compare(label, prediction), dates.compare(label, prediction)
        rows.append(
            {
                "label": label,
                "prediction": prediction,
                "levenshtein": round(edit_score, 3),
                "levenshtein_match": edit_score >= edit_bar,
                "date": round(date_score, 3),
                "date_match": date_score >= date_bar,
            }
        )
    return rows


def repo_relative(text: str) -> str:
    """`text` with this checkout's absolute path removed, so notebook output is the same anywhere."""
    return text.replace(f"{ROOT}/", "")


def source_lines(source: FccSource, mode: str, responses: str) -> list[str]:
    """What a notebook prints first: the mode, and where documents and responses came from.

    Paths are shown relative to the repository, so the output is the same on every machine.
    """
    where = repo_relative(str(source.snapshot_path))
    if source.provenance.get("hand_authored"):
        documents = f"hand-authored stand-ins, not rows of {DATASET} ({where})"
    elif mode == "live":
        documents = f"downloaded now from the {SERVICE}: {DATASET} (saved to {where})"
    else:
        documents = f"a recorded snapshot of {DATASET} ({where})"
    return [f"mode: {mode}", f"documents: {documents}", f"responses: {responses}"]


def exchanges_summary(exchanges: Iterable[Exchange], directory: Path = FCC_EXCHANGES_DIR) -> str:
    """One line on where the replayed responses came from, read from their provenance."""
    exchanges = list(exchanges)
    where = repo_relative(str(directory))
    if all(exchange.hand_authored for exchange in exchanges):
        return f"{len(exchanges)} hand-authored exchanges, replayed ({where}/); they measure no model"
    models = sorted({str(exchange.provenance.get("model_id")) for exchange in exchanges})
    times = sorted(str(exchange.provenance.get("recorded")) for exchange in exchanges)
    return (
        f"{len(exchanges)} exchanges recorded from {', '.join(models)} "
        f"({times[0][:10]} to {times[-1][:10]}), replayed ({where}/)"
    )


@dataclass
class FccRun:
    """What a notebook run starts from: the documents, the shared live model, the provenance."""

    mode: str
    source: FccSource
    model: Model | None  # one BedrockModel shared by every case's Agent; None in replay mode
    provenance: list[str]


def open_run(mode: str, *, snapshot_path: Path = SNAPSHOT_PATH, exchanges_dir: Path = FCC_EXCHANGES_DIR) -> FccRun:
    """Check everything a run needs before any case runs, the cheapest failure first.

    Live: the credentials check (offline, naming AWS_PROFILE) comes before the download, so a
    missing profile fails in a second instead of after it. Replay: every document's recorded
    exchange is loaded up front, so a missing one names `make record-fcc` at once.

    Raises:
        CredentialsError: Live, if no AWS credentials resolve.
        DatasetsServerError: Live, if the datasets server cannot be reached.
        SnapshotError, FixtureError: In replay mode, if the snapshot or an exchange is missing.
    """
    model = None
    if mode == "live":
        check_credentials()
        model = live_model()
        responses = f"live calls to {MODEL_ID} on Bedrock in {resolve_region()}"
    source = load_documents(mode, snapshot_path=snapshot_path)
    if mode != "live":
        exchanges = [load_document_exchange(doc.id, exchanges_dir) for doc in source.documents]
        responses = exchanges_summary(exchanges, exchanges_dir)
    return FccRun(mode, source, model, source_lines(source, mode, responses))


@contextmanager
def progress(total: int, enabled: bool) -> Iterator[Callable[[], None]]:
    """A progress bar over the documents when `enabled` (live mode); a no-op otherwise.

    Yields the function a task calls once per finished document. Replay runs show no bar,
    so their stored outputs hold nothing that changes between runs.
    """
    if not enabled:
        yield lambda: None
        return
    from rich.progress import Progress

    with Progress() as bar:
        task = bar.add_task("extracting", total=total)
        yield lambda: bar.advance(task)
