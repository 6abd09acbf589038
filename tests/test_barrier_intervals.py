"""a2a3-complete-barriers keeps UB footprints as byte intervals (issue 9): each equals the byte set
the ISA's address formula enumerates (vector_isa.md §1.1: ``X + (r*repStride + b*blkStride)*32 + e*E``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pto_compiler.passes.a2a3_complete_barriers import _lanes_bytes, _overlaps, _union


def _bytes(intervals) -> set:
    return {b for lo, hi in intervals for b in range(lo, hi)}


def _formula(base, nrep, rep, blk, lanes, esize, last) -> set:
    epb = 32 // esize
    out = set()
    for r in range(nrep):
        for lane in (last if last is not None and r == nrep - 1 else lanes):
            at = base + (r * rep + (lane // epb) * blk) * 32 + (lane % epb) * esize
            out.update(range(at, at + esize))
    return out


@settings(max_examples=300, deadline=None)
@given(base=st.integers(0, 4096), nrep=st.integers(1, 9), rep=st.integers(0, 12), blk=st.integers(0, 3),
       esize=st.sampled_from([1, 2, 4, 8]), data=st.data())
def test_lane_intervals_are_the_formulas_bytes(base, nrep, rep, blk, esize, data):
    n = 256 // esize
    lanes = data.draw(st.sets(st.integers(0, n - 1), min_size=1))
    last = data.draw(st.none() | st.sets(st.integers(0, n - 1), min_size=1))
    got = _lanes_bytes(base, nrep, rep, blk, sorted(lanes), esize, None if last is None else sorted(last))
    assert _bytes(got) == _formula(base, nrep, rep, blk, sorted(lanes), esize, None if last is None else sorted(last))
    assert got == _union(got) and all(a[1] < b[0] for a, b in zip(got, got[1:]))  # disjoint, not touching


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 40)), max_size=8),
       st.integers(0, 240), st.integers(1, 40))
def test_overlap_is_a_shared_byte(spans, lo, width):
    pending = _union((a, a + w) for a, w in spans)
    assert _overlaps(pending, lo, lo + width) == bool(_bytes(pending) & set(range(lo, lo + width)))
