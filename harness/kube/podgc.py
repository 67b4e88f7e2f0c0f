"""Force-deletes pods stuck Terminating on unreachable nodes: Gardener's garbage collection
(GEP-20, "Pod recovery"), which deletes them after 5 minutes so that a StatefulSet's
replacement can be created (and then stays Pending on its zonal volume).

    python -m harness.kube.podgc --kubeconfig PATH --after SECONDS [--interval 1] [--namespace NS]

The rule (`due`): a pod is force-deleted (grace period 0) when
- it has a deletionTimestamp (it is Terminating),
- it is bound to a node (spec.nodeName) whose Ready condition is not True, or that no
  longer exists: no kubelet there can confirm the deletion,
- its deletionGracePeriodSeconds is not already 0 (a force deletion was issued; what holds
  the pod now is a finalizer, which another deletion would not remove), and
- now >= deletionTimestamp + AFTER.

The API server sets deletionTimestamp to the moment the grace period *ends* (time of the
delete request + deletionGracePeriodSeconds), so adding deletionGracePeriodSeconds again
would count the grace period twice. Gardener's rule is the same (`shouldObjectBeRemoved`:
deletionTimestamp before now - 5 min); Gardener applies it to every Terminating pod in the
shoot namespace, this controller only to pods whose node is not Ready, so a pod merely slow
to stop on a healthy node is left to its kubelet.

Each deletion carries the pod's uid as a precondition: a StatefulSet's replacement has the
same name and must never be deleted in its predecessor's stead.

With --lb-address the same loop also does what a cloud's service controller does for the local
seed's one load balancer (HAProxy in front of every node's pod addresses): it publishes that
address in the status of every Service of type LoadBalancer of the seed's class (SEED_LB_CLASS,
the shoot API's), so that a client handed only the seed's kubeconfig finds the shoot API where it
would on a cloud. Services without a class are the cloud controller manager's, when one runs.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TextIO

from harness.errors import HarnessError

# Per API call: a dead API server must not hold the loop (or a SIGTERM) for long.
REQUEST_TIMEOUT_S = 5.0

# The seed's own load balancer implementation (its HAProxy), as a Service's spec.loadBalancerClass:
# the cloud controller manager leaves such Services alone, the publisher takes only those.
SEED_LB_CLASS = "ha-harness.io/seed-haproxy"


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def due(pod: Any, node_ready: bool, now: datetime, after: float) -> bool:
    """Whether pod (a V1Pod) is to be force-deleted now; node_ready is its node's Ready
    condition being True (False for a node that does not exist). Naive datetimes are UTC."""
    meta = pod.metadata
    if meta is None or meta.deletion_timestamp is None:
        return False
    if pod.spec is None or not pod.spec.node_name or node_ready:
        return False
    if meta.deletion_grace_period_seconds == 0:
        return False
    return _aware(now) >= _aware(meta.deletion_timestamp) + timedelta(seconds=after)


def node_readiness(nodes: Sequence[Any]) -> dict[str, bool]:
    """Node name -> whether its Ready condition is True."""
    out = {}
    for node in nodes:
        conditions = (node.status.conditions if node.status else None) or []
        out[node.metadata.name] = any(c.type == "Ready" and c.status == "True" for c in conditions)
    return out


def _log(out: TextIO, line: str) -> None:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
    print(f"{stamp} podgc: {line}", file=out, flush=True)


class PodGC:
    """One pass = list nodes and pods, force-delete the due ones. Errors are the caller's."""

    def __init__(self, api: Any, after: float, namespace: str | None = None, out: TextIO = sys.stdout,
                 lb_address: str | None = None) -> None:
        from kubernetes import client as k8s

        self.core = k8s.CoreV1Api(api)
        self.after = after
        self.namespace = namespace
        self.out = out
        self.lb_address = lb_address
        self.deleted = 0

    def publish_load_balancer(self) -> list[str]:
        """Set lb_address as the ingress of every LoadBalancer Service of the seed's class without
        one; returns them."""
        from harness.kube.cluster import api_errors

        if self.lb_address is None:
            return []
        with api_errors("listing services"):
            services = self.core.list_service_for_all_namespaces(_request_timeout=REQUEST_TIMEOUT_S).items
        published = []
        for svc in services:
            if svc.spec.type != "LoadBalancer" or svc.spec.load_balancer_class != SEED_LB_CLASS or (
                    svc.status.load_balancer and svc.status.load_balancer.ingress):
                continue
            key = f"{svc.metadata.namespace}/{svc.metadata.name}"
            with api_errors(f"publishing the load balancer of {key}"):
                self.core.patch_namespaced_service_status(svc.metadata.name, svc.metadata.namespace, {
                    "status": {"loadBalancer": {"ingress": [{"ip": self.lb_address}]}}}, _request_timeout=REQUEST_TIMEOUT_S)
            _log(self.out, f"service {key}: load balancer {self.lb_address}")
            published.append(key)
        return published

    def _pods(self) -> list[Any]:
        if self.namespace:
            return self.core.list_namespaced_pod(self.namespace, _request_timeout=REQUEST_TIMEOUT_S).items
        return self.core.list_pod_for_all_namespaces(_request_timeout=REQUEST_TIMEOUT_S).items

    def run_once(self, now: datetime | None = None) -> list[str]:
        """Force-delete every due pod; returns their namespace/name."""
        from kubernetes import client as k8s

        from harness.kube.cluster import KubeApiError, api_errors

        with api_errors("listing nodes"):
            ready: Mapping[str, bool] = node_readiness(self.core.list_node(_request_timeout=REQUEST_TIMEOUT_S).items)
        with api_errors("listing pods"):
            pods = self._pods()
        now = now or datetime.now(timezone.utc)
        deleted = []
        for pod in pods:
            node = pod.spec.node_name if pod.spec else None
            if not due(pod, ready.get(node or "", False), now, self.after):
                continue
            meta = pod.metadata
            key = f"{meta.namespace}/{meta.name}"
            body = k8s.V1DeleteOptions(grace_period_seconds=0, preconditions=k8s.V1Preconditions(uid=meta.uid))
            try:
                with api_errors(f"force-deleting pod {key}"):
                    self.core.delete_namespaced_pod(
                        meta.name, meta.namespace, body=body, grace_period_seconds=0, _request_timeout=REQUEST_TIMEOUT_S
                    )
            except KubeApiError as e:
                if e.status in (404, 409):  # gone already, or a successor with the same name (uid differs)
                    continue
                raise
            overdue = (now - _aware(meta.deletion_timestamp)).total_seconds()
            state = "missing" if node not in ready else "not Ready"
            _log(self.out, f"force-deleted pod {key} uid={meta.uid} on node {node} ({state}); "
                           f"deletionTimestamp {meta.deletion_timestamp.isoformat()}, {overdue:.1f}s past it (after {self.after:g}s)")
            deleted.append(key)
        self.deleted += len(deleted)
        return deleted


