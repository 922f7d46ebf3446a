"""`send_once`: the provider's own client retries nothing, or the run is told it may.

Real Strands providers and real SDK clients: a BedrockModel's botocore client is pointed at the
local ConverseStream server, which answers every request with a 429 ThrottlingException and
counts the requests, so "retries off" is what the server saw, not an attribute read back.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.config import Config
from strands.models import BedrockModel, Model

from fieldeval.exchanges.client_retries import send_once
from tests.servers.bedrock import BedrockServer, bedrock_environment

THROTTLE = ("error", 429, "ThrottlingException", "Too many requests, please wait.")
STANDARD_3 = Config(retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=2, read_timeout=5)


@pytest.fixture
def bedrock(monkeypatch, no_aws_credentials, local_servers):
    with BedrockServer(default=THROTTLE) as server:
        for name, value in bedrock_environment(server.url).items():
            monkeypatch.setenv(name, value)
        yield server


def requests_for_one_call(model: BedrockModel, server: BedrockServer) -> int:
    """How many requests the server got for one converse_stream call the provider throttled."""
    server.requests.clear()
    with pytest.raises(Exception, match="ThrottlingException"):
        model.client.converse_stream(modelId="m", messages=[{"role": "user", "content": [{"text": "hi"}]}])
    return len(server.requests)


@pytest.mark.local_servers
def test_a_bedrock_models_botocore_client_sends_each_call_once(bedrock):
    retrying = BedrockModel(model_id="m", boto_client_config=STANDARD_3)
    assert requests_for_one_call(retrying, bedrock) == 3  # botocore's own retries, as the factory configured them
    model = BedrockModel(model_id="m", boto_client_config=STANDARD_3)
    assert send_once(model) is None
    assert requests_for_one_call(model, bedrock) == 1


@pytest.mark.local_servers
def test_a_bedrock_model_in_adaptive_mode_sends_once_and_says_the_client_still_paces_itself(bedrock):
    model = BedrockModel(model_id="m", boto_client_config=Config(retries={"mode": "adaptive", "max_attempts": 4}))
    said = send_once(model)
    assert said is not None and said.startswith("strands.models.bedrock.BedrockModel: its client may retry")
    assert "adaptive retry mode" in said
    assert requests_for_one_call(model, bedrock) == 1


def test_an_openai_model_builds_its_clients_with_no_retries_and_the_callers_dict_is_left_alone():
    pytest.importorskip("openai")
    from strands.models.openai import OpenAIModel

    given = {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-local", "max_retries": 5}
    model = OpenAIModel(client_args=given, model_id="m")
    assert send_once(model) is None
    assert model.client_args == {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-local", "max_retries": 0}
    assert given["max_retries"] == 5


def test_the_openai_responses_model_too():
    pytest.importorskip("openai")
    from strands.models.openai_responses import OpenAIResponsesModel

    model = OpenAIResponsesModel(client_args={"api_key": "sk-local"}, model_id="m")
    assert send_once(model) is None and model.client_args["max_retries"] == 0


def test_an_openai_model_handed_a_retrying_client_is_named_once_and_one_built_with_none_is_not():
    openai = pytest.importorskip("openai")
    from strands.models.openai import OpenAIModel

    retrying = OpenAIModel(client=openai.AsyncOpenAI(api_key="sk-local", max_retries=2), model_id="m")
    said = send_once(retrying)
    assert said is not None and said.startswith("strands.models.openai.OpenAIModel: its client may retry")
    assert "\n" not in said and "max_retries=0" in said
    quiet = OpenAIModel(client=openai.AsyncOpenAI(api_key="sk-local", max_retries=0), model_id="m")
    assert send_once(quiet) is None


class OwnModel(Model):
    """A provider of a user's own: the abstract methods, and whatever client it was given."""

    def __init__(self, client: Any = None) -> None:
        if client is not None:
            self.client = client

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    async def stream(self, *args: Any, **kwargs: Any) -> Any:
        yield {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        yield {}


def test_a_client_with_max_retries_and_with_options_is_replaced_by_its_copy_with_none():
    openai = pytest.importorskip("openai")
    client = openai.AsyncOpenAI(api_key="sk-local", max_retries=5)
    model = OwnModel(client)
    assert send_once(model) is None
    assert model.client is not client and model.client.max_retries == 0 and client.max_retries == 5


def test_a_client_it_cannot_reach_into_is_said_and_a_model_with_no_client_is_not():
    said = send_once(OwnModel(client=object()))
    assert said is not None and said.startswith(f"{__name__}.OwnModel: its client may retry throttled calls")
    assert send_once(OwnModel()) is None


def test_llama_cpp_talks_through_plain_httpx_which_does_not_retry():
    from strands.models.llamacpp import LlamaCppModel

    assert send_once(LlamaCppModel(base_url="http://127.0.0.1:9")) is None
