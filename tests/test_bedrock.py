"""The live model's settings, resolved offline: region order, credentials check, construction."""

import botocore.exceptions
import pytest
from strands.models import BedrockModel

from helpers.services.bedrock import MODEL_ID, CredentialsError, check_credentials, live_model, resolve_region


@pytest.fixture(autouse=True)
def isolated_aws(no_aws_credentials, no_network):
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
    with pytest.raises(CredentialsError, match="no AWS credentials found; set AWS_PROFILE"):
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
