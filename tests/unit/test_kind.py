"""The kind provider without kind or Docker: the config it writes and the commands it would issue.

A recording runner stands in for `kind` and `docker`: it keeps every argv (the command plan the
tests check) and answers `docker inspect` and `kind get clusters` from canned output. Where the
provider reaches the Kubernetes API, only the functions of harness.kube.cluster that talk to it
are replaced. Expected values are written out here, not computed by the code under test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from ipaddress import ip_address, ip_network
from pathlib import Path
from typing import Any, Sequence

import pytest
import yaml

from harness.config import Config, load_config
from harness.errors import ConfigError, EnvironmentStateError, FaultError, PrerequisiteError
from harness.faults import get_fault
from harness.faults.runner import FaultRunner, heal_everything
from harness.kube import cluster
from harness.kube.cluster import NodeView
from harness.providers import get_provider
from harness.providers.base import NodeFailures, ZoneNetwork
from harness.topology import KubeAccess, Node
from harness.providers.cluster import ClusterEnvironment, ClusterProvider
from harness.providers.kind import KIND_NETWORK, NETWORK_SUBNET, KindEnvironment, KindProvider, kind_config, run_command
from harness.providers.state import read_state, write_state
from harness.timeline import Timeline

ZONE = "topology.kubernetes.io/zone"
W = "ha-harness-worker"  # kind names the workers of cluster ha-harness in config order: -worker, -worker2, ...
NODES = (
    Node(W, "zone-a", W), Node(f"{W}2", "zone-a", f"{W}2"),
    Node(f"{W}3", "zone-b", f"{W}3"), Node(f"{W}4", "zone-b", f"{W}4"),
    Node(f"{W}5", "zone-c", f"{W}5"), Node(f"{W}6", "zone-c", f"{W}6"),
)
NET = "ha-harness-kind"  # the harness's own network for kind (kind's default, "kind", has a subnet Docker picks)
SUBNET = "172.30.0.0/16"
ADDRESS = {W: "172.30.0.3", f"{W}2": "172.30.0.4", f"{W}3": "172.30.0.5",
           f"{W}4": "172.30.0.6", f"{W}5": "172.30.0.7", f"{W}6": "172.30.0.8"}
ALREADY_CONNECTED = "Error response from daemon: endpoint with name {} already exists in network ha-harness-kind"
NO_SUCH_NETWORK = "Error: No such network: ha-harness-kind"


def container(address: str | None = "172.30.0.3", running: bool = True, paused: bool = False,
              network: str = NET) -> dict[str, Any]:
    """The part of `docker inspect`'s object the provider reads; address None: not on `network`.

    A stopped container stays attached to its networks but has no address there (IPAddress "")."""
    endpoint = {"IPAddress": address if running else "", "Gateway": "172.30.0.1" if running else ""}
    networks = {} if address is None else {network: endpoint}
    return {"State": {"Status": "paused" if paused else "running" if running else "exited",
                      "Running": running, "Paused": paused},
            "NetworkSettings": {"Networks": networks}}


@dataclass
class Commands:
    """The recording runner: `run(argv) -> str`, with canned answers and failures by exact argv.
    Disconnecting a node takes it off the network in later `docker inspect` answers and connecting
    puts it back, as Docker does."""

    inspect: dict[str, dict[str, Any]] = field(default_factory=lambda: {n: container(a) for n, a in ADDRESS.items()})
    clusters: list[str] = field(default_factory=list)
    errors: dict[tuple[str, ...], str] = field(default_factory=dict)  # argv -> stderr of the failure
    argvs: list[list[str]] = field(default_factory=list)

    def __call__(self, argv: Sequence[str]) -> str:
        argv = list(argv)
        self.argvs.append(argv)
        if tuple(argv) in self.errors:  # what run_command raises for a non-zero exit
            raise EnvironmentStateError(f"`{' '.join(argv)}` failed (1): {self.errors[tuple(argv)]}")
        if argv[:2] == ["docker", "inspect"]:
            return json.dumps([self.inspect[argv[2]]])
        if argv[:3] == ["docker", "network", "disconnect"] and argv[-1] in self.inspect:
            self.inspect[argv[-1]]["NetworkSettings"]["Networks"].pop(argv[3], None)
        if argv[:3] == ["docker", "network", "connect"] and argv[3] == "--ip" and argv[-1] in self.inspect:
            self.inspect[argv[-1]]["NetworkSettings"]["Networks"][argv[5]] = container(argv[4])["NetworkSettings"]["Networks"][NET]
        if argv == ["kind", "get", "clusters"]:
            return "".join(f"{c}\n" for c in self.clusters)
        return ""

    def fail(self, *argv: str, stderr: str = "Error response from daemon: boom") -> None:
        self.errors[argv] = stderr


def configure(tmp_path: Path, **overrides: Any) -> Config:
    environ = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "HOME": str(tmp_path / "home")}
    return load_config(overrides={"provider.name": "kind", "paths.state_dir": str(tmp_path / "state")} | overrides,
                       environ=environ)


def kind_env(run: Commands, tmp_path: Path) -> KindEnvironment:
    """A KindEnvironment over NODES without its constructor (which lists the nodes through the API)."""
    env = object.__new__(KindEnvironment)
    env.config = configure(tmp_path)
    env.nodes = NODES
    env.zones = ("zone-a", "zone-b", "zone-c")
    env.members = ()
    env.run = run  # type: ignore[method-assign]
    env.access = KubeAccess(tmp_path / "kubeconfig", "kind-ha-harness")
    env.path = tmp_path / "state" / "kind-ledger.json"  # a ledger already there is kept (another process's)
    env.state = read_state(env.path) or {"kubeconfig": str(env.access.kubeconfig), "context": env.access.context,
                                         "faults": [], "references": []}
    write_state(env.path, env.state)
    return env


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> list[NodeView]:
    """The Kubernetes API as the provider sees it: the kind cluster's nodes, all Ready, nothing cordoned.

    Only the calls that would need a live API server are replaced: connecting, listing nodes
    (the control plane carries no zone label) and the uncordon sweep."""
    views = [NodeView("ha-harness-control-plane", None, None, True, False, ())]
    views += [NodeView(n.name, n.zone, None, True, False, ()) for n in reversed(NODES)]
    monkeypatch.setattr(cluster, "connect", lambda access: object())
    monkeypatch.setattr(cluster, "node_views", lambda api: list(views))
    monkeypatch.setattr(cluster, "sweep_cordons", lambda access: [])
    return views


# ---------------------------------------------------------------- kind_config


def test_kind_config_is_one_control_plane_and_two_workers_per_zone() -> None:
    assert kind_config() == {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "nodes": [
            {"role": "control-plane"},
            {"role": "worker", "labels": {ZONE: "zone-a"}}, {"role": "worker", "labels": {ZONE: "zone-a"}},
            {"role": "worker", "labels": {ZONE: "zone-b"}}, {"role": "worker", "labels": {ZONE: "zone-b"}},
            {"role": "worker", "labels": {ZONE: "zone-c"}}, {"role": "worker", "labels": {ZONE: "zone-c"}},
        ],
    }


@pytest.mark.parametrize(("zones", "per_zone", "expected"), [
    (("zone-a", "zone-b", "zone-c"), 1, ["zone-a", "zone-b", "zone-c"]),
    (("zone-a", "zone-b", "zone-c"), 3, ["zone-a"] * 3 + ["zone-b"] * 3 + ["zone-c"] * 3),
    (("x", "y"), 2, ["x", "x", "y", "y"]),
])
def test_kind_config_labels_the_workers_of_each_zone(zones: tuple[str, ...], per_zone: int, expected: list[str]) -> None:
    nodes = kind_config(zones, per_zone)["nodes"]
    assert [n["role"] for n in nodes] == ["control-plane"] + ["worker"] * len(expected)
    assert "labels" not in nodes[0]  # the control plane is in no zone: faults never pick it
    assert [n["labels"] for n in nodes[1:]] == [{ZONE: z} for z in expected]


def test_kind_config_survives_yaml_and_json() -> None:
    config = kind_config()
    # The provider writes JSON; kind reads the file as YAML, of which JSON is a subset.
    assert yaml.safe_load(json.dumps(config)) == config
    assert yaml.safe_load(yaml.safe_dump(config)) == config
    assert json.loads(json.dumps(config)) == config


# ---------------------------------------------------------------- the provider's commands


def kind_create(kubeconfig: Path, config_path: Path | str, cluster: str = "ha-harness",
                image: str = "kindest/node:v1.33.1") -> list[str]:
    """`kind create cluster`, told through the environment to put its nodes on the harness's network."""
    return ["env", "KIND_EXPERIMENTAL_DOCKER_NETWORK=ha-harness-kind",
            "kind", "create", "cluster", "--name", cluster, "--config", str(config_path),
            "--image", image, "--kubeconfig", str(kubeconfig), "--wait", "180s"]


