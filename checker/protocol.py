"""The protocol engine (:class:`engine.System`) as a model the checker explores.

:class:`SystemModel` adapts the engine to :class:`checker.explorer.Model`: initial state, enabled events,
next state (a clone with the event applied), fingerprints, and the protocol's invariants as properties
(:mod:`engine.invariants`, the engine's evaluation of :mod:`model.invariants.protocol`).
"""

from __future__ import annotations

import operator

from engine.system import canonical_fingerprint_hash_of, enabled_events_of, fingerprint_hash_of

from .explorer import Discovery, Model, Property

DRAIN_CHECKS = ("settled", "every", "off")


class Refused:
    """The outcome of an *enabled* event that the System nevertheless refused (a model bug or a
    rule the variant breaks hard): a dead-end state carrying the error, reported as a violation."""

    __slots__ = ("event", "error")

    def __init__(self, event, error):
        self.event, self.error = event, error

    def enabled_events(self) -> tuple:
        return ()

    def fingerprint(self) -> tuple:
        return ("refused", self.event, str(self.error))

    def fingerprint_hash(self) -> int:
        return hash(self.fingerprint())

    #: a dead end is its own canonical form (never merged with another state)
    canonical_fingerprint = fingerprint
    canonical_fingerprint_hash = fingerprint_hash

    def __repr__(self) -> str:
        return f"Refused({self.event}: {self.error})"


