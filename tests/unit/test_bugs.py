"""How harness.bugs counts a try: caught only by the bug's own symptom, passed only when every
step of the scenario ran and passed, and the same schedule seed for the buggy and fixed release."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import bugs


def step(name: str, status: str = "passed", message: str = "", keyword: str = "Then") -> dict[str, object]:
    result: dict[str, object] = {"status": status}
    if message:
        result["error_message"] = message
    return {"keyword": keyword, "name": name, "result": result}


SPLIT = ("harness.judge.ToleranceViolation: members reach one revision once writes stopped; seen: "
         "{'etcd-0': 120, 'etcd-1': 121}")


def test_a_try_is_caught_only_by_the_bugs_own_symptom() -> None:
    bug = bugs.BUGS[13766]
    done = [step("a put load", keyword="Given"), step("all members end with equal HashKV", "failed", SPLIT)]
    assert bugs.judge_try(bug, done, 3)[0] == "caught"
    assert bugs.judge_try(bug, done, 3)[1].startswith("members' revisions apart: members reach one revision")
    # Another anomaly of the scenario is no catch of this bug, however it fails.
    other = [step("a put load", keyword="Given"), step("all members end with equal HashKV"),
             step("the history is linearizable", "failed", "ToleranceViolation: the history ... is NOT linearizable")]
    assert bugs.judge_try(bug, other, 3)[0] == "failed-elsewhere"
    # The symptom's words from another step are not the symptom either.
    lost = bugs.BUGS[14370]
    elsewhere = [step("every watcher saw every event in order", "failed",
                      "ToleranceViolation: members missing acknowledged writes of the load")]
    assert bugs.judge_try(lost, elsewhere, 1)[0] == "failed-elsewhere"


def test_a_try_passes_only_when_every_step_ran_and_passed() -> None:
    bug = bugs.BUGS[15271]
    assert bugs.judge_try(bug, [step("a"), step("b")], 2) == ("passed", "")
    assert bugs.judge_try(bug, [step("a"), step("b", "skipped")], 2) == ("incomplete",
                                                                         "2 of 2 steps ran; not passed: b (skipped)")
    assert bugs.judge_try(bug, [step("a")], 2) == ("incomplete", "1 of 2 steps ran")


@pytest.mark.parametrize("issue", sorted(bugs.BUGS))
def test_each_bugs_scenario_is_found_and_its_symptom_step_is_in_it(issue: int) -> None:
    bug = bugs.BUGS[issue]
    assert bugs.scenario_steps(bug) > 2
    text = Path(bugs.FEATURE).read_text()
    scenario = text.split(f"@{bug.marker}", 1)[1].split("\n  @", 1)[0]
    assert all(sym.step in scenario for sym in bug.symptoms), f"#{issue}: a symptom's step is not in its scenario"
