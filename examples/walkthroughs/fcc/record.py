"""Refresh the FCC documents, then record their extractions with the general recorder, as one step.

    AWS_PROFILE=my-profile python -m walkthroughs.fcc.record      (or: make record-fcc)

1. The refresh: downloads the five documents from the Hugging Face datasets server and stages
   the new snapshot and its case file (`name`, `input`, `expected_output`, `metadata` per line).
2. The recording: the general recorder (`fieldeval.exchanges.recorder.record_cases`, the code behind
   `python -m fieldeval.commands.record`) runs `walkthroughs.fcc.task:extract` live on every case, into
   a staging cassette folder.
3. Only when every document succeeded: `data/fcc/snapshot.json`, `data/fcc/cases.jsonl` and the
   five exchanges are written in one step (all or none), then the exchanges of documents no
   longer selected (those whose `provenance.document_id` names such a document) are removed.
   Any other file in the exchanges folder is left alone and mentioned.

On any failure nothing in `data/` changes. The cassettes alone can be re-recorded against the
committed snapshot with `python -m fieldeval.commands.record --schema walkthroughs.fcc.schema:FccInvoice
--cases data/fcc/cases.jsonl --task walkthroughs.fcc.task:extract --cassettes data/exchanges/fcc`.

Exit codes: `CODES` below, this command's own, printed by --help; their values are those of
`python -m fieldeval.commands.record`, so a script reads either alike.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, TextIO

from fieldeval.commands import exits
from fieldeval.errors import INSTALL
from fieldeval.files import remove_dead_staging, staging_folder

# This command's exit codes, on the values of fieldeval.commands.record's (a test checks they agree).
EXIT_OK = exits.OK
EXIT_MISSING_DEPENDENCY = exits.MISSING_DEPENDENCY
EXIT_AGENT_FAILED = exits.BAD_INPUT
EXIT_NO_STRUCTURED_OUTPUT = exits.NO_STRUCTURED_OUTPUT
EXIT_INTERRUPTED = exits.INTERRUPTED
CODES = [  # in the order --help lists them (Ctrl-C and a closed pipe are added as for every command)
    (EXIT_OK, "recorded; the payloads and what changed are printed for review"),
    (EXIT_MISSING_DEPENDENCY, f"a dependency is missing: the message names it and its install line, {INSTALL}"),
    (
        EXIT_AGENT_FAILED,
        "bad input or a failed live call: a flag out of range or a malformed --base-url, no credentials (set "
        "AWS_PROFILE), no model access, wrong region, the datasets server unreachable, answering an error or "
        "a malformed page, too few usable documents, two ids that would share a file, a write that failed, or "
        "any runtime error",
    ),
    (EXIT_NO_STRUCTURED_OUTPUT, "the model never called the structured-output tool for a document"),
]
REQUIRED_MODULES = ("boto3", "requests", "strands", "stickler")
NOTHING_WRITTEN = "Nothing was written; the snapshot, the case file and the exchanges are unchanged."
STAGING_PREFIX = "record-fcc-"


class _Stop(Exception):
    """Ends the run with an exit code; the message has already been printed."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """argparse, whose refusals (exit 2) also say that nothing was written."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}. {NOTHING_WRITTEN}\n")


