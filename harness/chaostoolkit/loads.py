"""Loads started by one chaostoolkit activity and stopped by a later one.

`chaos run` runs every activity of an experiment in one process, so the running loads live in
this module. Each also stops itself after its maximum duration (a timer) and when the process
exits; its process group is written in the region's work directory so that `heal` from another
process (or after `kill -9`) still stops it.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.processes import cmdline
from harness.load.profiles import resolve
from harness.load.runner import LoadRun, new_workdir, region_loads
from harness.providers.base import Environment
from harness.timeline import Timeline

_running: dict[str, LoadRun] = {}
_lock = threading.Lock()


def _pids_file(env: Environment) -> Path:
    # In the region's work directory: `harness down` removes it with everything else.
    return env.config.state_dir / env.config.region.name / "chaostoolkit-loads.json"


def _record(env: Environment) -> None:
    path = _pids_file(env)
    pids = {name: run.proc.pid for name, run in _running.items() if run.proc is not None and run.running()}
    pids |= {f"{name} (watchers)": run.watch_proc.pid for name, run in _running.items() if run.watching()}
    if pids:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(pids))
    else:
        path.unlink(missing_ok=True)


def start(env: Environment, profile: str, max_duration: float) -> dict[str, Any]:
    if not hasattr(env, "leader"):
        raise ConfigError(f"load drives the local region's etcd; not the {env.provider} provider")
    with _lock:
        if profile in _running and _running[profile].running():
            raise ConfigError(f"load {profile} is already running; stop it first (load_stop)")
    resolved = resolve(profile, env)
    if resolved is None:
        raise ConfigError("profile idle runs no load; name another profile")
    spec, netns = resolved
    # In the region's work directory, which `harness down` removes, like the process groups below.
    workdir = new_workdir(region_loads(env.config.state_dir, env.config.region.name), f"chaos-{profile}")
    run = LoadRun(spec, netns, workdir, Timeline()).start()
    with _lock:
        _running[profile] = run
        _record(env)
    timer = threading.Timer(max_duration, lambda: stop(env, profile))
    timer.daemon = True
    timer.start()
    run.wait_started()
    return {"profile": profile, "rate": spec.rate, "netns": netns, "workdir": str(run.workdir), "max_duration": max_duration}


def stop(env: Environment, profile: str | None) -> list[dict[str, Any]]:
    """Stop the named load (None: all, including ones a dead `chaos run` left); locust's figures."""
    with _lock:
        names = [profile] if profile else list(_running)
        runs = [(n, _running.pop(n)) for n in names if n in _running]
        _record(env)
    out = [{"profile": name, **{k: v for k, v in run.stop().items() if k != "per_operation"}} for name, run in runs]
    if profile is None:
        _kill_orphans(env)
    return out


def _kill_orphans(env: Environment) -> None:
    path = _pids_file(env)
    try:
        pids = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    for pid in pids.values():
        if "locust" in cmdline(pid):  # still the load we started, not a recycled pid
            try:
                os.killpg(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
    path.unlink(missing_ok=True)


@atexit.register
def _stop_all() -> None:
    for run in list(_running.values()):
        try:
            run.stop()
        except Exception:  # exiting anyway; the statistics are lost, the process is not left behind
            pass
