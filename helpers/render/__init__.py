"""Rendering: pandas tables with fixed Styler ids, matplotlib charts, text reports.

`text` needs only the standard library (the commands print with it); charts and styled tables
need matplotlib and jinja2, which come with the `notebooks` extra, so a slim install that only
scores and compares never imports them.
"""


def notebooks_extra_missing(exc: ImportError) -> ModuleNotFoundError:
    """The error for a library of the `notebooks` extra that is not installed, naming the install line."""
    return ModuleNotFoundError(
        f"{exc}: charts and styled tables come with the notebooks extra, `pip install '.[notebooks]'` from "
        "the project's checkout (`make setup` in the repository installs it)",
        name=exc.name,
    )
