"""TPARTADD / TPARTMUL / TPARTMAX / TPARTMIN (issue 12, item 1) against the pages' case math.

For each (i, j) of dst's valid region: ``fn(src0, src1)`` where both sources are valid, the one valid
source elsewhere (TPARTADD.md, TPARTMUL.md, TPARTMAX.md, TPARTMIN.md).  The oracle is
test_reference_props' scalar rules applied element by element; the golden model and both backends
(a2a3 executor, ascend950 VF executor) are compared with it bit for bit, in every dtype each target's
page allows, with src0 or src1 the smaller source (by rows, by cols, by both) or both equal, valid
regions smaller than the tile and odd valid columns.
"""

from __future__ import annotations

import numpy as np
import pytest

import a2a3_harness as H
import test_diff_a2a3 as DA
import test_diff_ascend950 as D5
from test_reference_props import ALL, check, py, run, scalar_op, values
from pto_compiler import api, pipeline
from pto_compiler.diagnostics import PtocError
from pto_compiler.dialects import pto
from pto_compiler.passes import lower_vf
from pto_compiler.runtime import reference as golden

OPS = {"tpartadd": "add", "tpartmul": "mul", "tpartmax": "max", "tpartmin": "min"}
SHAPES = {  # pattern -> (src0 valid, src1 valid) for a dst valid region of R x C
    "src1-smaller": lambda R, C: ((R, C), (R - 2, C - 5)),
    "src0-smaller-cols": lambda R, C: ((R, C - 4), (R, C)),
    "src0-smaller-rows": lambda R, C: ((R - 3, C), (R, C)),
    "equal": lambda R, C: ((R, C), (R, C)),
}


def oracle(op: str, dt: str, x, y):
    """dst's valid region as nested Python numbers: the page's three cases."""
    f = scalar_op(OPS[op], dt)
    R, C = max(x.shape[0], y.shape[0]), max(x.shape[1], y.shape[1])
    out = []
    for i in range(R):
        row = []
        for j in range(C):
            in_x, in_y = i < x.shape[0] and j < x.shape[1], i < y.shape[0] and j < y.shape[1]
            if in_x and in_y:
                row.append(f(py(x[i, j], dt), py(y[i, j], dt)))
            else:
                row.append(py(x[i, j], dt) if in_x else py(y[i, j], dt))
        out.append(row)
    return out


def tile(rows, cols, dt, valid):
    return f"!pto.tile<{rows}x{cols}x{dt}, valid={valid[0]}x{valid[1]}>"


def kernel(op, dt, rows, cols, v0, v1, vd):
    t0, t1, td = tile(rows, cols, dt, v0), tile(rows, cols, dt, v1), tile(rows, cols, dt, vd)
    return (f"func.func @k(%a: {t0}, %b: {t1}) -> {td} {{\n"
            f"  %d = pto.{op} %a, %b : ({t0}, {t1}) -> {td}\n  func.return %d : {td}\n}}\n")


def inputs(dt, v0, v1, seed):
    rng = np.random.default_rng(seed)
    return values(rng, dt, v0, 0.3), values(rng, dt, v1, 0.3)


@pytest.mark.parametrize("pattern", sorted(SHAPES))
@pytest.mark.parametrize("dt", [d for d in ALL if d not in ("i64", "ui64")])
@pytest.mark.parametrize("op", sorted(OPS))
def test_golden_model_matches_the_page(op, dt, pattern):
    """NaN, ±0, ±inf and overflowing values among the floats; wrap-around among the integers."""
    R, C = 7, 13
    v0, v1 = SHAPES[pattern](R, C)
    x, y = inputs(dt, v0, v1, hash((op, dt, pattern)) % 1000)
    got = golden.evaluate(api.parse(kernel(op, dt, 8, 32, v0, v1, (R, C))), {"a": x, "b": y})["result0"]
    check(got[:R, :C], oracle(op, dt, x, y), dt)


def run_backend(target, text, x, y):
    if target == "a2a3":
        m, prog = H.compile_text(text)
    else:
        m, _, prog = D5.compile_text(text)
    res = pipeline.run_program(prog, pipeline.gm_inputs({"a": x, "b": y}), {}, stats=False)
    assert not res.findings, res.findings
    return res.outputs["result0"]


def backend_cases():
    for target in ("a2a3", "ascend950"):
        for op in sorted(OPS):
            for dt in sorted(pto.TILE_OPS[f"pto.{op}"].DTYPES[target]):
                for pattern in sorted(SHAPES):
                    yield target, op, dt, pattern


@pytest.mark.parametrize("target, op, dt, pattern", list(backend_cases()))
def test_backends_match_the_page(target, op, dt, pattern):
    """Valid region 9 x (cols - 3) of a 12 x cols tile, cols two 32-byte blocks a row."""
    cols = 64 // DA.ESIZE[dt]
    R, C = 9, cols - 3
    v0, v1 = SHAPES[pattern](R, C)
    x, y = inputs(dt, v0, v1, R * C)
    got = run_backend(target, kernel(op, dt, 12, cols, v0, v1, (R, C)), x, y)
    check(np.asarray(got)[:R, :C], oracle(op, dt, x, y), dt)


