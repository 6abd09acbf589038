"""``a2a3-complete-barriers``: the same-pipe ``pipe_barrier`` s a lowered module needs, and no others.

pto-insert-sync orders the pipes against each other; within one pipe, an instruction that reads
or overwrites UB (32 B blocks) or GM bytes that an earlier instruction of the same pipe wrote
since the last barrier needs a ``pipe_barrier`` in between, and a barrier that orders nothing
is dropped (loops are analysed trip by trip).  The analysis (:func:`complete_barriers`) runs on the function's listing; this pass carries its verdict back
into the IR: an ``a2a3.pipe_barrier`` before each instruction that needs one, and the barriers
that order nothing erased.  The barriers do not depend on the values of kernel scalars, so one
module serves every input.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, NameLoc
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from pto_compiler.dialects import a2a3
from pto_compiler.dialects.a2a3 import CUBE_FAMILIES
from pto_compiler.passes import lower_a2a3 as L
from pto_compiler.passes.lower_a2a3 import FULL, M64, _is_int, ceil_div
from pto_compiler.runtime.program import (
    DTYPE_SIZES, Decoder, GmAddr, If, Instr, Loop, Program, While, depends, run_steps, scalar,
)
from pto_compiler.targets import A2A3, Target, lookup_target

__all__ = ["CompleteBarriersPass", "complete_barriers", "complete_function"]


def complete_function(fn, target: Target = A2A3, barrier_pass: type | None = None,
                      scalars: dict | None = None) -> Program:
    """Completes the barriers of one lowered function in place (``barrier_pass``: as in
    :func:`complete_barriers`); returns its program, as runtime/program.py decodes the result
    (``scalars`` size the GM arguments whose views depend on them)."""
    low = Decoder(fn, target, scalars).run()
    prog = low.program()
    barriers = [n for n, _ in prog.walk() if isinstance(n, Instr) and n.opcode == "pipe_barrier"]
    complete_barriers(prog, {}, barrier_pass)
    kept: set = set()
    barrier = a2a3.OPS["pipe_barrier"]

    def carry_back(body):
        for i, n in enumerate(body):
            if isinstance(n, Loop):
                carry_back(n.body)
            elif isinstance(n, While):
                carry_back(n.cond_body)
                carry_back(n.body)
            elif isinstance(n, If):
                carry_back(n.then_body)
                carry_back(n.else_body)
            elif id(n) in low.op_of:
                kept.add(id(n))
            elif n.opcode == "pipe_barrier":  # a new one, before the instruction it orders
                before = low.op_of[id(body[i + 1])]
                op = a2a3.new_op(barrier, (), {"pipe": L._word(n.args["pipe"])}, None, _location(before, n.origin))
                Rewriter.insert_op(op, InsertPoint.before(before))

    carry_back(prog.body)
    for n in barriers:
        if id(n) not in kept:
            Rewriter.erase_op(low.op_of[id(n)])
    return prog


def _location(op, origin):
    """The location of a barrier inserted before ``op`` for ``origin`` (``op``'s own, the tile op's
    NameLoc of the lowering, when it says the same)."""
    loc = op.location
    if isinstance(loc, NameLoc) and isinstance(loc.location, FileLineColLoc) and loc.desc.data == origin.op:
        return loc
    return L.location(origin)


# --------------------------------------------------------------------------------------------
# Same-pipe ordering: insert the pipe barriers a program needs, drop the ones it does not
# --------------------------------------------------------------------------------------------

class _BarrierState:
    """Per pipe: the UB bytes (byte intervals, :func:`_union` form) and GM byte ranges written since
    the pipe's last barrier.

    A GM range is ``(arg, lo, hi, a, dmin, dmax, loop)``: bytes ``[lo, hi)`` when ``a`` is 0,
    else the family ``[lo + a*j, hi + a*j)`` written on trips ``j = T - d``, ``d`` in
    ``[dmin, dmax]``, of the summarised ``loop`` now on trip ``T`` (:meth:`_BarrierPass.summarise`)."""

    def __init__(self, nbytes: int):
        self.nbytes = nbytes
        self.ub = {p: [] for p in ("V", "MTE2", "MTE3")}
        self.gm = {p: {} for p in ("V", "MTE2", "MTE3")}  # ordered set of ranges
        self.any = {p: False for p in ("V", "MTE2", "MTE3")}
        self.mask = FULL

    def copy(self):
        n = _BarrierState.__new__(_BarrierState)
        n.nbytes = self.nbytes
        n.ub = {p: list(a) for p, a in self.ub.items()}
        n.gm = {p: dict(a) for p, a in self.gm.items()}
        n.any = dict(self.any)
        n.mask = self.mask
        return n

    def merge(self, other):
        for p in self.ub:
            self.ub[p] = _union(self.ub[p] + other.ub[p])
            self.gm[p].update(other.gm[p])
            self.any[p] = self.any[p] or other.any[p]
        if self.mask != other.mask:
            self.mask = None

    def __eq__(self, other):
        return self.mask == other.mask and self.any == other.any and self.gm == other.gm and self.ub == other.ub

    def clear(self, p):
        self.ub[p] = []
        self.gm[p] = {}
        self.any[p] = False

    def next_trip(self, loop: int, trips: int):
        """The ranges of ``loop``'s families one trip older; a range that outlived a whole trip
        outlives every trip (widened to all earlier trips, so the fixed point is reached)."""
        for p, ranges in self.gm.items():
            out = {}
            for r in ranges:
                if r[6] == loop:
                    dmax = r[5] + 1 if r[5] == 0 else trips
                    r = (*r[:4], min(r[4] + 1, trips), dmax, loop)
                out[r] = None
            # one family per range and coefficient: the union of its trip distances
            fams: dict = {}
            for r in out:
                key = r[:4] + r[6:]
                d = fams.get(key)
                fams[key] = (r[4], r[5]) if d is None else (min(d[0], r[4]), max(d[1], r[5]))
            self.gm[p] = {(*k[:4], d[0], d[1], k[4]): None for k, d in fams.items()}

    def leave(self, loop: int, trips: int):
        """After the last trip: ``loop``'s families become the byte ranges of the trips they stand for."""
        for p, ranges in self.gm.items():
            out = {}
            for r in ranges:
                if r[6] == loop:
                    arg, lo, hi, a, dmin, dmax, _ = r
                    jlo, jhi = trips - min(dmax, trips), trips - max(dmin, 1)
                    if jlo > jhi:
                        continue
                    r = (arg, lo + min(a * jlo, a * jhi), hi + max(a * jlo, a * jhi), 0, 0, 0, None)
                out[r] = None
            self.gm[p] = out


