"""Command-line scripts behind the Makefile (importable so tests run them in process)."""
