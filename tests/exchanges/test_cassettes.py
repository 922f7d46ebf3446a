"""Cassette folders: one exchange per case, safe file names, collisions refused, bound to the prompt."""

import json

import pytest
from strands import Agent

from fieldeval.exchanges.cassettes import CassetteError, Cassettes, cassette_file_name, cassette_paths
from fieldeval.exchanges.fixtures import EXCHANGES_DIR, FixtureError
from fieldeval.exchanges.replay import PromptMismatchError
from walkthroughs import offline_invoice
from walkthroughs.invoices import Invoice


@pytest.mark.parametrize(
    ("name", "file_name"),
    [
        ("offline_invoice", "offline_invoice.json"),
        ("INV 001/2026", "INV_001_2026.json"),
        ("../../etc/passwd", "_.._etc_passwd.json"),
        (".hidden", "hidden.json"),
        ("", "_.json"),
        ("x" * 500, "x" * 150 + ".json"),
    ],
)
def test_a_case_name_maps_to_one_safe_file_inside_the_folder(name, file_name):
    assert cassette_file_name(name) == file_name


def test_two_names_that_share_a_file_are_refused_before_anything_is_read(tmp_path):
    with pytest.raises(CassetteError) as caught:
        cassette_paths(tmp_path, ["INV 1", "inv_1"])
    assert "cases 'INV 1' and 'inv_1' would share the cassette file inv_1.json" in str(caught.value)
    assert "rename one of them" in str(caught.value)


def test_the_bundled_offline_fixture_is_the_offline_invoice_case_of_data_exchanges():
    cassettes = Cassettes(EXCHANGES_DIR, ["offline_invoice"], tool_name="Invoice", record_command="make record")
    assert cassettes.paths["offline_invoice"] == offline_invoice.FIXTURE_PATH
    model = cassettes.replay("offline_invoice")
    task_output = offline_invoice.task(type("Case", (), {"input": offline_invoice.document()})(), model)
    assert isinstance(task_output, Invoice) and task_output.invoice_id == "NW-2026-0417"
    model.check_finished()


def test_a_missing_cassette_names_the_command_for_that_case(tmp_path):
    cassettes = Cassettes(
        tmp_path, ["INV 7"], tool_name="Invoice", record_command="python -m fieldeval.commands.record --x y"
    )
    with pytest.raises(CassetteError) as caught:
        cassettes.load("INV 7")
    assert str(caught.value) == (
        f"{tmp_path / 'INV_7.json'}: no cassette for case 'INV 7'; record it with "
        "`python -m fieldeval.commands.record --x y --only 'INV 7'` (replay never falls back to the network)"
    )


def test_a_cassette_bound_to_no_prompt_is_refused(tmp_path):
    data = json.loads(offline_invoice.FIXTURE_PATH.read_text(encoding="utf-8"))
    del data["provenance"]["prompt_sha256"]
    (tmp_path / "offline_invoice.json").write_text(json.dumps(data), encoding="utf-8")
    cassettes = Cassettes(tmp_path, ["offline_invoice"], tool_name="Invoice", record_command="make record")
    with pytest.raises(CassetteError, match="'provenance.prompt_sha256' is missing.*bound to no prompt"):
        cassettes.load_all()


def test_a_malformed_hash_is_refused_by_the_fixture_check(tmp_path):
    data = json.loads(offline_invoice.FIXTURE_PATH.read_text(encoding="utf-8"))
    data["provenance"]["prompt_sha256"] = "not-a-hash"
    (tmp_path / "offline_invoice.json").write_text(json.dumps(data), encoding="utf-8")
    cassettes = Cassettes(tmp_path, ["offline_invoice"], tool_name="Invoice", record_command="make record")
    with pytest.raises(
        FixtureError, match="""field 'provenance.prompt_sha256': is "not-a-hash"; it must be 64 lowercase hex digits"""
    ):
        cassettes.load("offline_invoice")


def test_replaying_a_cassette_for_another_document_is_refused_naming_the_file_and_command():
    cassettes = Cassettes(EXCHANGES_DIR, ["offline_invoice"], tool_name="Invoice", record_command="make record")
    model = cassettes.replay("offline_invoice")
    with pytest.raises(Exception) as caught:
        Agent(model=model, callback_handler=None)(
            offline_invoice.prompt("another invoice"), structured_output_model=Invoice
        )
    error = caught.value if isinstance(caught.value, PromptMismatchError) else caught.value.__cause__
    assert isinstance(error, PromptMismatchError)
    assert str(error).startswith("data/exchanges/offline_invoice.json: recorded for another prompt")
    assert "`make record --only offline_invoice`" in str(error)
