"""TGATHER (index and mask forms) and TSCATTER (issue 12, item 1).

The golden model against an oracle from the page's words (TGATHER.md): index form ``dst[i, j] =
src0[indices[i, j]]``, the index counting elements of src's tile storage row by row (the A2A3
header's reading: indices times sizeof(T) from src's base); mask form: the elements of each valid
row that pto-isa's MaskPattern selects (bits read right to left: P0101 the first of every two, P1000
the fourth of every four, P1111 all), rows in turn, packed from dst's first element.  Both backends
(the scalar unit on both) run the same gathers; the differential matrices cover dtypes and rows.
TSCATTER (pto_isa.md §3 "scatter by flattened per-element offsets"): dst's whole tile zeroed, then
``dst[indices[i, j]] = src[i, j]`` in row-major order, dst's storage counted element by element, the
last writer winning (TScatter.hpp's loop).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import a2a3_harness as H
import test_diff_a2a3 as DA
import test_diff_ascend950 as D5
from test_reference_props import PROFILE, SIZE, T, check, py, run, tile_case, values
from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.dialects import pto
from pto_compiler.runtime import reference as R
from pto_compiler.targets import A2A3, ASCEND950

PATTERNS = {"P0101": [0], "P1010": [1], "P0001": [0], "P0010": [1], "P0100": [2], "P1000": [3], "P1111": [0]}
PERIOD = {"P0101": 2, "P1010": 2, "P0001": 4, "P0010": 4, "P0100": 4, "P1000": 4, "P1111": 1}
DTYPES = ("f16", "f32", "bf16", "i16", "i32", "ui16", "ui32")


@PROFILE
@given(tile_case(dtypes=DTYPES), st.data())
def test_index_form_matches_the_page(case, data):
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), special)
    # indices into src's valid region, as positions of its rows x cols storage
    k = rng.integers(0, vr, size=(vr, vc)) * cols + rng.integers(0, vc, size=(vr, vc))
    t, it = T(rows, cols, dt, (vr, vc)), T(rows, cols, "i32", (vr, vc))
    got = run("tgather", [t, it], t, [x, k.astype(np.int32)])
    check(got, [[py(x[k[i, j] // cols, k[i, j] % cols], dt) for j in range(vc)] for i in range(vr)], dt)


@PROFILE
@given(tile_case(dtypes=DTYPES), st.sampled_from(sorted(PATTERNS)))
def test_mask_form_matches_the_page(case, pattern):
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), special)
    want = [py(x[i, j], dt) for i in range(vr) for j in range(vc) if j % PERIOD[pattern] == PATTERNS[pattern][0]]
    t, d = T(rows, cols, dt, (vr, vc)), T(1, len(want) + 1, dt)
    text = (f"func.func @k(%a: {t}) -> {d} {{\n  %d = pto.tgather %a {{maskPattern = #pto.mask_pattern<{pattern}>}}"
            f" : {t} -> {d}\n  return %d : {d}\n}}\n")
    got = R.evaluate(api.parse(text), {"a": x})["result0"]
    check(got[:, :len(want)], [want], dt)
    assert got[0, len(want)] == 0  # past the selected elements: untouched


CASES = [("index", dt) for dt in ("f32", "f16", "i32")] + [(f"mask-{p}", dt) for p in ("P0101", "P1000", "P1111")
                                                           for dt in ("f32", "f16")]


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("variant, dt", CASES)
@pytest.mark.parametrize("R", [1, 8, 9, 16])
def test_backends_give_the_golden_bits(target, variant, dt, R):
    """Odd valid columns, valid < tile; NaN/±0/±inf among the gathered values."""
    cols = 64 // DA.ESIZE[dt]
    case = ("tgather", variant, dt, R, cols, cols - 3)
    text = DA.kernel(*case)
    given = DA.domain_inputs(case, {"a": values(np.random.default_rng(R), dt, (R, cols - 3), 0.4)})
    cmp, findings, _ = (H.check if target == "a2a3" else D5.check)(text, 0, given)
    assert cmp and not findings
    assert all(c.ok for c in cmp), [c.line() for c in cmp]


@PROFILE
@given(tile_case(dtypes=DTYPES + ("i8", "ui8")))
def test_scatter_matches_the_page(case):
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), special)
    k = rng.integers(0, min(rows * cols, 6), size=(vr, vc)) if rng.random() < 0.5 else \
        rng.integers(0, rows * cols, size=(vr, vc))  # many repeats, or spread out
    idt = "i32" if SIZE[dt] == 4 else "i16"
    t, it, d = T(rows, cols, dt, (vr, vc)), T(rows, cols, idt, (vr, vc)), T(rows, cols, dt)
    got = run("tscatter", [t, it], d, [x, k.astype(np.int32 if idt == "i32" else np.int16)])
    want = [0] * (rows * cols)
    for i in range(vr):
        for j in range(vc):
            want[int(k[i, j])] = py(x[i, j], dt)
    check(got, [want[r * cols:(r + 1) * cols] for r in range(rows)], dt)


def test_an_index_outside_src_is_a_located_error():
    t, it = T(2, 16, "f32"), T(2, 16, "i32")
    text = f"func.func @k(%a: {t}, %b: {it}) -> {t} {{\n  %d = pto.tgather %a, %b : ({t}, {it}) -> {t}\n  return %d : {t}\n}}\n"
    k = np.zeros((2, 16), np.int32)
    k[1, 3] = 32
    with pytest.raises(PtocError, match=r"an index outside src's 2x16 tile \(0\.\.31\)") as e:
        R.evaluate(api.parse(text, "k.pto"), {"a": np.ones((2, 16), np.float32), "b": k})
    assert "k.pto:2:8" in str(e.value)


@pytest.mark.parametrize("text, target, message", [
    ("%d = pto.tgather %a, %i : ({t}, {i16}) -> {t}", A2A3, "A2/A3 tgather indices must be i32 or ui32"),
    ("%d = pto.tgather %a {{maskPattern = #pto.mask_pattern<P0110>}} : {t} -> {t}", ASCEND950, "needs maskPattern"),
    ("%d = pto.tgather %a, %i : ({t}, {f32}) -> {t}", ASCEND950, "indices must be i16, ui16, i32 or ui32"),
])
def test_verifier_rules(text, target, message):
    t, i16, f32 = T(2, 16, "f32"), T(2, 16, "i16"), T(2, 16, "f32")
    body = text.format(t=t, i16=i16, f32=f32)
    args = "%a: " + t + (", %i: " + (i16 if "i16>" in body.split("->")[0] else f32) if "%i" in body else "")
    src = f"func.func @k({args}) -> {t} {{\n  {body}\n  return %d : {t}\n}}\n"
    with pytest.raises(PtocError, match=message) as e:
        api.compile(api.parse(src, "k.pto"), target)
    assert "k.pto:2:8" in str(e.value)


def test_compare_form_is_located_as_not_modelled():
    """ins(src, k, tmp) outs(dst, cdst): parsed and verified (the A2/A3 dtype rule), rejected with the
    reason (the page's prose, two implementations that disagree) by both lowerings and the golden model."""
    f16, ui8, i32 = ("!pto.tile_buf<vec, 1x32x" + t + ">" for t in ("f16", "ui8", "i32"))
    text = (f"func.func @k() {{\n  %s = pto.alloc_tile : {f16}\n  %t = pto.alloc_tile : {ui8}\n"
            f"  %d = pto.alloc_tile : {i32}\n  %c = pto.alloc_tile : {i32}\n  %k = arith.constant 0.0 : f16\n"
            f"  pto.tgather ins(%s, %k, %t : {f16}, f16, {ui8}) outs(%d, %c : {i32}, {i32}) {{offset = 7 : i32}}\n"
            "  return\n}\n")
    for run, said in ((lambda m: api.compile(m, A2A3), "has no a2a3 lowering: "), (lambda m: api.reference(m, {}), "")):
        with pytest.raises(PtocError) as e:
            run(api.parse(text, "k.pto"))
        assert f"k.pto:7:3: error: 'pto.tgather' op {said}{pto.GATHER_COMPARE_NO_SEMANTICS}" in str(e.value)


def test_scatter_rules_are_located():
    t, i16 = T(2, 16, "f32"), T(2, 16, "i16")
    text = f"func.func @k(%a: {t}, %b: {i16}) -> {t} {{\n  %d = pto.tscatter %a, %b : ({t}, {i16}) -> {t}\n  return %d : {t}\n}}\n"
    with pytest.raises(PtocError, match="f32 data takes 32-bit indices, got i16") as e:
        api.compile(api.parse(text, "k.pto"), A2A3)
    assert "k.pto:2:8" in str(e.value)
    i32 = T(2, 16, "i32")
    text = f"func.func @k(%a: {t}, %b: {i32}) -> {t} {{\n  %d = pto.tscatter %a, %b : ({t}, {i32}) -> {t}\n  return %d : {t}\n}}\n"
    k = np.zeros((2, 16), np.int32)
    k[0, 0] = -1
    with pytest.raises(PtocError, match=r"an index outside dst's 2x16 tile \(0\.\.31\)"):
        R.evaluate(api.parse(text, "k.pto"), {"a": np.ones((2, 16), np.float32), "b": k})


# ---- TGATHERB (TGATHERB.md: dst[i, j] = *(srcBase + offset[i, j]), uint32 byte offsets) ------------------
# The page wins over the A2A3 header and the CPU simulator, which read one offset per 32-byte block of
# dst (vgatherb): ISA pages first, digests next (pto_isa.md §3 "gather by byte offsets"), implementations last.

B_DTYPES = ("f16", "f32", "bf16", "i8", "ui8", "i16", "i32", "ui16", "ui32")


@PROFILE
@given(tile_case(dtypes=B_DTYPES))
def test_tgatherb_reads_a_dst_element_at_each_byte_offset(case):
    """An oracle on the tile's bytes: the e bytes at srcBase + offset, offsets anywhere in src's tile
    storage (inside and past the valid region) that are multiples of e."""
    dt, rows, cols, vr, vc, rng, special = case
    e = SIZE[dt]
    x = values(rng, dt, (vr, vc), special)
    storage = np.zeros((rows, cols), x.dtype)
    storage[:vr, :vc] = x  # the golden model's tile outside the loaded region holds zeros
    off = (rng.integers(0, rows * cols, size=(vr, vc)) * e).astype(np.uint32)
    t, ot = T(rows, cols, dt, (vr, vc)), T(rows, cols, "ui32", (vr, vc))
    got = run("tgatherb", [t, ot], t, [x, off])
    raw = storage.tobytes()
    want = np.frombuffer(b"".join(raw[o:o + e] for o in off.reshape(-1).tolist()), x.dtype).reshape(vr, vc)
    check(got, [[py(want[i, j], dt) for j in range(vc)] for i in range(vr)], dt)


def test_tgatherb_reads_dst_type_from_src_bytes():
    """The element read is dst's: an i32 dst over an f32 src gives the float's bits."""
    x = np.array([[1.0, -2.0, 0.5, -0.0]], np.float32)
    t, ot, dt_ = T(1, 8, "f32", (1, 4)), T(1, 8, "ui32", (1, 4)), T(1, 8, "i32", (1, 4))
    got = run("tgatherb", [t, ot], dt_, [x, np.array([[12, 8, 4, 0]], np.uint32)])
    assert got[0, :4].tolist() == x[0, ::-1].view(np.int32).tolist()


@pytest.mark.parametrize("off, message", [(2, "a byte offset not a multiple of 4"),
                                          (128, "a byte offset past src's 128-byte tile")])
def test_tgatherb_offsets_the_page_leaves_open_are_located_errors(off, message):
    t, ot = T(2, 16, "f32"), T(2, 16, "ui32")
    text = f"func.func @k(%a: {t}, %b: {ot}) -> {t} {{\n  %d = pto.tgatherb %a, %b : ({t}, {ot}) -> {t}\n  return %d : {t}\n}}\n"
    k = np.zeros((2, 16), np.uint32)
    k[1, 3] = off
    with pytest.raises(PtocError, match=message) as e:
        R.evaluate(api.parse(text, "k.pto"), {"a": np.ones((2, 16), np.float32), "b": k})
    assert "k.pto:2:8" in str(e.value)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("dt", ["f32", "f16", "i8", "ui32"])
@pytest.mark.parametrize("R", [1, 9, 16])
def test_tgatherb_backends_match_numpy(target, dt, R):
    """Both backends (the scalar unit): odd valid cols, valid < tile, NaN/±0/±inf among the values;
    y == NumPy's gather of src's elements at offset / e."""
    cols = 64 // DA.ESIZE[dt]
    case = ("tgatherb", "", dt, R, cols, cols - 3)
    text = DA.kernel(*case)
    x = values(np.random.default_rng(R), dt, (R, cols - 3), 0.4)
    given = DA.domain_inputs(case, {"a": x})
    cmp, findings, _ = (H.check if target == "a2a3" else D5.check)(text, 0, given)
    assert cmp and not findings
    assert all(c.ok for c in cmp), [c.line() for c in cmp]
    k = given["b"].astype(np.int64) // DA.ESIZE[dt]
    want = x[k // cols, k % cols]
    got = api.reference(api.parse(text), given, target=target)["result0"]
    u = f"u{SIZE[dt]}"
    np.testing.assert_array_equal(got[:R, :cols - 3].view(u), want.view(u))


def test_tgatherb_offsets_must_be_4_byte_integers():
    t, ft = T(2, 16, "f32"), T(2, 16, "f32")
    text = f"func.func @k(%a: {t}, %b: {ft}) -> {t} {{\n  %d = pto.tgatherb %a, %b : ({t}, {ft}) -> {t}\n  return %d : {t}\n}}\n"
    with pytest.raises(PtocError, match=r"offsets must be i32 or ui32 \(uint32 byte offsets\), got f32") as e:
        api.verify(api.parse(text, "k.pto"), A2A3)
    assert "k.pto:2:8" in str(e.value)
