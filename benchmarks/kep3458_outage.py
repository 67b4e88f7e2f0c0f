"""KEP-3458 measured: a Service's load balancer through a zone outage, with the KEP's controller and
with the last one from before it; and the time from a node's exclusion label to its removal.

    python benchmarks/kep3458_outage.py [--outage 60] [--runs 1] [--connections 12] [--labels 5]

Brings up region "bkep" with its seed and local cloud. Per controller release (cloud-provider-aws
v1.36.2, then v1.25.0) and run: a Service of type LoadBalancer with an echo pod per zone
(harness.kube.echo_service), its ELB made real by the local cloud, `--connections` connections held
through it from outside every zone; zone-a taken down for `--outage` s, then healed. Printed:
  - node-set changes of the ELB (from the cloud API, every 0.5 s) and the controller's update calls
    (from the cloud's request log) during the outage;
  - connections through the surviving zones that were reset, closed or silent over 2 s, and
    connections through zone-a closed by the load balancer, during the outage.
Then, with the current controller, `--labels` times from labelling a node
node.kubernetes.io/exclude-from-external-load-balancers to its leaving the ELB.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.config import load_config  # noqa: E402
from harness.faults.runner import FaultRunner  # noqa: E402
from harness.kube import cloud_controller as ccm  # noqa: E402
from harness.kube import cluster, echo_service  # noqa: E402
from harness.probes.connections import ConnectionProbe, node_of  # noqa: E402
from harness.probes.load_balancer import ELB_UPDATES, NodeSetProbe  # noqa: E402
from harness.providers.local.seed.kubernetes import start_for  # noqa: E402
from harness.providers.local.region import LocalEnvironment, LocalRegion  # noqa: E402
from harness.reference.deploy import apply, await_namespace_gone  # noqa: E402
from harness.timeline import Timeline  # noqa: E402
from harness.wait import wait_for  # noqa: E402

NAMESPACE, SERVICE, ZONE = "bkep", "web", "zone-a"
EXCLUDE = "node.kubernetes.io/exclude-from-external-load-balancers"
STALL_S = 2.0


def _service(env: LocalEnvironment, core: object, apps: object) -> None:
    api = cluster.connect(env.kube())  # type: ignore[arg-type]
    await_namespace_gone(api, NAMESPACE, 180)
    core.create_namespace({"metadata": {"name": NAMESPACE}})  # type: ignore[attr-defined]
    apply(api, echo_service.manifests(NAMESPACE, SERVICE, len(env.zones)))
    every = sorted(n.name for n in env.nodes)
    wait_for(lambda: env.load_balancer_nodes(NAMESPACE, SERVICE), lambda n: n == every, "every node in the ELB", 180)
    wait_for(lambda: apps.read_namespaced_deployment(SERVICE, NAMESPACE).status.ready_replicas or 0,  # type: ignore[attr-defined]
             lambda r: r == len(env.zones), "the echo pods ready", 180)
    wait_for(lambda: env.load_balancer_health(NAMESPACE, SERVICE),
             lambda h: sorted(n for n, s in h.items() if s == "InService") == every, "every node in service", 180)
    time.sleep(5)  # the controller's own resync after start


def one_run(env: LocalEnvironment, key: str, outage: float, count: int, core: object) -> dict[str, object]:
    timeline = Timeline()
    nodes = NodeSetProbe(lambda: env.load_balancer_nodes(NAMESPACE, SERVICE), timeline, SERVICE).start()
    endpoint = env.load_balancer_endpoint(NAMESPACE, SERVICE)
    assert endpoint is not None
    conns = ConnectionProbe(endpoint, count, timeline, SERVICE).start()
    pods = {p.metadata.name: p.spec.node_name for p in core.list_namespaced_pod(NAMESPACE).items}  # type: ignore[attr-defined]
    zone_of = {n.name: n.zone for n in env.nodes}
    paths = {c.index: zone_of.get(node_of(c, {n.name: n.address for n in env.nodes}, pods.get) or "")
             for c in conns.snapshot()}
    runner = FaultRunner(env, timeline)
    began_wall = time.time()
    runner.inject("zone-outage", ZONE)
    start = timeline.now()
    try:
        time.sleep(outage)
    finally:
        end = timeline.now()
        runner.heal(wait=False)
    calls = [r for r in env.cloud_requests(began_wall) if r["key"] == key and r["action"] in ELB_UPDATES
             and r["t"] <= began_wall + (end - start) + 1]
    samples = [s for s in nodes.snapshot() if start <= s.t <= end]
    changes = sum(1 for a, b in zip(samples, samples[1:]) if a.nodes != b.nodes)
    held = conns.snapshot()
    surviving = [c for c in held if paths[c.index] not in (ZONE, None)]
    broken = [c for c in surviving if (c.ended is not None and c.ended <= end) or c.silences(start, end) > STALL_S]
    cut = [c for c in held if paths[c.index] == ZONE and c.ended is not None and c.ended <= end]
    conns.stop()
    nodes.stop()
    return {"calls": len(calls), "changes": changes, "surviving": len(surviving), "broken": len(broken),
            "through": sum(1 for c in held if paths[c.index] == ZONE), "cut": len(cut),
            "min_nodes": min((len(s.nodes or ()) for s in samples), default=0)}


def label_times(env: LocalEnvironment, core: object, runs: int) -> list[float]:
    out = []
    for i in range(runs):
        node = env.nodes[i % len(env.nodes)].name
        core.patch_node(node, {"metadata": {"labels": {EXCLUDE: "true"}}})  # type: ignore[attr-defined]
        began = time.monotonic()
        wait_for(lambda: env.load_balancer_nodes(NAMESPACE, SERVICE), lambda n: node not in (n or ()),
                 f"{node} out of the ELB", 60, interval=0.02)
        out.append(time.monotonic() - began)
        core.patch_node(node, {"metadata": {"labels": {EXCLUDE: None}}})  # type: ignore[attr-defined]
        wait_for(lambda: env.load_balancer_nodes(NAMESPACE, SERVICE), lambda n: node in (n or ()),
                 f"{node} back in the ELB", 60)
    return out


def main() -> None:
    from kubernetes import client as k8s

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outage", type=float, default=60.0)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--connections", type=int, default=12)
    ap.add_argument("--labels", type=int, default=5)
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "bkep"}))
    region.down()
    env = region.up()
    try:
        start_for(env)
        region.cloud(env)
        api = cluster.connect(env.kube())  # type: ignore[arg-type]
        core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
        for release in ccm.RELEASES:
            record = env.start_cloud_controller(release.version)
            _service(env, core, apps)
            for run in range(args.runs):
                r = one_run(env, record["key"], args.outage, args.connections, core)
                print(f"cloud-provider-aws {release.version} ({'with' if release.stable_node_set else 'before'} "
                      f"KEP-3458), {args.outage:g} s outage of {ZONE}, run {run + 1}: {r['calls']} load balancer "
                      f"update calls, {r['changes']} node-set changes (fewest nodes {r['min_nodes']}); connections "
                      f"through the surviving zones reset, closed or silent over {STALL_S:g} s: {r['broken']} of "
                      f"{r['surviving']}; through {ZONE} closed by the load balancer: {r['cut']} of {r['through']}",
                      flush=True)
                wait_for(lambda: env.load_balancer_nodes(NAMESPACE, SERVICE),
                         lambda n: n == sorted(x.name for x in env.nodes), "every node back in the ELB", 180)
            if release is ccm.CURRENT and args.labels:
                times = label_times(env, core, args.labels)
                print(f"exclusion label to removal from the ELB ({len(times)} nodes): median "
                      f"{statistics.median(times):.2f} s, min {min(times):.2f} s, max {max(times):.2f} s", flush=True)
            core.delete_namespace(NAMESPACE)
    finally:
        region.down()


if __name__ == "__main__":
    main()
