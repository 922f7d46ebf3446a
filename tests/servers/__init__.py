"""Local servers that speak the live services' protocols on 127.0.0.1, for tests only."""
