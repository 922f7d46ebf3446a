"""Mode selection from EVAL_NOTEBOOKS_MODE, and `auto`'s offline credentials check."""

import shlex
import sys
import time
from http.server import BaseHTTPRequestHandler

import pytest

from fieldeval import mode
from tests.servers.local import LocalServer


@pytest.mark.parametrize("value", ["replay", "live", " Replay ", "LIVE"])
def test_explicit_modes(monkeypatch, value):
    monkeypatch.setenv(mode.ENV_VAR, value)
    assert mode.current_mode() == value.strip().lower()


def test_auto_is_live_with_credentials(monkeypatch):
    monkeypatch.setenv(mode.ENV_VAR, "auto")
    monkeypatch.setattr(mode, "aws_credentials_resolve", lambda: True)
    assert mode.current_mode() == "live"


def test_unset_means_auto_and_replay_without_credentials(monkeypatch):
    monkeypatch.delenv(mode.ENV_VAR, raising=False)
    monkeypatch.setattr(mode, "aws_credentials_resolve", lambda: False)
    assert mode.requested_mode() == "auto"
    assert mode.current_mode() == "replay"


def test_credentials_resolve_reads_the_environment_without_network(monkeypatch, no_aws_credentials):
    assert mode.aws_credentials_resolve() is False
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    assert mode.aws_credentials_resolve() is True


def test_unknown_mode_lists_the_three(monkeypatch):
    monkeypatch.setenv(mode.ENV_VAR, "offline")
    with pytest.raises(mode.ModeError, match=r"EVAL_NOTEBOOKS_MODE='offline' is not a mode; .*replay, live, auto"):
        mode.current_mode()


def test_an_unreadable_aws_config_means_no_credentials(monkeypatch, no_aws_credentials):
    (no_aws_credentials / "config").write_text("[default\nregion = us-east-1\n")
    assert mode.aws_credentials_resolve() is False


@pytest.fixture
def metadata_service(monkeypatch, local_servers):
    """A stand-in EC2 metadata service on 127.0.0.1 that records every request and knows no role."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_PUT = answer  # noqa: N815 (http.server's naming)

        def log_message(self, *args) -> None:
            pass

    service = LocalServer()
    service.serve(Handler)
    with service:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f"{service.url}/")
        monkeypatch.setenv("AWS_METADATA_SERVICE_TIMEOUT", "1")
        yield seen


@pytest.mark.parametrize("setting", [None, "", "true", "no"])
def test_auto_never_asks_the_metadata_service_unless_told(monkeypatch, no_aws_credentials, metadata_service, setting):
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    if setting is not None:
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", setting)
    monkeypatch.setenv(mode.ENV_VAR, "auto")
    assert mode.current_mode() == "replay"
    assert metadata_service == []


def test_the_metadata_service_is_asked_when_the_user_says_so(monkeypatch, no_aws_credentials, metadata_service):
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "false")
    assert mode.aws_credentials_resolve() is False  # the stand-in knows no role
    assert metadata_service  # but it was asked


def test_a_credential_process_printing_non_json_means_replay(monkeypatch, no_aws_credentials, capsys):
    command = shlex.join([sys.executable, "-c", "print('Please log in first')"])
    (no_aws_credentials / "config").write_text(f"[default]\ncredential_process = {command}\n")
    monkeypatch.setenv(mode.ENV_VAR, "auto")
    assert mode.current_mode() == "replay"


def test_an_sso_profile_never_logged_in_means_replay(monkeypatch, no_aws_credentials):
    monkeypatch.setenv("HOME", str(no_aws_credentials))
    (no_aws_credentials / "config").write_text(
        "[profile work]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = us-east-1\n"
        "sso_account_id = 123456789012\nsso_role_name = Reader\n"
    )
    monkeypatch.setenv("AWS_PROFILE", "work")
    monkeypatch.setenv(mode.ENV_VAR, "auto")
    assert mode.current_mode() == "replay"


def test_a_credential_process_that_hangs_means_replay_within_the_bound(monkeypatch, no_aws_credentials):
    # The stand-in "hangs" for 5 s (long past the bound), then ends on its own: nothing is left running.
    command = shlex.join([sys.executable, "-c", "import time; time.sleep(5)"])
    (no_aws_credentials / "config").write_text(f"[default]\ncredential_process = {command}\n")
    monkeypatch.setenv(mode.ENV_VAR, "auto")
    monkeypatch.setattr(mode, "CREDENTIALS_TIMEOUT", 0.3, raising=False)
    started = time.monotonic()
    assert mode.current_mode() == "replay"
    assert time.monotonic() - started < 3  # the bound, not the 5 s the process takes
