"""When-steps: faults go on and come off; all go through the shared fault runner."""

from __future__ import annotations

import random
import time
from typing import Any

from pytest_bdd import parsers, when

from harness import explore
from harness.errors import ConfigError
from harness.etcd_gateway import EtcdRequestError
from harness.faults.operator import ETCD_DRUID, RESOURCE_MANAGER
from harness.faults.runner import FaultRunner
from harness.probes.etcd import raft_terms
from harness.providers.base import EtcdCluster, MemberProcesses
from harness.steps.scenario import Outage
from harness.timeline import Timeline
from harness.wait import first_within, wait_for
from harness.steps.holders import Exploration

NODE_MODES = {"is killed": "node-kill", "freezes": "node-freeze", "loses its link": "node-link-down"}


def apply_faults(etcd: EtcdCluster, faults: FaultRunner, what: list[tuple[str, str, dict[str, Any]]],
                 together: bool = False) -> Outage:
    """Inject (kind, target, options) back to back, or `together` (FaultRunner.inject_together);
    the Outage remembers the leader before."""
    # A shoot's etcd under test beside the environment's own (the local region's, a bystander here
    # whose member of a zone that returned catches up for 5-16 s): its health is the precondition.
    bystander = etcd is not faults.env and bool(faults.env.members)
    if bystander:
        etcd.wait_healthy()
    leader, leader_id, term = before_faults(etcd)
    applied = (faults.inject_together(list(what)) if together
               else [faults.inject(kind, target, options, wait_healthy=not bystander) for kind, target, options in what])
    # From when the first fault took effect (the bracket the runner observed), not when it was asked for.
    return Outage(applied, min(a.effective_after for a in applied), leader, leader_id, term,
                  seen=min(a.effective_at for a in applied))


def before_faults(etcd: EtcdCluster) -> tuple[str | None, int, int]:
    """The leader the members agree on (its name and id) and the highest raft term they are in (the
    current one, not the applied one a status shows: a leader just elected is in a term none of
    its entries has reached the members in yet)."""
    statuses = etcd.status()
    leader = etcd.leader(statuses)
    ids = {name: s.member_id for name, s in statuses.items() if not isinstance(s, str)}
    terms = {s.raft_term for s in statuses.values() if not isinstance(s, str)}
    terms |= {t for t in raft_terms(etcd).values() if isinstance(t, int)}
    return leader, ids.get(leader or "", 0), max(terms, default=0)


def _apply(etcd: EtcdCluster, faults: FaultRunner, kind: str, targets: list[str], seconds: float) -> Outage:
    outage = apply_faults(etcd, faults, [(kind, t, {}) for t in targets])
    if seconds:
        outage.hold(faults.timeline, seconds)
    return outage


@when(parsers.parse("the target zone goes down for {seconds:g} s"), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, target_zone: str, seconds: float) -> Outage:
    """The target zone cut off at the router (zone-outage), held that long from its effect; it
    stays down until a step brings it back, and the Then-steps between judge it."""
    return _apply(etcd, faults, "zone-outage", [target_zone], seconds)


