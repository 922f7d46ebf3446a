"""The live model's settings, resolved offline: region order, credentials check, construction."""

import hashlib
import json
import shlex
import sys
from datetime import UTC, datetime, timedelta

import botocore.exceptions
import pytest
from strands.models import BedrockModel

from fieldeval.services.bedrock import MODEL_ID, CredentialsError, check_credentials, live_model, resolve_region


@pytest.fixture(autouse=True)
def isolated_aws(no_aws_credentials):
    """No AWS variable from the machine, no config file, no metadata service, no sockets."""
    return no_aws_credentials


class FakeSession:
    def __init__(self, region=None, credentials=None, error=None):
        self.region_name, self.credentials, self.error = region, credentials, error

    def get_credentials(self):
        if self.error:
            raise self.error
        return self.credentials


def test_model_id():
    assert MODEL_ID == "us.anthropic.claude-haiku-4-5-20251001-v1:0"


def test_region_order(monkeypatch):
    session = FakeSession(region="eu-west-1")
    assert resolve_region(FakeSession()) == "us-east-1"
    assert resolve_region(session) == "eu-west-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-southeast-2")
    assert resolve_region(session) == "ap-southeast-2"
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    assert resolve_region(session) == "us-west-2"


def test_region_from_the_profile(monkeypatch, isolated_aws):
    (isolated_aws / "config").write_text("[profile extractor]\nregion = eu-central-1\n")
    monkeypatch.setenv("AWS_PROFILE", "extractor")
    assert resolve_region() == "eu-central-1"


def test_absent_credentials_say_what_to_set():
    with pytest.raises(CredentialsError, match="no AWS credentials found for profile 'default'.*set AWS_PROFILE"):
        check_credentials()


def test_a_profile_that_does_not_exist_is_named(monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "typo")
    with pytest.raises(CredentialsError, match="AWS_PROFILE='typo' names no profile"):
        check_credentials()


def test_a_credential_provider_error_is_reported_without_secrets():
    error = botocore.exceptions.TokenRetrievalError(provider="sso", error_msg="token expired")
    with pytest.raises(CredentialsError, match="TokenRetrievalError.*set AWS_PROFILE"):
        check_credentials(FakeSession(error=error))


def test_resolving_credentials_prints_no_account_or_key(capsys, isolated_aws, monkeypatch):
    (isolated_aws / "credentials").write_text(
        "[default]\naws_access_key_id = AKIAEXAMPLEKEY123456\naws_secret_access_key = secretvalue\n"
    )
    check_credentials()
    printed = capsys.readouterr()
    assert "AKIA" not in printed.out + printed.err and "secret" not in printed.out + printed.err


def test_live_model_is_a_bedrock_model_in_the_resolved_region(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    model = live_model()
    assert isinstance(model, BedrockModel)
    assert model.get_config()["model_id"] == MODEL_ID
    assert model.get_config()["temperature"] == 0.0
    assert model.client.meta.region_name == "us-west-2"
    assert live_model(region="eu-west-1", temperature=0.5).client.meta.region_name == "eu-west-1"


def test_live_model_names_a_missing_profile(monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "typo")
    with pytest.raises(CredentialsError, match="typo"):
        live_model()


def process_printing(text: str, code: int = 0) -> str:
    """A `credential_process` command line that prints `text` and exits with `code`."""
    return shlex.join([sys.executable, "-c", f"import sys; print({text!r}); sys.exit({code})"])


@pytest.mark.parametrize(("printed", "code"), [("not json at all", 0), ("{", 0), ("", 1), ("{}", 0)])
def test_a_failing_credential_process_names_the_profile_and_the_setting(monkeypatch, isolated_aws, printed, code):
    (isolated_aws / "config").write_text(f"[profile tool]\ncredential_process = {process_printing(printed, code)}\n")
    monkeypatch.setenv("AWS_PROFILE", "tool")
    with pytest.raises(CredentialsError, match="AWS profile 'tool': credential_process failed to give credentials"):
        check_credentials()


def test_a_working_credential_process_counts_and_prints_nothing(monkeypatch, isolated_aws, capsys):
    answer = {"Version": 1, "AccessKeyId": "AKIAEXAMPLEKEY123456", "SecretAccessKey": "secretvalue"}
    (isolated_aws / "config").write_text(f"[default]\ncredential_process = {process_printing(json.dumps(answer))}\n")
    check_credentials()
    printed = capsys.readouterr()
    assert "AKIA" not in printed.out + printed.err


def sso_profile(folder, monkeypatch) -> str:
    """An SSO profile (the account id is a secret the messages must not show); HOME is `folder`."""
    monkeypatch.setenv("HOME", str(folder))
    (folder / "config").write_text(
        "[profile work]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = Reader\n"
        "region = us-east-1\n[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\n"
        "sso_region = us-east-1\n"
    )
    monkeypatch.setenv("AWS_PROFILE", "work")
    cache = folder / ".aws" / "sso" / "cache"
    cache.mkdir(parents=True)
    return str(cache / (hashlib.sha1(b"corp").hexdigest() + ".json"))


def test_an_sso_profile_never_logged_in_does_not_count(monkeypatch, isolated_aws):
    sso_profile(isolated_aws, monkeypatch)
    never = "'work' uses SSO but was never logged in.*aws sso login --profile work"
    with pytest.raises(CredentialsError, match=never) as caught:
        check_credentials()
    assert "123456789012" not in str(caught.value)


def test_an_sso_profile_counts_with_a_cached_login_and_not_with_an_expired_one(monkeypatch, isolated_aws):
    token_file = sso_profile(isolated_aws, monkeypatch)
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    with open(token_file, "w") as handle:
        json.dump({"accessToken": "t", "expiresAt": later}, handle)
    check_credentials()  # read from disk only: the network guard refuses any call
    earlier = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    with open(token_file, "w") as handle:
        json.dump({"accessToken": "t", "expiresAt": earlier}, handle)
    with pytest.raises(CredentialsError, match="'work': the SSO login has expired"):
        check_credentials()


def test_messages_never_show_an_account_id_or_a_key():
    secret = "no role in 123456789012 for AKIAEXAMPLEKEY123456"
    error = botocore.exceptions.TokenRetrievalError(provider="sso", error_msg=secret)
    with pytest.raises(CredentialsError) as caught:
        check_credentials(FakeSession(error=error))
    assert "123456789012" not in str(caught.value) and "AKIAEXAMPLEKEY123456" not in str(caught.value)


def test_live_model_has_bounded_timeouts_and_retries_and_takes_a_client_config(monkeypatch):
    from botocore.config import Config

    monkeypatch.setenv("AWS_REGION", "us-west-2")
    config = live_model().client.meta.config
    assert config.read_timeout <= 120 and config.connect_timeout <= 30
    assert config.retries["total_max_attempts"] <= 5
    tuned = live_model(client_config=Config(read_timeout=2, retries={"total_max_attempts": 1})).client.meta.config
    assert tuned.read_timeout == 2 and tuned.connect_timeout == config.connect_timeout
