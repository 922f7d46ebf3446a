"""What a worker process imports before its first batch: the scoring path, without `rfc3987_syntax`.

Imported by each pool worker (`fieldeval.scale.pool.worker_main`) and, once for all the workers
forked from it, by this process's forkserver (`fieldeval.scale.pool.forkserver_context`), which the
pool and a local Dask cluster start their workers from where they cannot fork this process.

`rfc3987_syntax` is made unimportable first. `import strands` imports jsonschema (for
`strands.experimental.agent_config`), and jsonschema imports that optional package, when
installed, for its `iri` format check; it compiles a grammar at import, about half of a
worker's start-up (measured with `python -X importtime`: 3.9 s of 8.1 s under load, 1.3 s of
2.6 s idle). It is installed only as a JupyterLab dependency, nothing a worker runs checks that
format, and jsonschema skips the check when the package is missing, as in an install without the
notebooks. A process that imported it already keeps it.
"""

import sys

# None makes the import raise ImportError (documented; typeshed allows only modules).
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

import fieldeval.scale.batches  # noqa: E402, F401  (the imports every batch needs)
