"""The vector catalogue's remainder, bitwise, shift and PReLU ops (issue 12, item 1).

Each op's golden model is checked against an oracle written from the ISA catalogue's words
(reference/pto_isa.md §3) one element at a time with Python numbers: TREM "fmod, then += b if the
signs differ and the result is != 0", TFMOD C ``fmod`` / ``%``, the bitwise ops on Python's
two's-complement integers, TSHR arithmetic for signed types, TPRELU/TLRELU ``a > 0 ? a : a*b``.
Then both backends run the same ops on NaN, ±0, ±inf and integer extremes and must give the golden
model's bits (the differential matrices, tests/test_diff_*.py, cover shapes and dtypes).
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import a2a3_harness as H
import test_diff_a2a3 as DA
import test_diff_ascend950 as D5
from test_reference_props import INTS, NP, PROFILE, SIZE, T, check, is_float, py, rnd, run, tile_case, values, wrap
from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.dialects import pto
from pto_compiler.runtime import reference as golden
from pto_compiler.targets import A2A3, ASCEND950

FLOAT_ARITH = ("f16", "f32")
REM_DTYPES = FLOAT_ARITH + ("i16", "i32", "i8", "ui8", "ui16", "ui32")


# ---- the oracle ---------------------------------------------------------------------------------

def o_fmod(x, y, dt):
    """C fmod / C ``%`` (truncated; the sign of x)."""
    if is_float(dt):
        try:
            return math.fmod(x, y)  # exact: the result is representable
        except ValueError:  # fmod(x, 0), fmod(±inf, y)
            return math.nan
    r = abs(x) % abs(y)
    return wrap(-r if x < 0 else r, dt)


def o_rem(x, y, dt):
    """pto_isa.md §3: fmod, then += b if the signs differ and the result is != 0."""
    r = o_fmod(x, y, dt)
    if r != 0 and not (isinstance(r, float) and math.isnan(r)) and (r < 0) != (y < 0):
        r = rnd(r + y, dt) if is_float(dt) else wrap(r + y, dt)
    return r


def o_prelu(x, y, dt):
    return x if x > 0 else rnd(x * y, dt)


BINARY = {
    "trem": o_rem, "tfmod": o_fmod, "tprelu": o_prelu,
    "tand": lambda x, y, dt: wrap(x & y, dt), "tor": lambda x, y, dt: wrap(x | y, dt),
    "txor": lambda x, y, dt: wrap(x ^ y, dt), "tshl": lambda x, y, dt: wrap(x << y, dt),
    "tshr": lambda x, y, dt: wrap(x >> y, dt),
}
SCALAR = {"trems": "trem", "tfmods": "tfmod", "tands": "tand", "tors": "tor", "txors": "txor", "tshls": "tshl",
          "tshrs": "tshr", "tlrelu": "tprelu"}


def dtypes_of(op):
    base = SCALAR.get(op, op)
    if base in ("trem", "tfmod"):
        return REM_DTYPES
    if base == "tprelu":
        return FLOAT_ARITH
    return INTS


def second_operand(rng, op, dt, shape, special):
    """The divisor / shift count / slope: in the op's domain on integer types."""
    base = SCALAR.get(op, op)
    if base in ("tshl", "tshr"):
        return rng.integers(0, SIZE[dt] * 8, size=shape).astype(values(rng, dt, (1, 1), 0).dtype)
    y = values(rng, dt, shape, special)
    if base in ("trem", "tfmod") and not is_float(dt):
        y[y == 0] = 1
    return y


# ---- golden model against the oracle -----------------------------------------------------------

@PROFILE
@given(tile_case(dtypes=("f16", "f32", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64")),
       st.sampled_from(sorted(BINARY)))
def test_binary_ops_match_the_catalogue(case, op):
    dt, rows, cols, vr, vc, rng, special = case
    if dt not in dtypes_of(op):
        dt = dtypes_of(op)[rng.integers(len(dtypes_of(op)))]
    a = values(rng, dt, (vr, vc), special)
    b = second_operand(rng, op, dt, (vr, vc), special)
    t = T(rows, cols, dt, (vr, vc))
    got = run(op, [t, t], t, [a, b])
    f = BINARY[op]
    check(got, [[f(py(a[i, j], dt), py(b[i, j], dt), dt) for j in range(vc)] for i in range(vr)], dt)


@PROFILE
@given(tile_case(), st.sampled_from(sorted(SCALAR)), st.sampled_from([3, -5, 0.5, -0.0, math.inf, math.nan]))
def test_scalar_ops_match_the_catalogue(case, op, s):
    dt, rows, cols, vr, vc, rng, special = case
    if dt not in dtypes_of(op):
        dt = dtypes_of(op)[rng.integers(len(dtypes_of(op)))]
    base = SCALAR[op]
    if not is_float(dt):
        s = 3 if not isinstance(s, int) or base in ("tshl", "tshr") else s
        if dt.startswith("ui"):
            s = abs(s)
    stype = "f32" if is_float(dt) else dt
    x = values(rng, dt, (vr, vc), special)
    t = T(rows, cols, dt, (vr, vc))
    got = run(op, [t, stype], t, [x, s])
    sv = rnd(rnd(s, "f32"), dt) if is_float(dt) else wrap(s, dt)
    f = BINARY[base]
    check(got, [[f(py(x[i, j], dt), sv, dt) for j in range(vc)] for i in range(vr)], dt)


@PROFILE
@given(tile_case(dtypes=INTS))
def test_tnot_matches_the_catalogue(case):
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), special)
    t = T(rows, cols, dt, (vr, vc))
    check(run("tnot", [t], t, [x]), [[wrap(~py(x[i, j], dt), dt) for j in range(vc)] for i in range(vr)], dt)


def test_trem_worked_examples():
    """The page's rule on the four sign combinations and the ±0 / NaN / inf cases."""
    t = T(1, 8, "f32")
    a = np.array([[5, -5, 5, -5, -0.0, 3, math.inf, 1]], np.float32)
    b = np.array([[3, 3, -3, -3, 2, 0, 2, -math.inf]], np.float32)
    got = run("trem", [t, t], t, [a, b])
    want = [2, 1, -1, -2, -0.0, math.nan, math.nan, -math.inf]
    check(got, [want], "f32")
    ti = T(1, 4, "i32")
    check(run("trem", [ti, ti], ti, [np.array([[5, -5, 5, -5]], np.int32), np.array([[3, 3, -3, -3]], np.int32)]),
          [[2, 1, -1, -2]], "i32")
    check(run("tfmod", [ti, ti], ti, [np.array([[5, -5, 5, -5]], np.int32), np.array([[3, 3, -3, -3]], np.int32)]),
          [[2, -2, 2, -2]], "i32")


@pytest.mark.parametrize("op, b, why", [
    ("trem", 0, "integer remainder by zero"), ("tfmod", 0, "integer remainder by zero"),
    ("tshl", 16, "count outside 0..15"), ("tshr", -1, "count outside 0..15")])
def test_undefined_integer_inputs_are_located_errors(op, b, why):
    t = T(1, 16, "i16")
    text = f"func.func @k(%a: {t}, %b: {t}) -> {t} {{\n  %d = pto.{op} %a, %b : {t}, {t} -> {t}\n  return %d : {t}\n}}\n"
    with pytest.raises(PtocError, match=why) as e:
        api.reference(api.parse(text, "k.pto"), {"a": np.ones((1, 16), np.int16), "b": np.full((1, 16), b, np.int16)})
    assert "k.pto:2:8" in str(e.value)  # the op's line


@pytest.mark.parametrize("op, dt, target", [("tand", "f32", "a2a3"), ("tshl", "f16", "ascend950"),
                                            ("tprelu", "i32", "a2a3"), ("tand", "i8", "a2a3")])
def test_dtypes_outside_the_sets_are_rejected(op, dt, target):
    t = T(16, 32, dt)
    text = f"func.func @k(%a: {t}, %b: {t}) -> {t} {{\n  %d = pto.{op} %a, %b : {t}, {t} -> {t}\n  return %d : {t}\n}}\n"
    with pytest.raises(PtocError, match=f"element type {dt} is not supported on {target}"):
        api.verify(api.parse(text), A2A3 if target == "a2a3" else ASCEND950)


