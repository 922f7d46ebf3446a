"""The general path end to end, from a folder outside the repository: record, score, compare.

The test writes what a user brings into `tmp_path` (a schema module, a task module, a case
file, a predictions file) and runs the commands from there, as a user would. The live model
is replaced by a stand-in provider that answers each document with its labelled payload,
streamed in mid-token chunks as Bedrock streams them.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from strands.models import Model

from fieldeval.commands import record, score
from fieldeval.commands.compare import main as compare_main
from fieldeval.exchanges.fixtures import load_exchange, prompt_sha256
from fieldeval.harness.reports import load_report
from tests.commands.streams import outcome
from tests.jsonl import write_jsonl

SCHEMA_MODULE = """
from typing import Optional
from pydantic import BaseModel


class Line(BaseModel):
    sku: str
    quantity: int


class PurchaseOrder(BaseModel):
    po_number: str
    supplier: str
    total: Optional[float] = None
    lines: list[Line]
"""

TASK_MODULE = """
from strands import Agent
from po_schema import PurchaseOrder


def task(case, model):
    agent = Agent(model=model, callback_handler=None)
    prompt = "Extract the purchase order below.\\n\\n" + case.input
    return agent(prompt, structured_output_model=PurchaseOrder).structured_output
"""

TRUTH = {
    "po-1": {"po_number": "PO-1", "supplier": "Acme", "total": 10.0, "lines": [{"sku": "A", "quantity": 1}]},
    "po-2": {"po_number": "PO-2", "supplier": "Beta", "total": 20.0, "lines": [{"sku": "B", "quantity": 2}]},
    "po-3": {"po_number": "PO-3", "supplier": "Gamma", "total": None, "lines": [{"sku": "C", "quantity": 3}]},
}
DOCUMENTS = {name: f"PURCHASE ORDER {truth['po_number']} from {truth['supplier']}" for name, truth in TRUTH.items()}
USAGE = {"inputTokens": 50, "outputTokens": 20, "totalTokens": 70}
SCHEMA, TASK = "po_schema:PurchaseOrder", "po_task:task"


def from_predictions(out: str, schema: str = SCHEMA) -> list[str]:
    """The score command's arguments for scoring the project's predictions file into `out`."""
    return ["--schema", schema, "--cases", "cases.jsonl", "--predictions", "predictions.jsonl", "--out", out]


class StandInProvider(Model):
    """Answers each document with a payload, streamed as a PurchaseOrder tool call in 7-character chunks.

    `answers` maps a document's text to its payload, or to an exception to raise instead.
    """

    def __init__(self, answers):
        self.answers = answers
        self.calls = 0

    def update_config(self, **config):
        pass

    def get_config(self):
        return {"model_id": "stand-in"}

    async def structured_output(self, *args, **kwargs):
        raise NotImplementedError
        yield

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        self.calls += 1
        prompt = messages[0]["content"][0]["text"]
        (answer,) = [answer for document, answer in self.answers.items() if document in prompt]
        if isinstance(answer, Exception):
            raise answer
        text = json.dumps(answer)
        yield {"messageStart": {"role": "assistant"}}
        start = {"toolUse": {"toolUseId": f"tooluse_{self.calls}", "name": "PurchaseOrder"}}
        yield {"contentBlockStart": {"start": start, "contentBlockIndex": 0}}
        for i in range(0, len(text), 7):
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": text[i : i + 7]}}, "contentBlockIndex": 0}}
        yield {"contentBlockStop": {"contentBlockIndex": 0}}
        yield {"messageStop": {"stopReason": "tool_use"}}
        yield {"metadata": {"usage": dict(USAGE)}}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A user's project folder outside the repository, and the working directory of the test."""
    return make_project(tmp_path, monkeypatch)


