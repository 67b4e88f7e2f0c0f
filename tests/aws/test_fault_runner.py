"""The AWS faults through the fault runner, on an environment configured by [aws] (as the cluster
provider is on a real account), against the moto server: ledger before every change, heal from the
ledger in another process, dry runs, refusals and rollbacks that leave nothing applied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_support import AccountEnv, Aws, World, acl_ids, allow, associations, deny, unique

from harness.aws.access import AwsAccess, from_settings
from harness.config import AwsSettings, load_config
from harness.errors import ConfigError, FaultError
from harness.faults import watchdog
from harness.faults.runner import FaultRunner, heal_everything
from harness.providers.base import Cloud
from harness.timeline import Timeline


def test_aws_settings_become_an_account_and_bad_ones_are_refused(tmp_path: Path) -> None:
    assert from_settings(AwsSettings()) is None
    access = from_settings(AwsSettings(region="eu-west-1", vpc_id="vpc-1", zones={"zone-a": "eu-west-1a"},
                                       profile="chaos", machine_principal="role/machine-controller",
                                       machine_profile="mcm", opted_in=("subnet-1",)))
    assert access is not None and access.endpoint_url is None  # real AWS endpoints
    assert (access.az("zone-a"), access.az("eu-west-1b")) == ("eu-west-1a", "eu-west-1b")
    assert access.credentials.profile == "chaos" and access.machine_credentials is not None
    assert access.machine_credentials.profile == "mcm" and access.opted_in == ("subnet-1",)
    assert AwsAccess.from_dict(json.loads(json.dumps(access.to_dict()))) == access
    with pytest.raises(ConfigError, match=r"\[aws\] needs both region and vpc_id"):
        AwsSettings(region="eu-west-1")
    toml = tmp_path / "h.toml"
    toml.write_text('[aws]\nregion = "eu-west-1"\nvpc_id = "vpc-9"\nzones = { zone-a = "eu-west-1a" }\nprofle = "x"\n')
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['profle'\] in \[aws\]"):
        load_config(toml)
    toml.write_text('[aws]\nregion = "eu-west-1"\nvpc_id = "vpc-9"\nzones = { zone-a = "eu-west-1a" }\n')
    assert dict(load_config(toml).aws.zones) == {"zone-a": "eu-west-1a"}


def test_zone_outage_through_the_runner_is_in_the_ledger_and_healed_from_it_elsewhere(
        aws: Aws, account: AccountEnv, world: World) -> None:
    ec2 = aws.client("ec2")
    before, acls_before = associations(ec2, world.vpc_id), acl_ids(ec2, world.vpc_id)
    active = FaultRunner(account, Timeline()).inject("aws-zone-outage", "zone-a", max_duration=60)
    try:
        moved = {s for s, acl in associations(ec2, world.vpc_id).items() if before[s] != acl}
        assert moved == {world.subnets["a1"], world.subnets["a2"]}  # a3 did not opt in
        # Its look reads the API back: the bracket opens at its first change (the plan in the
        # ledger first), not at a late read.
        assert active.event.start < active.effective_after == active.event.data["changing_from"]
        assert active.effective_after < active.event.data["injected_at"] <= active.effective_at
        (entry,) = account.faults()
        assert entry["data"]["run_id"] == active.data["run_id"] and entry["data"]["state"] == "applied"
        assert set(entry["data"]["acls"]) == moved
    finally:
        watchdog.disarm(active.data.get("watchdog"))
    later = AccountEnv(account.path, account.settings)  # `harness heal` in another process
    assert heal_everything(later) == [f"healed {active.id}"]
    assert associations(ec2, world.vpc_id) == before and acl_ids(ec2, world.vpc_id) == acls_before
    assert later.faults() == []


def test_dry_run_plans_and_changes_nothing(aws: Aws, account: AccountEnv, world: World) -> None:
    ec2 = aws.client("ec2")
    before = associations(ec2, world.vpc_id)
    runner = FaultRunner(account, Timeline())
    plan = runner.plan("aws-zone-outage", "zone-a", {"scope": "availability-zone"})
    assert "scope availability-zone" in plan and world.subnets["a1"] in plan and "nothing was changed" in plan
    assert f"skipped {world.subnets['a3']}: " in plan
    only_a1 = runner.plan("aws-zone-outage", "zone-a", {"subnet_tags": {"Name": "world-a1"}})
    assert f"  {world.subnets['a1']} world-a1" in only_a1
    assert f"skipped {world.subnets['a2']}: does not match the subnet filter Name=world-a1" in only_a1
    revoke = runner.plan("aws-revoke-credentials", "machine-controller")
    assert world.controller in revoke and "nothing was changed" in revoke
    assert associations(ec2, world.vpc_id) == before and account.faults() == []


def test_the_harness_will_not_revoke_its_own_credentials(account: AccountEnv) -> None:
    with pytest.raises(FaultError, match="refusing to revoke the credentials of .*ha-harness-operator.*the harness itself calls"):
        FaultRunner(account, Timeline()).inject("aws-revoke-credentials", "ha-harness-operator")
    assert account.faults() == []


def test_access_denied_halfway_is_rolled_back_and_says_what_failed(
        aws: Aws, world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = aws.user(unique("no-swap"), allow("ec2:*", "sts:*"), deny("ec2:ReplaceNetworkAclAssociation"),
                    opted_in=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", keys.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", keys.secret)
    env = AccountEnv(tmp_path / "denied.json", AwsSettings(region="eu-west-1", vpc_id=world.vpc_id,
                                                           endpoint_url=aws.endpoint, zones={"zone-a": "eu-west-1a"}))
    ec2 = aws.client("ec2")
    before, acls_before = associations(ec2, world.vpc_id), acl_ids(ec2, world.vpc_id)
    with pytest.raises(FaultError, match="failed and was rolled back.*AccessDenied|failed and was rolled back.*not authorized"):
        FaultRunner(env, Timeline()).inject("aws-zone-outage", "zone-a")
    assert associations(ec2, world.vpc_id) == before and acl_ids(ec2, world.vpc_id) == acls_before
    assert env.faults() == []


def test_an_account_is_a_capability(account: AccountEnv) -> None:
    assert isinstance(account, Cloud)
    runner = FaultRunner(account, Timeline())
    with pytest.raises(ConfigError, match="unknown zone outage scope 'region'; accepted: all, availability-zone"):
        runner.plan("aws-zone-outage", "zone-a", {"scope": "region"})
    with pytest.raises(ConfigError, match="fault aws-zone-outage takes no option"):
        runner.plan("aws-zone-outage", "zone-a", {"mode": "x"})


class ThrottlingProxy:
    """A real HTTP server in front of moto that answers AWS's Throttling error to every request
    whose form body contains `needle`, and passes everything else through."""

    def __init__(self, upstream: str, needle: str) -> None:
        import http.server
        import threading
        import urllib.request

        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if needle.encode() in body:
                    proxy.throttled += 1
                    answer = (b'<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>Throttling</Code>'
                              b"<Message>Rate exceeded</Message></Error></Errors><RequestID>r</RequestID></Response>")
                    self.send_response(400)
                else:
                    # The Host header stays the proxy's: the request was signed for it.
                    request = urllib.request.Request(upstream + self.path, data=body, method="POST",
                                                     headers=dict(self.headers.items()))
                    try:
                        with urllib.request.urlopen(request, timeout=30) as up:
                            status, answer = up.status, up.read()
                    except urllib.error.HTTPError as e:
                        status, answer = e.code, e.read()
                    self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.throttled = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


def test_throttling_halfway_is_rolled_back_and_says_so(aws: Aws, account: AccountEnv, world: World) -> None:
    ec2 = aws.client("ec2")
    before, acls_before = associations(ec2, world.vpc_id), acl_ids(ec2, world.vpc_id)
    acls = ec2.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [world.vpc_id]}])["NetworkAcls"]
    second = next(a["NetworkAclAssociationId"] for acl in acls for a in acl["Associations"]
                  if a["SubnetId"] == max(world.subnets["a1"], world.subnets["a2"]))  # swapped second (sorted)
    proxy = ThrottlingProxy(aws.endpoint, f"AssociationId={second}")
    try:
        env = AccountEnv(account.path, AwsSettings(**{**vars(account.settings), "endpoint_url": proxy.url}))
        with pytest.raises(FaultError, match="failed and was rolled back: .*AWS throttled replacing the network ACL association.*rolled back: .*(restored)"):
            FaultRunner(env, Timeline()).inject("aws-zone-outage", "zone-a")
    finally:
        proxy.close()
    assert proxy.throttled >= 1  # botocore retried before giving up
    assert associations(ec2, world.vpc_id) == before and acl_ids(ec2, world.vpc_id) == acls_before
    assert env.faults() == []
