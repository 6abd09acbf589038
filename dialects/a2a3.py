"""The ``a2a3`` dialect: the A2/A3 vector core's micro-instructions, one op per opcode.

As xDSL's ``riscv`` and ``x86`` dialects model an ISA at the assembly level, every op here is
one instruction of reference/vector_isa.md §1.  The ops are generated from one table,
:data:`OPCODES`, whose row for an opcode holds everything known about it: the pipe that runs it,
its operand fields in ISA order (UB/GM addresses, repeat, block and repeat strides, mask or
rounding options), the element function that gives its semantics (by name, in
``runtime/elementwise.py``: the dialect does not import the runtime) and its cycle cost.  The
listing (``runtime/listing.py``), the executor and the cycle model read the same rows.

Operands are SSA values, so loops and address arithmetic are ``scf``/``arith`` around the ops:
integer fields (addresses, counts, strides) are ``index`` values, element-typed scalars any
type, GM operands a kernel argument plus an ``index`` byte offset, and a scalar register an
instruction writes is its result.  Pipes, enum options and the element type are properties.

Assembly format (readable back by xDSL's parser)::

    a2a3.vmax dst=%d src0=%a src1=%b repeat=%c16 blk=%c1,%c1,%c0 rep=%c8,%c8,%c1 : f32
    a2a3.vadds dst=%d src=%a scalar=(%s : f32) repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32
    a2a3.copy_gm_to_ubuf dst=%u src=(%x : !pto.ptr<f32>)+%off n_burst=%n ... : f32
    a2a3.set_flag MTE2 -> V id=%c0
    a2a3.pipe_barrier V
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.dialects.builtin import IndexType, NameLoc, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Dialect, OpResult, SSAValue, TypeAttribute
from xdsl.ir.core import SSAValues
from xdsl.irdl import (
    AnyAttr, IRDLOperation, irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from pto_compiler.dialects.bare_ops import op_with_operands

PIPES = ("S", "V", "MTE2", "MTE3", "MTE1", "M", "FIX")
"""The pipes a program uses: the vector core's S, V, MTE2 (GM in), MTE3 (GM out) and the cube
core's MTE1 (L1 -> L0A/L0B/BT), M (the cube unit) and FIX (the fixpipe out of L0C)."""

IN_ORDER_PIPES = ("MTE1", "M", "FIX")
"""The cube pipes run in order: an instruction sees what the previous one of its pipe wrote (the
cube unit accumulates into L0C back to back; the MTE1 and FIX queues are FIFO), so no
pipe_barrier orders them (the executor and pto-insert-sync read this)."""

REPEAT_MAX = 255
EVENT_IDS = 8
MAX_TRIPS = "a2a3.max_trips"
"""Attribute of an ``scf.for`` pto-lower-a2a3 made: the most trips its run-time bound allows."""
"""Event ids 0..7 per (source pipe, destination pipe) pair."""


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpCost:
    """Cost of one instruction: busy = issue + per_unit * units; complete = busy end + latency."""
    issue: float
    per_unit: float = 0.0
    latency: float = 0.0
    unit: str = "repeat"
    """'repeat' (vector repeats run), 'byte' (bytes copied), 'burst' or 'none'."""
    per_burst: float = 0.0


@dataclass(frozen=True)
class OpSpec:
    """One row of the opcode table."""
    name: str
    pipe: str | None
    """The pipe that executes it (None: given by the operands, for flags and barriers)."""
    family: str
    fields: tuple[str, ...]
    """Operand fields in ISA order (printed in this order)."""
    kinds: dict
    """field -> 'ub' (32 B-aligned UB byte address), 'ub_elem' (element-aligned UB address),
    'gm', 'int', 'scalar' (a number in the element type), 'reg' (a scalar register written),
    'expr', 'enum:a|b', 'pipe', 'sym', 'list'."""
    defaults: dict = field(default_factory=dict)
    blk: tuple[str, ...] = ()
    rep: tuple[str, ...] = ()
    dtype: str = "required"
    """'required', 'optional' or 'none'."""
    semantics: str | None = None
    """Name of the element function in runtime/elementwise.py that computes it."""
    cost: OpCost | None = None
    """Cycle cost on a2a3 (runtime/cycles.py); a placeholder [P] unless the comment at the row cites a source."""
    spaces: dict = field(default_factory=dict)
    """Address field -> the memory it addresses when not the UB (cube rows: L1, L0A, L0B, L0C, BT,
    FB; the name of the targets.py Space); a field of kind 'gm' addresses GM."""


def _strides(ops):
    return tuple(f"{o}_blk_stride" for o in ops), tuple(f"{o}_rep_stride" for o in ops)