def make_project(tmp_path, monkeypatch):
    """What `project` makes, for test modules of their own."""
    (tmp_path / "po_schema.py").write_text(SCHEMA_MODULE, encoding="utf-8")
    (tmp_path / "po_task.py").write_text(TASK_MODULE, encoding="utf-8")
    write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {"name": n, "input": DOCUMENTS[n], "expected_output": t, "metadata": {"source": "test"}}
            for n, t in TRUTH.items()
        ],
    )
    wrong = dict(TRUTH["po-2"], supplier="Betamax", total=25.0)
    write_jsonl(
        tmp_path / "predictions.jsonl", [{"name": n, "output": wrong if n == "po-2" else t} for n, t in TRUTH.items()]
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVAL_NOTEBOOKS_MODE", "replay")
    for name in ("po_schema", "po_task"):  # each test imports the modules of its own folder
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


# The task run both commands share: record writes these cassettes, score replays them.
TASK_RUN = ["--schema", SCHEMA, "--cases", "cases.jsonl", "--task", TASK, "--cassettes", "cassettes"]


def run_score(*argv):
    """The exit code and what it printed about the outcome (`tests.commands.streams.outcome`)."""
    return outcome(score.main, list(argv))


def replay_args(out: str, *extra: str) -> list[str]:
    """score's arguments for replaying the project's cassettes into `out`."""
    return [
        "--schema",
        SCHEMA,
        "--cases",
        "cases.jsonl",
        "--task",
        TASK,
        "--cassettes",
        "cassettes",
        "--out",
        out,
        *extra,
    ]


def run_record(answers, *argv):
    return outcome(record.main, [*TASK_RUN, *argv], model_factory=lambda: StandInProvider(answers))


def answers_from(truth):
    return {DOCUMENTS[name]: payload for name, payload in truth.items()}


def test_score_from_predictions_writes_the_report_and_prints_both_tables(project):
    code, printed = run_score(*from_predictions("runs/predicted.json"))
    assert code == 0, printed
    report = load_report(project / "runs" / "predicted.json")
    scores = {row["case"]: row["overall_score"] for row in report.per_case()}
    assert scores["po-1"] == scores["po-3"] == 1.0 and scores["po-2"] < 1.0
    assert "Per field:" in printed and "supplier" in printed and "lines.quantity" in printed
    assert "Per case:" in printed and "po-2" in printed
    assert f"Overall score {report.overall_score:.3f}; 2 of 3 case(s) pass." in printed


def test_record_then_replay_then_compare_and_gate(project):
    code, printed = run_record(answers_from(TRUTH))
    assert code == 0, printed
    assert sorted(p.name for p in (project / "cassettes").iterdir()) == ["po-1.json", "po-2.json", "po-3.json"]
    exchange = load_exchange(project / "cassettes" / "po-1.json", tool_name="PurchaseOrder")
    assert exchange.prompt_sha256 == prompt_sha256("Extract the purchase order below.\n\n" + DOCUMENTS["po-1"])
    deltas = [event for event in exchange.calls[0].events if "contentBlockDelta" in event]
    assert len(deltas) > 5 and exchange.provenance["hand_authored"] is False
    assert "Recorded 3 of 3 case(s) into cassettes." in printed

    code, printed = run_score(*replay_args("replayed.json"))
    assert code == 0, printed
    assert "by replaying cassettes" in printed
    assert load_report(project / "replayed.json").overall_score == 1.0

    run_score(*from_predictions("predicted.json"))
    assert compare_main(["predicted.json", "replayed.json", "--gate", "overall >= 0.9"]) == 0
    assert compare_main(["replayed.json", "predicted.json", "--gate", "delta(supplier.f1) >= 0"]) == 1


def test_recording_one_case_changes_only_its_file_and_a_failure_leaves_the_old_one(project):
    assert run_record(answers_from(TRUTH))[0] == 0
    cassettes = project / "cassettes"
    (cassettes / "notes.txt").write_text("the user's own file", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in cassettes.iterdir()}

    changed = dict(TRUTH, **{"po-2": dict(TRUTH["po-2"], total=21.0)})
    code, printed = run_record(answers_from(changed), "--only", "po-2")
    assert code == 0, printed
    after = {p.name: p.read_bytes() for p in cassettes.iterdir()}
    assert [name for name in before if before[name] != after[name]] == ["po-2.json"]
    assert set(after) == set(before)
    assert "po-2: changes from the previous fixture" in printed and "payload.total: 20.0 -> 21.0" in printed

    failing = dict(answers_from(TRUTH), **{DOCUMENTS["po-3"]: RuntimeError("ThrottlingException: slow down")})
    code, printed = run_record(failing)
    assert code == 2
    assert "po-3: the task failed: RuntimeError: ThrottlingException: slow down" in printed
    assert "po-3: cassettes/po-3.json was left unchanged." in printed
    assert (cassettes / "po-3.json").read_bytes() == after["po-3.json"]
    assert (cassettes / "notes.txt").read_bytes() == before["notes.txt"]
    assert sorted(p.name for p in cassettes.iterdir()) == sorted(after)  # no temporary file left behind


def test_record_refuses_an_unknown_only_name_before_any_call(project):
    code, printed = run_record(answers_from(TRUTH), "--only", "po-9")
    assert code == 2 and "--only 'po-9': no such case" in printed and "'po-1'" in printed
    assert not (project / "cassettes").exists()


def test_replay_without_a_cassette_names_the_command_that_records_it(project):
    assert run_record(answers_from(TRUTH))[0] == 0
    (project / "cassettes" / "po-3.json").unlink()
    code, printed = run_score(*replay_args("run.json"))
    assert code == 2
    assert "1 of 3 case(s) would be refused by their cassettes:\n  case po-3: no cassette.\n" in printed
    command = (
        "python -m fieldeval.commands.record --schema po_schema:PurchaseOrder --cases cases.jsonl --task po_task:task"
    )
    assert f"Re-record exactly those with:\n  {command} --cassettes cassettes --record-mode stale\n" in printed
    assert not (project / "run.json").exists()


def test_a_cassette_recorded_for_another_document_is_refused_by_name(project):
    assert run_record(answers_from(TRUTH))[0] == 0
    cassettes = project / "cassettes"
    cassettes.joinpath("po-1.json").write_bytes(cassettes.joinpath("po-2.json").read_bytes())
    code, printed = run_score(*replay_args("run.json"))
    assert code == 2, printed
    assert (
        "case po-1: model call 1 was recorded for another request: message 1 (user) differs "
        "(message 1.content[0].text at character " in printed
    )
    assert "--cassettes cassettes --record-mode stale\n" in printed and not (project / "run.json").exists()


def test_unused_turns_in_a_cassette_are_bad_input(project):
    assert run_record(answers_from(TRUTH))[0] == 0
    path = project / "cassettes" / "po-2.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["calls"].append(data["calls"][-1])
    path.write_text(json.dumps(data), encoding="utf-8")
    code, printed = run_score(*replay_args("run.json"))
    assert code == 2, printed
    assert (
        "case po-2: the agent finished after model call 1, but the exchange records 2 model calls; model calls 2 to 2 "
        "were never replayed.\n" in printed
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--predictions", "predictions.jsonl", "--match-threshold", "1.5"], "--match-threshold 1.5 is outside [0, 1]"),
        (["--predictions", "nope.jsonl"], "--predictions nope.jsonl: no such file"),
        (["--task", TASK], "--task in replay mode needs --cassettes DIR"),
        (
            ["--task", TASK, "--cassettes", "nowhere"],
            "--cassettes nowhere: no such folder; record it with `python -m fieldeval.commands.record`",
        ),
        (["--task", TASK, "--cassettes", ".", "--mode", "live"], "EVAL_NOTEBOOKS_MODE=replay forbids live calls"),
        (
            ["--predictions", "predictions.jsonl", "--cassettes", "."],
            "--mode, --model, --concurrency and --give-up-after go with --task",
        ),
        (
            ["--predictions", "predictions.jsonl", "--model", "m:f"],
            "--mode, --model, --concurrency and --give-up-after go with --task",
        ),
        (["--task", TASK, "--cassettes", ".", "--model", "m:f"], "--model 'm:f': no module named 'm'"),
        (["--task", TASK, "--cassettes", ".", "--concurrency", "0"], "--concurrency 0: at least one case"),
        (["--predictions", "predictions.jsonl", "--give-up-after", "5"], "and --give-up-after go with --task"),
        (
            ["--task", TASK, "--cassettes", ".", "--give-up-after", "5"],
            "--give-up-after bounds a live run's throttling; a replay makes no model call (pass --mode live)",
        ),
    ],
)
def test_bad_arguments_exit_2_with_the_fix(project, argv, message):
    code, printed = run_score("--schema", SCHEMA, "--cases", "cases.jsonl", *argv, "--out", "run.json")
    assert code == 2 and message in printed and printed.rstrip().endswith("Nothing was written.")
    assert "Traceback" not in printed and not (project / "run.json").exists()


