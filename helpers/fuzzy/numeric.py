"""Numbers for `FuzzyEquals`: one canonical form per value, and the tolerance test done exactly.

Why exact: pairing under a tolerance sorts numbers and sweeps over them, which finds the best
pairing only if each number's partners form one unbroken run in sorted order. That holds for
`|a - b| <= max(relative * max(|a|, |b|), absolute)` over the real numbers when `relative < 1`,
but not for the same test rounded in floats. So the test is decided in exact arithmetic on the
decimals the numbers are written as: a float counts as its shortest repr (`1.61` is 161/100,
as in the JSON or the source it came from; from 2**53 up, and for subnormals, its exact binary
value), and so does each tolerance. Then `1.61` against
`1.5295` at 5% is exactly on the boundary and passes, as a reader working it out would expect.
A float computation decides every case not within a hair of the boundary; only those few are
redone with fractions, so the exactness costs almost nothing.

Exact also means that Decimals and numeric strings with hundreds of digits stay what they are:
a value a float cannot hold (beyond its range, or too small for it) is kept as a `Fraction`.
"""

from __future__ import annotations

import math
import numbers
from decimal import Context, Decimal, Inexact, localcontext
from fractions import Fraction
from typing import Any

NAN = ("nan",)

EXACT_DIGITS = 4300
"""Decimals and numeric strings whose exponent passes this many digits compare by equality only.

Converting `Decimal("1e999999999")` to an exact integer would need a billion digits; this bound
is Python's own limit for turning text into an int.
"""

_FLOAT_EXACT_INT = 2**53  # ints below this convert to float exactly
_SLACK = 2.0**-50  # a float and its shortest decimal differ by at most 2**-53 of its size: 8 times that
_TINY = 1e-290  # below this, float rounding is no longer relative: decide exactly
_SMALLEST_NORMAL = 2.2250738585072014e-308


_EXACT = Context(prec=2000, Emax=10**6, Emin=-(10**6))  # 17-digit decimals from 1e-324 to 1e308 stay exact


def number(value: Any) -> tuple:
    """Canonical number: `("n", v)` with `v` an int, float or Fraction; `NAN`; or `("big", d)`.

    An integral value is an int; a fraction is the nearest float (so `Decimal("0.1")` equals the
    float `0.1`, as a JSON reader would give it) unless no float holds it, then an exact Fraction.
    """
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, numbers.Integral):
        return ("n", int(value))
    if isinstance(value, numbers.Rational):
        exact = Fraction(value)  # a Rational need not define __int__; its numerator and denominator suffice
        if exact.denominator == 1:
            return ("n", exact.numerator)
        return ("n", _nearest_float(exact))
    result = float(value)
    return ("n", result) if result == result else NAN


def _decimal(value: Decimal) -> tuple:
    if value.is_nan():
        return NAN
    if value.is_infinite():
        return ("n", float(value))
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)  # a letter only for NaN and infinity, handled above
    if abs(value.adjusted()) > EXACT_DIGITS or -exponent > EXACT_DIGITS:
        return ("big", value)  # Decimal equality and hash are by value, whatever the exponent
    if value == value.to_integral_value():
        return ("n", int(value))
    return ("n", _nearest_float(Fraction(value)))


def _nearest_float(exact: Fraction) -> float | Fraction:
    """The float nearest `exact`, or `exact` itself when a float would overflow or flush to zero."""
    try:
        result = float(exact)
    except OverflowError:
        return exact
    if result == 0 or math.isinf(result) or abs(result) < _SMALLEST_NORMAL:
        return exact
    return result


def is_infinite(value: Any) -> bool:
    """For canonical numbers: only a float can be infinite."""
    return type(value) is float and math.isinf(value)


def _as_float(value: Any) -> float | None:
    """`value` as a float when that is exact and finite, else None."""
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is int and -_FLOAT_EXACT_INT <= value <= _FLOAT_EXACT_INT:
        return float(value)
    return None


class Tolerance:
    """The numeric knobs, and the one test every comparison and the pairing use."""

    def __init__(self, relative: float, absolute: float) -> None:
        self.relative = relative
        self.absolute = absolute
        self.tolerant = relative > 0 or absolute > 0
        self.exact_relative = Fraction(repr(relative))  # the decimal the user wrote
        self.exact_absolute = Fraction(repr(absolute))
        self.decimal_relative = Decimal(repr(relative))
        self.decimal_absolute = Decimal(repr(absolute))
        self.sortable = relative < 1  # partners form one run in sorted order (see the module doc)

    def near(self, x: Any, y: Any) -> bool:
        """Whether two canonical numbers are equal or within tolerance, decided exactly."""
        if x == y:
            return True
        if not self.tolerant or is_infinite(x) or is_infinite(y):
            return False
        a, b = _as_float(x), _as_float(y)
        if a is not None and b is not None:
            off = abs(a - b)
            largest = max(abs(a), abs(b))
            allowed = max(self.relative * largest, self.absolute)
            error = (largest + off + allowed) * _SLACK  # bounds float rounding and float-vs-decimal
            if off + error < allowed:
                return True
            if off - error > allowed and allowed > _TINY and not math.isinf(off):
                return False
            return self._near_in_decimals(_written(a), _written(b))
        x, y = _decimal_value(x), _decimal_value(y)
        return abs(x - y) <= max(self.exact_relative * max(abs(x), abs(y)), self.exact_absolute)

    def _near_in_decimals(self, x: Decimal, y: Decimal) -> bool:
        """The exact test on two floats' decimals; no result is rounded at this precision."""
        with localcontext(_EXACT) as context:
            context.clear_flags()
            result = abs(x - y) <= max(self.decimal_relative * max(abs(x), abs(y)), self.decimal_absolute)
            assert not context.flags[Inexact]
        return result

    def explain(self, x: Any, y: Any) -> str:
        """` (off by D, tolerance allows T)` for two finite canonical numbers, six digits each."""
        a, b = _as_float(x), _as_float(y)
        if a is not None and b is not None:
            off, allowed = abs(a - b), max(self.relative * max(abs(a), abs(b)), self.absolute)
            return f" (off by {off:.6g}, tolerance allows {allowed:.6g})"
        x, y = _decimal_value(x), _decimal_value(y)
        off = abs(x - y)
        allowed = max(self.exact_relative * max(abs(x), abs(y)), self.exact_absolute)
        return f" (off by {_six_digits(off)}, tolerance allows {_six_digits(allowed)})"


def _written(value: float) -> Decimal:
    """A finite float as the decimal it is written as: its shortest repr.

    Outside the normal range below 2**53 a float keeps its exact binary value: there the repr
    can pass an integer or an exact fraction that lies between it and the float, which would
    make the order of values differ from the order of floats that pairing sorts by.
    """
    if _SMALLEST_NORMAL <= abs(value) < _FLOAT_EXACT_INT:
        return Decimal(repr(value))
    return Decimal(value)


def _decimal_value(value: int | float | Fraction) -> Fraction:
    """A finite canonical number as the exact decimal it is written as (see `_written`)."""
    return Fraction(_written(value)) if type(value) is float else Fraction(value)


def _six_digits(value: Fraction) -> str:
    """A fraction of any size to six significant digits, without passing through a float."""
    with localcontext() as context:
        context.prec = 30
        context.Emax, context.Emin = 10**9, -(10**9)
        return format(Decimal(value.numerator) / Decimal(value.denominator), ".6g")
