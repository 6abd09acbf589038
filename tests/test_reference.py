"""Golden model (runtime/reference.py, runtime/elementwise.py): cases computed by hand from the
ISA pages, edge cases, control flow, I/O conventions.

Nothing here trusts the model: every expected value is a literal or comes from a small
explicit formula written next to the case.  Modules are xDSL-syntax text parsed with xDSL's
own parser (the PTO-AS front end is not used).  Property tests against a loop formulation are
in test_reference_props.py.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.dialects.scf import Scf
from xdsl.parser import Parser

from pto_compiler.diagnostics import PtocError
from pto_compiler.dialects.pto import PTO
from pto_compiler.runtime import elementwise as E
from pto_compiler.runtime import reference as R

BF16 = ml_dtypes.bfloat16
NAN32 = 0x7FC00000

# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------

_CTX = Context()
for _d in (Builtin, Func, Arith, Scf, PTO):
    _CTX.load_dialect(_d)


def parse(text: str):
    m = Parser(_CTX, text).parse_module()
    m.verify()
    return m


def T(rows, cols, dt="f32", valid=None, col=False, pad=0, buf=False):
    """A tile type: ``!pto.tile<RxCxdt, ...>`` (or ``!pto.tile_buf<vec, ...>`` with buf)."""
    keys = []
    if valid is not None and tuple(valid) != (rows, cols):
        keys.append("valid=" + "x".join("?" if v < 0 else str(v) for v in valid))
    if col:
        keys.append("blayout=col_major")
    if pad:
        keys.append(f"pad={pad}")
    inner = f"{rows}x{cols}x{dt}" + "".join(", " + k for k in keys)
    return f"!pto.tile_buf<vec, {inner}>" if buf else f"!pto.tile<{inner}>"


def l1(op: str, arg_types: list[str], res_type: str, attrs: str = "", order=None) -> str:
    """``func @k(%a0: T0, ...) -> R { %d = pto.OP %a.. : (..) -> R }``; order permutes operands."""
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(arg_types))
    idx = list(range(len(arg_types))) if order is None else order
    operands = ", ".join(f"%a{i}" for i in idx)
    types = ", ".join(arg_types[i] for i in idx)
    attr = f" {attrs}" if attrs else ""
    return (f"func.func @k({args}) -> {res_type} {{\n"
            f"  %d = pto.{op} {operands}{attr} : ({types}) -> {res_type}\n"
            f"  func.return %d : {res_type}\n}}\n")


def run1(op, arg_types, res_type, *values, attrs="", order=None):
    m = parse(l1(op, arg_types, res_type, attrs, order))
    return R.evaluate(m, {f"a{i}": v for i, v in enumerate(values)})["result0"]


def f32(*rows):
    return np.array(rows, dtype=np.float32)


_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits(a):
    a = np.asarray(a)
    return a.view(_UINT_OF_SIZE[a.dtype.itemsize])


def same_bits(got, want):
    """Bit equality (so ±0 and NaN payloads count)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(bits(got), bits(want))


# --------------------------------------------------------------------------------------
# elementwise: max/min rules (seeds/002), rounding, wrap
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [E.maximum, E.minimum])
def test_maxmin_nan_either_operand_gives_canonical_nan(fn):
    payload = np.array([0x7FC01234], np.uint32).view(np.float32)[0]
    a = f32(np.nan, 1.0, payload, -np.inf)
    b = f32(2.0, np.nan, 3.0, np.nan)
    assert (bits(fn(a, b)) == NAN32).all()
    assert (bits(fn(b, a)) == NAN32).all()


def test_maxmin_signed_zero_whatever_the_order():
    p, n = f32(0.0), f32(-0.0)
    for x, y in ((p, n), (n, p)):
        assert not np.signbit(E.maximum(x, y))[0]
        assert np.signbit(E.minimum(x, y))[0]
    assert np.signbit(E.maximum(n, n))[0] and not np.signbit(E.minimum(p, p))[0]


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32"])
def test_maxmin_canonical_nan_per_type(dt):
    want = {"f16": 0x7E00, "bf16": 0x7FC0, "f32": NAN32}[dt]
    a = np.array([np.nan, 1], dtype=E.np_dtype(dt))
    b = np.array([1, -np.nan], dtype=E.np_dtype(dt))
    assert (bits(E.maximum(a, b)) == want).all()
    assert (bits(E.minimum(b, a)) == want).all()


_MAXMIN_SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 3.0, 6e-8, -2.5e-39)


def _maxmin_loop(x, y, is_max: bool, dt: np.dtype) -> int:
    """The bits of seeds/002's max/min of two elements, one Python comparison at a time: NaN
    (canonical) if either is NaN, a ±0 tie +0 (max) / -0 (min) unless both zeros have that
    other sign, else the larger (smaller) element itself."""
    uint = _UINT_OF_SIZE[dt.itemsize]
    if dt.kind in "iub":
        v = max(int(x), int(y)) if is_max else min(int(x), int(y))
        return int(np.array(v, dt).view(uint))
    fx, fy = float(x), float(y)
    if math.isnan(fx) or math.isnan(fy):
        return E.FLOAT_FORMATS[E.dtype_name(dt)][3]
    if fx == fy == 0.0:
        sx, sy = math.copysign(1, fx) < 0, math.copysign(1, fy) < 0
        return int(np.array(-0.0 if ((sx and sy) if is_max else (sx or sy)) else 0.0, dt).view(uint))
    pick = x if (fx > fy) == is_max or fx == fy else y
    return int(np.array(pick, dt).view(uint))


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64"])
@pytest.mark.parametrize("mix", ["plain", "zeros", "nans", "specials"])
def test_maxmin_bits_match_a_loop_of_the_rule(dt, mix):
    """E.maximum/E.minimum against a per-element loop of seeds/002's rule, bit for bit, every
    element type: arrays without zeros or NaN (the fast path), with ±0 ties in both operand
    orders, with NaNs of both signs and another payload, and every pair of special values;
    tile-tile and tile-scalar (a broadcast operand) shapes."""
    dtype = E.np_dtype(dt)
    rng = np.random.default_rng(sum(map(ord, dt + mix)))
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        a, b = (rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True) for _ in range(2))
    else:
        a, b = (E.convert(rng.uniform(-4, 4, 64), dtype, "RINT") for _ in range(2))
        if mix == "zeros":
            a[::3], b[::3] = dtype.type(0.0), dtype.type(-0.0)
            a[1::3], b[1::3] = dtype.type(-0.0), dtype.type(0.0)
            a[2::9], b[2::9] = dtype.type(-0.0), dtype.type(-0.0)
            a[5::9], b[5::9] = dtype.type(0.0), dtype.type(0.0)
        elif mix == "nans":
            a[::5], b[1::5] = dtype.type(np.nan), dtype.type(-np.nan)
            payload = np.array(E.FLOAT_FORMATS[dt][3] | 0x11, np.uint32 if dt == "f32" else np.uint16).view(dtype)
            a[2::7] = payload
        elif mix == "specials":
            s = np.array(_MAXMIN_SPECIALS, np.float64)
            pairs = np.array([(x, y) for x in s for y in s])
            a, b = (E.convert(pairs[:, k], dtype, "RINT") for k in (0, 1))
    uint = _UINT_OF_SIZE[dtype.itemsize]
    for fn, is_max in ((E.maximum, True), (E.minimum, False)):
        k = math.isqrt(a.size)  # 8 or 11 columns
        for x, y in ((a, b), (b, a), (a.reshape(-1, k), b.reshape(-1, k)[:, :1]), (a[:1], b)):
            got = np.asarray(fn(x, y))
            xb, yb = np.broadcast_arrays(x, y)
            want = [_maxmin_loop(p, q, is_max, dtype) for p, q in zip(xb.reshape(-1), yb.reshape(-1))]
            assert got.dtype == dtype and got.shape == xb.shape
            assert got.reshape(-1).view(uint).tolist() == want, (fn, x, y)


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("mix", ["plain", "zeros", "nans", "specials"])
def test_reduce_maxmin_bits_match_a_fold_of_the_rule(dt, mix):
    """E.reduce_max/E.reduce_min along rows and columns against a left fold of
    :func:`_maxmin_loop` over each line, bit for bit: lines of only ±0 in any order, NaNs of both
    signs and another payload, every special value, strided lines."""
    dtype = E.np_dtype(dt)
    uint = _UINT_OF_SIZE[dtype.itemsize]
    rng = np.random.default_rng(sum(map(ord, dt + mix)))
    pool = {"plain": [1.5, -2.0, 0.25, 3.0, -0.5], "zeros": [0.0, -0.0, -0.0, 0.0, -1.0],
            "nans": [np.nan, -np.nan, 1.0, -0.0, 2.0], "specials": list(_MAXMIN_SPECIALS)}[mix]
    x = E.convert(rng.choice(np.array(pool), size=(9, 13)), dtype, "RINT")
    if mix == "nans":
        x[2, 3] = np.array(E.FLOAT_FORMATS[dt][3] | 0x11, uint).view(dtype)
    x = x[:, :12]  # strided lines
    for fn, is_max in ((E.reduce_max, True), (E.reduce_min, False)):
        for axis in (0, 1):
            got = np.asarray(fn(x, axis))
            lines = x.T if axis == 0 else x
            want = []
            for line in lines:
                acc = line[0]
                for v in line[1:]:
                    acc = np.array(_maxmin_loop(acc, v, is_max, dtype), uint).view(dtype)[()]
                want.append(int(np.array(acc, dtype).view(uint)))
            assert got.dtype == dtype and got.shape == (lines.shape[0],)
            assert got.view(uint).tolist() == want, (fn, axis)


