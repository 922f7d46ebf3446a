"""Where a recording came from: the provider class, the model id, and any endpoint not the provider's own.

Read from the Strands `Model` the recorder was handed, never from credentials: the endpoint is
kept as `host[:port]` only (no user info, path or query, which is where tokens hide), and only
when it is not the provider's own service, so a cassette recorded against a local server or an
endpoint override says so.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from fieldeval.exchanges.secrets import carries_credential, name_hides

# Where an answer says it came from a stand-in (`messageStop.additionalModelResponseFields`); the
# recorder reads it. Kept here, not with the stand-in server, so recording never imports an HTTP server.
STAND_IN_FIELD = "standIn"
# Hosts that are the providers' own services; any other host is reported.
_OWN_HOSTS = ("amazonaws.com", "api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def provider_name(model: Any) -> str:
    """The provider as its import path, e.g. `strands.models.bedrock.BedrockModel`."""
    kind = type(model)
    return f"{kind.__module__}.{kind.__qualname__}"


def model_id(model: Any) -> str | None:
    """The model id the provider's config names, if any."""
    try:
        config = model.get_config()
    except Exception:  # a provider whose config cannot be read still records; it just has no id to show
        return None
    value = config.get("model_id") if isinstance(config, dict) else getattr(config, "model_id", None)
    return str(value) if value else None


def endpoint_host(model: Any) -> str | None:
    """`host[:port]` of the endpoint the provider talks to, when it is not the provider's own service."""
    url = _endpoint_url(model)
    if not url:
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = parts.hostname or ""
    if not host or any(host == own or host.endswith("." + own) for own in _OWN_HOSTS):
        return None
    try:
        port = parts.port
    except ValueError:
        port = None
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port else shown


def is_local(endpoint: str | None) -> bool:
    """Whether `endpoint` (as `endpoint_host` gives it) is this machine."""
    if not endpoint:
        return False
    host = urlsplit(f"http://{endpoint}").hostname or ""
    return host in LOOPBACK


def describe_model(model: Any) -> dict[str, Any]:
    """`provider`, `model_id` and `endpoint` for a cassette's provenance."""
    return {"provider": provider_name(model), "model_id": model_id(model), "endpoint": endpoint_host(model)}


def _endpoint_url(model: Any) -> str | None:
    """The URL the provider sends to: a boto3 client's endpoint, an OpenAI-style base_url, or a host setting."""
    client = getattr(model, "client", None)
    meta = getattr(client, "meta", None)
    if meta is not None and getattr(meta, "endpoint_url", None):
        return str(meta.endpoint_url)
    client_args = getattr(model, "client_args", None)
    if isinstance(client_args, dict) and client_args.get("base_url"):
        return str(client_args["base_url"])
    if type(model).__name__ == "OpenAIModel" and os.environ.get("OPENAI_BASE_URL"):
        return os.environ["OPENAI_BASE_URL"]
    for name in ("base_url", "host"):
        value = getattr(model, name, None)
        if isinstance(value, str) and value:
            return value
    try:
        config = model.get_config()
    except Exception:
        return None
    if isinstance(config, dict):
        for name in ("host", "base_url"):
            if isinstance(config.get(name), str) and config[name]:
                return config[name]
    return None


def describe_origins(exchanges: Any) -> str:
    """Where the replayed cassettes came from, when not all from a model's own service: hand, stand-in, endpoint."""
    exchanges = list(exchanges)
    notes = []
    hand = sum(exchange.hand_authored for exchange in exchanges)
    if hand:
        notes.append(f"{hand} of them hand-authored")
    stand_in = sum(bool(exchange.stand_in) and not exchange.hand_authored for exchange in exchanges)
    if stand_in:
        notes.append(f"{stand_in} answered by a stand-in server, not a model")
    endpoints = sorted({exchange.endpoint for exchange in exchanges if exchange.endpoint})
    if endpoints:
        through = sum(bool(exchange.endpoint) for exchange in exchanges)
        notes.append(f"{through} recorded through {', '.join(endpoints)} (a local or overridden endpoint)")
    return "".join(f", {note}" for note in notes)


def model_settings(model: Any) -> dict[str, Any]:
    """The parameters the provider was configured with (`get_config()`), safe to write into a cassette.

    `model_id` is recorded apart. A setting is kept only when its value is plain JSON (text,
    numbers, true/false, null, lists and objects of them: a client object or a callable is not a
    setting a replay can compare) and its name marks no secret or address; a text that carries a
    credential or an address by its shape is left out wherever it stands, under any name
    (`fieldeval.exchanges.secrets`: `api_key`, `HF_TOKEN`, `X_API_KEY` inside Bedrock's
    `additional_request_fields`, `base_url`, a `"Bearer ..."` or a `user:pass@host`). Only
    `MAX_DEPTH` levels of objects and lists are walked, the config being the first: what lies
    deeper, and an object that contains itself, is left out, so a deep or cyclic config is
    recorded in part instead of failing.
    """
    try:
        config = model.get_config()
    except Exception:  # a provider whose config cannot be read records no settings
        return {}
    if not isinstance(config, dict):
        config = getattr(config, "__dict__", {})
    kept = _plain(config)
    if not isinstance(kept, dict):
        return {}
    kept.pop("model_id", None)
    return kept


