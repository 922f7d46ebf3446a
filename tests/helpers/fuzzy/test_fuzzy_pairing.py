"""Pairing under `ignore_order`: optimal on every shape the fast paths reduce, checked against an
independent brute-force reference on random small cases, and bounded where it cannot be reduced."""

from __future__ import annotations

import itertools
import math
import random
from decimal import Decimal
from fractions import Fraction

import pytest

from helpers.fuzzy import pairing
from helpers.fuzzy.engine import FLAGS, TOLERANCES, Comparer, plain
from helpers.fuzzy.evaluator import FuzzyEquals

# --- an independent reference: exact arithmetic and brute force -----------------------------------


def ref_number(value):
    """The exact value the documented rule gives: a float is its shortest decimal (in the normal range
    below 2**53), and a Decimal or Fraction with a fraction part is its nearest float where one holds it."""
    if isinstance(value, Decimal) and not value.is_finite() or isinstance(value, float) and math.isinf(value):
        return float(value)
    if isinstance(value, float):
        return Fraction(repr(value)) if 2.2250738585072014e-308 <= abs(value) < 2**53 else Fraction(value)
    exact = Fraction(value)
    if exact.denominator != 1:
        try:
            nearest = float(exact)
        except OverflowError:
            return exact
        return ref_number(nearest) if nearest != 0 and not math.isinf(nearest) else exact
    return exact


def ref_close(x, y, rel, tol):
    """`|x - y| <= max(rel * max(|x|, |y|), tol)` over the reals, with NaN and infinities apart."""
    if isinstance(x, float) and math.isnan(x) or isinstance(y, float) and math.isnan(y):
        return isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
    x, y = ref_number(x), ref_number(y)
    if isinstance(x, float) or isinstance(y, float):  # an infinity
        return x == y
    return abs(x - y) <= max(Fraction(repr(rel)) * max(abs(x), abs(y)), Fraction(repr(tol)))


def ref_match(e, a, rel, tol):
    """Whether `a` matches `e` with ignore_order (lists are multisets at every level)."""
    if isinstance(e, dict) or isinstance(a, dict):
        return type(e) is type(a) and e.keys() == a.keys() and all(ref_match(e[k], a[k], rel, tol) for k in e)
    if isinstance(e, list | tuple) or isinstance(a, list | tuple):
        if not (isinstance(e, list | tuple) and isinstance(a, list | tuple)) or len(e) != len(a):
            return False
        return any(all(ref_match(x, y, rel, tol) for x, y in zip(e, p, strict=True)) for p in itertools.permutations(a))
    numeric = [isinstance(v, int | float | Decimal | Fraction) and not isinstance(v, bool) for v in (e, a)]
    if all(numeric):
        return ref_close(e, a, rel, tol)
    return not any(numeric) and type(e) is type(a) and e == a


