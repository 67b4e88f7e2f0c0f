"""The generated index.html, rendered for real in headless Chromium."""

from __future__ import annotations

import shutil
import struct
import tempfile
from pathlib import Path

import pytest

from harness import cli
from harness.report import browser, write_report
from harness.report.browser import MISSING, BrowserError, Chromium, find_chromium
from tests.report.timelines import results

DOM = """JSON.stringify({
  sections: document.querySelectorAll('section.scenario').length,
  failed: document.querySelectorAll('section.scenario[data-result="failed"]').length,
  plots: Array.from(document.querySelectorAll('img.timeline-plot')).map(i => [i.complete, i.naturalWidth, i.naturalHeight]),
  title: document.title,
  why: Array.from(document.querySelectorAll('pre.why')).map(p => p.textContent),
})"""


@pytest.fixture(scope="module")
def chromium() -> Chromium:
    binary = find_chromium()
    if binary is None:
        pytest.skip(MISSING)
    try:
        browser = Chromium(binary)
    except BrowserError as e:
        pytest.skip(f"chromium cannot run here: {e}")
    yield browser
    browser.close()


def test_the_report_renders_in_chromium_without_console_errors(tmp_path: Path, chromium: Chromium) -> None:
    reports = tmp_path / "reports"
    index = write_report(reports, reports / "run-1", "run-1", results(reports, scenarios=6),
                         {"provider": "local", "zones": ["zone-a", "zone-b", "zone-c"]},
                         {"started": "2025-01-01T00:00:00+00:00", "exitstatus": 1, "interrupted": False, "not_run": []},
                         progress=lambda _: None)
    shot = index.parent / "screenshot.png"
    rendered = chromium.render(index, DOM, screenshot=shot)
    assert rendered.errors == []
    dom = rendered.dom
    assert dom["title"] == "ha-harness run run-1" and dom["sections"] == 6 and dom["failed"] == 2
    assert len(dom["plots"]) == 6 and all(ok and w > 300 and h > 100 for ok, w, h in dom["plots"]), dom["plots"]
    assert all("ToleranceViolation" in why for why in dom["why"]) and len(dom["why"]) == 2
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_broken_page_is_caught(tmp_path: Path, chromium: Chromium) -> None:
    """The check itself: a page with a script error and a missing image reports both."""
    page = tmp_path / "broken.html"
    page.write_text('<html><body><img class="timeline-plot" src="missing.png"><script>nope()</script></body></html>')
    rendered = chromium.render(page, "JSON.stringify({n: document.images.length})")
    assert rendered.dom == {"n": 1}
    assert any("nope" in e or "ReferenceError" in e or "Uncaught" in e for e in rendered.errors), rendered.errors
    assert any("missing.png" in e or "ERR_FILE_NOT_FOUND" in e for e in rendered.errors), rendered.errors


def test_harness_report_screenshot_saves_a_png_in_the_run_directory(tmp_path: Path, chromium: Chromium,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI starts a browser of its own; the fixture's only says that one can run here."""
    reports = tmp_path / "reports"
    write_report(reports, reports / "run-2", "run-2", results(reports, scenarios=3), {"provider": "local"},
                 {"started": "2025-01-01T00:00:00+00:00", "exitstatus": 0, "interrupted": False, "not_run": []},
                 progress=lambda _: None)
    (tmp_path / "harness.toml").write_text(f'[paths]\nreports_dir = "{reports}"\n')
    assert cli.main(["--config", str(tmp_path / "harness.toml"), "report", "run-2", "--screenshot"]) == 0
    out = capsys.readouterr().out.split()
    shot = reports / "run-2" / "screenshot.png"
    assert out == [str(reports / "run-2" / "index.html"), str(shot)]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # IHDR: the whole page, not just the window
    assert width >= 1000 and height > 1600


def test_a_missing_chromium_is_said_plainly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    reports = tmp_path / "reports"
    write_report(reports, reports / "run-3", "run-3", results(reports, scenarios=1), {},
                 {"started": "", "exitstatus": 0, "interrupted": False, "not_run": []}, progress=lambda _: None)
    (tmp_path / "harness.toml").write_text(f'[paths]\nreports_dir = "{reports}"\n')
    monkeypatch.setattr(browser, "find_chromium", lambda: None)
    assert cli.main(["--config", str(tmp_path / "harness.toml"), "report", "run-3", "--screenshot"]) == 2
    assert "no chromium on PATH" in capsys.readouterr().err and not (reports / "run-3" / "screenshot.png").exists()


def test_a_browser_leaves_nothing_in_tmp(tmp_path: Path, chromium: Chromium, monkeypatch: pytest.MonkeyPatch,
                                         request: pytest.FixtureRequest) -> None:
    """Its profile and chromium's own temporary files (singleton socket, shared memory) are gone
    once it is closed, and when it fails to start. Judged in a temporary directory of the test's
    own: other tests' browsers may run beside it (pytest-xdist)."""
    tmp = Path(tempfile.mkdtemp(prefix="bt-"))  # a short path: chromium's socket path has 108 bytes
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    binary = find_chromium()
    assert binary is not None
    page = tmp_path / "page.html"
    page.write_text("<html><body>x</body></html>")
    with Chromium(binary) as own:
        own.load(page)
        profile = Path(own.profile)
        assert profile.parent == tmp, "the profile is made in the temporary directory"
    assert not profile.exists()
    with pytest.raises(BrowserError):
        Chromium(str(tmp_path / "no-such-chromium"))
    assert list(tmp.iterdir()) == []
