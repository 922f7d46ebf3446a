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


# A setting is left out of a cassette when a word of its name says it may hold a secret, or when its
# name says it is where the provider is reached (the endpoint is kept, as host:port, by `endpoint_host`).
SECRET_WORDS = frozenset(
    {"key", "apikey", "secret", "password", "passwd", "token", "credential", "credentials", "auth"}
    | {"authorization", "bearer", "cookie", "session", "signature", "headers"}
)
ENDPOINT_WORDS = frozenset({"url", "host", "endpoint", "uri"})


def model_settings(model: Any) -> dict[str, Any]:
    """The parameters the provider was configured with (`get_config()`), safe to write into a cassette.

    `model_id` is recorded apart. A setting is kept only when its value is plain JSON (text,
    numbers, true/false, null, lists and objects of them: a client object or a callable is not a
    setting a replay can compare) and no word of its name is a secret's (`SECRET_WORDS`: `api_key`,
    `aws_session_token`, ...) or an address's (`ENDPOINT_WORDS`: `base_url`, `host`). Words are split
    at `_`, `-` and case changes, so `max_tokens` is kept and `apiKey` is not; a text holding `://`
    (a URL, where tokens hide in queries) is left out too.
    """
    try:
        config = model.get_config()
    except Exception:  # a provider whose config cannot be read records no settings
        return {}
    if not isinstance(config, dict):
        config = getattr(config, "__dict__", {})
    return _plain({key: value for key, value in config.items() if key != "model_id"})


def _plain(value: Any) -> Any:
    """`value` with every secret, address, URL and non-JSON value left out (`_DROP` when nothing is left)."""
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            if not isinstance(key, str) or _name_words(key) & (SECRET_WORDS | ENDPOINT_WORDS):
                continue
            plain = _plain(item)
            if plain is not _DROP:
                kept[key] = plain
        return kept
    if isinstance(value, (list, tuple)):
        items = [_plain(item) for item in value]
        return [item for item in items if item is not _DROP]
    if isinstance(value, str):
        return _DROP if "://" in value else value
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else _DROP
    return _DROP


_DROP = object()


def _name_words(name: str) -> set[str]:
    spaced = "".join(f"_{char}" if char.isupper() else char for char in name)
    return {word.lower() for word in spaced.replace("-", "_").split("_") if word}


def setting_differences(recorded: dict[str, Any], given: dict[str, Any]) -> list[str]:
    """Each setting that differs, as `path: recorded X, given Y` (dotted paths for nested settings)."""
    lines: list[str] = []
    for key in list(recorded) + [key for key in given if key not in recorded]:
        old, new = recorded.get(key, _ABSENT), given.get(key, _ABSENT)
        if isinstance(old, dict) and isinstance(new, dict):
            lines += [f"{key}.{line}" for line in setting_differences(old, new)]
        elif old != new or isinstance(old, bool) != isinstance(new, bool):  # 0 and 0.0 are one temperature
            lines.append(f"{key}: recorded {_shown(old)}, given {_shown(new)}")
    return lines


_ABSENT = object()


def _shown(value: Any) -> str:
    import json

    return "nothing" if value is _ABSENT else json.dumps(value, ensure_ascii=False)


def model_differences(provenance: dict[str, Any], model: Any) -> list[str]:
    """How the model a replay is given differs from the one a cassette was recorded from, setting by setting.

    Empty when they agree. A cassette recorded before settings were kept is compared on its
    provider and model id only.
    """
    given = describe_model(model)
    lines = []
    for key in ("provider", "model_id"):
        if provenance.get(key) and given[key] and provenance[key] != given[key]:
            lines.append(f"{key}: recorded {provenance[key]}, given {given[key]}")
    if isinstance(provenance.get("settings"), dict):
        lines += setting_differences(provenance["settings"], model_settings(model))
    return lines


def exchange_source(exchange: Any) -> dict[str, Any]:
    """A replayed case's source for the saved run (`helpers.formats.run_info.CaseSource`): origin, model, usage."""
    from helpers.exchanges.usage import exchange_usage

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
