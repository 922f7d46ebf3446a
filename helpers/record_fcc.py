"""Re-record the FCC documents and their extractions against the live services.

    AWS_PROFILE=my-profile python -m helpers.record_fcc      (or: make record-fcc)

Downloads the five documents from the Hugging Face datasets server, extracts each one live
with Claude Haiku on Bedrock through `RecordingModel`, and only when every step succeeded
replaces `data/fcc/snapshot.json` and `data/exchanges/fcc/*.json` together, so the snapshot
and the exchanges always describe the same documents. On any failure every file is left
byte for byte as it was.

Exit codes (the same as the offline recorder, `make record`):
  0  recorded; the payloads and what changed are printed for review
  1  a dependency is missing
  2  a live call failed: no credentials (set AWS_PROFILE), no model access, wrong region,
     the datasets server unreachable or answering an error, or any runtime error
  3  the model never called the structured-output tool for a document
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

# The values of helpers.exchanges.recording (a test checks they agree), repeated here because that
# module imports strands, which the dependency check must be able to report missing.
EXIT_OK = 0
EXIT_MISSING_DEPENDENCY = 1
EXIT_AGENT_FAILED = 2
EXIT_NO_STRUCTURED_OUTPUT = 3
REQUIRED_MODULES = ("boto3", "requests", "strands", "stickler")


class _Stop(Exception):
    """Ends the run with an exit code; the message has already been printed."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def main(
    argv: list[str] | None = None,
    *,
    model_factory: Callable[[], Any] | None = None,
    out: TextIO | None = None,
) -> int:
    """Run the recorder; returns the exit code. `model_factory` replaces Bedrock in tests."""
    out = out or sys.stdout
    args = _parser().parse_args(argv)
    try:
        for name in REQUIRED_MODULES:
            _require(name, out)
        from helpers.examples.fcc.cassettes import FCC_EXCHANGES_DIR
        from helpers.examples.fcc.documents import SNAPSHOT_PATH

        snapshot = Path(args.snapshot) if args.snapshot else SNAPSHOT_PATH
        exchanges = Path(args.exchanges) if args.exchanges else FCC_EXCHANGES_DIR
        model, model_id = _model(model_factory, out)
        source = _download(args, out)
        fixtures = {doc.id: _extract(model, model_id, doc, out) for doc in source.documents}
        _commit(source, fixtures, snapshot, exchanges, out)
    except _Stop as stop:
        if stop.code != EXIT_MISSING_DEPENDENCY:
            print("Nothing was written; the snapshot and the exchanges are unchanged.", file=out)
        return stop.code
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.record_fcc",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--base-url", help="datasets server root (default: HF_DATASETS_SERVER_URL or the public one)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per HTTP request (default 20)")
    parser.add_argument("--retries", type=int, default=3, help="retries on 429, 5xx and dropped connections")
    parser.add_argument("--backoff", type=float, default=1.0, help="first retry wait in seconds, doubling")
    parser.add_argument("--snapshot", help="snapshot file to replace (default: data/fcc/snapshot.json)")
    parser.add_argument("--exchanges", help="folder of exchanges to replace (default: data/exchanges/fcc)")
    return parser


def _require(name: str, out: TextIO) -> None:
    try:
        importlib.import_module(name)
    except ImportError as exc:
        print(f"Missing dependency: {name} ({exc}). Install the project with `make setup`.", file=out)
        raise _Stop(EXIT_MISSING_DEPENDENCY) from exc


def _model(model_factory: Callable[[], Any] | None, out: TextIO) -> tuple[Any, str]:
    """The one model shared by every document: Bedrock, after an offline credentials check."""
    if model_factory is not None:
        model = model_factory()
        return model, str(model.get_config().get("model_id", type(model).__name__))
    from helpers.exchanges.recording import report_agent_failure
    from helpers.services.bedrock import MODEL_ID, check_credentials, live_model, resolve_region

    try:
        check_credentials()
        model = live_model()
    except Exception as exc:  # no credentials, a profile that does not exist, a region boto3 refuses
        report_agent_failure(exc, out, subject="Setting up Bedrock")
        raise _Stop(EXIT_AGENT_FAILED) from exc
    print(f"Model: {MODEL_ID} in {resolve_region()}", file=out)
    return model, MODEL_ID


