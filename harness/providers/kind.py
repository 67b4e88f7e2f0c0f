"""The kind provider: a kind cluster of one control-plane node and worker nodes labelled with
the region's zones. Node failure kills or pauses the node's container; a zone outage
disconnects the zone's node containers from the cluster's network and reconnects them with
their old addresses; grey link faults between zones are iptables chains inside the source
zone's node containers (harness.providers.kind_links). That needs a network with an IPv4 subnet of its own (Docker refuses a
chosen address otherwise), so the harness creates one and has kind use it.

kind needs a Docker engine, which these machines do not run: the config and every command
this provider issues are unit-tested (tests/unit/test_kind.py), not run here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from harness.config import Config
from harness.errors import EnvironmentStateError, FaultError, PrerequisiteError
from harness.kube.controlplane import ZONE_LABEL
from harness.providers import kind_links
from harness.providers.base import LinkImpairment
from harness.topology import Seed
from harness.providers.cluster import ClusterEnvironment, ClusterProvider, seed_of
from harness.providers.state import write_state

KIND_NETWORK = "ha-harness-kind"
NETWORK_SUBNET = "172.30.0.0/16"
ZONES = ("zone-a", "zone-b", "zone-c")
NODE_FAILURE_MODES = ("kill", "freeze", "link-down")
Runner = Callable[[Sequence[str]], str]


def run_command(argv: Sequence[str]) -> str:
    if shutil.which(argv[0]) is None:
        raise PrerequisiteError(f"{argv[0]} not found: the kind provider needs kind and a running Docker engine")
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise EnvironmentStateError(f"`{' '.join(argv)}` failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()[-600:]}")
    return proc.stdout


def kind_config(zones: Sequence[str] = ZONES, workers_per_zone: int = 2) -> dict[str, Any]:
    """kind's cluster config: one control plane, `workers_per_zone` workers labelled per zone."""
    workers = [{"role": "worker", "labels": {ZONE_LABEL: zone}} for zone in zones for _ in range(workers_per_zone)]
    return {"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4", "nodes": [{"role": "control-plane"}, *workers]}


