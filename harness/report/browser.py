"""Headless Chromium driven over the DevTools protocol (websocket-client, which the kubernetes
client already needs): load a page, read its DOM, collect console errors, take a screenshot.
`harness report --screenshot` and the report's browser tests use it."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, PrerequisiteError
from harness.wait import wait_serving

BINARIES = ("chromium", "chromium-browser", "google-chrome")
MISSING = "no chromium on PATH (Debian: apt-get install chromium; scripts/install-deps.sh installs it)"
MAX_HEIGHT = 16000  # px: Chromium's largest texture; a longer page is cut there


class BrowserError(HarnessError):
    """Chromium did not start, or a DevTools call failed or timed out."""


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, BINARIES) if p), None)


@dataclass
class Rendered:
    dom: dict[str, Any]
    errors: list[str] = field(default_factory=list)


class Chromium:
    def __init__(self, binary: str, width: int = 1280, height: int = 1600, start_timeout: float = 30) -> None:
        # Removed by close(), also when chromium does not start; chromium's own temporary files
        # (its singleton socket, shared memory) go in it too, not in the system's /tmp.
        self._profile = tempfile.TemporaryDirectory(prefix="rp-chromium-", ignore_cleanup_errors=True)
        self.profile = self._profile.name
        self.ws: Any = None
        self.log = Path(self.profile) / "stderr.log"  # a file, not a pipe nobody reads: chromium is chatty
        tmp = Path(self.profile) / "tmp"
        tmp.mkdir()
        try:
            with self.log.open("wb") as err:
                self.proc = subprocess.Popen(
                    [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                     "--hide-scrollbars", "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
                     f"--window-size={width},{height}", "about:blank"], stdout=subprocess.DEVNULL, stderr=err,
                    env={**os.environ, "TMPDIR": str(tmp)}, start_new_session=True)
        except OSError as e:
            self._profile.cleanup()
            raise BrowserError(f"chromium ({binary}) did not start: {e}") from None
        port_file = Path(self.profile) / "DevToolsActivePort"
        try:
            wait_serving(lambda: None if port_file.exists() and port_file.read_text().strip() else "no DevTools port yet",
                         lambda: None if self.proc.poll() is None else f"exited with code {self.proc.returncode}",
                         f"chromium's DevTools port in {port_file}", start_timeout)
        except HarnessError as e:
            why = self.log.read_text(errors="replace")[-1500:] if self.proc.poll() is not None else str(e)
            self.close()
            raise BrowserError(f"chromium ({binary}) did not start: {why}") from None
        try:
            import websocket

            port = int(port_file.read_text().split()[0])
            pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
            url = next(p["webSocketDebuggerUrl"] for p in pages if p["type"] == "page")
            self.ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
        except (OSError, ValueError, StopIteration, ImportError) as e:
            self.close()
            raise BrowserError(f"cannot talk DevTools to chromium: {type(e).__name__}: {e}") from None
        self.ids, self.events = 0, []  # type: ignore[var-annotated]

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.ids += 1
        self.ws.send(json.dumps({"id": self.ids, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.ids:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                return msg["result"]
            self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for msg in self.events:
            if msg.get("method") == method:
                return msg
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            self.events.append(msg)
            if msg.get("method") == method:
                return msg
        raise BrowserError(f"no {method} within {timeout:g} s")

    def load(self, page: Path) -> None:
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.events.clear()  # an earlier page's load event and errors are not this page's
        self.call("Page.navigate", url=page.resolve().as_uri())
        self.wait_event("Page.loadEventFired")

    def screenshot(self, out: Path, full_page: bool = True) -> Path:
        """The loaded page as PNG: all of it (up to MAX_HEIGHT px) or the window."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics").get("cssContentSize") or {}
            if size:
                params |= {"captureBeyondViewport": True, "clip": {
                    "x": 0, "y": 0, "width": size["width"], "height": min(size["height"], MAX_HEIGHT), "scale": 1}}
        out.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))
        return out

    def render(self, page: Path, expression: str, screenshot: Path | None = None) -> Rendered:
        self.load(page)
        dom = json.loads(self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"]["value"])
        if screenshot is not None:
            self.screenshot(screenshot, full_page=False)
        return Rendered(dom, self.errors())

    def errors(self) -> list[str]:
        """Script exceptions, console errors and failed loads of the current page."""
        errors = []
        for msg in self.events:
            p = msg.get("params", {})
            if msg.get("method") == "Runtime.exceptionThrown":
                errors.append(str(p.get("exceptionDetails", {}).get("text")))
            elif msg.get("method") == "Runtime.consoleAPICalled" and p.get("type") == "error":
                errors.append(" ".join(str(a.get("value")) for a in p.get("args", [])))
            elif msg.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                errors.append(f"{p['entry'].get('text')} {p['entry'].get('url', '')}")
        return errors

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
            self.ws = None
        # The whole session: chromium's helpers (zygote, renderers, crashpad) outlive the browser
        # process for a moment and would write into the profile after it was removed.
        for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            if self.proc.poll() is None:
                try:
                    self.proc.wait(wait_s)
                except subprocess.TimeoutExpired:
                    continue
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and _group_alive(self.proc.pid):
                time.sleep(0.05)
            if not _group_alive(self.proc.pid):
                break
        self._profile.cleanup()
        shutil.rmtree(self.profile, ignore_errors=True)  # what a late helper wrote during the cleanup


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def screenshot(index: Path, out: Path | None = None) -> Path:
    """A run's index.html rendered in headless Chromium, saved as screenshot.png beside it."""
    binary = find_chromium()
    if binary is None:
        raise PrerequisiteError(MISSING)
    out = out or index.parent / "screenshot.png"
    with Chromium(binary) as browser:
        browser.load(index)
        return browser.screenshot(out)
