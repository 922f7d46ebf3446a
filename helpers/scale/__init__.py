"""Scoring at scale: batches of documents scored on local processes or a Dask cluster.

`engine` opens the executor (one thread, local processes, a local or remote Dask cluster),
`batches` is what a worker runs and what travels to it, `run` fans batches out and merges them
into the same `StructuredOutputReport` one process builds, `progress` draws the bar, and
`command` adds `--workers`, `--cluster` and `--results` to `python -m helpers.score`. The
compact per-document results file is `helpers.harness.results`.
"""
