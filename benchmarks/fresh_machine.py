"""What `make test` or `make run` costs from a clean clone: on a fresh machine (empty caches) or
on a warm one (this machine's caches); or, with `--target tutorial`, the time from a fresh clone
to the first-scenario tutorial's scenario passing, following only its page
(docs/tutorials/first-scenario.md): `make setup`, its files written into an empty directory as
the page shows them up to its first run, and `pytest -k outage` there with the clone's .venv.

    python benchmarks/fresh_machine.py [--target test|run|tutorial] [--cold] [--keep]

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


TUTORIAL = ROOT / "docs" / "tutorials" / "first-scenario.md"
TITLED = re.compile(r'```\w+ title="(?P<title>[^"]+)"\n(?P<text>.*?)```', re.S)
OUTPUT = "pytest's output"


def first_run_files(page: str) -> dict[str, str]:
    """The files the tutorial has the reader write before its first run (the blocks titled with
    a file's name before the first titled with pytest's output; one name twice adds to the file)."""
    files: dict[str, str] = {}
    for m in TITLED.finditer(page):
        if m["title"] == OUTPUT:
            break
        files[m["title"]] = files.get(m["title"], "") + m["text"]
    return files


def tutorial_command(clone: Path, mine: Path) -> list[str]:
    """`make setup`, then the tutorial's first `pytest -k outage` in `mine`, a directory of the
    reader's own (outside the clone: pytest would take the harness's own configuration there)."""
    for name, text in first_run_files((clone / TUTORIAL.relative_to(ROOT)).read_text()).items():  # as cloned
        (mine / name).write_text(text)
    return ["sh", "-c", f"make setup && cd {mine} && {clone}/.venv/bin/pytest -k outage -p no:cacheprovider"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", choices=("test", "run", "tutorial"), default="test")
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
    reader = tempfile.TemporaryDirectory(prefix="my-repo-")  # the tutorial reader's repository: two files
    mine = Path(reader.name)
    command = tutorial_command(clone, mine) if args.target == "tutorial" else ["make", args.target]
    with subprocess.Popen(command, cwd=clone, env=env, stdout=subprocess.PIPE,
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
    what = "make setup, then the tutorial's pytest -k outage," if args.target == "tutorial" else f"make {args.target}"
    print(f"\n{what} from a clean clone, {'empty caches' if args.cold else 'this machine’s caches'}: "
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
    reader.cleanup()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"  kept: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
