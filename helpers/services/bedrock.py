"""The live model: which Bedrock model, in which region, with which credentials.

Nothing here calls AWS. `check_credentials` only asks boto3 whether credentials resolve, so a
recorder fails in a second with a message saying what to set, instead of deep inside an agent
call, and it never prints an account id or a key.
"""

from __future__ import annotations

import os
from typing import Any

import boto3
import botocore.exceptions
from strands.models import BedrockModel

MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
DEFAULT_REGION = "us-east-1"

_HOW_TO_FIX = (
    "set AWS_PROFILE to a profile with Bedrock model access (for SSO: `aws sso login "
    "--profile NAME`), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
)


class CredentialsError(RuntimeError):
    """AWS credentials do not resolve; the message says what to set."""


def _session(session: boto3.Session | None = None) -> boto3.Session:
    """The given session, or a new one for `AWS_PROFILE`, with a clear error for a bad profile."""
    if session is not None:
        return session
    try:
        return boto3.Session()
    except botocore.exceptions.ProfileNotFound as exc:
        profile = os.environ.get("AWS_PROFILE", "")
        raise CredentialsError(f"AWS_PROFILE={profile!r} names no profile in your AWS config; {_HOW_TO_FIX}") from exc
    except botocore.exceptions.BotoCoreError as exc:
        raise CredentialsError(f"the AWS config did not load ({type(exc).__name__}: {exc}); {_HOW_TO_FIX}") from exc


def resolve_region(session: boto3.Session | None = None) -> str:
    """`AWS_REGION`, then `AWS_DEFAULT_REGION`, then the profile's region, then us-east-1."""
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(variable, "").strip():
            return os.environ[variable].strip()
    return _session(session).region_name or DEFAULT_REGION


def check_credentials(session: boto3.Session | None = None) -> None:
    """Fail fast, offline, when boto3 finds no credentials.

    Raises:
        CredentialsError: If the profile does not exist or no credentials resolve.
    """
    try:
        credentials = _session(session).get_credentials()
    except botocore.exceptions.BotoCoreError as exc:
        raise CredentialsError(f"AWS credentials did not load ({type(exc).__name__}: {exc}); {_HOW_TO_FIX}") from exc
    if credentials is None:
        raise CredentialsError(f"no AWS credentials found; {_HOW_TO_FIX}")


def live_model(model_id: str = MODEL_ID, region: str | None = None, **config: Any) -> BedrockModel:
    """A streaming `BedrockModel` for `model_id` in the resolved region (constructing it is offline).

    Temperature defaults to 0 so that a re-recording differs from the last one only where the
    model really changed its answer.
    """
    config.setdefault("temperature", 0.0)
    region = region or resolve_region()
    _session()  # boto3 reads AWS_PROFILE itself; this turns a profile that does not exist into a clear error
    return BedrockModel(boto_session=boto3.Session(region_name=region), model_id=model_id, **config)
