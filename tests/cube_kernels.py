"""Matmul kernels and an independent NumPy reference for the cube tests (test_cube.py,
test_diff_cube.py): PTO-AS text built from parameters, and the inputs to run it on."""

from __future__ import annotations

import ml_dtypes
import numpy as np

F32 = np.float32
DT = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "i8": np.int8, "i32": np.int32}
COMBOS = [("f16", "f32"), ("bf16", "f32"), ("f32", "f32"), ("i8", "i32")]


def matmul_kernel(ab: str, acc: str, M: int, K: int, N: int, kt: int, *, vm: int | None = None,
                  vn: int | None = None, bias: bool = False) -> str:
    """C (M x N) = A (M x K) . B (K x N) over a K loop of ``kt``-wide tiles; ``vm``/``vn`` make the
    valid region of the M/N side partial (tiles stay M x N, the GM views vm x ..)."""
    vm, vn = vm or M, vn or N
    if ab == "i8":  # i8 Nz fractals are 16 x 32: the B tiles' columns round up to 32 (valid vn)
        N = -(-N // 32) * 32
    steps = K // kt
    tl = lambda loc, r, c, vr, vc, dt, extra="": (  # noqa: E731
        f"!pto.tile_buf<{loc}, {r}x{c}x{dt}, valid={vr}x{vc}{extra}>")
    MA = tl("mat", M, kt, vm, kt, ab, ", blayout=col_major, slayout=row_major")
    MB = tl("mat", kt, N, kt, vn, ab, ", blayout=col_major, slayout=row_major")
    LA = tl("left", M, kt, vm, kt, ab, ", slayout=row_major")
    RB = tl("right", kt, N, kt, vn, ab, ", slayout=col_major")
    AC = tl("acc", M, N, vm, vn, acc, ", blayout=col_major, slayout=row_major, fractal=1024")
    MBIAS = tl("mat", 1, N, 1, vn, acc)
    BT = tl("bias", 1, N, 1, vn, acc)
    bias_arg = f", %bias: !pto.ptr<{acc}>" if bias else ""
    first = (f"pto.tmatmul.bias ins(%la, %rb, %bt : {LA}, {RB}, {BT}) outs(%acc : {AC})" if bias else
             f"pto.tmatmul ins(%la, %rb : {LA}, {RB}) outs(%acc : {AC})")
    bias_setup = f"""
    %vbias = pto.make_tensor_view %bias, shape = [%c1, %cvn], strides = [%cvn, %c1] : !pto.tensor_view<?x?x{acc}>
    %pbias = pto.partition_view %vbias, offsets = [%c0, %c0], sizes = [%c1, %cvn] : !pto.tensor_view<?x?x{acc}> -> !pto.partition_tensor_view<1x{vn}x{acc}>
    %mbias = pto.alloc_tile : {MBIAS}
    %bt = pto.alloc_tile : {BT}
    pto.tload ins(%pbias : !pto.partition_tensor_view<1x{vn}x{acc}>) outs(%mbias : {MBIAS})
    pto.tmov ins(%mbias : {MBIAS}) outs(%bt : {BT})""" if bias else ""
    return f"""module {{
  func.func @mm(%a: !pto.ptr<{ab}>, %b: !pto.ptr<{ab}>, %c: !pto.ptr<{acc}>{bias_arg}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %csteps = arith.constant {steps} : index
    %ckt = arith.constant {kt} : index
    %cK = arith.constant {K} : index
    %cvm = arith.constant {vm} : index
    %cvn = arith.constant {vn} : index
    %va = pto.make_tensor_view %a, shape = [%cvm, %cK], strides = [%cK, %c1] : !pto.tensor_view<?x?x{ab}>
    %vb = pto.make_tensor_view %b, shape = [%cK, %cvn], strides = [%cvn, %c1] : !pto.tensor_view<?x?x{ab}>
    %vc = pto.make_tensor_view %c, shape = [%cvm, %cvn], strides = [%cvn, %c1] : !pto.tensor_view<?x?x{acc}>
    %ma = pto.alloc_tile : {MA}
    %mb = pto.alloc_tile : {MB}
    %la = pto.alloc_tile : {LA}
    %rb = pto.alloc_tile : {RB}
    %acc = pto.alloc_tile : {AC}{bias_setup}
    scf.for %k = %c0 to %csteps step %c1 {{
      %off = arith.muli %k, %ckt : index
      %pa = pto.partition_view %va, offsets = [%c0, %off], sizes = [%cvm, %ckt] : !pto.tensor_view<?x?x{ab}> -> !pto.partition_tensor_view<{vm}x{kt}x{ab}>
      %pb = pto.partition_view %vb, offsets = [%off, %c0], sizes = [%ckt, %cvn] : !pto.tensor_view<?x?x{ab}> -> !pto.partition_tensor_view<{kt}x{vn}x{ab}>
      pto.tload ins(%pa : !pto.partition_tensor_view<{vm}x{kt}x{ab}>) outs(%ma : {MA})
      pto.tload ins(%pb : !pto.partition_tensor_view<{kt}x{vn}x{ab}>) outs(%mb : {MB})
      pto.tmov ins(%ma : {MA}) outs(%la : {LA})
      pto.tmov ins(%mb : {MB}) outs(%rb : {RB})
      %first = arith.cmpi eq, %k, %c0 : index
      scf.if %first {{
        {first}
      }} else {{
        pto.tmatmul.acc ins(%acc, %la, %rb : {AC}, {LA}, {RB}) outs(%acc : {AC})
      }}
    }}
    %pc = pto.partition_view %vc, offsets = [%c0, %c0], sizes = [%cvm, %cvn] : !pto.tensor_view<?x?x{acc}> -> !pto.partition_tensor_view<{vm}x{vn}x{acc}>
    pto.tstore ins(%acc : {AC}) outs(%pc : !pto.partition_tensor_view<{vm}x{vn}x{acc}>)
    return
  }}
}}
"""


def numpy_matmul(a, b, acc: str, bias=None):
    """The independent reference: f32 (or wrapped i32) products and sums."""
    if acc == "i32":
        out = a.astype(np.int64) @ b.astype(np.int64) + (0 if bias is None else bias.astype(np.int64))
        return out.astype(np.int32)
    out = a.astype(F32) @ b.astype(F32) + (0 if bias is None else bias.astype(F32))
    return out.astype(F32)


def inputs_for(ab: str, vm: int, vn: int, K: int, seed: int = 1, bias: bool = False, acc: str = "f32"):
    rng = np.random.default_rng(seed)
    if ab == "i8":
        a = rng.integers(-128, 128, (vm, K)).astype(np.int8)
        b = rng.integers(-128, 128, (K, vn)).astype(np.int8)
    else:
        a = rng.uniform(-2, 2, (vm, K)).astype(DT[ab])
        b = rng.uniform(-2, 2, (K, vn)).astype(DT[ab])
    ins = {"a": a, "b": b, "c": np.zeros((vm, vn), DT[acc])}
    if bias:
        ins["bias"] = (rng.integers(-1000, 1000, (1, vn)) if acc == "i32" else rng.uniform(-4, 4, (1, vn))).astype(DT[acc])
    return ins
