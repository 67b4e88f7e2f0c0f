"""What every EtcdCluster implementation shares once it can open a client to a member: each
member's status, the leader they agree on, and the wait until they are healthy and caught up."""

from __future__ import annotations

import http.client
import json
from typing import TYPE_CHECKING

from harness.errors import CapabilityMissing, HarnessError
from harness.etcd_gateway import EtcdClient, EtcdRequestError, Status
from harness.topology import EtcdTls, Member, Topology
from harness.wait import wait_for

if TYPE_CHECKING:
    from harness.config import Config


class EtcdView(Topology):
    """Statuses and leader of an etcd cluster; subclasses say how a client reaches a member."""

    config: Config
    tls: EtcdTls | None = None
    # Set when this cluster stands in for the features' region on an environment without an etcd
    # of its own: a scenario naming the region's members (etcd-1) cannot run on it, and says so.
    stands_in_for_region: bool = False

    def member(self, name: str) -> Member:
        if self.stands_in_for_region and name not in {m.name for m in self.members}:
            raise CapabilityMissing(
                f"this scenario names member {name!r} of the local region; here the region's etcd is a control plane's "
                f"({', '.join(m.name for m in self.members)}), whose members are named and placed by its StatefulSet")
        return super().member(name)

    def client(self, member: str, via_zone: str | None = None, timeout: float | None = None) -> EtcdClient:
        raise NotImplementedError

    def status(self, via_zone: str | None = None) -> dict[str, Status | str]:
        """Each member's own status, or the error that stopped us getting it."""
        out: dict[str, Status | str] = {}
        for m in self.members:
            client = self.client(m.name, via_zone)
            try:
                out[m.name] = client.status()
            except EtcdRequestError as e:
                out[m.name] = str(e)
            finally:
                client.close()
        return out

    def leader(self, statuses: dict[str, Status | str] | None = None) -> str | None:
        """The member every reachable member agrees is leader, if any."""
        statuses = statuses if statuses is not None else self.status()
        ids = {name: s.member_id for name, s in statuses.items() if isinstance(s, Status)}
        leaders = {s.leader for s in statuses.values() if isinstance(s, Status) and s.leader}
        if len(leaders) != 1:
            return None
        (leader_id,) = leaders
        return next((name for name, mid in ids.items() if mid == leader_id), None)

    def wait_members(
        self, timeout: float | None = None, members: list[str] | None = None, max_lag: int = 20
    ) -> dict[str, Status | str]:
        """Wait until the named members (default all) answer, agree on one leader, and have each
        applied the log to within `max_lag` entries of the most advanced one (caught up)."""
        wanted = members or [m.name for m in self.members]

        def healthy(st: dict[str, Status | str]) -> bool:
            ok = [st[n] for n in wanted]
            if not all(isinstance(s, Status) for s in ok):
                return False
            applied = [s.applied_index for s in ok]  # type: ignore[union-attr]
            leaders = {s.leader for s in ok}  # type: ignore[union-attr]
            return len(leaders) == 1 and 0 not in leaders and max(applied) - min(applied) <= max_lag

        return wait_for(
            self.status,
            healthy,
            f"etcd members {', '.join(wanted)} healthy, caught up, with one leader",
            timeout or self.config.timeouts.member_ready,
        )


def read_endpoint(conn: http.client.HTTPConnection, path: str) -> tuple[int, str]:
    """GET `path` on `conn` (closed after): status and body; raises HarnessError when no answer came."""
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as e:
        raise HarnessError(f"{type(e).__name__}: {e}") from None
    finally:
        conn.close()


def read_metrics(conn: http.client.HTTPConnection) -> str:
    """GET /metrics on `conn`; raises HarnessError when they cannot be read."""
    status, text = read_endpoint(conn, "/metrics")
    if status != 200:
        raise HarnessError(f"HTTP {status} from /metrics")
    return text


def read_health(conn: http.client.HTTPConnection) -> tuple[bool, str]:
    """etcd's GET /health on `conn`: healthy when it answers 200 with {"health":"true"}; an answer
    that did not come is unhealthy too, as a kubelet's probe counts a timeout."""
    try:
        status, text = read_endpoint(conn, "/health")
    except HarnessError as e:
        return False, str(e)
    try:
        said = json.loads(text)
    except ValueError:
        said = {}
    healthy = status == 200 and isinstance(said, dict) and said.get("health") == "true"
    return healthy, f"HTTP {status}: {text.strip()[:200]}"
