"""Flapping: a fault applied and removed again and again (a link going down and up, a node killed
each time it comes back, as Gardener's chaosgarden does): down for `down_s`, then up for a
random time between `up_min_s` and `up_max_s` (from `seed`: a schedule that replays).

A detached process (its own session, like the watchdog) does the flapping, so it goes on after
`harness fault` returns. It reports each change in a small state file (what the inner fault
needs to be healed, how many flaps so far), stops as soon as the fault's ledger entry is gone
(healed by the harness, `harness heal` or the watchdog) and heals what it applied last on its
way out; the heal here heals it once more, whatever the process managed.

    python -m harness.faults.flapping --config-json JSON --inner KIND --target T --run-id ID --state-file F ...
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from harness.config import Config, from_dict, to_dict
from harness.errors import ConfigError, HarnessError
from harness.faults.base import Fault, Injection, Observable
from harness.processes import ProcessRecord, signal_group, spawn
from harness.providers.base import Environment
from harness.wait import first_within
from harness.files import replace_text

STOP_WAIT_S = 10.0  # a flapper told to stop heals and exits within this


def _inner(kind: str, options: dict[str, Any]) -> Fault:
    from harness.faults import get_fault

    return get_fault(kind, **options)


class Flapping:
    """A fault applied and healed again and again: `zone-link-flap` (a `ZONE<>ZONE` cut) and
    `node-flap` (a node killed each time it has been back a while, as Gardener's chaosgarden does),
    down `down_s`, up between `up_min_s` and `up_max_s` drawn from `seed`, so a schedule replays.
    A detached process flaps, so it goes on after `harness fault` returns; it stops as soon as its
    ledger entry is gone (heal, the watchdog) and heals what it applied last."""

    kind: ClassVar[str] = "flapping"

    def __init__(self, inner: str, down_s: float = 2.0, up_min_s: float = 2.0, up_max_s: float | None = None,
                 seed: int | None = None, **inner_options: Any) -> None:
        up_max_s = up_min_s if up_max_s is None else up_max_s
        if down_s <= 0 or up_min_s <= 0 or up_max_s < up_min_s:
            raise ConfigError(f"flapping needs down_s > 0 and 0 < up_min_s <= up_max_s; got down_s={down_s}, "
                              f"up_min_s={up_min_s}, up_max_s={up_max_s}")
        self.inner_kind, self.inner_options = inner, inner_options
        self.inner = _inner(inner, inner_options)
        self.down_s, self.up_min_s, self.up_max_s = down_s, up_min_s, up_max_s
        self.seed = random.randrange(2**31) if seed is None else seed

    def available(self, env: Environment) -> str | None:
        return self.inner.available(env)

    def validate(self, env: Environment, target: str) -> str:
        return self.inner.validate(env, target)

    def plan(self, env: Environment, target: str) -> str:
        return (f"Apply {self.inner_kind} on {target} for {self.down_s:g} s, remove it for {self.up_min_s:g}-"
                f"{self.up_max_s:g} s (seed {self.seed}), again and again, from a detached process, until healed."
                "\nDry run: nothing was changed.")

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        state = _state_dir(env.config) / f"{ctx.run_id}.json"
        ctx.record({"state_file": str(state), "seed": self.seed})
        argv = [sys.executable, "-m", "harness.faults.flapping", "--config-json", json.dumps(to_dict(env.config)),
                "--inner", self.inner_kind, "--options-json", json.dumps(self.inner_options), "--target", target,
                "--run-id", ctx.run_id, "--state-file", str(state), "--down-s", str(self.down_s),
                "--up-min-s", str(self.up_min_s), "--up-max-s", str(self.up_max_s), "--seed", str(self.seed)]
        _, record = spawn(f"flapping {ctx.run_id}", argv, state.with_suffix(".log"))
        data = {"state_file": str(state), "seed": self.seed, "flapper": record.to_dict()}
        ctx.record(data)
        return data

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """In effect once the inner fault was seen in effect, as the inner fault sees it."""
        now = _read(Path(data["state_file"]))
        if now.get("error"):
            raise HarnessError(f"the flapping process failed: {now['error']}")
        if not now.get("applied"):
            return None
        evidence = self.inner.effect(env, target, now["data"]) if isinstance(self.inner, Observable) else {"observed": False}
        return {"flaps": now["flaps"], "seed": self.seed, **evidence} if evidence else None

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        if data.get("flapper"):
            flapper = ProcessRecord.from_dict(data["flapper"])
            signal_group(flapper, signal.SIGTERM)
            if not first_within(lambda: None if flapper.alive() else True, "the flapping process to stop", STOP_WAIT_S):
                signal_group(flapper, signal.SIGKILL)
        state = Path(data["state_file"]) if data.get("state_file") else None
        last = _read(state) if state else {}
        self.inner.heal(env, target, last.get("data") or {"run_id": _inner_run_id(data["run_id"])})
        if state:
            state.unlink(missing_ok=True)


def _state_dir(config: Config) -> Path:
    # In the region's work directory: `harness down` removes it.
    return config.state_dir / config.region.name / "flapping"


def _inner_run_id(run_id: str) -> str:
    """One name for every flap's inner fault: whoever heals finds what it made (a table's name)."""
    return f"{run_id}-flap"


def _read(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def _write(path: Path, **state: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_text(path, json.dumps(state), 0o644)


def _still_wanted(config: Config, run_id: str) -> bool:
    """The fault's ledger entry is still there (not healed by anyone, environment not gone)."""
    from harness.providers import get_provider

    try:
        env = get_provider(config.provider.name, config).attach()
    except HarnessError:
        return False
    return any((e.get("data") or {}).get("run_id") == run_id for e in env.faults())


