"""pto-lower-a2a3 beyond the matrix: wide rows (count mode), dynamic valid rows, mixed row
strides, the barrier completion pass, and the located errors of the lowering."""

from __future__ import annotations

import io

import pytest
from xdsl.printer import Printer
import a2a3_harness as H
from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.dialects import pto
from pto_compiler.passes.a2a3_complete_barriers import CompleteBarriersPass
from pto_compiler.passes.lower_a2a3 import lower_to_program, program_of
from a2a3_programs import a2a3_func
from pto_compiler.targets import A2A3


def _k(op_line: str, args: str, rt: str) -> str:
    return f"func.func @k({args}) -> {rt} {{\n  {op_line}\n  return %d : {rt}\n}}\n"


WIDE = {
    # rows of 16 KiB: repeat strides > 255 blocks, so count mode one row per trip
    "add": _k("%d = pto.tadd %a, %b : !pto.tile<2x4096xf32, valid=2x4000>, !pto.tile<2x4096xf32, valid=2x4000> "
              "-> !pto.tile<2x4096xf32, valid=2x4000>",
              "%a: !pto.tile<2x4096xf32, valid=2x4000>, %b: !pto.tile<2x4096xf32, valid=2x4000>",
              "!pto.tile<2x4096xf32, valid=2x4000>"),
    "rowsum": _k("%d = pto.trowsum %a : !pto.tile<3x4096xf32, valid=3x4001> -> !pto.tile<3x1xf32, blayout=col_major>",
                 "%a: !pto.tile<3x4096xf32, valid=3x4001>", "!pto.tile<3x1xf32, blayout=col_major>"),
    "rowmax_i16": _k("%d = pto.trowmax %a : !pto.tile<3x8192xi16, valid=3x8001> -> !pto.tile<3x1xi16, blayout=col_major>",
                     "%a: !pto.tile<3x8192xi16, valid=3x8001>", "!pto.tile<3x1xi16, blayout=col_major>"),
    "rowexpandmax": _k("%d = pto.trowexpandmax %a, %b : !pto.tile<3x4096xf32, valid=3x4001>, "
                       "!pto.tile<3x1xf32, blayout=col_major> -> !pto.tile<3x4096xf32, valid=3x4001>",
                       "%a: !pto.tile<3x4096xf32, valid=3x4001>, %b: !pto.tile<3x1xf32, blayout=col_major>",
                       "!pto.tile<3x4096xf32, valid=3x4001>"),
    "pairreduce": _k("%d = pto.tpairreducesum %a : !pto.tile<3x4096xf32, valid=3x4001> -> !pto.tile<3x4096xf32, valid=3x4001>",
                     "%a: !pto.tile<3x4096xf32, valid=3x4001>", "!pto.tile<3x4096xf32, valid=3x4001>"),
    "colsum_f16": _k("%d = pto.tcolsum %a : !pto.tile<3x8192xf16, valid=3x8001> -> !pto.tile<1x8192xf16, valid=1x8001>",
                     "%a: !pto.tile<3x8192xf16, valid=3x8001>", "!pto.tile<1x8192xf16, valid=1x8001>"),
}


@pytest.mark.parametrize("name", sorted(WIDE))
def test_rows_wider_than_255_blocks(name):
    prog = H.assert_pass(WIDE[name], seed=1)
    assert "set_mask_count" in prog.to_text() or name == "pairreduce"


def test_f16_rowsum_into_a_rowmajor_dst():
    H.assert_pass(_k("%d = pto.trowsum %a : !pto.tile<40x256xf16, valid=40x200> -> !pto.tile<40x16xf16, valid=40x1>",
                     "%a: !pto.tile<40x256xf16, valid=40x200>", "!pto.tile<40x16xf16, valid=40x1>"))


def test_mode2_expanded_rows_wider_than_one_block():
    # src0 expanded, Mode 2 operand with a 64-byte row stride (valid 16 of 32 f16)
    H.assert_pass(_k("%d = pto.trowexpandmul %b, %a : !pto.tile<20x32xf16, valid=20x16>, "
                     "!pto.tile<20x64xf16, valid=20x50> -> !pto.tile<20x64xf16, valid=20x50>",
                     "%a: !pto.tile<20x64xf16, valid=20x50>, %b: !pto.tile<20x32xf16, valid=20x16>",
                     "!pto.tile<20x64xf16, valid=20x50>"))


