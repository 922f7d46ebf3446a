"""Replay or live: one environment variable decides how agent calls and downloads behave.

`EVAL_NOTEBOOKS_MODE` is `replay` (stored data only, never the network), `live` (real
services) or `auto`, the default: live when AWS credentials resolve, replay otherwise.

Choosing in `auto` opens no socket: the credentials check leaves out the EC2 and ECS metadata
services unless `AWS_EC2_METADATA_DISABLED=false` is set, and any failure to load credentials
(a `credential_process` printing non-JSON, an SSO profile never logged in, a broken config)
means replay. A check that waits (a `credential_process` that hangs, an SSO helper asking for
input) is given `CREDENTIALS_TIMEOUT` seconds, then means replay too. The recorders run the same
check and report the failure instead.
"""

from __future__ import annotations

import os
import threading
from typing import Final, Literal

from fieldeval.errors import EvalError

ENV_VAR = "EVAL_NOTEBOOKS_MODE"
MODES: Final = ("replay", "live", "auto")
# What tests and `make run` / `make outputs` set, so every kernel is offline and prints the same:
# replay mode, warnings silenced through the environment (never by hiding cells), and the
# width Rich renders `report.display()` at in a kernel, pinned.
OFFLINE_ENV = {ENV_VAR: "replay", "PYTHONWARNINGS": "ignore", "JUPYTER_COLUMNS": "115"}

Mode = Literal["replay", "live"]
# Seconds `auto` waits for the credentials check; a hung provider is left running in a daemon
# thread (its process belongs to the user's config), and the mode is replay.
CREDENTIALS_TIMEOUT = 5.0


class ModeError(EvalError, ValueError):
    """`EVAL_NOTEBOOKS_MODE` holds a value that is not one of the three modes."""


def requested_mode() -> Mode | Literal["auto"]:
    """The mode as set in the environment, validated; `auto` when unset."""
    value = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    for mode in MODES:
        if value == mode:
            return mode
    raise ModeError(f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not a mode; set it to one of: {', '.join(MODES)}")


def aws_credentials_resolve() -> bool:
    """Whether boto3 finds credentials, without calling AWS (no network, no account printed).

    The same offline check the recorders fail fast on, imported here on first use so choosing
    a mode does not load boto3 and strands for notebooks that never go live. Whatever fails
    while loading credentials means "no": a notebook's first cell replays instead of crashing.
    """
    try:
        from fieldeval.services.bedrock import check_credentials
    except ImportError:
        return False
    found: list[bool] = []

    def check() -> None:
        try:
            check_credentials()
        except Exception:  # CredentialsError, or anything a credential provider raised
            found.append(False)
        else:
            found.append(True)

    worker = threading.Thread(target=check, name="aws-credentials-check", daemon=True)
    worker.start()
    worker.join(CREDENTIALS_TIMEOUT)
    return bool(found and found[0])


def current_mode() -> Mode:
    """Resolve the mode: `auto` becomes live when AWS credentials resolve, replay otherwise."""
    mode = requested_mode()
    if mode == "auto":
        return "live" if aws_credentials_resolve() else "replay"
    return mode
