"""MkDocs hook: the reference pages, written from the code (harness.docs_pages) at each build."""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files

from harness.docs_pages import PAGES


def on_files(files: Files, config: Any) -> Files:
    for path, page in PAGES.items():
        files.append(File.generated(config, path, content=page()))
    return files
