"""Comparing two saved runs: pairing by case, the paired bootstrap, gates and the command line."""
