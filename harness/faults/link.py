"""Grey network faults between zones: a cut, a loss, MTU trouble or a rate limit on chosen ordered
zone pairs, so one direction can fail while the other works and two zones can lose each other
while both still see the third.

A target names the paths: `zone-a>zone-b` (zone-a's packets to zone-b only), `zone-a<>zone-b`
(both ways: a bridge, when a third zone sees both), `zone-a>*` (everything zone-a sends to the
other zones: its egress), `*>zone-a` (its ingress), `zone-a<>*` (both), `*>*` (every path).
Traffic inside a zone is never touched.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from harness.errors import ConfigError
from harness.faults.base import Injection, lacks
from harness.providers.base import Environment, LinkImpairment, ZoneLinks

_TARGET = re.compile(r"^(?P<a>[^<>]+?)(?P<dir><>|>)(?P<b>[^<>]+)$")
TARGET_FORMS = ("ZONE>ZONE (one way), ZONE<>ZONE (both ways), ZONE>* (egress), *>ZONE (ingress), ZONE<>* (both), "
                "*>* (every path)")


def paths(env: Environment, target: str) -> list[tuple[str, str]]:
    """The ordered zone pairs a target names; raises ConfigError naming the accepted forms."""
    m = _TARGET.match(target.replace(" ", ""))
    if m is None:
        raise ConfigError(f"unknown link target {target!r}; accepted: {TARGET_FORMS}")
    zones = list(env.zones)  # type: ignore[attr-defined]
    src = zones if m["a"] == "*" else [env.zone(m["a"])]
    dst = zones if m["b"] == "*" else [env.zone(m["b"])]
    out = [(a, b) for a in src for b in dst if a != b]
    if m["dir"] == "<>":
        out += [(b, a) for a, b in out]
    if not out:
        raise ConfigError(f"link target {target!r} names no path between two different zones")
    return list(dict.fromkeys(out))


class ZoneLink:
    """Packets on the named paths dropped at the router: all of them (`zone-link-cut`), a share
    (`loss_percent`), those above a size (`larger_than`), those beyond a rate (`rate_kbytes`);
    `port`: only etcd's peer (2380) or client (2379) traffic. Or held for `delay_ms` ± `jitter_ms`."""

    kind: ClassVar[str] = "zone-link"

    def __init__(self, loss_percent: float | None = None, larger_than: int | None = None,
                 rate_kbytes: int | None = None, port: str = "all", delay_ms: float | None = None,
                 jitter_ms: float = 0.0, needs: str | None = None) -> None:
        self.impairment = LinkImpairment(loss_percent, larger_than, rate_kbytes, port, delay_ms, jitter_ms)
        if needs is not None and getattr(self.impairment, needs) is None:
            raise ConfigError(f"this link fault needs {needs} (on the command line --{needs.replace('_', '-')})")

    def available(self, env: Environment) -> str | None:
        return lacks(env, ZoneLinks, "impair the paths between zones one by one")

    def validate(self, env: Environment, target: str) -> str:
        m = _TARGET.match(target.replace(" ", ""))
        paths(env, target)
        assert m is not None
        name = lambda z: z if z == "*" else env.zone(z)  # noqa: E731
        return f"{name(m['a'])}{m['dir']}{name(m['b'])}"

    def plan(self, env: Environment, target: str) -> str:
        i = self.impairment
        what = (f"{i.loss_percent:g} % of the packets" if i.loss_percent is not None
                else f"packets larger than {i.larger_than} bytes" if i.larger_than is not None
                else f"packets beyond {i.rate_kbytes} KiB/s" if i.rate_kbytes is not None else "every packet")
        port = "" if i.port == "all" else f" of etcd's {i.port} traffic"
        if i.delay_ms is not None:
            return (f"Hold every packet for {i.delay_ms:g} ms ± {i.jitter_ms:g} ms in a delay line at the router on "
                    f"the paths {', '.join(f'{a}>{b}' for a, b in paths(env, target))}.\nDry run: nothing was changed.")
        return (f"Drop {what}{port} at the router on the paths {', '.join(f'{a}>{b}' for a, b in paths(env, target))}."
                "\nDry run: nothing was changed.")

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, ZoneLinks)
        return env.impair_links(paths(env, target), self.impairment, ctx.run_id)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, ZoneLinks)
        return env.links_effect(data)

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, ZoneLinks)
        env.restore_links(data)