def main(
    argv: list[str] | None = None,
    *,
    model_factory: Callable[[], Any] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run the refresh and the recording; returns the exit code. `model_factory` replaces Bedrock in tests.

    Progress and the review of each recording go to `out` (standard output); refusals, failures
    and warnings to `err` (standard error).
    """
    out, err = out or sys.stdout, err or sys.stderr
    return exits.run(lambda: _main(_parser().parse_args(argv), model_factory, out, err), err=err)


def _main(args: argparse.Namespace, model_factory: Callable[[], Any] | None, out: TextIO, err: TextIO) -> int:
    try:
        for name in REQUIRED_MODULES:
            _require(name, err)
        from walkthroughs.fcc.cassettes import FCC_EXCHANGES_DIR
        from walkthroughs.fcc.documents import CASES_PATH, SNAPSHOT_PATH

        targets = _Targets(
            Path(args.snapshot) if args.snapshot else SNAPSHOT_PATH,
            Path(args.cases) if args.cases else CASES_PATH,
            Path(args.exchanges) if args.exchanges else FCC_EXCHANGES_DIR,
        )
        _check_targets(targets, err)
        _remove_dead_staging(out)
        client = _client(args, err)
        model, model_id = _model(model_factory, out, err)
        source = _download(client, targets.exchanges, out, err)
        with staging_folder(STAGING_PREFIX) as staging:
            writes = _record(source, model, model_id, staging, targets, out, err)
            _switch(writes, source, targets, out, err)
    except _Stop as stop:
        if stop.code != EXIT_MISSING_DEPENDENCY:
            print(NOTHING_WRITTEN, file=err)
        return stop.code
    return EXIT_OK


def _check_targets(targets: _Targets, err: TextIO) -> None:
    """Refuse, before any work, targets that are one file, a symlink, a device or a folder."""
    from fieldeval.outputs import OutputError, check_folder, check_outputs

    try:
        check_outputs({"--snapshot": targets.snapshot, "--cases": targets.cases}, {})
        check_folder(targets.exchanges, "--exchanges")
        for option, path in (("--snapshot", targets.snapshot), ("--cases", targets.cases)):
            if path.absolute().parent == targets.exchanges.absolute():
                raise OutputError(
                    f"{option} {path} is inside --exchanges {targets.exchanges}, where exchanges are written "
                    "and stale ones removed; keep it in another folder"
                )
    except OutputError as exc:
        print(f"Refused: {exc}.", file=err)
        raise _Stop(EXIT_AGENT_FAILED) from exc


def _remove_dead_staging(out: TextIO) -> None:
    """Remove the staging folders killed runs left in the temporary directory, and say so."""
    for folder in remove_dead_staging(STAGING_PREFIX):
        print(f"Removed {folder}, the staging folder of a killed run.", file=out)


def _parser() -> argparse.ArgumentParser:
    parser = exits.parser("walkthroughs.fcc.record", "fcc-record", __doc__ or "", cls=_Parser, codes=CODES)
    parser.add_argument(
        "--base-url",
        help="datasets server root, http(s)://host[:port] (default: HF_DATASETS_SERVER_URL or the public one)",
    )
    parser.add_argument(
        "--timeout", type=float, default=20.0, help="seconds per connect and per read, in (0, 300] (default 20)"
    )
    parser.add_argument(
        "--retries", type=int, default=3, help="retries on 429, 5xx and transport errors, 0 to 10 (default 3)"
    )
    parser.add_argument(
        "--backoff", type=float, default=1.0, help="first retry wait in seconds, doubling, 0 to 60 (default 1)"
    )
    parser.add_argument("--snapshot", help="snapshot file to replace (default: data/fcc/snapshot.json)")
    parser.add_argument("--cases", help="case file to replace (default: data/fcc/cases.jsonl)")
    parser.add_argument("--exchanges", help="cassette folder of the exchanges (default: data/exchanges/fcc)")
    return parser


@dataclass(frozen=True)
class _Targets:
    """The three things a recording replaces: the snapshot, its case file, the cassette folder."""

    snapshot: Path
    cases: Path
    exchanges: Path


def _require(name: str, err: TextIO) -> None:
    try:
        importlib.import_module(name)
    except ImportError as exc:
        print(f"{exits.missing_dependency(name)} ({exc})", file=err)
        raise _Stop(EXIT_MISSING_DEPENDENCY) from exc


def _client(args: argparse.Namespace, err: TextIO) -> Any:
    """The datasets-server client; a setting out of range or a malformed URL ends here, before any call."""
    from walkthroughs.fcc.datasets_server import DatasetsServerClient

    try:
        return DatasetsServerClient(args.base_url, timeout=args.timeout, retries=args.retries, backoff=args.backoff)
    except ValueError as exc:
        print(f"Refused: {exc}.", file=err)
        raise _Stop(EXIT_AGENT_FAILED) from exc


def _model(model_factory: Callable[[], Any] | None, out: TextIO, err: TextIO) -> tuple[Any, str]:
    """The one model shared by every document: Bedrock, after an offline credentials check."""
    if model_factory is not None:
        model = model_factory()
        return model, str(model.get_config().get("model_id", type(model).__name__))
    from fieldeval.exchanges.recording import report_agent_failure
    from fieldeval.services.bedrock import MODEL_ID, check_credentials, live_model, resolve_region

    try:
        check_credentials()
        model = live_model()
    except Exception as exc:  # no credentials, a profile that does not exist, a region boto3 refuses
        report_agent_failure(exc, err, subject="Setting up Bedrock")
        raise _Stop(EXIT_AGENT_FAILED) from exc
    print(f"Model: {MODEL_ID} in {resolve_region()}", file=out)
    return model, MODEL_ID


def _download(client: Any, exchanges: Path, out: TextIO, err: TextIO) -> Any:
    """Step 1, the refresh: the five documents, or exit 2 with the service's or the selection's reason."""
    from walkthroughs.fcc.datasets_server import DatasetsServerError
    from walkthroughs.fcc.refresh import RefreshError, fetch_documents

    try:
        source = fetch_documents(client, exchanges)
    except DatasetsServerError as exc:
        print(f"Download failed: {exc}", file=err)
        raise _Stop(EXIT_AGENT_FAILED) from exc
    except RefreshError as exc:
        _print_skipped(exc.source, err)
        print(str(exc), file=err)
        raise _Stop(EXIT_AGENT_FAILED) from exc
    _print_skipped(source, out)
    print(f"Fetched {len(source.pages)} page(s); documents: {', '.join(d.id for d in source.documents)}", file=out)
    return source


def _print_skipped(source: Any, out: TextIO) -> None:
    for row in source.selection.skipped:
        print(f"Skipped row {row.row_idx} ({row.id}): {row.reason}", file=out)


def _record(
    source: Any, model: Any, model_id: str, staging: Path, targets: _Targets, out: TextIO, err: TextIO
) -> dict[Path, bytes]:
    """Steps 1 and 2 into `staging`: the snapshot, the case file, then every cassette; returns what to switch in.

    The current exchanges are copied into the staging cassette folder first, so the recorder's
    review prints what changed from them.
    """
    from fieldeval.errors import EvalError, NoStructuredOutput
    from fieldeval.exchanges.fixtures import exchange_text
    from fieldeval.exchanges.recorder import record_cases
    from fieldeval.harness.cases import CaseFileError, load_cases
    from walkthroughs.fcc.cassettes import DOCUMENT_KEY, exchange_paths
    from walkthroughs.fcc.documents import RECORD_COMMAND
    from walkthroughs.fcc.refresh import stage_refresh
    from walkthroughs.fcc.schema import FccInvoice
    from walkthroughs.fcc.task import extract

    recorded = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        snapshot, cases_file = stage_refresh(source, staging, recorded)
    except OSError as exc:
        print(f"Staging the snapshot failed: {exc}", file=err)
        raise _Stop(EXIT_AGENT_FAILED) from exc
    try:
        cases = load_cases(cases_file, FccInvoice)  # the general reader, so the committed file is one it accepts
    except CaseFileError as exc:
        print(f"The refreshed case file is not usable: {exc}", file=err)
        raise _Stop(EXIT_AGENT_FAILED) from exc
    ids = [case.name for case in cases]
    cassettes = staging / "cassettes"
    cassettes.mkdir()
    targets_by_id = exchange_paths(ids, targets.exchanges)
    staged_by_id = exchange_paths(ids, cassettes)
    for name, staged in staged_by_id.items():
        if targets_by_id[name].is_file():
            shutil.copyfile(targets_by_id[name], staged)
    print(
        f"Recording {len(cases)} documents; nothing in {targets.exchanges} changes until every one succeeded.", file=out
    )
    try:
        record_cases(
            FccInvoice,
            cases,
            extract,
            cassettes,
            model=model,
            model_id=model_id,
            record_command=RECORD_COMMAND,
            out=out,
            err=err,
        )
    except KeyboardInterrupt as exc:  # the recorder's says what it stopped
        print(str(exc) or "Interrupted.", file=err)
        raise _Stop(EXIT_INTERRUPTED) from exc
    except EvalError as exc:  # a case failed, or the run gave up: the recorder's message, then ours
        print(exc, file=err)
        raise _Stop(EXIT_NO_STRUCTURED_OUTPUT if isinstance(exc, NoStructuredOutput) else EXIT_AGENT_FAILED) from exc
    writes = {targets.snapshot: snapshot.read_bytes(), targets.cases: cases_file.read_bytes()}
    for name, staged in staged_by_id.items():
        data = json.loads(staged.read_text(encoding="utf-8"))
        data["provenance"][DOCUMENT_KEY] = name  # what proves the file stale once the document leaves the set
        writes[targets_by_id[name]] = exchange_text(data).encode("utf-8")
    return writes


def _switch(writes: dict[Path, bytes], source: Any, targets: _Targets, out: TextIO, err: TextIO) -> None:
    """Step 3: every file in as one step, then the provably stale exchanges out.

    `one_step` stages every file whole (the step where a full disk or a read-only folder fails)
    before it renames any in, so a failure leaves the snapshot, the case file and the exchanges
    all old. That is enough here: only a kill during the renames themselves could leave a mix,
    and every file it could mix is committed to git. The stale exchanges go after the new set is
    in: one that cannot be removed is named, and no case refers to it any more.
    """
    from fieldeval.files import one_step, write_bytes_atomically

    selected = {doc.id for doc in source.documents}
    stale, foreign = _old_files(targets.exchanges, set(writes), selected)
    try:
        with one_step():
            for path, data in writes.items():
                write_bytes_atomically(path, data)
    except OSError as exc:  # a full disk, a read-only folder
        print(f"Writing the recording failed: {exc}", file=err)
        raise _Stop(EXIT_AGENT_FAILED) from exc
    for path, reason in stale.items():
        try:
            path.unlink()
        except FileNotFoundError:
            continue  # gone already: nothing to say
        except OSError as exc:
            print(f"Could not remove {path.name} ({exc.strerror or exc}): {reason}; delete it by hand.", file=err)
            continue
        print(f"Removed {path.name}: {reason}.", file=out)
    for path, reason in foreign.items():
        print(f"Left {path.name} in place: {reason}.", file=out)
    count = len(writes) - 2
    print(f"\nReplaced {targets.snapshot}, {targets.cases} and {count} exchanges in {targets.exchanges}.", file=out)
    print("Next: `make outputs` to re-run the notebook on the new recording, then review and commit.", file=out)


def _old_files(folder: Path, written: Iterable[Path], selected: set[str]) -> tuple[dict[Path, str], dict[Path, str]]:
    """The other `*.json` files of the cassette folder: provably stale exchanges, and the rest.

    A file is stale only if it is an exchange whose `provenance.document_id` names a document that
    is no longer selected; everything else (another folder's fixture, a file we cannot read) is
    not ours to remove.
    """
    from walkthroughs.fcc.cassettes import DOCUMENT_KEY

    written = {Path(path).absolute() for path in written}
    stale: dict[Path, str] = {}
    foreign: dict[Path, str] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.absolute() in written:
            continue
        try:
            provenance = json.loads(path.read_text(encoding="utf-8")).get("provenance")
            document = provenance.get(DOCUMENT_KEY) if isinstance(provenance, dict) else None
        except (OSError, ValueError, RecursionError, AttributeError):
            document = None
        if isinstance(document, str) and document not in selected:
            stale[path] = f"the exchange of document {document!r}, which is no longer among the five"
        else:
            foreign[path] = "not an exchange of a document this recording replaced"
    return stale, foreign


if __name__ == "__main__":
    sys.exit(main())
