"""FCC political-advertising invoices: the bundled live-agent example, one job per module.

The live notebook extracts five invoices of `amazon-agi/RealKIE-FCC-Verified` (config
`default`, split `test`) on the general path: the case file `data/fcc/cases.jsonl`, the cassette
folder `data/exchanges/fcc/` and the task below. `make record-fcc` downloads the rows from the
Hugging Face datasets server, writes the snapshot and the case file, and records the cassettes,
all together.

- `schema`: `FccInvoice`, `FccLineItem` and the extraction prompt;
- `tuned`: the same schema as a tuned stickler `StructuredModel`, and the date comparison;
- `documents`: labels, the selection of five documents, the snapshot they come from, cases;
- `cassettes`: where each document's recorded exchange lives, and the checks on it;
- `task`: the extraction task `task(case, model)` the recorder and the notebook run;
- `run`: the provenance line the notebook prints first;
- `refresh`: the live snapshot refresh step of `make record-fcc`.
- `datasets_server`: the Hugging Face datasets-server client and the snapshot it writes and reads;
- `record`: the refresh command, `python -m walkthroughs.fcc.record` (`make record-fcc`).
"""
