"""The AWS cloud controller manager, real: k8s.io/cloud-provider-aws pinned in
kube/gomod/cloud-provider-aws, and v1.25.0, the last release before KEP-3458, in
kube/gomod/cloud-provider-aws-v1.25; each built on first use. Its service controller makes a
classic ELB for each Service of type LoadBalancer (without a loadBalancerClass) and keeps the ELB's
instances: the node set KEP-3458 (seed 002) is about. This module knows how it is built and started
against an AWS API at an endpoint of its own; the local region starts it
(harness.providers.local.seed.cloud_controller).

It needs no instance metadata when its cloud config names the zone, VPC, subnet and cluster id,
and reaches EC2 and ELB through `[ServiceOverride]` sections. It finds the nodes' instances by
their spec.providerID (aws:///<availability zone>/<instance id>) and only registers instances
tagged kubernetes.io/cluster/<cluster id>.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from harness import gobuild
from harness.errors import ConfigError

GOMOD = Path(__file__).resolve().parent / "gomod"
BINARY = "aws-cloud-controller-manager"
CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"


@dataclass(frozen=True)
class Release:
    """A pinned release of the controller, and what differs between releases that the harness
    must know."""

    program: gobuild.CachedProgram
    services: tuple[str, ...]  # what its AWS SDK calls the services it overrides, in the cloud config
    stable_node_set: bool  # KEP-3458: a NotReady node stays in the load balancers
    global_region: bool = True  # its cloud config's [Global] takes a Region (v1.25 derives it from Zone)

    @property
    def version(self) -> str:
        return self.program.pinned_version()


def _program(module: str) -> gobuild.CachedProgram:
    return gobuild.CachedProgram(
        GOMOD / module, BINARY, "k8s.io/cloud-provider-aws", "cloud-provider-aws", module,
        "the AWS cloud controller manager", "install Go 1.26 or newer (make setup does)",
        "python -m harness.kube.cloud_controller", min_go=(1, 26), sources=("go.mod", "go.sum"),
        package="k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager")


# The current release (AWS SDK v2: services by their ServiceID), and v1.25.0, the last before
# KEP-3458 (k8s.io/cloud-provider v0.25, AWS SDK v1: services by their endpoint name).
CURRENT = Release(_program("cloud-provider-aws"), ("EC2", "Elastic Load Balancing", "Elastic Load Balancing v2"), True)
BEFORE_KEP3458 = Release(_program("cloud-provider-aws-v1.25"), ("ec2", "elasticloadbalancing"), False, False)
RELEASES = (CURRENT, BEFORE_KEP3458)


def release(version: str | None) -> Release:
    """The pinned release of that version (None: the current one); a clear error for any other."""
    if version is None:
        return CURRENT
    found = next((r for r in RELEASES if r.version == version), None)
    if found is None:
        raise ConfigError(f"cloud-provider-aws {version} is not pinned; pinned: {', '.join(r.version for r in RELEASES)}")
    return found


def _say(message: str) -> None:
    print(f"[cloud-controller] {message}", file=sys.stderr, flush=True)


def binary(cache_root: Path | None = None, version: str | None = None) -> Path:
    """The pinned controller manager, built into the cache on first use (about 5 minutes, 103 MiB;
    v1.25.0: about 2.5 minutes, 60 MiB)."""
    return release(version).program.path(cache_root, progress=_say)


def provider_id(availability_zone: str, instance_id: str) -> str:
    return f"aws:///{availability_zone}/{instance_id}"


def cloud_config(region: str, availability_zone: str, vpc_id: str, subnet_id: str, cluster_id: str,
                 endpoint: str, of: Release = CURRENT) -> str:
    """Its INI (for release `of`): where it is (no instance metadata asked), and every service it
    calls at `endpoint`. Security group rules are left alone: the local cloud's instances have no
    security groups."""
    lines = ["[Global]", f"Zone = {availability_zone}", *([f"Region = {region}"] if of.global_region else []),
             f"VPC = {vpc_id}", f"SubnetID = {subnet_id}", f"KubernetesClusterID = {cluster_id}",
             "DisableSecurityGroupIngress = true"]
    for n, service in enumerate(of.services, 1):
        lines += ["", f'[ServiceOverride "{n}"]', f"Service = {service}", f"Region = {region}", f"URL = {endpoint}",
                  f"SigningRegion = {region}"]
    return "\n".join(lines) + "\n"


def command(program: Path, kubeconfig: Path, config: Path, cluster_id: str) -> list[str]:
    """The service controller alone: no routes, no node initialisation, no leader election, no
    serving port (nothing scrapes it here)."""
    return [str(program), f"--kubeconfig={kubeconfig}", "--cloud-provider=aws", f"--cloud-config={config}",
            "--controllers=service", "--use-service-account-credentials=false", "--leader-elect=false",
            "--secure-port=0", "--authentication-skip-lookup=true", "--configure-cloud-routes=false",
            f"--cluster-name={cluster_id}", "--v=2"]


if __name__ == "__main__":
    for r in RELEASES:
        print(binary(version=r.version))