def flap(config: Config, kind: str, options: dict[str, Any], target: str, run_id: str, state: Path,
         down_s: float, up: tuple[float, float], seed: int, stop: threading.Event) -> int:
    """Apply and remove `kind` on `target` until `stop` or the ledger entry goes; returns the flaps."""
    from harness.providers import get_provider

    env = get_provider(config.provider.name, config).attach()
    fault, rng, flaps = _inner(kind, options), random.Random(seed), 0
    inner_id = _inner_run_id(run_id)
    data: dict[str, Any] | None = None
    try:
        while not stop.is_set() and _still_wanted(config, run_id):
            # Written before the change: a crash in between still leaves what heals it.
            _write(state, applied=False, data={"run_id": inner_id}, flaps=flaps)
            data = {**fault.inject(env, target, Injection(inner_id)), "run_id": inner_id}
            _write(state, applied=True, data=data, flaps=flaps)
            print(f"{time.strftime('%H:%M:%S')} {kind} on {target} applied (flap {flaps + 1})", flush=True)
            stop.wait(down_s)
            fault.heal(env, target, data)
            flaps += 1
            _write(state, applied=False, data=data, flaps=flaps)
            print(f"{time.strftime('%H:%M:%S')} {kind} on {target} removed", flush=True)
            stop.wait(rng.uniform(*up))
    except Exception as e:
        _write(state, applied=False, data=data or {"run_id": inner_id}, flaps=flaps, error=f"{type(e).__name__}: {e}")
        raise
    finally:
        if data is not None:
            fault.heal(env, target, data)
    return flaps


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.faults.flapping", description=__doc__)
    for name in ("--config-json", "--inner", "--options-json", "--target", "--run-id", "--state-file"):
        p.add_argument(name, required=True)
    for name in ("--down-s", "--up-min-s", "--up-max-s"):
        p.add_argument(name, type=float, required=True)
    p.add_argument("--seed", type=int, required=True)
    args = p.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    flaps = flap(from_dict(json.loads(args.config_json)), args.inner, json.loads(args.options_json), args.target,
                 args.run_id, Path(args.state_file), args.down_s, (args.up_min_s, args.up_max_s), args.seed, stop)
    print(f"{time.strftime('%H:%M:%S')} stopped after {flaps} flaps", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
