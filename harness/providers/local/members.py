"""A member's process on its node: started with its data (and its backup sidecar, and the
filesystem that can lose power under it), signalled, killed, and its failpoints. Functions over the
region's record: the faults and the region share them."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from harness import netns
from harness.errors import ConfigError, EnvironmentStateError, HarnessError
from harness.processes import pid_alive, reap, signal_pid
from harness.providers.local.host import cpu_group, etcd as etcdproc
from harness.providers.local.host import powerloss_fs
from harness.providers.local.core import RegionRecord


def member_pid(env: RegionRecord, member: str) -> int | None:
    return env.state["members"][env.member(member).name].get("pid")


def member_running(env: RegionRecord, member: str) -> bool:
    pid = member_pid(env, member)
    return pid is not None and pid_alive(pid)


def kill_member(env: RegionRecord, member: str) -> int | None:
    pid = member_pid(env, member)
    signal_member(env, member, signal.SIGKILL)
    if pid is not None and pid_alive(pid):
        raise HarnessError(f"{member} (pid {pid}) still runs after SIGKILL")
    return pid


def signal_member(env: RegionRecord, member: str, sig: signal.Signals) -> None:
    pid = member_pid(env, member)
    if pid is not None:
        signal_pid(pid, sig)
        if sig == signal.SIGKILL:
            reap(pid, 2.0)
            env.update(lambda st: st["members"][member].update(pid=None))


def start_member(env: RegionRecord, member: str, joining: bool = False) -> int:
    """(Re)start a member on its node with its existing data directory (`joining`: an empty one,
    the member just added to the cluster again: replace_member)."""
    if member_running(env, member):
        return member_pid(env, member)  # type: ignore[return-value]
    rec = env.state["members"][env.member(member).name]
    if rec.get("fs"):
        power_on(env, member, rec["fs"])  # never a member on the empty directory beneath its filesystem
    if not joining and rec.get("bootstrapped") and not (Path(flag(env, member, "data-dir")) / "member").is_dir():
        # Started on an empty directory, it would bootstrap the same member of a "new" cluster
        # with an empty log: a member that forgot what it acknowledged, or a new empty cluster.
        raise EnvironmentStateError(f"{member}'s data is gone (its volume was lost): restore the cluster from "
                                    "its backups (restore_from_backups) rather than start it empty")
    pid = etcdproc.start_member(rec["ns"], rec["args"], Path(rec["log"]))
    if env.state.get("cpu_group"):  # its waits for a CPU counted with the others' (MemberCpuWaits)
        cpu_group.join(Path(env.state["cpu_group"]), pid)
    env.update(lambda st: st["members"][member].update(pid=pid))
    if env.state.get("backups"):  # a member's pod comes back with its backup sidecar
        from harness.providers.local.backups import start_sidecar

        start_sidecar(env, member)
    return pid


def power_on(env: RegionRecord, member: str, fs: dict[str, Any]) -> None:
    mount, t = Path(fs["mount"]), env.config.timeouts.command
    if disk_serving(env, member):
        return
    if fs["pid"]:  # a helper without its mount, or a mount whose helper died: neither serves
        powerloss_fs.stop(fs["pid"], mount, t)
    powerloss_fs.unmount(mount)
    pid = powerloss_fs.start(Path(fs["backing"]), mount, Path(fs["log"]), t)
    env.update(lambda st: st["members"][member]["fs"].update(pid=pid))
    fs["pid"] = pid


def disk_serving(env: RegionRecord, member: str) -> bool:
    """False only for a member whose powerloss-fs is gone (powered off, or died) or lost its mount."""
    fs = env.state["members"][env.member(member).name].get("fs")
    return not fs or bool(fs["pid"] and not powerloss_fs.exited(fs["pid"]) and powerloss_fs.is_mounted(Path(fs["mount"])))


def flag(env: RegionRecord, member: str, name: str) -> str:
    """The value of the member's command-line flag `--name=` (its data directory, ...)."""
    return next(a.split("=", 1)[1] for a in env.state["members"][member]["args"] if a.startswith(f"--{name}="))


def gofail(env: RegionRecord, member: str, method: str, path: str, body: str | None = None) -> str:
    """A request to the member's failpoint server (a failpoints build serves them on GOFAIL_HTTP)."""
    m = env.member(member)
    if not any(a.startswith("GOFAIL_HTTP=") for a in env.state["members"][m.name]["args"]):
        raise ConfigError(f"{member} was not started with failpoints; set [etcd] failpoints = true (an etcd built "
                          "with gofail: harness.etcd_builds) and bring the region up again")
    address = m.client_url.split("//")[1].split(":")[0]
    conn = netns.NsHTTPConnection(address, etcdproc.GOFAIL_PORT, env.config.timeouts.status_request * 4,
                                  env.names.client_ns(m.zone))
    try:
        conn.request(method, path, body)
        resp = conn.getresponse()
        text = resp.read().decode(errors="replace")
    except OSError as e:
        raise EnvironmentStateError(f"{member}'s failpoints at {address}:{etcdproc.GOFAIL_PORT}: {e}") from None
    finally:
        conn.close()
    if resp.status >= 300:
        raise EnvironmentStateError(f"{member}'s failpoints: {method} {path}: HTTP {resp.status}: {text[:200]}")
    return text


def set_failpoint(env: RegionRecord, member: str, name: str, action: str) -> None:
    gofail(env, member, "PUT", f"/{name}", action)


def clear_failpoint(env: RegionRecord, member: str, name: str) -> None:
    gofail(env, member, "DELETE", f"/{name}")


def failpoints(env: RegionRecord, member: str) -> dict[str, str]:
    listed = gofail(env, member, "GET", "/")
    return {k: v for k, _, v in (line.partition("=") for line in listed.splitlines()) if v}
