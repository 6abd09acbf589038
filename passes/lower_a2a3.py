"""``pto-lower-a2a3``: tile ops -> ``a2a3`` micro-instructions (dialects/a2a3.py), in place.

Design (DESIGN.md §2, §5.6): the pass rewrites every tile, DMA and sync op of a placed module
(every vec tile has a UB address, sync ops are explicit) into ``a2a3`` ops, one pattern per
tile-op family keyed by the family's op class (:data:`_FAMILY_RULES`); the UB addresses and
counts the instructions take are ``arith`` on ``index`` values built where they are needed
(numbers folded, a sum's constant first, a product by a number distributed over a sum), the
loops a rule needs (count mode, 240-row chunks, ...) ``scf.for`` (``a2a3.max_trips`` bounds a
run-time trip count), and the kernel's own ``scf``/``arith`` stay as they are (its arith on
numbers is folded where the lowering reads it).  runtime/program.py decodes the lowered module
(after a2a3-complete-barriers) into the program the executor runs, runtime/listing.py prints
it; :func:`lower_to_program` lowers, completes and decodes a clone.

How each tile op becomes instructions (reference/vector_isa.md §1, §3; pto_isa.md §4-5):

* **Addressing.**  UB operands are byte addresses; block and repeat strides are in 32-byte
  blocks for elementwise ops, the vcadd/vcmax destination repeat stride in elements, the
  vcpadd destination repeat stride in 32 B blocks (the header's reading, vector_isa.md §1.8).
  A row-major tile's element (i, j) is at ``addr + (i*Cols + j)*E``; a ColMajor R x 1 column's
  element i at ``addr + i*E``.
* **Elementwise** (tadd..tmin, texp..trelu, tadds..tmins, texpands, tcolexpand*, tcvt): when
  every operand's rows are contiguous (valid cols == tile cols) the region is one flat run:
  full repeats (256 B each) in instructions of at most 255 repeats, then one repeat under a
  norm-mode mask of the first ``N mod lanes`` lanes.  Otherwise one repeat per row (repeat
  stride = the row in blocks), per 256 B column chunk, in instructions of <= 255 rows, the last
  chunk under a continuous mask.  Rows wider than 255 blocks, or valid shapes only known at run
  time, use count mode one row per trip of a scalar loop (the headers' count-mode path).
* **TROWEXPAND{ADD,SUB,MUL,DIV,MAX,MIN,EXPDIF}** (seeds/000, vector_isa.md §3.1): Mode 1 =
  ``vbrcb`` of the ColMajor column into the broadcast buffer (the tmp tile or the 8 KiB scratch
  at 184 KiB, ``bcast_source``), ``pipe_barrier V``, then the vector op reading the buffer with
  block stride 0 and repeat stride 1 (one 32 B block per row); R >= 256 runs in chunks of 240
  rows (``vbrcb`` of 30 repeats = 7680 B) with a barrier after each chunk.  Mode 2 = the vector
  op straight on the expanded operand's 32 B rows (block stride 0, repeat stride its row).  The
  operand order is kept (src0 expanded: ``vsub(dst, bcast, full)``).  EXPDIF = vsub + vexp.
* **Row reductions** (vector_isa.md §3.3): C <= lanes: one ``vcmax``/``vcmin``/``vcadd`` per row
  under a mask of C lanes.  C > lanes: fold the 256 B chunks into a tmp (``copy_ubuf_to_ubuf``
  of chunk 0 or ``OP(c0, c1)``, then the masked tail, then chunks 2..), then one whole-repeat
  reduction per row.  Integers (no vcadd/vcmax for ints on A2/A3): fold to one 256 B repeat per
  row, then to one 32 B block with three strided vector ops, then the scalar unit folds the
  block's lanes (bracketed by V->S / S->V flags, event id 0, as TRowMax.hpp does).  f16 sums
  are accumulated in f32 (vconv, vadd.f32, vcadd.f32, vconv back): f16 arithmetic cannot meet
  the golden model's tolerance for float sums (measured: 0.2-2.5 % of rows fail).  Valid cols
  known only at run time: each row first folded (count mode, exactly C lanes) into a scratch row
  of whole repeats filled with the reduction's identity (-0.0, ∓inf, the integer extremes), which
  the static rule then reduces (:meth:`_FnLowering.padded_rows`; TPAIRREDUCESUM likewise, +0
  padding, its first C sums copied back bit for bit with ``vor``).
* **Column reductions** (§3.4): ``copy_ubuf_to_ubuf`` of row 0, then one ``OP(dst, dst, row i)``
  per row (a scalar loop); f16 TCOLSUM again accumulates in f32.
* **Index reductions** (TROWARGMAX/MIN: ``vcmax``/``vcmin`` in VALUE_INDEX order per chunk, a
  second VALUE_INDEX reduction over the chunks' values, the scalar unit writes the index;
  TCOLARGMAX/MIN: a lane-wise first-index fold over the rows) and **products** (TCOLPROD: the
  column fold with ``vmul``; TROWPROD: the scalar unit, left to right): see their rules.
* **TPAIRREDUCESUM** (seeds/004): ``vcpadd`` of the even part (rows as repeats), ``vector_dup``
  0 into positions ceil(C/2)..C-1 under a lane mask, and, for odd C, the tail the seed keeps:
  the scalar unit writes ``src[i, C-1] + 0`` to ``dst[i, C/2]``.
* **TROWEXPAND**: the scalar unit reads each row's scalar and ``vector_dup`` writes the row
  (count mode), as the A2A3 general path; **TCOLEXPAND**: one ``copy_ubuf_to_ubuf`` per row;
  **TMOV**: one strided ``copy_ubuf_to_ubuf``; **TLOAD/TSTORE**: ``copy_gm_to_ubuf`` /
  ``copy_ubuf_to_gm`` with one burst per row (or per column of a DN tile).
* **Scalars**: ``tsubs`` = ``vadds`` of ``-s`` (exact: x - s == x + (-s) in IEEE and in wrapping
  integers); ``tdivs`` = ``vmuls`` by ``1/s`` only when s is a power of two (then exact), else
  ``vector_dup`` of s into 256 B of free UB and ``vdiv`` reading it with block and repeat
  stride 0 (s / x for the scalar-first form).
* **Control flow**: ``scf.for``/``scf.if``/``scf.while`` stay, their bodies lowered in place;
  tiles carried through iter_args or yielded by branches must share a UB address (the
  planner's contract; a mismatch is a located error).  Sync ops -> ``set_flag``/``wait_flag``/
  ``pipe_barrier``.
* **Same-pipe ordering** (the next pass, ``a2a3-complete-barriers``,
  passes/a2a3_complete_barriers.py): a static analysis of the lowered function inserts ``pipe_barrier P`` before any V/MTE2/MTE3 instruction that reads or overwrites
  UB (32 B blocks) or GM bytes an earlier instruction of the same pipe wrote since the last
  barrier, and drops barriers that order nothing (loops of up to 16 trips are analysed trip by
  trip, longer ones by a fixed point over the body).  So the
  intra-op barriers (after vbrcb, between fold steps) are exact and pto-insert-sync's barriers
  are kept only where needed.
* **Internal temporaries** (f16 sums, tdivs, reductions without a usable tmp) live in UB that
  no tile of the function occupies (the highest free gap); a located error if there is none.

Every instruction carries the Origin (file:line:col, op name) of the op it came from.  An op
with no a2a3 lowering is a located ``PtocError``: "'pto.X' op has no a2a3 lowering ...".
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    BFloat16Type, FileLineColLoc, FloatAttr, IndexType, IntAttr, IntegerAttr, IntegerType, ModuleOp, NameLoc,
    Signedness, StringAttr, SymbolRefAttr, VectorType, f16, f32,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter

from pto_compiler.diagnostics import PtocError, cube_space_message, location_of, op_error, value_name
from pto_compiler.dialects import a2a3, pto
from pto_compiler.lazy_import import LazyModule
from pto_compiler.passes import lower_cube
from pto_compiler.passes.insert_sync import EVENT_TYPE_PIPE
from pto_compiler.runtime import cube, pipes
from pto_compiler.runtime.kernel_interface import kernel_args, remsi, select_entry
from pto_compiler.runtime.program import (
    DTYPE_SIZES, GmAddr, Origin, Program, arith_function, canonical_dtype, constant_value, keeps_value, origin_of,
    program_of, scalar_dtype,
)
from pto_compiler.targets import A2A3, Target
from pto_compiler.passes.tile_access import fixed_ub_range, tile_range

np = LazyModule("numpy")  # only kernels with float scalars or pad values use them
E = LazyModule("pto_compiler.runtime.elementwise")

__all__ = ["lower_to_program", "lower_module", "program_of", "LowerA2A3Pass", "float_sum_outputs"]

REPEAT_MAX = 255
ROWS_PER_VBRCB_LOOP = 240  # 30 vbrcb repeats = 7680 B (vector_isa.md §3.1 step 4)
N_BURST_MAX = 4095
INTERNAL_EVENT = 0  # V<->S flags inside one op (TRowMax.hpp uses EVENT_ID0)
M64 = (1 << 64) - 1
FULL = ("norm", M64, M64)
MAX_TRIPS = a2a3.MAX_TRIPS


@functools.lru_cache(maxsize=4096)
def location(o: Origin) -> NameLoc:
    """The location of an a2a3 op: the tile op it came from, at its source position (one
    attribute per origin: a tile op lowers to many a2a3 ops)."""
    return NameLoc(_word(o.op), FileLineColLoc(_word(o.file), IntAttr(o.line), IntAttr(o.col)))


def _name_loc(o: Origin, op: Operation) -> NameLoc:
    """:func:`location` of ``o``, sharing the FileLineColLoc of ``op``, the op ``o`` names (a tile op
    lowers to many a2a3 ops: one NameLoc, not four attributes, per tile op)."""
    loc = getattr(op.location, "location", op.location)  # a lowered op's NameLoc wraps its FileLineColLoc
    return a2a3.name_loc(_word(o.op), loc) if isinstance(loc, FileLineColLoc) else location(o)


_INDEX = IndexType()
"""The index type of every address and count operand (one attribute, not one per operand)."""

_word = functools.cache(StringAttr)
"""The StringAttr of a pipe or enum word, op name or file name (a few dozen, each on many ops)."""


def _floordiv(a, b):
    return a // b if isinstance(a, int) and isinstance(b, int) else a / b


_FOLD = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": _floordiv, "%": remsi, "&": operator.and_,
         "^": operator.xor, ">>": operator.rshift, "min": min, "max": max}
"""What the ops of ``_Lowering._ARITH_INT``/``_ARITH_FLOAT`` compute, folded on numbers (the lowering's
addresses and counts: far from any integer wrap)."""


@functools.cache
def _xdsl_type(dtype: str):
    """The xDSL element type of a program dtype name (``f32``, ``u16``, ...)."""
    if dtype in ("f16", "f32", "bf16"):
        return {"f16": f16, "f32": f32, "bf16": BFloat16Type()}[dtype]
    return IntegerType(int(dtype[1:]), Signedness.UNSIGNED if dtype[0] == "u" else Signedness.SIGNLESS)


# --------------------------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------------------------

def equal_flag(b, x, y):
    """1 when the counts x and y are equal, else 0 (``1 - min(|x - y|, 1)``), in ``b``'s index
    arithmetic (an a2a3 rule's, or a VF builder's: the trip count of a loop that runs a form only
    when the run-time valid shapes choose it)."""
    return b.sub(1, b.min(b.max(b.sub(x, y), b.sub(y, x)), 1))


def _is_int(x) -> bool:
    return type(x) is int or (isinstance(x, int) and not isinstance(x, bool))


def _is_num(x) -> bool:
    return type(x) is int or (isinstance(x, (int, float)) and type(x) is not bool)


def ceil_div(a, b):
    return -(-a // b)


def _uncast(v: SSAValue) -> SSAValue:
    """``v`` without the integer casts in front of it that keep its value (index arithmetic on
    numbers sees through them; a zero extension or a narrowing cast changes the number)."""
    while isinstance(v.owner, (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp)) and keeps_value(v.owner):
        v = v.owner.operands[0]
    return v


@functools.cache
def _emit_plan(opcode: str) -> tuple:
    """(the op class, its fields in operand order as (field, how it becomes IR, default)): an
    ``index`` operand, a ``typed`` one (the element type), the ``reg`` it writes, a ``word`` or
    ``sym`` property, a ``gm`` pointer and offset, a ``list`` of index operands."""
    spec = a2a3.OPCODES[opcode]
    codes = {"reg": "reg", "pipe": "word", "sym": "sym", "list": "list", "gm": "gm", "scalar": "typed", "expr": "typed"}
    return a2a3.OPS[opcode], tuple((f, "word" if spec.kinds[f].startswith("enum:") else codes.get(spec.kinds[f], "index"),
                                    spec.defaults.get(f)) for f in spec.fields)


def _addr_text(e) -> str:
    return hex(e) if _is_int(e) else value_name(e)


# --------------------------------------------------------------------------------------------
# Values the lowering tracks per SSA value
# --------------------------------------------------------------------------------------------

@dataclass
class TileRef:
    """A vec tile at a UB byte address (a number or an index value), with its valid region (its type's
    figures are worked out once: a rule reads them many times)."""
    addr: object
    t: pto.TileLikeType
    vr: object
    vc: object

    @functools.cached_property
    def esize(self) -> int:
        return self.t.elem_bytes

    @functools.cached_property
    def dtype(self) -> str:
        return canonical_dtype(self.t.dtype)

    @functools.cached_property
    def row_major(self) -> bool:
        return self.t.is_row_major

    @functools.cached_property
    def row_bytes(self) -> int:
        """Bytes from element (i, 0) to (i+1, 0)."""
        return self.t.cols * self.esize if self.row_major else self.esize

    @functools.cached_property
    def nbytes(self) -> int:
        return ceil_div(self.t.rows * self.t.cols * self.esize, 32) * 32


@dataclass
class ViewRef:
    arg: str
    esize: int
    shape: list
    strides: list


@dataclass
class PartRef:
    view: ViewRef
    offsets: list
    sizes: list


@dataclass
class Opnd:
    """One operand of a vector instruction over a rows x cols region."""
    base: object
    row: object
    """bytes per row (0: every row reads the same bytes)."""
    chunk: int
    """bytes per column chunk of ``lanes`` elements (0: every chunk reads the same block)."""
    esize: int
    blk: int = 1


_UNREAD_VECTOR = ("vector",)
"""The value of a ``vector<>`` argument or constant: only tmrgsort's executed list (an output whose
counts SSA cannot carry) takes one, and no instruction reads it."""


class _Unsupported(Exception):
    pass


# --------------------------------------------------------------------------------------------
# Attribute helpers
# --------------------------------------------------------------------------------------------

def _attr(op: Operation, *keys):
    for k in keys:
        a = op.attributes.get(k)
        if a is None:
            a = op.properties.get(k)
        if a is not None:
            return a
    return None


def _attr_int(op, *keys):
    a = _attr(op, *keys)
    if isinstance(a, IntegerAttr):
        return a.value.data
    return None


def _attr_text(op, *keys):
    a = _attr(op, *keys)
    if a is None:
        return None
    if isinstance(a, StringAttr):
        return a.data
    body = getattr(a, "body", None)
    if body is not None:
        return body.data
    return str(a)


_ROUND = {"RINT": "r", "CAST_RINT": "r", "NONE": "r", "CAST_NONE": "r", "ROUND": "a", "CAST_ROUND": "a",
          "FLOOR": "f", "CAST_FLOOR": "f", "CEIL": "c", "CAST_CEIL": "c", "TRUNC": "z", "CAST_TRUNC": "z",
          "ODD": "o", "CAST_ODD": "o"}

_PIPE_NAMES = {**{p: p for p in (*a2a3.PIPES, "ALL")}, **{f"PIPE_{p}": p for p in (*a2a3.PIPES, "ALL")}}
_FLAG_OPS = frozenset(("pto.set_flag", "pto.wait_flag", "pto.record_event", "pto.wait_event", "pto.set_flag_dyn",
                       "pto.wait_flag_dyn"))
_EVENT_PIPES = {"TSCALAR": "S", "TMOV": "V", "VEC": "V",
                **{k: v.removeprefix("PIPE_") for k, v in EVENT_TYPE_PIPE.items()}}


# --------------------------------------------------------------------------------------------
# The lowering of one function
# --------------------------------------------------------------------------------------------

class _FnLowering:
    """Walks one function in program order and rewrites each tile or sync op in place into ``a2a3``
    ops by the pattern of its family (:data:`_FAMILY_RULES`); index arithmetic the instructions
    need is ``arith``, the loops a rule makes are ``scf.for``; the function's own ``scf``/``arith``
    stay (runtime/program.py decodes the result, runtime/listing.py prints it)."""

    def __init__(self, fn: func.FuncOp, target: Target):
        self.fn = fn
        self.ip: InsertPoint | None = None
        self._loop_ips: dict = {}
        self._consts: dict = {}
        self._index_consts: dict = {}
        """number -> its ``index`` constant (:meth:`constant`)."""
        self._arith: list = []
        """The arith ops the lowering made, in order."""
        self.patterns: dict = {}
        """tile-op class -> the :class:`_FamilyPattern` of its family."""
        self.gm_values: dict = {}
        self.target = target
        self.vals: dict = {}
        """SSA value -> what the lowering knows of it: a number (a constant, folded), the value
        itself (a scalar known at run time), a TileRef, ViewRef or PartRef."""
        self.mask = FULL
        self.names: set = {"block_idx", "block_num", "subblock_idx", "subblock_num"}
        self.counter = 0
        self.origin: Origin | None = None
        self.op: Operation | None = None
        self._loc: tuple | None = None
        """(origin, the location of the ops made for it)."""
        self._free = None
        specs = kernel_args(fn)
        for s in specs:
            self.names.add(s.name)
        for s in specs:
            if s.kind == "gm":
                self.vals[s.value] = ("gm", s.name, pto.element_bytes(s.type.element_type))
                self.gm_values[s.name] = s.value
            elif s.kind == "scalar":
                scalar_dtype(fn, s)  # a type no scalar register holds is an error here
                self.vals[s.value] = s.value
            elif s.kind == "vector":
                self.vals[s.value] = _UNREAD_VECTOR
            else:
                raise op_error(fn, f"has an L1 tile argument '%{s.name}'; run pto-bufferize before "
                                   "the a2a3 lowering")

    # ---- emission helpers -------------------------------------------------------------------
    def fresh(self, stem: str) -> str:
        while True:
            name = f"{stem}{self.counter}"
            self.counter += 1
            if name not in self.names:
                self.names.add(name)
                return name

    def emit(self, opcode: str, dtype=None, **args):
        """The ``a2a3`` op ``opcode`` at the insertion point (omitted operands: the table's
        defaults; numbers become constants, index operands ``index`` values).  A register it
        writes is given by its name; returns the register's value, else the op."""
        dt = canonical_dtype(dtype) if dtype else None
        etype = _xdsl_type(dt) if dt else _INDEX
        operands, props, reg = [], {}, None
        value, index = self.value, self.index
        cls, plan = _emit_plan(opcode)
        for f, code, default in plan:
            v = args.get(f, default)
            if code == "index":
                operands.append(index(v))
            elif code == "typed":
                operands.append(value(v, etype))
            elif code == "reg":
                reg = v
            elif code == "word":
                if v != default:
                    props[f] = _word(v)
            elif code == "gm":
                operands += (self.gm_values[v.arg], value(v.offset, _INDEX))
            elif code == "list":
                operands += [value(x, _INDEX) for x in v]
            else:
                props[f] = SymbolRefAttr(v)
        if dt:
            props["dtype"] = etype
        if "src_dtype" in args:
            props["src_dtype"] = _xdsl_type(canonical_dtype(args["src_dtype"]))
        op = a2a3.new_op(cls, operands, props, etype if reg else None, self.location())
        self._insert(op)
        if reg is None:
            return op
        res = op.results[0]
        res.name_hint = reg
        return res

    def loop(self, stem: str, start, stop, step=1, bound: int | None = None):
        """Inserts an ``scf.for`` and returns (the op, its variable); the caller fills its body
        (``in_body(op.body)``) and closes it with :meth:`end_loop`.  The mask state is unknown inside
        (a later trip starts with what the previous one left) and after it (it may run no trip).
        ``bound``: the most trips a loop with a run-time ``stop`` can run (for the barrier pass)."""
        var = self.fresh(stem)
        self.mask = None
        loop = scf.ForOp(*(self.value(e, IndexType()) for e in (start, stop, step)), [],
                         Region(Block([scf.YieldOp()], arg_types=[IndexType()])))
        loop.location = self.location()
        iv = loop.body.block.args[0]
        iv.name_hint = var
        if bound is not None and not _is_int(stop):
            loop.attributes[MAX_TRIPS] = IntegerAttr(bound, 64)
        Rewriter.insert_op(loop, self.ip)
        return loop, iv

    def end_loop(self, outer):
        self.ip = outer
        self.mask = None

    def in_body(self, body: Region):
        outer = self.ip
        self.ip = InsertPoint.before(body.block.last_op)
        return outer

    def set_mask(self, want):
        if self.mask == want:
            return
        mode, hi, lo = want
        if self.mask is None or self.mask[0] != mode:
            self.emit("set_mask_norm" if mode == "norm" else "set_mask_count")
        if mode == "norm":
            self.emit("set_vector_mask", hi=hi, lo=lo)
        else:
            self.emit("set_vector_count", count=lo)
        self.mask = want

    def mask_lanes(self, a: int, b: int, lanes: int):
        if a == 0 and b >= lanes:
            return FULL
        bits = ((1 << b) - 1) ^ ((1 << a) - 1)
        return ("norm", (bits >> 64) & M64, bits & M64)

    def restore_mask(self):
        self.set_mask(FULL)

    def flag(self, src: str, dst: str, event=INTERNAL_EVENT):
        self.emit("set_flag", src_pipe=src, dst_pipe=dst, event_id=event)
        self.emit("wait_flag", src_pipe=src, dst_pipe=dst, event_id=event)

    def fail(self, message: str, op=None):
        raise op_error(op or self.op, message)

    def unsupported(self, why: str, op=None):
        raise op_error(op or self.op, f"has no {self.target.name} lowering: {why}")

    # ---- free UB for internal temporaries --------------------------------------------------
    def free_ub(self, nbytes: int) -> int:
        """A 32 B-aligned UB address of ``nbytes`` that no tile of the function occupies."""
        if self._free is None:
            occupied = []
            unknown = False
            for op in self.fn.walk():
                addr, t = None, None
                if isinstance(op, pto.AllocTileOp):
                    t = op.result.type
                    addr = _attr_int(op, "ub_addr")
                    if addr is None and op.addr is not None:
                        addr = self._static_int(op.addr)
                        if addr is None:
                            unknown = True
                    if addr is None:
                        # placed by a later tassign (collected below) or not at all
                        continue
                elif isinstance(op, pto.TAssignOp):
                    t = op.tile[0].type
                    addr = op.static_addr
                    if addr is None and op.addr_value:
                        addr = self._static_int(op.addr_value[0])
                        span = tile_range(op.result[0]) if addr is None and op.result else None
                        if span is not None and t.loc.data == "vec":  # every address it can have
                            occupied.append(span)
                            continue
                        if addr is None:
                            unknown = True
                            continue
                if addr is None or not isinstance(t, pto.TileLikeType) or t.loc.data != "vec":
                    continue
                size = ceil_div(t.rows * t.cols * t.elem_bytes, 32) * 32
                occupied.append((addr, addr + size))
            self._free = (sorted(occupied), unknown)
        occupied, unknown = self._free
        need = ceil_div(nbytes, 32) * 32
        if not unknown:
            top = self.target.ub_bytes
            # scan gaps from the top of UB down
            edges = sorted(occupied, key=lambda r: r[0])
            gaps = []
            cur = 0
            for lo, hi in edges:
                if lo > cur:
                    gaps.append((cur, lo))
                cur = max(cur, hi)
            if cur < top:
                gaps.append((cur, top))
            for lo, hi in reversed(gaps):
                lo = ceil_div(lo, 32) * 32
                if hi - lo >= need:
                    return (hi - need) // 32 * 32
        self.unsupported(f"needs {need} bytes of UB that no tile occupies for its temporaries, "
                         "and there are none")
        raise AssertionError

    @contextlib.contextmanager
    def reserved_ub(self, nbytes: int):
        """A free-UB scratch of ``nbytes`` (:meth:`free_ub`) that the temporaries of the rules run
        while it is held are placed around."""
        addr = self.free_ub(nbytes)
        span = (addr, addr + ceil_div(nbytes, 32) * 32)
        self._free[0].append(span)
        try:
            yield addr
        finally:
            self._free[0].remove(span)

    def free_rows(self, row_bytes: int, rows: int, extra: int = 0, cap: int = REPEAT_MAX, multiple: int = 1):
        """(address, k): the most rows k <= min(rows, cap) of ``row_bytes + extra`` bytes each that
        fit in free UB; k is a multiple of ``multiple`` unless it covers every row."""
        k = min(rows, cap)
        if k < rows and multiple > 1:
            k = max(multiple, k // multiple * multiple)
        while True:
            try:
                return self.free_ub(k * (row_bytes + extra)), k
            except PtocError:
                smaller = k // 2
                if multiple > 1:
                    smaller = smaller // multiple * multiple
                if smaller < 1:
                    raise
                k = smaller

    # ---- values ------------------------------------------------------------------------------
    def _static_int(self, v: SSAValue):
        e = self.vals.get(v)
        if e is None and isinstance(v, SSAValue) and isinstance(v.owner, arith.ConstantOp):
            e = self._constant(v.owner)
        return e if _is_int(e) else None

    def expr(self, v: SSAValue, op=None):
        e = self.vals.get(v)
        if e is None:
            if isinstance(v.owner, arith.ConstantOp):
                e = self._constant(v.owner)
                self.vals[v] = e
                return e
            self.fail(f"operand {value_name(v)} has no value the {self.target.name} lowering knows", op)
        if isinstance(e, (TileRef, ViewRef, PartRef, tuple)):
            self.fail(f"operand {value_name(v)} is not a scalar", op)
        return e

    def tile(self, v: SSAValue) -> TileRef:
        t = self.vals.get(v)
        if not isinstance(t, TileRef):
            self.fail(f"operand {value_name(v)} is not a tile the {self.target.name} lowering knows")
        if t.t.loc.data != "vec":
            self.fail(cube_space_message(v, t.t.loc.data))
        if t.addr is None:
            self.fail(f"tile {value_name(v)} has no UB address: run pto-plan-memory, or bind it with pto.tassign")
        return t

    @staticmethod
    def _constant(op: arith.ConstantOp):
        if isinstance(op.result.type, VectorType):
            return _UNREAD_VECTOR
        try:
            return constant_value(op)
        except ValueError as e:
            raise _Unsupported(str(e)) from None

    # ---- building a2a3 IR (lowering) -------------------------------------------------------
    def location(self):
        if self._loc is None or self._loc[0] is not self.origin:
            self._loc = (self.origin, _name_loc(self.origin, self.op))
        return self._loc[1]

    def constant(self, v, t):
        """One ``arith.constant`` per value and type, at the top of the function (an integer wrapped
        to the type's width, as the scalar unit's arithmetic in that type wraps it)."""
        if type(v) is int and type(t) is IndexType:  # most constants: one table keyed by the number
            c = self._index_consts.get(v)
            if c is None:
                c = self._index_consts[v] = self._new_constant(v, t)
            return c
        key = (v, t) if type(v) is int else (repr(v), t)  # 0.0 and -0.0 are two constants
        c = self._consts.get(key)
        if c is None:
            c = self._consts[key] = self._new_constant(v, t)
        return c

    def _new_constant(self, v, t) -> SSAValue:
        if isinstance(t, IntegerType) and not isinstance(v, float):
            size = 1 << t.width.data
            v = int(v) % size if t.signedness.data == Signedness.UNSIGNED else (int(v) + size // 2) % size - size // 2
        attr = FloatAttr(float(v), t) if not isinstance(t, (IndexType, IntegerType)) else IntegerAttr(int(v), t)
        c = arith.ConstantOp(attr)
        if isinstance(t, IndexType):
            c.result.name_hint = f"c{v}" if v >= 0 else f"c_{-v}"
        Rewriter.insert_op(c, InsertPoint.at_start(self.fn.body.blocks[0]))
        self._arith.append(c)
        return c.result

    def insert(self, op: Operation) -> SSAValue | None:
        """Inserts an op the lowering made (arith, scf) at the insertion point, at the tile op's location."""
        op.location = self.location()
        self._insert(op)
        if not isinstance(op, a2a3.A2A3Op):
            self._arith.append(op)
        return op.results[0] if op.results else None

    def _insert(self, op: Operation) -> None:
        ip = self.ip
        if ip.insert_before is not None:
            ip.block.insert_op_before(op, ip.insert_before)
        else:
            ip.block.add_op(op)

    _ARITH_INT = {"+": arith.AddiOp, "-": arith.SubiOp, "*": arith.MuliOp, "/": arith.FloorDivSIOp,
                  "%": arith.RemSIOp, "&": arith.AndIOp, "^": arith.XOrIOp, ">>": arith.ShRUIOp, "min": arith.MinSIOp,
                  "max": arith.MaxSIOp}
    _ARITH_FLOAT = {"+": arith.AddfOp, "-": arith.SubfOp, "*": arith.MulfOp, "/": arith.DivfOp,
                    "min": arith.MinimumfOp, "max": arith.MaximumfOp}

    def index(self, e) -> SSAValue:
        """:meth:`value` of ``e`` as an ``index`` (the operand most a2a3 fields take)."""
        if type(e) is int:
            c = self._index_consts.get(e)
            return c if c is not None else self.constant(e, _INDEX)
        return self.value(e, _INDEX)

    def value(self, e, t) -> SSAValue:
        """The SSA value of ``e`` (a number or an SSA value) as a ``t``: an integer value is cast
        to or from ``index``."""
        if _is_num(e):
            return self.constant(e, t)
        if isinstance(t, IndexType) and isinstance(e.type, IntegerType):
            return self.insert(arith.IndexCastOp(e, IndexType()))
        if isinstance(t, IntegerType) and isinstance(e.type, IndexType):
            return self.insert(arith.IndexCastOp(e, t))
        return e

    # ---- arithmetic: arith ops at the insertion point, numbers folded ------------------------------
    def arith(self, sym: str, a, b, t=_INDEX):
        """``a sym b`` in type ``t`` (default ``index``): a number when both are, else an arith op."""
        if _is_num(a) and _is_num(b):
            return _FOLD[sym](a, b)
        table = self._ARITH_INT if isinstance(t, (IndexType, IntegerType)) else self._ARITH_FLOAT
        return self.insert(table[sym](self.value(a, t), self.value(b, t)))

    def add(self, *xs, t=_INDEX):
        """The sum, its constant term first (``0x1000+%i*256``: a base address, then offsets; the
        constant of an ``addi`` operand joins it)."""
        if all(type(x) is int for x in xs):  # numbers only (most addresses): their sum
            return sum(xs)
        const, terms = 0, []
        for x in xs:
            if t is _INDEX and not _is_num(x) and isinstance(x.owner, arith.AddiOp):
                a, b = (self.number(v) for v in x.owner.operands)
                if _is_num(a) or _is_num(b):
                    const += a if _is_num(a) else b
                    x = b if _is_num(a) else a
            if _is_num(x):
                const += x
            else:
                terms.append(x)
        acc = const
        for x in terms:
            acc = x if _is_num(acc) and acc == 0 else self.arith("+", acc, x, t)
        return acc

    def sub(self, a, b, t=_INDEX):
        return a if _is_num(b) and b == 0 else self.arith("-", a, b, t)

    def mul(self, a, b, t=_INDEX):
        """The product, a value before its factor (``%i*256``); an index sum times a number is the
        sum of the products, a product by numbers one factor."""
        if type(a) is int and type(b) is int:
            return a * b
        if _is_num(a) and not _is_num(b):
            a, b = b, a
        if _is_int(b) and b in (0, 1):
            return a if b else 0
        if _is_int(b) and t is _INDEX and not _is_num(a):
            a = _uncast(a)
        if _is_int(b) and t is _INDEX and not _is_num(a) and isinstance(a.owner, (arith.AddiOp, arith.MuliOp)):
            x, y = (self.number(v) for v in a.owner.operands)
            if isinstance(a.owner, arith.AddiOp):
                return self.add(self.mul(x, b), self.mul(y, b))
            if _is_int(x) or _is_int(y):
                return self.mul(y if _is_int(x) else x, (x if _is_int(x) else y) * b)
        return self.arith("*", a, b, t)

    def number(self, v):
        """``v`` as the number it is known to be (a constant, folded kernel arith), else ``v``."""
        n = self.vals.get(v)
        if _is_num(n):
            return n
        if isinstance(v.owner, arith.ConstantOp) and isinstance(v.type, (IndexType, IntegerType)):
            return constant_value(v.owner)
        return v

    def div(self, a, b, t=_INDEX):
        return a if _is_int(b) and b == 1 else self.arith("/", a, b, t)

    def ceil_div(self, a, b: int):
        return ceil_div(a, b) if _is_num(a) else self.div(self.add(a, b - 1), b)

    def min(self, a, b):
        return self.arith("min", a, b)

    def max(self, a, b):
        return self.arith("max", a, b)

    def packed(self, reg):
        """A byte twice in a u16 lane (``vector_dup.u16`` of an 8-bit value): ``(reg & 255) * 257``
        (the low byte of a negative i8 too, which ``remsi`` would keep negative), computed in u16
        (zero-extended first: arith in the byte's own type wraps)."""
        u16 = _xdsl_type("u16")
        wide = self.insert(arith.ExtUIOp(reg, u16))
        return self.arith("*", self.arith("&", wide, 255, u16), 257, u16)

    def elem(self, t: TileRef, i, j=0):
        """The UB address of element (i, j) of tile ``t``."""
        if t.row_major:
            return self.add(t.addr, self.mul(i, t.t.cols * t.esize), self.mul(j, t.esize))
        return self.add(t.addr, self.mul(j, t.t.rows * t.esize), self.mul(i, t.esize))

    # ---- walking -----------------------------------------------------------------------------
    def run(self) -> None:
        self.lower_block(self.fn.body.blocks[0])
        self.set_origin(self.fn)
        self.restore_mask()
        for op in reversed(self._arith):  # arith a rule worked out but no instruction took
            if not op.results[0].uses:
                Rewriter.erase_op(op)

    def lower_block(self, block) -> list | None:
        """Lowers the ops of a block; returns the operands of its terminator (yield/return)."""
        for op in list(block.ops):
            if isinstance(op, (scf.YieldOp, func.ReturnOp, scf.ConditionOp)):
                self.ip = InsertPoint.before(op)
                return list(op.operands)
            self.lower_op(op)
        self.ip = InsertPoint.at_end(block)
        return None

    def set_origin(self, op: Operation):
        self.origin = origin_of(op)
        self.op = op

    def lower_op(self, op: Operation):
        saved = (self.origin, self.op)
        self.set_origin(op)
        self.ip = InsertPoint.before(op)
        try:
            self._lower_op(op)
        except _Unsupported as e:
            self.unsupported(str(e), op)
        finally:
            self.origin, self.op = saved

    def _lower_op(self, op: Operation):
        if isinstance(op, pto.TileOp):
            return self.lower_tile_op(op)
        name = op.name
        if name in _FLAG_OPS:  # the commonest ops after the tile ops (pto-insert-sync's)
            self.lower_flag(op)
            return self.lowered(op)
        if name == "pto.barrier":
            pipe = self.pipe_of(op.args.data[0] if op.args.data else None)
            self.emit("pipe_barrier", pipe=pipe)
            return self.lowered(op)
        if isinstance(op, a2a3.A2A3Op) or name == "vf.func":  # lowered already; ascend950: a launched VF
            return
        if name.startswith("arith."):
            return self.lower_arith(op)
        if isinstance(op, scf.ForOp):
            return self.lower_for(op)
        if isinstance(op, scf.IfOp):
            return self.lower_if(op)
        if isinstance(op, scf.WhileOp):
            return self.lower_while(op)
        if isinstance(op, pto.MakeTensorViewOp):
            base = self.vals.get(op.ptr[0])
            if not (isinstance(base, tuple) and base[0] == "gm"):
                self.unsupported("the pointer is not a kernel argument")
            self.vals[op.result] = ViewRef(base[1], base[2], [self.expr(v, op) for v in op.shape_],
                                           [self.expr(v, op) for v in op.strides_])
            return
        if isinstance(op, pto.PartitionViewOp):
            view = self.vals.get(op.source[0])
            if not isinstance(view, ViewRef):
                self.unsupported("the source is not a tensor view of a kernel argument")
            self.vals[op.result] = PartRef(view, [self.expr(v, op) for v in op.offsets],
                                           [self.expr(v, op) for v in op.sizes])
            return
        if isinstance(op, pto.AllocTileOp):
            t = op.result.type
            addr = _attr_int(op, "ub_addr")
            if addr is None and op.addr is not None:
                addr = self.expr(op.addr, op)
            vr = t.valid_row if op.valid_row is None else self.expr(op.valid_row, op)
            vc = t.valid_col if op.valid_col is None else self.expr(op.valid_col, op)
            self.vals[op.result] = TileRef(addr, t, vr, vc)
            return
        if isinstance(op, pto.TAssignOp):
            src = self.vals.get(op.tile[0])
            if not isinstance(src, TileRef):
                self.fail("tassign of a value that is not a tile")
            addr = op.static_addr if op.static_addr is not None else self.expr(op.addr_value[0], op)
            if op.result:
                self.vals[op.result[0]] = TileRef(addr, src.t, src.vr, src.vc)
            else:
                src.addr = addr
            return
        if name in ("pto.get_block_idx", "pto.get_block_num", *pto.SUBBLOCK):
            # the launch's values: kept as ops, read as the predefined registers
            self.vals[op.results[0]] = op.results[0]
            return
        if name in pipes.INIT_OPS or name in pipes.BUFFER_OPS:
            return lower_cube.lower_pipe_setup(self, op)
        if name in pto.EVENTID_ARRAY_OPS:
            return self.lower_eventid_array(op)
        if name == "pto.tgetval":
            return self.lower_tgetval(op)
        if name in ("pto.get_buf", "pto.rls_buf"):
            self.unsupported("no semantics: A5 buffer-id sync (get_buf/rls_buf): " + pto.ISA_TREE + "docs/isa/scalar/ops/"
                             "pipeline-sync/get-buf.md contradicts itself on a first acquire (its Constraints: it "
                             "'succeeds immediately since all slots start free'; its Exceptions: illegal while 'the "
                             "producer has not yet issued rls_buf'), and neither it nor rls-buf.md names the pipeline its implicit "
                             "set_flag signals ('the producer')")
        if isinstance(op, func.CallOp):
            self.unsupported("function calls are not inlined yet (call the kernel's body directly)")
        if name in pto.SECTION_OPS and op.regions and op.regions[0].blocks:
            return self.lower_section(op)
        self.unsupported("no rule for this op")

    def lower_tgetval(self, op: Operation):
        """TGETVAL: one ``ld_ub`` of the element at flat offset ``index`` of the tile's storage, on
        the scalar unit (pto-insert-sync orders it after the tile's producer: MTE2/V -> S)."""
        t = self.tile(op.operands[0])
        reg = self.emit("ld_ub", t.dtype, dst=self.fresh("s"),
                        addr=self.add(t.addr, self.mul(self.expr(op.operands[1], op), t.esize)))
        Rewriter.replace_op(op, [], [reg])
        self.vals[reg] = reg

    def lower_section(self, op: Operation):
        """``pto.section.cube`` / ``pto.section.vector``: the body runs inline, in program order
        (its ops move out in front of it)."""
        block = op.regions[0].block
        ops = list(block.ops)
        Rewriter.inline_block(block, InsertPoint.before(op))
        Rewriter.erase_op(op)
        for o in ops:
            self.lower_op(o)

    def lower_eventid_array(self, op):
        """The array lives in the compiler (an event id is a field of the flag instruction): its
        index must be a constant, its values are expressions; the ops stay (as get_block_idx)."""
        if op.name == "pto.declare_eventid_array":
            self.vals[op.results[0]] = [0] * pto.eventid_array_size(op.results[0].type)
            return
        arr = self.vals.get(op.operands[0])
        i = self.expr(op.operands[-1], op)  # set: (array, value, index); get: (array, index)
        if not isinstance(arr, list) or not _is_num(i):
            self.unsupported("an event-id array index that is not a constant")
        if not 0 <= i < len(arr):
            self.fail(f"event-id array index {i} is out of range 0..{len(arr) - 1}")
        if op.name == "pto.eventid_array_set":
            arr[i] = self.expr(op.operands[1], op)
            return
        self.vals[op.results[0]] = arr[i]

    # ---- sync ----------------------------------------------------------------------------------
    def pipe_of(self, attr) -> str:
        body = getattr(getattr(attr, "body", None), "data", None)
        if body is None:
            self.fail("expects a #pto.pipe<...> argument")
        body = body.strip()
        if body in _PIPE_NAMES:
            return _PIPE_NAMES[body]
        if body in _EVENT_PIPES:
            return _EVENT_PIPES[body]
        self.unsupported(f"pipe '{body}' is not a pipe of the program ({', '.join(a2a3.PIPES)})")
        raise AssertionError

    def lower_flag(self, op):
        args = op.args.data
        dyn = op.name.endswith("_dyn")
        if len(args) < 2 or (not dyn and len(args) < 3):
            self.fail("expects [src pipe, dst pipe, event]")
        src, dst = self.pipe_of(args[0]), self.pipe_of(args[1])
        if dyn:
            event = self.expr(op.operands_[0], op) if op.operands_ else 0
        else:
            body = getattr(getattr(args[2], "body", None), "data", "")
            digits = "".join(ch for ch in body if ch.isdigit())
            if not digits:
                self.fail(f"event '{body}' is not EVENT_IDn")
            event = int(digits)
        if src == dst:
            self.fail(f"a flag needs two different pipes, got {src} and {dst}")
        opcode = "set_flag" if op.name in ("pto.set_flag", "pto.record_event", "pto.set_flag_dyn") else "wait_flag"
        self.emit(opcode, src_pipe=src, dst_pipe=dst, event_id=event)

    # ---- the kernel's arith ---------------------------------------------------------------------
    def lower_arith(self, op):
        """Folded into a number when every operand is one (the scalar unit's arithmetic), else the
        value itself: the op stays, runtime/program.py decodes it."""
        if op.name == "arith.constant":
            try:
                self.vals[op.result] = self._constant(op)
            except _Unsupported as e:
                self.unsupported(str(e))
            return
        values = [self.expr(v, op) for v in op.operands]
        fn = arith_function(op)
        res = op.results[0]
        self.vals[res] = fn(*values) if fn is not None and all(_is_num(x) for x in values) else res

    # ---- scf -------------------------------------------------------------------------------------
    def lower_for(self, op: scf.ForOp):
        """The loop stays an ``scf.for``; its body is lowered in place (a tile carried through
        iter_args keeps its buffer; a scalar is its block argument)."""
        body = op.body.blocks[0]
        tiles = [isinstance(v.type, pto.TileLikeType) for v in op.iter_args]
        for init, tile, barg in zip(op.iter_args, tiles, body.args[1:]):
            if tile and not isinstance(self.vals.get(init), TileRef):
                self.fail(f"iter_arg {init} is not a tile the lowering knows")
            self.vals[barg] = self.vals[init] if tile else barg
        self.restore_mask()
        self.vals[body.args[0]] = body.args[0]
        yielded = self.lower_block(body) or []
        self._yield(yielded, tiles, [self.vals[b] for b in body.args[1:]])
        self.restore_mask()
        for res, tile, barg in zip(op.res, tiles, body.args[1:]):
            self.vals[res] = self.vals[barg] if tile else res

    def _yield(self, yielded, tiles, targets):
        """A tile yielded where one is carried must be in the carried tile's buffer."""
        for v, tile, tgt in zip(yielded, tiles, targets):
            if tile:
                t = self.vals.get(v)
                if not isinstance(t, TileRef) or not isinstance(tgt, TileRef):
                    self.fail(f"yields {v}, which is not a tile the lowering knows")
                if t.addr != tgt.addr:
                    self.fail(f"yields a tile at UB address {_addr_text(t.addr)} where the carried tile is at "
                              f"{_addr_text(tgt.addr)}; tiles carried through scf.for/scf.if must share a buffer "
                              "(pto-plan-memory)")

    def lower_while(self, op: scf.WhileOp):
        """``scf.while`` stays; only scalars may be carried (tiles are used by name)."""
        before, after = op.before_region.block, op.after_region.block
        if any(isinstance(v.type, pto.TileLikeType) for v in (*op.arguments, *op.res)):
            self.unsupported("a tile carried through scf.while (use the tile by name; carry scalars only)")
        self.restore_mask()
        for v in (*before.args, *after.args, *op.res):
            self.vals[v] = v
        self.lower_block(before)
        self.lower_block(after)
        self.restore_mask()

    def lower_if(self, op: scf.IfOp):
        tiles = [isinstance(v.type, pto.TileLikeType) for v in op.output]
        self.restore_mask()
        targets = None
        for region in (op.true_region, op.false_region):
            if not region.blocks:
                continue
            yielded = self.lower_block(region.blocks[0]) or []
            if targets is None:
                targets = [self.vals.get(v) if tile else None for v, tile in zip(yielded, tiles)]
            self._yield(yielded, tiles, targets)
            self.restore_mask()
        for i, res in enumerate(op.output):
            self.vals[res] = targets[i] if tiles[i] and targets is not None else res

    # ---- tile ops -----------------------------------------------------------------------------
    def lowered(self, op: Operation):
        """The op is now a2a3 instructions: erase it."""
        Rewriter.erase_op(op)

    def lower_tile_op(self, op: pto.TileOp):
        if op.name in pipes.PIPE_OPS or op.name in cube.NO_SEMANTICS:
            return self.emit_tile_op(op)
        if op.res and not op.outs:
            self.fail("is an L1 (SSA) tile op; run pto-bufferize before the a2a3 lowering")
        if isinstance(op, pto.OpaqueTileOp) or not type(op).HAS_SEMANTICS:
            self.unsupported(pto.no_semantics(op) or "no rule for this instruction")
        self.emit_tile_op(op)

    def emit_tile_op(self, op: pto.TileOp):
        """The a2a3 ops of one tile op by the pattern of its family (:func:`_family_of`), a rewrite that
        replaces the op."""
        if op.name in pipes.PIPE_OPS:
            lower_cube.lower_pipe_op(self, op)
            return self.lowered(op)
        if op.name in cube.NO_SEMANTICS:
            self.unsupported(f"no semantics: {cube.NO_SEMANTICS[op.name]}")
        pattern = self.patterns.get(type(op))
        if pattern is None:
            family = _family_of(type(op))
            if family is None:
                self.unsupported("no rule for this instruction")
            pattern = self.patterns[type(op)] = _FamilyPattern(self, family, _FAMILY_RULES[family])
        rewriter = PatternRewriter(op)
        pattern.match_and_rewrite(op, rewriter)
        if not rewriter.has_done_action:
            self.unsupported("no rule for this instruction")

    def _rows_aligned(self, *tiles: TileRef, rows=None):
        for t in tiles:
            if t.row_major and (rows is None or not _is_int(rows) or rows > 1) and t.row_bytes % 32:
                raise _Unsupported(f"a row of {t.t.rows}x{t.t.cols}x{t.t.dtype} is {t.row_bytes} bytes, "
                                   "not a multiple of 32 (vector repeat strides are in 32-byte blocks)")

    def opnd(self, t: TileRef, lanes: int) -> Opnd:
        return Opnd(t.addr, t.row_bytes, lanes * t.esize, t.esize)

    # -- the region driver ------------------------------------------------------------------------
    def vec(self, opcode, dtype, opnds: dict, R, C, *, lanes=None, extra=None, col_lo=0, flat_ok=True,
            row_bound: int | None = None):
        """Emits ``opcode`` over rows x cols [col_lo, C) of the operands (see the module doc);
        ``row_bound``: the most rows a run-time R can be (the tile's rows)."""
        extra = dict(extra or {})
        L = lanes or 256 // DTYPE_SIZES[dtype]
        static = _is_int(R) and _is_int(C)
        if static and (R <= 0 or C <= col_lo):
            return
        names = list(opnds)

        def args_for(addrs, reps, blks, repeat):
            a = dict(extra)
            for n in names:
                a[n] = addrs[n]
                a[f"{n}_blk_stride"] = blks[n]
                a[f"{n}_rep_stride"] = reps[n]
            a["repeat"] = repeat
            return a

        blks = {n: o.blk for n, o in opnds.items()}
        if static and flat_ok and col_lo == 0 and all(
                o.blk == 1 and o.row == C * o.esize and o.chunk == L * o.esize for o in opnds.values()):
            n_el = R * C
            full, tail = divmod(n_el, L)
            reps = {n: o.chunk // 32 for n, o in opnds.items()}
            if full:
                self.set_mask(FULL)
            for s in range(0, full, REPEAT_MAX):
                n = min(REPEAT_MAX, full - s)
                self.emit(opcode, dtype, **args_for({k: self.add(o.base, s * o.chunk) for k, o in opnds.items()},
                                                    reps, blks, n))
            if tail:
                self.set_mask(self.mask_lanes(0, tail, L))
                self.emit(opcode, dtype, **args_for({k: self.add(o.base, full * o.chunk) for k, o in opnds.items()},
                                                    reps, blks, 1))
            return
        if static and all(_is_int(o.row) and o.row % 32 == 0 and o.row // 32 <= REPEAT_MAX for o in opnds.values()):
            reps = {n: o.row // 32 for n, o in opnds.items()}
            for k in range(col_lo // L, ceil_div(C, L)):
                a, b = max(col_lo - k * L, 0), min(C - k * L, L)
                self.set_mask(self.mask_lanes(a, b, L))
                for r0 in range(0, R, REPEAT_MAX):
                    n = min(REPEAT_MAX, R - r0)
                    addrs = {nm: self.add(o.base, k * o.chunk, r0 * o.row) for nm, o in opnds.items()}
                    self.emit(opcode, dtype, **args_for(addrs, reps, blks, n))
            return
        # count mode, one row per trip (dynamic shapes, or rows wider than 255 blocks)
        if col_lo % L and _is_int(C):
            # the head chunk starts inside a repeat: a norm-mode lane mask, one repeat per row
            k0 = col_lo // L
            self.set_mask(self.mask_lanes(col_lo - k0 * L, min(C - k0 * L, L), L))
            reps0 = {n: o.chunk // 32 for n, o in opnds.items()}
            r0, node0 = 0, None
            if not (_is_int(R) and R == 1):
                node0, r0 = self.loop("r", 0, R, bound=row_bound)
                outer0 = self.in_body(node0.body)
            self.emit(opcode, dtype, **args_for({nm: self.add(o.base, k0 * o.chunk, self.mul(r0, o.row))
                                                 for nm, o in opnds.items()}, reps0, blks, 1))
            if node0 is not None:
                self.end_loop(outer0)
            col_lo = (k0 + 1) * L
            if C <= col_lo:
                return
        for o in opnds.values():
            if (col_lo * o.esize) % 32 or (o.chunk and o.chunk % 32):
                raise _Unsupported("a column range that does not start on a 32-byte block")
        count = self.sub(C, col_lo)
        reps = {n: o.chunk // 32 for n, o in opnds.items()}
        self.set_mask(("count", 0, count))
        r = 0
        node = None
        if not (_is_int(R) and R == 1):
            node, r = self.loop("r", 0, R, bound=row_bound)
            outer = self.in_body(node.body)
        addrs = {nm: self.add(o.base, col_lo * o.esize if o.chunk else 0, self.mul(r, o.row)) for nm, o in opnds.items()}
        self.emit(opcode, dtype, **args_for(addrs, reps, blks, 1))
        if node is not None:
            self.end_loop(outer)
        self.emit("set_mask_norm")
        self.mask = ("norm", 0, count)

    # -- elementwise families -----------------------------------------------------------------------
    def tile_binary(self, op):
        d = self.tile(op.outs[0])
        self._binary_vec(op, d.vr, d.vc)

    def _binary_vec(self, op, R, C):
        """The op's binary vector instruction, ``dst = src0 op src1``, over R x C."""
        a, b = self.tile(op.ins[0]), self.tile(op.ins[1])
        d = self.tile(op.outs[0])
        self._rows_aligned(a, b, d, rows=R)
        L = 256 // d.esize
        self.vec(type(op).A2A3_VOP, d.dtype, {"dst": self.opnd(d, L), "src0": self.opnd(a, L),
                                              "src1": self.opnd(b, L)}, R, C, row_bound=d.t.rows)

    def tile_part(self, op):
        """TPART*: the source valid on all of dst's region copied to dst, then the binary vector op
        over the other source's region."""
        a, b, d = (self.tile(v) for v in (*op.ins[:2], op.outs[0]))
        if not all(_is_int(x) for x in (a.vr, a.vc, b.vr, b.vc, d.vr, d.vc)):
            return self._part_run_time(op, a, b, d)
        if 0 in (d.vr, d.vc):
            return
        full, (sr, sc) = op.part_split()
        if op.ins[full] is not op.outs[0]:
            self.copy_tile(self.tile(op.ins[full]), d)
        self._binary_vec(op, sr, sc)

    def _part_run_time(self, op, a: TileRef, b: TileRef, d: TileRef):
        """TPART* with valid shapes known only at run time: src0 copied to dst when its valid region
        is dst's, else src1 (loops of 0 or 1 trips, none for an empty dst), then the binary op over
        the sources' common region inside dst's: the smaller source's under the page's pattern,
        which the golden model checks at run time.  (A dst that is a source or shares its bytes is
        refused before: TPART* cannot work in place, passes/tile_reads_check.py.)"""
        R, C = d.vr, d.vc
        nonempty = self.mul(self.min(R, 1), self.min(C, 1))
        f0 = self.mul(nonempty, self.mul(equal_flag(self, a.vr, R), equal_flag(self, a.vc, C)))
        for src, trips in ((a, f0), (b, self.sub(nonempty, f0))):
            node, _ = self.loop("p", 0, trips, bound=1)
            outer = self.in_body(node.body)
            self.copy_tile(src, d)
            self.end_loop(outer)
        self._binary_vec(op, self.min(self.min(a.vr, b.vr), R), self.min(self.min(a.vc, b.vc), C))

    def tile_unary(self, op):
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        self._rows_aligned(s, d, rows=d.vr)
        L = 256 // d.esize
        k = type(op).BY_SCALAR
        self.vec(type(op).A2A3_VOP, d.dtype, {"dst": self.opnd(d, L), "src": self.opnd(s, L)}, d.vr, d.vc,
                 row_bound=d.t.rows, extra=None if k is None else {"scalar": k})

    def scalar_operand(self, v: SSAValue, dtype: str, negate=False):
        """The scalar field for a tile-scalar op on ``dtype`` (converted as the golden model does)."""
        e = self.expr(v)
        if _is_num(e):
            s = E.scalar_to(e, E.np_dtype(dtype))
            if negate:
                s = E.neg(s)
            return _py_number(s)
        if not negate:
            return e
        reg = self.emit("smov", dtype, dst=self.fresh("s"), src=e)
        return self.mul(reg, -1, t=_xdsl_type(canonical_dtype(dtype)))

    def tile_scalar(self, op):
        (sv,) = op.scalar_ins()
        s, d = self.tile(op.src), self.tile(op.outs[0])
        self._rows_aligned(s, d, rows=d.vr)
        L = 256 // d.esize
        ops = {"dst": self.opnd(d, L), "src": self.opnd(s, L)}
        if isinstance(op, pto.TSubsOp):
            self.vec("vadds", d.dtype, ops, d.vr, d.vc, extra={"scalar": self.scalar_operand(sv, d.dtype, True)})
            return
        if not isinstance(op, pto.TDivsOp):
            self.vec(type(op).A2A3_VOP, d.dtype, ops, d.vr, d.vc, extra={"scalar": self.scalar_operand(sv, d.dtype)})
            return
        scalar = self.scalar_operand(sv, d.dtype)
        if not op.scalar_first and _is_num(scalar):
            inv = _exact_reciprocal(scalar, d.dtype)
            if inv is not None:
                self.vec("vmuls", d.dtype, ops, d.vr, d.vc, extra={"scalar": inv})
                return
        buf = self.free_ub(256)
        self.set_mask(FULL)
        self.emit("vector_dup", d.dtype, dst=buf, scalar=scalar, repeat=1)
        bc = Opnd(buf, 0, 0, d.esize, blk=0)
        if op.scalar_first:
            self.vec("vdiv", d.dtype, {"dst": ops["dst"], "src0": bc, "src1": ops["src"]}, d.vr, d.vc)
        else:
            self.vec("vdiv", d.dtype, {"dst": ops["dst"], "src0": ops["src"], "src1": bc}, d.vr, d.vc)

    def tile_expands(self, op):
        d = self.tile(op.outs[0])
        self._rows_aligned(d, rows=d.vr)
        e = self.expr(op.ins[0])
        if d.esize == 1:
            if _is_num(e):
                b = int(np.asarray(E.scalar_to(e, E.np_dtype(d.dtype))).view(np.uint8))
                scalar = b * 257
            else:
                reg = self.emit("smov", d.dtype, dst=self.fresh("s"), src=e)
                scalar = self.packed(reg)
            cols = self.ceil_div(d.vc, 2)
            self.vec("vector_dup", "u16", {"dst": Opnd(d.addr, d.row_bytes, 256, 2)}, d.vr, cols,
                     extra={"scalar": scalar})
            return
        scalar = _py_number(E.scalar_to(e, E.np_dtype(d.dtype))) if _is_num(e) else e
        self.vec("vector_dup", d.dtype, {"dst": self.opnd(d, 256 // d.esize)}, d.vr, d.vc,
                 extra={"scalar": scalar})

    def tile_colexpand(self, op):
        a, b = self.tile(op.ins[0]), self.tile(op.ins[1])
        d = self.tile(op.outs[0])
        self._rows_aligned(a, d, rows=d.vr)
        L = 256 // d.esize
        bc = Opnd(b.addr, 0, L * b.esize, b.esize)
        vop = type(op).A2A3_VOP
        ops = {"dst": self.opnd(d, L), "src0": self.opnd(a, L), "src1": bc}
        self.vec(vop, d.dtype, ops, d.vr, d.vc)
        if isinstance(op, pto.TColExpandExpdifOp):
            self.vec("vexp", d.dtype, {"dst": self.opnd(d, L), "src": self.opnd(d, L)}, d.vr, d.vc)

    def tile_rowexpand(self, op):
        """TROWEXPAND* (module doc); when only the run-time valid shapes tell the expanded operand
        (``pto.AT_RUN_TIME``, Mode 2), both forms in loops of 0 or 1 trips: src0 full when its valid
        shape is dst's, else src1."""
        expanded = _attr_int(op, "expanded_operand")
        mode = _attr_int(op, "expand_mode")
        if expanded is None or mode is None:
            try:
                expanded, mode = op.expand_analysis()
            except Exception as e:  # noqa: BLE001 - a VerifyException: the op is invalid
                self.fail(str(e))
        if expanded != pto.AT_RUN_TIME:
            return self._rowexpand(op, expanded, mode)
        a, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        full0 = self.mul(equal_flag(self, a.vr, d.vr), equal_flag(self, a.vc, d.vc))
        for expanded, trips in ((1, full0), (0, self.sub(1, full0))):
            node, _ = self.loop("x", 0, trips, bound=1)
            outer = self.in_body(node.body)
            self._rowexpand(op, expanded, mode)
            self.end_loop(outer)

    def _rowexpand(self, op, expanded: int, mode: int):
        d = self.tile(op.outs[0])
        full = self.tile(op.ins[1 - expanded])
        x = self.tile(op.ins[expanded])
        self._rows_aligned(d, full, rows=d.vr)
        R, C = d.vr, d.vc
        static = _is_int(R) and _is_int(C)
        L = 256 // d.esize
        vop = type(op).A2A3_VOP
        expdif = isinstance(op, pto.TRowExpandExpdifOp)
        dst_o, full_o = self.opnd(d, L), self.opnd(full, L)

        def body(bc: Opnd, rows, row0):
            dd = Opnd(self.add(dst_o.base, self.mul(row0, d.row_bytes)), dst_o.row, dst_o.chunk, d.esize)
            ff = Opnd(self.add(full_o.base, self.mul(row0, full.row_bytes)), full_o.row, full_o.chunk, full.esize)
            ops = {"dst": dd, "src0": bc, "src1": ff} if expanded == 0 else {"dst": dd, "src0": ff, "src1": bc}
            self.vec(vop, d.dtype, ops, rows, C)
            if expdif:
                self.vec("vexp", d.dtype, {"dst": dd, "src": dd}, rows, C)

        if static and (R <= 0 or C <= 0):
            return
        if mode == 2:
            self._rows_aligned(x, rows=R)
            if not static:
                body(Opnd(x.addr, x.row_bytes, 0, x.esize, blk=0), R, 0)
                return
            for r0 in range(0, R, REPEAT_MAX):
                n = min(REPEAT_MAX, R - r0)
                body(Opnd(self.add(x.addr, r0 * x.row_bytes), x.row_bytes, 0, x.esize, blk=0), n, r0)
            return
        if x.row_major:
            self.fail("Mode 1 needs a ColMajor expanded operand")
        source = _attr_text(op, "bcast_source")
        if source is None:
            source = "tmp" if op.tmp is not None else "scratch"
        if source == "tmp":
            if op.tmp is None:
                self.fail("bcast_source = \"tmp\" but the op has no tmp operand")
            buf = self.tile(op.tmp).addr
        elif source == "scratch":
            if not self.target.mode1_needs_broadcast_buffer:
                self.unsupported(f"target {self.target.name} has no vbrcb scratch")
            buf = self.target.scratch_offset
        else:
            self.fail(f"Mode 1 needs a broadcast buffer, but bcast_source = \"{source}\"")
        bc = Opnd(buf, 32, 0, d.esize, blk=0)
        chunk = ROWS_PER_VBRCB_LOOP
        if (static and R < 256) or (not static and d.t.rows < chunk):  # (vbrcb ignores the vector mask)
            repeat = self.ceil_div(R, 8)
            self.emit("vbrcb", d.dtype, dst=buf, src=x.addr, repeat=repeat, dst_blk_stride=1, dst_rep_stride=8)
            body(bc, R, 0)
            return
        if not static:  # a run-time row count of a tall tile: chunks of 240 rows, the last one shorter
            self.restore_mask()
            node, c = self.loop("c", 0, self.ceil_div(R, chunk), bound=ceil_div(d.t.rows, chunk))
            outer = self.in_body(node.body)
            row0 = self.mul(c, chunk)
            n = self.min(self.sub(R, row0), chunk)
            self.emit("vbrcb", d.dtype, dst=buf, src=self.add(x.addr, self.mul(row0, x.esize)),
                      repeat=self.ceil_div(n, 8), dst_blk_stride=1, dst_rep_stride=8)
            body(bc, n, row0)
            self.emit("pipe_barrier", pipe="V")
            self.restore_mask()
            self.end_loop(outer)
            return
        nfull, tail = divmod(R, chunk)
        c = 0
        node = None
        if nfull > 1:
            self.restore_mask()
            node, c = self.loop("c", 0, nfull)
            outer = self.in_body(node.body)
        self.emit("vbrcb", d.dtype, dst=buf, src=self.add(x.addr, self.mul(c, chunk * x.esize)),
                  repeat=chunk // 8, dst_blk_stride=1, dst_rep_stride=8)
        body(bc, chunk, self.mul(c, chunk))
        self.emit("pipe_barrier", pipe="V")
        if node is not None:
            self.restore_mask()
            self.end_loop(outer)
        if tail:
            self.emit("vbrcb", d.dtype, dst=buf, src=self.add(x.addr, nfull * chunk * x.esize),
                      repeat=ceil_div(tail, 8), dst_blk_stride=1, dst_rep_stride=8)
            body(bc, tail, nfull * chunk)

    # -- pure broadcasts and moves ------------------------------------------------------------------
    def tile_rowbroadcast(self, op):
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        self._rows_aligned(d, rows=d.vr)
        R, C = d.vr, d.vc
        if _is_int(R) and _is_int(C) and (R <= 0 or C <= 0):
            return
        self.flag("V", "S")
        dtype = d.dtype
        packed = d.esize == 1
        count = self.ceil_div(C, 2) if packed else C
        self.set_mask(("count", 0, count))
        node, r = self.loop("r", 0, R, bound=d.t.rows)
        outer = self.in_body(node.body)
        reg = self.emit("ld_ub", dtype, dst=self.fresh("s"), addr=self.elem(s, r, 0))
        scalar = self.packed(reg) if packed else reg
        self.emit("vector_dup", "u16" if packed else dtype, dst=self.elem(d, r, 0), scalar=scalar, repeat=1,
                  dst_rep_stride=8)
        self.end_loop(outer)
        self.emit("set_mask_norm")
        self.mask = ("norm", 0, count)
        self.flag("S", "V")

    def tile_colbroadcast(self, op):
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        self._rows_aligned(d, rows=d.vr)
        R, C = d.vr, d.vc
        if _is_int(R) and _is_int(C) and (R <= 0 or C <= 0):
            return
        blocks = self.ceil_div(self.mul(C, d.esize), 32)
        if _is_int(R) and R == 1:
            self.emit("copy_ubuf_to_ubuf", dst=d.addr, src=s.addr, n_burst=1, len_burst=blocks)
            return
        node, r = self.loop("r", 0, R, bound=d.t.rows)
        outer = self.in_body(node.body)
        self.emit("copy_ubuf_to_ubuf", dst=self.elem(d, r, 0), src=s.addr, n_burst=1, len_burst=blocks)
        self.end_loop(outer)

    def tile_mov(self, op):
        if lower_cube.is_cube_op(op):
            return lower_cube.lower_cube_op(self, op)
        if len(op.ins) != 1:
            self.unsupported("tmov with extra operands")
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        if s.esize != d.esize:
            self.unsupported("tmov between element types of different sizes")
        self.copy_tile(s, d)

    def copy_tile(self, s: TileRef, d: TileRef):
        R, C = d.vr, d.vc
        if _is_int(R) and _is_int(C) and (R <= 0 or C <= 0):
            return
        if s.row_major != d.row_major:
            if not (_is_int(C) and C == 1 and _is_int(R)) and not (_is_int(R) and R == 1):
                raise _Unsupported("tmov between a RowMajor and a ColMajor tile")
        if not d.row_major or not s.row_major:
            # a ColMajor column (or a single row): contiguous elements
            n = self.mul(R, C)
            self.emit("copy_ubuf_to_ubuf", dst=d.addr, src=s.addr, n_burst=1,
                      len_burst=self.ceil_div(self.mul(n, d.esize), 32))
            return
        self._rows_aligned(s, d, rows=R)
        e = d.esize
        length = self.ceil_div(self.mul(C, e), 32)
        sgap, dgap = self.sub(s.row_bytes // 32, length), self.sub(d.row_bytes // 32, length)
        if _is_int(R):
            for r0 in range(0, R, N_BURST_MAX):
                n = min(N_BURST_MAX, R - r0)
                self.emit("copy_ubuf_to_ubuf", dst=self.add(d.addr, r0 * d.row_bytes), src=self.add(s.addr, r0 * s.row_bytes),
                          n_burst=n, len_burst=length, src_gap=sgap, dst_gap=dgap)
        else:
            self.emit("copy_ubuf_to_ubuf", dst=d.addr, src=s.addr, n_burst=R, len_burst=length,
                      src_gap=sgap, dst_gap=dgap)

    def tile_composed(self, op):
        """The op's ``STEPS``, one vector instruction each over the region; intermediate results go
        to a free-UB tmp shaped like dst, the last step writes dst."""
        named = op.named_operands()
        d = self.tile(op.outs[0])
        refs = {k: self.tile(v) for k, v in named.items() if k != "s"}
        self._rows_aligned(*refs.values(), rows=d.vr)
        L = 256 // d.esize
        if len(op.STEPS) > 1:
            refs["t"] = TileRef(self.free_ub(d.nbytes), d.t, d.vr, d.vc)
        for n, (vop, *args) in enumerate(op.STEPS):
            out = refs["dst"] if n == len(op.STEPS) - 1 else refs["t"]
            spec = a2a3.OPCODES[vop]
            srcs = [x for x in args if x not in ("s", "-s")]
            names = ("src0", "src1") if spec.family == "binary" else ("src",)
            opnds = {"dst": self.opnd(out, L), **{nm: self.opnd(refs[x], L) for nm, x in zip(names, srcs)}}
            scalar = {"s", "-s"} & set(args)
            extra = {"scalar": self.scalar_operand(named["s"], d.dtype, "-s" in scalar)} if scalar else None
            self.vec(vop, d.dtype, opnds, d.vr, d.vc, extra=extra, row_bound=d.t.rows)

    def tile_axpy(self, op):
        """TAXPY: ``vconv`` of src into a free-UB tmp shaped like dst (f16 -> f32 only), ``vmuls`` by s
        (into the tmp), ``vadd`` of the tmp to dst; vaxpy is not in vector_isa.md."""
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        self._rows_aligned(s, d, rows=d.vr)
        L = 256 // d.esize
        tmp = TileRef(self.free_ub(d.nbytes), d.t, d.vr, d.vc)
        src = s
        if s.dtype != d.dtype:
            self.vec("vconv", d.dtype, {"dst": self.opnd(tmp, L), "src": self.opnd(s, L)}, d.vr, d.vc, lanes=L,
                     extra={"src_dtype": s.dtype, "round": "r"})
            src = tmp
        self.vec("vmuls", d.dtype, {"dst": self.opnd(tmp, L), "src": self.opnd(src, L)}, d.vr, d.vc,
                 extra={"scalar": self.scalar_operand(op.ins[1], d.dtype)})
        self.vec("vadd", d.dtype, {"dst": self.opnd(d, L), "src0": self.opnd(tmp, L), "src1": self.opnd(d, L)},
                 d.vr, d.vc, row_bound=d.t.rows)

    def tile_trans(self, op):
        """TTRANS: no vector instruction vector_isa.md describes moves an element across lanes, so the
        scalar unit copies each element (``ld_ub``, ``st_ub`` to its transposed place), bracketed by
        V->S / S->V flags (also on ascend950); the tmp is not needed."""
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        self.flag("V", "S")
        rows, i = self.loop("i", 0, s.vr, bound=s.t.rows)
        outer = self.in_body(rows.body)
        cols, j = self.loop("j", 0, s.vc, bound=s.t.cols)
        inner = self.in_body(cols.body)
        reg = self.emit("ld_ub", s.dtype, dst=self.fresh("s"), addr=self.elem(s, i, j))
        self.emit("st_ub", d.dtype, addr=self.elem(d, j, i), src=reg)
        self.end_loop(inner)
        self.end_loop(outer)
        self.flag("S", "V")

    def tile_fill(self, op):
        """TTRI: per row (a scalar loop), ``vector_dup`` of the background value over the row, then
        of the other value over its first n = clamp(i + diag + 1, 0, C) (lower) or clamp(i + diag,
        0, C) (upper) columns in count mode.  TCI: no vector instruction writes a ramp
        (vector_isa.md), so the scalar unit stores ``s ± k`` element by element (``st_ub``),
        bracketed by V->S / S->V flags as TRowMax.hpp brackets its scalar fold (also on ascend950)."""
        d = self.tile(op.outs[0])
        s = self.expr(op.ins[0])
        if op.FAMILY == "ci":
            desc = op.flag("descending")
            self.flag("V", "S")
            rows, r = self.loop("r", 0, d.vr, bound=d.t.rows)
            outer = self.in_body(rows.body)
            cols, c = self.loop("c", 0, d.vc, bound=d.t.cols)
            inner = self.in_body(cols.body)
            k = self.add(self.mul(r, d.vc), c)
            self.emit("st_ub", d.dtype, addr=self.elem(d, r, c), src=self.sub(s, k) if desc else self.add(s, k))
            self.end_loop(inner)
            self.end_loop(outer)
            self.flag("S", "V")
            return
        self._rows_aligned(d, rows=d.vr)
        upper = op.flag("upperOrLower")
        first, second = (1, 0) if upper else (0, 1)
        node, r = self.loop("r", 0, d.vr, bound=d.t.rows)
        outer = self.in_body(node.body)
        row = Opnd(self.elem(d, r, 0), d.row_bytes, 256, d.esize)
        self.vec("vector_dup", d.dtype, {"dst": row}, 1, d.vc, extra={"scalar": first})
        n = self.min(self.arith("max", self.add(r, s, 0 if upper else 1), 0), d.vc)
        self.vec("vector_dup", d.dtype, {"dst": row}, 1, n, extra={"scalar": second})
        self.end_loop(outer)

    def tile_gather(self, op):
        """TGATHER on the scalar unit (no vgather/vreducev2 in vector_isa.md): index form, per dst
        element ``ld_ub`` the index, ``ld_ub`` src's element at ``src + index * sizeof(T)`` (the
        header's vmuls + vgather addressing; TGATHERB: ``src + offset``, the offset in bytes),
        ``st_ub``; mask form, per row the selected columns stored one after another from dst's
        first element.  Bracketed by V->S / S->V flags (also on ascend950)."""
        if op.form == "compare":
            self.unsupported(pto.GATHER_COMPARE_NO_SEMANTICS)
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        self.flag("V", "S")
        v = self.fresh("v")
        if op.form == "index":
            ix = self.tile(op.ins[1])
            rows, r = self.loop("r", 0, d.vr, bound=d.t.rows)
            outer = self.in_body(rows.body)
            cols, c = self.loop("c", 0, d.vc, bound=d.t.cols)
            inner = self.in_body(cols.body)
            k = self.emit("ld_ub", "u32" if op.BYTE_OFFSETS else ix.dtype, dst=self.fresh("k"), addr=self.elem(ix, r, c))
            x = self.emit("ld_ub", d.dtype, dst=v, addr=self.add(s.addr, k if op.BYTE_OFFSETS else self.mul(k, s.esize)))
            self.emit("st_ub", d.dtype, addr=self.elem(d, r, c), src=x)
        else:
            period, pos = op.pattern()
            # the selected columns of a row: ceil((C - pos) / period) (C - pos + period - 1 >= 0: pos < period)
            n = len(range(pos, s.vc, period)) if _is_int(s.vc) else self.div(self.add(s.vc, period - 1 - pos), period)
            rows, r = self.loop("r", 0, s.vr, bound=s.t.rows)
            outer = self.in_body(rows.body)
            cols, m = self.loop("m", 0, n, bound=ceil_div(s.t.cols, period))
            inner = self.in_body(cols.body)
            x = self.emit("ld_ub", s.dtype, dst=v, addr=self.elem(s, r, self.add(pos, self.mul(m, period))))
            self.emit("st_ub", d.dtype, addr=self.add(d.addr, self.mul(self.mul(r, n), d.esize), self.mul(m, d.esize)),
                      src=x)
        self.end_loop(inner)
        self.end_loop(outer)
        self.flag("S", "V")

    _CMPF = {"EQ": "oeq", "NE": "une", "LT": "olt", "GT": "ogt", "GE": "oge", "LE": "ole"}
    """cmpMode -> arith.cmpf predicate: ordered, but NE unordered (a NaN operand: only NE holds)."""
    _CMPI = {"EQ": "eq", "NE": "ne", "LT": "slt", "GT": "sgt", "GE": "sge", "LE": "sle"}

    def _register_of(self, v: SSAValue, dtype: str):
        """A scalar operand as a number or a register of ``dtype`` (``smov`` converts another type)."""
        e = self.scalar_operand(v, dtype)
        if _is_num(e) or e.type == _xdsl_type(canonical_dtype(dtype)):
            return e
        return self.emit("smov", dtype, dst=self.fresh("s"), src=e)

    def _compare(self, x, y, mode: str, dtype: str):
        """The scalar unit's ``x mode y`` (an i1): floats by arith.cmpf, integers as index values."""
        if dtype in ("f16", "bf16", "f32"):
            t = _xdsl_type(dtype)
            return self.insert(arith.CmpfOp(self.value(x, t), self.value(y, t), self._CMPF[mode]))
        pred = self._CMPI[mode]  # unsigned types compare as unsigned (a ui64 above 2**63 is no negative index)
        return self.insert(arith.CmpiOp(self.value(x, _INDEX), self.value(y, _INDEX),
                                        "u" + pred[1:] if dtype.startswith("u") and pred[0] == "s" else pred))

    def _store_selected(self, on, a: TileRef, b: TileRef | None, d: TileRef, r, c, bits: str, other=None):
        """``st_ub`` to d[r, c] of a[r, c] where the i1 ``on`` holds, else b[r, c] (or ``other``, a
        number or register), moved as ``bits`` (unsigned: a select copies the bits, a NaN's too)."""
        t = _xdsl_type(bits)
        x = self.emit("ld_ub", bits, dst=self.fresh("x"), addr=self.elem(a, r, c))
        y = other if b is None else self.emit("ld_ub", bits, dst=self.fresh("y"), addr=self.elem(b, r, c))
        self.emit("st_ub", bits, addr=self.elem(d, r, c),
                  src=self.insert(arith.SelectOp(on, self.value(x, t), self.value(y, t))))

    def tile_cmp(self, op):
        """TCMP/TCMPS on the scalar unit (vector_isa.md describes no compare into a mask): per valid
        row, per byte k of dst's valid columns, the compares of columns ``c = 8k + b`` (b < 8),
        each bit ``2^b`` summed into the byte (the packing of dialects/pto.py ``CompareOp``),
        ``st_ub``'d.  Integers of up to 4 bytes, a whole group of 8 valid columns: each operand's
        group ``ld_ub``'d as 64-bit words, the lanes taken out by shifts (:meth:`_lanes`); else
        both operands ``ld_ub``'d at column ``min(c, C - 1)``, the bit of a column past C masked
        to 0.  Bracketed by V->S / S->V flags (also on ascend950)."""
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        other = op.ins[1]
        o = self.tile(other) if pto.is_tile(other.type) else None
        self.flag("V", "S")
        y = None
        if op.SCALAR:
            y = self._register_of(other, s.dtype) if o is None else \
                self.emit("ld_ub", s.dtype, dst=self.fresh("y"), addr=o.addr)  # TCMPS's tile form: (0, 0)
        rows, r = self.loop("r", 0, s.vr, bound=s.t.rows)
        outer = self.in_body(rows.body)
        nbytes = self.mul(d.vc, d.esize)
        groups = 0
        if s.dtype not in ("f16", "bf16", "f32") and s.esize <= 4:
            groups = self.min(self.div(s.vc, 8), nbytes)
            cols, k = self.loop("k", 0, groups, bound=s.t.cols // 8)
            inner = self.in_body(cols.body)
            xs = self._lanes(s, r, k, s.dtype)
            ys = [y] * 8 if o is None or op.SCALAR else self._lanes(o, r, k, s.dtype)
            byte = 0
            for b in range(8):
                hit = self._compare(xs[b], ys[b], op.mode, s.dtype)
                byte = self.add(byte, self.insert(arith.SelectOp(hit, self.value(1 << b, _INDEX), self.value(0, _INDEX))))
            self.emit("st_ub", "u8", addr=self.add(d.addr, self.mul(r, d.row_bytes), k), src=byte)
            self.end_loop(inner)
        cols, k = self.loop("k", groups, nbytes, bound=d.t.cols * d.esize)
        inner = self.in_body(cols.body)
        last = self.arith("max", self.sub(s.vc, 1), 0)
        byte = 0
        for b in range(8):
            c = self.add(self.mul(k, 8), b)
            at = self.min(c, last)
            x = self.emit("ld_ub", s.dtype, dst=self.fresh("x"), addr=self.elem(s, r, at))
            yb = y if y is not None else self.emit("ld_ub", s.dtype, dst=self.fresh("y"), addr=self.elem(o, r, at))
            live = self.insert(arith.CmpiOp(self.value(c, _INDEX), self.value(s.vc, _INDEX), "slt"))
            hit = self.insert(arith.AndIOp(self._compare(x, yb, op.mode, s.dtype), live))
            byte = self.add(byte, self.insert(arith.SelectOp(hit, self.value(1 << b, _INDEX), self.value(0, _INDEX))))
        self.emit("st_ub", "u8", addr=self.add(d.addr, self.mul(r, d.row_bytes), k), src=byte)
        self.end_loop(inner)
        self.end_loop(outer)
        self.flag("S", "V")

    def _lanes(self, t: TileRef, r, k, dtype: str) -> list:
        """The 8 elements of row r, columns 8k..8k+7 of tile t (integers of e <= 4 bytes): e
        64-bit words ``ld_ub``'d, lane l of a word its bits ``8e*l ..`` (a signed type's truncated
        to it, so the value is signed)."""
        e, u64 = t.esize, _xdsl_type("u64")
        n, width = 8 // e, 8 * e
        out = []
        for w in range(e):
            word = self.emit("ld_ub", "u64", dst=self.fresh("w"), addr=self.add(self.elem(t, r), self.mul(k, 8 * e), 8 * w))
            for lane in range(n):
                v = self.arith(">>", word, width * lane, u64) if lane else word
                v = self.insert(arith.TruncIOp(v, _xdsl_type(("u" if dtype[0] == "u" else "i") + str(width))))
                out.append(v)
        return out

    def tile_sel(self, op):
        """TSEL/TSELS on the scalar unit (vector_isa.md describes no select by a mask in UB), per
        valid row: each whole group of 8 columns ``8k..8k+7`` from the mask row's byte k
        ``ld_ub``'d once, its bits spread into lane masks of 64-bit words (:meth:`_lane_mask`) and
        each word of dst ``y ^ ((x ^ y) & mask)`` of src0's word x and src1's y (TSELS: the
        scalar's bits in every lane), ``ld_ub``/``st_ub``'d as u64; the last ``C % 8`` columns one
        by one, bit ``c % 8`` of byte ``C // 8`` choosing.  Elements move as bits (a NaN's sign and
        payload too).  Bracketed by V->S / S->V flags (also on ascend950)."""
        tiles = op.tile_ins()
        m, d, a = self.tile(tiles[0]), self.tile(op.outs[0]), self.tile(tiles[1])
        b_src = None if op.SCALAR else self.tile(tiles[2])
        bits, e, u64 = f"u{8 * d.esize}", d.esize, _xdsl_type("u64")
        self.flag("V", "S")
        y = y_word = None
        if op.SCALAR:
            v = self.scalar_operand(op.scalar_ins()[0], d.dtype)
            if _is_num(v):
                y = int(np.asarray(E.scalar_to(v, E.np_dtype(d.dtype))).view(E.np_dtype(bits)))
            else:
                at = self.free_ub(32)
                self.emit("st_ub", d.dtype, addr=at, src=v)
                y = self.emit("ld_ub", bits, dst=self.fresh("s"), addr=at)
            ones = sum(1 << (8 * e * k) for k in range(8 // e))
            y_word = y * ones if _is_num(y) else self.arith("*", self.insert(arith.ExtUIOp(y, u64)), ones, u64)
        rows, r = self.loop("r", 0, d.vr, bound=d.t.rows)
        outer = self.in_body(rows.body)
        row = self.add(m.addr, self.mul(r, m.row_bytes))
        groups = self.div(d.vc, 8)
        cols, k = self.loop("k", 0, groups, bound=d.t.cols // 8)
        inner = self.in_body(cols.body)
        byte = self.insert(arith.ExtUIOp(self.emit("ld_ub", "u8", dst=self.fresh("m"), addr=self.add(row, k)), u64))
        for w in range(e):  # word w: columns 8k + w * 8/e ..
            at = self.mul(k, 8 * e), 8 * w
            x = self.emit("ld_ub", "u64", dst=self.fresh("x"), addr=self.add(self.elem(a, r), *at))
            yw = y_word if b_src is None else \
                self.emit("ld_ub", "u64", dst=self.fresh("y"), addr=self.add(self.elem(b_src, r), *at))
            mask = self._lane_mask(byte, w, e)
            picked = self.arith("^", yw, self.arith("&", self.arith("^", x, yw, u64), mask, u64), u64)
            self.emit("st_ub", "u64", addr=self.add(self.elem(d, r), *at), src=picked)
        self.end_loop(inner)
        tail, c = self.loop("c", self.mul(groups, 8), d.vc, bound=7)
        inner = self.in_body(tail.body)
        byte = self.emit("ld_ub", "u8", dst=self.fresh("m"), addr=self.add(row, groups))
        on = self.insert(arith.CmpiOp(self.value(self.arith("&", self.arith(">>", byte, self.sub(c, self.mul(groups, 8))),
                                                            1), _INDEX), self.value(0, _INDEX), "ne"))
        self._store_selected(on, a, b_src, d, r, c, bits, other=y)
        self.end_loop(inner)
        self.end_loop(outer)
        self.flag("S", "V")

    def _lane_mask(self, byte, w: int, e: int):
        """The u64 whose ``e``-byte lanes are all ones where their bits of the mask ``byte`` (a u64
        register) are 1: lane l of word w is bit ``w * 8/e + l``.  The bits, each copied to its
        lane's low bit by a multiply and a select of bit l of lane l, become the lane's top bit
        by adding ``2^(8e-1) - 1`` (no carry leaves a lane), shifted down and times the lane's
        all-ones."""
        u64, n, width = _xdsl_type("u64"), 8 // e, 8 * e
        sub = byte if n == 8 else self.arith("&", self.arith(">>", byte, w * n, u64) if w else byte, (1 << n) - 1, u64)
        ones = sum(1 << (width * k) for k in range(n))
        x = self.arith("&", self.arith("*", sub, ones, u64), sum(1 << (width * k + k) for k in range(n)), u64)
        low = self.arith("&", self.arith(">>", self.arith("+", x, ((1 << (width - 1)) - 1) * ones, u64), width - 1, u64),
                         ones, u64)
        return self.arith("*", low, (1 << width) - 1, u64)

    def tile_partarg(self, op):
        """TPARTARGMAX/TPARTARGMIN on the scalar unit (vector_isa.md describes no compare into a
        select mask): the covering source pair's values and indices copied to dst over dst's valid
        region outside the other pair's, then over the other pair's region both values ``ld_ub``'d,
        compared (``ogt`` / ``olt``: a NaN takes src1) and the chosen value and index ``st_ub``'d (as
        unsigned bits: a select copies them).  Valid shapes known only at run time: the covering
        pair is src0's when its valid region is dst's (the copies in loops of 0 or 1 trips, as
        TPART*'s), the compared region the sources' common one inside dst's; the golden model checks
        the page's pattern at run time.  Each element is read before its own dst element is written
        (dst may be a source's buffer).  Bracketed by V->S / S->V flags (also on ascend950)."""
        v0, v1, i0, i1 = (self.tile(v) for v in op.ins)
        dv, di = (self.tile(v) for v in op.outs)
        vbits, ibits = f"u{8 * dv.esize}", f"u{8 * di.esize}"
        R, C = dv.vr, dv.vc
        nonempty = self.mul(self.min(R, 1), self.min(C, 1))
        f0 = self.mul(nonempty, self.mul(equal_flag(self, v0.vr, R), equal_flag(self, v0.vc, C)))
        sr, sc = self.min(self.min(v0.vr, v1.vr), R), self.min(self.min(v0.vc, v1.vc), C)
        self.flag("V", "S")
        for (fv, fi), trips in (((v0, i0), f0), ((v1, i1), self.sub(nonempty, f0))):
            if _is_int(trips) and trips == 0:
                continue
            node = None if _is_int(trips) else self.loop("p", 0, trips, bound=1)[0]
            outer = None if node is None else self.in_body(node.body)

            def copy(r, c, pairs=((fv, dv, vbits), (fi, di, ibits))):
                for s, d, bits in pairs:
                    x = self.emit("ld_ub", bits, dst=self.fresh("x"), addr=self.elem(s, r, c))
                    self.emit("st_ub", bits, addr=self.elem(d, r, c), src=x)
            # rows [0, sr) x cols [sc, C) and rows [sr, R) x cols [0, C): the covering pair's
            for rect in ((0, sr, sc, C), (sr, R, 0, C)):
                self._each_element(rect, dv, copy)
            if node is not None:
                self.end_loop(outer)

        def choose(r, c):
            a = self.emit("ld_ub", dv.dtype, dst=self.fresh("a"), addr=self.elem(v0, r, c))
            b = self.emit("ld_ub", dv.dtype, dst=self.fresh("b"), addr=self.elem(v1, r, c))
            take0 = self._compare(a, b, "GT" if op.IS_MAX else "LT", dv.dtype)
            for (s0, s1, d), bits in (((v0, v1, dv), vbits), ((i0, i1, di), ibits)):
                self._store_selected(take0, s0, s1, d, r, c, bits)
        self._each_element((0, sr, 0, sc), dv, choose)
        self.flag("S", "V")

    def _each_element(self, rect, d: TileRef, body):
        """``body(r, c)`` in loops over rows [r0, r1) x cols [c0, c1) of a tile shaped as ``d``
        (nothing for a rectangle known to be empty)."""
        r0, r1, c0, c1 = rect
        if any(_is_int(hi) and _is_int(lo) and hi <= lo for lo, hi in ((r0, r1), (c0, c1))):
            return
        rows, r = self.loop("r", r0, r1, bound=d.t.rows)
        outer = self.in_body(rows.body)
        cols, c = self.loop("c", c0, c1, bound=d.t.cols)
        inner = self.in_body(cols.body)
        body(r, c)
        self.end_loop(inner)
        self.end_loop(outer)

    def tile_scatter(self, op):

        """TSCATTER on the scalar unit, as TScatter.hpp's loop: dst's whole tile zeroed (``st_ub`` 0;
        the header's vector_dup), then per (i, j) of the indices' valid region, row-major,
        ``ld_ub`` the index and src's element and ``st_ub`` it at ``dst + index * sizeof(T)`` (a
        later index overwrites an earlier one).  Bracketed by V->S / S->V flags (also on ascend950)."""
        (s, ix), d = (self.tile(v) for v in op.ins), self.tile(op.outs[0])
        self.flag("V", "S")
        zero, z = self.loop("z", 0, d.t.rows * d.t.cols)
        outer = self.in_body(zero.body)
        self.emit("st_ub", d.dtype, addr=self.add(d.addr, self.mul(z, d.esize)), src=0)
        self.end_loop(outer)
        rows, r = self.loop("r", 0, ix.vr, bound=ix.t.rows)
        outer = self.in_body(rows.body)
        cols, c = self.loop("c", 0, ix.vc, bound=ix.t.cols)
        inner = self.in_body(cols.body)
        k = self.emit("ld_ub", ix.dtype, dst=self.fresh("k"), addr=self.elem(ix, r, c))
        v = self.emit("ld_ub", s.dtype, dst=self.fresh("v"), addr=self.elem(s, r, c))
        self.emit("st_ub", d.dtype, addr=self.add(d.addr, self.mul(k, d.esize)), src=v)
        self.end_loop(inner)
        self.end_loop(outer)
        self.flag("S", "V")

    # -- MGATHER / MSCATTER ---------------------------------------------------------------------------
    def _indexed_table(self, op, data: TileRef):
        """(GM argument, element offset of row 0, row stride, capacity) of MGATHER/MSCATTER's table: its
        leading dims one row dim (TableRows their product: the A2/A3 header's ``Shape[0..3]`` rows
        ``GetStride(DIM_3)`` apart), its last stride 1; the page's layout rules checked."""
        part = self.vals.get(op.table)
        if not isinstance(part, PartRef):
            self.unsupported("the table is not a partition view of a kernel argument")
        if part.view.esize != data.esize:
            self.fail(f"GM element size {part.view.esize} differs from the tile's {data.esize}")
        one = lambda x: _is_int(x) and x == 1  # noqa: E731
        sizes, strides = list(part.sizes), list(part.view.strides)
        if not (one(strides[-1]) or one(sizes[-1])):
            raise _Unsupported("a table whose last stride is not 1")
        rows, stride = 1, sizes[-1]
        for sz, st in reversed([(sz, st) for sz, st in zip(sizes[:-1], strides[:-1]) if not one(sz)]):
            if one(rows):
                rows, stride = sz, st
            elif all(_is_int(x) for x in (sz, st, rows, stride)) and st == rows * stride:
                rows *= sz
            else:
                raise _Unsupported("a table whose leading dims do not collapse into one row stride")
        base = self.add(0, *[self.mul(o, s) for o, s in zip(part.offsets, part.view.strides)])
        C = sizes[-1]
        if not (one(rows) or (_is_int(stride) and _is_int(C))):
            raise _Unsupported("a table of run-time row stride")
        packed = one(rows) or stride == C
        if op.coalesce == "elem" and not packed:
            self.fail(f"{op.FLAT_TABLE_RULE} ({op.PAGE})")
        if op.coalesce == "row" and self.target.name == "ascend950" and not packed:
            self.fail(f"{op.A5_ROWS_RULE} ({op.PAGE})")
        return part.view.arg, base, stride, rows if op.coalesce == "row" else self.mul(rows, C)

    def _index_at(self, ix: TileRef, r, c=0):
        """The index at (r, c) (Row: the r-th of the 1-D index tile) read as uint32, as an ``index``."""
        k = self.emit("ld_ub", ix.dtype, dst=self.fresh("k"), addr=self.elem(ix, r, c))
        return self.arith("&", k, 0xFFFFFFFF)

    def _remap(self, k, cap, mode: str):
        """(the index the access uses, the i1 "it accesses", or None when every index does): the page's
        ``mgather_remap`` / ``mscatter_remap``."""
        if mode == "clamp":
            return self.min(k, self.sub(cap, 1)), None
        if mode == "wrap":
            return self.arith("%", k, cap), None
        if mode == "undefined":
            return k, None
        return k, self.insert(arith.CmpiOp(self.index(k), self.index(cap), "ult"))

    def _when(self, cond):
        """An ``scf.if cond`` with an else region at the insertion point: (the op, the outer point)."""
        node = scf.IfOp(cond, [], Region(Block([scf.YieldOp()])), Region(Block([scf.YieldOp()])))
        node.location = self.location()
        self._insert(node)
        self.mask = None
        return node, self.in_body(node.true_region)

    def tile_indexed(self, op):
        """MGATHER/MSCATTER as the A2/A3 header runs them (MGATHER.md, MSCATTER.md "Pipe /
        Synchronisation Model"), from the scalar unit: the index of each row (Row) or element (Elem)
        ``ld_ub``'d, read as uint32 and remapped by the out-of-bounds mode; a Row of a RowMajor tile
        moves as one DMA (``copy_gm_to_ubuf`` / ``copy_ubuf_to_gm``, MTE3's atomic add for an atomic
        add of a TSTORE atomic type), every other access element by element (``ld_gm``/``st_gm``,
        an atomic as read, ``sadd``/``smax``/``smin``, write).  Zero (gather) writes 0 where the index
        is out of bounds, Skip (scatter) writes nothing.  Bracketed by the header's flag chains.
        ascend950 runs the same (vector_isa.md has no gather or scatter; A5's SIMT launch is not in
        it): the last writer in row-major order wins, which ScatterConflict::Last is."""
        gather = isinstance(op, pto.MGatherOp)
        data, ix = self.tile(op.data), self.tile(op.index)
        arg, base, stride, cap = self._indexed_table(op, data)
        e, R, C = data.esize, data.vr, data.vc
        atomic = "none" if gather else op.atomic
        by_row = op.coalesce == "row" and data.row_major and (
            atomic == "none" or (atomic == "add" and data.dtype in pto.ATOMIC_ADD_DTYPES))
        bits = f"u{8 * e}"  # a plain copy moves the element's bits (a NaN's payload too)
        dma = "MTE2" if gather else "MTE3"
        for p in ("V", "MTE2", "MTE3"):
            self.flag(p, "S")
        rows, r = self.loop("r", 0, R, bound=data.t.rows)
        outer = self.in_body(rows.body)
        if op.coalesce == "row":
            k, on = self._remap(self._index_at(ix, 0, r) if ix.vr == 1 else self._index_at(ix, r), cap, op.oob)
            row = self.add(base, self.mul(k, stride))
        if by_row:
            if on is not None:
                node, around = self._when(on)
            g = GmAddr(arg, self.mul(row, e))
            if gather:
                self.emit("copy_gm_to_ubuf", data.dtype, dst=self.elem(data, r), src=g, len_burst=self.mul(C, e))
            else:
                self.emit("copy_ubuf_to_gm", data.dtype, dst=g, src=self.elem(data, r), len_burst=self.mul(C, e),
                          **({"atomic": "add"} if atomic == "add" else {}))
            if on is not None and gather:  # Zero: the row's elements 0
                self.ip = InsertPoint.before(node.false_region.block.last_op)
                cols, c = self.loop("c", 0, C, bound=data.t.cols)
                inner = self.in_body(cols.body)
                self.emit("st_ub", bits, addr=self.elem(data, r, c), src=0)
                self.end_loop(inner)
            if on is not None:
                self.end_loop(around)
        else:
            cols, c = self.loop("c", 0, C, bound=data.t.cols)
            inner = self.in_body(cols.body)
            if op.coalesce == "elem":
                k, on = self._remap(self._index_at(ix, r, c), cap, op.oob)
                at = self.add(base, k)
            else:
                at = self.add(row, c)
            if on is not None:
                node, around = self._when(on)
            g = GmAddr(arg, self.mul(at, e))
            if gather:
                self.emit("st_ub", bits, addr=self.elem(data, r, c), src=self.emit("ld_gm", bits, dst=self.fresh("v"),
                                                                                  addr=g))
            else:
                v = self.emit("ld_ub", data.dtype if atomic != "none" else bits, dst=self.fresh("v"),
                              addr=self.elem(data, r, c))
                if atomic != "none":
                    old = self.emit("ld_gm", data.dtype, dst=self.fresh("o"), addr=g)
                    v = self.emit({"add": "sadd", "max": "smax", "min": "smin"}[atomic], data.dtype, dst=self.fresh("v"),
                                  src0=old, src1=v)
                self.emit("st_gm", data.dtype if atomic != "none" else bits, addr=g, src=v)
            if on is not None and gather:
                self.ip = InsertPoint.before(node.false_region.block.last_op)
                self.emit("st_ub", bits, addr=self.elem(data, r, c), src=0)
            if on is not None:
                self.end_loop(around)
            self.end_loop(inner)
        self.end_loop(outer)
        if by_row:  # the DMAs drained before V or the other DMA pipe touches what they moved
            self.flag("S", dma)
            for p in ("V", "MTE3" if gather else "MTE2"):
                self.flag(dma, p)
        for p in ("V", "MTE2", "MTE3"):
            if not (by_row and p == dma):
                self.flag("S", p)

    def tile_sort32(self, op):
        """TSORT32 (TSORT32.md): per valid row, ``vbitsort`` of its whole 32-element blocks from src
        into dst (255 blocks a call).  A tail block of t < 32 elements (the tmp form) is copied to free
        UB with its indices, lanes t..31 set by the scalar unit to -inf (the page's padding) and
        0xFFFFFFFF (no real pair sorts after them; the lanes no row's 32-byte copy reaches once, before
        the rows), sorted there, and its first t pairs copied into dst: whole 32-byte blocks of 4 pairs
        by ``copy_ubuf_to_ubuf``, the last t % 4 pairs by the scalar unit.  The tmp is not needed."""
        (s, ix), d = (self.tile(v) for v in op.ins[:2]), self.tile(op.outs[0])
        self._rows_aligned(s, ix, d)
        if not all(_is_int(x) for x in (s.vr, s.vc, ix.vr, ix.vc, d.vr, d.vc)):
            return self._sort32_run_time(op, s, ix, d)
        R, C = s.vr, s.vc
        coef = 8 // s.esize
        err = op.dst_error(R, (d.vr, d.vc))
        if err:
            self.fail(err)
        full, t = divmod(C, pto.SORT_BLOCK)
        if t:
            vals = self.free_ub(128 + 128 + 256)
            keys, pairs = vals + 128, vals + 256
            v_end, k_end = ceil_div(t * s.esize, 32) * 32 // s.esize, ceil_div(t, 8) * 8  # what a copy reaches
            self.pad_sort_block(vals, keys, s, min(v_end, k_end), pto.SORT_BLOCK)
        rows, i = self.loop("i", 0, R)
        outer = self.in_body(rows.body)
        k_row = 0 if ix.vr == 1 else i
        for b0 in range(0, full, REPEAT_MAX):
            self.emit("vbitsort", s.dtype, dst=self.elem(d, i, coef * 32 * b0), src0=self.elem(s, i, 32 * b0),
                      src1=self.elem(ix, k_row, 32 * b0), repeat=min(REPEAT_MAX, full - b0))
        if t:
            c0 = 32 * full
            self.emit("copy_ubuf_to_ubuf", dst=vals, src=self.elem(s, i, c0), len_burst=v_end * s.esize // 32)
            self.emit("copy_ubuf_to_ubuf", dst=keys, src=self.elem(ix, k_row, c0), len_burst=k_end // 8)
            self.pad_sort_block(vals, keys, s, t, max(v_end, k_end))
            self.emit("vbitsort", s.dtype, dst=pairs, src0=vals, src1=keys, repeat=1)
            at = self.elem(d, i, coef * c0)
            if t >= 4:
                self.emit("copy_ubuf_to_ubuf", dst=at, src=pairs, len_burst=t // 4)
            if t % 4:
                self.flag("V", "S")
                words, w = self.loop("w", t // 4 * 8, 2 * t)
                inner = self.in_body(words.body)
                v = self.emit("ld_ub", "ui32", dst=self.fresh("v"), addr=self.add(pairs, self.mul(w, 4)))
                self.emit("st_ub", "ui32", addr=self.add(at, self.mul(w, 4)), src=v)
                self.end_loop(inner)
                self.flag("S", "V")
        self.end_loop(outer)

    def _sort32_run_time(self, op, s: TileRef, ix: TileRef, d: TileRef):
        """TSORT32 with valid shapes known only at run time, as :meth:`tile_sort32`: per valid row,
        ``vbitsort`` of the whole blocks in calls of up to 255 (a loop over the calls), then, with a
        tmp (without one the page needs whole blocks, which the golden model checks), the tail
        block of t = C mod 32 elements in one trip of a loop of min(t, 1): its copies and padding
        reach run-time lanes, its last t % 4 pairs moved by the scalar unit.  A one-row index tile
        (idx valid rows 1) serves every row: its row is ``i * min(rows - 1, 1)``.  dst's valid
        region is checked by the golden model at run time."""
        R, C = s.vr, s.vc
        coef = 8 // s.esize
        full, t = self.div(C, pto.SORT_BLOCK), self.arith("%", C, pto.SORT_BLOCK)
        calls = ceil_div(s.t.cols // pto.SORT_BLOCK, REPEAT_MAX)
        tail = len(op.ins) == 3
        if tail:
            vals = self.free_ub(128 + 128 + 256)
            keys, pairs = vals + 128, vals + 256
            v_end = self.mul(self.ceil_div(self.mul(t, s.esize), 32), 32 // s.esize)
            k_end = self.mul(self.ceil_div(t, 8), 8)
            self.pad_sort_block(vals, keys, s, self.min(v_end, k_end), pto.SORT_BLOCK)
        rows, i = self.loop("i", 0, R, bound=s.t.rows)
        outer = self.in_body(rows.body)
        k_row = self.mul(i, self.min(self.sub(ix.vr, 1), 1))
        node, c = self.loop("b", 0, self.ceil_div(full, REPEAT_MAX), bound=calls)
        inner = self.in_body(node.body)
        b0 = self.mul(c, REPEAT_MAX)
        self.emit("vbitsort", s.dtype, dst=self.elem(d, i, self.mul(b0, coef * 32)), src0=self.elem(s, i, self.mul(b0, 32)),
                  src1=self.elem(ix, k_row, self.mul(b0, 32)), repeat=self.min(self.sub(full, b0), REPEAT_MAX))
        self.end_loop(inner)
        if tail:
            node, _ = self.loop("t", 0, self.min(t, 1), bound=1)
            inner = self.in_body(node.body)
            c0 = self.mul(full, pto.SORT_BLOCK)
            self.emit("copy_ubuf_to_ubuf", dst=vals, src=self.elem(s, i, c0), len_burst=self.div(v_end, 32 // s.esize))
            self.emit("copy_ubuf_to_ubuf", dst=keys, src=self.elem(ix, k_row, c0), len_burst=self.div(k_end, 8))
            self.pad_sort_block(vals, keys, s, t, self.max(v_end, k_end))
            self.emit("vbitsort", s.dtype, dst=pairs, src0=vals, src1=keys, repeat=1)
            at = self.elem(d, i, self.mul(c0, coef))
            quads, _ = self.loop("q", 0, self.min(self.div(t, 4), 1), bound=1)
            body = self.in_body(quads.body)
            self.emit("copy_ubuf_to_ubuf", dst=at, src=pairs, len_burst=self.div(t, 4))
            self.end_loop(body)
            self.flag("V", "S")
            words, w = self.loop("w", self.mul(self.div(t, 4), 8), self.mul(t, 2), bound=6)
            body = self.in_body(words.body)
            v = self.emit("ld_ub", "ui32", dst=self.fresh("v"), addr=self.add(pairs, self.mul(w, 4)))
            self.emit("st_ub", "ui32", addr=self.add(at, self.mul(w, 4)), src=v)
            self.end_loop(body)
            self.flag("S", "V")
            self.end_loop(inner)
        self.end_loop(outer)

    def pad_sort_block(self, vals, keys, s: TileRef, lo, hi):
        """Scalar stores of the sort padding into lanes lo..hi: -inf into the values, 0xFFFFFFFF into
        the indices, bracketed by V->S / S->V flags."""
        if _is_int(lo) and _is_int(hi) and lo >= hi:
            return
        self.flag("V", "S")
        lanes, j = self.loop("j", lo, hi, bound=pto.SORT_BLOCK)
        inner = self.in_body(lanes.body)
        self.emit("st_ub", s.dtype, addr=self.add(vals, self.mul(j, s.esize)), src=float("-inf"))
        self.emit("st_ub", "ui32", addr=self.add(keys, self.mul(j, 4)), src=0xFFFFFFFF)
        self.end_loop(inner)
        self.flag("S", "V")

    def tile_mrgsort(self, op):
        """TMRGSORT: one ``vmrgsort4`` per merge, straight into dst (the tmp tile, the header's staging
        buffer before a UB copy, is not needed): the multi-list form merges its 2-4 lists once (the
        unused list slots repeat src0 with 0 pairs); the single-list form each group of 4 blocks of
        blockLen elements, a loop over the groups."""
        d = self.tile(op.outs[0])
        coef = 8 // d.esize
        if op.single:
            s = self.tile(op.ins[0])
            block = self._static_int(op.ins[1])
            if block is None:
                self.unsupported("a blockLen known only at run time")
            err = op.merge_error([s.vc], d.vc, block) if _is_int(s.vc) and _is_int(d.vc) else None
            if err:
                self.fail(err)
            groups, g = self.loop("g", 0, self.div(s.vc, 4 * block), bound=s.t.cols // (4 * block))
            outer = self.in_body(groups.body)
            c0 = self.mul(g, 4 * block)
            self.emit("vmrgsort4", s.dtype, dst=self.elem(d, 0, c0), n0=block // coef, n1=block // coef,
                      n2=block // coef, n3=block // coef,
                      **{f"src{k}": self.elem(s, 0, self.add(c0, k * block)) for k in range(4)})
            self.end_loop(outer)
            return
        srcs = [self.tile(v) for v in op.ins[:-1]]
        static = all(_is_int(x) for x in (d.vc, *(t.vc for t in srcs)))
        err = op.merge_error([t.vc for t in srcs], d.vc) if static else None  # (else the golden model's, at run time)
        if err:
            self.fail(err)
        ns = [self.div(t.vc, coef) for t in srcs] + [0] * (4 - len(srcs))
        if static and not sum(ns):
            return
        addrs = [t.addr for t in srcs] + [srcs[0].addr] * (4 - len(srcs))
        self.emit("vmrgsort4", d.dtype, dst=d.addr, exhausted="yes" if op.exhausted else "no",
                  **{f"src{k}": x for k, x in enumerate(addrs)}, **{f"n{k}": n for k, n in enumerate(ns)})

    def tile_concat(self, op):
        """TCONCAT: two strided copy_ubuf_to_ubuf, src1's to dst's column C0 (a whole 32-byte block:
        the copies are block-granular, vector_isa.md §1.10).  When C0 is not whole blocks or a valid
        shape is known only at run time (:func:`concat_on_scalar_unit`; ascend950 runs this rule
        then too), the scalar unit moves each element (``ld_ub``, ``st_ub``), bracketed by V->S /
        S->V flags as TTRANS."""
        a, b = (self.tile(v) for v in op.ins)
        d = self.tile(op.outs[0])
        if not concat_on_scalar_unit(op):
            self.copy_tile(a, TileRef(d.addr, d.t, d.vr, a.vc))
            self.copy_tile(b, TileRef(self.add(d.addr, a.vc * d.esize), d.t, d.vr, b.vc))
            return
        self.flag("V", "S")
        for src, c0 in ((a, 0), (b, a.vc)):
            rows, i = self.loop("i", 0, d.vr, bound=d.t.rows)
            outer = self.in_body(rows.body)
            cols, j = self.loop("j", 0, src.vc, bound=src.t.cols)
            inner = self.in_body(cols.body)
            reg = self.emit("ld_ub", src.dtype, dst=self.fresh("s"), addr=self.elem(src, i, j))
            self.emit("st_ub", d.dtype, addr=self.elem(d, i, self.add(j, c0)), src=reg)
            self.end_loop(inner)
            self.end_loop(outer)
        self.flag("S", "V")

    def tile_fillpad(self, op):
        """TFILLPAD* (TFILLPAD.md): src's valid region VR x VC copied to dst (block-granular
        copy_ubuf_to_ubuf, none when src is dst), then ``vector_dup`` of the PadValue's bits over the
        rest of dst's tile: columns VC.. of rows 0..VR (a lane-masked head chunk), every column of
        rows VR..; 1-byte elements are dup'ed in pairs (u16), an odd VC's byte by the scalar unit."""
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        if not (s.row_major and d.row_major):
            self.unsupported("a ColMajor tile")
        self._rows_aligned(s, d)
        R, C = d.t.rows, d.t.cols
        VR, VC = s.vr, s.vc
        bits = E.pad_bits(d.dtype, d.t.pad.data) % (1 << 8 * d.esize)
        word = 2 if d.esize == 1 else d.esize
        if d.esize == 1:
            bits *= 0x101
        if not (_is_int(VR) and _is_int(VC)):
            return self._fillpad_run_time(op, s, d, bits, word)
        if op.ins[0] is not op.outs[0]:
            self.copy_tile(s, TileRef(d.addr, d.t, VR, VC))
        if d.esize == 1 and VC % 2 and VR:
            self.flag("V", "S")
            rows, r = self.loop("r", 0, VR)
            outer = self.in_body(rows.body)
            self.emit("st_ub", d.dtype, addr=self.elem(d, r, VC), src=E.pad_bits(d.dtype, d.t.pad.data))
            self.end_loop(outer)
            self.flag("S", "V")
        dup = f"u{8 * word}"
        per_row = C * d.esize // word
        right = Opnd(d.addr, d.row_bytes, 256, word)
        self.vec("vector_dup", dup, {"dst": right}, VR, per_row, col_lo=ceil_div(VC * d.esize, word),
                 extra={"scalar": bits})
        below = Opnd(self.add(d.addr, VR * d.row_bytes), d.row_bytes, 256, word)
        self.vec("vector_dup", dup, {"dst": below}, R - VR, per_row, extra={"scalar": bits})

    def _fillpad_run_time(self, op, s: TileRef, d: TileRef, bits: int, word: int):
        """src's valid rows/cols known only at run time: per valid row, dst's row ``vector_dup``'ed
        with the PadValue's bits, then src's first VC columns copied over it bit for bit (``vor`` of
        src's row with itself, count mode: exactly VC lanes; src's row first saved to a scratch row
        when src is dst's storage); rows VR.. of dst dup'ed whole."""
        e = d.esize
        dup, per_row = f"u{8 * word}", d.t.cols * e // word
        shared = op.INPLACE or op.ins[0] is op.outs[0] or (_is_int(s.addr) and s.addr == d.addr)
        with self.reserved_ub(s.row_bytes) as scratch:
            rows, r = self.loop("r", 0, s.vr, bound=s.t.rows)
            inner = self.in_body(rows.body)
            src_row = self.elem(s, r, 0)
            if shared:
                self.emit("copy_ubuf_to_ubuf", dst=scratch, src=src_row, n_burst=1, len_burst=s.row_bytes // 32)
                src_row = scratch
            dst_row = self.elem(d, r, 0)
            self.vec("vector_dup", dup, {"dst": Opnd(dst_row, d.row_bytes, 256, word)}, 1, per_row,
                     extra={"scalar": bits})
            o = Opnd(src_row, s.row_bytes, 256, e)
            self.vec("vor", f"u{8 * e}", {"dst": Opnd(dst_row, d.row_bytes, 256, e), "src0": o, "src1": o}, 1, s.vc)
            self.end_loop(inner)
        below = Opnd(self.elem(d, s.vr, 0), d.row_bytes, 256, word)
        self.vec("vector_dup", dup, {"dst": below}, self.sub(d.t.rows, s.vr), per_row, extra={"scalar": bits},
                 row_bound=d.t.rows)

    def tile_interleave(self, op):
        """TINTERLEAVE / TDEINTERLEAVE (TINTERLEAVE.md, TDEINTERLEAVE.md; A5 only: ascend950 runs this
        rule, as for TTRANS): the scalar unit moves each element (``ld_ub``, ``st_ub``), bracketed by
        V->S / S->V flags; per valid row i and m < H (half the valid cols) the pages' moves
        ``dst[i, da*m + db] = src[i, sa*m + sb]``."""
        srcs = [self.tile(v) for v in op.ins]
        d0, d1 = (self.tile(v) for v in op.outs)
        R, H = srcs[0].vr, self.div(srcs[0].vc, 2)
        a, b = srcs[0], srcs[-1]
        if op.single:
            moves = [(d0, 1, 0, a, 2, 0), (d1, 1, 0, a, 2, 1)]
        elif op.DEINTERLEAVE:
            moves = [(d0, 1, 0, a, 2, 0), (d1, 1, 0, a, 2, 1), (d0, 1, H, b, 2, 0), (d1, 1, H, b, 2, 1)]
        else:
            moves = [(d0, 2, 0, a, 1, 0), (d0, 2, 1, b, 1, 0), (d1, 2, 0, a, 1, H), (d1, 2, 1, b, 1, H)]
        self.flag("V", "S")
        rows, i = self.loop("i", 0, R, bound=srcs[0].t.rows)
        outer = self.in_body(rows.body)
        cols, m = self.loop("m", 0, H, bound=srcs[0].t.cols)
        inner = self.in_body(cols.body)
        for d, da, db, s, sa, sb in moves:
            reg = self.emit("ld_ub", s.dtype, dst=self.fresh("s"), addr=self.elem(s, i, self.add(self.mul(m, sa), sb)))
            self.emit("st_ub", d.dtype, addr=self.elem(d, i, self.add(self.mul(m, da), db)), src=reg)
        self.end_loop(inner)
        self.end_loop(outer)
        self.flag("S", "V")

    def tile_dequant(self, op):
        """TDEQUANT (TDEQUANT.md): src converted into dst (``vconv``; i8 through an f16 tmp in free UB,
        both steps exact), then per valid row, the scalar unit reading the row's offset and scale:
        ``vsub`` of the offset (``vector_dup``'ed into a free-UB block), ``vmuls`` by the scale; each
        rounded to f32, as the page's vsub then vmul."""
        s, scale, offset = (self.tile(v) for v in op.ins)
        d = self.tile(op.outs[0])
        self._rows_aligned(s, d)
        R, C = d.vr, d.vc
        if (_is_int(R) and R <= 0) or (_is_int(C) and C <= 0):
            return
        staged = s.esize == 1
        buf = self.free_ub(256 + (s.t.rows * s.t.cols * 2 if staged else 0))
        if staged:
            half = TileRef(buf + 256, pto.TileBufType(_xdsl_type("f16"), [s.t.rows, s.t.cols]), R, C)
            self.vec("vconv", "f16", {"dst": self.opnd(half, 128), "src": self.opnd(s, 128)}, R, C, lanes=128,
                     extra={"src_dtype": s.dtype, "round": "r"})
            s = half
        self.vec("vconv", "f32", {"dst": self.opnd(d, 64), "src": self.opnd(s, 64)}, R, C, lanes=64,
                 extra={"src_dtype": s.dtype, "round": "r"})
        self.flag("V", "S")
        rows, r = self.loop("r", 0, R, bound=d.t.rows)
        outer = self.in_body(rows.body)
        off = self.emit("ld_ub", "f32", dst=self.fresh("s"), addr=self.elem(offset, r, 0))
        mul = self.emit("ld_ub", "f32", dst=self.fresh("s"), addr=self.elem(scale, r, 0))
        self.set_mask(FULL)
        self.emit("vector_dup", "f32", dst=buf, scalar=off, repeat=1)
        row = Opnd(self.elem(d, r, 0), d.row_bytes, 256, 4)
        self.vec("vsub", "f32", {"dst": row, "src0": row, "src1": Opnd(buf, 0, 0, 4, blk=0)}, 1, C)
        self.vec("vmuls", "f32", {"dst": row, "src": row}, 1, C, extra={"scalar": mul})
        self.end_loop(outer)
        self.flag("S", "V")

    def tile_reluconv(self, op):
        """TADDRELUCONV / TSUBRELUCONV (TADDReluConv.md) and TADDDEQRELU (TAddDeqRelu.md) as the
        pages' steps (the A2A3 header's fused ``vaddreluconv_*`` is not in vector_isa.md), each a
        repeat instruction over the valid region into a tmp (TADDDEQRELU: its i32 tmp operand, the
        sum converted to f32 in place, then ``vmuls`` by 2^-17, deqScale and 2^17; the others: free
        UB shaped like src): ``vadd``/``vsub``, ``vrelu``, the saturation as ``vmins`` by dst's
        largest value (nothing is below 0 after the ReLU; a NaN stays a NaN), ``vconv`` to dst
        (nearest even; float -> int maps a NaN to 0)."""
        a, b = self.tile(op.ins[0]), self.tile(op.ins[1])
        d = self.tile(op.outs[0])
        self._rows_aligned(a, b, d, rows=d.vr)
        deq = op.FAMILY == "deqrelu"
        tmp = self.tile(op.ins[3]) if deq else TileRef(self.free_ub(a.nbytes), a.t, a.vr, a.vc)
        R, C = d.vr, d.vc
        L = 256 // a.esize
        t = self.opnd(tmp, L)
        self.vec("vsub" if type(op).A2A3_VOP == "vsub" else "vadd", a.dtype,
                 {"dst": t, "src0": self.opnd(a, L), "src1": self.opnd(b, L)}, R, C, row_bound=d.t.rows)
        work = a.dtype
        if deq:
            work = "f32"
            self.vec("vconv", work, {"dst": t, "src": t}, R, C, lanes=L, extra={"src_dtype": a.dtype, "round": "r"})
            for k in (2.0 ** -E.DEQ_SCALE_SHIFT, self.scalar_operand(op.ins[2], work), 2.0 ** E.DEQ_SCALE_SHIFT):
                self.vec("vmuls", work, {"dst": t, "src": t}, R, C, extra={"scalar": k})
        self.vec("vrelu", work, {"dst": t, "src": t}, R, C)
        npd = E.np_dtype(d.dtype)
        top = E.max_finite(npd) if E.is_float_dtype(npd) else E.int_range(npd)[1]
        self.vec("vmins", work, {"dst": t, "src": t}, R, C, extra={"scalar": top})
        wide = 256 // max(DTYPE_SIZES[work], d.esize)
        self.vec("vconv", d.dtype, {"dst": self.opnd(d, wide), "src": self.opnd(tmp, wide)},
                 R, C, lanes=wide, extra={"src_dtype": work, "round": "r"})

    def tile_cvt(self, op):
        s, d = self.tile(op.tile_ins()[0]), self.tile(op.outs[0])
        mode_text = _attr_text(op, "rmode", "round_mode", "roundMode") or "CAST_RINT"
        mode_text = mode_text.split()[-1]
        if mode_text.upper() not in _ROUND:
            self.unsupported(f"round mode '{mode_text}'")
        rnd = _ROUND[mode_text.upper()]
        sat = _attr_text(op, "sat_mode", "saturation_mode", "satMode")
        fs, fd = E.is_float_dtype(E.np_dtype(s.dtype)), E.is_float_dtype(E.np_dtype(d.dtype))
        bounds = saturation_bounds(s.dtype, d.dtype) if sat is not None and "ON" in sat.upper() else None
        if bounds is not None:
            # int -> int with saturation: clamp in the source type (vmaxs, vmins into a free-UB tmp
            # shaped like src), then the wrapping conversion of the clamped values is exact
            if s.esize == 1:
                self.unsupported("a saturating conversion from 8-bit integers (a2a3 runs b8 data as b16, "
                                 "vector_isa.md §1.4: no 8-bit vmaxs/vmins)")
            self._rows_aligned(s, d, rows=d.vr)
            tmp = TileRef(self.free_ub(s.nbytes), s.t, s.vr, s.vc)
            L = 256 // s.esize
            self.vec("vmaxs", s.dtype, {"dst": self.opnd(tmp, L), "src": self.opnd(s, L)}, d.vr, d.vc,
                     extra={"scalar": bounds[0]})
            self.vec("vmins", s.dtype, {"dst": self.opnd(tmp, L), "src": self.opnd(tmp, L)}, d.vr, d.vc,
                     extra={"scalar": bounds[1]})
            s = tmp
        if s.dtype == d.dtype or (not fs and not fd and s.esize == d.esize):
            self.copy_tile(s, d)  # same bits (int -> int of one size wraps to the same bits)
            return
        self._rows_aligned(s, d, rows=d.vr)
        L = 256 // max(s.esize, d.esize)
        self.vec("vconv", d.dtype, {"dst": self.opnd(d, L), "src": self.opnd(s, L)}, d.vr, d.vc, lanes=L,
                 extra={"src_dtype": s.dtype, "round": rnd})

    # -- GM <-> UB --------------------------------------------------------------------------------------
    def _gm_runs(self, part: PartRef, t: TileRef):
        """How a tload/tstore moves data: (copies, n_burst, elements per burst, GM element stride
        between bursts, UB byte stride between bursts); ``copies`` lists (GM element offset, UB
        byte address) of each copy instruction (several when the partition's leading
        dimensions do not collapse into one row stride)."""
        view = part.view
        if view.esize != t.esize:
            self.fail(f"GM element size {view.esize} differs from the tile's {t.esize}")
        if t.t.slayout.data != "none_box":
            raise _Unsupported(f"a boxed vec tile (slayout={t.t.slayout.data}, a fractal layout) from or to a GM view: "
                               "no semantics: pto-isa moves an NZ vec tile only with an NZ GlobalTensor whose last two "
                               "dims are 16 rows of 32 bytes (static_asserts of pto-isa's tload_common.hpp: a2a3 'the "
                               "last 2 dim must be static and satisfy [16, 32 / sizeof(DataType)]', a5 'staticShape[3][4] "
                               "must be satisfied with NZ format require'; another layout: 'Src and dst layout must be "
                               "same'); ptoc's GM views are ND or DN, and PTOAS makes a 2-D "
                               "GM memref, even one marked nz, a 5-D 1x1x1xRxC GlobalTensor (PTOToEmitC.cpp)")
        if len(part.offsets) != len(view.strides) or len(part.sizes) != len(view.strides):
            self.fail("the partition's rank differs from the tensor view's")
        base = self.add(0, *[self.mul(o, s) for o, s in zip(part.offsets, view.strides)])
        sizes, strides = list(part.sizes), list(view.strides)
        R, C = t.vr, t.vc
        one = lambda x: _is_int(x) and x == 1  # noqa: E731
        if not t.row_major and not one(C):
            # a DN tile: its columns are contiguous in UB, and must be in GM (dim -2 stride 1)
            if len(sizes) < 2 or not one(strides[-2]):
                raise _Unsupported("a ColMajor tile needs a GM view whose row stride is 1 (a DN view)")
            if t.t.rows * t.esize % 32:
                raise _Unsupported("a ColMajor tile whose column is not a multiple of 32 bytes")
            return [(base, t.addr)], C, R, strides[-1], t.t.rows * t.esize
        lead = [(sz, st) for sz, st in zip(sizes[:-1], strides[:-1]) if not one(sz)]
        if not t.row_major:  # an R x 1 column: R contiguous elements in UB
            if not lead or (len(lead) == 1 and one(lead[0][1])):
                return [(base, t.addr)], 1, R, 0, 0
            raise _Unsupported("a ColMajor column loaded from GM elements that are not contiguous")
        if not one(strides[-1]) and not one(C):
            raise _Unsupported("a RowMajor tile needs a GM view whose last stride is 1")
        merged = []
        for sz, st in lead:
            prev = merged[-1] if merged else None
            if prev and all(_is_int(x) for x in (sz, st, *prev)) and prev[1] == sz * st:
                merged[-1] = (prev[0] * sz, st)
            else:
                merged.append((sz, st))
        if not merged:
            return [(base, t.addr)], 1, C, 0, t.row_bytes
        self._rows_aligned(t)
        inner_n, inner_s = merged[-1]
        outer = merged[:-1]
        if any(not _is_int(sz) for sz, _ in outer):
            # run-time leading dims: a loop nest (closed by _transfer), one copy per index in C order
            flat, g = 0, base
            for sz, st in outer:
                node, i = self.loop("p", 0, sz)
                self._gm_loops.append(self.in_body(node.body))
                flat, g = self.add(self.mul(flat, sz), i), self.add(g, self.mul(i, st))
            return [(g, self.add(t.addr, self.mul(flat, self.mul(inner_n, t.row_bytes))))], inner_n, C, inner_s, t.row_bytes
        copies = []
        for flat in range(math.prod(sz for sz, _ in outer)):
            idx, rem = [], flat
            for sz, _ in reversed(outer):
                idx.append(rem % sz)
                rem //= sz
            idx.reverse()
            g = self.add(base, *[self.mul(i, st) for i, (_, st) in zip(idx, outer)])
            copies.append((g, self.add(t.addr, self.mul(flat, self.mul(inner_n, t.row_bytes)))))
        return copies, inner_n, C, inner_s, t.row_bytes

    def tile_print(self, op):
        t = self.tile(op.ins[0])
        rs, cs = (t.t.cols, 1) if t.row_major else (1, t.t.rows)
        self.emit("print_ub", t.dtype, src=t.addr, rows=t.vr, cols=t.vc, row_stride=rs, col_stride=cs)

    def tile_load(self, op):
        if lower_cube.is_cube_op(op):
            return lower_cube.lower_cube_op(self, op)
        part = self.vals.get(op.ins[0])
        if not isinstance(part, PartRef):
            self.unsupported("the source is not a partition view of a kernel argument")
        t = self.tile(op.outs[0])
        self._transfer(part, t, load=True)

    def tile_store(self, op):
        if lower_cube.is_cube_op(op):
            return lower_cube.lower_cube_op(self, op)
        t = self.tile(op.ins[0])
        target = op.outs[0] if op.outs else (op.ins[1] if len(op.ins) > 1 else None)
        part = self.vals.get(target) if target is not None else None
        if not isinstance(part, PartRef):
            self.unsupported("the destination is not a partition view of a kernel argument")
        self._transfer(part, t, load=False, atomic=op.atomic_add)

    def _transfer(self, part: PartRef, t: TileRef, load: bool, atomic: bool = False):
        R, C = t.vr, t.vc
        if _is_int(R) and _is_int(C) and (R <= 0 or C <= 0):
            return
        self._gm_loops: list = []
        runs, n, per, gstride, ustride = self._gm_runs(part, t)
        e = t.esize
        length = self.mul(per, e)
        ublocks = self.ceil_div(length, 32)
        gap_g = self.mul(self.sub(gstride, per), e) if not (_is_int(n) and n == 1) else 0
        gap_u = self.sub(self.div(ustride, 32), ublocks) if not (_is_int(n) and n == 1) else 0
        if _is_int(gap_g) and gap_g < 0:
            raise _Unsupported("GM rows that overlap (row stride smaller than the row)")
        pad = {}
        if load and t.t.pad.data and t.row_major:
            epb = 32 // e
            rp = (t.t.cols - C) % epb if _is_int(C) else 0
            if rp:
                pad = {"right_pad": rp, "pad_value": _py_number(E.fill_value(E.np_dtype(t.dtype), t.t.pad.data))}
        for gm_off, ub in runs:
            chunks = [(0, n)] if not _is_int(n) else [(k, min(N_BURST_MAX, n - k)) for k in range(0, n, N_BURST_MAX)]
            for k0, nb in chunks:
                g = GmAddr(part.view.arg, self.mul(self.add(gm_off, self.mul(k0, gstride)), e))
                u = self.add(ub, self.mul(k0, ustride))
                if load:
                    self.emit("copy_gm_to_ubuf", t.dtype, dst=u, src=g, n_burst=nb, len_burst=length,
                              src_gap=gap_g, dst_gap=gap_u, **pad)
                else:
                    self.emit("copy_ubuf_to_gm", t.dtype, dst=g, src=u, n_burst=nb, len_burst=length,
                              src_gap=gap_u, dst_gap=gap_g, **({"atomic": "add"} if atomic else {}))
        for outer in reversed(self._gm_loops):
            self.end_loop(outer)

    # -- reductions ---------------------------------------------------------------------------------
    def _tmp_rows(self, op, row_bytes: int, rows: int, extra: int = 0, multiple: int = 1):
        """(address, row stride, rows per pass) of a fold buffer with ``row_bytes`` per row: the op's
        tmp operand when it is large enough, else free UB."""
        tmp = op.ins[1] if len(op.ins) > 1 and isinstance(op.ins[1].type, pto.TileLikeType) else None
        if tmp is not None and not extra:
            t = self.tile(tmp)
            if t.row_major and t.row_bytes % 32 == 0 and t.row_bytes >= row_bytes and t.t.rows >= rows \
                    and t.row_bytes // 32 <= REPEAT_MAX:
                return t.addr, t.row_bytes, min(rows, REPEAT_MAX)
        addr, k = self.free_rows(row_bytes, rows, extra, multiple=multiple)
        return addr, row_bytes, k

    def _dst_column(self, d: TileRef):
        """(element stride of dst[i, 0] in elements)."""
        if not d.row_major:
            return 1
        return d.t.cols

    def red(self, opcode, dtype, dst, dst_rep, src, src_row, rows, C, extra_src_blocks=0, **extra):
        """One whole-repeat reduction per row, rows in chunks of 255 (mask: first C lanes).
        ``order="value_index"`` (vcmax/vcmin): dst_rep counts (value, index) pairs."""
        e = DTYPE_SIZES[dtype]
        L = 256 // e
        unit = 2 * e if extra.get("order") == "value_index" else e
        self.set_mask(self.mask_lanes(0, C, L))
        if src_row // 32 > REPEAT_MAX or dst_rep > 65535:
            node, r = self.loop("r", 0, rows)
            outer = self.in_body(node.body)
            self.emit(opcode, dtype, dst=self.add(dst, self.mul(r, dst_rep * unit)), src=self.add(src, self.mul(r, src_row)),
                      repeat=1, src_blk_stride=1, dst_rep_stride=dst_rep, src_rep_stride=8, **extra)
            self.end_loop(outer)
            return
        for r0 in range(0, rows, REPEAT_MAX):
            n = min(REPEAT_MAX, rows - r0)
            self.emit(opcode, dtype, dst=self.add(dst, r0 * dst_rep * unit), src=self.add(src, r0 * src_row), repeat=n,
                      src_blk_stride=1, dst_rep_stride=dst_rep, src_rep_stride=src_row // 32, **extra)

    def fold_chunks(self, vop, dtype, T, t_row, S, s_row, rows, C):
        """tmp[:, 0:L] = (c0 OP c1) OP tail OP c2 OP ... (TRowReduceOps.hpp order)."""
        e = DTYPE_SIZES[dtype]
        L = 256 // e
        full, rem = divmod(C, L)
        t_o = Opnd(T, t_row, 0, e)
        if full >= 2:
            self.vec(vop, dtype, {"dst": t_o, "src0": Opnd(S, s_row, 0, e), "src1": Opnd(self.add(S, 256), s_row, 0, e)},
                     rows, L, flat_ok=False)
        else:
            self.emit("copy_ubuf_to_ubuf", dst=T, src=S, n_burst=rows, len_burst=8, src_gap=s_row // 32 - 8,
                      dst_gap=t_row // 32 - 8)
        if rem:
            self.vec(vop, dtype, {"dst": t_o, "src0": t_o, "src1": Opnd(self.add(S, full * 256), s_row, 0, e)},
                     rows, rem, flat_ok=False)
        for k in range(2, full):
            self.vec(vop, dtype, {"dst": t_o, "src0": t_o, "src1": Opnd(self.add(S, k * 256), s_row, 0, e)},
                     rows, L, flat_ok=False)

    def padded_rows(self, s: TileRef, R, C, fill, fold: tuple[str, str], extra_bytes: int, body):
        """Valid cols C known only at run time: per valid row r (R may be a run-time count too) src's
        first C columns are ``fold``ed (opcode, dtype; count mode: exactly C lanes) into a scratch row
        of src's cols rounded up to whole 256-byte repeats, first filled with ``fill``; then
        ``body(row, r, spare)`` reduces that static-width row (``spare``: ``extra_bytes`` of free UB
        after it).  Nothing runs when C is 0, as for a static empty region."""
        e = s.esize
        width = ceil_div(s.t.cols * e, 256) * 256 // e
        L = 256 // e
        with self.reserved_ub(width * e + extra_bytes) as buf:
            row = TileRef(buf, pto.TileBufType(s.t.element_type, [1, width]), 1, width)
            guard, _ = self.loop("z", 0, self.min(C, 1), bound=1)
            outer = self.in_body(guard.body)
            rows, r = self.loop("r", 0, R, bound=s.t.rows)
            inner = self.in_body(rows.body)
            self.vec("vector_dup", s.dtype, {"dst": self.opnd(row, L)}, 1, width, extra={"scalar": fill})
            opcode, dtype = fold
            self.vec(opcode, dtype, {"dst": self.opnd(row, L), "src0": self.opnd(row, L),
                                     "src1": Opnd(self.elem(s, r, 0), s.row_bytes, 256, e)}, 1, C)
            body(row, r, buf + width * e)
            self.end_loop(inner)
            self.end_loop(outer)

    def tile_rowreduce(self, op):
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        if op.FAMILY == "rowprod":
            return self.row_prod(s, d)
        self._rows_aligned(s, rows=s.vr)
        R, C = s.vr, s.vc
        if not _is_int(C):
            # identity lanes change no result: x + -0.0 is x (±0 included), max/min with ∓inf or the
            # integer extremes is the other operand (a NaN wins, as everywhere)
            kind = {"vcadd": "sum", "vcmax": "max", "vcmin": "min"}[type(op).A2A3_VOP]
            npd = E.np_dtype(s.dtype)
            if E.is_float_dtype(npd):
                fill = {"sum": -0.0, "max": -math.inf, "min": math.inf}[kind]
            else:
                lo, hi = E.int_range(npd)
                fill = {"sum": 0, "max": lo, "min": hi}[kind]
            vop = {"sum": "vadd", "max": "vmax", "min": "vmin"}[kind]
            self.padded_rows(s, R, C, fill, (vop, s.dtype), 0, lambda row, r, _: self._rowreduce(
                op, row, TileRef(self.elem(d, r, 0), d.t, 1, 1), 1, row.vc))
            return
        if not _is_int(R) and _is_int(C):  # run-time rows: the one-row reduction, row by row
            node, r = self.loop("rr", 0, R, bound=s.t.rows)
            outer = self.in_body(node.body)
            self._rowreduce(op, TileRef(self.elem(s, r, 0), s.t, 1, C), TileRef(self.elem(d, r, 0), d.t, 1, 1), 1, C)
            self.end_loop(outer)
            return
        self._rowreduce(op, s, d, R, C)  # (dst's valid rows, run-time or not, are src's: the golden model checks)

    def _rowreduce(self, op, s: TileRef, d: TileRef, R: int, C: int):
        if R <= 0 or C <= 0:
            return
        dtype = s.dtype
        e = s.esize
        kind = {"vcadd": "sum", "vcmax": "max", "vcmin": "min"}[type(op).A2A3_VOP]
        vop = {"sum": "vadd", "max": "vmax", "min": "vmin"}[kind]
        red = {"sum": "vcadd", "max": "vcmax", "min": "vcmin"}[kind]
        dstride = self._dst_column(d)
        L = 256 // e
        if dtype == "f16" and kind == "sum":
            return self.rowsum_f16_via_f32(op, s, d, R, C, dstride)
        if E.is_float_dtype(E.np_dtype(dtype)):
            if C <= L:
                self.red(red, dtype, d.addr, dstride, s.addr, s.row_bytes, R, C)
                return
            T, t_row, k = self._tmp_rows(op, 256, R)
            for p in range(0, R, k):
                n = min(k, R - p)
                S = self.add(s.addr, p * s.row_bytes)
                self.fold_chunks(vop, dtype, T, t_row, S, s.row_bytes, n, C)
                self.red(red, dtype, self.add(d.addr, p * dstride * e), dstride, T, t_row, n, L)
            return
        # integers: fold to one repeat, then one block, then the scalar unit folds the lanes
        epb = 32 // e
        T, t_row, k = self._tmp_rows(op, 256, R)
        init = {"sum": 0, "max": E.int_range(E.np_dtype(dtype))[0], "min": E.int_range(E.np_dtype(dtype))[1]}[kind]
        salu = {"sum": "sadd", "max": "smax", "min": "smin"}[kind]
        t_o = Opnd(T, t_row, 0, e)
        for p in range(0, R, k):
            n = min(k, R - p)
            S = self.add(s.addr, p * s.row_bytes)
            if C <= L:
                self.vec("vector_dup", dtype, {"dst": t_o}, n, L, extra={"scalar": init}, flat_ok=False)
                self.vec(vop, dtype, {"dst": t_o, "src0": t_o, "src1": Opnd(S, s.row_bytes, 0, e)}, n, C, flat_ok=False)
            else:
                self.fold_chunks(vop, dtype, T, t_row, S, s.row_bytes, n, C)
            for half in (4, 2, 1):
                self.vec(vop, dtype, {"dst": t_o, "src0": t_o, "src1": Opnd(self.add(T, half * 32), t_row, 0, e)},
                         n, half * epb, flat_ok=False)
            lanes = min(C, epb)
            self.flag("V", "S")
            node, r = self.loop("r", 0, n)
            outer = self.in_body(node.body)
            a, b = self.fresh("a"), self.fresh("b")
            row = self.add(T, self.mul(r, t_row))
            acc = self.emit("ld_ub", dtype, dst=a, addr=row)
            for lane in range(1, lanes):
                tmp = self.emit("ld_ub", dtype, dst=b, addr=self.add(row, lane * e))
                acc = self.emit(salu, dtype, dst=a, src0=acc, src1=tmp)
            self.emit("st_ub", dtype, addr=self.elem(d, self.add(r, p), 0), src=acc)
            self.end_loop(outer)
            self.flag("S", "V")

    def tile_argreduce(self, op):
        """TROWARGMAX/MIN, TCOLARGMAX/MIN: the index of the first extreme element (its NaN and ±0
        order: runtime/elementwise.py)."""
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        self._rows_aligned(s, rows=s.vr)
        is_max = op.FN == "reduce_argmax"
        if op.AXIS == 0:
            return self.arg_cols(s, d, is_max)
        if _is_int(s.vr) and _is_int(s.vc):
            return self.arg_rows(s, d, is_max)
        # run-time valid shapes: row by row, a row of run-time cols padded with -inf (argmax) / +inf
        # (argmin), which never comes first: a valid element equal to it has the smaller index
        self.padded_rows(s, s.vr, s.vc, -math.inf if is_max else math.inf, ("vmax" if is_max else "vmin", s.dtype),
                         0, lambda row, r, _: self.arg_rows(row, TileRef(self.elem(d, r, 0), d.t, 1, 1), is_max))

    def arg_rows(self, s: TileRef, d: TileRef, is_max: bool):
        """Per 256 B chunk of each row, ``vcmax``/``vcmin`` in VALUE_INDEX order (the A2A3
        TRowReduceIdx path, vector_isa.md §1.6): (value, first lane holding it) pairs in a
        scratch row.  More than one chunk: also the chunks' values (ONLY_VALUE) side by side,
        and one more VALUE_INDEX reduction of those gives the first chunk k holding the row's
        extreme.  The scalar unit then writes ``k * lanes + index`` (the chunk's pair) to dst,
        bracketed by V->S / S->V flags as the integer TROWMAX path is."""
        R, C = s.vr, s.vc
        red = "vcmax" if is_max else "vcmin"
        dtype, e = s.dtype, s.esize
        L = 256 // e
        n = ceil_div(C, L)
        udt = {2: "u16", 4: "u32"}[e]
        pair_row = ceil_div(2 * n * e, 32) * 32
        val_row = ceil_div(n * e, 32) * 32 if n > 1 else 0
        base, k = self.free_rows(pair_row + val_row + (2 * e if n > 1 else 0), R)
        P, V = base, base + k * pair_row
        Q = V + k * val_row
        vi = {"order": "value_index"}
        for p in range(0, R, k):
            rows = min(k, R - p)
            S = self.add(s.addr, p * s.row_bytes)
            for j in range(n):
                cnt = min(L, C - j * L)
                self.red(red, dtype, P + j * 2 * e, pair_row // (2 * e), self.add(S, j * 256), s.row_bytes, rows, cnt,
                         **vi)
                if n > 1:
                    self.red(red, dtype, V + j * e, val_row // e, self.add(S, j * 256), s.row_bytes, rows, cnt)
            if n > 1:
                self.red(red, dtype, Q, 1, V, val_row, rows, n, **vi)
            self.flag("V", "S")
            node, r = self.loop("r", 0, rows)
            outer = self.in_body(node.body)
            row = self.add(P, self.mul(r, pair_row))
            idx = self.fresh("x")
            if n == 1:
                at = self.emit("ld_ub", udt, dst=idx, addr=self.add(row, e))
            else:
                chunk = self.emit("ld_ub", udt, dst=self.fresh("k"), addr=self.add(Q, self.mul(r, 2 * e), e))
                at = self.emit("ld_ub", udt, dst=idx, addr=self.add(row, self.mul(chunk, 2 * e), e))
                at = self.add(at, self.mul(chunk, L))
            self.emit("st_ub", d.dtype, addr=self.elem(d, self.add(r, p), 0), src=at)
            self.end_loop(outer)
            self.flag("S", "V")

    def arg_cols(self, s: TileRef, d: TileRef, is_max: bool):
        """Row by row over whole rows (no cross-lane step): B = the running extreme (first
        ``vmax(row0, row0)``, which makes a NaN the canonical one), per row i
        ``N = vmax(B, src_i)``, ``F = min(N xor B, 1)`` on the bits (1 where the extreme
        changed: only to a strictly better value, the +0 of a -0, or a first NaN), then
        ``I = max(I, F * i)`` (i exceeds every index I holds) and ``B = N``.  The A2A3 header
        selects with vcmp_ge + vsel (TColReduceIdx.hpp), which the executor does not model; this
        sequence gives the same first-index result with lane-wise ops only.  4-byte sources
        keep I in dst itself; 2-byte ones in u16 lanes, then ``vconv`` to dst's type."""
        R, C = s.vr, s.vc
        dtype, e = s.dtype, s.esize
        L = 256 // e
        ext = "vmax" if is_max else "vmin"
        udt = {2: "u16", 4: "u32"}[e]
        cols = s.t.cols  # the buffers' width (C may be known only at run time)
        nb = ceil_div(cols * e, 32) * 32
        base = self.free_ub((4 if e == 2 else 3) * nb)
        B, N, F = base, base + nb, base + 2 * nb
        I = base + 3 * nb if e == 2 else d.addr

        def o(addr):
            return Opnd(addr, cols * e, L * e, e)

        def vop(opcode, dt, extra=None, **ops):
            self.vec(opcode, dt, {k: o(v) for k, v in ops.items()}, 1, C, extra=extra)

        guard = None
        if not _is_int(R):  # a run-time row count: no row, no write (as an empty column reduction)
            guard, _ = self.loop("z", 0, self.min(R, 1), bound=1)
            outer_guard = self.in_body(guard.body)
        vop(ext, dtype, dst=B, src0=s.addr, src1=s.addr)
        vop("vector_dup", udt, {"scalar": 0}, dst=I)
        if not _is_int(R) or R > 1:
            node, i = self.loop("i", 1, R, bound=s.t.rows)
            outer = self.in_body(node.body)
            vop(ext, dtype, dst=N, src0=B, src1=self.elem(s, i, 0))
            vop("vxor", udt, dst=F, src0=N, src1=B)
            vop("vmins", udt, {"scalar": 1}, dst=F, src=F)
            vop("vmuls", udt, {"scalar": i}, dst=F, src=F)
            vop("vmax", udt, dst=I, src0=I, src1=F)
            vop(ext, dtype, dst=B, src0=N, src1=N)
            self.end_loop(outer)
        if e == 2:
            self.vec("vconv", d.dtype, {"dst": Opnd(d.addr, cols * 4, 256, 4), "src": Opnd(I, cols * 2, 128, 2)}, 1, C,
                     lanes=64, extra={"src_dtype": udt, "round": "r"})
        if guard is not None:
            self.end_loop(outer_guard)

    def row_prod(self, s: TileRef, d: TileRef):
        """TROWPROD: no vector instruction multiplies across lanes (vector_isa.md §1.6 has vcadd
        and vcmax/vcmin only), so the scalar unit folds each row left to right (``smul`` in the
        element type, the golden model's order), bracketed by V->S / S->V flags as the integer
        TROWMAX path is (also on ascend950).  The running product lives in dst[i, 0] (a register
        is not carried across the column loop)."""
        self.flag("V", "S")
        rows, r = self.loop("r", 0, s.vr, bound=s.t.rows)
        outer = self.in_body(rows.body)
        p, x = self.fresh("p"), self.fresh("x")
        at = self.elem(d, r, 0)
        acc = self.emit("ld_ub", s.dtype, dst=p, addr=self.elem(s, r, 0))
        self.emit("st_ub", d.dtype, addr=at, src=acc)
        if not _is_int(s.vc) or s.vc > 1:
            cols, c = self.loop("c", 1, s.vc, bound=s.t.cols)
            inner = self.in_body(cols.body)
            acc = self.emit("ld_ub", s.dtype, dst=p, addr=at)
            v = self.emit("ld_ub", s.dtype, dst=x, addr=self.elem(s, r, c))
            acc = self.emit("smul", s.dtype, dst=p, src0=acc, src1=v)
            self.emit("st_ub", d.dtype, addr=at, src=acc)
            self.end_loop(inner)
        self.end_loop(outer)
        self.flag("S", "V")

    def rowsum_f16_via_f32(self, op, s, d, R, C, dstride):
        """f16 row sums accumulated in f32: vconv chunks of 64, vadd.f32, vcadd.f32, vconv back."""
        contiguous_dst = dstride == 1
        if not contiguous_dst and (d.row_bytes % 32 or d.row_bytes // 32 > REPEAT_MAX):
            raise _Unsupported("an f16 row sum into a RowMajor dst whose rows are not 32-byte multiples")
        # per row: T (256 B f32 accumulator), U (256 B), the f32 result (4 B contiguous or 32 B spaced)
        res_bytes = 4 if contiguous_dst else 32
        base, k = self.free_rows(512, R, extra=res_bytes, multiple=16)
        T, U, Rb = base, base + 256 * k, base + 512 * k
        nch = ceil_div(C, 64)
        for p in range(0, R, k):
            n = min(k, R - p)
            S = self.add(s.addr, p * s.row_bytes)
            t_o, u_o = Opnd(T, 256, 0, 4), Opnd(U, 256, 0, 4)
            conv = {"src_dtype": "f16", "round": "r"}
            self.vec("vconv", "f32", {"dst": t_o, "src": Opnd(S, s.row_bytes, 0, 2)}, n, min(64, C), lanes=64,
                     extra=conv, flat_ok=False)
            for j in range(1, nch):
                w = min(64, C - 64 * j)
                self.vec("vconv", "f32", {"dst": u_o, "src": Opnd(self.add(S, 128 * j), s.row_bytes, 0, 2)}, n, w,
                         lanes=64, extra=conv, flat_ok=False)
                self.vec("vadd", "f32", {"dst": t_o, "src0": t_o, "src1": u_o}, n, w, flat_ok=False)
            self.red("vcadd", "f32", Rb, 1 if contiguous_dst else 8, T, 256, n, min(C, 64))
            back = {"src_dtype": "f32", "round": "r"}
            if contiguous_dst:
                # a row's dst element (the per-row rules) may sit inside a 32-byte block: converted into
                # U, then moved by the scalar unit
                aligned = _is_int(d.addr) and d.addr % 32 == 0
                out = self.add(d.addr, p * 2) if aligned else U
                self.vec("vconv", "f16", {"dst": Opnd(out, 2 * n, 128, 2), "src": Opnd(Rb, 4 * n, 256, 4)}, 1, n,
                         lanes=64, extra=back)
                if not aligned:
                    self.flag("V", "S")
                    node, q = self.loop("q", 0, n)
                    outer = self.in_body(node.body)
                    reg = self.emit("ld_ub", "f16", dst=self.fresh("s"), addr=self.add(U, self.mul(q, 2)))
                    self.emit("st_ub", "f16", addr=self.add(d.addr, self.mul(self.add(q, p), 2)), src=reg)
                    self.end_loop(outer)
                    self.flag("S", "V")
            else:
                self.vec("vconv", "f16", {"dst": Opnd(self.add(d.addr, p * d.row_bytes), d.row_bytes, 0, 2),
                                          "src": Opnd(Rb, 32, 0, 4)}, n, 1, lanes=64, extra=back, flat_ok=False)

    def tile_colreduce(self, op):
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        self._rows_aligned(s, rows=s.vr)
        R, C = s.vr, s.vc
        if (_is_int(R) and R <= 0) or (_is_int(C) and C <= 0):
            return
        if not _is_int(R):  # a run-time row count: no row, no write (an empty reduction writes nothing)
            node, _ = self.loop("z", 0, self.min(R, 1), bound=1)
            outer = self.in_body(node.body)
            self._colreduce(op, s, d, R, C)
            self.end_loop(outer)
            return
        self._colreduce(op, s, d, R, C)

    def _colreduce(self, op, s: TileRef, d: TileRef, R, C):
        dtype = s.dtype
        e = s.esize
        kind = {"vadd": "sum", "vmax": "max", "vmin": "min", "vmul": "prod"}[type(op).A2A3_VOP]
        vop = type(op).A2A3_VOP
        L = 256 // e
        if dtype == "f16" and kind == "sum":
            nb = ceil_div(s.t.cols * 4, 256) * 256
            A = self.free_ub(2 * nb)
            U = A + nb
            conv = {"src_dtype": "f16", "round": "r"}
            a_o, u_o = Opnd(A, nb, 256, 4), Opnd(U, nb, 256, 4)
            self.vec("vconv", "f32", {"dst": a_o, "src": Opnd(s.addr, s.row_bytes, 128, 2)}, 1, C, lanes=64,
                     extra=conv, flat_ok=False)
            if not _is_int(R) or R > 1:
                node, i = self.loop("i", 1, R, bound=s.t.rows)
                outer = self.in_body(node.body)
                self.vec("vconv", "f32", {"dst": u_o, "src": Opnd(self.elem(s, i, 0), s.row_bytes, 128, 2)}, 1, C,
                         lanes=64, extra=conv, flat_ok=False)
                self.vec("vadd", "f32", {"dst": a_o, "src0": a_o, "src1": u_o}, 1, C, flat_ok=False)
                self.end_loop(outer)
            self.vec("vconv", "f16", {"dst": Opnd(d.addr, d.row_bytes, 128, 2), "src": a_o}, 1, C, lanes=64,
                     extra={"src_dtype": "f32", "round": "r"}, flat_ok=False)
            return
        blocks = self.ceil_div(self.mul(C, e), 32)
        self.emit("copy_ubuf_to_ubuf", dst=d.addr, src=s.addr, n_burst=1, len_burst=blocks)
        if _is_int(R) and R == 1:
            return
        node, i = self.loop("i", 1, R, bound=s.t.rows)
        outer = self.in_body(node.body)
        d_o = Opnd(d.addr, d.row_bytes, L * e, e)
        self.vec(vop, dtype, {"dst": d_o, "src0": d_o, "src1": Opnd(self.elem(s, i, 0), s.row_bytes, L * e, e)}, 1, C,
                 flat_ok=False)
        self.end_loop(outer)

    def tile_pairreduce(self, op):
        s, d = self.tile(op.ins[0]), self.tile(op.outs[0])
        R, C = d.vr, d.vc
        if not _is_int(C):
            # src's row with +0 from column C (a bit copy: vor of the row with itself), paired over the
            # scratch's whole width (an odd C's last pair is src[C-1] + 0; pairs of padding are the
            # zeros of [ceil(C/2), C)), then dst's first C columns copied from the pair sums
            self._rows_aligned(s, d, rows=2)
            bits = f"u{8 * d.esize}"

            def body(row: TileRef, r, spare):
                sums = TileRef(spare, row.t, 1, row.vc)
                self._pairreduce(row, sums, 1, row.vc)
                o = Opnd(sums.addr, sums.row_bytes, 256, d.esize)
                self.vec("vor", bits, {"dst": Opnd(self.elem(d, r, 0), d.row_bytes, 256, d.esize), "src0": o,
                                       "src1": o}, 1, C)
            width_bytes = ceil_div(s.t.cols * s.esize, 256) * 256
            self.padded_rows(s, R, C, 0, ("vor", bits), width_bytes, body)
            return
        if not _is_int(R) and _is_int(C):  # run-time rows: the one-row reduction, row by row
            node, r = self.loop("rr", 0, R, bound=d.t.rows)
            outer = self.in_body(node.body)
            self._pairreduce(TileRef(self.elem(s, r, 0), s.t, 1, s.vc), TileRef(self.elem(d, r, 0), d.t, 1, C), 1, C)
            self.end_loop(outer)
            return
        self._pairreduce(s, d, R, C)  # (dst's valid region, run-time or not, is src's: the golden model checks)

    def _pairreduce(self, s: TileRef, d: TileRef, R: int, C: int):
        if R <= 0 or C <= 0:
            return
        self._rows_aligned(s, d, rows=R)
        dtype, e = d.dtype, d.esize
        L = 256 // e
        even = C & ~1
        # vcpadd over the even part: per 256 B source chunk, rows as repeats
        for k in range(ceil_div(even, L)):
            w = min(L, even - k * L)
            self.set_mask(self.mask_lanes(0, w, L))
            if s.row_bytes // 32 > REPEAT_MAX or d.row_bytes // 32 > REPEAT_MAX:
                node, r = self.loop("r", 0, R)
                outer = self.in_body(node.body)
                self.emit("vcpadd", dtype, dst=self.add(d.addr, k * 128, self.mul(r, d.row_bytes)),
                          src=self.add(s.addr, k * 256, self.mul(r, s.row_bytes)), repeat=1, src_blk_stride=1,
                          dst_rep_stride=4, src_rep_stride=8)
                self.end_loop(outer)
                continue
            for r0 in range(0, R, REPEAT_MAX):
                n = min(REPEAT_MAX, R - r0)
                self.emit("vcpadd", dtype, dst=self.add(d.addr, k * 128, r0 * d.row_bytes),
                          src=self.add(s.addr, k * 256, r0 * s.row_bytes), repeat=n, src_blk_stride=1,
                          dst_rep_stride=d.row_bytes // 32, src_rep_stride=s.row_bytes // 32)
        # zero fill of positions ceil(C/2) .. C-1
        half = ceil_div(C, 2)
        if half < C:
            self.vec("vector_dup", dtype, {"dst": self.opnd(d, L)}, R, C, col_lo=half, extra={"scalar": 0},
                     flat_ok=False)
        # odd C: dst[i, C/2] = src[i, C-1] + 0 (the seed's tail; the header drops it)
        if C % 2:
            self.flag("V", "S")
            node, r = self.loop("r", 0, R)
            outer = self.in_body(node.body)
            name = self.fresh("s")
            reg = self.emit("ld_ub", dtype, dst=name, addr=self.elem(s, r, C - 1))
            reg = self.emit("sadd", dtype, dst=name, src0=reg, src1=0)
            self.emit("st_ub", dtype, addr=self.elem(d, r, C // 2), src=reg)
            self.end_loop(outer)
            self.flag("S", "V")


def concat_on_scalar_unit(op: Operation) -> bool:
    """TCONCAT moves elements on the scalar unit: src0's valid cols are not whole 32-byte blocks
    (src1 would start inside a block, where no copy or NORM store starts) or a valid shape is known
    only at run time."""
    a, b = (v.type for v in op.ins[:2])
    dims = (a.valid_row, a.valid_col, b.valid_row, b.valid_col, op.outs[0].type.valid_row)
    return min(dims) < 0 or (a.valid_col * a.elem_bytes) % 32 != 0


def saturation_bounds(src: str, dst: str) -> tuple[int, int] | None:
    """(lo, hi) a saturating int -> int TCVT clamps to, in the source type; None when no clamp is
    needed (every source value fits dst) or a type is a float (TCVT's float paths saturate anyway)."""
    s, d = E.np_dtype(src), E.np_dtype(dst)
    if E.is_float_dtype(s) or E.is_float_dtype(d):
        return None
    (slo, shi), (dlo, dhi) = E.int_range(s), E.int_range(d)
    if dlo <= slo and shi <= dhi:
        return None
    return max(slo, dlo), min(shi, dhi)


def _py_number(v):
    a = np.asarray(v)
    if E.is_float_dtype(a.dtype):
        return float(a.astype(np.float64))
    return int(a)


def _exact_reciprocal(s, dtype: str):
    """1/s when s is a power of two whose reciprocal is a normal number of ``dtype``, else None."""
    if not isinstance(s, float) or not math.isfinite(s) or s == 0:
        return None
    m, _ = math.frexp(abs(s))
    if m != 0.5:
        return None
    inv = 1.0 / s
    npd = E.np_dtype(dtype)
    conv = _py_number(E.scalar_to(inv, npd))
    if conv != inv:
        return None
    tiny = {"f16": 2.0 ** -14, "f32": 2.0 ** -126, "bf16": 2.0 ** -126}.get(dtype, 2.0 ** -126)
    if abs(inv) < tiny or abs(s) < tiny:
        return None
    return inv


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------

def _lowerable(module: ModuleOp, target: Target):
    if not target.mode1_needs_broadcast_buffer:
        from pto_compiler.diagnostics import Diagnostic

        raise PtocError([Diagnostic(f"the a2a3 lowering does not target {target.name} "
                                    "(its backend lowers to the vf dialect)")], exit_code=2)


def lowered_functions(module: ModuleOp, entry: str | None = None) -> list:
    """The functions a pass over a module rewrites: the entry (``entry``, ``pto.entry`` or the
    only function), else every function with a body."""
    if entry is not None or _has_entry(module):
        return [select_entry(module, entry)]
    return [f for f in module.walk() if isinstance(f, func.FuncOp) and f.body.blocks]


def _has_entry(module: ModuleOp) -> bool:
    try:
        select_entry(module, None)
    except PtocError:
        return False
    return True


def lower_module(module: ModuleOp, target: Target = A2A3, entry: str | None = None) -> None:
    """Rewrites the placed module's :func:`lowered_functions` into a2a3 ops, in place.  Raises a
    located ``PtocError`` for an op with no a2a3 lowering."""
    _lowerable(module, target)
    for fn in lowered_functions(module, entry):
        _no_semantics_first(fn, target)
        _FnLowering(fn, target).run()


def _no_semantics_first(fn: func.FuncOp, target: Target) -> None:
    """An op with no semantics dooms the function: say so before anything else (an argument or a
    constant of the form only that op takes, e.g. tmrgsort's ``vector<4xi16>`` list, would be
    reported first otherwise)."""
    for op in fn.walk():
        reason = pto.no_semantics(op) if isinstance(op, pto.TileOp) else None
        if reason is not None:
            raise op_error(op, f"has no {target.name} lowering: {reason}")


def lower_to_program(module: ModuleOp, target: Target = A2A3, entry: str | None = None,
                     scalars: dict | None = None) -> Program:
    """The a2a3 program of a placed module's entry function: pto-lower-a2a3 and
    a2a3-complete-barriers on a clone."""
    _lowerable(module, target)
    module = module.clone()
    lower_module(module, target, entry)
    return completed_program(module, target, entry, scalars)


def completed_program(module: ModuleOp, target: Target = A2A3, entry: str | None = None,
                      scalars: dict | None = None) -> Program:
    """a2a3-complete-barriers on a lowered module's :func:`lowered_functions`, in place; the entry
    function's program, as the pass decoded it (``scalars`` size the GM arguments whose views
    depend on them)."""
    from pto_compiler.passes.a2a3_complete_barriers import complete_function

    programs = {id(p.fn): p for p in (complete_function(fn, target, scalars=scalars)
                                       for fn in lowered_functions(module, entry))}
    return programs[id(select_entry(module, entry))]


def float_sum_outputs(module: ModuleOp, entry: str | None = None) -> set[str]:
    """Names of the outputs whose values depend on a float sum (TROWSUM/TCOLSUM/matmul of a float type),
    and ``tprint@FILE:LINE:COL`` of the TPRINTs of such a tile: they compare with the float-sum
    tolerance; every other output and print compares bit for bit."""
    fn = select_entry(module, entry)
    specs = kernel_args(fn)
    tainted: set = set()  # SSA values (tiles, GM pointers) that carry a float sum

    roots = pto.view_root
    ranges: list[tuple[int, int]] = []  # UB bytes of tainted tiles placed by hand: their aliases read them

    def carries(v) -> bool:
        r = fixed_ub_range(v)
        return roots(v) in tainted or (r is not None and any(lo < r[1] and r[0] < hi for lo, hi in ranges))

    def taint(values) -> None:
        for v in values:
            tainted.add(roots(v))
            r = fixed_ub_range(v)
            if r is not None:
                ranges.append(r)

    for _ in range(4):
        before = len(tainted), len(ranges)
        for op in fn.walk():
            if isinstance(op, pto.TileOp):
                dsts = (*op.outs, *op.res)
                is_sum = (op.name in ("pto.trowsum", "pto.tcolsum") or isinstance(op, pto.MatmulOp)) and \
                    op.dst_type is not None and pto.is_float(op.dst_type.element_type)
                if op.name == "pto.tstore":
                    if any(carries(s) for s in op.ins[:1]):
                        taint(dsts)
                elif is_sum or any(carries(s) for s in op.ins):
                    taint(dsts)
            elif isinstance(op, (scf.YieldOp,)):
                parent = op.parent_op()
                if parent is not None:
                    for v, r in zip(op.operands, parent.results):
                        if roots(v) in tainted:
                            tainted.add(r)
            elif isinstance(op, scf.ForOp):
                body = op.body.blocks[0]
                for init, barg, res in zip(op.iter_args, body.args[1:], op.res):
                    if roots(init) in tainted or res in tainted:
                        tainted.update((barg, res))
        if (len(tainted), len(ranges)) == before:
            break
    out = set()
    for s in specs:
        if s.value in tainted:
            out.add(s.name)
    ret = None
    for op in fn.body.blocks[0].ops:
        if isinstance(op, func.ReturnOp):
            ret = op
    if ret is not None:
        for i, v in enumerate(ret.operands):
            if roots(v) in tainted:
                out.add(f"result{i}")
    for op in fn.walk():
        if isinstance(op, pto.TPrintOp) and carries(op.ins[0]):
            f, line, col = location_of(op)
            out.add(f"tprint@{f}:{line}:{col}")
    return out


class _FamilyPattern(RewritePattern):
    """Rewrites the tile ops of one family (a ``pto`` op class) with that family's rule."""

    def __init__(self, low: _FnLowering, family: type, rule):
        self.low, self.family, self.rule = low, family, rule

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, self.family):
            self.rule(self.low, op)
            rewriter.erase(op)


_FAMILY_RULES = {
    pto.ElementwiseBinaryOp: _FnLowering.tile_binary,
    pto.PartialBinaryOp: _FnLowering.tile_part,
    pto.UnaryOp: _FnLowering.tile_unary,
    pto.TileScalarOp: _FnLowering.tile_scalar,
    pto.ExpandScalarOp: _FnLowering.tile_expands,
    pto.RowExpandBinaryOp: _FnLowering.tile_rowexpand,
    pto.ColExpandBinaryOp: _FnLowering.tile_colexpand,
    pto.RowExpandOp: _FnLowering.tile_rowbroadcast,
    pto.ColExpandOp: _FnLowering.tile_colbroadcast,
    pto.RowReduceOp: _FnLowering.tile_rowreduce,
    pto.ColReduceOp: _FnLowering.tile_colreduce,
    pto.PairReduceOp: _FnLowering.tile_pairreduce,
    pto.ArgReduceOp: _FnLowering.tile_argreduce,
    pto.ConvertOp: _FnLowering.tile_cvt,
    pto.ReluConvOp: _FnLowering.tile_reluconv, pto.DeqReluOp: _FnLowering.tile_reluconv,
    pto.ConcatOp: _FnLowering.tile_concat, pto.FillPadOp: _FnLowering.tile_fillpad,
    pto.DequantOp: _FnLowering.tile_dequant, pto.InterleaveOp: _FnLowering.tile_interleave,
    pto.GatherOp: _FnLowering.tile_gather,
    pto.ScatterOp: _FnLowering.tile_scatter,
    pto.IndexedGmOp: _FnLowering.tile_indexed,
    pto.CompareOp: _FnLowering.tile_cmp, pto.SelectOp: _FnLowering.tile_sel,
    pto.PartialArgOp: _FnLowering.tile_partarg,
    pto.Sort32Op: _FnLowering.tile_sort32, pto.MrgSortOp: _FnLowering.tile_mrgsort,
    pto.FillOp: _FnLowering.tile_fill,
    pto.AxpyOp: _FnLowering.tile_axpy,
    pto.ComposedOp: _FnLowering.tile_composed,
    pto.TransposeOp: _FnLowering.tile_trans,
    pto.MoveOp: _FnLowering.tile_mov,
    pto.LoadOp: _FnLowering.tile_load,
    pto.StoreOp: _FnLowering.tile_store,
    pto.MatmulOp: lower_cube.tile_matmul,
    pto.SubTileOp: lower_cube.tile_move,
    pto.PrintOp: _FnLowering.tile_print,
}
"""One rule per tile-op family, keyed by the family's op class."""


@functools.cache
def _family_of(cls: type) -> type | None:
    """The first family of :data:`_FAMILY_RULES` a tile-op class belongs to (its pattern rewrites it)."""
    return next((family for family in _FAMILY_RULES if issubclass(cls, family)), None)


@dataclass(frozen=True)
class LowerA2A3Pass(ModulePass):
    """``pto-lower-a2a3{target=a2a3 entry=NAME}``: tile, sync and DMA ops -> ``a2a3`` ops, one
    pattern per family (:data:`_FAMILY_RULES`); ``ptoc --emit program`` prints the result."""

    name = "pto-lower-a2a3"

    target: str = "a2a3"
    entry: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from pto_compiler.targets import lookup_target

        t = lookup_target(self.target) or A2A3
        lower_module(op, t, self.entry)
