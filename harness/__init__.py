"""ha-harness: BDD tests and chaos experiments for multi-zone HA control planes."""

__version__ = "0.1.0"