@pytest.mark.parametrize("target, op", [("a2a3", "tpartmax"), ("a2a3", "tpartadd"), ("ascend950", "tpartadd"),
                                        ("ascend950", "tpartmul")])
def test_a_source_of_zero_valid_rows_leaves_the_other(target, op):
    """Only the other source is defined anywhere in dst's valid region: dst = that source."""
    x = np.arange(9 * 13, dtype=np.float32).reshape(9, 13) - 50
    y = np.zeros((0, 13), np.float32)
    text = kernel(op, "f32", 12, 16, (9, 13), (0, 13), (9, 13))
    check(np.asarray(run_backend(target, text, x, y))[:9, :13], oracle(op, "f32", x, y), "f32")
    check(golden.evaluate(api.parse(text), {"a": x, "b": y})["result0"][:9, :13], oracle(op, "f32", x, y), "f32")


@pytest.mark.parametrize("op", ["tpartmax", "tpartmin"])
def test_a5_early_return_on_a_zero_source_is_a_located_error(op):
    """TPARTMAX.md/TPARTMIN.md (A5): a zero source valid region returns early, dst left as it was."""
    text = kernel(op, "f32", 12, 16, (9, 13), (0, 13), (9, 13))
    with pytest.raises(PtocError) as e:
        D5.compile_text(text)
    assert "<test>:2:8: error:" in str(e.value) and "returns early on A5" in str(e.value)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dvalid", [(0, 13), (9, 0)])
def test_an_empty_dst_writes_nothing(target, op, dvalid):
    """TPARTADD.md: "If dst has a zero valid region, the instruction returns early": dst's tile keeps
    what was loaded into it, on both backends and in the golden model (sources 9 x 13 and 4 x 5)."""
    t0, t1 = "!pto.tile_buf<vec, 12x16xf32, valid=9x13>", "!pto.tile_buf<vec, 12x16xf32, valid=4x5>"
    td = f"!pto.tile_buf<vec, 12x16xf32, valid={dvalid[0]}x{dvalid[1]}>"
    whole = "!pto.tile_buf<vec, 12x16xf32>"
    part = "!pto.partition_tensor_view<12x16xf32>"
    lines = ["func.func @k(%x0: !pto.ptr<f32>, %x1: !pto.ptr<f32>, %y: !pto.ptr<f32>) {",
             "  %z = arith.constant 0 : index", "  %one = arith.constant 1 : index",
             "  %c12 = arith.constant 12 : index", "  %c16 = arith.constant 16 : index",
             "  %a = arith.constant 4096 : i64"]
    for name, (r, c) in (("x0", (9, 13)), ("x1", (4, 5)), ("y", (12, 16))):
        lines += [f"  %{name}v = pto.make_tensor_view %{name}, shape = [%c12, %c16], strides = [%c16, %one] : !pto.tensor_view<?x?xf32>",
                  f"  %{name}p = pto.partition_view %{name}v, offsets = [%z, %z], sizes = [%c{r}, %c{c}] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<{r}x{c}xf32>"]
    lines[4:4] = [f"  %c{n} = arith.constant {n} : index" for n in (4, 5, 9, 13)]
    lines += [f"  %tx0 = pto.alloc_tile : {t0}", f"  %tx1 = pto.alloc_tile : {t1}",
              f"  %ty = pto.alloc_tile addr = %a : {whole}", f"  %td = pto.alloc_tile addr = %a : {td}",
              f"  pto.tload ins(%x0p : !pto.partition_tensor_view<9x13xf32>) outs(%tx0 : {t0})",
              f"  pto.tload ins(%x1p : !pto.partition_tensor_view<4x5xf32>) outs(%tx1 : {t1})",
              f"  pto.tload ins(%yp : {part}) outs(%ty : {whole})",
              f"  pto.{op} ins(%tx0, %tx1 : {t0}, {t1}) outs(%td : {td})",
              f"  pto.tstore ins(%ty : {whole}) outs(%yp : {part})", "  return", "}"]
    text = "\n".join(lines) + "\n"
    rng = np.random.default_rng(len(op))
    x0, x1, y = (rng.standard_normal((12, 16)).astype(np.float32) for _ in range(3))
    inputs = {"x0": x0, "x1": x1, "y": y}
    got = golden.evaluate(api.parse(text, "k.pto"), inputs, target=target)["y"]
    np.testing.assert_array_equal(got.reshape(12, 16), y, err_msg="golden model")
    program = api.compile(api.parse(text, "k.pto"), target)
    res = api.run(program, inputs)
    assert not res.findings, [str(f) for f in res.findings]
    np.testing.assert_array_equal(res.outputs["y"].reshape(12, 16), y, err_msg=target)
