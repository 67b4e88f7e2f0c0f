"""One builder per control-plane command line: what it makes, and that nothing else makes one."""

from __future__ import annotations

from pathlib import Path

from harness.command_lines import etcd_command, kube_apiserver_command
from harness.kube.pki import pki_files

HARNESS = Path(__file__).resolve().parents[2] / "harness"


def test_an_etcd_member_listens_where_it_advertises_and_keeps_metrics_apart() -> None:
    args = etcd_command("etcd", "m-0", "/d", "http://10.0.0.1:2379", "http://10.0.0.1:2380", "m-0=http://10.0.0.1:2380",
                        token="t", metrics_url="http://10.0.0.1:2381", also_listen=("http://127.0.0.1:2379",))
    assert args[0] == "etcd"
    assert "--listen-client-urls=http://10.0.0.1:2379,http://127.0.0.1:2379" in args
    assert "--advertise-client-urls=http://10.0.0.1:2379" in args
    assert {"--initial-cluster-token=t", "--listen-metrics-urls=http://10.0.0.1:2381", "--initial-cluster-state=new"} <= set(args)
    bare = etcd_command("etcd", "d", "/d", "http://a:1", "http://a:2", "d=http://a:2")
    assert not [a for a in bare if a.startswith(("--initial-cluster-token", "--listen-metrics-urls"))]


def test_a_kube_apiserver_puts_events_on_their_own_members_only_when_given(tmp_path: Path) -> None:
    pki = pki_files(tmp_path)
    args = kube_apiserver_command("kas", ["http://a:2379", "http://b:2379"], "10.0.0.5", 443, pki, tmp_path / "c",
                                  "10.0.0.0/24", events_servers=["http://e:2379", "http://f:2379"], extra=["--x=1"])
    assert "--etcd-servers=http://a:2379,http://b:2379" in args
    assert "--etcd-servers-overrides=/events#http://e:2379;http://f:2379" in args
    assert f"--client-ca-file={tmp_path / 'ca.crt'}" in args and args[-1] == "--x=1"
    plain = kube_apiserver_command("kas", ["http://a:2379"], "10.0.0.5", 443, pki, tmp_path / "c", "10.0.0.0/24")
    assert not [a for a in plain if a.startswith("--etcd-servers-overrides")]


def test_no_other_module_builds_an_etcd_or_kube_apiserver_command_line() -> None:
    builders = {str(p.relative_to(HARNESS)) for p in HARNESS.rglob("*.py")
                if "--initial-advertise-peer-urls" in p.read_text() or "--service-account-issuer" in p.read_text()}
    assert builders == {"command_lines.py"}
