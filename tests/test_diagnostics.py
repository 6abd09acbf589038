"""Bad input: one located error each, at the line:col the ISA rule points to, never a traceback.

Each case names the rule it breaks; the expected position and message fragment are written
here from the ISA pages (seeds/000 TROWEXPANDMAX, seeds/004 TPAIRREDUCESUM,
reference/pto_isa.md §4), not taken from ptoc's output.
"""

from __future__ import annotations

import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError, format_diagnostic
from pto_compiler.targets import A2A3, ASCEND950


def tile(shape: str, dtype: str = "f32", **keys: str) -> str:
    extra = "".join(f", {k}={v}" for k, v in keys.items())
    return f"!pto.tile<{shape}x{dtype}{extra}>"


def buf(rows: int, cols: int, dtype: str = "f32", v_row="", v_col="", blayout="row_major") -> str:
    v_row = rows if v_row == "" else v_row
    v_col = cols if v_col == "" else v_col
    return (f"!pto.tile_buf<loc=vec, dtype={dtype}, rows={rows}, cols={cols}, v_row={v_row}, v_col={v_col}, "
            f"blayout={blayout}, slayout=none_box, fractal=512, pad=0>")


def binary(op: str, a: str, b: str, d: str) -> str:
    return f"%d = pto.{op} %a, %b : {a}, {b} -> {d}\n"


ROW = tile("16x64")
COL1 = tile("16x1", blayout="col_major")
BLK = tile("16x8")

