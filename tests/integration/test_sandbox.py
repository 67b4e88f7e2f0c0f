"""A pod's sandbox for real (harness.kube.sandbox): its own network namespace on its node's subnet,
its container's mounts where the pod says, nothing written to the host, and every process of it
found through its node (what a node's faults and the region's teardown rely on)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from harness import netns
from harness.processes import ProcessRecord, terminate

NODE = "hh-sandbox-node"
# Inside the node's namespace: a pod on 10.99.0.5 whose container prints what it sees.
MAKE_POD = textwrap.dedent("""
    import json, subprocess, sys
    from pathlib import Path
    from harness.kube import sandbox
    work = Path(sys.argv[1])
    pause = sandbox.create("pod-0", "10.99.0.5", work / "pause.log", "hh-sandbox-node")
    (work / "data").mkdir()
    (work / "hosts").write_text("")
    sandbox.write_hosts(work / "hosts", [("10.99.0.6", ["peer-0.peer.ns.svc"])])
    argv = sandbox.container_argv(pause, work / "scratch", [
        sandbox.Bind(str(work / "data"), "/var/hh-sandbox-test/data"),
        sandbox.Bind(str(work / "hosts"), "/etc/hosts", read_only=True)],
        {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "POD_NAME": "pod-0"},
        ["sh", "-c", "echo written > /var/hh-sandbox-test/data/f; ip -o -4 addr show dev eth0; cat /etc/hosts; "
                     "echo $POD_NAME; touch /etc/hosts 2>/dev/null || echo read-only"])
    (work / "scratch").mkdir()
    out = subprocess.run(argv, capture_output=True, text=True)
    print(json.dumps({"pause": pause.to_dict(), "out": out.stdout, "err": out.stderr}))
""")


@pytest.fixture
def node() -> Iterator[str]:
    subprocess.run(["ip", "netns", "del", NODE], capture_output=True)
    netns.run(["ip", "netns", "add", NODE])
    netns.run(["ip", "-n", NODE, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0"])  # no dummy module here
    netns.run(["ip", "-n", NODE, "addr", "add", "10.99.0.2/24", "dev", "eth0"])
    netns.run(["ip", "-n", NODE, "link", "set", "eth0", "up"])
    try:
        yield NODE
    finally:
        for pid in netns.netns_pids(NODE, with_pods=True):
            subprocess.run(["kill", "-9", str(pid)], capture_output=True)
        subprocess.run(["ip", "netns", "del", NODE], capture_output=True)


def test_a_pod_has_its_address_its_mounts_and_nothing_on_the_host(node: str, tmp_path: Path) -> None:
    made = subprocess.run(["ip", "netns", "exec", node, sys.executable, "-c", MAKE_POD, str(tmp_path)],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[2])
    assert made.returncode == 0, made.stderr
    result = json.loads(made.stdout)
    pause = ProcessRecord.from_dict(result["pause"])
    try:
        lines = result["out"].splitlines()
        assert "10.99.0.5/32" in lines[0], result
        assert "10.99.0.6\tpeer-0.peer.ns.svc" in lines, result
        assert lines[-2:] == ["pod-0", "read-only"], result
        # The volume got the write; the host has no /var/hh-sandbox-test (made in an overlay).
        assert (tmp_path / "data" / "f").read_text() == "written\n"
        assert not os.path.exists("/var/hh-sandbox-test")
        # The node routes the pod's address to it and answers for it on its subnet.
        assert "10.99.0.5 dev hp" in netns.run(["ip", "-n", node, "route"])
        # Its processes are found through its node, and only there.
        found = netns.netns_pids(node, with_pods=True)
        assert pause.pid in found and pause.pid not in netns.netns_pids(node)
        assert netns.pod_pids("hh-sandbox-other") == []
        # Its address freed at once, though its namespace may outlive it (the kernel frees a
        # namespace when it gets to it: 40-110 s on a busy seed): no route left, nothing answers.
        subprocess.run(["ip", "netns", "exec", node, sys.executable, "-c",
                        "from harness.kube import sandbox; sandbox.release_address('10.99.0.5')"],
                       check=True, timeout=30, cwd=Path(__file__).parents[2])
        assert pause.alive(), "the namespace still held"
        assert "10.99.0.5" not in netns.run(["ip", "-n", node, "route"])
        assert "hp" not in netns.run(["ip", "-n", node, "-o", "link"])
    finally:
        terminate(pause, 0.0)
    assert netns.pod_pids(node) == []
