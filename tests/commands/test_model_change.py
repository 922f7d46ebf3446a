"""A replay given another model: the fix line it prints, run as printed, makes it pass; hand-authored cassettes too.

Everything runs on the bundled "your own agent" sample in a folder of its own, recorded through the
real `BedrockModel` client against the local stand-in server (`fieldeval.commands.stand_in`), as a
user without a model account does. The other model is a factory of the project's own: the same
stand-in reached under another model id and another temperature.
"""

from __future__ import annotations

import io
import json
import shlex
import shutil
import sys

import pytest

from fieldeval.commands import record, score, stand_in
from fieldeval.files import REPO_ROOT
from tests.commands.streams import streams

FOLDER = REPO_ROOT / "examples" / "your_own_agent"
TASK = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl", "--task", "extract:task"]
STAND_IN = "fieldeval.services.stand_in:model"
OTHER = "other_models:warmer"
OTHER_MODULE = '''
from fieldeval.services import stand_in


def warmer():
    """The stand-in reached as another model would be: another model id, another temperature."""
    model = stand_in.model()
    model.update_config(model_id="another-model-v2", temperature=0.5)
    return model
'''
PREFIX = ["python", "-m", "fieldeval.commands.record"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A copy of the sample with its hand-authored cassettes and a second model factory."""
    folder = tmp_path / "your_own_agent"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "other_models.py").write_text(OTHER_MODULE, encoding="utf-8")
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))  # what `python -m` gives a command run in the folder
    monkeypatch.setenv("EVAL_NOTEBOOKS_MODE", "replay")
    for name in ("purchase_order", "extract", "other_models"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return folder


@pytest.fixture
def server(project, monkeypatch, local_servers):
    """The stand-in answering the sample's cases with its baseline answers and catalogue look-ups."""
    argv = [*TASK[:4], "--predictions", "baseline_answers.jsonl", "--tool-calls", "baseline_tool_calls.jsonl"]
    with stand_in.build(stand_in.build_parser().parse_args([*argv, "--port", "0"])) as running:
        monkeypatch.setenv(stand_in.URL_VARIABLE, running.url)
        yield running


def replay(model: str, out: str = "run.json") -> tuple[int, str, str]:
    return streams(score.main, [*TASK, "--cassettes", "cassettes", "--model", model, "--out", out])


def stale_record(model: str) -> tuple[int, str, str]:
    return streams(record.main, [*TASK, "--cassettes", "cassettes", "--model", model, "--record-mode", "stale"])


def record_argv(line: str) -> list[str]:
    """The arguments of a printed `python -m fieldeval.commands.record ...` line, exactly as a shell splits it."""
    words = shlex.split(line)
    assert words[: len(PREFIX)] == PREFIX, line
    return words[len(PREFIX) :]


def fix_line(refusal: str) -> str:
    lines = refusal.splitlines()
    (line,) = [lines[index + 1] for index, text in enumerate(lines) if text == "Re-record exactly those with:"]
    return line.strip()


def provenance(project, name: str) -> dict:
    return json.loads((project / "cassettes" / f"{name}.json").read_text())["provenance"]


def test_the_fix_line_after_a_model_change_run_as_printed_makes_the_replay_pass(project, server):
    argv = [*TASK, "--cassettes", "cassettes", "--model", STAND_IN]
    assert record.main(argv, out=io.StringIO()) == 0  # recorded cassettes now, from the stand-in model
    assert provenance(project, "po-1001")["hand_authored"] is False

    code, out, err = replay(OTHER)
    assert code == 2 and not (project / "run.json").exists()
    assert "5 of 5 case(s) would be refused by their cassettes" in err
    assert "model_id: recorded local-stand-in, given another-model-v2" in err

    printed = io.StringIO()
    assert record.main(record_argv(fix_line(err)), out=printed) == 0, printed.getvalue()
    assert "0 up to date, 5 stale" in printed.getvalue()
    assert {provenance(project, f"po-100{n}")["model_id"] for n in range(1, 6)} == {"another-model-v2"}

    code, out, err = replay(OTHER)
    assert code == 0, err
    assert f"each cassette's model and settings checked against --model {OTHER}" in out


def test_the_fix_line_keeps_the_recorded_model_when_the_replay_was_given_none(project, server):
    assert record.main([*TASK, "--cassettes", "cassettes", "--model", STAND_IN], out=io.StringIO()) == 0
    (project / "cassettes" / "po-1002.json").unlink()
    code, _, err = streams(score.main, [*TASK, "--cassettes", "cassettes", "--out", "run.json"])
    assert code == 2
    assert record_argv(fix_line(err))[-4:] == ["--model", STAND_IN, "--record-mode", "stale"]


def test_hand_authored_cassettes_naming_their_model_are_checked_against_the_one_given(project, network_guard):
    with network_guard.refusing_all():  # checking a model builds it; nothing is sent
        code, out, err = replay(STAND_IN)
    assert code == 0, err
    assert "5 of them hand-authored" in out
    assert f"each cassette's model and settings checked against --model {STAND_IN}" in out

    with network_guard.refusing_all():
        code, out, err = replay(OTHER, "other.json")
    assert code == 2 and not (project / "other.json").exists()
    assert f"each cassette's model and settings checked against --model {OTHER}" in out
    assert (
        "5 cases (po-1001, po-1002, po-1003, po-1004, po-1005): the model differs: model_id: recorded local-stand-in, "
        "given another-model-v2; temperature: recorded 0.0, given 0.5."
    ) in err
    assert f"--model {OTHER} --record-mode stale" in fix_line(err)


def test_stale_mode_with_another_model_rerecords_the_hand_authored_cassettes(project, server):
    code, out, err = stale_record(OTHER)
    assert code == 0, err
    assert "Replayed 5 cassette(s) offline: 0 up to date, 5 stale." in out
    assert all(provenance(project, f"po-100{n}")["hand_authored"] is False for n in range(1, 6))
    assert replay(OTHER)[0] == 0


def _unnamed(project, *names: str) -> None:
    """Hand-authored cassettes written without naming a model (no provider, no model id, no settings)."""
    for name in names:
        path = project / "cassettes" / f"{name}.json"
        data = json.loads(path.read_text())
        for key in ("provider", "endpoint", "settings", "record_options", "stand_in"):
            data["provenance"].pop(key)
        data["provenance"]["model_id"] = None
        path.write_text(json.dumps(data, indent=2))


def test_cassettes_naming_no_model_are_counted_as_not_checked_never_called_checked(project, network_guard):
    _unnamed(project, "po-1002", "po-1004")
    with network_guard.refusing_all():
        code, out, err = replay(STAND_IN)
    assert code == 0, err
    assert "each cassette's model" not in out
    assert (
        f"model and settings checked against --model {STAND_IN} for 3 of 5 cassette(s); "
        "2 name no model (hand-authored) and were not checked."
    ) in out

    _unnamed(project, "po-1001", "po-1003", "po-1005")
    with network_guard.refusing_all():
        code, out, err = replay(OTHER)
    assert code == 0, err
    assert "model settings not checked: none of the 5 cassette(s) names a model (hand-authored)." in out


def test_stale_mode_names_the_cassettes_it_could_not_check_and_how_to_rerecord_them(project, server):
    _unnamed(project, "po-1002", "po-1004")
    before = (project / "cassettes" / "po-1002.json").read_bytes()
    code, out, err = stale_record(OTHER)
    assert code == 0, err
    assert "Replayed 5 cassette(s) offline: 2 up to date, 3 stale." in out
    assert (
        "  not checked: 2 cases (po-1002, po-1004): no model named (hand-authored), so none was checked; "
        "`--record-mode all --only po-1002 po-1004` re-records from this one."
    ) in out
    assert (project / "cassettes" / "po-1002.json").read_bytes() == before
    assert provenance(project, "po-1001")["model_id"] == "another-model-v2"
