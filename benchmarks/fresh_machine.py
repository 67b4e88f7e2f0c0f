"""What `make test` or `make run` costs from a clean clone: on a fresh machine (empty caches) or
on a warm one (this machine's caches).

    python benchmarks/fresh_machine.py [--target test|run] [--cold] [--keep]

--cold gives the clone caches of its own (XDG_CACHE_HOME: the harness's builds, Go's build cache
and pip's; GOMODCACHE: Go's modules), empty, as on a new CI runner; the Debian packages are what
the machine has. Prints the minutes of each phase read from the run's own lines: setup (venv),
each Go build (harness.builds' "[builds] WHAT: ready after T" lines, in the foreground for
make run, in the background beside pytest for make test), pytest, and the whole command.
Asserts nothing; the figures go in docs/design/budgets.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = re.compile(r"\[builds\] (?P<what>.+): (?P<how>ready|FAILED[^)]*\)) after (?:(?P<m>\d+)m)?(?P<s>\d+)s")
PYTEST = re.compile(r"=+ (?P<summary>.*) in (?P<seconds>[\d.]+)s")


def seconds(match: re.Match[str]) -> int:
    return int(match["m"] or 0) * 60 + int(match["s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", choices=("test", "run"), default="test")
    ap.add_argument("--cold", action="store_true", help="empty caches of the clone's own, as a fresh machine")
    ap.add_argument("--keep", action="store_true", help="keep the clone and its caches")
    args = ap.parse_args()
    (ROOT / ".cache").mkdir(exist_ok=True)  # ignored by git; a cold cache takes gigabytes
    work = Path(tempfile.mkdtemp(prefix="fresh-machine-", dir=ROOT / ".cache"))
    work.chmod(0o755)  # the rootless tests run the clone as nobody
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = dict(os.environ)
    if args.cold:
        env.update(XDG_CACHE_HOME=str(work / "cache"), GOMODCACHE=str(work / "gomod"))
    began = time.monotonic()
    setup_done: float | None = None
    lines: list[str] = []
    with subprocess.Popen(["make", args.target], cwd=clone, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as make:
        assert make.stdout is not None
        for line in make.stdout:
            lines.append(line.rstrip("\n"))
            if setup_done is None and ("harness.builds" in line or "[builds]" in line):
                setup_done = time.monotonic() - began
            print(f"{time.monotonic() - began:7.0f}s {line}", end="", flush=True)
    total = time.monotonic() - began
    log = clone / "reports" / "builds.log"
    text = "\n".join(lines) + ("\n" + log.read_text(errors="replace") if log.exists() else "")
    print(f"\nmake {args.target} from a clean clone, {'empty caches' if args.cold else 'this machine’s caches'}: "
          f"exit {make.returncode}")
    if setup_done is not None:
        print(f"  setup (venv and Debian packages)  {setup_done / 60:6.1f} min")
    seen = set()
    for m in BUILD.finditer(text):
        if m["what"] not in seen:
            seen.add(m["what"])
            print(f"  build {m['what']:<48} {seconds(m) / 60:6.1f} min{'' if m['how'] == 'ready' else '  ' + m['how']}")
    for m in PYTEST.finditer("\n".join(lines)):
        print(f"  pytest: {m['summary']:<40} {float(m['seconds']) / 60:6.1f} min")
    print(f"  in all                            {total / 60:6.1f} min")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"  kept: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
