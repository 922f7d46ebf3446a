"""Provenance: the provider, the model id, and an endpoint only when it is not the provider's own (no credentials)."""

from types import SimpleNamespace

import pytest
from strands.models import BedrockModel

from fieldeval.exchanges.fixtures import Exchange
from fieldeval.exchanges.provenance import describe_model, endpoint_host, is_local


class Configured:
    def __init__(self, **config):
        self.config = config

    def get_config(self):
        return self.config


@pytest.mark.parametrize(
    ("model", "host"),
    [
        (
            SimpleNamespace(
                client=SimpleNamespace(
                    meta=SimpleNamespace(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")
                )
            ),
            None,
        ),
        (
            SimpleNamespace(client=SimpleNamespace(meta=SimpleNamespace(endpoint_url="http://127.0.0.1:8765"))),
            "127.0.0.1:8765",
        ),
        (
            SimpleNamespace(client_args={"base_url": "https://user:secret@llm.internal.example/v1?key=abc"}),
            "llm.internal.example",
        ),
        (SimpleNamespace(client_args={"base_url": "https://api.openai.com/v1"}), None),
        (Configured(host="http://localhost:11434"), "localhost:11434"),
        (SimpleNamespace(base_url="http://[::1]:8080"), "[::1]:8080"),
        (SimpleNamespace(), None),
    ],
)
def test_the_endpoint_is_the_host_only_and_only_when_it_is_not_the_providers_own(model, host):
    assert endpoint_host(model) == host


def test_a_default_bedrock_model_names_its_class_and_id_and_no_endpoint(no_aws_credentials, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    described = describe_model(BedrockModel(model_id="us.anthropic.claude-haiku-4-5-20251001-v1:0"))
    assert described == {
        "provider": "strands.models.bedrock.BedrockModel",
        "model_id": "us.anthropic.claude-haiku-4-5-20251001-v1:0",
        "endpoint": None,
    }


def test_loopback_hosts_are_local():
    assert is_local("127.0.0.1:8765") and is_local("localhost") and is_local("[::1]:80")
    assert not is_local("llm.internal.example") and not is_local(None)


def exchange(**provenance):
    base = {"model_id": "m", "hand_authored": False, "recorded": "2026-05-01T00:00:00+00:00", "note": "n"}
    return Exchange("cassettes/a.json", {**base, **provenance}, recorded_calls=[])


def test_describe_says_when_a_cassette_came_from_an_overridden_endpoint_or_a_stand_in():
    assert exchange().describe() == "cassettes/a.json: recorded from m at 2026-05-01T00:00:00+00:00."
    assert (
        "through llm.internal.example (a local or overridden endpoint)"
        in exchange(endpoint="llm.internal.example").describe()
    )
    stand_in = exchange(endpoint="127.0.0.1:8765", stand_in="answers from p.jsonl").describe()
    assert "recorded from a stand-in server at 127.0.0.1:8765 (answers from p.jsonl), not from a model" in stand_in
