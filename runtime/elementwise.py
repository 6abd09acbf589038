"""Element functions of the PTO tile instructions, exact per element type (NumPy).

Every tile op in ``dialects/pto.py`` names its element function here (``FN="..."`` on
its ``_define`` line).  The golden model (``runtime/reference.py``) and the executor
both call these same functions, so every op other than the float reductions is
bit-exact between them by construction.  The rules, for every function below:

* **Element types.**  ``f16`` (``numpy.float16``), ``bf16`` (``ml_dtypes.bfloat16``),
  ``f32``; signed ``i8 i16 i32 i64`` and unsigned ``ui8 ui16 ui32 ui64``.  Inputs are
  arrays (or anything ``numpy.asarray`` takes) of the element type; results are arrays of
  the element type (0-d for 0-d inputs).
* **Float rounding.**  Each op rounds its exact result once to the element type,
  round-to-nearest-even.  f16 and bf16 are computed in f32 and rounded to the element
  type after *every* op, as the hardware does; for ``+ - * /`` and ``sqrt`` this is the
  correctly rounded result (f32 has ``24 >= 2p + 2`` bits for f16's ``p = 11`` and bf16's
  ``p = 8``, so the double rounding is innocuous).  f32 ops are IEEE single ops.
* **Transcendentals** (``exp``, ``log``, ``sqrt``, ``rsqrt``, ``recip``) are computed in
  float64 with NumPy and rounded once to the element type (round-to-nearest-even).  That
  is the correctly rounded result except when the float64 value lies within 2**-53
  (relative) of a rounding boundary, which for these functions is rare; both the golden
  model and the executor use this rounding, so they agree bit for bit.  (The pto-isa CPU
  simulator also computes these in double and casts.)
* **IEEE specials.**  Division by zero gives ``±inf`` (``0/0`` NaN), ``log(0) = -inf``,
  ``log(x<0)`` and ``sqrt(x<0)`` NaN, ``sqrt(-0) = -0``, ``rsqrt(+0) = +inf``,
  ``rsqrt(-0) = -inf``, ``recip(±0) = ±inf``; f16/bf16 results beyond the largest finite
  value overflow to ``±inf``.  Subnormals are kept (IEEE gradual underflow); the NPU
  flushes them to zero by default (reference/pto_isa.md §2), which ptoc does not model.
* **NaN.**  Every float result that is NaN is the element type's canonical quiet NaN
  (f32 ``0x7fc00000``, f16 ``0x7e00``, bf16 ``0x7fc0``), so results do not depend on the
  host's NaN-payload propagation.  Pure data movement (tmov, tload, tstore, texpands of
  an element-typed value) copies bits and is not done here.
* **max/min** (seeds/002): a NaN operand gives NaN, and ``-0 < +0`` whatever the operand
  order: ``max(-0, +0) = max(+0, -0) = +0``, ``min(-0, +0) = min(+0, -0) = -0``.  The
  pto-isa CPU simulator's ``std::max``/``std::min`` differ (NaN only when the first operand
  is NaN; a ±0 tie returns the first operand); the seed wins.
* **Integers** wrap in the element type (two's complement, modulo 2**bits), with no
  NumPy overflow warnings: ``add``, ``sub``, ``mul``, ``abs(INT_MIN) = INT_MIN``, the
  reductions.  Integer division (no PTO op allows it on a target, but it is defined for
  completeness) truncates toward zero, ``INT_MIN / -1 = INT_MIN``, and a zero divisor
  raises :class:`ElementwiseError`.
* **Conversion** (:func:`convert`, TCVT) with the round modes ``RINT`` / ``CAST_RINT``
  (nearest, ties to even; the default), ``NONE`` / ``CAST_NONE`` (nearest-even when the
  conversion is inexact, i.e. the same as ``RINT``), ``ROUND`` (nearest, ties away from
  zero), ``FLOOR``, ``CEIL``, ``TRUNC`` and ``ODD`` (round to odd: truncate, then set the
  last bit if inexact).  Float -> int **saturates** to the integer range and maps NaN
  to 0; int -> int wraps (keeps the low bits) unless ``saturate=True``; float -> float
  overflow follows IEEE directed rounding (RINT/ROUND -> ±inf, TRUNC/ODD -> ±max finite,
  FLOOR -> +max / -inf, CEIL -> +inf / -max).
"""

from __future__ import annotations

import functools
import math
from contextlib import contextmanager

import numpy as np

from pto_compiler.runtime.element_types import (  # noqa: F401  (round_mode: this module's API too)
    FLOAT_FORMATS,
    NUMPY_NAMES,
    ElementwiseError,
    canonical_name,
    round_mode,
)

# --------------------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------------------

NAMES: dict[str, str] = {v: k for k, v in NUMPY_NAMES.items()}
"""NumPy dtype name -> ptoc element type name."""

_FORMATS = {NUMPY_NAMES[name]: fmt for name, fmt in FLOAT_FORMATS.items()}
"""element_types.FLOAT_FORMATS by NumPy dtype name."""
_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def np_dtype(name_or_dtype) -> np.dtype:
    """The NumPy dtype of a ptoc element type name (``"f32"``, ``"bf16"``, ``"u8"``...) or dtype."""
    if isinstance(name_or_dtype, str):
        got = _NP_DTYPES.get(name_or_dtype)
        if got is None:
            name = canonical_name(name_or_dtype)
            if name is None:
                raise ElementwiseError(f"unknown element type '{name_or_dtype}'")
            got = _NP_DTYPES[name_or_dtype] = bf16() if name == "bf16" else np.dtype(NUMPY_NAMES[name])
        return got
    return np.dtype(name_or_dtype)


_NP_DTYPES: dict = {}
"""Element type name as written -> its NumPy dtype (the executor asks per instruction)."""


def bf16() -> np.dtype:
    """``ml_dtypes.bfloat16``, imported on first use: the import costs ~0.7 s of start-up and only
    bf16 data needs it (no array can be bf16 before it is imported)."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


_DTYPE_NAMES: dict = {}


def _name(dtype) -> str:
    """``np.dtype(dtype).name``, memoised (NumPy computes the name anew on every access)."""
    dt = np.dtype(dtype)
    n = _DTYPE_NAMES.get(dt)
    if n is None:
        n = _DTYPE_NAMES[dt] = dt.name
    return n


def is_bf16(dtype) -> bool:
    """Whether ``dtype`` is bfloat16, without importing ml_dtypes."""
    return _name(dtype) == "bfloat16"


def dtype_name(dtype) -> str:
    """``float32`` -> ``f32``, ``bfloat16`` -> ``bf16``, ``uint8`` -> ``ui8``."""
    dt = np.dtype(dtype)
    return NAMES.get(_name(dt), str(dt))


def is_float_dtype(dtype) -> bool:
    return _name(dtype) in _FORMATS


def canonical_nan(dtype) -> np.ndarray:
    """The element type's canonical quiet NaN as a 0-d array."""
    dt = np.dtype(dtype)
    bits = _FORMATS[dt.name][3]
    return np.array(bits, dtype=_UINT_OF_SIZE[dt.itemsize]).view(dt)