def _mk_vec(name, family, addr_ops, cost, semantics=None, extra=(), extra_kinds=None, blk_ops=None,
            rep_ops=None, rep_defaults=None, defaults=None, dst_kind="ub"):
    blk_ops = addr_ops if blk_ops is None else blk_ops
    rep_ops = addr_ops if rep_ops is None else rep_ops
    blk, _ = _strides(blk_ops)
    _, rep = _strides(rep_ops)
    kinds = {o: "ub" for o in addr_ops}
    if "dst" in kinds:
        kinds["dst"] = dst_kind
    kinds.update(extra_kinds or {})
    kinds["repeat"] = "int"
    for f in blk + rep:
        kinds[f] = "int"
    d = {"repeat": 1}
    d.update({f: 1 for f in blk})
    d.update({f: 8 for f in rep})
    d.update(rep_defaults or {})
    d.update(defaults or {})
    enums = tuple(f for f in extra if (extra_kinds or {}).get(f, "").startswith("enum:"))
    plain = tuple(f for f in extra if f not in enums)
    fields = tuple(addr_ops) + plain + ("repeat",) + blk + rep + enums
    return OpSpec(name, "V", family, fields, kinds, d, blk, rep, semantics=semantics, cost=cost)


# [P] Simple vector ops: 256 B per repeat per cycle (the repeat is the vector width,
# vector_isa.md §1.1); 2 cycles of issue overhead and an 8-cycle pipeline before the result is
# visible to a dependent instruction after a barrier.
_SIMPLE = OpCost(issue=2, per_unit=1, latency=8)
# [P] Division and the transcendental unit: several passes per repeat (iterative / table-based);
# 4 cycles per repeat and a longer pipeline.
_LONG = OpCost(issue=2, per_unit=4, latency=16)
# [P] Whole-repeat reductions: a log2(lanes)-deep tree per repeat; 2 cycles per repeat, long
# latency (6-7 tree levels).
_TREE = OpCost(issue=2, per_unit=2, latency=20)
# [P] Per-block reductions and pair adds: a 3-4 level tree inside each block.
_BLOCK_TREE = OpCost(issue=2, per_unit=1, latency=12)
# [P] GM <-> UB DMA: ~32 B/cycle per core (an HBM share of ~1.6 TB/s over ~24 cores at ~1.8 GHz
# is ~37 B/cycle), a ~60-cycle descriptor set-up, ~1 cycle per burst and a ~200-cycle GM round
# trip before the data lands.
_DMA = OpCost(issue=60, per_unit=1 / 32, latency=200, unit="byte", per_burst=1)
# [P] UB -> UB copy on the vector pipe: UB bandwidth of 256 B/cycle (one repeat's width).
_UB_COPY = OpCost(issue=4, per_unit=1 / 256, latency=8, unit="byte", per_burst=1)
# [P] Mask/mode registers, sync (flag_latency in the cycle model for crossing pipes) and the
# scalar ALU: one cycle each.
_ONE = OpCost(issue=1, unit="none")

_ATOMIC = "enum:none|add"
"""A GM store's ``atomic`` field (TSTORE ``atomicType``): ``add`` makes GM += the value, in GM's type."""

OPCODES: dict[str, OpSpec] = {}


def _add(spec: OpSpec):
    OPCODES[spec.name] = spec


for _n, _fn in (("vadd", "add"), ("vsub", "sub"), ("vmul", "mul"), ("vdiv", "div"),
                ("vmax", "maximum"), ("vmin", "minimum")):
    _add(_mk_vec(_n, "binary", ("dst", "src0", "src1"), _LONG if _n == "vdiv" else _SIMPLE, _fn))
for _n, _fn in (("vadds", "add"), ("vmuls", "mul"), ("vmaxs", "maximum"), ("vmins", "minimum")):
    _add(_mk_vec(_n, "scalar", ("dst", "src"), _SIMPLE, _fn, extra=("scalar",),
                 extra_kinds={"scalar": "scalar"}))
for _n, _fn, _c in (("vexp", "exp", _LONG), ("vln", "log", _LONG), ("vsqrt", "sqrt", _LONG),
                    ("vrsqrt", "rsqrt", _LONG), ("vrec", "recip", _LONG), ("vabs", "abs_", _SIMPLE),
                    ("vrelu", "relu", _SIMPLE)):
    _add(_mk_vec(_n, "unary", ("dst", "src"), _c, _fn))
# Lane-wise instructions of the remainder / bitwise / shift / PReLU / power tile ops.  vector_isa.md does not
# describe them (pto_isa.md §3 names vand among the A5 micro-instructions); each is modelled as one
# repeat instruction under §1.1's addressing and mask model computing the op's element function, the
# closest documented form (the A2/A3 headers build some from several instructions and a tmp tile).
for _n, _fn in (("vrem", "rem"), ("vfmod", "fmod"), ("vand", "bitand"), ("vor", "bitor"), ("vxor", "bitxor"),
                ("vshl", "shl"), ("vshr", "shr"), ("vprelu", "prelu")):
    _add(_mk_vec(_n, "binary", ("dst", "src0", "src1"), _LONG if _n in ("vrem", "vfmod") else _SIMPLE, _fn))
