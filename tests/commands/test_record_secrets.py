"""No secret of a model's config reaches a cassette written by `record`, nor a line printed by `score` or `record`.

`record` runs as a user runs it, with a `--model` factory of the project's own: against the
bundled Bedrock stand-in through the real `BedrockModel` and boto3, and against the local
OpenAI-compatible server through Strands' `OpenAIModel` and the openai client. The factories put
secrets where configs hold them (Bedrock's `additional_request_fields`, OpenAI's `extra_body`)
under names and values an older recorder kept. A replay's refusal and a re-record's review are
read for a secret an older recorder wrote into a cassette already on disk. A factory whose config
is cyclic or deep records and replays.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from fieldeval.commands import record, score, stand_in
from tests.commands.streams import outcome, streams
from tests.commands.test_score_command import (
    DOCUMENTS,
    TASK_RUN,
    TRUTH,
    StandInProvider,
    make_project,
    replay_args,
    run_score,
)
from tests.sample_project import sample_project
from tests.servers.openai import OpenAIServer
from tests.servers.orders import OrderAnswers

SAMPLE = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl", "--task", "extract:task"]
PLANTED = ["plant-one-9f", "plant-two-9f", "plant-three-9f", "plant-four-9f", "plant-five-9f", "plant-six-9f"]

BEDROCK_FACTORY = f"""
import os

import boto3
from botocore.config import Config
from strands.models import BedrockModel


def model():
    session = boto3.Session(aws_access_key_id="stand-in", aws_secret_access_key="stand-in", region_name="us-east-1")
    return BedrockModel(
        boto_session=session,
        boto_client_config=Config(connect_timeout=2, read_timeout=10, retries={{"total_max_attempts": 1}}),
        endpoint_url=os.environ["{stand_in.URL_VARIABLE}"],
        model_id="anthropic.claude-3-5-sonnet-20240620-v1:0",
        temperature=0.0,
        max_tokens=1024,
        stop_sequences=["</answer>"],
        additional_request_fields={{
            "X_API_KEY": "{PLANTED[0]}",
            "HF_TOKEN": "{PLANTED[1]}",
            "trace": "Bearer {PLANTED[2]}",
            "upstream": "svc:{PLANTED[3]}@10.0.0.5:8443",
            "inferenceConfig": {{"topK": 50, "apiKey": "{PLANTED[4]}"}},
            "labels": ["orders", "AKIA{PLANTED[5].upper().replace("-", "")}XXXXXX"],
        }},
    )
"""

OPENAI_FACTORY = f"""
import os

from strands.models.openai import OpenAIModel


def model():
    client_args = {{"base_url": os.environ["LOCAL_OPENAI_URL"], "api_key": "sk-local", "timeout": 5, "max_retries": 0}}
    params = {{
        "temperature": 0,
        "max_tokens": 300,
        "user": "Bearer {PLANTED[0]}",
        "extra_body": {{"HF_TOKEN": "{PLANTED[1]}", "passphrase": "{PLANTED[2]}", "route": "me:{PLANTED[3]}@db:5432"}},
        "extra_headers": {{"X-Api-Key": "{PLANTED[4]}"}},
        "metadata": {{"hfToken": "{PLANTED[5]}", "team": "orders"}},
    }}
    return OpenAIModel(client_args=client_args, model_id="llama-3.2-local", params=params)
"""


def cassette_texts(folder: Path) -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.json"))}


def planted_in(text: str) -> list[str]:
    """The planted secrets found in `text`, in any case and with or without their dashes."""
    folded = text.lower().replace("-", "")
    return [secret for secret in PLANTED if secret.replace("-", "") in folded]


@pytest.mark.local_servers
def test_a_record_run_against_the_bundled_stand_in_writes_no_secret_of_the_config(tmp_path, monkeypatch):
    project = sample_project(tmp_path, monkeypatch, BEDROCK_FACTORY)
    args = ["--predictions", "predictions_v2.jsonl", "--tool-calls", "baseline_tool_calls.jsonl", "--port", "0"]
    with stand_in.build(stand_in.build_parser().parse_args([*SAMPLE[:4], *args])) as server:
        monkeypatch.setenv(stand_in.URL_VARIABLE, server.url)
        code, printed = outcome(record.main, [*SAMPLE, "--cassettes", "cassettes", "--model", "models:model"])
    assert code == 0, printed
    written = cassette_texts(project / "cassettes")
    assert len(written) == 5
    for name, text in written.items():
        assert planted_in(text) == [], name
        settings = json.loads(text)["provenance"]["settings"]
        assert settings["temperature"] == 0.0 and settings["stop_sequences"] == ["</answer>"]
        assert settings["additional_request_fields"] == {"inferenceConfig": {"topK": 50}, "labels": ["orders"]}
    assert planted_in(printed) == []


@pytest.mark.local_servers
def test_a_record_run_against_an_openai_compatible_server_writes_no_secret_of_the_config(tmp_path, monkeypatch):
    pytest.importorskip("openai")
    project = sample_project(tmp_path, monkeypatch, OPENAI_FACTORY)
    answers = OrderAnswers()
    with OpenAIServer(answer=answers.openai_answer) as server:
        monkeypatch.setenv("LOCAL_OPENAI_URL", server.url + "/v1")
        code, printed = outcome(record.main, [*SAMPLE, "--cassettes", "cassettes", "--model", "models:model"])
    assert code == 0, printed
    assert server.requests[0]["body"]["HF_TOKEN"] == PLANTED[1]  # the secret went where it was meant to
    written = cassette_texts(project / "cassettes")
    assert len(written) == 5
    for name, text in written.items():
        assert planted_in(text) == [], name
        params = json.loads(text)["provenance"]["settings"]["params"]
        assert params == {"temperature": 0, "max_tokens": 300, "extra_body": {}, "metadata": {"team": "orders"}}


class Configured(StandInProvider):
    """The in-process stand-in provider with the config a test's factory gives it."""

    def __init__(self, config):
        super().__init__({DOCUMENTS[name]: payload for name, payload in TRUTH.items()})
        self.config = config
        config.setdefault("model_id", "stand-in")

    def get_config(self):
        return self.config