def max_finite(dtype) -> float:
    p, _, emax, _ = _FORMATS[np.dtype(dtype).name]
    return float((2.0 - 2.0 ** (1 - p)) * 2.0 ** emax)


def int_range(dtype) -> tuple[int, int]:
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


# --------------------------------------------------------------------------------------
# The wrapper that makes a function an element function
# --------------------------------------------------------------------------------------


class ElementFn:
    """A named element function.

    Not a descriptor, so ``op.FN(a, b)`` on an op instance calls it without binding the
    op (a plain function stored on a class would become a bound method).
    """

    def __init__(self, fn, kind: str):
        self.fn = fn
        self.name = fn.__name__.rstrip("_")
        self.kind = kind
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.__module__ = fn.__module__
        self.__qualname__ = fn.__qualname__

    def __call__(self, *args, **kwargs):
        with np.errstate(all="ignore"):
            return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<element function {self.name} ({self.kind})>"


def element_fn(kind: str):
    def wrap(fn):
        return ElementFn(fn, kind)
    return wrap


def on_active(fn, act, *xs):
    """``fn(*xs)`` for a vector instruction under a mask: lanes ``act`` leaves off read 1 instead
    of what the register or UB holds there, so a lane no one asked for cannot raise (a zero
    divisor or an out-of-range shift count); their results are discarded by the caller."""
    if act is None or np.all(act):  # every lane active: nothing to replace
        return fn(*xs)
    return fn(*(np.where(act, x, np.ones((), np.asarray(x).dtype)) for x in xs))


# --------------------------------------------------------------------------------------
# Float helpers
# --------------------------------------------------------------------------------------


def _arr(x) -> np.ndarray:
    return np.asarray(x)


def _work(x: np.ndarray) -> np.ndarray:
    """f16/bf16 -> f32 (exact); f32/f64 unchanged."""
    if x.dtype.itemsize == 2 and _name(x.dtype) in ("float16", "bfloat16"):
        return x.astype(np.float32)
    return x


def _canon(r: np.ndarray) -> np.ndarray:
    """Replace every NaN by the canonical quiet NaN of r's dtype (in a copy).  Whether there is
    one is a single reduction (NumPy's minimum propagates NaN; a NaN is not equal to itself)."""
    w = r.astype(np.float32) if is_bf16(r.dtype) else r
    least = np.minimum.reduce(w, None) if r.size else 0
    if least == least:
        return r
    r = np.array(r, copy=True)
    r.view(_UINT_OF_SIZE[r.dtype.itemsize])[np.isnan(w)] = _FORMATS[r.dtype.name][3]
    return r


