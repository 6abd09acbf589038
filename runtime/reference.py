"""Golden model: evaluates a verified pto module on NumPy arrays, straight from the ISA pages.

This is ptoc's oracle (DESIGN.md §6): simple enough to be obviously right; the executor is
checked against it on every ``--run``.  It evaluates L1 (``!pto.tile`` SSA values) and L2
(``alloc_tile`` + ``ins/outs`` on ``!pto.tile_buf``) modules, with ``arith``, ``scf.for``
(``iter_args``), ``scf.while``, ``scf.if``, ``func.call`` and ``func.return``.

Data model
----------
* **Tiles** are 2-D arrays of the *full* tile shape ``rows x cols`` of the element type,
  indexed ``[r, c]`` in logical row/column order *whatever the blayout*: a ColMajor
  ``16x1`` tile is a ``(16, 1)`` array holding ``s_i`` at ``[i, 0]``.  (Physical UB order is
  the executor's business.)  Each tile carries its run-time valid region ``(R, C)``.
* Ops read and write only the valid region, except where an ISA page says otherwise (TLOAD's
  and TFILLPAD's padding, TPAIRREDUCESUM's +0s).  New tiles (``alloc_tile``, L1 results) start
  as zeros.
* **Outside the valid region** a dst's elements are unspecified after an op (pto_isa.md §2:
  "do not assume they are zeroed or preserved"; its open question 9 asks whether ptoc should
  model block-granular writes).  The golden model leaves them as they were.  Both executors,
  like the hardware, may write the rest of the 32-byte block each valid line ends in
  (``copy_ubuf_to_ubuf`` moves whole blocks, vector_isa.md §1.10; VF NORM stores are
  block-aligned), e.g. in TMOV, the first-row copy of TCOLMAX/TCOLSUM, TEXPANDS's paired byte
  stores.  The golden model does not copy that on purpose: what lands there (another source's
  bytes, a partial result) is each lowering's choice, not the ISA's, and an oracle reproducing
  it would check the lowering against itself.  The two agree on every element the pages
  specify: such a write stays in 32-byte blocks that hold valid elements of dst (tiles sit at
  32-byte aligned addresses).  A kernel sees those elements only by widening the valid region
  afterwards (``set_validshape``, a view, a tile bound at the same UB address): what it reads
  there the ISA leaves open, so it checks neither side (tests/test_dynamic_audit.py compares
  all but exactly those elements, its ``_block_tail``).
* **UB aliasing** (issue 12): a tile the source places itself (``alloc_tile addr = %a``,
  ``pto.tassign``, at the address the run computes) is a typed view of the block's UB byte
  array at that address, in the physical order of its blayout; tiles bound to the same or
  overlapping bytes share them, so a reinterpretation (a 16x1 ColMajor tile read as 1x16
  RowMajor, an f32 tile read as i32) gives the bytes the hardware holds, and a tassign moves the
  name, not the data.  The UB starts as zeros.  Tiles the planner places stay separate arrays:
  pto-plan-memory gives them disjoint bytes while they are live, so sharing is unobservable;
  a tile of a cube memory (mat, left, right, acc, ...) placed by hand is the tile of the same
  type last placed at that address, else a fresh array, and its elements are the memory's bytes
  where the executor puts them (runtime/cube.py ``tile_offsets``: fractals): an op on it first
  takes the bytes another tile wrote over it, and writes its own back after.
* **GM arguments** (``!pto.ptr<T>``) are flat 1-D arrays; a tensor view adds a shape and
  element strides, a partition view offsets and sizes.  The partition's elements, in C
  order, are the tile's valid elements in row-major order: for the usual
  ``sizes = [..., R', C]`` this is GM element ``sum_k (offset_k + i_k) * stride_k`` for tile
  ``(r, c)`` with ``i_last = c`` and ``r`` spread over the leading dims in C order, which is
  the ND mapping of reference/pto_isa.md §2 (5-D views included); a DN view is the same
  formula with its own strides.  Out-of-range GM accesses are located errors.

Semantics decisions (each one where the ISA page leaves a choice)
------------------------------------------------------------------
* **TROWEXPAND{ADD,SUB,MUL,DIV,MAX,MIN,EXPDIF}** (seeds/000): Mode 1 ``dst[i,j] = fn(full[i,j], s_i)``;
  Mode 2 ``dst[i,j] = fn(full[i,j], b_i[j mod 32/sizeof(T)])``; the operand order is kept, so with
  src0 expanded it is ``fn(s_i, src1[i,j])`` (``s_i - x``, ``s_i / x``, ``exp(s_i - x)``).
  Which operand is expanded, and the mode, come from the op's ``expand_analysis()``.
* **TPAIRREDUCESUM** (seeds/004): ``dst[i,k] = src[i,2k] + src[i,2k+1]`` for ``k < ceil(C/2)``,
  where an element outside the valid region counts as ``+0`` (odd ``C`` gives
  ``src[i,C-1] + 0``, so a ``-0`` there becomes ``+0``), and positions ``ceil(C/2) .. C-1`` of
  each valid row are ``+0``.  Only the valid region of dst is written: the rest of the tile is
  left as it was (the pto-isa CPU simulator zero-fills the whole tile, the NPU writes only
  the lanes it stores; outside the valid region is unspecified, so neither is observable).
* **Reductions** accumulate floats in float64 and round once (compare with a tolerance);
  integers exactly, then wrap.  TROWSUM/MAX/MIN write column 0 of each of the src's valid
  rows; TCOLSUM/MAX/MIN write row 0 of each valid column; an empty column reduction writes
  nothing (the CPU simulator returns early).
* **max/min** follow seeds/002 (NaN wins, ``-0 < +0`` in either operand order), *not* the
  pto-isa CPU simulator's ``std::max`` (NaN only from the first operand, ties keep the first).
* **TLOAD** padding (``pad`` of the tile type): Zero (1), Max (2: ``+inf`` / int max) and Min
  (3: ``-inf`` / int min) fill the *whole* tile before the valid region is copied, as the CPU
  simulator does (the NPU fills only to the 32-byte boundary of each row; the rest is
  unspecified, so the whole-tile fill is a refinement of both).  Null (0) pads nothing.  A GM
  element type of the same size but another type is reinterpreted bit for bit.
* **TSTORE** writes the tile's valid region; ``atomicType = atomic_add`` adds (element type).
* **TCVT** uses ``rmode`` (default CAST_RINT) and, for int -> int, ``sat_mode``/``saturation_mode``
  ON to clamp; see ``elementwise.convert``.
* **TMOV** copies the valid region between tiles of one element type (any location); out of
  acc (and **TSTORE** of an acc tile) through the fixpipe of runtime/cube.py (f32 -> f16/bf16
  nearest-even, ``reluPreMode``); tmov with a scaling/quant operand has no semantics yet.
* **TMATMUL / TGEMV** (``.acc``, ``.bias``): runtime/cube.py (f16/bf16/f32 accumulate in f32,
  the exact sum rounded once; i8 in i32, wrapping).  **TEXTRACT / TINSERT** copy a sub-tile at
  (row, col): extract over dst's valid region, insert over src's.
* Scalars of tile-scalar ops and TEXPANDS are converted to the tile's element type with
  ``elementwise.scalar_to`` (floats round to nearest-even, ints wrap).
* Events, flags and barriers have no effect on values (program order is the semantics).
* Ops with no semantics (OpaqueTileOp: matmul, tcmp, tsel, ..., and the generic PTOAS ops)
  raise a located ``PtocError``: "'pto.X' op has no semantics in ptoc yet".

I/O conventions (issue 4; ``--run`` uses the same)
--------------------------------------------------
Inputs and outputs are named after the entry function's argument SSA names without ``%``
(``arg0`` for ``%arg0``; an argument with no usable name is ``argN``).  A ``!pto.ptr<T>``
argument is a GM array whose shape is that of the tensor view made from it when there is
exactly one and its shape is known before the run (static type, or shape operands that are
constants or given integer scalars), else 1-D covering every view; an input of the same
element count is accepted in any shape (read in C order).  Outputs are every GM argument a
``tstore`` writes, in that shape, then the L1 results ``result0``, ``result1``, ....  L1 tile
arguments are arrays of the tile's valid shape.  Float scalars left out get a seeded random
value; integer and index scalars left out are a usage error (exit 2).
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, ModuleOp, VectorType
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from pto_compiler.diagnostics import Diagnostic, PtocError, format_diagnostic, location_of, op_error, value_name
from pto_compiler.dialects import pto
from pto_compiler.passes.tile_views import is_view, subset_valid, view_error
from pto_compiler.runtime import elementwise as E
from pto_compiler.runtime import cube
from pto_compiler.runtime import pipes
from pto_compiler.runtime.kernel_interface import (  # noqa: F401  (select_entry ... are this module's API too)
    _INT_BINARY,
    ArgSpec,
    _as_signed,
    _as_unsigned,
    _functions,
    _fname,
    _int_width,
    DEFAULT_MAX_STEPS,
    _lookup_func,
    _norm_int,
    eval_int_arith,
    int_arith_function,
    float_name,
    gm_shape,
    kernel_args,
    select_entry,
    usage_error,
)
from pto_compiler.passes.tile_access import tile_reads, tile_writes
from pto_compiler.targets import ADDRESS_ALIGN, DEFAULT_TARGET, Target

__all__ = [
    "Tile", "GMArray", "TensorView", "PartitionView", "ArgSpec", "evaluate", "make_inputs",
    "describe_outputs", "select_entry", "kernel_args", "gm_shape", "read_npy", "load_inputs",
    "prepare_inputs", "save_outputs", "parse_scalar", "FLOAT_SUM_RTOL",
]

FLOAT_SUM_RTOL = {"float32": 1e-3, "float16": 1e-2, "bfloat16": 1e-2}
"""Float sums (row/col reductions) compare as ``|got - ref| <= rtol * (|ref| + 1)`` (issue 4)."""

MAX_CALL_DEPTH = 64

UB_ALIGN = ADDRESS_ALIGN  # a computed tassign address is checked when it is bound


# --------------------------------------------------------------------------------------
# Run-time values
# --------------------------------------------------------------------------------------


@dataclass(eq=False)
class Tile:
    """A tile buffer (L2) or value (L1): ``data`` is ``rows x cols`` in logical [r, c] order."""

    type: pto.TileLikeType
    data: np.ndarray
    valid: tuple[int, int]
    fresh: bool = False
    """An L1 result nobody has written yet: a full-size result array may be adopted as its data."""
    written: bool = True
    """False for an ``alloc_tile`` nothing has written yet (reading it is a located error)."""
    base: Tile | None = None
    """The tile a treshape/subset result views (writing the view writes it)."""
    ub_at: tuple[int, int] | None = None
    """The UB bytes ``[lo, hi)`` of a tile placed by hand (whether it holds data is a property of
    those bytes, which other tiles may write)."""
    cube_at: tuple[str, int] | None = None
    """(cube memory, address) of a cube-memory tile placed by hand (:meth:`Evaluator.cube_tile`)."""

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def region(self) -> np.ndarray:
        r, c = self.valid
        return self.data[:r, :c]


@dataclass(eq=False)
class GMArray:
    """A GM kernel argument: ``data`` is flat and C-contiguous; ``shape`` is the I/O shape.  Until
    something writes it, ``data`` is a read-only view of the caller's input: a kernel that only
    reads a 128 MiB weight does not copy it."""

    name: str
    data: np.ndarray
    shape: tuple[int, ...]
    written: bool = False

    def own(self) -> np.ndarray:
        """``data``, copied first while it is the caller's input: what a writer of GM calls."""
        if not self.data.flags.writeable:
            self.data = self.data.copy()
        return self.data


@dataclass(eq=False)
class TensorView:
    gm: GMArray
    shape: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass(eq=False)
class PartitionView:
    view: TensorView
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]

    def flat_indices(self) -> np.ndarray:
        """GM element indices of the partition's elements in C order."""
        n = len(self.sizes)
        if any(s < 0 for s in self.sizes):
            raise ValueError(f"negative partition size in {list(self.sizes)}")
        if n == 0:
            return np.zeros(1, dtype=np.int64)
        return self.at(np.indices(self.sizes, dtype=np.int64).reshape(n, -1))

    def at(self, coords) -> np.ndarray:
        """GM element indices of the partition's elements at per-dimension coordinates ``coords``
        (one array per dimension, all of one shape)."""
        idx = np.zeros(np.shape(coords[0]), dtype=np.int64)
        for k, c in enumerate(coords):
            idx += (self.offsets[k] + c) * self.view.strides[k]
        return idx

    def contiguous(self) -> bool:
        """Its elements are consecutive in GM, in C order."""
        step = 1
        for size, stride in zip(reversed(self.sizes), reversed(self.view.strides)):
            if size != 1:
                if stride != step:
                    return False
                step *= size
        return True

    def strided(self) -> np.ndarray | None:
        """The partition as a view of the GM array (shape ``sizes``) when that is exact: every
        stride positive (no element twice), every element inside the array; else None."""
        st, gm = self.view.strides, self.view.gm.data
        if len(self.sizes) != len(st) or any(s < 1 for s in self.sizes) or any(s < 1 for s in st):
            return None
        lo = sum(o * s for o, s in zip(self.offsets, st))
        hi = lo + sum((n - 1) * s for n, s in zip(self.sizes, st))
        if lo < 0 or hi >= gm.size:
            return None
        b = gm.itemsize  # (ndarray's own constructor: as_strided costs ~3 us a call)
        return np.ndarray(self.sizes, gm.dtype, gm, lo * b, tuple(s * b for s in st))


def _in_ub(t: pto.TileLikeType) -> bool:
    """A vec tile: its address is a UB address (:meth:`Evaluator.ub_view`; a cube-memory tile's bytes:
    :meth:`Evaluator.cube_sync_in`)."""
    return t.loc.data == "vec"


