"""`make compare OLD=a.json NEW=b.json GATES="--gate 'overall >= 0.8'"`, with no shell in between.

The Makefile hands over the three variables as single-quoted words, exactly as typed (neither
make nor the shell expands them). GATES is split into words the way a shell splits them
(quotes group, `\\` escapes) and nothing in it is expanded, redirected or executed: `>=` stays a
comparison, `$(...)` stays text. The command is printed, then this process becomes it
(`exec`), so the exit code make sees is the command's own: 0 every gate passed, 1 a gate failed,
2 bad input. make itself still exits 2 on any failure (it names the code: `Error 1`), so CI
should call `python -m fieldeval.commands.compare` directly.
"""

from __future__ import annotations

import os
import shlex
import sys

USAGE = "usage: make compare OLD=baseline.json NEW=candidate.json [GATES=\"--gate 'overall >= 0.8' ...\"]"


def command(old: str, new: str, gates: str) -> list[str]:
    """The compare command line for these make variables; ValueError names what is wrong."""
    if not old or not new:
        raise ValueError(f"OLD and NEW are both needed.\n{USAGE}")
    try:
        words = shlex.split(gates)
    except ValueError as exc:  # an unclosed quote
        raise ValueError(f"GATES={gates!r} cannot be split into words ({exc}); close every quote.\n{USAGE}") from exc
    return [sys.executable, "-m", "fieldeval.commands.compare", old, new, *words]


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        argv_ = command(*argv)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    print("+ python " + shlex.join(argv_[1:]), file=sys.stderr, flush=True)
    os.execv(argv_[0], argv_)
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
