"""The refinement check: the engine (:class:`engine.System`) implements the spec (:mod:`model.protocol.spec`).

:class:`Lockstep` runs one spec state and one engine System side by side on the same events and compares
them after every event (:meth:`Lockstep.compare`):

* the enabled events: ``set(spec.enabled(s)) == set(system.enabled_events())``, and listed in the same order;
* every guard: for every candidate event -- every kind x every task (one out of range each side) x every
  checkpoint id up to the next one, ``stop-faults`` included -- ``system.is_enabled(ev) is None`` iff the
  spec's ``guard(s, ev) is None``;
* the engine's one-query guards: ``system.task_step(t, at_barrier)`` and ``system.writer_status(t)`` agree
  with the spec's guards of request-instant / flush / snapshot-task;
* the state: ``engine.refinement.abstract(system) == spec.view(s)``;
* every invariant's verdict (``holds``) after each step, and after a drain the drained verdicts too;
* the engine's cached fingerprint hash equals one computed from scratch (a stale hash cache is caught).

Events the spec refuses must be refused by the engine with the same rule. Every difference is reported as a
sentence naming what differed, followed by the event path (replay it with :func:`check_refines`).
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from engine import System
from engine import invariants as engine_invariants
from engine.refinement import abstract
from model.errors import RuleViolation
from model.invariants import protocol as spec_invariants
from model.protocol import events as E
from model.protocol import spec
from model.protocol.config import ProtocolConfig

#: The pseudo-event that drains both machines (a path may contain it).
DRAIN = "drain"


def all_candidates(cfg: ProtocolConfig, next_checkpoint: int) -> list[E.Event]:
    """Every event worth asking a guard about: each kind, each task in ``[-1, P]`` (two that do not exist),
    each checkpoint id in ``[0, next_checkpoint]``."""
    tasks = range(-1, cfg.parallelism + 1)
    ckps = range(0, next_checkpoint + 1)
    out: list[E.Event] = []
    for kind, cls in E.EVENT_TYPES.items():
        if kind in ("ingest", "request-instant", "flush", "snapshot-task", "instant-timeout", "crash-task",
                    "deliver-event", "lose-event", "request-timeout", "request-expired"):
            out += [cls(t) for t in tasks]
        elif kind in ("deliver-ack", "lose-ack"):
            out += [cls(n) for n in ckps]
        else:
            out.append(cls())
    return out


def fresh_fingerprint_hash(system: System) -> int:
    """``System.fingerprint_hash()`` computed without any cached part (the table's, the coordinator's, the
    writers', the checkpoints'): what the cached value must equal."""
    t = system.table
    table_fp = (hash(t.timeline.state_signature()), hash(tuple(sorted(t.metadata.items()))))  # (parts by their hashes)
    coord = system.coordinator
    # (each buffer entry, the pending checkpoint's coordinator state and each of its tasks' snapshots by its hash,
    # and the checkpoints by theirs, as System keeps them)
    coord_key = (tuple((k, hash(e.frozen())) for k, e in sorted(coord.buffers.items())), coord.instant,
                 coord.max_acked, tuple(sorted(coord.assigned.items())))
    p = system.pending_checkpoint
    pending = None if p is None else hash((p.id, hash(p.coordinator_state), tuple(hash(x) for x in p.tasks)))
    # (each task's key hash, as System keeps them: its interval and state hashed together)
    writers = hash(tuple(hash(w.compact_key(hash((w.interval, w.state)))) for w in system.writers))
    return hash(system._fingerprint_fields(hash(table_fp), hash(coord_key), writers,
                                           hash((pending, hash(system.last_completed)))))


def _fmt(events) -> str:
    return "[" + ", ".join(str(e) for e in events) + "]"


class Lockstep:
    """A spec state and an engine System run on the same events (see the module docstring)."""

    def __init__(self, cfg: ProtocolConfig, seed: int = 0, make_system: Callable[..., System] = System):
        self.cfg, self.seed = cfg, seed
        self.spec = spec.init(cfg, seed)
        self.system = make_system(cfg, seed=seed)
        self.path: list = []

    # ------------------------------------------------------------------------ reporting
    def where(self) -> str:
        return (f"config {self.cfg.to_dict()}, seed {self.seed}, after {len(self.path)} event(s): "
                f"path {_fmt(self.path)}")

    def _differs(self, what: str) -> str:
        return f"{what}\n  at {self.where()}\n  spec state:\n{spec.describe(self.spec)}\n  engine state:\n" \
               f"{self.system.describe()}"

    # ------------------------------------------------------------------------- stepping
    def apply(self, ev: E.Event) -> str | None:
        """Apply ``ev`` to both (refused by both when the spec refuses it); the first difference or None."""
        self.path.append(ev)
        try:
            new = spec.step(self.spec, ev)
            spec_error = None
        except RuleViolation as exc:
            new, spec_error = self.spec, exc
        try:
            self.system.apply(ev)
            engine_error = None
        except RuleViolation as exc:
            engine_error = exc
        if (spec_error is None) != (engine_error is None):
            return self._differs(f"{ev}: the spec {'refused' if spec_error else 'applied'} it "
                                 f"({spec_error}) but the engine {'refused' if engine_error else 'applied'} it "
                                 f"({engine_error})")
        if spec_error is not None and spec_error.rule != engine_error.rule:
            return self._differs(f"{ev}: refused with rule {spec_error.rule} by the spec, {engine_error.rule} "
                                 f"by the engine")
        self.spec = new
        return self.compare()

    def drain(self) -> str | None:
        """Drain both; compare the drain's events, then the states and the drained verdicts."""
        self.path.append(DRAIN)
        self.spec, spec_events = spec.drain(self.spec)
        engine_events = self.system.drain()
        if spec_events != engine_events:
            return self._differs(f"drain: the spec ran {_fmt(spec_events)}, the engine {_fmt(engine_events)}")
        return self.compare(drained=True)

    def run(self, events) -> str | None:
        for ev in events:
            why = self.drain() if ev == DRAIN else self.apply(ev)
            if why is not None:
                return why
        return None

    # -------------------------------------------------------------------------- compare
    def compare(self, drained: bool = False) -> str | None:
        """The first difference between the spec state and the engine System, or None."""
        s, system = self.spec, self.system
        spec_enabled = spec.enabled(s)
        engine_enabled = system.enabled_events()
        if set(spec_enabled) != set(engine_enabled):
            only_spec = [str(e) for e in spec_enabled if e not in set(engine_enabled)]
            only_engine = [str(e) for e in engine_enabled if e not in set(spec_enabled)]
            return self._differs(f"enabled events differ: only the spec enables {only_spec}, only the engine "
                                 f"enables {only_engine}")
        if spec_enabled != engine_enabled:
            return self._differs(f"enabled events listed in another order: spec {_fmt(spec_enabled)}, engine "
                                 f"{_fmt(engine_enabled)}")
        if len(engine_enabled) != len(set(engine_enabled)):
            return self._differs(f"the engine lists an event twice: {_fmt(engine_enabled)}")
        for ev in all_candidates(self.cfg, max(s.next_checkpoint, system.next_checkpoint)):
            g_spec, g_engine = spec.guard(s, ev), system.is_enabled(ev)
            if (g_spec is None) != (g_engine is None):
                return self._differs(f"guard of {ev} differs: spec says {g_spec or 'enabled'}, "
                                     f"engine says {g_engine or 'enabled'}")
        for t in range(self.cfg.parallelism):
            if system.writer_status(t) != spec.writer_status(s, t):
                return self._differs(f"writer_status({t}) differs: spec {spec.writer_status(s, t)!r}, engine "
                                     f"{system.writer_status(t)!r}")
            for at_barrier in (True, False):
                want, got = spec.task_step(s, t, at_barrier), system.task_step(t, at_barrier)
                if want != got:
                    return self._differs(f"task_step({t}, at_barrier={at_barrier}) differs: the spec's guards say "
                                         f"{want!r}, the engine says {got!r}")
        spec_view, engine_view = spec.view(s), abstract(system)
        if spec_view != engine_view:
            return self._differs(f"abstract state differs: {view_difference(spec_view, engine_view)}")
        why = _compare_verdicts("step", spec_invariants.check_step(s), engine_invariants.check_step(system))
        if why is None and drained:
            why = _compare_verdicts("drained", spec_invariants.check_drained(s), engine_invariants.check_drained(system))
        if why is not None:
            return self._differs(why)
        cached, fresh = system.fingerprint_hash(), fresh_fingerprint_hash(system)
        if cached != fresh:
            return self._differs(f"stale fingerprint hash: the engine's cached fingerprint_hash() {cached} differs "
                                 f"from the hash recomputed from scratch {fresh}")
        return None


