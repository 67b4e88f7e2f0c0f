"""MkDocs hook: the pages written from the code (harness.docs_pages) at each build, and the
report's screenshot from the newest real run on this machine when there is one (`harness report
--screenshot`, which `.ci/run` takes after `make test`), else the one kept in docs/images/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

from harness.docs_pages import PAGES, report_top

SCREENSHOT = "images/report.png"
RUN_SCREENSHOT = Path(__file__).resolve().parents[1] / "reports" / "latest" / "screenshot.png"


def on_files(files: Files, config: Any) -> Files:
    for path, page in PAGES.items():
        files.append(File.generated(config, path, content=page()))
    if RUN_SCREENSHOT.is_file():
        kept = files.get_file_from_path(SCREENSHOT)
        if kept is not None:
            files.remove(kept)
        files.append(File.generated(config, SCREENSHOT, content=report_top(RUN_SCREENSHOT)))
    return files