def _round_to(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round an f32/f64 array to dtype (nearest-even) and canonicalise NaN."""
    dtype = np.dtype(dtype)
    if is_bf16(dtype) and x.dtype == np.float64:
        # ml_dtypes may go through f32 (double rounding): round exactly instead.
        return _round_float(x, dtype, "RINT")
    r = x.astype(dtype, copy=False)  # x is a fresh result: no copy when it has the type already
    return _canon(r)


def _float_binary(a, b, op) -> np.ndarray:
    return _round_to(op(_work(a), _work(b)), a.dtype)


def _f64_unary(x, op) -> np.ndarray:
    x = _arr(x)
    if isinstance(op, np.ufunc) and not is_bf16(x.dtype):
        # the ufunc's float64 loop, each result cast to x's type on the way out: astype's
        # rounding, without float64 copies of the whole input and result
        out = np.empty(x.shape, x.dtype)
        op(x, out=out, dtype=np.float64, casting="unsafe")
        return _canon(out)
    return _round_to(op(x.astype(np.float64)), x.dtype)


def _same(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = _arr(a), _arr(b)
    if a.dtype != b.dtype:
        raise ElementwiseError(f"operand element types differ ({dtype_name(a.dtype)} vs {dtype_name(b.dtype)})")
    return a, b


# --------------------------------------------------------------------------------------
# Binary arithmetic
# --------------------------------------------------------------------------------------


@element_fn("binary")
def add(a, b):
    """a + b (floats: one rounding to the element type; ints: wrap)."""
    a, b = _same(a, b)
    if is_float_dtype(a.dtype):
        return _float_binary(a, b, np.add)
    return np.add(a, b, dtype=a.dtype)


@element_fn("binary")
def sub(a, b):
    """a - b (floats: one rounding to the element type; ints: wrap)."""
    a, b = _same(a, b)
    if is_float_dtype(a.dtype):
        return _float_binary(a, b, np.subtract)
    return np.subtract(a, b, dtype=a.dtype)


@element_fn("binary")
def mul(a, b):
    """a * b (floats: one rounding to the element type; ints: wrap)."""
    a, b = _same(a, b)
    if is_float_dtype(a.dtype):
        return _float_binary(a, b, np.multiply)
    return np.multiply(a, b, dtype=a.dtype)


@element_fn("binary")
def div(a, b):
    """a / b.  Floats: IEEE (x/0 = ±inf, 0/0 = NaN), one rounding.  Ints: truncate toward
    zero, INT_MIN / -1 wraps to INT_MIN, a zero divisor raises ElementwiseError."""
    a, b = _same(a, b)
    if is_float_dtype(a.dtype):
        return _float_binary(a, b, np.divide)
    a, b = np.broadcast_arrays(a, b)
    if (b == 0).any():
        raise ElementwiseError("integer division by zero")
    if a.dtype.kind == "u":
        return np.floor_divide(a, b, dtype=a.dtype)
    wide_a, wide_b = a.astype(object), b.astype(object)
    q = np.vectorize(lambda x, y: abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1), otypes=[object])(
        wide_a, wide_b) if a.size else np.zeros(a.shape, object)
    return _wrap_pyint(q, a.dtype)


def _wrap_pyint(q: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Object array of Python ints -> dtype, modulo 2**bits."""
    bits = dtype.itemsize * 8
    mask = (1 << bits) - 1
    u = np.array([int(v) & mask for v in q.ravel()], dtype=_UINT_OF_SIZE[dtype.itemsize]).reshape(q.shape)
    return u.view(dtype) if dtype.kind == "i" else u


def _maxmin(a, b, is_max: bool) -> np.ndarray:
    a, b = _same(a, b)
    f = np.maximum if is_max else np.minimum
    if not is_float_dtype(a.dtype):
        return f(a, b)
    return _float_maxmin(a, b, f, is_max)


def float_maxmin(is_max: bool):
    """:func:`maximum` (or :func:`minimum`) of two arrays of one float dtype, without the operand
    checks (a VF step's registers, their dtype known when the step is made)."""
    return functools.partial(_float_maxmin, f=np.maximum if is_max else np.minimum, is_max=is_max)


def _float_maxmin(a, b, f, is_max: bool) -> np.ndarray:
    wa, wb = (a, b) if a.dtype.itemsize > 2 else (_work(a), _work(b))  # (f32/f64: no widening)
    r = f(wa, wb)
    # np.maximum/np.minimum already give NaN for a NaN operand; only which NaN and which
    # zero of a ±0 tie are left to fix: max(±0, ±0) is -0 only if both are -0, min(±0, ±0)
    # is +0 only if both are +0.  One reduction tells whether any result is NaN or zero (the
    # ufunc's own, not ndarray.min's Python wrapper: a cold process pays ~6 us for that; its
    # NumPy scalar compared as a Python float, not through NumPy's scalar comparison).
    if r.size == 0 or float(np.minimum.reduce(np.abs(r), None)) > 0:
        return r if wa is a else r.astype(a.dtype)  # exact: r is one of the operands
    zero = r == 0
    if zero.any():
        zero = np.flatnonzero(zero)
        za = np.broadcast_to(wa, r.shape).reshape(-1)[zero]
        zb = np.broadcast_to(wb, r.shape).reshape(-1)[zero]
        neg = (np.signbit(za) & np.signbit(zb)) if is_max else (np.signbit(za) | np.signbit(zb))
        r = np.array(r, copy=True)
        r.reshape(-1)[zero] = np.where(neg, -0.0, 0.0)
    r = r.astype(a.dtype, copy=False)  # exact: r is one of the operands
    return _canon(r)


@element_fn("binary")
def maximum(a, b):
    """max(a, b) per seeds/002: NaN if either operand is NaN (canonical qNaN), and -0 < +0
    whatever the operand order (max(-0, +0) = max(+0, -0) = +0).  The pto-isa CPU simulator's
    std::max keeps the first operand on a NaN second operand or a ±0 tie; the seed wins."""
    return _maxmin(a, b, True)


@element_fn("binary")
def minimum(a, b):
    """min(a, b) per seeds/002: NaN if either operand is NaN (canonical qNaN), and -0 < +0
    whatever the operand order (min(-0, +0) = min(+0, -0) = -0).  The pto-isa CPU simulator's
    std::min differs; the seed wins."""
    return _maxmin(a, b, False)


@element_fn("binary")
def expdif(a, b):
    """exp(a - b): the difference is rounded to the element type first, then exp (as a2a3
    runs it: vsub then vexp).  Floats only."""
    return exp(sub(a, b))


# --------------------------------------------------------------------------------------
# Remainders, bitwise ops, shifts, PReLU (pto_isa.md §3 "Elementwise tile-tile" / "Tile-scalar")
# --------------------------------------------------------------------------------------


def _need_int(x: np.ndarray, what: str) -> None:
    if is_float_dtype(x.dtype) or x.dtype == np.bool_:
        raise ElementwiseError(f"{what} is defined for integer element types only, got {dtype_name(x.dtype)}")


def _int_divisor(b: np.ndarray, what: str) -> None:
    if (np.asarray(b) == 0).any():
        raise ElementwiseError(f"integer {what} by zero (the CPU simulator asserts a nonzero divisor)")


def _int_fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C ``a % b`` (truncated; the sign of a), computed in int64/uint64 so INT_MIN % -1 = 0."""
    if a.dtype.kind == "u":
        return np.remainder(a, b, dtype=a.dtype)
    wa, wb = a.astype(np.int64), b.astype(np.int64)
    r = np.abs(wa) % np.abs(wb) if a.dtype.itemsize < 8 else np.fmod(wa, wb)
    return np.where(wa < 0, -r, r).astype(a.dtype)


@element_fn("binary")
def fmod(a, b):
    """TFMOD: C ``fmod`` for floats (exact: the result is representable; fmod(x, 0), fmod(±inf, y)
    NaN; fmod(x, ±inf) = x; the sign of a, so fmod(-0, y) = -0), C ``%`` for integers (truncated,
    the sign of a; a zero divisor raises ElementwiseError)."""
    a, b = _same(a, b)
    a, b = np.broadcast_arrays(a, b)
    if is_float_dtype(a.dtype):
        return _round_to(np.fmod(a.astype(np.float64), b.astype(np.float64)), a.dtype)
    _int_divisor(b, "remainder")
    return _int_fmod(a, b)


@element_fn("binary")
def rem(a, b):
    """TREM (pto_isa.md §3): the remainder with the sign of the divisor: ``r = fmod(a, b)``, then
    ``r + b`` (one rounding to the element type) when r != 0 and the signs of r and b differ.
    Integers: floor modulo (a zero divisor raises ElementwiseError)."""
    a, b = _same(a, b)
    a, b = np.broadcast_arrays(a, b)
    if not is_float_dtype(a.dtype):
        _int_divisor(b, "remainder")
        r = _int_fmod(a, b)
        fix = (r != 0) & ((r < 0) != (b < 0)) if a.dtype.kind == "i" else np.zeros(r.shape, bool)
        return np.where(fix, np.add(r, b, dtype=a.dtype), r).astype(a.dtype)
    r = fmod(a, b)
    wr, wb = _work(r), _work(b)
    fix = (wr != 0) & (np.signbit(wr) != np.signbit(wb))
    return np.where(fix, _float_binary(r, b, np.add), r).astype(a.dtype)


@element_fn("binary")
def bitand(a, b):
    """a & b (integers)."""
    a, b = _same(a, b)
    _need_int(a, "and")
    return np.bitwise_and(a, b)


@element_fn("binary")
def bitor(a, b):
    """a | b (integers)."""
    a, b = _same(a, b)
    _need_int(a, "or")
    return np.bitwise_or(a, b)


@element_fn("binary")
def bitxor(a, b):
    """a ^ b (integers)."""
    a, b = _same(a, b)
    _need_int(a, "xor")
    return np.bitwise_xor(a, b)


def _shift_counts(a: np.ndarray, b: np.ndarray, what: str) -> np.ndarray:
    _need_int(a, what)
    bits = a.dtype.itemsize * 8
    n = b.astype(np.int64)
    if ((n < 0) | (n >= bits)).any():
        raise ElementwiseError(f"{what} count outside 0..{bits - 1} (undefined in C++, the ISA's reference)")
    return n.astype(a.dtype)


@element_fn("binary")
def shl(a, b):
    """a << b (integers; wraps to the element type).  A count outside 0..bits-1 raises
    ElementwiseError (C++ leaves it undefined)."""
    a, b = _same(a, b)
    return np.left_shift(a, _shift_counts(a, b, "shift left"), dtype=a.dtype)


@element_fn("binary")
def shr(a, b):
    """a >> b: arithmetic for signed, logical for unsigned element types (C++ ``>>``).  A count
    outside 0..bits-1 raises ElementwiseError."""
    a, b = _same(a, b)
    return np.right_shift(a, _shift_counts(a, b, "shift right"), dtype=a.dtype)


@element_fn("binary")
def prelu(a, b):
    """TPRELU / TLRELU: ``a > 0 ? a : a * b`` (the product rounded once; NaN a gives NaN, -0 gives
    -0 * b).  Floats only."""
    a, b = _same(a, b)
    _need_float(a, "prelu")
    a, b = np.broadcast_arrays(a, b)
    return _canon(np.where(_work(a) > 0, a, _float_binary(a, b, np.multiply)).astype(a.dtype))


# --------------------------------------------------------------------------------------
# Unary
# --------------------------------------------------------------------------------------


def _need_float(x: np.ndarray, what: str) -> None:
    if not is_float_dtype(x.dtype):
        raise ElementwiseError(f"{what} is defined for float element types only, got {dtype_name(x.dtype)}")


@element_fn("unary")
def exp(x):
    """e**x, computed in float64 and rounded once to the element type (overflow -> inf)."""
    x = _arr(x)
    _need_float(x, "exp")
    return _f64_unary(x, np.exp)


@element_fn("unary")
def log(x):
    """ln(x), float64 then one rounding; log(±0) = -inf, log(x < 0) = NaN."""
    x = _arr(x)
    _need_float(x, "log")
    return _f64_unary(x, np.log)


@element_fn("unary")
def sqrt(x):
    """sqrt(x), correctly rounded (float64 then one rounding); sqrt(-0) = -0, sqrt(x < 0) = NaN."""
    x = _arr(x)
    _need_float(x, "sqrt")
    return _f64_unary(x, np.sqrt)


@element_fn("unary")
def rsqrt(x):
    """1/sqrt(x), computed in float64 and rounded once; rsqrt(+0) = +inf, rsqrt(-0) = -inf."""
    x = _arr(x)
    _need_float(x, "rsqrt")
    return _f64_unary(x, lambda v: 1.0 / np.sqrt(v))


@element_fn("unary")
def recip(x):
    """1/x, correctly rounded; recip(±0) = ±inf."""
    x = _arr(x)
    _need_float(x, "recip")
    return _f64_unary(x, lambda v: 1.0 / v)


@element_fn("unary")
def abs_(x):
    """|x|: floats clear the sign bit (NaN -> canonical NaN); signed ints wrap
    (abs(INT_MIN) = INT_MIN); unsigned ints are unchanged."""
    x = _arr(x)
    if is_float_dtype(x.dtype):
        return _canon(np.abs(_work(x)).astype(x.dtype))
    if x.dtype.kind == "u":
        return x.copy()
    return np.abs(x)



@element_fn("unary")
def relu(x):
    """max(x, 0) with the max rule above: relu(-0) = +0, relu(NaN) = NaN."""
    x = _arr(x)
    return maximum(x, np.zeros_like(x))


@element_fn("unary")
def neg(x):
    """-x: floats flip the sign bit (NaN canonical); ints wrap (-INT_MIN = INT_MIN)."""
    x = _arr(x)
    if is_float_dtype(x.dtype):
        return _canon(np.negative(_work(x)).astype(x.dtype))
    return np.negative(x, dtype=x.dtype)


@element_fn("binary")
def power(a, b):
    """TPOW / TPOWS: ``a ** b`` computed in float64 (C ``pow``: pow(x, ±0) = 1, pow(1, y) = 1, a
    negative base to a non-integer power NaN) and rounded once to the element type, as the CPU
    simulator computes POW in double and casts (pto_isa.md §6).  Floats only."""
    a, b = _same(a, b)
    _need_float(a, "pow")
    return _round_to(np.power(a.astype(np.float64), np.asarray(b).astype(np.float64)), a.dtype)


@element_fn("unary")
def bitnot(x):
    """~x (integers)."""
    x = _arr(x)
    _need_int(x, "not")
    return np.invert(x)


# --------------------------------------------------------------------------------------
# Reductions: fn(x, axis) -> element type
# --------------------------------------------------------------------------------------


def _float_sum(x: np.ndarray, axis: int) -> np.ndarray:
    """The sum along ``axis`` of f16/bf16/f32 values: exact, rounded once to float64 and then
    to x's type (:func:`reduce_sum`).

    NumPy's float64 sum is exact whenever every partial sum fits in 53 bits: all values of a
    line are multiples of the ulp of its smallest nonzero magnitude (``2**low``) and the sum is
    below ``n * 2**high`` (``high`` the exponent of its largest), so
    ``high + ceil(log2 n) - low <= 53`` certifies it, whatever the summation order (the usual
    case: data of one scale).  Lines without that certificate (huge and tiny values mixed,
    cancellation) are summed with ``math.fsum`` (exact, one rounding to float64).  Lines with
    ±inf or NaN follow IEEE (inf + -inf = NaN); a float64 sum of these types cannot overflow.
    """
    w = _work(x)
    n = w.shape[axis]
    if n > 1 and w.size and _exact_for_all_lines(w, n):  # exact in any order: the fastest one
        s = np.asarray(np.einsum(_sum_subscripts(w.ndim, axis), w, dtype=np.float64))
        # finite (no NaN to make canonical), but bf16 is rounded exactly (_round_to)
        return _round_to(s, x.dtype) if is_bf16(x.dtype) else s.astype(x.dtype)
    s = np.asarray(np.sum(w, axis=axis, dtype=np.float64))
    if n <= 1 or w.size == 0:
        return _round_to(s, x.dtype)
    p = _FORMATS[x.dtype.name][0]
    aw = np.abs(w)
    big = np.max(aw, axis=axis)
    small = np.min(aw, axis=axis, where=aw > 0, initial=np.inf)
    finite = np.isfinite(s) & (big > 0)
    if not finite.any():
        return _round_to(s, x.dtype)
    _, high = np.frexp(np.where(finite, big, 1.0))
    _, low = np.frexp(np.where(finite, small, 1.0))
    redo = finite & (high.astype(np.int64) + math.ceil(math.log2(n)) - (low.astype(np.int64) - p) > 53)
    if redo.any():
        lines = np.moveaxis(w, axis, -1)
        s = np.array(s, copy=True)
        for idx in zip(*np.nonzero(redo)):
            s[idx] = math.fsum(lines[idx].astype(np.float64).tolist())
    return _round_to(s, x.dtype)


@functools.lru_cache(maxsize=None)
def _sum_subscripts(ndim: int, axis: int) -> str:
    """einsum's subscripts of a sum along ``axis`` of an ``ndim``-D array ("ab->a": rows)."""
    sub = "abcdefghijklmnopqrstuvwxyz"[:ndim]
    return f"{sub}->{sub.replace(sub[axis], '')}"


def _exact_for_all_lines(w: np.ndarray, n: int) -> bool:
    """The certificate of :func:`_float_sum` for the whole f32 array at once, from its largest
    and smallest nonzero magnitudes: the extremes of ``|w|``'s bits as int32 (one temporary,
    three passes; NaN and ±inf are the largest).  A zero makes the minimum 0: then the smallest
    nonzero magnitude is that of the bits minus 1 (zeros wrap to the largest), in place."""
    bits = np.abs(w).view(np.int32)
    hi = int(np.maximum.reduce(bits, None))  # (not .max(): NumPy's wrapper costs ~1 us a call)
    if hi >= 0x7F800000:
        return False  # ±inf or NaN: line by line
    lo = int(np.minimum.reduce(bits, None))
    if lo == 0:
        u = bits.view(np.uint32)
        np.subtract(u, np.uint32(1), out=u)
        lo = int(np.minimum.reduce(u, None)) + 1
        if lo > hi:
            return True  # all zero
    high = (hi >> 23) - 126            # |x| < 2**high
    low = max(lo >> 23, 1) - 150       # every x is a multiple of 2**low
    return high + math.ceil(math.log2(n)) - low <= 53


def tree(fn, v: np.ndarray) -> np.ndarray:
    """The hardware's cross-lane order (vector_isa.md §1.6, cross-lane reductions are
    tree-structured): a pairwise tree over the last axis, lane 2k with 2k+1, recursively, each
    step rounded by ``fn``; an odd level is padded with +0."""
    while v.shape[-1] > 1:
        if v.shape[-1] % 2:
            v = np.concatenate([v, np.zeros(v.shape[:-1] + (1,), v.dtype)], axis=-1)
        v = fn(v[..., 0::2], v[..., 1::2])
    return v[..., 0]


@element_fn("reduce")
def reduce_sum(x, axis):
    """Sum along ``axis``.  Floats: the exact sum, rounded to float64 and then once more to the
    element type (nearest-even; f16 sums beyond 65504 give inf).  The f64 step is exact in the
    usual case and otherwise ``math.fsum``'s correctly rounded result, so the two roundings
    differ from a single one only when that f64 value is exactly a tie of the element type.
    The hardware sums in f32/f16 in its own order, so sums are compared with a tolerance
    (issue 4).  Integers sum exactly and wrap to the element type (summing modulo 2**64
    and then keeping the low bits is exact)."""
    x = _arr(x)
    if is_float_dtype(x.dtype):
        return _float_sum(x, axis)
    s = np.sum(x.astype(np.uint64), axis=axis, dtype=np.uint64)
    return np.asarray(s).astype(x.dtype)


SUM_ORDERS = ("exact", "sequential", "reverse", "pairwise")
"""The orders :func:`sum_in_order` sums floats in: ``exact`` is :func:`reduce_sum`'s rule; the
others are orders a target may legally use, each partial sum rounded to the element type as
``add`` rounds: left to right, right to left, and the pairwise tree of :func:`tree`."""


def sum_in_order(x, axis, order: str) -> np.ndarray:
    """:func:`reduce_sum` with floats summed in ``order`` (:data:`SUM_ORDERS`).  The golden
    model sums exactly; an output that moves beyond the float-sum tolerance when it sums in
    another legal order is decided by the order, not by the ISA (the fuzzer's oracle,
    pto_compiler/fuzz.py).  Integer sums do not depend on the order."""
    x = _arr(x)
    if order == "exact" or not is_float_dtype(x.dtype) or x.shape[axis] == 0:
        return reduce_sum(x, axis)
    v = np.moveaxis(x, axis, -1)
    if order == "pairwise":
        return tree(add.fn, v)
    terms = range(v.shape[-1]) if order == "sequential" else range(v.shape[-1] - 1, -1, -1)
    it = iter(terms)
    acc = v[..., next(it)]
    for k in it:
        acc = add.fn(acc, v[..., k])
    return np.asarray(acc)


def _reduce_maxmin(x, axis, is_max: bool) -> np.ndarray:
    x = _arr(x)
    if not is_float_dtype(x.dtype):
        return np.asarray((np.max if is_max else np.min)(x, axis=axis))
    w = _work(x)
    # NumPy's maximum/minimum propagate NaN: a line with one gives NaN (made canonical below).
    # Left open is which zero a line whose result is ±0 gives: +0 if it has a +0 (max), -0 if it
    # has a -0 (min), whatever the order; only those lines are read again.
    m = np.asarray((np.maximum if is_max else np.minimum).reduce(w, axis=axis))
    zero = m == 0
    if zero.any():
        lines = np.moveaxis(w, axis, -1)[zero]
        has = ((lines == 0) & (np.signbit(lines) != is_max)).any(axis=-1)  # a +0 (max) / a -0 (min)
        m[zero] = np.where(has != is_max, w.dtype.type(-0.0), w.dtype.type(0.0))
    return _canon(m.astype(x.dtype))


@element_fn("reduce")
def reduce_max(x, axis):
    """Max along ``axis`` with the max rule: any NaN -> NaN, +0 beats -0.  Exact."""
    return _reduce_maxmin(x, axis, True)


@element_fn("reduce")
def reduce_min(x, axis):
    """Min along ``axis`` with the min rule: any NaN -> NaN, -0 beats +0.  Exact."""
    return _reduce_maxmin(x, axis, False)


@element_fn("reduce")
def reduce_prod(x, axis):
    """TCOLPROD / TROWPROD: the product along ``axis``, folded in order from index 0 with
    :func:`mul` (each step rounded to the element type; integers wrap).  The pages give no order;
    this is the pto-isa CPU simulator's (TCOLPROD: the rows in turn, as the vmul fold)."""
    x = np.moveaxis(_arr(x), axis, 0)
    acc = x[0]
    for v in x[1:]:
        acc = mul(acc, v)
    return np.asarray(acc)


def _arg_extreme(x, axis, is_max: bool) -> np.ndarray:
    """The position along ``axis`` of the first extreme element in the order of :func:`reduce_max`
    / :func:`reduce_min`: NaN beats every number, +0 beats -0 for max and -0 beats +0 for min
    (seeds/002: "the index of the first NaN", "min(-0, +0) = -0", ties: the first index)."""
    x = _arr(x)
    if not is_float_dtype(x.dtype):
        return np.asarray((np.argmax if is_max else np.argmin)(x, axis=axis)).astype(np.int64)
    w = _work(x).astype(np.float64)
    # a total order key: -0 just below +0 (no f16/bf16/f32 value lies between), NaN beyond every number
    key = np.where((w == 0) & np.signbit(w), -np.float64(5e-324), w)
    key = np.where(np.isnan(w), np.inf if is_max else -np.inf, key)
    big = np.isinf(w) & ~np.isnan(w) & ((w > 0) if is_max else (w < 0))
    # an infinity of the winning sign ties with NaN's key: NaN still wins, so push the infinity back
    key = np.where(big, np.nextafter(np.inf, 0) if is_max else -np.nextafter(np.inf, 0), key)
    return np.asarray((np.argmax if is_max else np.argmin)(key, axis=axis)).astype(np.int64)


@element_fn("reduce")
def reduce_argmax(x, axis):
    """TROWARGMAX / TCOLARGMAX: the index of the first maximum along ``axis`` (int64), with
    :func:`reduce_max`'s order (any NaN wins: the first NaN; +0 beats -0)."""
    return _arg_extreme(x, axis, True)


@element_fn("reduce")
def reduce_argmin(x, axis):
    """TROWARGMIN / TCOLARGMIN: the index of the first minimum along ``axis`` (int64), with
    :func:`reduce_min`'s order (any NaN wins: the first NaN; -0 beats +0)."""
    return _arg_extreme(x, axis, False)


# --------------------------------------------------------------------------------------
# Conversion (TCVT) and scalar -> element type
# --------------------------------------------------------------------------------------

def _round_int(y: np.ndarray, mode: str) -> np.ndarray:
    """Round float64 values to integral float64 values per mode."""
    if mode in ("RINT", "NONE"):
        return np.rint(y)
    if mode == "ROUND":
        return np.copysign(np.floor(np.abs(y) + 0.5), y)
    if mode == "FLOOR":
        return np.floor(y)
    if mode == "CEIL":
        return np.ceil(y)
    t = np.trunc(y)
    if mode == "TRUNC":
        return t
    # ODD: truncate; if inexact and the truncated value is even, step away from zero
    bump = (t != y) & (np.fmod(t, 2.0) == 0)
    return np.where(bump, t + np.copysign(1.0, y), t)


def _round_float(xf: np.ndarray, dtype: np.dtype, mode: str) -> np.ndarray:
    """Exactly round float64 values to a float element type per mode (see the module doc)."""
    dtype = np.dtype(dtype)
    p, emin, emax, _ = _FORMATS[dtype.name]
    xf = np.asarray(xf, dtype=np.float64)
    out = xf.copy()
    fin = np.isfinite(xf) & (xf != 0)
    if fin.any():
        x = xf[fin]
        _, e = np.frexp(x)
        big_e = np.maximum(e.astype(np.int64) - 1, emin)
        ulp = np.ldexp(1.0, (big_e - (p - 1)).astype(np.int32))
        r = _round_int(x / ulp, mode) * ulp
        top = max_finite(dtype)
        over = np.abs(r) > top
        if over.any():
            pos = r > 0
            if mode in ("RINT", "NONE", "ROUND"):
                sat = np.where(pos, np.inf, -np.inf)
            elif mode in ("TRUNC", "ODD"):
                sat = np.where(pos, top, -top)
            elif mode == "FLOOR":
                sat = np.where(pos, top, -np.inf)
            else:  # CEIL
                sat = np.where(pos, np.inf, -top)
            r = np.where(over, sat, r)
        out[fin] = r
    res = out.astype(dtype)  # exact: every value is representable now
    return _canon(res)


def _float_to_int(xf: np.ndarray, dtype: np.dtype, mode: str) -> np.ndarray:
    xf = np.asarray(xf, dtype=np.float64)
    r = np.where(np.abs(xf) >= 2.0 ** 52, xf, _round_int(xf, mode))
    lo, hi = int_range(dtype)
    bits = dtype.itemsize * 8
    hi_edge = 2.0 ** (bits - 1) if dtype.kind == "i" else 2.0 ** bits  # hi + 1, exact
    nan = np.isnan(r)
    too_big = r >= hi_edge
    too_small = r < float(lo)
    ok = ~(nan | too_big | too_small)
    out = np.zeros(r.shape, dtype=dtype)
    out[ok] = r[ok].astype(dtype)
    out[too_big] = hi
    out[too_small] = lo
    return out


def _int_to_float(x: np.ndarray, dtype: np.dtype, mode: str) -> np.ndarray:
    if x.dtype.itemsize < 8:
        return _round_float(x.astype(np.float64), dtype, mode)
    xf = x.astype(np.float64)
    exact = np.abs(xf) < 2.0 ** 53
    if exact.all():
        return _round_float(xf, dtype, mode)
    p = _FORMATS[np.dtype(dtype).name][0]
    pre = xf.copy()
    flat_x, flat_pre, flat_exact = x.reshape(-1), pre.reshape(-1), exact.reshape(-1)
    for i in np.flatnonzero(~flat_exact):
        v = int(flat_x[i])
        neg, mag = v < 0, abs(v)
        shift = max(mag.bit_length() - p, 0)
        q, rem = divmod(mag, 1 << shift)
        half = 1 << (shift - 1) if shift else 0
        if mode in ("RINT", "NONE"):
            q += rem > half or (rem == half and shift and q & 1)
        elif mode == "ROUND":
            q += shift > 0 and rem >= half
        elif mode == "FLOOR":
            q += neg and rem > 0
        elif mode == "CEIL":
            q += (not neg) and rem > 0
        elif mode == "ODD":
            q += rem > 0 and not q & 1
        flat_pre[i] = float(-(q << shift) if neg else (q << shift))
    return _round_float(pre, dtype, mode)


@element_fn("convert")
def convert(x, dtype, mode: str | None = "CAST_RINT", saturate: bool | None = None):
    """TCVT: convert to ``dtype`` with a round mode (see the module doc).

    float -> float: exact rounding per mode, IEEE directed overflow; NaN -> canonical NaN.
    float -> int: round per mode, then saturate to the integer range; NaN -> 0.
    int -> float: exact rounding per mode (64-bit integers included).
    int -> int: wrap (low bits), or clamp to the range with ``saturate=True``.
    """
    x = _arr(x)
    dst = np_dtype(dtype)
    m = round_mode(mode)
    src_float = is_float_dtype(x.dtype)
    if x.dtype == np.bool_:
        x = x.astype(np.uint8)
    if dst == np.bool_:
        return x != 0
    if src_float and is_float_dtype(dst):
        if x.dtype == dst:
            return _canon(x.copy())
        return _round_float(x.astype(np.float64), dst, m)
    if src_float:
        return _float_to_int(x.astype(np.float64), dst, m)
    if is_float_dtype(dst):
        return _int_to_float(x, dst, m)
    if saturate:
        lo, hi = int_range(dst)
        vals = [min(max(int(v), lo), hi) for v in x.reshape(-1)]
        return np.array(vals, dtype=dst).reshape(x.shape)
    return x.astype(dst)


@element_fn("interleave")
def interleave(a, b) -> tuple[np.ndarray, np.ndarray]:
    """TINTERLEAVE.md: per row the stream ``a[i,0], b[i,0], a[i,1], b[i,1], ...``, its first half
    (dst0) and its second half (dst1)."""
    a, b = _same(a, b)
    r, c = a.shape
    stream = np.empty((r, 2 * c), a.dtype)
    stream[:, 0::2], stream[:, 1::2] = a, b
    return stream[:, :c], stream[:, c:]


@element_fn("interleave")
def deinterleave(a, b=None) -> tuple[np.ndarray, np.ndarray]:
    """TDEINTERLEAVE.md: per row ``combined = a ++ b`` (``a`` alone in the one-source form), its
    even (dst0) and odd (dst1) elements."""
    combined = _arr(a) if b is None else np.concatenate(_same(a, b), axis=1)
    return combined[:, 0::2], combined[:, 1::2]


@element_fn("dequant")
def dequant(x, scale, offset):
    """TDEQUANT.md: ``(f32(x) - offset) * scale``, each step rounded to f32 (vsub, then vmul);
    ``scale``/``offset`` broadcast against ``x`` (one value a row)."""
    xf = np.asarray(x).astype(np.float32)  # i8/i16: exact
    return mul(sub(xf, np.broadcast_to(offset, xf.shape)), np.broadcast_to(scale, xf.shape))


def saturating_convert(x, dtype) -> np.ndarray:
    """TADDReluConv.md's ``convert``: "narrows ... with saturating behavior; for floating-point
    down-casts, rounding follows round-to-nearest-even": beyond the destination's finite range (an
    infinity included) the result is its extreme; a NaN stays a NaN (float) or becomes 0 (int, as
    TCVT's float -> int)."""
    x = _arr(x)
    dst = np_dtype(dtype)
    if is_float_dtype(x.dtype) and is_float_dtype(dst):
        top = max_finite(dst)
        x = np.where(np.isnan(x), x, np.clip(x, -top, top)).astype(x.dtype)
    return convert(x, dst, "CAST_RINT", saturate=True)


@element_fn("reluconv")
def add_relu_conv(a, b, dtype):
    """TADDRELUCONV (TADDReluConv.md): ``convert(max(0, a + b))``, the sum and the ReLU in the
    source type (TADD's rounding or wrap, TRELU's max rule), then :func:`saturating_convert`."""
    return saturating_convert(relu(add(a, b)), dtype)


@element_fn("reluconv")
def sub_relu_conv(a, b, dtype):
    """TSUBRELUCONV (pto_isa.md §3 "convert(max(0, a±b))", TADDReluConv.md's convert):
    ``convert(max(0, a - b))``."""
    return saturating_convert(relu(sub(a, b)), dtype)


DEQ_SCALE_SHIFT = 17
"""TAddDeqRelu.md's precision-compensated scaling ``(x * 2^-17) * deqScale * 2^17``."""


@element_fn("deqrelu")
def add_deq_relu(a, b, scale):
    """TADDDEQRELU (TAddDeqRelu.md): ``half(max(0, (a + b) * deqScale))`` with i32 a, b (the sum
    wraps, TADD's rule) and an f32 scale, as the page's sequence: the sum converted to f32
    (nearest even), times 2^-17, times the scale, times 2^17 (each rounded to f32), ReLU, then a
    saturating f16 conversion (:func:`saturating_convert`)."""
    x = convert(add(a, b), np.float32)
    for k in (np.float32(2.0 ** -DEQ_SCALE_SHIFT), np.float32(scale), np.float32(2.0 ** DEQ_SCALE_SHIFT)):
        x = mul(x, np.full(x.shape, k, np.float32))
    return saturating_convert(relu(x), np.float16)


_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "GT": np.greater, "GE": np.greater_equal,
            "LE": np.less_equal}


