"""Rendering for the walkthroughs: plain-text tables, pandas tables with fixed Styler ids, matplotlib charts.

`text` needs only the standard library (a notebook that runs on strands and stickler alone prints
with it); `tables` and `charts` need pandas, jinja2 and matplotlib, which come with the tool's
`notebooks` extra.
"""


def extra_missing(exc: ImportError) -> ModuleNotFoundError:
    """The error for a library of the notebooks extra that is not installed, naming the install line."""
    name = exc.name or str(exc)
    return ModuleNotFoundError(
        f"Missing dependency: {name}: charts and styled tables come with the notebooks extra, "
        "`pip install '.[notebooks]'` from the project's checkout (in the repository: `make setup` installs it).",
        name=name,
    )
