"""Rendering: pandas tables with fixed Styler ids, matplotlib charts, text reports.

`text` needs only the standard library (the commands print with it); charts, styled tables and
the report page need matplotlib and jinja2, which come with the `notebooks` and `report` extras,
so a slim install that only scores and compares never imports them.
"""


def extra_missing(exc: ImportError, extra: str = "notebooks", what: str = "charts and styled tables") -> ImportError:
    """The error for a library of an extra that is not installed, naming the install line."""
    from fieldeval.errors import MissingDependency

    return MissingDependency(exc.name or str(exc), extra, what)