# (id, source, target, line, col, message fragment)
CASES = [
    # --- TROWEXPANDMAX (seeds/000), one case per bullet ---------------------------------
    ("rowexpand-dtype-a2a3", binary("trowexpandmax", tile("16x64", "i8"), tile("16x1", "i8", blayout="col_major"),
                                    tile("16x64", "i8")), A2A3, 1, 6, "i8 is not supported on a2a3"),
    ("rowexpand-dtype-mismatch", binary("trowexpandmax", ROW, tile("16x1", "f16", blayout="col_major"), ROW),
     A2A3, 1, 6, "same element type"),
    ("rowexpand-dst-colmajor", binary("trowexpandmax", ROW, COL1, tile("16x64", blayout="col_major")),
     A2A3, 1, 6, "dst must be RowMajor"),
    ("rowexpand-none-full", binary("trowexpandmax", tile("16x32"), COL1, ROW), A2A3, 1, 6,
     "exactly one of src0 or src1"),
    ("rowexpand-both-full", binary("trowexpandmax", tile("16x8"), tile("16x8"), tile("16x8")), A2A3, 1, 6,
     "both do"),
    ("rowexpand-full-colmajor", binary("trowexpandmax", tile("16x64", blayout="col_major"), COL1, ROW),
     A2A3, 1, 6, "full-size operand (src0) must be RowMajor"),
    ("rowexpand-mode1-cols", binary("trowexpandmax", ROW, tile("16x2", blayout="col_major"), ROW), A2A3, 1, 6,
     "Mode 1 (ColMajor src1) requires src1 valid cols == 1"),
    ("rowexpand-mode1-rows", binary("trowexpandmax", ROW, tile("8x1", blayout="col_major"), ROW), A2A3, 1, 6,
     "valid rows == dst valid rows"),
    ("rowexpand-mode2-cols", binary("trowexpandmax", ROW, tile("16x16"), ROW), A2A3, 1, 6,
     "32/sizeof(f32) = 8"),
    ("rowexpand-mode2-cols-f16", binary("trowexpandmax", tile("16x64", "f16"), tile("16x8", "f16"),
                                        tile("16x64", "f16")), A2A3, 1, 6, "32/sizeof(f16) = 16"),
    ("rowexpand-mode2-rows", binary("trowexpandmax", ROW, tile("8x8"), ROW), A2A3, 1, 6,
     "Mode 2 requires src1 valid rows == dst valid rows"),
    ("rowexpand-tmp-mode2",
     f"%d = pto.trowexpandmax %a, %b, %t : {ROW}, {BLK}, {ROW} -> {ROW}\n", A2A3, 1, 6,
     "tmp operand is only allowed with Mode 1"),
    ("rowexpanddiv-int", binary("trowexpanddiv", tile("16x64", "i32"), tile("16x1", "i32", blayout="col_major"),
                                tile("16x64", "i32")), ASCEND950, 1, 6, "i32 is not supported on ascend950"),
    ("rowexpandexpdif-int", binary("trowexpandexpdif", tile("16x64", "i16"),
                                   tile("16x1", "i16", blayout="col_major"), tile("16x64", "i16")),
     A2A3, 1, 6, "i16 is not supported on a2a3"),
    ("rowexpand-src0-expanded-mode1-rows", binary("trowexpandmax", tile("4x1", blayout="col_major"), ROW, ROW),
     A2A3, 1, 6, "src0 valid rows == dst valid rows"),
    # --- TPAIRREDUCESUM (seeds/004) -------------------------------------------------
    ("pairreduce-int", f"%d = pto.tpairreducesum %a : {tile('8x64', 'i32')} -> {tile('8x64', 'i32')}\n",
     A2A3, 1, 6, "i32 is not supported on a2a3"),
    ("pairreduce-colmajor", f"%d = pto.tpairreducesum %a : {tile('8x64', blayout='col_major')} -> {tile('8x64')}\n",
     A2A3, 1, 6, "src0 must be RowMajor"),
    ("pairreduce-dst-colmajor",
     f"%d = pto.tpairreducesum %a : {tile('8x64')} -> {tile('8x64', blayout='col_major')}\n",
     A2A3, 1, 6, "dst must be RowMajor"),
    ("pairreduce-dtype", f"%d = pto.tpairreducesum %a : {tile('8x64', 'f16')} -> {tile('8x64')}\n",
     A2A3, 1, 6, "same element type"),
    ("pairreduce-valid", f"%d = pto.tpairreducesum %a : {tile('8x64', valid='8x63')} -> {tile('8x64')}\n",
     A2A3, 1, 6, "same valid shape as dst"),
    # --- elementwise / reductions (reference/pto_isa.md §4) ----------------------------
    ("tadd-shape", binary("tadd", tile("16x16"), tile("16x32"), tile("16x16")), A2A3, 1, 6,
     "no implicit broadcast"),
    ("tadd-dtype", binary("tadd", tile("16x16"), tile("16x16", "f16"), tile("16x16")), A2A3, 1, 6,
     "same element type"),
    ("tadd-bf16-a2a3", binary("tadd", tile("16x16", "bf16"), tile("16x16", "bf16"), tile("16x16", "bf16")),
     A2A3, 1, 6, "bf16 is not supported on a2a3"),
    ("tdiv-int", binary("tdiv", tile("16x16", "i32"), tile("16x16", "i32"), tile("16x16", "i32")), A2A3, 1, 6,
     "i32 is not supported"),
    ("texp-int", f"%d = pto.texp %a : {tile('16x16', 'i32')} -> {tile('16x16', 'i32')}\n", A2A3, 1, 6,
     "not supported on a2a3"),
    ("trowsum-rows", f"%d = pto.trowsum %a : {tile('16x64')} -> {tile('8x1', blayout='col_major')}\n",
     A2A3, 1, 6, "src valid rows must equal dst valid rows"),
    ("trowsum-colmajor-dst-cols", f"%d = pto.trowsum %a : {tile('16x64')} -> {tile('16x8', blayout='col_major')}\n",
     A2A3, 1, 6, "ColMajor dst must have exactly 1 column"),
    ("tcolsum-cols", f"%d = pto.tcolsum %a : {tile('16x64')} -> {tile('1x32')}\n", A2A3, 1, 6,
     "src valid cols must equal dst valid cols"),
    ("tcolexpandmax-cols", binary("tcolexpandmax", tile("16x64"), tile("1x32"), tile("16x64")), A2A3, 1, 6,
     "src1 valid cols must equal dst valid cols"),
    ("tadds-two-tiles", binary("tadds", tile("16x16"), tile("16x16"), tile("16x16")), A2A3, 1, 6,
     "one tile and one scalar"),
    ("tmaxs-scalar-first", f"%d = pto.tmaxs %s, %a : f32, {tile('16x16')} -> {tile('16x16')}\n", A2A3, 1, 6,
     "scalar operand must come second"),
    ("tile-too-big-a2a3", f"%t = pto.alloc_tile : {buf(256, 256)}\n", A2A3, 1, 6, "does not fit in the a2a3 UB"),
    ("valid-exceeds-shape", f"%t = pto.alloc_tile : {buf(16, 16, v_row=32)}\n", A2A3, 1, 23,
     "valid region 32x16 exceeds tile shape 16x16"),
    ("alloc-dynamic-without-operands", f"%t = pto.alloc_tile : {buf(16, 16, v_row='?', v_col='?')}\n", A2A3, 1, 6,
     "valid_row must be given"),
    ("dps-outs-not-buffer",
     f"func.func @k(%a: {tile('16x16')}, %b: {tile('16x16')}, %c: {tile('16x16')}) {{\n"
     f"  pto.tadd ins(%a, %b : {tile('16x16')}, {tile('16x16')}) outs(%c : {tile('16x16')})\n  return\n}}\n",
     A2A3, 2, 3, "`outs` must be !pto.tile_buf"),
    # --- front end: names, types, syntax ---------------------------------------------
    ("undefined-value", f"func.func @k() {{\n  %d = pto.texp %nope : {tile('16x16')} -> {tile('16x16')}\n  return\n}}\n",
     A2A3, 2, 17, "use of undefined value '%nope'"),
    # SSA scoping (MLIR's: a value is visible after its definition, in its block and the regions
    # nested there; func.func is isolated from above); L1 bare statements' free values are arguments
    ("l1-use-before-def", f"%b = pto.texp %a : {tile('16x16')} -> {tile('16x16')}\n"
     f"%a = pto.texp %c : {tile('16x16')} -> {tile('16x16')}\n", A2A3, 1, 15, "use of value '%a' before its definition (line 2)"),
    ("l1-use-in-loop-before-def", "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
     f"scf.for %i = %c0 to %c1 step %c1 {{\n  %d = pto.texp %u : {tile('16x16')} -> {tile('16x16')}\n}}\n"
     f"%u = pto.texp %t : {tile('16x16')} -> {tile('16x16')}\n", A2A3, 4, 17,
     "use of value '%u' before its definition (line 6)"),
    ("l1-use-after-loop-of-its-body-value", "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
     f"scf.for %i = %c0 to %c1 step %c1 {{\n  %u = pto.texp %t : {tile('16x16')} -> {tile('16x16')}\n}}\n"
     f"%d = pto.texp %u : {tile('16x16')} -> {tile('16x16')}\n", A2A3, 6, 15,
     "use of value '%u' outside the region that defines it (line 4)"),
    ("l1-use-in-sibling-region", f"%b = arith.constant true\nscf.if %b {{\n  %u = pto.texp %t : {tile('16x16')} -> "
     f"{tile('16x16')}\n}} else {{\n  %d = pto.texp %u : {tile('16x16')} -> {tile('16x16')}\n}}\n", A2A3, 5, 17,
     "use of value '%u' outside the region that defines it (line 3)"),
    ("l1-use-in-sibling-region-first", f"%b = arith.constant true\nscf.if %b {{\n  %d = pto.texp %u : {tile('16x16')} -> "
     f"{tile('16x16')}\n}} else {{\n  %u = pto.texp %t : {tile('16x16')} -> {tile('16x16')}\n}}\n", A2A3, 3, 17,
     "use of value '%u' outside the region that defines it (line 5)"),
    ("func-use-in-loop-before-def", f"func.func @k(%t: {tile('16x16')}) {{\n  %c0 = arith.constant 0 : index\n"
     f"  %c1 = arith.constant 1 : index\n  scf.for %i = %c0 to %c1 step %c1 {{\n    %d = pto.texp %u : {tile('16x16')} -> "
     f"{tile('16x16')}\n  }}\n  %u = pto.texp %t : {tile('16x16')} -> {tile('16x16')}\n  return\n}}\n", A2A3, 5, 19,
     "use of value '%u' before its definition (line 7)"),
    ("func-isolated-from-module-value", "%c = arith.constant 1 : index\nfunc.func @k() {\n"
     "  %r = arith.addi %c, %c : index\n  return\n}\n", A2A3, 3, 19,
     "use of undefined value '%c': func.func @k is isolated from above, its body sees only its arguments and its own "
     "values ('%c' is defined outside it, line 1)"),
    ("func-argument-outside-its-body", "func.func @k(%n: index) {\n  return\n}\n%c0 = arith.constant 0 : index\n"
     "%c1 = arith.constant 1 : index\nscf.for %i = %c0 to %n step %c1 {\n}\n", A2A3, 6, 21,
     "use of undefined value '%n' ('%n' is an argument of @k at line 1, visible only in its body)"),
    # static integer lists (bench/fuzz.py seed 1403: a type or a float there was an internal error)
    ("reinterpret-cast-offset-not-an-integer",
     "func.func @k(%y: memref<256xf16, #pto.address_space<gm>>) {\n  %v = memref.reinterpret_cast %y to offset: [f16], "
     "sizes: [16, 16], strides: [16, 1] : memref<256xf16, #pto.address_space<gm>> to memref<16x16xf16, strided<[16, 1]>, "
     "#pto.address_space<gm>>\n  return\n}\n", A2A3, 2, 8, "'memref.reinterpret_cast' offset takes integers, not 'f16'"),
    ("subset-sizes-not-integers", "func.func @k(%t: !pto.tile_buf<vec, 16x16xf32>) {\n  %c0 = arith.constant 0 : index\n"
     "  %s = pto.subset %t[%c0, %c0] sizes [8, 2.5] : !pto.tile_buf<vec, 16x16xf32>\n  return\n}\n", A2A3, 3, 8,
     "'pto.subset' sizes takes integers, not '2.5'"),
    ("subset-sizes-count", "func.func @k(%t: !pto.tile_buf<vec, 16x16xf32>) {\n  %c0 = arith.constant 0 : index\n"
     "  %s = pto.subset %t[%c0, %c0] sizes [8] : !pto.tile_buf<vec, 16x16xf32>\n  return\n}\n", A2A3, 3, 8,
     "'pto.subset' sizes takes 2 integers, got 1"),
    ("subset-size-zero", "func.func @k(%t: !pto.tile_buf<vec, 16x16xf32>) {\n  %c0 = arith.constant 0 : index\n"
     "  %s = pto.subset %t[%c0, %c0] sizes [0, 16] : !pto.tile_buf<vec, 16x16xf32>\n  return\n}\n", A2A3, 3, 8,
     "'pto.subset' sizes [0, 16]: tile dimension 0 is out of range"),
    ("redefined-value", f"func.func @k(%a: {tile('16x16')}) {{\n  %a = pto.texp %a : {tile('16x16')} -> {tile('16x16')}\n"
     "  return\n}\n", A2A3, 2, 3, "redefinition of %a"),
    ("unknown-op", "%d = pto.tfrobnicate %a : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n", A2A3, 1, 6,
     "unknown operation 'pto.tfrobnicate'"),
    ("unknown-dtype", "%d = pto.texp %a : !pto.tile<16x16xq7> -> !pto.tile<16x16xf32>\n", A2A3, 1, 36,
     "unknown element type 'q7'"),
    ("type-count-mismatch", f"%d = pto.tadd %a, %b : ({tile('16x16')}) -> {tile('16x16')}\n", A2A3, 1, 6,
     "2 operands but 1 types"),
    ("syntax-missing-paren", "pto.tadd ins(%a, %b : !pto.tile<16x16xf32>, !pto.tile<16x16xf32> outs(%c)\n",
     A2A3, 1, 66, "expected"),
    ("syntax-stray-char", "%d = pto.texp $a : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n", A2A3, 1, 15,
     "unexpected character"),
    ("bad-blayout", "%d = pto.texp %a : !pto.tile<16x16xf32, blayout=diagonal> -> !pto.tile<16x16xf32>\n",
     A2A3, 1, 49, "blayout"),
    ("operand-type-disagrees",
     f"func.func @k(%a: {tile('16x16')}) {{\n  %d = pto.texp %a : {tile('16x16', 'f16')} -> {tile('16x16', 'f16')}\n"
     "  return\n}\n", A2A3, 2, 17, "%a has type"),
    ("tassign-misaligned-later-rule-free",
     f"func.func @k() {{\n  pto.tassign %t, @tile(0x1000)\n  return\n}}\n", A2A3, 2, 15, "use of undefined value '%t'"),
]


