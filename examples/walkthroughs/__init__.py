"""The bundled examples: reference invoices, the offline invoice, FCC and the simulated runs.

A package of its own beside `fieldeval` (examples/pyproject.toml): the notebooks, tests and
benchmarks import it, `make setup` installs it editable, and `pip install .` does not ship it.
`fieldeval` never imports it; each example goes through the general path as a user's code would.
"""
