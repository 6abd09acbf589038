"""Hardware loops of a VF run as batched NumPy over all their trips (runtime/vf_executor.py).

A top-level ``scf.for`` of a ``vf.func`` (and the loops nested in it) runs each op once over
every trip: a value defined in a loop carries the loop's trips as leading axes (a register
``(..., 256)`` bytes, a mask ``(..., lanes)``, an index ``(...)``; an index that is affine in
the trips is kept as its coefficients, :class:`_Affine`, so address checks, strided views and
footprints are closed forms), loop-invariant values broadcast.  This is the per-trip
interpretation exactly when the trips do not feed each other:

* the only value a loop carries is an ``update_mask`` count (its trips' counts are
  ``max(count - t * lanes, 0)``, vector_isa.md §2.2); nothing else is carried, and the index
  arithmetic is ``addi``/``subi``/``muli``/casts (other ``arith`` ops run batched only on
  loop-invariant operands); loop bounds do not depend on an enclosing loop's trip;
* memory: ``load_align`` NORM/BLK/BRC and ``store_align`` NORM/ONEPT only, every address aligned and
  in bounds (else the per-trip run reports the fault); after the loop, no byte a store wrote
  in one trip is read or written by an op of another trip (trips compared at their innermost
  common loop: in a trip of that loop, ops run in program order either way).

When a condition fails the stores are undone and the loop runs trip by trip.

Most VFs decide all of this from their IR alone: the compile then makes a StaticPlan of the VF
(see "static plans" below) and a launch only checks the addresses of its tile arguments and runs
the NumPy steps; the rest (scalar parameters, ops the planner does not know, a launch whose
addresses fail the checks) runs through _Batch as each launch comes.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerType

from pto_compiler.dialects import vf
from pto_compiler.dialects.pto import TileLikeType

from . import elementwise as ew

REG = vf.REG_BYTES


class NoBatch(Exception):
    """The loop cannot run batched: run it trip by trip."""


class _Affine:
    """An index value of the batched loops as ``base + sum(coefs[i] * trip_i)``: what an array of
    ``shape`` (a trip axis per loop it depends on, 1 for the others) would hold, kept as numbers so
    that address checks, strided views and footprints are computed without the array."""
    __slots__ = ("base", "coefs", "shape")

    def __init__(self, base: int, coefs: tuple, shape: tuple):
        self.base, self.coefs, self.shape = base, coefs, shape

    def array(self) -> np.ndarray:
        v = np.full(self.shape, self.base, np.int64)
        for i, (k, size) in enumerate(zip(self.coefs, self.shape)):
            if size > 1 and k:
                v = v + k * np.arange(size, dtype=np.int64).reshape((-1,) + (1,) * (len(self.shape) - i - 1))
        return v

    def at(self, depth: int) -> "_Affine":
        """Padded to ``depth`` trip axes (as :func:`_at` pads an array)."""
        extra = depth - len(self.shape)
        return self if extra <= 0 else _Affine(self.base, self.coefs + (0,) * extra, self.shape + (1,) * extra)

    def combine(self, other, sign: int) -> "_Affine":
        """``self + sign * other`` (other an _Affine or a number)."""
        if not isinstance(other, _Affine):
            return _Affine(self.base + sign * int(other), self.coefs, self.shape)
        d = max(len(self.shape), len(other.shape))
        a, b = self.at(d), other.at(d)
        return _Affine(a.base + sign * b.base, tuple(x + sign * y for x, y in zip(a.coefs, b.coefs)),
                       tuple(max(x, y) for x, y in zip(a.shape, b.shape)))

    def scaled(self, f: int, add: int = 0) -> "_Affine":
        return _Affine(self.base * f + add, tuple(k * f for k in self.coefs), self.shape)

    def bounds(self) -> tuple[int, int]:
        """(smallest, largest) value over the trips."""
        lo = hi = self.base
        for k, size in zip(self.coefs, self.shape):
            span = k * (size - 1)
            if span < 0:
                lo += span
            else:
                hi += span
        return lo, hi

    def axes(self) -> list:
        """(coefficient, size) of every axis along which the value moves."""
        return [(k, size) for k, size in zip(self.coefs, self.shape) if size > 1 and k]

    def broadcast(self, shape: tuple) -> "_Affine":
        """Broadcast to ``shape`` (as np.broadcast_to: an axis of size 1 repeats its value)."""
        v = self.at(len(shape))
        return _Affine(v.base, tuple(k if size > 1 else 0 for k, size in zip(v.coefs, v.shape)), shape)

    def disjoint_trips(self, n: int) -> bool:
        """Do the spans ``[v, v + n)`` of any two trips (every axis) share no byte?  (A sufficient
        test: each axis, by coefficient size, steps past the whole span of the axes inside it.)"""
        extent = n
        for k, size in sorted((abs(k), size) for k, size in zip(self.coefs, self.shape) if size > 1):
            if k < extent:
                return False
            extent += k * (size - 1)
        return True

    def view(self, n: int) -> tuple | None:
        """The spans ``[v, v + n)`` as one strided view of the UB bytes (as :func:`_strided`)."""
        ks = tuple(k if size > 1 else 0 for k, size in zip(self.coefs, self.shape))
        return None if any(k < 0 for k in ks) else (self.shape + (n,), self.base, ks + (1,))

    def run(self, n: int) -> tuple[int, int] | None:
        """The spans ``[v, v + n)`` of every trip as one ascending run of bytes ``[lo, hi)``, if
        they tile it exactly (each span once)."""
        step, lo = n, self.base
        for k, size in sorted(self.axes()):
            if k != step:
                return None
            step *= size
        if len(self.axes()) != sum(1 for _, s in zip(self.coefs, self.shape) if s > 1):
            return None  # a trip axis the value does not move along: spans repeat
        return lo, lo + step


class _TripCounts:
    """The counts an ``update_mask`` chain hands through the trips of a loop (on trip axis
    ``axis``) from a first count ``c0`` that is a number: ``max(c0 - t * lanes, 0)`` in trip
    ``t`` (vector_isa.md §2.2), kept in closed form: the masks of the usual chain, every trip
    a whole register, need no array."""
    __slots__ = ("c0", "lanes", "axis", "trips")

    def __init__(self, c0: int, lanes: int, axis: int, trips: int):
        self.c0, self.lanes, self.axis, self.trips = c0, lanes, axis, trips

    def array(self) -> np.ndarray:
        t = np.arange(self.trips, dtype=np.int64).reshape((1,) * self.axis + (self.trips,))
        return np.maximum(self.c0 - t * self.lanes, 0)

    def update_mask(self, nlanes: int) -> tuple:
        """(mask, next counts) of ``update_mask`` on these counts: the mask is loop-invariant
        when every trip has a whole register left, and the next counts are these less ``nlanes``."""
        rest = _TripCounts(self.c0 - nlanes, self.lanes, self.axis, self.trips)
        if self.c0 - (self.trips - 1) * self.lanes >= nlanes:
            return _vx.first_lanes(nlanes, nlanes), rest
        return np.arange(nlanes) < np.minimum(self.array(), nlanes)[..., None], rest


def _value(v, depth: int | None = None):
    """``v`` as the array path holds it (an _Affine or _TripCounts becomes its array)."""
    if isinstance(v, _Affine):
        return (v if depth is None else v.at(depth)).array()
    if isinstance(v, _TripCounts):
        return v.array()
    return v


def run_batched(r, op: scf.ForOp, fp, env: dict) -> bool:
    """Run the top-level hardware loop ``op`` (decoded: ``fp``, vf_executor._ForPlan) of VfRunner
    ``r`` over all trips at once.

    With ``r.outer = (ubs, lo)`` the VF runs for every trip of a batched scalar loop
    (runtime/loop_batch.py) at once: ``ubs[t]`` holds UB bytes ``[lo, lo + row)`` of trip t;
    the exact trip before showed the loop batches (same addresses), so it is not checked again."""
    b = _Batch(r)
    taped = len(r.tape) if r.tape is not None else 0
    try:
        log = b.loop(op, fp, env, (r.outer[0].shape[0],) if r.outer else (), ())
        if not r.outer:
            b.check_trips()
    except NoBatch:
        if r.outer:
            raise AssertionError("a VF that batched in the exact trip must batch in the others") from None
        for sel, old in reversed(b.undo):
            r.ub[sel] = old
        if r.tape is not None:
            del r.tape[taped:]
        return False
    for k, n in b.counts.items():
        r.counts[k] = r.counts.get(k, 0) + n
    r.log.extend(log)
    return True


def _at(v, depth: int, base: int):
    """``v`` with its batch axes padded to ``depth`` (``base``: axes of one value, 1 for lanes)."""
    if not isinstance(v, np.ndarray):
        return v
    extra = depth - (v.ndim - base)
    if extra <= 0:
        return v
    k = v.ndim - base
    return v.reshape(v.shape[:k] + (1,) * extra + v.shape[k:])


class _Batch:
    def __init__(self, r):
        self.r = r
        self.counts: dict[str, int] = {}
        self.undo: list = []
        self.events: list = []
        """(is_store, start address per trip, bytes, loop chain) of every memory op run."""
        self.shape: tuple = ()
        """The trips of the loops around the op running (one axis per loop)."""
        self.chain: tuple = ()
        """Those loops, outermost first."""
        self.on: dict = {}
        """id of a mask -> (the mask, is every lane of it on?)."""

    def all_on(self, act) -> bool:
        """Is every lane of the mask ``act`` on (looked up once per mask)?"""
        got = self.on.get(id(act))
        if got is None:
            got = self.on[id(act)] = (act, _vx.all_lanes(act))
        return got[1]

    # ---- structure -------------------------------------------------------------------------
    def loop(self, op: scf.ForOp, fp, env: dict, shape: tuple, chain: tuple) -> list:
        bounds = [env[fp.lb], env[fp.ub], env[fp.step]]
        if any(isinstance(v, (np.ndarray, _Affine)) for v in bounds):
            raise NoBatch
        lb, ub, step = (int(v) for v in bounds)
        trips = max(0, -(-(ub - lb) // step)) if step > 0 else -1
        if step <= 0 or trips > vf.HW_LOOP_MAX:
            raise NoBatch
        depth = len(shape) + 1
        inner = shape + (trips,)
        env[fp.args[0]] = _Affine(lb, (0,) * len(shape) + (step,), (1,) * len(shape) + (trips,))
        finals = []
        yld = fp.yielded
        for k, (barg, init) in enumerate(zip(fp.args[1:], fp.inits)):
            um = _count_chain(barg, yld, k)
            c0 = _value(env[init])
            lo, hi = (c0.min(), c0.max()) if isinstance(c0, np.ndarray) else (c0, c0)
            if um is None or lo < 0 or hi >= 1 << 31:
                raise NoBatch
            lanes = um.results[0].type.nlanes
            if not isinstance(c0, np.ndarray):  # the usual chain: its counts in closed form
                env[barg] = _TripCounts(int(c0), lanes, len(shape), trips)
                finals.append(max(int(c0) - trips * lanes, 0))
                continue
            c0 = np.asarray(_at(c0, len(shape), 0), np.int64)
            c0 = c0.reshape(c0.shape + (1,) * (len(shape) - c0.ndim))[..., None]
            env[barg] = np.maximum(c0 - np.arange(trips, dtype=np.int64) * lanes, 0)
            finals.append(np.maximum(c0[..., 0] - trips * lanes, 0))
        per_trip = self.block(fp.body, env, inner, chain + (op,), depth) if trips else []
        for res, v in zip(fp.results, finals):
            env[res] = v if isinstance(v, np.ndarray) and v.ndim else int(v)
        if not self.r.want_log:
            return []
        return [(_vx.LOG_LOOP, (op, per_trip, trips))]

    def block(self, plan, env: dict, shape: tuple, chain: tuple, depth: int) -> list:
        """Run a loop body (its vf_executor._BlockPlan) over the trips ``shape``; returns its log."""
        n = math.prod(shape)
        counts = self.counts
        log = []
        for code, op, entry, name, x in plan.entries:
            self.shape, self.chain = shape, chain
            log.append(entry)
            if code == _vx._YIELD:
                return log
            counts[name] = counts.get(name, 0) + n
            if code == _vx._CONST:
                env[x[0]] = x[1]
            elif code == _vx._OP:
                if x[1] is None:
                    raise NoBatch
                x[1](self, x[2], env, depth)
            elif code == _vx._ARITH:
                self.arith(op, env, depth)
            elif code == _vx._FOR:
                log.extend(self.loop(op, x, env, shape, chain))
            else:
                raise NoBatch
        return log

    def arith(self, op, env: dict, depth: int) -> None:
        vals = [env[o] for o in op.operands]
        if any(isinstance(v, _Affine) for v in vals):
            got = _affine_arith(op, vals)
            if got is not None:
                env[op.results[0]] = got
                return
            vals = [_value(v) for v in vals]
        if not any(isinstance(v, np.ndarray) for v in vals):
            try:
                _vx.run_arith(op, env)
            except _vx.VfFault:
                raise NoBatch from None
            return
        name = op.name.split(".", 1)[1]
        a = [np.asarray(_at(v, depth, 0), np.int64) for v in vals]
        if name == "addi":
            v = a[0] + a[1]
        elif name == "subi":
            v = a[0] - a[1]
        elif name == "muli":
            v = a[0] * a[1]
        elif name in ("index_cast", "index_castui", "extsi", "trunci") and not name.endswith("ui"):
            v = a[0]
        else:
            raise NoBatch
        t = op.results[0].type
        if isinstance(t, IntegerType) and not isinstance(t, IndexType):
            w = t.width.data
            if w == 1 or not t.signedness.data.name == "SIGNLESS":
                raise NoBatch
            if w < 64:
                v = v & ((1 << w) - 1)
                v = np.where(v >= 1 << (w - 1), v - (1 << w), v)
        elif not isinstance(t, IndexType):
            raise NoBatch
        env[op.results[0]] = v

    # ---- memory -----------------------------------------------------------------------------
    def addr(self, op, env: dict, depth: int):
        """(tile, byte address per trip, element bytes): an _Affine when the offset is one (or
        a number) and the VF does not run for a batched scalar loop, else an array."""
        tile = env[op.tile]
        e = op.tile_type.elem_bytes
        dyn = env[op.dyn_offset] if op.dyn_offset is not None else 0
        if not self.r.outer and not isinstance(dyn, np.ndarray):
            if not isinstance(dyn, _Affine):
                dyn = _Affine(int(dyn), (), ())
            return tile, dyn.at(depth).scaled(e, tile.addr + op.static_offset * e), e
        off = op.static_offset + _at(_value(dyn), depth, 0)
        return tile, np.asarray(tile.addr + np.asarray(off, np.int64) * e), e

    def span(self, addr, nbytes: int, align: int) -> None:
        if isinstance(addr, _Affine):
            lo, hi = addr.bounds()
            bad = lo % align or any(k % align for k, _ in addr.axes())
        else:
            lo, hi = addr.min(), addr.max()
            bad = (addr % align).any()
        if bad or lo < 0 or hi + nbytes > self.r.ub.size:
            raise NoBatch  # the per-trip run reports the fault where it happens

    def load(self, op, env: dict, depth: int) -> None:
        tile, addr, e = self.addr(op, env, depth)
        d = op.dist_name
        if d == "NORM":
            n, align = REG, 32
        elif d == "BLK":
            n, align = 32, 32
        elif d.startswith("BRC_B"):
            n, align = e, e
        else:
            raise NoBatch
        self.span(addr, n, align)
        if self.r.outer:
            idx = _bytes(addr, n)
            ubs, lo = self.r.outer
            run = _run(idx, ubs, lo)
            if run is not None:
                def read(ub):
                    return ubs[:, run].reshape((ubs.shape[0],) + idx.shape[1:]).copy()
            elif idx.shape[0] == 1:
                def read(ub):
                    return np.take(ubs, idx[0] - lo, axis=1)
            else:
                def read(ub):
                    return ubs[_trips(ubs, idx), idx - lo]
        else:
            view = addr.view(n) if isinstance(addr, _Affine) else _strided(addr, n)
            if view is not None:
                def read(ub):
                    return np.ndarray(view[0], np.uint8, ub, view[1], view[2]).copy()
            else:
                idx = _bytes(_value(addr), n)

                def read(ub):
                    return ub[idx]
            self.touch(self.r.reads, addr, n)
            self.event(False, addr, n)
        key = op.results[0]
        if n < REG:  # the n bytes repeated over the register, copied in units of up to 8 bytes
            unit = np.dtype(f"<u{8 if n % 8 == 0 else n}")

            def step(ub, regs):
                data = read(ub).view(unit)
                out = np.empty(data.shape[:-1] + (REG // n, data.shape[-1]), unit)
                out[...] = data[..., None, :]
                regs[key] = out.reshape(data.shape[:-1] + (-1,)).view(np.uint8)
        else:
            def step(ub, regs):
                regs[key] = read(ub)
        self.r.emit(step)

    def store(self, op, env: dict, depth: int) -> None:
        tile, addr, e = self.addr(op, env, depth)
        reg, act = _at(env[op.value], depth, 1), _at(env[op.mask], depth, 1)
        if op.dist_name == "NORM":
            n, align = REG, 32
        elif op.dist_name == "ONEPT":  # lane 0, if active, to an element-aligned address
            n, align, reg, act = e, e, reg[..., :e], act[..., :1]
        else:
            raise NoBatch
        self.span(addr, n, align)
        every = self.all_on(act)
        keep = act if every else np.repeat(act, n // act.shape[-1], axis=-1)  # (all on: only its shape counts)
        shape = _bshape(addr.shape + (n,), act.shape[:-1] + (n,), reg.shape)
        value, lanes = op.value, slice(0, n)  # (ONEPT: lane 0's bytes)

        def data(regs):
            return _at(regs[value], depth, 1)[..., lanes]
        if self.r.outer:
            idx = _bytes(addr, n)
            ubs, lo = self.r.outer
            run = _run(idx, ubs, lo)
            if run is not None:  # one run of bytes, the same in every scalar-loop trip
                where = True if every else keep

                def step(ub, regs):
                    np.copyto(ubs[:, run].reshape(shape), data(regs), where=where)
            else:
                keep = np.repeat(act, n // act.shape[-1], axis=-1)
                idx, keep = (np.broadcast_to(x, shape) for x in (idx, keep))
                sel = (np.broadcast_to(_trips(ubs, idx), shape)[keep], idx[keep] - lo)

                def step(ub, regs):
                    ubs[sel] = np.broadcast_to(data(regs), shape)[keep]
            self.r.emit(step)
            return
        view = None
        if shape == addr.shape + (n,) and every:
            view = addr.view(n) if isinstance(addr, _Affine) else _strided(addr, n)
        if view is not None:  # every byte of every span: one strided assignment
            lo, hi = addr.bounds() if isinstance(addr, _Affine) else (int(addr.min()), int(addr.max()))
            hi += n
            if lo < tile.addr or hi > tile.addr + tile.nbytes:
                raise NoBatch  # outside its tile buffer: a bounds finding of the per-trip run
            self.undo.append((slice(lo, hi), self.r.ub[lo:hi].copy()))

            def step(ub, regs):
                np.ndarray(view[0], np.uint8, ub, view[1], view[2])[...] = data(regs)
            self.r.emit(step)
            self.touch(self.r.writes, addr, n)
            self.event(True, addr, n)
            return
        addr = _value(addr)
        keep = np.repeat(act, n // act.shape[-1], axis=-1)
        idx, keep = (np.broadcast_to(x, shape) for x in (_bytes(addr, n), keep))
        sel = idx[keep]
        if sel.size:
            if sel.min() < tile.addr or sel.max() + 1 > tile.addr + tile.nbytes:
                raise NoBatch  # outside its tile buffer: a bounds finding of the per-trip run
            self.undo.append((sel, self.r.ub[sel].copy()))

            def step(ub, regs):
                ub[sel] = np.broadcast_to(data(regs), shape)[keep]
            self.r.emit(step)
            self.r.writes.add_bytes(sel)
        self.event(True, addr, n)

    @staticmethod
    def touch(touched, addr, n: int) -> None:
        """Note the spans ``[addr, addr + n)`` in ``touched`` (runtime/vf_executor.py Touched)."""
        run = addr.run(n) if isinstance(addr, _Affine) else None
        if run is not None:
            touched.add(*run)
        else:
            touched.add_starts(_value(addr), n)

    def event(self, store: bool, addr, nbytes: int) -> None:
        addr = addr.broadcast(self.shape) if isinstance(addr, _Affine) else np.broadcast_to(addr, self.shape)
        self.events.append((store, addr, nbytes, self.chain))

    def check_trips(self) -> None:
        """No byte stored in one trip is touched by another trip (module docstring); each op's
        bytes in a trip are taken as its whole span (masked-off lanes too: at worst the loop
        runs trip by trip)."""
        ev = self.events
        spans = [_bounds(addr) for _, addr, _, _ in ev]
        for i, j in _store_pairs(ev):
            if not _apart(spans[i], ev[i][2], spans[j], ev[j][2]):
                _check_pair(ev[i], ev[j], i == j)


def _bounds(addr) -> tuple[int, int]:
    """(first, last) span start of a memory op's event (an _Affine or an array)."""
    return addr.bounds() if isinstance(addr, _Affine) else (addr.min(), addr.max())


