"""Nothing of the harness is left in the system's temporary directory: a directory or file made
with tempfile and never removed has to be made under a directory the run owns (`dir=`);
everything else uses TemporaryDirectory, which removes itself."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEAKY = {"mkdtemp", "mkstemp"}


def _leaky_calls(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        keywords = {k.arg: k.value for k in node.keywords}
        kept = name == "NamedTemporaryFile" and isinstance(keywords.get("delete"), ast.Constant) \
            and keywords["delete"].value is False
        if (name in LEAKY or kept) and "dir" not in keywords:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    return found


def test_no_temporary_file_outlives_the_run_in_tmp() -> None:
    leaks = [call for top in ("harness", "benchmarks") for path in sorted((ROOT / top).rglob("*.py"))
             for call in _leaky_calls(path)]
    assert leaks == [], "made in the system's temporary directory and never removed: " + ", ".join(leaks)
