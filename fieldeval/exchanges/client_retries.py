"""One layer of retries: the provider's own client sends each call once, so the run's back-off sees every throttle.

The SDK clients under Strands' providers retry on their own (the openai client twice, botocore up
to two or four times, each with sleeps of its own). Under the run's shared back-off
(`fieldeval.exchanges.throttle`) those retries stack: one call can become many requests, a throttle
the client retried is neither counted nor paced with the other cases in flight, and its sleeps
are not cut short by Ctrl-C or by the run giving up. `send_once(model)` turns them off where
Strands exposes the client, before the run's first call:

- `OpenAIModel` and `OpenAIResponsesModel` build an openai client from `client_args` for every
  request: `max_retries` is set to 0 there;
- a model whose `client` is a botocore client (`BedrockModel`): botocore's retry handler is taken
  off the client;
- a model whose `client` is an SDK client with `max_retries` and `with_options`, as the openai and
  anthropic SDKs make them (`AnthropicModel`): the client is replaced by its own copy with
  `max_retries=0`;
- `LlamaCppModel` talks through a plain httpx client, which does not retry.

For any other provider it returns the one line the run prints, saying that its client may retry
on its own (an OpenAI model handed a ready-made client, a botocore client in adaptive mode, which
also slows calls down itself, Ollama, Mistral, Gemini, LiteLLM, a provider of your own that has
a client). The model is changed in place: it is the one the run's factory built for this run.
"""

from __future__ import annotations

from typing import Any

from fieldeval.exchanges.provenance import provider_name

# Providers that build an openai client from `client_args` for each request.
OPENAI_CLIENT_ARGS = ("strands.models.openai.OpenAIModel", "strands.models.openai_responses.OpenAIResponsesModel")
# Providers whose client makes no retries of its own.
SENDS_ONCE = ("strands.models.llamacpp.LlamaCppModel",)


def send_once(model: Any) -> str | None:
    """Turn off the own retries of `model`'s client; None when done (or none), else the line saying it may retry.

    See the module docstring for what is turned off for which provider.
    """
    kinds = _kinds(model)
    if kinds & set(SENDS_ONCE):
        return None
    if kinds & set(OPENAI_CLIENT_ARGS):
        given = getattr(model, "_custom_client", None)  # OpenAIModel(client=...): the caller's own client
        if given is None:
            model.client_args = {**(getattr(model, "client_args", None) or {}), "max_retries": 0}
            return None
        if getattr(given, "max_retries", None) == 0:
            return None
        return _may_retry(model, "it was given a ready-made client; build it with max_retries=0, or pass client_args")
    client: Any = getattr(model, "client", None)
    if _is_botocore(client):
        return _botocore_once(model, client)
    if isinstance(getattr(client, "max_retries", None), int) and callable(getattr(client, "with_options", None)):
        if client.max_retries != 0:
            model.client = client.with_options(max_retries=0)
        return None
    if client is not None or any(kind.startswith("strands.models.") for kind in kinds - {"strands.models.model.Model"}):
        return _may_retry(model, "this project cannot turn its retries off")
    return None


def _kinds(model: Any) -> set[str]:
    """The import paths of the model's class and every class it derives from."""
    return {f"{kind.__module__}.{kind.__qualname__}" for kind in type(model).__mro__}


def _is_botocore(client: Any) -> bool:
    meta = getattr(client, "meta", None)
    return hasattr(meta, "events") and hasattr(meta, "service_model") and hasattr(meta, "config")


def _botocore_once(model: Any, client: Any) -> str | None:
    """Take botocore's retry handler off the client (the one it registered under its own unique id)."""
    retries = getattr(client.meta.config, "retries", None) or {}
    name = client.meta.service_model.service_id.hyphenize()
    client.meta.events.unregister(f"needs-retry.{name}", unique_id=f"retry-config-{name}")
    if retries.get("mode") == "adaptive":
        return _may_retry(model, "its botocore client is in adaptive retry mode, which also delays calls itself")
    return None


def _may_retry(model: Any, why: str) -> str:
    return (
        f"{provider_name(model)}: its client may retry throttled calls on its own ({why}); "
        "those retries are not counted, paced with the other cases, or cut short by Ctrl-C."
    )
