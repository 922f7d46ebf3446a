"""Whether two runs were scored by the same rules: the schema, each field's comparator, the match threshold.

A change in a field's F1 between two runs says how the extractor changed only when both runs were
scored the same way. Tighten a comparator (`NumericComparator@0.9` to `@1.0`), raise the match
threshold, or add a field, and the counts move with no change in the outputs. `score` records
the rules in each saved run (`fieldeval.formats.run_info`: the schema's fingerprint, the comparator
stickler used per field, the match threshold); this module reads them back as data and lists
what differs.

`compare` and `report --against` refuse two runs that differ (exit 2, naming both files, each
difference and the fix), because a gate read in CI is a number, not a sentence: a warning printed
above a passing gate is read by no one. `--allow-scoring-change` compares them anyway, and every
screen then says, first, that they were scored differently and how. Runs saved by code of one's
own, with no run description, are not checked (there is nothing to check them by), and nothing
says they were.
"""

from __future__ import annotations

from fieldeval.compare.params import CompareError
from fieldeval.formats.run_info import RunInfo

ALLOW = "--allow-scoring-change"
SHOWN = 5  # comparator differences named one by one; the rest are counted


def scoring_differences(old: RunInfo | None, new: RunInfo | None, names: tuple[str, str]) -> list[str]:
    """What differs between the rules two runs were scored by, one phrase each; empty when nothing does or
    either run does not say. `names` are the two runs as the user named them (old, new)."""
    if old is None or new is None:
        return []
    a, b = names
    found = []
    if old.schema_sha256 and new.schema_sha256 and old.schema_sha256 != new.schema_sha256:
        found.append(
            f"the schema differs ({old.schema_} with JSON-schema fingerprint {old.schema_sha256[:12]} in {a}; "
            f"{new.schema_} with {new.schema_sha256[:12]} in {b})"
        )
    if old.match_threshold != new.match_threshold:
        found.append(f"the match threshold differs ({old.match_threshold:g} in {a}; {new.match_threshold:g} in {b})")
    if old.comparators and new.comparators:
        changed = [
            f"{path} ({old.comparators.get(path, 'not compared')} in {a}; {new.comparators.get(path, 'not compared')}"
            f" in {b})"
            for path in dict.fromkeys([*old.comparators, *new.comparators])
            if old.comparators.get(path) != new.comparators.get(path)
        ]
        if changed:
            more = f" and {len(changed) - SHOWN} more" if len(changed) > SHOWN else ""
            found.append(f"the comparators differ on {len(changed)} field(s): {', '.join(changed[:SHOWN])}{more}")
    return found


def check_same_scoring(old: RunInfo | None, new: RunInfo | None, names: tuple[str, str], allow: bool) -> list[str]:
    """Refuse two runs scored by different rules; with `allow`, return what differs (`marked` words it).

    Returns an empty list when the rules agree (or a run does not say them).

    Raises:
        CompareError: Naming both runs, each difference and the two ways on.
    """
    differences = scoring_differences(old, new, names)
    if differences and not allow:
        raise CompareError(
            f"{names[0]} and {names[1]} were not scored by the same rules: {'; '.join(differences)}. Their counts "
            "would move with the scoring, not only with the outputs. Score both runs with the same schema and "
            f"--match-threshold (re-score the baseline's outputs with the candidate's), or pass {ALLOW} to compare "
            "them anyway, marked as scored differently"
        )
    return differences


def marked(differences: list[str]) -> str:
    """The line every screen of a comparison shows first when its runs were scored differently (`differences`)."""
    return (
        f"SCORED DIFFERENTLY ({ALLOW}): {'; '.join(differences)}; every change below mixes the outputs' change "
        "with the scoring's"
    )
