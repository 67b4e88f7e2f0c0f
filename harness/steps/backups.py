"""Steps of backups and recovery (seed 003, DEP-05): a region backed up to its object store, its
volumes lost, the cluster made again from the store, and what that cost in data (RPO)."""

from __future__ import annotations

from typing import Any, Callable

from pytest_bdd import given, parsers, then, when

from harness import judge
from harness.operator_tasks import tasks
from harness.backup.store import DELTA, FULL
from harness.errors import CapabilityMissing, ConfigError, WaitTimeout
from harness.probes.availability import AvailabilityProbe
from harness.probes.converge import converged_keys
from harness.providers.base import EtcdBackups, EtcdCluster, Environment, MemberVolumes, OperatorTasks, TaskEndpoint
from harness.steps.faults import apply_faults
from harness.steps.scenario import Outage
from harness.timeline import Timeline
from harness.validate import availability as av
from harness.wait import first_within, poll_within, wait_for
from harness.faults.runner import FaultRunner
from harness.steps.holders import Probes
from harness.topology import Seed


@given(parsers.parse("a fresh region with {members:d} etcd members spread over {zones:d} zones, backed up with a delta "
                     "snapshot every {delta:g} s"), target_fixture="env")
def _(region_factory: Callable[..., Environment], members: int, zones: int, delta: float) -> Environment:
    """A backup sidecar beside each member ([region] backups); the leading one takes a full
    snapshot at once and a delta snapshot of the watch events every `delta` seconds."""
    env = region_factory(members=members, backups=True, delta_snapshot_period_s=delta)
    if len({m.zone for m in env.members}) != zones:  # type: ignore[attr-defined]
        raise ConfigError(f"the region's zones ({', '.join(env.zones)}) do not give {members} members {zones} zones")
    return env


def _backups(etcd: Any) -> EtcdBackups:
    """The etcd under test's backups: the region's own, or a shoot's etcd-main on the seed."""
    if not isinstance(etcd, EtcdBackups):
        raise CapabilityMissing(f"the etcd under test ({type(etcd).__name__}, {etcd.provider}) keeps no backups")
    return etcd


def _volume(env: Any, etcd: EtcdCluster, member: str) -> tuple[str, str, dict[str, Any]]:
    """volume-loss on a member of the region's own etcd, or on the pod of a shoot's member (its
    claim and volume deleted with it: NAMESPACE/POD on the seed)."""
    name = etcd.member(member).name
    namespace = getattr(etcd, "namespace", None)
    return ("volume-loss", name if etcd is env or namespace is None else f"{namespace}/{name}", {})


@when("the volumes of the etcd leader and one follower are lost", target_fixture="outage")
def _(env: Environment, etcd: EtcdCluster, faults: FaultRunner) -> Outage:
    """Permanent quorum loss: two of three members' volumes destroyed with their pods at once, the
    leader's (whose sidecar holds the events not yet in the store) among them. At once: lost one
    after the other, the two left could elect a leader between the losses whose sidecar, losing
    the lead, would upload what the first one held."""
    leader = etcd.leader(etcd.wait_healthy())
    follower = next(m.name for m in etcd.members if m.name != leader)
    return apply_faults(etcd, faults, [_volume(env, etcd, str(leader)), _volume(env, etcd, follower)], together=True)


@when(parsers.parse('the volume of member "{member}" is lost'), target_fixture="outage")
def _(env: Environment, etcd: EtcdCluster, faults: FaultRunner, member: str) -> Outage:
    """The member killed and its volume gone (volume-loss, irreversible): it comes back empty."""
    return apply_faults(etcd, faults, [_volume(env, etcd, member)])


@when("the volumes of every member are lost", target_fixture="outage")
def _(env: Environment, etcd: EtcdCluster, faults: FaultRunner) -> Outage:
    """Every member's volume lost at once: a permanent quorum loss, for the backups to recover."""
    return apply_faults(etcd, faults, [_volume(env, etcd, m.name) for m in etcd.members], together=True)


