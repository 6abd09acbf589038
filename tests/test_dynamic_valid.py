"""Valid shapes known only at run time (issue 12: ``valid=?x?`` tiles whose valid rows/cols are
kernel scalars), one op of every vector family, on both targets, against NumPy of the op over the
run-time valid region.

Each kernel loads its sources from GM through partitions of the run-time size, runs the op and
stores the destination's valid region into ``y`` (which starts as zeros).  The valid region is
(%vr, %vc) of a 16x32 f32 tile (a column tile: %vr x 1, a row tile: 1 x %vc); several (vr, vc)
pairs are run from one compiled kernel, so nothing about them is known when compiling."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.targets import lookup_target

R, C = 16, 32
TARGETS = ("a2a3", "ascend950")
SHAPES = ((16, 32), (5, 9), (1, 1), (11, 24), (0, 7), (3, 0))


@dataclass(frozen=True)
class Case:
    """``srcs``: the source tiles, each "full" (R x C, valid vr x vc), "col" (R x 1 ColMajor, valid
    vr x 1) or "row" (1 x C, valid 1 x vc); ``dst``: the destination's kind (also "tall": C x R,
    valid vc x vr, and "half": R x C/2 of (vr, vc // 2 rounded up)); ``line``: the op, with
    %s0.. the sources, %d the destination, %f an f32 3.0 and %n an i32; ``want``: NumPy of the op
    on the sources' valid regions, giving the destination's valid region."""
    line: str
    srcs: tuple[str, ...]
    dst: str
    want: object
    out: str = "f32"
    """The destination's element type (``{dout}`` in ``line``)."""
    reads_dst: bool = False
    """The op accumulates into its destination: it is loaded from ``y`` first (y starts random)."""
    empty: bool = True
    """Run with empty valid regions too (the golden model rejects an empty row reduction, located)."""
    rtol: float = 0.0
    """A float sum: the executor's order of additions within ``rtol * (|want| + 1)`` of NumPy's
    (the golden model rounds the exact sum once, as NumPy's float64 sum does here)."""


def _sum_pairs(a):
    vr, vc = a.shape
    out = np.zeros((vr, vc), np.float32)
    p = np.concatenate([a, np.zeros((vr, 1), np.float32)], axis=1) if vc % 2 else a
    out[:, :(vc + 1) // 2] = p[:, 0::2] + p[:, 1::2]
    return out


F3 = np.float32(3)
CASES = {
    "binary": Case("pto.tadd ins(%s0, %s1 : {full}, {full}) outs(%d : {full})", ("full", "full"), "full",
                   lambda a, b: a + b),
    "unary": Case("pto.tabs ins(%s0 : {full}) outs(%d : {full})", ("full",), "full", np.abs),
    "scalar": Case("pto.tmuls ins(%s0, %f : {full}, f32) outs(%d : {full})", ("full",), "full", lambda a: a * F3),
    "expands": Case("pto.texpands ins(%f : f32) outs(%d : {full})", (), "full", None),
    "rowexpand": Case("pto.trowexpandmul ins(%s0, %s1 : {full}, {col}) outs(%d : {full})", ("full", "col"),
                      "full", lambda a, b: a * b),
    "colexpand": Case("pto.tcolexpandadd ins(%s0, %s1 : {full}, {row}) outs(%d : {full})", ("full", "row"),
                      "full", lambda a, b: a + b),
    "rowbroadcast": Case("pto.trowexpand ins(%s0 : {col}) outs(%d : {full})", ("col",), "full", None),
    "colbroadcast": Case("pto.tcolexpand ins(%s0 : {row}) outs(%d : {full})", ("row",), "full", None),
    "rowreduce": Case("pto.trowmax ins(%s0 : {full}) outs(%d : {col})", ("full",), "col",
                      lambda a: a.max(axis=1, keepdims=True), empty=False),
    "rowsum": Case("pto.trowsum ins(%s0 : {full}) outs(%d : {col})", ("full",), "col",
                   lambda a: a.sum(axis=1, keepdims=True, dtype=np.float64).astype(np.float32), empty=False,
                   rtol=1e-6),
    "rowreduce-rows": Case("pto.trowmax ins(%s0 : {rows}) outs(%d : {col})", ("rows",), "col",
                           lambda a: a.max(axis=1, keepdims=True), empty=False),
    "colreduce": Case("pto.tcolmax ins(%s0 : {full}) outs(%d : {row})", ("full",), "row",
                      lambda a: a.max(axis=0, keepdims=True)),
    "pairreduce": Case("pto.tpairreducesum ins(%s0 : {full}) outs(%d : {full})", ("full",), "full", _sum_pairs),
    "pairreduce-rows": Case("pto.tpairreducesum ins(%s0 : {rows}) outs(%d : {rows})", ("rows",), "rows", _sum_pairs),
    "composed": Case("pto.taddc ins(%s0, %s1, %s2 : {full}, {full}, {full}) outs(%d : {full})",
                     ("full", "full", "full"), "full", lambda a, b, c: a + b + c),
    "tri": Case("pto.ttri ins(%n : i32) outs(%d : {dout}) {{upperOrLower = 0 : i32}}", (), "full", None, out="i32"),
    "concat": Case("pto.tconcat ins(%s0, %s1 : {full}, {full}) outs(%d : {full})", ("full", "full"), "full", None),
    "axpy": Case("pto.taxpy ins(%s0, %f : {full}, f32) outs(%d : {full})", ("full",), "full",
                 lambda a, y: a * F3 + y, reads_dst=True),
    "trans": Case("pto.ttrans ins(%s0 : {full}) outs(%d : {tall})", ("full",), "tall", lambda a: a.T),
    "cvt": Case("pto.tcvt ins(%s0 {{rmode = #pto<round_mode CAST_RINT>}} : {full}) outs(%d : {dout})", ("full",),
                "full", lambda a: a.astype(np.float16), out="f16"),
    "mov": Case("pto.tmov ins(%s0 : {full}) outs(%d : {full})", ("full",), "full", lambda a: a),
    "fillpad": Case("pto.tfillpad ins(%s0 : {full}) outs(%d : {padded})", ("full",), "padded", None),
    "ci": Case("pto.tci ins(%n : i32) outs(%d : {dout}) {{descending = false}}", (), "full", None, out="i32"),
}


def types(out: str = "f32"):
    return {"full": f"!pto.tile_buf<vec, {R}x{C}xf32, valid=?x?>",
            "dout": f"!pto.tile_buf<vec, {R}x{C}x{out}, valid=?x?>",
            "col": f"!pto.tile_buf<vec, {R}x1xf32, valid=?x1, blayout=col_major>",
            "row": f"!pto.tile_buf<vec, 1x{C}xf32, valid=1x?>",
            "tall": f"!pto.tile_buf<vec, {C}x{R}xf32, valid=?x?>",
            "rows": f"!pto.tile_buf<vec, {R}x{C}xf32, valid=?x{C}>",
            "padded": f"!pto.tile_buf<vec, {R}x{C}xf32, pad=3>"}


def _valid_ops(kind: str) -> str:
    return {"full": "valid_row = %vr valid_col = %vc", "col": "valid_row = %vr", "row": "valid_col = %vc",
            "rows": "valid_row = %vr",
            "tall": "valid_row = %vc valid_col = %vr", "padded": ""}[kind]


def _part(kind: str) -> tuple[str, str, str, str]:
    """(GM shape, strides, partition sizes, partition type) of a tile kind."""
    return {"full": (f"%c{R}, %c{C}", f"%c{C}, %c1", "%vr, %vc", "?x?"),
            "col": (f"%c{R}, %c1", "%c1, %c1", "%vr, %c1", "?x1"),
            "row": (f"%c1, %c{C}", f"%c{C}, %c1", "%c1, %vc", "1x?"),
            "tall": (f"%c{C}, %c{R}", f"%c{R}, %c1", "%vc, %vr", "?x?"),
            "rows": (f"%c{R}, %c{C}", f"%c{C}, %c1", f"%vr, %c{C}", f"?x{C}"),
            "padded": (f"%c{R}, %c{C}", f"%c{C}, %c1", f"%c{R}, %c{C}", f"{R}x{C}")}[kind]


def kernel(case: Case) -> str:
    t = types(case.out)
    names = [f"x{i}" for i in range(len(case.srcs))]
    args = ", ".join([f"%{n}: !pto.ptr<f32>" for n in names] + [f"%y: !pto.ptr<{case.out}>"])
    lines = [f"func.func @k({args}, %vr: index, %vc: index) {{",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             f"  %c{R} = arith.constant {R} : index", f"  %c{C} = arith.constant {C} : index",
             "  %f = arith.constant 3.0 : f32", "  %n = arith.constant 7 : i32"]
    for name, kind in [*zip(names, case.srcs), ("y", case.dst)]:
        shape, strides, sizes, ptype = _part(kind)
        dt = case.out if name == "y" else "f32"
        lines += [f"  %{name}v = pto.make_tensor_view %{name}, shape = [{shape}], strides = [{strides}] "
                  f": !pto.tensor_view<?x?x{dt}>",
                  f"  %{name}p = pto.partition_view %{name}v, offsets = [%c0, %c0], sizes = [{sizes}] "
                  f": !pto.tensor_view<?x?x{dt}> -> !pto.partition_tensor_view<{ptype}x{dt}>"]
    for i, kind in enumerate(case.srcs):
        lines += [f"  %s{i} = pto.alloc_tile {_valid_ops(kind)} : {t[kind]}",
                  f"  pto.tload ins(%x{i}p : !pto.partition_tensor_view<{_part(kind)[3]}xf32>) "
                  f"outs(%s{i} : {t[kind]})"]
    dst = t["dout"] if case.out != "f32" else t[case.dst]
    ypart = f"!pto.partition_tensor_view<{_part(case.dst)[3]}x{case.out}>"
    lines.append(f"  %d = pto.alloc_tile {_valid_ops(case.dst)} : {dst}")
    if case.reads_dst:
        lines.append(f"  pto.tload ins(%yp : {ypart}) outs(%d : {dst})")
    lines.append("  " + case.line.format(**t))
    lines.append(f"  pto.tstore ins(%d : {dst}) outs(%yp : {ypart})")
    lines += ["  return", "}"]
    return "\n".join(lines) + "\n"


def _full_shape(kind):
    return {"full": (R, C), "col": (R, 1), "row": (1, C), "tall": (C, R), "rows": (R, C), "padded": (R, C)}[kind]


def _valid(kind, vr, vc):
    return {"full": (vr, vc), "col": (vr, 1), "row": (1, vc), "tall": (vc, vr), "rows": (vr, C), "padded": (R, C)}[kind]


def expected(family: str, case: Case, xs, y0, vr, vc) -> np.ndarray:
    """y after the kernel: y0 with the destination's valid region from NumPy."""
    y = y0.copy()
    dr, dc = _valid(case.dst, vr, vc)
    srcs = [x[:_valid(k, vr, vc)[0], :_valid(k, vr, vc)[1]] for x, k in zip(xs, case.srcs)]
    if family == "fillpad":  # TFILLPAD.md: src's valid region, -inf (Min) everywhere else of the tile
        y[:, :] = -np.inf
        y[:vr, :vc] = xs[0][:vr, :vc]
        return y
    if dr * dc == 0 or any(x.size == 0 for x in srcs):
        return y  # an empty region writes nothing (an empty reduction included)
    if family == "expands":
        y[:dr, :dc] = F3
    elif family == "rowbroadcast":
        y[:dr, :dc] = np.repeat(srcs[0], dc, axis=1)
    elif family == "colbroadcast":
        y[:dr, :dc] = np.repeat(srcs[0], dr, axis=0)
    elif family == "axpy":
        y[:dr, :dc] = case.want(*srcs, y0[:dr, :dc])
    elif family == "tri":  # lower: 1 where j <= i + 7
        y[:dr, :dc] = (np.arange(dc)[None, :] <= np.arange(dr)[:, None] + 7).astype(y.dtype)
    elif family == "ci":
        y[:dr, :dc] = (7 + np.arange(dr * dc)).reshape(dr, dc)
    else:
        y[:dr, :dc] = case.want(*srcs)
    return y


UNSUPPORTED = {("rowreduce", "a2a3"), ("rowsum", "a2a3"), ("pairreduce", "a2a3"), ("fillpad", "a2a3"), ("concat", "a2a3"), ("concat", "ascend950")}
"""Families whose lowering still needs static valid shapes: a located error, never a wrong result."""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("family", sorted(CASES))
def test_family_with_run_time_valid_shape(family, target):
    case = CASES[family]
    text = kernel(case)
    module = api.parse(text, f"{family}.pto")
    if (family, target) in UNSUPPORTED:
        with pytest.raises(PtocError) as info:
            api.compile(module, lookup_target(target))
        line = text.splitlines().index("  " + case.line.format(**types(case.out))) + 1
        assert f"{family}.pto:{line}:3: error: " in str(info.value)
        assert "valid shapes known only at run time are supported only by" in str(info.value)
        return
    program = api.compile(module, lookup_target(target))
    rng = np.random.default_rng(11)
    dt = np.dtype({"f32": np.float32, "f16": np.float16, "i32": np.int32}[case.out])
    for vr, vc in SHAPES if case.empty else [(r, c) for r, c in SHAPES if r * c]:
        xs = [rng.standard_normal(_full_shape(k)).astype(np.float32) for k in case.srcs]
        shape = _full_shape(case.dst)
        y0 = (rng.standard_normal(shape) if case.reads_dst else np.zeros(shape)).astype(dt)
        inputs = {f"x{i}": x for i, x in enumerate(xs)}
        inputs.update(y=y0, vr=vr, vc=vc)
        want = expected(family, case, xs, y0, vr, vc).reshape(-1)
        res = api.run(program, inputs)
        assert not res.findings, [str(f) for f in res.findings]
        got = res.outputs["y"].reshape(-1)
        if case.rtol:
            assert (np.abs(got - want) <= case.rtol * (np.abs(want) + 1)).all(), f"executor, valid {vr}x{vc}"
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"executor, valid {vr}x{vc}")
        golden = api.reference(module, inputs, target=target)
        np.testing.assert_array_equal(golden["y"].reshape(-1), want, err_msg=f"golden model, valid {vr}x{vc}")


def _wide_kernel(op: str, dt: str, cols: int) -> str:
    """x (8 x cols of dt, valid %vr x %vc) -> op -> y (a column for the row reductions, a tile for the
    pair reduction)."""
    full = f"!pto.tile_buf<vec, 8x{cols}x{dt}, valid=?x?>"
    pair = op == "tpairreducesum"
    out = full if pair else f"!pto.tile_buf<vec, 8x1x{dt}, valid=?x1, blayout=col_major>"
    ycols, ysize, ytype = (cols, "%vr, %vc", "?x?") if pair else (1, "%vr, %c1", "?x1")
    valid_out = "valid_row = %vr valid_col = %vc" if pair else "valid_row = %vr"
    return f"""func.func @k(%x: !pto.ptr<{dt}>, %y: !pto.ptr<{dt}>, %vr: index, %vc: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cc = arith.constant {cols} : index
  %cy = arith.constant {ycols} : index
  %xv = pto.make_tensor_view %x, shape = [%c8, %cc], strides = [%cc, %c1] : !pto.tensor_view<?x?x{dt}>
  %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%vr, %vc] : !pto.tensor_view<?x?x{dt}> -> !pto.partition_tensor_view<?x?x{dt}>
  %yv = pto.make_tensor_view %y, shape = [%c8, %cy], strides = [%cy, %c1] : !pto.tensor_view<?x?x{dt}>
  %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [{ysize}] : !pto.tensor_view<?x?x{dt}> -> !pto.partition_tensor_view<{ytype}x{dt}>
  %s = pto.alloc_tile valid_row = %vr valid_col = %vc : {full}
  %d = pto.alloc_tile {valid_out} : {out}
  pto.tload ins(%xp : !pto.partition_tensor_view<?x?x{dt}>) outs(%s : {full})
  pto.{op} ins(%s : {full}) outs(%d : {out})
  pto.tstore ins(%d : {out}) outs(%yp : !pto.partition_tensor_view<{ytype}x{dt}>)
  return
}}
"""


@pytest.mark.parametrize("op, dt", [("trowsum", "f32"), ("trowsum", "f16"), ("trowmax", "f16"), ("trowmin", "i8"),
                                    ("trowmax", "i32"), ("tpairreducesum", "f32"), ("tpairreducesum", "f16")])
def test_row_and_pair_reductions_of_run_time_cols_on_ascend950(op, dt):
    """Run-time valid cols wider than one register (the fold of chunks 1.. and the pair sums' zeros
    start at run-time columns): executor == golden model, bit for bit but for the row sums' order."""
    cols = 256 if dt != "i8" else 512
    program = api.compile(api.parse(_wide_kernel(op, dt, cols), "k.pto"), lookup_target("ascend950"))
    rng = np.random.default_rng(cols)
    for vr, vc in ((8, cols), (3, 1), (5, 63), (8, 65), (2, 130), (7, cols - 3)):
        x = (rng.standard_normal((8, cols)) * 20).astype(np.dtype({"f32": "f4", "f16": "f2", "i8": "i1", "i32": "i4"}[dt]))
        ycols = cols if op == "tpairreducesum" else 1
        inputs = {"x": x, "y": np.zeros((8, ycols), x.dtype), "vr": vr, "vc": vc}
        res = api.run(program, inputs)
        assert not res.findings, [str(f) for f in res.findings]
        golden = api.reference(api.parse(_wide_kernel(op, dt, cols), "k.pto"), inputs, target="ascend950")
        got, want = res.outputs["y"].astype(np.float64), golden["y"].astype(np.float64)
        if op == "trowsum":  # another order of additions: within eps * (sum of |x| + 1) of the exact sum
            eps = 2.0 ** (-8 if dt == "f16" else -20)
            scale = np.zeros((8, 1))
            scale[:vr, 0] = np.abs(x[:vr, :vc].astype(np.float64)).sum(axis=1)
            assert (np.abs(got - want) <= eps * (scale + 1)).all(), (vr, vc)
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"valid {vr}x{vc}")
