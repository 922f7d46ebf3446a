"""The stickler speed-up: byte-identical numbers on every fixture and random nested documents, off on another version.

`bench/bench_stickler_identity.py` runs the same check on 10,000 random documents.
"""

from __future__ import annotations

from typing import Annotated

import pytest
from stickler.comparators.date import DateComparator
from stickler.structured_object_evaluator.models import structured_model
from stickler.structured_object_evaluator.models.configuration_helper import ConfigurationHelper
from stickler.structured_object_evaluator.models.structured_model import StructuredModel

from fieldeval.harness import fast_stickler
from fieldeval.harness.fast_stickler import differences
from walkthroughs.identity_runs import Shipment, fixture_runs, random_run, reference_pairs
from walkthroughs.invoices import WeightedInvoice, reference_cases


@pytest.mark.parametrize("name, pairs, model", [(n, p[:30], m) for n, p, m in fixture_runs()], ids=lambda v: v)
def test_every_fixture_scores_byte_identically(name, pairs, model):
    assert differences(pairs, model) == []


def test_random_nested_documents_score_byte_identically():
    pairs = list(random_run(50, max_packages=3))
    assert len({type(output).__name__ for _, output in pairs}) == 3  # instances, dicts and JSON text
    assert differences(pairs, Shipment) == []


class Plain(StructuredModel):
    """A field with no comparison settings of its own: its threshold is the class's `match_threshold`."""

    name: str


def test_a_reassigned_class_threshold_is_read_again(monkeypatch):
    fast_stickler.install()
    assert ConfigurationHelper.get_comparison_info(Plain, "name").threshold == Plain.match_threshold
    monkeypatch.setattr(Plain, "match_threshold", 0.95)
    assert ConfigurationHelper.get_comparison_info(Plain, "name").threshold == 0.95
    with fast_stickler.shipped():
        assert ConfigurationHelper.get_comparison_info(Plain, "name").threshold == 0.95


def test_the_tuned_model_scores_identically_after_its_threshold_changes(monkeypatch):
    pairs = reference_pairs(reference_cases())
    monkeypatch.setattr(WeightedInvoice, "match_threshold", 0.95)
    assert differences(pairs, WeightedInvoice) == []


def swapped() -> tuple:
    """The seven functions the speed-up replaces, as they are now."""
    return (
        ConfigurationHelper.__dict__["get_comparison_info"],
        StructuredModel.__dict__["compare_field_raw"],
        DateComparator.__dict__["_parse"],
        *(ConfigurationHelper.__dict__[name] for name in fast_stickler.ANNOTATION_CHECKS),
        structured_model._annotation_is_list,
    )


def test_another_stickler_version_leaves_stickler_as_shipped(monkeypatch, capsys):
    fast_stickler.uninstall()
    shipped = swapped()
    monkeypatch.setattr(fast_stickler, "installed_version", lambda: "1.0.1")
    monkeypatch.setitem(fast_stickler._state, "notified", False)
    assert fast_stickler.install() is False
    assert fast_stickler.install() is False
    notice = capsys.readouterr().err.splitlines()
    assert len(notice) == 1 and "stickler-eval 1.0.1" in notice[0] and "verified on 1.0.0" in notice[0]
    assert swapped() == shipped


def test_install_and_uninstall_swap_exactly_the_seven_functions():
    fast_stickler.uninstall()
    shipped = swapped()
    assert fast_stickler.install() is True
    assert all(now is not before for now, before in zip(swapped(), shipped, strict=True))
    with fast_stickler.shipped():
        assert swapped() == shipped
        assert fast_stickler.install() is False  # held off inside the block
    assert all(now is not before for now, before in zip(swapped(), shipped, strict=True))


class LateDates(DateComparator):
    """A comparator that parses differently: the memo must not answer for it."""

    def _try_parse_single(self, s, dayfirst):
        return None


def test_remembered_dates_answer_only_for_the_stock_comparator_and_its_settings():
    fast_stickler.install()
    stock, rejecting, late = DateComparator(), DateComparator(range_mode="reject"), LateDates()
    for comparator in (stock, rejecting, late):
        with fast_stickler.shipped():
            before = [comparator.compare(a, b) for a, b in DATE_PAIRS]
        assert [comparator.compare(a, b) for a, b in DATE_PAIRS] == before
        assert [comparator.compare(a, b) for a, b in DATE_PAIRS] == before  # answered from the memo
    assert late.compare("2026-01-02", "2026-01-02") == 0.0


DATE_PAIRS = [
    ("2026-01-02", "2026-01-02"),
    ("01/02/2026", "02/01/2026"),
    ("2026-01-02 to 2026-01-02", "2026-01-02"),
    ("Jan 2026", "2026-01-15"),
    ("2026-01-02 - 2026-01-09", "2026-01-05"),
    ("not a date", "2026-01-02"),
]


class Unhashable:
    """`Annotated` metadata that cannot be hashed, so the annotation cannot be a memo key."""

    __hash__ = None

    def __repr__(self) -> str:  # a fixed test id on every worker
        return "Unhashable()"


@pytest.mark.parametrize(
    "annotation",
    [
        Shipment,
        Shipment | None,
        list[Shipment],
        list[Shipment] | None,
        list,
        list[int] | None,
        int,
        str | None,
        Annotated[list[int], Unhashable()],
        Annotated[Shipment, Unhashable()],
    ],
    ids=repr,
)
def test_remembered_annotation_questions_answer_as_stickler_does(annotation):
    checks = [*(getattr(ConfigurationHelper, name) for name in fast_stickler.ANNOTATION_CHECKS)]
    with fast_stickler.shipped():
        before = [check(annotation) for check in checks] + [structured_model._annotation_is_list(annotation)]
    fast_stickler.install()
    checks = [*(getattr(ConfigurationHelper, name) for name in fast_stickler.ANNOTATION_CHECKS)]
    for _ in range(2):  # the second time from the memo, or asked again when unhashable
        assert [check(annotation) for check in checks] + [structured_model._annotation_is_list(annotation)] == before