@when(parsers.parse('the database of member "{member}" is damaged'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, member: str) -> Outage:
    """Its backend's meta pages overwritten while it was stopped; its pod restarts on them."""
    return apply_faults(etcd, faults, [("member-corruption", etcd.member(member).name, {})])


@when(parsers.parse('a value in the database of member "{member}" changes on its disk'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, member: str) -> Outage:
    """A value of the harness's own altered in the member's backend while it was stopped; the member
    starts again and serves it, and nothing in etcd says so (its corruption checks are off)."""
    return apply_faults(etcd, faults, [("member-value-corruption", etcd.member(member).name, {})])


@when(parsers.parse('member "{member}" comes back on an empty volume as a new member'), target_fixture="outage")
def _(env: Environment, etcd: EtcdCluster, outage: Outage, timeline: Timeline, member: str) -> Outage:
    """What etcd-druid's backup sidecar makes of a member whose data is gone or damaged while the
    others keep quorum: removed, added again, started empty to catch up. Its return is now."""
    if not isinstance(env, MemberVolumes):
        raise CapabilityMissing(f"the {env.provider} environment cannot bring a member back on an empty volume")
    name = etcd.member(member).name
    done = env.replace_member(name)
    timeline.mark("recovery", f"{name} replaced", **done)
    outage.returned.append(name)
    outage.healed_at = timeline.now()
    return outage


@when(parsers.parse('member "{member}" joins again on its new volume'), target_fixture="outage")
def _(etcd: EtcdCluster, outage: Outage, timeline: Timeline, member: str) -> Outage:
    """On a seed, the member's pod is made again with a new claim and volume, and what runs its
    pods (etcd-druid; on the local seed the node agent) adds it back to the cluster. Its return is
    when it first answers."""
    name = etcd.member(member).name
    wait_for(lambda: etcd.status()[name], lambda s: not isinstance(s, str), f"{name} to answer again on its new volume",
             etcd.config.timeouts.recovery)
    outage.returned.append(name)
    outage.healed_at = timeline.now()
    timeline.mark("recovery", f"{name} answers again on its new volume")
    return outage


@when(parsers.re(r"the cluster is restored from its (?P<what>backups|newest full snapshot alone)"),
      target_fixture="recovery")
def _(etcd: EtcdCluster, timeline: Timeline, what: str) -> dict[str, Any]:
    """What etcd-druid's recovery does once the loss is confirmed as permanent: every member's data
    made again from the store's full snapshot and the deltas after it, the members started. (The
    full snapshot alone is what a restore that ignores the deltas brings back.)"""
    with timeline.span("recovery", "restore from backups"):
        done = _backups(etcd).restore_from_backups(lambda line: print(f"[recovery] {line}", flush=True),
                                                  deltas=what == "backups")
    timeline.mark("figure", "restore from backups (compact the store's chain, restore every member)",
                  value=done["total_s"], unit="s", **done)
    return done


@then(parsers.parse("the writes lost are only those after the last delta snapshot, at most {limit:g} s of them"))
def _(etcd: EtcdCluster, probes: Probes, probe: AvailabilityProbe, outage: Outage, recovery: dict[str, Any],
      timeline: Timeline, limit: float) -> None:
    """RPO: an acknowledged write missing after the restore must be one the store never had (its
    revision after the newest the store held when the restore began), and the acknowledged writes missing may span
    at most `limit` seconds (from the first one's start to the last one's acknowledgement)."""
    probes.stop_all()
    h = probe.history
    judge.holds(len(h.acked()) > 0, "the probe had acknowledged writes to check", seen=len(h.acked()))
    try:
        views = converged_keys(etcd, h.prefix, etcd.config.timeouts.recovery)
    except WaitTimeout as e:
        judge.holds(False, "the restored members agree on their keys", seen=str(e))
        return
    for member, keys in views.items():  # every member's own keys: one restored short is caught alone
        judge.holds(isinstance(keys, list), f"{member} answered the read-back of the probe's keys", seen=keys)
    rpos = {member: av.writes_lost(h.samples, h.prefix, keys) for member, keys in views.items()}
    worst = max(rpos.values(), key=lambda r: (r.seconds, r.count))
    timeline.mark("figure", "acknowledged writes lost (RPO)", value=worst.count, unit="writes")
    timeline.mark("figure", "seconds of acknowledged writes lost (RPO)", value=worst.seconds, unit="s")
    held = recovery["store_revision"]
    for member, rpo in rpos.items():
        in_store = [s for s in rpo.writes if s.revision is not None and s.revision <= held]
        judge.none_of([f"seq {s.seq} at revision {s.revision}" for s in in_store],
                      f"acknowledged writes lost although the store held their revision ({member}; up to {held}, "
                      f"restored to {recovery.get('revision', 'unknown')})")
        judge.at_most(rpo.seconds, limit, f"seconds of acknowledged writes lost on {member} ({rpo.count} writes)")


@then("the backup sidecars report failed snapshots during the outage")
def _(etcd: EtcdCluster, outage: Outage, timeline: Timeline) -> None:
    """The leading sidecar counts each snapshot it could not store, and says why."""
    statuses = _backups(etcd).backup_sidecars()
    period = max((float(s["delta_period"]) for s in statuses.values() if isinstance(s, dict)), default=5.0)
    # Two delta periods and the store's timeouts: the first upload after the cut has had time to fail.
    wait = max(0.0, outage.start + 2 * period + 15.0 - timeline.now())
    statuses = first_within(lambda: _failing(_backups(etcd).backup_sidecars()), "a failed snapshot reported",
                            wait) or _backups(etcd).backup_sidecars()
    failures = sum(int(s["failed_snapshots"]) for s in statuses.values() if isinstance(s, dict))
    seen = {m: (s if isinstance(s, str) else {k: s[k] for k in ("failed_snapshots", "failures", "last_error")})
            for m, s in statuses.items()}
    timeline.mark("figure", "failed snapshots reported", value=failures, unit="snapshots", sidecars=seen)
    judge.holds(failures > 0, "the backup sidecars reported failed snapshots", seen=seen)


def _failing(statuses: dict[str, dict[str, Any] | str]) -> dict[str, dict[str, Any] | str] | None:
    return statuses if any(isinstance(s, dict) and s["failed_snapshots"] for s in statuses.values()) else None


@then(parsers.parse("the backups hold every acknowledged write within {limit:g} s"))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, timeline: Timeline, limit: float) -> None:
    """The store's newest revision reaches the revision of the last write acknowledged so far."""
    acked = max((s.revision or 0 for s in probe.history.samples if s.kind == "write" and s.ok), default=0)
    store = _backups(etcd).backup_store()
    polled = poll_within(store.latest_revision, lambda newest: newest >= acked, f"the backup store at revision {acked}",
                         limit)
    when = polled.first_held()
    timeline.mark("figure", f"time until the backups hold revision {acked}", value=when and when[1], unit="s")
    judge.within(polled, f"the backups holding revision {acked}", show=lambda newest: f"the store's newest revision: {newest}")


# -- DEP-05's operator tasks -----------------------------------------------------------------------
TASK_KINDS = "|".join(tasks.TASK_TYPES)


@given("the operator tasks run on its seed", target_fixture="task_endpoint")
def _(etcd: EtcdCluster, seed: Seed) -> TaskEndpoint:
    """The EtcdOperatorTask resource on the seed (started for it) and an executor for the etcd under
    test: the region's, or a shoot's etcd-main on the seed."""
    if not isinstance(etcd, OperatorTasks):
        raise CapabilityMissing(f"nothing runs operator tasks for the etcd under test ({etcd.provider})")
    return etcd.task_endpoint()


@when(parsers.re(rf"(?P<count>an?|\d+) (?P<kind>{TASK_KINDS})s?(?: for an? (?P<snapshot>full|delta) snapshot)? "
                 r"(?:is|are) created(?P<at_once> at once)?"), target_fixture="task")
def _(etcd: EtcdCluster, task_endpoint: TaskEndpoint, timeline: Timeline, count: str, kind: str, snapshot: str | None,
      at_once: str | None) -> dict[str, Any]:
    """Created back to back (the last one is "the task"); what the store held just before is kept
    for the RPO."""
    from concurrent.futures import ThreadPoolExecutor

    config = {"snapshotType": f"{snapshot}-snapshot"} if snapshot else None
    held = _backups(etcd).backup_store().latest_revision()
    names = [tasks.unique_name(kind) for _ in range(1 if count in ("a", "an") else int(count))]
    manifests = [tasks.task_manifest(name, task_endpoint.namespace, kind, task_endpoint.etcd_name, config)
                 for name in names]
    sent = timeline.now()  # a bound on the task counts from here: its creation cannot flatter it
    if at_once:  # together, as two operators racing would
        with ThreadPoolExecutor(len(manifests)) as pool:
            list(pool.map(lambda m: tasks.create_task(task_endpoint.kube, m), manifests))
    else:
        for manifest in manifests:
            tasks.create_task(task_endpoint.kube, manifest)
    timeline.mark("task", f"{kind} created", names=names)
    return {"name": names[-1], "names": names, "kind": kind, "sent": sent, "created": timeline.now(),
            "store_revision": held}


@then(parsers.re(r"the task (?:is|ends) (?P<expected>completed|rejected|failed) within (?P<limit>[\d.]+) s"),
      target_fixture="recovery")
def _(env: Environment, task_endpoint: TaskEndpoint, task: dict[str, Any], timeline: Timeline, expected: str,
      limit: str) -> dict[str, Any]:
    """The DEP-05 task finished within the bound from its creation, in that state; what it
    restored is handed on to the steps after."""
    name = task["name"]
    polled = poll_within(lambda: tasks.get_task(task_endpoint.kube, task_endpoint.namespace, name),
                         lambda got: (got.get("status") or {}).get("taskStatus") in tasks.FINISHED,
                         f"task {name} to finish", float(limit), interval=0.2, start=timeline.base + task["sent"])
    when = polled.first_held()
    timeline.mark("figure", f"{task['kind']} {name}: created to finished", value=when[1] if when else None, unit="s")
    took = judge.within(polled, f"task {name} finished",
                        show=lambda got: f"task status {(got.get('status') or {}).get('taskStatus')}, last operation "
                                         f"{(got.get('status') or {}).get('lastOperation')}")
    summary = tasks.summary(polled.reads[-1].value)  # type: ignore[arg-type]
    if hasattr(env, "refresh"):
        env.refresh()  # the executor changed the region under this process (restored members run anew)
    judge.equal(summary["state"], expected, f"the state task {name} ended in ({(summary['lastOperation'] or {}).get('reason')})")
    return {"store_revision": task["store_revision"], "task": summary, "seconds": took}


@then(parsers.parse('one of them is completed within {limit:g} s and the others are rejected, saying "{text}"'))
def _(task_endpoint: TaskEndpoint, task: dict[str, Any], timeline: Timeline, limit: float, text: str) -> None:
    """Tasks created at once: which one the executor admits is a race, so the statement is about
    the set: exactly one ran, within `limit` s of their creation, every other was turned away
    naming it."""
    kube, namespace, names = task_endpoint.kube, task_endpoint.namespace, task["names"]

    def states(got: list[dict[str, Any]]) -> list[str | None]:
        return [(t.get("status") or {}).get("taskStatus") for t in got]

    polled = poll_within(lambda: [tasks.get_task(kube, namespace, n) for n in names],
                         lambda got: tasks.COMPLETED in states(got) or all(s in tasks.FINISHED for s in states(got)),
                         f"one of the {len(names)} tasks to complete", limit, interval=0.2,
                         start=timeline.base + task["sent"])
    judge.within(polled, f"one of the {len(names)} tasks created at once completed (or all ended)",
                 show=lambda got: ", ".join(f"{n}: {s}" for n, s in zip(names, states(got))))
    done = [tasks.summary(tasks.wait_finished(kube, namespace, n, 30.0)) for n in names]  # the rejections
    judge.equal(sorted(d["state"] for d in done), sorted([tasks.COMPLETED] + [tasks.REJECTED] * (len(done) - 1)),
                f"the states the {len(done)} tasks created at once ended in "
                f"({'; '.join((d['lastOperation'] or {}).get('reason', '') for d in done)})")
    ran = next(d["name"] for d in done if d["state"] == tasks.COMPLETED)
    for d in done:
        if d["state"] == tasks.REJECTED:
            reason = (d["lastOperation"] or {}).get("reason", "")
            judge.holds(text in reason and ran in reason, f"task {d['name']} rejected saying {text!r} and naming {ran}",
                        seen=d)


@then(parsers.parse('the task is rejected, saying "{text}"'))
def _(task_endpoint: TaskEndpoint, task: dict[str, Any], text: str) -> None:
    """The task ended Rejected (within 30 s), the text in its lastOperation and in its lastErrors."""
    done = tasks.summary(tasks.wait_finished(task_endpoint.kube, task_endpoint.namespace, task["name"], 30.0))
    reason = (done["lastOperation"] or {}).get("reason", "")
    judge.equal(done["state"], tasks.REJECTED, f"the state of task {task['name']} ({reason})")
    judge.holds(text in reason and any(text in e.get("description", "") for e in done["lastErrors"]),
                f"task {task['name']} rejected saying {text!r} (in its lastOperation and lastErrors)", seen=done)


@then(parsers.re(rf"the executor counts (?P<count>\d+) (?P<state>success|failed|rejected) (?P<kind>{TASK_KINDS})s?"))
def _(task_endpoint: TaskEndpoint, count: str, state: str, kind: str) -> None:
    """DEP-05's etcd_operator_tasks_total{type, state}, read from the executor's /metrics."""
    if task_endpoint.metrics_url is None:
        raise CapabilityMissing("this environment's task executor serves no metrics the harness can read")
    counts = tasks.task_counts(task_endpoint.metrics_url)
    judge.equal(counts.get((kind, state), 0.0), float(count), f'etcd_operator_tasks_total{{type="{kind}",state="{state}"}}')


@then(parsers.re(r"the backup store holds an? (?P<kind>full|delta) snapshot covering every write acknowledged before "
                 r"the task"))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, task: dict[str, Any], kind: str) -> None:
    """A full or delta snapshot in the store reaching the highest revision the probe saw
    acknowledged before the task was created."""
    acked = max((s.revision or 0 for s in probe.history.samples if s.kind == "write" and s.ok and s.end < task["created"]),
                default=0)
    names = [n for n in _backups(etcd).backup_store().list() if n.kind == {"full": FULL, "delta": DELTA}[kind]]
    judge.holds(acked > 0, "writes were acknowledged before the task", seen=acked)
    judge.holds(any(n.end >= acked for n in names), f"a {kind} snapshot in the store up to revision {acked} or later",
                seen=[n.name for n in names])


@then(parsers.parse("etcd is back with {members:d} healthy members in {zones:d} zones"))
def _(etcd: EtcdCluster, members: int, zones: int) -> None:
    """Every member healthy with one leader, that many of them, in that many zones."""
    try:
        statuses = etcd.wait_healthy()
    except WaitTimeout as e:
        judge.holds(False, f"{members} healthy members with one leader", seen=str(e)[-600:])
        raise  # not reached: the judge raised
    spread = {etcd.member(name).zone for name in statuses}
    judge.equal((len(statuses), len(spread)), (members, zones), "healthy members and the zones they are in")
