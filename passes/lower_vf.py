"""``pto-lower-vf`` (ascend950): tile ops -> ``vf.func`` + ``vf.call``, and the ascend950 program.

Design (DESIGN.md §2 "target" level, §5 pass 7).  On ascend950 the vector unit runs
register-level vector functions (VF, ``__simd_vf__``); the target level is the ``vf`` dialect
(dialects/vf.py).  The pass replaces every vector tile op of the placed module (after
pto-plan-memory and pto-insert-sync) by one ``vf.call @K_OP_N(tiles..., scalars...)`` and adds
the callee ``vf.func @K_OP_N`` at module level: **one VF launch per tile op**, and for the
row/column broadcast families (TROWEXPAND*, TCOLEXPAND*) one launch per row from a kernel loop
(:data:`PER_ROW`), a row's scalar that only feeds add/mul/max/min read by the scalar unit
(``pto.tgetval``) and passed as a parameter, as tail_axis_1's ``GetValue(j)`` (pto-insert-sync
runs again to order those reads): the naive forms of seeds/001; the VF optimisation passes of DESIGN.md §5.8
(vf-fuse-launches) move the row loops into the VFs and fuse launches later.  ``pto.tload`` /
``pto.tstore`` stay tile ops: MTE2/MTE3 copies (``copy_gm_to_ubuf`` / ``copy_ubuf_to_gm`` in the
program, the ``copy_gm_to_ubuf_align_v2`` of the A5 headers); syncs, ``scf`` and ``arith`` stay
as they are.  ``ptoc --emit vf`` prints the module after this pass.

Every VF follows the A5 header skeletons (reference/vector_isa.md §3, pto_isa.md §4-5) in the
seed's style (seeds/001): a hardware loop over rows, an inner loop over 256-byte chunks whose
mask comes from ``vf.update_mask`` on the count of columns still to do (UpdateMask/plt: the
tail chunk is masked, its load reads the whole register unmasked), ``vf.load_align`` NORM,
the op under that mask (ZEROING), ``vf.store_align`` NORM under the same mask.  When every
operand's rows are contiguous (valid cols == tile cols) the region is one flat run (the
headers' 1-D path).  Per family:

* **Elementwise** (tadd..tmin, texp tlog tsqrt trsqrt trecip tabs trelu, tmov): the matching
  ``vf`` op.  **Tile-scalar**: ``vf.adds/muls/maxs/mins`` with the scalar as a VF (PB)
  parameter; tsubs / tdivs: ``vf.dup`` of the scalar once, then ``vf.sub`` / ``vf.div``
  (``s / x`` for the scalar-first form).  **texpands**: ``vf.dup`` + stores.
* **TROWEXPAND{ADD,SUB,MUL,DIV,MAX,MIN,EXPDIF}** (seeds/000; vector_isa.md §3.1 A5 2-D path):
  per row, Mode 1 loads the row's scalar with ``load_align dist = BRC_Bn`` at the element
  offset of the ColMajor column (no tmp; a given tmp is accepted and unused), Mode 2 loads the
  row's 32-byte block with ``dist = BLK``; then per chunk: NORM load of the full operand, the op
  (operand order kept: src0 expanded gives ``OP(b, x)``), store.  EXPDIF = ``vf.sub`` +
  ``vf.exp`` (the golden model's ``exp(sub(a, b))``).
* **TCOLEXPAND{...}**: per row and chunk, the op on the full row and the chunk of row 0 of the
  expanded operand.  **TROWEXPAND** (pure): per row a BRC load (64-bit types: ``load_unalign``
  + ``vf.dup`` of lane 0, the header's 1-D form), stores.  **TCOLEXPAND**: row 0's chunk
  stored to every row.
* **Row reductions** (seeds/001 reduce_*_ar_baseline): per row, chunk 0 loaded, chunks 1..
  folded into it lane-wise with ``vf.add/max/min`` MERGING under each chunk's mask (lanes past
  the row keep chunk 0's values), one ``reduce_sum/max/min`` under chunk 0's mask, lane 0
  stored with ``store_align dist = ONEPT``.  **Sum order**: per lane the chunks left to
  right, then the in-register tree of reduce_sum (vector_isa.md §3.3).  f16 sums
  accumulate in f32 (``load_align dist = UNPK_B16`` + ``vf.cvt`` EVEN, 64 elements a chunk,
  one ``vf.cvt`` back to f16 at the end), as the a2a3 backend does (f16 arithmetic cannot meet
  the float-sum tolerance).  i8/ui8 max/min widen to 16-bit lanes (UNPK_B8 + cvt, as the A5
  header does with vcvt PART_EVEN/ODD), reduce, and narrow back.
* **Column reductions** (vector_isa.md §3.4): per chunk, row 0 loaded, rows 1..R-1 folded in
  order with the elementwise op, stored.  f16/bf16 sums fold in f32 (UNPK + cvt) and store
  back with ``vf.cvt`` + ``store_align dist = PK_B32``.  Sum order: row by row from row 0.
* **Index reductions**: per row ``reduce_max/min`` and the index lane moved to lane 0
  (``vf.deinterleave`` ODD, as the A5 header's vdintlv); per column a lane-wise first-index fold
  (``vf.bitcast`` + ``xor``/``mins``/``muls``/``max``).  **TCOLPROD**: the column fold with
  ``vf.mul``; TROWPROD runs on the scalar unit (:data:`NOT_VF`).
* **TPAIRREDUCESUM** (seeds/004): per row, zeros stored over columns ceil(C/2)..C-1 (from the
  32-byte block holding ceil(C/2)), then per 256-byte source chunk ``vf.pair_reduce_sum``
  (vcpadd) under the chunk mask (inactive lanes read as 0, so an odd C gives
  ``src[i, C-1] + 0`` last) and a store of the pair sums at half the offset under a mask of the
  pairs still to write (later chunks overwrite the zero lanes an earlier store wrote past its
  pairs).
* **TCVT**: lane-width ratio 1: NORM load, ``vf.cvt``, NORM store; widening: ``UNPK`` load +
  ``vf.cvt`` EVEN; narrowing: ``vf.cvt`` EVEN + ``store_align dist = PK_Bn`` (the A5
  vcvt PART_EVEN + pack-store pattern); rounding per ``rmode``.

Results equal the golden model bit for bit except float sums (TROWSUM/TCOLSUM, issue 4's
tolerance).  Valid shapes known only at run time are passed to the VF as index parameters (the
families run on the scalar unit, :data:`NOT_VF`, take them as the a2a3 rules do); where a choice
depends on them (TPART*'s full source, TROWEXPAND*'s expanded operand when both are RowMajor),
each form runs in a loop of 0 or 1 trips.

:func:`lower_module_to_a2a3` lowers the module after this pass in place with the a2a3 rules
(copies, cube core, syncs, TPRINT), each ``vf.call`` becoming an ``a2a3.vf_call`` on the V pipe that
the executor runs through :class:`~pto_compiler.runtime.vf_executor.VfRunner`, and returns the program
a2a3-complete-barriers decoded, carrying the ``vf.func`` s it launches, which stay in the module.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    Float32Type, FloatAttr, IndexType, IntegerAttr, IntegerType, ModuleOp, Signedness, StringAttr,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from pto_compiler.diagnostics import PtocError, cube_space_message, op_error, value_name
from pto_compiler.dialects import a2a3, pto, vf
from pto_compiler.lazy_import import LazyModule
from pto_compiler.passes import a2a3_complete_barriers as B
from pto_compiler.passes import lower_a2a3 as A
from pto_compiler.passes import lower_cube
from pto_compiler.runtime.element_types import round_mode
from pto_compiler.runtime.program import Instr, Program
from pto_compiler.targets import ASCEND950, Target

E = LazyModule("pto_compiler.runtime.elementwise")  # pad values and conversion limits: NumPy on first use

__all__ = ["LowerVfPass", "lower_module", "lower_module_to_a2a3", "lower_to_program"]

INDEX = IndexType()
I32 = IntegerType(32)
REG = vf.REG_BYTES


class _Unsupported(Exception):
    pass


# --------------------------------------------------------------------------------------------
# Tiles inside a VF
# --------------------------------------------------------------------------------------------

@dataclass
class _T:
    """A tile argument of the VF being built."""
    arg: SSAValue
    t: pto.TileLikeType

    @property
    def e(self) -> int:
        return self.t.elem_bytes

    @property
    def elt(self):
        return self.t.element_type

    @property
    def dt(self) -> str:
        return pto.dtype_name(self.elt)

    @property
    def rm(self) -> bool:
        return self.t.is_row_major

    @property
    def stride(self) -> int:
        """Elements from the start of one line (row of a RowMajor, column of a ColMajor tile) to the next."""
        return self.t.cols if self.rm else self.t.rows


class _B:
    """Builds one vf.func: a prelude of constants and invariant masks, then the body."""

    def __init__(self, name: str, arg_types, loc=None):
        self.fn = vf.VfFuncOp(name, list(arg_types))
        self.cur: Block = self.fn.block
        self.prelude: list[Operation] = []
        self._const: dict = {}
        self._masks: dict = {}
        self._arith: dict = {}
        self.scopes: list[Block] = [self.cur]
        self.loc = loc

    # ---- ops ------------------------------------------------------------------------------
    def op(self, op: Operation):
        self.cur.add_op(op)
        return op.results[0] if len(op.results) == 1 else (list(op.results) if op.results else None)

    def pre(self, op: Operation):
        self.prelude.append(op)
        return op.results[0] if len(op.results) == 1 else list(op.results)

    def c(self, v: int, t=INDEX) -> SSAValue:
        key = (int(v), str(t))
        if key not in self._const:
            self._const[key] = self.pre(arith.ConstantOp(IntegerAttr(int(v), t)))
        return self._const[key]

    def cf(self, v: float, t) -> SSAValue:
        key = ("f", repr(float(v)), str(t))
        if key not in self._const:
            self._const[key] = self.pre(arith.ConstantOp(FloatAttr(float(v), t)))
        return self._const[key]

    def ssa(self, v) -> SSAValue:
        return self.c(v) if isinstance(v, int) else v

    def _memo(self, kind, a, b, make):
        """Index arithmetic computed once: reuse a value made in this block or an enclosing one."""
        key = (kind, a if isinstance(a, int) else id(a), b if isinstance(b, int) else id(b))
        blocks = {id(blk) for blk in self.scopes}
        for where, v in self._arith.get(key, ()):
            if where in blocks:
                return v
        v = self.op(make(self.ssa(a), self.ssa(b)))
        self._arith.setdefault(key, []).append((id(self.cur), v))
        return v

    def add(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(a, int) and a == 0:
            return b
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int):
            a, b = b, a
        return self._memo("add", a, b, arith.AddiOp)

    def mul(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if (isinstance(a, int) and a == 0) or (isinstance(b, int) and b == 0):
            return 0
        if isinstance(a, int) and a == 1:
            return b
        if isinstance(b, int) and b == 1:
            return a
        if isinstance(a, int):
            a, b = b, a
        return self._memo("mul", a, b, arith.MuliOp)

    def min(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        return self._memo("min", a, b, arith.MinSIOp)

    def sub(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if isinstance(b, int) and b == 0:
            return a
        return self._memo("sub", a, b, arith.SubiOp)

    def max(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return max(a, b)
        return self._memo("max", a, b, arith.MaxSIOp)

    def ceildiv(self, a, k: int):
        if isinstance(a, int):
            return -(-a // k)
        return self.op(arith.CeilDivUIOp(a, self.c(k)))

    def i32(self, v) -> SSAValue:
        if isinstance(v, int):
            return self.c(v, I32)
        return self.op(arith.IndexCastOp(v, I32))

    # ---- loops ------------------------------------------------------------------------------
    def loop(self, n, body, carried=()):
        """``for i in 0..n`` (a hardware loop; inline when n is 1) carrying ``carried``; body(i, *carried)
        returns the new carried values.  Returns the final carried values."""
        carried = list(carried)
        if isinstance(n, int):
            if n <= 0:
                return carried
            if n == 1:
                return list(body(0, *carried) or [])
            if n > vf.HW_LOOP_MAX:
                raise _Unsupported(f"a hardware loop of {n} trips exceeds {vf.HW_LOOP_MAX} (uint16)")
        blk = Block(arg_types=[INDEX] + [v.type for v in carried])
        saved, self.cur = self.cur, blk
        self.scopes.append(blk)
        out = list(body(blk.args[0], *blk.args[1:]) or [])
        blk.add_op(scf.YieldOp(*out))
        self.scopes.pop()
        self.cur = saved
        f = scf.ForOp(self.c(0), self.ssa(n), self.c(1), carried, Region(blk))
        self.cur.add_op(f)
        return list(f.results)

    def chunks(self, C, lanes: int, mask_elt, body, carried=()):
        """Per chunk of ``lanes`` columns: ``m, count = update_mask(count)`` (count starts at C) and
        body(first column, m, *carried) -> new carried."""
        n = self.ceildiv(C, lanes)
        count0 = self.i32(C)

        def step(j, cnt, *car):
            m, rest = self.op(vf.UpdateMaskOp(cnt, vf.mask_type(mask_elt)))
            return [rest, *(body(self.mul(j, lanes), m, *car) or [])]

        return self.loop(n, step, [count0, *carried])[1:]

    # ---- masks --------------------------------------------------------------------------------
    def mask(self, pattern: str, elt_or_bits) -> SSAValue:
        mt = vf.mask_type(elt_or_bits)
        key = (pattern, str(mt))
        if key not in self._masks:
            self._masks[key] = self.pre(vf.CreateMaskOp(pattern, mt))
        return self._masks[key]

    def finish(self) -> vf.VfFuncOp:
        blk = self.fn.block
        first = blk.first_op
        for op in self.prelude:
            if first is None:
                blk.add_op(op)
            else:
                blk.insert_op_before(op, first)
        return self.fn


def _elem(b: _B, t: _T, line, k):
    """Element offset of element k of line ``line`` of t (lines: rows of RowMajor, columns of ColMajor)."""
    return b.add(b.mul(line, t.stride), k)


def _rc(b: _B, t: _T, i, j):
    """Element offset of (i, j)."""
    if t.rm:
        return b.add(b.mul(i, t.t.cols), j)
    return b.add(b.mul(j, t.t.rows), i)


def _reg(elt) -> vf.RegType:
    return vf.RegType(elt)


def _lanes(elt) -> int:
    return REG // pto.element_bytes(elt)


def _load(b: _B, t: _T, off, dist="NORM"):
    return b.op(vf.LoadAlignOp(t.arg, off, dist))


def _store(b: _B, t: _T, off, v, m, dist="NORM"):
    b.op(vf.StoreAlignOp(t.arg, off, v, m, dist))


# --------------------------------------------------------------------------------------------
# The pass: one vf.func per tile op
# --------------------------------------------------------------------------------------------

def _by_vop(ops: dict) -> dict:
    """vf op classes by the repeat instruction their PyPTO name gives (``Add/vadd`` -> ``vadd``)."""
    return {c.PYPTO.split("/")[1]: c for c in ops.values()}


_UNARY = {"pto.texp": vf.ExpOp, "pto.tlog": vf.LnOp, "pto.tsqrt": vf.SqrtOp, "pto.trsqrt": vf.RsqrtOp,
          "pto.trecip": vf.RecOp, "pto.tabs": vf.AbsOp, "pto.trelu": vf.ReluOp, "pto.tnot": vf.NotOp}
_BIN = _by_vop(vf.BINARY_OPS)
NOT_VF = ("load", "store", "print", "ci", "trans", "rowprod", "gather", "scatter", "sort32", "mrgsort", "cmp", "sel", "partarg",
          "mgather", "mscatter")
"""Tile-op families that are no vector function: MTE2/MTE3 copies, TPRINT (print_ub), TCI, TTRANS
TROWPROD, TGATHER, TSCATTER, MGATHER, MSCATTER (with their DMAs), TCMP(S), TSEL(S) and TPARTARGMAX/MIN (the scalar unit's loads, stores and arithmetic: no vector
instruction vector_isa.md describes writes a ramp, moves an element across lanes, multiplies across
lanes, gathers or scatters, compares into a packed mask or selects by one), TSORT32 and TMRGSORT (VBS32 ``vbitsort``, VMS4 ``vmrgsort4``: A5 as
A2/A3).  A two-source TDEINTERLEAVE whose half (VC / 2 valid cols) is not whole 32-byte blocks,
a TINTERLEAVE/TDEINTERLEAVE of run-time valid shapes and a TCONCAT whose src1 would start inside a
block run on the scalar unit too (:func:`on_scalar_unit`)."""


def on_scalar_unit(op: Operation) -> bool:
    """The tile op is lowered by its a2a3 rule on ascend950 as well (no VF): the :data:`NOT_VF`
    families, a two-source TDEINTERLEAVE whose second half would be stored from a column inside a
    32-byte block (NORM stores are aligned), a (de)interleave of run-time valid shapes, and such a
    TCONCAT (:func:`A.concat_on_scalar_unit`)."""
    if type(op).FAMILY in NOT_VF or (isinstance(op, pto.ConcatOp) and A.concat_on_scalar_unit(op)):
        return True
    if isinstance(op, pto.InterleaveOp) and op.outs:
        if min(op.ins[0].type.valid_shape) < 0:  # a run-time valid shape
            return True
        vc = op.outs[0].type.valid_col
        return op.DEINTERLEAVE and not op.single and (vc < 0 or (vc // 2 * op.outs[0].type.elem_bytes) % 32 != 0)
    return False
_SCAL_OF_VOP = _by_vop(vf.SCALAR_OPS)
_SCAL = {n: c for n, op in pto.TILE_OPS.items()
         if op.FAMILY == "scalar" and (c := _SCAL_OF_VOP.get(op.A2A3_VOP)) is not None and c.FN == op.FN}
"""Tile-scalar ops that are one vf scalar op (tsubs and tdivs are not: vf.dup + vf.sub / vf.div)."""
_RED = {"sum": (vf.ReduceSumOp, vf.AddOp), "max": (vf.ReduceMaxOp, vf.MaxOp), "min": (vf.ReduceMinOp, vf.MinOp),
        "prod": (None, vf.MulOp)}
"""kind -> (the cross-lane reduction, the lane-wise fold); a product has no cross-lane instruction."""


def _attr_int(op, key):
    a = op.attributes.get(key) or op.properties.get(key)
    return a.value.data if isinstance(a, IntegerAttr) else None


class _OpLowering:
    """Builds the vf.func for one tile op and replaces the op by a vf.call."""

    def __init__(self, op: pto.TileOp, name: str, target: Target):
        self.op = op
        self.name = name
        self.target = target
        self.kargs: list[SSAValue] = []     # vf.call operands
        self.types: list = []
        self.tiles: dict = {}               # kernel tile value -> _T (filled once the VF exists)

    # ---- arguments ------------------------------------------------------------------------------
    def arg(self, v: SSAValue) -> int:
        for i, k in enumerate(self.kargs):
            if k is v:
                return i
        t = v.type
        if isinstance(t, pto.TileLikeType):
            if t.loc.data != "vec":
                raise _Unsupported(cube_space_message(v, t.loc.data))
            if not isinstance(t, pto.TileBufType):
                raise _Unsupported(f"operand {value_name(v)} is an L1 tile value, not a tile buffer: run pto-bufferize")
        self.kargs.append(v)
        self.types.append(t)
        return len(self.kargs) - 1

    def valid(self, v: SSAValue):
        """(rows, cols) of a kernel tile value's valid region: ints, or kernel index values (then
        passed as VF parameters)."""
        from pto_compiler.passes.tile_access import root_alloc

        t = v.type
        out = []
        for k, static in (("valid_row", t.valid_row), ("valid_col", t.valid_col)):
            if static >= 0:
                out.append(static)
                continue
            alloc = root_alloc(v)
            dyn = getattr(alloc, k, None) if alloc is not None else None
            if dyn is None:
                raise _Unsupported(f"the valid {k[6:]}s of {value_name(v)} are not known (no alloc_tile operand)")
            out.append(("dyn", dyn))
        return out

    # ---- driver -----------------------------------------------------------------------------------
    def run(self, built: dict | None = None):
        """The vf.func and the vf.call (see :meth:`body`)."""
        return self.launch(*self.body(built))

    def body(self, built: dict | None, pristine: bool = False, intern=lambda a: a) -> tuple[vf.VfFuncOp, bool]:
        """The vf.func of the op's body and whether to launch a copy of it.  ``built``: the functions
        built so far by :meth:`body_key`; an op whose key is there gets a copy of that body (built
        once, copied many times: a copy skips the builder and the construction-time verification).
        ``pristine``: a body ``built`` holds is never launched itself (a fusion changes what it launches).
        ``intern``: see :meth:`body_key`."""
        op = self.op
        fam = type(op).FAMILY
        handler = getattr(self, f"f_{fam}", None)
        if handler is None or not type(op).HAS_SEMANTICS or isinstance(op, pto.OpaqueTileOp):
            raise _Unsupported(pto.no_semantics(op) or "no rule for this instruction")
        plan = handler()      # registers the arguments, returns the body generator
        try:
            key = self.body_key(intern) if built is not None else None
            template = built.get(key) if key is not None else None
        except TypeError:  # an attribute that cannot be hashed: build this body
            key = template = None
        if template is not None:
            return template, True
        fn = self.build(plan)
        if key is not None:
            built[key] = fn
        return fn, pristine and key is not None

    def launch(self, fn: vf.VfFuncOp, copy: bool) -> tuple[vf.VfFuncOp, vf.VfCallOp]:
        """``fn`` (or a copy of it) named for this op, and its vf.call."""
        if copy:
            fn = vf.copy_op(fn, {})
            fn.properties["sym_name"] = StringAttr(self.name)
        fn.location = self.op.location
        for k, a in zip(self.kargs, fn.args):
            a.name_hint = k.name_hint
        call = vf.VfCallOp(self.name, list(self.kargs))
        call.location = self.op.location
        return fn, call

    def build(self, plan) -> vf.VfFuncOp:
        b = _B(self.name, self.types)
        b.fn.attributes["tile_op"] = StringAttr(self.op.name)
        self.b = b
        self.vals = {}
        for k, a in zip(self.kargs, b.fn.args):
            self.vals[k] = _T(a, k.type) if isinstance(k.type, pto.TileLikeType) else a
        plan()
        return b.finish()

    def body_key(self, intern=lambda a: a) -> tuple | None:
        """What the body depends on when every VF argument is a tile (the families read the op's
        name, attributes and operand types, and which operands are the same tile); None when
        a scalar or run-time valid shape is passed (its defining op might be read).  ``intern``
        (:class:`_Interner`) stands for each type and attribute in the key."""
        if not all(isinstance(t, pto.TileLikeType) for t in self.types):
            return None
        op = self.op
        position = {k: i for i, k in enumerate(self.kargs)}
        return (op.name, self.target.name, tuple(map(intern, self.types)),
                tuple(position.get(v, -1) for v in op.operands), tuple(intern(v.type) for v in op.operands),
                tuple(intern(r.type) for r in op.results),
                tuple((k, intern(a)) for k, a in sorted(op.attributes.items())),
                tuple((k, intern(a)) for k, a in sorted(op.properties.items())))

    def tile(self, v) -> _T:
        return self.vals[v]

    def dims(self, d):
        """A valid dim inside the VF: int, or the VF parameter for a kernel value."""
        if isinstance(d, tuple):
            return self.vals[d[1]]
        return d

    def dyn_args(self, *dims):
        for d in dims:
            if isinstance(d, tuple):
                self.arg(d[1])

    @staticmethod
    def _aligned(*tiles_and_lines):
        for t, lines in tiles_and_lines:
            if (t.stride * t.e) % 32 and not (isinstance(lines, int) and lines <= 1):
                raise _Unsupported(f"a line of {t.t} is {t.stride * t.e} bytes, not a multiple of 32 "
                                   "(NORM loads and stores need 32-byte aligned addresses)")

    # ---- the generic region map ---------------------------------------------------------------
    def map_region(self, tiles: list, dst_v, R, C, elt, chunk, row_pre=None, lane_bytes=None):
        """Over the valid region (R x C of dst): per line, per chunk of 256 bytes: ``chunk(line, k, m,
        ctx)`` with ``ctx = row_pre(line)``.  ``tiles``: the kernel tile values whose lines are indexed
        by (line, k) (all of dst's layout).  Contiguous operands run as one flat line."""
        b = self.b
        d = self.tile(dst_v)
        lanes = REG // (lane_bytes or pto.element_bytes(elt))
        rm = d.rm
        nlines, llen = (R, C) if rm else (C, R)
        ts = [self.tile(v) for v in tiles]
        flat = row_pre is None and isinstance(nlines, int) and isinstance(llen, int) and (
            nlines == 1 or all(t.stride == llen and t.rm == rm for t in ts))
        if flat:
            b.chunks(b.mul(nlines, llen), lanes, elt, lambda k, m: chunk(0, k, m, None))
            return

        def line(i):
            ctx = row_pre(i) if row_pre else None
            for t in ts:
                b.mul(i, t.stride)  # each operand's line offset, once per line
            b.chunks(llen, lanes, elt, lambda k, m: chunk(i, k, m, ctx))
            return []

        b.loop(nlines, line)

    # ---- families -----------------------------------------------------------------------------
    def _same_layout(self, *vs):
        rm = {v.type.is_row_major for v in vs}
        if len(rm) > 1:
            raise _Unsupported("operands of different layouts (RowMajor and ColMajor)")

    def _binary_operands(self):
        """The two sources, dst, dst's valid rows/cols and the vector op class of a binary op, its
        tiles made arguments of the VF."""
        a, bb = self.op.ins[0], self.op.ins[1]
        d = self.op.outs[0]
        self._same_layout(a, bb, d)
        R, C = self.valid(d)
        for v in (a, bb, d):
            self.arg(v)
        return a, bb, d, R, C, _BIN[type(self.op).A2A3_VOP]

    def f_binary(self):
        a, bb, d, R, C, cls = self._binary_operands()
        self.dyn_args(R, C)

        def plan():
            self._aligned((self.tile(a), R), (self.tile(bb), R), (self.tile(d), R))
            self._binary_region(cls, a, bb, d, self.dims(R), self.dims(C))
        return plan

    def _binary_region(self, cls, a, bb, d, R, C):
        """``d = cls(a, bb)`` over R x C (inside a plan)."""
        b = self.b
        ta, tb, td = self.tile(a), self.tile(bb), self.tile(d)
        rt = _reg(td.elt)

        def chunk(i, k, m, _):
            x = _load(b, ta, _elem(b, ta, i, k))
            y = _load(b, tb, _elem(b, tb, i, k))
            _store(b, td, _elem(b, td, i, k), b.op(cls([x, y], m, rt)), m)
        self.map_region([a, bb, d], d, R, C, td.elt, chunk)

    def _copy_region(self, s, d, R, C):
        """``d = s`` over R x C, one layout (inside a plan)."""
        b = self.b
        ts, td = self.tile(s), self.tile(d)
        self.map_region([s, d], d, R, C, td.elt,
                        lambda i, k, m, _: _store(b, td, _elem(b, td, i, k), _load(b, ts, _elem(b, ts, i, k)), m))

    def f_part(self):
        """TPART*: the source valid on all of dst's region copied to dst, then the binary op over the
        other source's region (one VF: its stores land in program order).  Valid shapes known only
        at run time: as the a2a3 rule (:meth:`A._FnLowering._part_run_time`), the copies in loops of
        0 or 1 trips."""
        a, bb, d, R, C, cls = self._binary_operands()
        dims = (R, C, *self.valid(a), *self.valid(bb))
        if any(isinstance(x, tuple) for x in dims):
            return self._part_run_time(cls, a, bb, d, dims)
        if 0 in (R, C):  # "If dst has a zero valid region, the instruction returns early"
            return lambda: None
        full, (sr, sc) = self.op.part_split()
        src = (a, bb)[full]

        def plan():
            self._aligned((self.tile(a), sr), (self.tile(bb), sr), (self.tile(d), R), (self.tile(src), R))
            if src is not d:
                self._copy_region(src, d, R, C)
            self._binary_region(cls, a, bb, d, sr, sc)
        return plan

    def _part_run_time(self, cls, a, bb, d, dims):
        self.dyn_args(*dims)

        def plan():
            b = self.b
            R, C, r0, c0, r1, c1 = (self.dims(x) for x in dims)
            self._aligned((self.tile(a), 2), (self.tile(bb), 2), (self.tile(d), 2))
            nonempty = b.mul(b.min(R, 1), b.min(C, 1))
            f0 = b.mul(nonempty, b.mul(A.equal_flag(b, r0, R), A.equal_flag(b, c0, C)))
            for src, trips in ((a, f0), (bb, b.sub(nonempty, f0))):
                b.loop(trips, lambda _, src=src: self._copy_region(src, d, R, C) or [])
            self._binary_region(cls, a, bb, d, b.min(b.min(r0, r1), R), b.min(b.min(c0, c1), C))
        return plan

    def f_unary(self):
        s, d = self.op.ins[0], self.op.outs[0]
        self._same_layout(s, d)
        R, C = self.valid(d)
        self.arg(s)
        self.arg(d)
        self.dyn_args(R, C)
        k = type(self.op).BY_SCALAR
        cls = _UNARY[self.op.name] if k is None else _SCAL_OF_VOP[type(self.op).A2A3_VOP]

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            self._aligned((ts, R), (td, R))
            rt = _reg(td.elt)
            extra = [] if k is None else [b.cf(k, td.elt) if pto.is_float(td.elt) else b.c(k, td.elt)]

            def chunk(i, kk, m, _):
                x = _load(b, ts, _elem(b, ts, i, kk))
                _store(b, td, _elem(b, td, i, kk), b.op(cls([x, *extra], m, rt)), m)
            self.map_region([s, d], d, self.dims(R), self.dims(C), td.elt, chunk)
        return plan

    def f_mov(self):
        if len(self.op.ins) != 1:
            raise _Unsupported("tmov with extra operands")
        s, d = self.op.ins[0], self.op.outs[0]
        if s.type.elem_bytes != d.type.elem_bytes or s.type.element_type != d.type.element_type:
            raise _Unsupported("tmov between different element types")
        R, C = self.valid(d)
        self.arg(s)
        self.arg(d)
        self.dyn_args(R, C)
        mixed = s.type.is_row_major != d.type.is_row_major

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            if mixed:
                # a single row or column on both sides: one contiguous run each
                if not (isinstance(R, int) and isinstance(C, int) and (R == 1 or C == 1)):
                    raise _Unsupported("tmov between a RowMajor and a ColMajor tile")
                n = R * C
                b.chunks(n, _lanes(td.elt), td.elt,
                         lambda k, m: _store(b, td, k, _load(b, ts, k), m))
                return
            self._aligned((ts, R), (td, R))
            self._copy_region(s, d, self.dims(R), self.dims(C))
        return plan

    def _scalar_in_vf(self, v: SSAValue, elt):
        """The VF parameter for kernel scalar v, converted to the lane type when it differs."""
        b = self.b
        s = self.vals[v]
        t = s.type
        if vf._scalar_fits(t, elt):
            return s
        if pto.is_float(elt) and pto.is_float(t):
            cls = arith.TruncFOp if pto.element_bytes(t) > pto.element_bytes(elt) else arith.ExtFOp
            return b.op(cls(s, elt))
        if isinstance(t, (IntegerType, IndexType)) and isinstance(elt, IntegerType):
            sl = IntegerType(elt.width.data)
            if isinstance(t, IndexType):
                return b.op(arith.IndexCastOp(s, sl))
            if t.width.data > elt.width.data:
                return b.op(arith.TruncIOp(s, sl))
            return b.op(arith.ExtSIOp(s, sl))
        raise _Unsupported(f"a scalar of type {t} on {pto.dtype_name(elt)} lanes")

    def f_scalar(self):
        op = self.op
        tv = op.src
        (sv,) = op.scalar_ins()
        d = op.outs[0]
        self._same_layout(tv, d)
        R, C = self.valid(d)
        self.arg(tv)
        self.arg(d)
        self.arg(sv)
        self.dyn_args(R, C)
        name = op.name

        def plan():
            b = self.b
            ts, td = self.tile(tv), self.tile(d)
            self._aligned((ts, R), (td, R))
            rt = _reg(td.elt)
            s = self._scalar_in_vf(sv, td.elt)
            if name in _SCAL:
                cls = _SCAL[name]
                compute = lambda x, m: b.op(cls([x, s], m, rt))  # noqa: E731
            else:
                sreg = b.op(vf.DupOp([s], None, rt))
                vcls = vf.SubOp if name == "pto.tsubs" else vf.DivOp
                if name == "pto.tdivs" and op.scalar_first:
                    compute = lambda x, m: b.op(vcls([sreg, x], m, rt))  # noqa: E731
                else:
                    compute = lambda x, m: b.op(vcls([x, sreg], m, rt))  # noqa: E731

            def chunk(i, k, m, _):
                x = _load(b, ts, _elem(b, ts, i, k))
                _store(b, td, _elem(b, td, i, k), compute(x, m), m)
            self.map_region([tv, d], d, self.dims(R), self.dims(C), td.elt, chunk)
        return plan

    def f_expands(self):
        op = self.op
        d = op.outs[0]
        sv = op.ins[0]
        R, C = self.valid(d)
        self.arg(d)
        self.arg(sv)
        self.dyn_args(R, C)

        def plan():
            b = self.b
            td = self.tile(d)
            self._aligned((td, R))
            s = self._scalar_in_vf(sv, td.elt)
            reg = b.op(vf.DupOp([s], None, _reg(td.elt)))
            self.map_region([d], d, self.dims(R), self.dims(C), td.elt,
                            lambda i, k, m, _: _store(b, td, _elem(b, td, i, k), reg, m))
        return plan

    def f_rowexpand(self):
        """TROWEXPAND* (module doc); when only the run-time valid shapes tell the expanded operand
        (``pto.AT_RUN_TIME``, Mode 2), both forms in loops of 0 or 1 trips: src0 full when its valid
        shape is dst's, else src1."""
        op = self.op
        expanded = _attr_int(op, "expanded_operand")
        mode = _attr_int(op, "expand_mode")
        if expanded is None or mode is None:
            expanded, mode = op.expand_analysis()
        d = op.outs[0]
        R, C = self.valid(d)
        for v in (op.ins[0], op.ins[1], d):
            self.arg(v)
        self.dyn_args(R, C)
        vop = type(op).A2A3_VOP
        expdif = op.name.endswith("expdif")
        cls = _BIN[vop]
        src0_valid = self.valid(op.ins[0]) if expanded == pto.AT_RUN_TIME else ()
        self.dyn_args(*src0_valid)

        def region(expanded):
            b = self.b
            full_v, x_v = op.ins[1 - expanded], op.ins[expanded]
            td, tf, tx = self.tile(d), self.tile(full_v), self.tile(x_v)
            self._aligned((td, R), (tf, R))
            rt = _reg(td.elt)
            if mode == 2:
                self._aligned((tx, R))

            def row_pre(i):
                if mode == 1:
                    if tx.rm:
                        raise _Unsupported("Mode 1 needs a ColMajor expanded operand")
                    return _load(b, tx, _rc(b, tx, i, 0), f"BRC_B{8 * tx.e}")
                return _load(b, tx, _rc(b, tx, i, 0), "BLK")

            def chunk(i, k, m, bc):
                x = _load(b, tf, _elem(b, tf, i, k))
                pair = [bc, x] if expanded == 0 else [x, bc]
                r = b.op(cls(pair, m, rt))
                if expdif:
                    r = b.op(vf.ExpOp([r], m, rt))
                _store(b, td, _elem(b, td, i, k), r, m)
            self.map_region([full_v, d], d, self.dims(R), self.dims(C), td.elt, chunk, row_pre=row_pre)
            return []

        def plan():
            if expanded != pto.AT_RUN_TIME:
                return region(expanded)
            b = self.b
            r0, c0 = (self.dims(x) for x in src0_valid)
            full0 = b.mul(A.equal_flag(b, r0, self.dims(R)), A.equal_flag(b, c0, self.dims(C)))
            b.loop(full0, lambda _: region(1))
            b.loop(b.sub(1, full0), lambda _: region(0))
        return plan

    def f_colexpand(self):
        op = self.op
        a, bv = op.ins[0], op.ins[1]
        d = op.outs[0]
        R, C = self.valid(d)
        for v in (a, bv, d):
            self.arg(v)
        self.dyn_args(R, C)
        cls = _BIN[type(op).A2A3_VOP]
        expdif = op.name.endswith("expdif")

        def plan():
            b = self.b
            ta, tb, td = self.tile(a), self.tile(bv), self.tile(d)
            if not (ta.rm and td.rm and tb.rm):
                raise _Unsupported("TCOLEXPAND* on ColMajor tiles")
            self._aligned((ta, R), (td, R))
            rt = _reg(td.elt)

            def chunk(i, k, m, _):
                x = _load(b, ta, _elem(b, ta, i, k))
                y = _load(b, tb, k)
                r = b.op(cls([x, y], m, rt))
                if expdif:
                    r = b.op(vf.ExpOp([r], m, rt))
                _store(b, td, _elem(b, td, i, k), r, m)
            self.map_region([a, d], d, self.dims(R), self.dims(C), td.elt, chunk, row_pre=lambda i: None)
        return plan

    def f_rowbroadcast(self):
        op = self.op
        s, d = op.ins[0], op.outs[0]
        R, C = self.valid(d)
        self.arg(s)
        self.arg(d)
        self.dyn_args(R, C)

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            if not td.rm:
                raise _Unsupported("TROWEXPAND into a ColMajor tile")
            self._aligned((td, R))

            def row_pre(i):
                off = _rc(b, ts, i, 0)
                if ts.e == 8:
                    u = b.op(vf.LoadUnalignOp(ts.arg, off))
                    return b.op(vf.DupOp([u], None, _reg(ts.elt)))
                return _load(b, ts, off, f"BRC_B{8 * ts.e}")
            self.map_region([d], d, self.dims(R), self.dims(C), td.elt,
                            lambda i, k, m, bc: _store(b, td, _elem(b, td, i, k), bc, m), row_pre=row_pre)
        return plan

    def f_colbroadcast(self):
        op = self.op
        s, d = op.ins[0], op.outs[0]
        R, C = self.valid(d)
        self.arg(s)
        self.arg(d)
        self.dyn_args(R, C)

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            if not (td.rm and ts.rm):
                raise _Unsupported("TCOLEXPAND on ColMajor tiles")
            self._aligned((td, R))
            self.map_region([d], d, self.dims(R), self.dims(C), td.elt,
                            lambda i, k, m, _: _store(b, td, _elem(b, td, i, k), _load(b, ts, k), m),
                            row_pre=lambda i: None)
        return plan

    def f_rowreduce(self):
        op = self.op
        s, d = op.ins[0], op.outs[0]
        R, C = self.valid(s)
        self.arg(s)
        self.arg(d)
        self.dyn_args(R, C)
        kind = op.name[len("pto.trow"):]
        red_cls, acc_cls = _RED[kind]

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            if not ts.rm:
                raise _Unsupported("a row reduction of a ColMajor tile")
            self._aligned((ts, R))
            if (isinstance(R, int) and R <= 0) or (isinstance(C, int) and C <= 0):
                return
            elt = ts.elt
            dt = ts.dt
            Cd = self.dims(C)
            widen = (dt == "f16" and kind == "sum") or dt in ("i8", "ui8")
            if widen:
                welt = _wide_type(elt)
                lanes = _lanes(welt)
                dist = f"UNPK_B{8 * ts.e}"
            else:
                welt, lanes, dist = elt, _lanes(elt), "NORM"
            rt = _reg(welt)
            pd = b.mask("VL1", welt)
            full_w = b.mask("ALL", welt)

            def chunk(i, k):
                v = _load(b, ts, _rc(b, ts, i, k), dist)
                return b.op(vf.CvtOp(v, full_w, rt)) if widen else v

            if isinstance(C, int):
                m0 = b.pre(vf.UpdateMaskOp(b.i32(C), vf.mask_type(welt)))[0] if C < lanes else b.mask("ALL", welt)
                rest = C - lanes if C > lanes else None
            else:  # run-time cols: the first min(C, lanes) lanes; max(C - lanes, 0) columns folded
                m0 = b.op(vf.UpdateMaskOp(b.i32(Cd), vf.mask_type(welt)))[0]
                rest = b.op(arith.MaxSIOp(b.op(arith.SubiOp(Cd, b.c(lanes))), b.c(0)))

            def row(i):
                # chunk 0 (whole when more follow) starts the accumulator; chunks 1.. fold into it
                # left to right, MERGING under their masks (lanes past the row keep chunk 0's
                # values); one cross-lane reduction at the end
                acc = chunk(i, 0)
                if rest is not None:
                    acc = b.chunks(rest, lanes, welt, lambda k, m, a: [
                        b.op(acc_cls([a, chunk(i, b.add(k, lanes))], m, rt, merge_mode="MERGING"))], [acc])[0]
                out = b.op(red_cls([acc], m0, rt))
                if widen:
                    out = b.op(vf.CvtOp(out, pd, _reg(elt)))
                _store(b, td, _rc(b, td, i, 0), out, b.mask("VL1", elt), "ONEPT")
                return []
            b.loop(self.dims(R), row)
        return plan

    def f_colreduce(self):
        op = self.op
        s, d = op.ins[0], op.outs[0]
        R, C = self.valid(s)
        self.arg(s)
        self.arg(d)
        self.dyn_args(R, C)
        kind = op.name[len("pto.tcol"):]
        fold_cls = _RED[kind][1]

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            if not (ts.rm and td.rm):
                raise _Unsupported("a column reduction of ColMajor tiles")
            self._aligned((ts, R))
            Rd, Cd = self.dims(R), self.dims(C)
            if (isinstance(Rd, int) and Rd <= 0) or (isinstance(Cd, int) and Cd <= 0):
                return
            elt = ts.elt
            widen = kind == "sum" and ts.dt in ("f16", "bf16")
            if widen:
                welt = _wide_type(elt)
                dist = f"UNPK_B{8 * ts.e}"
            else:
                welt, dist = elt, "NORM"
            lanes = _lanes(welt)
            rt = _reg(welt)
            full_w = b.mask("ALL", welt)

            def row_val(i, k):
                v = _load(b, ts, _rc(b, ts, i, k), dist)
                return b.op(vf.CvtOp(v, full_w, rt)) if widen else v

            def fold(k, m):
                acc = row_val(0, k)
                acc = b.loop(b.add(Rd, -1), lambda i, a: [b.op(fold_cls([a, row_val(b.add(i, 1), k)], m, rt))],
                             [acc])[0]
                if widen:
                    nar = b.op(vf.CvtOp(acc, m, _reg(elt)))
                    _store(b, td, k, nar, m, f"PK_B{16 * td.e}")
                else:
                    _store(b, td, k, acc, m)
                return []

            def chunk(k, m):
                if isinstance(Rd, int):
                    return fold(k, m)
                # a run-time row count: no row, no write (an empty reduction writes nothing)
                return b.loop(b.op(arith.MinUIOp(b.ssa(Rd), b.ssa(1))), lambda _: fold(k, m))
            b.chunks(Cd, lanes, welt, chunk)
        return plan

    def _arg_update(self, B, X, I, idx, m, elt, rt, ut, is_max):
        """One step of the first-index extreme under mask m: N = max(B, X); F = min(N xor B, 1) on
        the bits (1 only where the extreme changed: a strictly better value, +0 over -0, a first
        NaN; B holds canonical NaNs); I = max(I, F * idx) (idx beats every index I holds); (N, I)."""
        b = self.b
        N = b.op((vf.MaxOp if is_max else vf.MinOp)([B, X], m, rt))
        nb, bb = (b.op(vf.BitcastOp(v, ut)) if ut != rt else v for v in (N, B))
        F = b.op(vf.BINARY_OPS["vf.xor"]([nb, bb], m, ut))
        F = b.op(vf.MinsOp([F, b.c(1, _signless(ut.element_type))], m, ut))
        F = b.op((vf.MulsOp if isinstance(idx, SSAValue) and not isinstance(idx.type, vf.RegType) else vf.MulOp)(
            [F, idx], m, ut))
        return N, b.op(vf.MaxOp([I, F], m, ut))

    def _store_index(self, td, off, I, m=None):
        """Index lanes (unsigned) stored into dst's i32/ui32 lanes: bitcast, or ``vf.cvt`` EVEN from
        16-bit lanes (lane i <- lane 2i); under m (NORM), else lane 0 (ONEPT)."""
        b = self.b
        rt = _reg(td.elt)
        mm = m if m is not None else b.mask("VL1", td.elt)
        if I.type.elem_bytes == 4:
            v = b.op(vf.BitcastOp(I, rt)) if I.type != rt else I
        else:
            v = b.op(vf.CvtOp(I, mm, rt))
        _store(b, td, off, v, mm, "NORM" if m is not None else "ONEPT")

    def f_rowarg(self):
        """TROWARGMAX/MIN: per row, per chunk ``reduce_max/min`` (vcmax: lane 0 the value, lane 1
        its first index, vector_isa.md §2.6), the index moved to lane 0 with ``deinterleave`` ODD and
        offset by the chunk's first column, as the A5 TRowReduceIdx header does (vdintlv + add);
        chunks combine in lane 0 by :meth:`_arg_update`; the index stored ONEPT.  Run-time valid
        rows/cols are VF parameters (chunk 0 under the first min(C, lanes) lanes, max(C - lanes, 0)
        columns after it)."""
        s, d = self.op.ins[0], self.op.outs[0]
        R, C = self.valid(s)
        self.arg(s)
        self.arg(d)
        self.dyn_args(R, C)
        is_max = self.op.FN == "reduce_argmax"
        red_cls = _RED["max" if is_max else "min"][0]

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            self._aligned((ts, R))
            elt = ts.elt
            rt, lanes = _reg(elt), _lanes(elt)
            uelt = IntegerType(8 * ts.e, Signedness.UNSIGNED)
            ut = _reg(uelt)
            pd = b.mask("VL1", elt)

            def chunk_index(i, k, m):
                r = b.op(red_cls([_load(b, ts, _rc(b, ts, i, k))], m, rt))
                gi = b.op(vf.BitcastOp(b.op(vf.DeinterleaveOp(r, r, "ODD")), ut))
                if not (isinstance(k, int) and k == 0):
                    k = b.c(k, _signless(uelt)) if isinstance(k, int) else b.op(arith.IndexCastOp(k, _signless(uelt)))
                    gi = b.op(vf.AddsOp([gi, k], pd, ut))
                return r, gi

            if isinstance(C, int):
                m0 = b.pre(vf.UpdateMaskOp(b.i32(C), vf.mask_type(elt)))[0] if C < lanes else b.mask("ALL", elt)
                rest = C - lanes if C > lanes else None
            else:
                Cd = self.dims(C)
                m0 = b.op(vf.UpdateMaskOp(b.i32(Cd), vf.mask_type(elt)))[0]
                rest = b.op(arith.MaxSIOp(b.op(arith.SubiOp(Cd, b.c(lanes))), b.c(0)))

            def row(i):
                B, I = chunk_index(i, 0, m0)
                if rest is not None:
                    def step(k, m, B, I):
                        r, gi = chunk_index(i, b.add(k, lanes), m)
                        return list(self._arg_update(B, r, I, gi, pd, elt, rt, ut, is_max))
                    B, I = b.chunks(rest, lanes, elt, step, [B, I])
                self._store_index(td, _rc(b, td, i, 0), I)
                return []
            b.loop(self.dims(R), row)
        return plan

    def f_colarg(self):
        """TCOLARGMAX/MIN: per chunk of columns, B = max(row 0, row 0) (canonical NaNs), I = 0, then
        rows 1.. folded lane-wise by :meth:`_arg_update` with the row number as the index (no
        compare/select: vf has none; the A2A3 header's vcmp + vsel give the same first index).
        2-byte sources load with ``UNPK_B16`` (element i in lane 2i), so the flags widen to the
        32-bit index lanes with one ``vf.cvt``; 1-byte sources load with ``UNPK4_B8`` (element i in
        lane 4i) and widen to 16-bit lanes first (``vf.cvt`` EVEN: element i in lane 2i, sign or
        zero extended, order kept), then run as 2-byte ones.  Run-time valid rows/cols are VF
        parameters (no row: no write)."""
        s, d = self.op.ins[0], self.op.outs[0]
        R, C = self.valid(s)
        self.arg(s)
        self.arg(d)
        self.dyn_args(R, C)
        is_max = self.op.FN == "reduce_argmax"

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            self._aligned((ts, R))
            elt = _wide_type(ts.elt) if ts.e == 1 else ts.elt
            e = max(ts.e, 2)
            rt = _reg(elt)
            ut = _reg(IntegerType(8 * e, Signedness.UNSIGNED))
            it = _reg(IntegerType(32, Signedness.UNSIGNED))
            dist = {1: "UNPK4_B8", 2: "UNPK_B16"}.get(ts.e, "NORM")
            full = b.mask("ALL", elt)

            def load(off):
                x = _load(b, ts, off, dist)
                return b.op(vf.CvtOp(x, full, rt)) if ts.e == 1 else x

            def chunk(k, m):
                mv = m if e == 4 else full  # 16-bit lanes: every lane (odd ones hold zeros)
                x0 = load(k)
                B = b.op((vf.MaxOp if is_max else vf.MinOp)([x0, x0], mv, rt))
                I = b.op(vf.DupOp([b.c(0, I32)], None, it))

                def row(i, B, I):
                    ii = b.add(i, 1)
                    x = load(_rc(b, ts, ii, k))
                    if e == 4:
                        return list(self._arg_update(B, x, I, b.i32(ii), m, elt, rt, ut, is_max))
                    N = b.op((vf.MaxOp if is_max else vf.MinOp)([B, x], mv, rt))
                    F = b.op(vf.BINARY_OPS["vf.xor"]([b.op(vf.BitcastOp(N, ut)), b.op(vf.BitcastOp(B, ut))], mv, ut))
                    F = b.op(vf.MinsOp([F, b.c(1, IntegerType(16))], mv, ut))
                    F = b.op(vf.MulsOp([b.op(vf.CvtOp(F, m, it)), b.i32(ii)], m, it))
                    return [N, b.op(vf.MaxOp([I, F], m, it))]
                B, I = b.loop(R - 1 if isinstance(R, int) else b.op(arith.SubiOp(Rd, b.c(1))), row, [B, I])
                self._store_index(td, k, I, m)
                return []
            Rd = self.dims(R)
            if isinstance(R, int):
                b.chunks(self.dims(C), _lanes(td.elt), td.elt, chunk)
            else:  # a run-time row count: no row, no write (as an empty column reduction)
                b.loop(b.op(arith.MinUIOp(b.ssa(Rd), b.ssa(1))),
                       lambda _: b.chunks(self.dims(C), _lanes(td.elt), td.elt, chunk) or [])
        return plan

    def f_pairreduce(self):
        op = self.op
        s, d = op.ins[0], op.outs[0]
        R, C = self.valid(d)
        self.arg(s)
        self.arg(d)
        self.dyn_args(R, C)

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            self._aligned((ts, R), (td, R))
            if (isinstance(R, int) and R <= 0) or (isinstance(C, int) and C <= 0):
                return
            elt = td.elt
            L = _lanes(elt)
            epb = 32 // td.e
            rt = _reg(elt)
            Cd = self.dims(C)
            half = b.ceildiv(Cd, 2)
            if isinstance(C, int):
                z0 = half // epb * epb
            else:  # run-time cols: zeros over [z0, C) of every row (nothing when C is 1)
                z0 = b.mul(b.op(arith.DivUIOp(half, b.c(epb))), epb)
            zero = None
            if not isinstance(C, int) or half < C:
                zero = b.op(vf.DupOp([b.cf(0.0, elt)], None, rt))
            zeros = b.op(arith.SubiOp(Cd, z0)) if not isinstance(C, int) else C - z0

            def row(i):
                if zero is not None:
                    # zeros over [z0, C) (z0: the 32-byte block holding ceil(C/2)); the pair sums below
                    # overwrite [z0, ceil(C/2))
                    b.chunks(zeros, L, elt, lambda k, m: _store(b, td, _rc(b, td, i, b.add(k, z0)), zero, m))
                h0 = b.i32(half)

                def chunk(k, m, h):
                    p = b.op(vf.PairReduceSumOp([_load(b, ts, _rc(b, ts, i, k))], m, rt))
                    mh, _rest = b.op(vf.UpdateMaskOp(h, vf.mask_type(elt)))
                    kk = b.op(arith.DivUIOp(b.ssa(k), b.c(2))) if not isinstance(k, int) else k // 2
                    _store(b, td, _rc(b, td, i, kk), p, mh)
                    return [b.op(arith.SubiOp(h, b.c(L // 2, I32)))]
                b.chunks(Cd, L, elt, chunk, [h0])
                return []
            b.loop(self.dims(R), row)
        return plan

    def f_composed(self):
        """The op's ``STEPS`` on registers: per chunk, each tile operand loaded once, one vf op per step
        (the vf op of the step's instruction), the last result stored to dst."""
        op = self.op
        named = op.named_operands()
        d = op.outs[0]
        R, C = self.valid(d)
        tiles = [v for k, v in named.items() if k != "s"]
        for v in tiles:
            self.arg(v)
        if "s" in named:
            self.arg(named["s"])
        self.dyn_args(R, C)
        ops = {**_by_vop(vf.BINARY_OPS), **_by_vop(vf.SCALAR_OPS), **_by_vop(vf.UNARY_OPS)}

        def plan():
            b = self.b
            td = self.tile(d)
            ts = {k: self.tile(v) for k, v in named.items() if k != "s"}
            self._aligned(*((t, R) for t in ts.values()))
            rt = _reg(td.elt)
            s = self._scalar_in_vf(named["s"], td.elt) if "s" in named else None
            s_reg = b.op(vf.DupOp([s], None, rt)) if op.uses("-s") else None  # x + (-s) is vf.sub of it

            def chunk(i, k, m, _):
                regs = {n: _load(b, t, _elem(b, t, i, k)) for n, t in ts.items() if op.uses(n)}
                regs["s"] = s
                for vop, *args in op.STEPS:
                    if "-s" in args:
                        regs["t"] = b.op(vf.SubOp([regs[args[0]], s_reg], m, rt))
                    else:
                        regs["t"] = b.op(ops[vop]([regs[x] for x in args], m, rt))
                _store(b, td, _elem(b, td, i, k), regs["t"], m)
            self.map_region(tiles, d, self.dims(R), self.dims(C), td.elt, chunk)
        return plan

    def f_axpy(self):
        """TAXPY: per chunk of dst's lanes, src loaded (f16 into f32: UNPK_B16 + vf.cvt), ``vf.muls`` by
        s, dst loaded, ``vf.add``, stored."""
        op = self.op
        s, sv, d = op.ins[0], op.ins[1], op.outs[0]
        R, C = self.valid(d)
        self.arg(s)
        self.arg(d)
        self.arg(sv)
        self.dyn_args(R, C)

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            self._aligned((ts, R), (td, R))
            rt = _reg(td.elt)
            k_s = self._scalar_in_vf(sv, td.elt)

            def chunk(i, k, m, _):
                if ts.e < td.e:
                    x = b.op(vf.CvtOp(_load(b, ts, _elem(b, ts, i, k), f"UNPK_B{8 * ts.e}"), m, rt, "RINT"))
                else:
                    x = _load(b, ts, _elem(b, ts, i, k))
                p = b.op(vf.MulsOp([x, k_s], m, rt))
                y = _load(b, td, _elem(b, td, i, k))
                _store(b, td, _elem(b, td, i, k), b.op(vf.AddOp([p, y], m, rt)), m)
            self.map_region([s, d], d, self.dims(R), self.dims(C), td.elt, chunk)
        return plan

    def f_tri(self):
        """TTRI: per row, the background value stored over the row's chunks, then the other value over
        the first n = clamp(i + diag + 1, 0, C) (lower) / clamp(i + diag, 0, C) (upper) columns
        (update_mask on n: the chunk loop runs ceil(n / VL) trips)."""
        op = self.op
        d, sv = op.outs[0], op.ins[0]
        R, C = self.valid(d)
        self.arg(d)
        self.arg(sv)
        self.dyn_args(R, C)
        upper = op.flag("upperOrLower")

        def plan():
            b = self.b
            td = self.tile(d)
            self._aligned((td, R))
            rt, lanes = _reg(td.elt), _lanes(td.elt)
            if pto.is_float(td.elt):
                one, zero = b.cf(1.0, td.elt), b.cf(0.0, td.elt)
            else:
                one, zero = b.c(1, _signless(td.elt)), b.c(0, _signless(td.elt))
            first, second = (b.op(vf.DupOp([v], None, rt)) for v in ((one, zero) if upper else (zero, one)))
            diag = self.vals[sv]
            if not isinstance(diag.type, IndexType):
                diag = b.op(arith.IndexCastOp(diag, INDEX))

            Rd, Cd = self.dims(R), self.dims(C)

            def row(i):
                base = b.mul(i, td.stride)
                b.chunks(Cd, lanes, td.elt, lambda k, m: _store(b, td, b.add(base, k), first, m))
                n = b.op(arith.MaxSIOp(b.add(b.add(i, diag), 0 if upper else 1), b.c(0)))
                n = b.op(arith.MinSIOp(n, b.ssa(Cd)))
                b.chunks(n, lanes, td.elt, lambda k, m: _store(b, td, b.add(base, k), second, m))
                return []
            b.loop(Rd, row)
        return plan

    def f_concat(self):
        """TCONCAT: per row, src0's chunks stored at the row's start and src1's at column C0 (NORM
        stores need a 32-byte aligned address: C0 whole blocks, else :func:`on_scalar_unit`)."""
        a, bb = self.op.ins
        d = self.op.outs[0]
        (R, C0), (_, C1) = self.valid(a), self.valid(bb)  # static, whole blocks (else on the scalar unit)
        for v in (a, bb, d):
            self.arg(v)

        def plan():
            b = self.b
            ta, tb, td = self.tile(a), self.tile(bb), self.tile(d)
            self._aligned((ta, R), (tb, R), (td, R))
            for src, ts, c0, n in ((a, ta, 0, C0), (bb, tb, C0, C1)):
                self.map_region([src, d], d, R, n, td.elt,
                                lambda i, k, m, _, ts=ts, c0=c0: _store(b, td, _elem(b, td, i, b.add(k, c0)),
                                                                        _load(b, ts, _elem(b, ts, i, k)), m))
        return plan

    def f_fillpad(self):
        """TFILLPAD* (TFILLPAD.md): per row of dst's tile, each chunk holding src's first VC columns:
        src's chunk loaded, the PadValue's bits (a signless-integer dup, bitcast) stored over the
        chunk's columns, src's register over its first VC - k (the load first: on shared storage,
        the in-place form, src is read before the padding is written); the chunks after: the
        PadValue only, as every chunk of rows VR..; VR and VC may be known only at run time."""
        s, d = self.op.ins[0], self.op.outs[0]
        VR, VC = self.valid(s)
        self.arg(s)
        self.arg(d)
        self.dyn_args(VR, VC)

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            if not (ts.rm and td.rm):
                raise _Unsupported("a ColMajor tile")
            R, C = td.t.rows, td.t.cols
            self._aligned((ts, VR), (td, R))
            rt, it = _reg(td.elt), IntegerType(8 * td.e)
            bits = b.op(vf.DupOp([b.c(E.pad_bits(td.dt, td.t.pad.data), it)], None, _reg(it)))
            pad_reg = b.op(vf.BitcastOp(bits, rt)) if it != td.elt else bits

            lanes = _lanes(td.elt)

            VR_, VC_ = self.dims(VR), self.dims(VC)

            def minus(a, x):  # max(a - x, 0), x an int or an index value
                if isinstance(x, int):
                    return max(a - x, 0)
                return b.op(arith.MaxSIOp(b.op(arith.SubiOp(b.c(a), x)), b.c(0)))

            def row(i, vc):
                def copy(k, m, left):  # the chunk's pad over its first C - k columns, then src's VC - k
                    x = _load(b, ts, _elem(b, ts, i, k))
                    x = b.op(vf.BitcastOp(x, rt)) if ts.elt != td.elt else x
                    mc, rest = b.op(vf.UpdateMaskOp(left, vf.mask_type(td.elt)))
                    _store(b, td, _elem(b, td, i, k), pad_reg, mc)
                    _store(b, td, _elem(b, td, i, k), x, m)
                    return [rest]
                if not isinstance(vc, int) or vc:
                    b.chunks(vc, lanes, td.elt, copy, [b.i32(C)])
                k0 = b.mul(b.ceildiv(vc, lanes), lanes)
                b.chunks(minus(C, k0), lanes, td.elt,
                         lambda k, m: _store(b, td, _elem(b, td, i, b.add(k, k0)), pad_reg, m))
                return []

            b.loop(VR_, lambda i: row(i, VC_))
            b.loop(minus(R, VR_), lambda i: row(b.add(i, VR_), 0))
        return plan

    def f_interleave(self):
        """TINTERLEAVE / TDEINTERLEAVE (the pages; A5's vdintlv): ``vf.deinterleave`` EVEN/ODD of a
        register pair de-interleaves; interleaving, its inverse, is the same permutation applied
        ord - 1 times (the perfect shuffle of 2L lanes has order ord, the order of 2 modulo 2L - 1:
        7 for 32-bit, 8 for 16-bit, 9 for 8-bit lanes).  Per valid row, every store at an aligned
        column under an update_mask count; TINTERLEAVE's second half is read from column VC / 2
        (``vf.load_unalign`` when that is inside a 32-byte block)."""
        op = self.op
        srcs, dsts = list(op.ins), list(op.outs)
        R, VC = self.valid(srcs[0])  # (static: run-time ones go to the scalar unit, on_scalar_unit)
        for v in (*srcs, *dsts):
            self.arg(v)

        def plan():
            b = self.b
            ts = [self.tile(v) for v in srcs]
            d0, d1 = (self.tile(v) for v in dsts)
            self._aligned(*((t, R) for t in (*ts, d0, d1)))
            L, H, elt = _lanes(d0.elt), VC // 2, d0.elt
            rounds = next(n for n in range(1, 2 * L) if pow(2, n, 2 * L - 1) == 1)

            def deint(a, c):
                return b.op(vf.DeinterleaveOp(a, c)), b.op(vf.DeinterleaveOp(a, c, "ODD"))

            def load(t, i, col, aligned=True):
                off = _elem(b, t, i, col)
                return _load(b, t, off) if aligned else b.op(vf.LoadUnalignOp(t.arg, off))

            def split(t, i, col0):  # dst0/dst1 columns col0 + k from the even/odd elements of t's row
                def chunk(k, m):
                    x, y = deint(load(t, i, b.mul(k, 2)), load(t, i, b.add(b.mul(k, 2), L)))
                    _store(b, d0, _elem(b, d0, i, b.add(k, col0)), x, m)
                    _store(b, d1, _elem(b, d1, i, b.add(k, col0)), y, m)
                b.chunks(H, L, elt, chunk)

            def weave(i, dst, base):  # dst's VC columns: the stream of ts[0], ts[1] from column base
                def trip(q, left):
                    col = b.add(b.mul(q, L), base)
                    x, y = load(ts[0], i, col, aligned), load(ts[1], i, col, aligned)
                    for _ in range(rounds - 1):
                        x, y = deint(x, y)
                    for v, at in ((x, 0), (y, L)):
                        m, left = b.op(vf.UpdateMaskOp(left, vf.mask_type(elt)))
                        _store(b, dst, _elem(b, dst, i, b.add(b.mul(q, 2 * L), at)), v, m)
                    return [left]
                aligned = (base * d0.e) % 32 == 0
                b.loop(-(-H // L), trip, [b.i32(VC)])

            def row(i):
                if op.single:
                    split(ts[0], i, 0)
                elif op.DEINTERLEAVE:
                    split(ts[0], i, 0)
                    split(ts[1], i, H)
                else:
                    weave(i, d0, 0)
                    weave(i, d1, H)
                return []
            b.loop(R, row)
        return plan

    def f_dequant(self):
        """TDEQUANT (TDEQUANT.md): per row, the row's offset and scale loaded BRC_B32; per chunk of 64
        f32 lanes, src loaded UNPK_B16 (i8: UNPK4_B8, the page's unpack, then ``vf.cvt`` to i16)
        and ``vf.cvt`` to f32 (exact), ``vf.sub`` of the offset,
        ``vf.mul`` by the scale (the page's vsub then vmul), stored."""
        src, scale, offset = self.op.ins
        d = self.op.outs[0]
        R, C = self.valid(d)
        for v in (src, scale, offset, d):
            self.arg(v)
        self.dyn_args(R, C)

        def plan():
            b = self.b
            ts, tsc, tof, td = (self.tile(v) for v in (src, scale, offset, d))
            self._aligned((ts, R), (td, R))
            rt = _reg(td.elt)

            def row(i):
                return (_load(b, tof, _rc(b, tof, i, 0), "BRC_B32"), _load(b, tsc, _rc(b, tsc, i, 0), "BRC_B32"))

            def chunk(i, k, m, pair):
                if ts.e == 1:  # element m in the 32-bit lane m, then i8 -> i16 -> f32 (EVEN twice)
                    v = _load(b, ts, _elem(b, ts, i, k), "UNPK4_B8")
                    i16 = _reg(IntegerType(16))
                    v = b.op(vf.CvtOp(v, b.mask("ALL", IntegerType(16)), i16, "RINT"))
                else:
                    v = _load(b, ts, _elem(b, ts, i, k), "UNPK_B16")
                x = b.op(vf.CvtOp(v, m, rt, "RINT"))
                y = b.op(vf.MulOp([b.op(vf.SubOp([x, pair[0]], m, rt)), pair[1]], m, rt))
                _store(b, td, _elem(b, td, i, k), y, m)
            self.map_region([src, d], d, self.dims(R), self.dims(C), td.elt, chunk, row_pre=row)
        return plan

    def f_reluconv(self):
        """TADDRELUCONV / TSUBRELUCONV and TADDDEQRELU as the A5 headers' VF sequence
        (TADDReluConv.md, TAddDeqRelu.md "Implementation notes (A5)"): per chunk of source lanes, both
        sources loaded, ``vf.add``/``vf.sub`` (TADDDEQRELU: ``vf.cvt`` i32 -> f32, ``vf.muls`` by
        2^-17, deqScale, 2^17), ``vf.relu``, ``vf.mins`` by dst's largest value (the saturation: nothing
        is below 0 after the ReLU; a NaN stays a NaN), ``vf.cvt`` to dst EVEN and a PK store."""
        op = self.op
        a, bb, d = op.ins[0], op.ins[1], op.outs[0]
        deq = op.FAMILY == "deqrelu"
        R, C = self.valid(d)
        for v in (a, bb, d, *(op.ins[2:3] if deq else ())):
            self.arg(v)
        self.dyn_args(R, C)
        sub = type(op).A2A3_VOP == "vsub"

        def plan():
            b = self.b
            ta, tb, td = self.tile(a), self.tile(bb), self.tile(d)
            self._aligned((ta, R), (tb, R), (td, R))
            work = Float32Type() if deq else ta.elt
            st, wt, rt = _reg(ta.elt), _reg(work), _reg(td.elt)
            npd = E.np_dtype(pto.dtype_name(td.elt))
            top = b.cf(E.max_finite(npd), work) if pto.is_float(work) and E.is_float_dtype(npd) else (
                b.cf(E.int_range(npd)[1], work) if pto.is_float(work) else b.c(E.int_range(npd)[1], _signless(work)))
            scales = [b.cf(2.0 ** -E.DEQ_SCALE_SHIFT, work), self._scalar_in_vf(op.ins[2], work),
                      b.cf(2.0 ** E.DEQ_SCALE_SHIFT, work)] if deq else []

            def chunk(i, k, m, _):
                x = b.op((vf.SubOp if sub else vf.AddOp)([_load(b, ta, _elem(b, ta, i, k)),
                                                          _load(b, tb, _elem(b, tb, i, k))], m, st))
                if deq:
                    x = b.op(vf.CvtOp(x, m, wt, "RINT"))
                    for sc in scales:
                        x = b.op(vf.MulsOp([x, sc], m, wt))
                x = b.op(vf.MinsOp([b.op(vf.ReluOp([x], m, wt)), top], m, wt))
                _store(b, td, _elem(b, td, i, k), b.op(vf.CvtOp(x, m, rt, "RINT")), m, f"PK_B{8 * ta.e}")
            self.map_region([a, bb, d], d, self.dims(R), self.dims(C), ta.elt, chunk)
        return plan

    f_deqrelu = f_reluconv

    def f_cvt(self):
        op = self.op
        s, d = op.ins[0], op.outs[0]
        self._same_layout(s, d)
        R, C = self.valid(d)
        self.arg(s)
        self.arg(d)
        self.dyn_args(R, C)
        from pto_compiler.runtime.reference import _attr_body

        mode = round_mode(_attr_body(op, "rmode", "round_mode", "roundMode") or "CAST_RINT")
        sat = _attr_body(op, "sat_mode", "saturation_mode", "satMode")
        bounds = A.saturation_bounds(pto.dtype_name(s.type.element_type), pto.dtype_name(d.type.element_type)) \
            if sat is not None and "ON" in sat.upper() else None
        if bounds is not None and s.type.elem_bytes < d.type.elem_bytes:
            raise _Unsupported("a saturating widening integer conversion (the UNPK load leaves no source-typed "
                               "register to clamp)")

        def plan():
            b = self.b
            ts, td = self.tile(s), self.tile(d)
            self._aligned((ts, R), (td, R))
            es, ed = ts.e, td.e
            wide = max(es, ed)
            if wide != min(es, ed) and wide != 2 * min(es, ed):
                raise _Unsupported(f"conversions between {8 * es}- and {8 * ed}-bit types (lane-width ratio "
                                   "other than 1 or 2)")
            welt = ts.elt if es >= ed else td.elt
            rt = _reg(td.elt)

            def chunk(i, k, m, _):
                if es < ed:
                    v = _load(b, ts, _elem(b, ts, i, k), f"UNPK_B{8 * es}")
                else:
                    v = _load(b, ts, _elem(b, ts, i, k))
                if bounds is not None:  # saturation: clamp in the source type, then the wrapping cvt is exact
                    st = _reg(ts.elt)
                    v = b.op(vf.MinsOp([b.op(vf.MaxsOp([v, b.c(bounds[0], _signless(ts.elt))], m, st)),
                                        b.c(bounds[1], _signless(ts.elt))], m, st))
                r = b.op(vf.CvtOp(v, m, rt, mode))
                _store(b, td, _elem(b, td, i, k), r, m, f"PK_B{8 * es}" if es > ed else "NORM")
            self.map_region([s, d], d, self.dims(R), self.dims(C), welt, chunk, lane_bytes=wide)
        return plan


def _signless(elt) -> IntegerType:
    """The signless integer type of an integer element type's width (arith constants are signless)."""
    return IntegerType(elt.width.data)


def _wide_type(elt):
    """The double-width type a sum or an 8-bit extremum is computed in."""
    from xdsl.dialects.builtin import Float32Type

    name = pto.dtype_name(elt)
    if name in ("f16", "bf16"):
        return Float32Type()
    if name == "i8":
        return IntegerType(16)
    if name == "ui8":
        return IntegerType(16, Signedness.UNSIGNED)
    raise _Unsupported(f"no wide type for {name}")


PER_ROW = ("rowexpand", "colexpand", "rowbroadcast", "colbroadcast")
"""Broadcast families whose VFs pto-lower-vf launches once per row, as the study's naive broadcast
variants do (seeds/001 tail/head/mid_axis_1: one ``asc_vf_call`` per row); vf-fuse-launches moves
the row loop back into the VF."""


def _row_scalar_read(op: Operation, iv: SSAValue, fn: vf.VfFuncOp) -> bool:
    """A BRC load of element ``iv`` (the row) of a tile parameter nothing else reads, whose register
    is only the second source of ZEROING ops with a tile-scalar form: the naive per-row launch
    takes that element as a scalar the Main Scalar reads (seeds/001 tail_axis_1:
    ``aLocal.GetValue(j)`` passed to ``Adds``), bit for bit the same lanes."""
    if not (isinstance(op, vf.LoadAlignOp) and op.dist_name.startswith("BRC_B") and op.dyn_offset is iv
            and not op.static_offset and op.tile in fn.args and len(list(op.tile.uses)) == 1):
        return False
    uses = list(op.res[0].uses)
    return bool(uses) and all(type(u.operation) in vf.SCALAR_FORMS and u.index == 1 and u.operation.mode == "ZEROING"
                              and u.operation.dst_operand is None for u in uses)


def _launch_per_row(fn: vf.VfFuncOp, call: vf.VfCallOp) -> tuple[vf.VfFuncOp, list[Operation]]:
    """``fn`` whose body is constants and masks then one row loop, as a VF of one row (the row an
    index parameter) and the kernel ops launching it per row; anything else unchanged."""
    ops = list(fn.block.ops)
    loop = ops[-1] if ops else None
    if (not isinstance(loop, scf.ForOp) or loop.iter_args
            or any(not isinstance(o, arith.ConstantOp | vf.CreateMaskOp) for o in ops[:-1])):
        return fn, [call]
    bounds = [pto.constant_int(v) for v in (loop.lb, loop.ub, loop.step)]
    if None in bounds:
        return fn, [call]
    rbody = loop.body.blocks[0]
    reads = {o.tile: o for o in rbody.ops if _row_scalar_read(o, rbody.args[0], fn)}
    types = [a.type.element_type if a in reads else a.type for a in fn.args]
    row = vf.VfFuncOp(fn.sym_name.data, [*types, INDEX], attributes=dict(fn.attributes))
    row.location = fn.location
    vm: dict = {}
    for a, b in zip(fn.args, row.args):  # a tile read at the row only: its element there, a scalar
        b.name_hint = a.name_hint if a not in reads else f"{a.name_hint or 's'}_row"
        vm[reads[a].res[0] if a in reads else a] = b
    row.args[-1].name_hint = "row"
    vm[rbody.args[0]] = row.args[-1]
    for o in ops[:-1]:
        row.block.add_op(o.clone(vm))
    for o in rbody.ops:
        if not isinstance(o, scf.YieldOp) and o not in reads.values():
            row.block.add_op(o.clone(vm))
    if reads:
        for o in row.block.ops:
            vf.refit_scalar_forms(o)
    for o in list(row.block.ops):
        if isinstance(o, arith.ConstantOp | vf.CreateMaskOp) and not any(list(r.uses) for r in o.results):
            row.block.erase_op(o)
    consts = [arith.ConstantOp(IntegerAttr(v, INDEX)) for v in bounds]
    body = Block(arg_types=[INDEX])
    args, gets = [], []
    for a, v in zip(fn.args, call.arguments):
        if a in reads:
            gets.append(pto.GENERIC_OPS["pto.tgetval"]([v, body.args[0]], [a.type.element_type]))
            gets[-1].location = call.location
            v = gets[-1].results[0]
        args.append(v)
    launch = vf.VfCallOp(fn.sym_name.data, [*args, body.args[0]])
    launch.location = call.location
    body.add_ops([*gets, launch, scf.YieldOp()])
    kloop = scf.ForOp(*consts, [], Region(body))
    kloop.location = call.location
    call.erase()  # never inserted: drop its uses of the tiles, which later passes count
    return row, [*consts, kloop]


class _Interner:
    """Equal types and attributes -> one small int, each object hashed once: a tile type's hash
    walks its parameters, and a tile op's :meth:`_OpLowering.body_key` holds a dozen."""

    def __init__(self):
        self.by_id: dict[int, tuple] = {}
        self.by_value: dict = {}

    def __call__(self, a) -> int:
        known = self.by_id.get(id(a))
        if known is None:  # (the object is held, so no other takes its id)
            known = self.by_id[id(a)] = (a, self.by_value.setdefault(a, len(self.by_value)))
        return known[1]


class _Fusing:
    """pto-lower-vf followed by vf-fuse-launches (``fuse``), in one function: each tile op whose
    launch vf-fuse-launches would fuse into the launch before it has its body copied from its
    template straight into that launch's function
    (:class:`~pto_compiler.passes.vf_fuse_launches.Fusion`), with no function and call of its own to
    build, analyse and move; the pass then finds those chains fused."""

    def __init__(self, fn: func.FuncOp):
        from pto_compiler.passes import vf_fuse_launches as F

        self.F = F
        self.uses = F.Uses(fn)  # the tiles' last uses (lowering keeps the order of the kernel's ops)
        self.flats: dict = {}
        self.fusion = None
        self.head: tuple | None = None
        """(the open chain's first launch, its function, its name, the key of its loop)."""
        self.anchor: Operation | None = None
        """Where the open chain's last launch stands: the first's call, or the tile op of the last
        fused one (erased when the chain closes)."""

    def flat(self, template: vf.VfFuncOp, kept: bool):
        if not kept:
            return self.F.chunk_loop(template)
        if template not in self.flats:
            self.flats[template] = self.F.chunk_loop(template)
        return self.flats[template]

    def take(self, op: Operation, lowering: _OpLowering, template: vf.VfFuncOp, kept: bool) -> bool:
        """Fuse ``op``'s launch into the open chain, if vf-fuse-launches would."""
        if self.anchor is None:
            return False
        t = self.flat(template, kept)
        if t is None or t.key != self.head[3]:
            return False
        at, gap = self.F.next_after(self.anchor, lambda o: o is op)
        if at is None:
            return False
        if self.fusion is None:
            call, fn, name, _ = self.head
            self.fusion = self.F.Fusion(self.F.chunk_loop(fn), list(call.operands), name)
        self.fusion.add(t, lowering.kargs, gap, lowering.name, lambda tile: self.uses.dead_after(op, tile), copy=True)
        if self.anchor is not self.head[0]:
            self.anchor.parent_block().erase_op(self.anchor)
        self.anchor = op
        return True

    def start(self, call: vf.VfCallOp, fn: vf.VfFuncOp, name: str, template: vf.VfFuncOp, kept: bool) -> None:
        """``call`` (of ``fn``, lowered from ``template``) opens a chain if its VF is one chunk loop."""
        self.close()
        t = self.flat(template, kept) if kept else self.F.chunk_loop(fn)
        if t is not None:
            self.head, self.anchor = (call, fn, name, t.key), call
        self.fusion = None

    def close(self) -> None:
        if self.fusion is not None:
            self.fusion.finish(self.anchor)
            self.anchor.parent_block().erase_op(self.anchor)
            self.head[0].parent_block().erase_op(self.head[0])
        self.head = self.anchor = self.fusion = None


def lower_module(module: ModuleOp, target: Target = ASCEND950, fuse: bool = False) -> ModuleOp:
    """Apply pto-lower-vf in place (see the module doc); returns the module.  ``fuse``: vf-fuse-launches
    runs next and nothing sees the module in between: the launches it would fuse are lowered fused
    (:class:`_Fusing`), in a module with no per-row launch (their scalar reads re-run
    pto-insert-sync) and no VF of its own."""
    funcs = [op for op in module.body.blocks[0].ops if isinstance(op, func.FuncOp)]
    fuse = fuse and not any(isinstance(op, vf.VfFuncOp | vf.VfCallOp) for op in vf.kernel_walk(module))
    scalar_reads = False
    for fn in funcs:
        if not fn.body.blocks:
            continue
        counter = 0
        built: dict = {}
        intern = _Interner()
        base = fn.sym_name.data
        todo = [op for op in fn.walk() if isinstance(op, pto.TileOp)
                and not on_scalar_unit(op) and not lower_cube.is_cube_op(op)]
        fusing = _Fusing(fn) if fuse and not any(type(op).FAMILY in PER_ROW for op in todo) else None
        for op in todo:
            if op.res and not op.outs:
                raise op_error(op, "is an L1 (SSA) tile op; run pto-bufferize before pto-lower-vf")
            short = op.name.split(".", 1)[1]
            name = f"{base}_{short}_{counter}"
            counter += 1
            lowering = _OpLowering(op, name, target)
            try:
                template, copy = lowering.body(built, fusing is not None, intern)
                if fusing is not None and fusing.take(op, lowering, template, copy):
                    continue
                vfn, call = lowering.launch(template, copy)
            except _Unsupported as e:
                raise op_error(op, f"has no ascend950 lowering: {e}") from None
            except PtocError:
                raise
            launch = [call]
            if type(op).FAMILY in PER_ROW:
                vfn, launch = _launch_per_row(vfn, call)
                scalar_reads |= any(o.name == "pto.tgetval" for x in launch for o in x.walk())
            parent = op.parent_block()
            parent.insert_ops_before(launch, op)
            parent.erase_op(op)
            module.body.blocks[0].insert_op_before(vfn, fn)
            if fusing is not None:
                fusing.start(call, vfn, name, template, copy)
        if fusing is not None:
            fusing.close()
    if scalar_reads:  # the S pipe now reads those tiles: order their producers before it
        from pto_compiler.passes.insert_sync import InsertSyncPass

        InsertSyncPass(target.name).apply(Context(), module)
    return module


@dataclass(frozen=True)
class LowerVfPass(ModulePass):
    """``pto-lower-vf{target=ascend950}``: every vector tile op -> a ``vf.func`` + ``vf.call``."""

    name = "pto-lower-vf"

    target: str = "ascend950"
    fuse: bool = False
    """vf-fuse-launches runs next, and nothing sees the module in between (see :func:`lower_module`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from pto_compiler.targets import lookup_target

        t = lookup_target(self.target) or ASCEND950
        if not t.has_vf:
            raise PtocError([_diag(f"pto-lower-vf targets ascend950, not {t.name}")], exit_code=2)
        lower_module(op, t, self.fuse)


def _diag(msg):
    from pto_compiler.diagnostics import Diagnostic

    return Diagnostic(msg)


# --------------------------------------------------------------------------------------------
# Program emission (ascend950)
# --------------------------------------------------------------------------------------------

class _VfProgramLowering(A._FnLowering):
    """The a2a3 lowering of copies, the cube core, syncs and TPRINT, in place; ``vf.call`` ->
    ``a2a3.vf_call`` (the launched ``vf.func`` stays in the module)."""

    def __init__(self, fn, target):
        super().__init__(fn, target)
        self.symbols = vf.VfSymbols(fn.parent_op() or fn)

    def set_mask(self, want):  # no vector mask register on the VF path
        self.mask = want

    def restore_mask(self):
        self.mask = A.FULL

    def _lower_op(self, op: Operation):
        if isinstance(op, vf.VfCallOp):
            return self.lower_vf_call(op)
        return super()._lower_op(op)

    def lower_tile_op(self, op):
        if on_scalar_unit(op) or lower_cube.is_cube_op(op):
            return self.emit_tile_op(op)  # DMA, TPRINT and the cube core: the a2a3 rules
        self.fail("is a vector tile op; run pto-lower-vf before the ascend950 program emission")

    def lower_vf_call(self, op: vf.VfCallOp):
        fn = self.symbols.lookup(op, op.callee_name)
        if fn is None:
            self.fail(f"calls unknown vf.func @{op.callee_name}")
        tile_op = fn.attributes.get("tile_op")
        if isinstance(tile_op, StringAttr) and self.origin is not None:
            self.origin = A.Origin(self.origin.file, self.origin.line, self.origin.col, tile_op.data)
        args = [self.tile(v).addr if isinstance(v.type, pto.TileLikeType) else v for v in op.arguments]
        self.emit("vf_call", callee=op.callee_name, args=tuple(args))
        self.lowered(op)


class _VfBarrierPass(B._BarrierPass):
    """Same-pipe barriers of an ascend950 program: VF launches complete in order (a VF starts after
    the previous one ends), so a ``vf_call`` needs no barrier, and a barrier between two launches
    orders nothing; but a VF's writes are not tracked, so the next V instruction that is no VF
    launch (a tile op the a2a3 rules lower, TSORT32's ``vbitsort``, ...) waits for it behind a
    barrier.  A launch since the V pipe's last barrier is recorded as all of the UB written with
    nothing a barrier would order (``any`` False); MTE2/MTE3 as on a2a3."""

    def instr(self, ins: Instr, st):
        if ins.opcode == "vf_call":
            st.clear("V")
            st.ub["V"] = [(0, self.nbytes)]
            return
        launched = [(0, self.nbytes)]
        if ins.pipe == "V" and not st.any["V"] and st.ub["V"] == launched:
            if ins.opcode == "pipe_barrier":
                if ins.args["pipe"] == "V":  # orders nothing yet: the instruction that needs one gets it
                    return
            else:
                st.any["V"] = True  # an instruction touching UB bytes now needs the barrier
                super().instr(ins, st)
                if st.ub["V"] == launched:  # it touched none: the launch is still all that is pending
                    st.any["V"] = False
                return
        if ins.opcode == "print_ub":  # a VF's writes are not tracked: TPRINT waits for every V op
            self.need_before.add(id(ins))
        super().instr(ins, st)


def lower_module_to_a2a3(module: ModuleOp, target: Target = ASCEND950, entry: str | None = None,
                         scalars: dict | None = None) -> Program:
    """The entry function of a module after pto-lower-vf, in place: its copies, cube core, syncs and
    TPRINTs become a2a3 ops (the a2a3 rules), each ``vf.call`` an ``a2a3.vf_call``; then the same-pipe
    barriers are completed (a2a3-complete-barriers with the VF launch rule).  Returns the program
    (``scalars`` size the GM arguments whose views depend on them)."""
    from pto_compiler.runtime.kernel_interface import select_entry

    fn = select_entry(module, entry)
    _VfProgramLowering(fn, target).run()
    return _launching(B.complete_function(fn, target, _VfBarrierPass, scalars), module)


def _launching(prog: Program, module: ModuleOp) -> Program:
    """``prog`` with the module's ``vf.func`` ops its ``vf_call`` s launch."""
    symbols = vf.VfSymbols(module)
    calls = [op for op in vf.kernel_walk(module) if isinstance(op, a2a3.OPS["vf_call"])]
    prog.vf_funcs = {name: symbols.lookup(op, name) for op in calls for name in (op.field_value("callee"),)}
    return prog


def lower_to_program(module: ModuleOp, target: Target = ASCEND950, entry: str | None = None,
                     scalars: dict | None = None) -> Program:
    """The ascend950 program of a module after pto-lower-vf (its entry function), lowered on a clone."""
    return lower_module_to_a2a3(module.clone(), target, entry, scalars)


def float_sum_outputs(module: ModuleOp, entry: str | None = None) -> set[str]:
    """As the a2a3 backend: outputs that depend on a float TROWSUM/TCOLSUM (run on the original module)."""
    return A.float_sum_outputs(module, entry)
