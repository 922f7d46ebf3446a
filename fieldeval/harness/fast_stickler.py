"""stickler 1.0.0 at about twice its speed on long lists, with every number unchanged.

Why: matching two lists of N objects scores all N x N item pairs (the Hungarian cost matrix),
and stickler 1.0.0 re-resolves each field's comparison configuration on every one of them
(`ConfigurationHelper.get_comparison_info`: the field's `json_schema_extra`, its comparator,
threshold and weight, rebuilt into a new `ComparableFieldConfig`, with a function-level import
each time), then routes a pair of plain values through every check written for objects, lists
and mappings before handing it to the field's comparator. At 50 line items that is most of the
time; the comparators themselves are a small part.

What this changes, and only while `install()` is in effect:

1. `ConfigurationHelper.get_comparison_info(cls, field)` is remembered per class and field. An
   entry is used only while everything the answer is built from is the same object or value:
   the field's `FieldInfo`, its annotation (pydantic installs a new one when it resolves a
   forward reference), its `json_schema_extra` and the class's `match_threshold` (a plain class
   attribute a caller may reassign). Anything else, and stickler's own function answers. The
   cache lives in the class's own `__dict__`, as stickler keeps its annotation cache, so it is
   collected with the class and a subclass never reads its parent's entries.
2. `StructuredModel.compare_field_raw(field, other)` sends a pair of non-empty plain scalars
   (exactly `str`, `int` or `float` on both sides, no subclasses, no bools) straight to the
   field's comparator. For such a pair stickler's own path ends in exactly that call: neither
   side can be absent under either of its null rules, neither is a list, a mapping or a model,
   so every check before the comparator passes. Everything else takes stickler's own path.

3. `DateComparator._parse(value, dayfirst)` on a `str` (exactly) is remembered, per
   `(value, dayfirst, range_mode)`, for the stock `DateComparator` class only (a subclass may parse
   differently), up to `DATE_MEMO_SIZE` entries (then the memo starts over). Every date comparison
   parses both values twice (month first and day first), each parse running dateutil twice; on
   documents of one line item that was about a fifth of the time, and the same strings come back
   (the truth and a correct prediction, the same date across a run). The answer depends on nothing
   else: `_parse` reads only `range_mode` from the comparator, dateutil is given a fixed default
   date (never today's), and it returns frozen dataclasses of `datetime`s, which nothing mutates.
4. The four questions stickler asks of a field's annotation on every field of every document it
   reads and every pair it compares (`ConfigurationHelper._is_structured_model_class`,
   `_is_optional_structured_model`, `_is_list_structured_model` and `structured_model.
   _annotation_is_list`: is it a model, an optional model, a list of models, a list) are
   remembered per annotation, up to `ANNOTATION_MEMO_SIZE` entries, and asked again of an
   annotation that cannot be hashed. Each answer is a function of the annotation alone (its
   origin, its arguments, and whether a class among them subclasses `StructuredModel`, which a
   class never stops or starts doing); asking them, each with a function-level import, was a
   fifth of the time on documents of a few line items.

Nothing is copied out of stickler: all four are wrappers that answer from stickler's own result
(remembered) or call the same comparator stickler would, and fall through otherwise.

Verified against stickler-eval 1.0.0 only: scores, counts and saved reports byte for byte on the
project's fixtures and on random documents with nested lists (`tests/harness/test_fast_stickler.py`,
and `bench/bench_stickler_identity.py` for 10,000 documents). On any other installed version
`install()` leaves stickler alone and prints one line saying so.

The same four changes, as a patch to stickler 1.0.0 itself, are `stickler_upstream.diff` beside
this module (checked the same way against stickler as shipped).

Who turns it on: only the `score` command, for its own process and its workers (it says so in its
first line; `--stock-stickler` or `STOCK_ENV_VAR=1` keeps stickler as shipped). A library function
(`score_outputs`, `score_stored`, a `Scorer` used directly) never does: patching a library's
classes behind a caller's back would make a notebook's first experiment run stock stickler and the
later ones these classes. A caller who wants the speed calls `install()` itself, or passes
`Scorer(..., fast_stickler=True)` for workers.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

VERIFIED_VERSION = "1.0.0"
CACHE_ATTRIBUTE = "_fast_stickler_config_cache"
DATE_MEMO_SIZE = 65536
ANNOTATION_MEMO_SIZE = 4096
ANNOTATION_CHECKS = ("_is_structured_model_class", "_is_optional_structured_model", "_is_list_structured_model")
_SCALARS = (str, int, float)
_MISSING = object()
STOCK_ENV_VAR = "FIELDEVAL_STOCK_STICKLER"  # 1: the score command keeps stickler as shipped
NOTICE = "Scoring with fieldeval's faster stickler classes (same numbers); --stock-stickler turns them off."
_state: dict[str, Any] = {"installed": False, "notified": False, "originals": None, "held": False}


def stock_requested(environ: Mapping[str, str]) -> bool:
    """Whether `STOCK_ENV_VAR` in `environ` asks for stickler as shipped: `1` yes; unset, empty or `0` no.

    Raises:
        ValueError: For any other value, naming the variable and the values it takes (a typo must not
            silently leave the speed-up on).
    """
    value = environ.get(STOCK_ENV_VAR, "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(
            f"{STOCK_ENV_VAR}={value!r} is not 0 or 1; set it to 1 to score with stickler as shipped, or unset it"
        )
    return value == "1"


def use(on: bool) -> bool:
    """`install()` when `on`, else `uninstall()`: a process the tool owns follows the run's choice.

    Returns whether the speed-up is in effect.
    """
    if on:
        return install()
    uninstall()
    return False


@functools.cache  # read once: the metadata is read from disk
def installed_version() -> str | None:
    try:
        return version("stickler-eval")
    except PackageNotFoundError:
        return None


def install() -> bool:
    """Speed stickler up for this process, if it is the version this was verified against.

    Idempotent. Returns whether the speed-up is in effect; on another version it prints one line
    (once per process) and stickler runs as shipped.
    """
    if _state["installed"]:
        return True
    if _state["held"]:  # inside `shipped()`
        return False
    found = installed_version()
    if found != VERIFIED_VERSION:
        if not _state["notified"]:
            _state["notified"] = True
            print(
                f"note: stickler-eval {found} is installed; the speed-up in fieldeval.harness.fast_stickler was "
                f"verified on {VERIFIED_VERSION} only and is off (scores are stickler's own, at its own speed).",
                file=sys.stderr,
            )
        return False
    from stickler.comparators.date import DateComparator
    from stickler.structured_object_evaluator.models import structured_model
    from stickler.structured_object_evaluator.models.configuration_helper import ConfigurationHelper
    from stickler.structured_object_evaluator.models.structured_model import StructuredModel

    originals = (
        ConfigurationHelper.__dict__["get_comparison_info"],
        StructuredModel.__dict__["compare_field_raw"],
        DateComparator.__dict__["_parse"],
        {name: ConfigurationHelper.__dict__[name] for name in ANNOTATION_CHECKS},
        structured_model._annotation_is_list,
    )
    resolve = originals[0].__func__
    compare_field_raw = originals[1]
    parse = originals[2]
    parsed: dict[tuple[str, bool, Any], Any] = {}

    def get_comparison_info(cls, field_name: str):
        field_info = cls.__dict__.get("__pydantic_fields__", _MISSING)
        field_info = field_info.get(field_name) if field_info is not _MISSING else None
        cache = cls.__dict__.get(CACHE_ATTRIBUTE)
        if field_info is not None and cache is not None:
            entry = cache.get(field_name)
            if (
                entry is not None
                and entry[0] is field_info
                and entry[1] is field_info.annotation
                and entry[2] is field_info.json_schema_extra
                and entry[3] == getattr(cls, "match_threshold", _MISSING)
            ):
                return entry[4]
        info = resolve(cls, field_name)
        if field_info is not None:
            if cache is None:
                cache = {}
                type.__setattr__(cls, CACHE_ATTRIBUTE, cache)
            key = (field_info, field_info.annotation, field_info.json_schema_extra)
            cache[field_name] = (*key, getattr(cls, "match_threshold", _MISSING), info)
        return info

    def fast_compare_field_raw(self, field_name: str, other_value: Any) -> float:
        mine = getattr(self, field_name)
        if type(mine) in _SCALARS and type(other_value) in _SCALARS and mine != "" and other_value != "":
            return ConfigurationHelper.get_comparison_info(type(self), field_name).comparator.compare(mine, other_value)
        return compare_field_raw(self, field_name, other_value)

    def remembered_parse(self, value: Any, dayfirst: bool) -> Any:
        if type(self) is not DateComparator or type(value) is not str:
            return parse(self, value, dayfirst)
        key = (value, dayfirst, self.range_mode)
        found = parsed.get(key, _MISSING)
        if found is _MISSING:
            if len(parsed) >= DATE_MEMO_SIZE:
                parsed.clear()
            found = parsed[key] = parse(self, value, dayfirst)
        return found

    ConfigurationHelper.get_comparison_info = staticmethod(get_comparison_info)
    StructuredModel.compare_field_raw = fast_compare_field_raw
    DateComparator._parse = remembered_parse
    for name, check in originals[3].items():
        setattr(ConfigurationHelper, name, staticmethod(_remembered(check.__func__)))
    structured_model._annotation_is_list = _remembered(originals[4])
    _state.update(installed=True, originals=originals)
    return True


def _remembered(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """`check(annotation)`, remembered per annotation (see 4. above); an unhashable one is asked again."""
    answers: dict[Any, bool] = {}

    def answer(annotation: Any) -> bool:
        try:
            if annotation in answers:
                return answers[annotation]
        except TypeError:  # e.g. `Annotated` with unhashable metadata
            return check(annotation)
        if len(answers) >= ANNOTATION_MEMO_SIZE:
            answers.clear()
        found = answers[annotation] = check(annotation)
        return found

    return answer


def uninstall() -> None:
    """Put stickler back as shipped (for benchmarks and the identity checks)."""
    if not _state["installed"]:
        return
    from stickler.comparators.date import DateComparator
    from stickler.structured_object_evaluator.models import structured_model
    from stickler.structured_object_evaluator.models.configuration_helper import ConfigurationHelper
    from stickler.structured_object_evaluator.models.structured_model import StructuredModel

    get_comparison_info, compare_field_raw, parse, checks, annotation_is_list = _state["originals"]
    ConfigurationHelper.get_comparison_info = get_comparison_info
    StructuredModel.compare_field_raw = compare_field_raw
    DateComparator._parse = parse
    for name, check in checks.items():
        setattr(ConfigurationHelper, name, check)
    structured_model._annotation_is_list = annotation_is_list
    _state.update(installed=False, originals=None)


@contextmanager
def shipped() -> Iterator[None]:
    """stickler exactly as shipped inside the block; the speed-up, if it was on, back after it."""
    was = _state["installed"]
    uninstall()
    _state["held"] = True
    try:
        yield
    finally:
        _state["held"] = False
        if was:
            install()


def differences(pairs: Sequence[tuple[Any, Any]], model: type, timings: dict[str, float] | None = None) -> list[str]:
    """What differs between scoring `(case, output)` pairs with stickler as shipped and sped up.

    Compared byte for byte: the saved report (every score, verdict, reason, field score and
    raw comparison with its counts), the run's rollups (`report.metrics()`), and each
    document's `non_matches` from stickler's own `eval_for(model).evaluate`. Returns the names
    of the documents that differ, `"metrics"` or `"report"` for the run-wide parts; empty when
    everything is identical. `timings`, when given, receives the seconds each side took.
    """
    import time

    started = time.perf_counter()
    with shipped():
        before = _snapshot(pairs, model)
    middle = time.perf_counter()
    was = _state["installed"]
    install()
    try:
        after = _snapshot(pairs, model)
    finally:
        if not was:
            uninstall()
    if timings is not None:
        timings.update(shipped=middle - started, sped_up=time.perf_counter() - middle)
    names = [str(case.name) for case, _ in pairs]
    differing = [name for name, old, new in zip(names, before[0], after[0], strict=True) if old != new]
    run_wide = zip(("metrics", "report"), before[1:], after[1:], strict=True)
    return differing + [part for part, old, new in run_wide if old != new]


def _snapshot(pairs: Sequence[tuple[Any, Any]], model: type) -> tuple[list[str], str, str]:
    """Each document's scoring as JSON text, the rollups' JSON and the saved report's JSON."""
    import json

    from stickler import eval_for
    from strands_evals.evaluators import StructuredOutputSimilarity

    from fieldeval.harness.scoring import score_stored

    cases = [case for case, _ in pairs]
    report = score_stored(cases, {case.name: output for case, output in pairs}, StructuredOutputSimilarity(model))
    dumped = report.model_dump(mode="json")
    spec = eval_for(model)
    documents = []
    for index, (case, output) in enumerate(pairs):
        try:
            missed = spec.evaluate(case.expected_output, output).non_matches
        except Exception as exc:  # the same refusal on both sides is agreement too
            missed = f"{type(exc).__name__}: {exc}"
        row = {key: dumped[key][index] for key in ("scores", "test_passes", "reasons", "detailed_results")}
        documents.append(json.dumps([row, missed], sort_keys=True, default=repr))
    try:
        metrics = report.metrics()
        rollups = json.dumps([metrics.field_metrics, metrics.metrics], sort_keys=True, default=repr)
    except ValueError as exc:  # nothing to roll up
        rollups = str(exc)
    return documents, rollups, report.model_dump_json()