# How many levels of objects and lists are walked, the config being the first (a JSON schema in OpenAI's
# `response_format` needs about ten); deeper parts are left out of the settings.
MAX_DEPTH = 24


def _plain(value: Any, depth: int = 0, path: tuple[int, ...] = ()) -> Any:
    """`value` with every secret, address, credential-shaped text and non-JSON value left out (`_DROP` when
    nothing is left). `path` holds the ids of the objects and lists above, so a cycle ends where it repeats."""
    if isinstance(value, (dict, list, tuple)):
        if depth >= MAX_DEPTH or id(value) in path:
            return _DROP
        path = (*path, id(value))
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            if not isinstance(key, str) or name_hides(key, item) or carries_credential(key):
                continue
            plain = _plain(item, depth + 1, path)
            if plain is not _DROP:
                kept[key] = plain
        return kept
    if isinstance(value, (list, tuple)):
        items = [_plain(item, depth + 1, path) for item in value]
        return [item for item in items if item is not _DROP]
    if isinstance(value, str):
        return _DROP if carries_credential(value) else value
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else _DROP
    return _DROP


_DROP = object()


def setting_differences(recorded: dict[str, Any], given: dict[str, Any], path: tuple[str, ...] = ()) -> list[str]:
    """Each setting that differs, as `path: recorded X, given Y` (dotted paths for nested settings).

    A value is shown only when it is plainly safe: when it passes, at its path, the rule a setting
    must pass to be written (`model_settings`). A cassette written before that rule may hold a
    secret in its settings; such a value is named by its path and never printed.
    """
    lines: list[str] = []
    for key in list(recorded) + [key for key in given if key not in recorded]:
        old, new = recorded.get(key, _ABSENT), given.get(key, _ABSENT)
        if isinstance(old, dict) and isinstance(new, dict):
            lines += [f"{key}.{line}" for line in setting_differences(old, new, (*path, key))]
        elif old != new or isinstance(old, bool) != isinstance(new, bool):  # 0 and 0.0 are one temperature
            at = (*path, key)
            lines.append(f"{key}: recorded {_shown(at, old)}, given {_shown(at, new)}")
    return lines


_ABSENT = object()


def _shown(path: tuple[str, ...], value: Any) -> str:
    """`value` as JSON when it is plainly safe at `path`; otherwise words that say it is not shown."""
    import json

    if value is _ABSENT:
        return "nothing"
    wrapped = value
    for key in reversed(path):
        wrapped = {key: wrapped}
    if _plain(wrapped) != wrapped:
        return "a value not shown (it may hold a secret)"
    return json.dumps(value, ensure_ascii=False)


def model_differences(provenance: dict[str, Any], model: Any) -> list[str]:
    """How the model a replay is given differs from the one a cassette was recorded from, setting by setting.

    Empty when they agree. A cassette recorded before settings were kept is compared on its
    provider and model id only. The recorded settings are read through the rule that writes them
    today, so a setting an older recorder wrote and this one leaves out (a secret it missed) is
    neither compared nor shown.
    """
    given = describe_model(model)
    lines = []
    for key in ("provider", "model_id"):
        if provenance.get(key) and given[key] and provenance[key] != given[key]:
            lines.append(f"{key}: recorded {provenance[key]}, given {given[key]}")
    if isinstance(provenance.get("settings"), dict):
        recorded = _plain(provenance["settings"])
        lines += setting_differences(recorded if isinstance(recorded, dict) else {}, model_settings(model))
    return lines


def exchange_source(exchange: Any) -> dict[str, Any]:
    """A replayed case's source for the saved run (`fieldeval.formats.run_info.CaseSource`): origin, model, usage."""
    from fieldeval.exchanges.usage import exchange_usage

    origin = "hand-authored" if exchange.hand_authored else "stand-in" if exchange.stand_in else "model"
    return {
        "origin": origin,
        "provider": exchange.provenance.get("provider"),
        "model_id": exchange.provenance.get("model_id"),
        "endpoint": exchange.endpoint,
        "file": exchange.label,
        "usage": exchange_usage(exchange).to_json(),
    }


def live_source(model: Any, usage: Any) -> dict[str, Any]:
    """A case scored live: the model it was called on and what its calls cost (wall time included)."""
    described = describe_model(model)
    return {"origin": "model", **described, "usage": usage.to_json()}
