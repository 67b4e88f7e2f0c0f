"""Members that never reach one revision: the verdict says how each one that did not answer
failed during the whole wait, not only at its end."""

from __future__ import annotations

from harness.etcd_gateway import Status
from harness.probes.converge import settled_revisions


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
    seen, together = settled_revisions(members, 0.3)  # type: ignore[arg-type]
    assert not together
    assert seen["etcd-0"] == 7 and seen["etcd-2"] == 7
    told = str(seen["etcd-1"])
    assert told.startswith("https://10.0.0.2:2379/v3/maintenance/status: SSLEOFError")
    assert "during the 0.3 s wait: SSLEOFError x" in told and "ConnectionRefusedError x2" in told


def test_members_apart_by_revision_are_told_by_revision() -> None:
    class Apart:
        def status(self) -> dict[str, Status | str]:
            return {"etcd-0": _status(7), "etcd-1": _status(5)}

    seen, together = settled_revisions(Apart(), 0.2)  # type: ignore[arg-type]
    assert not together and seen == {"etcd-0": 7, "etcd-1": 5}


class _ApartAndSplit:
    """etcd-1 applied an entry twice: two revisions ahead for good, and other keys at revision 7."""

    class config:  # noqa: N801 - the shape EtcdCluster.config has
        class timeouts:  # noqa: N801
            recovery = 0.2
            command = 1.0

    members = [type("M", (), {"name": n})() for n in ("etcd-0", "etcd-1", "etcd-2")]

    def status(self) -> dict[str, Status | str]:
        return {"etcd-0": _status(7), "etcd-1": _status(9), "etcd-2": _status(7)}

    def client(self, name: str, timeout: float) -> object:
        class Client:
            def hashkv(self, revision: int) -> int:
                assert revision == 7
                return 222 if name == "etcd-1" else 111

            def close(self) -> None:
                pass

        return Client()


def test_members_that_stay_apart_are_compared_at_the_highest_revision_they_all_hold() -> None:
    import pytest

    from harness.judge import ToleranceViolation
    from harness.steps.checks import equal_hashes

    with pytest.raises(ToleranceViolation) as e:
        equal_hashes(_ApartAndSplit(), "members")  # type: ignore[arg-type]
    assert "members whose HashKV differs at revision 7, the highest they all hold" in str(e.value)
    assert "'etcd-1': 222" in str(e.value)
