"""Members that never reach one revision: the verdict says how each one that did not answer
failed during the whole wait, not only at its end."""

from __future__ import annotations

from harness.etcd_gateway import Status
from harness.probes.converge import settled_hashes


def _status(revision: int) -> Status:
    return Status(member_id=1, leader=1, raft_term=2, revision=revision, raft_index=9, applied_index=9,
                  version="3.5", db_size=1)


class _Members:
    """etcd-1 is refused twice, then answers with a TLS EOF ever after; the others answer."""

    def __init__(self) -> None:
        self.calls = 0

    def status(self) -> dict[str, Status | str]:
        self.calls += 1
        error = ("https://10.0.0.2:2379/v3/maintenance/status: ConnectionRefusedError: [Errno 111] Connection refused"
                 if self.calls <= 2 else
                 "https://10.0.0.2:2379/v3/maintenance/status: SSLEOFError: EOF occurred in violation of protocol")
        return {"etcd-0": _status(7), "etcd-1": error, "etcd-2": _status(7)}


def test_a_member_that_never_answers_is_told_with_every_way_it_failed() -> None:
    members = _Members()
    seen, hashes = settled_hashes(members, 0.3)  # type: ignore[arg-type]
    assert hashes is None
    assert seen["etcd-0"] == 7 and seen["etcd-2"] == 7
    told = str(seen["etcd-1"])
    assert told.startswith("https://10.0.0.2:2379/v3/maintenance/status: SSLEOFError")
    assert "during the 0.3 s wait: SSLEOFError x" in told and "ConnectionRefusedError x2" in told


def test_members_apart_by_revision_are_told_by_revision() -> None:
    class Apart:
        def status(self) -> dict[str, Status | str]:
            return {"etcd-0": _status(7), "etcd-1": _status(5)}

    seen, hashes = settled_hashes(Apart(), 0.2)  # type: ignore[arg-type]
    assert hashes is None and seen == {"etcd-0": 7, "etcd-1": 5}