@pytest.mark.parametrize("value", ["bogus", "offline", "replay,live", "Live-ish"])
def test_a_mode_variable_that_is_no_mode_is_refused_listing_the_three(project, monkeypatch, value):
    """A typo in EVAL_NOTEBOOKS_MODE is bad input (exit 2), never a silent replay that passes CI."""
    (project / "cassettes").mkdir()
    monkeypatch.setenv("EVAL_NOTEBOOKS_MODE", value)
    code, printed = run_score(*TASK_RUN, "--out", "run.json")
    assert code == 2, printed
    assert f"EVAL_NOTEBOOKS_MODE={value!r} is not a mode; set it to one of: replay, live, auto" in printed
    assert "Traceback" not in printed and not (project / "run.json").exists()


def test_bad_schema_and_bad_predictions_exit_2_naming_file_line_and_field(project):
    code, printed = run_score(*from_predictions("run.json", schema="po_schema:Nope"))
    assert code == 2 and "--schema 'po_schema:Nope'" in printed and "defines no 'Nope'" in printed
    write_jsonl(
        project / "bad.jsonl",
        [{"name": "po-1", "output": {"po_number": "PO-1", "supplier": "Acme", "lines": [{"sku": "A"}]}}],
    )
    code, printed = run_score(
        "--schema", SCHEMA, "--cases", "cases.jsonl", "--predictions", "bad.jsonl", "--out", "run.json"
    )
    assert code == 2
    assert (
        "bad.jsonl: line 1, field 'output.lines[0].quantity': does not validate against PurchaseOrder: is missing"
        in printed
    )


