"""make test's groups for pytest-xdist (the root conftest.py): which tests share a worker."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("root_conftest", Path(__file__).parents[2] / "conftest.py")
assert _spec is not None and _spec.loader is not None
root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(root_conftest)


def test_directories_whose_files_share_region_names_are_one_group() -> None:
    assert {root_conftest.xdist_group(n) for n in (
        "tests/integration/test_faults.py::test_a", "tests/integration/test_load.py::test_b[x]")} == {"tests/integration/"}
    assert root_conftest.xdist_group("tests/must_fail/test_must_fail.py::test_c[a: b]") == "tests/must_fail/"


def test_files_with_module_wide_fixtures_are_a_group_each() -> None:
    assert root_conftest.xdist_group("tests/kube/test_cli.py::test_a") == "tests/kube/test_cli.py"
    assert root_conftest.xdist_group("tests/kube/test_agent.py::test_b") == "tests/kube/test_agent.py"


def test_the_files_marked_own_reference_share_one_worker() -> None:
    root = Path(__file__).parents[2]
    marked = sorted(str(f.relative_to(root)) for f in (root / "tests").rglob("test_*.py")
                    if any(line.startswith("pytestmark") and "pytest.mark.own_reference" in line
                           for line in f.read_text().splitlines()))
    assert marked and sorted(root_conftest.OWN_REFERENCE) == marked
    assert {root_conftest.xdist_group(f"{f}::test_a") for f in marked} == {"whole reference control planes"}


def test_scenarios_and_unit_tests_go_to_any_worker() -> None:
    assert root_conftest.xdist_group("features/test_features.py::test_losing_the_leaders_zone_keeps_quorum") is None
    assert root_conftest.xdist_group("tests/unit/test_workers.py::test_x") is None
