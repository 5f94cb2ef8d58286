"""Every invariant of the model, in one place.

Invariants are pure functions over model objects that return :class:`Verdict`
values. They are grouped by concern:

* :mod:`model.invariants.timeline` — I1-I9 of ``hudi-semantics.md`` section 8:
  time order, requested < completion, legal transitions, completed-action
  mapping, restore blocking writes, file slicing and reader visibility;
* :mod:`model.invariants.protocol` — I10-I14 and the protocol properties
  (exactly-once, commit order, subsume, blocking mode, bounded state, liveness).

Every driver (Hypothesis suites, exhaustive exploration, SimPy runs, pipeline
diffs, ``hoodie-lab audit``/``replay``) checks runs through these functions, so
a rule is stated once.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one invariant.

    ``invariant`` is a stable identifier such as ``"I3.legal-transition"``;
    ``involved`` names the instants/files/checkpoints a violation concerns.
    """

    invariant: str
    holds: bool
    detail: str = ""
    involved: tuple[str, ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        mark = "holds" if self.holds else "VIOLATED"
        extra = f": {self.detail}" if self.detail else ""
        who = f" [{', '.join(self.involved)}]" if self.involved and not self.holds else ""
        return f"{self.invariant} {mark}{extra}{who}"


def violations(verdicts) -> list[Verdict]:
    """The verdicts that do not hold."""
    return [v for v in verdicts if not v.holds]