def typed_view(raw: np.ndarray, t: pto.TileLikeType) -> np.ndarray:
    """Bytes ``raw`` as the ``rows x cols`` tile ``t``, in the physical order of its blayout
    (RowMajor: element (r, c) at ``(r*cols + c)*sizeof(T)``, ColMajor: ``(c*rows + r)*sizeof(T)``)."""
    flat = raw.view(E.np_dtype(t.dtype))
    if t.is_row_major:
        return flat.reshape(t.rows, t.cols)
    return flat.reshape(t.cols, t.rows).T


def _bytes_of(data: np.ndarray) -> np.ndarray:
    """The bytes under a tile array made by :func:`typed_view` (its base, in physical order)."""
    phys = data if data.flags.c_contiguous else data.T
    return phys.reshape(-1).view(np.uint8)


def _owns_bytes(t: Tile) -> bool:
    """The tile's array is a whole typed view of bytes (so a treshape can view the same bytes)."""
    d = t.data
    return (d.flags.c_contiguous and t.type.is_row_major) or (d.T.flags.c_contiguous and not t.type.is_row_major)


_ARRAY_OF: dict = {}
"""id of a tile type -> (the type, (rows, cols), NumPy dtype of its array): xDSL computes these
anew on every read, and hashing the type costs more than a NumPy call."""


def new_tile(t: pto.TileLikeType, valid: tuple[int, int]) -> Tile:
    got = _ARRAY_OF.get(id(t))
    if got is None or got[0] is not t:
        if len(_ARRAY_OF) > 4096:
            _ARRAY_OF.clear()
        got = _ARRAY_OF[id(t)] = (t, (t.rows, t.cols), E.np_dtype(t.dtype))
    return Tile(t, np.zeros(got[1], got[2]), (int(valid[0]), int(valid[1])))


# --------------------------------------------------------------------------------------
# Scalars and types
# --------------------------------------------------------------------------------------


def _float_dtype(t) -> np.dtype | None:
    name = float_name(t)
    return None if name is None else E.np_dtype(name)


def coerce_scalar(value, t):
    """A Python/NumPy number as the run-time value of a scalar of type t."""
    fdt = _float_dtype(t)
    if fdt is not None:
        return E.scalar_to(value, fdt)
    if _int_width(t) is not None:
        if isinstance(value, np.ndarray):
            value = value[()] if value.ndim == 0 else value
        if isinstance(value, (float, np.floating)):
            if not float(value).is_integer():
                raise ValueError(f"expected an integer, got {value}")
            value = int(value)
        return _norm_int(int(value), t)
    raise ValueError(f"unsupported scalar type {t}")


def parse_scalar(text: str, t):
    """``--input NAME=3.5``: the text of a scalar argument of type t."""
    s = text.strip()
    if _float_dtype(t) is not None:
        return coerce_scalar(float(s), t)
    return coerce_scalar(int(s, 0), t)


# --------------------------------------------------------------------------------------
# arith
# --------------------------------------------------------------------------------------

_CMPF = arith.CMPF_COMPARISON_OPERATIONS


_FLOAT_BINARY = {
    "addf": E.add, "subf": E.sub, "mulf": E.mul, "divf": E.div,
    "maximumf": E.maximum, "minimumf": E.minimum,
}


def _maxnum(a: np.ndarray, b: np.ndarray, is_max: bool) -> np.ndarray:
    if np.isnan(a.astype(np.float32)):
        return b if not np.isnan(b.astype(np.float32)) else E.canonical_nan(a.dtype)
    if np.isnan(b.astype(np.float32)):
        return a
    return (E.maximum if is_max else E.minimum)(a, b)


def _cmpf(pred: str, a: np.ndarray, b: np.ndarray) -> int:
    x, y = float(a), float(b)
    unordered = math.isnan(x) or math.isnan(y)
    if pred in ("false", "true"):
        return int(pred == "true")
    if pred == "ord":
        return int(not unordered)
    if pred == "uno":
        return int(unordered)
    rel = pred[1:]
    res = {"eq": x == y, "gt": x > y, "ge": x >= y, "lt": x < y, "le": x <= y, "ne": x != y}[rel]
    if unordered:
        return int(pred[0] == "u")
    return int(res)


def _eval_arith(op: Operation, env: Mapping[SSAValue, object]) -> list:
    vals = [env[o] for o in op.operands]
    done = eval_int_arith(op, vals)
    if done is not None:
        return done
    name = op.name.split(".", 1)[1]
    rt = op.results[0].type if op.results else None
    if name == "constant":
        attr = op.properties.get("value", op.attributes.get("value"))
        if isinstance(attr, FloatAttr):
            return [E.scalar_to(attr.value.data, _float_dtype(rt))]
        if isinstance(rt, VectorType) and _int_width(rt.element_type) is not None:  # a vector argument's lanes
            (n,) = rt.get_shape()
            lanes = attr.get_values()
            return [tuple(_norm_int(int(x), rt.element_type) for x in (lanes * n if len(lanes) == 1 else lanes))]
        raise NotImplementedError("non-scalar arith.constant")
    w = _int_width(rt) if rt is not None else None
    if name in _FLOAT_BINARY:
        return [_FLOAT_BINARY[name](vals[0], vals[1])]
    if name in ("maxnumf", "minnumf"):
        return [_maxnum(vals[0], vals[1], name == "maxnumf")]
    if name == "remf":
        a, b = vals
        return [E.scalar_to(np.fmod(np.float64(a), np.float64(b)), a.dtype)]
    if name == "negf":
        return [E.neg(vals[0])]
    if name == "cmpf":
        return [_cmpf(_CMPF[op.predicate.value.data], vals[0], vals[1])]
    if name in ("extf", "truncf"):
        return [E.convert(vals[0], _float_dtype(rt), "RINT")]
    if name in ("sitofp", "uitofp"):
        iw = _int_width(op.operands[0].type)
        v = _as_unsigned(vals[0], iw) if name == "uitofp" else _as_signed(vals[0], iw)
        return [E.scalar_to(v, _float_dtype(rt))]
    if name in ("fptosi", "fptoui"):
        x = float(np.asarray(vals[0]).astype(np.float64))
        lo, hi = (0, (1 << w) - 1) if name == "fptoui" else (-(1 << (w - 1)), (1 << (w - 1)) - 1)
        v = 0 if math.isnan(x) else hi if x >= hi + 1 else lo if x <= lo - 1 else int(x)  # trunc, saturating
        return [_norm_int(v, rt)]
    if name == "bitcast":
        src_t = op.operands[0].type
        if _float_dtype(src_t) is not None:
            bits = int(np.asarray(vals[0]).reshape(1).view(np.dtype(f"uint{8 * vals[0].dtype.itemsize}"))[0])
            return [coerce_scalar(bits, rt) if _float_dtype(rt) is None else vals[0]]
        fdt = _float_dtype(rt)
        u = np.array(_as_unsigned(vals[0], _int_width(src_t)), dtype=np.dtype(f"uint{8 * fdt.itemsize}"))
        return [u.view(fdt)]
    raise NotImplementedError(op.name)


def decode_arith(op: Operation):
    """A constant or integer binary ``arith`` op as a closure of ``env`` (the constant's value,
    the operands, result and width looked up now), else None; it raises what :func:`_eval_arith`
    raises.  The golden model and the VF executor run their scalar code through it."""
    if isinstance(op, arith.ConstantOp):
        try:
            (v,) = _eval_arith(op, {})
        except NotImplementedError:
            return None
        r = op.result
        return lambda env: env.__setitem__(r, v)
    name = op.name[6:] if op.name.startswith("arith.") else None
    if name in _INT_BINARY and len(op.operands) == 2 and len(op.results) == 1:
        (a, b), r = op.operands, op.results[0]
        fn = int_arith_function(op)
        return None if fn is None else lambda env: env.__setitem__(r, fn(env[a], env[b]))
    return None


# --------------------------------------------------------------------------------------
# The evaluator
# --------------------------------------------------------------------------------------


def _attr_body(op: Operation, *keys: str) -> str | None:
    for k in keys:
        a = op.attributes.get(k) or op.properties.get(k)
        if a is None:
            continue
        body = getattr(a, "body", None)
        if body is not None:
            return body.data
        data = getattr(a, "data", None)
        if isinstance(data, str):
            return data
        return str(a)
    return None


_EVERY_BYTE_TRUE = {n: int.from_bytes(b"\x01" * n, "little") for n in (1, 2, 4, 8)}
"""The unsigned int of ``n`` bytes each ``True`` (1): an element's written flags set at once."""


def _generic(op: Operation):
    """The step that runs ``op`` through :meth:`Evaluator._eval_op` (looked up when it runs)."""
    return lambda ev, env: ev._eval_op(op, env)


@dataclass
class _Decoded:
    """A module as one evaluator class decodes it, kept with the module (as :func:`_kernel`: a
    module is not changed once it runs), so a later ``evaluate`` decodes nothing again."""
    funcs: dict
    """Function name -> ``func.func``."""
    plans: dict = field(default_factory=dict)
    """id of each block run so far -> its steps and terminator (:meth:`Evaluator._plan`; by id:
    xDSL hashes blocks and ops in Python, and the module keeps them alive)."""


class _TileStep:
    """A tile op decoded once (:meth:`Evaluator.tile_op_runner`): its operands, results, where its
    destination is and its element function, so a run reads no xDSL operand list (xDSL makes those
    lists anew on every read).  What a family rule gets instead of the op."""

    __slots__ = ("op", "ins", "outs", "res", "dst_at", "fn", "expand")

    def __init__(self, op: pto.TileOp):
        self.op = op
        self.ins, self.outs, self.res = tuple(op.ins), tuple(op.outs), tuple(op.res)
        self.dst_at = _dst_of(op)
        """What :meth:`Evaluator.dst` reads (:func:`_dst_of`)."""
        name = type(op).FN
        self.fn = None if name is None else getattr(E, name).fn
        """The raw element function (:meth:`Evaluator.call` runs under one ``np.errstate``), or None."""
        self.expand = None
        """A row-expand op's ``expand_analysis()``, made at its first run (it may raise, located)."""


def _dst_of(op: Operation) -> tuple:
    """(``outs`` value or None, result or None, the result's tile type or None, its valid rows and
    cols) of a tile op: what :meth:`Evaluator.dst` reads."""
    if op.outs:
        return op.outs[0], None, None, None, None
    if not op.res:
        return None, None, None, None, None
    r = op.res[0]
    t = r.type
    if not isinstance(t, pto.TileLikeType):
        return None, r, None, None, None
    return None, r, t, t.valid_row, t.valid_col


_DECODED_ATTR = "_ptoc_golden_decoded"


def _module_cache(module: ModuleOp, attr: str) -> dict:
    """A dict kept on ``module`` under ``attr``: what the golden model decodes once per module."""
    cache = getattr(module, attr, None)
    if cache is None:
        cache = {}
        setattr(module, attr, cache)
    return cache


def _decoded(module: ModuleOp, cls: type) -> _Decoded:
    cache = _module_cache(module, _DECODED_ATTR)
    got = cache.get(cls)
    if got is None:
        got = cache[cls] = _Decoded({_fname(f): f for f in _functions(module)})
    return got