def compare(a, b, mode: str) -> np.ndarray:
    """TCMP/TCMPS's predicate ``a mode b`` (``mode`` one of EQ NE LT GT GE LE), booleans: IEEE
    comparisons (a NaN operand: only NE holds; ``-0 == +0``), exact for every integer type."""
    with np.errstate(invalid="ignore"):
        return _COMPARE[mode](_arr(a), _arr(b))


def pack_predicate(p, nbytes: int) -> np.ndarray:
    """Rows of predicate bits as ``nbytes`` bytes a row (dialects/pto.py ``CompareOp``): bit
    ``j % 8`` of byte ``j // 8`` is ``p[i, j]``, zeros past the bits."""
    p = np.asarray(p, bool)
    out = np.zeros((p.shape[0], nbytes), np.uint8)
    packed = np.packbits(p, axis=1, bitorder="little")[:, :nbytes]
    out[:, :packed.shape[1]] = packed
    return out


def predicate_bits(rows, count: int) -> np.ndarray:
    """The first ``count`` predicate bits of each row of bytes (the inverse of :func:`pack_predicate`)."""
    return np.unpackbits(np.asarray(rows, np.uint8), axis=1, count=count, bitorder="little").astype(bool)


def scalar_to(value, dtype) -> np.ndarray:
    """A kernel scalar (Python or NumPy number) as a 0-d array of the element type.

    Floats round to nearest-even (exactly, from float64); integers wrap modulo 2**bits;
    a float given for an integer element type rounds to nearest-even and saturates (the
    TCVT default, CAST_RINT); an integer for a float type rounds to nearest-even.
    """
    dst = np_dtype(dtype)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if is_float_dtype(dst):
            if abs(v) < 2 ** 53:
                return _round_float(np.array(float(v)), dst, "RINT")
            return _int_to_float(np.array(v, dtype=np.int64 if v < 0 else np.uint64), dst, "RINT")
        if dst == np.bool_:
            return np.array(v & 1, dtype=dst)
        bits = dst.itemsize * 8
        v &= (1 << bits) - 1
        if dst.kind == "i" and v >= 1 << (bits - 1):
            v -= 1 << bits
        return np.array(v, dtype=dst)
    src = np.asarray(value)
    if not is_float_dtype(src.dtype):
        src = src.astype(np.float64)
    return convert(src, dst, "RINT")


