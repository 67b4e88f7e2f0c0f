"""The AWS cloud controller manager's cloud config and command line for an AWS API at an endpoint."""

from __future__ import annotations

import configparser
from pathlib import Path

from harness.kube.cloud_controller import SERVICES, cloud_config, command, provider_id


def test_the_config_names_where_it_is_and_sends_every_service_to_the_endpoint() -> None:
    text = cloud_config("eu-west-1", "eu-west-1a", "vpc-1", "subnet-1", "lb", "http://10.76.0.1:5000")
    parsed = configparser.ConfigParser()
    parsed.read_string(text)
    assert dict(parsed["Global"]) == {"zone": "eu-west-1a", "region": "eu-west-1", "vpc": "vpc-1",
                                      "subnetid": "subnet-1", "kubernetesclusterid": "lb",
                                      "disablesecuritygroupingress": "true"}
    overrides = [parsed[s] for s in parsed.sections() if s.startswith("ServiceOverride")]
    assert [o["Service"] for o in overrides] == list(SERVICES)
    assert {(o["URL"], o["Region"], o["SigningRegion"]) for o in overrides} == {("http://10.76.0.1:5000", "eu-west-1",
                                                                                 "eu-west-1")}


def test_it_runs_the_service_controller_alone_without_leader_election_or_a_port() -> None:
    argv = command(Path("/bin/ccm"), Path("/k/config"), Path("/k/cloud.conf"), "lb")
    assert "--controllers=service" in argv and "--leader-elect=false" in argv and "--secure-port=0" in argv
    assert "--cloud-config=/k/cloud.conf" in argv and "--cluster-name=lb" in argv
    assert provider_id("eu-west-1a", "i-0abc") == "aws:///eu-west-1a/i-0abc"
