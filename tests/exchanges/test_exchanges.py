"""The exchange fixture format: every refusal, atomic saving, and the stored offline exchange."""

import copy
import json
import os
import re
from pathlib import Path

import pytest
import stickler

from fieldeval.exchanges.fixtures import (
    EXCHANGES_DIR,
    FixtureError,
    load_exchange,
    parse_exchange,
    save_exchange,
)
from fieldeval.formats.exchange import reassemble
from walkthroughs import offline_invoice

STORED = json.loads(offline_invoice.FIXTURE_PATH.read_text(encoding="utf-8"))


def fixture_data() -> dict:
    return copy.deepcopy(STORED)


def write(tmp_path: Path, data) -> Path:
    path = tmp_path / "exchange.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def refusal(tmp_path: Path, data, **kwargs) -> str:
    path = write(tmp_path, data)
    with pytest.raises(FixtureError) as caught:
        load_exchange(path, **kwargs)
    message = str(caught.value)
    assert str(path) in message, "every refusal names the file"
    return message


# --- the stored offline exchange -------------------------------------------------------------


def test_stored_exchange_loads_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exchange = load_exchange(offline_invoice.FIXTURE_PATH, tool_name="Invoice")
    assert (
        EXCHANGES_DIR.is_absolute()
        and EXCHANGES_DIR == Path(offline_invoice.__file__).parents[2] / "data" / "exchanges"
    )
    assert len(exchange.turns) == 1 and exchange.tool_uses()[0]["name"] == "Invoice"


def test_stored_exchange_is_labelled_hand_authored():
    provenance = load_exchange(offline_invoice.FIXTURE_PATH).provenance
    assert provenance["hand_authored"] is True and provenance["recorded"] is None
    assert "measures no model" in provenance["note"]
    assert "HAND-AUTHORED" in load_exchange(offline_invoice.FIXTURE_PATH).describe()


def test_stored_chunks_are_about_a_dozen_and_split_mid_token():
    chunks = STORED["turns"][0]["toolUse"]["inputChunks"]
    assert 10 <= len(chunks) <= 14
    word = re.compile(r"[\w.\-]")
    boundaries = list(zip(chunks, chunks[1:], strict=False))
    mid_token = [a for a, b in boundaries if word.match(a[-1]) and word.match(b[0])]
    assert len(mid_token) == len(boundaries), "every boundary falls inside a key, a string or a number"


def test_document_is_internally_consistent_and_matches_the_ground_truth():
    truth, text = offline_invoice.GROUND_TRUTH, offline_invoice.document()
    assert sum(item.unit_price for item in truth.line_items) == truth.total_amount
    assert truth.invoice_id in text and truth.vendor_name.upper() in text
    assert "April 17, 2026" in text and "1,284.50" in text
    for item in truth.line_items:
        assert re.search(rf"{item.sku}\s+{re.escape(item.description)}\s+1\s+{item.unit_price:.2f}", text)
    assert offline_invoice.document() in offline_invoice.prompt()


def test_response_has_exactly_three_errors_of_three_kinds_and_reordered_items():
    prediction = offline_invoice.OUTPUT_MODEL.model_validate(STORED["turns"][0]["toolUse"]["input"])
    truth = offline_invoice.GROUND_TRUTH
    kinds = {(r["field_path"], r["non_match_type"].value) for r in stickler.evaluate(truth, prediction).non_matches}
    assert kinds == {
        ("vendor_name", "false_discovery"),  # a wrong top-level value
        ("invoice_date", "false_negative"),  # a field left out
        ("line_items[3].description", "false_discovery"),  # a wrong value inside one line item
    }
    assert "invoice_date" not in STORED["turns"][0]["toolUse"]["input"]
    assert sorted(i.sku for i in prediction.line_items) == sorted(i.sku for i in truth.line_items)
    assert [i.sku for i in prediction.line_items] != [i.sku for i in truth.line_items]


# --- refusals -------------------------------------------------------------------------------


def test_missing_file_names_the_record_command(tmp_path):
    with pytest.raises(FixtureError, match=r"absent\.json.*record it with `make record`"):
        load_exchange(tmp_path / "absent.json")
    with pytest.raises(FixtureError, match="`make record-fcc`"):
        load_exchange(tmp_path / "absent.json", record_command="make record-fcc")


def test_invalid_json(tmp_path):
    assert "not valid JSON (line 1" in refusal(tmp_path, '{"provenance": ')


def test_a_file_that_is_not_utf8_text(tmp_path):
    path = tmp_path / "exchange.json"
    path.write_bytes(b'{"provenance": "\xff"}')
    with pytest.raises(FixtureError, match=r"exchange\.json: line 1: not UTF-8 text \(byte 16\).*`make record`"):
        load_exchange(path)


def test_missing_provenance(tmp_path):
    data = fixture_data()
    del data["provenance"]
    assert "field 'provenance': is missing; it must be an object with hand_authored" in refusal(tmp_path, data)


def test_provenance_must_say_hand_authored_or_recorded(tmp_path):
    data = fixture_data()
    data["provenance"]["hand_authored"] = False
    assert "field 'provenance.model_id': must be set on a recorded exchange" in refusal(tmp_path, data)


@pytest.mark.parametrize("turns", [None, [], "turn"])
def test_missing_or_empty_turns(tmp_path, turns):
    data = fixture_data()
    data.pop("turns") if turns is None else data.update(turns=turns)
    assert "; it must list at least one turn" in refusal(tmp_path, data)


@pytest.mark.parametrize("key", ["name", "toolUseId"])
def test_content_block_start_without_tool_name_or_id(tmp_path, key):
    data = fixture_data()
    del data["turns"][0]["toolUse"][key]
    message = refusal(tmp_path, data)
    assert f"turn 1, field 'toolUse.{key}': is missing" in message
    assert "contentBlockStart needs the toolUse name and id" in message