def fill_value(dtype, pad: int):
    """The PadValue of a tile (``pad`` 1 Zero -> 0, 2 Max -> +inf / int max, 3 Min -> -inf /
    int min) as a 0-d array; None for 0 (Null: no padding)."""
    dt = np_dtype(dtype)
    if pad == 0:
        return None
    if pad == 1:
        return np.zeros((), dt)
    if is_float_dtype(dt):
        return np.array(np.inf if pad == 2 else -np.inf).astype(dt)
    lo, hi = int_range(dt)
    return np.array(hi if pad == 2 else lo, dtype=dt)


def pad_bits(dtype, pad: int) -> int:
    """The bits of :func:`fill_value` (not Null) as a signed integer of the element's width (what
    the lowerings duplicate)."""
    v = fill_value(dtype, pad)
    return int(v.reshape(1).view(f"i{v.itemsize}")[0])


@element_fn("fillpad")
def fill_pad(src: np.ndarray, shape: tuple[int, int], dtype, pad: int) -> np.ndarray:
    """TFILLPAD.md: the whole ``shape`` tile of ``dtype``, ``src`` (src's valid region, elements of
    the same size) bit for bit at the top left, PadValue ``pad`` everywhere else."""
    out = np.full(shape, fill_value(dtype, pad))
    r, c = src.shape
    out[:r, :c] = np.ascontiguousarray(src).view(out.dtype)
    return out


