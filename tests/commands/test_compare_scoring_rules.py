"""Two runs scored by different rules are not compared silently.

A comparator tightened, a match threshold raised, a field's type changed: the counts move with no
change in the outputs. `compare` and `report --against` refuse such a pair (exit 2), naming both
files, each difference and the fix; `--allow-scoring-change` compares them anyway, said first on
every screen and kept in the --json record.
"""

import json

import pytest

from fieldeval.commands import report
from fieldeval.commands.compare import main as compare_main
from fieldeval.compare.scoring_rules import scoring_differences
from fieldeval.formats.run_info import RunInfo
from tests.commands.test_score_command import SCHEMA_MODULE, from_predictions, make_project, run_score


@pytest.fixture
def project(tmp_path, monkeypatch):
    return make_project(tmp_path, monkeypatch)


def rescored(project, out, schema_text=None, *extra):
    """The project's predictions scored into `out`, after the schema module is rewritten (when given)."""
    import sys

    if schema_text is not None:
        (project / "po_schema.py").write_text(schema_text, encoding="utf-8")
        sys.modules.pop("po_schema", None)
    code, printed = run_score(*from_predictions(out), *extra)
    assert code == 0, printed


def test_a_raised_match_threshold_is_refused_naming_both_runs_the_difference_and_the_fix(project, capsys):
    rescored(project, "a.json")
    rescored(project, "b.json", None, "--match-threshold", "0.8")
    capsys.readouterr()
    assert compare_main(["a.json", "b.json", "--gate", "overall >= 0.5", "--json", "record.json"]) == 2
    message = capsys.readouterr().err
    assert "a.json and b.json were not scored by the same rules: the match threshold differs (0.7 in a.json; 0.8 " in (
        message
    )
    assert "the comparators differ on 1 field(s): lines (Hungarian" in message and "@0.8 in b.json)" in message
    assert "or pass --allow-scoring-change to compare them anyway" in message
    assert not (project / "record.json").exists()

    assert compare_main(["a.json", "b.json", "--allow-scoring-change", "--json", "record.json"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("SCORED DIFFERENTLY (--allow-scoring-change): the match threshold differs"), printed
    record = json.loads((project / "record.json").read_text(encoding="utf-8"))
    assert record["scoring_differences"][0] == "the match threshold differs (0.7 in a.json; 0.8 in b.json)"


def test_a_schema_changed_under_the_same_class_name_is_refused_by_compare_and_report(project, capsys):
    rescored(project, "a.json")
    described = SCHEMA_MODULE.replace("    supplier: str\n", "    supplier: str = Field(description='who sells')\n")
    rescored(project, "b.json", "from pydantic import Field\n" + described)
    capsys.readouterr()
    assert compare_main(["a.json", "b.json"]) == 2
    message = capsys.readouterr().err
    assert "the schema differs (po_schema:PurchaseOrder with JSON-schema fingerprint " in message, message
    assert "comparators differ" not in message  # only the fingerprint moved; it alone is enough

    assert report.main(["b.json", "--against", "a.json", "--out", "page.html"]) == 2
    assert "a.json and b.json were not scored by the same rules" in capsys.readouterr().err
    assert not (project / "page.html").exists()
    assert report.main(["b.json", "--against", "a.json", "--out", "page.html", "--allow-scoring-change"]) == 0
    summary = capsys.readouterr().out
    assert "\n- SCORED DIFFERENTLY (--allow-scoring-change): the schema differs" in summary
    assert "SCORED DIFFERENTLY" in (project / "page.html").read_text(encoding="utf-8")


def test_runs_scored_alike_compare_as_before(project, capsys):
    rescored(project, "a.json")
    rescored(project, "b.json")
    capsys.readouterr()
    assert compare_main(["a.json", "b.json", "--json", "record.json"]) == 0
    assert "SCORED DIFFERENTLY" not in capsys.readouterr().out
    assert json.loads((project / "record.json").read_text(encoding="utf-8"))["scoring_differences"] == []


def info(**fields):
    return RunInfo.model_validate({"schema": "m:Order", "schema_sha256": "a" * 64, **fields})


def test_every_comparator_difference_is_named_or_counted():
    old = info(comparators={f"f{index}": "ExactComparator@1.0" for index in range(8)} | {"gone": "Exact@1.0"})
    new = info(comparators={f"f{index}": "LevenshteinComparator@0.7" for index in range(8)} | {"added": "Exact@1.0"})
    [found] = scoring_differences(old, new, ("old.json", "new.json"))
    assert found.startswith("the comparators differ on 10 field(s): f0 (ExactComparator@1.0 in old.json; ")
    assert found.endswith(" and 5 more")
    [found] = scoring_differences(info(comparators={"gone": "X@1"}), info(comparators={"added": "X@1"}), ("o", "n"))
    assert found == (
        "the comparators differ on 2 field(s): gone (X@1 in o; not compared in n), added (not compared in o; X@1 in n)"
    )
    assert scoring_differences(old, None, ("o", "n")) == []  # a run that does not say its rules is not checked