def test_f16_rounds_after_every_op_and_overflows_to_inf():
    h = np.float16
    assert E.add(np.array([60000], h), np.array([10000], h))[0] == np.inf
    assert E.mul(np.array([-300], h), np.array([300], h))[0] == -np.inf
    # 2049 is not an f16: 2048 + 1 rounds to even (2048)
    assert E.add(np.array([2048], h), np.array([1], h))[0] == 2048
    assert E.add(np.array([2048], h), np.array([3], h))[0] == 2052
    # (1 + 2^-10) * (1 + 2^-10) = 1 + 2^-9 + 2^-20 -> 1 + 2^-9
    x = np.array([1 + 2 ** -10], h)
    assert E.mul(x, x)[0] == h(1 + 2 ** -9)


def test_bf16_rounds_to_nearest_even():
    b = np.array([1.0], BF16)
    # 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even -> 1
    assert float(E.add(b, np.array([2 ** -8], BF16))[0]) == 1.0
    assert float(E.add(b, np.array([3 * 2 ** -8], BF16))[0]) == 1 + 2 ** -6
    assert float(E.div(np.array([1.0], BF16), np.array([3.0], BF16))[0]) == 0.333984375


@pytest.mark.parametrize("dt,a,b,add,sub,mul", [
    ("i8", 127, 1, -128, 126, 127), ("i8", -128, -1, 127, -127, -128),
    ("i16", 32767, 2, -32767, 32765, -2), ("i32", 2 ** 31 - 1, 1, -2 ** 31, 2 ** 31 - 2, 2 ** 31 - 1),
    ("i64", 2 ** 63 - 1, 1, -2 ** 63, 2 ** 63 - 2, 2 ** 63 - 1),
    ("ui8", 0, 1, 1, 255, 0), ("ui8", 200, 100, 44, 100, 32), ("ui16", 65535, 2, 1, 65533, 65534),
    ("ui32", 0, 1, 1, 2 ** 32 - 1, 0), ("ui64", 2 ** 64 - 1, 2, 1, 2 ** 64 - 3, 2 ** 64 - 2),
])
def test_integer_wrap(dt, a, b, add, sub, mul):
    d = E.np_dtype(dt)
    x, y = np.array([a], d), np.array([b], d)
    with np.errstate(all="raise"):  # no overflow warning may leak out
        assert int(E.add(x, y)[0]) == add
        assert int(E.sub(x, y)[0]) == sub
        assert int(E.mul(x, y)[0]) == mul


def test_integer_abs_neg_div_wrap():
    i8 = np.int8
    assert int(E.abs_(np.array([-128], i8))[0]) == -128
    assert int(E.neg(np.array([-128], i8))[0]) == -128
    assert E.div(np.array([-7, 7, -128], i8), np.array([2, -2, -1], i8)).tolist() == [-3, -3, -128]
    with pytest.raises(E.ElementwiseError):
        E.div(np.array([1], i8), np.array([0], i8))


def test_float_division_by_zero_is_ieee():
    got = E.div(f32(1, -1, 0, -0.0), f32(0, 0, 0, 5))
    assert got[0] == np.inf and got[1] == -np.inf and bits(got)[2] == NAN32
    assert got[3] == 0 and np.signbit(got[3])
    assert E.recip(f32(0.0, -0.0)).tolist() == [np.inf, -np.inf]


def test_transcendental_specials():
    assert E.rsqrt(f32(0.0, -0.0, 4.0, np.inf)).tolist() == [np.inf, -np.inf, 0.5, 0.0]
    s = E.sqrt(f32(-0.0, -1.0, 2.25))
    assert np.signbit(s[0]) and bits(s)[1] == NAN32 and s[2] == 1.5
    lg = E.log(f32(0.0, -1.0, 1.0))
    assert lg[0] == -np.inf and bits(lg)[1] == NAN32 and lg[2] == 0
    assert E.exp(np.array([12.0], np.float16))[0] == np.inf  # e^12 > 65504
    assert E.exp(f32(0.0))[0] == 1.0
    assert E.expdif(f32(3.0), f32(3.0))[0] == 1.0


def test_exp_is_float64_rounded_once():
    x = np.linspace(-5, 5, 101).astype(np.float32)
    want = np.array([np.float32(math.exp(float(v))) for v in x])
    np.testing.assert_array_equal(E.exp(x), want)


def test_relu_and_abs_floats():
    r = E.relu(f32(-0.0, -3, 2, np.nan))
    assert r[0] == 0 and not np.signbit(r[0]) and r[1] == 0 and r[2] == 2 and bits(r)[3] == NAN32
    a = E.abs_(f32(-0.0, -3, np.inf * -1))
    assert not np.signbit(a[0]) and a[1] == 3 and a[2] == np.inf


# ---- tcvt round modes -------------------------------------------------------------

CVT_X = [2.5, -2.5, 3.5, 0.5, -0.5, 1.25, -1.75]
CVT_INT = {
    "RINT": [2, -2, 4, 0, 0, 1, -2], "CAST_RINT": [2, -2, 4, 0, 0, 1, -2], "NONE": [2, -2, 4, 0, 0, 1, -2],
    "ROUND": [3, -3, 4, 1, -1, 1, -2], "FLOOR": [2, -3, 3, 0, -1, 1, -2], "CEIL": [3, -2, 4, 1, 0, 2, -1],
    "TRUNC": [2, -2, 3, 0, 0, 1, -1], "ODD": [3, -3, 3, 1, -1, 1, -1],
}


@pytest.mark.parametrize("mode", sorted(CVT_INT))
def test_cvt_f32_to_i32_modes(mode):
    assert E.convert(f32(*CVT_X), "i32", mode).tolist() == CVT_INT[mode]


def test_cvt_float_to_int_saturates_and_nan_is_zero():
    x = f32(1e10, -1e10, np.inf, -np.inf, np.nan, 300, -300)
    assert E.convert(x, "i32").tolist() == [2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, -2 ** 31, 0, 300, -300]
    assert E.convert(x, "i8").tolist() == [127, -128, 127, -128, 0, 127, -128]
    assert E.convert(x, "ui8").tolist() == [255, 0, 255, 0, 0, 255, 0]
    assert E.convert(f32(2.0 ** 63, -(2.0 ** 63)), "i64").tolist() == [2 ** 63 - 1, -2 ** 63]


@pytest.mark.parametrize("mode,want", [
    # 1 + 2^-11 (tie), 1 + 3*2^-11 (tie), 65520 (tie at the top), 70000, -70000, 2^-25 (tie below min subnormal)
    ("RINT", [1.0, 1 + 2 ** -9, np.inf, np.inf, -np.inf, 0.0]),
    ("ROUND", [1 + 2 ** -10, 1 + 2 ** -9, np.inf, np.inf, -np.inf, 2 ** -24]),
    ("FLOOR", [1.0, 1 + 2 ** -10, 65504, 65504, -np.inf, 0.0]),
    ("CEIL", [1 + 2 ** -10, 1 + 2 ** -9, np.inf, np.inf, -65504, 2 ** -24]),
    ("TRUNC", [1.0, 1 + 2 ** -10, 65504, 65504, -65504, 0.0]),
    ("ODD", [1 + 2 ** -10, 1 + 2 ** -10, 65504, 65504, -65504, 2 ** -24]),
])
def test_cvt_f32_to_f16_modes(mode, want):
    x = f32(1 + 2 ** -11, 1 + 3 * 2 ** -11, 65520, 70000, -70000, 2 ** -25)
    got = E.convert(x, "f16", mode)
    assert got.dtype == np.float16
    assert got.astype(np.float64).tolist() == want


