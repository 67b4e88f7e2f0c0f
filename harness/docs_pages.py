"""The documentation's reference pages, written from the code they describe (docs/hooks.py adds
them to the MkDocs build), so that they cannot drift from it: the Gherkin steps, the faults, the
commands, the pytest markers, the configuration keys with their defaults and the providers' protocols.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

# The configuration's sections and the classes that read them (harness.config.load_config).
CONFIG_SECTIONS = {"region": "RegionSpec", "provider": "ProviderSettings", "aws": "AwsSettings",
                   "etcd": "EtcdSettings", "timeouts": "Timeouts"}
PATHS = {"state_dir": "where each environment's state and heal ledger live (root: /run/ha-harness)",
         "data_dir": "the members' data (/dev/shm when writable: the timings are about the network, not the disk)",
         "disk_data_dir": "data on a real disk, for the disk faults and --data-on-disk",
         "reports_dir": "reports, run timelines and logs"}


def steps_page() -> str:
    from harness.steps import catalogue

    found = catalogue.steps()
    return catalogue.markdown(found, catalogue.providers(found)) + f"\n\n{catalogue.summary(found)}.\n"


def faults_page() -> str:
    from harness.faults import FAULTS, fault_class
    from harness.faults.base import Observable, Planned, WaitsOnPurpose

    out = ["# Faults", "", "Generated from the fault registry (`harness/faults/__init__.py`). Each one is injected by "
           "`harness fault KIND TARGET` or a When-step, recorded in the heal ledger before it changes anything, "
           "healed at the scenario's end, on Ctrl-C, by `harness heal` and by its watchdog at its maximum duration.",
           ""]
    for kind, (target, options) in sorted(FAULTS.items()):
        cls = fault_class(kind)
        bare = cls.__new__(cls)
        doc = inspect.getdoc(cls) or "*(no description)*"
        out += [f"## `{kind}`", "", doc, ""]
        if options:
            out.append(f"- set up with: {', '.join(f'`{k}={v!r}`' for k, v in options.items())}")
        takes = [p for p in inspect.signature(cls).parameters if p not in options]
        out.append(f"- options: {', '.join(f'`{p}`' for p in takes) or 'none'}")
        out.append(f"- its effect is {'looked at until it is seen in place' if isinstance(bare, Observable) else 'taken as in place once applied'}")
        if isinstance(bare, Planned):
            out.append("- `--dry-run` says what it would do")
        if isinstance(bare, WaitsOnPurpose):
            out.append("- its inject waits on purpose (added to its time limit)")
        out.append(f"- defined in `{target.replace(':', '.')}`")
        out.append("")
    return "\n".join(out)


def commands_page() -> str:
    from harness.cli import _parser

    parser = _parser()
    out = ["# Commands", "", "Generated from the command line's own help (`harness COMMAND --help`).", "",
           "```text", parser.format_help().rstrip(), "```", ""]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        out += [f"## `harness {name}`", "", "```text", command.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def markers_page() -> str:
    from harness.pytest_plugin import MARKERS

    out = ["# Markers", "", "The feature files' tags are pytest markers, registered under `--strict-markers` "
           "(`pytest -m placement`, `pytest -k outage`). Generated from `harness/pytest_plugin.py`.", "",
           "| marker | what it marks |", "|---|---|"]
    out += [f"| `@{name}` | {help_} |" for name, help_ in MARKERS.items()]
    return "\n".join(out) + "\n"


def _field_notes(cls: type) -> dict[str, str]:
    """What the source says of each field: its trailing comment, or the comment lines above it."""
    notes: dict[str, str] = {}
    above: list[str] = []
    for line in inspect.getsource(cls).splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("# "))
            continue
        m = re.match(r"(\w+): [^=]+?(?: = .*?)?(?:\s+#\s*(.*))?$", stripped)
        if m and not stripped.startswith(("def ", "class ", "@", "return", "raise", "if ")):
            notes[m.group(1)] = " ".join([*above, m.group(2) or ""]).strip()
        above = []
    return notes


def _default(f: Any) -> str:
    if f.default is not MISSING:
        return repr(f.default)
    if f.default_factory is not MISSING:
        return repr(f.default_factory())
    return "(required)"


def config_page() -> str:
    from harness import config

    out = ["# Configuration", "",
           "A TOML file (`harness --config FILE`, `pytest --harness-config FILE`, or `HARNESS_CONFIG`); every key "
           "is optional and an unknown one is refused, naming the accepted keys. `HARNESS_PROVIDER` picks the provider "
           "too. Generated from `harness/config.py`.", ""]
    for section, name in CONFIG_SECTIONS.items():
        cls = getattr(config, name)
        notes = _field_notes(cls)
        out += [f"## `[{section}]`", "", (inspect.getdoc(cls) or "").split("\n\n")[0], "",
                "| key | default | what it is |", "|---|---|---|"]
        out += [f"| `{f.name}` | `{_default(f)}` | {notes.get(f.name, '')} |" for f in fields(cls)]
        out.append("")
    out += ["## `[paths]`", "", "| key | what it is |", "|---|---|"]
    out += [f"| `{k}` | {v} |" for k, v in PATHS.items()]
    return "\n".join(out) + "\n"


def report_top(screenshot: Path, height_px: int = 1500) -> bytes:
    """The top of a report's full-page screenshot (`harness report --screenshot`): the run's
    header and its first scenario, as the getting-started page shows it."""
    import io

    import matplotlib.image as image

    out = io.BytesIO()
    image.imsave(out, image.imread(str(screenshot))[:height_px], format="png")
    return out.getvalue()


# The environments each provider hands out, whose methods say which protocols they implement.
ENVIRONMENTS = {"local": "harness.providers.local.region:LocalEnvironment",
                "cluster": "harness.providers.cluster:ClusterEnvironment",
                "kind": "harness.providers.kind:KindEnvironment"}


def protocols_page() -> str:
    from harness.providers import base

    envs = {name: getattr(importlib.import_module(target.partition(":")[0]), target.partition(":")[2])
            for name, target in ENVIRONMENTS.items()}
    out = ["# Protocols", "", inspect.getdoc(base) or "", "",
           "Every protocol of `harness/providers/base.py`, generated from it, and the providers whose environment "
           "has its methods. A fault, probe or step that needs one a provider lacks says so (`available()`, "
           "`CapabilityMissing`): the scenario is skipped with the reason, never failed or faked.", ""]
    for name, cls in vars(base).items():
        if not (inspect.isclass(cls) and cls.__module__ == base.__name__ and getattr(cls, "_is_protocol", False)):
            continue
        methods = [m for m, v in vars(cls).items() if callable(v) and not m.startswith("_")]
        has = [p for p, env in envs.items() if methods and all(hasattr(env, m) for m in methods)]
        out += [f"## `{name}`", "", inspect.getdoc(cls) or "*(no description)*", ""]
        if methods:
            out.append(f"- methods: {', '.join(f'`{m}()`' for m in methods)}")
            out.append(f"- implemented by: {', '.join(has) or 'no environment of this repository'}")
        out.append("")
    return "\n".join(out)


PAGES = {"reference/steps.md": steps_page, "reference/faults.md": faults_page,
         "reference/commands.md": commands_page, "reference/markers.md": markers_page,
         "reference/configuration.md": config_page,
         "design/protocols.md": protocols_page}
