"""The cube half's semantics: matmul, the fixpipe conversions, and where a tile's elements sit in
the cube memories.  The golden model (runtime/reference.py) and the executor's cube
instructions (runtime/executor.py) both call these functions, as both call
runtime/elementwise.py for the vector side.

**Matmul** (reference/pto_isa.md §3 Matrix; ptoas_peer.md §2.3 dtype triples).
``C = [Cin +] A·B [+ bias]`` over the valid regions, A M x K, B K x N, C M x N.

* f16/bf16/f32 inputs accumulate in f32.  Every product of two f16, bf16 or f32 values is exact
  in float64, and the sum of the K products, Cin and the bias is formed in float64 (NumPy's
  matmul) and rounded **once** to f32, nearest-even.  The hardware sums in f32 in an order it
  does not document, so a run compares matmul outputs with the float-sum tolerance
  (``reference.FLOAT_SUM_RTOL``), never bit for bit.
* NaN and infinities follow IEEE 754 in that sum (a NaN operand, ``inf * 0`` or ``inf - inf``
  make the element NaN; an overflow of f32 when rounding gives +-inf).  An exact-zero sum of
  products is +0 (the accumulator starts at +0; IEEE: ``+0 + -0 = +0``), whatever the signs of
  the zero products; ``Cin`` and the bias are added after it.  The pages do not say how the
  cube signs a zero: this is ptoc's choice, stated so tests can check it.
* i8 inputs accumulate in i32: exact in int64, then wrapped to 32 bits (two's complement), as
  an i32 accumulator that overflows does.

**Fixpipe** (moves and stores out of acc, pto_isa.md §4.8 "Acc types"): an f32 acc converts to
f32, f16 or bf16 (nearest-even, ``elementwise.convert`` CAST_RINT; f16 overflow gives inf), an
i32 acc stays i32.  ``reluPreMode = normal_relu`` applies ``max(x, 0)`` before the conversion.

**Layouts** (pto_isa.md §2 "Element addressing"): :func:`tile_offsets` gives the byte offset of
every element of a tile in its memory from its ``blayout`` / ``slayout`` / ``fractal``: NoneBox
row-major ``r*Cols + c`` (ND) or column-major ``c*Rows + r`` (DN); boxed layouts are fractals of
``16 x 32/sizeof(T)`` (inner row-major), ``32/sizeof(T) x 16`` (inner column-major) or ``16 x 16``
(fractal 1024, the acc tiles), the fractals laid out column-major (blayout col_major: Nz, Nn) or
row-major (Zz, Zn).
"""

from __future__ import annotations

from functools import lru_cache

from pto_compiler.dialects import pto
from pto_compiler.lazy_import import LazyModule

np = LazyModule("numpy")  # the compile path reads the tables below; the run computes
E = LazyModule("pto_compiler.runtime.elementwise")


def matmul(a: np.ndarray, b: np.ndarray, out_dtype, c_in: np.ndarray | None = None,
           bias: np.ndarray | None = None) -> np.ndarray:
    """``[c_in +] a @ b [+ bias]`` (bias: one value per column) in the accumulator type."""
    out_dtype = np.dtype(out_dtype)
    if out_dtype.kind == "i":
        acc = a.astype(np.int64) @ b.astype(np.int64)
        if c_in is not None:
            acc = acc + c_in.astype(np.int64)
        if bias is not None:
            acc = acc + bias.astype(np.int64).reshape(1, -1)
        return acc.astype(out_dtype)  # wraps modulo 2**32
    with np.errstate(invalid="ignore", over="ignore"):  # NaN / inf follow IEEE (module doc)
        acc = a.astype(np.float64) @ b.astype(np.float64) + 0.0  # an exact-zero sum is +0, not BLAS's choice
        if c_in is not None:
            acc = acc + c_in.astype(np.float64)
        if bias is not None:
            acc = acc + bias.astype(np.float64).reshape(1, -1)
        return E.convert(acc, out_dtype, "CAST_RINT")


def fixpipe(x: np.ndarray, dst_dtype, relu: bool = False) -> np.ndarray:
    """An acc value on its way out (to GM, L1 or UB): optional ReLU, then the conversion."""
    if relu:
        x = E.relu(x)
    dst_dtype = np.dtype(dst_dtype)
    if x.dtype == dst_dtype:
        return x
    return E.convert(x, dst_dtype, "CAST_RINT")