for _n, _fn in (("vrems", "rem"), ("vfmods", "fmod"), ("vands", "bitand"), ("vors", "bitor"), ("vxors", "bitxor"),
                ("vshls", "shl"), ("vshrs", "shr"), ("vlrelu", "prelu")):
    _add(_mk_vec(_n, "scalar", ("dst", "src"), _LONG if _n in ("vrems", "vfmods") else _SIMPLE, _fn,
                 extra=("scalar",), extra_kinds={"scalar": "scalar"}))
_add(_mk_vec("vnot", "unary", ("dst", "src"), _SIMPLE, "bitnot"))
_add(_mk_vec("vpow", "binary", ("dst", "src0", "src1"), _LONG, "power"))
_add(_mk_vec("vpows", "scalar", ("dst", "src"), _LONG, "power", extra=("scalar",), extra_kinds={"scalar": "scalar"}))
_add(_mk_vec("vector_dup", "dup", ("dst",), _SIMPLE, extra=("scalar",), extra_kinds={"scalar": "scalar"}))
_add(_mk_vec("vbrcb", "vbrcb", ("dst", "src"), _SIMPLE, blk_ops=("dst",), rep_ops=("dst",)))
for _n, _fn in (("vcadd", "add"), ("vcmax", "maximum"), ("vcmin", "minimum")):
    _add(_mk_vec(_n, "reduce", ("dst", "src"), _TREE, _fn, blk_ops=("src",), rep_ops=("dst", "src"),
                 rep_defaults={"dst_rep_stride": 1}, dst_kind="ub_elem",
                 **({"extra": ("order",), "extra_kinds": {"order": "enum:value|value_index"},
                     "defaults": {"order": "value"}} if _n != "vcadd" else {})))
for _n, _fn in (("vcgadd", "add"), ("vcgmax", "maximum"), ("vcgmin", "minimum")):
    _add(_mk_vec(_n, "greduce", ("dst", "src"), _BLOCK_TREE, _fn, blk_ops=("src",),
                 rep_ops=("dst", "src"), rep_defaults={"dst_rep_stride": 1}, dst_kind="ub_elem"))
_add(_mk_vec("vcpadd", "pair", ("dst", "src"), _BLOCK_TREE, "add", blk_ops=("src",),
             rep_ops=("dst", "src"), rep_defaults={"dst_rep_stride": 4}))
# VBS32 ``vbitsort`` (TSORT32.md "Hardware"): ``repeat`` blocks of 32 values (src0, 32 elements apart)
# with their u32 indices (src1, 128 bytes apart) sorted into 32 8-byte (value, index) pairs each (dst,
# 256 bytes apart); the mask does not apply.  [P] cost: a whole-repeat reduction's per block.
_add(OpSpec("vbitsort", "V", "sort", ("dst", "src0", "src1", "repeat"),
            {"dst": "ub", "src0": "ub", "src1": "ub", "repeat": "int"}, {"repeat": 1}, semantics="sort_pairs",
            cost=_TREE))
# VMS4 ``vmrgsort4`` (TMRGSORT.md): the lists of n0..n3 8-byte (value, index) pairs at src0..src3 merged
# into dst (largest value first, equal values from the lower-numbered list); ``exhausted`` stops once a
# list is used up.  [P] cost: a pair a cycle.
_add(OpSpec("vmrgsort4", "V", "merge", ("dst", "src0", "src1", "src2", "src3", "n0", "n1", "n2", "n3", "exhausted"),
            {"dst": "ub", "src0": "ub", "src1": "ub", "src2": "ub", "src3": "ub", "n0": "int", "n1": "int",
             "n2": "int", "n3": "int", "exhausted": "enum:no|yes"}, {"n2": 0, "n3": 0, "exhausted": "no"},
            semantics="merge_pairs", cost=OpCost(issue=2, per_unit=1 / 8, latency=16)))
_add(_mk_vec("vconv", "conv", ("dst", "src"), _SIMPLE, "convert", extra=("round",),
             extra_kinds={"round": "enum:r|a|f|c|z|o"}, defaults={"round": "r"}))

_add(OpSpec("copy_gm_to_ubuf", "MTE2", "copy_in",
            ("dst", "src", "n_burst", "len_burst", "src_gap", "dst_gap", "right_pad", "pad_value"),
            {"dst": "ub", "src": "gm", "n_burst": "int", "len_burst": "int", "src_gap": "int",
             "dst_gap": "int", "right_pad": "int", "pad_value": "scalar"},
            {"n_burst": 1, "src_gap": 0, "dst_gap": 0, "right_pad": 0, "pad_value": 0},
            dtype="optional", cost=_DMA))
_add(OpSpec("copy_ubuf_to_gm", "MTE3", "copy_out",
            ("dst", "src", "n_burst", "len_burst", "src_gap", "dst_gap", "atomic"),
            {"dst": "gm", "src": "ub", "n_burst": "int", "len_burst": "int", "src_gap": "int",
             "dst_gap": "int", "atomic": _ATOMIC},
            {"n_burst": 1, "src_gap": 0, "dst_gap": 0, "atomic": "none"}, dtype="optional", cost=_DMA))
