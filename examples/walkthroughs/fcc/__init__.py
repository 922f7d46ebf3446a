"""FCC political-advertising invoices: the bundled live-agent example, one job per module.

The live notebook extracts five invoices of `amazon-agi/RealKIE-FCC-Verified` (config
`default`, split `test`). Live, the rows come from the Hugging Face datasets server; in replay
mode from the snapshot in `data/fcc/`, with each model response replayed from
`data/exchanges/fcc/<id>.json`. `make record-fcc` refreshes both together.

- `schema`: `FccInvoice`, `FccLineItem` and the extraction prompt;
- `tuned`: the same schema as a tuned stickler `StructuredModel`, and the date comparison;
- `documents`: labels, the selection of five documents, the snapshot they come from, cases;
- `cassettes`: where each document's recorded exchange lives, and its replay model;
- `task`: the extraction task `task(case, model)` the recorder and the notebook run;
- `run`: what a notebook run starts from (`open_run`), its provenance lines and progress bar;
- `refresh`: the live snapshot refresh step of `make record-fcc`.
- `datasets_server`: the Hugging Face datasets-server client and the snapshot it writes and reads;
- `record`: the refresh command, `python -m walkthroughs.fcc.record` (`make record-fcc`).
"""