def test_chunks_that_do_not_reassemble(tmp_path):
    data = fixture_data()
    data["turns"][0]["toolUse"]["inputChunks"].pop()
    assert "turn 1, field 'toolUse.inputChunks': does not reassemble into JSON" in refusal(tmp_path, data)


def test_chunks_that_reassemble_into_something_other_than_an_object(tmp_path):
    data = fixture_data()
    data["turns"][0]["toolUse"].update(inputChunks=["[1, ", "2]"], input=[1, 2])
    assert "field 'toolUse.inputChunks': reassembles into JSON that is not an object" in refusal(tmp_path, data)


def test_input_that_disagrees_with_the_chunks(tmp_path):
    data = fixture_data()
    data["turns"][0]["toolUse"]["input"]["line_items"][2]["unit_price"] = 75.0
    message = refusal(tmp_path, data)
    assert "turn 1, field 'toolUse.input': disagrees with the reassembled inputChunks" in message
    assert "input.line_items[2].unit_price: reassembled 57.0, input 75.0" in message


def test_tool_name_that_is_not_the_requested_model(tmp_path):
    data = fixture_data()
    data["turns"][0]["toolUse"]["name"] = "Receipt"
    message = refusal(tmp_path, data, tool_name="Invoice")
    assert "turn 1, field 'toolUse.name': is 'Receipt', not the model the notebook asks for ('Invoice')" in message


def test_usage_is_required(tmp_path):
    data = fixture_data()
    del data["turns"][0]["toolUse"]["usage"]["outputTokens"]
    assert "turn 1, field 'toolUse.usage.outputTokens': is missing; it must be a non-negative integer" in refusal(
        tmp_path, data
    )


def test_errors_number_turns_from_one(tmp_path):
    data = fixture_data()
    second = copy.deepcopy(data["turns"][0])
    second["toolUse"]["inputChunks"] = ['{"a": ']
    data["turns"].append(second)
    assert ": turn 2, field 'toolUse.inputChunks': does not reassemble" in refusal(tmp_path, data)


def test_text_turns_and_a_text_preamble_load(tmp_path):
    data = fixture_data()
    usage = {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}
    data["turns"][0]["text"] = {"chunks": ["I'll extract ", "the invoice."]}
    data["turns"].insert(0, {"text": {"chunks": ["Here is ", "the invoice."], "usage": usage}})
    exchange = load_exchange(write(tmp_path, data), tool_name="Invoice")
    assert len(exchange.turns) == 2 and len(exchange.tool_uses()) == 1


def test_text_turn_without_usage_is_refused(tmp_path):
    data = fixture_data()
    data["turns"] = [{"text": {"chunks": ["hello"]}}]
    assert "turn 1, field 'text.usage': is missing" in refusal(tmp_path, data)


def test_parse_exchange_names_its_source():
    with pytest.raises(FixtureError, match=r"^in-memory copy: field 'provenance': is missing"):
        parse_exchange({"turns": []}, source="in-memory copy")


# --- saving ---------------------------------------------------------------------------------


def test_save_round_trips(tmp_path):
    path = save_exchange(fixture_data(), tmp_path / "nested" / "copy.json")
    assert json.loads(path.read_text(encoding="utf-8")) == STORED
    assert reassemble(load_exchange(path).tool_uses()[0]["inputChunks"]) == STORED["turns"][0]["toolUse"]["input"]


def test_save_refuses_invalid_data_and_leaves_the_file(tmp_path):
    path = tmp_path / "exchange.json"
    path.write_bytes(b"previous bytes")
    data = fixture_data()
    del data["turns"][0]["toolUse"]["toolUseId"]
    with pytest.raises(FixtureError):
        save_exchange(data, path)
    assert path.read_bytes() == b"previous bytes"
    assert os.listdir(tmp_path) == ["exchange.json"]


def test_save_that_fails_midway_leaves_the_file_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "exchange.json"
    path.write_bytes(b"previous bytes")

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        save_exchange(fixture_data(), path)
    assert path.read_bytes() == b"previous bytes"
    assert os.listdir(tmp_path) == ["exchange.json"]


def test_labels_hide_the_machine_layout_but_keep_plain_labels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_exchange(offline_invoice.FIXTURE_PATH).label == "data/exchanges/offline_invoice.json"
    assert parse_exchange(STORED, source="truncated copy").label == "truncated copy"


def test_a_deeply_nested_fixture_is_refused_by_name_not_with_a_recursion_error(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    text = json.dumps(fixture_data()).replace('"note": ', f'"deep": {deep}, "note": ', 1)
    assert "nested too deeply to read" in refusal(tmp_path, text)


def test_a_payload_that_does_not_validate_as_the_model_is_refused_when_the_model_is_given(tmp_path):
    data = fixture_data()
    tool = data["turns"][0]["toolUse"]
    tool["input"]["total_amount"] = "a lot"
    tool["inputChunks"] = [json.dumps(tool["input"])]
    load_exchange(write(tmp_path, data), tool_name="Invoice")  # the format alone is fine
    message = refusal(tmp_path, data, tool_name="Invoice", output_model=offline_invoice.OUTPUT_MODEL)
    assert "turn 1, field 'toolUse.input.total_amount': does not validate as Invoice" in message


def test_a_malformed_prompt_hash_is_refused(tmp_path):
    data = fixture_data()
    data["provenance"]["prompt_sha256"] = "ABC"
    assert """field 'provenance.prompt_sha256': is "ABC"; it must be 64 lowercase hex digits""" in refusal(
        tmp_path, data
    )