def test_cvt_int_to_int_wraps_or_saturates():
    x = np.array([300, -129, 127], np.int32)
    assert E.convert(x, "i8").tolist() == [44, 127, 127]
    assert E.convert(x, "i8", saturate=True).tolist() == [127, -128, 127]


def test_cvt_int_to_float_exact_rounding():
    # 2^24 + 1 is not an f32: RINT -> 2^24 (tie to even), CEIL -> 2^24 + 2
    x = np.array([2 ** 24 + 1], np.int32)
    assert E.convert(x, "f32", "RINT")[0] == 2 ** 24
    assert E.convert(x, "f32", "CEIL")[0] == 2 ** 24 + 2
    big = np.array([2 ** 62 + 2 ** 38 + 1], np.int64)  # just above a tie for f32 (ulp 2^39)
    assert int(E.convert(big, "f32", "RINT")[0]) == 2 ** 62 + 2 ** 39
    assert int(E.convert(big, "f32", "TRUNC")[0]) == 2 ** 62
    assert E.convert(np.array([70000], np.int32), "f16")[0] == np.inf


def test_cvt_f32_to_bf16_nearest_even_and_nan():
    x = f32(1 + 2 ** -8, 1 + 3 * 2 ** -8, np.nan)
    got = E.convert(x, "bf16")
    assert [float(v) for v in got[:2]] == [1.0, 1 + 2 ** -6]
    assert bits(got)[2] == 0x7FC0


def test_round_mode_spellings():
    assert E.round_mode("CAST_ROUND") == "ROUND" and E.round_mode("rz") == "TRUNC"
    assert E.round_mode(None) == "RINT"
    with pytest.raises(E.ElementwiseError):
        E.round_mode("SIDEWAYS")


# --------------------------------------------------------------------------------------
# TROWEXPAND* (seeds/000, pto_isa.md §4.1)
# --------------------------------------------------------------------------------------


def test_trowexpandmax_mode1_scalar_per_row():
    x = f32([1, 5, -2, 0], [7, 7, 7, 7], [-1, -0.0, 3, np.nan])
    s = f32([4], [7], [0.0])
    got = run1("trowexpandmax", [T(3, 4), T(3, 1, col=True)], T(3, 4), x, s)
    want = f32([4, 5, 4, 4], [7, 7, 7, 7], [0, 0, 3, np.nan])
    same_bits(got, want)
    assert not np.signbit(got[2, 1])  # max(-0, +0) = +0


def test_trowexpandmax_mode2_block_repeats_every_8_f32_columns():
    # Mode 2 on f32: one 32-byte block (8 values) per row, repeated along the row.
    x = np.full((2, 32), 4.5, np.float32)
    b = f32([1, 2, 3, 4, 5, 6, 7, 8], [9, -9, 9, -9, 9, -9, 9, -9])
    got = run1("trowexpandmax", [T(2, 32), T(2, 8)], T(2, 32), x, b)
    row0 = [4.5, 4.5, 4.5, 4.5, 5, 6, 7, 8]
    row1 = [9, 4.5, 9, 4.5, 9, 4.5, 9, 4.5]
    np.testing.assert_array_equal(got, f32(row0 * 4, row1 * 4))


def test_trowexpandadd_mode2_f16_block_is_16_wide():
    x = np.zeros((1, 40), np.float16)
    b = np.arange(16, dtype=np.float16).reshape(1, 16)
    got = run1("trowexpandadd", [T(1, 48, "f16", valid=(1, 40)), T(1, 16, "f16")], T(1, 48, "f16", valid=(1, 40)),
               x, b)
    np.testing.assert_array_equal(got[0], [j % 16 for j in range(40)])


@pytest.mark.parametrize("op,want", [
    ("trowexpandsub", [[10 - 1, 10 - 2], [-2 - 4, -2 - 8]]),   # s_i - x
    ("trowexpanddiv", [[10 / 1, 10 / 2], [-2 / 4, -2 / 8]]),   # s_i / x
    ("trowexpandmin", [[1, 2], [-2, -2]]),
])
def test_trowexpand_src0_expanded_keeps_operand_order(op, want):
    s = f32([10], [-2])
    x = f32([1, 2], [4, 8])
    got = run1(op, [T(2, 1, col=True), T(2, 2)], T(2, 2), s, x)
    np.testing.assert_array_equal(got, f32(*want))


def test_trowexpandsub_src1_expanded_is_x_minus_s():
    got = run1("trowexpandsub", [T(2, 2), T(2, 1, col=True)], T(2, 2), f32([1, 2], [4, 8]), f32([10], [-2]))
    np.testing.assert_array_equal(got, f32([-9, -8], [6, 10]))


def test_trowexpandexpdif_both_orders():
    s = f32([1.0], [0.0])
    x = f32([1.0, 0.0], [2.0, -1.0])
    got = run1("trowexpandexpdif", [T(2, 2), T(2, 1, col=True)], T(2, 2), x, s)  # exp(x - s)
    np.testing.assert_array_equal(got, f32([1, np.float32(math.exp(-1))], [np.float32(math.exp(2)),
                                                                           np.float32(math.exp(-1))]))
    got = run1("trowexpandexpdif", [T(2, 1, col=True), T(2, 2)], T(2, 2), s, x)  # exp(s - x)
    np.testing.assert_array_equal(got, f32([1, np.float32(math.e)], [np.float32(math.exp(-2)),
                                                                     np.float32(math.e)]))


def test_trowexpandmul_i16_wraps():
    x = np.array([[300, -2]], np.int16)
    s = np.array([[300]], np.int16)
    got = run1("trowexpandmul", [T(1, 16, "i16", valid=(1, 2)), T(16, 1, "i16", valid=(1, 1), col=True)],
               T(1, 16, "i16", valid=(1, 2)), x, s)
    assert got.tolist() == [[(90000 + 2 ** 15) % 2 ** 16 - 2 ** 15, -600]]


def test_trowexpand_valid_smaller_than_tile_ignores_the_rest():
    # pad=2 (Max) fills outside the valid region with +inf: any read of it would show.
    x = f32([1, 2, 3], [4, 5, 6])
    s = f32([10], [-10])
    got = run1("trowexpandadd", [T(4, 16, valid=(2, 3), pad=2), T(8, 1, valid=(2, 1), col=True, pad=2)],
               T(4, 16, valid=(2, 3)), x, s)
    np.testing.assert_array_equal(got, f32([11, 12, 13], [-6, -5, -4]))


def test_tcolexpand_binary_ops():
    x = f32([1, 2, 3], [4, 5, 6])
    c = f32([10, 20, 30])
    assert run1("tcolexpandsub", [T(2, 3), T(1, 3)], T(2, 3), x, c).tolist() == [[-9, -18, -27], [-6, -15, -24]]
    assert run1("tcolexpandmax", [T(2, 3), T(1, 3)], T(2, 3), x, f32([0, 5, 7])).tolist() == [[1, 5, 7],
                                                                                            [4, 5, 7]]
    assert run1("tcolexpanddiv", [T(2, 3), T(1, 3)], T(2, 3), x, f32([1, 2, 4])).tolist() == [[1, 1, 0.75],
                                                                                            [4, 2.5, 1.5]]
    got = run1("tcolexpandexpdif", [T(2, 3), T(1, 3)], T(2, 3), x, f32([1, 2, 3]))
    assert got[0].tolist() == [1, 1, 1] and got[1].tolist() == [np.float32(math.exp(3))] * 3


def test_trowexpand_and_tcolexpand_broadcast():
    got = run1("trowexpand", [T(3, 1, col=True)], T(3, 4), f32([1], [2], [3]))
    assert got.tolist() == [[1] * 4, [2] * 4, [3] * 4]
    got = run1("tcolexpand", [T(1, 4)], T(3, 4), f32([1, 2, 3, 4]))
    assert got.tolist() == [[1, 2, 3, 4]] * 3


# --------------------------------------------------------------------------------------
# TPAIRREDUCESUM (seeds/004)
# --------------------------------------------------------------------------------------


def test_tpairreducesum_validcols_7_in_16_col_tile():
    src = f32([1, 2, 3, 4, 5, 6, 7], [-1, 1, 0.5, 0.25, 10, 20, -0.0])
    # pad=2 puts +inf outside the valid region: the partner of column 6 must count as 0.
    got = run1("tpairreducesum", [T(2, 16, valid=(2, 7), pad=2)], T(2, 16, valid=(2, 7)), src)
    want = f32([1 + 2, 3 + 4, 5 + 6, 7, 0, 0, 0], [0, 0.75, 30, 0, 0, 0, 0])
    same_bits(got, want)  # -0 + 0 = +0 in the last pair


