"""Faults inside etcd and on its peer network, the ones historical etcd bugs need: etcd's own
gofail failpoints (a crash before the log is saved, a sleep before a watch response), a member
paused for a precise time, a member's peer traffic blackholed while its clients still reach it,
and a member's disk full."""

from __future__ import annotations

import re
import threading
import time
from typing import Any, ClassVar

from harness.config import Timeouts
from harness.errors import ConfigError, HarnessError
from harness.faults.base import Injection, lacks
from harness.kube import cluster
from harness.kube.volumes import claimed_volumes, lose_pod_volumes
from harness.providers.base import (Environment, EtcdCluster, MemberDisks, MemberFailpoints, MemberPower,
                                    MemberProcesses, MemberSignals, MemberVolumes, PeerNetwork, VolumeBackings)
from harness.wait import wait_for

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
# gofail's terms: [N%][N*]action[(argument)][->term]; actions off, return, sleep, panic, break, print.
_ACTION = re.compile(r"(\d+(\.\d+)?%)?(\d+\*)?(off|return|sleep|panic|break|print)(\([^()]*\))?(->.*)?")


class MemberFailpoint:
    """One of etcd's failpoints on a member (e.g. raftBeforeSave=panic): the member must run an etcd
    built with them (harness.etcd_builds, [etcd] failpoints)."""

    kind: ClassVar[str] = "member-failpoint"

    def __init__(self, name: str = "", action: str = "panic") -> None:
        if not _NAME.fullmatch(name):
            raise ConfigError(f"a failpoint needs a name like raftBeforeSave, got {name!r}")
        if not _ACTION.fullmatch(action):
            raise ConfigError(f"failpoint action {action!r} is not in gofail's terms: [N%][N*]off|return|sleep|panic|"
                              "break|print[(argument)], e.g. panic, 1*panic, sleep(100)")
        self.name, self.action = name, action

    def available(self, env: Environment) -> str | None:
        return lacks(env, MemberFailpoints, "set etcd's failpoints")

    def validate(self, env: Environment, target: str) -> str:
        return env.member(target).name

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, MemberFailpoints)
        ctx.record({"name": self.name})
        env.set_failpoint(target, self.name, self.action)
        return {"name": self.name, "action": self.action}

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, MemberFailpoints)
        try:
            set_now = env.failpoints(target)
        except Exception:  # a panicking failpoint takes the server with it
            if isinstance(env, MemberProcesses) and not env.member_running(target):
                return {"failpoint": f"{self.name}={self.action}", "member": "gone (the failpoint fired)"}
            return None
        return {"failpoint": f"{self.name}={set_now[self.name]}"} if self.name in set_now else None

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        """Clear it where the member still runs; a member it took down is started again from its data."""
        assert isinstance(env, MemberFailpoints)
        running = not isinstance(env, MemberProcesses) or env.member_running(target)
        if running:
            env.clear_failpoint(target, data.get("name") or self.name)
        elif isinstance(env, MemberProcesses):
            env.start_member(target)


class MemberPause:
    """SIGSTOP of a member's process, then SIGCONT after `seconds` (a stop-the-world pause, a VM
    frozen by its hypervisor); heal continues it at once."""

    kind: ClassVar[str] = "member-pause"

    def __init__(self, seconds: float = 1.0) -> None:
        if not 0 < float(seconds) <= 600:
            raise ConfigError(f"a pause lasts more than 0 and at most 600 s, got {seconds}")
        self.seconds = float(seconds)

    def available(self, env: Environment) -> str | None:
        return lacks(env, MemberSignals, "pause etcd members")

    def validate(self, env: Environment, target: str) -> str:
        return env.member(target).name

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, MemberSignals)
        pid = env.pause_member(target)
        timer = threading.Timer(self.seconds, env.resume_member, args=(target,))
        timer.daemon = True
        timer.start()
        return {"pid": pid, "seconds": self.seconds}

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, MemberSignals)
        return {"paused_pid": data.get("pid")} if env.member_paused(target) else None

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, MemberSignals)
        env.resume_member(target)


class PeerBlackhole:
    """Every packet of a member's peer traffic dropped (raft messages, snapshots), both ways; its
    clients still reach it, so it serves what it has while the others go on without it."""

    kind: ClassVar[str] = "peer-blackhole"

    def available(self, env: Environment) -> str | None:
        return lacks(env, PeerNetwork, "cut a member's peer traffic alone")

    def validate(self, env: Environment, target: str) -> str:
        return env.member(target).name

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, PeerNetwork)
        return env.cut_peer_traffic(target)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, PeerNetwork)
        return env.peer_cut_effect(target, data)

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, PeerNetwork)
        env.restore_peer_traffic(target, data)


