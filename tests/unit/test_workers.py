"""How many pytest-xdist workers a machine takes, and each worker's region."""

import pytest

from harness import workers
from harness.errors import ConfigError

GIB = 1024 ** 3


@pytest.mark.parametrize(("cores", "memory_gib", "expected"), [
    (2, 23, 2),  # the CI runner: one per core
    (1, 23, 1),
    (16, 64, workers.MAX_WORKERS),  # region names leave room for one digit
    (8, 7, 2),  # memory for two regions with their seeds
    (4, 1, 1),  # never none
])
def test_one_worker_per_core_as_many_as_the_memory_holds(cores: int, memory_gib: int, expected: int) -> None:
    assert workers.count(cores, memory_gib * GIB) == expected


def test_the_machine_has_at_least_one_worker() -> None:
    assert 1 <= workers.machine_count() <= workers.MAX_WORKERS


def test_each_worker_appends_its_number_to_the_sessions_region() -> None:
    assert [workers.region_name("pt", f"gw{i}") for i in range(3)] == ["pt0", "pt1", "pt2"]
    assert workers.region_name("mf2", "gw1") == "mf21"


def test_a_region_name_without_room_for_the_worker_is_refused_saying_how_long_it_may_be() -> None:
    with pytest.raises(ConfigError, match=r"'abcd0' for gw0.*at most 4 characters.*--region-name of at most 3"):
        workers.region_name("abcd", "gw0")
    with pytest.raises(ConfigError, match="worker ids look like gw0"):
        workers.region_name("pt", "main")
