"""Observers talk to an environment's protocols: outside harness/providers/, only the CLI and the
pytest plugin (which pick a provider) may import a provider's own modules."""

from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"
PROVIDERS = ("harness.providers.local", "harness.providers.kind", "harness.providers.cluster")
ALLOWED = {"cli.py", "pytest_plugin.py"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_only_the_cli_and_the_plugin_name_a_provider() -> None:
    offenders = {}
    for path in sorted(HARNESS.rglob("*.py")):
        rel = path.relative_to(HARNESS)
        if rel.parts[0] == "providers" or str(rel) in ALLOWED:
            continue
        found = sorted(n for n in _imports(path) if n.startswith(PROVIDERS))
        if found:
            offenders[str(rel)] = found
    assert offenders == {}


def test_the_local_environment_and_a_shoot_etcd_are_etcd_clusters() -> None:
    from harness.providers.local.region import LocalEnvironment
    from harness.providers.local.shoot import ShootEtcd

    cluster = ("client_netns", "client", "status", "leader", "wait_healthy", "metrics", "member", "zone")
    for cls, wanted in ((LocalEnvironment, (*cluster, "zone_pair_bytes", "shoot_etcd")), (ShootEtcd, cluster)):
        missing = [m for m in wanted if not callable(getattr(cls, m, None))]
        assert missing == [], f"{cls.__name__} lacks {missing}"


def test_providers_do_not_call_up_into_heal_or_deploy() -> None:
    # The caller heals and undeploys (harness.teardown), then calls `down`: a provider that did it
    # itself would sit in a cycle with the faults and the reference that use it.
    above = ("harness.faults", "harness.reference.deploy", "harness.teardown", "harness.steps", "harness.chaos_run")
    offenders = {str(p.relative_to(HARNESS)): sorted(n for n in _imports(p) if n.startswith(above))
                 for p in sorted((HARNESS / "providers").rglob("*.py"))}
    assert {k: v for k, v in offenders.items() if v} == {}
