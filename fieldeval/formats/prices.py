"""A price table of the user's own (`--prices FILE`), which turns a run's tokens into money.

No prices are built in: they differ by provider, region, contract and month. The file is one
JSON object keyed by model id, each giving the price of a million input and a million output
tokens, in whatever currency the user bills in::

    {"us.anthropic.claude-haiku-4-5-20251001-v1:0": {"input_per_million": 1.0, "output_per_million": 5.0}}

A case whose model id is not in the table is left out of the sum and named, never priced at 0;
a run none of whose cases could be priced (or that recorded no model use, as a predictions file)
says "not priced", never a cost of 0.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fieldeval.formats import json as strict_json
from fieldeval.formats.errors import FormatError, file_error, first_error, problem
from fieldeval.formats.run_info import RunInfo

FIX = 'write it as {"MODEL_ID": {"input_per_million": 1.0, "output_per_million": 5.0}, ...}'


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)


class PricesError(FormatError):
    """A price table that cannot be read; the message names the file, the model id, the field and the fix."""


def read_prices(path: Path | str) -> dict[str, Price]:
    """The price table at `path`, every entry checked."""
    path = Path(path)
    data = strict_json.read_document(path, ("no price table here", "check --prices"), FIX, error=PricesError)
    if not isinstance(data, dict) or not data:
        raise PricesError(file_error(path, "is not a JSON object of prices by model id", FIX))
    prices = {}
    for model_id, entry in data.items():
        try:
            prices[model_id] = Price.model_validate(entry)
        except ValidationError as exc:
            error = first_error(exc)
            field = ".".join(str(part) for part in error["loc"]) or None
            musts = {
                "input_per_million": "must be the price of a million input tokens",
                "output_per_million": "must be the price of a million output tokens",
            }
            raise PricesError(
                file_error(path, f"model {model_id!r}: {problem(error, musts)}", FIX, field=field)
            ) from None
    return prices


def run_cost(info: RunInfo | None, prices: dict[str, Price]) -> tuple[float, int, dict[str, int]]:
    """What the run's recorded tokens cost at `prices`: the amount, the cases it prices, and by model id
    (with usage) the cases the table does not price. Cases with no model call recorded count in neither."""
    amount, priced, unpriced = 0.0, 0, Counter[str]()
    for source in info.cases.values() if info else []:
        usage = source.usage or {}
        if not usage.get("calls"):
            continue
        price = prices.get(source.model_id or "")
        if price is None:
            unpriced[source.model_id or "(no model id)"] += 1
            continue
        priced += 1
        amount += usage.get("input_tokens", 0) * price.input_per_million / 1e6
        amount += usage.get("output_tokens", 0) * price.output_per_million / 1e6
    return amount, priced, dict(sorted(unpriced.items()))


def cost_line(info: RunInfo | None, prices: dict[str, Price]) -> str:
    """`cost 0.0123 at --prices`, or what could not be priced and why, for a command to print.

    A cost is printed only for cases the table prices, and says so when that is not all of them;
    a run with nothing priced says "not priced", so no missing price reads as a cost of 0.
    """
    amount, priced, unpriced = run_cost(info, prices)
    missing = ", ".join(unpriced)
    if not priced and not unpriced:
        return "cost not priced (the run recorded no model use)"
    if not priced:
        return f"cost not priced (not in the table: {missing})"
    if unpriced:
        cases = priced + sum(unpriced.values())
        rest = f"the rest not priced, not in the table: {missing}"
        return f"cost {amount:,.4f} at --prices for {priced} of {cases} cases ({rest})"
    return f"cost {amount:,.4f} at --prices"
