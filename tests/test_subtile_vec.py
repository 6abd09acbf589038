"""TINSERT / TEXTRACT between two vec tiles (the A5 vec -> vec TINSERT of PTOAS's
tinsert_a5_vec_pipe_selection): ``dst[row + i, col + j] = src[i, j]`` over src's valid region,
``dst[i, j] = src[row + i, col + j]`` over dst's, on both targets against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import cli

TARGETS = ("a2a3", "ascend950")
BIG = "!pto.tile_buf<vec, 16x32xf32>"
SMALL = "!pto.tile_buf<vec, 8x16xf32, valid=5x16>"
TV = "!pto.tensor_view<?x?xf32>"


def kernel(row: int, col: int) -> str:
    """y (16x32) = x with z's 5x16 block inserted at (row, col); w (5x16) = the block of x at (row, col)."""
    return f"""
func.func @k(%x: !pto.ptr<f32>, %z: !pto.ptr<f32>, %y: !pto.ptr<f32>, %w: !pto.ptr<f32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %r = arith.constant {row} : index
  %c = arith.constant {col} : index
  %xv = pto.make_tensor_view %x, shape = [%c16, %c32], strides = [%c32, %c1] : {TV}
  %yv = pto.make_tensor_view %y, shape = [%c16, %c32], strides = [%c32, %c1] : {TV}
  %zv = pto.make_tensor_view %z, shape = [%c5, %c16], strides = [%c16, %c1] : {TV}
  %wv = pto.make_tensor_view %w, shape = [%c5, %c16], strides = [%c16, %c1] : {TV}
  %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c32] : {TV} -> !pto.partition_tensor_view<16x32xf32>
  %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c32] : {TV} -> !pto.partition_tensor_view<16x32xf32>
  %zp = pto.partition_view %zv, offsets = [%c0, %c0], sizes = [%c5, %c16] : {TV} -> !pto.partition_tensor_view<5x16xf32>
  %wp = pto.partition_view %wv, offsets = [%c0, %c0], sizes = [%c5, %c16] : {TV} -> !pto.partition_tensor_view<5x16xf32>
  %big = pto.alloc_tile : {BIG}
  %small = pto.alloc_tile : {SMALL}
  %ext = pto.alloc_tile : {SMALL}
  pto.tload ins(%xp : !pto.partition_tensor_view<16x32xf32>) outs(%big : {BIG})
  pto.tload ins(%zp : !pto.partition_tensor_view<5x16xf32>) outs(%small : {SMALL})
  pto.textract ins(%big, %r, %c : {BIG}, index, index) outs(%ext : {SMALL})
  pto.tstore ins(%ext : {SMALL}) outs(%wp : !pto.partition_tensor_view<5x16xf32>)
  pto.tinsert ins(%small, %r, %c : {SMALL}, index, index) outs(%big : {BIG})
  pto.tstore ins(%big : {BIG}) outs(%yp : !pto.partition_tensor_view<16x32xf32>)
  return
}}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("row,col", [(0, 0), (3, 8), (11, 16)])
def test_vec_insert_and_extract(target, row, col, tmp_path, capsys):
    path = tmp_path / "k.pto"
    path.write_text(kernel(row, col))
    rng = np.random.default_rng(row * 100 + col)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    z = rng.standard_normal((5, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "z.npy", z)
    rc = cli.main([str(path), "--target", target, "--run", "--input", f"x={tmp_path / 'x.npy'}",
                   "--input", f"z={tmp_path / 'z.npy'}", "--save-outputs", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    y = x.copy()
    y[row:row + 5, col:col + 16] = z
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), y)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "w.npy"), x[row:row + 5, col:col + 16])
