"""Pure parts of harness.kube: version parsing, binary lookup order, timings, spec, state."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.errors import ConfigError, EnvironmentStateError, PrerequisiteError
from harness.kube import binaries as b
from harness.kube.controlplane import (
    ControlPlaneSpec,
    NodeSpec,
    default_nodes,
    stop_from_state,
)
from harness.processes import ProcessRecord, boot_id, start_ticks
from harness.kube.timings import KubeTimings

# --- versions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("binary", "output", "expected"),
    [
        ("kube-apiserver", "Kubernetes v1.36.3\n", (1, 36, 3)),
        ("kube-scheduler", "Kubernetes v1.36.3-dirty", (1, 36, 3)),
        ("kube-apiserver", "Kubernetes v0.0.0-master+$Format:%H$", (0, 0, 0)),
        ("kwok", "kwok version v0.8.0 go1.26.8 (linux/amd64)", (0, 8, 0)),
        ("etcd", "etcd Version: 3.4.23\nGit SHA: Not provided\nGo Version: go1.19.8\n", (3, 4, 23)),
        ("etcd", "nonsense", None),
    ],
)
def test_parse_version(binary: str, output: str, expected: tuple[int, int, int] | None) -> None:
    assert b.parse_version(output, binary) == expected


def test_version_problem() -> None:
    assert b.version_problem("kube-apiserver", b._as_tuple(b.KUBERNETES_VERSION)) is None
    assert "pinned to" in (b.version_problem("kube-apiserver", (1, 30, 0)) or "")
    assert b.version_problem("kwok", b._as_tuple(b.KWOK_VERSION)) is None
    assert b.version_problem("etcd", (3, 5, 35)) is None
    assert b.version_problem("etcd", (3, 4, 31)) is None
    assert b.version_problem("etcd", (3, 6, 8)) is None
    # Debian bookworm's etcd-server: kube-apiserver then disables watch progress (see binaries.py).
    assert "3.5.13+" in (b.version_problem("etcd", (3, 4, 23)) or "")
    assert b.version_problem("etcd", (3, 5, 12)) is not None
    assert "no recognisable version" in (b.version_problem("etcd", None) or "")


# --- lookup order ---------------------------------------------------------------------------


def _fake(directory: Path, name: str, version_line: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    path.chmod(0o755)
    return path


def _right_version(name: str) -> str:
    if name == "etcd":
        return "etcd Version: 3.5.35"
    if name == "kwok":
        return f"kwok version {b.KWOK_VERSION} go1.26"
    return f"Kubernetes {b.KUBERNETES_VERSION}"


def _full_set(directory: Path, names: tuple[str, ...] = b.ALL_BINARIES) -> None:
    for name in names:
        _fake(directory, name, _right_version(name))


def test_lookup_order_explicit_then_assets_then_cache(tmp_path: Path) -> None:
    explicit, assets, cache_root = tmp_path / "explicit", tmp_path / "assets", tmp_path / "cache"
    _full_set(b.cache_dir(cache_root))
    _full_set(assets, ("etcd", "kube-apiserver"))  # what envtest's KUBEBUILDER_ASSETS holds
    _full_set(explicit, ("kube-scheduler",))
    found, missing = b.locate(b.BinarySources(explicit, assets, cache_root))
    assert missing == []
    assert found["kube-scheduler"].parent == explicit
    assert found["etcd"].parent == assets
    assert found["kube-apiserver"].parent == assets
    assert found["kube-controller-manager"].parent == b.cache_dir(cache_root)
    assert found["kwok"].parent == b.cache_dir(cache_root)


def test_nothing_found_means_everything_missing(tmp_path: Path) -> None:
    found, missing = b.locate(b.BinarySources(None, tmp_path / "empty-assets", tmp_path / "cache"))
    assert found == {} and missing == list(b.ALL_BINARIES)


def test_wrong_version_is_a_clear_error(tmp_path: Path) -> None:
    _full_set(tmp_path / "bin")
    _fake(tmp_path / "bin", "kube-apiserver", "Kubernetes v1.30.0")
    with pytest.raises(PrerequisiteError, match=r"wrong version: it is v1\.30\.0; the harness is pinned to v1\.36\.3"):
        b.locate(b.BinarySources(tmp_path / "bin", None, None))


def test_missing_binary_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="does not exist"):
        b.ensure_binaries(b.BinarySources(tmp_path / "nope", None, tmp_path / "cache"), build=False)


def test_incomplete_binary_dir_names_what_is_missing(tmp_path: Path) -> None:
    _full_set(tmp_path / "bin", ("etcd", "kube-apiserver"))
    with pytest.raises(PrerequisiteError, match="lacks kube-controller-manager, kube-scheduler, kwok"):
        b.ensure_binaries(b.BinarySources(tmp_path / "bin", None, tmp_path / "cache"), build=False)


def test_old_etcd_in_assets_is_a_clear_error(tmp_path: Path) -> None:
    _fake(tmp_path / "assets", "etcd", "etcd Version: 3.4.23")
    with pytest.raises(PrerequisiteError, match=r"(?s)from KUBEBUILDER_ASSETS.*it is etcd v3\.4\.23; etcd 3\.5\.13\+"):
        b.ensure_binaries(b.BinarySources(None, tmp_path / "assets", tmp_path / "cache"), build=False)


def test_no_build_when_building_is_off(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="building is off"):
        b.ensure_binaries(b.BinarySources(None, None, tmp_path / "cache"), build=False)


def test_sources_from_env() -> None:
    s = b.sources_from_env(None, {"KUBEBUILDER_ASSETS": "/a", "XDG_CACHE_HOME": "/x", "HOME": "/h"})
    assert s.assets_dir == Path("/a") and s.cache_root == Path("/x/ha-harness/kube")
    s = b.sources_from_env(Path("/e"), {"HOME": "/h"})
    assert s.explicit_dir == Path("/e") and s.assets_dir is None and s.cache_root == Path("/h/.cache/ha-harness/kube")
    assert b.cache_dir(Path("/x")).name == b.PINNED_VERSION


def test_go_mod_pins_every_staging_module_to_the_kubernetes_tag() -> None:
    text = b.GOMOD_DIR.joinpath("go.mod").read_text()
    assert f"k8s.io/kubernetes {b.KUBERNETES_VERSION}" in text
    staging = "v0." + b.KUBERNETES_VERSION.split(".", 1)[1]
    replaces = [line.split() for line in text.splitlines() if "=>" in line]
    assert len(replaces) > 25
    assert all(r[-1] == staging for r in replaces), replaces
    pins = {"etcd": f"go.etcd.io/etcd/server/v3 {b.ETCD_VERSION}", "kwok": f"sigs.k8s.io/kwok {b.KWOK_VERSION}"}
    for name, (package, module_dir) in b.PACKAGES.items():
        mod = module_dir.joinpath("go.mod").read_text()
        # Listed as a tool, so `go mod tidy` keeps go.sum complete for it.
        assert f"\t{package}\n" in mod or f"tool {package}\n" in mod, name
        assert pins.get(name, f"k8s.io/kubernetes {b.KUBERNETES_VERSION}") in mod, name
        assert module_dir.joinpath("go.sum").is_file()


def test_failed_build_reports_go_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_go = tmp_path / "gobin" / "go"
    fake_go.parent.mkdir()
    fake_go.write_text(
        textwrap.dedent(
            """\
            #!/bin/sh
            if [ "$1" = version ]; then echo 'go version go1.26.8 linux/amd64'; exit 0; fi
            echo 'compile: something exploded' >&2
            exit 2
            """
        )
    )
    fake_go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_go.parent}:/usr/bin:/bin")
    messages: list[str] = []
    with pytest.raises(PrerequisiteError, match="(?s)building etcd.*failed \\(exit 2\\).*something exploded"):
        b.build_binaries(tmp_path / "cache", progress=messages.append)
    assert any("building etcd" in m for m in messages)
    assert not b.cache_dir(tmp_path / "cache").exists()


# --- timings --------------------------------------------------------------------------------


def test_timings_flags() -> None:
    t = KubeTimings(node_monitor_period_s=1, node_monitor_grace_period_s=9, default_unreachable_toleration_s=6)
    assert "--node-monitor-grace-period=9s" in t.controller_manager_flags()
    assert "--node-monitor-period=1s" in t.controller_manager_flags()
    assert "--node-eviction-rate=10" in t.controller_manager_flags()
    assert "--default-unreachable-toleration-seconds=6" in t.apiserver_flags()
    assert "--default-not-ready-toleration-seconds=5" in t.apiserver_flags()
    assert t.kwok_flags() == ["--node-lease-duration-seconds=8"]
    assert t.expected_eviction_s() == 9 + 6 + 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"node_monitor_grace_period_s": 1, "node_monitor_period_s": 1},
        {"node_lease_duration_s": 40},
        {"node_eviction_rate": 0},
        {"default_unreachable_toleration_s": -1},
    ],
)
def test_bad_timings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        KubeTimings(**kwargs)  # type: ignore[arg-type]


# --- spec and state -------------------------------------------------------------------------


def test_default_nodes() -> None:
    spec = ControlPlaneSpec()
    assert [n.name for n in spec.nodes] == ["zone-a-1", "zone-a-2", "zone-b-1", "zone-b-2", "zone-c-1", "zone-c-2"]
    assert spec.zones == ("zone-a", "zone-b", "zone-c")
    assert len(default_nodes(("z1",), 3)) == 3


@pytest.mark.parametrize(
    "spec_kwargs",
    [
        {"nodes": ()},
        {"nodes": (NodeSpec("a", "z"), NodeSpec("a", "z"))},
        {"nodes": (NodeSpec("Bad_Name", "z"),)},
        {"apiserver_port": 70000},
    ],
)
def test_bad_spec(spec_kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        ControlPlaneSpec(**spec_kwargs)  # type: ignore[arg-type]


def test_stop_from_state_kills_only_what_it_started(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        ticks = start_ticks(proc.pid)
        assert ticks is not None
        live = ProcessRecord("sleeper", proc.pid, ticks, boot_id(), str(tmp_path / "log"), ("sleep",))
        recycled = ProcessRecord("recycled", proc.pid, ticks + 1, boot_id(), str(tmp_path / "log"), ("sleep",))
        assert live.alive() and not recycled.alive()
        state = {
            "version": 1,
            "workdir": str(tmp_path),
            "kubeconfig": str(tmp_path / "kubeconfig"),
            "ports": {"apiserver": 1},
            "nodes": [{"name": "n1", "zone": "z"}],
            "timings": {},
            "pki": {k: str(tmp_path / k) for k in ("ca_cert", "apiserver_cert", "apiserver_key", "sa_public_key", "sa_private_key", "admin_cert", "admin_key")},
            "processes": [recycled.to_dict()],
        }
        stop_from_state(state, progress=lambda m: None)
        assert proc.poll() is None, "a record with another start time must not be signalled"
        state["processes"] = [live.to_dict()]
        stop_from_state(state, progress=lambda m: None)
        assert proc.wait(timeout=10) is not None
        stop_from_state(state, progress=lambda m: None)  # idempotent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_malformed_state_is_a_clear_error() -> None:
    with pytest.raises(EnvironmentStateError):
        stop_from_state({"version": 1, "ports": {}})


def test_too_old_go_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_go = tmp_path / "gobin" / "go"
    fake_go.parent.mkdir()
    fake_go.write_text("#!/bin/sh\necho 'go version go1.19.8 linux/amd64'\n")
    fake_go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_go.parent}:/usr/bin:/bin")
    with pytest.raises(PrerequisiteError, match="(?s)go1.19.8.*install Go >= 1.26"):
        b.build_binaries(tmp_path / "cache", progress=lambda m: None)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(PrerequisiteError, match="`go` is not on PATH"):
        b.build_binaries(tmp_path / "cache", progress=lambda m: None)


def test_concurrent_run_waits_for_the_build_lock_instead_of_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl
    import threading

    fake_go = tmp_path / "gobin" / "go"
    fake_go.parent.mkdir()
    fake_go.write_text("#!/bin/sh\n[ \"$1\" = version ] && echo 'go version go1.26.8 linux/amd64' && exit 0\nexit 9\n")
    fake_go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_go.parent}:/usr/bin:/bin")
    root = tmp_path / "cache"
    root.mkdir()
    messages: list[str] = []
    result: list[Path] = []
    with open(root / f".{b.PINNED_VERSION}.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # "another run" is building
        waiter = threading.Thread(target=lambda: result.append(b.build_binaries(root, progress=messages.append, heartbeat_s=0.2)))
        waiter.start()
        waiter.join(1.5)
        assert waiter.is_alive() and any("another harness run holds its lock" in m for m in messages)
        _full_set(b.cache_dir(root))  # the other run finishes its build
    waiter.join(10)
    assert result == [b.cache_dir(root)]
    assert not any("building etcd" in m for m in messages), messages


def test_kwok_stages_come_from_the_pinned_module_and_are_kept_beside_kwok(tmp_path: Path) -> None:
    from harness.kube.binaries import STAGES_FILE, kwok_stages

    if shutil.which("go") is None:
        pytest.skip("needs go to read the pinned kwok module")
    text = kwok_stages(tmp_path / "kwok")
    names = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("  name:")]
    assert names == ["node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete", "pod-delete"]
    assert (tmp_path / STAGES_FILE).read_text() == text
    (tmp_path / STAGES_FILE).write_text("kept")
    assert kwok_stages(tmp_path / "kwok") == "kept"


def test_kwoks_node_initialize_keeps_an_address_a_node_has(tmp_path: Path) -> None:
    """The pinned stage writes `addresses:` again whenever a node is not Ready and it has no
    Hostname address, which clears the InternalIP the API server reaches its kubelet API on (seen
    after a zone outage: port-forwards to the zone failed with "no preferred addresses found")."""
    import yaml

    from harness.kube.binaries import kwok_crd, kwok_stages
    from harness.kube.controlplane import keep_node_addresses

    if shutil.which("go") is None:
        pytest.skip("needs go to read the pinned kwok module")
    stages = {d["metadata"]["name"]: d for d in yaml.safe_load_all(keep_node_addresses(kwok_stages(tmp_path / "kwok")))}
    template = stages["node-initialize"]["spec"]["next"]["statusTemplate"]
    assert "{{ if not $hasInternalIP }}\naddresses:" in template
    assert "{{ if and (not $hasHostname) (not $hasInternalIP) }}" in template
    assert "(not $hasInternalIP) (not $hasHostname)" not in template
    assert yaml.safe_load(kwok_crd(tmp_path / "kwok", "portforwards"))["spec"]["names"]["kind"] == "PortForward"
