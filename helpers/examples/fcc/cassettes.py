"""Where each FCC document's recorded extraction lives, and the model that replays it.

One exchange file per document, `data/exchanges/fcc/<id>.json`, bound to its document by
`provenance.document_id`: a fixture recorded for another document is refused by name.
"""

from __future__ import annotations

import re
from pathlib import Path

from strands.models import Model

from helpers.examples.fcc.documents import RECORD_COMMAND
from helpers.examples.fcc.schema import FccInvoice
from helpers.exchanges.fixtures import EXCHANGES_DIR, Exchange, FixtureError, load_exchange
from helpers.exchanges.replay import ReplayModel

FCC_EXCHANGES_DIR = EXCHANGES_DIR / "fcc"


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