# --------------------------------------------------------------------------------------
# Fills by position (TCI, TTRI): fn(shape, scalar, flag, dtype)
# --------------------------------------------------------------------------------------


@element_fn("fill")
def sequence(shape, start, descending, dtype):
    """TCI: ``start + k`` (``start - k`` descending) at the k-th position of a rows x cols region in
    row-major order, wrapping in the (integer) element type."""
    dt = np_dtype(dtype)
    _need_int(np.zeros((), dt), "tci")
    k = np.arange(shape[0] * shape[1], dtype=np.uint64).reshape(shape)
    s = np.uint64(int(start) % (1 << 64))
    v = s - k if descending else s + k  # modulo 2**64, then the low bits
    return v.astype(_UINT_OF_SIZE[dt.itemsize]).view(dt)


@element_fn("fill")
def triangle(shape, diag, upper, dtype):
    """TTRI: 1 where ``j <= i + diag`` (lower) or ``j >= i + diag`` (upper), else 0."""
    i, j = np.indices(shape, dtype=np.int64)
    on = (j >= i + int(diag)) if upper else (j <= i + int(diag))
    return on.astype(np_dtype(dtype))


# Name table, for tools and tests: every element function by name.
FUNCTIONS: dict[str, ElementFn] = {
    f.name: f for f in (add, sub, mul, div, maximum, minimum, expdif, exp, log, sqrt, rsqrt, recip, abs_,
                        relu, neg, fmod, rem, bitand, bitor, bitxor, shl, shr, prelu, power, bitnot, reduce_sum,
                        reduce_max, reduce_min, reduce_prod, reduce_argmax, reduce_argmin, convert, sequence, triangle)
}