def test_tpairreducesum_even_f16_and_overflow():
    src = np.array([[60000, 60000, 1, 2, -3, 3, 0.5, 0.25]], np.float16)
    got = run1("tpairreducesum", [T(1, 16, "f16", valid=(1, 8))], T(1, 16, "f16", valid=(1, 8)), src)
    assert got.tolist() == [[np.inf, 3, 0, 0.75, 0, 0, 0, 0]]


def test_tpairreducesum_writes_only_the_valid_region():
    m = parse(f"""
func.func @k(%s: {T(2, 16, valid=(2, 5), buf=True)}, %d: {T(2, 16, valid=(2, 5), buf=True)}) {{
  pto.tpairreducesum ins(%s : {T(2, 16, valid=(2, 5), buf=True)}) outs(%d : {T(2, 16, valid=(2, 5), buf=True)})
  func.return
}}""")
    fn = R.select_entry(m)
    ts = [R.new_tile(a.type, (2, 5)) for a in fn.body.blocks[0].args]
    ts[0].data[...] = np.arange(32, dtype=np.float32).reshape(2, 16)
    ts[1].data[...] = -7.0
    R.Evaluator(m).call(fn, ts)
    assert ts[1].data[0, :5].tolist() == [1, 5, 4, 0, 0]
    assert ts[1].data[1, :5].tolist() == [16 + 17, 18 + 19, 20, 0, 0]
    assert (ts[1].data[:, 5:] == -7).all()


# --------------------------------------------------------------------------------------
# reductions
# --------------------------------------------------------------------------------------


def test_row_min_max_tie_case_5_3_7_3():
    x = f32([5, 3, 7, 3], [3, 5, 3, 7])
    assert run1("trowmin", [T(2, 4)], T(2, 1, col=True), x).tolist() == [[3], [3]]
    assert run1("trowmax", [T(2, 4)], T(2, 1, col=True), x).tolist() == [[7], [7]]
    assert run1("tcolmin", [T(2, 4)], T(1, 4), x).tolist() == [[3, 3, 3, 3]]
    assert run1("tcolmax", [T(2, 4)], T(1, 4), x).tolist() == [[5, 5, 7, 7]]


def test_row_reductions_nan_and_signed_zero():
    x = f32([-0.0, 0.0, -1], [0.0, -0.0, -1], [-0.0, -0.0, -1], [1, np.nan, 2], [np.nan, 5, 6])
    mx = run1("trowmax", [T(5, 3)], T(5, 1, col=True), x)
    mn = run1("trowmin", [T(5, 3)], T(5, 1, col=True), x)
    assert mx[:3, 0].tolist() == [0, 0, 0] and np.signbit(mx[:3, 0]).tolist() == [False, False, True]
    assert np.signbit(mn[:3, 0]).tolist() == [True, True, True]
    assert (bits(mx[3:, 0]) == NAN32).all() and (bits(mn[3:, 0]) == NAN32).all()


def test_col_reductions_nan_and_signed_zero():
    x = f32([-0.0, 0.0, np.nan], [0.0, 0.0, 1])
    mx = run1("tcolmax", [T(2, 3)], T(1, 3), x)
    mn = run1("tcolmin", [T(2, 3)], T(1, 3), x)
    assert np.signbit(mx[0, :2]).tolist() == [False, False]
    assert np.signbit(mn[0, :2]).tolist() == [True, False]
    assert bits(mx)[0, 2] == NAN32 and bits(mn)[0, 2] == NAN32


def test_trowsum_rounds_once_from_float64():
    # f32 sequential sum would lose the 1s: 2^24 + 1 + 1 + ... ; float64 keeps them.
    x = np.array([[2.0 ** 24] + [1.0] * 7], np.float32)
    assert run1("trowsum", [T(1, 8)], T(1, 1, col=True), x)[0, 0] == 2 ** 24 + 8
    y = np.array([[1e8, 1.0, -1e8, 1.0]], np.float32)
    assert run1("trowsum", [T(1, 4)], T(1, 1, col=True), y)[0, 0] == 2.0


def test_reductions_integer_wrap_and_f16_overflow():
    x = np.array([[100, 100, 100, -1]], np.int8)
    assert run1("trowsum", [T(1, 32, "i8", valid=(1, 4))], T(32, 1, "i8", valid=(1, 1), col=True),
                x).tolist() == [[299 - 256]]
    y = np.array([[40000, 40000], [40000, 48]], np.float16)  # f16 ulp is 32 in [32768, 65536)
    assert run1("tcolsum", [T(2, 16, "f16", valid=(2, 2))], T(1, 16, "f16", valid=(1, 2)), y).tolist() == \
        [[np.inf, 40064]]
    z = np.array([[30000, 30000, 30000]], np.int16)
    assert run1("trowsum", [T(1, 16, "i16", valid=(1, 3))], T(16, 1, "i16", valid=(1, 1), col=True),
                z)[0, 0] == 90000 - 65536


def test_trowsum_into_row_major_dst_writes_column_0():
    got = run1("trowsum", [T(2, 8, valid=(2, 3))], T(2, 8, valid=(2, 1)), f32([1, 2, 3], [4, 5, 6]))
    assert got.tolist() == [[6], [15]]


# --------------------------------------------------------------------------------------
# elementwise, scalar, texpands, tcvt, tmov through the evaluator
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("op,want", [
    ("tadd", [[6, 8], [0, np.inf]]), ("tsub", [[-4, -4], [-0.0, np.nan]]), ("tmul", [[5, 12], [-0.0, np.inf]]),
    ("tdiv", [[0.2, 1 / 3], [np.nan, np.nan]]), ("tmax", [[5, 6], [0, np.inf]]), ("tmin", [[1, 2], [-0.0, np.inf]]),
])
def test_elementwise_binary_f32(op, want):
    a = f32([1, 2], [-0.0, np.inf])
    b = f32([5, 6], [0.0, np.inf])
    got = run1(op, [T(2, 2)] * 2, T(2, 2), a, b)
    want = f32(*want)
    if op == "tdiv":
        want[0, 1] = np.float32(1) / np.float32(3)
    same_bits(got, E._canon(want))


@pytest.mark.parametrize("op,want", [
    ("texp", [1, np.float32(math.e)]), ("tlog", [-np.inf, 0]), ("tsqrt", [0, 1]), ("trsqrt", [np.inf, 1]),
    ("trecip", [np.inf, 1]), ("tabs", [0, 1]), ("trelu", [0, 1]), ("tneg", [-0.0, -1]),
])
def test_unary_f32(op, want):
    got = run1(op, [T(1, 2)], T(1, 2), f32([0.0, 1.0]))
    np.testing.assert_array_equal(got, f32(want))
    assert (np.signbit(got) == np.signbit(f32(want))).all()  # -0 where the page gives -0


def test_tile_scalar_ops_and_scalar_first_tdivs():
    x = f32([1, 2, 4])
    assert run1("tadds", [T(1, 3), "f32"], T(1, 3), x, 0.5).tolist() == [[1.5, 2.5, 4.5]]
    assert run1("tsubs", [T(1, 3), "f32"], T(1, 3), x, 1.0).tolist() == [[0, 1, 3]]
    assert run1("tmuls", [T(1, 3), "f32"], T(1, 3), x, -2.0).tolist() == [[-2, -4, -8]]
    assert run1("tdivs", [T(1, 3), "f32"], T(1, 3), x, 4.0).tolist() == [[0.25, 0.5, 1]]
    assert run1("tdivs", [T(1, 3), "f32"], T(1, 3), x, 4.0, order=[1, 0]).tolist() == [[4, 2, 1]]  # s / src
    assert run1("tmaxs", [T(1, 3), "f32"], T(1, 3), x, 2.0).tolist() == [[2, 2, 4]]
    assert run1("tmins", [T(1, 3), "f32"], T(1, 3), x, 2.0).tolist() == [[1, 2, 2]]
    i = np.array([[127, -128]], np.int8)
    assert run1("tadds", [T(1, 32, "i8", valid=(1, 2)), "i8"], T(1, 32, "i8", valid=(1, 2)), i, 1).tolist() == \
        [[-128, -127]]


def test_tmaxs_signed_zero_scalar():
    got = run1("tmaxs", [T(1, 2), "f32"], T(1, 2), f32([-0.0, 0.0]), -0.0)
    assert np.signbit(got[0]).tolist() == [True, False]
    got = run1("tmins", [T(1, 2), "f32"], T(1, 2), f32([-0.0, 0.0]), 0.0)
    assert np.signbit(got[0]).tolist() == [True, False]