def _store_pairs(ev: list):
    """The pairs (i, j) of events :meth:`_Batch.check_trips` compares: i a store, j any event
    (each pair of stores once, a store with itself too)."""
    for i, (st, _, _, _) in enumerate(ev):
        if not st:
            continue
        for j, e in enumerate(ev):
            if j < i and e[0]:
                continue  # that pair was checked from the other side
            yield i, j


def _apart(s1: tuple, n1: int, s2: tuple, n2: int) -> bool:
    """Do the spans of two events (first and last start, bytes) share no byte?"""
    return s2[0] >= s1[1] + n1 or s1[0] >= s2[1] + n2


def _check_pair(e1: tuple, e2: tuple, same: bool) -> None:
    """Raise NoBatch unless no byte the store event ``e1`` writes in one trip is touched by event
    ``e2`` (``same``: e1 itself) in another trip.  Only address differences count: the answer
    is the same with both events' addresses moved by the same amount (a static plan compares
    the events of one tile argument before its address is known)."""
    st, addr, n, chain = e1
    st2, addr2, n2, chain2 = e2
    if isinstance(addr, _Affine) and addr.disjoint_trips(n) and (same or (
            chain2 == chain and n2 == n and isinstance(addr2, _Affine) and
            (addr2.base, addr2.coefs, addr2.shape) == (addr.base, addr.coefs, addr.shape))):
        return  # trips store apart, and the other op touches its own trip's bytes only
    m = 0
    while m < min(len(chain), len(chain2)) and chain[m] is chain2[m]:
        m += 1
    a1, t1 = _spans(_value(addr), m)
    a2, t2 = (a1, t1) if same else _spans(_value(addr2), m)
    o = np.argsort(a1, kind="stable")
    s1, id1 = a1[o], t1[o]
    if same:
        if ((np.diff(s1) < n) & (np.diff(id1) != 0)).any():
            raise NoBatch  # two trips store the same bytes
        return
    if (np.diff(s1) < n).any():
        raise NoBatch
    k = np.searchsorted(s1 + n, a2, side="right")  # first store span ending past a2
    while True:
        live = k < s1.size
        live[live] &= s1[k[live]] < a2[live] + n2
        if not live.any():
            break
        if (id1[k[live]] != t2[live]).any():
            raise NoBatch
        k = k + 1


