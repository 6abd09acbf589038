"""The hazard checker's footprints (runtime/hazards.py): a strided footprint holds exactly the units
of its runs, and two footprints overlap exactly when they share a unit, whichever way each is kept
(strided runs, other runs, NumPy arrays)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pto_compiler.runtime.hazards import Footprint

runs = st.tuples(st.integers(0, 300), st.integers(0, 12), st.integers(0, 40), st.integers(0, 60))
"""(first unit, runs, run length, stride)"""


def _units(lo, n, run, stride) -> set:
    return {lo + k * stride + u for k in range(n) for u in range(run)}


def _kept(fp: Footprint) -> set:
    return {u for a, b in zip(fp.los, fp.his) for u in range(int(a), int(b))}


@settings(max_examples=400, deadline=None)
@given(runs)
def test_a_strided_footprint_is_its_runs_units(r):
    fp = Footprint.strided(*r)
    assert _kept(fp) == _units(*r)
    assert all(a < b for a, b in zip(fp.los, fp.his)) and all(b < a for b, a in zip(fp.his, fp.los[1:]))
    assert fp.total() == len(_units(*r))


@settings(max_examples=600, deadline=None)
@given(runs, runs, st.sampled_from(["strided", "tuples", "arrays"]))
def test_footprints_overlap_when_they_share_a_unit(a, b, form):
    """Strided footprints of one stride take the arithmetic test; the same units kept as other
    runs (tuples, NumPy arrays) take the search over runs: all say what the unit sets say."""
    fa, fb = Footprint.strided(*a), Footprint.strided(*b)
    if form == "tuples":
        fb = Footprint.runs([b[0] + k * b[3] for k in range(b[1])], b[2])
    elif form == "arrays":
        fb = Footprint.of_starts(np.array([b[0] + k * b[3] for k in range(b[1])], np.int64), b[2])
    want = bool(_units(*a) & _units(*b))
    assert fa.overlaps(fb) == want
    assert fb.overlaps(fa) == want


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 300), st.integers(2, 12), st.integers(1, 30), st.integers(1, 30), st.integers(-40, 40))
def test_interleaved_runs_of_one_stride(lo, n, run, gap, shift):
    """The case the arithmetic test exists for: two operands' rows interleaved in one tile."""
    stride = run + gap
    a, b = (lo, n, run, stride), (max(0, lo + shift), n, run, stride)
    assert Footprint.strided(*a).overlaps(Footprint.strided(*b)) == bool(_units(*a) & _units(*b))
