"""What an FCC notebook run starts from: documents, the shared live model, provenance, progress.

`open_run` checks everything a run needs before any case runs, the cheapest failure first,
and says in plain lines which mode the run is in and where its data came from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from strands.models import Model

from helpers.exchanges.fixtures import Exchange
from helpers.files import REPO_ROOT
from helpers.services.bedrock import MODEL_ID, check_credentials, live_model, resolve_region
from walkthroughs.fcc.cassettes import FCC_EXCHANGES_DIR, exchange_paths, load_document_exchange
from walkthroughs.fcc.datasets_server import SERVICE
from walkthroughs.fcc.documents import DATASET, SNAPSHOT_PATH, FccSource, load_documents


def repo_relative(text: str) -> str:
    """`text` with this checkout's absolute path removed, so notebook output is the same anywhere."""
    return text.replace(f"{REPO_ROOT}/", "")


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
    endpoints = sorted({exchange.endpoint for exchange in exchanges if exchange.endpoint})
    stand_ins = sum(bool(exchange.stand_in) for exchange in exchanges)
    caveat = f"; {stand_ins} answered by a stand-in server, not a model" if stand_ins else ""
    if endpoints:
        caveat += f"; recorded through {', '.join(endpoints)}, a local or overridden endpoint"
    return (
        f"{len(exchanges)} exchanges recorded from {', '.join(models)} "
        f"({times[0][:10]} to {times[-1][:10]}), replayed ({where}/){caveat}"
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
        SnapshotError, FixtureError: In replay mode, if the snapshot or an exchange is missing,
            the snapshot selects fewer than five documents, or an exchange answered another prompt.
    """
    model = None
    if mode == "live":
        check_credentials()
        model = live_model()
        responses = f"live calls to {MODEL_ID} on Bedrock in {resolve_region()}"
    source = load_documents(mode, snapshot_path=snapshot_path)
    if mode != "live":
        exchange_paths([doc.id for doc in source.documents], exchanges_dir)  # two ids, one file: refused
        exchanges = [load_document_exchange(doc.id, exchanges_dir, prompt=doc.prompt()) for doc in source.documents]
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