# ---- static plans ------------------------------------------------------------------------------
#
# A VF whose loop bounds, carried counts and addresses follow from its IR alone (constants) runs
# batched the same way at every launch: trip shapes, affine addresses, masks, register shapes,
# which NumPy step each op becomes, the counts and the log do not depend on the data, and with
# addresses kept relative to their tile argument, not on where the tiles are either.  The
# compile (vf_executor.vf_plan) decides them once in one walk of the IR (_Planner: the common
# ops only, the rest of the VF's ops leave it to the dynamic path) and keeps a StaticPlan; a
# launch then checks what needs the addresses (alignment, UB and tile bounds, trips of two tile
# arguments apart) with integer comparisons, binds the memory steps' offsets and runs the NumPy
# steps.  A failed check runs the launch as before (_Batch, then trip by trip), so faults and
# findings are those of the per-trip run.  The walk is short on purpose: a cold process pays
# for every line of Python it runs once (~1 us each), which is what a VF's decode and launch cost.


class _Unfit(Exception):
    """The VF has no static plan (it runs through the dynamic path)."""


class _Reg:
    """A register of a static plan: its trip axes (the bytes are the data steps')."""
    __slots__ = ("lead",)

    def __init__(self, lead: tuple):
        self.lead = lead


class _TileArg:
    """A tile argument of a static plan: its index among the VF's tile parameters; addresses
    computed from it are relative to the tile."""
    __slots__ = ("k",)

    def __init__(self, k: int):
        self.k = k


