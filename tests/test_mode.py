"""Mode selection from EVAL_NOTEBOOKS_MODE."""

import pytest

from helpers import mode


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
