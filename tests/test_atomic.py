"""Atomic-add stores (TSTORE ``atomicType = atomic_add``) out of vec tiles, and atomic adds from
different blocks and cores, which commute and so are no race.

The pages: TSTORE "AtomicAdd does +=" (pto_isa.md §4.8, CPU); the GM element types the hardware's
atomic adder takes are half/float/int16/int32/int8/bfloat16 (pto-isa TStore.hpp ``SetAtomicAdd``,
A5 ``set_atomic_{f32,f16,bf16,s32,s16,s8}``).  Each expected value is NumPy written here: the exact
sum (float64, exact for these inputs) rounded once to the GM type; integers wrap.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError

from test_pipes import c2v_inputs, c2v_kernel

TARGETS = ("a2a3", "ascend950")
DT = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "i8": np.int8, "i16": np.int16,
      "i32": np.int32}
R, C = 16, 32


def store_kernel(dt: str, stores: int = 1, atomic: bool = True, vr: int = R, vc: int = C) -> str:
    """Load a (vr x vc valid of an R x C tile) and store it into c ``stores`` times."""
    attr = " {atomicType = #pto<atomic_type atomic_add>}" if atomic else ""
    t = f"!pto.tile_buf<vec, {R}x{C}x{dt}, valid={vr}x{vc}>"
    pv = f"!pto.partition_tensor_view<{vr}x{vc}x{dt}>"
    store = f"    pto.tstore ins(%t : {t}) outs(%pc : {pv}){attr}\n"
    return f"""module {{
  func.func @k(%a: !pto.ptr<{dt}>, %c: !pto.ptr<{dt}>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cr = arith.constant {vr} : index
    %cc = arith.constant {vc} : index
    %va = pto.make_tensor_view %a, shape = [%cr, %cc], strides = [%cc, %c1] : !pto.tensor_view<?x?x{dt}>
    %vc = pto.make_tensor_view %c, shape = [%cr, %cc], strides = [%cc, %c1] : !pto.tensor_view<?x?x{dt}>
    %pa = pto.partition_view %va, offsets = [%c0, %c0], sizes = [%cr, %cc] : !pto.tensor_view<?x?x{dt}> -> {pv}
    %pc = pto.partition_view %vc, offsets = [%c0, %c0], sizes = [%cr, %cc] : !pto.tensor_view<?x?x{dt}> -> {pv}
    %t = pto.alloc_tile : {t}
    pto.tload ins(%pa : {pv}) outs(%t : {t})
{store * stores}    return
  }}
}}
"""


def values(dt: str, shape, rng) -> np.ndarray:
    """Inputs whose sums are exact in float64 (floats at least 2^-8 in magnitude), full-range ints."""
    if dt.startswith("i"):
        info = np.iinfo(DT[dt])
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(DT[dt])
    x = rng.normal(0, 4, shape)
    x = np.where(np.abs(x) < 2 ** -8, 2 ** -8, x)
    return x.astype(DT[dt])


def added(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """c + a in c's type: integers wrap, floats round the exact sum once."""
    if np.issubdtype(c.dtype, np.integer):
        return (c.astype(np.int64) + a.astype(np.int64)).astype(c.dtype)
    exact = c.astype(np.float64) + a.astype(np.float64)
    if c.dtype == ml_dtypes.bfloat16:  # via f32, exact there for these inputs: one rounding to bf16
        return exact.astype(np.float32).astype(c.dtype)
    return exact.astype(c.dtype)


def bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dt", sorted(DT))
def test_vec_atomic_add_store_matches_numpy(dt, target):
    """c ends as (c0 + a) + a after two atomic-add stores of a (bit for bit, both models)."""
    rng = np.random.default_rng(3)
    a, c0 = values(dt, (R, C), rng), values(dt, (R, C), rng)
    res = api.check(api.parse(store_kernel(dt, stores=2)), target, {"a": a, "c": c0.copy()})
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    want = added(added(c0, a), a)
    np.testing.assert_array_equal(bits(res.outputs["c"]), bits(want))
    np.testing.assert_array_equal(bits(res.reference["c"]), bits(want))


