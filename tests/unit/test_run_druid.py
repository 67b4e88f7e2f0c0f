"""`harness run --druid`: the gardener form's zone outage with etcd-druid's etcds, which only the
gardener form has; any other form is refused before anything is brought up."""

from __future__ import annotations

import pytest

from harness import chaos_job, cli


def test_druid_with_another_form_is_refused_naming_the_form_it_takes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--form", "conventions", "--druid"]) == 2
    err = capsys.readouterr().err
    assert "--druid runs the gardener form's outage with etcd-druid's etcds: give --form gardener, not --form " \
           "conventions" in err, err


def test_the_druid_outline_is_the_one_the_job_picks() -> None:
    doc = "features/gep20.feature: A zone outage with etcd-druid running the etcds: gardenlet's Etcd resources (zone-a down)"
    assert chaos_job.chosen(doc, {"zone": "zone-a"}, "druid", None)
    assert not chaos_job.chosen(doc, {"zone": "zone-a"}, "gardener", None)
