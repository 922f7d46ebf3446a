"""Scoring at scale: batches of documents scored on local processes or a Dask cluster.

`engine` opens the executor (this process, local worker processes, a local or remote Dask
cluster), `pool` is the local worker pool that survives a dead or hung worker, `batches` is what
a worker runs and what travels to it, `worker_imports` is what a worker imports before its first
batch, `run` fans batches out (or keeps a run too small to gain in one process) and merges them
into the same `StructuredOutputReport` one process builds, `progress` draws the bar, and
`command` adds `--workers`, `--cluster`, `--results` and their bounds to `python -m
fieldeval.commands.score`. The compact per-document results file is `fieldeval.harness.results`.
"""
