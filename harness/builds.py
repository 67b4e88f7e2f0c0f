"""Every Go program the harness runs, found in the cache or built there, in the order a test run
first needs them; each one's time printed. Alone, the builds run one after another (`make
prefetch`, `make run`'s setup); beside a command (`make test`) they run in the background while the
command runs, so that tests needing no Go program run meanwhile, and a test that needs one waits
for its build's lock, saying so (harness/gobuild.py).

    python -m harness.builds                        # what make test and make run use
    python -m harness.builds --all                  # also every etcd release harness.bugs runs
    python -m harness.builds --beside -- CMD ...    # the builds in the background while CMD runs

Beside a command the builds run under SCHED_IDLE: the CPU goes to them only when nothing else
wants it, so a timing verdict of a test running meanwhile is not measured against a compiler. The
command's exit status is the result; builds it did not wait for are stopped when it ends.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from harness.gobuild import format_duration
from harness.kube.binaries import ETCD_VERSION

# (what, module run with `python -m`, its arguments), in the order a test run first needs them:
# etcd for every region, Porcupine for the first linearizability check, then the local seed.
BUILDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (f"etcd {ETCD_VERSION}", "harness.etcd_builds", (ETCD_VERSION,)),
    ("Porcupine checker", "harness.validate.linearizability", ()),
    ("Kubernetes, kwok and etcd for the local seed", "harness.kube", ()),
    ("kube-proxy", "harness.kube.kube_proxy", ()),
    ("cloud-provider-aws releases", "harness.kube.cloud_controller", ()),
    ("machine-controller-manager", "harness.kube.machine_controller", ()),
    ("Gardener (gardener-resource-manager)", "harness.kube.resource_manager", ()),
    ("etcd-druid", "harness.kube.druid", ()),
    ("etcd-backup-restore", "harness.kube.backup_restore", ()),
    ("powerloss-fs", "harness.providers.local.host.powerloss_fs", ()),
)
EVERY_ETCD = ("every etcd release harness.bugs runs, with etcdutl", "harness.etcd_builds", ("--all",))
LOG = Path("reports") / "builds.log"


def _say(line: str) -> None:
    print(f"[builds] {line}", file=sys.stderr, flush=True)


def run_builds(every: bool) -> int:
    """Each build in turn, timed; non-zero when one failed (the rest still run: a test that needs
    the failed one builds it again itself and says why it cannot)."""
    failed = []
    for what, module, args in (*BUILDS, *((EVERY_ETCD,) if every else ())):
        began = time.monotonic()
        build = subprocess.Popen([sys.executable, "-m", module, *args], stdout=subprocess.DEVNULL)
        try:
            status = build.wait()
        except KeyboardInterrupt:  # the build had it too: let it stop its `go build` before it exits
            try:
                build.wait(15)
            except subprocess.TimeoutExpired:
                build.kill()
            raise
        took = format_duration(time.monotonic() - began)
        _say(f"{what}: {'ready' if status == 0 else f'FAILED (exit {status})'} after {took}")
        if status != 0:
            failed.append(what)
    _say(f"done; {'failed: ' + ', '.join(failed) if failed else 'every build ready'}")
    return 1 if failed else 0


def _idle() -> None:
    """In the child: the builds' own session (an interrupt of the command does not reach them;
    the parent stops them) at idle priority."""
    os.setsid()
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)


def beside(command: Sequence[str], every: bool, log: Path) -> int:
    """`command` in the foreground, the builds in the background into `log`; the command's status."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        builds = subprocess.Popen([sys.executable, "-m", "harness.builds", *(("--all",) if every else ())],
                                  stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_idle)
    _say(f"building in the background at idle priority while {command[0]} runs; their log: {log}")
    try:
        child = subprocess.Popen(list(command))  # inside the try: a command that cannot start stops the builds too
        while True:
            try:  # an interrupt reaches the command too: it heals and tears down before it exits
                status = child.wait()
                break
            except KeyboardInterrupt:
                continue
    finally:
        if builds.poll() is None:
            _say(f"{command[0]} ended before the builds; stopping them (a later run finishes them)")
            try:  # an interrupt, as Ctrl-C: each build kills its own `go build` (gobuild.go_build)
                os.killpg(builds.pid, signal.SIGINT)
                builds.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(builds.pid, signal.SIGKILL)
                builds.wait()
            except ProcessLookupError:
                pass
    summary = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("[builds]")]
    for line in summary:
        print(line, file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[argv.index("--beside") + 1:] if "--beside" in argv else None
    own = argv[:argv.index("--beside")] if command is not None else argv
    ap = argparse.ArgumentParser(prog="python -m harness.builds", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all", action="store_true", help="also every etcd release harness.bugs runs (make prefetch)")
    ap.add_argument("--log", type=Path, default=LOG, help=f"the background builds' log (default {LOG})")
    ap.epilog = "--beside [--] CMD ...: run CMD in the foreground and the builds in the background; exit with CMD's status"
    args = ap.parse_args(own)
    if command is None:
        try:
            return run_builds(args.all)
        except KeyboardInterrupt:
            _say("stopped")
            return 130
    command = command[1:] if command[:1] == ["--"] else command
    if not command:
        ap.error("--beside needs a command after it, e.g. --beside -- pytest")
    return beside(command, args.all, args.log)


if __name__ == "__main__":
    sys.exit(main())
