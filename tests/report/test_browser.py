"""The generated index.html, rendered for real in headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.report import write_report
from tests.report.browser import Chromium, find_chromium
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
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium; scripts/install-deps.sh installs it)")
    try:
        browser = Chromium(binary)
    except RuntimeError as e:
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
