"""Where each FCC document's recorded extraction lives, and the checks `make record-fcc` relies on.

The FCC exchanges are a cassette folder of the general layout (`fieldeval.exchanges.cassettes`):
one file per document, `data/exchanges/fcc/<id>.json`, named as the general recorder names it.
Each is bound to its document's prompt by `provenance.prompt_sha256`, and the ones
`make record-fcc` writes also name their document in `provenance.document_id`, which is how the
recorder proves an old file stale. An exchange recorded for another document is refused by name.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fieldeval.exchanges.cassettes import cassette_paths
from fieldeval.exchanges.fixtures import (
    EXCHANGES_DIR,
    PROMPT_HASH_KEY,
    Exchange,
    FixtureError,
    load_exchange,
    prompt_sha256,
)
from walkthroughs.fcc.documents import RECORD_COMMAND
from walkthroughs.fcc.schema import FccInvoice

FCC_EXCHANGES_DIR = EXCHANGES_DIR / "fcc"
DOCUMENT_KEY = "document_id"


def exchange_paths(document_ids: Iterable[str], directory: Path = FCC_EXCHANGES_DIR) -> dict[str, Path]:
    """Each document's exchange file, by id.

    Raises:
        CassetteError: If two ids map to the same file name, before anything is read or written.
    """
    return cassette_paths(directory, document_ids)


def exchange_path(document_id: str, directory: Path = FCC_EXCHANGES_DIR) -> Path:
    """Where the recorded extraction of one document lives: `<directory>/<id>.json`."""
    return exchange_paths([document_id], directory)[document_id]


def load_document_exchange(
    document_id: str, directory: Path = FCC_EXCHANGES_DIR, *, prompt: str | None = None
) -> Exchange:
    """Load and validate the recorded extraction of one document; with `prompt`, check it answered that prompt.

    Raises:
        FixtureError: If the file is missing (naming `make record-fcc`), malformed, calls another
            tool than `FccInvoice`, is bound to no prompt, or was recorded for another document.
    """
    path = exchange_path(document_id, directory)
    exchange = load_exchange(path, tool_name=FccInvoice.__name__, record_command=RECORD_COMMAND)
    fix = f"Re-record the snapshot and the exchanges together with `{RECORD_COMMAND}`"
    recorded_for = exchange.provenance.get(DOCUMENT_KEY)
    if recorded_for is not None and recorded_for != document_id:
        raise FixtureError(
            f"{path}: field 'provenance.{DOCUMENT_KEY}' is {recorded_for!r}, but this replay is for "
            f"document {document_id!r}; the exchange belongs to another document. {fix}"
        )
    if exchange.prompt_sha256 is None:
        raise FixtureError(
            f"{path}: field 'provenance.{PROMPT_HASH_KEY}' is missing, so the exchange is bound to no "
            f"document's prompt. {fix}"
        )
    if prompt is not None and exchange.prompt_sha256 != prompt_sha256(prompt):
        raise FixtureError(
            f"{path}: recorded for another prompt than document {document_id!r} has now (its text or the "
            f"prompt template changed since the recording). {fix}"
        )
    return exchange