@when(parsers.parse('zone "{zone}" goes down'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, zone: str) -> Outage:
    """Down until a later step brings it back; the steps between judge it while it lasts."""
    return _apply(etcd, faults, "zone-outage", [zone], 0)


@when(parsers.parse('zone "{zone}" goes down for {seconds:g} s'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, zone: str, seconds: float) -> Outage:
    """As `zone "{zone}" goes down`, held that long from its effect before the next step."""
    return _apply(etcd, faults, "zone-outage", [zone], seconds)


@when(parsers.parse('zones "{first}" and "{second}" go down for {seconds:g} s'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, first: str, second: str, seconds: float) -> Outage:
    """Both zones cut off at the router, held that long from the first effect: with three zones,
    the quorum is gone."""
    return _apply(etcd, faults, "zone-outage", [first, second], seconds)


@when(parsers.parse('node "{node}" {how} for {seconds:g} s'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, node: str, how: str, seconds: float) -> Outage:
    """`is killed` (SIGKILL of its processes), `freezes` (SIGSTOP) or `loses its link`, held that
    long from its effect."""
    if how not in NODE_MODES:
        raise ConfigError(f"unknown node failure {how!r}; accepted: {', '.join(NODE_MODES)}")
    return _apply(etcd, faults, NODE_MODES[how], [node], seconds)


def restore_faults(faults: FaultRunner, timeline: Timeline, outage: Outage, targets: list[str] | None) -> Outage:
    chosen = [f for f in outage.faults if targets is None or f.target in targets]
    if not chosen:
        raise ConfigError(f"{targets} were not taken down in this scenario; down: {outage.zones}")
    for f in chosen:
        # Heal without waiting for full health: a quorum may still be missing on purpose.
        faults.heal(f, wait=False)
        outage.returned.append(f.target)
    # The return is when the last heal was done, not when it was asked for.
    outage.healed_at = timeline.now()
    return outage


def _grey(etcd: EtcdCluster, faults: FaultRunner, kind: str, target: str, options: dict[str, Any],
          zones_down: list[str]) -> Outage:
    """A fault short of a zone outage; `zones_down`: the zones it counts as cut off (none: every
    zone is still there, sick)."""
    outage = apply_faults(etcd, faults, [(kind, target, options)])
    outage.zones_down = zones_down
    return outage


@when(parsers.re(r"the target zone can no longer (?P<how>send to|hear from) the other zones"), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, target_zone: str, how: str) -> Outage:
    """One way only: its egress (it still hears the others) or its ingress (they still hear it)."""
    target = f"{target_zone}>*" if how == "send to" else f"*>{target_zone}"
    return _grey(etcd, faults, "zone-link-cut", target, {}, [target_zone])


@when(parsers.parse('zone "{a}" can no longer send to zone "{b}"'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, a: str, b: str) -> Outage:
    """One way only: packets from a to b dropped at the router (zone-link-cut); b still reaches a."""
    return _grey(etcd, faults, "zone-link-cut", f"{a}>{b}", {}, [])


@when(parsers.parse('zones "{a}" and "{b}" can no longer reach each other'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, a: str, b: str) -> Outage:
    """A bridge partition: both still see the third zone."""
    return _grey(etcd, faults, "zone-link-cut", f"{a}<>{b}", {}, [])


@when(parsers.parse('zone "{a}" loses {percent:g} % of its packets to zone "{b}"'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, a: str, b: str, percent: float) -> Outage:
    """A share of a's packets to b dropped at the router (zone-link-loss), one way."""
    return _grey(etcd, faults, "zone-link-loss", f"{a}>{b}", {"loss_percent": percent}, [])


@when(parsers.parse('packets larger than {size:d} bytes are dropped between zones "{a}" and "{b}"'),
      target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, a: str, b: str, size: int) -> Outage:
    """Both ways between the two zones, what a path MTU problem drops (zone-link-mtu)."""
    return _grey(etcd, faults, "zone-link-mtu", f"{a}<>{b}", {"larger_than": size}, [])


@when(parsers.parse("every path between zones is delayed {delay:g} ms ± {jitter:g} ms"), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, delay: float, jitter: float) -> Outage:
    """Every path between two zones delayed, with jitter (zone-link-delay): no zone is cut off."""
    return _grey(etcd, faults, "zone-link-delay", "*>*", {"delay_ms": delay, "jitter_ms": jitter}, [])


@when(parsers.parse('the link from zone "{a}" to zone "{b}" flaps, down {down:g} s and up {up:g} s at a time'),
      target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, a: str, b: str, down: float, up: float) -> Outage:
    """Cut both ways and restored in turn for as long as it lasts (zone-link-flap)."""
    return _grey(etcd, faults, "zone-link-flap", f"{a}<>{b}", {"down_s": down, "up_min_s": up}, [])


@when(parsers.parse('node "{node}" flaps, down {down:g} s and up {low:g} to {high:g} s at a time'),
      target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, node: str, down: float, low: float, high: float) -> Outage:
    """Killed again each time it has been back for a while (chaosgarden's flapping nodes)."""
    outage = apply_faults(etcd, faults, [("node-flap", node, {"down_s": down, "up_min_s": low, "up_max_s": high})])
    outage.zones_down = []
    return outage


def _option(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


@when("these faults are applied together", target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, datatable: list[list[str]]) -> Outage:
    """One row per fault: its kind and target, then its options by name (an empty cell: none);
    applied back to back, judged from when the first took effect."""
    header, *rows = [[cell.strip() for cell in row] for row in datatable]
    if header[:2] != ["fault", "target"] or not rows:
        raise ConfigError(f"a table of faults starts with the columns fault and target and has a row per fault; "
                          f"got columns {header} and {len(rows)} rows")
    what = [(row[0], row[1], {k: _option(v) for k, v in zip(header[2:], row[2:]) if v}) for row in rows]
    outage = apply_faults(etcd, faults, what)
    outage.zones_down = []
    return outage


@when(parsers.parse("a random schedule of faults runs for {seconds:g} s"))
def _(etcd: EtcdCluster, faults: FaultRunner, timeline: Timeline, exploration: Exploration, seconds: float) -> None:
    """Seeded (--explore-seed, else a new seed, said first), every fault healed at the end."""
    seed = exploration.seed if exploration.seed is not None else random.randrange(1_000_000)
    seconds = exploration.seconds or seconds
    planned = explore.schedule(seed, seconds, etcd)
    exploration.say(f"[harness] exploring {seconds:g} s with seed {seed}: {len(planned)} faults; "
                    f"replay: {explore.replay_command(seed, seconds)}")
    explore.run(planned, faults, timeline, seed, exploration.say)
    etcd.wait_healthy(etcd.config.timeouts.recovery + max((p.seconds for p in planned), default=0.0))


@when(parsers.parse('the disk of member "{member}" fills up'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, member: str) -> Outage:
    """Its own filesystem taken to the last byte; it runs on until a write of its needs space."""
    return _grey(etcd, faults, "member-disk-full", member, {}, [])


@when(parsers.parse('member "{member}" loses power'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, member: str) -> Outage:
    """Killed, and its disk loses every write it had not fsynced; it stays down until it comes back."""
    return _grey(etcd, faults, "member-power-loss", member, {}, [])


@when(parsers.re(r'the backup store is unreachable from (?P<where>every zone|zone "(?P<zone>[^"]+)")'),
      target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, where: str, zone: str | None) -> Outage:
    """The object store stops answering the region (every zone, or one): no zone is cut off from etcd."""
    return _grey(etcd, faults, "backup-store-outage", zone or "all", {}, [])


@when(parsers.parse('every save of member "{member}"\'s log waits {ms:d} ms'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, member: str, ms: int) -> Outage:
    """A slow disk: etcd's raftBeforeSave failpoint sleeps before each write-ahead log save (an
    etcd built with failpoints)."""
    return _grey(etcd, faults, "member-failpoint", member, {"name": "raftBeforeSave", "action": f"sleep({ms})"}, [])


@when(parsers.parse("writes of {kib:d} KiB values to one key fill the backend quota"), target_fixture="outage")
def _(etcd: EtcdCluster, timeline: Timeline, kib: int) -> Outage:
    """A runaway writer: one key rewritten, its history growing the backend until etcd refuses
    ("database space exceeded": its NOSPACE alarm). The outage starts at that refusal."""
    leader, leader_id, term = before_faults(etcd)
    if leader is None:
        raise ConfigError(f"the members agree on no leader to write to: {etcd.status()}")
    quota = (etcd.config.etcd.quota_backend_mib or 2048) << 20
    value, written, began = "q" * (kib << 10), 0, time.monotonic()
    client = etcd.client(leader, timeout=5.0)
    try:
        while written < 4 * quota:  # history is stored once per revision: a quota's worth must fill it
            try:
                client.put("/harness/quota-filler", value)
                written += len(value)
            except EtcdRequestError as e:
                if "database space exceeded" in str(e):
                    break
                raise
            if time.monotonic() - began > 5 and written % (quota // 4) < len(value):
                print(f"[harness] filling the backend quota: {written >> 20} MiB written of at most "
                      f"{4 * quota >> 20} MiB", flush=True)
        else:
            raise ConfigError(f"{written >> 20} MiB written and no 'database space exceeded': is the quota "
                              f"[etcd] quota_backend_mib = {etcd.config.etcd.quota_backend_mib}?")
    finally:
        client.close()
    timeline.mark("client", "the backend quota is full", written_bytes=written)
    return Outage([], timeline.now(), leader, leader_id, term, zones_down=[])


@when("an operator reclaims the space: the history compacted, every member defragmented, the alarm disarmed",
      target_fixture="outage")
def _(etcd: EtcdCluster, timeline: Timeline, outage: Outage) -> Outage:
    """etcd's runbook for NOSPACE; the return is when the alarm is disarmed."""
    leader = etcd.leader() or etcd.members[0].name
    client = etcd.client(leader, timeout=30.0)
    try:
        client.compact(client.status().revision)
        for m in etcd.members:
            member = etcd.client(m.name, timeout=60.0)
            try:
                member.defragment()
            finally:
                member.close()
        for member_id, alarm in client.alarms():
            client.disarm(member_id, alarm)
    finally:
        client.close()
    outage.healed_at = timeline.now()
    timeline.mark("client", "the space reclaimed and the alarm disarmed")
    return outage


@when("the links come back", target_fixture="outage")
@when("the disk is freed", target_fixture="outage")
@when("the disk is fast again", target_fixture="outage")
@when("its power comes back", target_fixture="outage")
@when("the backup store is reachable again", target_fixture="outage")
@when("the flapping stops", target_fixture="outage")
def _(faults: FaultRunner, timeline: Timeline, outage: Outage) -> Outage:
    """Heals the scenario's outage (every fault of it): the return is when the last heal was done."""
    return restore_faults(faults, timeline, outage, None)


@when(parsers.parse("the outage lasts {seconds:g} s"))
def _(outage: Outage, timeline: Timeline, seconds: float) -> None:
    """Holds the outage until that long after its effect (not after the step that asked for it)."""
    outage.hold(timeline, seconds)


@when(parsers.parse("{seconds:g} s pass"))
def _(seconds: float) -> None:
    """Waits, the faults unchanged."""
    time.sleep(seconds)


@when("the target zone comes back", target_fixture="outage")
def _(faults: FaultRunner, timeline: Timeline, outage: Outage) -> Outage:
    """Heals the outage of the target zone; the return is when the heal was done."""
    return restore_faults(faults, timeline, outage, None)


@when(parsers.parse('zone "{zone}" comes back'), target_fixture="outage")
def _(faults: FaultRunner, timeline: Timeline, outage: Outage, zone: str) -> Outage:
    """Heals that zone's outage, without waiting for the region's health (a quorum may still be
    missing on purpose); the return is when the heal was done."""
    return restore_faults(faults, timeline, outage, [zone])


@when(parsers.parse('node "{node}" comes back'), target_fixture="outage")
def _(faults: FaultRunner, timeline: Timeline, outage: Outage, node: str) -> Outage:
    """Heals the node's failure; the return is when the heal was done."""
    return restore_faults(faults, timeline, outage, [node])


@when(parsers.parse('node "{node}" fails'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, node: str) -> Outage:
    """The node's processes die (its kubelet stand-in too) until a later step brings it back."""
    return _apply(etcd, faults, "node-kill", [node], 0)


@when(parsers.parse('member "{member}" is killed'))
def _(faults: FaultRunner, member: str) -> None:
    """SIGKILL of the member's process; it stays down until the scenario ends (or `harness heal`)."""
    faults.inject("member-kill", member)


@when(parsers.parse("a random member is killed and restarted {times:d} times, {seconds:g} s apart"))
def _(etcd: EtcdCluster, faults: FaultRunner, timeline: Timeline, schedule_seed: int, times: int,
      seconds: float) -> None:
    """etcd's robustness suite's kill failpoint: SIGKILL of a member chosen at random (the leader
    too), restarted at once from its data, answering again before the next. The schedule's seed
    (--schedule-seed) is on the timeline, so a run can be repeated."""
    seed = schedule_seed
    rng = random.Random(seed)
    timeline.mark("schedule", "random member kills", seed=seed, times=times, seconds=seconds)
    for n in range(times):
        member = rng.choice(etcd.members).name
        # The first kill finds the region healthy; the next ones only wait for the last to answer,
        # as etcd's suite does: a region that stays behind under the load is what it is about.
        killed = faults.inject("member-kill", member, wait_healthy=n == 0)
        faults.heal(killed, wait=False)
        wait_for(lambda: etcd.status(via_zone=None)[member], lambda st: not isinstance(st, str),
                 f"{member} answering again after its restart", etcd.config.timeouts.member_ready)
        time.sleep(seconds)


@when(parsers.parse('failpoint "{name}" of member "{member}" is set to "{action}"'))
def _(faults: FaultRunner, name: str, member: str, action: str) -> None:
    """One of etcd's own failpoints (the region runs an etcd built with them)."""
    faults.inject("member-failpoint", member, {"name": name, "action": action})


@when(parsers.parse('member "{member}" is defragmented'))
def _(etcd: EtcdCluster, timeline: Timeline, member: str) -> None:
    """etcd's defragment on the member. A member that dies doing it (a failpoint set to panic) is
    what the step is for: the crash goes on the timeline; any other failure fails the step."""
    name = etcd.member(member).name
    client = etcd.client(name, timeout=60.0)
    try:
        client.defragment()
        timeline.mark("operation", f"{name} defragmented")
    except EtcdRequestError as e:
        # The connection breaks a moment before the process is seen gone.
        if not isinstance(etcd, MemberProcesses) or not _gone_within(etcd, name, 5.0):
            raise
        timeline.mark("operation", f"{name} crashed while defragmenting", error=str(e)[:200])
    finally:
        client.close()


def _gone_within(etcd: MemberProcesses, member: str, seconds: float) -> bool:
    return first_within(lambda: True if not etcd.member_running(member) else None, f"{member} to be gone", seconds) \
        is not None


@when(parsers.parse('member "{member}" pauses for {seconds:g} s'))
def _(faults: FaultRunner, member: str, seconds: float) -> None:
    """SIGSTOP, then SIGCONT after the given time; the step returns once it goes on."""
    faults.inject("member-pause", member, {"seconds": seconds})
    time.sleep(seconds)


@when(parsers.parse('member "{member}" comes back'))
def _(etcd: EtcdCluster, faults: FaultRunner, member: str) -> None:
    """Every fault on the member healed (a failpoint cleared, a member it took down started again
    from its data); the step returns once it answers."""
    name = etcd.member(member).name
    chosen = [a for a in faults.active if a.target == name]
    if not chosen:
        raise ConfigError(f"no fault is active on {name}; active: {[a.id for a in faults.active] or 'none'}")
    for active in chosen:
        faults.heal(active, wait=False)
    wait_for(lambda: etcd.status()[name], lambda st: not isinstance(st, str), f"{name} answering again",
             etcd.config.timeouts.member_ready)


@when(parsers.parse("the peer traffic of a follower is blackholed until it is {behind:d} revisions behind"),
      target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, timeline: Timeline, behind: int) -> Outage:
    """etcd's robustness suite's blackhole-until-snapshot: the follower hears nothing from its peers
    (its clients still reach it) until the others are far enough ahead that, once it is back, the
    leader must send it a snapshot (snapshot count + catch-up entries: 5,100 on etcd 3.5 with a
    snapshot count of 100)."""
    leader = etcd.leader(etcd.wait_healthy())
    follower = next(m.name for m in etcd.members if m.name != leader)
    outage = apply_faults(etcd, faults, [("peer-blackhole", follower, {})])
    wait_for(lambda: _lag(etcd, follower), lambda n: n is not None and n > behind,
             f"{follower} {behind} revisions behind its peers", 120.0, interval=0.2)
    timeline.mark("figure", f"revisions {follower} fell behind", value=_lag(etcd, follower), unit="revisions")
    return outage


def _lag(etcd: EtcdCluster, member: str) -> int | None:
    """Revisions `member` is behind the most advanced of the others (None: not all answer)."""
    statuses = etcd.status()
    mine, others = statuses[member], [s for n, s in statuses.items() if n != member and not isinstance(s, str)]
    if isinstance(mine, str) or not others:
        return None
    return max(s.revision for s in others) - mine.revision


@when("the member catching up is killed and started again")
def _(etcd: EtcdCluster, faults: FaultRunner, timeline: Timeline, outage: Outage) -> None:
    """A fault during the recovery of another: killed at once, in the middle of its catch-up (how
    far behind it still was is a figure), then started again from its data."""
    member = outage.faults[0].target
    behind = _lag(etcd, member)
    killed = faults.inject("member-kill", member, wait_healthy=False)  # not once it has caught up
    timeline.mark("figure", f"revisions {member} was behind just before it was killed", value=behind,
                  unit="revisions", killed_after_s=round(killed.effective_at - (outage.healed_at or 0.0), 3))
    faults.heal(killed, wait=False)


@when("its peer traffic comes back", target_fixture="outage")
def _(faults: FaultRunner, timeline: Timeline, outage: Outage) -> Outage:
    """Heals the scenario's outage (its peer blackhole): the return is when the heal was done."""
    return restore_faults(faults, timeline, outage, None)


@when(parsers.parse('node "{node}" is drained'))
def _(faults: FaultRunner, node: str) -> None:
    """Cordoned, then its pods evicted through the Eviction API (node-drain): PodDisruptionBudgets
    decide, refusals retried for [timeouts] drain."""
    faults.inject("node-drain", node)


@when(parsers.parse('node "{node}" is cordoned'))
def _(faults: FaultRunner, node: str) -> None:
    """Marked unschedulable (node-cordon); its pods stay."""
    faults.inject("node-cordon", node)


@when(parsers.parse('host "{host}" goes down'))
def _(faults: FaultRunner, host: str) -> None:
    """Every node of the host killed at once (host-outage)."""
    faults.inject("host-outage", host)


@when("gardener-resource-manager goes down")
def _(faults: FaultRunner) -> None:
    """Its process gone, its webhooks still registered with failurePolicy Fail (resource-manager-down):
    not the scenario's outage, which stays the one its Then-steps count from."""
    faults.inject("resource-manager-down", RESOURCE_MANAGER)


@when("gardener-resource-manager comes back")
def _(faults: FaultRunner) -> None:
    """Heals resource-manager-down: it runs again, its webhooks registered anew."""
    _operator_back(faults, "resource-manager-down", RESOURCE_MANAGER)


@when("etcd-druid goes down")
def _(faults: FaultRunner) -> None:
    """Its process gone (etcd-druid-down): the etcds run on, their status as druid last wrote it;
    not the scenario's outage, which stays the one its Then-steps count from."""
    faults.inject("etcd-druid-down", ETCD_DRUID)


@when("etcd-druid comes back")
def _(faults: FaultRunner) -> None:
    """Heals etcd-druid-down: it runs again and reconciles what it finds."""
    _operator_back(faults, "etcd-druid-down", ETCD_DRUID)


def _operator_back(faults: FaultRunner, kind: str, name: str) -> None:
    (down,) = [a for a in faults.active if a.kind == kind] or [None]
    if down is None:
        raise ConfigError(f"{name} is not down: no earlier step took it down")
    faults.heal(down, wait=False)