def view_difference(a, b) -> str:
    """Which fields of two views (spec, engine) differ, with both values (nested one level)."""
    parts = []
    for name in a.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if x == y:
            continue
        if hasattr(x, "__dataclass_fields__") and type(x) is type(y):
            for sub in x.__dataclass_fields__:
                if getattr(x, sub) != getattr(y, sub):
                    parts.append(f"{name}.{sub}: spec {getattr(x, sub)!r} != engine {getattr(y, sub)!r}")
        elif isinstance(x, tuple) and isinstance(y, tuple) and len(x) == len(y):
            for i, (u, v) in enumerate(zip(x, y)):
                if u != v:
                    parts.append(f"{name}[{i}]: spec {u!r} != engine {v!r}")
        else:
            parts.append(f"{name}: spec {x!r} != engine {y!r}")
    return "; ".join(parts)


def _compare_verdicts(group: str, spec_verdicts, engine_verdicts) -> str | None:
    if [v.invariant for v in spec_verdicts] != [v.invariant for v in engine_verdicts]:
        return (f"{group} invariants differ: spec checks {[v.invariant for v in spec_verdicts]}, engine "
                f"{[v.invariant for v in engine_verdicts]}")
    for a, b in zip(spec_verdicts, engine_verdicts):
        if a.holds != b.holds:
            return f"verdict of {a.invariant} differs: spec {a}; engine {b}"
    return None