NETWORK_CREATE = ["docker", "network", "create", "--driver", "bridge", "--subnet", "172.30.0.0/16",
                  "-o", "com.docker.network.bridge.enable_ip_masquerade=true", "ha-harness-kind"]
NETWORK_INSPECT = ["docker", "network", "inspect", "ha-harness-kind"]
NETWORK_RM = ["docker", "network", "rm", "ha-harness-kind"]


def test_the_canned_addresses_are_in_the_networks_subnet() -> None:
    # Docker hands out addresses of the network's subnet; `connect --ip` must name one of them.
    assert all(ip_address(a) in ip_network(SUBNET) for a in ADDRESS.values())
    assert (KIND_NETWORK, NETWORK_SUBNET) == (NET, SUBNET)


def test_create_and_delete_commands(tmp_path: Path) -> None:
    provider = KindProvider(configure(tmp_path), Commands())
    kubeconfig = tmp_path / "kubeconfig"
    assert provider.create_commands(Path("/s/kind-ha-harness.yaml"), network_exists=False) == [
        NETWORK_CREATE, kind_create(kubeconfig, "/s/kind-ha-harness.yaml"),
    ]
    assert provider.delete_commands() == [
        ["kind", "delete", "cluster", "--name", "ha-harness", "--kubeconfig", str(kubeconfig)], NETWORK_RM,
    ]
    assert provider.access == KubeAccess(tmp_path / "kubeconfig", "kind-ha-harness")


def test_create_commands_reuse_a_network_that_exists(tmp_path: Path) -> None:
    provider = KindProvider(configure(tmp_path), Commands())
    assert provider.create_commands(Path("c.yaml"), network_exists=True) == [kind_create(tmp_path / "kubeconfig", "c.yaml")]


