"""`FuzzyEquals`: a configurable deterministic evaluator for result sets, JSON and numbers."""

from helpers.fuzzy.evaluator import FuzzyEquals

__all__ = ["FuzzyEquals"]
