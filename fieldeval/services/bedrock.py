"""The live model: which Bedrock model, in which region, with which credentials.

Nothing here calls AWS. `check_credentials` only asks botocore's credential chain whether
credentials resolve, so a recorder fails in a second with a message saying what to set,
instead of deep inside an agent call. It never prints an account id or a key.

No metadata service unless asked: the EC2 instance metadata service and the ECS container
credentials endpoint are network calls, so the credential chain used here (by the offline
check, by `auto` mode, and by the live model) leaves both out unless the user sets
`AWS_EC2_METADATA_DISABLED=false` explicitly (on an EC2 instance or in an ECS task).

Every failure to load credentials (a profile that does not exist, a `credential_process` that
fails or prints something other than JSON, an SSO profile never logged in or whose login
expired, an unreadable config) is a `CredentialsError` naming the profile and the setting that
failed; `auto` mode reads it as "replay".

The live model's client has bounded waits (connect and read timeouts) and sends each call once
(`ONE_ATTEMPT` over `CLIENT_CONFIG`: botocore's own retries off), so every throttle reaches the
run's one back-off (`fieldeval.exchanges.throttle`), which paces, counts and bounds them.
`CLIENT_CONFIG` alone, the same timeouts with a few standard-mode retries, is for an agent that
runs with no recorder around it (the FCC notebook's live run). `describe_bedrock_error` turns what
Bedrock or botocore raised into a message naming Bedrock and the fix.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import botocore.exceptions
import botocore.session
import urllib3.exceptions
from botocore.config import Config
from strands import ModelRetryStrategy
from strands.models import BedrockModel

from fieldeval.errors import EvalError

MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
DEFAULT_REGION = "us-east-1"
SERVICE = "Amazon Bedrock"
METADATA_ENV = "AWS_EC2_METADATA_DISABLED"
METADATA_PROVIDERS = ("iam-role", "container-role")  # botocore's names for IMDS and the ECS endpoint

# Bounded waits: a stalled stream or an outage ends within about connect_timeout + read_timeout
# per attempt, for at most `total_max_attempts` attempts.
CLIENT_CONFIG = Config(connect_timeout=10, read_timeout=60, retries={"mode": "standard", "total_max_attempts": 3})
# The live model of `record` and `score --mode live`: one attempt per call, so a throttle is never
# retried below the run's shared back-off, where it would be neither counted nor paced with the others.
ONE_ATTEMPT = Config(retries={"mode": "standard", "total_max_attempts": 1})

_HOW_TO_FIX = (
    "set AWS_PROFILE to a profile with Bedrock model access (for SSO: `aws sso login "
    "--profile NAME`), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
)

# The setting each botocore credential provider reads, for a message that says what failed.
_SETTING_OF = {
    "env": "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY",
    "assume-role": "role_arn / source_profile",
    "assume-role-with-web-identity": "web_identity_token_file / role_arn",
    "sso": "sso_session / sso_start_url",
    "login": "login_session",
    "custom-process": "credential_process",
    "shared-credentials-file": "the shared credentials file (AWS_SHARED_CREDENTIALS_FILE)",
    "config-file": "aws_access_key_id in the config file (AWS_CONFIG_FILE)",
    "ec2-credentials-file": "the EC2 credentials file",
    "boto-config": "the boto2 config file",
    "container-role": "the ECS container credentials endpoint",
    "iam-role": "the EC2 instance metadata service",
}


class CredentialsError(EvalError, RuntimeError):
    """AWS credentials do not resolve; the message names the profile, the setting and the fix."""


def scrub(value: object, limit: int = 300) -> str:
    """`str(value)` (an exception, mostly) without anything shaped like an account id or an access key, and short."""
    text = re.sub(r"(?<!\d)\d{12}(?!\d)", "<account>", str(value))
    text = re.sub(r"\b(AKIA|ASIA|AROA|AIDA)[A-Z0-9]{12,}\b", "<key>", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def metadata_allowed() -> bool:
    """Only an explicit `AWS_EC2_METADATA_DISABLED=false` lets the chain call a metadata service."""
    return os.environ.get(METADATA_ENV, "").strip().lower() == "false"


def _profile_label(core: botocore.session.Session) -> str:
    return core.get_config_variable("profile") or "default"


def _offline_core() -> botocore.session.Session:
    """A botocore session whose credential chain leaves out the metadata services unless asked."""
    core = botocore.session.Session()
    try:
        resolver = core.get_component("credential_provider")
        core.get_scoped_config()
    except botocore.exceptions.ProfileNotFound as exc:
        profile = os.environ.get("AWS_PROFILE", "")
        raise CredentialsError(f"AWS_PROFILE={profile!r} names no profile in your AWS config; {_HOW_TO_FIX}") from exc
    except Exception as exc:  # an unparseable config file, a bad value in it
        raise CredentialsError(
            f"the AWS config did not load ({type(exc).__name__}: {scrub(exc)}); fix AWS_CONFIG_FILE or {_HOW_TO_FIX}"
        ) from exc
    if not metadata_allowed():
        for name in METADATA_PROVIDERS:
            resolver.remove(name)
    return core


def offline_session(region: str | None = None) -> boto3.Session:
    """A boto3 session that never calls a metadata service unless `AWS_EC2_METADATA_DISABLED=false`.

    Raises:
        CredentialsError: If `AWS_PROFILE` names no profile or the AWS config does not load.
    """
    core = _offline_core()
    try:
        return boto3.Session(botocore_session=core, region_name=region)
    except Exception as exc:
        raise CredentialsError(f"the AWS session did not start ({type(exc).__name__}: {scrub(exc)})") from exc


def resolve_region(session: Any = None) -> str:
    """`AWS_REGION`, then `AWS_DEFAULT_REGION`, then the profile's region, then us-east-1."""
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(variable, "").strip():
            return os.environ[variable].strip()
    return (session or offline_session()).region_name or DEFAULT_REGION