def test_commands_follow_the_configured_cluster_and_image(tmp_path: Path) -> None:
    config = configure(tmp_path, **{"provider.kind_cluster": "hh2", "provider.kind_node_image": "kindest/node:v1.31.0",
                                    "provider.kubeconfig": str(tmp_path / "other")})
    provider = KindProvider(config, Commands())
    assert provider.create_commands(Path("c.yaml"), False) == [
        NETWORK_CREATE,  # one network for the harness's kind clusters, whatever their names
        kind_create(tmp_path / "other", "c.yaml", cluster="hh2", image="kindest/node:v1.31.0"),
    ]
    assert provider.delete_commands()[0][3:6] == ["--name", "hh2", "--kubeconfig"]
    assert provider.delete_commands()[1] == NETWORK_RM
    assert provider.access.context == "kind-hh2"


@pytest.mark.parametrize(("stderr", "exists"), [(None, True), (NO_SUCH_NETWORK, False)])
def test_network_exists_asks_docker(tmp_path: Path, stderr: str | None, exists: bool) -> None:
    run = Commands()
    if stderr is not None:
        run.fail(*NETWORK_INSPECT, stderr=stderr)
    assert KindProvider(configure(tmp_path), run)._network_exists() is exists
    assert run.argvs == [NETWORK_INSPECT]


def test_each_kind_cluster_keeps_its_own_state(tmp_path: Path) -> None:
    first = KindProvider(configure(tmp_path), Commands())
    second = KindProvider(configure(tmp_path, **{"provider.kind_cluster": "other"}), Commands())
    assert first.path != second.path
    assert first.path.parent == second.path.parent == tmp_path / "state"
    assert first.path.name.startswith("kind-") and first.path.name.endswith("kind-ha-harness.json")
    # A context set for the cluster provider does not leak into kind's: kind names its own.
    third = KindProvider(configure(tmp_path, **{"provider.context": "prod"}), Commands())
    assert third.access.context == "kind-ha-harness" and third.path == first.path


# ---------------------------------------------------------------- up and down


class Creating(Commands):
    """Also keeps, at `kind create cluster`, the config file kind is given and the state file as it is then."""

    def __init__(self, state_path: Path, **kw: Any) -> None:
        super().__init__(**kw)
        self.state_path = state_path
        self.configs: list[Any] = []
        self.states: list[dict[str, Any] | None] = []

    def __call__(self, argv: Sequence[str]) -> str:
        if "create" in argv and "cluster" in argv:
            self.configs.append(yaml.safe_load(Path(argv[argv.index("--config") + 1]).read_text()))
            self.states.append(read_state(self.state_path))
        return super().__call__(argv)


EXPORT = ["kind", "export", "kubeconfig", "--name", "ha-harness", "--kubeconfig"]


def test_up_reuses_an_existing_cluster(tmp_path: Path, kube: list[NodeView]) -> None:
    run = Commands(clusters=["other", "ha-harness"])
    env = KindProvider(configure(tmp_path), run).up()
    # The cluster's context may be missing from this kubeconfig: kind writes it there again.
    assert run.argvs == [["kind", "get", "clusters"], EXPORT + [str(tmp_path / "kubeconfig")]]
    assert isinstance(env, KindEnvironment) and env.run is run
    assert [n.name for n in env.nodes] == [n.name for n in NODES] and env.zones == ("zone-a", "zone-b", "zone-c")
    state = read_state(env.path)
    assert state is not None and state["context"] == "kind-ha-harness" and not state.get("created")


def test_up_of_an_existing_cluster_keeps_its_state(tmp_path: Path, kube: list[NodeView]) -> None:
    run = Commands(clusters=["ha-harness"])
    provider = KindProvider(configure(tmp_path), run)
    earlier = {"kubeconfig": str(tmp_path / "kubeconfig"), "context": "kind-ha-harness", "created": True,
               "faults": [], "references": ["hh-ref-1"], "addresses": {W: "172.30.0.3"}}
    write_state(provider.path, earlier)
    env = provider.up()
    assert read_state(provider.path) == earlier == env.state  # still the harness's to delete on `down`
    assert [a[:3] for a in run.argvs] == [["kind", "get", "clusters"], ["kind", "export", "kubeconfig"]]


