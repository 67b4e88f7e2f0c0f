"""The AWS cloud controller manager, real: k8s.io/cloud-provider-aws pinned in
kube/gomod/cloud-provider-aws, built on first use. Its service controller makes a classic ELB for
each Service of type LoadBalancer (without a loadBalancerClass) and keeps the ELB's instances: the
node set KEP-3458 (seed 002) is about. This module knows how it is built and started against an AWS
API at an endpoint of its own; the local region starts it (harness.providers.local.cloud_lb).

It needs no instance metadata when its cloud config names the zone, VPC, subnet and cluster id,
and reaches EC2 and ELB through `[ServiceOverride]` sections. It finds the nodes' instances by
their spec.providerID (aws:///<availability zone>/<instance id>) and only registers instances
tagged kubernetes.io/cluster/<cluster id>.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness import gobuild

MODULE_DIR = Path(__file__).resolve().parent / "gomod" / "cloud-provider-aws"
BINARY = "aws-cloud-controller-manager"
CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
# What the SDK calls the services it overrides (its ServiceID), in the cloud config.
SERVICES = ("EC2", "Elastic Load Balancing", "Elastic Load Balancing v2")
PROGRAM = gobuild.CachedProgram(
    MODULE_DIR, BINARY, "k8s.io/cloud-provider-aws", "cloud-provider-aws", "cloud-provider-aws",
    "the AWS cloud controller manager", "install Go 1.26 or newer (make setup does)",
    "python -m harness.kube.cloud_controller", min_go=(1, 26), sources=("go.mod", "go.sum"),
    package="k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager")


def _say(message: str) -> None:
    print(f"[cloud-controller] {message}", file=sys.stderr, flush=True)


def binary(cache_root: Path | None = None) -> Path:
    """The pinned controller manager, built into the cache on first use (about 5 minutes, 103 MiB)."""
    return PROGRAM.path(cache_root, progress=_say)


def provider_id(availability_zone: str, instance_id: str) -> str:
    return f"aws:///{availability_zone}/{instance_id}"


def cloud_config(region: str, availability_zone: str, vpc_id: str, subnet_id: str, cluster_id: str,
                 endpoint: str) -> str:
    """Its INI: where it is (no instance metadata asked), and every service it calls at `endpoint`.
    Security group rules are left alone: the local cloud's instances have no security groups."""
    lines = ["[Global]", f"Zone = {availability_zone}", f"Region = {region}", f"VPC = {vpc_id}",
             f"SubnetID = {subnet_id}", f"KubernetesClusterID = {cluster_id}", "DisableSecurityGroupIngress = true"]
    for n, service in enumerate(SERVICES, 1):
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
    print(binary())