_add(OpSpec("copy_ubuf_to_ubuf", "V", "copy_ub",
            ("dst", "src", "n_burst", "len_burst", "src_gap", "dst_gap"),
            {"dst": "ub", "src": "ub", "n_burst": "int", "len_burst": "int", "src_gap": "int",
             "dst_gap": "int"},
            {"n_burst": 1, "src_gap": 0, "dst_gap": 0}, dtype="optional", cost=_UB_COPY))

_add(OpSpec("set_vector_mask", "V", "mask", ("hi", "lo"), {"hi": "int", "lo": "int"}, dtype="none",
            cost=_ONE))
_add(OpSpec("set_vector_count", "V", "mask", ("count",), {"count": "int"}, dtype="none", cost=_ONE))
_add(OpSpec("set_mask_norm", "V", "mask", (), {}, dtype="none", cost=_ONE))
_add(OpSpec("set_mask_count", "V", "mask", (), {}, dtype="none", cost=_ONE))
_add(OpSpec("pipe_barrier", None, "sync", ("pipe",), {"pipe": "pipe"}, dtype="none", cost=_ONE))
for _n in ("set_flag", "wait_flag"):
    _add(OpSpec(_n, None, "sync", ("src_pipe", "dst_pipe", "event_id"),
                {"src_pipe": "pipe", "dst_pipe": "pipe", "event_id": "int"}, dtype="none", cost=_ONE))

# ascend950: one VF launch (asc_vf_call) on the V pipe; `callee` names a vf.func, `args` are its
# arguments: UB byte addresses of its tile buffers and scalar values (PB parameters), in the
# callee's order.  Its cost is the ascend950 cycle table's.
_add(OpSpec("vf_call", "V", "vf", ("callee", "args"), {"callee": "sym", "args": "list"}, dtype="none"))
# [P] Scalar unit: 1 cycle per ALU op; a UB load by the scalar unit ~10 cycles, a division 8.
_add(OpSpec("ld_ub", "S", "sload", ("dst", "addr"), {"dst": "reg", "addr": "ub_elem"},
            cost=OpCost(issue=10, unit="none")))
_add(OpSpec("st_ub", "S", "sstore", ("addr", "src"), {"addr": "ub_elem", "src": "scalar"},
            cost=OpCost(issue=2, unit="none")))
# MGATHER/MSCATTER's Elem mode (MGATHER.md, MSCATTER.md "Why Elem mode uses scalar GM reads/writes"):
# the scalar unit reads or writes one element of GM (no 32-byte alignment).  [P] cost: a UB load's.
_add(OpSpec("ld_gm", "S", "sload_gm", ("dst", "addr"), {"dst": "reg", "addr": "gm"}, cost=OpCost(issue=10, unit="none")))
_add(OpSpec("st_gm", "S", "sstore_gm", ("addr", "src"), {"addr": "gm", "src": "scalar"},
            cost=OpCost(issue=2, unit="none")))
_add(OpSpec("smov", "S", "smov", ("dst", "src"), {"dst": "reg", "src": "expr"}, dtype="optional",
            cost=_ONE))
for _n, _fn in (("sadd", "add"), ("ssub", "sub"), ("smul", "mul"), ("sdiv", "div"), ("smax", "maximum"),
                ("smin", "minimum")):
    _add(OpSpec(_n, "S", "salu", ("dst", "src0", "src1"), {"dst": "reg", "src0": "scalar", "src1": "scalar"},
                semantics=_fn, cost=OpCost(issue=8, unit="none") if _n == "sdiv" else _ONE))
# TPRINT: prints rows x cols elements at src (element (i, j) at src + (i*row_stride + j*col_stride) *
# sizeof(T)); on V, ordered with the vector ops as every other tile op (passes/tile_access.py);
# [P] a debug print, a fixed cost.
_add(OpSpec("print_ub", "V", "print", ("src", "rows", "cols", "row_stride", "col_stride"),
            {"src": "ub_elem", "rows": "int", "cols": "int", "row_stride": "int", "col_stride": "int"},
            cost=OpCost(issue=10, unit="none")))
for _n in ("get_block_idx", "get_block_num"):
    _add(OpSpec(_n, "S", "block", ("dst",), {"dst": "reg"}, dtype="none", cost=_ONE))

# ---- the cube core: one instruction per tile move or matmul (runtime/cube_exec.py runs them).
# A local operand X is its byte address (kind 'ub', in the memory ``spaces[X]`` names) and the
# geometry of its tile: X_rows, X_cols, X_layout (runtime/cube.py places element (r, c)); a GM
# operand X is @arg+offset, X_stride the elements from one row to the next and X_col_stride from
# one column to the next (1: ND; a DN view has X_stride 1).  rows x cols is
# the region moved, at (X_r0, X_c0) of a local tile (textract / tinsert).
LAYOUT_NAMES = ("nd", "dn", "nz", "zn", "zz", "nn", "nz1024", "zn1024", "zz1024", "nn1024")
_CUBE_TYPES = "enum:f16|bf16|f32|i8|i32"


