"""Errors raised by the model. Every refusal names the rule it enforces."""

from __future__ import annotations


class ModelError(Exception):
    """Base class of every error the model raises."""


class RuleViolation(ModelError):
    """An operation was refused because it would break a named rule.

    ``rule`` is a short identifier (for example ``"I3.legal-transition"``) that
    appears in the message and that tests and the CLI can match on.
    """

    def __init__(self, rule: str, message: str):
        self.rule = rule
        self.detail = message
        # (the arguments as given, so the error can be rebuilt from them: pickling does, and SimPy does when a
        # process fails with it)
        super().__init__(rule, message)

    def __str__(self) -> str:
        return f"[{self.rule}] {self.detail}"


class TimelineError(RuleViolation):
    """A timeline operation (create/transition/complete/revert/delete) was refused."""


class CodecError(ModelError):
    """A file name could not be parsed or produced. ``name`` is the offending name."""

    def __init__(self, name: str, problem: str):
        self.name = name
        self.problem = problem
        super().__init__(name, problem)  # (rebuildable from its arguments, as RuleViolation)

    def __str__(self) -> str:
        return f"{self.name}: {self.problem}"