def test_up_creates_the_network_and_the_cluster_from_a_config_file_it_removes(
    tmp_path: Path, kube: list[NodeView]
) -> None:
    config = configure(tmp_path, **{"provider.kind_workers_per_zone": 3})
    provider = KindProvider(config, Commands())
    run = Creating(provider.path, clusters=["other"])
    run.fail(*NETWORK_INSPECT, stderr=NO_SUCH_NETWORK)
    provider.run = run
    env = provider.up()
    config_path = tmp_path / "state" / "kind-ha-harness.yaml"
    assert run.argvs == [["kind", "get", "clusters"], NETWORK_INSPECT, NETWORK_CREATE,
                         kind_create(tmp_path / "kubeconfig", config_path)]
    labels = [n.get("labels", {}).get(ZONE) for n in run.configs[0]["nodes"]]
    assert labels == [None] + ["zone-a"] * 3 + ["zone-b"] * 3 + ["zone-c"] * 3
    assert run.configs[0]["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert not config_path.exists()
    # Recorded before kind ran: a run that dies after `kind create` still leaves `down` a cluster to delete.
    assert run.states == [{"kubeconfig": str(tmp_path / "kubeconfig"), "context": "kind-ha-harness",
                           "faults": [], "references": [], "created": True}]
    assert read_state(env.path) == run.states[0] == env.state


def test_up_puts_a_new_cluster_on_a_network_that_exists(tmp_path: Path, kube: list[NodeView]) -> None:
    run = Commands(clusters=[])  # `docker network inspect` succeeds: the network is there
    KindProvider(configure(tmp_path), run).up()
    assert run.argvs == [["kind", "get", "clusters"], NETWORK_INSPECT,
                         kind_create(tmp_path / "kubeconfig", tmp_path / "state" / "kind-ha-harness.yaml")]


def test_up_labels_the_workers_with_the_configured_zones(tmp_path: Path, kube: list[NodeView]) -> None:
    config = configure(tmp_path, **{"region.zones": ["east", "west"], "provider.kind_workers_per_zone": 1})
    provider = KindProvider(config, Commands())
    run = Creating(provider.path)
    provider.run = run
    provider.up()
    assert run.configs == [{"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4", "nodes": [
        {"role": "control-plane"},
        {"role": "worker", "labels": {ZONE: "east"}}, {"role": "worker", "labels": {ZONE: "west"}},
    ]}]


def test_up_that_fails_removes_the_config_file_and_keeps_the_record_of_the_cluster(tmp_path: Path) -> None:
    config = configure(tmp_path)
    run = Commands()
    provider = KindProvider(config, run)
    run.fail(*kind_create(tmp_path / "kubeconfig", tmp_path / "state" / "kind-ha-harness.yaml"), stderr="ERROR: no docker")
    with pytest.raises(EnvironmentStateError, match="ERROR: no docker"):
        provider.up()
    assert run.argvs[:2] == [["kind", "get", "clusters"], NETWORK_INSPECT]
    assert run.argvs[2][:5] == ["env", "KIND_EXPERIMENTAL_DOCKER_NETWORK=ha-harness-kind", "kind", "create", "cluster"]
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == [provider.path.name]  # no config file left
    assert (read_state(provider.path) or {}).get("created") is True


def test_down_deletes_a_cluster_whose_creation_failed_part_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ClusterProvider, "down", lambda self: ["state forgotten"])
    run = Commands()
    provider = KindProvider(configure(tmp_path), run)
    run.fail(*kind_create(tmp_path / "kubeconfig", tmp_path / "state" / "kind-ha-harness.yaml"),
             stderr="ERROR: failed to create cluster: timed out waiting for the control plane")
    with pytest.raises(EnvironmentStateError, match="timed out"):
        provider.up()
    run.clusters.append("ha-harness")  # its nodes are there, though `kind create` failed
    run.argvs.clear()
    assert provider.down() == ["state forgotten", "kind cluster ha-harness (and its context kind-ha-harness)"]
    assert run.argvs == [["kind", "get", "clusters"],
                         ["kind", "delete", "cluster", "--name", "ha-harness", "--kubeconfig", str(tmp_path / "kubeconfig")],
                         NETWORK_RM]


def test_up_of_a_new_cluster_forgets_the_state_of_a_deleted_one(tmp_path: Path, kube: list[NodeView]) -> None:
    provider = KindProvider(configure(tmp_path), Commands())  # no cluster: deleted with `kind delete` by hand
    write_state(provider.path, {"kubeconfig": "k", "context": "kind-ha-harness", "references": ["gone"],
                                "addresses": {W: "172.30.0.9"},
                                "faults": [{"id": "zone-outage:zone-a:1", "kind": "zone-outage", "target": "zone-a",
                                            "data": {"addresses": {W: "172.30.0.9"}}}]})
    env = provider.up()
    assert env.faults() == [] and env.state["references"] == [] and "addresses" not in env.state
    assert env.state["created"] is True and env.state["kubeconfig"] == str(tmp_path / "kubeconfig")


@pytest.mark.parametrize(("created", "deletes"), [(True, True), (False, False)])
def test_down_deletes_only_a_cluster_the_harness_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, created: bool, deletes: bool
) -> None:
    # The parent's down forgets the record (harness.teardown healed and undeployed first); kind adds the delete.
    monkeypatch.setattr(ClusterProvider, "down", lambda self: ["state forgotten"])
    run = Commands(clusters=["ha-harness"])
    provider = KindProvider(configure(tmp_path), run)
    write_state(provider.path, {"kubeconfig": "k", "context": "kind-ha-harness", "faults": [], "references": []}
                | ({"created": True} if created else {}))
    removed = provider.down()
    delete = ["kind", "delete", "cluster", "--name", "ha-harness", "--kubeconfig", str(tmp_path / "kubeconfig")]
    assert run.argvs == [["kind", "get", "clusters"]] + ([delete, NETWORK_RM] if deletes else [])
    assert removed[0] == "state forgotten"
    assert (removed[1:] == ["kind cluster ha-harness (and its context kind-ha-harness)"]) is deletes


