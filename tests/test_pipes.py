"""Mixed cube/vector kernels (runtime/pipes.py): the AIC and its AIV sub-blocks run concurrently and
talk through the pipe (tpush_to_aiv / tpop_from_aic, tpush_to_aic / tpop_from_aiv, tfree_*).

Each expected output is plain NumPy written here from the pages' split rules (TILE_UP_DOWN: sub-block
s gets rows [s*R/2, (s+1)*R/2); TILE_LEFT_RIGHT: columns), never from the code under test.  A pop
nothing feeds is a located deadlock on both models, GM shared across cores without a pipe hand-off a
race, a reserve_buffer too small for its slots a located error.
"""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError

F32 = np.float32
TARGETS = ("a2a3", "ascend950")

HEAD = """module {
  func.func @k(%a: !pto.ptr<f16>, %b: !pto.ptr<f16>, %c: !pto.ptr<f32>, %o: !pto.ptr<f32>) attributes {pto.entry} {
    func.call @k_cube(%a, %b) : (!pto.ptr<f16>, !pto.ptr<f16>) -> ()
    func.call @k_vec(%c, %o) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()
    return
  }
"""

CUBE = """  func.func private @k_cube(%a: !pto.ptr<f16>, %b: !pto.ptr<f16>) attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %z = arith.constant 0 : i32
    %imp = pto.import_reserved_buffer {name = "c2v", peer_func = @k_vec} -> i32
    pto.aic_initialize_pipe {dir_mask = 1, slot_size = 2048} (c2v_consumer_buf = %imp : i32, v2c_consumer_buf = %z : i32)
    %av = pto.make_tensor_view %a, shape = [%c16, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf16>
    %bv = pto.make_tensor_view %b, shape = [%c32, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf16>
    %ap = pto.partition_view %av, offsets = [%c0, %c0], sizes = [%c16, %c32] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<16x32xf16>
    %bp = pto.partition_view %bv, offsets = [%c0, %c0], sizes = [%c32, %c32] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<32x32xf16>
    %ma = pto.alloc_tile : !pto.tile_buf<mat, 16x32xf16, blayout=col_major, slayout=row_major>
    %mb = pto.alloc_tile : !pto.tile_buf<mat, 32x32xf16, blayout=col_major, slayout=row_major>
    %l = pto.alloc_tile : !pto.tile_buf<left, 16x32xf16, slayout=row_major>
    %r = pto.alloc_tile : !pto.tile_buf<right, 32x32xf16, slayout=col_major>
    %acc = pto.alloc_tile : !pto.tile_buf<acc, 16x32xf32, blayout=col_major, slayout=row_major, fractal=1024>
    pto.tload ins(%ap : !pto.partition_tensor_view<16x32xf16>) outs(%ma : !pto.tile_buf<mat, 16x32xf16, blayout=col_major, slayout=row_major>)
    pto.tload ins(%bp : !pto.partition_tensor_view<32x32xf16>) outs(%mb : !pto.tile_buf<mat, 32x32xf16, blayout=col_major, slayout=row_major>)
    pto.tmov ins(%ma : !pto.tile_buf<mat, 16x32xf16, blayout=col_major, slayout=row_major>) outs(%l : !pto.tile_buf<left, 16x32xf16, slayout=row_major>)
    pto.tmov ins(%mb : !pto.tile_buf<mat, 32x32xf16, blayout=col_major, slayout=row_major>) outs(%r : !pto.tile_buf<right, 32x32xf16, slayout=col_major>)
    pto.tmatmul ins(%l, %r : !pto.tile_buf<left, 16x32xf16, slayout=row_major>, !pto.tile_buf<right, 32x32xf16, slayout=col_major>) outs(%acc : !pto.tile_buf<acc, 16x32xf32, blayout=col_major, slayout=row_major, fractal=1024>)
    pto.tpush_to_aiv(%acc : !pto.tile_buf<acc, 16x32xf32, blayout=col_major, slayout=row_major, fractal=1024>) {split = SPLIT}
    return
  }
"""