class MemberPowerLoss:
    """The member's machine loses power: the process dies and its disk loses every write it had
    not fsynced (powerloss-fs, [region] power_loss_fs). Unlike member-kill, whose unsynced writes
    survive in the page cache, this is what fsync is for. Heal powers the disk on and starts the
    member on what was left."""

    kind: ClassVar[str] = "member-power-loss"

    def available(self, env: Environment) -> str | None:
        return lacks(env, MemberPower, "cut a member's power") or lacks(env, MemberProcesses, "start a member again")

    def validate(self, env: Environment, target: str) -> str:
        return env.member(target).name

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, MemberPower)
        return env.power_off_member(target)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        # power_off_member returns once the process is gone and the disk's unsynced writes with it.
        return {"process_gone": data.get("pid"), "dropped_bytes": data.get("dropped_bytes")}

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, MemberProcesses)
        env.start_member(target)


class VolumeLoss:
    """The member's volume is destroyed while its pod is gone: the process and its backup sidecar
    die, the data is gone. Target: a member of the environment's etcd, or NAMESPACE/POD, a pod on
    the environment's cluster (a shoot's etcd member on a seed): its claims and volumes deleted
    with it, and what backed them (the local seed's directory; an opted-in EBS volume through the
    AWS API) destroyed. Irreversible: no heal brings the data back; heal leaves the member as it
    finds it. The ledger and the fault's event say `irreversible`."""

    kind: ClassVar[str] = "volume-loss"

    def waits_up_to(self, timeouts: Timeouts) -> float:
        """A cloud disk is deleted only once its forced detach went through (harness.aws.volumes)."""
        return 60.0

    def available(self, env: Environment) -> str | None:
        if isinstance(env, MemberVolumes) or (isinstance(env, VolumeBackings) and env.kube() is not None):
            return None
        return f"the {env.provider} provider cannot destroy a member's volume (no members, no cluster)"

    def validate(self, env: Environment, target: str) -> str:
        if "/" not in target:
            if not isinstance(env, MemberVolumes):
                raise ConfigError(f"the {env.provider} environment has no etcd members of its own: give the pod of "
                                  f"one as NAMESPACE/POD, got {target!r}")
            return env.member(target).name
        namespace, _, pod = target.partition("/")
        if not namespace or not pod or not isinstance(env, VolumeBackings) or env.kube() is None:
            raise ConfigError(f"volume-loss takes a member or NAMESPACE/POD on the environment's cluster, got {target!r}")
        volumes = claimed_volumes(cluster.connect(env.kube()), namespace, pod)  # type: ignore[arg-type]
        refused = [why for v in volumes if (why := env.volume_backing_refused(v.to_dict()))]
        if refused:
            raise ConfigError(f"volume-loss on {target} refused before anything was changed: {'; '.join(refused)}")
        return target

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        ctx.record({"irreversible": True})  # in the ledger before the data goes
        if "/" not in target:
            assert isinstance(env, MemberVolumes)
            return {**env.lose_member_data(target), "irreversible": True}
        assert isinstance(env, VolumeBackings)
        namespace, _, pod = target.partition("/")
        lost = lose_pod_volumes(cluster.connect(env.kube()), namespace, pod,  # type: ignore[arg-type]
                                env.config.timeouts.fault_apply / 2)
        data: dict[str, Any] = {"volumes": [v.to_dict() for v in lost], "irreversible": True}
        ctx.record(data)
        data["backings"] = [env.destroy_volume_backing(v.to_dict(), ctx.run_id, lambda d: ctx.record({**data, "backing": d}))
                            for v in lost]
        return data

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        if "/" in target:  # inject waited until the pod, its claims and volumes were gone
            return {"volumes_gone": [v["volume"] for v in data["volumes"]], "irreversible": True}
        assert isinstance(env, MemberProcesses)
        if env.member_running(target):
            return None
        return {"process_gone": data.get("pid"), "removed_bytes": data.get("removed_bytes"), "irreversible": True}

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        return None  # the data is gone for good; a restore from the backups is what brings a member back


class MemberCorruption:
    """The member's backend database damaged (both bbolt meta pages overwritten) while it was
    stopped, then its pod restarted on the damaged volume: the member cannot open its data and
    exits. Irreversible, as a volume loss: the member comes back only on an empty volume as a new
    member (replace_member) or with the whole cluster from the backups."""

    kind: ClassVar[str] = "member-corruption"

    def available(self, env: Environment) -> str | None:
        return lacks(env, MemberVolumes, "damage a member's data") or lacks(env, MemberProcesses, "start a member")

    def validate(self, env: Environment, target: str) -> str:
        return env.member(target).name

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, MemberVolumes) and isinstance(env, MemberProcesses)
        ctx.record({"irreversible": True})  # in the ledger before the data is damaged
        damaged = env.corrupt_member_data(target)
        env.start_member(target)  # the pod comes back on its damaged volume
        return {**damaged, "irreversible": True}

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, MemberProcesses)
        if env.member_running(target):
            return None  # not exited yet
        return {"cannot_start": True, "damaged_bytes": data.get("damaged_bytes"), "irreversible": True}

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        return None  # damaged for good: an empty volume (replace_member) or a restore brings the member back