# --------------------------------------------------------------------------------------
# TPRINT
# --------------------------------------------------------------------------------------


PRINTED: list | None = None
"""While :func:`recording_prints` is active: ``(where, values)`` of each TPRINT, in print order."""


def print_tile(where: str, x: np.ndarray) -> None:
    """TPRINT from the golden model or the executor: the tile's text on stderr (and, while
    ``ptoc --run`` records, its values, which it compares between the two runs)."""
    import sys

    sys.stderr.write(tile_text(where, x))
    if PRINTED is not None:
        PRINTED.append((where, np.array(x)))


@contextmanager
def recording_prints():
    """Collect the TPRINTs of a run (a list of ``(where, values)``) as well as printing them."""
    global PRINTED
    saved, PRINTED = PRINTED, []
    try:
        yield PRINTED
    finally:
        PRINTED = saved


def _pair_dtype(dtype) -> np.dtype:
    """The 8-byte (value, index) pair of TSORT32/TMRGSORT: the value at byte 0, the u32 index at 4."""
    return np.dtype({"names": ["v", "i"], "formats": [np_dtype(dtype), np.uint32], "offsets": [0, 4],
                     "itemsize": 8})


@element_fn("sort")
def sort_pairs(values, index) -> np.ndarray:
    """VBS32 (TSORT32.md): each row of ``values`` (n, k; f16 or f32) with its u32 ``index`` row,
    sorted by value, descending, equal values by the smaller index first (pairs equal in both keep
    their order, as the CPU simulator's stable sort); returned as the 8-byte pairs' bytes (n, 8 k):
    ``[value, index]`` for f32, ``[value, 0x0000, index]`` for f16.  The page gives NaN no place in
    the order: a NaN value raises :class:`ElementwiseError`."""
    v, i = _arr(values), _arr(index).astype(np.uint32)
    if np.isnan(v).any():
        raise ElementwiseError("a NaN among the values to sort (TSORT32.md gives NaN no place in the order)")
    order = np.lexsort((i, -v.astype(np.float64)), axis=-1)
    out = np.zeros(v.shape, _pair_dtype(v.dtype))
    out["v"] = np.take_along_axis(v, order, -1)
    out["i"] = np.take_along_axis(i, order, -1)
    return out.view(np.uint8).reshape(*v.shape[:-1], 8 * v.shape[-1])


