"""Ops the public pto-isa pages and headers define, which earlier sessions rejected as "no semantics"
(issue 12, item 1): TCMP, TCMPS, TSEL, TSELS.

The predicate packing (dialects/pto.py ``CompareOp``): bit ``j % 8`` of byte ``j // 8`` of the mask's
row ``i`` is the predicate of element (i, j), bits past the valid columns 0 -- as pto-isa's NPU
headers (include/pto/npu/{a2a3,a5}/TCmp.hpp, TSel.hpp) and their tests' goldens
(tests/npu/{a2a3,a5}/src/st/testcase/{tcmp,tsel}/gen_data.py) have it.  The oracles below are
written from that text with Python numbers and loops (no code of ptoc's); the golden model and both
backends (a2a3 executor, ascend950 executor) are compared with them bit for bit, in every element
type each target's page allows, all six cmpModes, NaN / ±0 / ±inf, valid regions smaller than the
tile and odd valid columns.  ``-m full`` runs every (target, op, dtype, mode); CI runs every
(target, op, dtype) with one mode each and every mode on f32 and i16.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import a2a3_harness as H
import test_diff_ascend950 as D5
from test_reference_props import NP, SIZE, is_float, py, values
from pto_compiler import api, pipeline
from pto_compiler.diagnostics import PtocError
from pto_compiler.dialects import pto
from pto_compiler.runtime import reference as golden

MODES = ("EQ", "NE", "LT", "GT", "GE", "LE")
PYCMP = {"EQ": lambda a, b: a == b, "NE": lambda a, b: a != b, "LT": lambda a, b: a < b,
         "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b, "LE": lambda a, b: a <= b}
"""Python's comparisons: IEEE on floats (a NaN operand: only != holds; -0.0 == 0.0)."""
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
TARGETS = ("a2a3", "ascend950")