class MemberValueCorruption:
    """One value in a member's backend database changed on its disk while it was stopped (bit rot,
    a faulty write path): the member starts again, opens the database and serves the changed value
    as if it had been written, with no error anywhere. The value is the harness's own: written
    under a key of this fault's, read back from the member before it is stopped, then altered in
    every stored copy. Irreversible, as the other data faults: an empty volume (replace_member) or a
    restore brings the member back in line."""

    kind: ClassVar[str] = "member-value-corruption"
    APPLIED_WITHIN = 10.0  # s for the member to apply the value it is to serve altered
    COMMITTED_AFTER = (0.5, 1.5)  # s: etcd commits its backend every 100 ms; a second look waits longer

    def waits_up_to(self, timeouts: Timeouts) -> float:
        return self.APPLIED_WITHIN + sum(self.COMMITTED_AFTER)

    def available(self, env: Environment) -> str | None:
        return (lacks(env, MemberVolumes, "alter a member's data") or lacks(env, MemberProcesses, "start a member")
                or lacks(env, EtcdCluster, "write the value to alter"))

    def validate(self, env: Environment, target: str) -> str:
        return env.member(target).name

    def plan(self, env: Environment, target: str) -> str:
        return f"write a value of its own, stop {target}, change that value in its backend database, start it"

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, MemberVolumes) and isinstance(env, MemberProcesses) and isinstance(env, EtcdCluster)
        key, value = f"/ha-harness/altered/{ctx.run_id}", f"value written by fault {ctx.run_id} on {target}"
        data: dict[str, Any] = {"key": key, "value": value, "altered": value.upper(), "irreversible": True}
        ctx.record(data)  # in the ledger before anything is written or stopped
        client = env.client(target)
        try:
            data["revision"] = client.put(key, value)
            wait_for(lambda: client.get(key, serializable=True), lambda got: got == value.encode(),
                     f"{target} to apply the value it is to serve altered", self.APPLIED_WITHIN, interval=0.05)
        finally:
            client.close()
        for pause in self.COMMITTED_AFTER:
            time.sleep(pause)
            data.update(env.alter_member_value(target, value.encode(), data["altered"].encode()))
            env.start_member(target)
            if data["copies"]:
                return data
        raise HarnessError(f"{target}'s backend database held no copy of {key} {sum(self.COMMITTED_AFTER):g} s after "
                           "the member applied it: nothing was altered")

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, EtcdCluster)
        client = env.client(target, timeout=1.0)
        try:
            got = client.get(data["key"], serializable=True)
        except HarnessError:
            return None  # not serving yet
        finally:
            client.close()
        return {"serves": data["altered"], "irreversible": True} if got == data["altered"].encode() else None

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        """Its data differs for good (an empty volume, replace_member, or a restore brings it back in
        line); an inject cut short between the stop and the start leaves it stopped: started again."""
        assert isinstance(env, MemberProcesses)
        if not env.member_running(target):
            env.start_member(target)


class MemberDiskFull:
    """The member's own filesystem filled up to `leave_kib` KiB free (a volume full of something
    else, a runaway log): etcd's next write that needs space fails. Heal frees the space and starts
    the member again if the full disk took it down."""

    kind: ClassVar[str] = "member-disk-full"

    def __init__(self, leave_kib: int = 0) -> None:
        if isinstance(leave_kib, bool) or not isinstance(leave_kib, int) or not 0 <= leave_kib <= 1 << 20:
            raise ConfigError(f"leave_kib is the KiB to leave free, 0-1048576, got {leave_kib!r}")
        self.leave = leave_kib * 1024

    def available(self, env: Environment) -> str | None:
        return lacks(env, MemberDisks, "fill a member's disk")

    def validate(self, env: Environment, target: str) -> str:
        return env.member(target).name

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, MemberDisks)
        ctx.record({"leave_bytes": self.leave})  # in the ledger before the ballast exists
        return env.fill_member_disk(target, self.leave)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, MemberDisks)
        free = env.member_disk_free(target)
        return {"free_bytes": free, "ballast_bytes": data.get("ballast_bytes")} if free <= self.leave + 65536 else None

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, MemberDisks)
        env.free_member_disk(target, data)
        if isinstance(env, MemberProcesses) and not env.member_running(target):
            env.start_member(target)
