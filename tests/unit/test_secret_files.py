"""A Secret written out as files, as a kubelet mounts it, for processes that may be reading them."""

from __future__ import annotations

import base64
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness.kube.etcd_tls import write_secret


class Secrets:
    """What write_secret asks of the API: one Secret's data, as the client returns it."""

    def __init__(self, data: dict[str, bytes]) -> None:
        self.data = data

    def read_namespaced_secret(self, name: str, namespace: str, **_: Any) -> Any:
        return SimpleNamespace(data={k: base64.b64encode(v).decode() for k, v in self.data.items()})


def test_a_secret_written_again_replaces_changed_files_whole_and_leaves_equal_ones_alone(tmp_path: Path) -> None:
    api = Secrets({"ca.crt": b"first CA", "tls.key": b"key"})
    files = write_secret(api, "ns", "etcd-ca", tmp_path / "ca")
    assert files["ca.crt"].read_bytes() == b"first CA" and oct(files["ca.crt"].stat().st_mode)[-3:] == "600"
    ca, key = files["ca.crt"].stat().st_ino, files["tls.key"].stat().st_ino
    with files["ca.crt"].open("rb") as reader:  # a member that opened its CA file before the rewrite
        api.data["ca.crt"] = b"second CA"
        again = write_secret(api, "ns", "etcd-ca", tmp_path / "ca")
        assert reader.read() == b"first CA", "the open file was not truncated under its reader"
    assert again["ca.crt"].read_bytes() == b"second CA" and again["ca.crt"].stat().st_ino != ca
    assert again["tls.key"].stat().st_ino == key, "an unchanged file is not written again"
    assert sorted(p.name for p in (tmp_path / "ca").iterdir()) == ["ca.crt", "tls.key"]
