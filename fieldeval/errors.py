"""The one base of every error this package raises on purpose.

A command catches `EvalError` once and prints its message: the message already names the file,
the field and the fix, so no caller formats it again. Subclasses keep the built-in class they
always were (`ValueError`, `RuntimeError`, `OSError`) as a second base, so code that caught those
still does. `MissingDependency` is here, not with the commands, because the notebooks' own
rendering raises it too.
"""


class EvalError(Exception):
    """An error whose message is written for the user: what is wrong, where, and what to do."""


# What a pip user and a repository user each run; the exit-code help names both.
INSTALL = "`pip install .` from the project's checkout (in the repository: `make setup`)"


def missing_dependency(name: str | None, extra: str | None = None, what: str = "") -> str:
    """The one message for a library that does not import: which one, and the line that installs it.

    `extra` names the optional extra that brings it (`report`, `notebooks`, `cluster`) and `what`
    what it is for; without an extra the library is a dependency of the package itself.
    """
    name = name or "a library"
    if extra is None:
        return f"Missing dependency: {name}. Install the project with {INSTALL}."
    return (
        f"Missing dependency: {name}: {what or 'this'} come with the {extra} extra, `pip install '.[{extra}]'` "
        "from the project's checkout (in the repository: `make setup` installs it)."
    )


class MissingDependency(EvalError, ModuleNotFoundError):
    """A library of the package or of an extra does not import; the message says what to install."""

    def __init__(self, name: str | None, extra: str | None = None, what: str = "") -> None:
        super().__init__(missing_dependency(name, extra, what), name=name)


class RecordingFailed(EvalError):
    """A live recording ended without its cassette: the task or the call failed, or the run gave up.

    The message says which case, what failed (the exception's type and message, the provider's
    notes) and what was kept; `record` ends with exit 2.
    """


class NoStructuredOutput(RecordingFailed):
    """The model never produced the structured output for a case, or used up its model calls trying (exit 3)."""