class KindEnvironment(ClusterEnvironment):
    provider = "kind"
    node_failure_modes = NODE_FAILURE_MODES
    run: Runner = staticmethod(run_command)

    def _address(self, node: str) -> str | None:
        """The node's address on kind's network; None when it is not on it (cut by another fault)."""
        info = json.loads(self.run(["docker", "inspect", node]))
        network = (info[0]["NetworkSettings"]["Networks"] or {}).get(KIND_NETWORK)
        # A stopped container (a killed node) has no address to take away or give back.
        return (network or {}).get("IPAddress") or None

    def _disconnect(self, nodes: Sequence[str]) -> dict[str, str]:
        """Disconnect `nodes` from kind's network; returns the address of each node it disconnected.

        A node already off the network is left to the fault that cut it (and to that fault's heal).
        Every address is read before anything is cut, and a failure part-way reconnects what was
        cut: the runner heals a failed inject with empty data, which cannot say what to reconnect.
        """
        addresses = {node: address for node in nodes if (address := self._address(node)) is not None}
        # Kept before anything is cut: after a crash mid-cut, `sweep` knows what to give back.
        self.update(lambda st: st.setdefault("addresses", {}).update(addresses))
        done: dict[str, str] = {}
        try:
            for node, address in addresses.items():
                self.run(["docker", "network", "disconnect", KIND_NETWORK, node])
                done[node] = address
        except BaseException:
            self._reconnect(done)
            raise
        return done

    def _reconnect(self, addresses: dict[str, str]) -> None:
        for node, address in addresses.items():
            # The same address again: the kubelet's node IP and certificates name it.
            argv = ["docker", "network", "connect", "--ip", address, KIND_NETWORK, node]
            try:
                self.run(argv)
            except EnvironmentStateError as e:
                if "already exists" not in str(e):  # connected already: heal is idempotent
                    raise

    def cut_zone(self, zone: str) -> dict[str, Any]:
        return {"addresses": self._disconnect([node.name for node in self.nodes_in(zone)])}

    def restore_zone(self, zone: str, data: dict[str, Any]) -> None:
        self._reconnect(data.get("addresses", {}))

    def zone_cut_effect(self, zone: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """Docker says every node of the zone is off kind's network."""
        nodes = list(data.get("addresses", {})) or [n.name for n in self.nodes_in(zone)]
        still = [n for n in nodes if self._address(n) is not None]
        return None if still else {"disconnected": nodes}

    def node_failure_effect(self, node: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """Docker's view of the node's container: stopped, paused, or off the network."""
        mode = data.get("mode", "kill")
        if mode == "link-down":
            return None if self._address(node) is not None else {"disconnected": [node]}
        state = json.loads(self.run(["docker", "inspect", node]))[0]["State"]
        if mode == "freeze":
            return {"paused": True} if state.get("Paused") else None
        return None if state.get("Running") else {"running": False}

    def fail_node(self, node: str, mode: str) -> dict[str, Any]:
        if mode == "kill":
            self.run(["docker", "kill", node])
        elif mode == "freeze":
            self.run(["docker", "pause", node])
        elif mode == "link-down":
            return {"mode": mode, "addresses": self._disconnect([node])}
        else:
            raise FaultError(f"kind cannot fail a node by {mode}; accepted: {', '.join(NODE_FAILURE_MODES)}")
        return {"mode": mode}

    def restore_node(self, node: str, data: dict[str, Any]) -> None:
        mode = data.get("mode", "kill")
        if mode == "kill":
            self.run(["docker", "start", node])
        elif mode == "freeze":
            state = json.loads(self.run(["docker", "inspect", node]))[0]["State"]
            if state.get("Paused"):
                self.run(["docker", "unpause", node])
        else:
            self._reconnect(data.get("addresses", {}))

    def impair_links(self, paths: Sequence[tuple[str, str]], impairment: LinkImpairment, run_id: str) -> dict[str, Any]:
        """A chain of the fault's own in every node of each source zone (see harness.providers.kind_links)."""
        name = kind_links.chain(run_id)
        plan: dict[str, dict[str, list[str]]] = {}
        for a in sorted({a for a, _ in paths}):
            for node in self.nodes_in(a):
                if self._address(node.name) is None:
                    continue  # off the network (another fault): nothing leaves it to drop
                routes = self.run(["docker", "exec", node.name, "ip", "-o", "-4", "route", "show"])
                plan[node.name] = {}
                for b in sorted({b for x, b in paths if x == a}):
                    addresses = [ad for n in self.nodes_in(b) if (ad := self._address(n.name)) is not None]
                    plan[node.name][b] = addresses + kind_links.pod_cidrs(routes, addresses)
        for node, destinations in plan.items():
            for argv in kind_links.apply_commands(name, destinations, impairment):
                self.run(["docker", "exec", node, *argv])
        return {"chain": name, "nodes": {n: self.node(n).zone for n in plan}, "paths": [f"{a}>{b}" for a, b in paths]}

    def links_effect(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """In effect once every path's rules dropped a packet (their counters, summed over the
        source zone's nodes)."""
        dropped = dict.fromkeys(data.get("paths", []), 0)
        for node, zone in data.get("nodes", {}).items():
            try:
                listing = self.run(["docker", "exec", node, "iptables", "-L", data["chain"], "-v", "-x", "-n"])
            except EnvironmentStateError:
                return None
            for to, packets in kind_links.dropped(listing).items():
                if f"{zone}>{to}" in dropped:
                    dropped[f"{zone}>{to}"] += packets
        return {"dropped_packets": dropped} if dropped and all(dropped.values()) else None

    def restore_links(self, data: dict[str, Any]) -> None:
        """The chain out of every node, known from the run id alone (a crash before inject returned)."""
        name = data.get("chain") or kind_links.chain(data["run_id"])
        for node in self.nodes:
            self._remove_chain(node.name, name)

    def _remove_chain(self, node: str, name: str) -> None:
        for argv in kind_links.remove_commands(name):
            try:
                self.run(["docker", "exec", node, *argv])
            except EnvironmentStateError:
                pass  # gone already, or the node is down: a restarted container has no rules

    def sweep(self) -> list[str]:
        done = []
        for node in self.nodes:
            state = json.loads(self.run(["docker", "inspect", node.name]))[0]["State"]
            if state.get("Paused"):
                self.run(["docker", "unpause", node.name])
                done.append(f"unpaused {node.name}")
            elif not state.get("Running"):
                self.run(["docker", "start", node.name])
                done.append(f"started {node.name}")
        for node in self.nodes:
            try:
                rules = self.run(["docker", "exec", node.name, "iptables", "-S"])
            except EnvironmentStateError:
                continue
            for name in kind_links.chains_in(rules):
                self._remove_chain(node.name, name)
                done.append(f"removed iptables chain {name} from {node.name}")
        recorded = self.refresh().get("addresses", {})
        cut = {n: a for n, a in recorded.items() if self._address(n) is None}
        self._reconnect(cut)
        done += [f"reconnected {n}" for n in cut]
        return done + super().sweep()


class KindProvider(ClusterProvider):
    name = "kind"
    environment = KindEnvironment

    def __init__(self, config: Config, run: Runner = run_command) -> None:
        # kind names its context kind-<cluster>. It is set before the base class names the state
        # file after the context, so two kind clusters sharing a kubeconfig keep separate state.
        self.cluster = config.provider.kind_cluster
        super().__init__(replace(config, provider=replace(config.provider, context=f"kind-{self.cluster}")))
        self.run = run

    def _exists(self) -> bool:
        return self.cluster in self.run(["kind", "get", "clusters"]).split()

    def _forget_state(self) -> None:
        self.path.unlink(missing_ok=True)
        self.path.with_suffix(".lock").unlink(missing_ok=True)

    def create_commands(self, config_path: Path, network_exists: bool) -> list[list[str]]:
        s = self.config.provider
        network = [] if network_exists else [[
            "docker", "network", "create", "--driver", "bridge", "--subnet", NETWORK_SUBNET,
            "-o", "com.docker.network.bridge.enable_ip_masquerade=true", KIND_NETWORK]]
        # kind puts its nodes on the network this variable names (and reuses it if it exists).
        return network + [["env", f"KIND_EXPERIMENTAL_DOCKER_NETWORK={KIND_NETWORK}",
                           "kind", "create", "cluster", "--name", self.cluster, "--config", str(config_path),
                           "--image", s.kind_node_image, "--kubeconfig", str(self.access.kubeconfig), "--wait", "180s"]]

    def delete_commands(self) -> list[list[str]]:
        return [["kind", "delete", "cluster", "--name", self.cluster, "--kubeconfig", str(self.access.kubeconfig)],
                ["docker", "network", "rm", KIND_NETWORK]]

    def _network_exists(self) -> bool:
        try:
            self.run(["docker", "network", "inspect", KIND_NETWORK])
        except EnvironmentStateError:
            return False
        return True

    def up(self) -> KindEnvironment:
        self.created = not self._exists()
        if self.created:
            self._forget_state()  # the record of a cluster of this name deleted outside the harness
            config_path = self.config.state_dir / f"kind-{self.cluster}.yaml"
            config_path.parent.mkdir(parents=True, exist_ok=True)
            config_path.write_text(json.dumps(kind_config(self.config.region.zones, self.config.provider.kind_workers_per_zone)))
            # Recorded first: a cluster created by a run that then failed is still deleted by `down`.
            write_state(self.path, {"kubeconfig": str(self.access.kubeconfig), "context": self.access.context,
                                    "faults": [], "references": [], "created": True})
            try:
                for argv in self.create_commands(config_path, self._network_exists()):
                    self.run(argv)
            finally:
                config_path.unlink(missing_ok=True)
        else:
            # An existing cluster's context may be missing from this kubeconfig.
            self.run(["kind", "export", "kubeconfig", "--name", self.cluster, "--kubeconfig", str(self.access.kubeconfig)])
        return super().up()

    def _env(self, state: dict[str, Any]) -> KindEnvironment:
        env = KindEnvironment(self.config, state, self.path)
        env.run = self.run  # type: ignore[method-assign]
        return env

    def seed(self, env: Any) -> Seed:
        # kind's default class (rancher's local-path) provisions on the node the scheduler picked.
        return seed_of(self.access, self.config.provider.storage_class)

    def left_to_heal(self) -> ClusterEnvironment | None:
        # Deleted outside the harness: nothing to heal or undeploy, only its record to forget.
        return super().left_to_heal() if self._exists() else None

    def down(self) -> list[str]:
        """Delete the kind cluster if the harness created it (its faults healed by the caller first)."""
        from harness.providers.state import read_state

        if not self._exists():
            removed = [f"state {self.path}"] if self.path.exists() else []
            self._forget_state()
            return removed
        created = (read_state(self.path) or {}).get("created", False)
        removed = super().down()
        if not created:
            return removed
        delete_cluster, remove_network = self.delete_commands()
        self.run(delete_cluster)
        try:
            self.run(remove_network)
        except EnvironmentStateError as e:
            if "active endpoints" not in str(e):  # another harness kind cluster still uses it
                raise
        return removed + [f"kind cluster {self.cluster} (and its context kind-{self.cluster})"]
