"""treshape and subset (passes/tile_views.py): views of another tile's bytes in the golden model,
the planner and both lowerings; outputs checked against NumPy on both targets."""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import cli
from tests.test_constructs import TARGETS, _run

HEAD = """func.func @k(%x: !pto.ptr<f32>, %z: !pto.ptr<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1.0 : f32
  %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
  %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
  %a = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
  pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%a : !pto.tile_buf<vec, 16x16xf32>)
"""

RESHAPE_SUBSET = HEAD + """  %zv = pto.make_tensor_view %z, shape = [%c8, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>
  %zp = pto.partition_view %zv, offsets = [%c0, %c0], sizes = [%c8, %c32] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x32xf32>
  %s = pto.subset %a[%c8, %c0] sizes [8, 16] : !pto.tile_buf<vec, 16x16xf32>
  pto.tadds ins(%s, %one : !pto.tile_buf<vec, 8x16xf32>, f32) outs(%s : !pto.tile_buf<vec, 8x16xf32>)
  %r = pto.treshape %a : !pto.tile_buf<vec, 16x16xf32> -> !pto.tile_buf<vec, 8x32xf32>
  pto.tstore ins(%r : !pto.tile_buf<vec, 8x32xf32>) outs(%zp : !pto.partition_tensor_view<8x32xf32>)
  return
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_subset_writes_its_block_and_treshape_reads_the_bytes(target, tmp_path, capsys):
    x = np.random.default_rng(7).integers(-100, 100, (16, 16)).astype(np.float32)
    rc, out, err = _run(tmp_path, capsys, RESHAPE_SUBSET, target, {"x": x})
    assert rc == 0 and out.startswith("PASS z"), out + err
    want = x.copy()
    want[8:] += 1
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "z.npy"), want.reshape(8, 32))


COLUMN_AS_ROW = HEAD + """  %zv = pto.make_tensor_view %z, shape = [%c1, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
  %zp = pto.partition_view %zv, offsets = [%c0, %c0], sizes = [%c1, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<1x16xf32>
  %m = pto.alloc_tile : !pto.tile_buf<vec, 16x1xf32, blayout=col_major>
  %t = pto.alloc_tile : !pto.tile_buf<vec, 16x8xf32>
  pto.trowmax ins(%a, %t : !pto.tile_buf<vec, 16x16xf32>, !pto.tile_buf<vec, 16x8xf32>) outs(%m : !pto.tile_buf<vec, 16x1xf32, blayout=col_major>)
  %r = pto.treshape %m : !pto.tile_buf<vec, 16x1xf32, blayout=col_major> -> !pto.tile_buf<vec, 1x16xf32>
  pto.tstore ins(%r : !pto.tile_buf<vec, 1x16xf32>) outs(%zp : !pto.partition_tensor_view<1x16xf32>)
  return
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_treshape_of_a_column_is_a_row(target, tmp_path, capsys):
    """The Qwen3 pattern: a 16x1 ColMajor row-max read as a 1x16 RowMajor row (the same 64 bytes)."""
    x = np.random.default_rng(8).standard_normal((16, 16)).astype(np.float32)
    rc, out, err = _run(tmp_path, capsys, COLUMN_AS_ROW, target, {"x": x})
    assert rc == 0 and out.startswith("PASS z"), out + err
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "z.npy"), x.max(axis=1).reshape(1, 16))


STRIDED_SUBSET = RESHAPE_SUBSET.replace("%a[%c8, %c0] sizes [8, 16]", "%a[%c8, %c8] sizes [8, 8]").replace(
    "vec, 8x16xf32", "vec, 8x8xf32")


def test_a_block_that_is_no_tile_runs_in_the_golden_model_and_is_located_when_compiled(tmp_path, capsys):
    path = tmp_path / "s.pto"
    path.write_text(STRIDED_SUBSET)
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    np.save(tmp_path / "x.npy", x)
    assert cli.main([str(path), "--reference", "--input", f"x={tmp_path / 'x.npy'}",
                     "--save-outputs", str(tmp_path / "o")]) == 0
    want = x.copy()
    want[8:, 8:] += 1
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "z.npy"), want.reshape(8, 32))
    capsys.readouterr()
    assert cli.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert (f"{path}:14:8: error: 'pto.subset' op block [8:16, 8:16] of a 16x16 tile is not contiguous, so it "
            "is no tile the hardware can address") in err, err


def test_treshape_changing_the_byte_count_is_located(tmp_path, capsys):
    path = tmp_path / "r.pto"
    path.write_text(HEAD + "  %r = pto.treshape %a : !pto.tile_buf<vec, 16x16xf32> -> !pto.tile_buf<vec, 8x16xf32>\n"
                    "  return\n}\n")
    for extra in (["--reference"], ["--emit", "placed"]):
        assert cli.main([str(path), *extra]) == 1
        assert f"{path}:12:8: error: 'pto.treshape' op reinterprets 1024 bytes as a 512-byte tile (TRESHAPE keeps " \
            "the bytes)" in capsys.readouterr().err


