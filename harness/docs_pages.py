"""The documentation's reference pages, written from the code they describe (docs/hooks.py adds
them to the MkDocs build), so that they cannot drift from it: the Gherkin steps, the faults, the
commands, the pytest markers and the configuration keys with their defaults.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
from dataclasses import MISSING, fields
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
    from harness.faults import FAULTS
    from harness.faults.base import Observable, Planned, WaitsOnPurpose

    out = ["# Faults", "", "Generated from the fault registry (`harness/faults/__init__.py`). Each one is injected by "
           "`harness fault KIND TARGET` or a When-step, recorded in the heal ledger before it changes anything, "
           "healed at the scenario's end, on Ctrl-C, by `harness heal` and by its watchdog at its maximum duration.",
           ""]
    for kind, (target, options) in sorted(FAULTS.items()):
        module, _, name = target.partition(":")
        cls = getattr(importlib.import_module(module), name)
        bare = cls.__new__(cls)
        doc = inspect.getdoc(cls) or "*(no description)*"
        out += [f"## `{kind}`", "", doc, ""]
        if options:
            out.append(f"- set up with: {', '.join(f'`{k}={v!r}`' for k, v in options.items())}")
        out.append(f"- its effect is {'looked at until it is seen in place' if isinstance(bare, Observable) else 'taken as in place once applied'}")
        if isinstance(bare, Planned):
            out.append("- `--dry-run` says what it would do")
        if isinstance(bare, WaitsOnPurpose):
            out.append("- its inject waits on purpose (added to its time limit)")
        out.append(f"- defined in `{module}.{name}`")
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
           "is optional and an unknown one is refused, naming the accepted keys. Generated from `harness/config.py`.", ""]
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


PAGES = {"reference/steps.md": steps_page, "reference/faults.md": faults_page,
         "reference/commands.md": commands_page, "reference/markers.md": markers_page,
         "reference/configuration.md": config_page}