DYNAMIC = """
module {
  func.func @dyn(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c40 = arith.constant 40 : index
    %two = arith.constant 2.0 : f32
    %xv = pto.make_tensor_view %x, shape = [%c16, %c40], strides = [%c40, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c40], strides = [%c40, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%n, %c40] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<?x40xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%n, %c40] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<?x40xf32>
    %t = pto.alloc_tile valid_row = %n valid_col = %c40 : !pto.tile_buf<vec, 16x64xf32, valid=?x?>
    %u = pto.alloc_tile valid_row = %n valid_col = %c40 : !pto.tile_buf<vec, 16x64xf32, valid=?x?>
    pto.tload ins(%xp : !pto.partition_tensor_view<?x40xf32>) outs(%t : !pto.tile_buf<vec, 16x64xf32, valid=?x?>)
    pto.texp ins(%t : !pto.tile_buf<vec, 16x64xf32, valid=?x?>) outs(%u : !pto.tile_buf<vec, 16x64xf32, valid=?x?>)
    pto.tmuls ins(%u, %two : !pto.tile_buf<vec, 16x64xf32, valid=?x?>, f32) outs(%u : !pto.tile_buf<vec, 16x64xf32, valid=?x?>)
    pto.tstore ins(%u : !pto.tile_buf<vec, 16x64xf32, valid=?x?>) outs(%yp : !pto.partition_tensor_view<?x40xf32>)
    return
  }
}
"""


@pytest.mark.parametrize("n", [1, 7, 16])
def test_dynamic_valid_rows(n):
    prog = H.assert_pass(DYNAMIC, given={"n": n})
    text = prog.to_text()
    assert "n_burst=%n" in text and "loop %r" in text and "to %n" in text


def test_the_program_does_not_depend_on_scalar_values():
    m = H.parse(DYNAMIC)
    placed = H.place(m)
    texts = {lower_to_program(placed, A2A3, scalars={"n": n}).to_text() for n in (1, 16)}
    assert len(texts) == 1


# ---- the barrier completion pass -------------------------------------------------------------

def _barriers(body: str, gm: dict | None = None) -> list[str]:
    """The instructions of a function of a2a3 ops (tests/a2a3_programs.py) after a2a3-complete-barriers."""
    module = api.parse_printed(a2a3_func(body, gm))
    CompleteBarriersPass().apply(api.context(), module)
    return [str(i) for i in program_of(module, A2A3).instructions()]


def test_raw_on_the_same_pipe_gets_a_barrier():
    out = _barriers("a2a3.vadd dst=%c0x0 src0=%c0x100 src1=%c0x200 repeat=%c1 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n"
                    "a2a3.vexp dst=%c0x300 src=%c0x0 repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32\n")
    assert out[1] == "V    pipe_barrier V"


def test_disjoint_lanes_of_one_block_need_no_barrier():
    # two writes to different bytes of the same 32-byte block (the executor checks bytes)
    out = _barriers("a2a3.set_vector_mask hi=%c0 lo=%c0xf\n"
                    "a2a3.vector_dup dst=%c0x0 scalar=(%f1.0 : f32) repeat=%c1 blk=%c1 rep=%c8 : f32\n"
                    "a2a3.set_vector_mask hi=%c0 lo=%c0xf0\n"
                    "a2a3.vector_dup dst=%c0x0 scalar=(%f2.0 : f32) repeat=%c1 blk=%c1 rep=%c8 : f32\n")
    assert not any("pipe_barrier" in s for s in out)


def test_redundant_barrier_is_dropped_and_needed_one_kept():
    out = _barriers("a2a3.pipe_barrier V\n"
                    "a2a3.vadd dst=%c0x0 src0=%c0x100 src1=%c0x200 repeat=%c1 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n"
                    "a2a3.pipe_barrier V\n"
                    "a2a3.vexp dst=%c0x300 src=%c0x0 repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32\n")
    assert [s for s in out if "barrier" in s] == ["V    pipe_barrier V"]
    assert out.index("V    pipe_barrier V") == 1


def test_loop_carried_write_gets_a_barrier_inside_the_loop():
    out = _barriers("scf.for %i = %c0 to %c4 step %c1 {\n"
                    "a2a3.vadd dst=%c0x0 src0=%c0x0 src1=%c0x200 repeat=%c1 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n"
                    "}\n")
    assert out[0] == "V    pipe_barrier V"  # the second trip reads what the first wrote


def test_war_on_the_same_pipe_needs_no_barrier():
    out = _barriers("a2a3.vexp dst=%c0x100 src=%c0x0 repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32\n"
                    "a2a3.vexp dst=%c0x0 src=%c0x200 repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32\n")
    assert not any("barrier" in s for s in out)


