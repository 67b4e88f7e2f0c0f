"""Taking an environment down: heal, remove what was deployed, then let the provider remove the rest.

The order is the point: a fault healed after its environment was forgotten is a fault left in
place (a cordoned node, a revoked credential), and a reference left deployed holds the
cluster's volumes. The provider only removes what it made (harness.providers.base.Provider).
"""

from __future__ import annotations

from harness.faults.runner import heal_everything
from harness.providers.base import Provider
from harness.reference.deploy import undeploy


def take_down(provider: Provider) -> list[str]:
    """Heal every fault in the ledger (and sweep), remove the references the harness deployed,
    then `provider.down()`. Says what it removed; a heal that fails stops it with the record kept."""
    removed: list[str] = []
    env = provider.left_to_heal()
    if env is not None:
        removed += heal_everything(env)  # disarms each healed fault's watchdog
        seed = provider.seed(env)
        for namespace in env.describe().get("references", []):
            removed += undeploy(seed, namespace, env.config.timeouts.deploy)
    return removed + provider.down()
