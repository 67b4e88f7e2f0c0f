"""The harness's modules in layers: no import circle, no import from a lower layer to a higher one,
and every `from harness.X import Y` names something X has. Observers talk to an environment's
protocols: outside harness/providers/, only the CLI and the pytest plugin (which pick a provider)
import a provider's own modules.

Imports are read from the code (function-level and TYPE_CHECKING ones included: a lazy import is
still a dependency). Each module's layer is the entry of LAYERS whose prefix names it most closely.
A module may import its own layer and those below it. Run with -s to see what each check found.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "harness"

# Lowest first. The ground floor imports nothing of the harness above it; each floor may use those below.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ground: vocabulary and OS helpers", (
        "harness", "harness.errors", "harness.wait", "harness.locks", "harness.topology", "harness.components",
        "harness.processes", "harness.timeline", "harness.config", "harness.command_lines", "harness.netns",
        "harness.gobuild", "harness.rootless", "harness.bugs", "harness.judge", "harness.files")),
    ("clients: etcd, the cloud API, backup mechanics", (
        "harness.etcd_gateway", "harness.aws", "harness.backup")),
    ("kube: Kubernetes clients, binaries and the seed's components", (
        "harness.kube", "harness.etcd_builds", "harness.operator_tasks.tasks")),
    ("providers: environments and what they can do", ("harness.providers", "harness.operator_tasks")),
    ("probes: observations", ("harness.probes",)),
    ("reference: the control plane deployed", ("harness.reference",)),
    ("validate: pure judgements of observations", ("harness.validate",)),
    ("actions: faults, load, reports, exploration", (
        "harness.faults", "harness.load", "harness.report", "harness.explore")),
    ("scenarios and commands", (
        "harness.steps", "harness.chaos_job", "harness.chaostoolkit", "harness.load_commands",
        "harness.task_commands", "harness.teardown", "harness.builds", "harness.soundness")),
    ("edges: the CLI, the pytest plugin and the documentation's pages written from them", (
        "harness.cli", "harness.pytest_plugin", "harness.docs_pages")),
)

@cache
def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str) -> Iterator[tuple[str, str | None, int]]:
    """(module imported, the name taken from it or None, line) for every import of a module."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                yield target, alias.name, node.lineno


def _owner(target: str) -> str | None:
    """The harness module an import lands in (a name imported from a package may be a submodule)."""
    while target and target not in modules():
        target = target.rpartition(".")[0]
    return target or None


