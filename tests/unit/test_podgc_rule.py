"""podgc's decision rule and its one pass over a fake API (no cluster)."""

from __future__ import annotations

import io
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

pytest.importorskip("kubernetes")
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from harness.kube import podgc
from harness.kube.podgc import due

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
AFTER = 300.0


def pod(name: str = "etcd-main-0", node: str | None = "zone-a-1", deleted: datetime | None = T0,
        grace: int | None = 30, uid: str = "u-1", namespace: str = "shoot") -> k8s.V1Pod:
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, namespace=namespace, uid=uid, deletion_timestamp=deleted,
                                  deletion_grace_period_seconds=grace if deleted else None),
        spec=k8s.V1PodSpec(node_name=node, containers=[k8s.V1Container(name="c", image="i")]),
    )


def node(name: str, ready: str | None) -> k8s.V1Node:
    conditions = [k8s.V1NodeCondition(type="MemoryPressure", status="False")]
    if ready is not None:
        conditions.append(k8s.V1NodeCondition(type="Ready", status=ready))
    return k8s.V1Node(metadata=k8s.V1ObjectMeta(name=name), status=k8s.V1NodeStatus(conditions=conditions))


def test_due_exactly_after_the_period_past_the_deletion_timestamp() -> None:
    p = pod()
    assert not due(p, False, T0, AFTER)
    assert not due(p, False, T0 + timedelta(seconds=AFTER - 0.001), AFTER)
    assert due(p, False, T0 + timedelta(seconds=AFTER), AFTER)
    assert due(p, False, T0 + timedelta(hours=1), AFTER)


def test_grace_period_is_not_counted_twice() -> None:
    """deletionTimestamp already is request time + grace: a 30 s grace adds nothing more."""
    assert due(pod(grace=30), False, T0 + timedelta(seconds=AFTER), AFTER)
    assert due(pod(grace=3600), False, T0 + timedelta(seconds=AFTER), AFTER)


def test_never_due_on_a_ready_node() -> None:
    assert not due(pod(), True, T0 + timedelta(days=1), AFTER)


def test_never_due_without_deletion_timestamp() -> None:
    assert not due(pod(deleted=None), False, T0 + timedelta(days=1), AFTER)


def test_never_due_unbound() -> None:
    assert not due(pod(node=None), False, T0 + timedelta(days=1), AFTER)
    assert not due(pod(node=""), False, T0 + timedelta(days=1), AFTER)


def test_not_due_again_once_force_deleted() -> None:
    """Grace 0 means a force deletion was issued; only a finalizer can still hold the pod."""
    assert not due(pod(grace=0), False, T0 + timedelta(days=1), AFTER)


def test_after_zero_and_naive_times() -> None:
    assert due(pod(), False, T0, 0)
    naive_now = (T0 + timedelta(seconds=AFTER)).replace(tzinfo=None)
    assert due(pod(), False, naive_now, AFTER)
    assert due(pod(deleted=T0.replace(tzinfo=None)), False, T0 + timedelta(seconds=AFTER), AFTER)
    # Another zone offset, same instant.
    cest = timezone(timedelta(hours=2))
    assert not due(pod(), False, (T0 + timedelta(seconds=AFTER - 1)).astimezone(cest), AFTER)


def test_node_readiness() -> None:
    ready = podgc.node_readiness([node("a", "True"), node("b", "False"), node("c", "Unknown"), node("d", None)])
    assert ready == {"a": True, "b": False, "c": False, "d": False}


class FakeCore:
    """Just enough of CoreV1Api for one pass."""

    def __init__(self, nodes: list[k8s.V1Node], pods: list[k8s.V1Pod], fail: dict[str, int] | None = None) -> None:
        self.nodes, self.pods, self.fail = nodes, pods, fail or {}
        self.deletes: list[tuple[str, str, Any, Any]] = []

    def list_node(self, **_: Any) -> Any:
        if "list" in self.fail:
            raise ApiException(status=self.fail["list"], reason="Service Unavailable")
        return k8s.V1NodeList(items=self.nodes)

    def list_pod_for_all_namespaces(self, **_: Any) -> Any:
        return k8s.V1PodList(items=self.pods)

    def list_namespaced_pod(self, namespace: str, **_: Any) -> Any:
        return k8s.V1PodList(items=[p for p in self.pods if p.metadata.namespace == namespace])

    def delete_namespaced_pod(self, name: str, namespace: str, body: Any = None, grace_period_seconds: Any = None, **_: Any) -> None:
        if name in self.fail:
            raise ApiException(status=self.fail[name], reason="nope")
        self.deletes.append((namespace, name, grace_period_seconds, body))


