"""Simulated pairs of extraction runs, as confusion counts, for measuring what interval-end gates promise.

Nothing here calls a model or stickler: each simulated run is an invoice extractor on a schema of
nine field paths (`FIELDS`), whose errors are drawn at per-field rates that are higher on poor
scans (`RATES`, `LINE_RATES`, `POOR_SHARE`: every rate of the simulation lives here). The counts
are discrete and skewed, and `currency` is wrong on 2% of documents: on 10 documents it is most
often perfect in both runs, the case where intervals built from a normal shape fail. Both runs read
the same documents, so a poor scan is poor for both: the pairing a real comparison has. Each
document's counts per field are drawn as stickler writes them (a wrong value is tp 0, fd 1, fp 1; a
date left empty is fn 1; an invented line item is fa 1, fp 1; line-item leaves count per line).

Each pair is compared by the functions `compare` itself uses (`fieldeval.compare.bootstrap`), with
every field gated by `high(delta(FIELD.f1)) >= 0`, read three ways (`MODES`): per field, from the
joint band `compare` uses (each field's percentile interval at one calibrated level,
`joint_band`), and from the studentized max-|t| band it replaced (`studentized_band`, kept here
only so that the comparison that chose between them can be run again).
`bench/bench_gates.py` prints the rates over many seeds; the Compare_Runs walkthrough shows a few.
Everything produced here is simulated, and reproducible from its seeds.
"""

from __future__ import annotations

import math

import numpy as np

from fieldeval.compare.bootstrap import joint_band, percentile_bounds, resampled_change
from fieldeval.compare.gates import regression_caught
from fieldeval.compare.params import check_confidence
from fieldeval.formats import COUNTS

FIELDS = (
    "invoice_id",
    "vendor_name",
    "invoice_date",
    "total_amount",
    "currency",
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
    "currency": (0.02, 0.02),  # rare on every scan: most small runs have no currency error at all
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
SIZES = (10, 30, 100, 1000)
SEEDS = 1000
RESAMPLES = 500
CONFIDENCE = 0.95
SEED = 18
MODES = ("per-field", "joint", "studentized")

TP, FP, FN, FD, FA = (COUNTS.index(key) for key in ("tp", "fp", "fn", "fd", "fa"))


def documents(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Which documents are poor scans, and how many line items each holds: shared by both runs."""
    return rng.random(size) < POOR_SHARE, rng.integers(1, MAX_LINES + 1, size)


def run_counts(
    rng: np.random.Generator, poor: np.ndarray, lines: np.ndarray, extra: float = 0.0, regressed: str = REGRESSED
) -> np.ndarray:
    """One run's counts, documents x (fields x counts); `extra` raises the `regressed` field's error rate."""
    size = poor.size
    counts = np.zeros((size, len(FIELDS), len(COUNTS)), dtype=np.int64)
    for index, field in enumerate(FIELDS):
        if field in LINE_RATES:
            clean, bad = LINE_RATES[field]
            misread = rng.binomial(lines, np.where(poor, bad, clean))
            counts[:, index, TP], counts[:, index, FD], counts[:, index, FP] = lines - misread, misread, misread
            continue
        clean, bad = RATES[field]
        rate = np.where(poor, bad, clean) + (extra if field == regressed else 0.0)
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


def studentized_band(estimates: np.ndarray, resampled: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The single-step max-|t| band (Romano & Wolf 2005), which `compare` read gates from before.

    Each target's resampled differences are standardized by their bootstrap standard error; the
    `confidence` quantile `c` of the largest |standardized departure| per resample gives every
    target `estimate +- c x se`. Symmetric around the estimate, it disagrees in sign with the
    percentile interval the tables print on small, discrete, skewed samples (for one field, too),
    which is why it was replaced; the bench prints both.
    """
    check_confidence(confidence)
    spread = resampled.std(axis=0, ddof=1)
    varies = spread > 1e-12 * np.maximum(1.0, np.abs(estimates))
    critical = 0.0
    if varies.any():
        departures = np.abs(resampled[:, varies] - estimates[varies]) / spread[varies]
        critical = float(np.quantile(departures.max(axis=1), confidence))
    width = np.where(varies, critical * spread, 0.0)
    return estimates - width, estimates + width


def bands(old: np.ndarray, new: np.ndarray, seed: int, resamples: int) -> tuple[dict, np.ndarray]:
    """Each field's F1 change read each way of `MODES` from the same resamples, as (lows, highs), and the deltas."""
    estimates, resampled = resampled_change(old, new, "f1", resamples, seed)
    read = {
        "per-field": percentile_bounds(resampled, CONFIDENCE),  # each field's `interval(...)`, in one call
        "joint": joint_band(resampled, CONFIDENCE)[:2],
        "studentized": studentized_band(estimates, resampled, CONFIDENCE),
    }
    return read, estimates


def gate_failures(old: np.ndarray, new: np.ndarray, seed: int, resamples: int) -> tuple[dict, np.ndarray]:
    """Which of the `high(delta(F.f1)) >= 0` gates fail, read each way of `MODES`, and the true-sample deltas."""
    read, estimates = bands(old, new, seed, resamples)
    return {mode: regression_caught(high) for mode, (_, high) in read.items()}, estimates


def simulate(size: int, seeds: int, extra: float, master: int, resamples: int, field: str = REGRESSED) -> dict:
    """Gate failures over `seeds` fresh pairs of runs of `size` documents, each from its own seed.

    `extra` is added to `field`'s error rate in the new run; the result holds, per mode, a seeds x
    fields array of failed gates, and `change`, the mean true change in `field`'s F1.
    """
    failed: dict[str, list] = {mode: [] for mode in MODES}
    changes = []
    for seed in range(seeds):
        rng = np.random.default_rng([master, size, round(extra * 1000), seed, FIELDS.index(field)])
        poor, lines = documents(rng, size)
        old, new = run_counts(rng, poor, lines), run_counts(rng, poor, lines, extra, field)
        found, estimates = gate_failures(old, new, seed, resamples)
        for mode in MODES:
            failed[mode].append(found[mode])
        changes.append(estimates[FIELDS.index(field)])
    return {**{mode: np.array(found) for mode, found in failed.items()}, "change": float(np.mean(changes))}


def euro_claims(claims: int = 10, euro: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """One field's counts on `claims` documents (documents x COUNTS): the old run reads every
    currency right, the new one reads the `euro` euro claims as dollars (a wrong value: fd 1, fp 1)."""
    old = np.zeros((claims, len(COUNTS)), dtype=np.int64)
    old[:, TP] = 1
    new = old.copy()
    new[:euro, TP], new[:euro, FD], new[:euro, FP] = 0, 1, 1
    return old, new


def rate(hits: np.ndarray) -> tuple[float, float]:
    """A proportion over seeds and its Monte Carlo standard error."""
    share = float(np.mean(hits))
    return share, math.sqrt(share * (1 - share) / hits.size) if hits.size else 0.0
