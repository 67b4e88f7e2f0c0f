"""Operations on any Kubernetes cluster through the official Python client: nodes, cordon,
eviction, pod deletion. Used for the local seed, an existing cluster and kind alike;
client errors are wrapped into HarnessErrors here, at the boundary."""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from harness.errors import ConfigError, HarnessError
from harness.kube.controlplane import HOST_LABEL, LIFECYCLE_TAINTS, ZONE_LABEL
from harness.topology import KubeAccess

# Nodes the harness cordoned carry this annotation, so `harness heal` finds them after a crash.
CORDONED_BY = "ha-harness/cordoned"


class KubeApiError(HarnessError):
    """A Kubernetes API call failed; `status` is the HTTP status, or None if there was no answer."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def unless_gone(call: Any, *args: Any, **kwargs: Any) -> None:
    """call(*args, **kwargs), a 404 (already gone) taken as done: deleting or letting go of what
    may have gone meanwhile."""
    from kubernetes import client as k8s

    try:
        call(*args, **kwargs)
    except k8s.ApiException as e:
        if e.status != 404:
            raise


@contextmanager
def api_errors(what: str) -> Iterator[None]:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        yield
    except ApiException as e:
        reason = e.reason
        try:
            import json

            reason = json.loads(e.body or "{}").get("message") or reason
        except ValueError:
            pass
        raise KubeApiError(f"{what}: HTTP {e.status}: {reason}", e.status) from None
    except (HTTPError, OSError) as e:
        raise KubeApiError(f"{what}: {type(e).__name__}: {e}") from None


def connect(access: KubeAccess) -> Any:
    """A kubernetes.client.ApiClient for the kubeconfig and context given."""
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    if not access.kubeconfig.exists():
        raise ConfigError(f"kubeconfig {access.kubeconfig} does not exist; pass --kubeconfig PATH or set KUBECONFIG")
    try:
        return k8s_config.new_client_from_config(config_file=str(access.kubeconfig), context=access.context)
    except ConfigException as e:
        raise ConfigError(f"cannot use kubeconfig {access.kubeconfig} (context {access.context or 'current'}): {e}") from None


@dataclass(frozen=True)
class NodeView:
    name: str
    zone: str | None
    host: str | None
    ready: bool  # Ready condition True and no lifecycle taint left
    unschedulable: bool
    taints: tuple[str, ...]


def node_views(api: Any) -> list[NodeView]:
    from kubernetes import client as k8s

    with api_errors("listing nodes"):
        items = k8s.CoreV1Api(api).list_node().items
    out = []
    for n in items:
        labels = n.metadata.labels or {}
        conds = {c.type: c.status for c in (n.status.conditions or [])}
        taints = tuple(f"{t.key}:{t.effect}" for t in (n.spec.taints or []))
        tainted = any(t.split(":")[0] in LIFECYCLE_TAINTS for t in taints)
        out.append(NodeView(n.metadata.name, labels.get(ZONE_LABEL), labels.get(HOST_LABEL),
                            conds.get("Ready") == "True" and not tainted, bool(n.spec.unschedulable), taints))
    return out


def node_record(api: Any, name: str) -> dict[str, Any]:
    """What it takes to make a node again once it was deleted (by a fault, or by a machine
    controller that gave up on its machine): labels, annotations, provider ID, taints."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(api)
    with api_errors(f"reading node {name}"):
        node = core.api_client.sanitize_for_serialization(core.read_node(name))
    return {"metadata": {"name": name, **{k: node["metadata"].get(k) or {} for k in ("labels", "annotations")}},
            "spec": {k: v for k, v in (node.get("spec") or {}).items() if k in ("providerID", "taints", "unschedulable")}}


def make_node(api: Any, record: dict[str, Any]) -> bool:
    """Make a node again from its `node_record`; False if it is there already."""
    from kubernetes import client as k8s

    with api_errors(f"making node {record['metadata']['name']} again"):
        try:
            k8s.CoreV1Api(api).create_node({"apiVersion": "v1", "kind": "Node", **record})
        except k8s.ApiException as e:
            if e.status != 409:
                raise
            return False
    return True


def set_cordon(api: Any, node: str, cordoned: bool) -> None:
    from kubernetes import client as k8s

    body = {"spec": {"unschedulable": cordoned or None},
            "metadata": {"annotations": {CORDONED_BY: "true" if cordoned else None}}}
    with api_errors(f"{'cordoning' if cordoned else 'uncordoning'} node {node}"):
        k8s.CoreV1Api(api).patch_node(node, body)


def pods_on(api: Any, node: str) -> list[Any]:
    from kubernetes import client as k8s

    with api_errors(f"listing pods on {node}"):
        return k8s.CoreV1Api(api).list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items


FIELD_MANAGER = "ha-harness"


def apply(api: Any, objects: list[dict[str, Any]]) -> None:
    """Server-side apply, as `kubectl apply --server-side` does: idempotent, re-runnable."""
    with tempfile.TemporaryDirectory(prefix="ha-harness-discovery-") as scratch:
        # The client's discovery cache would otherwise stay in the system's temporary directory,
        # one file per API server address, and be read by the next cluster at that address.
        _apply(api, objects, f"{scratch}/discovery.json")