def _cube_side(name: str, space: str | None, offsets: bool) -> tuple[tuple, dict, dict]:
    if space is None:
        return ((name, f"{name}_stride", f"{name}_col_stride"),
                {name: "gm", f"{name}_stride": "int", f"{name}_col_stride": "int"}, {f"{name}_col_stride": 1})
    fields = (name, f"{name}_rows", f"{name}_cols") + ((f"{name}_r0", f"{name}_c0") if offsets else ())
    kinds = {f: "int" for f in fields[1:]}
    kinds.update({name: "ub", f"{name}_layout": "enum:" + "|".join(LAYOUT_NAMES)})
    defaults = {f"{name}_layout": "nd", **({f"{name}_r0": 0, f"{name}_c0": 0} if offsets else {})}
    return fields + (f"{name}_layout",), kinds, defaults


def _cube(name: str, pipe: str, family: str, dst: str | None, src: str | None, cost: OpCost,
          offsets: bool = False, atomic: bool = False):
    fields, kinds, defaults = (), {}, {}
    for side, space in (("dst", dst), ("src", src)):
        f, k, d = _cube_side(side, space, offsets and space is not None)
        fields, kinds, defaults = fields + f, {**kinds, **k}, {**defaults, **d}
    fields += ("rows", "cols")
    kinds.update(rows="int", cols="int")
    if family == "fix":  # out of L0C: the acc type and ReLU before the conversion (runtime/cube.py)
        fields += ("src_type", "relu")
        kinds.update(src_type=_CUBE_TYPES, relu="enum:no|yes")
        defaults.update(src_type="f32", relu="no")
    if atomic:  # atomicType = atomic_add: GM += the converted value, in the GM element type
        fields += ("atomic",)
        kinds.update(atomic=_ATOMIC)
        defaults.update(atomic="none")
    spaces = {k: v for k, v in (("dst", dst), ("src", src)) if v is not None}
    _add(OpSpec(name, pipe, family, fields, kinds, defaults, cost=cost, spaces=spaces))


# Cube costs.  SOURCED: the cube unit's rate, one 16 x (32 B) x 16 fractal of MACs per cycle: "Cube
# is 4096 FP16 MACs + 8192 INT8 MACs" a cycle (Huawei, Da Vinci, Hot Chips 31, 2019; "4096 MAC
# operations in one clock cycle" per AI core), i.e. 16x16x16 for f16/bf16 and 16x32x16 for i8; f32
# (16x8x16, 2048 MACs) follows the same 32-byte k fractal, which no page states [fitted to the rule].
# [P] placeholders, no page gives them: the mmad's issue and pipeline latency; GM <-> L1 as
# GM <-> UB (_DMA); L1 -> L0 (~256 B per cycle) and the fixpipe out of L0C (~128 B per cycle).
_L1_MOVE = OpCost(issue=4, per_unit=1 / 256, latency=16, unit="byte", per_burst=0)
_FIX_MOVE = OpCost(issue=8, per_unit=1 / 128, latency=32, unit="byte", per_burst=0)
_MMAD = OpCost(issue=2, per_unit=1, latency=16)
_cube("copy_gm_to_cbuf", "MTE2", "cube_copy", "L1", None, _DMA)
_cube("copy_cbuf_to_gm", "MTE3", "cube_copy", None, "L1", _DMA, atomic=True)
_cube("load_cbuf_to_ca", "MTE1", "cube_copy", "L0A", "L1", _L1_MOVE, offsets=True)
_cube("load_cbuf_to_cb", "MTE1", "cube_copy", "L0B", "L1", _L1_MOVE, offsets=True)
_cube("load_cbuf_to_bt", "MTE1", "cube_copy", "BT", "L1", _L1_MOVE, offsets=True)
_cube("copy_cbuf_to_cbuf", "MTE1", "cube_copy", "L1", "L1", _L1_MOVE, offsets=True)
_cube("copy_cbuf_to_fbuf", "FIX", "cube_copy", "FB", "L1", _L1_MOVE, offsets=True)
_cube("copy_ubuf_to_cbuf", "MTE3", "cube_copy", "L1", "UB", _L1_MOVE, offsets=True)
_cube("copy_ubuf_layout", "V", "cube_copy", "UB", "UB", _L1_MOVE, offsets=True)  # vec -> vec between layouts
# The ``--run`` harness's windows (passes/tile_harness.py), NOT hardware instructions: a tile no
# TLOAD/TSTORE moves (an L0A/L0B tile, an acc tile nothing computes, a boxed vec tile, a mat tile
# in a layout the DMA does not write) is seeded from / read back to GM, row-major, through its
# geometry, so a run of an on-chip kernel compares what it left there with the golden model.
# On MTE2 / MTE3, the pipes pto-insert-sync gives a tload / a tstore.  [P] the DMA's cost.
for _sp in ("UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"):
    _cube(f"harness_load_{_sp.lower()}", "MTE2", "cube_copy", _sp, None, _DMA)
    _cube(f"harness_store_{_sp.lower()}", "MTE3", "cube_copy", None, _sp, _DMA)
