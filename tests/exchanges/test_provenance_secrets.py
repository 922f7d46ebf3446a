"""No secret in a model's settings reaches a cassette or a printed difference, whatever it is called or hidden in.

The names and values here are written as an outsider would try them: every case of spelling
(`API_KEY`, `apiKey`, `XApiKey`, `api-key`, `apikey`), nested where a provider nests them, and
credentials under innocent names. Each test also holds ordinary settings that must be kept, so
that "leave everything out" fails as surely as "leave a secret in".
"""

import random
import string
import typing

import pytest
from strands.models import BedrockModel

from fieldeval.exchanges.provenance import MAX_DEPTH, model_differences, model_settings, setting_differences
from fieldeval.exchanges.recording import describe_changes


class Configured:
    def __init__(self, config):
        self.config = config

    def get_config(self):
        return self.config


ORDINARY = {
    "temperature": 0.2,
    "top_p": 0.9,
    "topK": 40,
    "max_tokens": 2048,
    "maxTokens": 2048,
    "max_completion_tokens": 512,
    "stop_token_ids": [128001, 128009],
    "seed": 7,
    "streaming": True,
    "cache_prompt": None,
    "keep_alive": "5m",
    "include_tool_result_status": "auto",
    "stop_sequences": ["</answer>", "\n\nHuman:", "Observation:"],
    "reasoning_effort": "high",
    "response_format": {"type": "json_schema", "json_schema": {"name": "PurchaseOrder", "strict": True}},
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "guardrail_version": "DRAFT",
    "user": "team-invoices",
}
PLANTED = "hunter2-not-for-files"  # a value no shape rule catches: only the name can leave it out


def words_spelled_every_way(words: list[str]) -> list[str]:
    """One name in every spelling a config meets: SNAKE, snake, camel, Pascal, kebab, Train, glued, dotted."""
    return [
        "_".join(words).upper(),
        "_".join(words),
        words[0] + "".join(word.title() for word in words[1:]),
        "".join(word.title() for word in words),
        "-".join(words),
        "-".join(word.title() for word in words),
        "".join(words),
        "".join(words).upper(),
        ".".join(words),
    ]


SECRET_NAMES = [
    name
    for words in (
        ["api", "key"],
        ["x", "api", "key"],
        ["hf", "token"],
        ["openai", "api", "key"],
        ["aws", "secret", "access", "key"],
        ["aws", "session", "token"],
        ["access", "token"],
        ["refresh", "token"],
        ["id", "token"],
        ["client", "secret"],
        ["private", "key"],
        ["signing", "key"],
        ["db", "password"],
        ["db", "pass"],
        ["passphrase"],
        ["pwd"],
        ["jwt"],
        ["sig"],
        ["auth"],
        ["authorization"],
        ["bearer"],
        ["set", "cookie"],
        ["session", "id"],
        ["tls", "cert"],
        ["credentials"],
        ["creds"],
        ["my", "credz"],
        ["otp"],
        ["pin"],
        ["webhook", "secret"],
        ["subscription", "key"],
        ["extra", "headers"],
        ["ssh", "key", "path"],
        ["slack", "bot", "token"],
    )
    for name in words_spelled_every_way(words)
] + ["ＡＰＩ＿ＫＥＹ", "api\u200bkey", "OAuth2Token", "getAPIKey", "HTTPAuthorization", "KEYS", "Passwords"]
SECRET_NAMES += ["x-amz-security-token", "STRIPE_SK", "stripeSk", "stripe-sk"]  # a short word counts on its own only
ADDRESS_NAMES = [
    name
    for words in (["base", "url"], ["endpoint", "url"], ["https", "proxy"], ["sentry", "dsn"], ["host"], ["webhook"])
    for name in words_spelled_every_way(words)
]


def test_a_secret_is_left_out_whatever_the_case_spelling_or_gluing_of_its_name():
    config = {"model_id": "m", **ORDINARY, **dict.fromkeys(SECRET_NAMES, PLANTED)}
    assert model_settings(Configured(config)) == ORDINARY


def test_an_address_is_left_out_whatever_the_spelling_of_its_name():
    config = {**ORDINARY, **dict.fromkeys(ADDRESS_NAMES, "llm.internal.example")}
    assert model_settings(Configured(config)) == ORDINARY


def test_a_secret_nested_where_a_provider_nests_settings_is_left_out(no_aws_credentials, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    model = BedrockModel(
        model_id="anthropic.claude-3-5-sonnet-20240620-v1:0",
        temperature=0.0,
        stop_sequences=["</answer>"],
        additional_request_fields={
            "X_API_KEY": PLANTED,
            "HF_TOKEN": PLANTED,
            "inferenceConfig": {"topK": 50, "apiKey": PLANTED},
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "tools": [{"name": "lookup", "authToken": PLANTED}],
        },
    )
    settings = model_settings(model)
    assert PLANTED not in repr(settings)
    assert settings["additional_request_fields"] == {
        "inferenceConfig": {"topK": 50},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "tools": [{"name": "lookup"}],
    }
    assert settings["temperature"] == 0.0 and settings["stop_sequences"] == ["</answer>"]


def random_keys(seed: int) -> list[str]:
    """Random keys as services issue them: base64, URL-safe, hex, capitals and digits, with and without a prefix."""
    rng = random.Random(seed)
    alphabets = [
        string.ascii_letters + string.digits + "+/",
        string.ascii_letters + string.digits + "-_",
        string.hexdigits[:16],
        string.ascii_uppercase + string.digits,
        string.ascii_lowercase + string.digits,
    ]
    keys = [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(32, 64))) for alphabet in alphabets for _ in range(40)
    ]
    return keys + [
        prefix + key[:40] for prefix in ("sk-", "sk-ant-api03-", "ghp_", "glpat-", "xoxb-1-") for key in keys[:5]
    ]


