"""pto.tgetval (PTO-IR-ops §5.2, ``Tile::GetValue(offset)``): the element at a flat offset of a tile's
storage, read by the scalar unit.  Both spellings parse to one op; the golden model and both
backends (an ``ld_ub`` on S, after the MTE2 -> S or V -> S sync pto-insert-sync adds) give what
NumPy indexing gives."""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError

T = "!pto.tile_buf<vec, 16x16x{dt}>"
COL = "!pto.tile_buf<vec, 16x1x{dt}, blayout=col_major>"


def kernel(dt: str, get: str, reduce_first: bool = False) -> str:
    """y = x + x.flat[k] (or + rowmax(x)[k] when ``reduce_first``: a V-pipe producer)."""
    t, c = T.format(dt=dt), COL.format(dt=dt)
    src, idx = ("%m", "%k") if reduce_first else ("%t", "%k")
    red = f"pto.trowmax ins(%t, %tmp : {t}, {t}) outs(%m : {c})" if reduce_first else ""
    getval = get.format(src=src, idx=idx, T=c if reduce_first else t, dt=dt)
    return f"""
module {{
  func.func @k(%x: !pto.ptr<{dt}>, %y: !pto.ptr<{dt}>, %k: index) {{
    %k0 = arith.constant 0 : index
    %k1 = arith.constant 1 : index
    %k16 = arith.constant 16 : index
    %xv = pto.make_tensor_view %x, shape = [%k16, %k16], strides = [%k16, %k1] : !pto.tensor_view<?x?x{dt}>
    %xp = pto.partition_view %xv, offsets = [%k0, %k0], sizes = [%k16, %k16] : !pto.tensor_view<?x?x{dt}> -> !pto.partition_tensor_view<16x16x{dt}>
    %yv = pto.make_tensor_view %y, shape = [%k16, %k16], strides = [%k16, %k1] : !pto.tensor_view<?x?x{dt}>
    %yp = pto.partition_view %yv, offsets = [%k0, %k0], sizes = [%k16, %k16] : !pto.tensor_view<?x?x{dt}> -> !pto.partition_tensor_view<16x16x{dt}>
    %t = pto.alloc_tile : {t}
    %tmp = pto.alloc_tile : {t}
    %m = pto.alloc_tile : {c}
    %u = pto.alloc_tile : {t}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16x{dt}>) outs(%t : {t})
    {red}
    {getval}
    pto.tadds ins(%t, %v : {t}, {dt}) outs(%u : {t})
    pto.tstore ins(%u : {t}) outs(%yp : !pto.partition_tensor_view<16x16x{dt}>)
    return
  }}
}}
"""


PTOAS_FORM = "%v = pto.tgetval ins({src}, {idx} : {T}, index) outs : {dt}"
ISA_FORM = "pto.tgetval ins({src}, {idx} : {T}, index) outs(%v : {dt})"


def _x(dt: str) -> np.ndarray:
    rng = np.random.default_rng(3)
    if dt == "i32":
        return rng.integers(-1000, 1000, (16, 16)).astype(np.int32)
    return rng.standard_normal((16, 16)).astype(np.float32)


def test_both_spellings_are_one_op_and_print_back():
    a = api.parse(kernel("f32", PTOAS_FORM))
    b = api.parse(kernel("f32", ISA_FORM))
    assert api.print_module(a) == api.print_module(b)
    again = api.parse_printed(api.print_module(a))
    assert api.print_module(again) == api.print_module(a)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("dt", ["f32", "i32"])
@pytest.mark.parametrize("k", [0, 37, 255])
def test_flat_offset_matches_numpy(target, dt, k):
    m = api.parse(kernel(dt, ISA_FORM))
    x = _x(dt)
    r = api.check(m, target, {"x": x, "k": k})
    assert r.ok, r.findings
    want = x + x.reshape(-1)[k]  # row-major storage: flat offset k is x[k // 16, k % 16]
    np.testing.assert_array_equal(r.outputs["y"].reshape(16, 16), want)
    np.testing.assert_array_equal(r.reference["y"].reshape(16, 16), want)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_after_a_vector_producer_the_scalar_read_waits_for_v(target):
    m = api.parse(kernel("f32", PTOAS_FORM, reduce_first=True))
    placed = api.emit(m, target, "placed")
    lines = placed.splitlines()
    get = next(i for i, s in enumerate(lines) if "pto.tgetval" in s)
    assert any("PIPE_V>, #pto.pipe<PIPE_S>" in s and "wait_flag" in s for s in lines[:get])
    x = _x("f32")
    r = api.check(m, target, {"x": x, "k": 5})
    assert r.ok, r.findings
    np.testing.assert_array_equal(r.outputs["y"].reshape(16, 16), x + x[5].max())


def test_offset_outside_the_tile_is_a_located_error():
    m = api.parse(kernel("f32", ISA_FORM), "k.pto")
    with pytest.raises(PtocError) as e:
        api.reference(m, api.make_inputs(m, {"x": _x("f32"), "k": 256}))
    d = e.value.diagnostics[0]
    assert "index 256 is outside the 16x16 tile" in d.message and d.line == 17


def test_result_type_must_be_the_element_type():
    text = kernel("f32", "%v = pto.tgetval ins({src}, {idx} : {T}, index) outs : i32").replace("16x16xf32>, f32)", "16x16xf32>, i32)")
    with pytest.raises(PtocError) as e:
        api.verify(api.parse(text, "k.pto"))
    assert "element type f32" in str(e.value)