def run(api: Any, after: float, interval: float, stop: threading.Event, namespace: str | None = None,
        out: TextIO = sys.stdout, err: TextIO = sys.stderr, lb_address: str | None = None) -> int:
    """Pass after pass until stop is set; API errors are logged and retried next interval."""
    gc = PodGC(api, after, namespace, out, lb_address)
    _log(out, f"started: force-deleting pods Terminating on not-Ready nodes {after:g}s after their deletionTimestamp "
              f"(every {interval:g}s, namespace {namespace or 'all'})")
    while not stop.is_set():
        try:
            gc.run_once()
            gc.publish_load_balancer()
        except HarnessError as e:
            _log(err, f"error (retrying in {interval:g}s): {e}")
        except Exception as e:  # never let one bad pass end the controller
            _log(err, f"unexpected {type(e).__name__} (retrying in {interval:g}s): {e}")
        stop.wait(interval)
    _log(out, f"stopped after {gc.deleted} force deletion(s)")
    return 0


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"{text!r} must be zero or more seconds")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m harness.kube.podgc",
        description="Force-delete pods stuck Terminating on not-Ready nodes (Gardener's garbage collection, GEP-20).",
    )
    parser.add_argument("--kubeconfig", required=True, type=Path, help="kubeconfig of the cluster")
    parser.add_argument("--context", default=None, help="context in the kubeconfig (default: its current one)")
    parser.add_argument("--after", required=True, type=_positive,
                        help="seconds past a pod's deletionTimestamp before it is force-deleted (Gardener: 300)")
    parser.add_argument("--interval", type=_positive, default=1.0, help="seconds between passes (default 1)")
    parser.add_argument("--namespace", default=None, help="only this namespace (default: all)")
    parser.add_argument("--lb-address", default=None,
                        help=f"publish this address as the load balancer of every Service of type LoadBalancer "
                             f"and class {SEED_LB_CLASS}")
    args = parser.parse_args(argv)
    if args.interval <= 0:
        parser.error("--interval must be more than 0 seconds")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    if not args.kubeconfig.is_file():
        print(f"podgc: kubeconfig {args.kubeconfig} does not exist", file=sys.stderr)
        return 2
    try:
        api = k8s_config.new_client_from_config(config_file=str(args.kubeconfig), context=args.context)
    except ConfigException as e:
        print(f"podgc: cannot use kubeconfig {args.kubeconfig}: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return run(api, args.after, args.interval, stop, args.namespace, lb_address=args.lb_address)


if __name__ == "__main__":
    sys.exit(main())