@cache
def graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: line of the first such import}."""
    out: dict[str, dict[str, int]] = {}
    for name in modules():
        edges = out.setdefault(name, {})
        for target, taken, line in _imports(name):
            if not (target == "harness" or target.startswith("harness.")):
                continue
            full = f"{target}.{taken}" if taken else target
            dep = _owner(full if full in modules() else target)
            if dep and dep != name:
                edges.setdefault(dep, line)
    return out


def layer_of(name: str) -> int:
    best, depth = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = index, len(prefix)
    return best


def circles() -> list[frozenset[str]]:
    """The strongly connected parts of the import graph with more than one module (Tarjan's)."""
    edges, index, low, stack, on, found = graph(), {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = set()
            while True:
                w = stack.pop()
                on.discard(w)
                part.add(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(frozenset(part))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def upward_imports() -> list[str]:
    return [f"{src} ({LAYERS[layer_of(src)][0].split(':')[0]}) imports {dst} "
            f"({LAYERS[layer_of(dst)][0].split(':')[0]}) at line {line}"
            for src, edges in sorted(graph().items()) for dst, line in sorted(edges.items())
            if layer_of(dst) > layer_of(src)]


def test_every_module_has_a_layer() -> None:
    assert not [m for m in modules() if layer_of(m) < 0], "modules missing from LAYERS"


def test_no_import_circle() -> None:
    found = [sorted(part) for part in circles()]
    print("\n".join(f"circle of {len(part)}: {', '.join(part)}" for part in found) or "no import circle")
    assert not found


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    found = upward_imports()
    print("\n".join(found) or "no upward import")
    assert not found


# The local provider's own floors, lowest first: a part imports its own floor and those below.
LOCAL = "harness.providers.local"
LOCAL_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core: the region's record, names, plan, etcd view", ("core",)),
    ("host: one OS mechanism each", ("host",)),
    ("network: uplink, fault tables, counters", ("network",)),
    ("cloud: the local AWS account, ACLs, ELBs, the backup store", ("cloud",)),
    ("members: a member's process and its backup sidecar", ("backups", "members")),
    ("seed: the local Kubernetes seed and what runs on it", ("seed",)),
    ("effects: the faults' effects in the router and the nodes", ("effects",)),
    ("region: LocalRegion and LocalEnvironment", ("region",)),
    ("the cloud's reconciler, a process of its own driving the region", ("reconciler",)),
)


def local_floor(name: str) -> int:
    part = name[len(LOCAL) + 1:].split(".")[0]
    return next((i for i, (_, parts) in enumerate(LOCAL_LAYERS) if part in parts), -1)


def test_the_local_provider_in_floors() -> None:
    inside = [m for m in modules() if m.startswith(LOCAL + ".")]
    assert not [m for m in inside if local_floor(m) < 0], "local provider modules missing from LOCAL_LAYERS"
    up = [f"{src} imports {dst} at line {line}" for src in sorted(inside) for dst, line in sorted(graph()[src].items())
          if dst.startswith(LOCAL + ".") and local_floor(dst) > local_floor(src)]
    print("\n".join(up) or "no upward import inside the local provider")
    assert not up


def test_kube_backup_and_the_etcd_gateway_never_import_providers() -> None:
    low = [m for m in modules() if m.startswith(("harness.kube", "harness.backup")) or m == "harness.etcd_gateway"]
    assert not [(m, d) for m in low for d in graph()[m] if d.startswith("harness.providers")]


@cache
def _defines(name: str) -> set[str]:
    """Names bound at a module's top level (its imports included), and its submodules."""
    tree = ast.parse(modules()[name].read_text())
    bound = {f.rpartition(".")[2] for f in modules() if f.rpartition(".")[0] == name}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node in tree.body:
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).partition(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bound


def test_every_harness_import_names_what_its_module_has() -> None:
    """A lazy import of a name that moved fails only when its function runs: caught here."""
    missing = []
    for name in modules():
        for target, taken, line in _imports(name):
            if not target.startswith("harness"):
                continue
            if target not in modules():
                missing.append(f"{name}:{line}: no module {target}")
            elif taken and taken != "*" and taken not in _defines(target):
                missing.append(f"{name}:{line}: {target} has no {taken}")
    assert not missing, "\n".join(missing)


# Observers and the provider's own modules.

HARNESS = Path(__file__).resolve().parents[2] / "harness"
PROVIDERS = ("harness.providers.local", "harness.providers.kind", "harness.providers.cluster")
ALLOWED = {"cli.py", "pytest_plugin.py"}


def _names(path: Path) -> set[str]:
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
        found = sorted(n for n in _names(path) if n.startswith(PROVIDERS))
        if found:
            offenders[str(rel)] = found
    assert offenders == {}


def test_the_local_environment_and_a_shoot_etcd_are_etcd_clusters() -> None:
    from harness.providers.local.region import LocalEnvironment
    from harness.providers.local.seed.shoot import ShootEtcd

    cluster = ("client_netns", "client", "status", "leader", "wait_healthy", "metrics", "member", "zone")
    for cls, wanted in ((LocalEnvironment, (*cluster, "zone_pair_bytes", "shoot_etcd")), (ShootEtcd, cluster)):
        missing = [m for m in wanted if not callable(getattr(cls, m, None))]
        assert missing == [], f"{cls.__name__} lacks {missing}"


def test_providers_do_not_call_up_into_heal_or_deploy() -> None:
    # The caller heals and undeploys (harness.teardown), then calls `down`: a provider that did it
    # itself would sit in a cycle with the faults and the reference that use it.
    above = ("harness.faults", "harness.reference.deploy", "harness.teardown", "harness.steps", "harness.chaos_job")
    offenders = {str(p.relative_to(HARNESS)): sorted(n for n in _names(p) if n.startswith(above))
                 for p in sorted((HARNESS / "providers").rglob("*.py"))}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_cli_imports_with_the_standard_library_alone() -> None:
    """`harness up/fault/heal/down` run on the system's own Python, as any user, with no package of
    the venv (tests/integration/test_rootless.py, which needs root): what the CLI imports at its top
    may need nothing but the standard library. -S leaves the venv's site-packages off the path."""
    done = subprocess.run([sys.executable, "-S", "-c", "import harness.cli"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
