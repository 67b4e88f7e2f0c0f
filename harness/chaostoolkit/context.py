"""Which environment an activity acts on, built once per configuration, and bounded calls.

chaostoolkit passes its experiment `configuration` to every activity; these keys are read:

- `harness_region` (required): the region's name, as given to `harness --name`.
- `harness_provider`: local (default), cluster or kind.
- `harness_config`: a harness TOML file (as `--config`).
- `harness_state_dir`: where region state files live (default: the harness's own).

chaostoolkit does not enforce `timeout` for Python activities, so every action and probe runs
through `bounded`: a hang becomes an error after a limit taken from `[timeouts]`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from harness import wait
from harness.config import Config, load_config
from harness.errors import ConfigError, HarnessError
from harness.providers import get_provider
from harness.providers.base import Environment, Provider

T = TypeVar("T")
KEYS = ("harness_region", "harness_provider", "harness_config", "harness_state_dir")

_cache: dict[tuple[Any, ...], tuple[Config, Provider]] = {}


class ActivityTimeout(HarnessError):
    """An action or probe ran past its bounded duration."""


def settings(configuration: Mapping[str, Any] | None) -> tuple[Config, Provider]:
    """The harness configuration and provider named by chaostoolkit's `configuration` (cached)."""
    conf = dict(configuration or {})
    region = conf.get("harness_region")
    if not region:
        raise ConfigError("the experiment's configuration has no `harness_region`; name the region "
                          "(e.g. \"harness_region\": \"ct\", or `chaos run --var harness_region=ct`)")
    key = tuple(str(conf.get(k) or "") for k in KEYS)
    if key not in _cache:
        overrides: dict[str, Any] = {"region.name": str(region)}
        if conf.get("harness_provider"):
            overrides["provider.name"] = str(conf["harness_provider"])
        if conf.get("harness_state_dir"):
            overrides["paths.state_dir"] = str(conf["harness_state_dir"])
        path = Path(conf["harness_config"]) if conf.get("harness_config") else None
        config = load_config(path, overrides)
        _cache[key] = (config, get_provider(config.provider.name, config))
    return _cache[key]


def environment(configuration: Mapping[str, Any] | None) -> Environment:
    """The running environment, re-read from its state file (the ledger may have changed since)."""
    return settings(configuration)[1].attach()


def bounded(fn: Callable[[], T], timeout: float, what: str) -> T:
    """Run `fn`; if it has not finished within `timeout` seconds, raise ActivityTimeout (faults it
    applied are in the ledger and healed by the experiment's rollbacks or their watchdog)."""
    return wait.bounded(fn, timeout, what, ActivityTimeout)


def positive(value: float, what: str, limit: float | None = None) -> float:
    """A duration argument: a number > 0 (and <= limit); a clear error otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} must be a number of seconds, got {value!r}") from None
    if number <= 0 or (limit is not None and number > limit):
        bound = f" and at most {limit:g}" if limit is not None else ""
        raise ConfigError(f"{what} must be greater than 0{bound} seconds, got {value!r}")
    return number
