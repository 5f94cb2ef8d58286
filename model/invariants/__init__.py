"""Every invariant of the model, in one place.

Invariants are pure functions over model objects that return :class:`Verdict`
values. They are grouped by concern:

* :mod:`model.invariants.timeline` — I1-I9 of ``hudi-semantics.md`` section 8:
  calendar time format, requested < completion, legal transitions, one writer per
  instant (``I3.single-writer``, storage without put-if-absent), completed-action
  mapping, restore blocking writes, file slicing, reader visibility, snapshot
  completeness with what each compaction merged, the files of the latest snapshot
  on disk (``I8.snapshot-files-exist``), log blocks (``I8.log-blocks``) and
  compaction plans (I9, by blocks for table version 6);
* :mod:`model.invariants.times` — I1 over generated times (unique, strictly
  increasing, generation order);
* :mod:`model.invariants.history` — I15-I16: the LSM timeline, archival decisions
  and their order, completion times found across active + history, reads unchanged
  by archival, the active timeline's bound;
* :mod:`model.invariants.protocol` — I10-I14 and the protocol properties
  (exactly-once, commit order, subsume, events before acks, blocking mode, bounded
  state, liveness and the stall bound).

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