def _apply(api: Any, objects: list[dict[str, Any]], cache_file: str) -> None:
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    dyn = DynamicClient(api, cache_file=cache_file)
    for obj in objects:
        meta = obj["metadata"]
        what = f"applying {obj['kind']} {meta.get('namespace', '')}/{meta['name']}".replace(" /", " ")
        try:
            resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        except ResourceNotFoundError:
            raise ConfigError(f"{what}: the cluster does not serve {obj['apiVersion']} {obj['kind']}") from None
        with api_errors(what):
            resource.server_side_apply(body=obj, name=meta["name"], namespace=meta.get("namespace"),
                                       field_manager=FIELD_MANAGER, force_conflicts=True)


def evict(api: Any, namespace: str, name: str, uid: str | None = None) -> bool:
    """Ask for an eviction; False when a PodDisruptionBudget refuses it (HTTP 429). With `uid`,
    only that pod (not a replacement of the same name): one already gone counts as evicted."""
    from kubernetes import client as k8s

    options = k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid=uid)) if uid else None
    body = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name=name, namespace=namespace), delete_options=options)
    try:
        with api_errors(f"evicting {namespace}/{name}"):
            k8s.CoreV1Api(api).create_namespaced_pod_eviction(name, namespace, body)
    except KubeApiError as e:
        if e.status == 429:
            return False
        if e.status == 404 or (e.status == 409 and uid):  # gone, or replaced by a pod of the same name
            return True
        raise
    return True


def pod_uids(api: Any, namespace: str, selector: dict[str, str]) -> dict[str, str]:
    """Name -> uid of the pods matching the labels (those being deleted left out)."""
    from kubernetes import client as k8s

    labels = ",".join(f"{k}={v}" for k, v in selector.items())
    with api_errors(f"listing pods {labels} in {namespace}"):
        pods = k8s.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=labels).items
    return {p.metadata.name: p.metadata.uid for p in pods if p.metadata.deletion_timestamp is None}


def pod_present(api: Any, namespace: str, name: str, uid: str) -> bool:
    """Whether that very pod (not a replacement of the same name) is still in the API: a kubelet
    removes a deleted pod only once its containers have stopped."""
    from kubernetes import client as k8s

    try:
        with api_errors(f"reading pod {namespace}/{name}"):
            return bool(k8s.CoreV1Api(api).read_namespaced_pod(name, namespace).metadata.uid == uid)
    except KubeApiError as e:
        if e.status == 404:
            return False
        raise


def restart_deployment(api: Any, namespace: str, name: str) -> None:
    """What `kubectl rollout restart` does: a new template annotation, so every pod is replaced."""
    import datetime

    from kubernetes import client as k8s

    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    body = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": now}}}}}
    with api_errors(f"restarting deployment {namespace}/{name}"):
        k8s.AppsV1Api(api).patch_namespaced_deployment(name, namespace, body)


def rollout_left(api: Any, namespace: str, name: str) -> str | None:
    """None once the deployment's rollout is complete (as `kubectl rollout status` says it), else what is left."""
    from kubernetes import client as k8s

    with api_errors(f"reading deployment {namespace}/{name}"):
        d = k8s.AppsV1Api(api).read_namespaced_deployment(name, namespace)
    want, st = d.spec.replicas or 0, d.status
    if (st.observed_generation or 0) < d.metadata.generation:
        return "the new template not observed yet"
    counts = (st.updated_replicas or 0, st.replicas or 0, st.available_replicas or 0)
    if counts != (want, want, want):
        return f"{counts[0]} updated, {counts[1]} in all, {counts[2]} available of {want}"
    return None


def delete_pod(api: Any, namespace: str, name: str, grace_seconds: int | None = None) -> None:
    from kubernetes import client as k8s

    with api_errors(f"deleting pod {namespace}/{name}"):
        k8s.CoreV1Api(api).delete_namespaced_pod(name, namespace, grace_period_seconds=grace_seconds)


def sweep_cordons(access: KubeAccess) -> list[str]:
    """Uncordon every node the harness cordoned (after a crash)."""
    from kubernetes import client as k8s

    api = connect(access)
    with api_errors("listing nodes"):
        items = k8s.CoreV1Api(api).list_node().items
    done = []
    for n in items:
        if (n.metadata.annotations or {}).get(CORDONED_BY):
            set_cordon(api, n.metadata.name, False)
            done.append(f"uncordoned {n.metadata.name}")
    return done


def load_balancer_address(api: Any, namespace: str, service: str) -> str | None:
    """The address a cloud (or the local seed) published for a LoadBalancer Service, if any yet."""
    from kubernetes import client as k8s

    with api_errors(f"reading the Service {namespace}/{service}"):
        status = k8s.CoreV1Api(api).read_namespaced_service(service, namespace).status
    ingress = (status.load_balancer.ingress or []) if status.load_balancer else []
    return str(ingress[0].ip or ingress[0].hostname) if ingress else None


def terminating_namespaces(api: Any) -> list[str]:
    """Namespaces being deleted: what runs in them may still be stopping."""
    from kubernetes import client as k8s

    with api_errors("listing namespaces"):
        items = k8s.CoreV1Api(api).list_namespace().items
    return sorted(n.metadata.name for n in items if n.status.phase == "Terminating")