def _union(intervals) -> list:
    """Byte intervals ``(lo, hi)`` as the sorted, disjoint, non-touching ones covering the same
    bytes: one form per byte set, so footprints and states compare with ``==``."""
    out: list = []
    for lo, hi in sorted(intervals):
        if hi <= lo:
            continue
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _overlaps(pending: list, lo: int, hi: int) -> bool:
    """Does ``[lo, hi)`` meet a byte of ``pending`` (:func:`_union` form)?"""
    i = bisect.bisect_right(pending, (lo, hi))
    return (i > 0 and pending[i - 1][1] > lo) or (i < len(pending) and pending[i][0] < hi)


def _runs(lanes) -> list:
    """Runs ``[a, b)`` of consecutive lanes."""
    out: list = []
    for lane in sorted(lanes):
        if out and out[-1][1] == lane:
            out[-1][1] = lane + 1
        else:
            out.append([lane, lane + 1])
    return out


def _lanes_bytes(base: int, nrep: int, rep: int, blk: int, lanes, esize: int, last_lanes=None) -> list:
    """UB byte intervals of the given lanes over ``nrep`` repeats (vector_isa.md §1.1:
    ``X + (r*repStride + b*blkStride)*32 + e*E``); ``last_lanes`` replaces ``lanes`` in the last
    repeat (count mode).  The intervals from ``X`` are worked out once per shape (a kernel repeats
    a few) and moved to ``base``."""
    frozen = [ls if ls is None or isinstance(ls, (range, tuple)) else tuple(ls) for ls in (lanes, last_lanes)]
    return [(base + lo, base + hi) for lo, hi in _lanes_offsets(nrep, rep, blk, frozen[0], esize, frozen[1])]