def test_texpands_fills_valid_region_in_element_type():
    m = parse(f"""
func.func @k(%s: f32) -> {T(2, 16, "f16", valid=(2, 3))} {{
  %d = pto.texpands %s : (f32) -> {T(2, 16, "f16", valid=(2, 3))}
  func.return %d : {T(2, 16, "f16", valid=(2, 3))}
}}""")
    out = R.evaluate(m, {"s": 1.0 + 2 ** -12})["result0"]
    assert out.dtype == np.float16 and out.shape == (2, 3) and (out == 1.0).all()


def test_tcvt_through_the_evaluator_with_rmode_attribute():
    x = f32([2.5, -2.5, 3.5, 1e10])
    got = run1("tcvt", [T(1, 4)], T(1, 8, "i32", valid=(1, 4)), x, attrs="{rmode = #pto<round_mode ROUND>}")
    assert got.tolist() == [[3, -3, 4, 2 ** 31 - 1]]
    got = run1("tcvt", [T(1, 4)], T(1, 8, "i32", valid=(1, 4)), x)  # default CAST_RINT
    assert got.tolist() == [[2, -2, 4, 2 ** 31 - 1]]
    got = run1("tcvt", [T(1, 4)], T(1, 16, "f16", valid=(1, 4)), x, attrs="{rmode = #pto.round_mode<TRUNC>}")
    assert got.tolist() == [[2.5, -2.5, 3.5, 65504]]


def test_tmov_copies_valid_region_bits():
    x = f32([np.nan, -0.0, 1])
    x.view(np.uint32)[0, 0] = 0x7F800001  # a signalling NaN payload survives a move
    got = run1("tmov", [T(1, 3)], T(1, 3), x)
    same_bits(got, x)


# --------------------------------------------------------------------------------------
# L2 with GM: tload/tstore, partitions, padding, control flow, calls
# --------------------------------------------------------------------------------------

TB = "!pto.tile_buf<vec, 8x8xf32>"


def gm_block_kernel():
    """Copies the 8x8 block at (4, 8) of a 16x16 GM into a 8x8 output with +1."""
    return f"""
func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %one = arith.constant 1.0 : f32
  %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
  %yv = pto.make_tensor_view %y, shape = [%c8, %c8], strides = [%c8, %c1] : !pto.tensor_view<?x?xf32>
  %xp = pto.partition_view %xv, offsets = [%c4, %c8], sizes = [%c8, %c8] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x8xf32>
  %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c8, %c8] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x8xf32>
  %a = pto.alloc_tile : {TB}
  %b = pto.alloc_tile : {TB}
  pto.tload ins(%xp : !pto.partition_tensor_view<8x8xf32>) outs(%a : {TB})
  pto.set_flag [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID0>]
  pto.wait_flag [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID0>]
  pto.tadds ins(%a, %one : {TB}, f32) outs(%b : {TB})
  pto.barrier [#pto.pipe<PIPE_ALL>]
  pto.tstore ins(%b : {TB}) outs(%yp : !pto.partition_tensor_view<8x8xf32>)
  func.return
}}"""


def test_tload_tstore_partition_offsets_and_strides():
    m = parse(gm_block_kernel())
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    out = R.evaluate(m, {"x": x, "y": np.zeros((8, 8), np.float32)})
    assert list(out) == ["y"]
    np.testing.assert_array_equal(out["y"], x[4:12, 8:16] + 1)


def test_gm_input_of_same_element_count_any_shape():
    m = parse(gm_block_kernel())
    x = np.arange(256, dtype=np.float32)
    out = R.evaluate(m, {"x": x, "y": np.zeros(64, np.float32)})
    assert out["y"].shape == (8, 8)
    np.testing.assert_array_equal(out["y"], x.reshape(16, 16)[4:12, 8:16] + 1)


def test_gm_inputs_stay_as_given_and_outputs_are_the_runs_own():
    """The golden model reads a GM input in place and copies it only before its first store
    (GMArray.own): the caller's arrays keep their values, and an output shares no memory with them."""
    m = parse(gm_block_kernel())
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    y = np.full((8, 8), 7, np.float32)
    out = R.evaluate(m, {"x": x, "y": y})
    np.testing.assert_array_equal(x, np.arange(256, dtype=np.float32).reshape(16, 16))
    np.testing.assert_array_equal(y, np.full((8, 8), 7, np.float32))
    assert not np.shares_memory(out["y"], y) and out["y"].flags.writeable
    np.testing.assert_array_equal(out["y"], x[4:12, 8:16] + 1)


def test_wrong_gm_input_dtype_or_size_is_exit_2_naming_the_argument():
    m = parse(gm_block_kernel())
    with pytest.raises(PtocError) as e:
        R.evaluate(m, {"x": np.zeros(256, np.float64), "y": np.zeros(64, np.float32)})
    assert e.value.exit_code == 2 and "'x'" in str(e.value) and "f64" in str(e.value)
    with pytest.raises(PtocError) as e:
        R.evaluate(m, {"x": np.zeros(255, np.float32), "y": np.zeros(64, np.float32)})
    assert e.value.exit_code == 2 and "'x'" in str(e.value) and "(16, 16)" in str(e.value)
    with pytest.raises(PtocError) as e:
        R.evaluate(m, {"x": np.zeros(256, np.float32)})
    assert e.value.exit_code == 2 and "y" in str(e.value)


def test_tload_padding_fills_the_whole_tile():
    def kernel(pad):
        t = f"!pto.tile_buf<vec, 4x8xf32, valid=2x3, pad={pad}>"
        return f"""
func.func @k(%x: !pto.ptr<f32>, %t: {t}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %xv = pto.make_tensor_view %x, shape = [%c2, %c3], strides = [%c3, %c1] : !pto.tensor_view<2x3xf32>
  %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c2, %c3] : !pto.tensor_view<2x3xf32> -> !pto.partition_tensor_view<2x3xf32>
  pto.tload ins(%xp : !pto.partition_tensor_view<2x3xf32>) outs(%t : {t})
  func.return
}}"""
    for pad, fill in ((0, 9.0), (1, 0.0), (2, np.inf), (3, -np.inf)):
        m = parse(kernel(pad))
        fn = R.select_entry(m)
        gm = R.GMArray("x", np.arange(6, dtype=np.float32), (2, 3))
        tile = R.new_tile(fn.body.blocks[0].args[1].type, (2, 3))
        tile.data[...] = 9.0
        R.Evaluator(m).call(fn, [gm, tile])
        assert tile.data[:2, :3].tolist() == [[0, 1, 2], [3, 4, 5]]
        rest = tile.data.copy()
        rest[:2, :3] = fill
        assert (rest == fill).all(), pad


def test_integer_pad_values():
    assert int(E.fill_value("i16", 2)) == 32767 and int(E.fill_value("i16", 3)) == -32768
    assert int(E.fill_value("ui8", 3)) == 0 and E.fill_value("f32", 0) is None


def test_tload_out_of_bounds_is_a_located_error():
    # a computed offset (a constant one past the view is a verifier error)
    text = gm_block_kernel().replace("offsets = [%c4, %c8]", "offsets = [%r8, %r16]").replace(
        "%one = ", "%r8 = arith.addi %c4, %c4 : index\n  %r16 = arith.addi %c8, %c8 : index\n  %one = ")
    m = parse(text)
    with pytest.raises(PtocError) as e:
        R.evaluate(m, {"x": np.zeros(256, np.float32), "y": np.zeros(64, np.float32)})
    assert "'pto.tload' op GM access out of bounds" in str(e.value) and e.value.exit_code == 1


def test_five_d_partition_view_maps_leading_dims_to_rows():
    t = "!pto.tile_buf<vec, 4x8xf32>"
    m = parse(f"""
func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %xv = pto.make_tensor_view %x, shape = [%c1, %c2, %c2, %c2, %c8], strides = [%c32, %c16, %c8, %c8, %c1] : !pto.tensor_view<1x2x2x2x8xf32>
  %xp = pto.partition_view %xv, offsets = [%c0, %c0, %c0, %c0, %c0], sizes = [%c1, %c2, %c2, %c1, %c8] : !pto.tensor_view<1x2x2x2x8xf32> -> !pto.partition_tensor_view<1x2x2x1x8xf32>
  %yv = pto.make_tensor_view %y, shape = [%c2, %c16], strides = [%c16, %c1] : !pto.tensor_view<2x16xf32>
  %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c2, %c16] : !pto.tensor_view<2x16xf32> -> !pto.partition_tensor_view<2x16xf32>
  %a = pto.alloc_tile : {t}
  pto.tload ins(%xp : !pto.partition_tensor_view<1x2x2x1x8xf32>) outs(%a : {t})
  pto.tstore ins(%a : {t}) outs(%yp : !pto.partition_tensor_view<2x16xf32>)
  func.return
}}""")
    fn = R.select_entry(m)
    specs = {s.name: s for s in R.kernel_args(fn)}
    assert R.gm_shape(fn, specs["x"]) == (1, 2, 2, 2, 8)
    x = np.arange(64, dtype=np.float32)
    out = R.evaluate(m, {"x": x, "y": np.zeros(32, np.float32)})["y"]
    # tile row r = (i1, i2) in C order, element (i1*16 + i2*8 + c); dim 3 (stride 8) index 0
    want = np.array([[i1 * 16 + i2 * 8 + c for c in range(8)] for i1 in range(2) for i2 in range(2)], np.float32)
    np.testing.assert_array_equal(out.reshape(4, 8), want)


