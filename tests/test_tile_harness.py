"""``ptoc --run`` of a kernel that writes no GM (passes/tile_harness.py): the tiles it reads are
loaded from seeded (or given) ``tile_NAME`` inputs, the tiles it writes stored to ``tile_NAME``
outputs, and those are compared; checked here against NumPy written from each op's meaning."""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.passes import tile_harness
from cli_run import run_ptoc

TARGETS = ("a2a3", "ascend950")
V = "!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=row_major, slayout=none_box>"
COL = "!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=1, v_row=8, v_col=1, blayout=col_major, slayout=none_box>"

ON_CHIP = f"""
func.func @k() {{
  %two = arith.constant 2.0 : f32
  %a = pto.alloc_tile : {V}
  %b = pto.alloc_tile : {V}
  %d = pto.alloc_tile : {V}
  pto.tadds ins(%a, %two : {V}, f32) outs(%b : {V})
  pto.tmul ins(%b, %a : {V}, {V}) outs(%d : {V})
  return
}}
"""

ROW_SUM = f"""
func.func @k() {{
  %a = pto.alloc_tile : {V}
  %tmp = pto.alloc_tile : {V}
  %s = pto.alloc_tile : {COL}
  pto.trowsum ins(%a, %tmp : {V}, {V}) outs(%s : {COL})
  return
}}
"""

WRITES_GM = f"""
func.func @k(%x: !pto.ptr<f32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %xv = pto.make_tensor_view %x, shape = [%c8, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
  %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c8, %c16]
      : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
  %a = pto.alloc_tile : {V}
  %b = pto.alloc_tile : {V}
  pto.tneg ins(%a : {V}) outs(%b : {V})
  pto.tstore ins(%b : {V}) outs(%xp : !pto.partition_tensor_view<8x16xf32>)
  return
}}
"""


_run = run_ptoc


@pytest.mark.parametrize("target", TARGETS)
def test_tiles_read_are_inputs_and_tiles_written_are_compared_outputs(target, tmp_path, capsys):
    a = np.linspace(-3, 3, 128, dtype=np.float32).reshape(8, 16)
    rc, out, err = _run(tmp_path, capsys, ON_CHIP, target, {"tile_a": a})
    assert rc == 0, out + err
    # %a is only read: an input, not stored; %b and %d are written: outputs, compared
    assert out.splitlines() == ["PASS tile_b 0", "PASS tile_d 0"]
    assert "nothing has written" not in err
    b = a + np.float32(2)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tile_b.npy").reshape(8, 16), b)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tile_d.npy").reshape(8, 16), b * a)


@pytest.mark.parametrize("target", TARGETS)
def test_the_harness_orders_its_own_moves_when_the_kernel_runs_with_its_own_syncs(target, tmp_path, capsys):
    """With --no-insert-sync nothing orders the harness's loads and stores but its PIPE_ALL
    barriers: the run finds no race (exit 0) and compares the same outputs."""
    a = np.linspace(-1, 1, 128, dtype=np.float32).reshape(8, 16)
    rc, out, err = _run(tmp_path, capsys, ON_CHIP, target, {"tile_a": a}, ["--no-insert-sync"])
    assert rc == 0, out + err
    assert out.splitlines() == ["PASS tile_b 0", "PASS tile_d 0"]
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tile_d.npy").reshape(8, 16), (a + np.float32(2)) * a)


@pytest.mark.parametrize("target", TARGETS)
def test_a_tmp_tile_is_neither_loaded_nor_compared(target, tmp_path, capsys):
    a = np.arange(128, dtype=np.float32).reshape(8, 16) - 60
    rc, out, err = _run(tmp_path, capsys, ROW_SUM, target, {"tile_a": a})
    assert rc == 0, out + err
    assert out.splitlines() == ["PASS tile_s 0"]  # a one-column DN tile is stored as its column
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tile_s.npy").reshape(8, 1), a.sum(axis=1, keepdims=True))


def test_the_harness_adds_no_argument_to_a_kernel_that_writes_gm_and_leaves_the_kernel_unchanged():
    module = api.parse(WRITES_GM, "k.pto")
    assert tile_harness.harnessed(module) is module
    on_chip = api.parse(ON_CHIP, "k.pto")
    text = api.print_module(on_chip)
    harnessed = tile_harness.harnessed(on_chip)
    assert harnessed is not on_chip and api.print_module(on_chip) == text
    fn = next(op for op in harnessed.walk() if op.name == "func.func")
    assert [a.name_hint for a in fn.body.blocks[0].args] == ["tile_a", "tile_b", "tile_d"]
    assert tile_harness.harnessed(harnessed) is harnessed  # ptoc --run and api.check both call it


