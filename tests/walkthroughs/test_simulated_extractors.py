"""The simulated extractors: deterministic, with the error rates they claim, and the planted bug."""

import numpy as np
import pytest

from walkthroughs import simulated_runs as sim
from walkthroughs.invoices import Invoice


@pytest.fixture(scope="module")
def invoices():
    return sim.simulated_invoices()


def test_same_seed_same_invoices_and_predictions(invoices):
    assert sim.simulated_invoices() == invoices
    assert sim.extract(sim.CANDIDATE, invoices) == sim.extract(sim.CANDIDATE, sim.simulated_invoices())
    assert sim.simulated_invoices(seed=sim.SEED + 1) != invoices


def test_invoices_are_valid_and_their_totals_include_tax(invoices):
    assert len(invoices) == sim.DOCUMENTS == 60
    for invoice in invoices:
        Invoice.model_validate(invoice.truth.model_dump())
        subtotal = sum(item.unit_price for item in invoice.truth.line_items)
        assert invoice.truth.total_amount == pytest.approx(subtotal * (1 + sim.TAX_RATE), abs=0.01)
        assert 2 <= len(invoice.truth.line_items) <= 5


def test_exactly_half_are_poor_scans_and_a_fifth_print_the_due_date_first(invoices):
    assert sum(invoice.poor_scan for invoice in invoices) == 30
    assert sum(invoice.due_date_first for invoice in invoices) == 12
    assert sum(invoice.due_date_first for invoice in sim.simulated_invoices(count=35, seed=5)) == 7


def test_only_the_candidate_returns_the_due_date_and_only_where_it_is_printed_first(invoices):
    baseline, candidate = sim.extract(sim.BASELINE, invoices), sim.extract(sim.CANDIDATE, invoices)
    reads_due = {invoice.name for invoice in invoices if candidate[invoice.name].invoice_date == invoice.due_date}
    due_first = {invoice.name for invoice in invoices if invoice.due_date_first}
    emptied = {invoice.name for invoice in invoices if candidate[invoice.name].invoice_date is None}
    assert reads_due == due_first - emptied
    assert not any(baseline[invoice.name].invoice_date == invoice.due_date for invoice in invoices)


def test_observed_error_rates_match_the_stated_ones():
    """Over many invoices each error happens at its stated rate, for clean and poor scans."""
    invoices = sim.simulated_invoices(count=3000, seed=1)
    for extractor in (sim.BASELINE, sim.CANDIDATE):
        predictions = sim.extract(extractor, invoices, seed=1)
        for poor in (False, True):
            group = [invoice for invoice in invoices if invoice.poor_scan == poor]
            observed = {
                "invoice_id": np.mean([not predictions[i.name].invoice_id.startswith("INV-") for i in group]),
                "vendor_name": np.mean([predictions[i.name].vendor_name == sim.CUSTOMER for i in group]),
                "invoice_date": np.mean([predictions[i.name].invoice_date is None for i in group]),
                "total_amount": np.mean([predictions[i.name].total_amount != i.truth.total_amount for i in group]),
                "line_items": np.mean([len(predictions[i.name].line_items) > len(i.truth.line_items) for i in group]),
                "line_items.description": np.mean(
                    [
                        got.description != want.description
                        for i in group
                        for got, want in zip(predictions[i.name].line_items, i.truth.line_items, strict=False)
                    ]
                ),
            }
            for field, rate in observed.items():
                assert rate == pytest.approx(extractor.rate(field, poor), abs=0.03), (extractor.name, poor, field)


def test_cases_and_tables_are_labelled_simulated(invoices):
    cases = sim.simulated_cases(invoices)
    assert [case.name for case in cases] == [invoice.name for invoice in invoices]
    assert all(case.metadata["source"] == "simulated" and "simulated" in case.input for case in cases)
    assert "(simulated)" in sim.BASELINE.name and "(simulated)" in sim.CANDIDATE.name
    table = sim.error_rates()
    assert set(table["field"]) == set(sim.EXPECTED_VERDICTS)
    assert table.loc[table["error"] == sim.PLANTED, "candidate (simulated) poor"].item() == sim.DUE_DATE_FIRST_SHARE
    assert all("(simulated)" in column for column in table.columns[2:])


def test_expected_verdicts_follow_from_the_rates():
    for field, expected in sim.EXPECTED_VERDICTS.items():
        old, new = sim.BASELINE.rates[field], sim.CANDIDATE.rates[field]
        if field == "invoice_date":
            assert old == new and sim.CANDIDATE.reads_due_date and expected == "regressed"
        elif old == new:
            assert expected == "no clear change", field
        else:
            assert all(b >= c for b, c in zip(old, new, strict=True)) and expected == "improved", field
