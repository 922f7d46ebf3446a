"""fieldeval: field-level evaluation of an agent's structured output, as commands and their library.

`eval-score`, `eval-record`, `eval-compare`, `eval-report`, `eval-power` and `eval-stand-in` (each
also `python -m fieldeval.commands.NAME`) score a team's own agent on its own schema and cases,
record and replay its model exchanges, compare runs with paired intervals and gates, and render
the report.

A run goes down the layers and comes back once: `commands/` parses and prints and maps errors to
exit codes; `flows/` is each command's recipe; the concerns (`harness/`, `exchanges/`,
`attribution/`, `compare/`, `scale/`, `report/`, `services/`) do the work, and read and write
through `formats/` and `files.py`; no call climbs back up. It imports nothing of the walkthroughs'
`helpers` package.
"""
