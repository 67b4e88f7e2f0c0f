"""What the reference takes from gardenlet's Etcd resources when etcd-druid runs its etcds: the
Secrets its kube-apiservers mount to reach the members, and the size of the members' volumes.
The resources are written out in the shape gardenlet gives them (tests/kube/test_gardenlet.py
holds that shape to gardenlet's own code)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.kube import druid


def _etcd(name: str, ca: str = "ca-etcd-bundle-1a2b", client: str = "etcd-client", size: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"etcd": {"clientUrlTls": {"tlsCASecretRef": {"name": ca, "dataKey": "bundle.crt"},
                                                      "serverTLSSecretRef": {"name": f"etcd-server-{name}"},
                                                      "clientTLSSecretRef": {"name": client}}}}
    if size is not None:
        spec["storageCapacity"] = size
    return {"apiVersion": "druid.gardener.cloud/v1alpha1", "kind": "Etcd", "metadata": {"name": name}, "spec": spec}


SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "etcd-client"}}


def test_kube_apiserver_mounts_the_ca_bundle_and_client_certificate_the_etcds_name() -> None:
    objects = [SECRET, _etcd("etcd-main"), _etcd("etcd-events")]
    assert druid.apiserver_etcd_tls(objects) == {"etcd-ca": "ca-etcd-bundle-1a2b", "etcd-client-tls": "etcd-client"}


def test_etcds_naming_different_client_secrets_are_refused() -> None:
    with pytest.raises(druid.DruidError, match="name different client Secrets"):
        druid.apiserver_etcd_tls([_etcd("etcd-main"), _etcd("etcd-events", client="etcd-events-client")])


def test_an_etcd_serving_its_clients_without_tls_is_refused_by_name() -> None:
    plain = _etcd("etcd-events")
    del plain["spec"]["etcd"]["clientUrlTls"]
    with pytest.raises(druid.DruidError, match="the Etcd etcd-events serves its clients without TLS"):
        druid.apiserver_etcd_tls([_etcd("etcd-main"), plain])


def test_the_volumes_are_as_large_as_the_largest_claim_druid_makes() -> None:
    assert druid.storage_capacity([_etcd("etcd-main", size="25Gi"), _etcd("etcd-events", size="10Gi")]) == "25Gi"
    # without a capacity druid claims its default, 16Gi
    assert druid.storage_capacity([_etcd("etcd-main", size="10Gi"), _etcd("etcd-events")]) == "16Gi"
