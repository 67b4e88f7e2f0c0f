"""Headless Chromium driven over the DevTools protocol (websocket-client): load a page, read
its DOM, collect console errors, take a screenshot. For the report's tests."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

BINARIES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, BINARIES) if p), None)


@dataclass
class Rendered:
    dom: dict[str, Any]
    errors: list[str] = field(default_factory=list)


class Chromium:
    def __init__(self, binary: str, width: int = 1280, height: int = 1600) -> None:
        self.profile = tempfile.mkdtemp(prefix="rp-chromium-")
        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode()[-1500:] if self.proc.poll() is not None else "timeout"
                self.close()
                raise RuntimeError(f"chromium did not start: {err}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        url = next(p["webSocketDebuggerUrl"] for p in pages if p["type"] == "page")
        self.ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self.ids, self.events = 0, []  # type: ignore[var-annotated]

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.ids += 1
        self.ws.send(json.dumps({"id": self.ids, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.ids:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
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
        raise TimeoutError(method)

    def render(self, page: Path, expression: str, screenshot: Path | None = None) -> Rendered:
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.events.clear()  # an earlier page's load event and errors are not this page's
        self.call("Page.navigate", url=page.resolve().as_uri())
        self.wait_event("Page.loadEventFired")
        dom = json.loads(self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"]["value"])
        if screenshot is not None:
            data = self.call("Page.captureScreenshot", format="png")["data"]
            screenshot.write_bytes(base64.b64decode(data))
        errors = []
        for msg in self.events:
            p = msg.get("params", {})
            if msg.get("method") == "Runtime.exceptionThrown":
                errors.append(str(p.get("exceptionDetails", {}).get("text")))
            elif msg.get("method") == "Runtime.consoleAPICalled" and p.get("type") == "error":
                errors.append(" ".join(str(a.get("value")) for a in p.get("args", [])))
            elif msg.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                errors.append(f"{p['entry'].get('text')} {p['entry'].get('url', '')}")
        return Rendered(dom, errors)

    def close(self) -> None:
        if getattr(self, "ws", None) is not None:
            self.ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