_SYMBOLIC = (_Affine, _TripCounts, _Reg, _TileArg, np.ndarray)
"""What a static plan's value is when it is not a number."""


def _lead(v, depth: int) -> tuple:
    """The trip axes of a mask (an array) or _Reg, padded to ``depth`` (as _at pads)."""
    lead = v.lead if type(v) is _Reg else v.shape[:-1]
    return lead + (1,) * (depth - len(lead)) if depth > len(lead) else lead


class _Planner:
    """One walk of a vf.func making its StaticPlan: _Batch's decisions (the same helpers, the
    same register handlers, which only keep their data steps here: ``self.r`` is the planner)
    on tiles that are symbols (_TileArg) and registers that are shapes (_Reg).  Raises _Unfit
    (or NoBatch) where the VF needs the dynamic path."""

    # steps: per data step ``(None, step, None)``, or ``(tile index, step, rel)``: a memory step
    # ``step(rel + tile address, ub, regs)`` (rel: a byte offset, or byte addresses, in the tile);
    # checks: a launch's, ``(tile, lo, hi, n, align)``: every span aligned and in the UB, ``(tile,
    # lo, end, None, None)``: a store inside its tile buffer; touched: ``(is write, tile, (lo, hi)
    # run or None, span starts (n > 0) or bytes (n = 0), n)``, relative to the tile; pairs: events
    # of two tile arguments a launch must find apart (else the dynamic path compares)
    unbatched = None
    """The top-level loop that raised NoBatch, if one did."""

    def __init__(self):
        self.r, self.steps, self.checks, self.touched, self.pairs, self.on, self.env = self, [], [], [], [], {}, {}

    all_on = _Batch.all_on

    def emit(self, step) -> None:
        self.steps.append((None, step, None))

    def plan(self, fn, sizes: tuple) -> "StaticPlan":
        """``sizes``: per parameter of ``fn``, its tile buffer's bytes or None (vf_executor.VfPlan)."""
        env, k = self.env, 0
        block = fn.regions[0].first_block
        for p, n in zip(block._args, sizes):
            if n is not None:
                env[p] = _TileArg(k)
                k += 1
        self.counts, self.short, self.stored, self.copies = {}, [], [], [True]
        plan = StaticPlan()
        plan.log = self.block(block, (), ())  # (VfRunner.run_block at depth 0)
        # a register load keeps a view of the UB, not a copy, when no step after it can see its
        # bytes written: the VF stores nothing, or only in its last step (which reads its
        # registers before it writes; NumPy copies a source that overlaps what it assigns)
        self.copies[0] = bool(self.stored) and self.stored != [len(self.steps) - 1]
        plan.steps, plan.checks, plan.touched, plan.pairs = self.steps, self.checks, self.touched, self.pairs
        plan.counts, plan.log_short = self.counts, self.short
        return plan

    def scalar(self, op) -> None:
        """An ``arith`` op on numbers: as a trip runs it."""
        env = self.env
        c = _vx._int_constant_value(op) if type(op) is arith.ConstantOp else None
        if c is not None:
            env[c[0]] = c[1]
            return
        for v in op._operands:
            if type(env[v]) in _SYMBOLIC:
                raise _Unfit
        _vx.run_arith(op, env)

    def loop(self, op, shape: tuple, chain: tuple) -> tuple:
        """_Batch.loop: the log entry of ``op`` run over its trips."""
        env = self.env
        operands = tuple(op._operands)
        lb, ub, step = env[operands[0]], env[operands[1]], env[operands[2]]
        if type(lb) in _SYMBOLIC or type(ub) in _SYMBOLIC or type(step) in _SYMBOLIC:
            raise _Unfit
        lb, ub, step = int(lb), int(ub), int(step)
        trips = -(-(ub - lb) // step) if step > 0 else -1
        if trips > vf.HW_LOOP_MAX or step <= 0:
            raise _Unfit
        trips = max(trips, 0)
        block = op.regions[0].first_block
        args, d = block._args, len(shape)
        env[args[0]] = _Affine(lb, (0,) * d + (step,), (1,) * d + (trips,))
        for k in range(1, len(args)):  # an update_mask count chain, in closed form
            um, c0 = _count_chain(args[k], block._last_op, k - 1), env[operands[2 + k]]
            if um is None:
                raise NoBatch  # (the loop carries something else: a register, say)
            if type(c0) in _SYMBOLIC or not 0 <= c0 < 1 << 31:
                raise _Unfit
            env[args[k]] = c = _TripCounts(int(c0), um.results[0].type.nlanes, d, trips)
            env[tuple.__getitem__(op.results, k - 1)] = max(c.c0 - trips * c.lanes, 0)
        return _vx.LOG_LOOP, (op, self.block(block, shape + (trips,), chain + (op,)) if trips else [], trips)

    def block(self, block, shape: tuple, chain: tuple) -> list:
        """_Batch.block: a loop body over the trips ``shape`` (the VF's body: no trips, depth 0,
        where only loops, masks and scalars run); its log."""
        env, counts, n, depth = self.env, self.counts, math.prod(shape), len(shape)
        log = []
        op = block._first_op
        while op is not None:
            cls = type(op)
            entry = _vx.LOG_OP, op
            log.append(entry)
            if not depth:
                self.short.append(entry)
            elif cls is scf.YieldOp:
                return log
            name = cls.name
            counts[name] = counts.get(name, 0) + n
            if cls is scf.ForOp:
                if depth:
                    log.append(self.loop(op, shape, chain))
                else:  # (VfRunner._for, run_batched)
                    self.events = []
                    try:
                        log.append(self.loop(op, (), ()))
                        self.trips_apart()
                    except NoBatch:  # (not _Unfit: what the dynamic path finds too, wherever the tiles are)
                        self.unbatched = op
                        raise
            elif cls is arith.ConstantOp:
                self.scalar(op)
            elif name.startswith("arith."):
                vals = [env[v] for v in op._operands]
                if _Affine not in map(type, vals):
                    self.scalar(op)
                else:
                    v = _affine_arith(op, vals)
                    if v is None:
                        raise _Unfit
                    env[tuple.__getitem__(op.results, 0)] = v
            elif not depth and cls is not vf.CreateMaskOp:
                raise _Unfit
            elif cls is vf.LoadAlignOp:
                self.load(op, depth, shape, chain)
            elif cls is vf.StoreAlignOp:
                self.store(op, depth, shape, chain)
            elif cls is vf.UpdateMaskOp and type(env[tuple.__getitem__(op._operands, 0)]) is _TripCounts:
                r0, r1 = op.results  # (_h_update_mask on a count chain, read here once)
                env[r0], rest = env[tuple.__getitem__(op._operands, 0)].update_mask(r0.type.nlanes)
                env[r1] = rest if _only_yielded(r1) else rest.array()
            elif cls not in _LANEWISE or not self.lanewise(op, cls, depth):
                h = _HANDLERS.get(cls)
                if h is None:
                    raise _Unfit
                h(self, op, env, depth)  # (the op itself: each is read once here, no _Decoded cache)
                if h in _COMPUTE:  # its register's trip axes, as its data step makes them
                    leads = [_lead(env[v], depth) for v in op.sources if type(env.get(v)) is _Reg]
                    m = op.mask_operand
                    if m is not None:
                        leads.append(_lead(env[m], depth))
                        if op.mode == "MERGING" and not self.all_on(env[m]):
                            leads.append(_lead(env[op.merge_source], depth))
                    env[op.results[0]] = _Reg(_bshape(*leads) if leads else ())
            op = op._next_op
        return log

    def lanewise(self, op, cls, depth: int) -> bool:
        """A binary or unary op under a mask with every lane on (the usual case): _h_binary's or
        _h_unary's step with the operands' padding and the result's shape found now, not per
        launch (the same arrays: a register's shape is its _Reg's trip axes and bytes).  False
        (nothing done) for any other case: the handler plans it."""
        env, srcs, m = self.env, [], None
        for v in op._operands:  # (sources, then the mask: _ComputeOp.sources / mask_operand)
            if type(v.type) is vf.MaskType:
                m = v
                break
            srcs.append(v)
        if m is None or len(srcs) != cls.N_SRC or not self.all_on(env[m]):
            return False
        ins, leads = [], [_lead(env[m], depth)]
        for v in srcs:
            reg = env[v]
            if type(reg) is not _Reg:
                return False
            lead = _lead(reg, depth)
            leads.append(lead)
            ins.append((v, lead + (REG,) if len(reg.lead) < depth else None))  # (as _at pads it)
        lead = _bshape(*leads)
        key = tuple.__getitem__(op.results, 0)
        env[key] = _Reg(lead)
        dt, fn, shape = _vx._dtype_of(op), _vx._RAW[cls.FN], lead + (REG,)
        if dt.kind == "f" and cls.FN in ("maximum", "minimum"):  # (operands of dtype dt: unchecked)
            fn = ew.float_maxmin(cls.FN == "maximum")
        if len(ins) == 2:
            (x, px), (y, py) = ins

            def step(ub, regs):
                a, b = regs[x], regs[y]
                r = _to_reg(fn((a if px is None else a.reshape(px)).view(dt), (b if py is None else b.reshape(py)).view(dt)))
                regs[key] = r if r.shape == shape else np.broadcast_to(r, shape)
        else:
            ((x, px),) = ins

            def step(ub, regs):
                a = regs[x]
                r = _to_reg(fn((a if px is None else a.reshape(px)).view(dt)))
                regs[key] = r if r.shape == shape else np.broadcast_to(r, shape)
        self.steps.append((None, step, None))
        return True

    def address(self, op, depth: int):
        """(tile index, element bytes, the byte address per trip relative to the tile)."""
        operands = tuple(op._operands)
        tile = self.env[operands[0]]
        dyn = self.env[operands[1]] if len(operands) > 1 and type(operands[1].type) is IndexType else 0
        if type(tile) is not _TileArg or type(dyn) in _SYMBOLIC and type(dyn) is not _Affine:
            raise _Unfit
        e = operands[0].type.elem_bytes
        if type(dyn) is not _Affine:
            dyn = _Affine(int(dyn), (), ())
        return tile.k, e, dyn.at(depth).scaled(e, op.static_offset * e)

    def span(self, k: int, addr: _Affine, n: int, align: int) -> tuple:
        """_Batch.span (the steps along the trips now, the rest at a launch) and what a memory op's
        touched bytes and event need, from one walk of the address's axes: the spans' view
        (``(shape, relative offset, strides)``, as _Affine.view), their bounds, the one run of bytes
        they tile (_Affine.run, or None) and the coefficients of the address broadcast to the trips."""
        hi, ks, moving = addr.base, [], []
        for c, size in zip(addr.coefs, addr.shape):
            if c % align or size > 1 and c < 0:
                raise _Unfit  # (a misaligned or descending step: the dynamic path decides)
            if size > 1:
                hi += c * (size - 1)
                ks.append(c)
                moving.append((c, size))
            else:
                ks.append(0)
        lo, ks, step = addr.base, tuple(ks), n
        for c, size in sorted(moving):
            if c != step:  # (c = 0: the spans repeat)
                step = None
                break
            step *= size
        self.checks.append((k, lo, hi, n, align))
        return (addr.shape + (n,), lo, ks + (1,)), lo, hi, (lo, lo + step) if step is not None else None, ks

    def touch(self, write: bool, k: int, addr: _Affine, n: int, run) -> None:
        """_Batch.touch, relative to tile ``k``: one run of bytes, else the spans' starts."""
        self.touched.append((write, k, run, None if run is not None else addr.array(), n))

    def load(self, op, depth: int, shape: tuple, chain: tuple) -> None:
        k, e, addr = self.address(op, depth)
        dist = op.dist_name
        n, align = (REG, 32) if dist == "NORM" else (32, 32) if dist == "BLK" else (e, e)
        if dist not in ("NORM", "BLK") and not dist.startswith("BRC_B"):
            raise _Unfit
        (vshape, rel, strides), lo, hi, run, ks = self.span(k, addr, n, align)
        self.touch(False, k, addr, n, run)
        self.events.append(((False, _Affine(lo, ks, shape), n, chain), k, (lo, hi)))  # (addr.broadcast(shape))
        key = op.results[0]
        self.env[key] = _Reg(vshape[:-1])
        if n < REG:  # the n bytes repeated over the register: a view repeating them in units of
            u = 8 if n % 8 == 0 else n  # up to 8 bytes (aligned: n-aligned spans)
            unit = _vx._UINT[u]
            vshape, strides = vshape[:-1] + (REG // n, n // u), strides[:-1] + (0, u)
            rshape = vshape[:-2] + (REG // u,)

            def step(off, ub, regs):
                regs[key] = np.ndarray(vshape, unit, ub, off, strides).copy().reshape(rshape).view(np.uint8)
        else:
            copies = self.copies

            def step(off, ub, regs):
                got = np.ndarray(vshape, np.uint8, ub, off, strides)
                regs[key] = got.copy() if copies[0] else got  # (copies: see plan)
        self.steps.append((k, step, rel))

    def store(self, op, depth: int, shape: tuple, chain: tuple) -> None:
        k, e, addr = self.address(op, depth)
        value = op.value
        reg, act = self.env[value], self.env[op.mask]
        if type(reg) is not _Reg or type(act) is not np.ndarray:
            raise _Unfit
        lead = _lead(reg, depth)
        dist = op.dist_name
        if dist == "NORM" and self.all_on(act):  # every lane: the mask's trip axes are all that count
            n = REG
            (vshape, rel, strides), lo, hi, run, ks = self.span(k, addr, n, 32)
            full = _bshape(addr.shape, _lead(act, depth), lead) + (n,)
        else:
            act = _at(act, depth, 1)
            if dist == "NORM":
                n, align = REG, 32
            elif dist == "ONEPT":  # lane 0, if active, to an element-aligned address
                n, align, act = e, e, act[..., :1]
            else:
                raise _Unfit
            (vshape, rel, strides), lo, hi, run, ks = self.span(k, addr, n, align)
            full = _bshape(addr.shape + (n,), act.shape[:-1] + (n,), lead + (n,))
        lanes = slice(0, n)  # (ONEPT: lane 0's bytes)
        if full == addr.shape + (n,) and self.all_on(act):  # every byte of every span: one strided assignment
            self.checks.append((k, lo, hi + n, None, None))
            if n == REG:  # (the whole register: no lane slice; padded as _at pads it)
                pad = lead + (REG,) if len(reg.lead) < depth else None

                def step(off, ub, regs):
                    a = regs[value]
                    np.ndarray(vshape, np.uint8, ub, off, strides)[...] = a if pad is None else a.reshape(pad)
            else:
                def step(off, ub, regs):
                    np.ndarray(vshape, np.uint8, ub, off, strides)[...] = _at(regs[value], depth, 1)[..., lanes]
            self.stored.append(len(self.steps))
            self.steps.append((k, step, rel))
            self.touch(True, k, addr, n, run)
        else:
            act = _at(act, depth, 1)  # (padded once)
            keep = np.repeat(act, n // act.shape[-1], axis=-1)
            idx, keep = (np.broadcast_to(x, full) for x in (_bytes(addr.array(), n), keep))
            sel = idx[keep]
            if sel.size:
                self.checks.append((k, int(sel.min()), int(sel.max()) + 1, None, None))

                def step(at, ub, regs):
                    ub[at] = np.broadcast_to(_at(regs[value], depth, 1)[..., lanes], full)[keep]
                self.stored.append(len(self.steps))
                self.steps.append((k, step, sel))
                self.touched.append((True, k, None, sel, 0))
        self.events.append(((True, _Affine(lo, ks, shape), n, chain), k, (lo, hi)))

    def trips_apart(self) -> None:
        """_Batch.check_trips for a top-level loop: pairs of one tile argument now (the answer
        does not depend on where the tile is), pairs of two at a launch (:meth:`StaticPlan.bind`);
        the pairs of :func:`_store_pairs`, in its order."""
        ev = self.events  # (event, tile, the bounds of its span starts: its _Affine's, as broadcast)
        for i, j in _store_pairs([e for e, _, _ in ev]):
            (e1, k1, s1), (e2, k2, s2) = ev[i], ev[j]
            if k1 != k2:
                self.pairs.append((k1, s1, e1[2], k2, s2, e2[2]))
            elif not _apart(s1, e1[2], s2, e2[2]):
                _check_pair(e1, e2, i == j)


class StaticPlan:
    """A VF's batched run decided at the compile (see _Planner): data steps (memory steps bound
    to their tile's address at a launch), a launch's checks, counts and log."""
    __slots__ = ("steps", "checks", "touched", "pairs", "counts", "log", "log_short")

    def bind(self, tiles: list, ub_size: int) -> list | None:
        """The data steps for the tile arguments ``tiles`` (TileRefs, by tile parameter), or None
        when a check fails (a span misaligned or outside the UB, a store outside its tile, trips
        of two tile arguments near each other): the launch then runs through the dynamic path."""
        for k, lo, hi, n, align in self.checks:
            t = tiles[k]
            if align is None:  # a store: inside its tile buffer
                if lo < 0 or hi > t.nbytes:
                    return None
            elif (t.addr + lo) % align or t.addr + lo < 0 or t.addr + hi + n > ub_size:
                return None
        for k1, (lo1, hi1), n1, k2, (lo2, hi2), n2 in self.pairs:
            a1, a2 = tiles[k1].addr, tiles[k2].addr
            if not _apart((lo1 + a1, hi1 + a1), n1, (lo2 + a2, hi2 + a2), n2):
                return None
        return [step if k is None else partial(step, rel + tiles[k].addr) for k, step, rel in self.steps]

    def launch(self, ub: np.ndarray, tiles: list, want_log: bool = True, tape: list | None = None):
        """Run the VF on ``ub`` with the tile arguments ``tiles`` (TileRefs, by tile parameter): its
        vf_executor.VfCallResult, or None (nothing run) when a check fails.  ``tape``: keeps the
        data steps (vf_executor.run_tape)."""
        steps = self.bind(tiles, ub.size)
        if steps is None:
            return None
        regs: dict = {}
        for step in steps:
            step(ub, regs)
        if tape is not None:
            tape += steps
        reads, writes = _vx.Touched(), _vx.Touched()
        for write, k, run, at, n in self.touched:
            a = tiles[k].addr
            touched = writes if write else reads
            if run is not None:
                touched.add(run[0] + a, run[1] + a)
            elif n:
                touched.add_starts(at + a, n)
            else:
                touched.add_bytes(at + a)
        return _vx.VfCallResult(reads, writes, dict(self.counts), list(self.log if want_log else self.log_short))


def static_plan(fn, sizes: tuple) -> tuple:
    """``(plan, loop)``: the StaticPlan of vf.func ``fn``, or None when something of it is known
    at a launch only or it does not run batched (the dynamic path runs it, and reports what it
    finds); ``loop``: a top-level loop found not to run batched at any launch (its trips write
    what other trips touch, a per-trip scalar operand...: _Batch would find the same and undo
    its work), else None."""
    planner = _Planner()
    try:
        return planner.plan(fn, sizes), None
    except Exception:  # (_Unfit, NoBatch, a fault of a constant's arithmetic, an op it does not know)
        return None, planner.unbatched


def _affine_arith(op, vals: list):
    """``op`` on operands of which one at least is an _Affine, as an _Affine (None: the array
    path computes it): ``addi``/``subi``, ``muli`` by a number and the casts
    :meth:`_Batch.arith` batches, when the result fits its integer type (so nothing wraps)."""
    for v in vals:
        if isinstance(v, np.ndarray):
            return None
    name = op.name.split(".", 1)[1]
    a, b = (vals + [None])[:2]
    if name == "addi":
        v = a.combine(b, 1) if isinstance(a, _Affine) else b.combine(a, 1)
    elif name == "subi":
        v = a.combine(b, -1) if isinstance(a, _Affine) else b.scaled(-1, int(a))
    elif name == "muli" and not (isinstance(a, _Affine) and isinstance(b, _Affine)):
        v = a.scaled(int(b)) if isinstance(a, _Affine) else b.scaled(int(a))
    elif name in ("index_cast", "extsi", "trunci"):
        v = a
    else:
        return None
    t = op.results[0].type
    if isinstance(t, IndexType):
        return v
    if not isinstance(t, IntegerType) or t.width.data == 1 or t.signedness.data.name != "SIGNLESS":
        return None
    w = t.width.data
    lo, hi = v.bounds()
    return v if -(1 << (w - 1)) <= lo and hi < 1 << (w - 1) else None


def _bytes(addr: np.ndarray, n: int) -> np.ndarray:
    """The byte addresses ``addr + [0, n)`` of every span (a last axis of n)."""
    return addr[..., None] + np.arange(n, dtype=np.int64)


def _strided(addr: np.ndarray, n: int) -> tuple | None:
    """The spans ``[addr, addr + n)`` as one strided view of the UB bytes, ``(shape, offset,
    strides)`` (shape ``addr.shape + (n,)``), when the addresses are ``base + sum(k_i * t_i)``
    over the trip axes with every ``k_i >= 0`` (the usual hardware loop), else None."""
    if addr.ndim == 0:
        return (n,), int(addr), (1,)
    base = int(addr.flat[0])
    ks = []
    for i, size in enumerate(addr.shape):
        ks.append(int(addr[(0,) * i + (1,) + (0,) * (addr.ndim - i - 1)]) - base if size > 1 else 0)
    if min(ks) < 0:
        return None
    fit = base + sum(k * np.arange(size).reshape((-1,) + (1,) * (addr.ndim - i - 1))
                     for i, (k, size) in enumerate(zip(ks, addr.shape)) if size > 1)
    if not np.array_equal(addr, np.broadcast_to(fit, addr.shape)):
        return None
    return addr.shape + (n,), base, (*ks, 1)


def _run(idx: np.ndarray, ubs: np.ndarray, lo: int) -> slice | None:
    """``idx`` (the same for every scalar-loop trip) as one ascending run of the bytes ``ubs``
    holds (from ``lo``), if it is one."""
    if idx.shape[0] != 1:
        return None
    flat = idx.reshape(-1)
    a = int(flat[0])
    if int(flat[-1]) - a + 1 != flat.size or a < lo or a - lo + flat.size > ubs.shape[1] or \
            not (np.diff(flat) == 1).all():
        return None  # (a masked tail register may reach past the bytes the trips touch)
    return slice(a - lo, a - lo + flat.size)


def _trips(ubs: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The scalar-loop trip index of every element of ``idx`` (its leading axis)."""
    return np.arange(ubs.shape[0]).reshape((-1,) + (1,) * (idx.ndim - 1))


def _spans(addr: np.ndarray, m: int):
    """Per trip the span start, and the trip of the ``m`` outermost loops it belongs to."""
    lead = addr.shape[:m]
    trip = np.arange(int(np.prod(lead)), dtype=np.int64).reshape(lead + (1,) * (addr.ndim - m))
    return addr.reshape(-1), np.broadcast_to(trip, addr.shape).reshape(-1)


def _count_chain(barg, yld, k: int):
    """The ``update_mask`` whose count ``barg`` is, if the loop carries nothing else in it."""
    use = barg.first_use  # (xDSL's use list: ``barg`` used once)
    if use is None or use._next_use is not None:
        return None
    um = use.operation
    if not isinstance(um, vf.UpdateMaskOp) or um.count_in is not barg or \
            tuple.__getitem__(yld._operands, k) is not tuple.__getitem__(um.results, 1):
        return None
    return um


# ---- register ops --------------------------------------------------------------------------------

def _to_reg(values: np.ndarray) -> np.ndarray:
    v = np.ascontiguousarray(values)
    return v.view(np.uint8).reshape(v.shape[:-1] + (REG,))


def _on(b, act, depth):
    """The lanes a compute step replaces (ew.on_active): None when every lane is on."""
    return None if act is None or b.all_on(act) else _at(act, depth, 1)


def _emit(b, op, env, depth, compute, act) -> None:
    """A step setting ``op``'s register to ``compute(regs)`` merged under ``act`` (its mode)."""
    key = op.results[0]
    if act is None:
        def step(ub, regs):
            regs[key] = compute(regs)
    elif b.all_on(act):  # every lane active (the usual case): nothing to merge
        full, shape = _at(act, depth, 1).shape[:-1] + (REG,), None

        def step(ub, regs):
            nonlocal shape
            res = compute(regs)
            if shape is None:  # the same every run: the shapes are the loops'
                shape = _bshape(res.shape, full)
            regs[key] = res if res.shape == shape else np.broadcast_to(res, shape)
    else:
        act = _at(act, depth, 1)
        keep = np.repeat(act, REG // act.shape[-1], axis=-1)
        if op.mode == "MERGING":
            src = op.merge_source

            def step(ub, regs):
                regs[key] = np.where(keep, compute(regs), _at(regs[src], depth, 1))
        else:
            def step(ub, regs):
                regs[key] = np.where(keep, compute(regs), np.uint8(0))
    b.r.emit(step)


def _bshape(*shapes: tuple) -> tuple:
    """np.broadcast_shapes of shapes that broadcast (the batch's: trip axes and lanes), in Python."""
    n = max(len(x) for x in shapes)
    out = []
    for dims in zip(*((1,) * (n - len(x)) + tuple(x) for x in shapes)):
        out.append(0 if 0 in dims else max(dims))
    return tuple(out)


def _scalar(v):
    if isinstance(v, (np.ndarray, _Affine)) and v.shape:
        raise NoBatch  # a per-trip scalar operand
    return v.base if isinstance(v, _Affine) else v


def _h_binary(b, op, env, depth):
    dt, fn, (x, y) = _vx._dtype_of(op), _vx._RAW[op.FN], op.sources
    act = env[op.mask_operand]
    on = _on(b, act, depth)
    _emit(b, op, env, depth, lambda regs: _to_reg(ew.on_active(
        fn, on, _at(regs[x], depth, 1).view(dt), _at(regs[y], depth, 1).view(dt))), act)


def _h_scalar(b, op, env, depth):
    dt, fn, x = _vx._dtype_of(op), _vx._RAW[op.FN], op.sources[0]
    s = ew.scalar_to(_scalar(env[op.scalar]), dt)
    act = env[op.mask_operand]
    on = _on(b, act, depth)

    def compute(regs):
        xv = _at(regs[x], depth, 1).view(dt)
        return _to_reg(ew.on_active(fn, on, xv, np.broadcast_to(s, xv.shape)))
    _emit(b, op, env, depth, compute, act)


def _h_unary(b, op, env, depth):
    dt, fn, x = _vx._dtype_of(op), _vx._RAW[op.FN], op.sources[0]
    act = env[op.mask_operand]
    on = _on(b, act, depth)
    _emit(b, op, env, depth, lambda regs: _to_reg(ew.on_active(fn, on, _at(regs[x], depth, 1).view(dt))), act)


def _h_dup(b, op, env, depth):
    dt = _vx._dtype_of(op)
    n = REG // dt.itemsize
    if isinstance(op.source.type, vf.RegType):
        src = op.source

        def compute(regs):
            return _to_reg(np.repeat(_at(regs[src], depth, 1).view(dt)[..., :1], n, axis=-1))
    else:
        res = _to_reg(np.repeat(ew.scalar_to(_scalar(env[op.source]), dt).reshape(1), n, axis=-1))

        def compute(regs):
            return res  # registers are never written in place
    m = op.mask_operand
    _emit(b, op, env, depth, compute, env[m] if m is not None else None)


def _h_reduce(b, op, env, depth):
    dt, kind, src, key = _vx._dtype_of(op), op.KIND, op.sources[0], op.results[0]
    act = _at(env[op.mask_operand], depth, 1)
    s = _vx.group_size(dt, op.is_datablock)
    datablock, old = op.is_datablock, op.merge_source if op.mode == "MERGING" else None

    def step(ub, regs):
        x = _at(regs[src], depth, 1).view(dt)
        shape = _bshape(x.shape, act.shape)
        lead = shape[:-1]
        xg, ag = np.broadcast_to(x, shape).reshape(-1, s), np.broadcast_to(act, shape).reshape(-1, s)
        if kind == "sum":
            vals, idx = _vx._tree_sum(xg, ag), None
        else:
            vals, idx = _vx._extreme(xg, ag, kind)
        vals = vals.reshape(lead + (-1,))
        if old is not None:
            out = np.array(np.broadcast_to(_at(regs[old], depth, 1), lead + (REG,)), np.uint8)
        else:
            out = np.zeros(lead + (REG,), np.uint8)
        ov = out.view(dt)
        if datablock:
            ov[..., :vals.shape[-1]] = vals
        else:
            ov[..., 0] = vals[..., 0]
            if idx is not None:
                out.view(_vx._UINT[dt.itemsize])[..., 1] = idx.reshape(lead + (-1,))[..., 0]
        regs[key] = out
    b.r.emit(step)


def _h_create_mask(b, op, env, depth):
    env[op.results[0]] = _vx.mask_of(op.pattern_name, op.results[0].type.nlanes)


def _h_update_mask(b, op, env, depth):
    count = env[op.count_in]
    nl = op.results[0].type.nlanes
    if isinstance(count, _TripCounts):
        env[op.results[0]], rest = count.update_mask(nl)
        env[op.results[1]] = rest if _only_yielded(op.results[1]) else rest.array()
        return
    count = _value(count)
    if not isinstance(count, np.ndarray):  # loop-invariant: as one trip runs it
        return _vx._h_update_mask(b.r, op, env)
    u = np.asarray(count, np.int64) & 0xFFFFFFFF
    env[op.results[0]] = np.arange(nl) < np.minimum(u, nl)[..., None]
    rest = np.where(u < nl, 0, u - nl)
    env[op.results[1]] = rest if rest.ndim else int(rest)


def _only_yielded(v) -> bool:
    """Is ``v`` used by nothing but a loop's yield (so its array is never needed)?"""
    use = v.first_use  # (xDSL's use list, walked as v.uses walks it)
    while use is not None:
        if not isinstance(use.operation, scf.YieldOp):
            return False
        use = use._next_use
    return True


_HANDLERS = {
    vf.CreateMaskOp: _h_create_mask, vf.UpdateMaskOp: _h_update_mask,
    vf.LoadAlignOp: _Batch.load, vf.StoreAlignOp: _Batch.store,
    **{c: _h_binary for c in vf.BINARY_OPS.values()}, **{c: _h_scalar for c in vf.SCALAR_OPS.values()},
    **{c: _h_unary for c in vf.UNARY_OPS.values()}, vf.DupOp: _h_dup,
    **{c: _h_reduce for c in vf.REDUCE_OPS.values()},
}

_LANEWISE = frozenset((*vf.BINARY_OPS.values(), *vf.UNARY_OPS.values()))
"""The op classes a static plan may plan itself (_Planner.lanewise)."""

_COMPUTE = frozenset((_h_binary, _h_scalar, _h_unary, _h_dup, _h_reduce))
"""The batched handlers that set a register (a static plan notes its shape)."""

# vf_executor imports this module (run_batched) as it loads; imported last, the reference works
# whichever of the two loads first, and the handlers find its helpers without an import per call
from . import vf_executor as _vx  # noqa: E402
