"""`FuzzyEquals`: a configurable deterministic evaluator for result sets, JSON and numbers.

`evaluator.py` is the Strands Evals adapter; `engine.py` walks and explains, `numeric.py` decides
numbers exactly, `pairing.py` pairs unordered lists.
"""

from helpers.fuzzy.evaluator import EVALUATORS, FuzzyEquals

__all__ = ["EVALUATORS", "FuzzyEquals"]
