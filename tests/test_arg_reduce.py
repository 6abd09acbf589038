"""TROWARGMAX/TROWARGMIN/TCOLARGMAX/TCOLARGMIN (issue 12, item 1).

The golden model is checked against an oracle written from the pages' words, one element at a
time with Python numbers: TROWARGMAX.md "the column index of the maximum element for each row",
TCOLARGMAX.md "the row index of the maximum element for each column", with the order of
seeds/002 (vcmin/vcmax): of equal extremes the first index, a NaN beats every number (the first
NaN's index), and -0 < +0.  Then both backends run inputs full of ties, NaN, ±0 and ±inf on edge
shapes and must give the golden model's indices (the differential matrices, tests/test_diff_*.py,
cover every dtype and row count).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given

import a2a3_harness as H
import test_diff_a2a3 as DA
import test_diff_ascend950 as D5
from test_reference_props import NP, PROFILE, T, is_float, py, run, tile_case, values
from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.runtime import vf_executor as vx
from pto_compiler.targets import A2A3, ASCEND950


def better(x, best, is_max: bool) -> bool:
    """x replaces the running extreme ``best`` (strictly better: ties keep the first)."""
    if isinstance(x, float):
        if math.isnan(best):
            return False
        if math.isnan(x):
            return True
        if x == 0 and best == 0:
            return math.copysign(1, x) > math.copysign(1, best) if is_max else \
                math.copysign(1, x) < math.copysign(1, best)
    return x > best if is_max else x < best


def o_arg(xs, is_max: bool) -> int:
    k = 0
    for j in range(1, len(xs)):
        if better(xs[j], xs[k], is_max):
            k = j
    return k


ARG_DTYPES = ("f16", "f32", "i8", "i16", "i32", "ui8", "ui16", "ui32")


@PROFILE
@given(tile_case(dtypes=ARG_DTYPES))
def test_golden_matches_the_pages(case):
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), special)
    if rng.random() < 0.5:  # ties: few distinct values
        x = x.ravel()[rng.integers(0, max(1, x.size // 4 + 1), size=x.size)].reshape(vr, vc)
    t = T(rows, cols, dt, (vr, vc))
    xs = [[py(x[i, j], dt) for j in range(vc)] for i in range(vr)]
    for op, is_max in (("trowargmax", True), ("trowargmin", False)):
        got = run(op, [t], T(rows, 1, "i32", (vr, 1), col=True), [x])
        assert [int(v) for v in got[:vr, 0]] == [o_arg(r, is_max) for r in xs], op
    for op, is_max in (("tcolargmax", True), ("tcolargmin", False)):
        got = run(op, [t, t], T(1, cols, "ui32", (1, vc)), [x, x])
        assert [int(v) for v in got[0, :vc]] == [o_arg([r[j] for r in xs], is_max) for j in range(vc)], op


def _tied(dt, shape, seed):
    """Elements from a small pool: many ties; floats mostly NaN, ±0, ±inf, ±1."""
    rng = np.random.default_rng(seed)
    if is_float(dt):
        pool = np.array([math.nan, 0.0, -0.0, math.inf, -math.inf, 1.0, -1.0, 2.0], np.float32)
        x = rng.choice(pool, size=shape, p=[0.05, 0.2, 0.2, 0.05, 0.05, 0.2, 0.2, 0.05])
    else:
        info = np.iinfo(NP[dt])
        x = rng.choice(np.array([info.min, info.max, 0, 1, 2], np.int64), size=shape)
    return x.astype(NP[dt])


CASES = [(op, v, dt) for op, v in (("trowargmax", "dn-i32"), ("trowargmin", "nd-ui32"))
         for dt in ("f16", "f32")] + [
    (op, v, dt) for op, v in (("tcolargmax", "ui32-tmp"), ("tcolargmin", "i32")) for dt in ("f16", "f32", "ui16")]
A5_CASES = [(op, v, dt) for op, v in (("tcolargmax", "i32"), ("tcolargmin", "ui32-tmp")) for dt in ("i8", "ui8")]
"""TCOLARGMAX.md's A5 list adds int8/uint8 (widened to 16-bit lanes by the A5 lowering)."""


