"""The components of the reference shoot control plane and the labels the seeds give them.

One table: the renderer builds them from it, and placement probes and steps find their pods
with the same selectors.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import ConfigError

CONTROLPLANE_ROLE = {"gardener.cloud/role": "controlplane"}


@dataclass(frozen=True)
class Component:
    name: str
    kind: str  # StatefulSet | Deployment
    selector: dict[str, str]  # what selects its pods (and what its anti-affinity rules match)
    labels: dict[str, str]  # every label of its pods
    ha_type: str  # high-availability-config type: server | controller
    image: str
    ports: tuple[int, ...]
    # On the local seed, what the node agent runs for it when the reference runs for real
    # (None: kwok simulates it), and for StatefulSets the base of its members' fixed addresses.
    runs_as: str | None = None
    ip_base: int | None = None
    # What selects its pods where Gardener's own code made them, when that differs (gardenlet's
    # Etcd resources through etcd-druid: `app` and `role`, no `instance`).
    gardener_selector: dict[str, str] | None = None

    def selects(self, labels: dict[str, str]) -> bool:
        """Whether a pod with these labels is one of its pods (made by the renderer or by Gardener)."""
        return any(all(labels.get(k) == v for k, v in selector.items())
                   for selector in (self.selector, self.gardener_selector) if selector)


def _etcd(role: str, ip_base: int) -> Component:
    # GEP-20 writes its etcd rules against `app: etcd-statefulset` alone; etcd-druid also sets
    # `instance`, and the rules must use it: with `app` alone etcd-main and etcd-events would
    # repel each other and three zones could hold only one of the two clusters.
    selector = {"app": "etcd-statefulset", "instance": f"etcd-{role}"}
    return Component(
        name=f"etcd-{role}",
        kind="StatefulSet",
        selector=selector,
        labels={**selector, "name": "etcd", "role": role, **CONTROLPLANE_ROLE},
        ha_type="server",
        image="registry.k8s.io/etcd:3.5.21-0",
        ports=(2379, 2380),
        runs_as="etcd",
        ip_base=ip_base,
        gardener_selector={"app": "etcd-statefulset", "role": role, "app.kubernetes.io/managed-by": "etcd-druid"},
    )


COMPONENTS: dict[str, Component] = {
    c.name: c
    for c in (
        _etcd("main", 100),
        _etcd("events", 110),
        Component(
            name="kube-apiserver",
            kind="Deployment",
            selector={"app": "kubernetes", "role": "apiserver"},
            labels={"app": "kubernetes", "role": "apiserver", **CONTROLPLANE_ROLE},
            ha_type="server",
            image="registry.k8s.io/kube-apiserver:v1.36.3",
            ports=(443,),
            runs_as="kube-apiserver",
        ),
        Component(
            name="gardener-resource-manager",
            kind="Deployment",
            selector={"app": "gardener-resource-manager", **CONTROLPLANE_ROLE},
            labels={"app": "gardener-resource-manager", **CONTROLPLANE_ROLE},
            # Controller and webhook server at once: seed 001 says such a component is a server.
            ha_type="server",
            image="europe-docker.pkg.dev/gardener-project/releases/gardener/resource-manager:v1.110.0",
            ports=(10250,),
        ),
    )
}
ETCDS = ("etcd-main", "etcd-events")


def component(name: str) -> Component:
    try:
        return COMPONENTS[name]
    except KeyError:
        raise ConfigError(f"unknown component {name!r}; the reference has: {', '.join(COMPONENTS)}") from None


def component_of(labels: dict[str, str]) -> str | None:
    """Which component a pod with these labels belongs to."""
    for c in COMPONENTS.values():
        if c.selects(labels):
            return c.name
    return None
