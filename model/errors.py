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
        super().__init__(f"[{rule}] {message}")


class TimelineError(RuleViolation):
    """A timeline operation (create/transition/complete/revert/delete) was refused."""


class CodecError(ModelError):
    """A file name could not be parsed or produced. ``name`` is the offending name."""

    def __init__(self, name: str, problem: str):
        self.name = name
        self.problem = problem
        super().__init__(f"{name}: {problem}")