def test_the_commands_run_as_python_modules_without_the_working_directory_on_the_path(project):
    # -P keeps the working directory off sys.path, as an installed console script does.
    done = subprocess.run(
        [
            sys.executable,
            "-P",
            "-m",
            "fieldeval.commands.score",
            *from_predictions("run.json"),
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Saved the report to run.json." in done.stdout and Path(project / "run.json").is_file()
    for module in ("fieldeval.commands.score", "fieldeval.commands.record"):
        helped = subprocess.run(
            [sys.executable, "-m", module, "--help"], cwd=project, capture_output=True, text=True, timeout=60
        )
        assert helped.returncode == 0 and f"python -m {module}" in helped.stdout and "Exit codes:" in helped.stdout
    # `python -m fieldeval.commands.compare` from a user's folder on runs score wrote, exiting with its
    # verdict: tests/commands/test_exits.py (0, a gate passed) and tests/compare/test_compare.py (1, failed).


def test_help_imports_no_heavy_library():
    """What `--help` and argument errors load: the standard library and these two modules only."""
    heavy = ("strands", "strands_evals", "pandas", "boto3")
    imports = "import sys, fieldeval.commands.score, fieldeval.commands.record"
    code = f"{imports}; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_a_task_that_raises_is_bad_input_not_a_zero_score(project):
    assert run_record(answers_from(TRUTH))[0] == 0
    (project / "po_task.py").write_text(
        TASK_MODULE + "\n\n_real = task\n\n\ndef task(case, model):\n"
        "    if case.name == 'po-2':\n        raise ValueError('no parser for this layout')\n"
        "    return _real(case, model)\n",
        encoding="utf-8",
    )
    del sys.modules["po_task"]  # recording imported the first version
    code, printed = run_score(*replay_args("run.json"))
    assert code == 2
    assert (
        "The replay run did not complete.\ncase 'po-2': the task raised ValueError: no parser for this layout"
        in printed
    )
    assert not (project / "run.json").exists()


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ("result", "the task returned the AgentResult, not the structured output"),
        ("str(result)", "the task returned a str ("),
    ],
)
def test_a_task_returning_something_other_than_the_structured_output_exits_2_before_writing(project, returned, message):
    assert run_record(answers_from(TRUTH))[0] == 0
    call = "agent(prompt, structured_output_model=PurchaseOrder)"
    source = TASK_MODULE.replace(f"return {call}.structured_output", f"result = {call}\n    return {returned}")
    assert source != TASK_MODULE
    (project / "po_task.py").write_text(source, encoding="utf-8")
    del sys.modules["po_task"]  # recording imported the first version
    code, printed = run_score(*replay_args("run.json"))
    assert code == 2, printed
    assert "'po-1'" in printed and message in printed and "return result.structured_output from the task" in printed
    assert "Nothing was written." in printed and not (project / "run.json").exists()


