"""Golden model against a second, plainly different formulation.

The oracle here is explicit Python loops over the valid region, one element at a time, with
Python floats (doubles) rounded to the element type by a different route than the model's
(``numpy.float16(double)``; f32 -> bf16 by the bit formula; integers wrapped by ``%``), and
the max/min and pair-reduction rules written out from the ISA pages.  Shapes, dtypes, modes
and values come from ``hypothesis``; values mix random numbers with NaN, ±0, ±inf and
overflowing magnitudes.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.dialects.scf import Scf
from xdsl.parser import Parser

from pto_compiler.dialects.pto import PTO
from pto_compiler.runtime import reference as R
from pto_compiler.runtime import elementwise as E

FLOATS = ("f16", "bf16", "f32")
INTS = ("i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64")
ALL = FLOATS + INTS
NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "i8": np.int8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32,
      "ui64": np.uint64}
SIZE = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "ui8": 1, "ui16": 2, "ui32": 4,
        "ui64": 8}
CANON = {"f16": 0x7E00, "bf16": 0x7FC0, "f32": 0x7FC00000}
BIG = {"f16": 60000.0, "bf16": 3e38, "f32": 3e38}

PROFILE = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_CTX = Context()
for _d in (Builtin, Func, Arith, Scf, PTO):
    _CTX.load_dialect(_d)


def parse(text):
    m = Parser(_CTX, text).parse_module()
    m.verify()
    return m


def T(rows, cols, dt, valid=None, col=False, pad=0):
    keys = []
    if valid is not None and tuple(valid) != (rows, cols):
        keys.append(f"valid={valid[0]}x{valid[1]}")
    if col:
        keys.append("blayout=col_major")
    if pad:
        keys.append(f"pad={pad}")
    return f"!pto.tile<{rows}x{cols}x{dt}" + "".join(", " + k for k in keys) + ">"


def run(op, arg_types, res_type, values, order=None):
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(arg_types))
    idx = list(range(len(arg_types))) if order is None else order
    text = (f"func.func @k({args}) -> {res_type} {{\n"
            f"  %d = pto.{op} {', '.join(f'%a{i}' for i in idx)} : ({', '.join(arg_types[i] for i in idx)})"
            f" -> {res_type}\n  func.return %d : {res_type}\n}}\n")
    return R.evaluate(parse(text), {f"a{i}": v for i, v in enumerate(values)})["result0"]


# --------------------------------------------------------------------------------------
# the oracle: scalar rules, written plainly
# --------------------------------------------------------------------------------------


def is_float(dt):
    return dt in FLOATS


def py(v, dt):
    """An element as a Python number."""
    return float(np.float32(v)) if dt == "bf16" else (float(v) if is_float(dt) else int(v))


def rnd(v: float, dt):
    """A Python float rounded to nearest-even in dt, as a Python float (NaN stays NaN)."""
    if math.isnan(v):
        return math.nan
    with np.errstate(all="ignore"):
        if dt == "f32":
            return float(np.float32(v))
        if dt == "f16":
            return float(np.float16(v))  # double -> half directly (the model goes through f32)
        u = int(np.array(np.float32(v)).view(np.uint32))  # exact: double rounding is innocuous here
        if (u & 0x7FFFFFFF) > 0x7F800000:
            return math.nan
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        return float(np.array((u & 0xFFFF) << 16, np.uint32).view(np.float32))


def wrap(v: int, dt):
    bits = SIZE[dt] * 8
    v %= 1 << bits
    if not dt.startswith("ui") and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def o_max(x, y):
    if isinstance(x, float) and (math.isnan(x) or math.isnan(y)):
        return math.nan
    if x == y == 0 and isinstance(x, float):
        return 0.0 if not (math.copysign(1, x) < 0 and math.copysign(1, y) < 0) else -0.0
    return x if x > y else y


def o_min(x, y):
    if isinstance(x, float) and (math.isnan(x) or math.isnan(y)):
        return math.nan
    if x == y == 0 and isinstance(x, float):
        return -0.0 if (math.copysign(1, x) < 0 or math.copysign(1, y) < 0) else 0.0
    return x if x < y else y


def o_div(x, y):
    if y == 0:
        if x == 0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1, y)
    return x / y


def o_exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def scalar_op(name, dt):
    """fn(x, y) on Python numbers -> Python number in dt."""
    if is_float(dt):
        base = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
                "div": o_div, "max": o_max, "min": o_min,
                "expdif": lambda a, b: o_exp(rnd(a - b, dt))}[name]
        return lambda a, b: rnd(base(a, b), dt)
    base = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "max": max, "min": min}[name]
    return lambda a, b: wrap(base(a, b), dt)


def check(got, want, dt, rtol=None):
    """got (array) against want (nested list of Python numbers), element by element."""
    got = np.asarray(got)
    want_shape = (len(want), len(want[0]) if want else 0)
    assert got.shape == want_shape, (got.shape, want_shape)
    assert got.dtype == np.dtype(NP[dt])
    ubits = got.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[SIZE[dt]])
    for i, row in enumerate(want):
        for j, w in enumerate(row):
            g = py(got[i, j], dt)
            where = f"[{i},{j}] got {g!r} want {w!r}"
            if not is_float(dt):
                assert g == w, where
            elif math.isnan(w):
                assert int(ubits[i, j]) == CANON[dt], where + " (canonical NaN)"
            elif rtol is None or math.isinf(w):
                assert g == w and math.copysign(1, g) == math.copysign(1, w), where
            else:
                assert abs(g - w) <= rtol * (abs(w) + 1), where


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------


def values(rng, dt, shape, special: float):
    """Random elements of dt; floats mix in NaN, ±0, ±inf and values that overflow when added."""
    if is_float(dt):
        x = rng.uniform(-4, 4, size=shape)
        if special:
            pool = np.array([math.nan, 0.0, -0.0, math.inf, -math.inf, BIG[dt], -BIG[dt], 1.0, -1.0])
            mask = rng.random(shape) < special
            x[mask] = rng.choice(pool, size=int(mask.sum()))
        with np.errstate(all="ignore"):
            return x.astype(np.float32).astype(NP[dt])
    info = np.iinfo(NP[dt])
    if special and rng.random() < 0.5:  # extremes, to exercise wrap-around
        return rng.integers(int(info.min), int(info.max), size=shape, endpoint=True, dtype=NP[dt])
    lo = 0 if dt.startswith("ui") else -50
    return rng.integers(lo, 50, size=shape).astype(NP[dt])


@st.composite
def tile_case(draw, dtypes=ALL, max_rows=12, max_cols=40):
    dt = draw(st.sampled_from(dtypes))
    vr = draw(st.integers(1, max_rows))
    vc = draw(st.integers(1, max_cols))
    rows = vr + draw(st.integers(0, 3))
    cols = vc + draw(st.integers(0, 9))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    special = draw(st.sampled_from([0.0, 0.1, 0.4]))
    return dt, rows, cols, vr, vc, np.random.default_rng(seed), special


# --------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------

BIN = {"tadd": "add", "tsub": "sub", "tmul": "mul", "tdiv": "div", "tmax": "max", "tmin": "min"}


@PROFILE
@given(tile_case(), st.sampled_from(sorted(BIN)))
def test_elementwise_binary_matches_loops(case, op):
    dt, rows, cols, vr, vc, rng, special = case
    if op == "tdiv" and not is_float(dt):
        dt = "f32"
    a, b = values(rng, dt, (vr, vc), special), values(rng, dt, (vr, vc), special)
    t = T(rows, cols, dt, (vr, vc), pad=2)
    got = run(op, [t, t], t, [a, b])
    f = scalar_op(BIN[op], dt)
    check(got, [[f(py(a[i, j], dt), py(b[i, j], dt)) for j in range(vc)] for i in range(vr)], dt)


EXPAND = {"trowexpandadd": "add", "trowexpandsub": "sub", "trowexpandmul": "mul", "trowexpanddiv": "div",
          "trowexpandmax": "max", "trowexpandmin": "min", "trowexpandexpdif": "expdif"}


@PROFILE
@given(tile_case(max_cols=48), st.sampled_from(sorted(EXPAND)), st.sampled_from([1, 2]), st.sampled_from([0, 1]))
def test_trowexpand_family_matches_loops(case, op, mode, expanded):
    dt, rows, cols, vr, vc, rng, special = case
    if op in ("trowexpanddiv", "trowexpandexpdif") and not is_float(dt):
        dt = "f16"
    k = 32 // SIZE[dt]
    if (mode == 1 and vc == 1) or (mode == 2 and vc == k):
        vc += 1
        cols = max(cols, vc)
    full_t = T(rows, cols, dt, (vr, vc), pad=3)
    if mode == 1:
        exp_t = T(rows + 1, 1, dt, (vr, 1), col=True, pad=2)
        e = values(rng, dt, (vr, 1), special)
    else:
        exp_t = T(rows, k, dt, (vr, k), pad=2)
        e = values(rng, dt, (vr, k), special)
    x = values(rng, dt, (vr, vc), special)
    dst_t = T(rows, cols, dt, (vr, vc))
    if expanded == 1:
        got = run(op, [full_t, exp_t], dst_t, [x, e])
    else:
        got = run(op, [exp_t, full_t], dst_t, [e, x])
    f = scalar_op(EXPAND[op], dt)
    want = []
    for i in range(vr):
        row = []
        for j in range(vc):
            s = py(e[i, 0], dt) if mode == 1 else py(e[i, j % k], dt)  # the ISA page's two formulas
            xv = py(x[i, j], dt)
            row.append(f(xv, s) if expanded == 1 else f(s, xv))
        want.append(row)
    check(got, want, dt)


COLEXPAND = {"tcolexpandadd": "add", "tcolexpandsub": "sub", "tcolexpandmul": "mul", "tcolexpanddiv": "div",
             "tcolexpandmax": "max", "tcolexpandmin": "min", "tcolexpandexpdif": "expdif"}


@PROFILE
@given(tile_case(), st.sampled_from(sorted(COLEXPAND)))
def test_tcolexpand_family_matches_loops(case, op):
    dt, rows, cols, vr, vc, rng, special = case
    if op in ("tcolexpanddiv", "tcolexpandexpdif") and not is_float(dt):
        dt = "bf16"
    x, c = values(rng, dt, (vr, vc), special), values(rng, dt, (1, vc), special)
    got = run(op, [T(rows, cols, dt, (vr, vc)), T(2, cols, dt, (1, vc), pad=2)], T(rows, cols, dt, (vr, vc)), [x, c])
    f = scalar_op(COLEXPAND[op], dt)
    check(got, [[f(py(x[i, j], dt), py(c[0, j], dt)) for j in range(vc)] for i in range(vr)], dt)


def o_sum(xs, dt):
    if is_float(dt):
        if any(math.isnan(v) for v in xs) or (math.inf in xs and -math.inf in xs):
            return math.nan
        if math.inf in xs or -math.inf in xs:
            return math.inf if math.inf in xs else -math.inf
        return rnd(math.fsum(xs), dt)
    return wrap(sum(xs), dt)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1.0, -1.0]), st.sampled_from([-149, -126, -60, -20, 0, 20, 60, 100, 127]),
                          st.integers(0, (1 << 23) - 1), st.sampled_from(["normal", "zero", "tiny", "cancel"])),
                min_size=1, max_size=40),
       st.integers(1, 3))
def test_float_sum_is_the_exact_sum_rounded_via_f64(items, rows):
    """E.reduce_sum on f32: math.fsum (exact, rounded to f64), then rounded to f32, bit for bit,
    whatever the mix of signs, zeros, denormals, scales and cancellations (a value and its
    negation around the others: the order a plain f64 sum would lose the small ones in)."""
    head, tail = [], []
    for sign, exp, frac, kind in items:
        v = sign * (1 + frac * 2.0 ** -23) * 2.0 ** min(exp, 127) if exp >= -126 else sign * frac * 2.0 ** -149
        if kind == "zero":
            head.append(sign * 0.0)
        elif kind == "tiny":
            head.append(sign * frac * 2.0 ** -149)
        elif kind == "cancel":
            head.insert(0, v)
            tail.append(-v)
        else:
            head.append(v)
    x = np.tile(np.array(head + tail, np.float32), (rows, 1))
    x[1:] *= np.float32(-1)
    with np.errstate(over="ignore"):
        got = E.reduce_sum(x, 1)
        want = [np.float32(np.float64(math.fsum(line.astype(np.float64).tolist()))) for line in x]
    for r in range(rows):
        assert got[r].view(np.uint32) == want[r].view(np.uint32), (r, x[r].tolist())
    a = np.abs(x.astype(np.float64))  # the certificate, from the magnitudes themselves
    nz = a[a > 0]
    if not np.isfinite(a).all():
        exact = False
    elif not nz.size:
        exact = True
    else:
        high, low = np.frexp(nz.max())[1], max(np.frexp(nz.min())[1] - 24, -149)
        exact = high + math.ceil(math.log2(x.shape[1])) - low <= 53
    assert E._exact_for_all_lines(x, x.shape[1]) == exact


def o_fold(xs, f):
    acc = xs[0]
    for v in xs[1:]:
        acc = f(acc, v)
    return acc


RTOL = {"f32": 1e-3, "f16": 1e-2, "bf16": 1e-2}


@PROFILE
@given(tile_case(), st.sampled_from(["trowsum", "trowmax", "trowmin", "tcolsum", "tcolmax", "tcolmin"]),
       st.booleans())
def test_reductions_match_loops(case, op, small):
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), 0.0 if small else special)
    src = T(rows, cols, dt, (vr, vc), pad=3)
    if op.startswith("trow"):
        got = run(op, [src], T(rows, 1, dt, (vr, 1), col=True), [x])
        lines = [[py(x[i, j], dt) for j in range(vc)] for i in range(vr)]
    else:
        got = run(op, [src], T(1, cols, dt, (1, vc)), [x])
        lines = [[py(x[i, j], dt) for i in range(vr)] for j in range(vc)]
    kind = op[4:]
    if kind == "sum":
        red = [o_sum(line, dt) for line in lines]
    else:
        red = [o_fold(line, o_max if kind == "max" else o_min) for line in lines]
    want = [[v] for v in red] if op.startswith("trow") else [red]
    check(got, want, dt, rtol=RTOL.get(dt) if kind == "sum" else None)


@PROFILE
@given(tile_case(dtypes=FLOATS, max_cols=64))
def test_tpairreducesum_matches_loops(case):
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), special)
    t = T(rows, cols, dt, (vr, vc))
    got = run("tpairreducesum", [T(rows, cols, dt, (vr, vc), pad=2)], t, [x])
    half = (vc + 1) // 2
    want = []
    for i in range(vr):
        row = []
        for kk in range(vc):
            if kk < half:
                left = py(x[i, 2 * kk], dt)
                right = py(x[i, 2 * kk + 1], dt) if 2 * kk + 1 < vc else 0.0  # outside valid: 0
                row.append(rnd(left + right, dt))
            else:
                row.append(0.0)
        want.append(row)
    check(got, want, dt)


SCALAR = {"tadds": "add", "tsubs": "sub", "tmuls": "mul", "tdivs": "div", "tmaxs": "max", "tmins": "min"}


@PROFILE
@given(tile_case(), st.sampled_from(sorted(SCALAR)), st.booleans(),
       st.sampled_from([0.0, -0.0, 1.5, -3.25, math.inf, math.nan, 70000.0]))
def test_tile_scalar_ops_match_loops(case, op, scalar_first, s):
    dt, rows, cols, vr, vc, rng, special = case
    if op == "tdivs" and not is_float(dt):
        dt = "f32"
    if not is_float(dt):
        s = 7 if not math.isfinite(s) else int(s)
    scalar_first = scalar_first and op == "tdivs"
    stype = "f32" if is_float(dt) else "i64"
    x = values(rng, dt, (vr, vc), special)
    t = T(rows, cols, dt, (vr, vc))
    got = run(op, [t, stype], t, [x, s], order=[1, 0] if scalar_first else None)
    sv = rnd(rnd(s, "f32"), dt) if is_float(dt) else wrap(s, dt)
    f = scalar_op(SCALAR[op], dt)
    want = [[f(sv, py(x[i, j], dt)) if scalar_first else f(py(x[i, j], dt), sv) for j in range(vc)]
            for i in range(vr)]
    check(got, want, dt)


def o_unary(name, v, dt):
    if name == "texp":
        return rnd(o_exp(v), dt)
    if name == "tlog":
        return rnd(-math.inf if v == 0 else (math.nan if v < 0 or math.isnan(v) else math.log(v)), dt)
    if name == "tsqrt":
        return rnd(v if v == 0 else (math.nan if v < 0 or math.isnan(v) else math.sqrt(v)), dt)
    if name == "trsqrt":
        if v == 0:
            return math.copysign(math.inf, v)
        return rnd(math.nan if v < 0 or math.isnan(v) else 1 / math.sqrt(v), dt)
    if name == "trecip":
        return rnd(o_div(1.0, v), dt)
    if name == "tabs":
        return abs(v) if is_float(dt) else wrap(abs(v), dt)
    if name == "tneg":
        return -v if is_float(dt) else wrap(-v, dt)
    return o_max(v, 0.0) if is_float(dt) else max(v, 0)


@PROFILE
@given(tile_case(), st.sampled_from(["texp", "tlog", "tsqrt", "trsqrt", "trecip", "tabs", "trelu", "tneg"]))
def test_unary_ops_match_loops(case, op):
    dt, rows, cols, vr, vc, rng, special = case
    if op not in ("tabs", "trelu", "tneg") and not is_float(dt):
        dt = "f32"
    x = values(rng, dt, (vr, vc), special)
    t = T(rows, cols, dt, (vr, vc))
    got = run(op, [t], t, [x])
    check(got, [[o_unary(op, py(x[i, j], dt), dt) for j in range(vc)] for i in range(vr)], dt)


# ---- tcvt against exact rational arithmetic --------------------------------------------

def o_round_int(q, mode):
    """Round a Fraction to an integer per mode."""
    from fractions import Fraction
    fl = math.floor(q)
    frac = q - fl
    if mode in ("RINT", "NONE"):
        return fl + (1 if frac > Fraction(1, 2) or (frac == Fraction(1, 2) and fl % 2) else 0)
    if mode == "ROUND":
        return (fl + (1 if frac >= Fraction(1, 2) else 0)) if q >= 0 else -o_round_int(-q, "ROUND")
    if mode == "FLOOR":
        return fl
    if mode == "CEIL":
        return fl + (1 if frac else 0)
    t = math.trunc(q)
    if mode == "TRUNC":
        return t
    return t + (int(math.copysign(1, q)) if (t != q and t % 2 == 0) else 0)  # ODD


def o_cvt(v, src, dst, mode):
    from fractions import Fraction
    if is_float(src) and math.isnan(v):
        return math.nan if is_float(dst) else 0
    if not is_float(dst):
        lo, hi = (0, 2 ** (8 * SIZE[dst]) - 1) if dst.startswith("ui") else \
            (-(2 ** (8 * SIZE[dst] - 1)), 2 ** (8 * SIZE[dst] - 1) - 1)
        if math.isinf(v):
            return hi if v > 0 else lo
        r = o_round_int(Fraction(v), mode)
        return min(max(r, lo), hi)
    if isinstance(v, float) and (math.isinf(v) or v == 0):
        return v
    p, emin, emax = {"f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127)}[dst]
    q = Fraction(v)
    e = max(math.floor(math.log2(abs(q))) if q else emin, emin)
    while Fraction(2) ** e > abs(q) and e > emin:  # log2 of a fraction can be off by one
        e -= 1
    while Fraction(2) ** (e + 1) <= abs(q):
        e += 1
    e = max(e, emin)
    ulp = Fraction(2) ** (e - p + 1)
    r = o_round_int(q / ulp, mode) * ulp
    top = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if abs(r) > top:
        pos = r > 0
        r = {"RINT": math.inf, "NONE": math.inf, "ROUND": math.inf, "TRUNC": top, "ODD": top,
             "FLOOR": top if pos else math.inf, "CEIL": math.inf if pos else top}[mode]
        return float(r) if pos else -float(r)
    if r == 0:
        return math.copysign(0.0, v)
    return float(r)


CVT_PAIRS = [(s, d) for s in ALL for d in ALL if s != d and (is_float(s) or is_float(d) or SIZE[s] <= 4)]


@PROFILE
@given(tile_case(max_rows=4, max_cols=12), st.sampled_from(CVT_PAIRS),
       st.sampled_from(["RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD", "NONE", "CAST_RINT"]))
def test_tcvt_matches_exact_rounding(case, pair, mode):
    _, rows, cols, vr, vc, rng, special = case
    src, dst = pair
    x = values(rng, src, (vr, vc), special)
    if is_float(src) and rng.random() < 0.5:  # fractional values near ties
        x = (np.round(rng.uniform(-600, 600, (vr, vc)) * 2) / 4).astype(np.float32).astype(NP[src])
    attr = "" if mode == "CAST_RINT" else f" {{rmode = #pto<round_mode {mode}>}}"
    text = (f"func.func @k(%a0: {T(rows, cols, src, (vr, vc))}) -> {T(rows, cols, dst, (vr, vc))} {{\n"
            f"  %d = pto.tcvt %a0{attr} : ({T(rows, cols, src, (vr, vc))}) -> {T(rows, cols, dst, (vr, vc))}\n"
            f"  func.return %d : {T(rows, cols, dst, (vr, vc))}\n}}")
    got = R.evaluate(parse(text), {"a0": x})["result0"]
    m = "RINT" if mode == "CAST_RINT" else mode
    want = []
    for i in range(vr):
        row = []
        for j in range(vc):
            v = py(x[i, j], src)
            if not is_float(src) and not is_float(dst):
                row.append(wrap(v, dst))
            else:
                row.append(o_cvt(v, src, dst, m))
        want.append(row)
    check(got, want, dst)


# --------------------------------------------------------------------------------------
# row counts and every dtype (deterministic matrices)
# --------------------------------------------------------------------------------------

ROWS = [1, 8, 16, 240, 255, 256, 257]


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("mode", [1, 2])
def test_trowexpandmax_row_counts(rows, mode):
    rng = np.random.default_rng(rows * 10 + mode)
    dt, vc = "f32", 19
    x = values(rng, dt, (rows, vc), 0.1)
    if mode == 1:
        et, e = T(rows, 1, dt, col=True), values(rng, dt, (rows, 1), 0.1)
    else:
        et, e = T(rows, 8, dt), values(rng, dt, (rows, 8), 0.1)
    got = run("trowexpandmax", [T(rows, 24, dt, (rows, vc)), et], T(rows, 24, dt, (rows, vc)), [x, e])
    want = [[o_max(float(x[i, j]), float(e[i, 0] if mode == 1 else e[i, j % 8])) for j in range(vc)]
            for i in range(rows)]
    check(got, want, dt)


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("op", ["trowsum", "trowmax", "tcolsum", "tcolmin"])
def test_reductions_row_counts(rows, op):
    rng = np.random.default_rng(rows)
    dt = "f32"
    x = values(rng, dt, (rows, 13), 0.0)
    if op.startswith("trow"):
        got = run(op, [T(rows, 16, dt, (rows, 13))], T(rows, 1, dt, col=True), [x])
        lines = [[float(v) for v in x[i]] for i in range(rows)]
        want = [[o_sum(ln, dt) if op == "trowsum" else o_fold(ln, o_max)] for ln in lines]
    else:
        got = run(op, [T(rows, 16, dt, (rows, 13))], T(1, 16, dt, (1, 13)), [x])
        lines = [[float(x[i, j]) for i in range(rows)] for j in range(13)]
        want = [[o_sum(ln, dt) if op == "tcolsum" else o_fold(ln, o_min) for ln in lines]]
    check(got, want, dt, rtol=RTOL[dt] if "sum" in op else None)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("op", ["tadd", "tsub", "tmul", "tmax", "tmin"])
def test_every_dtype_binary(dt, op):
    rng = np.random.default_rng(SIZE[dt])
    a, b = values(rng, dt, (3, 7), 0.3), values(rng, dt, (3, 7), 0.3)
    t = T(4, 64, dt, (3, 7))
    f = scalar_op(BIN[op], dt)
    check(run(op, [t, t], t, [a, b]), [[f(py(a[i, j], dt), py(b[i, j], dt)) for j in range(7)]
                                       for i in range(3)], dt)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("op", ["trowsum", "trowmax", "trowmin", "tcolsum", "tcolmax"])
def test_every_dtype_reduction(dt, op):
    rng = np.random.default_rng(SIZE[dt] + 1)
    x = values(rng, dt, (5, 9), 0.3)
    if op.startswith("trow"):
        got = run(op, [T(5, 64, dt, (5, 9))], T(8, 1, dt, (5, 1), col=True), [x])
        lines = [[py(x[i, j], dt) for j in range(9)] for i in range(5)]
    else:
        got = run(op, [T(5, 64, dt, (5, 9))], T(1, 64, dt, (1, 9)), [x])
        lines = [[py(x[i, j], dt) for i in range(5)] for j in range(9)]
    kind = op[4:]
    red = [o_sum(ln, dt) if kind == "sum" else o_fold(ln, o_max if kind == "max" else o_min) for ln in lines]
    check(got, [[v] for v in red] if op.startswith("trow") else [red], dt,
          rtol=RTOL.get(dt) if kind == "sum" else None)


@pytest.mark.parametrize("shape", [(1, 1), (1, 37), (37, 1), (8, 1), (1, 256)])
def test_one_row_and_one_col_tiles(shape):
    r, c = shape
    rng = np.random.default_rng(r * 1000 + c)
    a, b = values(rng, "f16", shape, 0.3), values(rng, "f16", shape, 0.3)
    t = T(r, c, "f16")
    f = scalar_op("add", "f16")
    check(run("tadd", [t, t], t, [a, b]), [[f(float(a[i, j]), float(b[i, j])) for j in range(c)]
                                          for i in range(r)], "f16")
    got = run("trowsum", [t], T(r, 1, "f16", col=True), [a])
    check(got, [[o_sum([float(v) for v in a[i]], "f16")] for i in range(r)], "f16", rtol=RTOL["f16"])


@pytest.mark.full
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tile_case(max_rows=40, max_cols=80), st.sampled_from(sorted(EXPAND)), st.sampled_from([1, 2]),
       st.sampled_from([0, 1]))
def test_trowexpand_family_full(case, op, mode, expanded):
    test_trowexpand_family_matches_loops.hypothesis.inner_test(case, op, mode, expanded)
