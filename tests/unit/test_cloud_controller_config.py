"""The AWS cloud controller manager's cloud config and command line for an AWS API at an endpoint."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.kube.cloud_controller import BEFORE_KEP3458, CURRENT, cloud_config, command, provider_id, release


def test_the_config_names_where_it_is_and_sends_every_service_to_the_endpoint() -> None:
    text = cloud_config("eu-west-1", "eu-west-1a", "vpc-1", "subnet-1", "lb", "http://10.76.0.1:5000")
    parsed = configparser.ConfigParser()
    parsed.read_string(text)
    assert dict(parsed["Global"]) == {"zone": "eu-west-1a", "region": "eu-west-1", "vpc": "vpc-1",
                                      "subnetid": "subnet-1", "kubernetesclusterid": "lb",
                                      "disablesecuritygroupingress": "true"}
    overrides = [parsed[s] for s in parsed.sections() if s.startswith("ServiceOverride")]
    assert [o["Service"] for o in overrides] == list(CURRENT.services)
    assert {(o["URL"], o["Region"], o["SigningRegion"]) for o in overrides} == {("http://10.76.0.1:5000", "eu-west-1",
                                                                                 "eu-west-1")}


def test_it_runs_the_service_controller_alone_without_leader_election_or_a_port() -> None:
    argv = command(Path("/bin/ccm"), Path("/k/config"), Path("/k/cloud.conf"), "lb")
    assert "--controllers=service" in argv and "--leader-elect=false" in argv and "--secure-port=0" in argv
    assert "--cloud-config=/k/cloud.conf" in argv and "--cluster-name=lb" in argv
    assert provider_id("eu-west-1a", "i-0abc") == "aws:///eu-west-1a/i-0abc"


def test_the_releases_are_the_pinned_ones() -> None:
    assert release(None) is CURRENT and CURRENT.stable_node_set
    assert release("v1.25.0") is BEFORE_KEP3458 and not BEFORE_KEP3458.stable_node_set
    # AWS SDK v1 finds an override by the service's endpoint name, v2 by its ServiceID.
    old = cloud_config("eu-west-1", "eu-west-1a", "vpc-1", "subnet-1", "lb", "http://e", BEFORE_KEP3458)
    assert "Service = ec2" in old and "Service = elasticloadbalancing" in old
    assert "Region = eu-west-1" not in old.split("[ServiceOverride")[0]  # v1.25 refuses it in [Global]
    with pytest.raises(ConfigError, match=r"v1\.2\.3 is not pinned; pinned: v1\.36\.2, v1\.25\.0"):
        release("v1.2.3")
