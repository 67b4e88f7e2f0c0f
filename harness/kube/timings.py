"""Every failure-detection timing of the embedded control plane, in one place.

Upstream defaults (40-50 s grace, 300 s tolerations, 0.1 nodes/s eviction) would make one
zone-failure scenario take minutes; these values keep it to seconds while staying in the
same proportions as a real cluster (lease renewal well inside the grace period).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import ConfigError


@dataclass(frozen=True)
class KubeTimings:
    # kube-controller-manager: how often node health is checked, and how long a node may stay
    # silent (no lease renewal, no status update) before it is marked NotReady/Unknown.
    node_monitor_period_s: int = 1
    node_monitor_grace_period_s: int = 8
    # Nodes tainted per second in a zone; upstream 0.1 would taint one node every 10 s.
    node_eviction_rate: float = 10.0
    # kube-apiserver DefaultTolerationSeconds admission: how long pods stay on a node tainted
    # not-ready/unreachable before the taint-eviction controller deletes them.
    default_not_ready_toleration_s: int = 5
    default_unreachable_toleration_s: int = 5
    # kwok: the node Lease duration; kwok renews it every quarter of that (as the kubelet does).
    node_lease_duration_s: int = 8
    # kwok's client (client-go) takes its connection to the API server for dead after this long
    # without a frame read and as long again without an answer to its ping. A kubelet closes its
    # connections after one failed heartbeat; kwok would keep client-go's 30 s + 15 s, its lease
    # renewals stuck behind a connection whose retransmissions back off while the zone is cut, so
    # a zone that returned stayed NotReady up to 16 s longer (measured with `harness run`).
    kwok_connection_check_s: int = 2
    # The local seed's pod garbage collection: pods still Terminating on an unreachable node this
    # long after their grace period ended are force-deleted. Gardener waits 5 minutes (GEP-20), as
    # long as upstream's 300 s unreachable toleration: here both are 5 s.
    force_delete_after_s: int = 5
    # Startup waits.
    etcd_ready_timeout_s: float = 30.0
    apiserver_ready_timeout_s: float = 90.0
    components_ready_timeout_s: float = 60.0
    nodes_ready_timeout_s: float = 60.0
    stop_grace_s: float = 10.0

    def __post_init__(self) -> None:
        if self.node_monitor_period_s <= 0 or self.node_monitor_grace_period_s <= 0:
            raise ConfigError("node monitor period and grace period must be positive seconds")
        if self.node_monitor_grace_period_s <= self.node_monitor_period_s:
            raise ConfigError(
                f"node_monitor_grace_period_s ({self.node_monitor_grace_period_s}) must exceed "
                f"node_monitor_period_s ({self.node_monitor_period_s})"
            )
        # A lease renewed less often than the grace period would flap nodes to NotReady.
        if self.node_lease_duration_s / 4 >= self.node_monitor_grace_period_s:
            raise ConfigError(
                f"node_lease_duration_s ({self.node_lease_duration_s}) is renewed every quarter; "
                f"that must be shorter than node_monitor_grace_period_s ({self.node_monitor_grace_period_s})"
            )
        if self.node_eviction_rate <= 0:
            raise ConfigError("node_eviction_rate must be positive")
        if self.default_not_ready_toleration_s < 0 or self.default_unreachable_toleration_s < 0:
            raise ConfigError("default toleration seconds must not be negative")
        if self.kwok_connection_check_s <= 0:
            raise ConfigError("kwok_connection_check_s must be positive")
        if self.force_delete_after_s < 0:
            raise ConfigError("force_delete_after_s must not be negative")

    def apiserver_flags(self) -> list[str]:
        return [
            f"--default-not-ready-toleration-seconds={self.default_not_ready_toleration_s}",
            f"--default-unreachable-toleration-seconds={self.default_unreachable_toleration_s}",
        ]

    def controller_manager_flags(self) -> list[str]:
        return [
            f"--node-monitor-period={self.node_monitor_period_s}s",
            f"--node-monitor-grace-period={self.node_monitor_grace_period_s}s",
            # A fully silent zone is tainted at this primary rate (a partially silent zone in a
            # cluster under 50 nodes is not tainted at all: upstream behaviour, kept).
            f"--node-eviction-rate={self.node_eviction_rate:g}",
        ]

    def kwok_flags(self) -> list[str]:
        return [f"--node-lease-duration-seconds={self.node_lease_duration_s}"]

    def kwok_env(self) -> dict[str, str]:
        """client-go reads its HTTP/2 connection check from the environment only."""
        return {"HTTP2_READ_IDLE_TIMEOUT_SECONDS": str(self.kwok_connection_check_s),
                "HTTP2_PING_TIMEOUT_SECONDS": str(self.kwok_connection_check_s)}

    def expected_eviction_s(self) -> float:
        """Upper estimate from silence to pod deletion: grace + toleration + two monitor periods."""
        return float(
            self.node_monitor_grace_period_s
            + max(self.default_unreachable_toleration_s, self.default_not_ready_toleration_s)
            + 2 * self.node_monitor_period_s
        )


DEFAULT_TIMINGS = KubeTimings()