_cube("fixpipe_cc_to_gm", "FIX", "fix", None, "L0C", _FIX_MOVE, atomic=True)
_cube("fixpipe_cc_to_cbuf", "FIX", "fix", "L1", "L0C", _FIX_MOVE, offsets=True)
_cube("fixpipe_cc_to_ubuf", "FIX", "fix", "UB", "L0C", _FIX_MOVE, offsets=True)
for _n, _bias in (("mmad", False), ("mmad_bias", True)):
    _f, _k, _d = (), {}, {}
    for _side, _space in (("dst", "L0C"), ("a", "L0A"), ("b", "L0B")) + ((("bias", "BT"),) if _bias else ()):
        _sf, _sk, _sd = _cube_side(_side, _space, False)
        _f, _k, _d = _f + _sf, {**_k, **_sk}, {**_d, **_sd}
    _add(OpSpec(_n, "M", "mmad", _f + ("m", "k", "n", "src_type", "init"),
                {**_k, "m": "int", "k": "int", "n": "int", "src_type": _CUBE_TYPES, "init": "enum:zero|acc"},
                {**_d, "src_type": "f16", "init": "zero"}, cost=_MMAD,
                spaces={"dst": "L0C", "a": "L0A", "b": "L0B", **({"bias": "BT"} if _bias else {})}))

# ---- the cube<->vector pipe (runtime/pipes.py runs them; passes/lower_cube.py emits them): a push
# reads the valid rows x cols of its tile (L0C through the fixpipe, or UB) into the FIFO, a pop
# writes its part into the consumer's slot tile (UB or L1); ``split`` 0/1/2 = no split, up/down,
# left/right (TileSplitAxis).  [P] costs: a push or pop as the DMA / fixpipe move of its bytes.
for _n, _pipe, _fam, _side, _space, _cost in (
        ("tpush_cc", "FIX", "pipe_push", "src", "L0C", _FIX_MOVE), ("tpush_ub", "MTE3", "pipe_push", "src", "UB", _DMA),
        ("tpop_ub", "MTE2", "pipe_pop", "dst", "UB", _DMA), ("tpop_cbuf", "MTE2", "pipe_pop", "dst", "L1", _DMA)):
    _sf, _sk, _sd = _cube_side(_side, _space, False)
    _add(OpSpec(_n, _pipe, _fam, _sf + ("rows", "cols", "split"), {**_sk, "rows": "int", "cols": "int", "split": "int"},
                {**_sd, "split": 0}, cost=_cost, spaces={_side: _space}))
for _n in ("tfree_c2v", "tfree_v2c"):  # the consumer frees its oldest popped slot of that direction
    _add(OpSpec(_n, "S", "pipe_free", ("split",), {"split": "int"}, {"split": 0}, dtype="none", cost=_ONE))
_add(OpSpec("pipe_init", "S", "pipe_init", ("dir_mask", "slot_size"), {"dir_mask": "int", "slot_size": "int"},
            dtype="none", cost=_ONE))

CUBE_FAMILIES = ("cube_copy", "fix", "mmad")

VECTOR_FAMILIES = ("binary", "scalar", "unary", "dup", "vbrcb", "reduce", "greduce", "pair", "conv")


# ---------------------------------------------------------------------------------------------
# The ops, generated from the table
# ---------------------------------------------------------------------------------------------

_TYPED_KINDS = ("scalar", "expr", "gm")
"""Operand kinds whose type is printed with the operand (the others are ``index``)."""


