"""The report a team opens: one self-contained HTML file per run, and a Markdown summary for CI.

    python -m fieldeval.commands.report RUN.json [--against OLD.json --gate RULE ...] [--schema M:Class]

`cli` is the command, `content` gathers what the page shows (tables, the interval chart, each
document's leaf diff), `page` renders the HTML and `summary` the Markdown.
"""
