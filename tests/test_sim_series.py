"""``sim.metrics.Series``: O(1) recording, binned once at the end, against a straightforward reference.

The reference (:func:`reference_bins`) is exact (``fractions.Fraction`` arithmetic) and per interval: an
interval ``[t0, t1)`` with ``t1 > t0`` gives each bin ``[k * bin, (k + 1) * bin)`` the amount times the
fraction of the interval it overlaps; a zero-length (or reversed) interval and ``add_at(t)`` put the whole
amount into the bin of ``t`` (``int(t / bin)``); everything at or after the last bin's left edge goes into
the last bin. :func:`check_series` records a case in two halves and checks after each half (so ``values``
must be recomputed after more adds): values match the reference (within 1e-9 of the total amount), the
total is conserved (within 1e-9 relative), and ``per_second() == values / bin``.

Cases come from a Hypothesis strategy with explicit settings (replay a failure with the printed
``@reproduce_failure`` blob or ``pytest --hypothesis-seed=N``). Every check is shown able to fail: the
same checker, run by ``hypothesis.find`` over the same strategy, catches deliberately broken ``Series``
subclasses (an off-by-one bin, a stale cache, a dropped overflow, a wrong ``per_second``) and prints the
shrunk case.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from sim.metrics import Series

REL = 1e-9


# ------------------------------------------------------------------------------------- reference
def reference_bins(n: int, bin_s: float, ops) -> list[float]:
    """Exact per-bin amounts of ``ops`` (``("interval", t0, t1, a)`` / ``("at", t, a)``) over ``n`` bins."""
    out = [Fraction(0)] * n
    b = Fraction(bin_s)
    for op in ops:
        if op[0] == "at" or op[2] <= op[1]:
            t, a = op[1], op[-1]
            out[min(int(t / bin_s), n - 1)] += Fraction(a)
            continue
        _, t0, t1, a = op
        f0, f1, fa = Fraction(t0), Fraction(t1), Fraction(a)
        for k in range(min(math.floor(f0 / b), n - 1), min(math.floor(f1 / b), n - 1) + 1):
            lo = k * b
            hi = (k + 1) * b if k < n - 1 else max(f1, (k + 1) * b)  # the last bin is open to the right
            overlap = min(f1, hi) - max(f0, lo)
            if overlap > 0:
                out[k] += fa * overlap / (f1 - f0)
    return [float(x) for x in out]


def _record(s: Series, ops) -> None:
    for op in ops:
        if op[0] == "at":
            s.add_at(op[1], op[2])
        else:
            s.add_interval(op[1], op[2], op[3])


def check_series(cls, duration: float, bin_s: float, ops, split: int) -> None:
    """Record ``ops[:split]``, check; record the rest, check again (``values`` must follow the adds)."""
    s = cls(duration, bin_s)
    n = int(math.ceil(duration / bin_s)) + 1
    assert s.n == n and len(s.values) == n
    for new, part in ((ops[:split], ops[:split]), (ops[split:], ops)):
        _record(s, new)
        total = math.fsum(op[-1] for op in part)
        ref = reference_bins(n, bin_s, part)
        got = s.values
        tol = REL * max(total, 1.0)
        bad = [(k, got[k], ref[k]) for k in range(n) if abs(got[k] - ref[k]) > tol]
        assert not bad, (f"{len(part)} ops: bins differ from the reference (bin, got, want): {bad[:5]}; "
                         f"duration={duration}, bin={bin_s}")
        assert abs(math.fsum(got) - total) <= tol, f"total not conserved: sum(values)={math.fsum(got)} != {total}"
        assert np.array_equal(s.per_second(), s.values / bin_s), "per_second != values / bin"


# ------------------------------------------------------------------------------------- the cases
BINS = [0.25, 0.5, 1.0, 2.0, 0.1, 3.0]


@st.composite
def cases(draw):
    """``(duration, bin, ops, split)``: times on a quarter-bin grid (exact bin edges, the last bin's edge and
    beyond it) or anywhere in ``[0, (n + 1) * bin]``; interval lengths 0, negative (a reversed interval is a
    point at t0), on the grid, or from 1e-3 bin to several bins; non-negative amounts."""
    bin_s = draw(st.sampled_from(BINS), label="bin")
    duration = draw(st.one_of(st.integers(1, 30).map(lambda k: k * bin_s), st.floats(0.05, 30.0)), label="duration")
    n = int(math.ceil(duration / bin_s)) + 1
    horizon = (n + 1) * bin_s
    q = bin_s / 4
    time = st.one_of(st.integers(0, 4 * (n + 1)).map(lambda k: k * q), st.floats(0.0, horizon))
    length = st.one_of(st.just(0.0), st.floats(-2.0, -1e-3), st.integers(1, 16).map(lambda k: k * q),
                       st.floats(1e-3 * bin_s, 4 * bin_s))
    amount = st.one_of(st.integers(0, 1000).map(float), st.floats(0.0, 1000.0))
    interval = st.tuples(time, length, amount).map(lambda x: ("interval", x[0], x[0] + x[1], x[2]))
    op = st.one_of(interval, st.tuples(st.just("at"), time, amount))
    ops = draw(st.lists(op, max_size=40), label="ops")
    split = draw(st.integers(0, len(ops)), label="split")
    return duration, bin_s, ops, split


@settings(max_examples=300, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_series_matches_reference(case):
    check_series(Series, *case)


def test_edge_cases():
    """Hand-picked: exact edges, points on edges, the last bin taking everything after its left edge."""
    ops = [("at", 0.0, 1.0), ("at", 1.0, 2.0), ("at", 0.999, 4.0), ("interval", 2.0, 2.0, 8.0),
           ("interval", 3.5, 3.0, 16.0),                     # reversed: a point at 3.5
           ("interval", 0.5, 2.5, 10.0),                     # 2.5 + 5 + 2.5
           ("interval", 4.0, 9.0, 5.0),                      # bins 4 (1.0), 5 (4.0: last bin, n = 6)
           ("at", 5.0, 32.0), ("at", 100.0, 64.0)]
    s = Series(5.0, 1.0)
    _record(s, ops)
    assert s.values.tolist() == pytest.approx([1.0 + 4.0 + 2.5, 2.0 + 5.0, 8.0 + 2.5, 16.0, 1.0, 4.0 + 32.0 + 64.0],
                                              rel=1e-12)
    check_series(Series, 5.0, 1.0, ops, 4)
    empty = Series(5.0, 1.0)
    assert empty.values.tolist() == [0.0] * 6 and empty.per_second().tolist() == [0.0] * 6


def test_values_recomputed_after_more_adds():
    s = Series(10.0, 2.0)
    s.add_interval(0.0, 4.0, 4.0)
    assert s.values.tolist()[:3] == [2.0, 2.0, 0.0]
    s.add_at(5.0, 1.0)
    assert s.values.tolist()[:3] == [2.0, 2.0, 1.0]
    assert s.per_second().tolist()[:3] == [1.0, 1.0, 0.5]


# ------------------------------------------------------------------------------ the checks can fail
class _ShiftedSeries(Series):
    """Off by one bin: everything one bin later (the total is still conserved)."""

    def _bin(self):
        v = super()._bin()
        return np.concatenate([[0.0], v[:-2], [v[-2] + v[-1]]])


class _PointOffByOne(Series):
    """``add_at`` puts the amount into the bin after t's."""

    def add_at(self, t, amount):
        super().add_at(t + self.bin, amount)


