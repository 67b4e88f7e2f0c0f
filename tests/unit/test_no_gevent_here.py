"""Importing locust monkey-patches the importing process with gevent (ssl, sockets, threads): in
pytest's process that breaks every later TLS connection (RecursionError in ssl). Only the locust
processes the load runner starts may import it; everything else reads what they recorded."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Run only inside locust's own processes (started by harness.load.runner, or by `locust -f` by hand).
ALLOWED = {"harness/load/locustfile.py", "loadtests/etcd.py"}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
            if node.module == "harness.load" and any(a.name == "locustfile" for a in node.names):
                found.add("harness.load.locustfile")
        if isinstance(node, ast.ImportFrom) and node.module == "harness.load.locustfile":
            found.add("harness.load.locustfile")
    return found


def test_only_locust_processes_import_locust_or_gevent() -> None:
    offenders = {}
    for path in [*ROOT.glob("harness/**/*.py"), *ROOT.glob("features/**/*.py"), *ROOT.glob("tests/**/*.py")]:
        rel = str(path.relative_to(ROOT))
        if rel in ALLOWED:
            continue
        bad = _imports(path) & {"locust", "gevent", "harness.load.locustfile"}
        if bad:
            offenders[rel] = sorted(bad)
    assert offenders == {}


def test_the_check_sees_a_function_level_import(tmp_path: Path) -> None:
    sample = tmp_path / "step.py"
    sample.write_text("def then():\n    from harness.load.locustfile import tag\n    import gevent.monkey\n")
    assert _imports(sample) >= {"harness.load.locustfile", "gevent"}