def test_live_mode_without_credentials_exits_2_before_any_call(project, monkeypatch, no_aws_credentials):
    monkeypatch.delenv("EVAL_NOTEBOOKS_MODE")
    code, printed = run_score(
        "--schema", SCHEMA, "--cases", "cases.jsonl", "--task", TASK, "--mode", "live", "--out", "run.json"
    )
    assert code == 2 and "--mode live: no AWS credentials found" in printed and "AWS_PROFILE" in printed
    assert not (project / "run.json").exists()


def test_a_report_saved_under_any_name_loads_back(project):
    code, printed = run_score(*from_predictions("runs/predicted.report"))
    assert code == 0, printed
    report = load_report(project / "runs" / "predicted.report")
    assert [row["case"] for row in report.per_case()] == ["po-1", "po-2", "po-3"]


def test_results_alone_says_where_the_results_went_and_names_no_report(project):
    assert run_record(answers_from(TRUTH))[0] == 0
    replay = ["--schema", SCHEMA, "--cases", "cases.jsonl", "--task", TASK, "--cassettes", "cassettes"]
    code, printed = run_score(*replay, "--results", "run.results.jsonl")
    assert code == 0, printed
    assert "None" not in printed and "Saved the report" not in printed
    assert (project / "run.results.jsonl").stat().st_mode & 0o777 == (project / "cases.jsonl").stat().st_mode & 0o777


def test_one_task_bug_is_said_once_with_the_cases_it_hit(project):
    assert run_record(answers_from(TRUTH))[0] == 0
    (project / "po_task.py").write_text("def task(case, model):\n    raise KeyError('layout')\n", encoding="utf-8")
    del sys.modules["po_task"]
    code, printed = run_score(*replay_args("run.json"))
    assert code == 2 and not (project / "run.json").exists()
    assert printed.count("the task raised KeyError") == 1
    assert "3 cases ('po-1', 'po-2', 'po-3'): the task raised KeyError: 'layout'." in printed


def test_said_once_caps_the_names_and_keeps_distinct_problems_apart():
    from fieldeval.harness.tasks import Problem, said_once

    problems = {f"c{i}": Problem("the task raised X") for i in (5, 1, 4, 2, 3)} | {"c9": Problem("c9 does not match")}
    order = [f"c{i}" for i in range(10)]

    assert said_once(problems, order) == (
        "5 cases ('c1', 'c2', 'c3' and 2 more): the task raised X. case 'c9': c9 does not match."
    )


def test_a_closed_pipe_ends_quietly_as_unix_tools_do(project):
    args = [sys.executable, "-u", "-m", "fieldeval.commands.score", *from_predictions("runs/piped.json")]
    with subprocess.Popen(args, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        process.stdout.readline()  # `head -1`: one line, then the reader is gone
        process.stdout.close()
        stderr = process.stderr.read().decode()
        code = process.wait(timeout=120)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert code == score.EXIT_BROKEN_PIPE == 141
