"""A GM partition whose leading dimensions are all known only at run time (PTOAS's
insert_sync_level3_enable: a 5-D view, sizes from kernel scalars): tile row r is GM row
(i0, i1, i2) of the partition in C order, as pto_isa.md §2's ND mapping says; both targets,
against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import cli

TARGETS = ("a2a3", "ascend950")
TILE = "!pto.tile_buf<vec, 32x8xf32, valid=?x?>"
PART = "!pto.partition_tensor_view<?x?x?x?xf32>"


def kernel() -> str:
    """y[o0+i0, o1+i1, o2+i2, :n3] = x[...] + 1 over the partition of sizes (n0, n1, n2, n3) at
    offsets (o0, o1, o2, 0) of 3x4x5x8 views, through one tile of n0*n1*n2 rows."""
    view = "!pto.tensor_view<3x4x5x8xf32>"
    return f"""
func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %n0: index, %n1: index, %n2: index, %n3: index,
             %o0: index, %o1: index, %o2: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %c40 = arith.constant 40 : index
  %c160 = arith.constant 160 : index
  %one = arith.constant 1.0 : f32
  %xv = pto.make_tensor_view %x, shape = [%c3, %c4, %c5, %c8], strides = [%c160, %c40, %c8, %c1] : {view}
  %yv = pto.make_tensor_view %y, shape = [%c3, %c4, %c5, %c8], strides = [%c160, %c40, %c8, %c1] : {view}
  %xp = pto.partition_view %xv, offsets = [%o0, %o1, %o2, %c0], sizes = [%n0, %n1, %n2, %n3] : {view} -> {PART}
  %yp = pto.partition_view %yv, offsets = [%o0, %o1, %o2, %c0], sizes = [%n0, %n1, %n2, %n3] : {view} -> {PART}
  %r01 = arith.muli %n0, %n1 : index
  %rows = arith.muli %r01, %n2 : index
  %t = pto.alloc_tile valid_row = %rows valid_col = %n3 : {TILE}
  pto.tload ins(%xp : {PART}) outs(%t : {TILE})
  pto.tadds ins(%t, %one : {TILE}, f32) outs(%t : {TILE})
  pto.tstore ins(%t : {TILE}) outs(%yp : {PART})
  return
}}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("sizes,offsets", [((2, 3, 4, 8), (1, 1, 0)), ((1, 4, 5, 5), (0, 0, 0)),
                                           ((3, 1, 2, 3), (0, 2, 3))])
def test_run_time_leading_dims(target, sizes, offsets, tmp_path, capsys):
    path = tmp_path / "k.pto"
    path.write_text(kernel())
    x = np.random.default_rng(2).standard_normal((3, 4, 5, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x.reshape(-1))
    np.save(tmp_path / "y.npy", np.zeros(x.size, np.float32))
    args = [str(path), "--target", target, "--run", "--input", f"x={tmp_path / 'x.npy'}",
            "--input", f"y={tmp_path / 'y.npy'}", "--save-outputs", str(tmp_path / "o")]
    for name, v in zip(("n0", "n1", "n2", "n3", "o0", "o1", "o2"), (*sizes, *offsets)):
        args += ["--input", f"{name}={v}"]
    rc = cli.main(args)
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert out.startswith("PASS y"), out
    want = np.zeros_like(x)
    (n0, n1, n2, n3), (o0, o1, o2) = sizes, offsets
    want[o0:o0 + n0, o1:o1 + n1, o2:o2 + n2, :n3] = x[o0:o0 + n0, o1:o1 + n1, o2:o2 + n2, :n3] + np.float32(1)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy").reshape(x.shape), want)
