"""Cassettes: a folder holding one exchange file per case, recorded once and replayed forever.

Case `name` lives in `<folder>/<safe name>.json` (see `cassette_file_name`), in the exchange
format of `fieldeval.formats.exchange`. A format-2 cassette holds every request the agent sent,
and replay refuses any other request; a format-1 cassette is bound to its case's prompt by
`provenance.prompt_sha256`. Either way an exchange recorded for another document is refused by
name rather than scored. Replaying reads files only: a missing cassette is an error naming the exact
command that records it, never a call to the network.

`--cassettes data/exchanges` with the case `offline_invoice` is the bundled offline fixture at
its usual path, so the bundled example is one instance of this layout.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from fieldeval.exchanges.fixtures import PROMPT_HASH_KEY, Exchange, FixtureError, load_exchange
from fieldeval.exchanges.record_options import RecordOptions
from fieldeval.exchanges.replay import ReplayModel

# Long enough for any sensible case name; short enough for every file system's name limit.
MAX_FILE_STEM = 150
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class CassetteError(FixtureError):
    """A cassette folder that cannot serve these cases; the message names the file or case and the fix."""


def cassette_file_name(case_name: str) -> str:
    """The file a case's exchange lives in: its name with anything but letters, digits, `.`, `_`, `-` as `_`."""
    stem = _UNSAFE.sub("_", case_name).lstrip(".")[:MAX_FILE_STEM]
    return f"{stem or '_'}.json"


def cassette_paths(directory: Path | str, case_names: Iterable[str]) -> dict[str, Path]:
    """Each case's cassette file, by case name.

    Raises:
        CassetteError: If two case names map to the same file (compared without case, since
            macOS and Windows file systems do), before anything is read or written.
    """
    directory = Path(directory)
    paths: dict[str, Path] = {}
    owners: dict[str, str] = {}
    for name in case_names:
        file_name = cassette_file_name(name)
        key = file_name.lower()
        if key in owners:
            raise CassetteError(
                f"{directory}: cases {owners[key]!r} and {name!r} would share the cassette file {file_name}; "
                "rename one of them in the case file so their names differ in a letter or digit"
            )
        owners[key] = name
        paths[name] = directory / file_name
    return paths


class Cassettes:
    """The cassettes of one case set in one folder, for replay.

    Args:
        directory: The cassette folder.
        case_names: Every case the run needs, in order.
        tool_name: The structured-output tool (the schema's class name), which each exchange must end with.
        record_command: The command that records this folder; a case's own command adds `--only NAME`.
        output_model: When given, each cassette's final tool input must validate against it.
    """

    def __init__(
        self,
        directory: Path | str,
        case_names: Iterable[str],
        *,
        tool_name: str,
        record_command: str,
        output_model: type[BaseModel] | None = None,
    ):
        self.directory = Path(directory)
        self.paths = cassette_paths(self.directory, case_names)
        self.tool_name = tool_name
        self.record_command = record_command
        self.output_model = output_model

    def command_for(self, case_name: str, exchange: Exchange | None = None) -> str:
        """The exact command that (re-)records one case's cassette, with the options it was recorded with."""
        options = RecordOptions.of(exchange).args() if exchange is not None else []
        return " ".join([self.record_command, *map(_shell_quote, options), "--only", _shell_quote(case_name)])

    def load(self, case_name: str) -> Exchange:
        """The validated exchange of `case_name`, which must be bound to a prompt.

        Raises:
            FixtureError: If the file is missing or malformed (naming the command that records it),
                or it is not bound to a prompt.
        """
        command = self.command_for(case_name)
        path = self.paths[case_name]
        if not path.is_file():
            raise CassetteError(
                f"{path}: no cassette for case {case_name!r}; record it with `{command}` "
                "(replay never falls back to the network)"
            )
        exchange = load_exchange(path, tool_name=self.tool_name, record_command=command, output_model=self.output_model)
        command = self.command_for(case_name, exchange)
        if exchange.format == 1 and exchange.prompt_sha256 is None:
            raise CassetteError(
                f"{exchange.label}: field 'provenance.{PROMPT_HASH_KEY}' is missing, so the cassette is bound to "
                f"no prompt and could belong to any document; re-record it with `{command}`, or add the sha256 "
                "of the exact prompt text if it is hand-authored"
            )
        return exchange

    def load_all(self) -> dict[str, Exchange]:
        """Every case's exchange, checked before any agent runs; the first problem is raised."""
        return {name: self.load(name) for name in self.paths}

    def replay(self, case_name: str, exchange: Exchange | None = None) -> ReplayModel:
        """A fresh `ReplayModel` of the case's exchange, which refuses any request it was not recorded for.

        A format-1 exchange recorded no request: it refuses only another first user message.
        """
        exchange = exchange or self.load(case_name)
        return ReplayModel(exchange, record_command=self.command_for(case_name, exchange), output_tool=self.tool_name)


def _shell_quote(text: str) -> str:
    """`text` as one shell word: bare when it is safe, single-quoted otherwise."""
    if text and re.fullmatch(r"[A-Za-z0-9._/:=@%+-]+", text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"