class Evaluator:
    """Walks a module's functions; one instance per ``evaluate`` call (the decoded steps are the
    module's, shared by every instance)."""

    def __init__(self, module: ModuleOp, block_idx: int = 0, block_num: int = 1, max_steps: int | None = None,
                 ub_bytes: int = DEFAULT_TARGET.ub_bytes, sum_order: str = "exact",
                 target: str = DEFAULT_TARGET.name):
        self.module = module
        self.sum_order = sum_order
        """How TROWSUM/TCOLSUM sum floats (``E.SUM_ORDERS``; the golden model's rule is ``exact``)."""
        self.ub_bytes = ub_bytes
        """The block's UB size: the target's (targets.py)."""
        self.target = target
        """The target's name: the few rules that differ per target at run time read it."""
        self.steps_left = max_steps
        self.max_steps = max_steps
        """Ops evaluated plus loop trips the run may take (``--max-steps``, as the executor counts)."""
        self.decoded = _decoded(module, type(self))
        """The module's functions and blocks as this evaluator class decodes them (made once)."""
        self.depth = 0
        self.block = (block_idx, block_num)
        """What ``pto.get_block_idx``/``get_block_num`` read: the kernel runs once per block."""
        self.ub: np.ndarray | None = None
        """The block's Unified Buffer bytes, made when the first tile is bound to an address."""
        self.ub_written: np.ndarray | None = None
        """Per UB byte: some tile op wrote it."""
        self.cube: dict[str, list[tuple[int, Tile]]] = {}
        """Per cube memory: the tiles placed by hand, by address (:meth:`cube_tile`)."""
        self.cube_mem: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        """Per cube memory: its bytes and, per byte, whether a tile placed by hand wrote it."""
        self.cube_index: dict[tuple, tuple[np.ndarray, int]] = {}
        """Tile geometry -> each element's index from the tile's address and the span's size in bytes
        (:meth:`_cube_span`)."""
        self.cube_writers: dict[str, list[tuple[int, int, np.ndarray]]] = {}
        """Per cube memory: ``(lo, hi, data)``, the tile data whose bytes ``[lo, hi)`` last were
        (the memory's bytes equal them there), latest last (:meth:`cube_sync_in`)."""
        self.pipe = None
        """A mixed kernel's agent: its end of the cube<->vector pipe (runtime/pipes.py)."""
        self.subblock = (pto.SUBBLOCK["pto.get_subblock_idx"], pto.SUBBLOCK["pto.get_subblock_num"])
        """What ``get_subblock_idx`` / ``get_subblock_num`` read."""
        self.warned: set = set()
        """Ops already warned about (a read of a tile nothing wrote: once per op, not per trip)."""

    # ---- functions, blocks, regions --------------------------------------------------
    def call(self, fn: func.FuncOp, args: list) -> list:
        block = fn.body.first_block
        if block is None:
            raise op_error(fn, "is a declaration without a body; it cannot be run")
        self.depth += 1
        if self.depth > MAX_CALL_DEPTH:
            raise op_error(fn, f"call depth exceeds {MAX_CALL_DEPTH} (recursion?)")
        try:
            if self.depth > 1:
                return self.run_block(block, args, {})
            with np.errstate(all="ignore"):  # IEEE results, no warnings (runtime/elementwise.py)
                return self.run_block(block, args, {})
        finally:
            self.depth -= 1

    def run_block(self, block: Block, args: list, env: dict) -> list:
        plans = self.decoded.plans
        plan = plans.get(id(block))
        if plan is None:
            plan = plans[id(block)] = self._plan(block)
        params, steps, term, results = plan
        env = dict(env)
        env.update(zip(params, args))
        for op, run in steps:
            self._run(op, run, env)
        if term is None:
            return []
        values = [env[o] for o in results]
        if isinstance(term, func.ReturnOp):
            for o, v in zip(results, values):
                if isinstance(v, Tile) and not self.holds_data(v):
                    raise op_error(term, f"returns {value_name(o)}, which nothing has written")
        return values

    def _plan(self, block: Block):
        """The block decoded once per module: its arguments, (op, its step) up to the terminator,
        the terminator and its operands (loop bodies and later runs go without reading xDSL's
        operand lists again)."""
        steps = []
        for op in block.ops:
            if isinstance(op, (func.ReturnOp, scf.YieldOp, scf.ConditionOp)):
                return tuple(block.args), steps, op, tuple(op.operands)
            steps.append((op, self.decode(op)))
        return tuple(block.args), steps, None, ()

    def run_region(self, region: Region, args: list, env: dict) -> list:
        if not region.blocks:
            return []
        if len(region.blocks) != 1:
            raise op_error(region.parent_op(), "has a multi-block region, which the golden model cannot run")
        return self.run_block(region.blocks[0], args, env)

    # ---- one op --------------------------------------------------------------------
    def step(self) -> None:
        if self.steps_left is not None:
            self.steps_left -= 1
            if self.steps_left < 0:
                self.out_of_steps()

    def out_of_steps(self):
        raise usage_error(f"the golden model stopped after {self.max_steps} steps (ops evaluated plus "
                          "loop trips); raise the limit with --max-steps N")

    def eval_op(self, op: Operation, env: dict) -> None:
        self._run(op, _generic(op), env)

    def _run(self, op: Operation, run, env: dict) -> None:
        if self.steps_left is not None:  # (self.step(), inline: one call less per op)
            self.steps_left -= 1
            if self.steps_left < 0:
                self.out_of_steps()
        try:
            run(self, env)
        except PtocError:
            raise
        except (VerifyException, E.ElementwiseError, ZeroDivisionError) as e:
            raise op_error(op, str(e)) from None

    @classmethod
    def decode(cls, op: Operation):
        """``op`` as a step ``run(evaluator, env)`` with its operands, results and rule looked up
        now: integer arith, constants, loops and tile ops; anything else runs :meth:`_eval_op`.
        Decoding never fails: an op with no semantics fails when it runs.  Steps hold nothing
        of one run, so every evaluator of the module shares them."""
        name = op.name
        if isinstance(op, pto.TileOp) and not (name in pipes.PIPE_OPS or name in pipes.INIT_OPS or name in
                                               pipes.BUFFER_OPS or is_view(op) or name == "pto.set_validshape"):
            return cls.tile_op_runner(op)
        if isinstance(op, scf.ForOp):
            return lambda ev, env: ev.eval_for(op, env)
        if isinstance(op, pto.PartitionViewOp):
            src, offsets, sizes, res = op.source[0], list(op.offsets), list(op.sizes), op.result
            return lambda ev, env: ev.eval_partition_view(op, src, offsets, sizes, res, env)
        if isinstance(op, pto.AllocTileOp):
            vr, vc, addr, res = op.valid_row, op.valid_col, op.addr, op.result
            return lambda ev, env: ev.eval_alloc_tile(op, vr, vc, addr, res, env)
        arith_step = decode_arith(op)
        if arith_step is not None:
            return lambda ev, env: arith_step(env)
        return _generic(op)

    def _eval_op(self, op: Operation, env: dict) -> None:
        name = op.name
        if name in pipes.PIPE_OPS or name in pipes.INIT_OPS or name in pipes.BUFFER_OPS:
            return pipes.golden_pipe_op(self, op, env)
        if is_view(op):
            return self.eval_view(op, env)
        if name == "pto.set_validshape":
            return self.eval_set_validshape(op, env)
        if isinstance(op, pto.TileOp):
            return self.tile_op_runner(op)(self, env)
        if name.startswith("arith."):
            try:
                results = _eval_arith(op, env)
            except NotImplementedError:
                raise op_error(op, "has no semantics in ptoc yet") from None
            for r, v in zip(op.results, results):
                env[r] = v
            return
        if isinstance(op, scf.ForOp):
            return self.eval_for(op, env)
        if isinstance(op, scf.WhileOp):
            return self.eval_while(op, env)
        if isinstance(op, scf.IfOp):
            branch = op.true_region if env[op.cond] else op.false_region
            results = self.run_region(branch, [], env)
            for r, v in zip(op.output, results):
                env[r] = v
            return
        if isinstance(op, func.CallOp):
            callee = self.decoded.funcs.get(op.callee.root_reference.data)
            if callee is None:
                raise op_error(op, f"calls unknown function @{op.callee.root_reference.data}")
            results = self.call(callee, [env[a] for a in op.arguments])
            for r, v in zip(op.res, results):
                env[r] = v
            return
        if isinstance(op, pto.MakeTensorViewOp):
            return self.eval_make_tensor_view(op, env)
        if isinstance(op, pto.PartitionViewOp):
            return self.eval_partition_view(op, op.source[0], op.offsets, op.sizes, op.result, env)
        if isinstance(op, pto.AllocTileOp):
            return self.eval_alloc_tile(op, op.valid_row, op.valid_col, op.addr, op.result, env)
        if isinstance(op, pto.TAssignOp):
            tile = self.tile(op, op.tile[0], env)
            addr = op.static_addr
            addr = int(env[op.addr_value[0]]) if addr is None else addr
            if _in_ub(tile.type):
                tile.data = self.ub_view(op, tile.type, addr)
                tile.ub_at = (addr, addr + tile.type.nbytes)
            if op.result:
                env[op.result[0]] = tile
            return
        if type(op) in pto.SYNC_OPS.values():
            return  # events, flags and barriers: no effect on values
        if name in pto.SECTION_OPS and op.regions:
            self.run_region(op.regions[0], [], env)  # a kernel's cube / vector part, in program order
            return
        if name in ("pto.get_block_idx", "pto.get_block_num"):
            env[op.results[0]] = self.block[name == "pto.get_block_num"]
            return
        if name in pto.SUBBLOCK:
            env[op.results[0]] = self.subblock[name == "pto.get_subblock_num"]
            return

        if name in pto.EVENTID_ARRAY_OPS:
            return self.eval_eventid_array(op, env)
        if name == "pto.tgetval":
            return self.eval_tgetval(op, env)
        raise op_error(op, "has no semantics in ptoc yet")

    def eval_tgetval(self, op: Operation, env: dict) -> None:
        """TGETVAL: the element at flat offset ``index`` of the tile's storage, in its blayout
        order (``Tile::GetValue(offset)``, ``data()[offset]``); any offset inside the tile's
        rows x cols, valid or not."""
        tile = self.tile(op, op.operands[0], env)
        t, k = tile.type, int(env[op.operands[1]])
        self.need(op, 0 <= k < t.rows * t.cols, f"index {k} is outside the {t.rows}x{t.cols} tile")
        self.warn_unwritten(op, [op.operands[0]], env)
        r, c = (k % t.rows, k // t.rows) if t.blayout.data == "col_major" else divmod(k, t.cols)
        v = tile.data[r, c]
        env[op.results[0]] = _norm_int(int(v), op.results[0].type) if np.issubdtype(v.dtype, np.integer) else v

    def ub_view(self, op: Operation, t: pto.TileLikeType, addr: int) -> np.ndarray:
        """The tile ``t`` at UB byte ``addr`` as a ``rows x cols`` view of the block's UB bytes, in
        the physical order of its blayout (RowMajor: element (r, c) at ``(r*cols + c)*sizeof(T)``,
        ColMajor: ``(c*rows + r)*sizeof(T)``, pto_isa.md §2), so that tiles bound to the same or
        overlapping bytes read what the others wrote, as on the hardware."""
        if t.slayout.data != "none_box":
            raise op_error(op, f"a {t.slayout.data} (boxed) tile bound to a UB address has no semantics in "
                               "ptoc yet")
        if self.ub is None:
            self.ub = np.zeros(self.ub_bytes, dtype=np.uint8)
            self.ub_written = np.zeros(self.ub_bytes, dtype=bool)
        n = t.rows * t.cols * t.elem_bytes
        if addr < 0 or addr + n > self.ub.size:
            raise op_error(op, f"binds a {n}-byte tile at UB address {addr:#x}, outside the "
                               f"{self.ub.size // 1024} KiB UB")
        if addr % UB_ALIGN:
            raise op_error(op, f"binds a tile at UB address {addr:#x}, not {UB_ALIGN}-byte aligned")
        return typed_view(self.ub[addr:addr + n], t)

    def eval_set_validshape(self, op: Operation, env: dict) -> None:
        """``pto.set_validshape %t, %vr, %vc``: the tile's valid region from now on (a tile whose
        type leaves both valid dims to run time)."""
        self.need(op, len(op.operands) == 3, "expects `%tile, %valid_row, %valid_col`")
        tile = self.tile(op, op.operands[0], env)
        t = tile.type
        self.need(op, t.valid_row == pto.DYNAMIC and t.valid_col == pto.DYNAMIC,
                  "needs a tile whose type has v_row=? and v_col=?")
        vr, vc = (int(env[v]) for v in op.operands[1:3])
        self.need(op, 0 <= vr <= t.rows and 0 <= vc <= t.cols,
                  f"valid region {vr}x{vc} exceeds the tile shape {t.rows}x{t.cols}")
        tile.valid = (vr, vc)

    def eval_view(self, op: Operation, env: dict) -> None:
        """treshape: the source's bytes as the result type; subset: a block of the source; both
        views of the source's data (passes/tile_views.py), so writes through either name are seen
        through the other.  A planner-placed source gets bytes of its own first, in its layout."""
        src = self.tile(op, op.operands[0], env)
        t = op.results[0].type
        offsets = (0, 0) if op.name == "pto.treshape" else tuple(int(env[v]) for v in op.operands[1:3])
        why = view_error(op, offsets)
        if why is not None:
            raise op_error(op, why)
        if op.name == "pto.subset":
            (r, c), (h, w) = offsets, (t.rows, t.cols)
            view = Tile(t, src.data[r:r + h, c:c + w], (subset_valid(src.valid[0], r, h),
                                                         subset_valid(src.valid[1], c, w)), base=src)
        else:
            if src.type.slayout.data != "none_box" or t.slayout.data != "none_box":
                raise op_error(op, "of a boxed (fractal) tile has no semantics in ptoc yet")
            if src.base is not None and not _owns_bytes(src):
                raise op_error(op, "of a block that is not contiguous in its tile has no semantics in ptoc yet")
            if src.ub_at is None and not _owns_bytes(src):
                raw = np.zeros(src.type.nbytes, dtype=np.uint8)
                data = typed_view(raw, src.type)
                data[...] = src.data
                src.data = data
            view = Tile(t, typed_view(_bytes_of(src.data), t), t.valid_shape, base=src, ub_at=src.ub_at)
        view.written = src.written
        env[op.results[0]] = view

    def cube_tile(self, t: pto.TileLikeType, addr: int, valid: tuple[int, int]) -> Tile:
        """A cube-memory tile placed by hand at ``addr``: the tile of the same type last bound
        there (PTOAS's kernels re-declare an acc tile at its address and accumulate into it), else
        a fresh one.  Its bytes are the memory's (:meth:`cube_sync_in`), so a tile written over
        another's bytes (a clobber PTOAS's level 3 does not check, as in its TPushTPop test5) or
        reinterpreting them reads what the hardware holds."""
        bound = self.cube.setdefault(t.loc.data, [])
        hi = addr + t.nbytes
        for lo, old in bound:
            if lo == addr and (old.type is t or old.type.with_valid(valid) == t.with_valid(valid)):
                return old if old.valid == valid else Tile(t, old.data, valid, written=old.written,
                                                           cube_at=old.cube_at)
        fresh = new_tile(t, valid)
        fresh.written = False
        fresh.cube_at = (t.loc.data, addr)
        bound[:] = [(lo, old) for lo, old in bound if lo + old.type.nbytes <= addr or hi <= lo] + [(addr, fresh)]
        return fresh

    def _cube_span(self, t: Tile) -> tuple[str, int, int, np.ndarray, np.ndarray, np.ndarray]:
        """A tile placed by hand in a cube memory: (memory, lo, hi, index, the bytes ``[lo, hi)``
        as its element type, their written flags as unsigned ints of that size), ``index`` (shape
        ``(rows, cols)``) giving each element's place in those two views where the executor puts it
        (runtime/cube.py ``tile_offsets``: an element's bytes are one element of the view, so
        copies and flags go per element, not per byte); the memory grows to hold it."""
        loc, lo = t.cube_at
        tt = t.type
        size = tt.elem_bytes
        key = (tt.rows, tt.cols, tt.blayout.data, tt.slayout.data, tt.fractal.data, size)
        got = self.cube_index.get(key)
        if got is None:
            off = cube.tile_offsets(tt.rows, tt.cols, cube.layout_name(tt.blayout.data, tt.slayout.data),
                                    tt.fractal.data, size)
            got = self.cube_index[key] = (off // size, int(off.max()) + size)
        idx, span = got
        hi = lo + span
        mem = self.cube_mem.get(loc)
        if mem is None or mem[0].size < hi:
            n = max(hi, 2 * mem[0].size if mem else 0)
            grown = (np.zeros(n, np.uint8), np.zeros(n, bool))
            if mem is not None:
                grown[0][:mem[0].size], grown[1][:mem[1].size] = mem
            mem = self.cube_mem[loc] = grown
        return (loc, lo, hi, idx, mem[0][lo:hi].view(t.data.dtype),
                mem[1][lo:hi].view(f"u{size}"))

    def _cube_wrote(self, loc: str, lo: int, hi: int, data: np.ndarray) -> None:
        writers = self.cube_writers.setdefault(loc, [])
        writers[:] = [w for w in writers if not (lo <= w[0] and w[1] <= hi)] + [(lo, hi, data)]

    def cube_sync_in(self, t: Tile) -> None:
        """Before an op reads or writes ``t``: where another tile's data last wrote some of its bytes,
        ``t`` takes the memory's bytes (its own writes are already its data)."""
        loc, lo, hi, idx, data, _ = self._cube_span(t)
        if any(a < hi and lo < b and d is not t.data for a, b, d in self.cube_writers.get(loc, ())):
            t.data[...] = data[idx]
            self._cube_wrote(loc, lo, hi, t.data)

    def cube_sync_out(self, t: Tile) -> None:
        """After an op wrote ``t``: its data becomes the memory's bytes."""
        loc, lo, hi, idx, data, written = self._cube_span(t)
        data[idx] = t.data
        written[idx] = _EVERY_BYTE_TRUE[written.dtype.itemsize]
        self._cube_wrote(loc, lo, hi, t.data)

    def eval_eventid_array(self, op: Operation, env: dict) -> None:
        """``pto.declare_eventid_array`` (N event ids, 0 initially), ``eventid_array_set %a[%i], %v``,
        ``%e = eventid_array_get %a[%i]``: a small array of the scalar unit."""
        if op.name == "pto.declare_eventid_array":
            env[op.results[0]] = [0] * pto.eventid_array_size(op.results[0].type)
            return
        arr = env[op.operands[0]]
        i = int(env[op.operands[-1]])  # set: (array, value, index); get: (array, index)
        self.need(op, 0 <= i < len(arr), f"event-id array index {i} is out of range 0..{len(arr) - 1}")
        if op.name == "pto.eventid_array_set":
            arr[i] = int(env[op.operands[1]])
        else:
            env[op.results[0]] = arr[i]

    def eval_for(self, op: scf.ForOp, env: dict) -> None:
        lb, ub, step = (int(env[v]) for v in (op.lb, op.ub, op.step))
        t = op.lb.type
        if _int_width(t) is not None and not isinstance(t, IndexType):
            w = _int_width(t)
            lb, ub, step = _as_signed(lb, w), _as_signed(ub, w), _as_signed(step, w)
        if step <= 0:
            raise op_error(op, f"step must be positive, got {step}")
        values = [env[v] for v in op.iter_args]
        body = op.body.blocks[0]
        for i in range(lb, ub, step):
            self.step()
            values = self.run_block(body, [i, *values], env)
        for r, v in zip(op.res, values):
            env[r] = v

    def eval_alloc_tile(self, op: pto.AllocTileOp, valid_row, valid_col, addr, result, env: dict) -> None:
        t = result.type
        vr = t.valid_row if valid_row is None else int(env[valid_row])
        vc = t.valid_col if valid_col is None else int(env[valid_col])
        if not (0 <= vr <= t.rows and 0 <= vc <= t.cols):
            raise op_error(op, f"valid region {vr}x{vc} exceeds the tile shape {t.rows}x{t.cols}")
        if addr is not None and _in_ub(t):
            a = int(env[addr])
            env[result] = Tile(t, self.ub_view(op, t, a), (vr, vc), ub_at=(a, a + t.nbytes))
        elif addr is not None:
            env[result] = self.cube_tile(t, int(env[addr]), (vr, vc))
            return
        else:
            env[result] = new_tile(t, (vr, vc))
        env[result].written = False

    def eval_partition_view(self, op: pto.PartitionViewOp, source, offsets, sizes, result, env: dict) -> None:
        pv = env[source]
        if not isinstance(pv, TensorView):
            raise op_error(op, "source is not a tensor view the golden model knows")
        offsets = tuple(int(env[v]) for v in offsets)
        sizes = tuple(int(env[v]) for v in sizes)
        if len(offsets) != len(pv.shape):
            raise op_error(op, f"has {len(offsets)} offsets for a rank-{len(pv.shape)} view")
        env[result] = PartitionView(pv, offsets, sizes)

    def eval_while(self, op: scf.WhileOp, env: dict) -> None:
        """The condition region runs, then (while its scf.condition holds) the do region, whose
        yield feeds the next condition; the results are what the last scf.condition passed on."""
        values = [env[v] for v in op.arguments]
        while True:
            self.step()
            cond, *values = self.run_block(op.before_region.block, values, env)
            if not cond:
                break
            values = self.run_block(op.after_region.block, values, env)
        for r, v in zip(op.res, values):
            env[r] = v

    def eval_make_tensor_view(self, op: pto.MakeTensorViewOp, env: dict) -> None:
        gm = env[op.ptr[0]]
        if not isinstance(gm, GMArray):
            raise op_error(op, "pointer is not a GM kernel argument (pto.addptr and friends have no semantics yet)")
        layout = _attr_body(op, "layout")
        if layout is not None and "nz" in layout.lower():
            raise op_error(op, "NZ tensor views have no semantics in ptoc yet")
        shape = tuple(int(env[v]) for v in op.shape_)
        strides = tuple(int(env[v]) for v in op.strides_)
        env[op.result] = TensorView(gm, shape, strides)

    # ---- tile ops ----------------------------------------------------------------------
    def tile(self, op: Operation, value: SSAValue, env: dict) -> Tile:
        v = env[value]
        if not isinstance(v, Tile):
            raise op_error(op, f"operand {value} is not a tile")
        return v

    def dst(self, step: _TileStep, env: dict, hint: tuple[int, int] | None) -> Tile:
        """The destination tile: the ``outs`` buffer (L2), or a new tile for the L1 result
        (its valid region from the result type, ``?`` taken from ``hint``)."""
        op = step.op
        out, res, t, vr, vc = step.dst_at
        if out is not None:
            return self.tile(op, out, env)
        if res is None:
            raise op_error(op, "has no destination")
        if t is None:
            raise op_error(op, "result is not a tile")
        if pto.DYNAMIC in (vr, vc):
            if hint is None:
                raise op_error(op, "result valid region is dynamic and cannot be inferred")
            vr = hint[0] if vr == pto.DYNAMIC else vr
            vc = hint[1] if vc == pto.DYNAMIC else vc
        tile = new_tile(t, (vr, vc))
        tile.fresh = True
        env[res] = tile
        return tile

    @staticmethod
    def need(op: Operation, cond: bool, message: str) -> None:
        if not cond:
            raise op_error(op, message)

    @staticmethod
    def fn(step: _TileStep):
        """The op's element function, raw: :meth:`call` runs under one ``np.errstate``."""
        if step.fn is None:
            raise op_error(step.op, "has no element function (FN) attached")
        return step.fn

    def reducer(self, step: _TileStep):
        """The reduction's element function ``fn(x, axis)``: a sum in :attr:`sum_order`."""
        if step.fn is E.reduce_sum.fn and self.sum_order != "exact":
            return lambda x, axis: E.sum_in_order(x, axis, self.sum_order)
        return self.fn(step)

    @staticmethod
    def tile_op_runner(op: pto.TileOp):
        """The tile op's rule as a step ``run(evaluator, env)`` (family, tiles read, results looked
        up once)."""
        why = None
        if op.name in cube.NO_SEMANTICS:
            why = f"has no semantics in ptoc yet: {cube.NO_SEMANTICS[op.name]}"
        elif not type(op).HAS_SEMANTICS or isinstance(op, pto.OpaqueTileOp):
            why = pto.no_semantics(op) or "has no semantics in ptoc yet"
        cls = type(op)
        if cls not in _FAMILY_OF:
            _FAMILY_OF[cls] = next((h for family, h in _FAMILIES.items() if issubclass(cls, family)), None)
        handler = _FAMILY_OF[cls]
        if why is not None or handler is None:
            def fail(ev, env):
                raise op_error(op, why or "has no semantics in ptoc yet")
            return fail
        step = _TileStep(op)
        reads, res, outs = tuple(tile_reads(op)), step.res, step.outs
        in_cube = [v for v in dict.fromkeys((*reads, *outs)) if isinstance(v.type, pto.TileBufType)
                   and not _in_ub(v.type)]

        def run(ev, env: dict) -> None:
            for v in in_cube:
                t = env.get(v)
                if isinstance(t, Tile) and t.cube_at is not None:
                    ev.cube_sync_in(t)
            ev.warn_unwritten(op, reads, env)
            handler(ev, step, env)
            for r in res:
                t = env.get(r)
                if isinstance(t, Tile):
                    t.fresh = False
            for v in outs:
                t = env.get(v)
                if isinstance(t, Tile):
                    t.written = True
                    if t.base is not None:
                        t.base.written = True
                    if t.ub_at is not None:
                        ev.ub_written[t.ub_at[0]:t.ub_at[1]] = True
                    if t.cube_at is not None:
                        ev.cube_sync_out(t)
        return run

    def warn_unwritten(self, op: Operation, values, env: dict) -> None:
        for v in values:
            t = env.get(v)
            if isinstance(t, Tile) and not self.holds_data(t) and op not in self.warned:
                self.warned.add(op)  # legal code (PTOAS's samples do it), but its values mean nothing
                filename, line, col = location_of(op)
                sys.stderr.write(format_diagnostic(Diagnostic(
                    f"'{op.name}' op reads {value_name(v)}, which nothing has written: its contents are undefined",
                    filename, line, col, severity="warning")) + "\n")

    def holds_data(self, t: Tile) -> bool:
        """Something wrote the tile (a tile placed by hand: some of its bytes, through any name)."""
        if t.ub_at is not None:
            return bool(self.ub_written[t.ub_at[0]:t.ub_at[1]].any())
        if t.cube_at is not None and not t.written:
            _, _, _, idx, _, written = self._cube_span(t)
            return bool(written[idx].any())
        return t.written or (t.base is not None and self.holds_data(t.base))

    def _same_valid(self, op, tile: Tile, valid: tuple[int, int], who: str) -> None:
        if tile.valid != tuple(valid):
            raise op_error(op, f"{who} valid region {tile.valid[0]}x{tile.valid[1]} differs from dst's "
                               f"{valid[0]}x{valid[1]} at run time")

    @staticmethod
    def _store(dst: Tile, r: int, c: int, values: np.ndarray) -> None:
        values = np.asarray(values)
        if (dst.fresh and values.shape == dst.data.shape and values.dtype == dst.dtype
                and values.flags.owndata and values.flags.c_contiguous):
            dst.data = values  # a new array from the element function: adopt it, no copy
        else:
            dst.data[:r, :c] = values.astype(dst.dtype, copy=False)
        dst.fresh = False

    # elementwise tile-tile: dst = fn(src0, src1)
    def family_binary(self, step, env):
        op = step.op
        a, b = (self.tile(op, v, env) for v in step.ins[:2])
        dst = self.dst(step, env, a.valid)
        r, c = dst.valid
        self._same_valid(op, a, dst.valid, "src0")
        self._same_valid(op, b, dst.valid, "src1")
        self._store(dst, r, c, self.fn(step)(a.data[:r, :c], b.data[:r, :c]))

    def family_part(self, step, env):
        """TPARTADD.md's cases: the source valid on all of dst's region, fn over the other's region
        (the page's pattern checked here when a valid shape is known only at run time)."""
        op = step.op
        a, b = (self.tile(op, v, env) for v in step.ins[:2])
        dst = self.dst(step, env, None)
        r, c = dst.valid
        if r == 0 or c == 0:
            return  # "If dst has a zero valid region, the instruction returns early"
        found = self._part_pattern(op, dst.valid, a.valid, b.valid, "TPARTADD.md")
        if pto.TARGET_RULES.get(op.name) is pto.tpart_a5_early_return:
            self.need(op, self.target != "ascend950" or (0 not in a.valid and 0 not in b.valid),
                      "with a source of zero valid region at run time returns early on A5 (dst left as it "
                      "was, unlike on A2A3); not supported by ptoc")
        full, (sr, sc) = found
        out = (a, b)[full].data[:r, :c].copy()
        out[:sr, :sc] = self.fn(step)(a.data[:sr, :sc], b.data[:sr, :sc])
        self._store(dst, r, c, out)

    def _part_pattern(self, op, dst: tuple, a: tuple, b: tuple, page: str):
        """:func:`pto.partial_regions` of valid regions known at run time, or a located error."""
        found = pto.partial_regions(dst, a, b)
        self.need(op, found is not None,
                  f"needs one source's valid region equal to dst's and the other's no larger at run time "
                  f"({page}; got src0 {a[0]}x{a[1]}, src1 {b[0]}x{b[1]}, dst {dst[0]}x{dst[1]})")
        return found

    def family_unary(self, step, env):
        op = step.op
        a = self.tile(op, step.ins[0], env)
        dst = self.dst(step, env, a.valid)
        r, c = dst.valid
        self._same_valid(op, a, dst.valid, "src")
        self._store(dst, r, c, self.fn(step)(a.data[:r, :c]))

    def family_scalar(self, step, env):
        op = step.op
        (sv,) = op.scalar_ins()
        a = self.tile(op, op.src, env)
        dst = self.dst(step, env, a.valid)
        r, c = dst.valid
        self._same_valid(op, a, dst.valid, "src")
        s = E.scalar_to(env[sv], a.dtype)
        x = a.data[:r, :c]
        f = self.fn(step)
        self._store(dst, r, c, f(s, x) if op.scalar_first else f(x, s))

    def family_expands(self, step, env):
        dst = self.dst(step, env, None)
        r, c = dst.valid
        dst.data[:r, :c] = E.scalar_to(env[step.ins[0]], dst.dtype)

    def family_rowexpand(self, step, env):
        """The expanded operand and mode are the op's ``expand_analysis()``, which the lowerings
        follow too; when only the run-time valid shapes tell it (``pto.AT_RUN_TIME``), src0 is
        the full operand when its valid shape is dst's, else src1 (the CPU simulator's and A5's
        order)."""
        op = step.op
        if step.expand is None:
            step.expand = op.expand_analysis()
        expanded, mode = step.expand
        if expanded == pto.AT_RUN_TIME:
            a = self.tile(op, step.ins[0], env)
            expanded = 1 if a.valid == self.tile(op, step.outs[0], env).valid else 0
        full = self.tile(op, step.ins[1 - expanded], env)
        ex = self.tile(op, step.ins[expanded], env)
        dst = self.dst(step, env, full.valid)
        r, c = dst.valid
        self._same_valid(op, full, dst.valid, f"the full-size operand src{1 - expanded}")
        self.need(op, ex.valid[0] == r,
                  f"src{expanded} valid rows {ex.valid[0]} differ from dst valid rows {r} at run time")
        x = full.data[:r, :c]
        if mode == 1:
            self.need(op, ex.valid[1] == 1, f"Mode 1 needs src{expanded} valid cols == 1, got {ex.valid[1]}")
            b = ex.data[:r, 0:1]  # s_i, broadcast along the row
        else:
            k = 32 // dst.dtype.itemsize
            self.need(op, ex.valid[1] == k,
                      f"Mode 2 needs src{expanded} valid cols == 32/sizeof(T) = {k}, got {ex.valid[1]}")
            b = ex.data[:r, :k][:, np.arange(c) % k]  # b_i[j mod k]
        f = self.fn(step)
        self._store(dst, r, c, f(x, b) if expanded == 1 else f(b, x))

    def family_colexpand(self, step, env):
        op = step.op
        a, b = (self.tile(op, v, env) for v in step.ins[:2])
        dst = self.dst(step, env, a.valid)
        r, c = dst.valid
        self._same_valid(op, a, dst.valid, "src0")
        self.need(op, b.valid[1] == c and (b.valid[0] >= 1 or r == 0),
                  f"src1 valid region {b.valid[0]}x{b.valid[1]} does not give one value per dst column ({c})")
        self._store(dst, r, c, self.fn(step)(a.data[:r, :c], b.data[0:1, :c]))

    def family_rowbroadcast(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        dst = self.dst(step, env, None if step.outs else (src.valid[0], step.res[0].type.cols))
        r, c = dst.valid
        self.need(op, src.valid[0] == r and (src.valid[1] >= 1 or c == 0),
                  f"src valid region {src.valid[0]}x{src.valid[1]} does not give one value per dst row ({r})")
        dst.data[:r, :c] = src.data[:r, 0:1]

    def family_colbroadcast(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        dst = self.dst(step, env, None if step.outs else (step.res[0].type.rows, src.valid[1]))
        r, c = dst.valid
        self.need(op, src.valid[1] == c and (src.valid[0] >= 1 or r == 0),
                  f"src valid region {src.valid[0]}x{src.valid[1]} does not give one value per dst column ({c})")
        dst.data[:r, :c] = src.data[0:1, :c]

    def family_rowreduce(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        r, c = src.valid
        dst = self.dst(step, env, (r, 1))
        if r <= 0 or c <= 0:
            raise op_error(op, f"src valid region {r}x{c} is empty")
        if dst.valid[0] != r:
            raise op_error(op, f"dst valid rows {dst.valid[0]} differ from src valid rows {r}")
        dst.data[:r, 0] = self.reducer(step)(src.data[:r, :c], 1)

    def family_colreduce(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        r, c = src.valid
        dst = self.dst(step, env, (1, c))
        if dst.valid[1] != c:
            raise op_error(op, f"dst valid cols {dst.valid[1]} differ from src valid cols {c}")
        if r == 0 or c == 0:
            return  # nothing to reduce: dst untouched
        dst.data[0, :c] = self.reducer(step)(src.data[:r, :c], 0)

    def family_argreduce(self, step, env):
        """The index reductions: the row/column rules, the element function giving the indices."""
        op = step.op
        (self.family_rowreduce if op.AXIS == 1 else self.family_colreduce)(step, env)

    def family_gather(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        flat = src.data.reshape(-1)
        if op.form == "compare":
            raise op_error(op, pto.GATHER_COMPARE_NO_SEMANTICS)
        if op.form == "index":
            idx = self.tile(op, step.ins[1], env)
            dst = self.dst(step, env, idx.valid)
            r, c = dst.valid
            self.need(op, idx.valid[0] >= r and idx.valid[1] >= c,
                      f"indices' valid region {idx.valid[0]}x{idx.valid[1]} does not cover dst's {r}x{c} at run time")
            if op.BYTE_OFFSETS:  # uint32 byte offsets, a dst element read at each (TGATHERB.md)
                b = idx.data[:r, :c].view(np.uint32).astype(np.int64)
                e = dst.dtype.itemsize
                nbytes = src.data.nbytes
                self.need(op, bool((b % e == 0).all()),
                          f"a byte offset not a multiple of {e} (the size of dst's element): no semantics for a read "
                          "across two elements")
                self.need(op, bool((b + e <= nbytes).all()),
                          f"a byte offset past src's {nbytes}-byte tile (out-of-range offsets are target-defined)")
                raw = np.ascontiguousarray(src.data).view(np.uint8).reshape(-1)
                dst.data[:r, :c] = raw[b[..., None] + np.arange(e)].view(dst.dtype)[..., 0]
                return
            k = idx.data[:r, :c].astype(np.int64)
            self.need(op, bool(((k >= 0) & (k < flat.size)).all()),
                      f"an index outside src's {src.data.shape[0]}x{src.data.shape[1]} tile (0..{flat.size - 1})")
            dst.data[:r, :c] = flat[k]
            return
        period, pos = op.pattern()
        r, c = src.valid
        out = src.data[:r, pos:c:period].reshape(-1)
        dst = self.dst(step, env, (1, out.size))
        self.need(op, out.size <= dst.data.size,
                  f"the {out.size} selected elements do not fit dst's {dst.data.shape[0]}x{dst.data.shape[1]} tile")
        dst.data[np.unravel_index(np.arange(out.size), dst.data.shape)] = out

    def family_cmp(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        r, c = src.valid
        other = env[step.ins[1]]
        if not isinstance(other, Tile):
            y = E.scalar_to(other, src.dtype)
        elif op.SCALAR:  # TCMPS's tile form: element (0, 0)
            y = other.data[0, 0]
        else:
            self._same_valid(op, other, src.valid, "src1")
            y = other.data[:r, :c]
        dst = self.dst(step, env, (r, -(-c // (8 * op.dst_type.elem_bytes))))
        words = dst.valid[1]
        nbytes = words * dst.dtype.itemsize
        self.need(op, dst.valid[0] == r, f"dst valid rows {dst.valid[0]} differ from src valid rows {r}")
        self.need(op, nbytes * 8 >= c, f"dst's {words} valid columns hold fewer than the {c} predicate bits of a row")
        dst.data[:r, :words].view(np.uint8)[...] = E.pack_predicate(E.compare(src.data[:r, :c], y, op.mode), nbytes)
        dst.fresh = False

    def family_sel(self, step, env):
        op = step.op
        tiles = op.tile_ins()
        mask = self.tile(op, tiles[0], env)
        srcs = [self.tile(op, v, env) for v in tiles[1:2 if op.SCALAR else 3]]
        dst = self.dst(step, env, srcs[0].valid)
        r, c = dst.valid
        for s in srcs:
            self._same_valid(op, s, dst.valid, "src")
        nbytes = -(-c // 8)
        self.need(op, mask.valid[0] >= r and mask.valid[1] * mask.dtype.itemsize >= nbytes,
                  f"mask valid region {mask.valid[0]}x{mask.valid[1]} does not hold the bits of dst's {r}x{c}")
        bits = E.predicate_bits(np.ascontiguousarray(mask.data[:r]).view(np.uint8)[:, :nbytes], c)
        other = E.scalar_to(env[op.scalar_ins()[0]], dst.dtype) if op.SCALAR else srcs[1].data[:r, :c]
        self._store(dst, r, c, np.where(bits, srcs[0].data[:r, :c], other))

    def family_partarg(self, step, env):
        """TPARTARGMAX/TPARTARGMIN (dialects/pto.py ``PartialArgOp``): the covering source pair
        copied, then the compare and select where both pairs are valid."""
        op = step.op
        v0, v1, i0, i1 = (self.tile(op, v, env) for v in step.ins)
        dsts = ([self.tile(op, v, env) for v in step.outs]
                or [self.result_tile(step, k, v0.valid, env) for k in range(2)])
        for val, idx, who in ((v0, i0, "src0"), (v1, i1, "src1"), (*dsts, "dst")):
            self.need(op, val.valid == idx.valid, f"{who}Val's valid region {val.valid[0]}x{val.valid[1]} differs from "
                      f"{who}Idx's {idx.valid[0]}x{idx.valid[1]} at run time")
        R, C = dsts[0].valid
        if R == 0 or C == 0:
            return
        full, (r, c) = self._part_pattern(op, (R, C), v0.valid, v1.valid, "TPARTARGMAX.md")
        fv, fi = ((v0, i0), (v1, i1))[full]
        a, b = v0.data[:r, :c], v1.data[:r, :c]
        with np.errstate(invalid="ignore"):
            take0 = a > b if op.IS_MAX else a < b
        both = np.where(take0, a, b), np.where(take0, i0.data[:r, :c], i1.data[:r, :c])  # before dst is written
        for d, s, x in zip(dsts, (fv, fi), both):
            d.data[:R, :C] = s.data[:R, :C]
            d.data[:r, :c] = x

    def family_scatter(self, step, env):
        op = step.op

        src, idx = (self.tile(op, v, env) for v in step.ins)
        dst = self.dst(step, env, src.valid)
        r, c = idx.valid
        self.need(op, src.valid[0] >= r and src.valid[1] >= c,
                  f"src's valid region {src.valid[0]}x{src.valid[1]} does not cover the indices' {r}x{c} at run time")
        k = idx.data[:r, :c].astype(np.int64).reshape(-1)
        n = dst.data.size
        self.need(op, bool(((k >= 0) & (k < n)).all()),
                  f"an index outside dst's {dst.data.shape[0]}x{dst.data.shape[1]} tile (0..{n - 1})")
        dst.data[...] = 0
        _, first_from_end = np.unique(k[::-1], return_index=True)
        last = k.size - 1 - first_from_end  # the last writer of each position
        dst.data[np.unravel_index(k[last], dst.data.shape)] = src.data[:r, :c].reshape(-1)[last]

    def _indexed_slots(self, op, env, data):
        """(the GM elements an MGATHER/MSCATTER accesses, as data's valid region (R, C), and which it
        accesses: per row (Row) or element (Elem)), the page's layout and index rules checked;
        only the accessed elements of the table are indexed."""
        pv, idx = env[op.table], self.tile(op, op.index, env)
        self.need(op, isinstance(pv, PartitionView), "the table is not a partition view of a kernel argument")
        R, C = data.valid
        self.need(op, R >= 1 and C >= 1, f"{op.DATA_NAME} valid shape {R}x{C}: both modes require ValidRow >= 1 "
                                         f"and ValidCol >= 1 ({op.PAGE})")
        width = pv.sizes[-1] if pv.sizes else 1
        if op.coalesce == "row":
            self.need(op, width == C, f"Coalesce::Row: the table's rows have {width} elements, the "
                                      f"{op.DATA_NAME}'s valid cols are {C} ({op.PAGE})")
            self.need(op, self.target != "ascend950" or pv.contiguous(), f"{op.A5_ROWS_RULE} ({op.PAGE})")
            shapes = ((1, R),) if self.target == "a2a3" else ((1, R), (R, 1))
            self.need(op, idx.valid in shapes, f"Coalesce::Row needs an index tile of valid shape "
                                               f"{' or '.join(f'[{a}, {b}]' for a, b in shapes)} on "
                                               f"{self.target}, got {idx.valid[0]}x{idx.valid[1]} ({op.PAGE})")
            raw = idx.data[:idx.valid[0], :idx.valid[1]].reshape(-1)
            cap = math.prod(pv.sizes[:-1])
        else:
            self.need(op, pv.contiguous(), f"{op.FLAT_TABLE_RULE} ({op.PAGE})")
            self.need(op, idx.valid == (R, C), f"Coalesce::Elem needs an index tile of valid shape {R}x{C}, got "
                                               f"{idx.valid[0]}x{idx.valid[1]} ({op.PAGE})")
            raw = idx.data[:R, :C]
            cap = math.prod(pv.sizes)
        k = np.ascontiguousarray(raw).view(np.uint32).astype(np.int64)
        self.need(op, cap >= 1, f"an empty table has no element to access ({op.PAGE})")
        if op.oob == "undefined":
            bad = k[k >= cap]
            self.need(op, bad.size == 0, f"index {int(bad[0]) if bad.size else 0} (read as uint32) is outside the "
                                         f"table's capacity {cap} with {op.OOB_KEY} = undefined: 'caller guarantees "
                                         f"idx < capacity' ({op.PAGE})")
        safe, on = E.remap_indices(k, cap, op.oob)
        pos = safe[:, None] * width + np.arange(C) if op.coalesce == "row" else safe
        gm = pv.at(np.unravel_index(pos, pv.sizes))
        mask = np.broadcast_to(on[:, None] if op.coalesce == "row" else on, gm.shape)
        self._gm_bounds(op, pv, gm[mask])
        return np.where(mask, gm, 0), on  # (an element not accessed: GM element 0, never read)

    def family_mgather(self, step, env):
        op = step.op
        dst = self.dst(step, env, None)
        gm, on = self._indexed_slots(op, env, dst)
        R, C = dst.valid
        vals = env[op.table].view.gm.data[gm]
        if vals.dtype != dst.dtype:
            vals = vals.view(dst.dtype)
        vals = np.where(on[..., None] if op.coalesce == "row" else on, vals, np.zeros((), dst.dtype))
        dst.data[:R, :C] = vals.reshape(R, C)

    def family_mscatter(self, step, env):
        op = step.op
        src = self.tile(op, op.data, env)
        at, on = self._indexed_slots(op, env, src)
        R, C = src.valid
        gm = env[op.table].view.gm
        vals = src.data[:R, :C]
        if vals.dtype != gm.data.dtype:
            vals = vals.view(gm.data.dtype)
        slots = at[on].reshape(-1)  # GM elements in write order (a Row slot: its C elements)
        vals = vals[on].reshape(-1)
        if op.atomic == "none" and op.conflict == "default":
            self.need(op, np.unique(slots).size == slots.size,
                      f"two writers of one table slot with scatterConflict = default: 'the surviving writer is "
                      f"warp-scheduler dependent' ({op.PAGE})")
        E.scatter_in_order(gm.own(), slots, vals, op.atomic)
        gm.written = True

    def family_sort32(self, step, env):
        op = step.op
        src, idx = (self.tile(op, v, env) for v in step.ins[:2])
        r, c = src.valid
        coef = 8 // src.dtype.itemsize
        dst = self.dst(step, env, (r, coef * c))
        self.need(op, idx.valid[1] == c and idx.valid[0] in (1, r),
                  f"idx's valid region {idx.valid[0]}x{idx.valid[1]} is neither src's {r}x{c} nor one row of it at run time")
        self.need(op, len(step.ins) == 3 or c % pto.SORT_BLOCK == 0,
                  f"without a tmp tile src's valid cols must be a multiple of {pto.SORT_BLOCK} (got {c} at run time)")
        err = op.dst_error(r, dst.valid)
        self.need(op, err is None, err)
        pairs = np.empty((r, 8 * c), dtype=np.uint8)
        for b0 in range(0, c, pto.SORT_BLOCK):
            b1 = min(c, b0 + pto.SORT_BLOCK)
            keys = np.broadcast_to(idx.data[:idx.valid[0], b0:b1], (r, b1 - b0))
            pairs[:, 8 * b0:8 * b1] = E.sort_pairs(src.data[:r, b0:b1], keys)
        row = dst.data.shape[1] * dst.dtype.itemsize
        if 8 * c <= row or r == 0:
            dst.data[:r].view(np.uint8)[:, :8 * c] = pairs
            return
        # rows narrower than their pairs (Sort32Op.dst_bytes_written): row i at byte i * row, in order
        self.need(op, dst.base is None and dst.data.flags.c_contiguous,
                  f"writes {8 * c}-byte rows of value-index pairs into {row}-byte rows of a view of another tile")
        flat = dst.data.reshape(-1).view(np.uint8)
        for i in range(r):
            n = min(8 * c, flat.size - i * row)
            flat[i * row:i * row + n] = pairs[i, :n]
        if dst.ub_at is not None:  # the last row's rest lands in the UB bytes past the tile
            past = slice(dst.ub_at[1], dst.ub_at[1] + 8 * c - n)
            self.need(op, past.stop <= self.ub.size, "writes value-index pairs past the end of the UB")
            self.ub[past] = pairs[r - 1, n:]
            self.ub_written[past] = True

    def family_mrgsort(self, step, env):
        op = step.op
        dst = self.dst(step, env, None)
        out = dst.data[0].view(np.uint8)
        e = dst.dtype.itemsize
        if op.single:
            src = self.tile(op, step.ins[0], env)
            block = int(env[step.ins[1]])
            c = src.valid[1]
            err = op.merge_error([c], dst.valid[1], block)
            self.need(op, err is None, err)
            row = src.data[0].view(np.uint8)
            for g in range(0, c * e, 4 * block * e):
                lists = [row[g + k * block * e:g + (k + 1) * block * e] for k in range(4)]
                merged, _ = E.merge_pairs(lists, dst.dtype, False)
                out[g:g + merged.size] = merged
            return
        srcs = [self.tile(op, v, env) for v in step.ins[:-1]]
        err = op.merge_error([t.valid[1] for t in srcs], dst.valid[1])
        self.need(op, err is None, err)
        merged, _ = E.merge_pairs([t.data[0].view(np.uint8)[:t.valid[1] * e] for t in srcs], dst.dtype,
                                  op.exhausted)
        out[:merged.size] = merged

    def family_pairreduce(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        dst = self.dst(step, env, src.valid)
        r, c = dst.valid
        self._same_valid(op, src, dst.valid, "src0")
        half = (c + 1) // 2
        x = src.data[:r, :c]
        if c % 2:  # the partner of src[i, C-1] is outside the valid region: +0
            x = np.concatenate([x, np.zeros((r, 1), dtype=x.dtype)], axis=1)
        sums = self.fn(step)(x[:, 0::2], x[:, 1::2])
        self._store(dst, r, half, sums)
        dst.data[:r, half:c] = 0

    def family_composed(self, step, env):
        op = step.op
        from pto_compiler.dialects.a2a3 import OPCODES

        named = op.named_operands()
        dst = self.dst(step, env, self.tile(op, named["a"], env).valid)
        r, c = dst.valid
        vals = {}
        for k, v in named.items():
            if k == "s":
                vals[k] = E.scalar_to(env[v], dst.dtype)
                vals["-s"] = E.neg(vals[k])
            else:
                t = self.tile(op, v, env) if k != "dst" else dst
                if k != "dst":
                    self._same_valid(op, t, dst.valid, f"src {k}")
                vals[k] = t.data[:r, :c]
        for vop, *args in op.STEPS:
            xs = [vals[x] for x in args]
            if len(xs) == 2:
                xs[1] = np.broadcast_to(xs[1], xs[0].shape)
            vals["t"] = getattr(E, OPCODES[vop].semantics)(*xs)
        self._store(dst, r, c, vals["t"])

    def family_axpy(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        dst = self.dst(step, env, src.valid)
        r, c = dst.valid
        self._same_valid(op, src, dst.valid, "src")
        x = E.convert(src.data[:r, :c], dst.dtype)
        s = E.scalar_to(env[step.ins[1]], dst.dtype)
        self._store(dst, r, c, E.add(E.mul(x, s), dst.data[:r, :c]))

    def family_trans(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        r, c = src.valid
        dst = self.dst(step, env, (c, r))
        self.need(op, dst.valid == (c, r), f"dst valid region {dst.valid[0]}x{dst.valid[1]} is not src's "
                                           f"{r}x{c} transposed at run time")
        dst.data[:c, :r] = src.data[:r, :c].T

    def family_fill(self, step, env):
        op = step.op
        dst = self.dst(step, env, None)
        r, c = dst.valid
        s = env[step.ins[0]]
        flag = op.flag("descending" if op.FAMILY == "ci" else "upperOrLower")
        dst.data[:r, :c] = self.fn(step)((r, c), int(s), flag, dst.dtype)

    def family_concat(self, step, env):
        op = step.op
        a, b = (self.tile(op, v, env) for v in step.ins)
        dst = self.dst(step, env, (a.valid[0], a.valid[1] + b.valid[1]))
        r, c = dst.valid
        c0, c1 = a.valid[1], b.valid[1]
        self.need(op, a.valid[0] == r and b.valid[0] == r and c0 + c1 == c,
                  f"src0 {a.valid[0]}x{c0} and src1 {b.valid[0]}x{c1} do not concatenate to dst's {r}x{c} at run time")
        dst.data[:r, :c0] = a.data[:r, :c0]
        dst.data[:r, c0:c] = b.data[:r, :c1]

    def family_fillpad(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        dst = self.dst(step, env, (src.type.rows, src.type.cols))
        if op.INPLACE:
            self.need(op, np.shares_memory(src.data, dst.data), "src and dst are not the same storage "
                      "(TFILLPAD.md: the in-place form's 'destination and source must alias the same storage')")
        r, c = src.valid
        dst.data[...] = self.fn(step)(src.data[:r, :c], dst.data.shape, dst.dtype, dst.type.pad.data)

    def family_interleave(self, step, env):
        op = step.op
        srcs = [self.tile(op, v, env) for v in step.ins]
        r, c = srcs[0].valid
        if op.single:
            self.need(op, c % 2 == 0, f"src's valid cols ({c}) are odd at run time ({op.page})")
            c //= 2
        else:
            self.need(op, c % 2 == 0 and all(s.valid == srcs[0].valid for s in srcs),
                      f"the sources' valid regions {[s.valid for s in srcs]} are not one shape of even cols at run "
                      f"time ({op.page})")
        dsts = [self.tile(op, v, env) for v in step.outs] or [self.result_tile(step, k, (r, c), env) for k in range(2)]
        for d in dsts:
            self.need(op, d.valid[0] == r and d.valid[1] >= c, f"dst valid region {d.valid[0]}x{d.valid[1]} does "
                                                               f"not hold the {r}x{c} result at run time ({op.page})")
        for d, x in zip(dsts, self.fn(step)(*(s.data[:r, :s.valid[1]] for s in srcs))):
            d.data[:r, :c] = x

    def result_tile(self, step, k: int, hint: tuple[int, int], env: dict) -> Tile:
        """A new tile for L1 result ``k`` (its valid region from the result type, ``?`` from ``hint``)."""
        t = step.res[k].type
        valid = tuple(h if v == pto.DYNAMIC else v for v, h in zip(t.valid_shape, hint))
        env[step.res[k]] = tile = new_tile(t, valid)
        return tile

    def family_reluconv(self, step, env):
        """TADDRELUCONV / TSUBRELUCONV and TADDDEQRELU (its deqScale the element function's third
        argument)."""
        op = step.op
        a, b = (self.tile(op, v, env) for v in step.ins[:2])
        dst = self.dst(step, env, a.valid)
        r, c = dst.valid
        self._same_valid(op, a, dst.valid, "src0")
        self._same_valid(op, b, dst.valid, "src1")
        self.need(op, r > 0 and c > 0, f"dst's valid region {r}x{c} is empty at run time (validRow > 0 and "
                                       "validCol > 0)")
        third = env[step.ins[2]] if op.FAMILY == "deqrelu" else dst.dtype
        self._store(dst, r, c, self.fn(step)(a.data[:r, :c], b.data[:r, :c], third))

    def family_dequant(self, step, env):
        op = step.op
        src, scale, offset = (self.tile(op, v, env) for v in step.ins)
        dst = self.dst(step, env, src.valid)
        r, c = dst.valid
        self._same_valid(op, src, dst.valid, "src")
        for t, who in ((scale, "scale"), (offset, "offset")):
            self.need(op, t.valid == (r, 1), f"{who} valid region {t.valid[0]}x{t.valid[1]} is not one value for "
                                             f"each of dst's {r} rows at run time (TDEQUANT.md)")
        self._store(dst, r, c, self.fn(step)(src.data[:r, :c], scale.data[:r, :1], offset.data[:r, :1]))

    def family_cvt(self, step, env):
        op = step.op
        src = self.tile(op, op.tile_ins()[0], env)
        dst = self.dst(step, env, src.valid)
        r, c = dst.valid
        self._same_valid(op, src, dst.valid, "src")
        mode = _attr_body(op, "rmode", "round_mode", "roundMode") or "CAST_RINT"
        mode = mode.split()[-1]  # `#pto<round_mode ROUND>` keeps "round_mode ROUND" in some spellings
        sat = _attr_body(op, "sat_mode", "saturation_mode", "satMode")
        saturate = None if sat is None else "ON" in sat.upper()
        self._store(dst, r, c, self.fn(step)(src.data[:r, :c], dst.dtype, mode, saturate))

    def family_mov(self, step, env):
        op = step.op
        self.need(op, len(step.ins) == 1, "with extra operands (scaling, quantisation) has no semantics in ptoc yet")
        src = self.tile(op, step.ins[0], env)
        dst = self.dst(step, env, src.valid)
        r, c = dst.valid
        self._same_valid(op, src, dst.valid, "src")
        dst.data[:r, :c] = self._out_of(op, src, src.data[:r, :c], dst.dtype)

    def _out_of(self, op, src: Tile, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """Values leaving ``src``: through the fixpipe out of acc (runtime/cube.py), else unchanged."""
        if src.type.loc.data == "acc":
            return cube.fixpipe(x, dtype, cube.relu_pre(op))
        self.need(op, x.dtype == dtype,
                  f"from {E.dtype_name(x.dtype)} to {E.dtype_name(dtype)} has no semantics in ptoc yet")
        return x

    def family_matmul(self, step, env):
        op = step.op
        c_in, a, b, bias = (None if v is None else self.tile(op, v, env) for v in op.operands_abc())
        (m, k), (k2, n) = a.valid, b.valid
        self.need(op, k == k2, f"a valid cols (K = {k}) differ from b valid rows ({k2}) at run time")
        dst = self.dst(step, env, (m, n))
        self.need(op, dst.valid == (m, n), f"dst valid region {dst.valid[0]}x{dst.valid[1]} is not "
                                           f"M x N = {m}x{n} at run time")
        if c_in is not None:
            self._same_valid(op, c_in, dst.valid, "c_in")
        self._store(dst, m, n, cube.matmul(a.data[:m, :k], b.data[:k, :n], dst.dtype,
                                           None if c_in is None else c_in.data[:m, :n],
                                           None if bias is None else bias.data[0, :n]))

    def family_subtile(self, step, env):
        op = step.op
        src = self.tile(op, step.ins[0], env)
        r0, c0 = (int(env[v]) for v in step.ins[1:3])
        dst = self.dst(step, env, None)
        r, c = src.valid if op.INSERT else dst.valid
        big = dst if op.INSERT else src
        self.need(op, 0 <= r0 and 0 <= c0 and r0 + r <= big.type.rows and c0 + c <= big.type.cols,
                  f"the {r}x{c} region at ({r0}, {c0}) runs past the {big.type.rows}x{big.type.cols} tile")
        if op.INSERT:
            dst.data[r0:r0 + r, c0:c0 + c] = src.data[:r, :c]
        else:
            dst.data[:r, :c] = src.data[r0:r0 + r, c0:c0 + c]

    def family_print(self, step, env):
        op = step.op
        t = self.tile(op, step.ins[0], env)
        r, c = t.valid
        f, line, col = location_of(op)
        E.print_tile(f"{f}:{line}:{col}", t.data[:r, :c])

    @staticmethod
    def _gm_view(pv: PartitionView, count: int) -> np.ndarray | None:
        """The partition's ``count`` GM elements as a strided view, if :meth:`PartitionView.strided`
        gives one of that size (else :meth:`_gm_indices` indexes them, or says what is wrong)."""
        view = pv.strided()
        return view if view is not None and view.size == count else None

    def _gm_indices(self, op, pv: PartitionView, count: int) -> np.ndarray:
        idx = pv.flat_indices()
        self.need(op, idx.size == count,
                  f"partition view of {idx.size} elements ({'x'.join(map(str, pv.sizes))}) does not match the "
                  f"tile's valid region of {count} elements")
        self._gm_bounds(op, pv, idx)
        return idx

    @staticmethod
    def _gm_bounds(op, pv: PartitionView, idx: np.ndarray) -> None:
        """A located error if a GM element index of ``idx`` is outside ``pv``'s GM argument."""
        n = pv.view.gm.data.size
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
            raise op_error(op, f"GM access out of bounds: element {bad} of '{pv.view.gm.name}' "
                               f"({n} elements)")

    def family_load(self, step, env):
        op = step.op
        pv = env[step.ins[0]] if step.ins else None
        if not isinstance(pv, PartitionView):
            raise op_error(op, "with this source has no semantics in ptoc yet")
        hint = None
        if len(pv.sizes) >= 1:
            hint = (math.prod(pv.sizes[:-1]), pv.sizes[-1])
        dst = self.dst(step, env, hint)
        r, c = dst.valid
        vals = self._gm_view(pv, r * c)
        if vals is None:
            vals = pv.view.gm.data[self._gm_indices(op, pv, r * c)]
        if vals.dtype != dst.dtype:
            vals = vals.view(dst.dtype)  # same element size (verified): bit reinterpretation
        pad = E.fill_value(dst.dtype, dst.type.pad.data)
        if pad is not None:
            dst.data[...] = pad
        dst.data[:r, :c] = vals.reshape(r, c)

    def family_store(self, step, env):
        op = step.op
        tile = self.tile(op, step.ins[0], env)
        target = step.outs[0] if step.outs else (step.ins[1] if len(step.ins) > 1 else None)
        pv = env.get(target) if target is not None else None
        if not isinstance(pv, PartitionView) or len(step.ins) > (1 if step.outs else 2):
            raise op_error(op, "with this destination or a pre-quant operand has no semantics in ptoc yet")
        r, c = tile.valid
        gm = pv.view.gm
        gm.own()
        view = self._gm_view(pv, r * c)  # assigned through; else the GM elements indexed
        out, idx = (view, ...) if view is not None else (gm.data, self._gm_indices(op, pv, r * c))
        vals = tile.data[:r, :c].reshape(-1)
        if tile.type.loc.data == "acc":
            why = cube.acc_store_error(tile.type.dtype, E.dtype_name(gm.data.dtype))
            if why:
                raise op_error(op, why)
            vals = cube.fixpipe(vals, gm.data.dtype, cube.relu_pre(op))
        elif vals.dtype != gm.data.dtype:
            vals = vals.view(gm.data.dtype)
        vals = vals if view is None else vals.reshape(view.shape)
        if op.atomic_add:
            out[idx] = E.add(out[idx], vals)
        else:
            out[idx] = vals
        gm.written = True


# --------------------------------------------------------------------------------------
# Static output detection
# --------------------------------------------------------------------------------------


def _ptr_param(value: SSAValue) -> BlockArgument | None:
    """The block argument (GM pointer) a partition/tensor view was made from, if static."""
    root = pto.view_root(value)
    return root if isinstance(root, BlockArgument) else None


def _stored_params(fn: func.FuncOp, depth: int = 0) -> set[int]:
    """Indices of fn's arguments that a tstore writes (following func.call)."""
    out: set[int] = set()
    if depth > 8 or not fn.body.blocks:
        return out
    params = fn.body.blocks[0].args
    for op in fn.walk():
        if isinstance(op, pto.TStoreOp):
            target = op.outs[0] if op.outs else (op.ins[1] if len(op.ins) > 1 else None)
            if target is None:
                continue
            p = _ptr_param(target)
            if p is not None and p in params:
                out.add(p.index)
        elif isinstance(op, func.CallOp):
            callee = _lookup_func(fn, op.callee.root_reference.data)
            if callee is None or callee is fn:
                continue
            for i in _stored_params(callee, depth + 1):
                if i < len(op.arguments):
                    p = _ptr_param(op.arguments[i])
                    if p is not None and p in params:
                        out.add(p.index)
    return out


# --------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------


def check_array(spec: ArgSpec, value, shape: tuple[int, ...]) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype != spec.dtype:
        if E.is_bf16(spec.dtype) and arr.dtype.kind == "V" and arr.dtype.itemsize == 2:
            arr = arr.view(spec.dtype)
        else:
            raise usage_error(f"input '{spec.name}' has element type {E.dtype_name(arr.dtype)}, "
                              f"expected {E.dtype_name(spec.dtype)}")
    want = math.prod(shape)
    if arr.size != want:
        raise usage_error(f"input '{spec.name}' has shape {tuple(arr.shape)} ({arr.size} elements), "
                          f"expected {tuple(shape)} ({want} elements)")
    return np.ascontiguousarray(arr).reshape(shape)


def vector_value(spec: ArgSpec, value) -> tuple[int, ...]:
    """A ``vector`` argument's lanes, a tuple of ints (no GM array: the executor has no place for it);
    ``value`` an array of its element type, or ints its element type holds."""
    arr = np.asarray(value)
    if arr.dtype.kind in "iu" and np.array_equal(arr, arr.astype(spec.dtype)):
        arr = arr.astype(spec.dtype)
    return tuple(int(x) for x in check_array(spec, arr, tuple(spec.type.get_shape())))


def _tile_arg_shape(spec: ArgSpec, value=None) -> tuple[int, int]:
    t = spec.type
    vr, vc = t.valid_row, t.valid_col
    if pto.DYNAMIC in (vr, vc):
        if value is not None and np.ndim(value) == 2:
            r, c = np.shape(value)
            vr = r if vr == pto.DYNAMIC else vr
            vc = c if vc == pto.DYNAMIC else vc
        else:
            vr = t.rows if vr == pto.DYNAMIC else vr
            vc = t.cols if vc == pto.DYNAMIC else vc
    if vr > t.rows or vc > t.cols:
        raise usage_error(f"input '{spec.name}' of shape {vr}x{vc} does not fit its {t.rows}x{t.cols} tile")
    return (vr, vc)


_FAMILIES = {
    pto.ElementwiseBinaryOp: Evaluator.family_binary, pto.PartialBinaryOp: Evaluator.family_part,
    pto.UnaryOp: Evaluator.family_unary,
    pto.TileScalarOp: Evaluator.family_scalar, pto.ExpandScalarOp: Evaluator.family_expands,
    pto.RowExpandBinaryOp: Evaluator.family_rowexpand, pto.ColExpandBinaryOp: Evaluator.family_colexpand,
    pto.RowExpandOp: Evaluator.family_rowbroadcast, pto.ColExpandOp: Evaluator.family_colbroadcast,
    pto.RowReduceOp: Evaluator.family_rowreduce, pto.ColReduceOp: Evaluator.family_colreduce,
    pto.PairReduceOp: Evaluator.family_pairreduce, pto.ArgReduceOp: Evaluator.family_argreduce,
    pto.GatherOp: Evaluator.family_gather, pto.ScatterOp: Evaluator.family_scatter,
    pto.MGatherOp: Evaluator.family_mgather, pto.MScatterOp: Evaluator.family_mscatter,
    pto.CompareOp: Evaluator.family_cmp, pto.SelectOp: Evaluator.family_sel,
    pto.PartialArgOp: Evaluator.family_partarg,
    pto.Sort32Op: Evaluator.family_sort32, pto.MrgSortOp: Evaluator.family_mrgsort,
    pto.ConvertOp: Evaluator.family_cvt, pto.ReluConvOp: Evaluator.family_reluconv,
    pto.DeqReluOp: Evaluator.family_reluconv,
    pto.ConcatOp: Evaluator.family_concat, pto.FillOp: Evaluator.family_fill, pto.AxpyOp: Evaluator.family_axpy,
    pto.FillPadOp: Evaluator.family_fillpad, pto.DequantOp: Evaluator.family_dequant,
    pto.InterleaveOp: Evaluator.family_interleave,
    pto.ComposedOp: Evaluator.family_composed, pto.TransposeOp: Evaluator.family_trans,
    pto.MoveOp: Evaluator.family_mov, pto.LoadOp: Evaluator.family_load, pto.StoreOp: Evaluator.family_store,
    pto.MatmulOp: Evaluator.family_matmul, pto.SubTileOp: Evaluator.family_subtile,
    pto.PrintOp: Evaluator.family_print,
}
"""The golden model's rule per tile-op family, keyed by the family's op class."""

_FAMILY_OF: dict[type, object] = {}
"""The rule of each tile-op class met so far (its family looked up once)."""


@dataclass
class _Kernel:
    """What :func:`evaluate` reads of a module's kernel besides its ops, found once per module
    and entry (as ``verify.verified``: a module is not changed once it runs; the pipeline
    changes a clone)."""
    fn: func.FuncOp
    specs: list[ArgSpec]
    mixed: bool
    """Cube and vector cores talking through the pipe (runtime/pipes.py)."""
    stored: set[int]
    """The arguments a tstore writes (:func:`_stored_params`)."""
    read_only: frozenset[int]
    """The tile arguments only read (as a tile op's source or returned): the run uses the input itself."""
    names: frozenset = frozenset()
    """The arguments' names (what ``inputs`` must hold, and nothing else)."""
    targets: dict = field(default_factory=dict)
    """``target`` argument of :func:`evaluate` -> the Target the run has (api.target_of, once)."""


_KERNELS_ATTR = "_ptoc_golden_kernels"


def _kernel(module: ModuleOp, entry: str | None) -> _Kernel:
    cache = _module_cache(module, _KERNELS_ATTR)
    k = cache.get(entry)
    if k is None:
        fn = select_entry(module, entry)
        specs = kernel_args(fn)
        k = cache[entry] = _Kernel(fn, specs, pipes.is_mixed(module), _stored_params(fn), frozenset(
            s.index for s in specs if s.kind == "tile" and _only_read(s.value)), frozenset(s.name for s in specs))
    return k


def _only_read(arg: SSAValue) -> bool:
    """Does no op write the tile argument ``arg`` (each use a tile op's source or a return)?  An
    L1 tile op (no ``outs``) writes only its new result, so its operands are all sources."""
    for use in arg.uses:
        op = use.operation
        if isinstance(op, func.ReturnOp):
            continue
        if not isinstance(op, pto.TileOp) or is_view(op) or (op.outs and (
                any(v is arg for v in tile_writes(op)) or not any(v is arg for v in tile_reads(op)))):
            return False
    return True


def _bind_inputs(kernel: _Kernel, inputs: Mapping[str, object], place=None) -> tuple[list, dict[int, GMArray]]:
    """The kernel's argument values from ``inputs``: every argument given by name, arrays of the
    element type and count of their argument (scalars any number).  Anything else exits 2.
    ``place(spec, valid)``: the tile a tile argument lives in (runtime/vf_executor.py: its UB),
    filled with its pad and the input."""
    fn, specs = kernel.fn, kernel.specs
    if len(inputs) != len(kernel.names) or not kernel.names.issuperset(inputs):
        unknown = sorted(set(inputs) - kernel.names)
        if unknown:
            raise usage_error(f"no kernel argument named {', '.join(map(repr, unknown))} "
                              f"(arguments: {', '.join(s.name for s in specs) or 'none'})")
        missing = [s.name for s in specs if s.name not in inputs]
        raise usage_error(f"missing input for argument(s) {', '.join(missing)}")
    scalars = {s.name: inputs[s.name] for s in specs if s.kind == "scalar"}
    args: list = []
    gms: dict[int, GMArray] = {}
    for s in specs:
        v = inputs[s.name]
        if s.kind == "scalar":
            try:
                args.append(coerce_scalar(v, s.type))
            except (TypeError, ValueError) as e:
                raise usage_error(f"input '{s.name}': {e}") from None
        elif s.kind == "gm":
            shape = gm_shape(fn, s, scalars)
            arr = check_array(s, v, shape)
            data = arr.reshape(-1).view()
            data.flags.writeable = False  # (GMArray.own copies it before the first write)
            gm = GMArray(s.name, data, shape)
            gms[s.index] = gm
            args.append(gm)
        elif s.kind == "vector":
            args.append(vector_value(s, v))
        else:
            vr, vc = _tile_arg_shape(s, v)
            arr = check_array(s, v, (vr, vc))
            if place is None and (vr, vc) == (s.type.rows, s.type.cols) and s.index in kernel.read_only:
                data = arr.view()
                data.flags.writeable = False  # (a write the analysis missed raises, not corrupts the input)
                tile = Tile(s.type, data, (vr, vc))
            elif place is None and (vr, vc) == (s.type.rows, s.type.cols):
                tile = Tile(s.type, np.array(arr, copy=True), (vr, vc))
            else:
                tile = new_tile(s.type, (vr, vc)) if place is None else place(s, (vr, vc))
                pad = E.fill_value(tile.dtype, s.type.pad.data)
                if pad is not None:
                    tile.data[...] = pad
                tile.data[:vr, :vc] = arr
            args.append(tile)
    return args, gms


def check_inputs(module: ModuleOp, inputs: Mapping[str, object], entry: str | None = None) -> None:
    """Refuse (exit 2) the ``inputs`` :func:`evaluate` would refuse, before anything runs."""
    _bind_inputs(_kernel(module, entry), inputs)


def evaluate(module: ModuleOp, inputs: Mapping[str, object], entry: str | None = None,
             block_idx: int = 0, block_num: int = 1, max_steps: int | None = None,
             target: str | None = None, sum_order: str = "exact") -> dict[str, np.ndarray]:
    """Run the golden model on one kernel as block ``block_idx`` of ``block_num``; returns outputs
    by name (GM outputs, then ``resultN``).  ``sum_order`` (``E.SUM_ORDERS``) sums TROWSUM/TCOLSUM
    floats in another legal order than the exact one.  More than ``max_steps`` ops evaluated plus loop trips
    (default: the executor's ``--max-steps`` default) is a usage error (exit 2).

    ``inputs`` maps each argument name to an array (GM arguments: the I/O shape or any shape of
    the same element count; tiles: the valid shape) or a number (scalars).  Errors in the
    program are located ``PtocError`` (exit 1); missing or malformed inputs exit 2.
    """
    kernel = _kernel(module, entry)
    fn, specs = kernel.fn, kernel.specs
    args, gms = _bind_inputs(kernel, inputs)
    if max_steps is None:
        max_steps = DEFAULT_MAX_STEPS
    if kernel.mixed:  # cube and vector cores talking through the pipe: concurrent agents
        from pto_compiler.api import target_of

        return pipes.evaluate_agents(module, inputs, kernel, block_idx, block_num, max_steps,
                                     target_of(module, target).name)
    key = target.name if isinstance(target, Target) else target
    found = kernel.targets.get(key)
    if found is None:
        from pto_compiler.api import target_of

        found = kernel.targets[key] = target_of(module, target)
    ev = Evaluator(module, block_idx, block_num, max_steps, found.ub_bytes, sum_order, found.name)
    results = ev.call(fn, args)
    outputs: dict[str, np.ndarray] = {}
    for s in specs:
        gm = gms.get(s.index)
        if gm is not None and (s.index in kernel.stored or gm.written):
            outputs[s.name] = gm.own().reshape(gm.shape)  # our own copy of the input
    for i, v in enumerate(results):
        if isinstance(v, Tile):
            full = v.valid == v.data.shape and not any(v is a for a in args)
            outputs[f"result{i}"] = v.data if full else v.region().copy()
        elif isinstance(v, (int, np.integer)):
            outputs[f"result{i}"] = np.asarray(v, dtype=np.int64)
        else:
            outputs[f"result{i}"] = np.asarray(v).copy()
    return outputs


_RANDOM_CHUNK = 1 << 16
"""Elements :func:`_random_array` draws and converts at a time: its float64 temporaries stay in
cache whatever the GM size (drawn whole, a 128 MiB bf16 argument took 5 GB and 19 s)."""


def _random_array(rng: np.random.Generator, dtype: np.dtype, shape) -> np.ndarray:
    """Floats uniform in [-2, 2) rounded to the element type; signed ints in [-8, 8);
    unsigned ints in [0, 16).  Drawn in chunks of :data:`_RANDOM_CHUNK`: the generator's stream is
    the same as one draw of the whole array."""
    if E.is_float_dtype(dtype):
        draw = lambda n: E.convert(rng.uniform(-2.0, 2.0, size=n), dtype, "RINT")  # noqa: E731
    elif dtype == np.bool_:
        draw = lambda n: rng.integers(0, 2, size=n).astype(np.bool_)  # noqa: E731
    else:
        lo, hi = (0, 16) if dtype.kind == "u" else (-8, 8)
        draw = lambda n: rng.integers(lo, hi, size=n).astype(dtype)  # noqa: E731
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    for k in range(0, flat.size, _RANDOM_CHUNK):
        flat[k:k + _RANDOM_CHUNK] = draw(min(_RANDOM_CHUNK, flat.size - k))
    return out


MAX_GM_BYTES = 64 << 20
"""GM bytes a run may hold over all arguments (``ptoc --max-gm-bytes``).  The executor keeps
~20 bytes of hazard state per GM element, so 64 MiB of i8 costs ~1.5 GiB; the examples use < 1 MiB."""


def _check_gm_bytes(name: str, shape: tuple[int, ...], itemsize: int, used: int, limit: int) -> int:
    """``used`` plus this argument's bytes, or a usage error (exit 2) above ``limit``."""
    total = used + math.prod(shape) * itemsize
    if total > limit:
        raise usage_error(f"GM argument '{name}' ({'x'.join(map(str, shape))}, {itemsize}-byte elements) "
                          f"brings the run's GM to {total} bytes, over the limit of {limit}; "
                          "raise it with --max-gm-bytes N")
    return total


def make_inputs(module: ModuleOp, seed: int = 0, entry: str | None = None,
                given: Mapping[str, object] | None = None, max_gm_bytes: int | None = None) -> dict[str, object]:
    """Inputs for every kernel argument: ``given`` ones as they are, the others seeded random
    per dtype (argument k draws from its own stream, so giving one input does not change the
    others).  Integer and index scalars that are not given are a usage error (exit 2), and so are
    GM arguments totalling more than ``max_gm_bytes`` (default :data:`MAX_GM_BYTES`)."""
    fn = select_entry(module, entry)
    specs = kernel_args(fn)
    limit = max_gm_bytes or MAX_GM_BYTES
    given = dict(given or {})
    unknown = sorted(set(given) - {s.name for s in specs})
    if unknown:
        raise usage_error(f"no kernel argument named {', '.join(map(repr, unknown))} "
                          f"(arguments: {', '.join(s.name for s in specs) or 'none'})")
    missing_ints = [s.name for s in specs if s.is_int_scalar and s.name not in given]
    if missing_ints:
        raise usage_error("integer/index scalar argument(s) " + ", ".join(missing_ints)
                          + " need a value: give --input NAME=VALUE (a random loop bound or offset is "
                            "never what you want)")
    scalars = {s.name: given[s.name] for s in specs if s.kind == "scalar" and s.name in given}
    shapes = {s.name: gm_shape(fn, s, scalars) for s in specs if s.kind == "gm"}
    used = 0
    for s in specs:
        if s.kind == "gm":
            used = _check_gm_bytes(s.name, shapes[s.name], np.dtype(s.dtype).itemsize, used, limit)
    out: dict[str, object] = {}
    for s in specs:
        rng = np.random.default_rng([int(seed), s.index])
        if s.name in given:
            out[s.name] = given[s.name]
        elif s.kind == "scalar":
            out[s.name] = E.convert(np.array(rng.uniform(-2.0, 2.0)), s.dtype, "RINT")[()]
        elif s.kind == "gm":
            out[s.name] = _random_array(rng, s.dtype, shapes[s.name])
        elif s.kind == "vector":
            out[s.name] = vector_value(s, _random_array(rng, s.dtype, tuple(s.type.get_shape())))
        else:
            out[s.name] = _random_array(rng, s.dtype, _tile_arg_shape(s))
    return out


def _fmt(x: float, is_float: bool) -> str:
    if not is_float:
        return str(int(x))
    return repr(float(x)) if math.isfinite(x) and abs(x) >= 1e-4 and abs(x) < 1e6 and float(x).is_integer() \
        else f"{x:.6g}"


def describe_outputs(outputs: Mapping[str, np.ndarray]) -> list[str]:
    """One line per output: name, shape, dtype, min, max (NaN ignored; NaN count if any) and the
    first 12 hex digits of the sha256 of its bytes (C order)."""
    lines = []
    for name, a in outputs.items():
        a = np.asarray(a)
        digest = hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]
        is_float = E.is_float_dtype(a.dtype)
        shape = "x".join(map(str, a.shape)) or "scalar"
        extra = ""
        if a.size == 0:
            lo = hi = "-"
        elif is_float:
            w = a.astype(np.float64)
            nan = int(np.isnan(w).sum())
            if nan == w.size:
                lo = hi = "nan"
            else:
                lo, hi = _fmt(np.nanmin(w), True), _fmt(np.nanmax(w), True)
            if nan:
                extra = f" nan={nan}"
        else:
            lo, hi = _fmt(a.min(), False), _fmt(a.max(), False)
        lines.append(f"{name}: shape={shape} dtype={E.dtype_name(a.dtype)} min={lo} max={hi}{extra} "
                     f"sha256={digest}")
    return lines


# ---- .npy files ---------------------------------------------------------------------


def _load_npy(path: str, name: str, limit: int | None = None) -> np.ndarray:
    """``np.load`` of an input file, refusing (usage error) a header whose shape claims more than
    ``limit`` (default :data:`MAX_GM_BYTES`) bytes before anything is allocated."""
    limit = limit or MAX_GM_BYTES
    fmt = np.lib.format
    try:
        with open(path, "rb") as f:
            version = fmt.read_magic(f)
            header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, _, dtype = header(f)
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > limit:
                raise usage_error(f"'{path}' for argument '{name}' claims shape {shape} of {dtype}: "
                                  f"{nbytes} bytes, over the limit of {limit}; raise it with --max-gm-bytes N")
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, MemoryError) as e:
        raise usage_error(f"cannot read '{path}' for argument '{name}': {e}") from None


def read_npy(path: str, spec: ArgSpec, shape: tuple[int, ...], limit: int | None = None) -> np.ndarray:
    """Load an input ``.npy`` for ``spec``: same element type (bf16 files are NumPy's 2-byte
    void ``|V2``, which is what ``numpy.save`` writes for ``ml_dtypes.bfloat16``), same element
    count in any shape (read in C order).  Anything else is a usage error naming the argument."""
    arr = _load_npy(path, spec.name, limit)
    if not isinstance(arr, np.ndarray):
        raise usage_error(f"'{path}' for argument '{spec.name}' is not a single .npy array")
    return check_array(spec, arr, shape)


def load_inputs(module: ModuleOp, specs: Iterable[tuple[str, str]], entry: str | None = None,
                max_gm_bytes: int | None = None) -> dict[str, object]:
    """``--input NAME=FILE.npy`` / ``NAME=3.5`` (a scalar) / ``NAME=1,2,3,4`` (a vector's lanes) pairs
    -> input values (scalars first, since GM shapes may depend on integer scalars)."""
    fn = select_entry(module, entry)
    args = {s.name: s for s in kernel_args(fn)}
    pairs = list(specs)
    seen: set[str] = set()
    for name, _ in pairs:
        if name not in args:
            raise usage_error(f"--input {name}: no kernel argument named '{name}' "
                              f"(arguments: {', '.join(args) or 'none'})")
        if name in seen:
            raise usage_error(f"--input {name} is given twice")
        seen.add(name)
    out: dict[str, object] = {}
    for name, text in pairs:
        s = args[name]
        if s.kind == "scalar":
            try:
                out[name] = parse_scalar(text, s.type)
            except (TypeError, ValueError):
                kind = "a number" if s.dtype is not None else "an integer"
                raise usage_error(f"--input {name}={text}: scalar argument '{name}' "
                                  f"({pto.dtype_name(s.type)}) needs {kind}") from None
    scalars = dict(out)
    for name, text in pairs:
        s = args[name]
        if s.kind == "gm":
            out[name] = read_npy(text, s, gm_shape(fn, s, scalars), max_gm_bytes)
        elif s.kind == "tile":
            raw = _load_npy(text, name, max_gm_bytes)
            out[name] = check_array(s, raw, _tile_arg_shape(s, raw))
        elif s.kind == "vector":
            out[name] = vector_value(s, _load_npy(text, name, max_gm_bytes) if text.endswith(".npy")
                                     else _lanes(text, s))
    return out


def _lanes(text: str, spec: ArgSpec) -> list[int]:
    """``--input NAME=V0,V1,...``: a vector argument's lanes, integers of its element type."""
    try:
        lanes = [int(v, 0) for v in text.split(",")]
    except ValueError:
        lanes = None
    if lanes is None or any(v != int(np.array(v).astype(spec.dtype)) for v in lanes):
        raise usage_error(f"--input {spec.name}={text}: vector argument '{spec.name}' ({spec.type}) needs a "
                          f"FILE.npy or its lanes as {E.dtype_name(spec.dtype)} integers V0,V1,...")
    return lanes


def prepare_inputs(module: ModuleOp, seed: int = 0, specs: Iterable[tuple[str, str]] = (),
                   entry: str | None = None, max_gm_bytes: int | None = None) -> dict[str, object]:
    """``--seed N --input ...``: the given inputs, the rest seeded random (see make_inputs)."""
    return make_inputs(module, seed, entry, load_inputs(module, specs, entry, max_gm_bytes), max_gm_bytes)


def save_outputs(outputs: Mapping[str, np.ndarray], directory: str) -> list[str]:
    """Write each output as ``DIRECTORY/NAME.npy`` (the directory is created); returns the paths."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise usage_error(f"cannot create '{directory}': {e.strerror or e}") from None
    paths = []
    for name, a in outputs.items():
        path = os.path.join(directory, f"{name}.npy")
        try:
            np.save(path, np.asarray(a), allow_pickle=False)
        except OSError as e:
            raise usage_error(f"cannot write '{path}': {e.strerror or e}") from None
        paths.append(path)
    return paths