def check_refines(cfg: ProtocolConfig, events, seed: int = 0,
                  make_system: Callable[..., System] = System) -> str | None:
    """Run ``events`` (events or :data:`DRAIN`) through spec and engine in lockstep, comparing after the
    start and after every event: None when they agree throughout, else what differed and the path."""
    run = Lockstep(cfg, seed, make_system)
    why = run.compare()
    return why if why is not None else run.run(events)


# --------------------------------------------------------------------------------- exhaustive search

def fingerprint_core(system: System) -> tuple:
    """The engine's fingerprint without its monitors (the table's last committed key, the coordinator's
    max_acked / assigned, the highest ack, the rules observed): a function of the abstract state."""
    fp = system.fingerprint()
    return (fp[0], fp[1], fp[3][:2], fp[4], fp[5], fp[6], fp[7], fp[9], fp[10], fp[12])


def fork(run: Lockstep) -> Lockstep:
    """A copy of a lockstep run: the spec state is a value (shared), the engine System is cloned."""
    other = Lockstep.__new__(Lockstep)
    other.cfg, other.seed, other.spec = run.cfg, run.seed, run.spec
    other.system = run.system.clone()
    other.path = list(run.path)
    return other


def explore_refinement(cfg: ProtocolConfig, max_states: int, *, drain_every: bool = True, seed: int = 0,
                       make_system: Callable[..., System] = System) -> tuple[int, str | None]:
    """Breadth-first over the spec's reachable states (deduplicated by spec view + engine fingerprint), each
    compared with the engine reached along the same path (:meth:`Lockstep.compare`) and, with
    ``drain_every``, drained (both drains compared). Equal abstract states must give equal
    :func:`fingerprint_core`. Returns the number of states compared and the first difference (None: none)."""
    start = Lockstep(cfg, seed, make_system)
    why = start.compare()
    if why is not None:
        return 0, why
    seen = {(spec.view(start.spec), start.system.fingerprint())}
    core_of_view: dict = {}
    queue = deque([start])
    compared = 0
    while queue and compared < max_states:
        run = queue.popleft()
        compared += 1
        core = fingerprint_core(run.system)
        if core_of_view.setdefault(spec.view(run.spec), core) != core:
            return compared, run._differs("equal abstract states, different engine fingerprints")
        if drain_every:
            why = fork(run).drain()
            if why is not None:
                return compared, why
        for ev in spec.enabled(run.spec):
            nxt = fork(run)
            why = nxt.apply(ev)
            if why is not None:
                return compared, why
            key = (spec.view(nxt.spec), nxt.system.fingerprint())
            if key not in seen:
                seen.add(key)
                queue.append(nxt)
    return compared, None