def write_factory(project: Path, body: str) -> None:
    """The project's `po_models.py`, whose `model()` runs `body` (which sets `config`), its old bytecode removed."""
    source = "from tests.commands.test_record_secrets import Configured\n\n\ndef model():\n"
    source += "".join(f"    {line}\n" for line in body.strip().splitlines()) + "    return Configured(config)\n"
    (project / "po_models.py").write_text(source, encoding="utf-8")
    shutil.rmtree(project / "__pycache__", ignore_errors=True)
    sys.modules.pop("po_models", None)


def record_with_factory(*argv: str) -> tuple[int, str]:
    return outcome(record.main, [*TASK_RUN, "--model", "po_models:model", *argv])


def both_streams(main, argv: list[str]) -> tuple[int, str]:
    """The exit code and everything the command printed, on either stream."""
    code, out, err = streams(main, argv)
    return code, out + err


# What an older recorder wrote into `provenance.settings` from such a config (it kept these names), with
# the secrets since rotated: the factory now gives other values for them.
OLD_SETTINGS = {
    "HF_TOKEN": f"hf_old{PLANTED[0]}",
    "OPENAI_API_KEY": f"sk-old{PLANTED[1]}",
    "params": {"temperature": 0.0, "X_API_KEY": f"old{PLANTED[2]}", "passphrase": f"old{PLANTED[3]}"},
    "route": f"svc:old{PLANTED[4]}@10.0.0.5:8443",
    "trace": f"Bearer old{PLANTED[5]}",
}
SECRET_CONFIG = """
config = {
    "HF_TOKEN": "hf_new%s",
    "OPENAI_API_KEY": "sk-new%s",
    "params": {"temperature": %s, "X_API_KEY": "new%s", "passphrase": "new%s"},
    "route": "svc:new%s@10.0.0.5:8443",
    "trace": "Bearer new%s",
}
"""


def secret_config(temperature: float) -> str:
    return SECRET_CONFIG % (PLANTED[0], PLANTED[1], temperature, *PLANTED[2:])


@pytest.fixture
def project(tmp_path, monkeypatch):
    return make_project(tmp_path, monkeypatch)


def test_a_refusal_and_a_rerecord_never_print_a_secret_an_older_recorder_wrote(project):
    write_factory(project, secret_config(0.0))
    assert record_with_factory()[0] == 0
    for path in (project / "cassettes").glob("*.json"):  # as an older recorder left them on disk
        data = json.loads(path.read_text(encoding="utf-8"))
        data["provenance"]["settings"] = OLD_SETTINGS
        path.write_text(json.dumps(data), encoding="utf-8")
    code, printed = both_streams(score.main, replay_args("run.json", "--model", "po_models:model"))
    assert planted_in(printed) == []
    assert code == 0, printed  # the rotated secrets are neither compared nor shown: nothing else changed
    write_factory(project, secret_config(0.9))
    code, printed = both_streams(score.main, replay_args("run2.json", "--model", "po_models:model"))
    assert planted_in(printed) == []
    assert code == 2
    assert "3 cases (po-1, po-2, po-3): the model differs: params.temperature: recorded 0.0, given 0.9." in printed
    code, printed = both_streams(record.main, [*TASK_RUN, "--model", "po_models:model", "--record-mode", "stale"])
    assert planted_in(printed) == []
    assert code == 0 and "0 up to date, 3 stale" in printed, printed
    assert "provenance.settings.HF_TOKEN: recorded a value not shown (it may hold a secret), given nothing" in printed
    assert "provenance.settings.params.temperature: recorded 0.0, given 0.9" in printed
    assert all(planted_in(text) == [] for text in cassette_texts(project / "cassettes").values())


def test_a_factory_whose_config_is_cyclic_or_deep_records_and_replays(project):
    write_factory(
        project,
        """
config = {"params": {"temperature": 0.0}}
config["params"]["parent"] = config
deep = level = {}
for _ in range(50_000):
    level["next"] = level = {}
config["deep"] = deep
""",
    )
    code, printed = record_with_factory()
    assert code == 0, printed
    settings = json.loads((project / "cassettes" / "po-1.json").read_text())["provenance"]["settings"]
    assert settings["params"] == {"temperature": 0.0}
    code, printed = run_score(*replay_args("run.json", "--model", "po_models:model"))
    assert code == 0, printed
    assert "each cassette's model and settings checked against --model po_models:model" in printed
