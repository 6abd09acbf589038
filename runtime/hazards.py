"""Hazard checking by footprint intervals (the executor's race detector, runtime/executor.py).

The rule (executor.py's docstring) is per unit (UB byte, GM element): an access races with the
unit's last writer (RAW, WAW) or, when it writes, with the unit's last reader of another pipe
since that write (WAR), when that earlier access is not known complete by the accessing pipe.
Instead of shadow arrays updated per unit, every access is kept as a *record*: its token, pipe
and footprint (sorted disjoint unit intervals).  Vector clocks only grow, so a record that pipe
``p`` already orders stays ordered: an access of ``p`` can only race with records of pipe ``q``
whose epoch is past ``known[p][q]`` (a suffix of ``q``'s records).  When none of those overlaps
the access (the usual case) the access is only recorded.  Otherwise the records from the first
token ``p`` does not order onward are painted over the access's hull, in issue order, to rebuild
exactly the last writer and readers of its units (a record ``p`` orders can hide an older one,
so all are painted), and the per-unit rule runs there: same findings as a shadow per unit.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import repeat
from operator import attrgetter, lt

import numpy as np


class Footprint:
    """Sorted disjoint unit intervals ``[los[i], his[i])`` (tuples or ``range`` s of Python ints, or
    NumPy arrays) and their hull ``[lo, hi)``; ``stride``: when not 0, the intervals are runs of one
    length that many units apart (:meth:`strided`, kept as ranges), so two of the same stride
    overlap by arithmetic, not by a search over their runs."""
    __slots__ = ("los", "his", "lo", "hi", "stride")

    def __init__(self, los, his):
        self.los, self.his = los, his
        self.lo = int(los[0]) if len(los) else 0
        self.hi = int(his[-1]) if len(his) else 0
        self.stride = 0

    @classmethod
    def strided(cls, lo: int, n: int, run: int, stride: int) -> "Footprint":
        """``n`` runs of ``run`` units, the k-th from ``lo + k*stride`` (``stride`` >= 0)."""
        if n <= 0 or run <= 0:
            return cls((), ())
        if n == 1 or stride <= run:
            return cls.span(lo, lo + (n - 1) * stride + run)
        end = lo + n * stride
        fp = cls(range(lo, end, stride), range(lo + run, end + run, stride))
        fp.stride = stride
        return fp

    @classmethod
    def span(cls, lo: int, hi: int) -> "Footprint":
        return cls((lo,), (hi,)) if hi > lo else cls((), ())

    @classmethod
    def runs(cls, starts: list, length: int) -> "Footprint":
        """The union of ``[s, s + length)`` over the Python ints ``starts`` (any order, overlaps
        allowed), kept as tuples: an instruction's few hundred runs cost less in Python than a
        NumPy sort, and far less in a fresh process, where each NumPy path runs for the first time."""
        if length <= 0 or not starts:
            return cls((), ())
        starts.sort()
        los, his = [starts[0]], [starts[0] + length]
        for s in starts:
            if s <= his[-1]:
                his[-1] = s + length
            else:
                los.append(s)
                his.append(s + length)
        return cls(tuple(los), tuple(his))

    @classmethod
    def of_starts(cls, starts: np.ndarray, length: int) -> "Footprint":
        """The union of ``[s, s + length)`` over ``starts`` (any order, overlaps allowed)."""
        if length <= 0 or starts.size == 0:
            return cls((), ())
        s = np.sort(starts.reshape(-1))  # equal starts merge below
        if s.size == 1:
            return cls.span(int(s[0]), int(s[0]) + length)
        e = s + length
        brk = np.flatnonzero(s[1:] > e[:-1])  # a gap after interval brk
        los = np.concatenate(([s[0]], s[brk + 1]))
        his = np.concatenate((e[brk], [e[-1]]))
        if los.size == 1:
            return cls.span(int(los[0]), int(his[0]))
        return cls(los, his)

    @classmethod
    def of_ranges(cls, los: np.ndarray, his: np.ndarray) -> "Footprint":
        """The union of ``[los[i], his[i])`` (any order, overlaps allowed)."""
        keep = his > los
        los, his = los[keep], his[keep]
        if los.size == 0:
            return cls((), ())
        o = np.argsort(los, kind="stable")
        los, his = los[o], np.maximum.accumulate(his[o])
        brk = np.flatnonzero(los[1:] > his[:-1])
        los, his = np.concatenate((los[:1], los[brk + 1])), np.concatenate((his[brk], his[-1:]))
        if los.size == 1:
            return cls.span(int(los[0]), int(his[0]))
        return cls(los, his)

    @classmethod
    def of_mask(cls, mask: np.ndarray) -> "Footprint":
        """The units where the bool array ``mask`` is set."""
        first = int(mask.argmax())
        if not mask[first]:
            return cls((), ())
        last = mask.size - int(mask[::-1].argmax())
        d = np.diff(mask[first:last].view(np.int8), prepend=np.int8(0), append=np.int8(0))
        los, his = np.flatnonzero(d == 1) + first, np.flatnonzero(d == -1) + first
        if los.size == 1:
            return cls.span(int(los[0]), int(his[0]))
        return cls(los, his)

    @classmethod
    def of_units(cls, units: np.ndarray, width: int = 1) -> "Footprint":
        """Units ``[u*width, u*width + width)`` for every ``u`` in ``units``."""
        return cls.of_starts(np.asarray(units, np.int64).reshape(-1) * width, width)

    def total(self) -> int:
        """How many units."""
        if self.stride:
            return len(self.los) * (self.his[0] - self.lo)
        if isinstance(self.los, tuple):
            return sum(self.his) - sum(self.los)
        return int((self.his - self.los).sum())

    @property
    def empty(self) -> bool:
        return self.hi <= self.lo

    def overlaps(self, other: "Footprint") -> bool:
        if other.hi <= self.lo or other.lo >= self.hi or self.empty or other.empty:
            return False
        if self.stride and self.stride == other.stride:
            return self._strided_overlap(other)
        if len(self.los) == 1 or len(other.los) == 1:
            a, b = (self, other) if len(self.los) == 1 else (other, self)
            i = bisect_right(b.his, a.lo) if isinstance(b.his, _PY_RUNS) else \
                int(np.searchsorted(b.his, a.lo, side="right"))
            return i < len(b.los) and b.los[i] < a.hi
        if isinstance(self.los, _PY_RUNS) and isinstance(other.los, _PY_RUNS):
            # per interval of self, the first of other's ending after its start begins before its end
            # (map over C functions: a Python loop costs several times more in a fresh process)
            first = map(bisect_right, repeat(other.his), self.los)
            return any(map(lt, map((*other.los, self.hi).__getitem__, first), self.his))
        i = np.searchsorted(other.his, self.los, side="right")
        ok = i < len(other.los)
        return bool((np.asarray(other.los)[i[ok]] < np.asarray(self.his)[ok]).any())

    def _strided_overlap(self, other: "Footprint") -> bool:
        """Do runs ``i`` of ``self`` and ``j`` of ``other`` (both :meth:`strided`, one stride ``s``)
        overlap: with ``k = j - i`` and ``d`` the distance of their first runs, ``-run_o < d + k*s
        < run_s``, for some ``k`` that pairs a run of each."""
        s, d = self.stride, other.lo - self.lo
        ra, rb = self.his[0] - self.lo, other.his[0] - other.lo
        na, nb = len(self.los), len(other.los)
        for k in range(-((d + rb - 1) // s), (ra - 1 - d) // s + 1):  # ceil((1 - rb - d)/s) ..
            if max(0, -k) < min(na, nb - k):
                return True
        return False

    def units(self) -> np.ndarray:
        """Every unit, ascending."""
        if len(self.los) == 1:
            return np.arange(self.lo, self.hi, dtype=np.int64)
        los, his = np.asarray(self.los, np.int64), np.asarray(self.his, np.int64)
        n = his - los
        start = np.repeat(los - np.concatenate(([0], np.cumsum(n)[:-1])), n)
        return start + np.arange(int(n.sum()), dtype=np.int64)


_PY_RUNS = (tuple, range)
"""The Python forms of ``Footprint.los``/``his`` (searched with bisect, not NumPy)."""


class Record:
    """One checked issue of an instruction (its *token*, numbered in issue order): its epoch on its
    pipe, its block, the issue (the executor's ``_Dyn``, for messages) and its non-empty accesses
    (objects with ``space``, ``write`` and ``fp``; reads first), added as they are checked."""
    __slots__ = ("tok", "epoch", "pipe", "block", "d", "accs")

    def __init__(self, tok, epoch, pipe, block, d, accs):
        self.tok, self.epoch, self.pipe, self.block, self.d, self.accs = tok, epoch, pipe, block, d, accs


_EPOCH = attrgetter("epoch")


_NONE = Record(0, -1, 0, 0, None, ())
"""Token 0: "never accessed", ordered before everything."""


class HazardLog:
    """Every checked issue of a run: ``toks``, every token's :class:`Record` by number (Python lists:
    NumPy's first call of each path costs more than a whole short run's Python; only a run that
    may race turns them into arrays, executor._conflicts); ``by_pipe``, the current block's per
    pipe with records (in order of their first) in issue order (see the module docstring)."""

    def __init__(self, npipes: int):
        self.npipes = npipes
        self.toks = [_NONE]
        self.reset()

    def reset(self):
        """A new block (fresh on-chip memories): its records only (tokens go on)."""
        self.by_pipe: dict[int, list[Record]] = {}

    def new(self, pipe: int, epoch: int, block: int, d) -> Record:
        """A new token of ``pipe`` at ``epoch`` for the issue ``d``: its record, accesses to come."""
        rec = Record(len(self.toks), epoch, pipe, block, d, [])
        self.toks.append(rec)
        recs = self.by_pipe.get(pipe)
        if recs is None:
            recs = self.by_pipe[pipe] = []
        recs.append(rec)
        return rec

    def unordered(self, krow) -> list[Record]:
        """The records of every pipe whose epoch is past what ``krow`` (a pipe's clock) knows."""
        out = []
        for q, recs in self.by_pipe.items():
            if recs[-1].epoch > krow[q]:
                out.extend(recs[bisect_right(recs, krow[q], key=_EPOCH):])
        return out

    def first_unordered(self, krow, none: int) -> int:
        """The smallest token that a pipe of clock ``krow`` is not ordered after (``none`` if every
        one is): a pipe's records have ascending epochs, so the ones ``krow`` orders are a prefix.
        (Only this block's: an earlier block's token has no record here to paint, and a smaller
        bound than the true one only paints ordered records more.)"""
        first = none
        for q, recs in self.by_pipe.items():
            i = bisect_right(recs, krow[q], key=_EPOCH)
            if i < len(recs) and recs[i].tok < first:
                first = recs[i].tok
        return first

    def may_race(self, cands: list[Record], space: str, write: bool, p: int, fp: Footprint) -> bool:
        for rec in cands:
            for r in rec.accs:
                if r.space == space and (r.write or (write and rec.pipe != p)) and r.fp.overlaps(fp):
                    return True
        return False

    def paint(self, first_tok: int, space: str, fp: Footprint):
        """(last writer, last reader per pipe) of the units of ``fp``'s hull as the records from
        token ``first_tok`` on leave them (0: no such record)."""
        lo, hi = fp.lo, fp.hi
        w = np.zeros(hi - lo, np.int64)
        r = np.zeros((self.npipes, hi - lo), np.int64)
        for rec in self.toks[first_tok:]:
            for acc in rec.accs:
                f = acc.fp
                if acc.space != space or f.hi <= lo or f.lo >= hi:
                    continue
                for a, b in zip(f.los, f.his):
                    a, b = max(int(a), lo) - lo, min(int(b), hi) - lo
                    if b <= a:
                        continue
                    if acc.write:
                        w[a:b] = rec.tok
                        r[:, a:b] = 0
                    else:
                        r[rec.pipe, a:b] = rec.tok
        return w, r