class _StaleCache(Series):
    """Adds do not invalidate the binned values."""

    def add_interval(self, t0, t1, amount):
        cached = self._values
        super().add_interval(t0, t1, amount)
        self._values = cached


class _DropsOverflow(Series):
    """The pre-change behaviour: amounts past the end of the last bin are dropped, not put into it."""

    def add_interval(self, t0, t1, amount):
        end = self.n * self.bin
        if t0 >= end:
            return
        if t1 > end:
            amount, t1 = amount * (end - t0) / (t1 - t0), end
        super().add_interval(t0, t1, amount)


class _PerSecondTimesBin(Series):
    def per_second(self):
        return self.values * self.bin


_FIND = settings(max_examples=2000, database=None, derandomize=True, deadline=None,
                 phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))


def _fails(cls):
    def condition(case):
        try:
            check_series(cls, *case)
        except AssertionError:
            return True
        return False
    return condition


@pytest.mark.parametrize("cls", [_ShiftedSeries, _PointOffByOne, _StaleCache, _DropsOverflow, _PerSecondTimesBin],
                         ids=lambda c: c.__name__)
def test_broken_series_is_caught(cls):
    case = find(cases(), _fails(cls), settings=_FIND)
    with pytest.raises(AssertionError) as exc:
        check_series(cls, *case)
    print(f"{cls.__name__}: caught on {case}: {exc.value}")


# ------------------------------------------------------------------------------------- known issue
def test_tiny_interval_next_to_long_ones():
    # a cumulative sum of rates got bins 1..9 wrong here (0.73 + 1e15 - 1e15 rounds to 0.75)
    ops = [("interval", 0.0, 10.0, 7.3), ("interval", 0.5, 0.5 + 1e-12, 1000.0)]
    check_series(Series, 10.0, 1.0, ops, len(ops))


def test_times_before_zero_count_in_the_first_bin():
    s = Series(5.0, 1.0)
    s.add_interval(-1.0, 1.0, 2.0)   # half of it before 0
    s.add_at(-5.0, 3.0)
    s.add_interval(-3.0, 2.5, 5.5)   # rate 1: 4 in bin 0 (3 of them before 0), 1 in bin 1, 0.5 in bin 2
    assert s.values.tolist() == [2.0 + 3.0 + 4.0, 1.0, 0.5, 0.0, 0.0, 0.0]