def test_scf_for_with_offsets_iter_args_and_if():
    t = "!pto.tile_buf<vec, 4x8xf32>"
    pv = "!pto.partition_tensor_view<4x8xf32>"
    m = parse(f"""
func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %n: index, %scale: f32) -> f32 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %xv = pto.make_tensor_view %x, shape = [%c16, %c8], strides = [%c8, %c1] : !pto.tensor_view<?x?xf32>
  %yv = pto.make_tensor_view %y, shape = [%c16, %c8], strides = [%c8, %c1] : !pto.tensor_view<?x?xf32>
  %a = pto.alloc_tile : {t}
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%s = %zero) -> (f32) {{
    %off = arith.muli %i, %c4 : index
    %xp = pto.partition_view %xv, offsets = [%off, %c0], sizes = [%c4, %c8] : !pto.tensor_view<?x?xf32> -> {pv}
    %yp = pto.partition_view %yv, offsets = [%off, %c0], sizes = [%c4, %c8] : !pto.tensor_view<?x?xf32> -> {pv}
    pto.tload ins(%xp : {pv}) outs(%a : {t})
    %odd = arith.remui %i, %c1 : index
    %is_even = arith.cmpi eq, %odd, %c0 : index
    %two = arith.constant 2 : index
    %r = arith.remui %i, %two : index
    %even = arith.cmpi eq, %r, %c0 : index
    scf.if %even {{
      pto.tmuls ins(%a, %scale : {t}, f32) outs(%a : {t})
    }} else {{
      pto.tadds ins(%a, %scale : {t}, f32) outs(%a : {t})
    }}
    pto.tstore ins(%a : {t}) outs(%yp : {pv})
    %s2 = arith.addf %s, %scale : f32
    scf.yield %s2 : f32
  }}
  func.return %acc : f32
}}""")
    x = np.arange(128, dtype=np.float32).reshape(16, 8)
    out = R.evaluate(m, {"x": x, "y": np.full((16, 8), -1, np.float32), "n": 3, "scale": 2.0})
    want = np.full((16, 8), -1, np.float32)
    want[0:4] = x[0:4] * 2
    want[4:8] = x[4:8] + 2
    want[8:12] = x[8:12] * 2
    np.testing.assert_array_equal(out["y"], want)
    assert out["result0"].dtype == np.float32 and float(out["result0"]) == 6.0


def test_func_call_and_tassign_alias():
    t = "!pto.tile_buf<vec, 2x8xf32>"
    pv = "!pto.partition_tensor_view<2x8xf32>"
    m = parse(f"""
func.func private @store(%p: !pto.ptr<f32>, %v: {t}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %pv = pto.make_tensor_view %p, shape = [%c2, %c8], strides = [%c8, %c1] : !pto.tensor_view<2x8xf32>
  %pp = pto.partition_view %pv, offsets = [%c0, %c0], sizes = [%c2, %c8] : !pto.tensor_view<2x8xf32> -> {pv}
  pto.tstore ins(%v : {t}) outs(%pp : {pv})
  func.return
}}
func.func @main(%out: !pto.ptr<f32>, %s: f32) attributes {{pto.entry}} {{
  %addr = arith.constant 4096 : i64
  %a = pto.alloc_tile : {t}
  %b = pto.tassign %a, %addr : {t} -> {t}
  pto.texpands ins(%s : f32) outs(%b : {t})
  func.call @store(%out, %a) : (!pto.ptr<f32>, {t}) -> ()
  func.return
}}""")
    fn = R.select_entry(m)
    assert fn.sym_name.data == "main"
    spec = R.kernel_args(fn)[0]
    assert R.gm_shape(fn, spec) == (2, 8)  # sized from the callee's view
    out = R.evaluate(m, {"out": np.zeros((2, 8), np.float32), "s": 3.5})
    assert list(out) == ["out"] and (out["out"] == 3.5).all()


def test_golden_ub_is_the_targets():
    """A tile bound at 196 KiB lies outside a2a3's 192 KiB UB and inside ascend950's 256 KiB
    (targets.py's sizes, the same bound the executors check)."""
    t = "!pto.tile_buf<vec, 2x8xf32>"
    pv = "!pto.partition_tensor_view<2x8xf32>"
    m = parse(f"""
func.func @k(%out: !pto.ptr<f32>, %s: f32) {{
  %addr = arith.constant 200704 : i64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %ov = pto.make_tensor_view %out, shape = [%c2, %c8], strides = [%c8, %c1] : !pto.tensor_view<2x8xf32>
  %op = pto.partition_view %ov, offsets = [%c0, %c0], sizes = [%c2, %c8] : !pto.tensor_view<2x8xf32> -> {pv}
  %a = pto.alloc_tile : {t}
  %b = pto.tassign %a, %addr : {t} -> {t}
  pto.texpands ins(%s : f32) outs(%b : {t})
  pto.tstore ins(%b : {t}) outs(%op : {pv})
  func.return
}}""")
    inputs = {"out": np.zeros((2, 8), np.float32), "s": 2.5}
    assert (R.evaluate(m, inputs, target="ascend950")["out"] == 2.5).all()
    with pytest.raises(PtocError, match="outside the 192 KiB UB"):
        R.evaluate(m, inputs, target="a2a3")


def test_dynamic_valid_alloc_tile():
    t = "!pto.tile_buf<vec, 4x8xf32, valid=?x?>"
    m = parse(f"""
func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %r: index, %c: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %xv = pto.make_tensor_view %x, shape = [%r, %c], strides = [%c8, %c1] : !pto.tensor_view<?x?xf32>
  %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%r, %c] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<?x?xf32>
  %yv = pto.make_tensor_view %y, shape = [%r, %c], strides = [%c8, %c1] : !pto.tensor_view<?x?xf32>
  %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%r, %c] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<?x?xf32>
  %a = pto.alloc_tile valid_row = %r valid_col = %c : {t}
  %b = pto.alloc_tile valid_row = %r valid_col = %c : {t}
  pto.tload ins(%xp : !pto.partition_tensor_view<?x?xf32>) outs(%a : {t})
  pto.texp ins(%a : {t}) outs(%b : {t})
  pto.tstore ins(%b : {t}) outs(%yp : !pto.partition_tensor_view<?x?xf32>)
  func.return
}}""")
    fn = R.select_entry(m)
    xs = R.kernel_args(fn)[0]
    # strides make the view span beyond 3x5 elements: the GM array is 1-D covering it
    assert R.gm_shape(fn, xs, {"r": 3, "c": 5}) == (2 * 8 + 5,)
    with pytest.raises(PtocError) as e:
        R.gm_shape(fn, xs, {})
    assert e.value.exit_code == 2
    ins = R.make_inputs(m, 7, given={"r": 3, "c": 5})
    out = R.evaluate(m, ins)["y"]
    want = ins["y"].copy()
    for i in range(3):
        for j in range(5):
            want[i * 8 + j] = np.float32(math.exp(float(ins["x"][i * 8 + j])))
    np.testing.assert_array_equal(out, want)


# --------------------------------------------------------------------------------------
# no semantics, entry selection, inputs, outputs, npy
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("op, why", [("tpack", "no semantics: pto-isa (github.com/hw-native-sys/pto-isa @3186c38) "
                                                "docs/isa/tile/ops/layout-and-rearrangement/tpack.md"),
                                     ("tmatmul.mx", "has no semantics in ptoc yet")])
def test_opaque_ops_raise_located_no_semantics(op, why):
    m = parse(l1(op, [T(2, 2), T(2, 2)], T(2, 2)))
    with pytest.raises(PtocError) as e:
        R.evaluate(m, {"a0": np.zeros((2, 2), np.float32), "a1": np.zeros((2, 2), np.float32)})
    assert f"'pto.{op}' op {why}" in str(e.value) and e.value.exit_code == 1