@pytest.mark.parametrize("target, op, variant, dt", [(t, *c) for t in ("a2a3", "ascend950") for c in CASES]
                         + [("ascend950", *c) for c in A5_CASES])
@pytest.mark.parametrize("R, wide", [(9, True), (8, False), (16, True), (240, False), (256, False)])
def test_backends_give_the_golden_indices_on_ties_nan_and_zeros(target, op, variant, dt, R, wide):
    """Odd valid columns, valid < tile; ``wide``: rows of several 256-byte repeats (the
    multi-chunk paths)."""
    e = DA.ESIZE[dt]
    cols = (768 if wide else 256) // e
    C = cols - 3
    text = DA.kernel(op, variant, dt, R, cols, C)
    x = _tied(dt, (R, C), R * cols)
    cmp, findings, _ = (H.check if target == "a2a3" else D5.check)(text, 0, {"a": x})
    assert cmp and not findings
    assert all(c.ok for c in cmp), [c.line() for c in cmp]


def _one(op, src, dst, n_ins=1):
    ins = ", ".join([src] * n_ins)
    return (f"func.func @k(%a: {src}) -> {dst} {{\n  %d = pto.{op} {', '.join(['%a'] * n_ins)} : ({ins}) -> {dst}\n"
            f"  return %d : {dst}\n}}\n")


@pytest.mark.parametrize("op, src, dst, target, message", [
    ("trowargmax", T(8, 16, "f32"), T(8, 1, "f32", col=True), A2A3, "dst \\(the indices\\) must be i32 or ui32"),
    ("trowargmin", T(8, 16, "i32"), T(8, 1, "i32", col=True), A2A3, "src element type i32 is not supported"),
    ("tcolargmax", T(8, 16, "f16"), T(2, 16, "i32"), ASCEND950, "dst valid rows must be 1"),
    ("tcolargmin", T(8, 16, "f16"), T(1, 8, "i32"), A2A3, "src valid cols must equal dst valid cols"),
    ("tcolargmax", T(8, 32, "i8"), T(1, 32, "i32"), A2A3, "src element type i8 is not supported"),
])
def test_verifier_rules(op, src, dst, target, message):
    with pytest.raises(PtocError, match=message) as e:
        api.compile(api.parse(_one(op, src, dst), "k.pto"), target)
    assert "k.pto:2:8" in str(e.value)


# ---- the two vf ops the A5 lowering uses ----------------------------------------------------------

VF_TEXT = """builtin.module {
  vf.func @t(%a: !pto.tile_buf<vec, 2x64xf32>, %o: !pto.tile_buf<vec, 2x64xui32>) {
    %all = vf.create_mask ALL : !vf.mask<b32>
    %x = vf.load_align %a[0] : !pto.tile_buf<vec, 2x64xf32>
    %y = vf.load_align %a[64] : !pto.tile_buf<vec, 2x64xf32>
    %odd = vf.deinterleave %x, %y, part = ODD : !vf.reg<64xf32>
    %even = vf.deinterleave %x, %y : !vf.reg<64xf32>
    %u = vf.bitcast %odd : !vf.reg<64xf32> -> !vf.reg<64xui32>
    %w = vf.bitcast %even : !vf.reg<64xf32> -> !vf.reg<64xui32>
    vf.store_align %o[0], %u, %all : !pto.tile_buf<vec, 2x64xui32>
    vf.store_align %o[64], %w, %all : !pto.tile_buf<vec, 2x64xui32>
  }
}
"""


def test_vf_deinterleave_and_bitcast():
    """vdintlv: lanes 2k + p of a ++ b; bitcast: the same bits (printed form reads back)."""
    fn = next(o for o in api.parse_printed(VF_TEXT).walk() if o.name == "vf.func")
    again = next(o for o in api.parse_printed(str(fn.parent_op())).walk() if o.name == "vf.func")
    assert str(again) == str(fn)
    a = np.arange(128, dtype=np.float32).reshape(2, 64) - 64.5
    out = vx.execute_vf(fn, {"a": a})["o"]
    both = a.reshape(-1)
    assert np.array_equal(out[0], both[1::2].view(np.uint32))
    assert np.array_equal(out[1], both[0::2].view(np.uint32))