def test_down_of_one_of_two_clusters_leaves_the_network_they_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ClusterProvider, "down", lambda self: ["state forgotten"])
    run = Commands(clusters=["ha-harness", "hh2"])
    run.fail(*NETWORK_RM, stderr="Error response from daemon: error while removing network: "
                                 "network ha-harness-kind id 5d1c0e2a9b7f has active endpoints")
    provider = KindProvider(configure(tmp_path), run)
    write_state(provider.path, {"kubeconfig": "k", "context": "kind-ha-harness", "faults": [], "references": [],
                                "created": True})
    assert provider.down() == ["state forgotten", "kind cluster ha-harness (and its context kind-ha-harness)"]
    assert ["kind", "delete", "cluster", "--name", "ha-harness", "--kubeconfig", str(tmp_path / "kubeconfig")] in run.argvs


def test_down_after_the_cluster_was_deleted_by_hand_forgets_its_state(tmp_path: Path) -> None:
    run = Commands(clusters=[])
    provider = KindProvider(configure(tmp_path), run)
    write_state(provider.path, {"kubeconfig": "k", "context": "kind-ha-harness", "created": True, "faults": [],
                                "references": ["ns"]})
    assert provider.left_to_heal() is None  # nothing to reach, heal or undeploy
    assert provider.down() == [f"state {provider.path}"]
    assert not provider.path.exists()
    assert run.argvs == [["kind", "get", "clusters"]] * 2
    assert provider.down() == []


# ---------------------------------------------------------------- zone outage


def test_cut_zone_disconnects_exactly_the_zones_nodes(tmp_path: Path) -> None:
    run = Commands()
    data = kind_env(run, tmp_path).cut_zone("zone-b")
    assert data == {"addresses": {f"{W}3": "172.30.0.5", f"{W}4": "172.30.0.6"}}
    assert run.argvs == [
        ["docker", "inspect", f"{W}3"], ["docker", "inspect", f"{W}4"],
        ["docker", "network", "disconnect", NET, f"{W}3"], ["docker", "network", "disconnect", NET, f"{W}4"],
    ]


def test_cut_zone_unknown_zone_issues_nothing(tmp_path: Path) -> None:
    run = Commands()
    with pytest.raises(ConfigError, match=r"unknown zone 'zone-d'; this environment has zones: zone-a, zone-b, zone-c "
                                          r"\(see guides/scenarios.md in the documentation"):
        kind_env(run, tmp_path).cut_zone("zone-d")
    assert run.argvs == []


def test_cut_zone_that_fails_part_way_reconnects_what_it_cut(tmp_path: Path) -> None:
    run = Commands()
    run.fail("docker", "network", "disconnect", NET, f"{W}2")
    with pytest.raises(EnvironmentStateError, match="boom"):
        kind_env(run, tmp_path).cut_zone("zone-a")
    # The runner heals a failed inject with empty data; nothing may stay cut behind its back.
    assert run.argvs[2:] == [
        ["docker", "network", "disconnect", NET, W], ["docker", "network", "disconnect", NET, f"{W}2"],
        ["docker", "network", "connect", "--ip", "172.30.0.3", NET, W],
    ]


def test_cut_zone_leaves_a_node_already_off_the_network_to_its_own_fault(tmp_path: Path) -> None:
    run = Commands()
    run.inspect[W] = container(address=None)  # its link is down
    data = kind_env(run, tmp_path).cut_zone("zone-a")
    assert data == {"addresses": {f"{W}2": "172.30.0.4"}}
    assert [a for a in run.argvs if a[1] == "network"] == [["docker", "network", "disconnect", NET, f"{W}2"]]


def test_restore_zone_reconnects_with_the_recorded_addresses(tmp_path: Path) -> None:
    run = Commands()
    kind_env(run, tmp_path).restore_zone("zone-b", {"addresses": {f"{W}3": "172.30.0.5", f"{W}4": "172.30.0.6"}})
    assert run.argvs == [
        ["docker", "network", "connect", "--ip", "172.30.0.5", NET, f"{W}3"],
        ["docker", "network", "connect", "--ip", "172.30.0.6", NET, f"{W}4"],
    ]


def test_restore_zone_is_idempotent(tmp_path: Path) -> None:
    run = Commands()
    env = kind_env(run, tmp_path)
    data = {"addresses": {f"{W}3": "172.30.0.5", f"{W}4": "172.30.0.6"}}
    for node, address in data["addresses"].items():
        run.fail("docker", "network", "connect", "--ip", address, NET, node, stderr=ALREADY_CONNECTED.format(node))
    env.restore_zone("zone-b", data)
    env.restore_zone("zone-b", data)
    env.restore_zone("zone-b", {})  # after a failed inject: nothing recorded, nothing to do
    assert len(run.argvs) == 4


def test_restore_zone_reports_other_docker_errors(tmp_path: Path) -> None:
    run = Commands()
    run.fail("docker", "network", "connect", "--ip", "172.30.0.5", NET, f"{W}3",
             stderr="Error response from daemon: Address already in use")
    with pytest.raises(EnvironmentStateError, match="Address already in use"):
        kind_env(run, tmp_path).restore_zone("zone-b", {"addresses": {f"{W}3": "172.30.0.5"}})


# ---------------------------------------------------------------- node failures