def test_block_ids_are_passed_in():
    m = parse('func.func @k() -> (index, index) {\n  %i = "pto.get_block_idx"() : () -> index\n'
              '  %n = "pto.get_block_num"() : () -> index\n  func.return %i, %n : index, index\n}')
    out = R.evaluate(m, {}, block_idx=2, block_num=3)
    assert (int(out["result0"]), int(out["result1"])) == (2, 3)
    out = R.evaluate(m, {})
    assert (int(out["result0"]), int(out["result1"])) == (0, 1)


def test_entry_selection():
    two = "func.func @a() { func.return }\nfunc.func @b() { func.return }"
    m = parse(two)
    with pytest.raises(PtocError) as e:
        R.select_entry(m)
    assert e.value.exit_code == 2 and "--entry" in str(e.value)
    assert R.select_entry(m, "b").sym_name.data == "b"
    with pytest.raises(PtocError) as e:
        R.select_entry(m, "c")
    assert e.value.exit_code == 2 and "'c'" in str(e.value)
    m = parse("func.func @a() { func.return }\nfunc.func @b() attributes {pto.entry} { func.return }")
    assert R.select_entry(m).sym_name.data == "b"
    assert R.select_entry(parse("func.func @only() { func.return }")).sym_name.data == "only"


def scalar_kernel():
    return f"""
func.func @k(%t: {T(2, 8)}, %n: index, %i: i32, %f: f32, %h: f16) -> {T(2, 8)} {{
  %d = pto.tadds %t, %f : ({T(2, 8)}, f32) -> {T(2, 8)}
  func.return %d : {T(2, 8)}
}}"""


def test_make_inputs_int_scalars_must_be_given():
    m = parse(scalar_kernel())
    with pytest.raises(PtocError) as e:
        R.make_inputs(m, 0)
    assert e.value.exit_code == 2 and "n, i" in str(e.value)
    ins = R.make_inputs(m, 0, given={"n": 3, "i": -1})
    assert ins["n"] == 3 and ins["i"] == -1
    assert ins["t"].shape == (2, 8) and ins["t"].dtype == np.float32
    assert ins["f"].dtype == np.float32 and ins["h"].dtype == np.float16
    again = R.make_inputs(m, 0, given={"n": 3, "i": -1, "f": 1.5})
    np.testing.assert_array_equal(again["t"], ins["t"])  # each argument has its own stream
    other = R.make_inputs(m, 1, given={"n": 3, "i": -1})
    assert not np.array_equal(other["t"], ins["t"])


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64"])
def test_make_inputs_per_dtype(dt):
    m = parse(l1("tadd", [T(4, 64, dt)] * 2, T(4, 64, dt)))
    ins = R.make_inputs(m, 5)
    a = ins["a0"]
    assert a.dtype == E.np_dtype(dt) and a.shape == (4, 64)
    w = a.astype(np.float64)
    if E.is_float_dtype(a.dtype):
        assert (np.abs(w) <= 2).all() and len(np.unique(w)) > 10
    elif dt.startswith("ui"):
        assert w.min() >= 0 and w.max() < 16
    else:
        assert w.min() >= -8 and w.max() < 8
    out = R.evaluate(m, ins)["result0"]
    assert out.dtype == a.dtype


def test_describe_outputs():
    lines = R.describe_outputs({
        "z": np.array([[1.5, -2.0], [np.nan, 4.0]], np.float32),
        "result0": np.array([3, -7], np.int16),
    })
    assert lines[0].startswith("z: shape=2x2 dtype=f32 min=-2.0 max=4.0 nan=1 sha256=")
    assert lines[1].startswith("result0: shape=2 dtype=i16 min=-7 max=3 sha256=")
    import hashlib
    assert lines[1].endswith(hashlib.sha256(np.array([3, -7], np.int16).tobytes()).hexdigest()[:12])


def test_npy_inputs_and_outputs(tmp_path):
    m = parse(gm_block_kernel())
    xf = tmp_path / "x.npy"
    np.save(xf, np.arange(256, dtype=np.float32).reshape(4, 64))  # any shape of 256 elements
    ins = R.prepare_inputs(m, 0, [("x", str(xf))])
    assert ins["x"].shape == (16, 16) and ins["y"].shape == (8, 8)
    out = R.evaluate(m, ins)
    paths = R.save_outputs(out, str(tmp_path / "out"))
    assert paths == [str(tmp_path / "out" / "y.npy")]
    np.testing.assert_array_equal(np.load(paths[0]), out["y"])
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros(256, np.int32))
    with pytest.raises(PtocError) as e:
        R.load_inputs(m, [("x", str(bad))])
    assert e.value.exit_code == 2 and "'x'" in str(e.value) and "i32" in str(e.value)
    np.save(bad, np.zeros(100, np.float32))
    with pytest.raises(PtocError) as e:
        R.load_inputs(m, [("x", str(bad))])
    assert e.value.exit_code == 2 and "'x'" in str(e.value)
    with pytest.raises(PtocError) as e:
        R.load_inputs(m, [("nope", str(bad))])
    assert e.value.exit_code == 2 and "nope" in str(e.value)
    with pytest.raises(PtocError) as e:
        R.load_inputs(m, [("x", str(tmp_path / "missing.npy"))])
    assert e.value.exit_code == 2


def test_scalar_inputs_from_text_and_bf16_npy_roundtrip(tmp_path):
    m = parse(scalar_kernel())
    ins = R.load_inputs(m, [("n", "0x10"), ("f", "2.5"), ("i", "-3")])
    assert ins["n"] == 16 and ins["i"] == -3 and float(ins["f"]) == 2.5
    with pytest.raises(PtocError) as e:
        R.load_inputs(m, [("n", "2.5")])
    assert e.value.exit_code == 2 and "'n'" in str(e.value)
    mb = parse(l1("tadd", [T(2, 16, "bf16")] * 2, T(2, 16, "bf16")))
    out = R.evaluate(mb, R.make_inputs(mb, 2))
    p = R.save_outputs(out, str(tmp_path))[0]
    back = np.load(p)  # NumPy stores bf16 as |V2
    ins = R.load_inputs(mb, [("a0", p)])
    assert ins["a0"].dtype == BF16 and back.dtype.itemsize == 2
    same_bits(ins["a0"], out["result0"])


def test_l1_result_outputs_are_named_result_n():
    m = parse(f"""
func.func @k(%a: {T(2, 8)}) -> ({T(2, 8)}, {T(2, 1, col=True)}) {{
  %e = pto.texp %a : ({T(2, 8)}) -> {T(2, 8)}
  %s = pto.trowsum %e : ({T(2, 8)}) -> {T(2, 1, col=True)}
  func.return %e, %s : {T(2, 8)}, {T(2, 1, col=True)}
}}""")
    out = R.evaluate(m, {"a": np.zeros((2, 8), np.float32)})
    assert list(out) == ["result0", "result1"]
    assert out["result1"].tolist() == [[8.0], [8.0]]


def test_op_definitions_name_their_element_functions():
    from pto_compiler.dialects import pto
    assert pto.TRowExpandMaxOp.FN == "maximum" and pto.TPairReduceSumOp.FN == "add"
    assert pto.TRowSumOp.FN == "reduce_sum" and pto.TCvtOp.FN == "convert"
    for cls in pto.TILE_OPS.values():
        if cls.HAS_SEMANTICS and cls.FAMILY not in ("load", "store", "mov", "expands", "rowbroadcast", "concat",
                                                    "colbroadcast", "subtile", "matmul", "print", "axpy",
                                                    "composed", "trans", "gather", "scatter", "cmp", "sel",
                                                    "partarg", "mgather", "mscatter"):
            # matmul: runtime/cube.py; axpy, composed: the golden model composes element functions;
            # gather, scatter, sel, mgather: data movement; cmp: elementwise.compare by cmpMode, then packed;
            # mscatter: elementwise.SCATTER_COMBINE by scatterAtomicOp;
            # partarg: a compare, then a select
            assert isinstance(getattr(E, cls.FN), E.ElementFn), cls.name


