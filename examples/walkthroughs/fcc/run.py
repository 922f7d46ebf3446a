"""What an FCC notebook shows first: where the replayed responses came from, in one line.

The notebook reads its cases and cassettes through the general path (`fieldeval.harness.cases`,
`fieldeval.exchanges.cassettes`); this only renders their provenance, with paths relative to the
repository so the output is the same on every machine.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fieldeval.exchanges.fixtures import Exchange
from fieldeval.files import REPO_ROOT
from walkthroughs.fcc.cassettes import FCC_EXCHANGES_DIR


def repo_relative(text: str) -> str:
    """`text` with this checkout's absolute path removed, so notebook output is the same anywhere."""
    return text.replace(f"{REPO_ROOT}/", "")


def exchanges_summary(exchanges: Iterable[Exchange], directory: Path = FCC_EXCHANGES_DIR) -> str:
    """One line on where the replayed responses came from, read from their provenance."""
    exchanges = list(exchanges)
    where = repo_relative(str(directory))
    if all(exchange.hand_authored for exchange in exchanges):
        return f"{len(exchanges)} hand-authored exchanges, replayed ({where}/); they measure no model"
    models = sorted({str(exchange.provenance.get("model_id")) for exchange in exchanges})
    times = sorted(str(exchange.provenance.get("recorded")) for exchange in exchanges)
    endpoints = sorted({exchange.endpoint for exchange in exchanges if exchange.endpoint})
    stand_ins = sum(bool(exchange.stand_in) for exchange in exchanges)
    caveat = f"; {stand_ins} answered by a stand-in server, not a model" if stand_ins else ""
    if endpoints:
        caveat += f"; recorded through {', '.join(endpoints)}, a local or overridden endpoint"
    return (
        f"{len(exchanges)} exchanges recorded from {', '.join(models)} "
        f"({times[0][:10]} to {times[-1][:10]}), replayed ({where}/){caveat}"
    )