def test_trem_takes_the_tmp_of_ptoas():
    """``pto.trem ins(%src0, %src1, %tmp)`` (PTOAS's form): the tmp is scratch, never read."""
    t = "!pto.tile_buf<vec, 1x16xf32>"
    text = f"""func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %z: !pto.ptr<f32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %vx = pto.make_tensor_view %x, shape = [%c1, %c16], strides = [%c16, %c1] : !pto.tensor_view<1x16xf32>
  %vy = pto.make_tensor_view %y, shape = [%c1, %c16], strides = [%c16, %c1] : !pto.tensor_view<1x16xf32>
  %vz = pto.make_tensor_view %z, shape = [%c1, %c16], strides = [%c16, %c1] : !pto.tensor_view<1x16xf32>
  %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c1, %c16] : !pto.tensor_view<1x16xf32> -> !pto.partition_tensor_view<1x16xf32>
  %py = pto.partition_view %vy, offsets = [%c0, %c0], sizes = [%c1, %c16] : !pto.tensor_view<1x16xf32> -> !pto.partition_tensor_view<1x16xf32>
  %pz = pto.partition_view %vz, offsets = [%c0, %c0], sizes = [%c1, %c16] : !pto.tensor_view<1x16xf32> -> !pto.partition_tensor_view<1x16xf32>
  %a = pto.alloc_tile : {t}
  %b = pto.alloc_tile : {t}
  %tmp = pto.alloc_tile : {t}
  %d = pto.alloc_tile : {t}
  pto.tload ins(%px : !pto.partition_tensor_view<1x16xf32>) outs(%a : {t})
  pto.tload ins(%py : !pto.partition_tensor_view<1x16xf32>) outs(%b : {t})
  pto.trem ins(%a, %b, %tmp : {t}, {t}, {t}) outs(%d : {t})
  pto.tstore ins(%d : {t}) outs(%pz : !pto.partition_tensor_view<1x16xf32>)
  return
}}
"""
    a = np.linspace(-7, 7, 16, dtype=np.float32).reshape(1, 16)
    b = np.full((1, 16), 2.5, np.float32)
    want = [[o_rem(float(a[0, j]), 2.5, "f32") for j in range(16)]]
    for target in (A2A3, ASCEND950):
        m = api.parse(text)
        res = api.check(m, target, inputs={"x": a, "y": b, "z": np.zeros((1, 16), np.float32)})
        assert res.ok, res
        check(res.outputs["z"].reshape(1, 16), want, "f32")


# ---- both backends on special values --------------------------------------------------------------

SPECIAL_CASES = [(op, dt) for op in ("trem", "tfmod", "tprelu", "trems", "tfmods", "tlrelu") for dt in FLOAT_ARITH] + [
    (op, dt) for op in ("tand", "tor", "txor", "tshl", "tshr", "tnot", "tshrs", "tands") for dt in ("i16", "ui32")] + [
    (op, dt) for op in ("trem", "tfmod", "trems") for dt in ("i16", "i32")]


def _special_inputs(op, dt, R, C):
    rng = np.random.default_rng(7)
    x = values(rng, dt, (R, C), 0.4)
    given = {"a": x}
    if op in DA.BINARY:
        given["b"] = second_operand(rng, op, dt, (R, C), 0.4)
    if op in DA.SCALAR:
        given["s"] = 3 if not is_float(dt) else -0.0
    return given


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("op, dt", SPECIAL_CASES)
def test_backends_give_the_golden_bits_on_special_values(target, op, dt):
    R, cols, C = 9, 256 // SIZE[dt], 256 // SIZE[dt] - 3  # odd valid columns, valid < tile
    variant = "arg" if op in DA.SCALAR else ""
    text = DA.kernel(op, variant, dt, R, cols, C)
    given = _special_inputs(op, dt, R, C)
    if target == "a2a3":
        cmp, findings, _ = H.check(text, 0, given)
    else:
        cmp, findings, _ = D5.check(text, 0, given)
    assert cmp and not findings
    assert all(c.ok for c in cmp), [c.line() for c in cmp]


# ---- TCONCAT ---------------------------------------------------------------------------------------

@PROFILE
@given(tile_case(), st.integers(1, 20))
def test_tconcat_matches_the_catalogue(case, c1):
    """dst[i, j] = src0[i, j] for j < C0, src1[i, j - C0] after (pto_isa.md §3 "column concatenation")."""
    dt, rows, cols, vr, c0, rng, special = case
    a, b = values(rng, dt, (vr, c0), special), values(rng, dt, (vr, c1), special)
    t0, t1 = T(rows, cols, dt, (vr, c0)), T(rows, 24, dt, (vr, c1))
    td = T(rows, c0 + c1 + 3, dt, (vr, c0 + c1))
    got = run("tconcat", [t0, t1], td, [a, b])
    want = [[py(a[i, j], dt) if j < c0 else py(b[i, j - c0], dt) for j in range(c0 + c1)] for i in range(vr)]
    check(got, want, dt)


def concat_kernel(dt: str, R: int, c0: int, c1: int, dynamic: bool) -> str:
    """x0 and x1 (R x 32 in GM) loaded into sources of 32 cols (valid R x c0, R x c1: %vr x %c0,
    %vr x %c1 kernel scalars when ``dynamic``), TCONCAT into dst (R x 64, valid R x (c0 + c1)),
    stored to y's first c0 + c1 columns (y: R x 64)."""
    lines = [f"func.func @k(%x0: !pto.ptr<{dt}>, %x1: !pto.ptr<{dt}>, %y: !pto.ptr<{dt}>"
             + (", %vr: index, %c0: index, %c1: index) {" if dynamic else ") {"),
             "  %z = arith.constant 0 : index", "  %one = arith.constant 1 : index",
             f"  %rows = arith.constant {R} : index", "  %c32 = arith.constant 32 : index",
             "  %c64 = arith.constant 64 : index"]
    if not dynamic:
        lines += [f"  %vr = arith.constant {R} : index", f"  %c0 = arith.constant {c0} : index",
                  f"  %c1 = arith.constant {c1} : index"]
    lines.append("  %cd = arith.addi %c0, %c1 : index")
    dims = (lambda k: "?x?") if dynamic else (lambda k: f"{R}x{(c0, c1, c0 + c1)[k]}")
    tiles = {k: f"!pto.tile_buf<vec, {R}x{32 if k < 2 else 64}x{dt}, valid={dims(k)}>" for k in range(3)}
    for k, (name, width, cols) in enumerate((("x0", "%c32", "%c0"), ("x1", "%c32", "%c1"), ("y", "%c64", "%cd"))):
        lines += [f"  %v{k} = pto.make_tensor_view %{name}, shape = [%rows, {width}], strides = [{width}, %one] "
                  f": !pto.tensor_view<?x?x{dt}>",
                  f"  %p{k} = pto.partition_view %v{k}, offsets = [%z, %z], sizes = [%vr, {cols}] "
                  f": !pto.tensor_view<?x?x{dt}> -> !pto.partition_tensor_view<{dims(k)}x{dt}>",
                  f"  %t{k} = pto.alloc_tile" + (f" valid_row = %vr valid_col = {cols}" if dynamic else "")
                  + f" : {tiles[k]}"]
    for k in range(2):
        lines.append(f"  pto.tload ins(%p{k} : !pto.partition_tensor_view<{dims(k)}x{dt}>) outs(%t{k} : {tiles[k]})")
    lines += [f"  pto.tconcat ins(%t0, %t1 : {tiles[0]}, {tiles[1]}) outs(%t2 : {tiles[2]})",
              f"  pto.tstore ins(%t2 : {tiles[2]}) outs(%p2 : !pto.partition_tensor_view<{dims(2)}x{dt}>)",
              "  return", "}"]
    return "\n".join(lines) + "\n"


def _concat_cases():
    """Every (target, dtype) TCONCAT allows, each with fixed and run-time valid shapes; CI: the
    run-time form of every one, the fixed form of the types of each size's first (the rest under
    ``-m full``)."""
    for target in ("a2a3", "ascend950"):
        seen = set()
        for dt in sorted(pto.TILE_OPS["pto.tconcat"].DTYPES[target]):
            yield pytest.param(target, dt, True)
            yield pytest.param(target, dt, False, marks=() if SIZE[dt] not in seen else pytest.mark.full)
            seen.add(SIZE[dt])


@pytest.mark.parametrize("target, dt, dynamic", list(_concat_cases()))
def test_tconcat_with_src1_inside_a_block_or_run_time_shapes(target, dt, dynamic):
    """src0's valid cols not whole 32-byte blocks (src1 starts inside a block), or every valid shape a
    run-time scalar: the scalar unit moves the elements; y == NumPy's np.concatenate of the valid
    regions, from the executor and the golden model (NaN/±0 bits kept)."""
    rng = np.random.default_rng(len(dt))
    R = 16 if dynamic else 8
    text = concat_kernel(dt, R, 3, 5, dynamic)
    program = api.compile(api.parse(text, "k.pto"), target)
    for vr, c0, c1 in [(8, 3, 5), (1, 1, 1), (16, 31, 29), (5, 8, 24), (0, 4, 4), (3, 0, 7)] if dynamic else [(8, 3, 5)]:
        a, b = values(rng, dt, (R, 32), 0.3), values(rng, dt, (R, 32), 0.3)
        y0 = values(rng, dt, (R, 64), 0.0)
        inputs = {"x0": a, "x1": b, "y": y0}
        if dynamic:
            inputs.update(vr=vr, c0=c0, c1=c1)
        want = y0.copy()
        want[:vr, :c0 + c1] = np.concatenate([a[:vr, :c0], b[:vr, :c1]], axis=1)
        res = api.run(program, inputs)
        assert not res.findings, [str(f) for f in res.findings]
        golden = api.reference(api.parse(text, "k.pto"), inputs, target=target)
        u = f"u{SIZE[dt]}"
        for who, got in (("executor", res.outputs["y"]), ("golden model", golden["y"])):
            np.testing.assert_array_equal(got.reshape(want.shape).view(u), want.view(u),
                                          err_msg=f"{who} {vr}x{c0}+{c1}")


# ---- TCI, TTRI ---------------------------------------------------------------------------------------

