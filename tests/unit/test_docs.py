"""The documentation site builds in strict mode (a broken link or a page missing from the nav
fails), and its reference pages are the code's: every step, fault, command and marker is there."""

from __future__ import annotations

import os
import re
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
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT,
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
    page = (site / "tutorials" / "ci" / "index.html").read_text()
    assert "make test" in page and "actions/cache" in (ROOT / "docs" / "ci" / "github-actions.yml").read_text()
    assert page.count('class="highlight"') >= 2 and "--8&lt;--" not in page


def test_every_page_an_error_points_to_is_built(site: Path) -> None:
    named = {m for path in (ROOT / "harness").rglob("*.py")
             for m in re.findall(r"see_docs\([\"']([^\"']+)[\"']\)", path.read_text())}
    assert named >= {"reference/steps.md", "reference/faults.md"}, named
    for page in named:
        assert (site / page.removesuffix(".md") / "index.html").is_file(), page


def test_the_protocols_page_says_which_provider_has_each(site: Path) -> None:
    page = (site / "design" / "protocols" / "index.html").read_text()
    assert "<code>ZoneNetwork</code>" in page and "<code>SeedResourceManager</code>" in page
    assert "implemented by: local, cluster, kind" in page


def test_the_readme_links_only_to_files_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert links and all((ROOT / link).exists() for link in links if "://" not in link), links


def test_the_configuration_page_describes_every_path_key() -> None:
    from dataclasses import fields

    from harness.config import Config
    from harness.docs_pages import PATHS

    assert set(PATHS) == {f.name for f in fields(Config) if f.name.endswith("_dir")}
