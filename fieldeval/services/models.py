"""The live model `record` and `score --mode live` talk to: the user's factory, or Bedrock by default.

`--model module:function` names a function that takes no arguments and returns any Strands
`Model` (`OpenAIModel`, `AnthropicModel`, `LiteLLMModel`, `OllamaModel`, `LlamaCppModel`, a
`BedrockModel` of your own, ...). The function reads its own settings (API keys, base URLs) the
way that provider does, usually from the environment; nothing here sees them. Without
`--model`, the model is `fieldeval.services.bedrock.live_model`, after the offline credentials check,
whose client sends each call once. Whichever it is, the run then turns the client's own retries
off where Strands exposes the client (`fieldeval.exchanges.client_retries`), so that the run's
shared back-off is the only layer of retries.
"""

from __future__ import annotations

from typing import Any

from strands.models import Model

from fieldeval.errors import EvalError
from fieldeval.exchanges.provenance import describe_model, is_local
from fieldeval.harness.schema import SchemaError, import_object


class ModelFactoryError(EvalError, ValueError):
    """The `--model` factory does not load, raises, or returns something that is not a Strands Model."""


def model_from_factory(spec: str) -> Model:
    """Call the factory `spec` names and check it returned a Strands `Model`.

    Raises:
        ModelFactoryError: naming the option, the spec and the fix.
    """
    try:
        factory = import_object(spec, option="--model")
    except SchemaError as exc:
        raise ModelFactoryError(str(exc)) from exc
    if not callable(factory) or (isinstance(factory, type) and not issubclass(factory, Model)):
        raise ModelFactoryError(
            f"--model {spec!r} is a {type(factory).__name__}; name a function that returns a Strands Model"
        )
    try:
        model = factory()
    except Exception as exc:  # a missing package, a missing API key: the provider's own message says which
        raise ModelFactoryError(
            f"--model {spec!r} raised {type(exc).__name__}: {exc}; fix the factory or the settings it reads"
        ) from exc
    if not isinstance(model, Model):
        raise ModelFactoryError(
            f"--model {spec!r} returned a {type(model).__name__}, not a Strands Model (strands.models.Model); "
            "return the provider, for example OpenAIModel(model_id=...)"
        )
    return model


def bedrock_model(model_id: str | None, region: str | None) -> tuple[Model, str]:
    """The default live model after the offline credentials check, and the region it runs in.

    Raises:
        CredentialsError: If no AWS credentials resolve (or any reason boto3 refuses the session).
    """
    from fieldeval.services.bedrock import MODEL_ID, check_credentials, live_model, resolve_region

    check_credentials()
    region = region or resolve_region()
    return live_model(model_id=model_id or MODEL_ID, region=region), region


def describe_live(model: Any) -> str:
    """One line naming the provider, the model id and, when it is not the provider's own, the endpoint."""
    described = describe_model(model)
    line = f"{described['provider'].rsplit('.', 1)[-1]} {described['model_id'] or '(no model id)'}"
    endpoint = described["endpoint"]
    if endpoint:
        kind = "a local endpoint" if is_local(endpoint) else "an overridden endpoint"
        line += f" at {endpoint} ({kind}, not the provider's own service)"
    return line
