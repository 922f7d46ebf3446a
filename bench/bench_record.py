"""Benchmark: `record --concurrency 8` against one case at a time, and a throttled run's extra requests.

    python -m bench.bench_record [--cases 200] [--delay 0.2] [--rounds 3] [--per-second 20]
    python -m bench.bench_record --quick      5 cases, 0.05 s per call, 2 requests a second, one round (CI)

Data: `--cases` copies of the five purchase orders of `examples/your_own_agent`, each renamed and
given a reference line of its own (`tests.servers.orders.copies`). The provider is the local
OpenAI-compatible server of the tests (`tests.servers.openai`) on 127.0.0.1, reached through
Strands' real `OpenAIModel` and the openai client: it answers each case's one model call with the
`PurchaseOrder` call of the case's baseline answer, after `--delay` seconds, the latency of a
model call. Each run is `python -m fieldeval.commands.record` in a fresh process, into a fresh
cassette folder, exactly as a user runs it; its wall time counts the process's start-up too.

Figures:

- one at a time: `--concurrency 1`, whose floor is `--cases` x `--delay` (the calls alone);
- eight in flight: `--concurrency 8`, whose floor is an eighth of that; the ratio of the two
  (the median of `--rounds` interleaved rounds, with the range of the per-round ratios);
- throttled: `--concurrency 8` against the same server allowing `--per-second` requests in each
  second and answering 429 with `Retry-After: 1` beyond that: the requests it needed against the
  minimum (one per model call), the 429s, and the wall time against the rate's own floor
  (`--cases` / `--per-second`).

Exit code 1 if a run did not record every case.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.timing import (
    QUICK_NOTE,
    QUICK_ROUNDS,
    add_quick,
    interleaved_results,
    least_rounds,
    median,
    ratio_spread,
    spread,
)
from tests.servers.openai import OpenAIServer, throttled_step
from tests.servers.orders import FOLDER, OrderAnswers, copies, write_cases

TARGET_RATIO = 5.0  # issue 34: eight cases in flight at least five times as fast as one at a time
FACTORY = """
import os

from strands.models.openai import OpenAIModel


def local():
    client_args = {"base_url": os.environ["LOCAL_OPENAI_URL"], "api_key": "sk-local", "timeout": 30, "max_retries": 0}
    return OpenAIModel(client_args=client_args, model_id="llama-3.2-local", params={"temperature": 0})
"""


class PerSecond:
    """A provider's rate limit: `limit` requests in each second of the clock, a 429 with `Retry-After: 1` beyond."""

    def __init__(self, limit: int, answer) -> None:
        self.limit, self.answer = limit, answer
        self.refused = 0
        self._lock = threading.Lock()
        self._second, self._count = -1, 0

    def __call__(self, body: dict) -> dict:
        with self._lock:
            second = int(time.monotonic())
            if second != self._second:
                self._second, self._count = second, 0
            self._count += 1
            if self._count > self.limit:
                self.refused += 1
                return throttled_step("1")
        return self.answer(body)


def project(folder: Path, cases: int) -> Path:
    """The sample's schema and task, `cases` copies of its cases and a model factory for the local server."""
    for name in ("purchase_order.py", "extract.py"):
        shutil.copy(FOLDER / name, folder / name)
    (folder / "models.py").write_text(FACTORY, encoding="utf-8")
    write_cases(folder / "cases.jsonl", copies(cases))
    return folder


def record(folder: Path, url: str, concurrency: int, run: str) -> tuple[float, str]:
    """The wall time of one `record` run into a fresh folder, and what it printed; exits if it failed."""
    argv = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl", "--task", "extract:task"]
    argv += ["--cassettes", run, "--model", "models:local", "--concurrency", str(concurrency)]
    env = dict(os.environ, LOCAL_OPENAI_URL=url + "/v1")
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fieldeval.commands.record", *argv], cwd=folder, env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    shutil.rmtree(folder / run, ignore_errors=True)
    if done.returncode != 0:
        print(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"record --concurrency {concurrency} exited {done.returncode}; every case should record")
    return seconds, done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per model call (default 0.2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-second", type=int, default=20, help="the throttled run's rate limit (default 20)")
    add_quick(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.cases, args.delay, args.per_second, args.rounds = 5, 0.05, 2, QUICK_ROUNDS
        print(QUICK_NOTE)
    print(f"load average before: {', '.join(f'{v:.1f}' for v in os.getloadavg())}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as temp:
        folder = project(Path(temp), args.cases)
        answers = OrderAnswers(copies(args.cases), lookups=False)
        with OpenAIServer(answer=answers.openai_answer, delay=args.delay) as server:
            runs = {
                "1": lambda: record(folder, server.url, 1, "one")[0],
                "8": lambda: record(folder, server.url, 8, "eight")[0],
            }
            walls = interleaved_results(args.rounds, runs, least_rounds(args.quick))
            calls = len(server.requests)
        floor = args.cases * args.delay
        runs_made = f"{calls} calls over {2 * args.rounds} runs"
        print(f"{args.cases} cases, one model call each, {args.delay:g} s per call ({runs_made})")
        print(f"--concurrency 1: {spread(walls['1'], 1)} s wall (floor {floor:.1f} s: the calls alone)")
        print(f"--concurrency 8: {spread(walls['8'], 1)} s wall (floor {floor / 8:.1f} s)")
        ratio = median(walls["1"]) / median(walls["8"])
        verdict = "meets" if ratio >= TARGET_RATIO else "misses"
        print(f"one at a time / eight in flight: {ratio_spread(walls['1'], walls['8'])} ({verdict} {TARGET_RATIO:g}x)")

        limit = PerSecond(args.per_second, answers.openai_answer)
        with OpenAIServer(answer=limit, delay=args.delay) as server:
            seconds, printed = record(folder, server.url, 8, "throttled")
            requests = len(server.requests)
        said = next((line for line in printed.splitlines() if line.startswith("The provider throttled")), "")
        print(
            f"throttled, --concurrency 8 against {args.per_second} requests per second: {requests} requests for "
            f"{args.cases} calls ({requests / args.cases:.2f}x the minimum), {limit.refused} answered 429; "
            f"{seconds:.1f} s wall (the rate's floor {args.cases / args.per_second:.1f} s)"
        )
        print(f"  the run said: {said or 'no throttle seen'}")
    print(f"load average after: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