@element_fn("sort")
def merge_pairs(lists, dtype, exhausted: bool) -> tuple[np.ndarray, list[int]]:
    """VMS4 (TMRGSORT.md; the order of the CPU simulator's TMrgSort.hpp): ``lists`` of 8-byte (value,
    index) pairs as bytes merged: at each step the head pair of largest value goes out, equal values
    from the lowest-numbered list first; ``exhausted`` stops once a list is used up.  Returns (the
    merged pairs' bytes, the pairs taken from each list).  A NaN value raises, as in
    :func:`sort_pairs`."""
    pairs = [np.frombuffer(np.ascontiguousarray(x, np.uint8).tobytes(), _pair_dtype(dtype)) for x in lists]
    vals = [p["v"].astype(np.float64).tolist() for p in pairs]
    if any(math.isnan(v) for vs in vals for v in vs):
        raise ElementwiseError("a NaN among the values to merge (TMRGSORT.md gives NaN no place in the order)")
    heads = [0] * len(pairs)
    picks = []
    while True:
        pick = -1
        for k, vs in enumerate(vals):
            if heads[k] < len(vs) and (pick < 0 or vs[heads[k]] > vals[pick][heads[pick]]):
                pick = k
        if pick < 0:
            break
        picks.append((pick, heads[pick]))
        heads[pick] += 1
        if exhausted and any(h == len(vs) for h, vs in zip(heads, vals)):
            break
    out = np.zeros(len(picks), _pair_dtype(dtype))  # the pair's bytes 2..3 (f16) stay 0
    for f in ("v", "i"):
        out[f] = [pairs[k][f][j] for k, j in picks]
    return out.view(np.uint8), heads


def tile_text(where: str, x: np.ndarray) -> str:
    """What TPRINT prints for a tile's valid region ``x`` (the golden model and the executor print
    the same text): a header ``tprint WHERE: RxC TYPE`` and one line per row, floats as the
    shortest decimal that reads back to the same value of the element type."""
    rows = [" ".join(_element_text(v) for v in row) for row in np.asarray(x)]
    return "\n".join([f"tprint {where}: {x.shape[0]}x{x.shape[1]} {dtype_name(x.dtype)}", *rows]) + "\n"


def _element_text(v) -> str:
    if is_float_dtype(v.dtype):
        return np.format_float_positional(v, unique=True, trim="-") if np.isfinite(v) else str(float(v))
    return str(int(v))


# --------------------------------------------------------------------------------------
# MGATHER / MSCATTER (docs/isa/MGATHER.md, MSCATTER.md)
# --------------------------------------------------------------------------------------


def remap_indices(k: np.ndarray, capacity: int, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(the indices the access uses, which of them access) for uint32 indices ``k`` under the
    out-of-bounds mode: clamp ``min(k, capacity - 1)``, wrap ``k % capacity``, zero/skip no access
    past the capacity, undefined every index as it is (the caller checks them)."""
    if mode == "clamp":
        return np.minimum(k, capacity - 1), np.ones(k.shape, bool)
    if mode == "wrap":
        return k % capacity, np.ones(k.shape, bool)
    inside = k < capacity
    return np.where(inside, k, 0), inside if mode in ("zero", "skip") else np.ones(k.shape, bool)


SCATTER_COMBINE = {"none": lambda old, new: new, "add": add, "max": maximum, "min": minimum}
"""MSCATTER's ``atom(old, src)`` per ``scatterAtomicOp`` (MSCATTER.md "Atomic Accumulation")."""


def scatter_in_order(table: np.ndarray, slots: np.ndarray, values: np.ndarray, atomic: str) -> None:
    """``table[slots[i]] = atom(table[slots[i]], values[i])`` for i in order (a slot is a row of
    ``table`` or one element): a slot written twice sees its first write before its second
    (sequential, the last writer wins); vectorised by rounds of each slot's n-th writer."""
    if slots.size == 0:
        return
    order = np.argsort(slots, kind="stable")
    s = slots[order]
    start = np.r_[0, np.flatnonzero(s[1:] != s[:-1]) + 1]
    rank = np.empty(s.size, np.int64)
    rank[order] = np.arange(s.size) - np.repeat(start, np.diff(np.r_[start, s.size]))
    combine = SCATTER_COMBINE[atomic]
    for n in range(int(rank.max()) + 1):
        sel = rank == n
        table[slots[sel]] = combine(table[slots[sel]], values[sel])
