"""The must-fail suite's figures: Then-steps covered of those shipped, and each false statement's
failure, one line each, with how long the whole suite took.

    python benchmarks/must_fail.py [FEATURE_NAME ...]

Runs tests/must_fail's scenarios once (the same inner run as tests/must_fail/test_must_fail.py).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.must_fail.test_must_fail import SHOWN_ELSEWHERE, STATEMENTS, _run_inner, covered  # noqa: E402


def main() -> None:
    thens, ends = covered()
    print(f"Then-step claims shipped (each alternative of a step its own): {len(thens)}; "
          f"ending a must-fail scenario: {len(ends & thens)}; "
          f"shown failing elsewhere: {len(SHOWN_ELSEWHERE)}; not shown: {len(thens - ends - set(SHOWN_ELSEWHERE))}")
    with tempfile.TemporaryDirectory(prefix="must-fail-") as tmp:
        began = time.monotonic()
        _run_inner(Path(tmp), every=True)
        took = time.monotonic() - began
        report = json.loads((Path(tmp) / "cucumber.json").read_text())
    results = {f"{Path(f['uri']).name}: {e['name']}": e["steps"][-1] for f in report for e in f.get("elements", [])}
    for s in STATEMENTS:
        last = results.get(s.id)
        if last is None:
            print(f"NOT RUN  {s.id}")
            continue
        status = last["result"]["status"]
        message = last["result"].get("error_message", "")
        line = next((ln.split("ToleranceViolation: ", 1)[1] for ln in message.splitlines() if "ToleranceViolation: " in ln),
                    message.strip().splitlines()[-1] if message.strip() else "")
        print(f"{'FAILED' if status == 'failed' else status.upper():<7}  {s.last_step}  ->  {line[:220]}")
    print(f"{len(results)} scenarios in {took:.0f} s")


if __name__ == "__main__":
    main()