def test_trowexpand_dynamic_valid_resolves_the_expanded_operand_at_run_time():
    # With ?x? valid shapes the op's static expand_analysis() cannot tell the operands apart;
    # the golden model applies the ISA rule to the run-time valid shapes.
    ta, tb = "!pto.tile_buf<vec, 4x32xf32, valid=?x?>", "!pto.tile_buf<vec, 4x8xf32, valid=?x?>"
    m = parse(f"""
func.func @k(%a: {ta}, %b: {tb}, %d: {ta}) {{
  pto.trowexpandsub ins(%a, %b : {ta}, {tb}) outs(%d : {ta})
  pto.trowexpandsub ins(%b, %a : {tb}, {ta}) outs(%d : {ta})
  func.return
}}""")
    fn = R.select_entry(m)
    ts = [R.new_tile(arg.type, v) for arg, v in zip(fn.body.blocks[0].args, [(2, 20), (2, 8), (2, 20)])]
    ts[0].data[:2, :20] = np.arange(40, dtype=np.float32).reshape(2, 20)
    ts[1].data[:2, :8] = 100 * np.arange(1, 3, dtype=np.float32)[:, None] + np.arange(8, dtype=np.float32)
    ev = R.Evaluator(m)
    block = fn.body.blocks[0]
    env = dict(zip(block.args, ts))
    first, second = list(block.ops)[:2]
    ev.eval_op(first, env)  # a - b_i[j mod 8]
    want = ts[0].data[:2, :20] - ts[1].data[:2, np.arange(20) % 8]
    np.testing.assert_array_equal(ts[2].data[:2, :20], want)
    ev.eval_op(second, env)  # b_i[j mod 8] - a (src0 expanded)
    np.testing.assert_array_equal(ts[2].data[:2, :20], -want)


def test_l1_tload_and_ins_only_tstore_forms():
    pv = "!pto.partition_tensor_view<8x8xf32>"
    m = parse(f"""
func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %xv = pto.make_tensor_view %x, shape = [%c8, %c8], strides = [%c8, %c1] : !pto.tensor_view<8x8xf32>
  %yv = pto.make_tensor_view %y, shape = [%c8, %c8], strides = [%c8, %c1] : !pto.tensor_view<8x8xf32>
  %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c8, %c8] : !pto.tensor_view<8x8xf32> -> {pv}
  %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c8, %c8] : !pto.tensor_view<8x8xf32> -> {pv}
  %t = pto.tload %xp : ({pv}) -> !pto.tile<8x8xf32>
  %e = pto.tabs %t : (!pto.tile<8x8xf32>) -> !pto.tile<8x8xf32>
  pto.tstore ins(%e, %yp : !pto.tile<8x8xf32>, {pv})
  func.return
}}""")
    x = np.arange(-32, 32, dtype=np.float32).reshape(8, 8)
    out = R.evaluate(m, {"x": x, "y": np.zeros((8, 8), np.float32)})
    np.testing.assert_array_equal(out["y"], np.abs(x))


@pytest.mark.parametrize("op,want", [
    ("tcolexpandadd", [[11, 22, 33], [14, 25, 36]]),
    ("tcolexpandmul", [[10, 40, 90], [40, 100, 180]]),
    ("tcolexpandmin", [[1, 2, 3], [4, 5, 6]]),
])
def test_tcolexpand_more_ops_by_hand(op, want):
    x = f32([1, 2, 3], [4, 5, 6])
    c = f32([10, 20, 30])
    assert run1(op, [T(2, 3), T(1, 3)], T(2, 3), x, c).tolist() == want


def test_tcolexpandmin_signed_zero_and_nan_i16_wrap():
    got = run1("tcolexpandmin", [T(2, 2), T(1, 2)], T(2, 2), f32([0.0, 1], [-0.0, np.nan]), f32([-0.0, 2]))
    assert np.signbit(got[:, 0]).tolist() == [True, True] and bits(got)[1, 1] == NAN32
    x = np.array([[32767, -32768]], np.int16)
    got = run1("tcolexpandadd", [T(1, 16, "i16", valid=(1, 2)), T(1, 16, "i16", valid=(1, 2))],
               T(1, 16, "i16", valid=(1, 2)), x, np.array([[1, -1]], np.int16))
    assert got.tolist() == [[-32768, 32767]]


def test_broadcasts_with_valid_smaller_than_tile():
    got = run1("trowexpand", [T(8, 1, valid=(3, 1), col=True, pad=2)], T(8, 16, valid=(3, 5)), f32([1], [2], [3]))
    assert got.tolist() == [[1] * 5, [2] * 5, [3] * 5]
    got = run1("tcolexpand", [T(2, 16, valid=(1, 5), pad=2)], T(8, 16, valid=(3, 5)), f32([1, 2, 3, 4, 5]))
    assert got.tolist() == [[1, 2, 3, 4, 5]] * 3
    i8 = np.array([[-128], [127]], np.int8)
    got = run1("trowexpand", [T(32, 1, "i8", valid=(2, 1), col=True)], T(2, 32, "i8", valid=(2, 3)), i8)
    assert got.tolist() == [[-128] * 3, [127] * 3]


def test_texpands_integer_scalar_wraps_and_float_to_int_rounds():
    m = parse(f"""
func.func @k(%s: i32, %f: f32) -> ({T(1, 32, "i8", valid=(1, 2))}, {T(1, 32, "i8", valid=(1, 2))}) {{
  %d = pto.texpands %s : (i32) -> {T(1, 32, "i8", valid=(1, 2))}
  %e = pto.texpands %f : (f32) -> {T(1, 32, "i8", valid=(1, 2))}
  func.return %d, %e : {T(1, 32, "i8", valid=(1, 2))}, {T(1, 32, "i8", valid=(1, 2))}
}}""")
    out = R.evaluate(m, {"s": 300, "f": 2.5})
    assert out["result0"].tolist() == [[44, 44]] and out["result1"].tolist() == [[2, 2]]


def test_tmov_l2_keeps_the_rest_of_dst():
    t = T(2, 8, valid=(2, 3), buf=True)
    m = parse(f"""
func.func @k(%s: {t}, %d: {t}) {{
  pto.tmov ins(%s : {t}) outs(%d : {t})
  func.return
}}""")
    fn = R.select_entry(m)
    s, d = (R.new_tile(a.type, (2, 3)) for a in fn.body.blocks[0].args)
    s.data[...] = np.arange(16, dtype=np.float32).reshape(2, 8)
    d.data[...] = -1
    R.Evaluator(m).call(fn, [s, d])
    assert d.data.tolist() == [[0, 1, 2] + [-1] * 5, [8, 9, 10] + [-1] * 5]


def test_tcvt_l1_f16_to_f32_and_i32_to_f16_through_the_evaluator():
    h = np.array([[65504, -0.0, 2 ** -24, np.inf]], np.float16)
    got = run1("tcvt", [T(1, 16, "f16", valid=(1, 4))], T(1, 8, "f32", valid=(1, 4)), h)
    assert got.tolist() == [[65504, 0, 2 ** -24, np.inf]] and np.signbit(got[0, 1])
    i = np.array([[65519, 65520, -70000, 2049]], np.int32)
    got = run1("tcvt", [T(1, 8, "i32", valid=(1, 4))], T(1, 16, "f16", valid=(1, 4)), i)
    assert got.tolist() == [[65504, np.inf, -np.inf, 2048]]


def test_gm_shape_two_views_is_1d_covering_both_and_unused_is_empty():
    t = "!pto.tile_buf<vec, 2x8xf32>"
    pv = "!pto.partition_tensor_view<2x8xf32>"
    m = parse(f"""
func.func @k(%x: !pto.ptr<f32>, %unused: !pto.ptr<f32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %a = pto.make_tensor_view %x, shape = [%c2, %c8], strides = [%c8, %c1] : !pto.tensor_view<2x8xf32>
  %b = pto.make_tensor_view %x, shape = [%c3, %c8], strides = [%c8, %c1] : !pto.tensor_view<3x8xf32>
  %ap = pto.partition_view %a, offsets = [%c0, %c0], sizes = [%c2, %c8] : !pto.tensor_view<2x8xf32> -> {pv}
  %bp = pto.partition_view %b, offsets = [%c1, %c0], sizes = [%c2, %c8] : !pto.tensor_view<3x8xf32> -> {pv}
  %t = pto.alloc_tile : {t}
  pto.tload ins(%ap : {pv}) outs(%t : {t})
  pto.tmuls ins(%t, %c2f : {t}, f32) outs(%t : {t})
  pto.tstore ins(%t : {t}) outs(%bp : {pv})
  func.return
}}""".replace("%c2f", "%two").replace("  %c8 = arith", "  %two = arith.constant 2.0 : f32\n  %c8 = arith"))
    fn = R.select_entry(m)
    x, unused = R.kernel_args(fn)
    assert R.gm_shape(fn, x) == (24,) and R.gm_shape(fn, unused) == (0,)
    g = np.arange(24, dtype=np.float32)
    out = R.evaluate(m, {"x": g, "unused": np.zeros(0, np.float32)})
    assert list(out) == ["x"]
    want = g.copy()
    want[8:24] = g[0:16] * 2
    np.testing.assert_array_equal(out["x"], want)
