"""What the commands write, and only that: outputs checked before any work, one policy when writing fails.

Each test runs `score`, `record`, `compare` or `report` as a user does (their `main`), from a user's
project folder (`project`, the fixture of the end-to-end tests), and checks that an input of the run
(the price table and the schema module included), a symlink, a device, a `.switch.json` placed by
someone else and a failing disk all leave every file byte for byte, with exit 2 and one clear line.
"""

import errno
import os
import stat
import warnings

import pytest

from fieldeval.commands import record
from fieldeval.commands.compare import main as compare_main
from fieldeval.commands.report import main as report_main
from tests.commands.streams import outcome
from tests.commands.test_score_command import (
    SCHEMA,
    TASK,
    TRUTH,
    answers_from,
    from_predictions,
    project,
    replay_args,
    run_record,
    run_score,
)

__all__ = ["project"]  # the fixture, imported for the tests below


def snapshot(folder) -> dict[str, bytes]:
    """Every file under `folder` (temporary and hidden ones included) with its bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.mark.parametrize(
    ("out", "named"),
    [
        ("po_schema.py", "the --schema module"),
        ("po_task.py", "the --task module"),
        ("cassettes/po-2.json", "the cassette of case 'po-2'"),
        ("cases.jsonl", "--cases"),
    ],
)
def test_an_output_that_is_an_input_of_the_run_is_refused_naming_both(project, out, named):
    assert run_record(answers_from(TRUTH))[0] == 0
    before = snapshot(project)
    for option in ("--out", "--results"):
        argv = replay_args("run.json") if option == "--results" else replay_args(out)
        code, printed = run_score(*argv, *([option, out] if option == "--results" else []))
        assert code == 2, printed
        assert f"{option} {out} is the same file as {named}" in printed, printed
        assert printed.rstrip().endswith("Nothing was written.") and "Traceback" not in printed
        assert snapshot(project) == before


def test_out_and_results_naming_one_file_are_refused(project):
    code, printed = run_score(*from_predictions("run.json"), "--results", "run.json")
    assert code == 2 and "--results run.json is the same file as --out run.json" in printed
    assert not (project / "run.json").exists()


PRICES = '{"stand-in": {"input_per_million": 2.0, "output_per_million": 10.0}}'


@pytest.mark.parametrize("option", ["--out", "--results"])
@pytest.mark.parametrize("name", ["prices.json", "alias.json"])  # the table itself, and a hard link to it
def test_score_refuses_to_write_over_its_price_table(project, option, name):
    (project / "prices.json").write_text(PRICES, encoding="utf-8")
    os.link(project / "prices.json", project / "alias.json")
    before = snapshot(project)
    results = [option, name] if option == "--results" else []
    code, printed = run_score(*from_predictions("run.json" if results else name), "--prices", "prices.json", *results)
    assert code == 2, printed
    assert f"{option} {name} is the same file as --prices prices.json" in printed, printed
    assert printed.rstrip().endswith("Nothing was written.") and snapshot(project) == before


def test_compare_refuses_a_json_record_that_is_its_price_table(project, capsys):
    assert run_score(*from_predictions("run.json"))[0] == 0
    (project / "prices.json").write_text(PRICES, encoding="utf-8")
    before = snapshot(project)
    capsys.readouterr()
    assert compare_main(["run.json", "run.json", "--prices", "prices.json", "--json", "prices.json"]) == 2
    assert "--json prices.json is the same file as --prices prices.json" in capsys.readouterr().err
    assert snapshot(project) == before


@pytest.mark.parametrize("option", ["--out", "--summary"])
def test_report_refuses_an_output_that_is_the_schema_module_it_imports(project, capsys, option):
    assert run_score(*from_predictions("run.json"))[0] == 0
    before = snapshot(project)
    capsys.readouterr()
    argv = ["run.json", "--schema", SCHEMA, "--out", "page.html", option, "po_schema.py"]
    assert report_main(argv) == 2
    assert f"{option} po_schema.py is the same file as the --schema module" in capsys.readouterr().err
    assert snapshot(project) == before


def test_an_output_that_is_a_symlink_a_device_or_a_folder_is_refused(project):
    (project / "elsewhere.json").write_text("the link's target", encoding="utf-8")
    (project / "link.json").symlink_to("elsewhere.json")
    os.mkfifo(project / "pipe.json")
    (project / "runs").mkdir()
    (project / "afile").write_text("a file", encoding="utf-8")
    for out, problem in [
        ("link.json", "is a symbolic link (to elsewhere.json)"),
        ("pipe.json", "is a device or other special file"),
        ("runs", "is a folder"),
        ("afile/run.json", "afile is a file, not a folder"),
    ]:
        code, printed = run_score(*from_predictions(out))
        assert code == 2 and f"--out {out}" in printed and problem in printed, printed
    assert (project / "link.json").is_symlink() and (project / "elsewhere.json").read_text() == "the link's target"
    assert (project / "pipe.json").is_fifo() and (project / "afile").read_text() == "a file"


def test_record_refuses_a_cassette_that_is_the_case_file_or_a_symlink(project):
    (project / "cassettes").mkdir()
    cases = (project / "cases.jsonl").read_bytes()
    (project / "cassettes" / "po-1.json").write_bytes(cases)
    base = ["--schema", SCHEMA, "--task", TASK, "--cassettes", "cassettes"]
    code, printed = outcome(record.main, [*base, "--cases", "cassettes/po-1.json"], model_factory=lambda: None)
    assert code == 2 and "is the same file as --cases cassettes/po-1.json" in printed, printed
    assert (project / "cassettes" / "po-1.json").read_bytes() == cases

    (project / "cassettes" / "po-1.json").unlink()
    (project / "cassettes" / "po-1.json").symlink_to("../cases.jsonl")
    code, printed = run_record(answers_from(TRUTH), "--only", "po-1")
    assert code == 2 and "the cassette of case 'po-1' cassettes/po-1.json is a symbolic link" in printed, printed
    assert (project / "cases.jsonl").read_bytes() == cases


def _fail_writes(monkeypatch, number: int) -> None:
    """Make every write to a file fail with the OS error `number` (a full disk, a read-only folder)."""
    real_write, real_fsync = os.write, os.fsync

    def failing(real):
        def call(handle, *data):
            if stat.S_ISREG(os.fstat(handle).st_mode):
                raise OSError(number, os.strerror(number))
            return real(handle, *data)

        return call

    monkeypatch.setattr(os, "write", failing(real_write))
    monkeypatch.setattr(os, "fsync", failing(real_fsync))  # what a buffered file's data meets on a full disk


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
@pytest.mark.parametrize("option", ["--out", "--results"])
def test_a_failing_disk_is_exit_2_in_one_line_with_the_old_file_whole(project, monkeypatch, number, option):
    (project / "runs").mkdir()
    old = b'{"the old run": "kept byte for byte"}'
    (project / "runs" / "run.json").write_bytes(old)
    argv = from_predictions("other.json") if option == "--results" else from_predictions("runs/run.json")
    _fail_writes(monkeypatch, number)
    code, printed = run_score(*argv, *([option, "runs/run.json"] if option == "--results" else []))
    monkeypatch.undo()
    assert code == 2, printed
    assert f"cannot write runs/run.json: {os.strerror(number)}. Nothing was written." in printed, printed
    assert "Traceback" not in printed and printed.count(os.strerror(number)) == 1
    assert sorted(path.name for path in (project / "runs").iterdir()) == ["run.json"]  # no temporary file left
    assert (project / "runs" / "run.json").read_bytes() == old
    assert not (project / "other.json").exists()  # the other output of the run is not written either


def test_a_planted_switch_journal_is_left_alone_unread(project):
    """A `.switch.json` (planted, or left by an older version) naming files outside its folder, or
    broken, deletes nothing and is not even read: no reader or writer looks for journals any more."""
    (project / "runs").mkdir()
    victim = project / "cases.jsonl"
    before = victim.read_bytes()
    planted = {
        ".1-0123abcd.switch.json": '{"primary": ".1-0123abcd.switch.json", "files": '
        '[{"path": "../cases.jsonl", "existed": false, "new": true}]}',
        ".2-0123abcd.switch.json": "",
        ".3-0123abcd.switch.json": "{not json",
    }
    for folder in (project, project / "runs"):  # beside the case file the run reads, and beside its outputs
        for name, text in planted.items():
            (folder / name).write_text(text, encoding="utf-8")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for run in ("runs/a.json", "runs/b.json"):  # and the folder stays writable after them
            code, printed = run_score(*from_predictions(run))
            assert code == 0, printed
    assert victim.read_bytes() == before
    assert sorted(path.name for path in (project / "runs").iterdir()) == sorted([*planted, "a.json", "b.json"])
    for folder in (project, project / "runs"):
        assert {name: (folder / name).read_text(encoding="utf-8") for name in planted} == planted
    assert not [warning for warning in seen if "switch" in str(warning.message)]


def test_when_the_second_output_fails_the_first_is_not_written_either(project, monkeypatch):
    (project / "runs").mkdir()
    old = {name: f"old {name}".encode() for name in ("run.json", "run.jsonl")}
    for name, data in old.items():
        (project / "runs" / name).write_bytes(data)
    real_fsync, synced = os.fsync, []

    def full_after_the_first_file(handle):
        if stat.S_ISREG(os.fstat(handle).st_mode) and os.fstat(handle).st_size:  # the results, then the report
            synced.append(handle)
            if len(synced) > 1:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(handle)

    monkeypatch.setattr(os, "fsync", full_after_the_first_file)
    code, printed = run_score(*from_predictions("runs/run.json"), "--results", "runs/run.jsonl")
    monkeypatch.undo()
    assert code == 2 and "cannot write runs/run.json: No space left on device. Nothing was written." in printed
    assert {path.name: path.read_bytes() for path in (project / "runs").iterdir()} == old
