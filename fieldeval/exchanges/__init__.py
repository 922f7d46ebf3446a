"""Exchanges: the fixture format, `ReplayModel`, the recording wrapper and cassettes."""
