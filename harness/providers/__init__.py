"""Providers bring an environment up and down; chosen by name with lazy imports."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from harness.errors import ConfigError

if TYPE_CHECKING:
    from harness.config import Config
    from harness.providers.base import Provider

PROVIDERS: dict[str, str] = {
    "local": "harness.providers.local.region:LocalRegion",
    "cluster": "harness.providers.cluster:ClusterProvider",
    "kind": "harness.providers.kind:KindProvider",
}


def get_provider(name: str, config: "Config") -> "Provider":
    try:
        target = PROVIDERS[name]
    except KeyError:
        raise ConfigError(f"unknown provider {name!r}; accepted: {', '.join(sorted(PROVIDERS))}") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)(config)
