"""The machine-controller-manager objects and command lines (harness.kube.machine_controller): the
nodes' Machines exist before the MachineSets that adopt them, each zone its own class and set."""

from __future__ import annotations

from pathlib import Path

from harness.kube import machine_controller as mc

ZONES = {"zone-a": {"subnet": "subnet-a", "availability_zone": "eu-west-1a", "image_id": "ami-1", "instance_type": "t3.micro"},
         "zone-b": {"subnet": "subnet-b", "availability_zone": "eu-west-1b", "image_id": "ami-1", "instance_type": "t3.micro"}}
SECRET = {"accessKeyID": "AKIA", "secretAccessKey": "s", "region": "eu-west-1", "endpoint": "http://10.0.0.1:5000"}


def test_every_node_is_a_machine_of_its_zones_class_named_after_it() -> None:
    objs = mc.objects("ns", ZONES, SECRET, {"zone-a-1": "zone-a", "zone-a-2": "zone-a", "zone-b-1": "zone-b"})
    kinds = [o["kind"] for o in objs]
    assert kinds == ["Namespace", "Secret", "MachineClass", "MachineClass", "Machine", "Machine", "Machine"]
    machines = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Machine"}
    assert machines["zone-a-2"]["metadata"]["labels"] == {mc.POOL_LABEL: "zone-a", "node": "zone-a-2"}
    assert machines["zone-b-1"]["spec"]["class"] == {"kind": "MachineClass", "name": "zone-b"}
    classes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "MachineClass"}
    assert classes["zone-b"]["providerSpec"] == {"imageId": "ami-1", "instanceType": "t3.micro", "subnetId": "subnet-b",
                                                 "availabilityZone": "eu-west-1b"}
    secret = next(o for o in objs if o["kind"] == "Secret")
    # MCM refuses to create a machine whose class secret has no userData.
    assert secret["stringData"]["userData"] and secret["stringData"]["endpoint"] == SECRET["endpoint"]


def test_a_machine_set_per_zone_selects_its_zones_machines() -> None:
    sets = mc.machine_sets("ns", {"zone-a": 2, "zone-b": 1})
    assert [(s["metadata"]["name"], s["spec"]["replicas"]) for s in sets] == [("zone-a", 2), ("zone-b", 1)]
    a = sets[0]["spec"]
    assert a["selector"]["matchLabels"] == a["template"]["metadata"]["labels"] == {mc.POOL_LABEL: "zone-a"}


def test_the_seed_is_both_control_and_target_and_only_the_machine_controller_takes_timeouts() -> None:
    manager = mc.command(Path("/bin/mc"), "manager", Path("/k/config"), "ns", 1234, 10, 5)
    machines = mc.command(Path("/bin/mc"), "machines", Path("/k/config"), "ns", 1235, 10, 5)
    for argv in (manager, machines):
        assert "--control-kubeconfig=/k/config" in argv and "--target-kubeconfig=/k/config" in argv
        assert "--leader-elect=false" in argv and "--namespace=ns" in argv
    assert manager[1] == "manager" and not any(a.startswith("--machine-health-timeout") for a in manager)
    assert "--machine-health-timeout=10s" in machines and "--machine-drain-timeout=5s" in machines