class A2A3Op(IRDLOperation):
    """Base of the generated ops: the table row is ``SPEC``."""
    SPEC: ClassVar[OpSpec]

    def field_value(self, name: str):
        """The SSA value or property of one field (a GM field: (pointer, offset))."""
        kind = self.SPEC.kinds[name]
        if kind == "gm":
            return getattr(self, name), getattr(self, f"{name}_offset")
        if kind in ("pipe", "sym") or kind.startswith("enum:"):
            attr = self.properties.get(name)
            return None if attr is None else (attr.string_value() if isinstance(attr, SymbolRefAttr)
                                              else attr.data)
        return getattr(self, name)

    def verify_(self) -> None:
        for f, kind in self.SPEC.kinds.items():
            if kind == "pipe":
                v = self.properties[f].data
                if v not in PIPES and not (f == "pipe" and v == "ALL"):
                    raise VerifyException(f"{f}: unknown pipe '{v}'")
            elif kind.startswith("enum:") and f in self.properties:
                if self.properties[f].data not in kind[5:].split("|"):
                    raise VerifyException(f"{f} must be one of {kind[5:].replace('|', ', ')}")
        if self.SPEC.name in ("set_flag", "wait_flag") and \
                self.properties["src_pipe"] == self.properties["dst_pipe"]:
            raise VerifyException(f"{self.SPEC.name} needs two different pipes")
        if self.SPEC.dtype == "required" and "dtype" not in self.properties:
            raise VerifyException(f"{self.name} needs an element type")

    # ---- assembly format ------------------------------------------------------------------
    def print(self, printer: Printer) -> None:
        spec, p = self.SPEC, self.properties
        if spec.family == "sync":
            if spec.name == "pipe_barrier":
                printer.print_string(f" {p['pipe'].data}")
            else:
                printer.print_string(f" {p['src_pipe'].data} -> {p['dst_pipe'].data} id=")
                printer.print_operand(self.event_id)
            return
        grouped = set(spec.blk) | set(spec.rep)
        for f in spec.fields:
            kind = spec.kinds[f]
            if f in grouped or kind == "reg" or kind == "pipe":
                continue
            if kind.startswith("enum:"):
                continue
            printer.print_string(f" {f}=")
            if kind == "sym":
                printer.print_attribute(p[f])
            elif kind == "list":
                printer.print_string("[")
                printer.print_list(self.args, lambda v: _print_typed(printer, v))
                printer.print_string("]")
            elif kind == "gm":
                _print_typed(printer, getattr(self, f))
                printer.print_string("+")
                printer.print_operand(getattr(self, f"{f}_offset"))
            elif kind in _TYPED_KINDS:
                _print_typed(printer, getattr(self, f))
            else:
                printer.print_operand(getattr(self, f))
        for key, group in (("blk", spec.blk), ("rep", spec.rep)):
            if group:
                printer.print_string(f" {key}=")
                printer.print_list((getattr(self, f) for f in group), printer.print_operand)
        for f in spec.fields:  # enum options (order=, round=) after the stride groups
            if spec.kinds[f].startswith("enum:") and f in p:
                printer.print_string(f" {f}={p[f].data}")
        types = [p[k] for k in ("src_dtype", "dtype") if k in p]
        if self.results:
            types.append(self.results[0].type)
        if types:
            printer.print_string(" : ")
            printer.print_list(types, printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> A2A3Op:
        spec = cls.SPEC
        operands: dict = {}
        props: dict = {}
        idx = IndexType()
        if spec.family == "sync":
            if spec.name == "pipe_barrier":
                props["pipe"] = StringAttr(parser.parse_identifier())
            else:
                props["src_pipe"] = StringAttr(parser.parse_identifier())
                parser.parse_punctuation("->")
                props["dst_pipe"] = StringAttr(parser.parse_identifier())
                parser.parse_keyword("id")
                parser.parse_punctuation("=")
                operands["event_id"] = parser.resolve_operand(parser.parse_unresolved_operand(), idx)
            return cls.build_from(operands, props, None)
        grouped = set(spec.blk) | set(spec.rep)
        keys = {f for f, k in spec.kinds.items() if f not in grouped and k not in ("reg", "pipe")}
        keys |= {g for g, group in (("blk", spec.blk), ("rep", spec.rep)) if group}
        while (key := parser.parse_optional_keyword_in(keys)) is not None:
            parser.parse_punctuation("=")
            if key in ("blk", "rep"):
                group = spec.blk if key == "blk" else spec.rep
                vals = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, lambda: parser.resolve_operand(parser.parse_unresolved_operand(), idx))
                if len(vals) != len(group):
                    parser.raise_error(f"'{key}=' of {spec.name} takes {len(group)} value(s)")
                operands.update(zip(group, vals))
                continue
            kind = spec.kinds[key]
            if kind.startswith("enum:"):
                props[key] = StringAttr(parser.parse_identifier())
            elif kind == "sym":
                props[key] = parser.parse_attribute()
            elif kind == "list":
                operands[key] = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: _parse_typed(parser))
            elif kind == "gm":
                operands[key] = _parse_typed(parser)
                parser.parse_punctuation("+")
                operands[f"{key}_offset"] = parser.resolve_operand(parser.parse_unresolved_operand(), idx)
            elif kind in _TYPED_KINDS:
                operands[key] = _parse_typed(parser)
            else:
                operands[key] = parser.resolve_operand(parser.parse_unresolved_operand(), idx)
        result_type = None
        if parser.parse_optional_punctuation(":") is not None:
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            if any(spec.kinds[f] == "reg" for f in spec.fields):
                result_type = types.pop()
            if spec.family == "conv" and len(types) == 2:
                props["src_dtype"] = types.pop(0)
            if types:
                props["dtype"] = types[0]
        return cls.build_from(operands, props, result_type)

    @classmethod
    def build_from(cls, operands: dict, props: dict, result_type: Attribute | None) -> A2A3Op:
        """An op from operand values and properties by field name (omitted operands: none)."""
        defs = [n for n, _ in cls.get_irdl_definition().operands]
        missing = [n for n in defs if n not in operands and n != "args"]
        if missing:
            raise VerifyException(f"'{cls.name}' is missing operand(s): {', '.join(missing)}")
        return cls.create(operands=[v for n in defs for v in (operands.get(n, ()) if n == "args"
                                                                else (operands[n],))],
                          properties=props, result_types=[result_type] if result_type else [])


