"""Rendering for the commands: plain-text tables (`text`) and the report page's comparison charts.

`text` needs only the standard library (the commands print with it); `compare_charts` needs
matplotlib, which comes with the `report` extra, so a slim install that only scores and compares
never imports it.
"""


def extra_missing(exc: ImportError, extra: str = "notebooks", what: str = "charts and styled tables") -> ImportError:
    """The error for a library of an extra that is not installed, naming the install line."""
    from fieldeval.errors import MissingDependency

    return MissingDependency(exc.name or str(exc), extra, what)
