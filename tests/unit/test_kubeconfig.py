"""Merging a cluster's context into a kubeconfig and taking it out again, as kind does.

The source kubeconfig is the one the local control plane writes (real certificates).
"""

from __future__ import annotations

import functools
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import ConfigError
from harness.kube import kubeconfig
from harness.kube.pki import generate_pki, write_kubeconfig

SERVER = "https://127.0.0.1:6443"
NAME = "ha-harness-region-a"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("source")
    return write_kubeconfig(directory / "admin.kubeconfig", SERVER, generate_pki(directory / "pki"))


@pytest.fixture(scope="module")
def source_data(source: Path) -> dict[str, Any]:
    return yaml.safe_load(source.read_text())


def other_config(name: str = "prod", current: str | None = "prod") -> dict[str, Any]:
    """A user's kubeconfig with one context of their own."""
    data: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": f"https://{name}.example.com"}}],
        "users": [{"name": name, "user": {"token": "secret"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
    }
    if current is not None:
        data["current-context"] = current
    return data


def write(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def names(data: dict[str, Any], key: str) -> list[str]:
    return [e["name"] for e in data.get(key) or []]


def no_leftovers(directory: Path, *expected: str) -> None:
    """Neither a `.lock` nor a temporary file stays behind."""
    assert sorted(p.name for p in directory.iterdir()) == sorted(expected)


# ---------------------------------------------------------------- merge


def test_merge_creates_a_missing_file(tmp_path: Path, source: Path, source_data: dict[str, Any]) -> None:
    target = tmp_path / "home" / ".kube" / "config"  # the directory is missing too
    assert kubeconfig.merge(target, source, NAME) is True
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # it holds a client key
    data = load(target)
    assert data["current-context"] == NAME
    assert data["clusters"] == [{"name": NAME, "cluster": source_data["clusters"][0]["cluster"]}]
    assert data["users"] == [{"name": NAME, "user": source_data["users"][0]["user"]}]
    assert data["contexts"] == [{"name": NAME, "context": {"cluster": NAME, "user": NAME}}]
    assert data["clusters"][0]["cluster"]["server"] == SERVER
    assert Path(data["users"][0]["user"]["client-key"]).is_file()
    no_leftovers(target.parent, "config")


def test_a_client_of_the_control_planes_kubeconfig_copies_no_key_into_the_temporary_directory(
        source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the credentials embedded, the Kubernetes client writes each into a temporary file,
    left behind by every process a signal stops (a node agent killed with its node)."""
    import tempfile

    from kubernetes import config as k8s_config

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    api = k8s_config.new_client_from_config(config_file=str(source))
    assert Path(api.configuration.key_file).is_file() and Path(api.configuration.cert_file).is_file()
    assert list(tmp_path.iterdir()) == []


def test_merge_keeps_other_contexts(tmp_path: Path, source: Path) -> None:
    target = write(tmp_path / "config", other_config())
    assert kubeconfig.merge(target, source, NAME) is False  # it existed: remove must not delete it
    data = load(target)
    for key in ("clusters", "users", "contexts"):
        assert names(data, key) == ["prod", NAME]
    before = other_config()
    assert data["clusters"][0] == before["clusters"][0]
    assert data["users"][0] == before["users"][0]
    assert data["contexts"][0] == before["contexts"][0]
    assert data["preferences"] == {}
    assert data["current-context"] == NAME  # the new cluster is current, as kind makes it
    no_leftovers(tmp_path, "config")


def test_merge_replaces_an_entry_of_the_same_name(tmp_path: Path, source: Path, source_data: dict[str, Any]) -> None:
    stale = other_config()
    stale["clusters"].append({"name": NAME, "cluster": {"server": "https://old.example.com"}})
    stale["users"].append({"name": NAME, "user": {"token": "old"}})
    stale["contexts"].append({"name": NAME, "context": {"cluster": NAME, "user": NAME, "namespace": "old"}})
    target = write(tmp_path / "config", stale)
    kubeconfig.merge(target, source, NAME)
    kubeconfig.merge(target, source, NAME)  # and merging twice does not duplicate
    data = load(target)
    for key in ("clusters", "users", "contexts"):
        assert names(data, key) == ["prod", NAME]
    assert data["clusters"][1]["cluster"] == source_data["clusters"][0]["cluster"]
    assert data["users"][1]["user"] == source_data["users"][0]["user"]
    assert data["contexts"][1]["context"] == {"cluster": NAME, "user": NAME}


def test_merge_into_an_empty_file(tmp_path: Path, source: Path) -> None:
    target = tmp_path / "config"
    target.write_text("")
    assert kubeconfig.merge(target, source, NAME) is False
    assert names(load(target), "contexts") == [NAME]


def test_merged_context_is_what_the_kubernetes_client_loads(tmp_path: Path, source: Path) -> None:
    k8s_config = pytest.importorskip("kubernetes.config")
    target = write(tmp_path / "config", other_config())
    kubeconfig.merge(target, source, NAME)
    contexts, active = k8s_config.list_kube_config_contexts(str(target))
    assert active["name"] == NAME and sorted(c["name"] for c in contexts) == sorted(["prod", NAME])
    from kubernetes import client

    configuration = client.Configuration()
    k8s_config.load_kube_config(str(target), client_configuration=configuration)
    assert configuration.host == SERVER


def test_merge_needs_a_current_context_in_the_source(tmp_path: Path) -> None:
    src = write(tmp_path / "src", other_config(current=None))
    with pytest.raises(ConfigError, match="no current context"):
        kubeconfig.merge(tmp_path / "config", src, NAME)
    assert not (tmp_path / "config").exists()


def test_merge_of_a_source_with_a_dangling_context_is_a_config_error(tmp_path: Path) -> None:
    broken = other_config()
    broken["users"] = []
    src = write(tmp_path / "src", broken)
    with pytest.raises(ConfigError):
        kubeconfig.merge(tmp_path / "config", src, NAME)


# ---------------------------------------------------------------- remove


def test_remove_takes_out_ours_and_leaves_others(tmp_path: Path, source: Path) -> None:
    target = write(tmp_path / "config", other_config())
    kubeconfig.merge(target, source, NAME)
    assert kubeconfig.remove(target, NAME) is True
    data = load(target)
    for key in ("clusters", "users", "contexts"):
        assert names(data, key) == ["prod"]
    assert data["current-context"] == ""  # ours was current: unset, as kind does
    assert data["contexts"][0] == other_config()["contexts"][0]
    no_leftovers(tmp_path, "config")


def test_remove_keeps_someone_elses_current_context(tmp_path: Path, source: Path) -> None:
    target = write(tmp_path / "config", other_config())
    kubeconfig.merge(target, source, NAME)
    data = load(target)
    data["current-context"] = "prod"  # the user switched back meanwhile
    write(target, data)
    assert kubeconfig.remove(target, NAME) is True
    data = load(target)
    assert data["current-context"] == "prod" and names(data, "contexts") == ["prod"]


def test_remove_of_an_absent_name_changes_nothing(tmp_path: Path) -> None:
    target = write(tmp_path / "config", other_config())
    before = target.read_text()
    assert kubeconfig.remove(target, NAME) is False
    assert target.read_text() == before
    no_leftovers(tmp_path, "config")


def test_remove_from_a_missing_file(tmp_path: Path) -> None:
    assert kubeconfig.remove(tmp_path / "config", NAME, delete_if_empty=True) is False
    no_leftovers(tmp_path)


def test_remove_deletes_the_file_it_created(tmp_path: Path, source: Path) -> None:
    target = tmp_path / "config"
    created = kubeconfig.merge(target, source, NAME)
    assert kubeconfig.remove(target, NAME, delete_if_empty=created) is True
    assert not target.exists()
    no_leftovers(tmp_path)


def test_remove_keeps_a_created_file_that_others_have_used_since(tmp_path: Path, source: Path) -> None:
    target = tmp_path / "config"
    created = kubeconfig.merge(target, source, NAME)
    data = load(target)
    for key in ("clusters", "users", "contexts"):
        data[key] += other_config()[key]  # another tool added its context to the file we created
    write(target, data)
    assert kubeconfig.remove(target, NAME, delete_if_empty=created) is True
    assert target.exists()
    for key in ("clusters", "users", "contexts"):
        assert names(load(target), key) == ["prod"]
    no_leftovers(tmp_path, "config")


def test_remove_without_delete_if_empty_keeps_an_empty_file(tmp_path: Path, source: Path) -> None:
    target = tmp_path / "config"
    kubeconfig.merge(target, source, NAME)
    assert kubeconfig.remove(target, NAME) is True
    data = load(target)
    assert data["current-context"] == ""
    assert not any(data[key] for key in ("clusters", "users", "contexts"))


# ---------------------------------------------------------------- the lock


def test_lock_is_held_while_writing_and_released_after(tmp_path: Path) -> None:
    target = tmp_path / "config"
    lock = tmp_path / "config.lock"
    with kubeconfig._locked(target):
        assert lock.exists()
    assert not lock.exists()
    with pytest.raises(RuntimeError), kubeconfig._locked(target):
        raise RuntimeError("boom")
    assert not lock.exists()


def test_a_foreign_lock_makes_locking_wait_then_fail(tmp_path: Path) -> None:
    target = tmp_path / "config"
    lock = tmp_path / "config.lock"
    lock.touch()
    start = time.monotonic()
    with pytest.raises(ConfigError) as e:
        with kubeconfig._locked(target, timeout=0.2):
            pytest.fail("the lock was taken although someone else holds it")
    assert time.monotonic() - start >= 0.2  # it waited
    assert str(lock) in str(e.value)
    assert lock.exists()  # someone else's lock is not ours to remove


@pytest.fixture
def short_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubeconfig, "_locked", functools.partial(kubeconfig._locked, timeout=0.2))


@pytest.mark.usefixtures("short_lock")
def test_a_foreign_lock_makes_merge_fail_naming_the_lock(tmp_path: Path, source: Path) -> None:
    target = write(tmp_path / "config", other_config())
    before = target.read_text()
    (tmp_path / "config.lock").touch()
    with pytest.raises(ConfigError, match=str(tmp_path / "config.lock")):
        kubeconfig.merge(target, source, NAME)
    assert target.read_text() == before
    no_leftovers(tmp_path, "config", "config.lock")


@pytest.mark.usefixtures("short_lock")
def test_a_foreign_lock_makes_merge_into_a_missing_file_fail(tmp_path: Path, source: Path) -> None:
    (tmp_path / "config.lock").touch()
    with pytest.raises(ConfigError, match=r"config\.lock"):
        kubeconfig.merge(tmp_path / "config", source, NAME)
    no_leftovers(tmp_path, "config.lock")


@pytest.mark.usefixtures("short_lock")
def test_a_foreign_lock_makes_remove_fail(tmp_path: Path, source: Path) -> None:
    target = tmp_path / "config"
    kubeconfig.merge(target, source, NAME)
    before = target.read_text()
    (tmp_path / "config.lock").touch()
    with pytest.raises(ConfigError, match=r"config\.lock"):
        kubeconfig.remove(target, NAME, delete_if_empty=True)
    assert target.read_text() == before


def test_merge_waits_for_a_lock_that_goes_away(tmp_path: Path, source: Path) -> None:
    target = write(tmp_path / "config", other_config())
    lock = tmp_path / "config.lock"
    lock.touch()
    release = threading.Timer(0.3, lock.unlink)
    release.start()
    start = time.monotonic()
    try:
        kubeconfig.merge(target, source, NAME)
    finally:
        release.cancel()
    assert time.monotonic() - start >= 0.25
    assert names(load(target), "contexts") == ["prod", NAME]
    no_leftovers(tmp_path, "config")


# ---------------------------------------------------------------- malformed files


@pytest.mark.parametrize(("text", "match"), [
    ("clusters: [unclosed\n", "not valid YAML"),
    ("apiVersion: v1\n\tkind: Config\n", "not valid YAML"),
    ("- just\n- a list\n", "not a kubeconfig"),
    ("just a string\n", "not a kubeconfig"),
])
@pytest.mark.parametrize("action", ["merge", "remove"])
def test_malformed_target_is_a_config_error(tmp_path: Path, source: Path, text: str, match: str, action: str) -> None:
    target = tmp_path / "config"
    target.write_text(text)
    with pytest.raises(ConfigError, match=match) as e:
        if action == "merge":
            kubeconfig.merge(target, source, NAME)
        else:
            kubeconfig.remove(target, NAME, delete_if_empty=True)
    assert str(target) in str(e.value)
    assert target.read_text() == text  # left as it was
    no_leftovers(tmp_path, "config")


def test_malformed_source_is_a_config_error(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.write_text("contexts: {\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        kubeconfig.merge(tmp_path / "config", src, NAME)
    no_leftovers(tmp_path, "src")


# ---------------------------------------------------------------- doubtful behaviour


def test_credentials_are_never_written_world_readable(tmp_path: Path, source: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    modes: list[int] = []
    real_replace = os.replace

    def spy(src: Any, dst: Any) -> None:
        modes.append(stat.S_IMODE(os.stat(src).st_mode))  # the mode the credentials were written with
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    old = os.umask(0o022)
    try:
        kubeconfig.merge(tmp_path / "config", source, NAME)
    finally:
        os.umask(old)
    assert modes and all(m & 0o077 == 0 for m in modes), [oct(m) for m in modes]


def test_merge_writes_through_a_symlinked_kubeconfig(tmp_path: Path, source: Path) -> None:
    real = write(tmp_path / "dotfiles" / "kubeconfig", other_config())
    link = tmp_path / "config"
    link.symlink_to(real)
    kubeconfig.merge(link, source, NAME)
    assert link.is_symlink()
    assert names(load(real), "contexts") == ["prod", NAME]