@pytest.mark.parametrize("target", TARGETS)
def test_vec_atomic_add_partial_valid_region(target):
    """Only the valid 5 x 20 region is added; the rest of c keeps its value (a 5 x 20 view of c)."""
    rng = np.random.default_rng(4)
    a, c0 = values("f32", (5, 20), rng), values("f32", (5, 20), rng)
    res = api.check(api.parse(store_kernel("f32", vr=5, vc=20)), target, {"a": a, "c": c0.copy()})
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    np.testing.assert_array_equal(res.outputs["c"], added(c0, a))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dt", ["u8", "i64", "u32"])
def test_atomic_add_of_other_types_is_located(dt, target):
    text = store_kernel(dt)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tstore" in ln)
    with pytest.raises(PtocError) as e:
        api.compile(api.parse(text, "at.pto"), target)
    assert f"at.pto:{line}:" in str(e.value) and "f16/bf16/f32/i8/i16/i32" in str(e.value), str(e.value)


@pytest.mark.parametrize("target", TARGETS)
def test_atomic_adds_from_different_blocks_commute(target):
    """Two blocks atomic-add their tile to the same c: no race (the adds commute), c = c0 + a + a;
    the same with plain stores is a write-after-write race between the blocks."""
    rng = np.random.default_rng(5)
    a, c0 = values("i32", (R, C), rng), values("i32", (R, C), rng)
    res = api.check(api.parse(store_kernel("i32")), target, {"a": a, "c": c0.copy()}, blocks=2)
    assert res.ok and not res.findings, [str(f) for f in res.findings]
    np.testing.assert_array_equal(res.outputs["c"], added(added(c0, a), a))
    plain = api.run(api.compile(api.parse(store_kernel("i32", atomic=False)), target), {"a": a, "c": c0.copy()},
                    blocks=2)
    races = [str(f) for f in plain.findings if f.kind == "race"]
    assert races and all("WAW" in r and "different blocks" in r for r in races), races


def overlapping_vec_stores(atomic: bool) -> str:
    """c2v_kernel(1) with both AIVs storing their 8 x 32 half to rows 0..7 of o."""
    text = c2v_kernel(1)
    old = "%op = pto.partition_view %ov, offsets = [%sub8, %c0]"
    assert old in text
    text = text.replace(old, "%op = pto.partition_view %ov, offsets = [%c0, %c0]")
    if atomic:
        store = "pto.tstore ins(%y : !pto.tile_buf<vec, 8x32xf32>) outs(%op : !pto.partition_tensor_view<8x32xf32>)"
        text = text.replace(store, store + " {atomicType = #pto<atomic_type atomic_add>}")
    return text


@pytest.mark.parametrize("target", TARGETS)
def test_atomic_adds_from_different_cores_commute(target):
    """AIV0 and AIV1 atomic-add their halves of a @ b + c to the same rows of o: no race,
    o[:8] = o0[:8] + half0 + half1 (f32 sums: float tolerance); plain stores there race (WAW)."""
    ins = c2v_inputs()
    ins["o"] = np.random.default_rng(6).uniform(-2, 2, (16, 32)).astype(np.float32)
    full = ins["a"].astype(np.float32) @ ins["b"].astype(np.float32) + ins["c"]
    res = api.check(api.parse(overlapping_vec_stores(True)), target, {k: v.copy() for k, v in ins.items()})
    assert res.ok and not res.findings, [str(f) for f in res.findings]
    want = ins["o"].copy()
    want[:8] += full[:8] + full[8:]
    np.testing.assert_allclose(res.outputs["o"], want, rtol=1e-5, atol=1e-4)
    plain = api.run(api.compile(api.parse(overlapping_vec_stores(False)), target), ins)
    races = [str(f) for f in plain.findings if f.kind == "race"]
    assert races and all("WAW race across cores" in r for r in races), races
