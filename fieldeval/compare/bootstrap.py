"""The paired bootstrap over documents, computed as a multiplicity matrix times the count matrix.

A resample draws `documents` indices with replacement. Summing a field's counts over one resample
is the same as weighting each document by how many times it was drawn, so for every resample at
once the sums are `M @ C`, where `M[r, d]` counts how often resample `r` drew document `d` and `C`
holds one row of counts per document. That replaces a resamples x documents x counts gather per
field (gigabytes at 10,000 documents) with one matrix product per chunk of resamples; the counts
are whole numbers, so the sums are exact and equal the gather's to the last bit.

The indices are drawn exactly as before (`default_rng(seed).integers(0, documents, (resamples,
documents))`, chunk by chunk from one generator, which yields the same stream), so a seed gives
the same intervals it always gave. Mean scores are floats, and a different order of summation
would round differently; they are gathered chunk by chunk as before, so they match bit for bit too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from fieldeval.compare.params import CONFIDENCE, RESAMPLES, SEED, CompareError, check_confidence, check_resamples
from fieldeval.formats import COUNTS

# Indices drawn per chunk: bounds the working memory, and keeps each chunk's indices (3 MB) and
# what is gathered from them in cache between the passes over them (2,000,000 ran 20% slower).
CHUNK_ELEMENTS = 400_000
PRODUCT_PIECE = 200_000  # multiply-adds per matrix product: one thread (see `_draw_sums`)
IMPROVED, REGRESSED, NO_CLEAR_CHANGE = "improved", "regressed", "no clear change"
COLUMN_BYTES = 12 << 20  # distinct count columns held in one pass over the draw (see `_distinct_columns`)
BINCOUNT_BINS = 1 << 16  # bins per bincount call: rows x resamples counted at once, within cache
LEVEL_STEPS = 40  # halvings of the gap between a joint band's level and 1: a level found to 1e-12
STILL = 1e-12  # a bootstrap standard error at most this (times the estimate, if above 1) is rounding, not variation


@dataclass(frozen=True)
class Interval:
    """A paired difference (new minus old) and its bootstrap percentile interval, read at `level`.

    `level` is the run's confidence for a field's own interval, and higher for a field's part of
    a joint band over several gated fields (`joint_band`).
    """

    estimate: float
    low: float
    high: float
    level: float | None = None

    @property
    def verdict(self) -> str:
        """`improved` or `regressed` only when the interval excludes zero."""
        return verdict(self.low, self.high)


def verdict(low: float, high: float) -> str:
    """Name a change from its interval: a change is claimed only when zero is outside it.

    Higher is better for every metric a verdict is given for (scores, precision, recall, F1).
    """
    if low > 0:
        return IMPROVED
    if high < 0:
        return REGRESSED
    return NO_CLEAR_CHANGE


def _check(documents: int, resamples: int) -> None:
    if documents < 1:
        raise ValueError("the bootstrap needs at least one document")
    check_resamples(resamples)


def bootstrap_indices(documents: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """`resamples` rows of document indices drawn with replacement, the same for a given seed.

    Holds resamples x documents integers: for inspection and small runs. The comparison itself
    draws the same indices chunk by chunk (`resample_sums`).

    Raises:
        ValueError: If there are no documents or the resample count is out of range.
    """
    _check(documents, resamples)
    return np.random.default_rng(seed).integers(0, documents, size=(resamples, documents))


def resample_sums(
    scores: np.ndarray | Sequence[np.ndarray],
    counts: np.ndarray | Rows | Sequence[np.ndarray | Rows],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    *,
    groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every resample's mean score per score column and sum per count column, sharing one draw.

    Args:
        scores: documents x S floats (each column one run's scores, say), or the S columns
            apart (each run's own array, read without a copy); resampled means are gathered
            exactly as a plain `scores[indices].mean()` would compute them.
        counts: documents x K whole numbers, or several such matrices side by side (one per
            run, never concatenated); resampled sums are `multiplicity @ counts`. A matrix may be
            given as `Rows` of a table, gathered a block of columns at a time, never whole.
        groups: each document's row of `counts`, when documents share rows: `counts` then holds
            one row per group, and a resample's sums are how often it drew each group times the
            group's row, so the product is over groups, not documents.

    Returns:
        `(resamples x S means, resamples x K sums)`, K over all the count matrices; the sums are int64.

    Raises:
        ValueError: If there are no documents or the resample count is out of range.
    """
    if isinstance(scores, np.ndarray):
        documents = scores.shape[0]
        scores = [scores[:, column] for column in range(scores.shape[1])]
    else:
        documents = len(scores[0])
    score_columns = [np.ascontiguousarray(values, dtype=np.float64) for values in scores]  # each run's own, not copied
    _check(documents, resamples)
    matrices = [counts] if isinstance(counts, np.ndarray | Rows) else list(counts)
    means = np.empty((resamples, len(score_columns)), dtype=np.float64)
    rows = max(2, (CHUNK_ELEMENTS // documents) // 2 * 2)
    gathered = np.empty(documents, dtype=np.float64)
    found: list[np.ndarray] = []
    while not found or matrices:  # a pass over the draw for as many matrices as `COLUMN_BYTES` holds (the means once)
        columns, inverse, dtype, taken = _distinct_columns(matrices, documents)
        matrices = matrices[taken:]
        sums = np.empty((resamples, columns.shape[1]), dtype=np.int64)
        generator = np.random.default_rng(seed)  # every pass draws the same indices
        for start in range(0, resamples, rows):
            size = min(rows, resamples - start)
            indices = generator.integers(0, documents, size=(size, documents))
            for column, values in enumerate(score_columns if not found else ()):
                for row, drawn in enumerate(indices, start):
                    # `values[drawn].mean()`'s own sum and division, gathered into one buffer kept throughout
                    means[row, column] = np.add.reduce(np.take(values, drawn, out=gathered)) / documents
            if columns.shape[1]:
                drawn = indices if groups is None else np.take(groups, indices, out=indices)  # the indices are spent
                sums[start : start + size] = _draw_sums(drawn, columns, dtype)
        del columns  # before the next pass's are built
        found.append(sums[:, inverse])
    return means, found[0] if len(found) == 1 else np.concatenate(found, axis=1)


def _draw_sums(drawn: np.ndarray, columns: np.ndarray, dtype: type) -> np.ndarray:
    """Each resample's sums: how often it drew each row of `columns` (`_multiplicity`) times the rows.

    The product is taken `PRODUCT_PIECE` multiply-adds at a time: OpenBLAS runs a product that
    small on the calling thread, and a larger one on threads that, on a busy machine, spent 50
    times the CPU time here. Each piece's sums are whole numbers below the exactness bound, so
    adding the pieces is exact too.
    """
    rows = columns.shape[0]
    multiplicity = _multiplicity(drawn, rows, dtype)
    sums: np.ndarray = np.zeros((drawn.shape[0], columns.shape[1]), dtype=dtype)
    step = max(1, PRODUCT_PIECE // (drawn.shape[0] * columns.shape[1]))
    for start in range(0, rows, step):
        sums += multiplicity[:, start : start + step] @ columns[start : start + step]
    return np.rint(sums).astype(np.int64)


def _multiplicity(drawn: np.ndarray, rows: int, dtype: type) -> np.ndarray:
    """How often each resample (a row of `drawn`) drew each of `rows` rows: one bincount per block of resamples.

    A block's bins (resamples x rows) stay within `BINCOUNT_BINS`, so they fit in cache: one
    bincount over a whole chunk of a large run scatters across millions of bins and runs several
    times slower, while one call per resample of a small run (60 documents) is all call overhead.
    """
    size = drawn.shape[0]
    block = max(1, BINCOUNT_BINS // rows)
    multiplicity: np.ndarray = np.empty((size, rows), dtype=dtype)
    for first in range(0, size, block):
        picked = drawn[first : first + block]
        offsets = picked.ravel() if len(picked) == 1 else (picked + (np.arange(len(picked)) * rows)[:, None]).ravel()
        counted = np.bincount(offsets, minlength=picked.shape[0] * rows).reshape(picked.shape[0], rows)
        multiplicity[first : first + picked.shape[0]] = counted
    return multiplicity


@dataclass(frozen=True)
class Rows:
    """The rows `index` of `table`, as a count matrix `resample_sums` reads without it being gathered whole.

    A run's table holds each distinct row of counts once; the bootstrap wants one row per group
    of documents. Gathering that matrix would copy the table; this gathers a block of columns at
    a time instead, and only while they are read.
    """

    table: np.ndarray
    index: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.index), self.table.shape[1]

    def columns(self, start: int, stop: int) -> np.ndarray:
        return self.table[self.index, start:stop]


def _held(matrix: np.ndarray | Rows) -> np.ndarray:
    """What `matrix`'s counts are read from (of a `Rows`, its table: every row of it is some document's)."""
    return matrix.table if isinstance(matrix, Rows) else matrix


def _distinct_columns(
    matrices: Sequence[np.ndarray | Rows], documents: int
) -> tuple[np.ndarray, np.ndarray, type, int]:
    """The distinct count columns, where each column of the matrices side by side is among them, the dtype, and
    how many of the matrices they are of: they stop after the matrix that brings them to `COLUMN_BYTES`.

    Many columns repeat (line-item leaves often count the same true positives; tn is zero
    throughout), and at 100,000 documents the product is bound by reading this matrix once per
    chunk, so each distinct column is summed once. Columns are read `CHUNK_ELEMENTS` values at a
    time, a block of whole columns per numpy call (one call per column was most of the time of a
    small run's comparison), in the smallest integer type that holds every count; a column is
    looked up by the hash of its bytes and compared whole when hashes meet, so the answer is
    exact. Each new column is written straight into its row of a (columns x documents) array,
    whose rows past the last distinct one are never touched, so never resident: the distinct
    columns are held once, with no copy of the matrices and no keys beside them. float32 is
    exact while every partial sum stays below 2**24 (a resample's sum is at most `documents` x
    the largest count); float64 is exact below 2**53, which `fieldeval.compare.reading.MAX_COUNT` keeps.

    Five runs of 100,000 documents would hold some 28 MB of distinct columns at once; past
    `COLUMN_BYTES` the rest wait for another pass over the same seeded draw, which draws and
    counts the indices again (0.7 s of the comparison's 13 s of CPU time there) and holds
    half the memory.
    """
    largest = max((int(_held(matrix).max(initial=0)) for matrix in matrices), default=0)
    smallest = min((int(_held(matrix).min(initial=0)) for matrix in matrices), default=0)
    key = np.result_type(np.min_scalar_type(smallest), np.min_scalar_type(largest))  # holds every count exactly
    rows = matrices[0].shape[0] if matrices else 0
    dtype = np.float32 if documents * largest < 2**24 else np.float64
    distinct = np.empty((sum(matrix.shape[1] for matrix in matrices), rows), dtype=dtype)
    found = 0
    seen: dict[int, list[int]] = {}  # a column's hash -> the distinct columns with it
    inverse: list[int] = []
    taken = 0
    for matrix in matrices:
        if found * rows * np.dtype(dtype).itemsize >= COLUMN_BYTES:
            break
        taken += 1
        step = max(1, CHUNK_ELEMENTS // max(1, matrix.shape[0]))
        for start in range(0, matrix.shape[1], step):
            stop = start + step
            block = matrix.columns(start, stop) if isinstance(matrix, Rows) else matrix[:, start:stop]
            for values in np.ascontiguousarray(block.T, dtype=key):
                same = seen.setdefault(hash(values.tobytes()), [])
                index = next((each for each in same if np.array_equal(distinct[each], values)), None)
                if index is None:
                    index = found
                    distinct[index] = values
                    same.append(index)
                    found += 1
                inverse.append(index)
    return distinct[:found].T, np.array(inverse, dtype=np.intp), dtype, taken


def interval(old: np.ndarray, new: np.ndarray, estimate: float, confidence: float) -> Interval:
    """Percentile interval of the resampled differences `new - old`, around the full-sample estimate."""
    low, high = percentile_bounds(new - old, confidence)
    return Interval(float(estimate), float(low), float(high), confidence)


def percentile_bounds(differences: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The ends of the percentile interval of each column of resampled differences (resamples x K).

    One quantile call for K targets: each column's ends are, bit for bit, those of that column alone.
    """
    check_confidence(confidence)
    return _bounds(differences, confidence)


def _bounds(differences: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """`percentile_bounds` at any level in [0, 1], unchecked: a joint band's levels may approach 1."""
    tail = (1 - level) / 2
    low, high = np.quantile(differences, [tail, 1 - tail], axis=0)
    return low, high


def joint_band(resampled: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray, float]:
    """A simultaneous band over K differences, made of the same percentile intervals the tables print.

    Each target's interval is its percentile interval at one shared per-target level `level`,
    the smallest level (not below `confidence`) at which, in the same resamples, every target's
    resampled difference falls inside its interval together as often as one target's
    `confidence` interval holds its own: the calibrated percentile band, the max-rank form of
    Westfall and Young's (1993) min-P adjustment. Taking the coverage within each resample keeps
    how paired counts on the same documents move together, which a Bonferroni split ignores.

    For one target the joint coverage is that target's own, so `level` is `confidence` and the
    band is, bit for bit, the target's per-field interval (`percentile_bounds`): a gate on one
    field reads exactly what the field table prints. A target that never varies has an
    interval of its one value at every level and constrains nothing.

    Args:
        resampled: resamples x K differences, from the same resamples for every target.

    Returns:
        `(low, high, level)`: the band's ends (K each) and the per-target level they were read at.
    """
    check_confidence(confidence)
    resampled = np.asarray(resampled, dtype=float)
    resampled = resampled.reshape(resampled.shape[0], -1)
    low, high = percentile_bounds(resampled, confidence)
    alone = _inside(resampled, low, high).mean(axis=0)  # each target's own interval, in the resamples
    wanted = min(confidence, float(alone.min(initial=confidence)))
    if _inside(resampled, low, high).all(axis=1).mean() >= wanted:
        return low, high, confidence
    below, above = confidence, 1.0  # the joint coverage grows with the level; at 1 every resample is inside
    for _ in range(LEVEL_STEPS):
        middle = (below + above) / 2
        if _inside(resampled, *_bounds(resampled, middle)).all(axis=1).mean() >= wanted:
            above = middle
        else:
            below = middle
    low, high = _bounds(resampled, above)
    return low, high, above


def bonferroni_band(
    estimates: np.ndarray, resampled: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """A simultaneous band over K differences that holds by the union bound: each `estimate +- z * se`.

    `se` is each target's bootstrap standard error and `z` the normal quantile that leaves
    (1 - confidence) / m in the two tails, m the number of targets that vary, so each interval
    is read at `1 - (1 - confidence) / m` and all m hold together at least at `confidence`,
    however the targets move together. Why not a band of percentile intervals calibrated in the
    resamples (`joint_band`): over the tens of intervals of several candidates it is read so far
    out in the resamples' tails that a few resamples decide its ends, and under no change it
    claimed a change up to 18.5% of the time at a stated 5%; the standard error uses every resample,
    and this band stayed within 5% in every simulated setting (`bench/bench_candidates.py`). A
    target that never varies has no sampling error: its interval is its estimate, and it spends
    none of the error rate.

    Args:
        estimates: K full-sample differences.
        resampled: resamples x K differences, from the same resamples for every target.

    Returns:
        `(low, high, level)`: the band's ends (K each) and the level each interval is read at.
    """
    check_confidence(confidence)
    estimates = np.asarray(estimates, dtype=float).ravel()
    resampled = np.asarray(resampled, dtype=float).reshape(-1, estimates.size)
    level = 1 - (1 - confidence) / max(1, int(varying(estimates, resampled).sum()))
    low, high = normal_bounds(estimates, resampled, level)
    return low, high, level


def varying(estimates: np.ndarray, resampled: np.ndarray) -> np.ndarray:
    """Which targets vary in the resamples: a standard error above `STILL` (times a large estimate) is not rounding."""
    spread = np.asarray(resampled, dtype=float).std(axis=0, ddof=1)
    return np.asarray(spread > STILL * np.maximum(1.0, np.abs(estimates)))


def normal_bounds(estimates: np.ndarray, resampled: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """`estimate +- z * se` at `level` for each column of resampled differences; one that never varies: its estimate.

    The frontier reads a difference of two candidates with this too, at the family's level, so it
    reads intervals the way the leaderboard prints them.
    """
    estimates = np.asarray(estimates, dtype=float)
    spread = np.asarray(resampled, dtype=float).std(axis=0, ddof=1)
    width = np.where(varying(estimates, resampled), NormalDist().inv_cdf(1 - (1 - level) / 2) * spread, 0.0)
    return estimates - width, estimates + width


def _inside(resampled: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Which resampled differences lie within their target's interval (resamples x K booleans)."""
    return (resampled >= low) & (resampled <= high)


def paired_bootstrap(
    old: Sequence[float],
    new: Sequence[float],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Interval:
    """Mean of `new - old` over paired documents, with a paired bootstrap interval.

    Works on any per-document score, `Equals` included.
    """
    before, after = np.asarray(old, dtype=float), np.asarray(new, dtype=float)
    if before.shape != after.shape:
        raise CompareError(f"paired scores differ in length: {before.size} old, {after.size} new")
    check_confidence(confidence)
    means, _ = resample_sums(np.column_stack([before, after]), np.empty((before.size, 0)), resamples, seed)
    return interval(means[:, 0], means[:, 1], (after - before).mean(), confidence)


def resampled_change(
    old: np.ndarray, new: np.ndarray, metric: str, resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """`new - old` in `metric` for each field of two runs' counts, on the whole sample and on each resample.

    `old` and `new` are documents x (fields x COUNTS) whole numbers, one block of COUNTS per field,
    paired by row: what the simulations (the power estimate, the gate benchmark) draw, compared
    exactly as `compare` compares two runs. Returns `(estimates, resampled)`: fields, and
    resamples x fields.
    """
    fields = old.shape[1] // len(COUNTS)
    _, sums = resample_sums(np.empty((old.shape[0], 0)), [old, new], resamples, seed)
    shape = (resamples, fields, len(COUNTS))
    width = fields * len(COUNTS)
    resampled = ratio(sums[:, width:].reshape(shape), metric) - ratio(sums[:, :width].reshape(shape), metric)
    table = (fields, len(COUNTS))
    estimates = ratio(new.sum(axis=0).reshape(table), metric) - ratio(old.sum(axis=0).reshape(table), metric)
    return estimates, resampled


def ratio(totals: np.ndarray, name: str) -> np.ndarray:
    """A metric from summed counts (last axis in `counts` order), zero where undefined as in stickler."""
    if name in COUNTS:
        return totals[..., COUNTS.index(name)].astype(float)
    tp, fp, fn = (totals[..., COUNTS.index(key)].astype(float) for key in ("tp", "fp", "fn"))
    precision = np.divide(tp, tp + fp, out=np.zeros_like(tp), where=(tp + fp) > 0)
    recall = np.divide(tp, tp + fn, out=np.zeros_like(tp), where=(tp + fn) > 0)
    if name == "precision":
        return precision
    if name == "recall":
        return recall
    both = precision + recall
    return np.divide(2 * precision * recall, both, out=np.zeros_like(tp), where=both > 0)
