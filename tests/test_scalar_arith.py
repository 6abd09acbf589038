"""Kernel scalar ``arith`` wraps at its integer width, as MLIR's arith defines (two's complement,
the result modulo 2**width): the golden model, the a2a3 executor (runtime/program.py) and the
lowering's folding of constants all compute it so.  Each kernel adds a scalar computed in i8,
i16, i32 or i64 to an i32 tile; the expected tile is NumPy's, with NumPy's fixed-width ints."""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import api

T = "!pto.tile_buf<vec, 1x8xi32>"
PV = "!pto.partition_tensor_view<1x8xi32>"
TV = "!pto.tensor_view<?x?xi32>"



def _np(dtype, a: int, op: str, b: int) -> np.ndarray:
    """``a op b`` in NumPy's fixed-width ``dtype`` (arrays wrap silently)."""
    x, y = np.array([a], dtype), np.array([b], dtype)
    return {"+": np.add, "-": np.subtract, "*": np.multiply}[op](x, y)


# (name, n, the scalar's arith from %n : i32 to %s : i32, NumPy's value of it)
CASES = [
    ("i8_muli", 100, """%a = arith.trunci %n : i32 to i8
    %c3 = arith.constant 3 : i8
    %b = arith.muli %a, %c3 : i8
    %s = arith.extsi %b : i8 to i32""", int(_np(np.int8, 100, "*", 3)[0])),
    ("i8_trunci_extui", 300, """%a = arith.trunci %n : i32 to i8
    %s = arith.extui %a : i8 to i32""", int(np.array([300], np.int32).astype(np.uint8)[0])),
    ("i16_addi", 30000, """%a = arith.trunci %n : i32 to i16
    %b = arith.addi %a, %a : i16
    %s = arith.extsi %b : i16 to i32""", int(_np(np.int16, 30000, "+", 30000)[0])),
    ("i32_muli", 65537, """%c = arith.constant 65536 : i32
    %s = arith.muli %n, %c : i32""", int(_np(np.int32, 65537, "*", 65536)[0])),
    ("i32_subi", -2147483647, """%c = arith.constant 5 : i32
    %s = arith.subi %n, %c : i32""", int(_np(np.int32, -2147483647, "-", 5)[0])),
    ("i64_muli_divsi", 5, """%w = arith.extsi %n : i32 to i64
    %c = arith.constant 4611686018427387904 : i64
    %c60 = arith.constant 1152921504606846976 : i64
    %b = arith.muli %w, %c : i64
    %d = arith.divsi %b, %c60 : i64
    %s = arith.trunci %d : i64 to i32""", int(_np(np.int64, 5, "*", 2**62)[0] // 2**60)),
    ("i32_cmpi_ult", -1, """%c = arith.constant 5 : i32
    %lt = arith.cmpi ult, %n, %c : i32
    %s = arith.extui %lt : i1 to i32""", int(np.array([-1], np.int32).view(np.uint32)[0] < 5)),
    # the bitwise ops and shifts, as C computes them on the operand's width (NumPy's fixed-width ints)
    ("i32_ori_xori", -77, """%c = arith.constant 1450 : i32
    %o = arith.ori %n, %c : i32
    %s = arith.xori %o, %c : i32""", int((np.int32(-77) | np.int32(1450)) ^ np.int32(1450))),
    ("i32_shli", -77, """%c = arith.constant 28 : i32
    %s = arith.shli %n, %c : i32""", int(np.left_shift(np.int32(-77), np.int32(28)))),
    ("i32_shrsi", -77, """%c = arith.constant 3 : i32
    %s = arith.shrsi %n, %c : i32""", int(np.right_shift(np.int32(-77), np.int32(3)))),
    ("i32_shrui", -77, """%c = arith.constant 3 : i32
    %s = arith.shrui %n, %c : i32""", int(np.right_shift(np.uint32(2**32 - 77), np.uint32(3)).astype(np.int32))),
    ("i8_shli_shrsi", 100, """%a = arith.trunci %n : i32 to i8
    %c2 = arith.constant 2 : i8
    %b = arith.shli %a, %c2 : i8
    %d = arith.shrsi %b, %c2 : i8
    %s = arith.extsi %d : i8 to i32""", int(np.right_shift(np.left_shift(np.int8(100), np.int8(2)), np.int8(2)))),
    ("i16_shrui_xori", -2, """%a = arith.trunci %n : i32 to i16
    %c = arith.constant 5 : i16
    %m = arith.constant -1 : i16
    %b = arith.shrui %a, %c : i16
    %d = arith.xori %b, %m : i16
    %s = arith.extsi %d : i16 to i32""", int(~np.right_shift(np.uint16(2**16 - 2), np.uint16(5)).astype(np.int16))),
    ("i64_shli_ori", 3, """%w = arith.extsi %n : i32 to i64
    %c = arith.constant 62 : i64
    %c33 = arith.constant 33 : i64
    %b = arith.shli %w, %c : i64
    %d = arith.shrsi %b, %c33 : i64
    %e = arith.ori %d, %w : i64
    %s = arith.trunci %e : i64 to i32""",
     int((np.right_shift(np.left_shift(np.int64(3), np.int64(62)), np.int64(33)) | np.int64(3)).astype(np.int32))),
]


def kernel(body: str, n_arg: bool) -> str:
    """y = x + s, s computed from %n: a kernel argument (run time) or a constant (folded)."""
    arg = ", %n: i32" if n_arg else ""
    return f"""
func.func @k(%x: !pto.ptr<i32>, %y: !pto.ptr<i32>{arg}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    {body}
    %xv = pto.make_tensor_view %x, shape = [%c1, %c8], strides = [%c8, %c1] : {TV}
    %yv = pto.make_tensor_view %y, shape = [%c1, %c8], strides = [%c8, %c1] : {TV}
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c1, %c8] : {TV} -> {PV}
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c1, %c8] : {TV} -> {PV}
    %t = pto.alloc_tile : {T}
    pto.tload ins(%xp : {PV}) outs(%t : {T})
    pto.tadds ins(%t, %s : {T}, i32) outs(%t : {T})
    pto.tstore ins(%t : {T}) outs(%yp : {PV})
    return
}}
"""


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("n_arg", [True, False], ids=["run_time", "folded"])
@pytest.mark.parametrize("name,n,body,s", CASES, ids=[c[0] for c in CASES])
def test_scalar_arith_wraps_at_its_width(name, n, body, s, n_arg, target):
    if not n_arg:
        body = f"%n = arith.constant {n} : i32\n    " + body
    module = api.parse(kernel(body, n_arg), f"{name}.pto")
    x = np.arange(8, dtype=np.int32) * 3 - 7
    res = api.check(module, target, {"x": x, **({"n": n} if n_arg else {})})
    assert res.ok, [c.line() for c in res.comparisons] + [d.message for d in res.diagnostics]
    want = (x + np.int32(s)).astype(np.int32)
    np.testing.assert_array_equal(res.reference["y"].reshape(8), want)
    np.testing.assert_array_equal(np.asarray(res.outputs["y"]).reshape(8), want)


def test_the_listing_tells_truncating_from_floor_division():
    """``arith.divsi`` (toward zero, C's ``/``) and ``arith.floordivsi`` (toward -inf) differ for a
    negative quotient: the listing prints ``/`` for the first and ``floordiv(..)`` for the second."""
    body = """%c2 = arith.constant 2 : i32
    %q = arith.divsi %n, %c2 : i32
    %f = arith.floordivsi %n, %c2 : i32
    %s = arith.addi %q, %f : i32"""
    listing = api.emit(api.parse(kernel(body, True), "div.pto"), "a2a3")
    (line,) = [ln for ln in listing.splitlines() if "vadds" in ln]
    assert " scalar=%n/2+floordiv(%n,2) " in line, line
    res = api.check(api.parse(kernel(body, True), "div.pto"), "a2a3", {"x": np.zeros(8, np.int32), "n": -3})
    assert res.ok and np.asarray(res.outputs["y"]).reshape(8).tolist() == [-1 + -2] * 8


def test_the_listing_tells_arithmetic_from_logical_shift():
    """``arith.shrsi`` shifts the sign in and ``arith.shrui`` zeros (they differ for a negative
    operand): the listing prints ``ashr(..)`` for the first and ``lshr(..)`` for the second."""
    body = """%c3 = arith.constant 3 : i32
    %a = arith.shrsi %n, %c3 : i32
    %b = arith.shrui %n, %c3 : i32
    %s = arith.subi %b, %a : i32"""
    listing = api.emit(api.parse(kernel(body, True), "shr.pto"), "a2a3")
    (line,) = [ln for ln in listing.splitlines() if "vadds" in ln]
    assert " scalar=lshr(%n,3)-ashr(%n,3) " in line, line


def test_the_listing_tells_unsigned_from_signed_and_shows_value_changing_casts():
    """``cmpi ult`` and ``slt``, ``divui`` and ``divsi`` differ on a negative operand, and a cast that
    changes the number (``trunci``, ``extui`` of more than one bit) is not its operand: the listing
    prints C's operators for the signed ops, the arith name for the unsigned ones, and a value-changing
    cast with the type it casts to; a sign extension stays its operand."""
    body = """%c5 = arith.constant 5 : i32
    %lt = arith.cmpi ult, %n, %c5 : i32
    %ls = arith.cmpi slt, %n, %c5 : i32
    %u = arith.extui %lt : i1 to i32
    %v = arith.extui %ls : i1 to i32
    %q = arith.divui %n, %c5 : i32
    %a = arith.trunci %n : i32 to i8
    %b = arith.extui %a : i8 to i32
    %c = arith.extsi %a : i8 to i32
    %s1 = arith.addi %u, %v : i32
    %s2 = arith.addi %q, %b : i32
    %s3 = arith.addi %s1, %s2 : i32
    %s = arith.addi %s3, %c : i32"""
    text = kernel(body, True)
    (line,) = [ln for ln in api.emit(api.parse(text, "u.pto"), "a2a3").splitlines() if "vadds" in ln]
    assert " scalar=ult(%n,5)+(%n<5)+divui(%n,5)+extui.i32(trunci.i8(%n))+trunci.i8(%n) " in line, line
    n = -3  # 0xfffffffd: unsigned it is not below 5 and divides to 858993458; as i8 it is -3, zero-extended 253
    res = api.check(api.parse(text, "u.pto"), "a2a3", {"x": np.zeros(8, np.int32), "n": n})
    want = 0 + 1 + (n & 0xFFFFFFFF) // 5 + 253 + -3
    assert res.ok and np.asarray(res.outputs["y"]).reshape(8).tolist() == [int(want)] * 8


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_a_zero_extended_index_addresses_what_it_is(target):
    """A GM row offset ``index_cast(extui(trunci(%n) : i8))``: the address arithmetic saw through the
    extui and sign-extended the i8, so n = 200 (i8 -56) loaded row -56 (a bounds error); the zero
    extension gives row 200, as the golden model reads it."""
    body = """%a = arith.trunci %n : i32 to i8
    %b = arith.extui %a : i8 to i32
    %r = arith.index_cast %b : i32 to index"""
    text = f"""
func.func @k(%x: !pto.ptr<i32>, %y: !pto.ptr<i32>, %n: i32) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c256 = arith.constant 256 : index
    {body}
    %xv = pto.make_tensor_view %x, shape = [%c256, %c8], strides = [%c8, %c1] : {TV}
    %yv = pto.make_tensor_view %y, shape = [%c1, %c8], strides = [%c8, %c1] : {TV}
    %xp = pto.partition_view %xv, offsets = [%r, %c0], sizes = [%c1, %c8] : {TV} -> {PV}
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c1, %c8] : {TV} -> {PV}
    %t = pto.alloc_tile : {T}
    pto.tload ins(%xp : {PV}) outs(%t : {T})
    pto.tstore ins(%t : {T}) outs(%yp : {PV})
    return
}}
"""
    x = np.arange(256 * 8, dtype=np.int32).reshape(256, 8)
    res = api.check(api.parse(text, "z.pto"), target, {"x": x, "n": 200})
    assert res.ok, [c.line() for c in res.comparisons] + [d.message for d in res.diagnostics]
    np.testing.assert_array_equal(np.asarray(res.outputs["y"]).reshape(8), x[200])
