"""The load balancer's HAProxy configuration and spec validation (no namespaces, no processes)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.errors import ConfigError, PrerequisiteError
from harness.kube import loadbalancer as lb
from harness.kube.loadbalancer import LoadBalancerSpec, haproxy_config

BACKENDS = ("10.77.1.10", "10.77.2.10", "10.77.3.10")


def haproxy() -> str:
    try:
        return lb.find_haproxy()
    except PrerequisiteError as e:
        pytest.skip(str(e))


def section(config: str, header: str) -> list[str]:
    """The stripped lines of one section (up to the next blank line)."""
    lines = config.splitlines()
    start = lines.index(header)
    out = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        out.append(line.strip())
    return out


def test_frontend_is_tcp_on_the_listen_address() -> None:
    config = haproxy_config("10.77.200.10", 443, BACKENDS)
    assert "mode tcp" in section(config, "defaults")
    assert section(config, "frontend apiserver") == ["bind 10.77.200.10:443", "default_backend apiservers"]


def test_one_server_per_backend_with_https_readyz_checks() -> None:
    config = haproxy_config("10.77.200.10", 6443, BACKENDS, backend_port=8443, check_interval_ms=250)
    backend = section(config, "backend apiservers")
    assert "balance roundrobin" in backend
    assert "option httpchk GET /readyz" in backend
    assert "http-check expect string ok" in backend
    [defaults] = [line for line in backend if line.startswith("default-server")]
    assert re.search(r"\bcheck check-ssl verify none inter 250 fall 2 rise 1\b", defaults), defaults
    servers = [line for line in backend if line.startswith("server ")]
    assert servers == ["server b0 10.77.1.10:8443", "server b1 10.77.2.10:8443", "server b2 10.77.3.10:8443"]


def test_timeouts_and_no_daemon() -> None:
    config = haproxy_config("10.77.200.10", 443, BACKENDS)
    defaults = section(config, "defaults")
    assert "timeout connect 1s" in defaults
    assert "timeout client 10m" in defaults and "timeout server 10m" in defaults
    assert "daemon" not in config
    assert "log stderr format raw local0 info" in section(config, "global")


def test_stats_socket_only_when_asked(tmp_path: Path) -> None:
    assert "stats socket" not in haproxy_config("10.77.200.10", 443, BACKENDS)
    sock = tmp_path / "haproxy.sock"
    assert f"stats socket {sock} mode 600 level admin" in section(
        haproxy_config("10.77.200.10", 443, BACKENDS, stats_socket=sock), "global"
    )


@pytest.mark.parametrize("check_interval_ms", [500, 100, 2000])
def test_haproxy_accepts_the_config(tmp_path: Path, check_interval_ms: int) -> None:
    binary = haproxy()
    path = tmp_path / "haproxy.cfg"
    path.write_text(haproxy_config("10.77.200.10", 443, BACKENDS, check_interval_ms=check_interval_ms,
                                   stats_socket=tmp_path / "s.sock"))
    proc = subprocess.run([binary, "-c", "-f", str(path)], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    # No warnings either: a warning today is an error in the next HAProxy.
    assert "WARNING" not in proc.stderr + proc.stdout, proc.stderr + proc.stdout
    lb.check_config(binary, path)


def test_check_config_reports_what_haproxy_rejects(tmp_path: Path) -> None:
    binary = haproxy()
    path = tmp_path / "bad.cfg"
    path.write_text(haproxy_config("10.77.200.10", 443, BACKENDS).replace("balance roundrobin", "balance nonsense"))
    with pytest.raises(ConfigError, match="haproxy rejects .*balance only supports"):
        lb.check_config(binary, path)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backends": ()}, "at least one backend"),
        ({"backends": "10.77.1.10"}, "list of addresses"),
        ({"backends": ("10.77.1.300",)}, "backend address '10.77.1.300' is not an IPv4 address"),
        ({"backends": ("zone-a-1",)}, "backend address 'zone-a-1'"),
        ({"backends": ("10.77.1.10", "10.77.1.10")}, "duplicate backend address"),
        ({"listen": "10.77.200"}, "listen address"),
        ({"port": 0}, "listen port 0 is out of range"),
        ({"port": 70000}, "listen port 70000"),
        ({"backend_port": -1}, "backend port"),
        ({"check_interval_ms": 10}, "at least 100"),
    ],
)
def test_bad_input_is_a_config_error(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"listen": "10.77.200.10", "port": 443, "backends": BACKENDS, **kwargs}
    with pytest.raises(ConfigError, match=re.escape(message)):
        haproxy_config(**args)  # type: ignore[arg-type]


def spec(tmp_path: Path, **changes: object) -> LoadBalancerSpec:
    fields: dict[str, object] = {
        "netns": "lb-test", "router_ns": "r", "bridge": "b-lb", "address": "10.77.200.10", "prefix_len": 24,
        "gateway": "10.77.200.1", "port": 443, "backends": BACKENDS, "workdir": tmp_path, **changes,
    }
    return LoadBalancerSpec(**fields)  # type: ignore[arg-type]


def test_spec_checks_addresses_against_the_subnet(tmp_path: Path) -> None:
    assert len(spec(tmp_path).veth) <= 15
    assert spec(tmp_path).veth == spec(tmp_path).veth != spec(tmp_path, netns="lb-other").veth
    with pytest.raises(ConfigError, match="not in the gateway's subnet 10.77.200.0/24"):
        spec(tmp_path, address="10.77.201.10")
    with pytest.raises(ConfigError, match="cannot be the gateway"):
        spec(tmp_path, address="10.77.200.1")
    with pytest.raises(ConfigError, match="gateway '10.77.200.x'"):
        spec(tmp_path, gateway="10.77.200.x")
    with pytest.raises(ConfigError, match="prefix length 33"):
        spec(tmp_path, prefix_len=33)
    with pytest.raises(ConfigError, match="at least one backend"):
        spec(tmp_path, backends=())
    with pytest.raises(ConfigError, match="network namespace name"):
        spec(tmp_path, netns="a/b")


def test_missing_haproxy_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="apt-get install haproxy"):
        lb.find_haproxy("haproxy-does-not-exist")
    with pytest.raises(PrerequisiteError, match="apt-get install haproxy"):
        lb.start(spec(tmp_path), haproxy=str(tmp_path / "no-haproxy"))


def test_long_socket_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="stats socket path"):
        haproxy_config("10.77.200.10", 443, BACKENDS, stats_socket=Path("/" + "x" * 120))


@pytest.mark.skipif(shutil.which("haproxy") is None and not Path("/usr/sbin/haproxy").exists(), reason="no haproxy")
def test_find_haproxy_finds_sbin() -> None:
    assert Path(lb.find_haproxy()).name == "haproxy"