@PROFILE
@given(tile_case(dtypes=INTS), st.integers(-2 ** 40, 2 ** 40), st.booleans())
def test_tci_matches_the_catalogue(case, start, descending):
    """An integer sequence from the scalar over the valid region in row-major order (ptoc's reading of
    pto_isa.md §3 "integer sequence; descending attribute"), wrapping in the element type."""
    dt, rows, cols, vr, vc, _, _ = case
    t = T(rows, cols, dt, (vr, vc))
    text = (f"func.func @k(%s: i64) -> {t} {{\n  %d = pto.tci %s {{descending = {str(descending).lower()}}} : i64 -> {t}\n"
            f"  return %d : {t}\n}}\n")
    got = api.reference(api.parse(text), {"s": start})["result0"]
    step = -1 if descending else 1
    check(got, [[wrap(start + step * (i * vc + j), dt) for j in range(vc)] for i in range(vr)], dt)


@PROFILE
@given(tile_case(dtypes=("f16", "f32", "i16", "i32", "ui8", "bf16")), st.integers(-50, 50), st.booleans())
def test_ttri_matches_the_catalogue(case, diag, upper):
    """1 on and below (lower) / on and above (upper) the diagonal shifted by the scalar, else 0."""
    dt, rows, cols, vr, vc, _, _ = case
    t = T(rows, cols, dt, (vr, vc))
    text = (f"func.func @k(%s: i32) -> {t} {{\n  %d = pto.ttri %s {{upperOrLower = {int(upper)} : i32}} : i32 -> {t}\n"
            f"  return %d : {t}\n}}\n")
    got = api.reference(api.parse(text), {"s": diag})["result0"]
    want = [[(1 if (j >= i + diag if upper else j <= i + diag) else 0) for j in range(vc)] for i in range(vr)]
    check(got, [[float(w) if is_float(dt) else w for w in row] for row in want], dt)


def test_fill_ops_take_one_scalar():
    t = T(4, 16, "i32")
    text = f"func.func @k(%a: {t}) -> {t} {{\n  %d = pto.ttri %a : {t} -> {t}\n  return %d : {t}\n}}\n"
    with pytest.raises(PtocError, match="expects one scalar operand"):
        api.verify(api.parse(text, "k.pto"), A2A3)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("diag", [-40, -1, 0, 3, 100])
def test_ttri_diagonal_past_the_tile_on_both_backends(target, diag):
    """Offsets that leave rows all-0 or all-1 (the count-mode / update_mask count clamps to 0..C)."""
    text = DA.kernel("ttri", "lower" if diag % 2 else "upper", "f32", 16, 32, 29)
    cmp, findings, _ = (H.check if target == "a2a3" else D5.check)(text, 0, {"s": diag})
    assert cmp and not findings and all(c.ok for c in cmp), [c.line() for c in cmp]


# ---- TAXPY ---------------------------------------------------------------------------------------------

AXPY_CASES = [("f32", "f32"), ("f16", "f16"), ("f16", "f32")]


@pytest.mark.parametrize("target, sdt, ddt", [(t, s, d) for t in ("a2a3", "ascend950") for s, d in AXPY_CASES]
                         + [("ascend950", "bf16", "bf16")])
@pytest.mark.parametrize("R, cols, C", [(1, 64, 64), (9, 64, 61), (16, 128, 128), (240, 64, 40), (256, 32, 17)])
def test_taxpy_matches_the_catalogue(target, sdt, ddt, R, cols, C):
    """dst = s * src + dst (pto_isa.md §3), src converted to dst's type (exact), the product and the sum
    each rounded once to dst's type; NaN, ±0 and ±inf among the inputs.  Golden model and both backends
    against the loop oracle, bit for bit."""
    rng = np.random.default_rng(R * 1000 + C)
    x, y = values(rng, sdt, (R, C), 0.1), values(rng, ddt, (R, C), 0.1)
    s = -1.5
    res = api.check(api.parse(DA.dps_kernel("taxpy", 1, ddt, R, cols, C, scalar=sdt, src_dt=sdt)), target,
                    inputs={"x0": x, "y": y, "z": np.zeros((R, C), values(rng, ddt, (1, 1), 0).dtype), "s": s})
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    sv = rnd(s, sdt)
    want = [[rnd(rnd(sv * py(x[i, j], sdt), ddt) + py(y[i, j], ddt), ddt) for j in range(C)] for i in range(R)]
    check(res.outputs["z"].reshape(R, C), want, ddt)


def test_taxpy_rules():
    ts, td = "!pto.tile_buf<vec, 4x32xf32>", "!pto.tile_buf<vec, 4x32xf16>"
    text = (f"func.func @k(%s: f32) {{\n  %a = pto.alloc_tile : {ts}\n  %b = pto.alloc_tile : {td}\n"
            f"  pto.taxpy ins(%a, %s : {ts}, f32) outs(%b : {td})\n  return\n}}\n")
    with pytest.raises(PtocError, match="src and dst element types f32 -> f16 are not one of"):
        api.verify(api.parse(text, "k.pto"), A2A3)
    t = "!pto.tile<4x32xf32>"
    text = f"func.func @k(%a: {t}, %s: f32) -> {t} {{\n  %d = pto.taxpy %a, %s : {t}, f32 -> {t}\n  return %d : {t}\n}}\n"
    with pytest.raises(PtocError, match="accumulates into its dst"):
        api.verify(api.parse(text, "k.pto"), A2A3)


def test_corpus_taxpy_form_compiles_on_both_targets():
    """The PTOAS sample's form: an f16 source, an f32 dst, an f16 constant."""
    text = DA.dps_kernel("taxpy", 1, "f32", 16, 16, 16, scalar="f16", src_dt="f16").replace(
        "ins(%tx0, %s", "ins(%tx0, %cst").replace(
        "  %c0 = arith.constant 0 : index", "  %cst = arith.constant 2.0 : f16\n  %c0 = arith.constant 0 : index")
    for target in ("a2a3", "ascend950"):
        res = api.check(api.parse(text), target, inputs={"s": 0.0})
        assert res.ok


# ---- saturating int -> int TCVT ----------------------------------------------------------------------

SAT_CASES = [("a2a3", "i32", "i16"), ("a2a3", "ui32", "i32"), ("a2a3", "i16", "i8"), ("a2a3", "i32", "ui16"),
             ("a2a3", "i16", "ui32"), ("ascend950", "i32", "i16"), ("ascend950", "i16", "ui16"),
             ("ascend950", "ui16", "i16"), ("ascend950", "i64", "i32"), ("ascend950", "i16", "i8"),
             ("ascend950", "i32", "ui16")]


@pytest.mark.parametrize("target, sdt, ddt", SAT_CASES)
@pytest.mark.parametrize("R, cols, C", [(1, 64, 64), (9, 64, 61), (240, 32, 32)])
def test_saturating_int_conversion(target, sdt, ddt, R, cols, C):
    """TCVT with ``sat_mode ON`` between integer types clamps to the destination's range (the module
    doc of runtime/elementwise.py); the backends clamp in the source type first (vmaxs/vmins)."""
    ts, td = T(R, cols, sdt, (R, C)), T(R, cols, ddt, (R, C))
    text = (f"func.func @k(%a: {ts}) -> {td} {{\n  %d = pto.tcvt %a {{rmode = #pto<round_mode CAST_RINT>, "
            f"sat_mode = #pto<saturation_mode ON>}} : {ts} -> {td}\n  return %d : {td}\n}}\n")
    rng = np.random.default_rng(R + C)
    info = np.iinfo(values(rng, sdt, (1, 1), 0).dtype)
    x = rng.integers(int(info.min), int(info.max), size=(R, C), endpoint=True, dtype=info.dtype)
    x.reshape(-1)[:4] = [info.min, info.max, 0, -1 if info.min < 0 else 1]
    res = api.check(api.parse(text), target, inputs={"a": x})
    assert res.ok, [c.line() for c in res.comparisons]
    lo, hi = np.iinfo(values(rng, ddt, (1, 1), 0).dtype).min, np.iinfo(values(rng, ddt, (1, 1), 0).dtype).max
    check(res.outputs["result0"].reshape(R, C), [[min(max(int(v), int(lo)), int(hi)) for v in row] for row in x], ddt)


def test_saturating_widening_is_located_on_ascend950():
    ts, td = T(4, 64, "i16", (4, 64)), T(4, 64, "ui32", (4, 64))
    text = (f"func.func @k(%a: {ts}) -> {td} {{\n  %d = pto.tcvt %a {{rmode = #pto<round_mode CAST_RINT>, "
            f"sat_mode = #pto<saturation_mode ON>}} : {ts} -> {td}\n  return %d : {td}\n}}\n")
    with pytest.raises(PtocError, match="no ascend950 lowering: a saturating widening integer conversion") as e:
        api.compile(api.parse(text, "k.pto"), "ascend950")
    assert "k.pto:2:8" in str(e.value)


# ---- the ops whose pages give no exact semantics --------------------------------------------------------

