"""The first-scenario tutorial, followed as a new user would: every file its built page shows
(a code block titled with the file's name; a second block of one name adds to the file) is
written into a bare directory, `pytest -k outage` runs there with nothing but the installed
harness, and what the page says it prints is what it prints."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import namespaces

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("mkdocs", reason="the documentation needs mkdocs and mkdocs-material (the dev extras)")

OUTPUT = "pytest's output"  # the title of a block showing what a run prints
BLOCK = re.compile(r'<span class="filename">([^<]+)</span>\s*<pre>.*?<code>(.*?)</code></pre>', re.S)


def _text(code: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", code))


def tutorial_blocks(site: Path) -> list[tuple[str, str]]:
    """Each titled code block of the built tutorial page, in order: (title, text)."""
    page = (site / "tutorials" / "first-scenario" / "index.html").read_text()
    return [(html.unescape(title).strip(), _text(code)) for title, code in BLOCK.findall(page)]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-d", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def _plain(text: str) -> str:
    """Output as compared: numbers as N (durations, terms, members differ from run to run), runs of
    blanks and of pytest's = as one."""
    return re.sub(r"\s+", " ", re.sub(r"={2,}", "=", re.sub(r"\d+", "N", text)))


def test_the_tutorials_scenario_runs_from_a_bare_directory_and_fails_as_the_page_says(
        site: Path, pytester: pytest.Pytester) -> None:
    blocks = tutorial_blocks(site)
    assert {"outage.feature", "test_outage.py"} <= {title for title, _ in blocks}, blocks
    assert [title for title, _ in blocks].count(OUTPUT) == 2, blocks
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n')
    runs = []
    for title, text in blocks:
        if title != OUTPUT:
            with (pytester.path / title).open("a") as f:
                f.write(text)
            continue
        # The page's command, `pytest -k outage`; a region and a configuration of the test's own beside it.
        result = pytester.runpytest_subprocess("-k", "outage", "-p", "no:cacheprovider", "--region-name", "tu",
                                               "--harness-config", str(cfg))
        out = _plain(result.stdout.str())
        for line in filter(None, (_plain(raw).strip() for raw in text.splitlines())):
            # A line cut short ends in "…" (the page's cut) or "..." (pytest's, on a terminal; on CI,
            # where $CI is set, pytest prints it whole): what it shows is the start of the real one.
            shown = re.sub(r"(…|\.\.\.)$", "", line).rstrip()
            assert shown in out, f"the page shows {line!r}; the run printed:\n{result.stdout.str()}"
        said = {noun: int(count) for count, noun in re.findall(r"(\d+) (passed|failed)\b", text)}
        assert said == result.parseoutcomes(), (said, result.stdout.str())  # numbers are N above: the counts here
        runs.append(said)
    assert runs == [{"passed": 1}, {"passed": 1, "failed": 1}], runs
    assert namespaces("tu") == []
