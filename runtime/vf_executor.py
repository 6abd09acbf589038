"""The NumPy executor of ``vf`` code (A5 / ascend950 vector functions), exact per register.

Two entry points:

* :class:`VfRunner` / :func:`run_vf` execute one ``vf.func`` body (one ``vf.call``) on a UB
  byte array: tile arguments are UB byte addresses, scalars are numbers.  Each register op is
  one vectorised NumPy step; an ``scf.for`` hardware loop runs batched over all its trips
  when they do not feed each other (runtime/vf_batch.py), else per trip; ``arith`` ops use
  the golden model's scalar semantics (runtime/reference.py).
* :func:`run_vf_kernel` runs a whole kernel written with ``vf`` ops: GM in and out through
  ``pto.tload``/``pto.tstore`` (the golden model's data movement, with the tiles living in a
  UB byte array that the VFs read and write), ``vf.call`` launching the VFs.  This is what
  ``ptoc --run`` uses for a kernel with no tile-level golden model (nothing is compared).

Machine model (reference/vector_isa.md §2, seeds/001, seeds/002)
===============================================================
* A register is a ``uint8[256]`` array; an op views it as its element type: 256 x b8,
  128 x b16, 64 x b32, 32 x b64 lanes.  Registers are SSA values: every op makes a new array.
* A mask is a ``bool[lanes]`` array, one entry per lane of its width (b8/b16/b32/b64).
* Element math is ``runtime/elementwise.py`` (the golden model's): floats round once to the
  element type (f16 through f32), NaN results are the canonical quiet NaN, ``max``/``min`` follow
  seeds/002 (NaN wins, ``-0 < +0``), integers wrap.  ``exp`` is computed in float64, rounded once.
* **Merge modes**: an op writes its result to the lanes its mask selects; the other lanes are 0
  (``ZEROING``, all bits clear) or keep the bits of the merge source (``MERGING``: the op's
  ``dst`` operand, else its first register operand), copied byte for byte.
* ``create_mask``: ALL, ALLF (no lane), VLn (first n), H (first lanes/2), Q (first lanes/4),
  M3/M4 (first largest multiple of 3/4 lanes, as SVE's MUL3/MUL4 which these names mirror;
  inferred).  ``update_mask %count`` (UpdateMask/plt POST_UPDATE): the count is read as uint32;
  the mask is the first ``min(count, lanes)`` lanes and the new count ``count < lanes ? 0 :
  count - lanes`` (vector_isa.md §2.2).

Memory (UB bytes; offsets are in elements of the tile's type)
-------------------------------------------------------------
* ``load_align`` NORM: 256 bytes at a 32-byte aligned address; BRC_Bn: the element at an
  element-aligned address copied to every lane (vector_isa.md §2.4 and open point 3: [VD] asks
  for 32 bytes, the A5 headers use element offsets); BLK: the 32-byte block at a 32-byte aligned address repeated 8 times (lane i = element
  ``i mod (32/E)``).  Loads read whole registers without a mask: seeds/001 loads the tail chunk
  unmasked ("尾部多读后续屏蔽") and masks it later, so a load may read past its tile; it must stay
  in the UB.
* ``load_unalign``: 256 bytes from an element-aligned address (vldas + vldus).
* ``store_align`` NORM: the active lanes to a 32-byte aligned address, other bytes untouched;
  ONEPT: lane 0 (if its mask lane is active) to an element-aligned address.  Stores must stay in
  their tile buffer's bytes (``rows x cols x E`` from its base): anything else is a ``bounds``
  finding.
* ``store_unalign %t[off], %v, count = N``: the low N lanes go into the unaligned-store buffer
  of ``%t`` (one per tile argument; Ascend C's ``UnalignRegForStore``).  Buffered bytes reach
  the UB when the stream moves past their 32-byte block (the bytes of every block before the
  block holding the stream's end are written) or at ``store_unalign_post %t``, which writes
  all of them; bytes still buffered when the VF ends are lost, which is why the verifier pairs
  the two ops.
* Alignment and bounds violations are ``align`` / ``bounds`` findings (ExecutionError, exit 4),
  located at the op.

Reductions (seeds/002; the decisions where it leaves a choice)
--------------------------------------------------------------
* ``reduce_min``: over the active lanes, ``dst[0]`` = the minimum, ``dst[1]`` = the index of the
  **first** lane holding it; all other lanes 0 (ZEROING) or kept (MERGING).  Floats: any active
  NaN makes ``dst[0]`` the type's canonical quiet NaN and ``dst[1]`` the first NaN's index;
  ``-0 < +0`` (``min(-0, +0) = -0``; the index is that of the first ``-0``).  An empty mask gives
  the type's maximum (``+inf`` for f16/f32, ``INT32_MAX`` for i32, ``UINT16_MAX`` for ui16, ...)
  and index 0.  ``reduce_max`` mirrors it (first maximum, ``max(-0, +0) = +0``, NaN wins, an
  empty mask gives the type's minimum: ``-inf``, ``INT32_MIN``, 0 for unsigned types).
* **Index encoding** (as vcmin stores it): ``dst[1]`` holds the index as an unsigned integer of
  the lane's width, bit for bit: for f32 lanes, lane 1's 32 bits are the uint32 index (so read
  as a float it is a denormal: index 3 reads as 4.2e-45); for f16 the 16 bits are a uint16; for
  i64 it is the int64 index.  Read it with ``dst.view(uint32)[1]`` and so on.
* ``reduce_sum``: ``dst[0]`` = the sum of the active lanes in the element type, no index.
  **Order**: a pairwise tree over all lanes of the group, with inactive lanes as +0: level 1
  adds lanes (0,1), (2,3), ..., each level adds neighbouring partial sums, every addition
  rounded to the element type (f16 through f32, as the elementwise functions do); integers wrap.
  (vector_isa.md §1.6: [VD] "cross-lane reductions are tree-structured"; so an all-(-0) sum
  with any inactive lane is +0, and an empty mask gives +0.)
* **datablock = true** (vcgmin/vcgmax/vcgadd): seeds/002 gives the datablock as 32 elements of a
  16-bit type and 16 of a 32-bit type, i.e. 64 bytes, four per register
  (``vf.DATABLOCK_BYTES``).  Its second statement, that the results are to be read "at a
  16/32-element stride", is the same number seen from the source: result k reduces source lanes
  ``[k*S, (k+1)*S)`` (S = 16 for 32-bit, 32 for 16-bit types).  The results themselves go, in
  order, to the **low lanes** 0..3 of dst (the article: "依次写入dst低位"), one value each with no
  index; lanes 4.. are 0 (ZEROING) or kept (MERGING).  Each group follows the whole-register
  rules (NaN, ±0, empty group -> type max/min/+0, the sum tree within the group).
  vector_isa.md §2.1 instead describes 8 VLanes of 32 bytes; the hardware vcg* result count is
  therefore an open point, isolated in ``vf.DATABLOCK_BYTES``.

Kernels (:func:`run_vf_kernel`)
-------------------------------
Inputs, GM shapes, outputs and their names follow the golden model's I/O conventions
(runtime/reference.py: GM arguments named after the kernel's arguments, outputs = the GM
arguments a tstore writes).  Tiles are placed in a UB byte array of the target's size:
``pto.alloc_tile addr = %a``, ``pto.tassign`` or pto-plan-memory's ``ub_addr`` attribute at
the given address, the others after the
highest given address, each 256-byte aligned, in order of first allocation (tile arguments of
the kernel first).  ``tload``, ``tstore`` and other tile ops run with the golden model's
semantics on tiles that are views of those UB bytes; ``vf.call`` runs the VF on the same bytes.
``pto.section.*`` bodies run inline.

Hazards: a kernel with explicit synchronisation (``pto.set_flag``, ``pto.wait_flag``,
``pto.barrier``) is checked by the a2a3 executor's vector-clock race checker
(runtime/executor.py): ``tload`` is an MTE2 access, ``tstore`` MTE3, ``vf.call`` and other tile
ops V, flags and barriers order them as on a2a3.  VF launches on the V pipe complete in order
(a VF starts after the previous one ends), so V needs no pipe_barrier between them; MTE2/MTE3
keep the a2a3 rule (RAW/WAW within a pipe need a barrier).  A ``wait_flag`` with no earlier
``set_flag`` is a deadlock (ops run in program order).  A kernel with no sync op at all is a
tile-level kernel, synchronised later by pto-insert-sync: it runs in program order unchecked
(``check="auto"``; ``check=True`` forces checking, ``False`` turns it off).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FileLineColLoc, Float16Type, Float32Type, IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from pto_compiler.diagnostics import PtocError, op_error
from pto_compiler.dialects import pto, vf

from . import elementwise as ew
from . import reference as golden
from .executor import ExecutionError, Finding, _Acc
from .hazards import Footprint
from .vf_batch import run_batched, static_plan
from .program import Origin

REG = vf.REG_BYTES

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


# ---------------------------------------------------------------------------------------------
# Findings
# ---------------------------------------------------------------------------------------------

class _Site:
    """Duck-types ``program.Instr`` for Finding/ExecutionError (and the executor's race reports)."""

    def __init__(self, op: Operation, text: str | None = None, pipe: str = "V"):
        self.op = op
        self.opcode = op.name
        self.pipe = pipe
        self.text = text or op.name
        loc = op.location
        self.origin = Origin(loc.filename.data, loc.line.data, loc.column.data, op.name) \
            if isinstance(loc, FileLineColLoc) else None

    def to_text(self, depth: int = 0, origin: bool = True) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


class VfFault(Exception):
    """An execution error inside a VF (bounds, alignment, loop limit): a Finding at the op."""

    def __init__(self, kind: str, message: str, op: Operation):
        super().__init__(message)
        self.finding = Finding(kind, message, (_Site(op),))


def _fault(kind: str, op: Operation, message: str) -> VfFault:
    return VfFault(kind, f"{op.name}: {message}", op)


# ---------------------------------------------------------------------------------------------
# Register semantics (public: the tests drive them directly with arbitrary masks)
# ---------------------------------------------------------------------------------------------

def np_dtype(elt) -> np.dtype:
    return ew.np_dtype(pto.dtype_name(elt))


def lanes(reg: np.ndarray, dtype) -> np.ndarray:
    """The lanes of a 256-byte register as an array of ``dtype`` (a view)."""
    return reg.view(np.dtype(dtype))


def to_reg(values: np.ndarray) -> np.ndarray:
    """Lane values (any dtype, 256 bytes in all) -> a fresh uint8[256] register."""
    out = np.ascontiguousarray(values).reshape(-1).view(np.uint8).copy()
    if out.size != REG:
        raise ValueError(f"a register holds 256 bytes, got {out.size}")
    return out


def merge(result: np.ndarray, act: np.ndarray, mode: str, old: np.ndarray | None) -> np.ndarray:
    """Lanes of ``result`` (uint8[256]) where ``act`` (bool[lanes]) is set, the rest 0 (ZEROING) or
    the bytes of ``old`` (MERGING), byte for byte."""
    e = REG // act.size
    keep = np.repeat(act, e)
    if mode == "MERGING":
        return np.where(keep, result, old)
    return np.where(keep, result, np.uint8(0))


@lru_cache(maxsize=None)
def first_lanes(n: int, nlanes: int) -> np.ndarray:
    """The mask of the first ``n`` of ``nlanes`` lanes (made once per pair, read-only: masks are
    values, never written in place)."""
    if 0 <= n <= nlanes:  # (bytes, read-only as they are: a cold process pays ~40 us for np.zeros,
        act = np.frombuffer(b"\x01" * n + bytes(nlanes - n), np.bool_)  # a slice set and flags, ~10 here)
    else:
        act = np.zeros(nlanes, bool)
        act[:n] = True  # (not arange < n: a cold process pays ~0.1 ms for that comparison's first call)
        act.flags.writeable = False
    if n >= nlanes:
        _WHOLE.add(id(act))  # (kept alive by the cache: the id stays this mask's)
    return act


_WHOLE: set = set()
"""ids of the masks :func:`first_lanes` made with every lane on."""


def all_lanes(act: np.ndarray) -> bool:
    """Is every lane of the mask ``act`` on (the usual mask: known without looking)?"""
    if id(act) in _WHOLE:
        return True
    if act.dtype == np.bool_:  # a byte per lane, none zero (a cold NumPy reduction cost ~14 us)
        return 0 not in act.tobytes()
    return bool(act.all())


def mask_of(pattern: str, nlanes: int) -> np.ndarray:
    return first_lanes(vf.pattern_lanes(pattern, nlanes), nlanes)


def update_mask(count: int, nlanes: int) -> tuple[np.ndarray, int]:
    """UpdateMask/plt: (first min(count, lanes) lanes, count < lanes ? 0 : count - lanes); count is uint32."""
    u = int(count) & 0xFFFFFFFF
    rest = 0 if u < nlanes else u - nlanes
    return first_lanes(min(u, nlanes), nlanes), rest


def type_extreme(dtype, largest: bool):
    """The type's maximum (largest) or minimum: ±inf for floats, the integer range ends otherwise."""
    dt = np.dtype(dtype)
    if ew.is_float_dtype(dt):
        return np.array(np.inf if largest else -np.inf, dtype=np.float64).astype(dt)
    lo, hi = ew.int_range(dt)
    return np.array(hi if largest else lo, dtype=dt)


def group_size(dtype, datablock: bool) -> int:
    """Lanes per reduced group: the whole register, or one datablock (vf.DATABLOCK_BYTES)."""
    e = np.dtype(dtype).itemsize
    return (vf.DATABLOCK_BYTES if datablock else REG) // e


def _extreme(x: np.ndarray, act: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Per group (rows of x): value and index of the first min/max among the active lanes."""
    dt = x.dtype
    g = x.shape[0]
    any_act = act.any(axis=1)
    if ew.is_float_dtype(dt):
        xf = x.astype(np.float64)
        nan = np.isnan(xf) & act
        has_nan = nan.any(axis=1)
        # -0 sorts below +0: key(-0) is the float64 value just below 0 (no f16/f32 value lies between)
        key = np.where((xf == 0) & np.signbit(xf), -np.float64(5e-324), xf)
        key = np.where(nan, 0.0, key)
        fill = np.inf if kind == "min" else -np.inf
        kact = act & ~nan
        m = (np.min if kind == "min" else np.max)(np.where(kact, key, fill), axis=1)
        hit = kact & (key == m[:, None])
        idx = np.where(has_nan, np.argmax(nan, axis=1), np.argmax(hit, axis=1))
        val = x[np.arange(g), idx].copy()
        val[has_nan] = ew.canonical_nan(dt)
    else:
        ext = type_extreme(dt, kind == "min")
        m = (np.min if kind == "min" else np.max)(np.where(act, x, ext), axis=1)
        hit = act & (x == m[:, None])
        idx = np.argmax(hit, axis=1)
        val = x[np.arange(g), idx].copy()
    empty = ~any_act
    if empty.any():
        val[empty] = type_extreme(dt, kind == "min")
        idx = np.where(empty, 0, idx)
    return val, idx


def _tree_sum(x: np.ndarray, act: np.ndarray) -> np.ndarray:
    """Per group: pairwise tree (lanes 2k and 2k+1, recursively), inactive lanes +0, each add rounded."""
    return ew.tree(ew.add, np.where(act, x, np.zeros((), x.dtype)))


def reduce(kind: str, src: np.ndarray, act: np.ndarray, dtype, *, datablock: bool = False,
           mode: str = "ZEROING", old: np.ndarray | None = None) -> np.ndarray:
    """``vf.reduce_{min,max,sum}`` on a register: src/old uint8[256], act bool[lanes] -> uint8[256]."""
    dt = np.dtype(dtype)
    x = lanes(src, dt)
    n = x.size
    s = group_size(dt, datablock)
    xg, ag = x.reshape(n // s, s), act.reshape(n // s, s)
    out = np.zeros(REG, np.uint8) if mode != "MERGING" else np.array(old, dtype=np.uint8, copy=True)
    ov = out.view(dt)
    if kind == "sum":
        vals, idx = _tree_sum(xg, ag), None
    else:
        vals, idx = _extreme(xg, ag, kind)
    if datablock:
        ov[: vals.size] = vals
        return out
    ov[0] = vals[0]
    if idx is not None:
        out.view(_UINT[dt.itemsize])[1] = idx[0]
    return out


# ---------------------------------------------------------------------------------------------
# The VF interpreter
# ---------------------------------------------------------------------------------------------

@dataclass
class TileRef:
    """A tile argument of a VF: its UB byte address and its size in bytes."""
    addr: int
    nbytes: int


class Touched:
    """UB bytes a VF touched, kept as the byte runs of its accesses and merged once into a
    Footprint: a per-byte mask of the whole UB cost more than a batched VF itself."""

    def __init__(self):
        self.spans: list[tuple[int, int]] = []
        self.runs: list[tuple[np.ndarray, int]] = []

    def add(self, lo: int, hi: int) -> None:
        self.spans.append((lo, hi))

    def add_starts(self, starts: np.ndarray, n: int) -> None:
        """``[s, s + n)`` for every ``s`` of ``starts``."""
        flat = np.asarray(starts, np.int64).reshape(-1)
        if flat.size == 1 or (flat.size and (np.diff(flat) == n).all()):  # one ascending run (the usual loop)
            self.add(int(flat[0]), int(flat[-1]) + n)
        else:
            self.runs.append((flat, n))

    def add_bytes(self, idx: np.ndarray) -> None:
        lo, hi = int(idx.min()), int(idx.max()) + 1
        if hi - lo == idx.size:  # distinct ascending or not, they fill [lo, hi)
            self.add(lo, hi)
        else:
            self.add_starts(idx, 1)

    def footprint(self, within: Sequence[tuple[int, int]] | None = None) -> Footprint:
        """The bytes touched (only those inside one of the ``within`` spans, if given)."""
        if not self.runs:  # byte ranges only (the usual VF): one merged range, found in Python
            spans = []  # (plain loops: a fresh process pays for each generator's first run)
            for lo, hi in self.spans:
                if within is None:
                    if hi > lo:
                        spans.append((lo, hi))
                    continue
                for a, b in within:
                    a, b = max(lo, a), min(hi, b)
                    if b > a:
                        spans.append((a, b))
            if not spans:
                return Footprint((), ())
            spans.sort()
            lo, hi = spans[0]
            for a, b in spans:
                if a > hi:
                    break  # a gap: several ranges, merged below
                hi = max(hi, b)
            else:
                return Footprint.span(lo, hi)
        los = [s for s, _ in self.runs]
        his = [s + n for s, n in self.runs]
        if self.spans:
            a = np.array(self.spans, np.int64)
            los.append(a[:, 0])
            his.append(a[:, 1])
        if not los:
            return Footprint((), ())
        lo, hi = np.concatenate(los), np.concatenate(his)
        if within is not None:  # each run clipped to each span: the union of the intersections
            lo, hi = (np.concatenate([np.maximum(lo, a) for a, _ in within] or [lo[:0]]),
                      np.concatenate([np.minimum(hi, b) for _, b in within] or [hi[:0]]))
        return Footprint.of_ranges(lo, hi)


@dataclass
class VfCallResult:
    reads: Touched
    """UB bytes the VF read."""
    writes: Touched
    """UB bytes the VF wrote."""
    counts: dict = field(default_factory=dict)
    """Executed ops per name (loop bodies per trip)."""
    log: list = field(default_factory=list)
    """The executed stream for the cycle model (runtime/cycles.py ``vf_timing``): ``(LOG_OP, op)``
    per executed op, ``(LOG_ENTER | LOG_TRIP | LOG_EXIT, for_op)`` around hardware loops run trip
    by trip, ``(LOG_LOOP, (for_op, trip_log, trips))`` for a loop whose trips ran the same stream
    (runtime/vf_batch.py); :func:`expand_log` spells those out."""


_FN = {c.FN: getattr(ew, c.FN) for c in (*vf.BINARY_OPS.values(), *vf.SCALAR_OPS.values(), *vf.UNARY_OPS.values())}
_RAW = {k: f.fn for k, f in _FN.items()}
"""The raw element functions (no ``np.errstate`` per call): the batched steps run inside a VF
launch, and every launch runs under one (the executor's run, :func:`run_vf`, the kernel runner)."""


LOG_OP, LOG_ENTER, LOG_TRIP, LOG_EXIT, LOG_LOOP = range(5)


def expand_log(log: list) -> list:
    """``log`` with every ``LOG_LOOP`` entry written out trip by trip."""
    out = []
    for kind, x in log:
        if kind == LOG_LOOP:
            op, per_trip, trips = x
            body = expand_log(per_trip)
            out += [(LOG_ENTER, op)] + ([(LOG_TRIP, op)] + body) * trips + [(LOG_EXIT, op)]
        else:
            out.append((kind, x))
    return out


class VfRunner:
    """Runs ``vf.func`` bodies on one UB byte array (``uint8``).

    Each op is decoded where it runs into its static part (addresses, masks, scalars, loop
    trips, footprints: none of them depends on register data, which never flows into a scalar)
    and a data step ``step(ub, regs)`` that reads and writes only the UB and the register
    values; the step runs at once.  With ``tape`` the steps are kept too: :func:`run_tape`
    replays the call on other data without decoding anything again."""

    depth = 0
    all_batched = True
    """Every hardware loop ran batched and no memory op ran outside one."""
    unbatched = None
    """A top-level loop of the VF running that never runs batched (VfPlan.unbatched)."""

    def __init__(self, ub: np.ndarray, want_log: bool = True, outer=None, tape: list | None = None):
        # want_log: keep the executed stream (log) for the cycle model; outer: (ubs, lo), run for
        # every trip of a batched scalar loop (vf_batch.run_batched); tape: the data steps run so
        # far, in order (when kept)
        self.ub, self.want_log, self.outer, self.tape = ub, want_log, outer, tape
        self.counts: dict[str, int] = {}

    def emit(self, step) -> None:
        """Run the data step ``step(ub, regs)`` (and keep it on the tape)."""
        step(self.ub, self.regs)
        if self.tape is not None:
            self.tape.append(step)

    # ---- entry -------------------------------------------------------------------------
    def call(self, fn: vf.VfFuncOp, args: Sequence) -> VfCallResult:
        """Run ``fn``; ``args`` per parameter: a TileRef (or a byte address) for a tile, a number for a scalar.
        Raises :class:`VfFault` on an invalid access.  A VF with a static plan whose checks these
        addresses pass runs its planned steps (runtime/vf_batch.py StaticPlan.launch), not the
        decoding below."""
        plan = vf_plan(fn)
        sizes = plan.sizes
        if len(args) != len(sizes):
            raise ValueError(f"@{fn.sym_name.data} takes {len(sizes)} arguments, {len(args)} given")
        if plan.static is not None and self.outer is None:  # decided by the compile, if the checks pass
            res = plan.static.launch(self.ub, [a if type(a) is TileRef else TileRef(int(a), n)
                                               for a, n in zip(args, sizes) if n is not None], self.want_log, self.tape)
            if res is not None:
                return res
        return self.run_dynamic(fn, args, plan)

    def run_dynamic(self, fn: vf.VfFuncOp, args: Sequence, plan: "VfPlan") -> VfCallResult:
        """:meth:`call` without the static plan: decode and run ``fn`` op by op (batching its
        top-level loops where run_batched can)."""
        self.unbatched = plan.unbatched
        params = fn.args
        self.reads = Touched()
        self.writes = Touched()
        self.pending: dict[int, set[int]] = {}
        """Per tile address: the UB bytes in its unaligned-store buffer (their data is a step's)."""
        self.counts = {}
        self.log: list = []
        env: dict = {}
        self.regs = env
        """Register values by SSA value (the decoding reads the static values from it too)."""
        for p, a in zip(params, args):
            t = p.type
            if isinstance(t, pto.TileLikeType):
                if not isinstance(a, TileRef):
                    a = TileRef(int(a), _nbytes(t))
                env[p] = a
            else:
                env[p] = golden.coerce_scalar(a, t)
        self.run_block(plan.body, env)
        return VfCallResult(self.reads, self.writes, dict(self.counts), self.log)

    def run_block(self, plan: "_BlockPlan", env: dict) -> tuple:
        """Run one trip of a block (its :class:`_BlockPlan`); returns what its yield hands on."""
        log, counts = self.log, self.counts
        for code, op, entry, name, x in plan.entries:
            if code == _YIELD:
                log.append(entry)
                return x
            counts[name] = counts.get(name, 0) + 1
            log.append(entry)
            if code == _CONST:
                env[x[0]] = x[1]
            elif code == _OP:
                if x[3] and self.depth == 0:
                    self.all_batched = False
                x[0](self, x[2], env)
            elif code == _ARITH:
                run_arith(op, env)
            elif code == _FOR:
                self._for(op, x, env)
            else:
                raise _fault("invalid", op, "cannot run inside a VF")
        return ()

    def _for(self, op: scf.ForOp, fp: "_ForPlan", env: dict) -> None:
        lb, ub, step = int(env[fp.lb]), int(env[fp.ub]), int(env[fp.step])
        if step <= 0:
            raise _fault("invalid", op, f"hardware loop step must be positive, got {step}")
        trips = max(0, -(-(ub - lb) // step))
        if trips > vf.HW_LOOP_MAX:
            raise _fault("invalid", op, f"hardware loop runs {trips} trips, more than {vf.HW_LOOP_MAX} (uint16)")
        if self.depth == 0 and (op is not self.unbatched or self.outer) and run_batched(self, op, fp, env):
            return
        self.all_batched = False
        srcs, body, args = fp.inits, fp.body, fp.args
        self.depth += 1
        log, trip_logs = self.log, []
        for i in range(lb, ub, step):
            self.log = []
            trip_logs.append(self.log)
            # SSA values are defined once: the body's values of one trip overwrite the previous
            # trip's in the same environment (nothing outside the loop can name them)
            env[args[0]] = i
            self._carry(args[1:], srcs, env)
            srcs = self.run_block(body, env)
        self.depth -= 1
        self.log = log
        if trip_logs and all(t == trip_logs[0] for t in trip_logs):  # every trip ran the same stream
            log.append((LOG_LOOP, (op, trip_logs[0], len(trip_logs))))
        else:
            log.append((LOG_ENTER, op))
            for t in trip_logs:
                log.append((LOG_TRIP, op))
                log.extend(t)
            log.append((LOG_EXIT, op))
        self._carry(fp.results, srcs, env)

    def _carry(self, dsts, srcs, env: dict) -> None:
        """``dsts`` take the values of ``srcs`` at once (a trip's yield): registers in a data step."""
        regs = [(d, s) for d, s in zip(dsts, srcs) if isinstance(s.type, vf.RegType)]
        for d, s in zip(dsts, srcs):
            if not isinstance(s.type, vf.RegType):
                env[d] = env[s]
        if regs:
            def step(ub, env):
                vals = [env[s] for _, s in regs]
                for (d, _), v in zip(regs, vals):
                    env[d] = v
            self.emit(step)

    # ---- memory helpers ----------------------------------------------------------------------
    def _addr(self, op: vf._MemOp, env: dict) -> tuple[TileRef, int, int]:
        tile: TileRef = env[op.tile]
        e = op.tile_type.elem_bytes
        off = op.static_offset + (int(env[op.dyn_offset]) if op.dyn_offset is not None else 0)
        return tile, tile.addr + off * e, e

    def _check(self, op, addr: int, nbytes: int, align: int, what: str) -> None:
        if addr % align:
            raise _fault("align", op, f"{what} address {addr:#x} is not {align}-byte aligned")
        if addr < 0 or addr + nbytes > self.ub.size:
            raise _fault("bounds", op, f"{what} touches UB bytes [{addr:#x}, {addr + nbytes:#x}) outside the "
                                       f"{self.ub.size // 1024} KiB UB")

    def _read(self, op, addr: int, nbytes: int, align: int, what: str) -> int:
        """Check and note a read of ``nbytes`` at ``addr``; returns ``addr``."""
        self._check(op, addr, nbytes, align, what)
        self.reads.add(addr, addr + nbytes)
        return addr

    def _write(self, op, tile: TileRef, idx: np.ndarray, data) -> None:
        """A step writing ``data(regs)`` to the UB bytes ``idx`` (ascending, distinct)."""
        if idx.size == 0:
            return
        lo, hi = int(idx[0]), int(idx[-1]) + 1
        if lo < tile.addr or hi > tile.addr + tile.nbytes:
            raise _fault("bounds", op, f"writes UB bytes [{lo:#x}, {hi:#x}) outside its tile buffer "
                                       f"[{tile.addr:#x}, {tile.addr + tile.nbytes:#x})")
        if hi > self.ub.size:
            raise _fault("bounds", op, f"writes UB bytes up to {hi:#x}, outside the UB")
        self.writes.add_bytes(idx)
        sel = slice(lo, hi) if hi - lo == idx.size else idx

        def step(ub, regs):
            ub[sel] = data(regs)
        self.emit(step)

    def _flush(self, op, tile: TileRef, upto_block: int | None) -> None:
        buf = self.pending.get(tile.addr)
        if not buf:
            return
        keys = sorted(k for k in buf if upto_block is None or k // 32 < upto_block)
        if not keys:
            return
        buf.difference_update(keys)
        stage = (_STAGE, tile.addr)
        self._write(op, tile, np.array(keys, dtype=np.int64),
                    lambda regs: np.array([regs[stage].pop(k) for k in keys], dtype=np.uint8))


def _nbytes(t: pto.TileLikeType) -> int:
    """The bytes of a tile buffer of type ``t``."""
    return t.rows * t.cols * t.elem_bytes


def run_arith(op: Operation, env: dict) -> None:
    """A scalar ``arith`` op with the golden model's semantics (decoded once per op)."""
    run = getattr(op, "_vfa", None)
    if run is None:
        run = op._vfa = _int_constant(op) or golden.decode_arith(op) or (
            lambda env: env.update(zip(op.results, golden._eval_arith(op, env))))
    try:
        run(env)
    except (NotImplementedError, ZeroDivisionError) as e:
        raise _fault("invalid", op, str(e) or "has no semantics in ptoc") from None


def _int_constant(op: Operation):
    """An integer constant as a closure of ``env`` (its value wrapped to its type, as the golden
    model's), else None: the most common op of a VF, decoded here without the general path."""
    if type(op) is arith.ConstantOp:
        attr = op.properties.get("value")
        if isinstance(attr, IntegerAttr):
            r = op.results[0]
            v = golden._norm_int(attr.value.data, r.type)
            return lambda env: env.__setitem__(r, v)
    return None


# ---- handlers ----------------------------------------------------------------------------------

class _Decoded:
    """An op whose properties (operand views, options) are looked up once and then cached: the
    handlers read them on every execution, and xDSL's accessors are slow."""

    def __init__(self, op):
        self.__dict__["_op"] = op

    def __getattr__(self, key):
        v = getattr(self.__dict__["_op"], key)
        self.__dict__[key] = v
        return v

    def prefetch(self) -> None:
        """Look up now (the plan is made by the compile) the properties the handlers read, of
        those the op's class has: in a run, each first lookup of an xDSL accessor cost 1-7 us
        (~45 us of a 128x128 trowexpandmax execute).  The same values: accessors of the IR."""
        d, op = self.__dict__, self.__dict__["_op"]
        cls = type(op)
        names = _PREFETCHED.get(cls)
        if names is None:
            names = _PREFETCHED[cls] = tuple(k for k in _PREFETCH if hasattr(cls, k))
        for k in names:
            if k not in d:
                try:
                    d[k] = getattr(op, k)
                except Exception:  # (looked up again, as before, by a handler that reads it)
                    pass


_PREFETCH = ("results", "sources", "source", "result", "reg_type", "mask_operand", "mask", "FN", "KIND",
             "tile", "tile_type", "static_offset", "dyn_offset", "dist_name", "value", "mode", "count_in",
             "is_datablock", "pattern_name", "scalar", "merge_source", "addr", "addr_value", "static_addr",
             "valid_row", "valid_col", "part_name", "src_type", "round_name", "lanes")
"""The op properties the VF handlers (per trip and batched) read."""
_PREFETCHED: dict = {}
"""op class -> the names of :data:`_PREFETCH` it has."""


# ---- decoded VF bodies -------------------------------------------------------------------------

_CONST, _OP, _ARITH, _FOR, _YIELD, _BAD = range(6)
"""What an entry of a :class:`_BlockPlan` is: an integer constant (its value decoded), an op with
a handler, another ``arith`` op, a hardware loop, the block's yield, an op a VF cannot run."""


class _BlockPlan:
    """A block of a ``vf.func`` decoded once for every launch and every trip: per op an entry
    ``(code, op, log entry, name, x)``, with ``x`` by code: ``(result, value)`` for ``_CONST``;
    ``(handler, batched handler or None, _Decoded op, is a memory op)`` for ``_OP``; the loop's
    :class:`_ForPlan` for ``_FOR``; the yielded values for ``_YIELD``.  The walk of the block's
    links, the op-class dispatch, the log entry and the constant's value are found here once
    instead of per op executed (xDSL's accessors cost microseconds each, the op-class test an
    ABC check)."""
    __slots__ = ("entries",)

    def __init__(self, block: Block):
        entries = []
        op = block.first_op
        while op is not None:  # (the block's links: xDSL's op iterator costs more than the loop)
            cls = type(op)
            name = cls.name
            entry = (LOG_OP, op)
            if cls is scf.YieldOp:  # (isinstance: ABCMeta's check, in Python, per op)
                entries.append((_YIELD, op, entry, name, tuple(op.operands)))
                break
            h = _HANDLERS.get(cls)
            if h is not None:
                px = op.__dict__.get("_vfx")
                if px is None:
                    px = op._vfx = _Decoded(op)
                    px.prefetch()
                entries.append((_OP, op, entry, name, (h, _BATCHED.get(cls), px, cls in _MEM_OPS)))
            elif name.startswith("arith."):
                c = _int_constant_value(op) if cls is arith.ConstantOp else None
                entries.append((_ARITH, op, entry, name, None) if c is None else (_CONST, op, entry, name, c))
            elif cls is scf.ForOp:
                entries.append((_FOR, op, entry, name, _ForPlan(op)))
            else:
                entries.append((_BAD, op, entry, name, None))
            op = op.next_op
        self.entries = tuple(entries)


class _ForPlan:
    """An ``scf.for`` decoded once: its bound values, body, block arguments, initial and final
    carried values."""
    __slots__ = ("lb", "ub", "step", "body", "args", "inits", "results", "yielded")

    def __init__(self, op: scf.ForOp):
        # (the operands in order, not xDSL's named accessors: lb, ub, step, then the carried values)
        operands = tuple(op.operands)
        self.lb, self.ub, self.step = operands[:3]
        self.inits = operands[3:]
        block = op.regions[0].first_block
        self.args = block.args
        self.results = tuple(op.results)
        self.body = _BlockPlan(block)
        self.yielded = block.last_op
        """The body's terminator (runtime/vf_batch.py's count chains read it)."""


class VfPlan:
    """A ``vf.func`` decoded once (:func:`vf_plan`), kept on the op: its batched run decided once
    when that does not depend on a launch's arguments (``static``: runtime/vf_batch.py
    StaticPlan, else None), and the body a launch runs otherwise (``body``: made when first
    needed, at once when there is no static plan)."""
    __slots__ = ("fn", "static", "unbatched", "_body", "sizes")

    def __init__(self, fn: vf.VfFuncOp):
        self.fn = fn
        # sizes: per parameter, the bytes of its tile buffer or None (a scalar); unbatched: a
        # top-level loop the plan found never runs batched (run trip by trip)
        self.sizes = tuple(_nbytes(p.type) if isinstance(p.type, pto.TileLikeType) else None for p in fn.args)
        self.static, self.unbatched = static_plan(fn, self.sizes)
        self._body = None if self.static is not None else _BlockPlan(fn.block)

    @property
    def body(self) -> "_BlockPlan":
        if self._body is None:
            self._body = _BlockPlan(self.fn.block)
        return self._body


def vf_plan(fn: vf.VfFuncOp) -> VfPlan:
    """``fn``'s :class:`VfPlan`, made on first use (the compile makes it when a run follows:
    runtime/executor.py ``plan_of``)."""
    plan = fn.__dict__.get("_vfplan")
    if plan is None:
        plan = fn.__dict__["_vfplan"] = VfPlan(fn)
    return plan


def _int_constant_value(op: arith.ConstantOp):
    """``(result, value)`` of an integer constant (its value wrapped to its type, as the golden
    model's), else None: the most common op of a VF, run as a plain store."""
    attr = op.properties.get("value")
    if type(attr) is not IntegerAttr:
        return None
    r = op.results[0]
    v, t = attr.value.data, r.type
    if type(t) is IndexType and -(1 << 63) <= v < 1 << 63:
        return r, v  # (what _norm_int leaves of an index in range)
    return r, golden._norm_int(v, t)


def _h_create_mask(r: VfRunner, op: vf.CreateMaskOp, env: dict) -> None:
    env[op.results[0]] = mask_of(op.pattern_name, op.results[0].type.nlanes)


def _h_update_mask(r: VfRunner, op: vf.UpdateMaskOp, env: dict) -> None:
    act, rest = update_mask(env[op.count_in], op.results[0].type.nlanes)
    env[op.results[0]] = act
    env[op.results[1]] = golden._norm_int(rest, op.results[1].type)


def _h_load_align(r: VfRunner, op: vf.LoadAlignOp, env: dict) -> None:
    tile, addr, e = r._addr(op, env)
    d = op.dist_name
    key = op.results[0]
    if d == "NORM":
        a = r._read(op, addr, REG, 32, "NORM load")

        def step(ub, regs):
            regs[key] = ub[a:a + REG].copy()
    elif d == "BLK":
        a = r._read(op, addr, 32, 32, "BLK load")

        def step(ub, regs):
            regs[key] = np.tile(ub[a:a + 32], REG // 32)
    elif d.startswith("UNPK"):
        # UNPK_Bn: 128 bytes, element i zero-extended into the double-width lane i (narrow lanes 2i,
        # 2i+1 = 0); UNPK4_B8: 64 bytes, byte i into the 32-bit lane i (lanes 4i+1..4i+3 = 0)
        k = 4 if d.startswith("UNPK4") else 2
        a = r._read(op, addr, REG // k, 32, f"{d} load")

        def step(ub, regs):
            reg = np.zeros((REG // (k * e), k, e), np.uint8)
            reg[:, 0, :] = ub[a:a + REG // k].reshape(-1, e)
            regs[key] = reg.reshape(-1)
    else:
        a = r._read(op, addr, e, e, f"{d} load")

        def step(ub, regs):
            regs[key] = np.tile(ub[a:a + e], REG // e)
    r.emit(step)


def _h_load_unalign(r: VfRunner, op: vf.LoadUnalignOp, env: dict) -> None:
    tile, addr, e = r._addr(op, env)
    a = r._read(op, addr, REG, e, "unaligned load")
    key = op.results[0]

    def step(ub, regs):
        regs[key] = ub[a:a + REG].copy()
    r.emit(step)


def _h_store_align(r: VfRunner, op: vf.StoreAlignOp, env: dict) -> None:
    tile, addr, e = r._addr(op, env)
    value, act = op.value, env[op.mask]
    if op.dist_name == "ONEPT":
        r._check(op, addr, e, e, "ONEPT store")
        if act[0]:
            r._write(op, tile, addr + np.arange(e), lambda regs: regs[value][:e])
        return
    keep = np.repeat(act, e)
    if op.dist_name.startswith("PK_B"):
        # pack: the low half (E bytes) of each active 2E-byte lane i goes to addr + i*E
        r._check(op, addr, REG // 2, 32, f"{op.dist_name} store")
        r._write(op, tile, addr + np.flatnonzero(keep),
                 lambda regs: regs[value].reshape(-1, 2 * e)[:, :e].reshape(-1)[keep])
        return
    r._check(op, addr, REG, 32, "NORM store")
    r._write(op, tile, addr + np.flatnonzero(keep), (lambda regs: regs[value]) if keep.all() else
             (lambda regs: regs[value][keep]))


_STAGE = "unaligned-store buffer"
"""Register-values key prefix of the bytes a tile's unaligned-store buffer holds (by UB byte)."""


def _h_store_unalign(r: VfRunner, op: vf.StoreUnalignOp, env: dict) -> None:
    tile, addr, e = r._addr(op, env)
    n = op.lanes * e
    r._check(op, addr, n, e, "unaligned store")
    value, stage = op.value, (_STAGE, tile.addr)
    r.pending.setdefault(tile.addr, set()).update(range(addr, addr + n))

    def step(ub, regs):
        regs.setdefault(stage, {}).update(zip(range(addr, addr + n), regs[value][:n].tolist()))
    r.emit(step)
    r._flush(op, tile, (addr + n) // 32)


def _h_store_unalign_post(r: VfRunner, op: vf.StoreUnalignPostOp, env: dict) -> None:
    r._flush(op, env[op.tile], None)


def _dtype_of(op: vf._ComputeOp) -> np.dtype:
    elt = op.reg_type.element_type
    dt = _FLOAT_DTYPES.get(type(elt))  # (the usual types, without pto.dtype_name's isinstance chain)
    return dt if dt is not None else np_dtype(elt)


_FLOAT_DTYPES = {Float16Type: np.dtype(np.float16), Float32Type: np.dtype(np.float32)}


def _active(act: np.ndarray | None) -> np.ndarray | None:
    """The mask a compute step applies: None when every lane is on (nothing to merge or replace)."""
    return None if act is None or all_lanes(act) else act


def _emit(r: VfRunner, op, env: dict, compute, act: np.ndarray | None) -> None:
    """A step setting ``op``'s register to ``compute(regs)`` (a uint8[256] register) merged
    under ``act`` (the op's merge mode)."""
    key = op.results[0]
    act = _active(act)
    if act is None:
        def step(ub, regs):
            regs[key] = compute(regs)
    elif op.mode == "MERGING":
        keep, src = np.repeat(act, REG // act.size), op.merge_source

        def step(ub, regs):
            regs[key] = np.where(keep, compute(regs), regs[src])
    else:
        keep = np.repeat(act, REG // act.size)

        def step(ub, regs):
            regs[key] = np.where(keep, compute(regs), np.uint8(0))
    r.emit(step)


def _h_binary(r: VfRunner, op: vf.BinaryOp, env: dict) -> None:
    dt, fn, (a, b) = _dtype_of(op), _FN[op.FN], op.sources
    act = _active(env[op.mask_operand])
    _emit(r, op, env, lambda regs: to_reg(ew.on_active(fn, act, regs[a].view(dt), regs[b].view(dt))), act)


def _h_scalar(r: VfRunner, op: vf.ScalarOp, env: dict) -> None:
    dt, fn, a = _dtype_of(op), _FN[op.FN], op.sources[0]
    s = np.broadcast_to(ew.scalar_to(env[op.scalar], dt), (REG // dt.itemsize,))
    act = _active(env[op.mask_operand])
    _emit(r, op, env, lambda regs: to_reg(ew.on_active(fn, act, regs[a].view(dt), s)), act)


def _h_unary(r: VfRunner, op: vf.UnaryOp, env: dict) -> None:
    dt, fn, a = _dtype_of(op), _FN[op.FN], op.sources[0]
    act = _active(env[op.mask_operand])
    _emit(r, op, env, lambda regs: to_reg(ew.on_active(fn, act, regs[a].view(dt))), act)


def pair_reduce_sum(src: np.ndarray, act: np.ndarray, dtype) -> np.ndarray:
    """``vf.pair_reduce_sum`` (vcpadd): r[k] = a[2k] + a[2k+1] (inactive lanes +0), upper half 0."""
    dt = np.dtype(dtype)
    x = np.where(act, lanes(src, dt), np.zeros((), dt))
    out = np.zeros(x.size, dt)
    out[: x.size // 2] = ew.add(x[0::2], x[1::2])
    return to_reg(out)


def _h_pair(r: VfRunner, op: vf.PairReduceSumOp, env: dict) -> None:
    src, act, dt = op.sources[0], env[op.mask_operand], _dtype_of(op)
    _emit(r, op, env, lambda regs: pair_reduce_sum(regs[src], act, dt), None)


def convert(src: np.ndarray, act: np.ndarray, src_dtype, dst_dtype, round_mode: str = "RINT", part: str = "EVEN",
            mode: str = "ZEROING", old: np.ndarray | None = None) -> np.ndarray:
    """``vf.cvt`` (see dialects/vf.py CvtOp): act has one lane per lane of the wider type."""
    sd, dd = np.dtype(src_dtype), np.dtype(dst_dtype)
    p = 0 if part == "EVEN" else 1
    x = lanes(src, sd)
    mode_name = round_mode
    if sd.itemsize == dd.itemsize:
        res = to_reg(ew.convert(x, dd, mode_name))
        return merge(res, act, mode, old)
    if sd.itemsize < dd.itemsize:  # widening: dst lane i <- src lane 2i + p
        res = to_reg(ew.convert(x[p::2], dd, mode_name))
        return merge(res, act, mode, old)
    # narrowing: dst lane 2i + p <- src lane i
    vals = ew.convert(x, dd, mode_name)
    out = np.zeros(REG // dd.itemsize, dd)
    out[p::2] = vals
    dact = np.zeros(out.size, bool)
    dact[p::2] = act
    return merge(to_reg(out), dact, mode, old)


def _h_cvt(r: VfRunner, op: vf.CvtOp, env: dict) -> None:
    src, act, merging, old = op.args[0], env[op.mask_operand], op.mode == "MERGING", op.merge_source
    args = (np_dtype(op.src_type.element_type), np_dtype(op.reg_type.element_type), op.round_name, op.part_name,
            op.mode)
    _emit(r, op, env, lambda regs: convert(regs[src], act, *args, regs[old] if merging else None), None)


def _h_dup(r: VfRunner, op: vf.DupOp, env: dict) -> None:
    dt = _dtype_of(op)
    n = REG // dt.itemsize
    m = op.mask_operand
    if isinstance(op.source.type, vf.RegType):
        src = op.source
        compute = lambda regs: to_reg(np.repeat(regs[src].view(dt)[:1], n))  # noqa: E731
    else:
        res = to_reg(np.repeat(ew.scalar_to(env[op.source], dt).reshape(1), n))
        compute = lambda regs: res  # noqa: E731  (registers are never written in place)
    _emit(r, op, env, compute, env[m] if m is not None else None)


def _h_reduce(r: VfRunner, op: vf.ReduceOp, env: dict) -> None:
    dt, kind, src, act = _dtype_of(op), op.KIND, op.sources[0], env[op.mask_operand]
    datablock, mode, merging, old = op.is_datablock, op.mode, op.mode == "MERGING", op.merge_source
    _emit(r, op, env, lambda regs: reduce(kind, regs[src], act, dt, datablock=datablock, mode=mode,
                                          old=regs[old] if merging else None), None)


def _h_bitcast(r: VfRunner, op: vf.BitcastOp, env: dict) -> None:
    src = op.args[0]
    _emit(r, op, env, lambda regs: regs[src], None)  # registers are bytes: the same 256 of them


def _h_deinterleave(r: VfRunner, op: vf.DeinterleaveOp, env: dict) -> None:
    dt, srcs, odd = _dtype_of(op), tuple(op.args), op.part_name == "ODD"
    _emit(r, op, env, lambda regs: to_reg(np.concatenate([regs[v].view(dt) for v in srcs])[odd::2]), None)


_HANDLERS = {
    vf.CreateMaskOp: _h_create_mask, vf.UpdateMaskOp: _h_update_mask,
    vf.LoadAlignOp: _h_load_align, vf.LoadUnalignOp: _h_load_unalign,
    vf.StoreAlignOp: _h_store_align, vf.StoreUnalignOp: _h_store_unalign,
    vf.StoreUnalignPostOp: _h_store_unalign_post,
    **{c: _h_binary for c in vf.BINARY_OPS.values()}, **{c: _h_scalar for c in vf.SCALAR_OPS.values()},
    **{c: _h_unary for c in vf.UNARY_OPS.values()}, vf.DupOp: _h_dup,
    **{c: _h_reduce for c in vf.REDUCE_OPS.values()}, vf.PairReduceSumOp: _h_pair, vf.CvtOp: _h_cvt,
    vf.BitcastOp: _h_bitcast, vf.DeinterleaveOp: _h_deinterleave,
}

_MEM_OPS = frozenset(c for c in _HANDLERS if issubclass(c, vf._MemOp))
"""The op classes of :data:`_HANDLERS` that touch memory (a set: issubclass on xDSL's ABCs runs
in Python)."""

from .vf_batch import _HANDLERS as _BATCHED  # noqa: E402  (the batched handlers, by op class)


def run_vf(fn: vf.VfFuncOp, ub: np.ndarray, args: Sequence) -> VfCallResult:
    """Run one VF on ``ub`` (modified in place).  Faults raise :class:`ExecutionError` (exit 4)."""
    try:
        with np.errstate(all="ignore"):
            return VfRunner(ub).call(fn, args)
    except VfFault as f:
        raise ExecutionError([f.finding]) from None


def execute_vf(fn: vf.VfFuncOp, inputs: Mapping[str, object], *, ub_bytes: int = 256 * 1024,
               ub_init: int = 0) -> dict[str, np.ndarray]:
    """Convenience for tests and tools: run ``fn`` once with its tile arguments filled from
    ``inputs`` (name -> array of the tile's shape or element count; missing tiles start as
    ``ub_init`` bytes) and its scalars from ``inputs``; returns every tile argument afterwards
    (``rows x cols`` arrays, row-major).  Tiles sit 256-byte aligned from address 0, in order."""
    ub = np.full(ub_bytes, ub_init & 0xFF, np.uint8)
    args, tiles, addr = [], {}, 0
    for p in fn.args:
        name = p.name_hint or f"arg{p.index}"
        t = p.type
        if isinstance(t, pto.TileLikeType):
            nbytes = t.rows * t.cols * t.elem_bytes
            dt = np_dtype(t.element_type)
            if name in inputs:
                arr = np.asarray(inputs[name])
                if arr.dtype != dt:
                    arr = arr.astype(dt) if arr.dtype.kind != dt.kind or arr.dtype.itemsize != dt.itemsize \
                        else arr.view(dt)
                flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
                ub[addr:addr + flat.size] = flat
            args.append(TileRef(addr, nbytes))
            tiles[name] = (addr, t, dt)
            addr += -(-nbytes // 256) * 256
        else:
            if name not in inputs:
                raise ValueError(f"missing scalar input '{name}'")
            args.append(inputs[name])
    run_vf(fn, ub, args)
    return {n: ub[a:a + t.rows * t.cols * t.elem_bytes].view(dt).reshape(t.rows, t.cols).copy()
            for n, (a, t, dt) in tiles.items()}


# ---------------------------------------------------------------------------------------------
# Kernels: golden-model data movement on UB-backed tiles + vf.call
# ---------------------------------------------------------------------------------------------

_SYNC_NAMES = ("pto.set_flag", "pto.wait_flag", "pto.barrier")
_PIPES = {"PIPE_S": "S", "PIPE_V": "V", "PIPE_MTE2": "MTE2", "PIPE_MTE3": "MTE3", "PIPE_ALL": "ALL",
          "S": "S", "V": "V", "MTE2": "MTE2", "MTE3": "MTE3", "ALL": "ALL"}


class _PipeChecker:
    """The a2a3 executor's vector-clock race checker (runtime/executor.py), driven op by op."""

    def __init__(self, ub: np.ndarray, max_races: int = 20):
        from . import executor as ex

        self.ex = ex
        m = ex._Machine(None, {}, {}, 1, ub.size, True, 0, False, max_races)
        m.ub = ub
        m.queues = {ex._V: deque(), ex._MTE2: deque(), ex._MTE3: deque()}
        m.flags = {}
        m.ctx = ()
        m.env = {}
        m.block = 0
        self.m = m
        self.seq = 0

    @property
    def findings(self) -> list:
        return self.m.findings

    def _dyn(self, ins, args):
        self.seq += 1
        return self.ex._Dyn(ins, args, (), self.seq)

    def sync(self, op: Operation) -> None:
        from .program import Instr

        body = [getattr(a, "body", None) for a in op.args.data]
        texts = [b.data if b is not None else str(a) for b, a in zip(body, op.args.data)]
        try:
            if op.name == "pto.barrier":
                pipe = _PIPES[texts[0]]
                ins = Instr.make("pipe_barrier", pipe=pipe)
            else:
                src, dst = _PIPES[texts[0]], _PIPES[texts[1]]
                eid = int(texts[2].replace("EVENT_ID", "")) if len(texts) > 2 else 0
                ins = Instr.make("set_flag" if op.name == "pto.set_flag" else "wait_flag",
                                 src_pipe=src, dst_pipe=dst, event_id=eid)
        except (KeyError, IndexError, ValueError):
            raise op_error(op, "has arguments the VF kernel runner cannot read") from None
        site = _Site(op, f"{op.name} " + ", ".join(texts), ins.pipe)
        ins.origin = site.origin
        p = self.ex._PIPE_IDX[ins.pipe]
        self.m._exec(self._dyn(ins, ins.args), p)

    def access(self, op: Operation, pipe: str, reads: np.ndarray | None, writes: np.ndarray | None) -> None:
        ex = self.ex
        p = ex._PIPE_IDX[pipe]
        if p == ex._V:
            self.m.known[p][p] = self.m.epoch[p]  # VF launches complete in order
        self.m.epoch[p] += 1
        accs = []
        if reads is not None and reads.size:
            accs.append(ex._Acc("UB", False, Footprint.of_units(reads), what="its source"))
        if writes is not None and writes.size:
            accs.append(ex._Acc("UB", True, Footprint.of_units(writes), what="its destination"))
        if accs:
            self.m._accesses(self._dyn(_Site(op, _op_text(op), pipe), {}), p, accs)


def _op_text(op: Operation) -> str:
    if isinstance(op, vf.VfCallOp):
        return f"vf.call @{op.callee_name}"
    return op.name


@dataclass
class KernelResult:
    outputs: dict
    findings: list
    counts: dict
    ub: np.ndarray
    checked: bool


class _KernelEvaluator(golden.Evaluator):
    def __init__(self, module: ModuleOp, ub: np.ndarray, checker: _PipeChecker | None, auto_base: int,
                 target: str):
        super().__init__(module, ub_bytes=ub.size, target=target)  # the rules of the target it runs on
        self.ub = ub
        self.checker = checker
        self.addr: dict[int, int] = {}          # id(Tile) -> UB byte address
        self.auto: dict[int, int] = {}          # id(op) -> planned address of an auto-placed tile
        self.next_free = auto_base
        self.counts: dict[str, int] = {}

    # ---- placement -----------------------------------------------------------------------
    def place(self, t: pto.TileLikeType, addr: int | None, op: Operation, valid, key=None) -> golden.Tile:
        """A tile of type t at ``addr`` (None: the auto address of ``key``, default ``op``)."""
        nbytes = t.rows * t.cols * t.elem_bytes
        if addr is None:
            k = id(op if key is None else key)
            addr = self.auto.get(k)
            if addr is None:
                addr = self.next_free
                self.next_free += -(-nbytes // 256) * 256
                self.auto[k] = addr
        if addr < 0 or addr + nbytes > self.ub.size:
            raise op_error(op, f"a tile of {nbytes} bytes at UB address {addr:#x} does not fit in the "
                               f"{self.ub.size // 1024} KiB UB")
        if addr % golden.UB_ALIGN:
            raise op_error(op, f"a tile at UB address {addr:#x} is not {golden.UB_ALIGN}-byte aligned")
        tile = golden.Tile(t, _view(self.ub, addr, t), (int(valid[0]), int(valid[1])))
        self.addr[id(tile)] = addr
        return tile

    # ---- ops -----------------------------------------------------------------------------
    @classmethod
    def decode(cls, op: Operation):
        return golden._generic(op)  # every op is counted and may touch the UB

    def _eval_op(self, op: Operation, env: dict) -> None:
        self.counts[op.name] = self.counts.get(op.name, 0) + 1
        if isinstance(op, vf.VfFuncOp):
            return
        if isinstance(op, vf.VfCallOp):
            return self.eval_vf_call(op, env)
        if isinstance(op, pto.AllocTileOp):
            t = op.result.type
            vr = t.valid_row if op.valid_row is None else int(env[op.valid_row])
            vc = t.valid_col if op.valid_col is None else int(env[op.valid_col])
            if not (0 <= vr <= t.rows and 0 <= vc <= t.cols):
                raise op_error(op, f"valid region {vr}x{vc} exceeds the tile shape {t.rows}x{t.cols}")
            addr = int(env[op.addr]) if op.addr is not None else _planned_addr(op)
            env[op.result] = self.place(t, addr, op, (vr, vc))
            return
        if isinstance(op, pto.TAssignOp):
            tile = env[op.tile[0]]
            addr = op.static_addr if op.static_addr is not None else int(env[op.addr_value[0]])
            if isinstance(tile, golden.Tile):
                new = self.place(tile.type, addr, op, tile.valid)
                tile.data, self.addr[id(tile)] = new.data, addr
            if op.result:
                env[op.result[0]] = tile
            return
        if op.name.startswith("pto.section.") and op.regions:
            self.run_region(op.regions[0], [], env)
            return
        if op.name in _SYNC_NAMES and self.checker is not None:
            self.checker.sync(op)
            return
        if isinstance(op, pto.TileOp) and self.checker is not None:
            reads, writes = self._tile_accesses(op, env)
            pipe = "MTE2" if isinstance(op, pto.TLoadOp) else "MTE3" if isinstance(op, pto.TStoreOp) else "V"
            self.checker.access(op, pipe, reads, writes)
        return super()._eval_op(op, env)

    def _bytes_of(self, tile, whole: bool = False) -> np.ndarray | None:
        if not isinstance(tile, golden.Tile) or id(tile) not in self.addr:
            return None
        t = tile.type
        r, c = (t.rows, t.cols) if whole else tile.valid
        e = t.elem_bytes
        rr, cc = np.meshgrid(np.arange(r), np.arange(c), indexing="ij")
        elem = rr * t.cols + cc if t.is_row_major else cc * t.rows + rr
        return (self.addr[id(tile)] + (elem.reshape(-1, 1) * e + np.arange(e))).reshape(-1)

    def _tile_accesses(self, op: pto.TileOp, env: dict):
        reads = [self._bytes_of(env.get(v)) for v in op.ins]
        pad = isinstance(op, pto.TLoadOp) and op.outs and op.outs[0].type.pad.data != 0
        writes = [self._bytes_of(env.get(v), whole=bool(pad)) for v in op.outs]
        cat = lambda xs: np.concatenate([x for x in xs if x is not None]) if any(x is not None for x in xs) else None
        return cat(reads), cat(writes)

    def eval_vf_call(self, op: vf.VfCallOp, env: dict) -> None:
        fn = op.resolve()
        if fn is None:
            raise op_error(op, f"calls unknown vf.func @{op.callee_name}")
        args = []
        for i, v in enumerate(op.arguments):
            val = env[v]
            if isinstance(v.type, pto.TileLikeType):
                if not isinstance(val, golden.Tile) or id(val) not in self.addr:
                    raise op_error(op, f"argument #{i} is not a tile buffer in UB")
                t = val.type
                args.append(TileRef(self.addr[id(val)], t.rows * t.cols * t.elem_bytes))
            else:
                args.append(val)
        runner = VfRunner(self.ub)
        try:
            res = runner.call(fn, args)
        except VfFault as f:
            raise ExecutionError(list(self.checker.findings if self.checker else []) + [f.finding]) from None
        for k, n in res.counts.items():
            self.counts[k] = self.counts.get(k, 0) + n
        if self.checker is not None:
            self.checker.access(op, "V", res.reads.footprint().units(), res.writes.footprint().units())


def _view(ub: np.ndarray, addr: int, t: pto.TileLikeType) -> np.ndarray:
    dt = ew.np_dtype(t.dtype)
    n = t.rows * t.cols
    flat = ub[addr:addr + n * t.elem_bytes].view(dt)
    return flat.reshape(t.rows, t.cols) if t.is_row_major else flat.reshape(t.cols, t.rows).T


def _planned_addr(op: Operation) -> int | None:
    """The address pto-plan-memory wrote on an alloc_tile (``ub_addr``), if any."""
    a = op.attributes.get("ub_addr") or op.properties.get("ub_addr")
    return a.value.data if isinstance(a, IntegerAttr) else None


def _fixed_top(fn: Operation) -> int:
    """End of the highest explicitly placed tile (alloc_tile addr = const, tassign @tile(ADDR))."""
    top = 0
    for op in fn.walk():
        addr = None
        t = None
        if isinstance(op, pto.AllocTileOp) and op.addr is not None:
            owner = op.addr.owner
            if isinstance(owner, arith.ConstantOp):
                addr = owner.value.value.data
            t = op.result.type
        elif isinstance(op, pto.AllocTileOp) and _planned_addr(op) is not None:
            addr, t = _planned_addr(op), op.result.type
        elif isinstance(op, pto.TAssignOp):
            addr = op.static_addr
            if addr is None and op.addr_value and isinstance(op.addr_value[0].owner, arith.ConstantOp):
                addr = op.addr_value[0].owner.value.value.data
            t = op.tile[0].type
        if addr is not None and isinstance(t, pto.TileLikeType):
            top = max(top, addr + t.rows * t.cols * t.elem_bytes)
    return top


def _has_sync(fn: Operation) -> bool:
    return any(op.name in _SYNC_NAMES for op in fn.walk())


def run_vf_kernel_result(module: ModuleOp, inputs=None, target=None, *, entry: str | None = None, seed: int = 0,
                         check: bool | str = "auto", ub_init: int = 0) -> KernelResult:
    """Run a kernel that uses ``vf.call``; see the module docstring.  ``inputs``: a dict name ->
    array/number (missing ones seeded random, as the golden model makes them) or ``(NAME, FILE.npy
    or scalar text)`` pairs as ``--input`` gives them.  Data races raise :class:`ExecutionError`
    (exit 4) carrying the result; program errors are located ``PtocError`` (exit 1); bad inputs
    exit 2."""
    from pto_compiler.targets import ASCEND950, Target, lookup_target

    tgt = target if isinstance(target, Target) else (lookup_target(target) if target else ASCEND950)
    if tgt is None:
        raise golden.usage_error(f"unknown target '{target}'")
    if not tgt.has_vf:
        raise golden.usage_error(f"vector functions (vf) run only on ascend950, not on {tgt.name}")
    if inputs is None or isinstance(inputs, Mapping):
        values = golden.make_inputs(module, seed, entry, dict(inputs or {}))
    else:
        values = golden.prepare_inputs(module, seed, list(inputs), entry)
    kernel = golden._kernel(module, entry)
    fn, specs = kernel.fn, kernel.specs
    do_check = _has_sync(fn) if check == "auto" else bool(check)
    ub = np.full(tgt.ub_bytes, ub_init & 0xFF, np.uint8)
    checker = _PipeChecker(ub) if do_check else None
    top = _fixed_top(module)
    ev = _KernelEvaluator(module, ub, checker, -(-top // 256) * 256, tgt.name)
    args, gms = golden._bind_inputs(kernel, values, lambda s, valid: ev.place(s.type, None, fn, valid, key=s.value))
    from .executor import _Abort

    aborted = False
    try:
        with np.errstate(all="ignore"):
            results = ev.call(fn, args)
    except _Abort:  # a deadlock found by the checker: the run stops there
        aborted, results = True, []
    outputs: dict[str, np.ndarray] = {}
    for s in specs:
        gm = gms.get(s.index)
        if gm is not None and (s.index in kernel.stored or gm.written):
            outputs[s.name] = gm.own().reshape(gm.shape)  # (an input, read in place until written)
    for i, v in enumerate(results):
        if isinstance(v, golden.Tile):
            outputs[f"result{i}"] = v.region().copy()
        else:
            outputs[f"result{i}"] = np.asarray(v).copy()
    findings = list(checker.findings) if checker is not None else []
    result = KernelResult(outputs, findings, ev.counts, ub, checker is not None)
    if findings or aborted:
        raise ExecutionError(findings, result)
    return result


def run_vf_kernel(module: ModuleOp, inputs=None, target=None, **kwargs) -> dict[str, np.ndarray]:
    """``ptoc --run`` for a kernel written in ``vf``: returns the outputs by name (see
    :func:`run_vf_kernel_result` for the options and errors; nothing is compared)."""
    return run_vf_kernel_result(module, inputs, target, **kwargs).outputs


def uses_vf(module: ModuleOp) -> bool:
    """Does the module launch VFs (so the tile-level golden model cannot run it)?"""
    return any(isinstance(op, vf.VfCallOp) for op in module.walk())


# ---------------------------------------------------------------------------------------------
# ascend950 programs: the executor's ``vf_call`` instruction
# ---------------------------------------------------------------------------------------------

def exec_vf_call(m, d, p: int, te) -> None:
    """Run one ``vf_call`` of a program (runtime/executor.py ``_Machine``): the callee from
    ``Program.vf_funcs`` on the machine's UB, then its UB reads and writes through the hazard
    checker.  A launch is decoded once per (VF, arguments) and kept with the program: a later
    launch with the same arguments runs the kept data steps and reuses the footprints, counts
    and executed stream (so the cycle model times it once too).  VF launches on the V pipe complete in order (a VF starts after the previous one
    ends), so a VF never races with an earlier VF; reads are counted within the tile buffers it
    is given (a tail chunk's load reads the whole register, the masked lanes past the buffer are
    not data the VF uses).  Faults (alignment, bounds, loop limit) stop the run."""
    a = d.args
    name = a["callee"]
    fn = m.p.vf_funcs.get(name) if m.p is not None else None
    if fn is None:
        m.fail("invalid", f"vf_call: the program has no vf.func @{name}", d)
    plan = vf_plan(fn)
    vals, sizes = a["args"], plan.sizes
    if len(vals) != len(sizes):
        m.fail("invalid", f"vf_call @{name}: {len(vals)} arguments given, the vf.func takes {len(sizes)}", d)
    if m.batch is not None:  # every trip of a batched scalar loop (runtime/loop_batch.py)
        VfRunner(m.ub, want_log=False, outer=(m.batch.ub, m.batch.lo)).call(fn, _vf_args(vals, sizes))
        return
    launches = m.p.__dict__.setdefault("_vf_launches", {})
    key = (name, tuple(vals), m.ub.size, te is not None)
    got = launches.get(key)
    if got is None:  # the first launch of this VF with these arguments: decoded as it runs
        tiles = [TileRef(int(v), n) for v, n in zip(vals, sizes) if n is not None]
        tape: list = []  # (as VfRunner.call: its static plan if the checks pass, else the dynamic path)
        res = plan.static.launch(m.ub, tiles, te is not None, tape) if plan.static is not None else None
        all_batched = True
        if res is None:
            runner = VfRunner(m.ub, te is not None, None, tape)
            try:
                res = runner.run_dynamic(fn, _vf_args(vals, sizes), plan)
            except VfFault as f:
                m.fail(f.finding.kind, f"vf_call @{name}: {f.finding.message}", d)
            all_batched = runner.all_batched
        repeats = 0  # (te.repeats: the vector instructions the VF issued)
        for k, n in res.counts.items():
            if k.startswith("vf."):
                repeats += n
        got = launches[key] = (tape, res, all_batched, res.reads.footprint([(t.addr, t.addr + t.nbytes) for t in tiles]),
                               res.writes.footprint(), repeats)
    else:  # the same again: its data steps only (addresses, masks and trips do not depend on data)
        run_tape(got[0], m, d)
    tape, res, all_batched, reads, writes, repeats = got
    if te is not None:
        te.repeats = repeats
        te.vf_counts = res.counts  # (read only, as vf_log)
        te.vf_log = res.log
        te.vf_callee = name
    m.known[p][p] = m.epoch[p] - 1  # every earlier VF is complete
    m._accesses(d, p, [_Acc("UB", False, reads, what="its source"), _Acc("UB", True, writes, what="its destination")])
    if m.tape is not None:  # runtime/loop_batch.py: the VF batches, and the UB bytes it reads
        m.tape[-1][3] = all_batched
        m.tape[-1].append(res.reads.footprint())
    if m.dry is not None:  # a replayed program (executor._recorded): this call is its data steps
        m.dry.append((partial(run_tape, tape), d))


def _vf_args(vals, sizes: tuple) -> list:
    """A vf_call's arguments as VfRunner takes them: a TileRef per tile parameter."""
    return [v if n is None else TileRef(int(v), n) for v, n in zip(vals, sizes)]


def run_tape(tape: list, m, d) -> None:
    """A VF call again, on the data of ``m.ub``: the data steps one run of it kept
    (:class:`VfRunner` ``tape``), in order; its addresses, masks and trips do not depend on data."""
    ub, regs = m.ub, {}
    for step in tape:
        step(ub, regs)
