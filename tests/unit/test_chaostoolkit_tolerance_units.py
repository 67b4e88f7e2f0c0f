"""The `at_most` tolerance words its out-of-tolerance message in the figure's own unit (KiB/s, not s)."""

from __future__ import annotations

import logging

import pytest

from harness.chaostoolkit import tolerances


def warnings(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_kib_per_second_is_worded_in_kib_per_second(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="chaostoolkit"):
        assert tolerances.at_most(500, target="total_kib_s", value={"total_kib_s": 294.7})
        assert not tolerances.at_most(20, target="total_kib_s", value={"total_kib_s": 294.7})
    text = warnings(caplog)
    assert "total_kib_s: expected at most 20.000 KiB/s, measured 294.700 KiB/s" in text
    assert "s;" not in text.replace("KiB/s;", "")  # no stray seconds


def test_unit_named_or_bare_and_seconds_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="chaostoolkit"):
        assert not tolerances.at_most(1, what="requests failed", unit="", value=4)
        assert not tolerances.at_most(2, target="pairs", unit="KiB/s", value={"pairs": 3.5})
        assert not tolerances.at_most(1.0, target="longest_gap_s", value={"longest_gap_s": 1.6})
        assert not tolerances.at_most(500, target="total_kib_s", value={"seconds": 3.0})  # key missing
        assert not tolerances.at_most(500, target="total_kib_s")  # no value at all
    lines = warnings(caplog).splitlines()
    assert "requests failed: expected at most 1.000, measured 4.000" in lines[0]
    assert "pairs: expected at most 2.000 KiB/s, measured 3.500 KiB/s" in lines[1]
    assert "longest_gap_s: expected at most 1.000s, measured 1.600s" in lines[2]  # judge.at_most's wording
    assert "total_kib_s: expected at most 500.000 KiB/s, but no figure was measured" in lines[3]
    assert len(lines) == 5
