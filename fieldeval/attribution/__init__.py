"""Where a structured output broke: every leaf of a document that cost it points, and a run's failures by kind.

`leaves` reads stickler's `non_matches` for one document and, for a list item below the match
threshold, scores that item's leaves with stickler's own comparators; `kinds` folds the leaves
of many documents into counts per field path; `pairing` says which list items re-paired between
two runs.
"""