def check_credentials(session: Any = None) -> None:
    """Fail fast, offline, when no credentials resolve; never call AWS or a metadata service.

    With no `session`, walks botocore's credential chain (less the metadata services unless
    asked) provider by provider, so a failure names the setting that failed.

    Raises:
        CredentialsError: If the profile does not exist, a provider fails, an SSO profile has
            no valid cached login, or no credentials resolve.
    """
    if session is not None:
        try:
            credentials = session.get_credentials()
        except Exception as exc:
            raise CredentialsError(
                f"AWS credentials did not load ({type(exc).__name__}: {scrub(exc)}); {_HOW_TO_FIX}"
            ) from exc
        if credentials is None:
            raise CredentialsError(f"no AWS credentials found; {_HOW_TO_FIX}")
        return
    core = _offline_core()
    profile = _profile_label(core)
    for provider in core.get_component("credential_provider").providers:
        setting = _SETTING_OF.get(provider.METHOD, provider.METHOD)
        try:
            credentials = provider.load()
        except Exception as exc:  # a process printing non-JSON raises ValueError, not a botocore error
            raise CredentialsError(
                f"AWS profile {profile!r}: {setting} failed to give credentials "
                f"({type(exc).__name__}: {scrub(exc)}); fix that setting, or {_HOW_TO_FIX}"
            ) from exc
        if credentials is None:
            continue
        if provider.METHOD == "sso":
            _check_sso_login(core, profile)
        return
    hint = "" if metadata_allowed() else f" (the metadata services are not asked unless {METADATA_ENV}=false)"
    raise CredentialsError(f"no AWS credentials found for profile {profile!r}{hint}; {_HOW_TO_FIX}")


