"""The linearizability check: Porcupine in our Go helper, over recorded and hand-made histories.

The helper is found in (or built once into) the harness cache by a module-scoped fixture.
Each failing history is checked for what the verdict names, not only for "not ok".
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness.errors import PrerequisiteError
from harness.validate import linearizability as lin
from harness.validate import oplog
from harness.validate.oplog import MalformedHistory, Op
from harness.validate.recorded import RecordedRun
from harness.validate.simulate import simulate

DATA = Path(__file__).parent.parent / "testdata"
PINNED = "v1.3.1"


@pytest.fixture(scope="module")
def helper() -> Path:
    """porcupine-check, from the cache or built there (a few seconds, once)."""
    cached = lin.default_cache_root() / lin.pinned_name() / lin.BINARY_NAME
    if not cached.exists() and shutil.which("go") is None:
        pytest.skip("the Porcupine helper is not built and `go` is not on PATH (Go >= 1.21 builds it)")
    return lin.helper_binary()


def recorded(name: str) -> list[Op]:
    return RecordedRun.load(DATA / f"{name}.json").ops


def put(client: int, key: str, value: str, invoke: float, ret: float | None, ok: bool | None = True, rev: int | None = None) -> Op:
    return Op(client, "put", key, value, invoke, ret, ok, rev)


def get(client: int, key: str, result: str | None, invoke: float, ret: float, rev: int | None = None) -> Op:
    return Op(client, "get", key, None, invoke, ret, True, rev, result)


# --- the helper --------------------------------------------------------------------------------


def test_helper_is_built_from_the_pinned_porcupine(helper: Path) -> None:
    assert lin.porcupine_version() == PINNED
    assert f"github.com/anishathalye/porcupine {PINNED} h1:" in (lin.MODULE_DIR / "go.sum").read_text()
    out = subprocess.run([str(helper), "-version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"github.com/anishathalye/porcupine {PINNED}"
    assert helper.parent.name == lin.pinned_name() and helper.parent.name.startswith(PINNED + "-")


def test_without_go_and_without_a_build_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(PrerequisiteError, match=r"`go` is not on PATH.*Go >= 1\.21"):
        lin.helper_binary(tmp_path, progress=lambda m: None)
    with pytest.raises(PrerequisiteError, match="building is off"):
        lin.helper_binary(tmp_path, build=False)


def test_a_failing_build_reports_the_compiler_output(helper: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "module"
    shutil.copytree(lin.MODULE_DIR, broken)
    (broken / "main.go").write_text((broken / "main.go").read_text() + "\nfunc broken() { undefinedThing() }\n")
    monkeypatch.setattr(lin, "MODULE_DIR", broken)
    said: list[str] = []
    with pytest.raises(PrerequisiteError, match=r"(?s)building porcupine-check .* failed .*undefinedThing"):
        lin.helper_binary(tmp_path / "cache", progress=said.append)
    assert said and said[0].startswith("building porcupine-check (Porcupine v1.3.1)")
    assert not (tmp_path / "cache" / lin.pinned_name(broken) / lin.BINARY_NAME).exists()


def test_python_m_builds_or_finds_the_helper(helper: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert lin.main([]) == 0
    assert capsys.readouterr().out.strip() == f"porcupine-check: {helper}"


# --- recorded histories ------------------------------------------------------------------------


def test_the_clean_history_is_linearizable(helper: Path, tmp_path: Path) -> None:
    vis = tmp_path / "clean.html"
    v = lin.check(recorded("history_clean"), vis, helper)
    assert v.ok and v.result == "Ok", v
    assert v.operations == 203 and v.keys == 8 and v.indeterminate == 2
    assert str(v).startswith("linearizable: 203 operations on 8 keys")
    assert v.visualization is None and not vis.exists()  # only a failing check draws


def test_a_stale_read_is_not_linearizable_and_is_named(helper: Path, tmp_path: Path) -> None:
    vis = tmp_path / "out" / "stale.html"
    v = lin.check(recorded("history_stale_read"), vis, helper)
    assert not v.ok and v.result == "Illegal"
    assert v.illegal_keys == ("/sim/0000",)
    text = str(v)
    assert text.startswith("NOT linearizable: keys '/sim/0000'")
    assert "recognised: 1 stale read" in text and "lost write" not in text
    assert "stale read: client 2 get('/sim/0000') -> 'c0-17'" in text
    assert v.visualization == vis and "Porcupine's visualisation: " + str(vis) in text
    html = vis.read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "put(\\\"/sim/0000\\\", \\\"stale-read-new\\\")" in html


def test_a_lost_write_is_not_linearizable_and_is_named(helper: Path, tmp_path: Path) -> None:
    vis = tmp_path / "lost.html"
    v = lin.check(recorded("history_lost_write"), vis, helper)
    assert not v.ok and v.illegal_keys == ("/sim/0000",)
    text = str(v)
    assert "recognised: 2 stale read, 1 lost write" in text
    assert "lost write: client 0 put('/sim/0000', 'lost-write') -> ok @66" in text
    assert vis.stat().st_size > 10_000


def test_always_visualize_draws_a_clean_history_too(helper: Path, tmp_path: Path) -> None:
    vis = tmp_path / "always.html"
    v = lin.check(recorded("history_clean"), vis, helper, always_visualize=True)
    assert v.ok and v.visualization == vis and vis.stat().st_size > 10_000


# --- indeterminate writes ----------------------------------------------------------------------


def timed_out(client: int, key: str, value: str, invoke: float) -> Op:
    """A put the client gave up on after 1 s: it may or may not have been applied."""
    return put(client, key, value, invoke, invoke + 1.0, ok=None)


@pytest.mark.parametrize(
    "later_reads",
    [
        pytest.param(["b", "b"], id="applied"),
        pytest.param(["a", "a"], id="not-applied"),
        pytest.param(["a", "b"], id="applied-after-the-client-gave-up"),
    ],
)
def test_a_timed_out_put_is_accepted_either_way(helper: Path, later_reads: list[str]) -> None:
    ops = [
        put(0, "k", "a", 0.0, 0.1, rev=2),
        timed_out(0, "k", "b", 1.0),
        get(1, "k", later_reads[0], 3.0, 3.1),
        get(2, "k", later_reads[1], 5.0, 5.1),
    ]
    v = lin.check(ops, None, helper)
    assert v.ok and v.indeterminate == 1, v


def test_a_timed_out_put_cannot_be_undone(helper: Path, tmp_path: Path) -> None:
    ops = [put(0, "k", "a", 0.0, 0.1, rev=2), timed_out(0, "k", "b", 1.0), get(1, "k", "b", 3.0, 3.1), get(2, "k", "a", 5.0, 5.1)]
    v = lin.check(ops, tmp_path / "undone.html", helper)
    assert not v.ok and v.illegal_keys == ("k",)
    assert "stale read: client 2 get('k') -> 'a'" not in str(v)  # "b" may have landed at any time: no hint claims it
    assert (tmp_path / "undone.html").exists()


def test_a_failed_put_has_no_effect(helper: Path) -> None:
    ops = [put(0, "k", "a", 0.0, 0.1), put(0, "k", "b", 1.0, 1.1, ok=False), get(1, "k", "a", 2.0, 2.1)]
    v = lin.check(ops, None, helper)
    assert v.ok and v.dropped == 1 and v.operations == 2
    seen_failed = [put(0, "k", "a", 0.0, 0.1), put(0, "k", "b", 1.0, 1.1, ok=False), get(1, "k", "b", 2.0, 2.1)]
    v = lin.check(seen_failed, None, helper)
    assert not v.ok and "read of a value never written" in str(v)


def test_failed_reads_are_left_out(helper: Path) -> None:
    ops = [put(0, "k", "a", 0.0, 0.1), Op(1, "get", "k", None, 0.5, None, None), get(1, "k", "a", 1.0, 1.1)]
    v = lin.check(ops, None, helper)
    assert v.ok and v.dropped == 1


# --- the model ---------------------------------------------------------------------------------


def test_concurrent_operations_may_be_ordered_either_way(helper: Path) -> None:
    ops = [put(0, "k", "a", 0.0, 1.0), get(1, "k", None, 0.2, 0.3), get(2, "k", "a", 0.4, 0.5), get(3, "k", "a", 1.2, 1.3)]
    assert lin.check(ops, None, helper).ok
    ops.append(get(4, "k", None, 1.4, 1.5))  # the put returned before this read began
    v = lin.check(ops, None, helper)
    assert not v.ok and "stale read: client 4 get('k') -> <absent>" in str(v)


def test_revisions_must_agree(helper: Path) -> None:
    ok = [put(0, "k", "a", 0.0, 0.1, rev=5), put(1, "k", "b", 0.2, 0.3, rev=9), get(2, "k", "b", 0.4, 0.5, rev=9)]
    assert lin.check(ok, None, helper).ok
    # A read served at revision 7 cannot have seen the write of revision 9.
    assert not lin.check(ok[:2] + [get(2, "k", "b", 0.4, 0.5, rev=7)], None, helper).ok
    # Two concurrent writes: the one with the higher revision took effect last.
    concurrent = [put(0, "k", "a", 0.0, 1.0, rev=9), put(1, "k", "b", 0.0, 1.0, rev=5), get(2, "k", "b", 2.0, 2.1)]
    assert not lin.check(concurrent, None, helper).ok


def test_deletes(helper: Path) -> None:
    ops = [
        put(0, "k", "a", 0.0, 0.1, rev=2),
        Op(1, "delete", "k", None, 0.2, 0.3, True, 3, "a"),  # recorded with prev_kv: it deleted "a"
        get(2, "k", None, 0.4, 0.5, rev=3),
        Op(1, "delete", "k", None, 0.6, 0.7, True, 3),  # deleted nothing
    ]
    assert lin.check(ops, None, helper).ok
    wrong = ops[:1] + [Op(1, "delete", "k", None, 0.2, 0.3, True, 3, "zzz")]
    assert not lin.check(wrong, None, helper).ok


def test_a_delete_that_found_nothing_says_the_key_was_absent(helper: Path) -> None:
    """The defect this replaces: the model threw "deleted nothing" away, although the client had
    asked for the previous value; a delete that finds an acknowledged key gone is an anomaly."""
    found_nothing = Op(1, "delete", "k", None, 0.2, 0.3, True, 3, None, deleted=0)
    assert lin.check([found_nothing], None, helper).ok  # the key was absent: fine
    after_put = [put(0, "k", "a", 0.0, 0.1, rev=2), found_nothing]
    v = lin.check(after_put, None, helper)
    assert not v.ok and v.illegal_keys == ("k",)
    removed_it = [put(0, "k", "a", 0.0, 0.1, rev=2), Op(1, "delete", "k", None, 0.2, 0.3, True, 3, None, deleted=1)]
    assert lin.check(removed_it, None, helper).ok  # it removed the key; which value was not recorded


def test_serializable_reads_are_left_out_unless_held_to_the_linearizable_standard(helper: Path) -> None:
    stale = Op(1, "get", "k", None, 0.4, 0.5, True, 2, "a", serializable=True)  # a cut-off member's view
    ops = [put(0, "k", "a", 0.0, 0.1, rev=2), put(0, "k", "b", 0.2, 0.3, rev=3), stale]
    assert lin.check(ops, None, helper).ok
    v = lin.check(ops, None, helper, include_serializable=True)
    assert not v.ok and "stale read" in str(v)


def test_txn_is_compare_and_put(helper: Path) -> None:
    def txn(client: int, expect: str | None, value: str, t: float, succeeded: bool | None, result: str | None = None) -> Op:
        ok = None if succeeded is None else True
        return Op(client, "txn", "k", value, t, t + 0.1, ok, None, result, expect, succeeded)

    ops = [
        txn(0, None, "a", 0.0, True),  # create: the key was absent
        txn(1, None, "x", 0.2, False, "a"),  # absent? no: reads "a"
        txn(2, "a", "b", 0.4, True),
        txn(3, "zzz", "y", 0.6, None),  # timed out; its comparison fails whenever it lands
        get(4, "k", "b", 2.0, 2.1),
    ]
    assert lin.check(ops, None, helper).ok
    claims_success = ops[:3] + [txn(3, "a", "c", 0.6, True)]  # "a" is gone by then
    assert not lin.check(claims_success, None, helper).ok


def test_written_values_must_be_unique(helper: Path) -> None:
    with pytest.raises(MalformedHistory, match=r"value 'a' was already written by op #0; written values must be unique"):
        lin.check([put(0, "k", "a", 0.0, 0.1), put(1, "j", "a", 0.2, 0.3)], None, helper)


def test_oplog_round_trips_through_json(tmp_path: Path) -> None:
    ops = recorded("history_clean")
    oplog.dump(ops, tmp_path / "h.json")
    assert oplog.load(tmp_path / "h.json") == ops
    doc = json.loads((tmp_path / "h.json").read_text())
    assert doc["format"] == "ha-harness/oplog/v1" and doc["fields"][:4] == ["client", "kind", "key", "value"]
    with pytest.raises(MalformedHistory, match="unknown fields"):
        oplog.from_json({**doc, "fields": ["clinet"] + doc["fields"][1:]})


def test_the_module_checks_a_recorded_file(helper: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert lin.main([str(DATA / "history_clean.json")]) == 0
    assert capsys.readouterr().out.startswith("linearizable:")
    assert lin.main([str(DATA / "history_stale_read.json"), str(tmp_path / "v.html")]) == 1
    assert "stale read" in capsys.readouterr().out and (tmp_path / "v.html").exists()


# --- scale -------------------------------------------------------------------------------------


def test_a_60_second_mixed_history_at_1500_ops_per_second_checks_in_seconds(helper: Path) -> None:
    run = simulate(duration_s=60.0, rate=1500.0, clients=20, keys=1000)
    started = time.monotonic()
    v = lin.check(run.ops, None, helper)
    wall = time.monotonic() - started
    print(f"\n{v}\ncheck() wall time {wall:.2f}s")
    assert v.ok, v
    assert v.operations > 85_000 and v.keys == 1000 and v.indeterminate > 0
    assert v.elapsed_s < 10 and wall < 30
