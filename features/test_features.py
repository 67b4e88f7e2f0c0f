"""Binds every .feature file in this directory to pytest."""

from pytest_bdd import scenarios

scenarios(".")