def diagnose(source: str, target) -> PtocError:
    with pytest.raises(PtocError) as info:
        module = api.parse(source, "bad.pto")
        api.verify(module, target)
    return info.value


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_located(case):
    _, source, target, line, col, fragment = case
    err = diagnose(source, target)
    first = err.diagnostics[0]
    assert (first.filename, first.line, first.column) == ("bad.pto", line, col), format_diagnostic(first)
    assert fragment in first.message, first.message
    text = format_diagnostic(first, source.splitlines())
    lines = text.splitlines()
    assert lines[0].startswith(f"bad.pto:{line}:{col}: error: ")
    assert lines[2] == " " * (col - 1) + "^"


def test_case_count():
    assert len(CASES) >= 40


def test_good_l1_rowexpandmax_verifies_on_both_targets():
    src = binary("trowexpandmax", ROW, COL1, ROW)
    for target in (A2A3, ASCEND950):
        api.verify(api.parse(src, "ok.pto"), target)


def test_int8_rowexpandmax_is_ascend950_only():
    src = binary("trowexpandmax", tile("16x64", "i8"), tile("16x1", "i8", blayout="col_major"), tile("16x64", "i8"))
    api.verify(api.parse(src, "ok.pto"), ASCEND950)
    with pytest.raises(PtocError):
        api.verify(api.parse(src, "ok.pto"), A2A3)
