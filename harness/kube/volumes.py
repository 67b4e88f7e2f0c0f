"""A pod's volumes lost for good, as on a real cluster: its PersistentVolumeClaims and their
PersistentVolumes deleted with the pod (seed 003's volume-loss on a seed). The StatefulSet makes
the pod and its claims again; a new volume is bound, empty. What backed the old volume (a cloud
disk, the local seed's directory) is the caller's to destroy, from the handles returned."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness.errors import ConfigError, EnvironmentStateError
from harness.kube import cluster
from harness.wait import wait_for


@dataclass(frozen=True)
class ClaimedVolume:
    claim: str
    volume: str
    volume_uid: str
    csi_driver: str | None  # e.g. ebs.csi.aws.com; None for a volume without CSI (hostPath, local)
    handle: str | None  # the CSI volume handle: on AWS the EBS volume id

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def claimed_volumes(api: Any, namespace: str, pod: str) -> list[ClaimedVolume]:
    """The bound volumes of the pod's claims; ConfigError for a pod that does not exist or has none."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(api)
    try:
        with cluster.api_errors(f"reading pod {namespace}/{pod}"):
            spec = core.read_namespaced_pod(pod, namespace).spec
    except cluster.KubeApiError as e:
        if e.status == 404:
            raise ConfigError(f"no pod {pod!r} in namespace {namespace!r}") from None
        raise
    out = []
    for v in spec.volumes or []:
        if v.persistent_volume_claim is None:
            continue
        name = v.persistent_volume_claim.claim_name
        with cluster.api_errors(f"reading claim {namespace}/{name}"):
            claim = core.read_namespaced_persistent_volume_claim(name, namespace)
        if not claim.spec.volume_name:
            raise EnvironmentStateError(f"claim {namespace}/{name} of pod {pod} is not bound to a volume")
        with cluster.api_errors(f"reading volume {claim.spec.volume_name}"):
            pv = core.read_persistent_volume(claim.spec.volume_name)
        csi = pv.spec.csi
        out.append(ClaimedVolume(name, pv.metadata.name, pv.metadata.uid, csi.driver if csi else None,
                                 csi.volume_handle if csi else None))
    if not out:
        raise ConfigError(f"pod {namespace}/{pod} has no persistent volume claim: it has no volume to lose")
    return out


def lose_pod_volumes(api: Any, namespace: str, pod: str, timeout: float) -> list[ClaimedVolume]:
    """Delete the pod's claims and volumes, then the pod at once (grace 0), and wait until the old
    pod, claims and volumes are gone. The claims first: their protection finalizer holds them
    until the pod is gone, so the StatefulSet cannot give the new pod the old claims."""
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    core = k8s.CoreV1Api(api)
    volumes = claimed_volumes(api, namespace, pod)
    with cluster.api_errors(f"reading pod {namespace}/{pod}"):
        uid = core.read_namespaced_pod(pod, namespace).metadata.uid
    for v in volumes:
        _delete(lambda: core.delete_namespaced_persistent_volume_claim(v.claim, namespace), f"claim {v.claim}")
        _delete(lambda: core.delete_persistent_volume(v.volume), f"volume {v.volume}")
    _delete(lambda: core.delete_namespaced_pod(pod, namespace, grace_period_seconds=0,
                                               body=k8s.V1DeleteOptions(grace_period_seconds=0,
                                                                        preconditions=k8s.V1Preconditions(uid=uid))),
            f"pod {pod}")

    def left() -> list[str]:
        out = []
        for what, read in [(f"pod {pod}", lambda: core.read_namespaced_pod(pod, namespace).metadata.uid == uid)] + [
                (f"claim {v.claim}", lambda v=v: core.read_namespaced_persistent_volume_claim(v.claim, namespace)
                 .spec.volume_name == v.volume) for v in volumes] + [
                (f"volume {v.volume}", lambda v=v: core.read_persistent_volume(v.volume).metadata.uid == v.volume_uid)
                for v in volumes]:
            try:
                if read():
                    out.append(what)
            except ApiException as e:
                if e.status != 404:
                    raise
        return out

    wait_for(left, lambda still: not still, f"the old pod {namespace}/{pod}, its claims and volumes gone", timeout,
             interval=0.2)
    return volumes


def _delete(call: Any, what: str) -> None:
    try:
        with cluster.api_errors(f"deleting {what}"):
            call()
    except cluster.KubeApiError as e:
        if e.status != 404:  # gone already: what was asked
            raise
