"""kube-proxy, real: k8s.io/kubernetes's own, built on first use from the pinned module in kube/gomod
(the same pin as kube-apiserver). On the local seed it runs inside each node's network namespace
in nftables mode and serves the node ports of Services (KEP-3458's load balancers send their
traffic there) and its health check on :10256/healthz, as on any node.

What it is told, and why:
- `--hostname-override`: the node it runs for (the local seed's nodes are kwok's);
- `--nodeport-addresses=primary`: node ports on the node's own address only;
- `--conntrack-max-per-core=0`: leave the machine's conntrack table size alone (shared by every
  namespace);
- metrics and health on the node's address, so that one per node can listen.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness import gobuild

MODULE_DIR = Path(__file__).resolve().parent / "gomod"
BINARY = "kube-proxy"
HEALTH_PORT = 10256  # kube-proxy's own healthz, which cloud load balancers may check
PROGRAM = gobuild.CachedProgram(
    MODULE_DIR, BINARY, "k8s.io/kubernetes", "Kubernetes", "kube-proxy", "kube-proxy",
    "install Go 1.26 or newer (make setup does)", "python -m harness.kube.kube_proxy", min_go=(1, 26),
    sources=("go.mod", "go.sum"), package="k8s.io/kubernetes/cmd/kube-proxy")


def _say(message: str) -> None:
    print(f"[kube-proxy] {message}", file=sys.stderr, flush=True)


def binary(cache_root: Path | None = None) -> Path:
    """The pinned kube-proxy, built into the cache on first use (about 2 minutes, 70 MiB)."""
    return PROGRAM.path(cache_root, progress=_say)


def command(program: Path, kubeconfig: Path, node: str, address: str) -> list[str]:
    return [str(program), f"--kubeconfig={kubeconfig}", f"--hostname-override={node}", "--proxy-mode=nftables",
            "--nodeport-addresses=primary", "--conntrack-max-per-core=0",
            f"--metrics-bind-address={address}:10249", f"--healthz-bind-address={address}:{HEALTH_PORT}", "--v=1"]


if __name__ == "__main__":
    print(binary())