SET_VALIDSHAPE = """func.func @k(%x: !pto.ptr<f32>, %z: !pto.ptr<f32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
  %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
  %zv = pto.make_tensor_view %z, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
  %zp = pto.partition_view %zv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
  %a = pto.alloc_tile valid_row = %c16 valid_col = %c16 : !pto.tile_buf<vec, 16x16xf32, valid=?x?>
  pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%a : !pto.tile_buf<vec, 16x16xf32, valid=?x?>)
  pto.set_validshape %a, %n, %c16 : !pto.tile_buf<vec, 16x16xf32, valid=?x?>
  pto.tadd ins(%a, %a : !pto.tile_buf<vec, 16x16xf32, valid=?x?>, !pto.tile_buf<vec, 16x16xf32, valid=?x?>) outs(%a : !pto.tile_buf<vec, 16x16xf32, valid=?x?>)
  pto.set_validshape %a, %c16, %c16 : !pto.tile_buf<vec, 16x16xf32, valid=?x?>
  pto.tstore ins(%a : !pto.tile_buf<vec, 16x16xf32, valid=?x?>) outs(%zp : !pto.partition_tensor_view<16x16xf32>)
  return
}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 5, 16])
def test_set_validshape_changes_the_region_later_ops_work_on(target, n, tmp_path, capsys):
    x = np.random.default_rng(9).standard_normal((16, 16)).astype(np.float32)
    rc, out, err = _run(tmp_path, capsys, SET_VALIDSHAPE, target, {"x": x}, ("--input", f"n={n}"))
    assert rc == 0 and out.startswith("PASS z"), out + err
    want = x.copy()
    want[:n] *= 2
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "z.npy"), want)


def test_set_validshape_inside_a_branch_is_located(tmp_path, capsys):
    path = tmp_path / "b.pto"
    path.write_text(SET_VALIDSHAPE.replace(
        "  pto.set_validshape %a, %n, %c16 : !pto.tile_buf<vec, 16x16xf32, valid=?x?>\n",
        "  %c = arith.cmpi slt, %n, %c16 : index\n  scf.if %c {\n"
        "    pto.set_validshape %a, %n, %c16 : !pto.tile_buf<vec, 16x16xf32, valid=?x?>\n  }\n"))
    assert cli.main([str(path)]) == 1
    assert f"{path}:13:5: error: 'pto.set_validshape' op in another block than its tile's has no lowering yet" in \
        capsys.readouterr().err
    np.save(tmp_path / "x.npy", np.ones((16, 16), np.float32))
    assert cli.main([str(path), "--reference", "--input", f"x={tmp_path / 'x.npy'}", "--input", "n=3"]) == 0


def _mid_broadcast(rows: str = "%r", cols: str = "%k0", sizes: str = "3, 64", bound: str = "%k8") -> str:
    """y[m, b, :] = x[m, b, :] + a[m, :] (m = 8, b = 3): per trip m, TCOLEXPANDADD on the subsets
    of rows 3m..3m+2 of x and y and row m of a, offsets computed from the loop variable (other
    ``rows``/``cols``/``sizes``: x's block doubled into y's)."""
    x_t, a_t = "!pto.tile_buf<vec, 24x64xf32>", "!pto.tile_buf<vec, 8x64xf32>"
    h, w = (int(s) for s in sizes.split(", "))
    # PTOAS's subset type: a run-time offset makes that valid extent '?'
    sub = f"!pto.tile_buf<vec, {h}x{w}xf32, valid={'?' if rows != '%k0' else h}x{'?' if cols != '%k0' else w}>"
    return f"""func.func @mid(%x: !pto.ptr<f32>, %a: !pto.ptr<f32>, %y: !pto.ptr<f32>, %n: index) {{
  %k0 = arith.constant 0 : index
  %k1 = arith.constant 1 : index
  %k3 = arith.constant 3 : index
  %k8 = arith.constant 8 : index
  %k24 = arith.constant 24 : index
  %k64 = arith.constant 64 : index
  %xv = pto.make_tensor_view %x, shape = [%k24, %k64], strides = [%k64, %k1] : !pto.tensor_view<?x?xf32>
  %av = pto.make_tensor_view %a, shape = [%k8, %k64], strides = [%k64, %k1] : !pto.tensor_view<?x?xf32>
  %yv = pto.make_tensor_view %y, shape = [%k24, %k64], strides = [%k64, %k1] : !pto.tensor_view<?x?xf32>
  %xp = pto.partition_view %xv, offsets = [%k0, %k0], sizes = [%k24, %k64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<24x64xf32>
  %ap = pto.partition_view %av, offsets = [%k0, %k0], sizes = [%k8, %k64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x64xf32>
  %yp = pto.partition_view %yv, offsets = [%k0, %k0], sizes = [%k24, %k64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<24x64xf32>
  %xt = pto.alloc_tile : {x_t}
  %at = pto.alloc_tile : {a_t}
  %yt = pto.alloc_tile : {x_t}
  pto.tload ins(%xp : !pto.partition_tensor_view<24x64xf32>) outs(%xt : {x_t})
  pto.tload ins(%ap : !pto.partition_tensor_view<8x64xf32>) outs(%at : {a_t})
  scf.for %m = %k0 to {bound} step %k1 {{
    %r = arith.muli %m, %k3 : index
    %xs = pto.subset %xt[{rows}, {cols}] sizes [{sizes}] : {x_t}
    %as = pto.subset %at[%m, %k0] sizes [1, 64] : {a_t}
    %ys = pto.subset %yt[{rows}, {cols}] sizes [{sizes}] : {x_t}
    {"pto.tcolexpandadd ins(%xs, %as : " + sub + ", !pto.tile_buf<vec, 1x64xf32, valid=?x64>)" if sizes == "3, 64"
     else "pto.tadd ins(%xs, %xs : " + sub + ", " + sub + ")"} outs(%ys : {sub})
  }}
  pto.tstore ins(%yt : {x_t}) outs(%yp : !pto.partition_tensor_view<24x64xf32>)
  return
}}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_subset_offset_computed_from_the_loop_variable(target, tmp_path, capsys):
    """pto-plan-memory places a subset whose offset depends on the loop: a tassign to the address
    the run computes, inside its planned source."""
    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, (24, 64)).astype(np.float32)
    a = rng.integers(-50, 50, (8, 64)).astype(np.float32)
    rc, out, err = _run(tmp_path, capsys, _mid_broadcast(), target, {"x": x, "a": a},
                       ("--input", "n=8"))
    assert rc == 0 and out.startswith("PASS y"), out + err
    want = (x.reshape(8, 3, 64) + a[:, None, :]).reshape(24, 64)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), want)