def ref_max_pairing(expected, actual, rel, tol):
    """Size of a maximum matching, by simple augmenting paths over the reference relation."""
    edges = [[j for j, a in enumerate(actual) if ref_match(e, a, rel, tol)] for e in expected]
    owner: dict[int, int] = {}

    def augment(i, seen):
        for j in edges[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(augment(i, set()) for i in range(len(expected)))


def unpaired(expected, actual, rel, tol):
    """The unpaired indices of each side, as `FuzzyEquals(ignore_order=True, ...)` pairs them."""
    knobs = {**FLAGS, "ignore_order": True, **TOLERANCES, "numeric_tolerance": rel, "absolute_tolerance": tol}
    return pairing.pair(Comparer(**knobs), plain(list(expected)), plain(list(actual)), None)


# --- random small cases of every shape ------------------------------------------------------------

POOL = [0, 1, -1, 2, 9, 10, 11, 90, 100, 110, 0.5, 2.5, 1e-9, 5e9, float("inf"), float("nan")]
TOLERANCE_PAIRS = [(0.0, 0.0), (0.01, 0.0), (0.1, 0.0), (0.3, 0.0), (0.0, 0.5), (0.0, 1.0), (0.05, 0.5), (0.9, 0.0)]


def flat(rng):
    return rng.choice(POOL) * rng.choice([1, 1, 1.02, 0.97, 0.9])


def on_the_boundary(rng):
    return rng.choice([99, 100, 98.01, 97.0299, 783, 775.17, 1.61, 1.5295, 1.6905])


def near_5e9(rng):
    return 5e9 + rng.randrange(8) * 4e-4


def price(rng):
    return round(rng.uniform(99.0, 101.0), 4)


def dict_row(rng):
    return {"id": rng.randrange(4), "v": flat(rng), "tag": rng.choice(["a", "b"])}


def tuple_row(rng):
    return (rng.randrange(3), flat(rng), rng.choice(["a", "b"]))


def int_keyed_row(rng):
    return {0: rng.choice([1, 2, 100]), 1: flat(rng)}


def nested_row(rng):
    return {"id": rng.randrange(2), "items": [{"p": flat(rng)} for _ in range(rng.randint(0, 2))]}


def exact_kinds(rng):
    return rng.choice([Decimal("10.00"), Fraction(1, 3), 10**400, 10**400 + 1, 10, 1 / 3, 0.1, Decimal("0.1")])


SHAPES = {
    "flat floats": (flat, TOLERANCE_PAIRS),
    "values near 5e9, absolute 1e-3": (near_5e9, [(0.0, 1e-3)]),
    "decimals exactly on the boundary": (on_the_boundary, [(0.01, 0.0), (0.05, 0.0)]),
    "prices, 4 decimals, 1%": (price, [(0.01, 0.0)]),
    "dict rows": (dict_row, TOLERANCE_PAIRS),
    "tuple rows": (tuple_row, TOLERANCE_PAIRS),
    "rows keyed by integers": (int_keyed_row, TOLERANCE_PAIRS),
    "ints, Decimals, Fractions, huge ints": (exact_kinds, [(0.0, 0.0), (1e-9, 0.0), (0.01, 0.0)]),
    "numeric_tolerance >= 1 (general path)": (flat, [(1.0, 0.0), (1.5, 0.0), (3.0, 0.0)]),
    "rows holding a list of dicts (general path)": (nested_row, TOLERANCE_PAIRS),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_pairing_is_maximum_against_a_brute_force_reference(shape):
    make, tolerances = SHAPES[shape]
    rng = random.Random(f"pairing {shape}")
    for _ in range(400):
        rel, tol = rng.choice(tolerances)
        size = rng.randint(0, 5)
        expected = [make(rng) for _ in range(size)]
        actual = [make(rng) for _ in range(size + rng.choice([0, 0, 1, -1]) if size else 0)]
        lost_e, lost_a = unpaired(expected, actual, rel, tol)
        best = ref_max_pairing(expected, actual, rel, tol)
        context = (shape, expected, actual, rel, tol)
        assert len(expected) - len(lost_e) == best, context
        assert len(actual) - len(lost_a) == best, context
        verdict = FuzzyEquals(ignore_order=True, numeric_tolerance=rel, absolute_tolerance=tol).compare(
            expected, actual
        )
        assert verdict.test_pass == (best == len(expected) == len(actual)), context


def test_the_sweep_is_maximum_on_dense_random_numbers():
    """Many numbers within tolerance of one another: the case that went quadratic."""
    rng = random.Random(11)
    near = Comparer(**{**FLAGS, "ignore_order": True}, numeric_tolerance=0.05, absolute_tolerance=0.0).near
    for _ in range(200):
        expected = [rng.uniform(95, 105) for _ in range(rng.randint(1, 9))]
        actual = [rng.uniform(95, 105) for _ in range(rng.randint(1, 9))]
        lost_e, lost_a = pairing.sweep(expected, actual, near)
        best = ref_max_pairing(expected, actual, 0.05, 0.0)
        assert (len(expected) - len(lost_e), len(actual) - len(lost_a)) == (best, best)


def test_tuple_rows_match_as_multisets_like_dict_rows_match_by_key():
    rows = [(1, "Acme", 10.0), (2, "Beta", 20.0), (3, "Gamma", 30.0)]
    noisy = [(30.1, "Gamma", 3), ("Acme", 1, 10.02), (2, 20.05, "Beta")]
    assert FuzzyEquals(ignore_order=True, numeric_tolerance=0.01).compare(rows, noisy).test_pass
    noisy[0] = (31.0, "Gamma", 3)
    out = FuzzyEquals(ignore_order=True, numeric_tolerance=0.01).compare(rows, noisy)
    assert not out.test_pass
    assert out.reason.startswith("1 difference: $[2]: expected element has no partner in actual")


def test_rows_keyed_by_integers_pair_like_rows_keyed_by_strings():
    rng = random.Random(5)
    rows = [{0: i, 1: f"c{i % 7}", 2: rng.uniform(1, 500)} for i in range(300)]
    noisy = [{2: r[2] * 1.004, 0: r[0], 1: r[1]} for r in rows]
    rng.shuffle(noisy)
    assert FuzzyEquals(ignore_order=True, numeric_tolerance=0.01).compare(rows, noisy).test_pass
    noisy[7] = {**noisy[7], 2: noisy[7][2] * 1.5}
    assert not FuzzyEquals(ignore_order=True, numeric_tolerance=0.01).compare(rows, noisy).test_pass


def test_rows_holding_an_unhashable_scalar_pair_under_a_tolerance():
    class Point:  # defines __eq__ without __hash__, so it is unhashable
        def __init__(self, x):
            self.x = x

        def __eq__(self, other):
            return isinstance(other, Point) and other.x == self.x

    rows = [{"id": 1, "at": Point(1)}, {"id": 2, "at": Point(2)}]
    noisy = [{"id": 2.01, "at": Point(2)}, {"id": 1, "at": Point(1)}]
    evaluator = FuzzyEquals(ignore_order=True, numeric_tolerance=0.01)
    assert evaluator.compare(rows, noisy).test_pass
    assert evaluator.compare([[1, {"at": Point(1)}]] * 3, [[1.001, {"at": Point(1)}]] * 3).test_pass
    noisy[1] = {"id": 1, "at": Point(3)}
    out = evaluator.compare(rows, noisy)
    assert not out.test_pass
    assert out.reason.startswith("1 difference: $[0]: expected element has no partner in actual")


def test_many_near_duplicates_pair_with_the_right_verdict():
    rng = random.Random(3)
    expected = [100 * (1 + rng.uniform(-0.001, 0.001)) for _ in range(20_000)]
    actual = [x * (1 + rng.uniform(-0.001, 0.001)) for x in expected]
    rng.shuffle(actual)
    evaluator = FuzzyEquals(ignore_order=True, numeric_tolerance=0.01)
    assert evaluator.compare(expected, actual).test_pass
    out = evaluator.compare(expected, actual[:-1] + [103.0])
    assert not out.test_pass
    assert out.metadata["difference_count"] == 1
    assert "nearest unpaired actual is $[19999], which differs: expected" in out.reason


def test_a_shape_pairing_cannot_reduce_fails_the_case_within_the_bound(monkeypatch):
    """Two number columns each within tolerance of their neighbours but not of everything."""
    monkeypatch.setattr(pairing, "MAX_PAIR_CHECKS", 5_000)
    rows = [{"x": float(i), "y": float(i)} for i in range(1, 2_001)]
    out = FuzzyEquals(ignore_order=True, numeric_tolerance=0.05).compare(rows, list(reversed(rows)))
    assert not out.test_pass
    assert out.reason.startswith(
        "could not compare: pairing the 2,000 expected with the 2,000 actual elements of $ would try more than "
        "MAX_PAIR_CHECKS=5,000 candidate pairs"
    )
    assert "make one number an exact key" in out.reason


def test_subset_mode_with_ignore_order_is_bounded_too(monkeypatch):
    monkeypatch.setattr(pairing, "MAX_PAIR_CHECKS", 1_000)
    expected = [{"id": i} for i in range(100)]
    actual = [{"id": i, "extra": 1} for i in range(100)]
    out = FuzzyEquals(ignore_order=True, subset_mode=True).compare(expected, actual)
    assert not out.test_pass
    assert "MAX_PAIR_CHECKS=1,000" in out.reason
    monkeypatch.setattr(pairing, "MAX_PAIR_CHECKS", 20_000)
    assert FuzzyEquals(ignore_order=True, subset_mode=True).compare(expected, actual).test_pass