R = "!pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=16, v_row=1, v_col=16, blayout=row_major, slayout=none_box>"
SAME_BYTES = f"""
func.func @k() {{
  %c0 = arith.constant 0 : i64
  %c64 = arith.constant 64 : i64
  %one = arith.constant 1.0 : f32
  %a = pto.alloc_tile addr = %c0 : {R}
  %b = pto.alloc_tile addr = %c0 : {R}
  %c = pto.alloc_tile addr = %c64 : {R}
  %d = pto.alloc_tile : {R}
  pto.tadds ins(%a, %one : {R}, f32) outs(%d : {R})
  pto.tadd ins(%b, %c : {R}, {R}) outs(%d : {R})
  return
}}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_tiles_placed_at_the_same_bytes_are_not_loaded(target, tmp_path, capsys):
    """Loading %a and %b, both at UB 0, would overwrite one load with the other: neither is loaded
    (they read what the UB holds, zeros in both models), %c at its own bytes is."""
    c = np.arange(16, dtype=np.float32).reshape(1, 16)
    rc, out, err = _run(tmp_path, capsys, SAME_BYTES, target, {"tile_c": c})
    assert rc == 0, out + err
    assert out.splitlines() == ["PASS tile_d 0"]
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tile_d.npy").reshape(1, 16), c)


CUBE = """
func.func @k() {
  %m = pto.alloc_tile : !pto.tile_buf<loc=mat, dtype=f16, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major>
  %l = pto.alloc_tile : !pto.tile_buf<loc=left, dtype=f16, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=row_major>
  pto.tmov ins(%m : !pto.tile_buf<loc=mat, dtype=f16, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major>) outs(%l : !pto.tile_buf<loc=left, dtype=f16, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=row_major>)
  return
}
"""


def test_a_tile_no_store_moves_out_leaves_through_a_window():
    """An L0A tile has no path to GM: the harness stores it through a window (a tstore marked
    harness_window, no hardware instruction), the NZ mat tile through a plain tload."""
    from pto_compiler.passes.lower_cube import WINDOW

    harnessed = tile_harness.harnessed(api.parse(CUBE, "k.pto"))
    fn = next(op for op in harnessed.walk() if op.name == "func.func")
    assert [a.name_hint for a in fn.body.blocks[0].args] == ["tile_m", "tile_l"]
    moves = [op for op in fn.walk() if op.name in ("pto.tload", "pto.tstore")]
    assert [(op.name, WINDOW in op.attributes) for op in moves] == [("pto.tload", False), ("pto.tstore", True)]


def _tile(loc, rows, cols, blayout, slayout, dtype="f32", fractal=512):
    return (f"!pto.tile_buf<loc={loc}, dtype={dtype}, rows={rows}, cols={cols}, v_row={rows}, v_col={cols}, "
            f"blayout={blayout}, slayout={slayout}, fractal={fractal}, pad=0>")


# the corpus's left_blayout_parser_a3 / _a5 layouts, with the extract at an offset
EXTRACT = {"a2a3": (_tile("mat", 32, 32, "row_major", "col_major"), _tile("left", 16, 16, "row_major", "row_major")),
           "ascend950": (_tile("mat", 32, 32, "col_major", "row_major"), _tile("left", 16, 16, "col_major", "row_major"))}


@pytest.mark.parametrize("target", TARGETS)
def test_an_extract_into_l0a_is_compared_through_windows(target, tmp_path, capsys):
    """textract (16, 16) of a 32x32 mat into an L0A tile, a result no instruction moves to GM: the
    mat tile (a ZN one on a2a3, which no DMA writes from ND rows) is seeded and the L0A tile read
    back through windows, and the run compares it; it is the mat's lower-right quarter."""
    m_t, l_t = EXTRACT[target]
    src = f"""
func.func @k() {{
  %c16 = arith.constant 16 : index
  %m = pto.alloc_tile : {m_t}
  %l = pto.alloc_tile : {l_t}
  pto.textract ins(%m, %c16, %c16 : {m_t}, index, index) outs(%l : {l_t})
  return
}}
"""
    m = (np.arange(32 * 32, dtype=np.float32).reshape(32, 32) - 500) / 8
    rc, out, err = _run(tmp_path, capsys, src, target, {"tile_m": m})
    assert rc == 0, out + err
    assert out.splitlines() == ["PASS tile_l 0"]
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tile_l.npy").reshape(16, 16), m[16:, 16:])


ACC = _tile("acc", 16, 16, "col_major", "row_major", fractal=1024)
MAT = _tile("mat", 32, 16, "col_major", "row_major")
INSERT = f"""
func.func @k() {{
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %a = pto.alloc_tile : {ACC}
  %m = pto.alloc_tile : {MAT}
  pto.tinsert ins(%a, %c16, %c0 : {ACC}, index, index) outs(%m : {MAT})
  return
}}
"""


