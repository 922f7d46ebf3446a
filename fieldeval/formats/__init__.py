"""The on-disk formats, one module each, and the one way they are read and refused.

- `cases`: the case file and the predictions file a user brings (JSON Lines);
- `exchange`: one recorded model conversation (a cassette is a folder of them);
- `results`: the compact per-document results file;
- `run_info` and `leaf_diffs`: what a saved run says about itself, and its documents' leaf diffs, as data;
- `json`: the one strict JSON reader every format reads through;
- `limits`: the size cap of every file read whole (and of a stream being recorded), checked before a read;
- `errors`: `FormatError`, the base of every refusal, and `file_error`, its one wording.

The names below are the results format's words that light readers (compare's argument checks, its
telling a results file from a report) need without importing pydantic.
"""

from typing import Final

# stickler's confusion counts, in the order a results file writes them and every array holds them.
COUNTS = ("tp", "fa", "fd", "fp", "tn", "fn")
RESULTS_FORMAT: Final = "structured-output-results"