def _download(args: argparse.Namespace, out: TextIO):
    from helpers.examples.fcc.documents import DOCUMENT_COUNT, MAX_LINE_ITEMS, fetch_live
    from helpers.services.datasets_server import DatasetsServerClient, DatasetsServerError

    client = DatasetsServerClient(args.base_url, timeout=args.timeout, retries=args.retries, backoff=args.backoff)
    try:
        source = fetch_live(client)
    except DatasetsServerError as exc:
        print(f"Download failed: {exc}", file=out)
        raise _Stop(EXIT_AGENT_FAILED) from exc
    for row in source.selection.skipped:
        print(f"Skipped row {row.row_idx} ({row.id}): {row.reason}", file=out)
    found = len(source.documents)
    if found < DOCUMENT_COUNT:
        print(
            f"Only {found} of {DOCUMENT_COUNT} documents have a valid label with at most "
            f"{MAX_LINE_ITEMS} line items; refusing to record a partial set.",
            file=out,
        )
        raise _Stop(EXIT_AGENT_FAILED)
    print(f"Fetched {len(source.pages)} page(s); documents: {', '.join(d.id for d in source.documents)}", file=out)
    return source


def _extract(model: Any, model_id: str, document: Any, out: TextIO) -> dict[str, Any]:
    """One live extraction through `RecordingModel`; the fixture data, not yet written."""
    from helpers.examples.fcc.cassettes import exchange_path
    from helpers.examples.fcc.schema import FccInvoice
    from helpers.exchanges.recording import capture_structured_output

    captured = capture_structured_output(  # one agent per document
        model,
        document.prompt(),
        FccInvoice,
        source=str(exchange_path(document.id)),
        model_id=model_id,
        note=f"Live extraction of {document.id} recorded by `make record-fcc`.",
        extra_provenance={"document_id": document.id},
        label=document.id,
        out=out,
    )
    if isinstance(captured, int):
        raise _Stop(captured)
    calls = [turn["toolUse"] for turn in captured["turns"] if "toolUse" in turn]
    print(f"{document.id}: extracted {len(calls[-1]['input'].get('LineItems') or [])} line items", file=out)
    return captured


def _commit(source: Any, fixtures: dict[str, dict], snapshot: Path, exchanges: Path, out: TextIO) -> None:
    """Stage every file beside its target, then swap them all in; drop exchanges of old documents.

    Staging first means a full disk or a crash while writing leaves every target as it was.
    """
    from helpers.examples.fcc.cassettes import exchange_path
    from helpers.examples.fcc.documents import FCC_REQUEST
    from helpers.exchanges.recording import print_review, read_previous
    from helpers.files import write_text_atomically
    from helpers.services.datasets_server import write_snapshot

    staged: list[tuple[Path, Path]] = []
    try:
        for doc_id, data in fixtures.items():
            target = exchange_path(doc_id, exchanges)
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
            staged.append((write_text_atomically(_staged(target), text), target))
        recorded = datetime.now(UTC).isoformat(timespec="seconds")
        provenance = dict(source.provenance, recorded=recorded)
        staged.append((write_snapshot(_staged(snapshot), FCC_REQUEST, source.pages, provenance), snapshot))
    except BaseException as exc:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        if not isinstance(exc, OSError):
            raise
        print(f"Writing the recording failed: {exc}", file=out)
        raise _Stop(EXIT_AGENT_FAILED) from exc
    for doc_id, data in fixtures.items():
        print(file=out)
        print_review(data, read_previous(exchange_path(doc_id, exchanges)), out, label=doc_id)
    for tmp, target in staged:
        os.replace(tmp, target)
    kept = {target for _, target in staged}
    for old in sorted(exchanges.glob("*.json")):
        if old not in kept:
            old.unlink()
            print(f"Removed {old.name}: its document is no longer among the five.", file=out)
    print(f"\nReplaced {snapshot} and {len(fixtures)} exchanges in {exchanges}.", file=out)
    print("Next: `make outputs` to re-run the notebook on the new recording, then review and commit.", file=out)


def _staged(target: Path) -> Path:
    """Where a file waits beside its target until every file of the recording is written."""
    return target.with_name(f".{target.name}.staged")


if __name__ == "__main__":
    sys.exit(main())
