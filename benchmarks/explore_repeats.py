"""Where the explorer's successors go, and how many of them partial-order reduction could avoid (issue #20).

A diagnostic with no target, not run by ``make bench``. Two measurements on the protocol model (``hudi-1.1``):

1. **Census**, by event kind, of the successors the symmetric breadth-first search makes (as
   :func:`checker.explorer.explore` with ``symmetry`` does): *repeat* -- equal (plain fingerprint hash) to a
   successor already made in the same level, dropped after its clone, apply and hash; *known* -- its canonical
   form was visited before; *new*. At the quick bound 62 % of the successors are repeats.
2. **Sleep-set ceilings**: the plain breadth-first search with sleep sets (Godefroid) under an *exact* independence
   oracle -- two events are taken as independent at a state when both orders close the diamond there (each stays
   enabled after the other and both reach equal fingerprints), which no static relation can beat -- and how many
   transitions it executes and prunes. ``non-inherited``: a successor's sleep set is the events executed before it
   at its parent that commute with it there, intersected over the successor's arrivals from the previous level;
   ``inherited``: the parent's sleep set passed on too (Godefroid's; no proof here for a breadth-first search with
   state caching, so a measurement only). Both print whether every state was still visited.

The non-inherited form is sound for a breadth-first search with state caching (and symmetry, sleep sets carried
in canonical task order), with independence needed only at the parent where both events run: claim P(d), for every
state q expanded at level d and every event t enabled there, t(q) is visited at a level <= d+1. Strong induction on
d (level 0: empty sleep sets). If t sleeps at q, take an arrival q = c(p), p at level d-1: t ran at p before c and
commutes with c there, so r = t(p) is visited at a level <= d and c(r) = t(q). If r is new at level d, (p, t) is one
of its arrivals and c came after t at p, so c is not in r's sleep set (an intersection) and runs there; otherwise
P(level(r)) gives c(r). So the visited set is closed under successors, every reachable state is visited at its
distance (verdicts, counts of states and shortest counterexamples unchanged). A prototype with a footprint-proven
static relation (an ingest against any other task's writer events, checkpoints, clean and acks; a lost ack against
the writer events, clean and other acks) pruned 5 % of the quick bound's transitions and ran slower.

Run: ``python benchmarks/explore_repeats.py [--tiny]`` (the quick bound of ``bench_protocol.py``: about 3 CPU
minutes; ``--tiny``: 2 records per split, seconds).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUICK_BOUND = dict(parallelism=2, max_checkpoints=2, max_crashes=1, faults=frozenset({"lost-ack", "task-crash"}))
TINY_BOUND = dict(QUICK_BOUND, records=2)


def _model(bound: dict):
    from checker import SystemModel
    from model.protocol import variant

    return SystemModel(variant("hudi-1.1", **bound))


def census(bound: dict) -> tuple[dict, int]:
    """``({kind: Counter(total, repeat, known, new)}, canonical states)`` of the symmetric search."""
    from checker.explorer import _of_representative
    from checker.symmetry import representative_function

    m = _model(bound)
    canonical = _of_representative(m.fingerprint_hash, representative_function(m))
    s0 = m.init_states()[0]
    seen = {canonical(s0)}
    frontier = [s0]
    kinds: dict = {}
    while frontier:
        nxt, reached = [], set()
        for s in frontier:
            for ev in m.actions(s):
                t = m.next_state(s, ev)
                c = kinds.setdefault(ev.kind, Counter())
                c["total"] += 1
                h = m.fingerprint_hash(t)
                if h in reached:
                    c["repeat"] += 1
                    continue
                reached.add(h)
                f = canonical(t)
                if f in seen:
                    c["known"] += 1
                    continue
                seen.add(f)
                c["new"] += 1
                nxt.append(t)
        frontier = nxt
    return kinds, len(seen)


def _is_state(s) -> bool:
    return hasattr(s, "writers")  # (a Refused dead end is not)


def sleep_ceiling(bound: dict, inherit: bool) -> dict:
    """The plain search with sleep sets under the exact diamond oracle: states, executed and pruned transitions."""
    m = _model(bound)

    def diamond(p, u, su, c, sc) -> bool:
        if not (_is_state(su) and _is_state(sc)):
            return False
        if c not in su.enabled_events() or u not in sc.enabled_events():
            return False
        return m.next_state(su, c).fingerprint_hash() == m.next_state(sc, u).fingerprint_hash()

    def fp(s) -> int:
        return s.fingerprint_hash() if _is_state(s) else hash(s.fingerprint())

    s0 = m.init_states()[0]
    seen = {fp(s0)}
    frontier = [(s0, frozenset())]
    executed = pruned = 0
    while frontier:
        level: dict = {}
        for p, asleep in frontier:
            acts = p.enabled_events()
            done = []
            for a in acts:
                if a in asleep:
                    pruned += 1
                    continue
                q = m.next_state(p, a)
                executed += 1
                mine = {u for u, su in done if diamond(p, u, su, a, q)}
                if inherit:
                    mine |= {u for u in asleep if u in acts and diamond(p, u, m.next_state(p, u), a, q)}
                if _is_state(q):
                    done.append((a, q))
                h = fp(q)
                if h in level:
                    level[h][1] &= mine
                elif h not in seen:
                    level[h] = [q, mine]
        seen.update(level)
        frontier = [(q, frozenset(z)) for q, z in level.values()]
    return {"states": len(seen), "executed": executed, "pruned": pruned}


def plain_states(bound: dict) -> tuple[int, int]:
    from checker import explore

    res = explore(_model(bound), compact=True)
    return res.states, res.transitions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="2 records per split (seconds instead of minutes)")
    args = ap.parse_args(argv)
    bound = TINY_BOUND if args.tiny else QUICK_BOUND
    gc.disable()
    c0 = time.process_time()
    kinds, states = census(bound)
    tot = Counter()
    for c in kinds.values():
        tot.update(c)
    print(f"census of the symmetric search, hudi-1.1 {bound}: {states:,} canonical states, {tot['total']:,} successors")
    print(f"  {'event':22s} {'successors':>10s} {'repeat':>9s} {'known':>9s} {'new':>9s}")
    for kind, c in sorted(kinds.items(), key=lambda kv: -kv[1]["total"]):
        print(f"  {kind:22s} {c['total']:>10,} {c['repeat']:>9,} {c['known']:>9,} {c['new']:>9,}")
    print(f"  {'all':22s} {tot['total']:>10,} {tot['repeat']:>9,} {tot['known']:>9,} {tot['new']:>9,} "
          f"({tot['repeat'] / max(tot['total'], 1):.0%} repeats)")
    states, transitions = plain_states(bound)
    print(f"plain search: {states:,} states, {transitions:,} transitions")
    for inherit in (False, True):
        r = sleep_ceiling(bound, inherit)
        print(f"sleep sets, exact diamond oracle, {'inherited' if inherit else 'non-inherited'}: {r['executed']:,} "
              f"transitions executed, {r['pruned']:,} pruned ({r['pruned'] / max(transitions, 1):.0%} of the plain "
              f"search's); {r['states']:,} states ({'every state visited' if r['states'] == states else 'STATES LOST'})")
    print(f"({time.process_time() - c0:.0f} CPU-s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