def vec_consts(rows: int, cols: int, indent: str) -> str:
    """The vector side's constants and its sub-block's row/column offsets (8 or 16 per sub-block)."""
    lines = ["%c0 = arith.constant 0 : index", "%c1 = arith.constant 1 : index", "%c16 = arith.constant 16 : index",
             "%c32 = arith.constant 32 : index", f"%cr = arith.constant {rows} : index",
             f"%cc = arith.constant {cols} : index", "%c8_i64 = arith.constant 8 : i64",
             "%c16_i64 = arith.constant 16 : i64", "%z = arith.constant 0 : i32", "%sb = pto.get_subblock_idx",
             "%s8 = arith.muli %sb, %c8_i64 : i64", "%sub8 = arith.index_cast %s8 : i64 to index",
             "%s16 = arith.muli %sb, %c16_i64 : i64", "%sub16 = arith.index_cast %s16 : i64 to index"]
    return "".join(f"{indent}{ln}\n" for ln in lines)


def vec_fn(split: int, pops: int = 1) -> str:
    rows, cols = {1: (8, 32), 2: (16, 16)}[split]
    t = f"!pto.tile_buf<vec, {rows}x{cols}xf32>"
    row_off = "%sub8" if split == 1 else "%c0"
    col_off = "%sub16" if split == 2 else "%c0"
    pop = f"""    %p = pto.tpop_from_aic {{split = {split}}} -> {t}
""" + "".join(f"""    %p{i} = pto.tpop_from_aic {{split = {split}}} -> {t}
""" for i in range(1, pops))
    return f"""  func.func private @k_vec(%c: !pto.ptr<f32>, %o: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
{vec_consts(rows, cols, "    ")}    %buf = pto.reserve_buffer {{name = "c2v", size = 16384, location = #pto.address_space<vec>, auto = true}} -> i32
    pto.aiv_initialize_pipe {{dir_mask = 1, slot_size = 2048}} (c2v_consumer_buf = %buf : i32, v2c_consumer_buf = %z : i32)
    %cv = pto.make_tensor_view %c, shape = [%c16, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>
    %ov = pto.make_tensor_view %o, shape = [%c16, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>
    %cp = pto.partition_view %cv, offsets = [{row_off}, {col_off}], sizes = [%cr, %cc] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<{rows}x{cols}xf32>
    %op = pto.partition_view %ov, offsets = [{row_off}, {col_off}], sizes = [%cr, %cc] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<{rows}x{cols}xf32>
    %x = pto.alloc_tile : {t}
    %y = pto.alloc_tile : {t}
    pto.tload ins(%cp : !pto.partition_tensor_view<{rows}x{cols}xf32>) outs(%x : {t})
{pop}    pto.tadd ins(%x, %p : {t}, {t}) outs(%y : {t})
    pto.tfree_from_aic {{split = {split}}}
    pto.tstore ins(%y : {t}) outs(%op : !pto.partition_tensor_view<{rows}x{cols}xf32>)
    return
  }}
}}
"""


def c2v_kernel(split: int, pops: int = 1) -> str:
    return HEAD + CUBE.replace("SPLIT", str(split)) + vec_fn(split, pops)


def c2v_inputs(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"a": rng.uniform(-2, 2, (16, 32)).astype(np.float16), "b": rng.uniform(-2, 2, (32, 32)).astype(np.float16),
            "c": rng.uniform(-2, 2, (16, 32)).astype(F32), "o": np.zeros((16, 32), F32)}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("split", [1, 2])