CREDENTIAL_VALUES = [
    "Bearer abc.def",
    "bearer abc123",
    "Basic dXNlcjpwYXNz",
    "Digest username=alice",
    "alice:hunter2@db.internal:5432",
    "postgres://alice:hunter2@db.internal/orders",
    "https://llm.internal.example/v1?sig=abc",
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    "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",
    "password=hunter2",
    "X-Api-Key: 0123abcd",
    "Authorization: Token 0123abcd",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
    "use key sk-live-4eC39HqLyjWDarjtT1zdp7dc please",
    *random_keys(43),
]


def test_a_value_that_carries_a_credential_is_left_out_whatever_the_setting_is_called():
    config = {"temperature": 0.2, "stop_sequences": ["</answer>"]}
    config |= {f"note_{number}": value for number, value in enumerate(CREDENTIAL_VALUES)}
    config["labels"] = ["invoice", *CREDENTIAL_VALUES]
    config["extra"] = {"nested": {"deeper": CREDENTIAL_VALUES[:3]}}
    settings = model_settings(Configured(config))
    kept = {"temperature": 0.2, "stop_sequences": ["</answer>"], "labels": ["invoice"]}
    assert settings == {**kept, "extra": {"nested": {"deeper": []}}}


MODEL_IDS = [
    "anthropic.claude-3-5-sonnet-20240620-v1:0",
    "us.amazon.nova-lite-v1:0",
    "us.anthropic.claude-haiku-4-5-20251001-v1:0",
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0",
    "gpt-4o-mini-2024-07-18",
    "ft:gpt-4o-mini-2024-07-18:my-org:custom-suffix:9abcDEF1",
    "meta-llama/Meta-Llama-3.1-8B-Instruct",
    "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    "HuggingFaceH4/zephyr-7b-beta",
    "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M",
    "llama3.2:3b-instruct-q4_K_M",
    "accounts/fireworks/models/llama-v3p1-70b-instruct",
]


def test_model_names_from_a_library_the_rule_was_not_written_from_are_kept_beside_dropped_keys():
    openai = pytest.importorskip("openai")
    names = [*MODEL_IDS, *typing.get_args(openai.types.shared.ChatModel)]  # every chat model the client knows
    config = {"fallbacks": [*names, *random_keys(7)]}
    assert model_settings(Configured(config)) == {"fallbacks": names}


def test_a_deep_or_cyclic_config_is_recorded_in_part_instead_of_failing():
    cyclic: dict = {"temperature": 0.3, "params": {"top_p": 0.5}}
    cyclic["params"]["again"] = cyclic
    loop: list = ["</answer>"]
    loop.append(loop)
    cyclic["stop_sequences"] = loop
    kept = {"temperature": 0.3, "params": {"top_p": 0.5}, "stop_sequences": ["</answer>"]}
    assert model_settings(Configured(cyclic)) == kept
    deep = level = {}
    for _ in range(50_000):  # far below the interpreter's recursion limit if walked without a bound
        level["next"] = level = {}
    settings = model_settings(Configured({"temperature": 0.3, "deep": deep}))
    assert settings["temperature"] == 0.3
    depth, level = 0, settings["deep"]
    while level:
        depth, level = depth + 1, level["next"]
    assert depth < MAX_DEPTH  # the deeper part is left out


def test_a_difference_line_never_prints_a_value_the_rule_would_not_write():
    """A cassette written by an older recorder may hold a secret in its settings; a review never prints it."""
    token = "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"
    settings = {"HF_TOKEN": token, "temperature": 0.0, "label": "Bearer abc123", "params": {"apiKey": PLANTED}}
    old = {"format": 2, "provenance": {"settings": settings}, "calls": []}
    new = {"format": 2, "provenance": {"settings": {"temperature": 0.5, "label": "plain", "params": {}}}, "calls": []}
    lines = describe_changes(old, new)
    printed = "\n".join(lines)
    for secret in (token, "abc123", PLANTED):
        assert secret not in printed
    assert "provenance.settings.HF_TOKEN: recorded a value not shown (it may hold a secret), given nothing" in lines
    assert (
        "provenance.settings.params.apiKey: recorded a value not shown (it may hold a secret), given nothing" in lines
    )
    assert 'provenance.settings.label: recorded a value not shown (it may hold a secret), given "plain"' in lines
    assert "provenance.settings.temperature: recorded 0.0, given 0.5" in lines  # a plain value is still shown


def test_a_replay_compares_and_shows_only_settings_the_rule_keeps():
    """An old cassette's secret setting is neither a reason to refuse nor printed; a real change still is."""
    recorded = {"model_id": "m", "settings": {"HF_TOKEN": "hf_old" + "x" * 30,
                "Authorization": "Bearer abc123", "temperature": 0.0}}  # fmt: skip
    given = Configured({"model_id": "m", "HF_TOKEN": "hf_new" + "y" * 30, "Authorization": "Bearer def456",
                        "temperature": 0.7})  # fmt: skip
    assert model_differences(recorded, given) == ["temperature: recorded 0.0, given 0.7"]


def test_a_shown_difference_is_only_what_passed_the_rule_at_its_path():
    lines = setting_differences({"a": {"password": "x1"}, "stop": ["sk-live-4eC39HqLyjWDarjtT1zdp7dc"]},
                                {"a": {}, "stop": ["</answer>"]})  # fmt: skip
    assert lines == [
        "a.password: recorded a value not shown (it may hold a secret), given nothing",
        'stop: recorded a value not shown (it may hold a secret), given ["</answer>"]',
    ]