@pytest.mark.parametrize(("mode", "fail", "restore"), [
    ("kill", [["docker", "kill", f"{W}3"]], [["docker", "start", f"{W}3"]]),
    ("freeze", [["docker", "pause", f"{W}3"]], [["docker", "inspect", f"{W}3"], ["docker", "unpause", f"{W}3"]]),
    ("link-down", [["docker", "inspect", f"{W}3"], ["docker", "network", "disconnect", NET, f"{W}3"]],
     [["docker", "network", "connect", "--ip", "172.30.0.5", NET, f"{W}3"]]),
])
def test_fail_and_restore_node(tmp_path: Path, mode: str, fail: list[list[str]], restore: list[list[str]]) -> None:
    run = Commands()
    env = kind_env(run, tmp_path)
    data = env.fail_node(f"{W}3", mode)
    assert run.argvs == fail
    assert data == {"mode": mode} | ({"addresses": {f"{W}3": "172.30.0.5"}} if mode == "link-down" else {})
    run.argvs.clear()
    run.inspect[f"{W}3"] = container("172.30.0.5", paused=mode == "freeze")
    env.restore_node(f"{W}3", data)
    assert run.argvs == restore


def test_unknown_failure_mode_names_the_accepted_ones(tmp_path: Path) -> None:
    run = Commands()
    with pytest.raises(FaultError, match="kind cannot fail a node by reboot; accepted: kill, freeze, link-down"):
        kind_env(run, tmp_path).fail_node(W, "reboot")
    assert run.argvs == []


def test_restore_frozen_node_unpauses_only_a_paused_container(tmp_path: Path) -> None:
    run = Commands()
    kind_env(run, tmp_path).restore_node(W, {"mode": "freeze"})  # the pause never happened
    assert run.argvs == [["docker", "inspect", W]]


def test_restore_killed_node_defaults_to_start(tmp_path: Path) -> None:
    run = Commands()
    kind_env(run, tmp_path).restore_node(W, {})
    assert run.argvs == [["docker", "start", W]]


def test_sweep_starts_stopped_and_unpauses_paused_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The parent's sweep uncordons through the Kubernetes API; its result is passed on.
    monkeypatch.setattr(ClusterEnvironment, "sweep", lambda self: ["uncordoned x"])
    run = Commands()
    run.inspect[f"{W}2"] = container("172.30.0.4", running=False)
    run.inspect[f"{W}5"] = container("172.30.0.7", paused=True)
    assert kind_env(run, tmp_path).sweep() == [f"started {W}2", f"unpaused {W}5", "uncordoned x"]
    assert [a for a in run.argvs if a[1] not in ("inspect", "exec")] == [["docker", "start", f"{W}2"],
                                                                        ["docker", "unpause", f"{W}5"]]
    assert [a[2] for a in run.argvs if a[1] == "inspect"] == [n.name for n in NODES]


# ---------------------------------------------------------------- addresses: read, recorded, given back


@pytest.mark.parametrize(("inspected", "address"), [
    (container("172.30.0.3"), "172.30.0.3"),
    (container(None), None),  # disconnected by a fault
    (container("172.30.0.3", running=False), None),  # stopped (killed): attached, but with IPAddress ""
    (container("172.30.0.3", paused=True), "172.30.0.3"),  # a frozen node keeps its address
    (container("172.18.0.3", network="kind"), None),  # on kind's default network, not the harness's
    ({"State": {"Running": True, "Paused": False}, "NetworkSettings": {"Networks": None}}, None),
])
def test_address_on_the_harness_network(tmp_path: Path, inspected: dict[str, Any], address: str | None) -> None:
    run = Commands()
    run.inspect[W] = inspected
    assert kind_env(run, tmp_path)._address(W) == address
    assert run.argvs == [["docker", "inspect", W]]


def test_cut_zone_leaves_a_stopped_node_to_the_fault_that_stopped_it(tmp_path: Path) -> None:
    run = Commands()
    run.inspect[f"{W}3"] = container("172.30.0.5", running=False)  # killed: no address to take away or give back
    env = kind_env(run, tmp_path)
    assert env.cut_zone("zone-b") == {"addresses": {f"{W}4": "172.30.0.6"}}
    assert [a for a in run.argvs if a[1] == "network"] == [["docker", "network", "disconnect", NET, f"{W}4"]]
    assert read_state(env.path)["addresses"] == {f"{W}4": "172.30.0.6"}  # type: ignore[index]


class Recording(Commands):
    """Also keeps the state file's "addresses" as they are at each `docker network disconnect`."""

    def __init__(self, state_path: Path, **kw: Any) -> None:
        super().__init__(**kw)
        self.state_path = state_path
        self.recorded: list[dict[str, str]] = []

    def __call__(self, argv: Sequence[str]) -> str:
        if list(argv[1:3]) == ["network", "disconnect"]:
            self.recorded.append(dict((read_state(self.state_path) or {}).get("addresses", {})))
        return super().__call__(argv)


def test_cut_records_every_address_in_the_state_file_before_cutting(tmp_path: Path) -> None:
    run = Recording(tmp_path / "state" / "kind-ledger.json")
    env = kind_env(run, tmp_path)
    env.cut_zone("zone-c")
    both = {f"{W}5": "172.30.0.7", f"{W}6": "172.30.0.8"}
    assert run.recorded == [both, both]  # already both at the first cut: a crash after it still knows the second
    assert read_state(env.path)["addresses"] == both == env.state["addresses"]  # type: ignore[index]


