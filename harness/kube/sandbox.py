"""A pod's sandbox on a local seed node: what a container runtime gives a pod, for the pods the
node agent runs whose programs expect one (etcd-druid's: they listen on 0.0.0.0, read their
configuration and certificates at fixed paths and find their peers by DNS name).

- **A network namespace of its own**, held by a pause process (as a pod's pause container holds
  it) and joined to the node by a veth pair: the pod's address is routed to the veth on the node
  and the node answers ARP for it on its subnet (proxy ARP). The pod's traffic leaves through the
  node's interface, so it shares the node's fate on the network: a cut zone cuts it. `destroy`
  stops the pause process and deletes the veth pair at once: the namespace, and with it the veth
  and the node's route, goes only when the kernel gets to it, which took 40-110 s on a busy seed,
  and until then the node kept answering for the address and routing it into the dying namespace.
- **A mount namespace per container** (`python -m harness.kube.sandbox`, run through nsenter and
  unshare): each volume bound at the container's mountPath. A path whose parent does not exist on
  the host (/var/etcd/...) is made in an overlay of its nearest existing parent with a tmpfs on
  top, so nothing is written to the host. The pod's /etc/hosts is bound too: the agent writes the
  names of its namespace's pods and Services there, as cluster DNS would answer them.

    python -m harness.kube.sandbox --scratch DIR --bind SRC:DST[:ro] ... --env K=V ... -- PROGRAM ARGS
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.netns import POD_MARK, run
from harness.processes import ProcessRecord, spawn, terminate

# The pod's gateway: an address nobody has, which the node's end of the veth answers ARP for
# (proxy ARP), so that the pod needs no address of the node's.
GATEWAY = "169.254.1.1"


class SandboxError(HarnessError):
    """The sandbox could not be made; the message names the command and its output."""


@dataclass(frozen=True)
class Bind:
    source: str
    target: str
    read_only: bool = False

    def arg(self) -> str:
        return f"{self.source}:{self.target}" + (":ro" if self.read_only else "")

    @classmethod
    def parse(cls, text: str) -> "Bind":
        parts = text.split(":")
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "ro") or not all(parts[:2]):
            raise SandboxError(f"--bind takes SOURCE:TARGET or SOURCE:TARGET:ro, not {text!r}")
        return cls(parts[0], parts[1], len(parts) == 3)


def host_link(ip: str) -> str:
    """The node's end of the pod's veth pair (at most 15 characters)."""
    return "hp" + hashlib.sha256(ip.encode()).hexdigest()[:10]


def create(name: str, ip: str, log: Path, node: str, node_link: str = "eth0") -> ProcessRecord:
    """The pause process holding the pod's network namespace, with `ip` on its eth0; run inside
    the node's namespace (the agent's), whose name `node` the pause process carries (netns.POD_MARK:
    the node's faults and the region's teardown find the pod's processes by it)."""
    _, pause = spawn(f"{name}-pause", ["unshare", "--net", "--", "sh", "-c",
                                       "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done",
                                       f"{POD_MARK}{node}/{name}"], log)
    try:
        _connect(pause, ip, node_link)
    except (HarnessError, OSError) as e:
        destroy(pause, ip)
        raise SandboxError(str(e)) from None
    return pause


def destroy(pause: ProcessRecord, ip: str) -> None:
    """The sandbox gone: its pause process stopped and its veth pair deleted (its route with it),
    so the address is free on the subnet at once, wherever the pod starts next."""
    terminate(pause, 0.0)
    release_address(ip)


def release_address(ip: str) -> None:
    """The node's end of the pod's veth pair deleted, the peer and the route with it (nothing to
    do when it is gone already)."""
    subprocess.run(["ip", "link", "del", host_link(ip)], capture_output=True)


def _connect(pause: ProcessRecord, ip: str, node_link: str) -> None:
    netns = f"/proc/{pause.pid}/ns/net"
    own = os.readlink("/proc/self/ns/net")
    deadline = time.monotonic() + 5.0
    while os.readlink(netns) == own:  # unshare(2) has not happened yet
        if time.monotonic() > deadline or not pause.alive():
            raise SandboxError(f"the pause process {pause.pid} did not make its network namespace within 5 s "
                               f"(log {pause.log})")
        time.sleep(0.01)
    link = host_link(ip)
    run(["ip", "-batch", "-"], stdin=f"link add {link} type veth peer name eth0 netns {pause.pid}\n"
                                      f"link set {link} up\nroute replace {ip}/32 dev {link}\n")
    for setting, value in ((f"conf/{link}/proxy_arp", "1"), (f"conf/{node_link}/proxy_arp", "1"), ("ip_forward", "1")):
        Path(f"/proc/sys/net/ipv4/{setting}").write_text(value)
    run(["nsenter", f"--net={netns}", "ip", "-batch", "-"],
        stdin=f"link set lo up\naddr add {ip}/32 dev eth0\nlink set eth0 up\n"
              f"route add {GATEWAY} dev eth0 scope link\nroute add default via {GATEWAY} dev eth0\n")


def container_argv(pause: ProcessRecord, scratch: Path, binds: list[Bind], env: dict[str, str],
                   argv: list[str]) -> list[str]:
    """A container's command: in the pod's network namespace, a mount namespace of its own with
    `binds`, the environment `env` only (as a container gets its image's and the pod's)."""
    return ["nsenter", f"--net=/proc/{pause.pid}/ns/net", "--", *mount_argv(scratch, binds, env, argv)]


def mount_argv(scratch: Path, binds: list[Bind], env: dict[str, str], argv: list[str]) -> list[str]:
    """A command in a mount namespace of its own with `binds` and the environment `env` only, in
    the network namespace it is started in."""
    return ["unshare", "--mount", "--propagation", "private", "--", sys.executable, "-m", "harness.kube.sandbox",
            f"--scratch={scratch}", *(f"--bind={b.arg()}" for b in binds), *(f"--env={k}={v}" for k, v in env.items()),
            "--", *argv]


def write_hosts(path: Path, entries: list[tuple[str, list[str]]]) -> bool:
    """The pod's /etc/hosts, written in place (its bind mount holds the file, not the name); True
    when it changed."""
    text = "127.0.0.1\tlocalhost\n::1\tlocalhost\n" + "".join(f"{ip}\t{' '.join(names)}\n" for ip, names in entries)
    try:
        if path.read_text() == text:
            return False
    except OSError:
        pass
    with open(path, "a+") as f:
        f.seek(0)
        f.truncate()
        f.write(text)
    return True


# -- inside the container's mount namespace ---------------------------------------------------
def _nearest_existing(path: str) -> str:
    p = Path(path)
    while not p.exists():
        p = p.parent
    return os.path.realpath(p)


def _mount_all(scratch: Path, binds: list[Bind]) -> None:
    # Sources opened first: an overlay below may hide the path they were named by (a volume kept
    # under /var while /var is overlaid to make /var/etcd).
    # Targets as the mount will reach them: a symlinked /etc/resolv.conf is its target, which may
    # not exist (then it is made in an overlay, not on the host).
    held = [(Bind(b.source, os.path.realpath(b.target), b.read_only), os.open(b.source, os.O_PATH)) for b in binds]
    missing = sorted({_nearest_existing(b.target) for b, _ in held if not os.path.exists(b.target)})
    parents = [p for p in missing if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in missing)]
    # An overlay over the directory the scratch space is in hides the scratch space from the
    # overlays mounted after it: that one goes last (/run, where the harness keeps its state).
    inside = os.path.realpath(scratch)
    parents.sort(key=lambda p: (inside == p or inside.startswith(p.rstrip("/") + "/"), p))
    if parents:
        run(["mount", "-t", "tmpfs", "tmpfs", str(scratch)])
        for i, parent in enumerate(parents):
            upper, work = scratch / f"upper{i}", scratch / f"work{i}"
            upper.mkdir()
            work.mkdir()
            run(["mount", "-t", "overlay", "overlay", "-o", f"lowerdir={parent},upperdir={upper},workdir={work}", parent])
    for bind, fd in held:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(bind.target, exist_ok=True)
        elif not os.path.exists(bind.target):
            os.makedirs(os.path.dirname(bind.target), exist_ok=True)
            Path(bind.target).touch()
        run(["mount", "--no-canonicalize", "--bind", f"/proc/{os.getpid()}/fd/{fd}", bind.target])
        if bind.read_only:
            run(["mount", "-o", "remount,bind,ro", bind.target])
        os.close(fd)


def main(args: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m harness.kube.sandbox", description=__doc__.split("\n\n")[0])
    p.add_argument("--scratch", type=Path, required=True, help="a directory for the overlays' tmpfs")
    p.add_argument("--bind", action="append", default=[], help="SOURCE:TARGET[:ro]")
    p.add_argument("--env", action="append", default=[], help="K=V: the program's whole environment")
    p.add_argument("argv", nargs="+", help="the program and its arguments, after --")
    ns = p.parse_args(args)
    try:
        _mount_all(ns.scratch, [Bind.parse(b) for b in ns.bind])
    except (HarnessError, OSError) as e:
        sys.exit(f"sandbox: {e}")
    env = dict(kv.split("=", 1) for kv in ns.env)
    try:
        os.execvpe(ns.argv[0], ns.argv, env)
    except OSError as e:
        sys.exit(f"sandbox: cannot run {ns.argv[0]}: {e}")


if __name__ == "__main__":
    main()