@functools.lru_cache(maxsize=4096)
def _lanes_offsets(nrep: int, rep: int, blk: int, lanes, esize: int, last_lanes) -> tuple:
    """:func:`_lanes_bytes` from byte 0."""
    epb = 32 // esize
    out = []
    for n, ls, r0 in ((nrep if last_lanes is None else nrep - 1, lanes, 0),
                      (1 if last_lanes is not None else 0, last_lanes, nrep - 1)):
        if n <= 0 or ls is None or len(ls) == 0:
            continue
        one = []  # one repeat's bytes from its start: each run of lanes cut at the 32-byte blocks
        for a, b in _runs(ls):
            while a < b:
                end = min(b, (a // epb + 1) * epb)
                off = (a // epb) * (blk * 32) + (a % epb) * esize
                one.append((off, off + (end - a) * esize))
                a = end
        one = _union(one)
        for r in range(r0, r0 + n):
            at = r * (rep * 32)
            out.extend((at + lo, at + hi) for lo, hi in one)
    return tuple(_union(out))


@functools.lru_cache(maxsize=1024)
def _active_lanes(mask, lanes: int, repeat: int):
    """(repeats run, active lanes of each repeat, active lanes of the last repeat or None); a kernel
    runs a few masks and shapes, each worked out once."""
    mode, hi, lo = mask
    if mode == "count":
        if not _is_int(lo):
            return None
        nrep = ceil_div(lo, lanes)
        tail = lo - (nrep - 1) * lanes if nrep else 0
        return nrep, range(lanes), (range(tail) if tail != lanes else None)
    bits = (lo & M64) | ((hi & M64) << 64)
    bits &= (1 << lanes) - 1
    return repeat, tuple(lane for lane in range(lanes) if bits >> lane & 1), None


def _bursts(base: int, n: int, stride: int, length: int) -> list:
    """``n`` runs of ``length`` bytes, ``stride`` bytes apart (worked out from 0 once per shape)."""
    return [(base + lo, base + hi) for lo, hi in _burst_offsets(n, stride, length)]


@functools.lru_cache(maxsize=4096)
def _burst_offsets(n: int, stride: int, length: int) -> tuple:
    """:func:`_bursts` from byte 0."""
    return tuple(_union((k * stride, k * stride + length) for k in range(n)))


def _footprint(ins: Instr, a: dict, mask):
    """(UB bytes read, UB bytes written, GM ranges read, GM ranges written) of one instruction,
    as the executor counts them (the UB bytes as one :func:`_union` list per operand); None when
    it cannot be known statically."""
    fam = ins.spec.family
    dt = a.get("dtype")
    reads, writes, gr, gw = [], [], [], []
    if fam in ("binary", "scalar", "unary", "dup", "conv"):
        if fam == "conv":
            esz = {"dst": DTYPE_SIZES[dt], "src": DTYPE_SIZES[a["src_dtype"]]}
            lanes = 256 // max(esz.values())
        else:
            esz = None
            lanes = 256 // DTYPE_SIZES[dt]
        act = _active_lanes(mask, lanes, a["repeat"])
        if act is None:
            return None
        nrep, ls, last = act
        ops = {"binary": ("dst", "src0", "src1"), "scalar": ("dst", "src"), "unary": ("dst", "src"),
               "dup": ("dst",), "conv": ("dst", "src")}[fam]
        for o in ops:
            e = esz[o] if esz else DTYPE_SIZES[dt]
            idx = _lanes_bytes(a[o], nrep, a[f"{o}_rep_stride"], a[f"{o}_blk_stride"], ls, e, last)
            (writes if o == "dst" else reads).append(idx)
    elif fam == "vbrcb":
        e = DTYPE_SIZES[dt]
        n = a["repeat"]
        blk = a["dst_blk_stride"] or 1
        writes.append(_lanes_bytes(a["dst"], n, a["dst_rep_stride"], blk, range(256 // e), e))
        reads.append(_union([(a["src"], a["src"] + n * 8 * e)]))
    elif fam in ("reduce", "greduce", "pair"):
        e = DTYPE_SIZES[dt]
        lanes = 256 // e
        act = _active_lanes(mask, lanes, a["repeat"])
        if act is None:
            return None
        nrep, ls, last = act
        reads.append(_lanes_bytes(a["src"], nrep, a["src_rep_stride"], a["src_blk_stride"], ls, e, last))
        if fam == "reduce":
            width = 2 if a.get("order") == "value_index" else 1
            writes.append(_bursts(a["dst"], nrep, a["dst_rep_stride"] * e, width * e))
        elif fam == "greduce":
            writes.append(_bursts(a["dst"], nrep, a["dst_rep_stride"] * 8 * e, 8 * e))
        else:  # vcpadd: only the pairs with an active lane are written
            pairs = sorted({lane // 2 for lane in ls})
            writes.append(_union((a["dst"] + r * a["dst_rep_stride"] * 32 + q * e,
                                  a["dst"] + r * a["dst_rep_stride"] * 32 + (q + 1) * e)
                                 for r in range(nrep) for q in pairs))
    elif fam == "sort":
        n, e = a["repeat"], DTYPE_SIZES[dt]
        reads += [_union([(a["src0"], a["src0"] + n * 32 * e)]), _union([(a["src1"], a["src1"] + n * 128)])]
        writes.append(_union([(a["dst"], a["dst"] + n * 256)]))
    elif fam == "merge":
        ns = [a[f"n{k}"] for k in range(4)]
        reads += [_union([(a[f"src{k}"], a[f"src{k}"] + 8 * n)]) for k, n in enumerate(ns) if n]
        dst = _union([(a["dst"], a["dst"] + 8 * sum(ns))])
        writes.append(dst)
        if a.get("exhausted") == "yes":
            reads.append(dst)
    elif fam in CUBE_FAMILIES:
        return None  # GM <-> L1 on MTE2/MTE3: ordered after everything of its pipe
    elif fam == "print":
        e = DTYPE_SIZES[dt]
        reads.append(_union((a["src"] + (i * a["row_stride"] + j * a["col_stride"]) * e,
                             a["src"] + (i * a["row_stride"] + j * a["col_stride"] + 1) * e)
                            for i in range(a["rows"]) for j in range(a["cols"])))
    elif fam == "copy_ub":
        n, ln, sg, dg = a["n_burst"], a["len_burst"], a["src_gap"], a["dst_gap"]
        reads.append(_bursts(a["src"], n, (ln + sg) * 32, ln * 32))
        writes.append(_bursts(a["dst"], n, (ln + dg) * 32, ln * 32))
    elif fam == "copy_in":
        n, ln, sg, dg = a["n_burst"], a["len_burst"], a["src_gap"], a["dst_gap"]
        pad = a.get("right_pad", 0) * DTYPE_SIZES.get(dt or "", 0) if a.get("right_pad") else 0
        writes.append(_bursts(a["dst"], n, (ceil_div(ln, 32) + dg) * 32, ln + pad))
        g = a["src"]
        gr.append((g.arg, g.offset, g.offset + (n - 1) * (ln + sg) + ln))
    elif fam == "copy_out":
        n, ln, sg, dg = a["n_burst"], a["len_burst"], a["src_gap"], a["dst_gap"]
        reads.append(_bursts(a["src"], n, (ceil_div(ln, 32) + sg) * 32, ln))
        g = a["dst"]
        gw.append((g.arg, g.offset, g.offset + (n - 1) * (ln + dg) + ln))
    else:
        return [], [], [], []
    return reads, writes, gr, gw


def _hull(r, trips: dict):
    """(arg, lo, hi) covering every trip a GM range may stand for."""
    arg, lo, hi, a = r[:4]
    if not a:
        return arg, lo, hi
    last = a * (trips[r[6]] - 1)
    return arg, lo + min(0, last), hi + max(0, last)


def _gm_hit(access, pending, trips: dict) -> bool:
    """Does a GM range of ``access`` (written or read on this trip) overlap a ``pending`` one?"""
    return any(e[0] == "*" or any(r[0] == e[0] and _meets(r, e, trips) for r in access) for e in pending)


def _meets(r, e, trips: dict) -> bool:
    """Some trip ``T`` has ``[l2 + b*T, h2 + b*T)`` overlap ``[lo + a*(T-d), hi + a*(T-d))``:
    exact when one coefficient or one trip distance ``d`` is involved, else the hulls over all
    trips are compared."""
    _, l2, h2, b, _, _, rloop = r
    _, lo, hi, a, dmin, dmax, eloop = e
    if not a and not b:
        return lo < h2 and l2 < hi
    loop = eloop or rloop
    if rloop and eloop and rloop != eloop:
        (_, lo, hi), (_, l2, h2) = _hull(e, trips), _hull(r, trips)
        return lo < h2 and l2 < hi
    last = trips[loop] - 1
    if a == b:  # the distance alone decides: lo - h2 < a*d < hi - l2
        low, high = (lo - h2, hi - l2) if a > 0 else (l2 - hi, h2 - lo)
        a = abs(a)
        return max(dmin, low // a + 1) <= min(dmax, last, -(-high // a) - 1)
    if dmin == dmax:  # one distance: the trips T where both strict inequalities hold
        t_lo, t_hi = dmin, last
        for c, k in ((a - b, lo - a * dmin - h2), (b - a, l2 - hi + a * dmin)):  # c*T + k < 0
            if c > 0:
                t_hi = min(t_hi, -(k // c) - 1)
            elif c < 0:
                t_lo = max(t_lo, k // -c + 1)
            elif k >= 0:
                return False
        return t_lo <= t_hi
    (_, lo, hi), (_, l2, h2) = _hull(e, trips), _hull(r, trips)
    return lo < h2 and l2 < hi


def _family(fps, loop):
    """One footprint from those of trips 0, 1, 2 of the summarised ``loop``: the UB bytes must
    not depend on the trip, each GM range must move by a constant ``a`` per trip; else None."""
    reads, writes, gr, gw = fps[0]
    if len(fps) == 1:  # one trip (most instructions): its GM ranges as they are
        return reads, writes, [(*r, 0, 0, 0, None) for r in gr], [(*r, 0, 0, 0, None) for r in gw]
    for f in fps[1:]:
        if reads != f[0] or writes != f[1]:
            return None
    out = []
    for ranges in zip(*(f[2] for f in fps)), zip(*(f[3] for f in fps)):
        fam = []
        for r in ranges:
            a = r[1][1] - r[0][1] if len(r) > 1 else 0
            if any(x[0] != r[0][0] or x[1] != r[0][1] + a * j or x[2] != r[0][2] + a * j
                   for j, x in enumerate(r)):
                return None
            fam.append((*r[0], a, 0, 0, loop if a else None))
        out.append(fam)
    if any(len(f[2]) != len(gr) or len(f[3]) != len(gw) for f in fps):
        return None
    return reads, writes, out[0], out[1]


class _BarrierPass:
    """Walks a program body with a state per pipe (the UB blocks / GM bytes written since the
    pipe's last barrier); inserts ``pipe_barrier P`` where an instruction of P touches them."""

    SIMULATED_TRIPS = 16
    """Loops of at most this many trips are walked trip by trip; longer ones are summarised."""

    def __init__(self, ub_bytes: int, scalars: dict):
        self.nbytes = ub_bytes
        self.need_before: set = set()   # id(instr) needing a barrier before it
        self.barrier_used: set = set()  # id(barrier) that ordered something
        self.env = dict(scalars)
        self.env.setdefault("block_idx", 0)
        self.env.setdefault("block_num", 1)
        self.summarised: list = []  # (var, start, step, id(loop)) of the loops being summarised
        self.trips: dict = {}  # id(loop) -> trip count, for the GM families of summarised loops

    def run(self, body):
        st = _BarrierState(self.nbytes)
        self.walk(body, st)

    def walk(self, body, st: _BarrierState):
        for n in body:
            if isinstance(n, Loop):
                self.loop(n, st)
            elif isinstance(n, While):  # unknown trips: as a Loop's, two passes, then the exit's condition
                for _ in range(2):
                    self.walk(n.cond_body, st)
                    self.walk(n.body, st)
                self.walk(n.cond_body, st)
            elif isinstance(n, If):
                a = st.copy()
                self.walk(n.then_body, a)
                self.walk(n.else_body, st)
                st.merge(a)
            else:
                self.instr(n, st)

    def loop(self, n: Loop, st: _BarrierState):
        env = dict(self.env)
        try:
            start, stop, step = n.bounds(env)
            trips = range(int(start), int(stop), int(step)) if step else range(0)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            trips = None
            if n.bound is not None:  # at most `bound` trips
                try:
                    start, step = int(scalar(n.start, env)), int(scalar(n.step, env))
                    trips = range(start, start + step * n.bound, step)
                except (KeyError, TypeError, ValueError):
                    trips = None
        saved = self.env.pop(n.var, None)
        if trips is None:
            # unknown trips: two passes with the variable unknown (footprints fall back to "all")
            for _ in range(2):
                self.walk(n.body, st)
        elif len(trips) > self.SIMULATED_TRIPS:
            self.summarise(n, trips, st)
        else:
            for v in trips:
                self.env[n.var] = v
                self.walk(n.body, st)
        self.env.pop(n.var, None)
        if saved is not None:
            self.env[n.var] = saved

    def summarise(self, n: Loop, trips: range, st: _BarrierState):
        """A fixed point over the body instead of one walk per trip: the state at the head of any
        trip is the loop's entry state joined with the state after a trip, GM ranges that move
        with the trip kept as families (:class:`_BarrierState`), so the cost does not depend on
        the trip count."""
        loop = id(n)
        self.trips[loop] = len(trips)
        self.summarised.append((n.var, trips.start, trips.step, loop))
        head = st.copy()
        for _ in range(64):
            out = head.copy()
            self.walk(n.body, out)
            out.next_trip(loop, len(trips))
            new_head = st.copy()
            new_head.merge(out)
            if new_head == head:
                break
            head = new_head
        self.summarised.pop()
        out.leave(loop, len(trips))
        st.__dict__.update(out.__dict__)

    def instr(self, ins: Instr, st: _BarrierState):
        op = ins.opcode
        p = ins.pipe
        if op == "pipe_barrier":
            pipe = ins.args["pipe"]
            pipes = tuple(st.ub) if pipe == "ALL" else (pipe,)
            if pipe == "ALL" or any(st.any.get(q) for q in pipes):
                self.barrier_used.add(id(ins))
            for q in pipes:
                if q in st.ub:
                    st.clear(q)
            return
        if ins.spec.family == "mask":
            trip_args = self._trip_args(ins)
            a = trip_args[0] if all(x == trip_args[0] for x in trip_args) else None
            if a is None:
                st.mask = None
            elif op == "set_mask_norm":
                st.mask = ("norm", *(st.mask[1:] if st.mask else (M64, M64)))
            elif op == "set_mask_count":
                st.mask = ("count", *(st.mask[1:] if st.mask else (0, 0)))
            elif op == "set_vector_mask":
                st.mask = ((st.mask or ("norm",))[0], a["hi"] & M64, a["lo"] & M64)
            elif op == "set_vector_count":
                st.mask = ((st.mask or ("count",))[0], 0, a["count"])
            return
        if p not in st.ub:
            return
        fp = None
        if st.mask is not None or ins.spec.family.startswith("copy"):
            fps = [_footprint(ins, a, st.mask) if a is not None else None for a in self._trip_args(ins)]
            if None not in fps:
                fp = _family(fps, self.summarised[-1][3] if len(fps) > 1 else None)
        if fp is None:
            # unknown footprint: order it after everything of its pipe, and everything after it
            if st.any[p]:
                self.need_before.add(id(ins))
            st.clear(p)
            st.ub[p] = [(0, self.nbytes)]
            st.gm[p] = {("*", -(1 << 62), 1 << 62, 0, 0, 0, None): None}
            st.any[p] = True
            return
        reads, writes, gr, gw = fp
        pend = st.ub[p]
        hit = bool(pend) and any(_overlaps(pend, max(lo, 0), min(hi, self.nbytes))
                                 for iv in reads + writes for lo, hi in iv if lo < self.nbytes and hi > 0)
        if not hit and st.gm[p] and (gr or gw):
            hit = _gm_hit(gr + gw, st.gm[p], self.trips)
        if hit:
            self.need_before.add(id(ins))
            st.clear(p)
        written = [(max(lo, 0), min(hi, self.nbytes)) for iv in writes for lo, hi in iv
                   if lo < self.nbytes and hi > 0]
        if written:
            st.ub[p] = _union(st.ub[p] + written)
            st.any[p] = True
        if gw:
            st.gm[p].update(dict.fromkeys(gw))
            st.any[p] = True

    def _trip_args(self, ins: Instr) -> list:
        """[evaluated args] -- or, when they depend on the variable of the loop being summarised,
        its args on the loop's trips 0, 1 and 2."""
        if self.summarised and ins.dyn:
            var, start, step, _ = self.summarised[-1]
            if any(depends(ins.steps, slot, var)[0] for _, slot in ins.dyn):
                out = []
                for j in range(3):
                    self.env[var] = start + j * step
                    out.append(self._args(ins))
                del self.env[var]
                return out
        return [self._args(ins)]

    def _args(self, ins: Instr):
        """The operands that decide the footprint, evaluated (values such as scalars and
        registers are left as they are); None when one depends on an unknown value."""
        if not ins.dyn:
            return ins.args
        env = dict(self.env)
        for step in ins.steps:  # a step whose operands are unknown leaves its slot unknown
            try:
                run_steps((step,), env)
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                pass
        kinds = ins.spec.kinds
        out = dict(ins.args)
        for f, slot in ins.dyn:
            name = f[0] if type(f) is tuple else f
            if kinds[name] == "scalar" or (name in ("src0", "src1") and ins.spec.family == "salu"):
                continue
            v = env.get(slot)
            if v is None or isinstance(v, float):
                return None
            if type(f) is tuple:
                out[name] = out[name][:f[1]] + (v,) + out[name][f[1] + 1:]
            elif type(out[f]) is GmAddr:
                out[f] = GmAddr(out[f].arg, v)
            else:
                out[f] = v
        return out


def complete_barriers(program: Program, scalars: dict | None = None, barrier_pass: type | None = None) -> Program:
    """Insert the same-pipe ``pipe_barrier``s the program needs and drop redundant ones (in place).
    ``barrier_pass`` lets a backend refine the analysis (pto-lower-vf's VF launches)."""
    bp = (barrier_pass or _BarrierPass)(lookup_target(program.target).ub_bytes, scalars or {})
    bp.run(program.body)

    def rebuild(body):
        out = []
        for n in body:
            if isinstance(n, Loop):
                n.body = rebuild(n.body)
            elif isinstance(n, While):
                n.cond_body = rebuild(n.cond_body)
                n.body = rebuild(n.body)
            elif isinstance(n, If):
                n.then_body = rebuild(n.then_body)
                n.else_body = rebuild(n.else_body)
            elif isinstance(n, Instr):
                if n.opcode == "pipe_barrier" and id(n) not in bp.barrier_used:
                    continue
                if id(n) in bp.need_before:
                    out.append(Instr.make("pipe_barrier", pipe=n.pipe, origin=n.origin))
            out.append(n)
        return out

    program.body = rebuild(program.body)
    return program



@dataclass(frozen=True)
class CompleteBarriersPass(ModulePass):
    """``a2a3-complete-barriers{target=a2a3 entry=NAME}`` (see the module doc)."""

    name = "a2a3-complete-barriers"

    target: str = "a2a3"
    entry: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = lookup_target(self.target) or A2A3
        for fn in L.lowered_functions(op, self.entry):
            complete_function(fn, target)
