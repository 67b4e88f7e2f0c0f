"""One exception base for the harness; third-party errors are wrapped at the boundary."""

from __future__ import annotations


def see_docs(page: str) -> str:
    """Where the documentation says more: `page` of the site in docs/ (`make docs` serves it; its
    reference pages are written from the code). tests/unit/test_docs.py checks every page named."""
    return f"see {page} in the documentation: `make docs` serves it"


class HarnessError(Exception):
    """Base of every error the harness raises on purpose.

    The message says what was wrong and, where it helps, what is accepted or what to do.
    """


class ConfigError(HarnessError):
    """Configuration, CLI input or a Gherkin argument is malformed or unknown."""


class PrerequisiteError(HarnessError):
    """A binary, a kernel feature or a privilege the harness needs is missing."""


class CapabilityMissing(PrerequisiteError):
    """The environment cannot do what was asked (a provider that cannot cut a zone, no client
    vantage point in a zone). A scenario that needs it is skipped with this reason, not failed."""


class EnvironmentStateError(HarnessError):
    """The environment is not in the state an operation needs (not up, leftovers, ...)."""


class FaultError(HarnessError):
    """A fault could not be injected or healed."""


class FaultUnavailable(CapabilityMissing, FaultError):
    """A fault the environment has no means to apply."""


class WaitTimeout(HarnessError):
    """A wait_for ran out of time; carries the last observed state."""

    def __init__(self, description: str, timeout: float, last: object) -> None:
        super().__init__(f"timed out after {timeout:.1f}s waiting for {description}; last observed: {last!r}")
        self.description = description
        self.timeout = timeout
        self.last = last


class WaitAbandoned(HarnessError):
    """A wait given up before its timeout because what it waited on can no longer happen
    (the process that should serve has exited); carries the reason and the last observed state."""

    def __init__(self, description: str, reason: str, last: object) -> None:
        super().__init__(f"{reason} while waiting for {description}; last observed: {last!r}")
        self.description = description
        self.reason = reason
        self.last = last