def gc_with(core: FakeCore, after: float = AFTER, namespace: str | None = None) -> tuple[podgc.PodGC, io.StringIO]:
    out = io.StringIO()
    gc = podgc.PodGC(None, after, namespace, out)
    gc.core = core  # type: ignore[assignment]
    return gc, out


def test_one_pass_deletes_only_due_pods_with_uid_precondition() -> None:
    core = FakeCore(
        [node("zone-a-1", "Unknown"), node("zone-b-1", "True")],
        [
            pod("stuck", "zone-a-1", uid="u-stuck"),
            pod("young", "zone-a-1", deleted=T0 + timedelta(seconds=200)),
            pod("healthy-node", "zone-b-1"),
            pod("alive", "zone-a-1", deleted=None),
            pod("orphan", "zone-gone-1"),
        ],
    )
    gc, out = gc_with(core)
    assert gc.run_once(now=T0 + timedelta(seconds=AFTER + 10)) == ["shoot/stuck", "shoot/orphan"]
    (ns, name, grace, body), _ = core.deletes
    assert (ns, name, grace) == ("shoot", "stuck", 0)
    assert body.grace_period_seconds == 0 and body.preconditions.uid == "u-stuck"
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert "force-deleted pod shoot/stuck uid=u-stuck on node zone-a-1 (not Ready)" in lines[0]
    assert "310.0s past it" in lines[0]
    assert "(missing)" in lines[1]


def test_gone_or_replaced_pods_are_not_errors() -> None:
    core = FakeCore([node("zone-a-1", "False")], [pod("gone"), pod("replaced"), pod("stuck")],
                    fail={"gone": 404, "replaced": 409})
    gc, out = gc_with(core)
    assert gc.run_once(now=T0 + timedelta(seconds=AFTER)) == ["shoot/stuck"]
    assert out.getvalue().count("force-deleted") == 1


def test_namespace_filter() -> None:
    core = FakeCore([node("zone-a-1", "False")], [pod("a", namespace="shoot"), pod("b", namespace="other")])
    gc, _ = gc_with(core, namespace="shoot")
    assert gc.run_once(now=T0 + timedelta(seconds=AFTER)) == ["shoot/a"]


def test_api_errors_are_wrapped() -> None:
    from harness.kube.cluster import KubeApiError

    gc, _ = gc_with(FakeCore([], [], fail={"list": 503}))
    with pytest.raises(KubeApiError, match="listing nodes: HTTP 503"):
        gc.run_once()


def test_loop_logs_errors_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    passes: list[int] = []
    stop = threading.Event()

    class Flaky(podgc.PodGC):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.deleted = 0

        def run_once(self, now: datetime | None = None) -> list[str]:
            passes.append(1)
            if len(passes) == 1:
                from harness.kube.cluster import KubeApiError

                raise KubeApiError("listing nodes: ConnectionRefusedError")
            if len(passes) == 2:
                raise ValueError("surprise")
            stop.set()
            return []

    monkeypatch.setattr(podgc, "PodGC", Flaky)
    out, err = io.StringIO(), io.StringIO()
    assert podgc.run(None, 3, 0.01, stop, out=out, err=err) == 0
    assert len(passes) == 3
    assert "error (retrying in 0.01s): listing nodes: ConnectionRefusedError" in err.getvalue()
    assert "unexpected ValueError" in err.getvalue()
    assert "stopped after 0 force deletion(s)" in out.getvalue()


@pytest.mark.parametrize("argv", [["--after", "3"], ["--kubeconfig", "k", "--after", "-1"],
                                  ["--kubeconfig", "k", "--after", "x"], ["--kubeconfig", "k", "--after", "1", "--interval", "0"]])
def test_bad_arguments(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        podgc.parse_args(argv)
    assert exc.value.code == 2


def test_missing_kubeconfig(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert podgc.main(["--kubeconfig", str(tmp_path / "nope"), "--after", "3"]) == 2
    assert "does not exist" in capsys.readouterr().err