def relu_pre(op) -> bool:
    """``reluPreMode = #pto<relu_pre_mode normal_relu>`` on a move/store out of acc."""
    return pto.attr_says(op, ("reluPreMode", "relu_pre_mode", "relu"), "normal_relu")


def layout_name(blayout: str, slayout: str) -> str:
    """ND/DN (no fractals, row-/column-major), else the boxed layout by (outer, inner) order:
    N = column-major, Z = row-major (Nz = blayout col_major + slayout row_major)."""
    if slayout == "none_box":
        return "nd" if blayout == "row_major" else "dn"
    return ("n" if blayout == "col_major" else "z") + ("z" if slayout == "row_major" else "n")


def box_shape(layout: str, fractal: int, esize: int) -> tuple[int, int]:
    """(rows, cols) of one fractal of a boxed layout."""
    if fractal == 1024:
        return 16, 16
    c0 = 32 // esize
    return (16, c0) if layout[1] == "z" else (c0, 16)


@lru_cache(maxsize=256)
def tile_offsets(rows: int, cols: int, layout: str, fractal: int, esize: int) -> np.ndarray:
    """Byte offset of element ``(r, c)`` of a ``rows x cols`` tile, shape ``(rows, cols)``
    (read-only, cached).  A boxed tile whose shape is not a whole number of fractals is padded
    up to one (pto-verify-target rejects such tiles; the executor never sees them)."""
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    if layout == "nd":
        off = r * cols + c
    elif layout == "dn":
        off = c * rows + r
    else:
        br, bc = box_shape(layout, fractal, esize)
        nbr, nbc = -(-rows // br), -(-cols // bc)
        R, C, ir, ic = r // br, c // bc, r % br, c % bc
        box = C * nbr + R if layout[0] == "n" else R * nbc + C
        inner = ir * bc + ic if layout[1] == "z" else ic * br + ir
        off = box * (br * bc) + inner
    out = off * esize
    out.setflags(write=False)
    return out


_FP_CONVERT = ("the pages define it as dst = Convert(src; fp) with 'implementation-defined' quantisation "
               "parameters in the fp (scaling) tile (pto-isa TMOV_FP / TSTORE_FP), so ptoc has no values for it")
_MX = ("the pages leave the role of the scale tiles 'target-defined' (pto-isa TMATMUL_MX: mx formats with "
       "a_scale/b_scale, A5 only), and ptoc has no fp8/e8m0 element types")
def acc_store_error(src_dtype: str, dst_dtype: str) -> str | None:
    """Why a store out of acc without a pre-quant operand has no values (the fixpipe converts an acc
    only along pto.ACC_CONVERSIONS; the other pairs PTOAS accepts, e.g. i32 -> f16, take the
    quantisation stage), else None."""
    ok = pto.ACC_CONVERSIONS.get(src_dtype, ())
    if dst_dtype in ok:
        return None
    return (f"an acc {src_dtype} stored as {dst_dtype} without a pre-quant operand: no semantics: the pages give "
            f"acc {src_dtype} -> {'/'.join(ok) or 'nothing'} and the other pairs only through quantisation")


PRE_QUANT = ("no semantics: the pages list the pre-quant scalar / fp-tile overloads of TSTORE and TMOV (acc f32 -> i8/u8, "
             "i32 -> i8/u8/f16) without the encoding of the scale or the rounding, so ptoc has no values for them")
NO_SEMANTICS = {
    "pto.tmov.fp": _FP_CONVERT, "pto.tmov_fp": _FP_CONVERT, "pto.tstore.fp": _FP_CONVERT,
    "pto.tstore_fp": _FP_CONVERT, "pto.textract_fp": _FP_CONVERT, "pto.tinsert_fp": _FP_CONVERT,
    **{f"pto.{n}": _MX for n in ("tmatmul.mx", "tmatmul.mx.acc", "tmatmul.mx.bias", "tgemv.mx", "tgemv.mx.acc",
                                 "tgemv.mx.bias")},
}
"""Cube ops ptoc parses and verifies but cannot run, with the reason (the golden model and the
lowerings say it, located at the op)."""
