"""Cases and the harness: case files, schema import, scoring through `Experiment`, saved reports."""
