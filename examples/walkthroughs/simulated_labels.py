"""Simulated invoices with label errors seeded into a known share of leaves, and runs that read them.

Nothing here calls a model. The true invoices come from a fixed seed; the labels are the truth
with a stated share of leaves changed (a date moved, an amount scaled, an id retyped, another
vendor or product), and each simulated run reads the truth with its own error rate, each error
drawn independently, so two runs rarely make the same one. Amounts are read within the field's
tolerance half the time (a rounding), so agreement has to be decided by the comparator.

`SHARED` is where consensus fails: on that share of documents every run returns the due date as
the invoice date (the same error, as models trained alike make it), against a correct label.
Everything produced here is labelled simulated.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from walkthroughs import simulated_runs

SEED = 20261
DOCUMENTS = 300
PROFILES = (0.03, 0.06, 0.10, 0.15)  # each run's chance of misreading a leaf
LABEL_ERROR_RATES = (0.01, 0.02, 0.05)  # the share of leaves whose label is wrong
SHARED = 0.05  # the share of documents where every run returns the due date as the invoice date
DUE_DAYS = 30
WITHIN_TOLERANCE = 0.0004  # a rounding the amount's comparator (0.1% relative) still reads as equal
VENDORS = simulated_runs.VENDORS[:11]  # the invoices of the comparison walkthrough, fewer names
PRODUCTS = simulated_runs.PRODUCTS[:10]


@dataclass(frozen=True)
class LabelSet:
    """One simulated set: the labels (with errors), each run's outputs, and where the label errors are."""

    labels: dict[str, dict[str, Any]]
    outputs: list[dict[str, dict[str, Any]]]
    seeded: frozenset[tuple[str, str]]  # (case, leaf path as the leaf diff writes it)
    leaves: int

    def write(self, folder: Path) -> tuple[Path, list[Path]]:
        """The case file and one predictions file per run, in the formats `eval-score` reads."""
        folder.mkdir(parents=True, exist_ok=True)
        cases = folder / "cases.jsonl"
        cases.write_text(
            "".join(json.dumps({"name": n, "input": "", "expected_output": v}) + "\n" for n, v in self.labels.items())
        )
        predictions = []
        for index, outputs in enumerate(self.outputs):
            path = folder / f"predictions{index}.jsonl"
            path.write_text("".join(json.dumps({"name": n, "output": v}) + "\n" for n, v in outputs.items()))
            predictions.append(path)
        return cases, predictions


def simulate(
    documents: int = DOCUMENTS,
    label_errors: float = 0.02,
    profiles: tuple[float, ...] = PROFILES,
    shared: float = 0.0,
    seed: int = SEED,
) -> LabelSet:
    """`documents` invoices, `label_errors` of their leaves mislabelled, read by one run per profile."""
    rng = random.Random(seed)
    truth = {f"INV-{index:05d}": _invoice(rng, index) for index in range(documents)}
    paths = [(name, path) for name, invoice in truth.items() for path in _leaves(invoice)]
    seeded = frozenset(rng.sample(paths, round(label_errors * len(paths))))
    labels = {name: _copy(invoice) for name, invoice in truth.items()}
    for name, path in sorted(seeded):  # a fixed order: a set of strings iterates by their hashes, new each process
        _set(labels[name], path, _misread(rng, path, _get(truth[name], path)))
    sharing = set(rng.sample(sorted(truth), round(shared * documents)))
    outputs = []
    for rate in profiles:
        run = {}
        for name, invoice in truth.items():
            output = _copy(invoice)
            for path in _leaves(invoice):
                value = _get(invoice, path)
                if rng.random() < rate:
                    _set(output, path, _misread(rng, path, value))
                elif _field(path) in ("total_amount", "unit_price") and rng.random() < 0.5:
                    _set(output, path, round(value * (1 + rng.choice((-1, 1)) * WITHIN_TOLERANCE), 4))
            if name in sharing:  # every run: the due date printed above the issue date, read as the issue date
                output["invoice_date"] = _shift(invoice["invoice_date"], DUE_DAYS)
            run[name] = output
        outputs.append(run)
    return LabelSet(labels, outputs, seeded, len(paths))


def _invoice(rng: random.Random, index: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {"sku": f"SKU-{rng.randrange(100, 999)}", "description": rng.choice(PRODUCTS), "unit_price": _price(rng)}
        for _ in range(rng.randint(1, 3))
    ]
    issued = date(2025, 1, 1) + timedelta(days=rng.randrange(500))
    return {
        "invoice_id": f"INV-{index:05d}",
        "vendor_name": rng.choice(VENDORS),
        "invoice_date": issued.isoformat(),
        "total_amount": round(sum(item["unit_price"] for item in items), 2),
        "line_items": items,
    }


def _price(rng: random.Random) -> float:
    return round(rng.uniform(5, 500), 2)


def _leaves(invoice: dict[str, Any]) -> list[str]:
    top = ["invoice_id", "vendor_name", "invoice_date", "total_amount"]
    items = [f"line_items[{i}].{name}" for i in range(len(invoice["line_items"])) for name in invoice["line_items"][i]]
    return top + items


def _field(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def _misread(rng: random.Random, path: str, value: Any) -> Any:
    """Another value for the leaf, one its comparator does not match to `value`."""
    name = _field(path)
    if name == "invoice_date":
        return _shift(value, rng.choice((-1, 1)) * rng.randint(1, 60))
    if name in ("total_amount", "unit_price"):
        return round(value * rng.choice((rng.uniform(0.5, 0.9), rng.uniform(1.1, 1.5))), 2)
    if name == "vendor_name":
        return rng.choice([vendor for vendor in VENDORS if vendor != value])
    if name == "description":
        return rng.choice([product for product in PRODUCTS if product != value])
    if name == "sku":
        return f"SKU-{rng.choice([n for n in range(100, 999) if f'SKU-{n}' != value])}"
    return f"{value[:-2]}{rng.choice([n for n in range(10, 100) if str(n) != value[-2:]])}"  # last two digits retyped


def _shift(iso: str, days: int) -> str:
    return (date.fromisoformat(iso) + timedelta(days=days)).isoformat()


def _copy(invoice: dict[str, Any]) -> dict[str, Any]:
    return {**invoice, "line_items": [dict(item) for item in invoice["line_items"]]}


def _get(invoice: dict[str, Any], path: str) -> Any:
    if path.startswith("line_items["):
        index, name = path[len("line_items[") :].split("].")
        return invoice["line_items"][int(index)][name]
    return invoice[path]


def _set(invoice: dict[str, Any], path: str, value: Any) -> None:
    if path.startswith("line_items["):
        index, name = path[len("line_items[") :].split("].")
        invoice["line_items"][int(index)][name] = value
    else:
        invoice[path] = value
