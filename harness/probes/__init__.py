"""Probes observe and return values; they never assert (validate/ and judge.py do)."""
