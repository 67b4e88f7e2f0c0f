"""What the local seed changes in Gardener's gardener-resource-manager objects, and only that."""

from __future__ import annotations

import base64
import copy
from pathlib import Path

import pytest

from harness.kube import resource_manager as grm

pytest.importorskip("yaml")

GARDENER_CONFIG = {
    "apiVersion": "resourcemanager.config.gardener.cloud/v1alpha1", "kind": "ResourceManagerConfiguration",
    "leaderElection": {"leaderElect": True, "resourceName": "gardener-resource-manager", "resourceNamespace": "garden"},
    "server": {"webhooks": {"bindAddress": "", "port": 10250, "tls": {"serverCertDir": "/etc/gardener-resource-manager-tls"}},
               "healthProbes": {"port": 8081}, "metrics": {"port": 8080}},
    "webhooks": {"highAvailabilityConfig": {"enabled": True}},
    "controllers": {"resourceClass": "seed"},
}
WEBHOOKS = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
    "metadata": {"name": "gardener-resource-manager", "resourceVersion": "1", "uid": "x"},
    "webhooks": [{"name": "high-availability-config.resources.gardener.cloud", "failurePolicy": "Fail",
                  "namespaceSelector": {"matchLabels": {"high-availability-config.resources.gardener.cloud/consider": "true"}},
                  "clientConfig": {"service": {"name": "gardener-resource-manager", "namespace": "garden",
                                               "path": "/webhooks/high-availability-config"}, "caBundle": "Z2FyZGVuZXI="}}],
}


def test_the_config_keeps_gardeners_fields_and_takes_the_processs_ports_and_certificates(tmp_path: Path) -> None:
    before = copy.deepcopy(GARDENER_CONFIG)
    out = grm.local_config(GARDENER_CONFIG, tmp_path / "certs", grm.Ports(webhooks=1, health=2, metrics=3))
    assert GARDENER_CONFIG == before  # not changed in place
    assert out["server"] == {
        "webhooks": {"bindAddress": "127.0.0.1", "port": 1, "tls": {"serverCertDir": str(tmp_path / "certs")}},
        "healthProbes": {"bindAddress": "127.0.0.1", "port": 2}, "metrics": {"bindAddress": "127.0.0.1", "port": 3}}
    assert out["leaderElection"] == {**GARDENER_CONFIG["leaderElection"], "leaderElect": False}
    assert {k: v for k, v in out.items() if k not in ("server", "leaderElection")} == \
        {k: v for k, v in GARDENER_CONFIG.items() if k not in ("server", "leaderElection")}


def test_the_webhooks_call_this_host_with_the_harnesss_ca_and_keep_the_rest() -> None:
    out = grm.local_webhooks(WEBHOOKS, 9443, b"PEM")
    (webhook,) = out["webhooks"]
    assert webhook["clientConfig"] == {"url": "https://127.0.0.1:9443/webhooks/high-availability-config",
                                       "caBundle": base64.b64encode(b"PEM").decode()}
    assert {k: v for k, v in webhook.items() if k != "clientConfig"} == \
        {k: v for k, v in WEBHOOKS["webhooks"][0].items() if k != "clientConfig"}
    assert out["metadata"] == {"name": "gardener-resource-manager"}  # the API server sets the rest
    assert WEBHOOKS["webhooks"][0]["clientConfig"]["service"]["path"] == "/webhooks/high-availability-config"


def test_the_component_config_is_read_from_gardeners_configmap() -> None:
    objects = [{"kind": "Deployment", "metadata": {"name": "gardener-resource-manager"}},
               {"kind": "ConfigMap", "metadata": {"name": "gardener-resource-manager-1a2b"},
                "data": {"config.yaml": "kind: ResourceManagerConfiguration\nwebhooks: {}\n"}}]
    assert grm.component_config(objects) == {"kind": "ResourceManagerConfiguration", "webhooks": {}}
    with pytest.raises(grm.ResourceManagerError, match="no ConfigMap with config.yaml"):
        grm.component_config(objects[:1])