def _check_sso_login(core: botocore.session.Session, profile: str) -> None:
    """An SSO profile counts only with an unexpired cached login token (read from disk, no call)."""
    config = core.full_config
    profile_config = config.get("profiles", {}).get(profile, {})
    session_name = profile_config.get("sso_session")
    start_url = profile_config.get("sso_start_url")
    if session_name:
        start_url = config.get("sso_sessions", {}).get(session_name, {}).get("sso_start_url", start_url)
    key = hashlib.sha1((session_name or start_url or "").encode("utf-8")).hexdigest()
    cache = Path(os.path.expanduser(os.path.join("~", ".aws", "sso", "cache"))) / f"{key}.json"
    login = f"run `aws sso login --profile {profile}`"
    try:
        token = json.loads(cache.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CredentialsError(f"AWS profile {profile!r} uses SSO but was never logged in; {login}") from None
    except (OSError, ValueError) as exc:
        raise CredentialsError(f"AWS profile {profile!r}: the cached SSO login is unreadable; {login}") from exc
    try:
        expires = datetime.fromisoformat(str(token["expiresAt"]).replace("Z", "+00:00"))
        usable = bool(token["accessToken"]) and (expires > datetime.now(UTC) or bool(token.get("refreshToken")))
    except (KeyError, TypeError, ValueError):
        usable = False
    if not usable:
        raise CredentialsError(f"AWS profile {profile!r}: the SSO login has expired or is invalid; {login}")


def live_model(
    model_id: str = MODEL_ID,
    region: str | None = None,
    *,
    client_config: Config | None = None,
    **config: Any,
) -> BedrockModel:
    """A streaming `BedrockModel` for `model_id` in the resolved region (constructing it is offline).

    Temperature defaults to 0 so that a re-recording differs from the last one only where the
    model really changed its answer. `client_config` (a `botocore.config.Config`) is merged over
    `CLIENT_CONFIG` with `ONE_ATTEMPT` (bounded timeouts, one attempt per call: the recorder's
    back-off is the only retry layer), so waits stay bounded unless the caller sets them. The endpoint follows
    boto3's own override, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`.
    """
    config.setdefault("temperature", 0.0)
    region = region or resolve_region()  # a profile that does not exist is a clear error here
    session = offline_session(region)
    base = CLIENT_CONFIG.merge(ONE_ATTEMPT)
    merged = base.merge(client_config) if client_config is not None else base
    return BedrockModel(boto_session=session, boto_client_config=merged, model_id=model_id, **config)


# botocore wraps the first response's errors; an event stream broken later raises urllib3's own.
_TIMEOUTS = (
    botocore.exceptions.ReadTimeoutError,
    botocore.exceptions.ConnectTimeoutError,
    urllib3.exceptions.TimeoutError,
)
_BROKEN_STREAM = (
    botocore.exceptions.ResponseStreamingError,
    botocore.exceptions.EventStreamError,
    urllib3.exceptions.HTTPError,
)


def retry_strategy(max_attempts: int = 3, initial_delay: int = 2, max_delay: int = 8) -> ModelRetryStrategy:
    """A fresh, bounded Strands retry strategy for throttling: pass it as `Agent(retry_strategy=...)`.

    Strands' default retries a throttled call six times over about two minutes; this one gives
    up after `max_attempts` calls, waiting `initial_delay`, then twice that, and so on, each wait
    capped at `max_delay` (2 s + 4 s by default). A new instance per agent: the strategy keeps state.
    It matters only for an agent run with no recorder around its model: under `record` and
    `score --mode live` the recorder retries every throttle itself, so the strategy never sees one.
    """
    return ModelRetryStrategy(max_attempts=max_attempts, initial_delay=initial_delay, max_delay=max_delay)


_FROM_BEDROCK = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, urllib3.exceptions.HTTPError)


def bedrock_failure(exc: BaseException) -> BaseException | None:
    """The error in `exc`'s chain that came from talking to Bedrock (botocore's), if any (for a clear message).

    Strands' `ModelThrottledException` alone says nothing of where it came from (every provider
    raises it): it counts only through the botocore error it was raised from.
    """
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, _FROM_BEDROCK):
            return link
        link = link.__cause__ or link.__context__
    return None


def describe_bedrock_error(exc: BaseException) -> str:
    """What went wrong talking to Bedrock, and the fix, without an account id or a key."""
    code = ""
    if isinstance(exc, botocore.exceptions.ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
    name = type(exc).__name__
    text = f"{code or name}: {scrub(exc)}"
    if "Throttl" in code or "Throttl" in name or "ModelNotReady" in name:
        fix = "Bedrock is throttling this account; wait and retry, or ask for a higher quota"
    elif "AccessDenied" in code or "AccessDenied" in name or "UnrecognizedClient" in code:
        fix = "enable access to the model in the Bedrock console for this region, and use a role allowed to invoke it"
    elif "ValidationException" in code or "ValidationException" in name:
        fix = "check the model id and the region (set AWS_REGION)"
    elif isinstance(exc, _TIMEOUTS):
        fix = "Bedrock did not answer in time; check the network, or try again later"
    elif isinstance(exc, botocore.exceptions.EndpointConnectionError | botocore.exceptions.ConnectionClosedError):
        fix = "Bedrock could not be reached; check the network, AWS_REGION and AWS_ENDPOINT_URL_BEDROCK_RUNTIME"
    elif isinstance(exc, _BROKEN_STREAM):
        fix = "the stream from Bedrock broke off; try again, and check the network"
    else:
        fix = "check the network, AWS_REGION and the model id, and try again"
    return f"{SERVICE} failed ({text}); {fix}"
