#!/usr/bin/env bash
# The headless browser the report tests drive: Chromium from the distribution's packages.
# Idempotent: does nothing when a chromium is already on PATH. Needs root (CI runs as root).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "chromium is missing; install it with: sudo apt-get update && sudo apt-get install -y chromium" >&2
    exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null
