"""Pure functions over recorded histories: they compute figures and find violations."""
