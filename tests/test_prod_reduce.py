"""TROWPROD / TCOLPROD (issue 12, item 1).

The golden model against an oracle from the pages' words (TROWPROD: ``dst[i,0] = Π_j src[i,j]``,
TCOLPROD: ``dst[0,j] = Π_i src[i,j]``), one Python multiplication at a time, each rounded to the
element type (integers wrap), in the order ptoc fixes where the pages give none: left to right
along the reduced axis (the pto-isa CPU simulator's).  Both backends then run the same products on
NaN, ±0, ±inf and integer extremes on edge shapes; the differential matrices cover every dtype
and row count.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

import a2a3_harness as H
import test_diff_a2a3 as DA
import test_diff_ascend950 as D5
from test_reference_props import PROFILE, T, check, py, run, scalar_op, tile_case, values

PROD_DTYPES = ("f16", "f32", "i16", "i32")


def o_prod(xs, dt):
    mul = scalar_op("mul", dt)
    acc = xs[0]
    for x in xs[1:]:
        acc = mul(acc, x)
    return acc


@PROFILE
@given(tile_case(dtypes=PROD_DTYPES + ("bf16", "ui16", "ui32")))
def test_golden_matches_the_pages(case):
    dt, rows, cols, vr, vc, rng, special = case
    x = values(rng, dt, (vr, vc), special)
    t = T(rows, cols, dt, (vr, vc))
    xs = [[py(x[i, j], dt) for j in range(vc)] for i in range(vr)]
    got = run("trowprod", [t, t], T(rows, 1, dt, (vr, 1), col=True), [x, x])
    check(got[:vr], [[o_prod(r, dt)] for r in xs], dt)
    got = run("tcolprod", [t], T(1, cols, dt, (1, vc)), [x])
    check(got, [[o_prod([r[j] for r in xs], dt) for j in range(vc)]], dt)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("op, variant", [("trowprod", "dn"), ("trowprod", "nd"), ("tcolprod", "")])
@pytest.mark.parametrize("dt", PROD_DTYPES)
@pytest.mark.parametrize("R", [9, 16, 256])
def test_backends_give_the_golden_bits_on_special_values(target, op, variant, dt, R):
    """Odd valid columns, valid < tile; floats 40 % NaN/±0/±inf/huge, integers at their extremes."""
    cols = 64 // DA.ESIZE[dt]
    C = cols - 3
    text = DA.kernel(op, variant, dt, R, cols, C)
    x = values(np.random.default_rng(R), dt, (R, C), 0.4)
    cmp, findings, _ = (H.check if target == "a2a3" else D5.check)(text, 0, {"a": x})
    assert cmp and not findings
    assert all(c.ok for c in cmp), [c.line() for c in cmp]