def test_c2v_split_matches_numpy(target, split):
    """Each AIV gets its half (rows for up/down, columns for left/right) of the cube's acc tile;
    together they write all of o = a @ b + c (f16 products summed in f32)."""
    mod = api.parse(c2v_kernel(split))
    ins = c2v_inputs()
    want = ins["a"].astype(F32) @ ins["b"].astype(F32) + ins["c"]
    res = api.check(mod, target, ins)
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    np.testing.assert_allclose(res.outputs["o"], want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(res.reference["o"], want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_pop_with_no_push_is_a_located_deadlock(target):
    """Two pops, one push: the second pop waits forever on both AIVs; both models say where."""
    text = c2v_kernel(1, pops=2)
    mod = api.parse(text, "dead.pto")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "%p1 = pto.tpop_from_aic" in ln)
    program = api.compile(mod, target)
    res = api.run(program, {k: v for k, v in c2v_inputs().items()})
    dead = [f for f in res.findings if f.kind == "deadlock"]
    assert dead and all("waits forever" in str(f) for f in dead)
    assert {f.origin.line for f in dead} == {line}
    assert {"AIV0", "AIV1"} <= {w for f in dead for w in ("AIV0", "AIV1") if w in str(f)}
    with pytest.raises(PtocError) as e:
        api.reference(mod, c2v_inputs(), target=target)
    assert f"dead.pto:{line}:" in str(e.value) and "deadlock" in str(e.value)


def test_gm_shared_without_pipe_is_a_race():
    """The cube stores its scores to GM and the vector core loads them with no pipe hand-off in
    between: the cores run concurrently, so the load races the store."""
    kernel = c2v_kernel(1).replace(
        "    pto.tpush_to_aiv(%acc", "    pto.tstore ins(%acc : !pto.tile_buf<acc, 16x32xf32, blayout=col_major, "
        "slayout=row_major, fractal=1024>) outs(%cp0 : !pto.partition_tensor_view<16x32xf32>)\n"
        "    pto.tpush_to_aiv(%acc")
    kernel = kernel.replace('func.call @k_cube(%a, %b) : (!pto.ptr<f16>, !pto.ptr<f16>) -> ()',
                            'func.call @k_cube(%a, %b, %c) : (!pto.ptr<f16>, !pto.ptr<f16>, !pto.ptr<f32>) -> ()')
    kernel = kernel.replace('@k_cube(%a: !pto.ptr<f16>, %b: !pto.ptr<f16>)',
                            '@k_cube(%a: !pto.ptr<f16>, %b: !pto.ptr<f16>, %c: !pto.ptr<f32>)')
    kernel = kernel.replace("    %ma = pto.alloc_tile",
                            "    %cv0 = pto.make_tensor_view %c, shape = [%c16, %c32], strides = [%c32, %c1] : "
                            "!pto.tensor_view<?x?xf32>\n    %cp0 = pto.partition_view %cv0, offsets = [%c0, %c0], "
                            "sizes = [%c16, %c32] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x32xf32>\n"
                            "    %ma = pto.alloc_tile", 1)
    res = api.run(api.compile(api.parse(kernel, "race.pto"), "a2a3"), c2v_inputs())
    races = [f for f in res.findings if f.kind == "race" and "across cores" in str(f)]
    assert races, [str(f) for f in res.findings]


def test_reserve_buffer_too_small_is_located():
    text = c2v_kernel(1).replace("size = 16384", "size = 4096")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.reserve_buffer" in ln)
    with pytest.raises(PtocError) as e:
        api.compile(api.parse(text, "small.pto"), "a2a3")
    assert f"small.pto:{line}:" in str(e.value) and "2048 x 8" in str(e.value)


MANUAL_RESERVE = """func.func @k() {
  %fifo = pto.reserve_buffer {name = "fifo", size = 8192, location = #pto.address_space<vec>, auto = false, base = 0} -> i32
  %c8192 = arith.constant 8192 : i64
  %a = pto.alloc_tile addr = %c8192 : !pto.tile_buf<vec, 16x16xf32>
  %b = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
  return
}
"""


def test_a_manual_reserve_buffer_needs_every_buffer_placed_by_hand():
    """PTOAS's PlanMemory rule: with a slot buffer placed by hand (auto = false), a buffer left to
    the planner (here %b, line 5) is refused, located; placed by hand it verifies."""
    with pytest.raises(PtocError) as e:
        api.verify(api.parse(MANUAL_RESERVE, "manual.pto"), "a2a3")
    assert [(d.line, d.column) for d in e.value.diagnostics] == [(5, 8)]
    assert "cannot use pto.reserve_buffer with auto = false" in str(e.value)
    placed = MANUAL_RESERVE.replace("%b = pto.alloc_tile :", "%b = pto.alloc_tile addr = %c8192 :")
    api.verify(api.parse(placed, "manual.pto"), "a2a3")


def test_pop_of_the_wrong_shape_is_located():
    """An up/down pop of a 16x32 tile must take 8x32: a 16x32 pop tile is refused by both models."""
    text = c2v_kernel(1).replace("!pto.tile_buf<vec, 8x32xf32>", "!pto.tile_buf<vec, 16x32xf32>") \
        .replace("%cr = arith.constant 8", "%cr = arith.constant 16").replace("size = 16384", "size = 32768")
    mod = api.parse(text, "shape.pto")
    with pytest.raises(PtocError) as e:
        api.reference(mod, c2v_inputs())
    assert "shape.pto:" in str(e.value) and "8x32" in str(e.value)


def v2c_kernel(split: int) -> str:
    """Each AIV loads its half of x (rows or columns by ``split``), converts it ND -> NZ and pushes
    it; the cube pops the whole 32x32 tile into L1 and stores it to y."""
    rows, cols = {1: (16, 32), 2: (32, 16)}[split]
    half = f"!pto.tile_buf<vec, {rows}x{cols}xf32>"
    nz = f"!pto.tile_buf<vec, {rows}x{cols}xf32, blayout=col_major, slayout=row_major>"
    mat = "!pto.tile_buf<mat, 32x32xf32, blayout=col_major, slayout=row_major>"
    off = ("%sub16, %c0" if split == 1 else "%c0, %sub16")
    return f"""module {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) attributes {{pto.entry}} {{
    pto.section.cube {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %z = arith.constant 0 : i32
      %buf = pto.reserve_buffer {{name = "v2c", size = 32768, location = #pto.address_space<mat>, auto = true}} -> i32
      pto.aic_initialize_pipe {{dir_mask = 2, slot_size = 4096}} (c2v_consumer_buf = %z : i32, v2c_consumer_buf = %buf : i32)
      %yv = pto.make_tensor_view %y, shape = [%c32, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>
      %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c32, %c32] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<32x32xf32>
      %m = pto.tpop_from_aiv {{split = {split}}} -> {mat}
      pto.tstore ins(%m : {mat}) outs(%yp : !pto.partition_tensor_view<32x32xf32>)
      pto.tfree_from_aiv {{split = {split}}}
    }}
    pto.section.vector {{
{vec_consts(rows, cols, "      ")}      %imp = pto.import_reserved_buffer {{name = "v2c", peer_func = @k}} -> i32
      pto.aiv_initialize_pipe {{dir_mask = 2, slot_size = 4096}} (c2v_consumer_buf = %z : i32, v2c_consumer_buf = %imp : i32)
      %xv = pto.make_tensor_view %x, shape = [%c32, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>
      %xp = pto.partition_view %xv, offsets = [{off}], sizes = [%cr, %cc] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<{rows}x{cols}xf32>
      %t = pto.alloc_tile : {half}
      %n = pto.alloc_tile : {nz}
      pto.tload ins(%xp : !pto.partition_tensor_view<{rows}x{cols}xf32>) outs(%t : {half})
      pto.tmov ins(%t : {half}) outs(%n : {nz})
      pto.tpush_to_aic(%n : {nz}) {{split = {split}}}
    }}
    return
  }}
}}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("split", [1, 2])
def test_v2c_halves_assemble_the_tile(target, split):
    """AIV s's half lands at rows (up/down) or columns (left/right) [16s, 16s+16) of the cube's
    tile: y == x, bit for bit (moves only)."""
    x = np.arange(32 * 32, dtype=F32).reshape(32, 32) * F32(0.5) - F32(100)
    res = api.check(api.parse(v2c_kernel(split)), target, {"x": x, "y": np.zeros((32, 32), F32)})
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    np.testing.assert_array_equal(res.outputs["y"], x)


def test_free_without_pop_is_located():
    """A tfree_from_aic before any pop frees nothing: both models stop at the free, located."""
    text = c2v_kernel(1)
    text = text.replace("    %p = pto.tpop_from_aic", "    pto.tfree_from_aic {split = 1}\n    %p = pto.tpop_from_aic", 1)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "tfree_from_aic" in ln)
    mod = api.parse(text, "free.pto")
    res = api.run(api.compile(mod, "a2a3"), c2v_inputs())
    bad = [f for f in res.findings if f.kind == "invalid"]
    assert bad and bad[0].origin.line == line and "has not popped" in str(bad[0])
    with pytest.raises(PtocError) as e:
        api.reference(mod, c2v_inputs())
    assert f"free.pto:{line}:" in str(e.value) and "has not popped" in str(e.value)


def test_push_of_a_mat_tile_is_located():
    """tpush_to_aiv sends an acc tile (pto-isa TPUSH: Acc for C2V): a mat tile is refused where it is pushed."""
    text = c2v_kernel(1).replace(
        "    pto.tpush_to_aiv(%acc : !pto.tile_buf<acc, 16x32xf32, blayout=col_major, slayout=row_major, fractal=1024>)",
        "    %mf = pto.alloc_tile : !pto.tile_buf<mat, 16x32xf32, blayout=col_major, slayout=row_major>\n"
        "    pto.tpush_to_aiv(%mf : !pto.tile_buf<mat, 16x32xf32, blayout=col_major, slayout=row_major>)")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tpush_to_aiv" in ln)
    with pytest.raises(PtocError) as e:
        api.compile(api.parse(text, "push.pto"), "a2a3")
    assert f"push.pto:{line}:" in str(e.value) and "loc=acc" in str(e.value)


def test_a5_split_rules_are_located():
    """pto-isa TPUSH (A5): a C2V split moves b32 data with power-of-2 valid rows (up/down); ascend950
    refuses a 12-row up/down push where it is written, a2a3 has no such rule."""
    acc = "!pto.tile_buf<acc, 16x32xf32, valid=12x32, blayout=col_major, slayout=row_major, fractal=1024>"
    text = f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %acc = pto.alloc_tile : {acc}
    pto.tpush_to_aiv(%acc : {acc}) {{split = 1}}
    return
  }}
}}
"""
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tpush_to_aiv" in ln)
    mod = api.parse(text, "split.pto")
    with pytest.raises(PtocError) as e:
        api.verify(mod, "ascend950")
    assert f"split.pto:{line}:" in str(e.value) and "power-of-2 number of valid rows (got 12)" in str(e.value)
    api.verify(mod, "a2a3")


@pytest.mark.parametrize("target", TARGETS)
def test_stats_show_a_pop_waiting_for_a_slow_producer(target):
    """The cube loads, moves and multiplies before its push; the vector cores pop at once, so in the
    cycle model their pops wait for it (the pipe wait of each AIV), the cube waits for nothing, and
    each pop starts no earlier than the push that fills its slot completes."""
    res = api.run(api.compile(api.parse(c2v_kernel(1)), target), c2v_inputs())
    st = res.stats
    assert set(st.pipe_waits) == {"AIC", "AIV0", "AIV1"}
    assert st.pipe_waits["AIC"] == {"push": 0, "pop": 0}
    assert all(st.pipe_waits[c]["pop"] > 0 and st.pipe_waits[c]["push"] == 0 for c in ("AIV0", "AIV1"))
    push = next(ev for ev in st.events if ev[2] == "tpush_cc")
    pops = [ev for ev in st.events if ev[2] == "tpop_ub"]
    assert len(pops) == 2 and all(ev[3] >= push[5] for ev in pops)
    assert "pipe waits" in st.to_text() and st.to_dict()["pipe_wait_cycles"]["AIV1"]["pop"] > 0


INTERNAL_FORM = """module {
  func.func @k(%slots: memref<2048xf32, #pto.address_space<gm>>, %consumer: i32) attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %pipe = pto.initialize_l2g2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = 8, local_slot_num = 8, flag_base = 0}(%slots : memref<2048xf32, #pto.address_space<gm>>, %consumer : i32) -> !pto.pipe
    %acc = pto.alloc_tile : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024>
    pto.tpush(%acc, %pipe : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024>, !pto.pipe) {split = 0}
    return
  }
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_internal_pipe_form_with_a_run_time_consumer_buffer_is_located(target):
    """PTOAS's internal form (initialize_l2g2l_pipe / tpush) takes the consumer's slot buffer as a
    kernel argument: with no peer kernel to run the pipe in the frontend form with
    (passes/raise_pipes.py), ptoc says so at the init, in both models."""
    mod = api.parse(INTERNAL_FORM, "internal.pto")
    for call in (lambda: api.compile(mod, target), lambda: api.reference(mod, {}, target=target)):
        with pytest.raises(PtocError) as e:
            call()
        assert "internal.pto:3:13:" in str(e.value) and "%consumer, a kernel argument" in str(e.value), str(e.value)
