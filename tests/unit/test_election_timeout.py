"""A bound in election timeouts reads the timeout from the members' own command lines."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from harness.errors import CapabilityMissing, HarnessError
from harness.etcd_gateway import EtcdRequestError
from harness.probes.etcd import election_timeout, flag_value


def test_a_flag_is_read_in_each_form_go_accepts() -> None:
    line = ["etcd", "--name", "etcd-0", "--election-timeout=1200", "-heartbeat-interval", "120", "--pre-vote"]
    assert flag_value(line, "election-timeout") == "1200"
    assert flag_value(line, "heartbeat-interval") == "120"
    assert flag_value(line, "name") == "etcd-0"
    assert flag_value(line, "pre-vote") is None  # last, with nothing after it
    assert flag_value(line, "election") is None and flag_value(["etcd", "--config-file"], "config-file") is None


@dataclass
class Member:
    name: str


class Client:
    def __init__(self, line: list[str] | None) -> None:
        self.line = line

    def command_line(self) -> list[str]:
        if self.line is None:
            raise EtcdRequestError("timed out")
        return self.line

    def close(self) -> None: ...


class Etcd:
    def __init__(self, lines: dict[str, list[str] | None]) -> None:
        self.lines = lines
        self.members = tuple(Member(n) for n in lines)

    def client(self, member: str, via_zone: str | None = None, timeout: float | None = None) -> Client:
        return Client(self.lines[member])


def test_the_members_timeout_is_read_from_those_that_answer_and_must_be_one() -> None:
    got = election_timeout(Etcd({"etcd-0": None, "etcd-1": ["etcd", "--election-timeout=1500"],  # type: ignore[arg-type]
                                 "etcd-2": ["etcd", "--election-timeout", "1500"]}))
    assert got.seconds == 1.5 and "1500 ms" in got.said and "etcd-1, etcd-2" in got.said
    assert election_timeout(Etcd({"etcd-0": ["etcd", "--name", "x"]})).seconds == 1.0  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="different election timeouts"):
        election_timeout(Etcd({"a": ["etcd"], "b": ["etcd", "--election-timeout=2000"]}))  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="no member's command line could be read"):
        election_timeout(Etcd({"a": None}))  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="not a number of ms"):
        election_timeout(Etcd({"a": ["etcd", "--election-timeout=1s"]}))  # type: ignore[arg-type]
    with pytest.raises(CapabilityMissing, match="reads its configuration from a file"):
        election_timeout(Etcd({"a": ["etcd", "--config-file=/etc/etcd.yaml"]}))  # type: ignore[arg-type]
