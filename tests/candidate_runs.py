"""Constructed runs whose truth is known, for several-candidate comparisons and their report.

The baseline is the simulated baseline extractor's outputs; the candidates are built from them:
`copy` (the same outputs, the same model), `small` (the same outputs from a cheaper model), `tiny`
(cheapest, `invoice_date` left empty on every second invoice), `huge` (the ground truth itself,
from the dearest model) and `odd` (the baseline's outputs from a model the price table leaves out).
Each is scored by the real scorer and saved by the project's own writer with its provenance.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.formats.run_info import RunInfo
from fieldeval.harness.reports import save_report
from fieldeval.harness.scoring import score_outputs_sync
from walkthroughs import simulated_runs as sim
from walkthroughs.invoices import Invoice

SCHEMA = "walkthroughs.invoices:Invoice"
DOCUMENTS = 40
PRICES = {  # per million tokens; every run reads 1,000 input and writes 100 output tokens per document
    "big-1": {"input_per_million": 3.0, "output_per_million": 15.0},  # 4.5 per 1,000 documents
    "small-a": {"input_per_million": 0.25, "output_per_million": 1.25},  # 0.375
    "tiny-z": {"input_per_million": 0.1, "output_per_million": 0.5},  # 0.15
    "huge-9": {"input_per_million": 15.0, "output_per_million": 75.0},  # 22.5
}  # "odd-0", the model of `odd`, is left out on purpose: that run cannot be priced
COST = {
    model: (1000 * p["input_per_million"] + 100 * p["output_per_million"]) / 1e6 * 1000 for model, p in PRICES.items()
}
LATENCY_MS = {"big-1": 2000, "small-a": 500, "tiny-z": 300, "huge-9": 8000, "odd-0": 900}
RUNS = {"big": "big-1", "copy": "big-1", "small": "small-a", "tiny": "tiny-z", "huge": "huge-9", "odd": "odd-0"}


def provenance(names: list[str], model: str, latency: bool = True) -> dict:
    """Each case's model and usage, as `score` records them, for the run's saved provenance."""
    usage = {"calls": 1, "input_tokens": 1000, "output_tokens": 100}
    cases = {
        name: {
            "origin": "model",
            "provider": "bedrock",
            "model_id": model,
            "usage": {**usage, **({"latency_ms": LATENCY_MS[model] + 10 * index} if latency else {})},
        }
        for index, name in enumerate(names)
    }
    return RunInfo.model_validate({"schema": SCHEMA, "cases": cases}).to_json()


def write_runs(root: Path, runs: Mapping[str, str], without_latency: Iterable[str] = ()) -> Path:
    """Score and save each run of `runs` (stem -> model id) into `root`, with the price table."""
    invoices = sim.simulated_invoices()[:DOCUMENTS]
    cases = sim.simulated_cases(invoices)
    names = [case.name for case in cases]
    baseline = sim.extract(sim.BASELINE, invoices)
    tiny = {
        name: output.model_copy(update={"invoice_date": None}) if index % 2 == 0 else output
        for index, (name, output) in enumerate(baseline.items())
    }
    truth = {invoice.name: invoice.truth for invoice in invoices}
    outputs = {"big": baseline, "copy": baseline, "small": baseline, "tiny": tiny, "huge": truth, "odd": baseline}
    evaluator = StructuredOutputSimilarity(Invoice)
    for stem, model in runs.items():
        report = score_outputs_sync(cases, outputs[stem], evaluator)
        save_report(report, root / f"{stem}.json", run=provenance(names, model, stem not in without_latency))
    (root / "prices.json").write_text(json.dumps(PRICES), encoding="utf-8")
    return root
