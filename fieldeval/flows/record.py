"""What one `record` run does, in order: the recipe `python -m fieldeval.commands.record` follows.

    check(request)                                  # 1. the case file and the options (standard library only)
    check_dependencies()                            #    Strands, boto3 and pydantic import
    inputs = resolve(request)                       # 2. schema, task, cases; every cassette path writable
    model = live_model(request, factory, out)       # 3. the --model factory's, or Bedrock (credentials offline)
    record(request, inputs, model, out, err)        # 4. each selected case, live, its cassette switched in

`record_run` is that recipe. Steps 1 to 3 refuse with `Refused` (nothing written) or
`MissingDependency`; step 4 (`fieldeval.exchanges.recorder`) raises the recorder's errors
(`RecordRefused`, `RecordingFailed`, `NoStructuredOutput`, `KeyboardInterrupt`). The command maps
each to its exit code.
"""

from __future__ import annotations

import importlib
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from fieldeval.exchanges.throttle import GIVE_UP_AFTER, give_up_problem  # the standard library only
from fieldeval.flows import Refused, Request

# fieldeval.formats.exchange.DEFAULT_MATCH_ON and MATCH_PARTS, and recording.DEFAULT_MAX_CALLS (a test checks).
DEFAULT_MATCH_ON = ("system", "tools", "tool_choice", "output_schema", "messages")
MATCH_PARTS = ("system", "tools", "tool_choice", "output_schema", "messages", "user_text")
DEFAULT_MAX_CALLS = 12
RECORD_MODES = ("all", "missing", "stale")  # fieldeval.exchanges.recorder.RECORD_MODES
DEFAULT_CONCURRENCY = 4  # fieldeval.exchanges.recorder.DEFAULT_CONCURRENCY, which says why
REQUIRED = {"strands": "strands-agents", "boto3": "boto3", "botocore": "botocore", "pydantic": "pydantic"}


@dataclass(frozen=True)
class RecordRequest(Request):
    """Everything a `record` run was asked, as the command line gave it."""

    schema: str
    cases: Path
    task: str
    cassettes: Path
    only: Sequence[str] | None = None
    record_mode: str = "all"
    concurrency: int = DEFAULT_CONCURRENCY
    model: str | None = None
    model_id: str | None = None
    region: str | None = None
    match_on: str = ",".join(DEFAULT_MATCH_ON)
    max_calls: int = DEFAULT_MAX_CALLS
    give_up_after: float = GIVE_UP_AFTER
    verbose: bool = False

    def match_parts(self) -> tuple[str, ...]:
        return tuple(self.match_on.split(","))


@dataclass
class Inputs:
    """What step 2 loaded: the schema class, the task function and the cases."""

    schema: Any
    task: Callable[[Any, Any], Any]
    cases: list


def record_run(request: RecordRequest, model_factory: Callable[[], Any] | None, out: TextIO, err: TextIO) -> None:
    """The recipe: check, resolve, the model, record. Progress and reviews go to `out`, failures to `err`."""
    check(request)
    check_dependencies()
    inputs = resolve(request)
    model = model_factory() if model_factory is not None else live_model(request, out)
    record(request, inputs, model, out, err)


# 1. Check ------------------------------------------------------------------------------------------


def check(request: RecordRequest) -> None:
    """Refuse a missing case file and the first option out of range or contradicting another."""
    if not request.cases.is_file():
        raise Refused(f"{request.cases}: no case file here (check --cases).")
    problem = _option_problem(request)
    if problem is not None:
        raise Refused(problem)


def _option_problem(request: RecordRequest) -> str | None:
    """The first option that is out of range or contradicts another, as a message with the fix."""
    if request.concurrency < 1:
        return f"--concurrency {request.concurrency}: at least one case must be in flight; pass a count such as 4."
    if request.max_calls < 1:
        return f"--max-calls {request.max_calls}: a case needs at least one model call; pass a count such as 12."
    problem = give_up_problem(request.give_up_after)
    if problem is not None:
        return problem
    unknown = [part for part in request.match_parts() if part not in MATCH_PARTS]
    if unknown or not request.match_on:
        return f"--match-on {request.match_on!r}: name parts from {', '.join(MATCH_PARTS)}, separated by commas."
    if request.model is not None and (request.model_id is not None or request.region is not None):
        return "--model-id and --region set up the default Bedrock model; with --model, set them in your factory."
    return None