def test_recorded_addresses_add_up_and_keep_another_processs(tmp_path: Path) -> None:
    run = Commands()
    env = kind_env(run, tmp_path)
    # Another process, sharing the state file, recorded a cut of its own since env read it.
    write_state(env.path, read_state(env.path) | {"addresses": {f"{W}5": "172.30.0.7"}})  # type: ignore[operator]
    env.cut_zone("zone-a")
    env.fail_node(f"{W}3", "link-down")
    assert read_state(env.path)["addresses"] == {  # type: ignore[index]
        f"{W}5": "172.30.0.7", W: "172.30.0.3", f"{W}2": "172.30.0.4", f"{W}3": "172.30.0.5"}


def test_cut_that_fails_part_way_keeps_the_record(tmp_path: Path) -> None:
    run = Commands()
    run.fail("docker", "network", "disconnect", NET, f"{W}2")
    env = kind_env(run, tmp_path)
    with pytest.raises(EnvironmentStateError, match="boom"):
        env.cut_zone("zone-a")
    # Harmless once reconnected: sweep gives back only what is off the network.
    assert read_state(env.path)["addresses"] == {W: "172.30.0.3", f"{W}2": "172.30.0.4"}  # type: ignore[index]


def test_cut_of_nothing_on_the_network_issues_no_disconnect(tmp_path: Path) -> None:
    run = Commands()
    run.inspect[W] = container(None)
    run.inspect[f"{W}2"] = container("172.30.0.4", running=False)
    assert kind_env(run, tmp_path).cut_zone("zone-a") == {"addresses": {}}
    assert [a[1] for a in run.argvs] == ["inspect", "inspect"]


def test_cut_after_the_region_was_taken_down_cuts_nothing(tmp_path: Path) -> None:
    run = Commands()
    env = kind_env(run, tmp_path)
    env.path.unlink()  # `harness down` in another process
    with pytest.raises(EnvironmentStateError, match="disappeared"):
        env.cut_zone("zone-a")
    assert [a[1] for a in run.argvs] == ["inspect", "inspect"]


def test_sweep_reconnects_recorded_nodes_that_are_off_the_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ClusterEnvironment, "sweep", lambda self: ["uncordoned x"])
    run = Commands()
    env = kind_env(run, tmp_path)
    # Recorded by a cut in another process that died; W4 was given back since, W6 paused.
    write_state(env.path, read_state(env.path) | {"addresses": {  # type: ignore[operator]
        f"{W}3": "172.30.0.5", f"{W}4": "172.30.0.6", f"{W}6": "172.30.0.8"}})
    run.inspect[f"{W}3"] = container(None)
    run.inspect[f"{W}6"] = container(None, paused=True)
    assert env.sweep() == [f"unpaused {W}6", f"reconnected {W}3", f"reconnected {W}6", "uncordoned x"]
    assert [a for a in run.argvs if a[1] not in ("inspect", "exec")] == [
        ["docker", "unpause", f"{W}6"],
        ["docker", "network", "connect", "--ip", "172.30.0.5", NET, f"{W}3"],
        ["docker", "network", "connect", "--ip", "172.30.0.8", NET, f"{W}6"],
    ]
    # Every node's state, then the address of each recorded one.
    assert [a[2] for a in run.argvs if a[1] == "inspect"] == [n.name for n in NODES] + [f"{W}3", f"{W}4", f"{W}6"]


def test_sweep_reconnect_is_idempotent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ClusterEnvironment, "sweep", lambda self: [])
    run = Commands()
    env = kind_env(run, tmp_path)
    write_state(env.path, read_state(env.path) | {"addresses": {W: "172.30.0.3"}})  # type: ignore[operator]
    run.inspect[W] = container(None)  # as docker inspect saw it, though another heal got there first
    run.fail("docker", "network", "connect", "--ip", "172.30.0.3", NET, W, stderr=ALREADY_CONNECTED.format(W))
    assert env.sweep() == [f"reconnected {W}"]


def test_heal_after_a_crash_mid_cut_gives_back_what_was_cut(tmp_path: Path, kube: list[NodeView]) -> None:
    run = Commands()
    env = kind_env(run, tmp_path)
    # The runner's ledger entry is written before the inject; its data only after. The process died between.
    env.record_fault({"id": "zone-outage:zone-c:7", "kind": "zone-outage", "target": "zone-c", "data": {}})
    env.cut_zone("zone-c")
    run.inspect[f"{W}5"] = container(None)
    run.inspect[f"{W}6"] = container(None)
    run.argvs.clear()
    later = kind_env(run, tmp_path)  # `harness heal`, in another process
    assert heal_everything(later) == ["healed zone-outage:zone-c:7", f"reconnected {W}5", f"reconnected {W}6"]
    assert [a for a in run.argvs if a[1] == "network"] == [
        ["docker", "network", "connect", "--ip", "172.30.0.7", NET, f"{W}5"],
        ["docker", "network", "connect", "--ip", "172.30.0.8", NET, f"{W}6"],
    ]
    assert later.faults() == []


# ---------------------------------------------------------------- through the fault registry and runner