def test_an_acc_tile_nothing_computes_is_seeded_through_a_window(tmp_path, capsys):
    """tinsert_verify_a5's form: an acc tile nothing writes (no DMA reaches L0C) is seeded through
    a window, inserted at row 16 of a mat tile (the fixpipe, f32 -> f32), which is compared."""
    acc = np.linspace(-4, 4, 256, dtype=np.float32).reshape(16, 16)
    rc, out, err = _run(tmp_path, capsys, INSERT, "ascend950", {"tile_a": acc})
    assert rc == 0, out + err
    assert out.splitlines() == ["PASS tile_m 0"]
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tile_m.npy").reshape(32, 16)[16:], acc)


def test_a_kernel_written_in_vf_runs_as_written():
    """The VF executor runs such a kernel as it is (no tile-level golden model to compare with)."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "examples" / "reduce_min_f32.pto").read_text()
    no_store = "\n".join(line for line in text.splitlines() if "pto.tstore" not in line)
    module = api.parse(no_store, "k.pto")
    assert tile_harness.harnessed(module) is module


VEC16 = _tile("vec", 16, 16, "row_major", "none_box")
MAT16 = _tile("mat", 16, 16, "col_major", "row_major")
ACC16 = _tile("acc", 16, 16, "col_major", "row_major", fractal=1024)
LEFT16 = {"a2a3": _tile("left", 16, 16, "row_major", "row_major"), "ascend950": _tile("left", 16, 16, "col_major", "row_major")}


def _round_trip(target: str) -> str:
    """tpush_tpop_frontend_lowering's form: the cube pushes an acc tile nothing computes and moves
    the tile it pops into L0A; the vector pushes a tile nothing loads and negates the one it pops."""
    def buffers(kind, own, peer):
        loc = "mat" if kind == "cube" else "vec"
        return f"""
    %{own} = pto.reserve_buffer {{name = "{own}", size = 4096, location = #pto.address_space<{loc}>, auto = true}} -> i32
    %{peer} = pto.import_reserved_buffer {{name = "{peer}", peer_func = @{"vector_k" if kind == "cube" else "cube_k"}}} -> i32"""
    return f"""
module {{
  func.func @cube_k(%gm_slot: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    {buffers("cube", "v2c_fifo", "c2v_fifo")}
    pto.aic_initialize_pipe {{dir_mask = 3, slot_size = 1024}}
      (gm_slot_buffer = %gm_slot : !pto.ptr<f32>, c2v_consumer_buf = %c2v_fifo : i32, v2c_consumer_buf = %v2c_fifo : i32)
    %acc = pto.alloc_tile : {ACC16}
    pto.tpush_to_aiv(%acc : {ACC16}) {{split = 0}}
    %m = pto.tpop_from_aiv {{split = 0}} -> {MAT16}
    %left = pto.alloc_tile : {LEFT16[target]}
    pto.tmov ins(%m : {MAT16}) outs(%left : {LEFT16[target]})
    pto.tfree_from_aiv {{split = 0}}
    return
  }}
  func.func @vector_k(%gm_slot: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    {buffers("vector", "c2v_fifo", "v2c_fifo")}
    pto.aiv_initialize_pipe {{dir_mask = 3, slot_size = 1024}}
      (gm_slot_buffer = %gm_slot : !pto.ptr<f32>, c2v_consumer_buf = %c2v_fifo : i32, v2c_consumer_buf = %v2c_fifo : i32)
    %v = pto.alloc_tile : {VEC16}
    pto.tpush_to_aic(%v : {VEC16}) {{split = 0}}
    %r = pto.tpop_from_aic {{split = 0}} -> {VEC16}
    %neg = pto.alloc_tile : {VEC16}
    pto.tneg ins(%r : {VEC16}) outs(%neg : {VEC16})
    pto.tfree_from_aic {{split = 0}}
    return
  }}
}}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_mixed_kernel_is_harnessed_in_both_cores(target, tmp_path, capsys):
    """Both functions get the six tile arguments; the cube's acc tile is seeded through a window
    and its L0A tile read back through one, the vector's tiles move by tload / tstore (on sub-block
    0 only: on a2a3 two sub-blocks run it).  What each core popped is what the other pushed."""
    acc = np.linspace(-2, 2, 256, dtype=np.float32).reshape(16, 16)
    v = np.arange(256, dtype=np.float32).reshape(16, 16) - 100
    rc, out, err = _run(tmp_path, capsys, _round_trip(target), target,
                        {"tile_acc": acc, "tile_v": v})
    assert rc == 0, out + err
    assert sorted(out.splitlines()) == ["PASS tile_left 0", "PASS tile_m 0", "PASS tile_neg 0", "PASS tile_r 0"]
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tile_left.npy").reshape(16, 16), v)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tile_neg.npy").reshape(16, 16), -acc)
    # each popped tile is stored as popped: the vector's once per sub-block (rows 16s..16s+15)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "tile_m.npy").reshape(16, 16), v)
    r = np.load(tmp_path / "o" / "tile_r.npy").reshape(32, 16)
    for s in range(2 if target == "a2a3" else 1):  # ascend950 runs a no-split vector kernel on AIV0 only
        np.testing.assert_array_equal(r[16 * s:16 * s + 16], acc)
