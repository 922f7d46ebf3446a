"""The live snapshot refresh of `make record-fcc`: download, select the five documents, stage the files.

Nothing here writes into `data/`. `fetch_documents` downloads until five documents are selected
and refuses a partial set or two ids that would share an exchange file; `stage_refresh` writes
the new snapshot and its case file into a staging folder. The command (`walkthroughs.fcc.record`)
records the cassettes beside them and writes all of them into `data/` in one step.
"""

from __future__ import annotations

from pathlib import Path

from fieldeval.errors import EvalError
from fieldeval.files import write_text_atomically
from walkthroughs.fcc.cassettes import FCC_EXCHANGES_DIR, exchange_paths
from walkthroughs.fcc.datasets_server import DatasetsServerClient
from walkthroughs.fcc.documents import (
    CASES_PATH,
    DOCUMENT_COUNT,
    MAX_LINE_ITEMS,
    SNAPSHOT_PATH,
    FccSource,
    case_lines,
    fetch_live,
    save_source,
)


class RefreshError(EvalError, RuntimeError):
    """The download worked, but its documents cannot make a recording; the message says why."""

    def __init__(self, message: str, source: FccSource):
        super().__init__(message)
        self.source = source  # what was downloaded and skipped, for the report


def fetch_documents(client: DatasetsServerClient, exchanges: Path = FCC_EXCHANGES_DIR) -> FccSource:
    """Download and select the five documents; write nothing.

    Raises:
        DatasetsServerError: If the service cannot be reached or answers with an error.
        RefreshError: If fewer than five rows qualify, or two ids would share one exchange file.
    """
    source = fetch_live(client)
    found = len(source.documents)
    if found < DOCUMENT_COUNT:
        raise RefreshError(
            f"Only {found} of {DOCUMENT_COUNT} documents have a valid label with at most "
            f"{MAX_LINE_ITEMS} line items; refusing to record a partial set.",
            source,
        )
    try:
        exchange_paths([doc.id for doc in source.documents], exchanges)
    except ValueError as exc:  # CassetteError: two ids, one file name
        raise RefreshError(str(exc), source) from exc
    return source


def stage_refresh(source: FccSource, folder: Path, recorded: str) -> tuple[Path, Path]:
    """Write the snapshot and the case file of `source` into `folder`; return their paths there."""
    snapshot = save_source(source, Path(folder) / SNAPSHOT_PATH.name, recorded)
    hand_authored = bool(source.provenance.get("hand_authored"))
    cases = write_text_atomically(Path(folder) / CASES_PATH.name, case_lines(source.documents, hand_authored))
    return snapshot, cases