def test_gm_waw_on_the_same_pipe_gets_a_barrier():
    out = _barriers("a2a3.copy_ubuf_to_gm dst=(%g : !pto.ptr<f32>)+%c0 src=%c0x0 n_burst=%c1 len_burst=%c64 src_gap=%c0 dst_gap=%c0 : f32\n"
                    "a2a3.copy_ubuf_to_gm dst=(%g : !pto.ptr<f32>)+%c0x20 src=%c0x100 n_burst=%c1 len_burst=%c64 src_gap=%c0 dst_gap=%c0 : f32\n", gm={"g": ("f32", (64,))})
    assert out[1] == "MTE3 pipe_barrier MTE3"


def _long_loop(body: str, trips: int = 5000) -> list[str]:
    """Barriers of a loop too long to walk trip by trip (summarised by a fixed point); the body
    sees ``%i`` and ``%o256`` = 256 * %i, ``%o512`` = 512 * %i."""
    return _barriers(f"scf.for %i = %c0 to %c{trips} step %c1 {{\n"
                     "%o256 = arith.muli %i, %c256 : index\n"
                     "%o512 = arith.muli %i, %c512 : index\n"
                     f"{body}}}\n", gm={"g": ("f32", (trips * 128,))})


def test_long_loop_stores_to_the_next_block_need_no_barrier():
    # trip i writes bytes [256i, 256i + 256) of @g: no two trips touch the same byte
    out = _long_loop("a2a3.copy_ubuf_to_gm dst=(%g : !pto.ptr<f32>)+%o256 src=%c0x0 n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 : f32\n")
    assert not any("barrier" in s for s in out)


def test_long_loop_stores_overlapping_the_next_trip_get_a_barrier():
    # 288 bytes per trip at a 256-byte stride: trip i+1 overwrites 32 bytes of trip i
    out = _long_loop("a2a3.copy_ubuf_to_gm dst=(%g : !pto.ptr<f32>)+%o256 src=%c0x0 n_burst=%c1 len_burst=%c288 src_gap=%c0 dst_gap=%c0 : f32\n")
    assert out[0] == "MTE3 pipe_barrier MTE3"


def test_long_loop_store_hit_only_many_trips_later_gets_a_barrier():
    # the second store of trip i writes [0x40000 + 512i, +256), the first store of trip
    # 1024 + 2i the same bytes, 1024 + i trips later
    out = _long_loop("a2a3.copy_ubuf_to_gm dst=(%g : !pto.ptr<f32>)+%o256 src=%c0x0 n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 : f32\n"
                     "%hi = arith.addi %o512, %c0x40000 : index\n"
                     "a2a3.copy_ubuf_to_gm dst=(%g : !pto.ptr<f32>)+%hi src=%c0x0 n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 : f32\n")
    assert out[0] == "MTE3 pipe_barrier MTE3"


def test_long_loop_carried_ub_write_gets_a_barrier():
    out = _long_loop("a2a3.vadd dst=%c0x0 src0=%c0x0 src1=%c0x200 repeat=%c1 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n")
    assert out[0] == "V    pipe_barrier V"


# ---- located errors -----------------------------------------------------------------------------

def _placed(text: str):
    return H.place(H.parse(text))


def test_tile_without_address_is_located():
    m = H.parse(_k("%d = pto.texp %a : !pto.tile<8x64xf32> -> !pto.tile<8x64xf32>",
                   "%a: !pto.tile<8x64xf32>", "!pto.tile<8x64xf32>"))
    placed = H.place(m)
    for op in placed.walk():
        if isinstance(op, pto.AllocTileOp):
            del op.attributes["ub_addr"]
            break
    with pytest.raises(PtocError) as info:
        lower_to_program(placed, A2A3)
    d = info.value.diagnostics[0]
    assert "has no UB address" in d.message and d.line > 0


def test_l1_module_needs_bufferize():
    m = H.parse(_k("%d = pto.texp %a : !pto.tile<8x64xf32> -> !pto.tile<8x64xf32>",
                   "%a: !pto.tile<8x64xf32>", "!pto.tile<8x64xf32>"))
    with pytest.raises(PtocError) as info:
        lower_to_program(m, A2A3)
    assert "run pto-bufferize" in info.value.diagnostics[0].message


def test_loop_carried_tile_at_another_address_is_an_error():
    from test_sync_proof import ACCUMULATE

    placed = _placed(ACCUMULATE)
    yielded = None
    for op in placed.walk():
        if op.name == "scf.yield":
            yielded = op.operands[0]
    # re-home the tile the loop yields: the lowering must refuse, not silently diverge
    allocs = [op for op in placed.walk() if isinstance(op, pto.AllocTileOp)]
    acc = [a for a in allocs if a.result is yielded or any(u.operation.name == "scf.for" for u in a.result.uses)][0]
    other = [a for a in allocs if a is not acc][0]
    for op in placed.walk():
        if op.name == "scf.for":
            body = op.body.blocks[0]
            for inner in body.ops:
                if isinstance(inner, pto.TileOp) and inner.outs and inner.outs[0] is body.args[1]:
                    inner.operands = [*inner.operands[:-1], other.result]
                    break
    ylast = [op for op in placed.walk() if op.name == "scf.yield"][0]
    ylast.operands = [other.result]
    with pytest.raises(PtocError) as info:
        lower_to_program(placed, A2A3)
    assert "must share a buffer" in info.value.diagnostics[0].message


