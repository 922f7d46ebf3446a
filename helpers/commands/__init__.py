"""Every command, one module each: `python -m helpers.commands.NAME` or its console script.

`score` (eval-score), `record` (eval-record), `compare` (eval-compare), `report` (eval-report)
and `stand_in` (eval-stand-in). Each runs its `main` through `exits.run`, the one error wrapper,
and documents its codes from `exits`, the one exit-code table; errors and refusals go to standard
error, results to standard output. A command module imports only the
standard library and `helpers.commands.exits` at the top, so `--help` answers before any heavy
import; the work itself lives with its concern (`helpers.harness`, `helpers.exchanges`,
`helpers.compare`, `helpers.report`, `helpers.scale`, `helpers.services`), and what each command
does, step by step, in `helpers.flows`: a command parses its arguments, calls its flow and prints.
"""