def missing_dependencies() -> list[str]:
    """The packages a live recording needs that do not import."""
    missing = []
    for module, package in REQUIRED.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(package)
    return missing


def check_dependencies() -> None:
    """Refuse, with the install line, a recording whose libraries do not import (exit 1)."""
    from fieldeval.errors import MissingDependency

    missing = missing_dependencies()
    if missing:
        raise MissingDependency(", ".join(missing))


# 2. Resolve ----------------------------------------------------------------------------------------


def resolve(request: RecordRequest) -> Inputs:
    """Load the schema, the task and the cases, and check every cassette the run may write."""
    from fieldeval.harness.cases import CaseFileError, load_cases
    from fieldeval.harness.schema import SchemaError, load_schema, load_task
    from fieldeval.outputs import OutputError

    try:
        schema = load_schema(request.schema)
        inputs = Inputs(schema, load_task(request.task), load_cases(request.cases, schema))
        check_cassette_outputs(request, [case.name for case in inputs.cases])
    except (SchemaError, CaseFileError, OutputError) as exc:
        raise Refused(f"{exc}.") from exc
    return inputs


def check_cassette_outputs(request: RecordRequest, names: Sequence[str]) -> None:
    """Refuse, before any call, a cassette file that is an input of the run, a symlink, a device or a folder."""
    from fieldeval.exchanges.cassettes import CassetteError, cassette_paths
    from fieldeval.outputs import OutputError, check_folder, check_outputs, module_file

    check_folder(request.cassettes, "--cassettes")
    try:
        paths = cassette_paths(request.cassettes, names)
    except CassetteError as exc:
        raise OutputError(str(exc)) from exc
    selected = {
        f"the cassette of case {name!r}": path
        for name, path in paths.items()
        if not request.only or name in request.only
    }
    inputs = {"--cases": request.cases, "the --schema module": module_file(request.schema)}
    inputs["the --task module"] = module_file(request.task)
    if request.model is not None:
        inputs["the --model module"] = module_file(request.model)
    check_outputs(selected, inputs)


# 3. The model --------------------------------------------------------------------------------------


def live_model(request: RecordRequest, out: TextIO) -> Any:
    """The model to record: the `--model` factory's, or Bedrock after an offline credentials check."""
    from fieldeval.exchanges.recording import report_agent_failure
    from fieldeval.services.models import ModelFactoryError, bedrock_model, describe_live, model_from_factory

    try:
        if request.model is not None:
            model = model_from_factory(request.model)
            where = ""
        else:
            model, region = bedrock_model(request.model_id, request.region)
            where = f" in {region}, AWS profile {os.environ.get('AWS_PROFILE') or '(boto3 default chain)'}"
    except ModelFactoryError as exc:
        raise Refused(f"{exc}.\n") from exc  # "Nothing was written." on a line of its own, as below
    except Exception as exc:  # no credentials, a profile that does not exist, a region boto3 refuses
        failure = io.StringIO()
        report_agent_failure(exc, failure)
        raise Refused(failure.getvalue()) from exc
    print(f"Recording with {describe_live(model)}{where}.", file=out)
    return model


# 4. Record -----------------------------------------------------------------------------------------


def record(request: RecordRequest, inputs: Inputs, model: Any, out: TextIO, err: TextIO) -> None:
    """Record each case the mode selects, up to --concurrency at once; raises the recorder's errors."""
    from fieldeval.exchanges.provenance import model_id as model_id_of
    from fieldeval.exchanges.record_options import RecordOptions, record_command
    from fieldeval.exchanges.recorder import record_cases
    from fieldeval.services.bedrock import MODEL_ID

    options = RecordOptions(model=request.model, match_on=request.match_parts(), max_calls=request.max_calls)
    model_id = model_id_of(model) or (request.model_id or MODEL_ID if request.model is None else "(no model id)")
    record_cases(
        inputs.schema,
        inputs.cases,
        inputs.task,
        request.cassettes,
        model=model,
        model_id=model_id,
        record_command=record_command(request.schema, request.cases, request.task, request.cassettes, options),
        only=request.only,
        out=out,
        err=err,
        match_on=options.match_on,
        max_calls=request.max_calls,
        model_option=request.model,
        record_mode=request.record_mode,
        concurrency=request.concurrency,
        give_up_after=request.give_up_after,
    )
