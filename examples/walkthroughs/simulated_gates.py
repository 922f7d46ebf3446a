"""Simulated pairs of extraction runs, as confusion counts, for measuring what interval-end gates promise.

Nothing here calls a model or stickler: each simulated run is an invoice extractor on a schema of
eight field paths (`FIELDS`), whose errors are drawn at per-field rates that are higher on poor
scans (`RATES`, `LINE_RATES`, `POOR_SHARE`: every rate of the simulation lives here). Both runs read
the same documents, so a poor scan is poor for both: the pairing a real comparison has. Each
document's counts per field are drawn as stickler writes them (a wrong value is tp 0, fd 1, fp 1; a
date left empty is fn 1; an invented line item is fa 1, fp 1; line-item leaves count per line).

Each pair is compared by the functions `compare` itself uses (`helpers.compare.bootstrap`), with
every field gated by `high(delta(FIELD.f1)) >= 0`, read per field and from the joint band.
`bench/bench_gates.py` prints the rates over many seeds; the Compare_Runs walkthrough shows a few.
Everything produced here is simulated, and reproducible from its seeds.
"""

from __future__ import annotations

import math

import numpy as np

from helpers.compare.bootstrap import joint_band, percentile_bounds, ratio, resample_sums
from helpers.formats import COUNTS

FIELDS = (
    "invoice_id",
    "vendor_name",
    "invoice_date",
    "total_amount",
    "line_items",
    "line_items.sku",
    "line_items.description",
    "line_items.unit_price",
)
POOR_SHARE = 0.3  # of the documents; a poor scan is poor for both runs
RATES = {  # chance per document of the field's error, (clean scan, poor scan)
    "invoice_id": (0.02, 0.06),
    "vendor_name": (0.04, 0.15),
    "invoice_date": (0.03, 0.10),  # half of these errors leave the date empty (fn), half give a wrong date (fd)
    "total_amount": (0.04, 0.15),
    "line_items": (0.03, 0.12),  # an invented line item (fa)
}
LINE_RATES = {  # chance per line item of a wrong leaf, (clean, poor)
    "line_items.sku": (0.01, 0.04),
    "line_items.description": (0.05, 0.15),
    "line_items.unit_price": (0.02, 0.08),
}
MAX_LINES = 5  # each document holds 1 to MAX_LINES line items, uniformly
REGRESSED = "invoice_date"
REGRESSIONS = (0.03, 0.06, 0.12)  # added to the candidate's invoice_date error rate, on every scan
SIZES = (30, 100, 1000)
SEEDS = 1000
RESAMPLES = 500
CONFIDENCE = 0.95
SEED = 18

TP, FP, FN, FD, FA = (COUNTS.index(key) for key in ("tp", "fp", "fn", "fd", "fa"))


def documents(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Which documents are poor scans, and how many line items each holds: shared by both runs."""
    return rng.random(size) < POOR_SHARE, rng.integers(1, MAX_LINES + 1, size)


def run_counts(rng: np.random.Generator, poor: np.ndarray, lines: np.ndarray, extra: float = 0.0) -> np.ndarray:
    """One run's counts, documents x (fields x counts); `extra` raises the regressed field's error rate."""
    size = poor.size
    counts = np.zeros((size, len(FIELDS), len(COUNTS)), dtype=np.int64)
    for index, field in enumerate(FIELDS):
        if field in LINE_RATES:
            clean, bad = LINE_RATES[field]
            misread = rng.binomial(lines, np.where(poor, bad, clean))
            counts[:, index, TP], counts[:, index, FD], counts[:, index, FP] = lines - misread, misread, misread
            continue
        clean, bad = RATES[field]
        rate = np.where(poor, bad, clean) + (extra if field == REGRESSED else 0.0)
        wrong = rng.random(size) < rate
        if field == "line_items":
            counts[:, index, TP], counts[:, index, FA], counts[:, index, FP] = lines, wrong, wrong
        elif field == "invoice_date":
            empty = wrong & (rng.random(size) < 0.5)
            wrong_value = wrong & ~empty
            counts[:, index, TP] = ~wrong
            counts[:, index, FN] = empty
            counts[:, index, FD] = counts[:, index, FP] = wrong_value
        else:
            counts[:, index, TP], counts[:, index, FD], counts[:, index, FP] = ~wrong, wrong, wrong
    return counts.reshape(size, -1)


def gate_failures(
    old: np.ndarray, new: np.ndarray, seed: int, resamples: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which of the eight `high(delta(F.f1)) >= 0` gates fail, per-field and joint, and the true-sample deltas."""
    _, sums = resample_sums(np.empty((old.shape[0], 0)), [old, new], resamples, seed)
    width = len(FIELDS) * len(COUNTS)
    shape = (resamples, len(FIELDS), len(COUNTS))
    resampled = ratio(sums[:, width:].reshape(shape), "f1") - ratio(sums[:, :width].reshape(shape), "f1")
    table = (len(FIELDS), len(COUNTS))
    estimates = ratio(new.sum(axis=0).reshape(table), "f1") - ratio(old.sum(axis=0).reshape(table), "f1")
    _, per_field = percentile_bounds(resampled, CONFIDENCE)  # each field's `interval(...).high`, in one call
    _, joint, _ = joint_band(estimates, resampled, CONFIDENCE)
    tolerance = 1e-9  # as the gates forgive float rounding
    return per_field < -tolerance, joint < -tolerance, estimates


def simulate(size: int, seeds: int, extra: float, master: int, resamples: int) -> dict:
    """Gate failures over `seeds` fresh pairs of runs of `size` documents, each from its own seed."""
    per_field, joint, changes = [], [], []
    for seed in range(seeds):
        rng = np.random.default_rng([master, size, round(extra * 1000), seed])
        poor, lines = documents(rng, size)
        old, new = run_counts(rng, poor, lines), run_counts(rng, poor, lines, extra)
        alone, together, estimates = gate_failures(old, new, seed, resamples)
        per_field.append(alone)
        joint.append(together)
        changes.append(estimates[FIELDS.index(REGRESSED)])
    return {"per-field": np.array(per_field), "joint": np.array(joint), "change": float(np.mean(changes))}


def rate(hits: np.ndarray) -> tuple[float, float]:
    """A proportion over seeds and its Monte Carlo standard error."""
    share = float(np.mean(hits))
    return share, math.sqrt(share * (1 - share) / hits.size) if hits.size else 0.0