@pytest.mark.parametrize("kernel, line, col, message", [
    (_mid_broadcast(bound="%n"), 21, 11, "has a run-time offset whose range pto-plan-memory cannot bound"),
    (_mid_broadcast(bound="%k24"), 21, 11, "may take rows [0, 72) and cols [0, 64), outside its 24x64 source"),
    (_mid_broadcast(rows="%k0", cols="%m", sizes="3, 8"), 21, 11,
     "block [0..0 + 3, 0..7 + 8] of a 24x64 tile is not contiguous"),
    (_mid_broadcast(rows="%k0", cols="%m", sizes="1, 8"), 21, 11,
     "may start at a byte offset of its source that is not a multiple of 32 (offsets 0..28 in steps of 4)"),
])
def test_subset_offset_computed_at_run_time_that_cannot_be_placed_is_located(kernel, line, col, message, tmp_path,
                                                                             capsys):
    path = tmp_path / "m.pto"
    path.write_text(kernel)
    assert cli.main([str(path), "--emit", "placed"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:{line}:{col}: error: 'pto.subset' op {message}" in err, err


@pytest.mark.parametrize("parent, offsets, sizes, want", [
    ("32x64xf32, valid=32x32", ("%c0", "%c32"), "32, 32", "32x32"),  # PTOAS's ping/pong example: a full half
    ("32x64xf32, valid=32x32", ("%c0", "%c16"), "32, 32", "32x16"),
    ("32x64xf32, valid=20x64", ("%c16", "%c0"), "16, 64", "4x64"),
    ("32x64xf32", ("%n", "%c0"), "16, 64", "?x64"),
    ("32x64xf32, valid=?x64", ("%c0", "%c0"), "16, 64", "?x64"),
])
def test_subset_type_is_the_one_ptoas_infers(parent, offsets, sizes, want):
    """SubsetOp::inferReturnTypes: per dimension min(size, pv - off mod pv) for a constant offset
    and a static parent valid extent, else '?'."""
    from pto_compiler import api

    valid = "valid_row = %vr " if "valid=?" in parent else ""
    src = f"""func.func @k(%n: index, %vr: index) {{
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %a = pto.alloc_tile {valid}: !pto.tile_buf<vec, {parent}>
  %s = pto.subset %a[{offsets[0]}, {offsets[1]}] sizes [{sizes}] : !pto.tile_buf<vec, {parent}>
  return
}}
"""
    (sub,) = [op for op in api.parse(src, "s.pto").walk() if op.name == "pto.subset"]
    h, w = sizes.split(", ")
    assert str(sub.results[0].type) == (f"!pto.tile_buf<vec, {h}x{w}xf32>" if want == f"{h}x{w}"
                                        else f"!pto.tile_buf<vec, {h}x{w}xf32, valid={want}>")
