"""A headless Chromium from the distribution's packages, driven over its DevTools protocol.

The browser listens on 127.0.0.1 only (`--remote-debugging-port=0` picks a free port, which it
prints); the page is opened from a local file, so nothing leaves the machine. Console messages and
uncaught exceptions are collected from the moment the page starts loading.

Under `CI=true` a missing browser fails the test; elsewhere it skips, naming the install line.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import websocket

INSTALL = "apt-get update && apt-get install -y chromium"
NAMES = ("chromium", "chromium-browser")
START_SECONDS = 30
CALL_SECONDS = 15
PROFILE_CLEANUP_SECONDS = 10  # for helper processes of a stopped browser to finish writing its profile


def chromium_or_skip() -> str:
    """The browser's path; without one, fail under CI=true and skip elsewhere with the install line."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    message = f"headless Chromium is not installed; install it with `{INSTALL}` (as root)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true runs the browser tests: {message}")
    pytest.skip(message)


class Browser:
    """One headless browser with one page; `with Browser(path) as browser:` stops it at the end."""

    def __init__(self, binary: str, width: int = 1280, height: int = 900) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="report-browser-")
        self.process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",  # tests run as root, where Chromium's sandbox cannot start
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile.name}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: close() ends the helper processes it starts too
        )
        self.events: list[dict[str, Any]] = []
        self._next = 0
        try:
            port = self._port()
            self.socket = websocket.create_connection(
                self._page_socket(port), timeout=CALL_SECONDS, suppress_origin=True
            )
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable")
        except BaseException:
            self.close()
            raise

    def _port(self) -> int:
        """The DevTools port chromium prints; its stderr is read by a thread, so no read blocks past the deadline."""
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.process.stderr], daemon=True).start()
        deadline = time.monotonic() + START_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            found = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if found:
                return int(found.group(1))
        raise TimeoutError(f"chromium did not listen within {START_SECONDS} s (exit code {self.process.poll()})")

    @staticmethod
    def _page_socket(port: int) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=CALL_SECONDS) as answer:
            targets = json.load(answer)
        return next(target["webSocketDebuggerUrl"] for target in targets if target["type"] == "page")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and wait (bounded) for its answer, keeping every event that arrives meanwhile."""
        self._next += 1
        ident = self._next
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + CALL_SECONDS
        while time.monotonic() < deadline:
            message = json.loads(self.socket.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)
        raise TimeoutError(f"{method}: no answer within {CALL_SECONDS} s")

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + CALL_SECONDS
        while time.monotonic() < deadline:
            for event in self.events:
                if event.get("method") == method:
                    return event
            self.events.append(json.loads(self.socket.recv()))
        raise TimeoutError(f"no {method} within {CALL_SECONDS} s")

    def open(self, path: Path) -> float:
        """Load a local file and wait for its load event; returns the seconds it took.

        Events seen before are dropped, so `problems()` speaks of this page only.
        """
        self.events.clear()
        start = time.monotonic()
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")
        return time.monotonic() - start

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions, and browser log errors seen so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails'].get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                found.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
                found.append(f"log: {params['entry'].get('text')}")
        return found

    def close(self) -> None:
        socket = getattr(self, "socket", None)
        if socket is not None:
            socket.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        # Chromium's helper processes (zygote, renderer, crash handler) outlive the main one for a
        # moment and may still write into the profile: end the group, then remove the profile,
        # trying again for a bounded while if a straggler's last write lands during the removal.
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + PROFILE_CLEANUP_SECONDS
        while True:
            try:
                self.profile.cleanup()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
