"""Comparing two saved runs: reading and validating them, the paired bootstrap, gates and the command line.

`reading` reads a run (a report in memory, a saved report, a compact results file) and refuses
malformed contents by file, case and field; `bootstrap` is the paired bootstrap and the joint
band; `runs` pairs two runs and builds the tables; `gates` parses and applies rules; `cli` is
`python -m fieldeval.commands.compare`; `power` estimates, from a baseline, what a gate can catch
(`python -m fieldeval.commands.power`).
`params` holds the names and limits the command line checks before any heavy import.
"""
