from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.config import Config, RegionSpec, load_config, with_region
from harness.errors import ConfigError


def test_defaults_are_gep20_case_2() -> None:
    c = load_config(environ={})
    assert c.region.zones == ("zone-a", "zone-b", "zone-c")
    assert c.region.member_zones() == ["zone-a", "zone-b", "zone-c"]
    assert c.etcd.pre_vote and c.etcd.heartbeat_ms == 100 and c.etcd.election_ms == 1000


def test_layouts() -> None:
    assert RegionSpec(members=5).member_zones() == ["zone-a", "zone-b", "zone-c", "zone-a", "zone-b"]
    single = RegionSpec(layout="single-zone")
    assert single.member_zones() == ["zone-a"] * 3 and single.nodes_per_zone == 3
    assert RegionSpec().nodes_per_zone == 2


def test_zones_of_unequal_size() -> None:
    spec = RegionSpec(zone_nodes=[3, 2, 1])  # a list, as TOML gives it
    assert spec.zone_nodes == (3, 2, 1) and spec.nodes_per_zone == 3
    assert [spec.nodes_in(z) for z in spec.zones] == [3, 2, 1] and RegionSpec().nodes_in("zone-c") == 2
    assert with_region(Config(region=spec), zones=("zone-a", "zone-b")).region.zone_nodes == ()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"layout": "two-zone"}, "unknown layout 'two-zone'; accepted: multi-zone, single-zone"),
        ({"members": 4}, "members must be 1, 3 or 5"),
        ({"layout": "single-zone", "nodes_per_zone": 2}, "need 3 nodes in one zone, but nodes_per_zone is 2"),
        ({"zones": ("zone-a", "zone-a")}, "distinct"),
        ({"zones": ("zone a",)}, "alphanumeric"),
        ({"power_loss_fs": True, "member_disk_mib": 192}, "cannot be combined with member_disk_mib"),
        ({"zone_nodes": (3, 2)}, "zone_nodes gives the nodes of each zone in zone order, 1-20 each, 3 numbers"),
        ({"zone_nodes": (3, 0, 1)}, "got [3, 0, 1]"),
        ({"layout": "single-zone", "zone_nodes": (2, 3, 3)}, "need 3 node(s) in zone-a; zone_nodes is [2, 3, 3]"),
    ],
)
def test_bad_region_shape_says_what_is_accepted(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        RegionSpec(**kwargs)


def test_file_env_and_overrides(tmp_path: Path) -> None:
    f = tmp_path / "h.toml"
    f.write_text('[region]\nmembers = 5\n[etcd]\nbinary = "/from/file"\n[timeouts]\nheal = 7.5\n')
    c = load_config(f, environ={"ETCD_BIN": "/from/env"})
    assert (c.region.members, c.etcd.binary, c.timeouts.heal) == (5, "/from/env", 7.5)
    c = load_config(f, {"etcd.binary": "/explicit"}, environ={"ETCD_BIN": "/from/env"})
    assert c.etcd.binary == "/explicit"


@pytest.mark.parametrize(
    "text, message",
    [
        ("[region]\nmembrs = 5\n", r"unknown key\(s\) \['membrs'\] in \[region\]; accepted"),
        ("[regoin]\n", r"unknown section\(s\) \['regoin'\]"),
        ("[region\n", "is not valid TOML"),
        ("region = 3\n", r"\[region\] .* must be a table"),
    ],
)
def test_malformed_config_file(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(f, environ={})


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml", environ={})


def test_unknown_override() -> None:
    with pytest.raises(ConfigError, match="unknown setting 'nodes'"):
        load_config(overrides={"nodes": 3}, environ={})


def test_etcd_log_level_is_one_of_etcds_and_reaches_its_flags(tmp_path: Path) -> None:
    from harness.topology import Member
    from harness.providers.local.host.etcd import EtcdBinary, member_args

    with pytest.raises(ConfigError, match=r"\[etcd\] log_level is one of debug, info, .*got 'verbose'"):
        load_config(overrides={"etcd.log_level": "verbose"}, environ={})
    settings = load_config(overrides={"etcd.log_level": "debug"}, environ={}).etcd
    member = Member("etcd-0", "zone-a-1", "zone-a", "http://10.0.1.11:2379", "http://10.0.1.11:2380")
    binary = EtcdBinary("/bin/etcd", "/bin/etcdctl", "3.5.35")
    assert "--log-level=debug" in member_args(binary, member, "", tmp_path, settings, "t")
    plain = member_args(binary, member, "", tmp_path, load_config(environ={}).etcd, "t")
    assert not any(a.startswith("--log-level") for a in plain)


def test_options_set_configuration_through_one_table_whatever_their_names() -> None:
    from harness.config import option_overrides

    assert option_overrides({"name": "hh", "context": "c", "zones": "a, b,", "data_on_disk": None, "etcd_bin": ""}) \
        == {"region.name": "hh", "provider.context": "c", "region.zones": ["a", "b"]}
    assert option_overrides({"region_name": "hh", "kube_context": "c"}) == {"region.name": "hh", "provider.context": "c"}
    assert option_overrides({"power_loss_fs": False}) == {"region.power_loss_fs": False}  # given, and off


def test_an_option_left_off_keeps_what_the_file_says(tmp_path: Path) -> None:
    from harness.config import option_overrides

    path = tmp_path / "c.toml"
    path.write_text("[region]\ndata_on_disk = true\nmembers = 5\n")
    config = load_config(path, option_overrides({"data_on_disk": None, "members": None, "region_name": "xy"}), environ={})
    assert config.region.data_on_disk and config.region.members == 5 and config.region.name == "xy"


def test_the_cli_reads_each_commands_own_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from harness import cli

    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path))
    monkeypatch.delenv("HARNESS_CONFIG", raising=False)
    up = cli._config(cli._parser().parse_args(["--name", "ab", "up", "--zones", "z1,z2", "--members", "5", "--backups"]))
    assert (up.region.name, up.region.zones, up.region.members, up.region.backups) == ("ab", ("z1", "z2"), 5, True)
    # render's --zones names the seed's zones, not the region's
    render = cli._config(cli._parser().parse_args(["render", "--tolerance", "zone", "--zones", "z1,z2",
                                                       "--storage-class", "fast"]))
    assert render.region.zones != ("z1", "z2") and render.provider.storage_class == "fast"