@pytest.mark.parametrize("name", sorted(pto.NO_SEMANTICS))
def test_no_semantics_ops_are_rejected_located_with_the_reason(name):
    t = T(4, 64, "f32")
    text = f"func.func @k(%a: {t}) -> {t} {{\n  %d = {name} %a : {t} -> {t}\n  return %d : {t}\n}}\n"
    said = f"no semantics: {pto.NO_SEMANTICS[name]}"
    with pytest.raises(PtocError) as e:
        api.reference(api.parse(text, "k.pto"), {"a": np.zeros((4, 64), np.float32)})
    assert f"k.pto:2:8: error: '{name}' op {said}" in str(e.value)
    for target in ("a2a3", "ascend950"):
        if name == "pto.thistogram" and target == "a2a3":
            continue  # thistogram: an A5 op, rejected on a2a3 by its target rule first
        with pytest.raises(PtocError) as e:
            api.compile(api.parse(text, "k.pto"), target)
        assert f"k.pto:2:8: error: '{name}' op has no {target} lowering: {said}" in str(e.value)


# ---- composed ops: TADDC TSUBC TSUBRELU TMULADDDST TFUSEDMULADD TFUSEDMULADDRELU TPOW TPOWS ------------

def o_pow(x, y, dt):
    """C pow (Annex F) rounded once; Python's math.pow raises where C returns inf or NaN."""
    odd = y == int(y) and int(y) % 2 if math.isfinite(y) else False
    try:
        return rnd(math.pow(x, y), dt)
    except ValueError:
        if x == 0:  # pow(±0, y < 0): ±inf for an odd integer y, else +inf
            return math.copysign(math.inf, x) if odd else math.inf
        return math.nan  # a negative base to a non-integer power
    except OverflowError:
        return rnd(math.copysign(math.inf, x) if x < 0 and y == int(y) and int(y) % 2 else math.inf, dt)


def o_relu(x, dt):
    """max(x, 0) by the max rule: NaN stays NaN, relu(-0) = +0."""
    if not is_float(dt):
        return max(x, 0)
    return x if math.isnan(x) or x > 0 else 0.0


def _r(v, dt):
    return rnd(v, dt) if is_float(dt) else wrap(v, dt)


COMPOSED = {  # op -> (number of source tiles, oracle(sources..., dst, dt))
    "taddc": (3, lambda a, b, c, d, dt: _r(_r(a + b, dt) + c, dt)),
    "tsubc": (3, lambda a, b, c, d, dt: _r(_r(a - b, dt) + c, dt)),
    "tsubrelu": (2, lambda a, b, d, dt: o_relu(_r(a - b, dt), dt)),
    "tpow": (2, lambda a, b, d, dt: o_pow(a, b, dt)),
    "tmuladddst": (2, lambda a, b, d, dt: _r(_r(a * b, dt) + d, dt)),
    "tfusedmuladd": (2, lambda a, b, d, dt: _r(_r(a * d, dt) + b, dt)),
    "tfusedmuladdrelu": (2, lambda a, b, d, dt: o_relu(_r(_r(a * d, dt) + b, dt), dt)),
}


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("op, dt", [(op, dt) for op in COMPOSED for dt in ("f32", "f16")]
                         + [(op, dt) for op in ("taddc", "tsubc", "tsubrelu") for dt in ("i16", "i32")])
@pytest.mark.parametrize("R, cols, C", [(1, 64, 64), (9, 64, 61), (240, 32, 17), (256, 32, 32)])
def test_composed_ops_match_the_catalogue(target, op, dt, R, cols, C):
    """Each op's formula (pto_isa.md §3) with every step rounded to the element type (the CPU
    simulator's forced rounding between steps, §6), pow in double rounded once; NaN/±0/±inf among the
    floats.  Golden model and both backends against the loop oracle, bit for bit."""
    n, f = COMPOSED[op]
    rng = np.random.default_rng(R * 7 + C)
    xs = [values(rng, dt, (R, C), 0.1) for _ in range(n)]
    y = values(rng, dt, (R, C), 0.1)
    inputs = {**{f"x{i}": x for i, x in enumerate(xs)}, "y": y, "z": np.zeros_like(y)}
    res = api.check(api.parse(DA.dps_kernel(op, n, dt, R, cols, C)), target, inputs=inputs)
    assert res.ok, [c.line() for c in res.comparisons] + [str(x) for x in res.findings]
    want = [[f(*(py(x[i, j], dt) for x in xs), py(y[i, j], dt), dt) for j in range(C)] for i in range(R)]
    check(res.outputs["z"].reshape(R, C), want, dt)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("s", [2.0, -0.5, 0.0, 3.0])
def test_tpows_matches_the_catalogue(target, s):
    R, cols, C = 9, 64, 61
    rng = np.random.default_rng(5)
    x, y = values(rng, "f32", (R, C), 0.1), np.zeros((R, C), np.float32)
    res = api.check(api.parse(DA.dps_kernel("tpows", 1, "f32", R, cols, C, scalar="f32")), target,
                    inputs={"x0": x, "y": y, "z": y, "s": s})
    assert res.ok
    check(res.outputs["z"].reshape(R, C), [[o_pow(py(x[i, j], "f32"), s, "f32") for j in range(C)]
                                            for i in range(R)], "f32")


SCALAR_COMPOSED = {  # TADDSC.md / TSUBSC.md: src0 ± scalar + src1, each step rounded
    "taddsc": lambda a, s, b, dt: _r(_r(a + s, dt) + b, dt),
    "tsubsc": lambda a, s, b, dt: _r(_r(a - s, dt) + b, dt),
}


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("op", sorted(SCALAR_COMPOSED))
@pytest.mark.parametrize("dt, s", [("f32", 1.5), ("f32", -0.0), ("f32", math.nan), ("f16", 0.0),
                                   ("f16", -2.5), ("f16", math.inf), ("i16", 32767), ("i32", -2 ** 31)])
@pytest.mark.parametrize("R, cols, C", [(1, 64, 64), (9, 64, 61), (240, 32, 17)])
def test_taddsc_tsubsc_match_the_catalogue(target, op, dt, s, R, cols, C):
    """``ins(src0, s, src1)`` in the page's operand order, every dtype of both targets (i16/i32/f16/
    f32), NaN/±0/±inf in the tiles and as the scalar, integer scalars that wrap; golden model and
    both backends against the loop oracle, bit for bit."""
    f = SCALAR_COMPOSED[op]
    rng = np.random.default_rng(R * 7 + C)
    a, b, y = (values(rng, dt, (R, C), 0.1) for _ in range(3))
    text = DA.dps_kernel(op, 2, dt, R, cols, C, scalar=dt, scalar_at=1)
    res = api.check(api.parse(text), target, inputs={"x0": a, "x1": b, "y": y, "z": np.zeros_like(y), "s": s})
    assert res.ok, [c.line() for c in res.comparisons] + [str(x) for x in res.findings]
    sv = rnd(s, dt) if is_float(dt) else s
    check(res.outputs["z"].reshape(R, C),
          [[f(py(a[i, j], dt), sv, py(b[i, j], dt), dt) for j in range(C)] for i in range(R)], dt)


def test_composed_op_rules():
    t = T(4, 32, "f32")
    text = f"func.func @k(%a: {t}, %b: {t}) -> {t} {{\n  %d = pto.tmuladddst %a, %b : {t}, {t} -> {t}\n  return %d : {t}\n}}\n"
    with pytest.raises(PtocError, match="reads its dst: only the DPS form"):
        api.verify(api.parse(text, "k.pto"), A2A3)
    text = f"func.func @k(%a: {t}, %b: {t}) -> {t} {{\n  %d = pto.taddc %a, %b : {t}, {t} -> {t}\n  return %d : {t}\n}}\n"
    with pytest.raises(PtocError, match=r"expects ins\(a, b, c\)"):
        api.verify(api.parse(text, "k.pto"), A2A3)


# ---- TTRANS ----------------------------------------------------------------------------------------------

@PROFILE
@given(tile_case())
def test_ttrans_matches_the_catalogue(case):
    """dst[j, i] = src[i, j] over src's valid region (pto_isa.md §3 "transpose")."""
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), special)
    got = run("ttrans", [T(rows, cols, dt, (vr, vc))], T(vc + 2, vr + 5, dt, (vc, vr)), [x])
    check(got, [[py(x[i, j], dt) for i in range(vr)] for j in range(vc)], dt)


def test_ttrans_dst_valid_shape_rule():
    t, u = T(4, 32, "f32", (4, 16)), T(32, 8, "f32", (16, 8))
    text = f"func.func @k(%a: {t}) -> {u} {{\n  %d = pto.ttrans %a : {t} -> {u}\n  return %d : {u}\n}}\n"
    with pytest.raises(PtocError, match=r"dst valid shape must be src's transposed \(16x8 vs 16x4\)"):
        api.verify(api.parse(text, "k.pto"), A2A3)


# ---- TSORT32 ---------------------------------------------------------------------------------------------

def o_sort32(vals, keys, dt):
    """TSORT32.md written plainly: per 32-column block the (value, index) pairs by value, descending,
    equal values by the smaller index (Python's stable sort keeps pairs equal in both in place), each
    pair 8 bytes: f32 ``[value, index]``, f16 ``[value, 0x0000, index]``."""
    out = bytearray()
    for b0 in range(0, len(vals), 32):
        block = list(zip(vals[b0:b0 + 32], keys[b0:b0 + 32]))
        for v, k in sorted(block, key=lambda p: (-p[0], p[1])):
            out += struct.pack("<f" if dt == "f32" else "<e", v) + bytes(4 - SIZE[dt]) + struct.pack("<I", k)
    return bytes(out)