def packed_rows(x, y, mode, dt, R, C, nbytes):
    """The page's packing of ``x cmpMode y`` over R x C (y a Python number: TCMPS), nbytes a row."""
    out = np.zeros((R, nbytes), np.uint8)
    for i in range(R):
        for j in range(C):
            other = y if not isinstance(y, np.ndarray) else py(y[i, j], dt)
            if PYCMP[mode](py(x[i, j], dt), other):
                out[i, j // 8] |= 1 << (j % 8)
    return out


def selected(mask_bytes, a, b, R, C):
    """dst's bits: a[i, j]'s where bit j % 8 of mask byte (i, j // 8) is 1, else b's (an array, or a
    0-d array: TSELS's scalar)."""
    ua, ub = a.view(UINT[a.itemsize]), np.asarray(b).view(UINT[a.itemsize])
    out = np.zeros((R, C), ua.dtype)
    for i in range(R):
        for j in range(C):
            on = (int(mask_bytes[i, j // 8]) >> (j % 8)) & 1
            out[i, j] = ua[i, j] if on else (ub[i, j] if ub.ndim else ub)
    return out


def tile(rows, cols, dt, valid):
    return f"!pto.tile<{rows}x{cols}x{dt}, valid={valid[0]}x{valid[1]}>"


def mask_cols(mdt):
    """Columns of a 32-byte-row mask tile of element type mdt."""
    return 32 // SIZE[mdt]


def cmp_kernel(op, dt, mode, rows, cols, R, C, mdt, mvc):
    ts, tm = tile(rows, cols, dt, (R, C)), tile(rows, mask_cols(mdt) * 2, mdt, (R, mvc))
    if op == "tcmp":
        return (f"func.func @k(%a: {ts}, %b: {ts}) -> {tm} {{\n"
                f"  %d = pto.tcmp %a, %b {{cmpMode = #pto.cmp<{mode}>}} : ({ts}, {ts}) -> {tm}\n"
                f"  func.return %d : {tm}\n}}\n")
    return (f"func.func @k(%a: {ts}, %s: {dt}) -> {tm} {{\n"
            f"  %d = pto.tcmps %a, %s {{cmpMode = #pto.cmp<{mode}>}} : ({ts}, {dt}) -> {tm}\n"
            f"  func.return %d : {tm}\n}}\n")


def sel_kernel(op, dt, rows, cols, R, C, mdt):
    ts, tm = tile(rows, cols, dt, (R, C)), tile(rows, mask_cols(mdt) * 2, mdt, (R, mask_cols(mdt) * 2))
    if op == "tsel":
        return (f"func.func @k(%m: {tm}, %a: {ts}, %b: {ts}) -> {ts} {{\n"
                f"  %d = pto.tsel %m, %a, %b : ({tm}, {ts}, {ts}) -> {ts}\n  func.return %d : {ts}\n}}\n")
    return (f"func.func @k(%m: {tm}, %a: {ts}, %s: {dt}) -> {ts} {{\n"
            f"  %d = pto.tsels %m, %a, %s : ({tm}, {ts}, {dt}) -> {ts}\n  func.return %d : {ts}\n}}\n")


def shape(dt):
    """A 12-row tile two 32-byte blocks wide, valid 9 x (cols - 3): odd valid columns."""
    cols = 64 // SIZE[dt]
    return 12, cols, 9, cols - 3


def cmp_inputs(dt, rows, cols, seed):
    rng = np.random.default_rng(seed)
    x, y = values(rng, dt, (rows, cols), 0.3), values(rng, dt, (rows, cols), 0.3)
    y[:, ::3] = x[:, ::3]  # equal pairs, so EQ / GE / LE hold somewhere
    y[1, 1::3] = -x[1, 1::3]  # ±0 against ∓0 among the floats
    return x, y


def scalar_for(dt, seed):
    if not is_float(dt):
        return int(np.random.default_rng(seed).integers(0, 20))
    return (0.5, -0.0, math.nan, math.inf)[seed % 4]


def run(target, text, inputs, scalars=None):
    """The backend's output ``result0`` (``golden`` runs the golden model instead)."""
    if target == "golden":
        return golden.evaluate(api.parse(text), {**inputs, **(scalars or {})})["result0"]
    m, prog = H.compile_text(text) if target == "a2a3" else (lambda t: (t[0], t[2]))(D5.compile_text(text))
    res = pipeline.run_program(prog, pipeline.gm_inputs(inputs), scalars or {}, stats=False)
    assert not res.findings, res.findings
    return np.asarray(res.outputs["result0"])


def cmp_case(target, op, dt, mode, mdt="ui8", full_mask=False):
    rows, cols, R, C = shape(dt)
    esize = SIZE[mdt]
    mvc = mask_cols(mdt) * 2 if full_mask else -(-C // (8 * esize))
    x, y = cmp_inputs(dt, R, C, hash((op, dt, mode)) % 997)
    text = cmp_kernel(op, dt, mode, rows, cols, R, C, mdt, mvc)
    if op == "tcmp":
        got = run(target, text, {"a": x, "b": y})
        want = packed_rows(x, y, mode, dt, R, C, mvc * esize)
    else:
        s = scalar_for(dt, hash((dt, mode)) % 7)
        got = run(target, text, {"a": x}, {"s": s})
        want = packed_rows(x, py(NP[dt](s), dt), mode, dt, R, C, mvc * esize)
    got_bytes = np.ascontiguousarray(np.asarray(got)[:R, :mvc]).view(np.uint8)
    assert np.array_equal(got_bytes, want), (got_bytes, want)


def sel_case(target, op, dt, mdt="ui8"):
    rows, cols, R, C = shape(dt)
    rng = np.random.default_rng(hash((op, dt)) % 991)
    a, b = values(rng, dt, (R, C), 0.3), values(rng, dt, (R, C), 0.3)
    m = rng.integers(0, 256, size=(R, 64), dtype=np.uint8).view(NP[mdt])
    text = sel_kernel(op, dt, rows, cols, R, C, mdt)
    if op == "tsel":
        got = run(target, text, {"m": m, "a": a, "b": b})
        other = b
    else:
        s = scalar_for(dt, 3)
        got = run(target, text, {"m": m, "a": a}, {"s": s})
        other = np.asarray(NP[dt](s))
    got = np.ascontiguousarray(np.asarray(got)[:R, :C])
    want = selected(np.ascontiguousarray(m).view(np.uint8), a, other, R, C)
    assert np.array_equal(got.view(want.dtype), want)


def dtypes(op, target):
    return sorted(pto.TILE_OPS[f"pto.{op}"].DTYPES[target])


def modes_of(op, dt, target):
    return ("EQ",) if (target == "a2a3" and dt == "i32") else MODES


def cmp_cases(full: bool):
    for target in TARGETS:
        for op in ("tcmp", "tcmps"):
            for dt in dtypes(op, target):
                modes = modes_of(op, dt, target)
                if full or dt in ("f32", "i16"):
                    yield from ((target, op, dt, m) for m in modes)
                else:
                    yield target, op, dt, modes[hash((op, dt)) % len(modes)]


def sel_cases():
    for target in TARGETS:
        for op in ("tsel", "tsels"):
            yield from ((target, op, dt) for dt in dtypes(op, target))


# ---- golden model -----------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", sorted(NP))
@pytest.mark.parametrize("op", ["tcmp", "tcmps"])
def test_golden_compare_packs_the_pages_bits(op, dt, mode):
    cmp_case("golden", op, dt, mode)


@pytest.mark.parametrize("mdt", ["i8", "ui32"])
def test_golden_compare_zero_fills_dst_valid_bytes_past_the_bits(mdt):
    """dst's valid region wider than the bits (a full mask row; a u32 predicate tile as on A5)."""
    cmp_case("golden", "tcmp", "f32", "GT", mdt=mdt, full_mask=True)


@pytest.mark.parametrize("dt", sorted(NP))
@pytest.mark.parametrize("op", ["tsel", "tsels"])
def test_golden_select_takes_the_masked_source(op, dt):
    sel_case("golden", op, dt)


@pytest.mark.parametrize("C", [1, 7, 8, 9, 63, 64])
def test_golden_compare_edge_columns(C):
    """One column, a byte's worth and one either side, a whole tile row."""
    text = cmp_kernel("tcmp", "f32", "LT", 2, 64, 2, C, "ui8", -(-C // 8))
    x, y = cmp_inputs("f32", 2, C, C)
    got = run("golden", text, {"a": x, "b": y})
    assert np.array_equal(got[:2, :-(-C // 8)], packed_rows(x, y, "LT", "f32", 2, C, -(-C // 8)))


# ---- both backends ------------------------------------------------------------------------------

@pytest.mark.parametrize("target, op, dt, mode", list(cmp_cases(False)))
def test_backends_compare(target, op, dt, mode):
    cmp_case(target, op, dt, mode)


@pytest.mark.full
@pytest.mark.parametrize("target, op, dt, mode", [c for c in cmp_cases(True) if c not in set(cmp_cases(False))])
def test_backends_compare_every_mode(target, op, dt, mode):
    cmp_case(target, op, dt, mode)


@pytest.mark.parametrize("target, mdt", [("a2a3", "i8"), ("ascend950", "ui32"), ("ascend950", "i8")])
def test_backends_compare_zero_fill_the_predicate_tiles_valid_bytes(target, mdt):
    cmp_case(target, "tcmp", "f16", "NE", mdt=mdt, full_mask=True)


@pytest.mark.parametrize("target, op, dt", list(sel_cases()))
def test_backends_select(target, op, dt):
    sel_case(target, op, dt)


@pytest.mark.parametrize("target", TARGETS)
def test_backends_select_with_a_u32_mask(target):
    sel_case(target, "tsel", "f32", mdt="ui32")


@pytest.mark.parametrize("target", TARGETS)
def test_tcmp_then_tsel_is_where(target):
    """The composition the pages intend: tsel(tcmp(a, b), a, b) = max-like where(a > b, a, b)."""
    t, tm = "!pto.tile<4x40xf32, valid=4x37>", "!pto.tile<4x32xui8, valid=4x5>"
    text = (f"func.func @k(%a: {t}, %b: {t}) -> {t} {{\n"
            f"  %m = pto.tcmp %a, %b {{cmpMode = #pto.cmp<GT>}} : ({t}, {t}) -> {tm}\n"
            f"  %d = pto.tsel %m, %a, %b : ({tm}, {t}, {t}) -> {t}\n  func.return %d : {t}\n}}\n")
    x, y = cmp_inputs("f32", 4, 37, 5)
    got = run(target, text, {"a": x, "b": y})[:4, :37]
    want = np.array([[x[i, j] if py(x[i, j], "f32") > py(y[i, j], "f32") else y[i, j] for j in range(37)]
                     for i in range(4)], np.float32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


# ---- what the verifier rejects, located ---------------------------------------------------------

def rejected(text, target):
    with pytest.raises(PtocError) as e:
        api.compile(api.parse(text, "k.pto"), target)
    return str(e.value)


def test_a2a3_i32_compares_only_with_eq():
    text = cmp_kernel("tcmp", "i32", "LT", 8, 16, 8, 16, "ui8", 2)
    err = rejected(text, "a2a3")
    assert "k.pto:2:8: error: 'pto.tcmp' op i32 compares only with EQ on A2/A3 (cmpMode LT)" in err
    api.compile(api.parse(text, "k.pto"), "ascend950")  # A5 compares i32 in every mode


@pytest.mark.parametrize("target, mdt, ok", [("a2a3", "ui8", True), ("a2a3", "ui32", False),
                                             ("ascend950", "ui32", True), ("ascend950", "ui16", False)])
def test_predicate_element_type_per_target(target, mdt, ok):
    text = cmp_kernel("tcmp", "f32", "GT", 8, 16, 8, 16, mdt, mask_cols(mdt))
    if ok:
        api.compile(api.parse(text, "k.pto"), target)
    else:
        assert "k.pto:2:8: error: 'pto.tcmp' op" in rejected(text, target)


def test_dst_too_narrow_for_the_bits_is_located():
    text = cmp_kernel("tcmp", "f32", "GT", 8, 64, 8, 64, "ui8", 7)
    assert ("k.pto:2:8: error: 'pto.tcmp' op dst's 7 valid columns of ui8 hold fewer than the 64 predicate "
            "bits of a row") in rejected(text, "a2a3")


def test_unknown_cmp_mode_is_located():
    text = cmp_kernel("tcmp", "f32", "GT", 8, 16, 8, 16, "ui8", 2).replace("#pto.cmp<GT>", "#pto.cmp<XX>")
    assert "k.pto:2:8: error: 'pto.tcmp' op cmpMode must be one of EQ, NE, LT, GT, GE, LE" in rejected(text, "a2a3")


def test_tsel_i8_is_a5_only():
    """The corpus's issue487 file: PTOAS accepts tsel on i8 for A5 and rejects it for A3 (TSEL.md's lists)."""
    text = sel_kernel("tsel", "i8", 2, 128, 2, 128, "i8")
    api.compile(api.parse(text, "k.pto"), "ascend950")
    assert "expects A2/A3 tsel src0, src1, and dst element type to be i16/i32/f16/f32 (got i8)" in rejected(text, "a2a3")


# ---- TPARTARGMAX / TPARTARGMIN ---------------------------------------------------------------------
# TPARTARGMAX.md / TPARTARGMIN.md (pto-isa @3186c38): where both sources are valid, src0's value and
# index if src0Val > src1Val (min: <), else src1's (ties to src1; a NaN satisfies neither of the
# page's cases: src1, as the CPU simulator's if/else); where only one is valid, that one's.

PART_SHAPES = {  # pattern -> (src0 valid, src1 valid) for a dst valid region of R x C
    "src1-smaller": lambda R, C: ((R, C), (R - 2, C - 5)),
    "src0-smaller-cols": lambda R, C: ((R, C - 4), (R, C)),
    "src0-smaller-rows": lambda R, C: ((R - 3, C), (R, C)),
    "equal": lambda R, C: ((R, C), (R, C)),
}
PART_INDEX = {"a2a3": {"f16": ("i16", "ui16", "i32", "ui32"), "f32": ("i32", "ui32")},
              "ascend950": {"f16": ("i16", "ui16", "i32", "ui32"), "f32": ("i16", "ui16", "i32", "ui32")}}


def part_oracle(op, vdt, x, y, ix, iy):
    """(values' bits, indices) over dst's valid region, element by element."""
    R, C = max(x.shape[0], y.shape[0]), max(x.shape[1], y.shape[1])
    ux, uy = x.view(UINT[x.itemsize]), y.view(UINT[y.itemsize])
    vals, idx = np.zeros((R, C), ux.dtype), np.zeros((R, C), ix.dtype)
    for i in range(R):
        for j in range(C):
            in_x, in_y = i < x.shape[0] and j < x.shape[1], i < y.shape[0] and j < y.shape[1]
            if in_x and in_y:
                a, b = py(x[i, j], vdt), py(y[i, j], vdt)
                take_x = a > b if op == "tpartargmax" else a < b
            else:
                take_x = in_x
            vals[i, j], idx[i, j] = (ux[i, j], ix[i, j]) if take_x else (uy[i, j], iy[i, j])
    return vals, idx


def part_kernel(op, vdt, idt, rows, cols, v0, v1, vd):
    t = [tile(rows, cols, d, v) for d, v in ((vdt, v0), (vdt, v1), (idt, v0), (idt, v1), (vdt, vd), (idt, vd))]
    return (f"func.func @k(%a: {t[0]}, %b: {t[1]}, %i: {t[2]}, %j: {t[3]}) -> ({t[4]}, {t[5]}) {{\n"
            f"  %v, %x = pto.{op} %a, %b, %i, %j : ({', '.join(t[:4])}) -> ({t[4]}, {t[5]})\n"
            f"  func.return %v, %x : {t[4]}, {t[5]}\n}}\n")


def part_case(target, op, vdt, idt, pattern):
    R, C = 9, 29
    v0, v1 = PART_SHAPES[pattern](R, C)
    rng = np.random.default_rng(hash((op, vdt, idt, pattern)) % 983)
    x, y = values(rng, vdt, v0, 0.3), values(rng, vdt, v1, 0.3)
    n = min(v0[0], v1[0]), min(v0[1], v1[1])
    y[:n[0]:2, :n[1]] = x[:n[0]:2, :n[1]]  # ties (and -0 against +0 where x holds a zero)
    y[1, :n[1]:3] = -x[1, :n[1]:3]
    ix, iy = values(rng, idt, v0, 0.5), values(rng, idt, v1, 0.5)
    text = part_kernel(op, vdt, idt, 12, 32, v0, v1, (R, C))
    inputs = {"a": x, "b": y, "i": ix, "j": iy}
    if target == "golden":
        out = golden.evaluate(api.parse(text), inputs)
        got_v, got_i = out["result0"], out["result1"]
    else:
        m, prog = H.compile_text(text) if target == "a2a3" else (lambda t: (t[0], t[2]))(D5.compile_text(text))
        res = pipeline.run_program(prog, pipeline.gm_inputs(inputs), {}, stats=False)
        assert not res.findings, res.findings
        got_v, got_i = res.outputs["result0"], res.outputs["result1"]
    want_v, want_i = part_oracle(op, vdt, x, y, ix, iy)
    got_v = np.ascontiguousarray(np.asarray(got_v)[:R, :C])
    assert np.array_equal(got_v.view(want_v.dtype), want_v)
    assert np.array_equal(np.asarray(got_i)[:R, :C], want_i)


def part_cases(full: bool):
    for target in TARGETS:
        for op in ("tpartargmax", "tpartargmin"):
            for vdt, idts in PART_INDEX[target].items():
                for idt in idts:
                    patterns = sorted(PART_SHAPES)
                    yield from ((target, op, vdt, idt, p) for p in patterns if full or
                                p == patterns[hash((target, op, vdt, idt)) % len(patterns)])


@pytest.mark.parametrize("pattern", sorted(PART_SHAPES))
@pytest.mark.parametrize("vdt, idt", [("f16", "i16"), ("f16", "ui32"), ("f32", "i32"), ("f32", "ui16")])
@pytest.mark.parametrize("op", ["tpartargmax", "tpartargmin"])
def test_golden_partarg_matches_the_page(op, vdt, idt, pattern):
    part_case("golden", op, vdt, idt, pattern)


@pytest.mark.parametrize("target, op, vdt, idt, pattern", list(part_cases(False)))
def test_backends_partarg(target, op, vdt, idt, pattern):
    part_case(target, op, vdt, idt, pattern)


@pytest.mark.full
@pytest.mark.parametrize("target, op, vdt, idt, pattern",
                         [c for c in part_cases(True) if c not in set(part_cases(False))])
def test_backends_partarg_every_pattern(target, op, vdt, idt, pattern):
    part_case(target, op, vdt, idt, pattern)


def test_partarg_f32_values_take_32_bit_indices_on_a2a3():
    text = part_kernel("tpartargmax", "f32", "i16", 8, 32, (8, 32), (8, 32), (8, 32))
    assert ("k.pto:2:12: error: 'pto.tpartargmax' op a f32 value takes i32/ui32 indices on A2/A3 "
            "(TPARTARGMAX.md), got i16") in rejected(text, "a2a3")
    api.compile(api.parse(text, "k.pto"), "ascend950")


@pytest.mark.parametrize("v0, v1, why", [
    ((8, 20), (6, 32), "needs one source's valid region equal to dst's and the other's no larger"),
    ((8, 32), (8, 32), "src0Val and src0Idx must have the same valid shape")])
def test_partarg_valid_region_rules_are_located(v0, v1, why):
    text = part_kernel("tpartargmin", "f16", "i32", 8, 32, v0, v1, (8, 32))
    if "Idx" in why:
        text = text.replace("%i: !pto.tile<8x32xi32, valid=8x32>", "%i: !pto.tile<8x32xi32, valid=8x16>")
        text = text.replace("(!pto.tile<8x32xf16, valid=8x32>, !pto.tile<8x32xf16, valid=8x32>, "
                            "!pto.tile<8x32xi32, valid=8x32>", "(!pto.tile<8x32xf16, valid=8x32>, "
                            "!pto.tile<8x32xf16, valid=8x32>, !pto.tile<8x32xi32, valid=8x16>")
    assert f"k.pto:2:12: error: 'pto.tpartargmin' op {why}" in rejected(text, "ascend950")


# ---- still rejected, with the public source's words ------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_buffer_id_sync_is_rejected_with_the_pages_contradiction(target):
    """get_buf/rls_buf: get-buf.md says a first acquire both succeeds and is illegal."""
    text = "func.func @k() {\n  pto.get_buf[#pto.pipe_event_type<TLOAD>, 0]\n  return\n}\n"
    err = rejected(text, target)
    assert f"k.pto:2:3: error: 'pto.get_buf' op has no {target} lowering: no semantics: A5 buffer-id sync" in err
    assert "get-buf.md contradicts itself on a first acquire" in err
