"""Every command, one module each: `python -m fieldeval.commands.NAME` or its console script.

`score` (eval-score), `record` (eval-record), `compare` (eval-compare), `report` (eval-report),
`power` (eval-power) and `stand_in` (eval-stand-in). Each parses its arguments, calls its flow
(`fieldeval.flows`: what the command does, step by step; the stand-in's server is
`fieldeval.services.stand_in`) and prints. Each runs its `main` through
`exits.run`, the one error wrapper, and documents its codes from `exits`, the one exit-code
table; errors and refusals go to standard error, results to standard output. A command module
imports only the standard library, `fieldeval.commands.exits` (with `logs`, which keeps Strands' log
lines off standard error unless `--verbose`) and its flow at the top, so `--help` answers before
any heavy import; the work itself lives with its concern (`fieldeval.harness`,
`fieldeval.exchanges`, `fieldeval.compare`, `fieldeval.report`, `fieldeval.scale`, `fieldeval.services`).
"""
