"""Bad input to start_control_plane: clear errors, and nothing left running afterwards."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("cryptography")

from kube_support import processes_mentioning

from harness.errors import EnvironmentStateError, HarnessError, PrerequisiteError
from harness.kube import (
    ControlPlane,
    ControlPlaneSpec,
    KubeBinaries,
    ensure_binaries,
    load_state,
    sources_from_env,
    start_control_plane,
    stop_from_state,
)
from harness.kube.controlplane import STATE_FILE, ControlPlaneError
from harness.kube.timings import DEFAULT_TIMINGS

pytestmark = pytest.mark.kube


@pytest.fixture(scope="module")
def binaries() -> KubeBinaries:
    return ensure_binaries(sources_from_env())


@pytest.fixture()
def listening_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _nothing_left(workdir: Path) -> None:
    assert processes_mentioning(str(workdir.resolve())) == []
    assert not (workdir / STATE_FILE).exists()


def test_missing_binary_dir(tmp_path: Path) -> None:
    spec = ControlPlaneSpec(binary_dir=tmp_path / "no-such-dir")
    with pytest.raises(PrerequisiteError, match="no-such-dir does not exist"):
        start_control_plane(spec, tmp_path / "work")
    _nothing_left(tmp_path / "work")


def test_apiserver_port_in_use(tmp_path: Path, binaries: KubeBinaries, listening_port: int) -> None:
    with pytest.raises(EnvironmentStateError, match=f"apiserver_port {listening_port} on 127.0.0.1 is already in use"):
        start_control_plane(ControlPlaneSpec(apiserver_port=listening_port), tmp_path, binaries)
    _nothing_left(tmp_path)


def test_etcd_port_in_use(tmp_path: Path, binaries: KubeBinaries, listening_port: int) -> None:
    with pytest.raises(EnvironmentStateError, match=f"etcd_port {listening_port} .* already in use"):
        start_control_plane(ControlPlaneSpec(etcd_port=listening_port), tmp_path, binaries)
    _nothing_left(tmp_path)


def test_apiserver_bad_flag_stops_etcd_too(tmp_path: Path, binaries: KubeBinaries) -> None:
    spec = ControlPlaneSpec(extra_apiserver_flags=("--no-such-flag=1",))
    with pytest.raises(ControlPlaneError, match="(?s)kube-apiserver exited with code 1.*unknown flag: --no-such-flag"):
        start_control_plane(spec, tmp_path, binaries)
    _nothing_left(tmp_path)


def test_apiserver_never_ready_with_unreachable_etcd(tmp_path: Path, binaries: KubeBinaries, listening_port: int) -> None:
    # Something listens but is not etcd: the API server can never reach its storage.
    timings = dataclasses.replace(DEFAULT_TIMINGS, apiserver_ready_timeout_s=15)
    spec = ControlPlaneSpec(timings=timings, external_etcd_url=f"http://127.0.0.1:{listening_port}")
    with pytest.raises(HarnessError, match="(?s)kube-apiserver (did not get ready|exited).*log .*kube-apiserver.log ends with"):
        start_control_plane(spec, tmp_path, binaries)
    _nothing_left(tmp_path)


def test_second_start_refused_and_down_from_state_file(tmp_path: Path, binaries: KubeBinaries) -> None:
    cp = start_control_plane(ControlPlaneSpec(), tmp_path, binaries)
    try:
        with pytest.raises(EnvironmentStateError, match="still running"):
            start_control_plane(ControlPlaneSpec(), tmp_path, binaries)
        # As after a crashed run: a later `harness down` only has the state file, and one
        # zone's kwok is frozen (SIGSTOP), which must not block its termination.
        # Another process (e.g. a fault step) silences the zone through the state file alone.
        later = load_state(tmp_path)
        assert later is not None
        ControlPlane.from_state(later).silence_zone("zone-b")
        state = load_state(tmp_path)
        assert state is not None and state["silenced_zones"] == ["zone-b"]
        stop_from_state(state)
        _nothing_left(tmp_path)
    finally:
        cp.stop()
    cp.stop()
    _nothing_left(tmp_path)
