"""Scalar loops of the a2a3 executor run as batched NumPy over their trips (runtime/executor.py).

A loop runs its first :data:`EXACT_TRIPS` trips instruction by instruction.  The remaining trips
run at once, each instruction over all of them with a leading trip axis (every trip on a
private copy of the UB bytes the body touches), when what the exact trips showed proves that
running them one by one could not differ:

* the body is straight-line vector, copy, mask and sync instructions (no scalar register
  written, no nested loop or branch); UB addresses, strides, counts and event ids do not
  depend on the loop variable, GM offsets are affine in it;
* the machine is periodic: at the end of each of the last exact trips no instruction is
  queued, and the epochs, vector clocks and pending flag snapshots moved by the same amount
  per pipe (a clock entry either follows its pipe or stays), so every later trip replays the
  last one shifted; the last exact trip added no finding;
* no trip reads UB that an earlier trip wrote (each read is covered by writes earlier in the
  trip or by none at all), and the GM each trip touches is disjoint from every other trip's
  (or, for an argument at the same offset every trip, only read); no GM access of the batched
  trips overlaps an access before the loop that its pipe does not already order; every
  instruction ran vectorised (no masked lanes, no overlap needing repeat-by-repeat order).

Then the hazard relations of a batched trip are those of the last exact trip (the same
accesses against the same relative clocks; findings are kept once per instruction pair), so
the batched trips are not checked again.  Afterwards the clocks, flags and counters are
advanced by the number of batched trips, the last trip's accesses are recorded (a GM access
covering what all batched trips touched, with the last trip's token), the trace marks the
last exact trip's entries as repeated (``TraceRepeat``: the cycle model extrapolates them), and
the UB holds the last trip's bytes.  Otherwise every trip runs one by one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .hazards import Footprint
from .program import GmAddr, Instr, depends

EXACT_TRIPS = 3
BATCHED = frozenset({"binary", "scalar", "unary", "dup", "vbrcb", "reduce", "greduce", "pair", "conv",
                     "copy_in", "copy_out", "copy_ub", "sync", "mask", "vf"})
"""Instruction families a batched trip may hold (a ``vf_call`` when its VF's hardware loops
batch, runtime/vf_batch.py)."""
CHUNK_BYTES = 256 << 10
"""Private UB copies held at once (trips run in chunks of at most this many bytes, one buffer
reused chunk after chunk): a chunk's private UBs and its steps' NumPy temporaries stay in the L2
cache and are reused, so the run touches few fresh pages, whose first touch costs more than the
arithmetic (2,048 trips of 8 KiB, a2a3: 60 MB of fresh pages and 35 ms with 32 MiB chunks, 9 MB
and 18-21 ms with 1 MiB or 256 KiB; ascend950's batched VF still took 42 MB with 512 KiB or
1 MiB chunks, 9 MB with 256 KiB, 38 -> 42 ms; 128 KiB costs more Python per trip than it saves)."""


@dataclass
class Batch:
    """The private UBs of ``n`` trips: ``ub[t]`` holds UB bytes ``[lo, lo + row)`` of trip
    ``c0 + t`` of the batched trips; ``deltas``: GM byte offset per trip, by instruction."""
    ub: np.ndarray
    lo: int
    row: int
    n: int
    c0: int
    deltas: dict


def run_loop(m, n, trips: range) -> None:
    outer = m.ctx
    plan = len(trips) >= EXACT_TRIPS + 2 and _static_ok(m, n)
    states, tok0 = [], len(m.log.toks)
    for k, v in enumerate(trips):
        if plan and k == EXACT_TRIPS:
            if _try_batch(m, n, trips, states, tok0, outer):
                break
            plan = False
        if plan and k == EXACT_TRIPS - 1:
            m.tape, start = [], (len(m.trace), len(m.findings), m.seq)
        m.trip(n, v, outer)
        if plan:
            states.append(_state(m))
            if k == EXACT_TRIPS - 1:
                states.append((m.tape, start))
                m.tape = None
    m.ctx = outer


# ---------------------------------------------------------------------------------------------
# What the program text shows
# ---------------------------------------------------------------------------------------------

def _static_ok(m, n) -> bool:
    if m.batch is not None or m.blocks != 1:
        return False
    got = m.plan.loops.get(id(n))
    if got is None or got[0] is not n:
        got = m.plan.loops[id(n)] = (n, all(_instr_ok(i, n.var) for i in n.body))
    return got[1]


def _instr_ok(ins, var: str) -> bool:
    """May trips of the loop of ``%var`` batch this instruction: no register written, and only GM
    offsets depend on the variable, affinely (other scalars fixed)?"""
    if not isinstance(ins, Instr) or ins.spec.family not in BATCHED:
        return False
    if any(ins.spec.kinds.get(k) == "reg" for k in ins.args):
        return False
    for f, slot in ins.dyn:
        dep, affine = depends(ins.steps, slot, var)
        if dep and not (type(f) is not tuple and type(ins.args[f]) is GmAddr and affine):
            return False
    return True


# ---------------------------------------------------------------------------------------------
# What the exact trips show
# ---------------------------------------------------------------------------------------------

def _state(m):
    flags = {k: [np.array(s) for s, _ in q] for k, q in m.flags.items() if q}  # (snapshot, its set_flag)
    busy = any(m.queues.values())
    return (np.array(m.epoch), np.array(m.known), flags, (m.mask_mode, m.mask_hi, m.mask_lo), busy)


def _periodic(states) -> np.ndarray | None:
    """The epochs each trip adds per pipe, if the machine state is periodic (module docstring)."""
    (e0, k0, f0, m0, b0), (e1, k1, f1, m1, b1), (e2, k2, f2, m2, b2) = states
    if b0 or b1 or b2 or not (m0 == m1 == m2) or not (f0.keys() == f1.keys() == f2.keys()):
        return None
    d = e2 - e1
    if not np.array_equal(e1 - e0, d):
        return None

    def steady(a0, a1, a2) -> bool:
        s = a2 - a1
        return np.array_equal(a1 - a0, s) and bool(((s == 0) | (s == d)).all())

    if not steady(k0, k1, k2):
        return None
    for key in f2:
        if not (len(f0[key]) == len(f1[key]) == len(f2[key])):
            return None
        if not all(steady(a, b, c) for a, b, c in zip(f0[key], f1[key], f2[key])):
            return None
    return d


def _try_batch(m, n, trips: range, states, tok0: int, outer) -> bool:
    from .executor import _HANDLERS, _Dyn

    tape, (trace0, findings0, seq0) = states[-1]
    d = _periodic(states[:-1])
    if d is None or len(m.findings) != findings0 or len(tape) != len(n.body):
        return False
    if not all(e[3] for e in tape):
        return False
    T = len(trips) - EXACT_TRIPS
    per_trip = len(n.body) + 1
    if m.steps_left < T * per_trip:
        return False
    # GM offsets per trip, UB bytes the trip touches, data independence of the trips
    m.env[n.var] = trips[EXACT_TRIPS]
    args0 = [m.args_of(e[0].ins) for e in tape]
    m.env[n.var] = trips[EXACT_TRIPS + 1]
    deltas = {}
    for (dy, *_), a0 in zip(tape, args0):
        a1 = m.args_of(dy.ins)
        for k, v in a0.items():
            if isinstance(v, GmAddr):
                deltas[id(dy.ins)] = int(a1[k].offset) - int(v.offset)
    if not _independent(m, tape, deltas, T, tok0):
        return False
    ub = [a.fp for e in tape for a in e[2] if a.space == "UB" and not a.fp.empty]
    ub += [e[5] for e in tape if len(e) > 5 and not e[5].empty]  # a VF's loads past its tiles
    ub_lo = min((f.lo for f in ub), default=0) // 32 * 32
    ub_hi = max((f.hi for f in ub), default=ub_lo)
    row = max(-(-(ub_hi - ub_lo) // 32) * 32, 32)
    # run the batched trips' data, chunk by chunk
    chunk = max(1, CHUNK_BYTES // row)
    m.env[n.var] = trips[EXACT_TRIPS]
    dyns = [_Dyn(e[0].ins, a, e[0].ctx, e[0].seq) for e, a in zip(tape, args0)]
    buf = np.empty((min(chunk, T), row), np.uint8)
    last = None
    for c0 in range(0, T, chunk):
        c = min(chunk, T - c0)
        bub = buf[:c]
        bub[...] = m.ub[ub_lo:ub_lo + row]
        m.batch = Batch(bub, ub_lo, row, c, c0, deltas)
        try:
            for dy, (_, p, *_) in zip(dyns, tape):
                fam = dy.ins.spec.family
                if fam == "mask":
                    m._mask(dy)  # the lanes of the instructions after it
                elif fam != "sync":
                    _HANDLERS[fam](m, dy, p, None)
        finally:
            m.batch = None
        last = bub[-1]
    m.ub[ub_lo:ub_lo + row] = last
    _advance(m, n, trips, tape, states[-3:-1], deltas, d, T, trace0, seq0, outer)
    return True


def _independent(m, tape, deltas, T: int, tok0: int) -> bool:
    """The batched trips neither feed each other nor conflict with unordered earlier accesses."""
    ub_written = Footprint((), ())
    all_writes = _union([a.fp for e in tape for a in e[2] if a.space == "UB" and a.write])
    gm: dict = {}
    for dy, p, accs, *_ in tape:
        for a in accs:
            if a.space == "UB":
                if not a.write and a.fp.overlaps(all_writes) and not _covers(ub_written, a.fp):
                    return False
                if a.write:
                    ub_written = _union([ub_written, a.fp])
                continue
            e = m.gm_esize[a.space]
            delta = deltas.get(id(dy.ins), 0)
            if delta % e:
                return False
            g = gm.setdefault(a.space, [delta, [], False])
            if g[0] != delta:
                return False
            g[1].append(a.fp)
            g[2] |= a.write
    for name, (delta, fps, written) in gm.items():
        u = _union(fps)
        du = delta // m.gm_esize[name]
        if du == 0 and written:
            return False
        if du and u.hi - u.lo > abs(du):
            return False
        lo, hi = min(u.lo, u.lo + T * du), max(u.hi, u.hi + T * du)
        if lo < 0 or hi > m.gm[name].size:
            return False  # some trip is out of bounds: the exact run reports it
    # accesses before the loop to GM the batched trips touch must be ordered already
    for dy, p, accs, *_ in tape:
        for a in accs:
            if a.space == "UB":
                continue
            du = deltas.get(id(dy.ins), 0) // m.gm_esize[a.space]
            span = _shifted(a.fp, du, 1, T)
            for rec in m.log.unordered(m.known[p]):
                if rec.tok < tok0:
                    for r in rec.accs:
                        if r.space == a.space and (r.write or a.write) and r.fp.overlaps(span):
                            return False
    return True


def _union(fps) -> Footprint:
    fps = [f for f in fps if not f.empty]
    if not fps:
        return Footprint((), ())
    if len(fps) == 1:
        return fps[0]
    los = np.concatenate([np.asarray(f.los, np.int64) for f in fps])
    his = np.concatenate([np.asarray(f.his, np.int64) for f in fps])
    return Footprint.of_ranges(los, his)


def _covers(a: Footprint, b: Footprint) -> bool:
    """Is every unit of ``b`` in ``a``?"""
    return b.empty or _union([a, b]).total() == a.total()


def _shifted(fp: Footprint, du: int, k0: int, k1: int) -> Footprint:
    """The union of ``fp`` shifted by ``k * du`` units for ``k`` in ``[k0, k1]``."""
    if du == 0 or fp.empty:
        return fp
    ks = np.arange(k0, k1 + 1, dtype=np.int64) * du
    los = (np.asarray(fp.los, np.int64)[None, :] + ks[:, None]).reshape(-1)
    his = (np.asarray(fp.his, np.int64)[None, :] + ks[:, None]).reshape(-1)
    return Footprint.of_ranges(los, his)


# ---------------------------------------------------------------------------------------------
# After the batched trips
# ---------------------------------------------------------------------------------------------

def _advance(m, n, trips, tape, states, deltas, d: np.ndarray, T: int, trace0: int, seq0: int,
             outer) -> None:
    from . import executor as X
    from .executor import TraceRepeat, _Dyn

    (_, k1, f1, _, _), (_, k2, f2, _, _) = states
    dk = k2 - k1
    m.epoch[:] = (np.array(m.epoch) + T * d).tolist()
    for row, step in zip(m.known, dk):
        row[:] = (np.array(row) + T * step).tolist()
    for key, q in m.flags.items():
        for (s, _), a, b in zip(q, f1.get(key, []), f2.get(key, [])):
            s[:] = (np.array(s) + T * (b - a)).tolist()
    per_seq = m.seq - seq0
    if m.want_trace:  # the last exact trip's entries stand for the batched trips (TraceRepeat)
        m.trace.append(TraceRepeat(m.seq + 0.5, trace0, len(m.trace) - trace0, T, per_seq, m.block))
    m.seq += T * per_seq
    for e in tape:
        op = e[0].ins.opcode
        m.counts[op] = m.counts.get(op, 0) + T
    m.steps_left -= T * (len(n.body) + 1)
    last = trips[-1]
    m.env[n.var] = last
    # the last trip's accesses, for what runs after the loop
    if m.check:
        ctx = outer + ((n.var, last),)
        for dy, p, accs, _, tok, *_ in tape:
            if not accs:
                continue
            info = _Dyn(dy.ins, m.args_of(dy.ins), ctx, dy.seq + T * per_seq)
            rec = m.log.new(p, m.log.toks[tok].epoch + T * int(d[p]), m.block, info)
            for a in accs:
                if a.space != "UB":
                    a = X._Acc(a.space, a.write, _shifted(a.fp, deltas.get(id(dy.ins), 0) // m.gm_esize[a.space], 1, T),
                               a.what)
                rec.accs.append(a)
    m.ctx = outer