def new_op(cls: type[IRDLOperation], operands: tuple, properties: dict, result_type: Attribute | None,
           location: Attribute) -> IRDLOperation:
    """What ``cls.create`` makes of these arguments (the same fields and uses), its location given,
    without xDSL's generic operand/successor setters: the lowerings and pto-insert-sync build thousands
    of ops of classes with no region, successor or default property (IRDL's post-init would fill
    one): the a2a3 ops and pto's sync ops."""
    op = op_with_operands(cls, operands)
    op.results = SSAValues((OpResult(result_type, op, 0),) if result_type is not None else ())
    op.properties = properties
    op.attributes = {}
    op.location = location
    op.regions = ()
    return op


def name_loc(desc: StringAttr, location: Attribute) -> NameLoc:
    """``NameLoc(desc, location)`` without xDSL's attribute verification: one per lowered tile op, of
    parts that are attributes already."""
    loc = NameLoc.__new__(NameLoc)
    object.__setattr__(loc, "desc", desc)
    object.__setattr__(loc, "location", location)
    return loc


def _print_typed(printer: Printer, v: SSAValue) -> None:
    printer.print_string("(")
    printer.print_operand(v)
    printer.print_string(" : ")
    printer.print_attribute(v.type)
    printer.print_string(")")


def _parse_typed(parser: Parser) -> SSAValue:
    parser.parse_punctuation("(")
    u = parser.parse_unresolved_operand()
    parser.parse_punctuation(":")
    t = parser.parse_type()
    parser.parse_punctuation(")")
    return parser.resolve_operand(u, t)


def _class_name(opcode: str) -> str:
    return "".join(w.capitalize() for w in opcode.split("_")) + "Op"


def _make_op(spec: OpSpec) -> type[A2A3Op]:
    ns: dict = {"name": f"a2a3.{spec.name}", "SPEC": spec, "__module__": __name__,
                "__qualname__": _class_name(spec.name),
                "__annotations__": {"SPEC": ClassVar[OpSpec]}}
    for f in spec.fields:
        kind = spec.kinds[f]
        if kind == "reg":
            ns[f] = result_def(AnyAttr())
        elif kind == "list":
            ns[f] = var_operand_def(AnyAttr())
        elif kind == "pipe":
            ns[f] = prop_def(StringAttr)
        elif kind == "sym":
            ns[f] = prop_def(SymbolRefAttr)
        elif kind.startswith("enum:"):
            ns[f] = opt_prop_def(StringAttr)
        elif kind == "gm":
            ns[f] = operand_def(AnyAttr())
            ns[f"{f}_offset"] = operand_def(IndexType)
        elif kind in _TYPED_KINDS:
            ns[f] = operand_def(AnyAttr())
        else:
            ns[f] = operand_def(IndexType)
    if spec.dtype != "none":
        ns["dtype"] = opt_prop_def(TypeAttribute)
    if spec.family == "conv":
        ns["src_dtype"] = opt_prop_def(TypeAttribute)
    return irdl_op_definition(type(ns["__qualname__"], (A2A3Op,), ns))


class _Ops(Mapping):
    """opcode -> op class, each made the first time it is asked for: a compile uses a few of the
    ~100 (making them all is 15 ms of every run)."""

    def __init__(self):
        self._made: dict[str, type[A2A3Op]] = {}
        self._lock = threading.Lock()  # (two threads must not make two classes of one opcode)

    def __getitem__(self, opcode: str) -> type[A2A3Op]:
        cls = self._made.get(opcode)
        if cls is None:
            with self._lock:
                cls = self._made.get(opcode) or self._made.setdefault(opcode, _make_op(OPCODES[opcode]))
        return cls

    def __contains__(self, opcode) -> bool:
        return opcode in OPCODES

    def __iter__(self):
        return iter(OPCODES)

    def __len__(self) -> int:
        return len(OPCODES)


OPS: Mapping[str, type[A2A3Op]] = _Ops()
"""opcode -> op class."""

_OPCODE_OF_CLASS = {_class_name(opcode): opcode for opcode in OPCODES}


def __getattr__(name: str):
    """The op classes by class name (``a2a3.VaddOp``) and the dialect (``A2A3``, every op), made when
    first asked for (see :class:`_Ops`)."""
    if name == "A2A3":
        dialect = globals()["A2A3"] = Dialect("a2a3", list(OPS.values()), [])
        return dialect
    if name in _OPCODE_OF_CLASS:
        return OPS[_OPCODE_OF_CLASS[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
