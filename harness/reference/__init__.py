"""The reference HA control plane: its renderer and the HA conventions as one rule module."""