def sort32_kernel(dt, R, cols, C, idx_rows, tmp):
    """x (R x C) and the indices k (idx_rows x C) loaded into R x cols / idx_rows x cols tiles, ``tsort32
    ins(src, idx[, tmp]) outs(dst)`` into an R x (coef cols) dst of valid R x (coef C), stored to z."""
    coef = 8 // SIZE[dt]
    gm = [("x", dt, R, C, cols), ("k", "ui32", idx_rows, C, cols), ("z", dt, R, coef * C, coef * cols)]
    lines = [f"func.func @k({', '.join(f'%{n}: !pto.ptr<{t}>' for n, t, *_ in gm)}) {{",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index"]
    for n, t, r, c, tc in gm:
        tv, pv = f"!pto.tensor_view<{r}x{c}x{t}>", f"!pto.partition_tensor_view<{r}x{c}x{t}>"
        tb = f"!pto.tile_buf<vec, {r}x{tc}x{t}, valid={r}x{c}>"
        lines += [f"  %r{n} = arith.constant {r} : index", f"  %c{n} = arith.constant {c} : index",
                  f"  %v{n} = pto.make_tensor_view %{n}, shape = [%r{n}, %c{n}], strides = [%c{n}, %c1] : {tv}",
                  f"  %p{n} = pto.partition_view %v{n}, offsets = [%c0, %c0], sizes = [%r{n}, %c{n}] : {tv} -> {pv}",
                  f"  %t{n} = pto.alloc_tile : {tb}"]
        if n != "z":
            lines.append(f"  pto.tload ins(%p{n} : {pv}) outs(%t{n} : {tb})")
    ts = [f"!pto.tile_buf<vec, {R}x{cols}x{dt}, valid={R}x{C}>",
          f"!pto.tile_buf<vec, {idx_rows}x{cols}x{'ui32'}, valid={idx_rows}x{C}>"]
    ins = ["%tx", "%tk"]
    if tmp:
        ts.append(f"!pto.tile_buf<vec, 1x{-(-C // 32) * 32}x{dt}>")
        lines.append(f"  %tt = pto.alloc_tile : {ts[-1]}")
        ins.append("%tt")
    dtb = f"!pto.tile_buf<vec, {R}x{coef * cols}x{dt}, valid={R}x{coef * C}>"
    lines += [f"  pto.tsort32 ins({', '.join(ins)} : {', '.join(ts)}) outs(%tz : {dtb})",
              f"  pto.tstore ins(%tz : {dtb}) outs(%pz : !pto.partition_tensor_view<{R}x{coef * C}x{dt}>)",
              "  return", "}"]
    return "\n".join(lines) + "\n"


def sort32_values(rng, dt, shape):
    """Few distinct values (ties), ±0 and ±inf among them; indices with repeats (ties in both keys)."""
    pool = np.array([0.0, -0.0, 1.5, -2.0, 3.0, math.inf, -math.inf, 65504.0, -1e-3])
    vals = np.where(rng.random(shape) < 0.5, rng.choice(pool, shape), rng.uniform(-8, 8, shape))
    return vals.astype(NP[dt]), rng.integers(0, 40, shape).astype(np.uint32) * 1000003


SORT32_SHAPES = [(1, 32, 32, 1, False), (3, 64, 64, 3, False), (4, 64, 64, 1, False), (2, 64, 45, 2, True),
                 (5, 96, 70, 1, True), (1, 32, 7, 1, True)]


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("dt, R, cols, C, idx_rows, tmp", [(dt, *s) for dt in ("f32", "f16") for s in SORT32_SHAPES]
                         + [("f16", 1, 8224, 8217, 1, True)])
def test_tsort32_matches_the_page(target, dt, R, cols, C, idx_rows, tmp):
    """Every valid row's 32-element blocks sorted into 8-byte (value, index) pairs, descending, ties by
    the smaller index (TSORT32.md), bit for bit against the plain oracle: whole blocks, a tail block
    (the tmp form), one index row shared by every row, valid < tile, more than 255 blocks a row (f16:
    two vbitsort calls and a tail).  ±0 tie (sorted by index), ±inf, repeated indices."""
    rng = np.random.default_rng(R * 131 + C)
    x, k = sort32_values(rng, dt, (R, C))
    k = k[:idx_rows]
    res = api.check(api.parse(sort32_kernel(dt, R, cols, C, idx_rows, tmp)), target,
                    inputs={"x": x, "k": k, "z": np.zeros((R, 8 // SIZE[dt] * C), NP[dt])})
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    got = res.outputs["z"].reshape(R, -1)
    for i in range(R):
        keys = [int(v) for v in k[i if idx_rows > 1 else 0]]
        assert got[i].tobytes() == o_sort32([py(v, dt) for v in x[i]], keys, dt), f"row {i}"


def test_tsort32_rules_are_located():
    """A dst with fewer valid rows than src is located where the golden model and each lowering write
    (a dst row too short for its pairs is no error: test_constructs.py
    test_tsort32_into_a_dst_narrower_than_its_pairs); a NaN value is rejected at run time (the page
    gives NaN no place in the order); without a tmp the valid cols must be whole blocks of 32."""
    a, i, d = "!pto.tile<2x32xf16>", "!pto.tile<2x32xui32>", "!pto.tile<1x128xf16>"
    text = (f"func.func @k(%a: {a}, %i: {i}) -> {d} {{\n  %d = pto.tsort32 %a, %i : ({a}, {i}) -> {d}\n"
            f"  return %d : {d}\n}}\n")
    inputs = {"a": np.zeros((2, 32), np.float16), "i": np.arange(64, dtype=np.uint32).reshape(2, 32)}
    msg = "k.pto:2:8: error: 'pto.tsort32' op dst's valid rows (1) do not cover src's 2 rows of value-index pairs"
    with pytest.raises(PtocError) as e:
        api.reference(api.parse(text, "k.pto"), inputs)
    assert msg in str(e.value)
    for target in ("a2a3", "ascend950"):
        with pytest.raises(PtocError) as e:
            api.compile(api.parse(text, "k.pto"), target)
        assert msg in str(e.value)
    inputs["a"][0, 5] = np.nan
    with pytest.raises(PtocError, match="a NaN among the values to sort"):
        api.reference(api.parse(text.replace("1x128xf16", "2x128xf16"), "k.pto"), inputs)
    odd = text.replace("2x32xf16", "2x32xf16, valid=2x31").replace("2x32xui32", "2x32xui32, valid=2x31")
    with pytest.raises(PtocError, match="without a tmp tile src's valid cols must be a multiple of 32 "
                                        r"\(got 31\)"):
        api.verify(api.parse(odd, "k.pto"), A2A3)


# ---- TMRGSORT --------------------------------------------------------------------------------------------

def o_merge(lists, exhausted):
    """TMRGSORT.md's merge of (value, index) lists, written plainly: the largest head value goes out,
    equal values from the lowest-numbered list (the CPU simulator's order); ``exhausted``: stop once a
    list is used up."""
    heads, out = [0] * len(lists), []
    while any(h < len(x) for h, x in zip(heads, lists)):
        best = max(x[h][0] for h, x in zip(heads, lists) if h < len(x))
        k = next(k for k, (h, x) in enumerate(zip(heads, lists)) if h < len(x) and x[h][0] == best)
        out.append(lists[k][heads[k]])
        heads[k] += 1
        if exhausted and any(h == len(x) for h, x in zip(heads, lists)):
            break
    return out


def pair_bytes(pairs, dt):
    return b"".join(struct.pack("<f" if dt == "f32" else "<e", v) + bytes(4 - SIZE[dt]) + struct.pack("<I", k)
                    for v, k in pairs)


def pair_list(rng, dt, n, sort=True):
    """n (value, index) pairs, ties and ±0/±inf among the values, sorted by value descending (the page's
    pre-sorted lists); indices below 0x7c00 so that no f16/f32 view of the pair's bytes is a NaN."""
    vals, _ = sort32_values(rng, dt, (n,))
    pairs = [(py(v, dt), int(k)) for v, k in zip(vals, rng.integers(0, 0x7C00, n))]
    return sorted(pairs, key=lambda p: -p[0]) if sort else pairs


def mrgsort_kernel(dt, lens, dcols, exhausted=None, block=None):
    """Lists s0.. (one row of ``lens[k]`` elements each) and dst y loaded, ``tmrgsort`` into y (multi-list
    with a tmp, or ``block``: the single-list form over s0), y stored to z."""
    gm = [(f"s{k}", n) for k, n in enumerate(lens)] + [("y", dcols)]
    lines = [f"func.func @k({', '.join(f'%{n}: !pto.ptr<{dt}>' for n, _ in gm)}, %z: !pto.ptr<{dt}>) {{",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index"]
    for n, c in gm + [("z", dcols)]:
        tv, pv = f"!pto.tensor_view<1x{c}x{dt}>", f"!pto.partition_tensor_view<1x{c}x{dt}>"
        lines += [f"  %c{n} = arith.constant {c} : index",
                  f"  %v{n} = pto.make_tensor_view %{n}, shape = [%c1, %c{n}], strides = [%c{n}, %c1] : {tv}",
                  f"  %p{n} = pto.partition_view %v{n}, offsets = [%c0, %c0], sizes = [%c1, %c{n}] : {tv} -> {pv}"]
        if n != "z":
            lines += [f"  %t{n} = pto.alloc_tile : !pto.tile_buf<vec, 1x{c}x{dt}>",
                      f"  pto.tload ins(%p{n} : {pv}) outs(%t{n} : !pto.tile_buf<vec, 1x{c}x{dt}>)"]
    tb = [f"!pto.tile_buf<vec, 1x{n}x{dt}>" for n in lens]
    yb = f"!pto.tile_buf<vec, 1x{dcols}x{dt}>"
    if block is None:
        lines.append(f"  %tmp = pto.alloc_tile : !pto.tile_buf<vec, 1x{sum(lens)}x{dt}>")
        ins = ", ".join([f"%ts{k}" for k in range(len(lens))] + ["%tmp"])
        types = ", ".join(tb + [f"!pto.tile_buf<vec, 1x{sum(lens)}x{dt}>"])
        lines.append(f"  pto.tmrgsort ins({ins} {{exhausted = {str(exhausted).lower()}}} : {types}) outs(%ty : {yb})")
    else:
        lines.append(f"  %b = arith.constant {block} : i32")
        lines.append(f"  pto.tmrgsort ins(%ts0, %b : {tb[0]}, i32) outs(%ty : {yb})")
    lines += [f"  pto.tstore ins(%ty : {yb}) outs(%pz : !pto.partition_tensor_view<1x{dcols}x{dt}>)", "  return", "}"]
    return "\n".join(lines) + "\n"


def as_tile(data: bytes, dt):
    return np.frombuffer(data, NP[dt]).reshape(1, -1).copy()


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("dt", ["f32", "f16"])
@pytest.mark.parametrize("npairs, exhausted", [((32, 32), False), ((16, 48, 32), False), ((32, 8, 64, 16), False),
                                               ((32, 8, 64, 16), True), ((48, 16), True), ((8, 8, 8), True)])
def test_tmrgsort_multi_list_matches_the_page(target, dt, npairs, exhausted):
    """2-4 pre-sorted lists merged into dst, descending, equal values from the lower list; with
    ``exhausted`` the merge stops once a list is used up and the rest of dst keeps its bytes."""
    rng = np.random.default_rng(sum(npairs) * (2 + exhausted))
    coef = 8 // SIZE[dt]
    lists = [pair_list(rng, dt, n) for n in npairs]
    dcols = coef * sum(npairs)
    y = values(rng, dt, (1, dcols), 0.0)
    inputs = {f"s{k}": as_tile(pair_bytes(x, dt), dt) for k, x in enumerate(lists)}
    res = api.check(api.parse(mrgsort_kernel(dt, [coef * n for n in npairs], dcols, exhausted)), target,
                    inputs={**inputs, "y": y, "z": np.zeros_like(y)})
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    merged = pair_bytes(o_merge(lists, exhausted), dt)
    assert res.outputs["z"].tobytes() == merged + y.tobytes()[len(merged):]


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("dt, block, groups", [("f32", 64, 1), ("f32", 128, 2), ("f16", 64, 3), ("f16", 256, 1)])
def test_tmrgsort_single_list_matches_the_page(target, dt, block, groups):
    """Each group of 4 pre-sorted blocks of blockLen elements merged into the same columns of dst."""
    rng = np.random.default_rng(block + groups)
    coef = 8 // SIZE[dt]
    blocks = [pair_list(rng, dt, block // coef) for _ in range(4 * groups)]
    src = as_tile(b"".join(pair_bytes(b, dt) for b in blocks), dt)
    y = np.zeros_like(src)
    res = api.check(api.parse(mrgsort_kernel(dt, [src.shape[1]], src.shape[1], block=block)), target,
                    inputs={"s0": src, "y": y, "z": y})
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    want = b"".join(pair_bytes(o_merge(blocks[4 * g:4 * g + 4], False), dt) for g in range(groups))
    assert res.outputs["z"].tobytes() == want


def test_tmrgsort_rules_are_located():
    """blockLen not a multiple of 64, and a dst too small for the merged lists, are located errors
    (PTOAS accepts both); a NaN among the values is rejected at run time."""
    with pytest.raises(PtocError, match=r"k\.pto:.*blockLen must be a positive multiple of 64"):
        z = np.zeros((1, 256), np.float32)
        api.reference(api.parse(mrgsort_kernel("f32", [256], 256, block=32), "k.pto"), {"s0": z, "y": z, "z": z})
    text = mrgsort_kernel("f32", [64, 64], 64, exhausted=False)
    for target in ("a2a3", "ascend950"):
        with pytest.raises(PtocError, match=r"k\.pto:.*dst's valid cols \(64\) do not hold the 128 elements merged"):
            api.compile(api.parse(text, "k.pto"), target)
    s = np.zeros((1, 64), np.float32)
    s[0, 0] = np.nan
    with pytest.raises(PtocError, match="a NaN among the values to merge"):
        z = np.zeros((1, 128), np.float32)
        api.reference(api.parse(mrgsort_kernel("f32", [64, 64], 128, exhausted=False), "k.pto"),
                      {"s0": s, "s1": np.zeros((1, 64), np.float32), "y": z, "z": z})


# ---- TFILLPAD, TFILLPAD_EXPAND, TFILLPAD_INPLACE (TFILLPAD.md) ------------------------------------

def o_pad(dt, pad):
    """TFILLPAD.md: PadValue Zero 0, Max +inf (int max), Min -inf (int min)."""
    if pad == 1:
        return 0.0 if is_float(dt) else 0
    if is_float(dt):
        return math.inf if pad == 2 else -math.inf
    bits = 8 * SIZE[dt]
    lo, hi = (0, 2 ** bits - 1) if dt.startswith("ui") else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
    return hi if pad == 2 else lo


@PROFILE
@given(tile_case(dtypes=("f16", "bf16", "f32", "i8", "i16", "i32", "ui8", "ui16", "ui32")),
       st.sampled_from(["tfillpad", "tfillpad_expand"]), st.sampled_from([1, 2, 3]), st.integers(0, 5))
def test_tfillpad_matches_the_page(case, op, pad, grow):
    """dst[i, j] = src[i, j] inside src's valid region, dst's PadValue everywhere else of dst's tile."""
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), special)
    extra = grow if op == "tfillpad_expand" else 0
    R, C = rows + extra, cols + extra
    got = run(op, [T(rows, cols, dt, (vr, vc))], T(R, C, dt, pad=pad), [x])
    want = [[py(x[i, j], dt) if i < vr and j < vc else o_pad(dt, pad) for j in range(C)] for i in range(R)]
    check(got, want, dt)


def test_tfillpad_copies_bits_between_types_of_one_size():
    """sizeof(src) == sizeof(dst) (TFILLPAD.md): an i16 -1 becomes the f16 bits 0xFFFF (a NaN)."""
    x = np.array([[-1, 0x3C00]], np.int16)
    got = run("tfillpad", [T(1, 16, "i16", (1, 2))], T(1, 16, "f16", pad=1), [x])
    assert got.view(np.uint16)[0, :3].tolist() == [0xFFFF, 0x3C00, 0]


@pytest.mark.parametrize("op, src, dst, why", [
    ("tfillpad", T(8, 16, "f32"), T(8, 16, "f32"), "dst's PadValue must not be Null"),
    ("tfillpad", T(8, 16, "f32"), T(8, 32, "f32", pad=1), "the same static shape"),
    ("tfillpad_inplace", T(8, 16, "f32"), T(16, 16, "f32", pad=1), "the same static shape"),
    ("tfillpad_expand", T(8, 16, "f32"), T(4, 32, "f32", pad=1), "at least src's"),
    ("tfillpad", T(8, 16, "f16"), T(8, 16, "f32", pad=1), "elements must be of one size"),
    ("tfillpad", T(8, 16, "i64"), T(8, 16, "i64", pad=1), "elements must be of one size")])
def test_tfillpad_rules_are_located(op, src, dst, why):
    text = f"func.func @k(%a: {src}) -> {dst} {{\n  %d = pto.{op} %a : {src} -> {dst}\n  return %d : {dst}\n}}\n"
    with pytest.raises(PtocError, match=why) as e:
        api.verify(api.parse(text, "k.pto"))
    assert "k.pto:2:8" in str(e.value)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("dt, R, cols, vr, vc", [("f32", 8, 8, 3, 5), ("f16", 16, 16, 16, 16), ("i8", 9, 64, 4, 33),
                                                 ("ui8", 240, 32, 239, 1), ("bf16", 256, 16, 255, 15),
                                                 ("i32", 1, 72, 1, 0)])
def test_tfillpad_inplace_pads_the_shared_storage(target, dt, R, cols, vr, vc):
    """src and dst at one UB address (the in-place form's shared storage): the padding appears
    around src's valid region, on both backends and in the golden model."""
    text = DA.fillpad_inplace_kernel(dt, R, cols, vc, 3).replace(f"%cv = arith.constant {R - R // 4}",
                                                                    f"%cv = arith.constant {vr}")
    text = text.replace(f"{R - R // 4}x{vc}", f"{vr}x{vc}")
    x = values(np.random.default_rng(R + vc), dt, (vr, vc), 0.3)
    res = api.check(api.parse(text), target, inputs={"x": x, "z": np.zeros((R, cols), NP[dt])})
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    want = [[py(x[i, j], dt) if i < vr and j < vc else o_pad(dt, 3) for j in range(cols)] for i in range(R)]
    check(res.outputs["z"].reshape(R, cols), want, dt)


def test_tfillpad_inplace_on_separate_storage_is_a_located_error():
    t, td = T(8, 16, "f32", (4, 4)), T(8, 16, "f32", pad=2)
    text = f"func.func @k(%a: {t}) -> {td} {{\n  %d = pto.tfillpad_inplace %a : {t} -> {td}\n  return %d : {td}\n}}\n"
    with pytest.raises(PtocError, match="not the same storage") as e:
        api.reference(api.parse(text, "k.pto"), {"a": np.zeros((4, 4), np.float32)})
    assert "k.pto:2:8" in str(e.value)


# ---- TDEQUANT (TDEQUANT.md) ----------------------------------------------------------------------------

@PROFILE
@given(tile_case(dtypes=("i8", "i16")), st.booleans())
def test_tdequant_matches_the_page(case, col_major):
    """dst[i, j] = (f32(src[i, j]) - offset[i]) * scale[i], each step rounded to f32."""
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), special)
    sc, off = (values(rng, "f32", (vr, 1), special) for _ in range(2))
    p = T(rows, 1, "f32", (vr, 1), col=True) if col_major else T(rows, 8, "f32", (vr, 1))
    got = run("tdequant", [T(rows, cols, dt, (vr, vc)), p, p], T(rows, cols, "f32", (vr, vc)), [x, sc, off])
    f32 = lambda v: rnd(v, "f32")  # noqa: E731
    want = [[f32(f32(py(x[i, j], dt) - py(off[i, 0], "f32")) * py(sc[i, 0], "f32")) for j in range(vc)]
            for i in range(vr)]
    check(got, want, "f32")


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("variant, R, cols, C", [("i16-col", 9, 32, 27), ("i16-row", 256, 16, 16),
                                                  ("i8-col", 240, 32, 31), ("i16-col", 1, 256, 255),
                                                  ("i8-row", 16, 128, 100), ("i8-col", 1, 64, 64)])
def test_tdequant_backends_give_the_golden_bits_on_special_values(target, variant, R, cols, C):
    """i8 on ascend950: UNPK4_B8 (the page's unpack), then vf.cvt i8 -> i16 -> f32."""
    rng = np.random.default_rng(R + C)
    given = {"a": values(rng, variant[:variant.index("-")], (R, C), 0.4),
             "s": values(rng, "f32", (R, 1), 0.4), "o": values(rng, "f32", (R, 1), 0.4)}
    text = DA.kernel("tdequant", variant, "f32", R, cols, C)
    cmp, findings, _ = (H.check if target == "a2a3" else D5.check)(text, 0, given)
    assert cmp and not findings
    assert all(c.ok for c in cmp), [c.line() for c in cmp]


@pytest.mark.parametrize("src, p, dst, why", [
    (T(8, 16, "f16"), T(8, 1, "f32", col=True), T(8, 16, "f32"), "src must be i8 or i16"),
    (T(8, 16, "i16"), T(8, 1, "f32", col=True), T(8, 16, "f16"), "dst must be f32"),
    (T(8, 16, "i16"), T(8, 1, "f16", col=True), T(8, 16, "f32"), "scale must be f32"),
    (T(8, 16, "i16"), T(8, 8, "f32", (8, 2)), T(8, 16, "f32"), "one value a row"),
    (T(8, 16, "i16"), T(8, 8, "f32", (4, 1)), T(8, 16, "f32"), "scale's valid rows must equal dst's"),
    (T(8, 16, "i16", (8, 8)), T(8, 1, "f32", col=True), T(8, 16, "f32"), "the same valid shape")])
def test_tdequant_rules_are_located(src, p, dst, why):
    text = (f"func.func @k(%a: {src}, %s: {p}, %o: {p}) -> {dst} {{\n  %d = pto.tdequant %a, %s, %o : ({src}, {p}, "
            f"{p}) -> {dst}\n  return %d : {dst}\n}}\n")
    with pytest.raises(PtocError, match=why) as e:
        api.verify(api.parse(text, "k.pto"))
    assert "k.pto:2:8" in str(e.value)


# ---- TINTERLEAVE, TDEINTERLEAVE (TINTERLEAVE.md, TDEINTERLEAVE.md; A5 only) ------------------------------

def run_pair(op, src_types, dst_type, xs):
    """An L1 kernel ``%d0, %d1 = pto.OP %a0.. : (...) -> (D, D)``; the golden model's two results."""
    args = ", ".join(f"%a{k}: {t}" for k, t in enumerate(src_types))
    names = ", ".join(f"%a{k}" for k in range(len(src_types)))
    text = (f"func.func @k({args}) -> ({dst_type}, {dst_type}) {{\n  %d0, %d1 = pto.{op} {names} : "
            f"({', '.join(src_types)}) -> ({dst_type}, {dst_type})\n  return %d0, %d1 : {dst_type}, {dst_type}\n}}\n")
    out = api.reference(api.parse(text), {f"a{k}": x for k, x in enumerate(xs)}, target="ascend950")
    return out["result0"], out["result1"]


def bits(x):
    return np.asarray(x).view({1: np.uint8, 2: np.uint16, 4: np.uint32}[np.asarray(x).dtype.itemsize]).tolist()


@PROFILE
@given(tile_case(dtypes=("f16", "bf16", "f32", "i8", "i16", "i32", "ui8", "ui16", "ui32")),
       st.sampled_from(["tinterleave", "two", "one"]))
def test_tinterleave_and_tdeinterleave_match_the_pages(case, form):
    """The pages' element streams, written with Python lists (bits compared: NaN payloads move too)."""
    dt, rows, cols, vr, vc, rng, special = case
    vc += vc % 2
    cols = max(cols, vc, 512 // SIZE[dt] if form == "one" else 0)
    xs = [values(rng, dt, (vr, vc), special) for _ in range(1 if form == "one" else 2)]
    src = T(rows, cols, dt, (vr, vc))
    half = vc // 2 if form == "one" else vc
    d0, d1 = run_pair("tinterleave" if form == "tinterleave" else "tdeinterleave", [src] * len(xs),
                      T(rows, cols, dt, (vr, half)), xs)
    for i in range(vr):
        rows_in = [bits(x[i]) for x in xs]
        if form == "tinterleave":
            stream = [v for pair in zip(*rows_in) for v in pair]
            want0, want1 = stream[:vc], stream[vc:]
        else:
            combined = [v for r in rows_in for v in r]
            want0, want1 = combined[0::2], combined[1::2]
        assert bits(d0[i, :half]) == want0 and bits(d1[i, :half]) == want1, i


@pytest.mark.parametrize("form, dt, R, cols, vc", [
    ("tinterleave", "f32", 1, 64, 64), ("tinterleave", "f16", 9, 32, 6), ("tinterleave", "i8", 240, 64, 50),
    ("tinterleave", "bf16", 256, 16, 16), ("two", "f32", 8, 128, 32), ("two", "f16", 7, 32, 18),
    ("two", "ui8", 16, 512, 448), ("two", "i32", 255, 8, 8), ("one", "f32", 3, 128, 100), ("one", "i8", 240, 512, 498),
    ("one", "f16", 256, 256, 256)])
def test_interleave_forms_on_ascend950_give_the_golden_bits(form, dt, R, cols, vc):
    """VF (vdintlv, its ord - 1 power for TINTERLEAVE) and, for a two-source TDEINTERLEAVE of halves
    inside a 32-byte block, the scalar unit: the golden model's bits, NaN payloads included."""
    op = "tinterleave" if form == "tinterleave" else "tdeinterleave"
    n = 1 if form == "one" else 2
    rng = np.random.default_rng(R + vc)
    half = vc // 2 if form == "one" else vc
    epb = 32 // SIZE[dt]
    ts = f"!pto.tile<{R}x{cols}x{dt}, valid={R}x{vc}>"
    td = f"!pto.tile<{R}x{-(-half // epb) * epb}x{dt}, valid={R}x{half}>"
    text = (f"func.func @k({', '.join(f'%a{k}: {ts}' for k in range(n))}) -> ({td}, {td}) {{\n  %d0, %d1 = pto.{op} "
            f"{', '.join(f'%a{k}' for k in range(n))} : ({', '.join([ts] * n)}) -> ({td}, {td})\n"
            f"  return %d0, %d1 : {td}, {td}\n}}\n")
    given = {f"a{k}": values(rng, dt, (R, vc), 0.4) for k in range(n)}
    cmp, findings, _ = D5.check(text, 0, given)
    assert cmp and not findings
    assert all(c.ok for c in cmp), [c.line() for c in cmp]


def test_interleave_on_a2a3_is_a_located_error():
    t = T(8, 32, "f32", (8, 8))
    text = (f"func.func @k(%a: {t}, %b: {t}) -> ({t}, {t}) {{\n  %d0, %d1 = pto.tinterleave %a, %b : ({t}, {t}) -> "
            f"({t}, {t})\n  return %d0, %d1 : {t}, {t}\n}}\n")
    with pytest.raises(PtocError, match="tinterleave is only supported on A5") as e:
        api.verify(api.parse(text, "k.pto"), A2A3)
    assert "k.pto:2:14" in str(e.value)


@pytest.mark.parametrize("op, srcs, dst, why", [
    ("tinterleave", [T(8, 32, "f32", (8, 7))] * 2, T(8, 32, "f32", (8, 7)), "valid cols must be even"),
    ("tinterleave", [T(8, 32, "f32", (8, 8)), T(8, 32, "f32", (8, 6))], T(8, 32, "f32", (8, 8)), "same valid shape"),
    ("tinterleave", [T(8, 32, "f32", (8, 8)), T(8, 32, "i32", (8, 8))], T(8, 32, "f32", (8, 8)), "same element type"),
    ("tdeinterleave", [T(8, 32, "f32", (8, 8), col=True)] * 2, T(8, 32, "f32", (8, 8)), "must be RowMajor"),
    ("tdeinterleave", [T(8, 64, "f32", (8, 8))], T(8, 64, "f32", (8, 4)), "at least 2 x 256 / sizeof"),
    ("tdeinterleave", [T(8, 128, "f32", (8, 9))], T(8, 128, "f32", (8, 4)), "src's valid cols must be even"),
    ("tdeinterleave", [T(8, 128, "f32", (8, 10))], T(8, 128, "f32", (8, 4)), "hold half of src's")])
def test_interleave_rules_are_located(op, srcs, dst, why):
    args = ", ".join(f"%a{k}: {t}" for k, t in enumerate(srcs))
    names = ", ".join(f"%a{k}" for k in range(len(srcs)))
    text = (f"func.func @k({args}) -> ({dst}, {dst}) {{\n  %d0, %d1 = pto.{op} {names} : ({', '.join(srcs)}) -> "
            f"({dst}, {dst})\n  return %d0, %d1 : {dst}, {dst}\n}}\n")
    with pytest.raises(PtocError, match=why) as e:
        api.verify(api.parse(text, "k.pto"), ASCEND950)
    assert "k.pto:2:14" in str(e.value)


# ---- TADDRELUCONV, TSUBRELUCONV (TADDReluConv.md), TADDDEQRELU (TAddDeqRelu.md) --------------------------

def o_sat(v, dt):
    """TADDReluConv.md's convert: nearest even, saturating (an infinity too) to dt's range; a NaN
    stays a NaN (f16) or becomes 0 (i8)."""
    if dt == "f16":
        if math.isnan(v):
            return math.nan
        top = 65504.0
        return max(-top, min(top, v)) if abs(v) >= top else rnd(v, "f16")
    if math.isnan(v):
        return 0
    n = round(v) if math.isfinite(v) else (1 if v > 0 else -1) * 2 ** 40  # Python's round(): nearest even
    return max(-128, min(127, n))


def o_relu_conv(a, b, sdt, ddt, sub):
    """``convert(max(0, a ± b))``: the sum rounded (floats) or wrapped (i16) in the source type, ReLU
    (a NaN stays a NaN, -0 -> +0), then :func:`o_sat`."""
    s = a - b if sub else a + b
    s = rnd(s, sdt) if is_float(sdt) else wrap(s, sdt)
    if not (isinstance(s, float) and math.isnan(s)):
        s = max(s, 0) + 0 if not is_float(sdt) else (s if s > 0 else 0.0)
    return o_sat(s, ddt)


@PROFILE
@given(tile_case(dtypes=("f32", "f16", "i16")), st.booleans())
def test_relu_conv_matches_the_page(case, sub):
    sdt, rows, cols, vr, vc, rng, special = case
    ddt = dict(pto.RELU_CONV_PAIRS)[sdt]
    a, b = values(rng, sdt, (vr, vc), special), values(rng, sdt, (vr, vc), special)
    if sdt == "f32" and special:  # sums past f16's range (the saturation)
        a[0, 0] = np.float32(70000.0)
    got = run("tsubreluconv" if sub else "taddreluconv", [T(rows, cols, sdt, (vr, vc))] * 2,
              T(rows, cols, ddt, (vr, vc)), [a, b])
    check(got, [[o_relu_conv(py(a[i, j], sdt), py(b[i, j], sdt), sdt, ddt, sub) for j in range(vc)]
                for i in range(vr)], ddt)


def o_deq_relu(a, b, s):
    """TAddDeqRelu.md's sequence: i32 sum (wrapping), to f32, * 2^-17, * s, * 2^17 (each rounded to
    f32), ReLU, saturating f16."""
    x = rnd(float(wrap(a + b, "i32")), "f32")
    for k in (2.0 ** -17, s, 2.0 ** 17):
        x = rnd(x * k, "f32")
    x = x if math.isnan(x) or x > 0 else 0.0
    return o_sat(x, "f16")


@PROFILE
@given(tile_case(dtypes=("i32",)), st.sampled_from([1e-3, 3e-6, -0.5, 2.0 ** -20, 7.0]))
def test_tadddeqrelu_matches_the_page(case, s):
    _, rows, cols, vr, vc, rng, special = case
    a, b = values(rng, "i32", (vr, vc), special), values(rng, "i32", (vr, vc), special)
    t, h = T(rows, cols, "i32", (vr, vc)), T(rows, cols, "f16", (vr, vc))
    text = (f"func.func @k(%a: {t}, %b: {t}, %t: {t}) -> {h} {{\n  %s = arith.constant {s!r} : f32\n"
            f"  %d = pto.tadddeqrelu %a, %b, %s, %t : ({t}, {t}, f32, {t}) -> {h}\n  return %d : {h}\n}}\n")
    got = golden.evaluate(api.parse(text), {"a": a, "b": b, "t": a})["result0"]
    sf = float(np.float32(s))
    check(got, [[o_deq_relu(py(a[i, j], "i32"), py(b[i, j], "i32"), sf) for j in range(vc)] for i in range(vr)], "f16")


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("op, sdt", [("taddreluconv", "f32"), ("tsubreluconv", "f16"), ("taddreluconv", "i16"),
                                     ("tadddeqrelu", "i32")])
@pytest.mark.parametrize("R, cols, C", [(1, 64, 64), (9, 64, 61), (240, 32, 17), (256, 32, 32)])
def test_fused_relu_ops_backends_give_the_golden_bits(target, op, sdt, R, cols, C):
    """NaN/±0/±inf and sums past the destination's range among the inputs."""
    ddt = "f16" if op == "tadddeqrelu" else dict(pto.RELU_CONV_PAIRS)[sdt]
    case = (op, f"{sdt}-{'deq' if op == 'tadddeqrelu' else 'relu'}", ddt, R, cols, C)
    rng = np.random.default_rng(R + C)
    given = {"a": values(rng, sdt, (R, C), 0.4), "b": values(rng, sdt, (R, C), 0.4)}
    text = DA.kernel(*case)
    cmp, findings, _ = (H.check if target == "a2a3" else D5.check)(text, 0, DA.domain_inputs(case, given))
    assert cmp and not findings
    assert all(c.ok for c in cmp), [c.line() for c in cmp]


@pytest.mark.parametrize("ins, dst, why", [
    ("%a, %a : ({f32}, {f32})", "i8", r"\(src, dst\) element types must be one of f32 -> f16, f16 -> i8, i16 -> i8"),
    ("%a, %c : ({f32}, {f16})", "f16", "src0 and src1 must have the same element type"),
    ("%a, %h : ({f32}, {half})", "f16", r"src1's valid shape must equal dst's"),
    ("%a, %a : ({f32}, {f32})", "f16-empty", "dst's valid rows and cols must be greater than 0"),
])
def test_relu_conv_rules_are_located(ins, dst, why):
    types = {"f32": T(8, 16, "f32"), "f16": T(8, 16, "f16"), "half": T(8, 16, "f32", (8, 8))}
    d = {"i8": T(8, 16, "i8"), "f16": T(8, 16, "f16"), "f16-empty": T(8, 16, "f16", (0, 16))}[dst]
    if dst == "f16-empty":
        types["f32"] = T(8, 16, "f32", (0, 16))
    text = (f"func.func @k(%a: {types['f32']}, %c: {types['f16']}, %h: {types['half']}) -> {d} {{\n"
            f"  %d = pto.taddreluconv {ins.format(**types)} -> {d}\n  return %d : {d}\n}}\n")
    with pytest.raises(PtocError, match=why) as e:
        api.verify(api.parse(text, "k.pto"))
    assert "k.pto:2:8" in str(e.value)


@pytest.mark.parametrize("tmp, s, dst, why", [
    (T(8, 16, "f32"), "f32", T(8, 16, "f16"), "tmp must be i32"),
    (T(8, 16, "i32"), "f16", T(8, 16, "f16"), "deqScale must be an f32 scalar"),
    (T(8, 16, "i32"), "f32", T(8, 16, "f32"), "dst must be f16"),
    (T(4, 16, "i32"), "f32", T(8, 16, "f16"), r"tmp \(4x16\) must be at least dst's valid region 8x16"),
])
def test_tadddeqrelu_rules_are_located(tmp, s, dst, why):
    t = T(8, 16, "i32")
    text = (f"func.func @k(%a: {t}, %t: {tmp}, %s: {s}) -> {dst} {{\n"
            f"  %d = pto.tadddeqrelu %a, %a, %s, %t : ({t}, {t}, {s}, {tmp}) -> {dst}\n  return %d : {dst}\n}}\n")
    with pytest.raises(PtocError, match=why) as e:
        api.verify(api.parse(text, "k.pto"))
    assert "k.pto:2:8" in str(e.value)
