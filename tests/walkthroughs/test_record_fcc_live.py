"""`python -m walkthroughs.fcc.record` end to end through both live clients, against local stand-ins.

No model stand-in: the recorder's own credentials check, `live_model` and the real boto3 client
meet `tests/servers/bedrock.py` (boto3's endpoint override, dummy credentials), and the real
datasets-server client pages `tests/servers/datasets.py`, which serves the committed snapshot's
rows. A success replaces the snapshot, case file and exchanges; a Bedrock failure leaves all
of them byte for byte as they were.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from botocore.config import Config

from tests.servers.bedrock import BedrockServer, bedrock_environment, tool_use_stream
from tests.servers.datasets import DatasetsServer
from tests.walkthroughs.test_record_fcc import copy_committed_fcc
from walkthroughs.fcc import record as record_fcc
from walkthroughs.fcc.datasets_server import read_snapshot
from walkthroughs.fcc.documents import SNAPSHOT_PATH

FAST = Config(connect_timeout=0.5, read_timeout=0.5, retries={"mode": "standard", "total_max_attempts": 1})
PAGE = read_snapshot(SNAPSHOT_PATH).pages[0]
PAYLOAD = {"Agency": "A", "Advertiser": "B", "LineItems": [{"LineItemRate": 1.0}]}


@pytest.fixture
def services(monkeypatch, no_aws_credentials, local_servers):
    with BedrockServer() as bedrock, DatasetsServer() as rows:
        for name, value in bedrock_environment(bedrock.url).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr("fieldeval.services.bedrock.CLIENT_CONFIG", FAST)
        rows.script = [("status", 200, PAGE)]  # all eight rows on one page, num_rows_total 8
        yield bedrock, rows


@pytest.fixture
def targets(tmp_path) -> tuple[Path, Path, Path]:
    return copy_committed_fcc(tmp_path)


def contents(snapshot: Path, cases: Path, exchanges: Path) -> dict[str, bytes]:
    files = [snapshot, cases, *sorted(exchanges.iterdir())]
    return {str(path): path.read_bytes() for path in files} | {"listing": repr(sorted(snapshot.parent.iterdir()))}


def run(rows_url: str, targets) -> tuple[int, str]:
    snapshot, cases, exchanges = targets
    argv = ["--base-url", rows_url, "--timeout", "0.5", "--retries", "1", "--backoff", "0.01"]
    argv += ["--snapshot", str(snapshot), "--cases", str(cases), "--exchanges", str(exchanges)]
    out = io.StringIO()
    return record_fcc.main(argv, out=out), out.getvalue()


def test_a_live_recording_through_both_clients_replaces_the_set(services, targets):
    bedrock, rows = services
    bedrock.default = ("stream", tool_use_stream("FccInvoice", PAYLOAD))
    code, printed = run(rows.url, targets)
    assert code == 0, printed
    snapshot, _, exchanges = targets
    stored = json.loads(snapshot.read_text())
    assert stored["provenance"]["hand_authored"] is False
    assert stored["provenance"]["source"].endswith(f"{rows.url}/rows")
    assert len(bedrock.requests) == 5 and len(rows.requests) == 1
    recorded = [json.loads(path.read_text()) for path in sorted(exchanges.glob("*.json"))]
    assert sum(not data["provenance"]["hand_authored"] for data in recorded) == 5


@pytest.mark.parametrize(
    "step",
    [("error", 403, "AccessDeniedException", "You don't have access to the model."), ("stall", 10)],
    ids=["access denied", "stops answering"],
)
def test_a_bedrock_failure_exits_2_and_leaves_every_file_byte_for_byte(services, targets, step):
    bedrock, rows = services
    bedrock.default = step
    before = contents(*targets)
    code, printed = run(rows.url, targets)
    assert code == 2, printed
    assert contents(*targets) == before
    assert len(bedrock.requests) <= 5  # one attempt per document at most (read_timeout 0.5 s each)
