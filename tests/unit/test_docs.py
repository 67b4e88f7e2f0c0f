"""The documentation site builds in strict mode (a broken link or a page missing from the nav
fails), and its reference pages are the code's: every step, fault, command and marker is there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.faults import FAULTS
from harness.pytest_plugin import MARKERS
from harness.steps import catalogue

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("mkdocs", reason="the documentation needs mkdocs and mkdocs-material (the dev extras)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def test_the_steps_page_has_every_step(site: Path) -> None:
    page = (site / "reference" / "steps" / "index.html").read_text()
    assert page.count("<h3 ") == len(catalogue.steps(shown_failing=False))
    assert "Then writes resume within {count} {unit} of the outage" in page


def test_the_faults_commands_and_markers_pages_have_each_of_theirs(site: Path) -> None:
    faults = (site / "reference" / "faults" / "index.html").read_text()
    assert all(f"<code>{kind}</code>" in faults for kind in FAULTS)
    commands = (site / "reference" / "commands" / "index.html").read_text()
    assert all(f"<code>harness {name}</code>" in commands for name in ("up", "fault", "heal", "down", "run", "steps"))
    markers = (site / "reference" / "markers" / "index.html").read_text()
    assert all(f"<code>@{name}</code>" in markers for name in MARKERS)
    configuration = (site / "reference" / "configuration" / "index.html").read_text()
    assert "<code>fault_max_duration</code>" in configuration and "<code>900.0</code>" in configuration


def test_the_ci_page_shows_the_pipelines_themselves(site: Path) -> None:
    page = (site / "ci" / "index.html").read_text()
    assert "make test" in page and "actions/cache" in (ROOT / "docs" / "ci" / "github-actions.yml").read_text()
    assert page.count('class="highlight"') >= 2 and "--8&lt;--" not in page