def test_kind_environment_capabilities(tmp_path: Path) -> None:
    env = kind_env(Commands(), tmp_path)
    assert isinstance(env, ZoneNetwork) and isinstance(env, NodeFailures)
    for kind in ("zone-outage", "node-kill", "node-freeze", "node-link-down"):
        assert get_fault(kind).available(env) is None, kind
    assert get_fault("member-kill").available(env) == "the kind provider cannot kill etcd member processes"
    assert get_fault("host-outage").available(env) == "this environment models no hosts (bring it up with hosts per zone)"


def test_zone_outage_through_the_runner_and_healed_after_a_crash(tmp_path: Path, kube: list[NodeView]) -> None:
    run = Commands()
    env = kind_env(run, tmp_path)
    active = FaultRunner(env, Timeline()).inject("zone-outage", "zone-c")
    assert active.data["addresses"] == {f"{W}5": "172.30.0.7", f"{W}6": "172.30.0.8"}
    assert set(active.data) == {"addresses", "run_id", "watchdog"}
    # Taken as in effect once Docker says the zone's nodes are off the network.
    assert active.event.data["effect"] == {"observed": True, "disconnected": [f"{W}5", f"{W}6"]}
    assert [f["data"] for f in env.faults()] == [active.data]  # in the ledger, for `harness heal`
    run.argvs.clear()
    # The test process died; `harness heal` reads the ledger in another process and sweeps.
    later = kind_env(run, tmp_path)
    assert heal_everything(later) == [f"healed {active.id}"]
    assert run.argvs[:2] == [["docker", "network", "connect", "--ip", "172.30.0.7", NET, f"{W}5"],
                             ["docker", "network", "connect", "--ip", "172.30.0.8", NET, f"{W}6"]]
    assert later.faults() == []


def test_the_wait_for_health_after_a_heal_grows_with_how_long_the_fault_held(
        tmp_path: Path, kube: list[NodeView], monkeypatch: pytest.MonkeyPatch) -> None:
    """TCP backs off through a cut: peers hear each other again up to about as long after the heal
    as the cut lasted, so the wait allows the recovery timeout plus the time the fault held."""
    env = kind_env(Commands(), tmp_path)
    waited: list[float] = []
    monkeypatch.setattr(env, "wait_healthy", lambda timeout=None: waited.append(timeout))
    runner = FaultRunner(env, Timeline())
    active = runner.inject("zone-outage", "zone-c", wait_healthy=False)
    active.started -= 40.0  # as if it had held for 40 s
    runner.heal()
    assert len(waited) == 1 and env.config.timeouts.recovery + 40.0 <= waited[0] < env.config.timeouts.recovery + 45.0


def test_runner_rolls_back_a_zone_outage_that_failed_part_way(tmp_path: Path, kube: list[NodeView]) -> None:
    run = Commands()
    run.fail("docker", "network", "disconnect", NET, f"{W}4")
    env = kind_env(run, tmp_path)
    with pytest.raises(FaultError, match="injecting zone-outage on zone-b failed and was rolled back"):
        FaultRunner(env, Timeline()).inject("zone-outage", "zone-b")
    assert ["docker", "network", "connect", "--ip", "172.30.0.5", NET, f"{W}3"] in run.argvs
    assert env.faults() == []


# ---------------------------------------------------------------- configuration


def test_load_config_builds_the_kind_provider(tmp_path: Path) -> None:
    config = load_config(overrides={"provider.name": "kind", "provider.kind_workers_per_zone": 4,
                                    "paths.state_dir": str(tmp_path / "state")},
                         environ={"KUBECONFIG": f"{tmp_path / 'kc'}:{tmp_path / 'second'}"})
    provider = get_provider(config.provider.name, config)
    assert isinstance(provider, KindProvider)
    assert provider.access == KubeAccess(tmp_path / "kc", "kind-ha-harness")  # the first file of $KUBECONFIG
    assert provider.cluster == "ha-harness" and provider.run is run_command
    assert provider.config.provider.kind_workers_per_zone == 4
    assert KindEnvironment.run is run_command


@pytest.mark.parametrize(("overrides", "message"), [
    ({"provider.kind_workers_per_zone": 0}, "kind_workers_per_zone must be between 1 and 10, got 0"),
    ({"provider.kind_workers_per_zone": 11}, "kind_workers_per_zone must be between 1 and 10, got 11"),
    ({"provider.name": "kinder"}, "unknown provider 'kinder'; accepted: local, cluster, kind"),
    ({"provider.kind_workers": 2}, r"unknown key\(s\) \['kind_workers'\] in \[provider\]"),
])
def test_bad_kind_settings_are_config_errors(tmp_path: Path, overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(overrides={"provider.name": "kind"} | overrides, environ={"KUBECONFIG": str(tmp_path / "kc")})


# ---------------------------------------------------------------- the real runner's errors


def test_run_command_without_the_binary_is_a_prerequisite_error() -> None:
    with pytest.raises(PrerequisiteError, match="kind-not-installed not found: the kind provider needs kind"):
        run_command(["kind-not-installed", "get", "clusters"])


def test_run_command_failure_carries_stderr() -> None:
    # _reconnect recognises an endpoint that exists already by this message, so it must get through.
    with pytest.raises(EnvironmentStateError, match=r"`sh -c .*` failed \(1\): .*endpoint with name n already exists"):
        run_command(["sh", "-c", f"echo '{ALREADY_CONNECTED.format('n')}' >&2; exit 1"])
    assert run_command(["sh", "-c", "echo ha-harness"]) == "ha-harness\n"