def test_unsupported_op_error_is_located():
    with pytest.raises(PtocError) as info:
        H.compile_text(_k("%d = pto.tpack %a : !pto.tile<8x64xf32> -> !pto.tile<8x64xf32>",
                          "%a: !pto.tile<8x64xf32>, %b: !pto.tile<8x64xf32>", "!pto.tile<8x64xf32>"),
                       filename="t.pto")
    d = info.value.diagnostics[0]
    assert (d.filename, d.line, d.column) == ("t.pto", 2, 8)
    assert d.message.startswith("'pto.tpack' op has no a2a3 lowering: no semantics: pto-isa (github.com/hw-native-sys/pto-isa")


def test_every_instruction_has_an_origin():
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "layernorm.pto"
    _, prog = H.compile_text(path.read_text(), str(path))
    for ins in prog.instructions():
        assert ins.origin is not None and ins.origin.line > 0, ins


def test_lower_pass_rewrites_tile_ops_into_a2a3_ops():
    """The pass's output is the a2a3 module; the program is its listing."""
    from pto_compiler.dialects import a2a3
    from pto_compiler.passes.lower_a2a3 import LowerA2A3Pass

    placed = _placed(_k("%d = pto.texp %a : !pto.tile<8x64xf32> -> !pto.tile<8x64xf32>",
                        "%a: !pto.tile<8x64xf32>", "!pto.tile<8x64xf32>"))
    want = lower_to_program(placed, A2A3).to_text()
    LowerA2A3Pass().apply(api.context(), placed)
    ops = list(placed.walk())
    assert not any(isinstance(o, (pto.TileOp, *pto.SYNC_OPS.values())) for o in ops)
    assert [o.name for o in ops if isinstance(o, a2a3.A2A3Op) and o.SPEC.family != "sync"] == \
        ["a2a3.copy_gm_to_ubuf", "a2a3.vexp", "a2a3.copy_ubuf_to_gm"]
    CompleteBarriersPass().apply(api.context(), placed)
    placed.verify()
    assert program_of(placed, A2A3).to_text() == want
    buf = io.StringIO()
    Printer(stream=buf, print_debuginfo=True).print_op(placed)  # origins are op locations
    assert program_of(api.parse_printed(buf.getvalue()), A2A3).to_text() == want


def test_instr_origin_kept_on_inserted_barriers():
    module = api.parse_printed(a2a3_func(
        "a2a3.vadd dst=%c0x0 src0=%c0x100 src1=%c0x200 repeat=%c1 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32 loc(\"pto.tadd\"(\"a.pto\":3:5))\n"
        "a2a3.vexp dst=%c0x300 src=%c0x0 repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32 loc(\"pto.texp\"(\"a.pto\":4:5))\n"))
    CompleteBarriersPass().apply(api.context(), module)
    prog = program_of(module, A2A3)
    b = [i for i in prog.instructions() if i.opcode == "pipe_barrier"][0]
    assert str(b.origin) == "a.pto:4:5 pto.texp"


def test_manual_address_binding_is_used():
    m = H.parse("""
func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %a0 = arith.constant 8192 : i64
  %xv = pto.make_tensor_view %x, shape = [%c8, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
  %yv = pto.make_tensor_view %y, shape = [%c8, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
  %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c8, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x64xf32>
  %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c8, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x64xf32>
  %t = pto.alloc_tile addr = %a0 : !pto.tile_buf<vec, 8x64xf32>
  pto.tload ins(%xp : !pto.partition_tensor_view<8x64xf32>) outs(%t : !pto.tile_buf<vec, 8x64xf32>)
  pto.tabs ins(%t : !pto.tile_buf<vec, 8x64xf32>) outs(%t : !pto.tile_buf<vec, 8x64xf32>)
  pto.tstore ins(%t : !pto.tile_buf<vec, 8x64xf32>) outs(%yp : !pto.partition_tensor_view<8x64xf32>)
  return
}
""")
    prog = lower_to_program(H.place(m), A2A3)
    assert "vabs.f32 dst=0x2000 src=0x2000" in prog.to_text()
    cmp, findings, _, _ = H.run_and_compare(m, prog)
    assert not findings and all(c.ok for c in cmp)