class SystemModel(Model):
    """The writer–coordinator protocol (:class:`model.protocol.System`) as an explorable model.

    * init: ``System(config)``; actions: ``enabled_events()`` (faults included, bounded by the
      config); next state: ``clone()`` + ``apply(event)``; fingerprint: ``System.fingerprint()``.
    * property ``step`` (always): :func:`model.invariants.protocol.check_step` — every verdict
      that fails is its own discovery, named by its invariant id (checked as :meth:`step_violations`);
    * property ``drained``: clone the state, :meth:`System.drain` it (faults stop, checkpoints run
      with delivered acks) and apply :func:`model.invariants.protocol.check_drained` (exactly-once,
      liveness). ``drain_check="settled"`` (default) makes it a ``terminal`` property checked in
      the states where only fault events are enabled (:meth:`settles`) — the states a run ends in
      when faults stop happening, every terminal state among them; ``"every"`` drains every state
      (thorough, several times slower); ``"off"`` skips it. Draining from any reachable
      state is a legal run, so every drained verdict is a real counterexample; its trace is the
      path plus the drain's events (:meth:`trace_events`).
    """

    def __init__(self, config, *, drain_check: str = "settled", seed: int = 0):
        from engine import System
        from engine import invariants as inv
        from model.errors import RuleViolation

        if drain_check not in DRAIN_CHECKS:
            raise ValueError(f"drain_check must be one of {', '.join(DRAIN_CHECKS)}")
        self.config = config
        self.drain_check = drain_check
        self.seed = seed
        self.drains = 0  #: states drained and judged by check_drained so far
        self._System, self._inv, self._RuleViolation = System, inv, RuleViolation
        #: the explorers' check of a new state (:meth:`step_violations`): the engine's, unless a subclass has its
        #: own check_step (asked then, as before)
        self._step_violations = (inv.step_violations if type(self).check_step is SystemModel.check_step
                                 else self.check_step)
        #: apply() asks an event's guard again unless the actions are enabled_events() themselves
        #: (a subclass listing other events gets each checked, and a refusal reported)
        self._check_guards = type(self).actions is not SystemModel.actions
        #: job restarts' successors by :meth:`engine.System.restart_key` (:meth:`successors`), for this model's searches
        self._restarts: dict = {}
        if type(self).next_state is not SystemModel.next_state:  # (a subclass's own steps, one per action)
            self.successors = None

    def init_states(self):
        return [self._System(self.config, seed=self.seed)]

    #: ``actions(s)`` is ``s.enabled_events()``, ``fingerprint(s)`` is ``s.fingerprint()`` and
    #: ``fingerprint_hash(s)`` is ``s.fingerprint_hash()`` (:class:`Refused` has all three); the per-state
    #: ones are the engine's compiled calls (:func:`engine.system.enabled_events_of`).
    actions = staticmethod(enabled_events_of)
    fingerprint = staticmethod(operator.methodcaller("fingerprint"))
    fingerprint_hash = staticmethod(fingerprint_hash_of)

    def next_state(self, s, ev):
        """``s.clone()`` + ``apply(ev)``. The guard is not asked again for an event of
        ``s.enabled_events()`` (in :func:`_rebuild` too): the Hypothesis protocol machines apply the
        listed events with their guards checked, so a listed event whose guard is false fails there."""
        t = s.clone()
        try:
            t.apply(ev, check=self._check_guards)
        except self._RuleViolation as exc:
            return Refused(ev, exc)
        return t

    def independence(self):
        """:mod:`engine.independence`'s relation under this configuration, and :class:`engine.System` as the
        type of successors that are expanded (a :class:`Refused` dead end puts no event to sleep); None for a
        subclass with its own actions or steps (the relation speaks of the engine's events and effects)."""
        if self._check_guards or self.successors is None or type(self).successors is not SystemModel.successors:
            return None
        from engine import independence

        from engine.settings import settings

        return independence.Relation(settings(self.config)), self._System

    def successors(self, s, events, asleep=None) -> list:
        """``[next_state(s, ev) for ev in events]`` in one compiled call (:meth:`engine.System.successors`):
        the explorers expand a state with it. ``asleep``: events (the very objects of ``events``) to skip, None
        in their place (the serial search's sleep sets)."""
        return s.successors(events, self._check_guards, Refused, self._restarts, asleep)

    # ------------------------------------------------------------ symmetry
    def symmetry_tasks(self) -> int:
        """The number of interchangeable writer tasks (:mod:`checker.symmetry`), or
        :class:`~checker.symmetry.SymmetryRefused` saying why renaming them would be unsound.

        Sound here: every task has the same configuration (``ProtocolConfig`` has no per-task field),
        task ``t`` reads split ``t`` and every split holds ``config.records`` records, so renaming the
        tasks renames their splits with them; every rule reads a task by its id only
        (:meth:`engine.System.permute_tasks` renames all the state's task-indexed parts). Refused for a
        subclass listing other actions (its events may single tasks out) and for a source whose splits
        differ from the tasks."""
        from .symmetry import SymmetryRefused

        if self._check_guards:
            raise SymmetryRefused(f"{type(self).__name__} lists its own actions; they may single out tasks")
        s = self.init_states()[0]
        if s.source.splits != self.config.parallelism or type(s.source).__name__ != "Source":
            raise SymmetryRefused("the source's splits are not one per task of equal length")
        return self.config.parallelism

    def permute(self, s, perm):
        """``s`` with task ``t`` renamed ``perm[t]`` (:meth:`engine.System.permute_tasks`); a
        :class:`Refused` dead end stays as it is (its own representative: sound, never merged)."""
        if isinstance(s, Refused):
            return s
        if all(t == i for i, t in enumerate(perm)) and _metadata_sorted(s):
            return s  # permute_tasks(identity) would equal s (its commit metadata already sorted)
        return s.permute_tasks(perm)

    def canonical_forms(self):
        """``(exact, compact)``: :meth:`engine.System.canonical_fingerprint` and its hash, the task-symmetric
        fingerprints :mod:`checker.symmetry` uses instead of renaming a state by every permutation (a
        :class:`Refused` dead end is its own); None for a subclass that renames or fingerprints states
        otherwise (its :meth:`permute` defines its orbits)."""
        cls = type(self)
        if (cls.permute is not SystemModel.permute or cls.fingerprint is not SystemModel.fingerprint
                or cls.fingerprint_hash is not SystemModel.fingerprint_hash):
            return None

        # (a Refused dead end answers with its own fingerprints; the compact one is asked per successor)
        return operator.methodcaller("canonical_fingerprint"), canonical_fingerprint_hash_of

    def format_action(self, ev) -> str:
        return str(ev)

    def format_state(self, s) -> str:
        return repr(s)

    # ------------------------------------------------------------ properties
    def properties(self):
        props = [Property.always("step", self.step_violations)]
        if self.drain_check == "every":
            props.append(Property.always("drained", self.check_drained))
        elif self.drain_check == "settled":
            props.append(Property.terminal("drained", self.check_drained))
        return props

    def settles(self, s, actions) -> bool:
        """Only fault events (or none) are enabled: once faults stop the run ends here."""
        for ev in actions:
            if ev.fault is None:
                return False
        return True

    def check_step(self, s):
        if isinstance(s, Refused):
            from model.invariants import Verdict

            return Verdict(f"model.refused:{s.error.rule}", False,
                           f"the enabled event {s.event} was refused: {s.error}")
        return self._inv.check_step(s)

    def step_violations(self, s):
        """The explorers' check of every new state: the verdicts of :meth:`check_step` that do not hold, None
        when all hold (:func:`engine.invariants.step_violations`; a subclass's own ``check_step`` is asked)."""
        if type(s) is Refused:
            return self.check_step(s)
        return self._step_violations(s)

    def check_drained(self, s):
        if isinstance(s, Refused):
            return None
        self.drains += 1
        t = s.clone()
        try:
            t.drain()
        except self._RuleViolation as exc:
            from model.invariants import Verdict

            return Verdict(f"model.refused:{exc.rule}", False, f"draining from this state failed: {exc}")
        return self._inv.check_drained(t)

    def trace_events(self, d: Discovery) -> list:
        """The events of a discovery's trace: the path, plus the drain's events when the
        violated invariant is only judged after draining."""
        events = list(d.actions)
        last = d.states[-1]
        if isinstance(last, Refused):
            return events
        if d.property in self._inv.DRAIN_INVARIANTS or d.property.startswith("model.refused"):
            events += _drain_events(last)
        return events


def _metadata_sorted(s) -> bool:
    for statuses in s.table.metadata.values():
        for a, b in zip(statuses, statuses[1:]):
            if b < a:
                return False
    return True


def _drain_events(state) -> list:
    """The events :meth:`System.drain` applies from ``state`` (on a clone), up to a refusal."""
    t = state.clone()
    events: list = []  # each event before it is applied: a refused event ends the trace, as it ended the drain
    try:
        t.drain(trace=events)
    except Exception:  # noqa: BLE001 - the refusal itself is what the trace must show
        pass
    return events
