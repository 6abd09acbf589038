"""The emitted synchronisation is necessary and sufficient (issue 5, "Done means").

For the softmax example's a2a3 program: the unmodified program runs with no race and no
deadlock and matches the golden model; deleting any one set_flag/wait_flag pair, or any one
pipe_barrier, makes the executor report a data race; deleting only a set_flag makes it report
a deadlock.  Kernels with a tile accumulated across scf.for iterations and with an scf.if that
yields different tiles run PASS with no race.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import a2a3_harness as H
from pto_compiler.runtime import reference as golden
from pto_compiler.runtime.executor import execute
from pto_compiler.runtime.program import If, Instr, Loop, Program

REPO = Path(__file__).resolve().parent.parent


def _without(prog: Program, drop: set) -> Program:
    """``prog`` without the nodes whose ids are in ``drop`` (anywhere in loops and branches; in
    every core's program of a mixed kernel)."""
    if hasattr(prog, "agents"):
        return replace(prog, agents=[(kind, _without(p, drop)) for kind, p in prog.agents])

    def body(nodes):
        out = []
        for n in nodes:
            if id(n) in drop:
                continue
            if isinstance(n, Loop):
                n = replace(n, body=body(n.body))
            elif isinstance(n, If):
                n = replace(n, then_body=body(n.then_body), else_body=body(n.else_body))
            out.append(n)
        return out

    return replace(prog, body=body(prog.body))


def _kinds(prog: Program, inputs: dict) -> set:
    r = execute(prog, inputs, raise_on_findings=False)
    return {f.kind for f in r.findings}


def _flag_pairs(prog: Program):
    """(set_flag, wait_flag) pairs of a straight-line program: the k-th set of a key with the
    k-th wait of that key."""
    sets, waits = {}, {}
    for ins in prog.body:
        assert isinstance(ins, Instr), "the softmax program is straight-line"
        if ins.opcode in ("set_flag", "wait_flag"):
            key = (ins.args["src_pipe"], ins.args["dst_pipe"], ins.args["event_id"])
            (sets if ins.opcode == "set_flag" else waits).setdefault(key, []).append(ins)
    pairs = []
    for key, ss in sets.items():
        ws = waits.get(key, [])
        assert len(ss) == len(ws), f"unbalanced flags {key}"
        pairs.extend(zip(ss, ws))
    return pairs


@pytest.fixture(scope="module")
def softmax():
    path = REPO / "examples" / "softmax.pto"
    module, prog = H.compile_text(path.read_text(), str(path))
    values = golden.make_inputs(module, 0)
    return module, prog, {k: v for k, v in values.items() if getattr(v, "ndim", 0)}


def test_softmax_unmodified_has_no_race_and_passes(softmax):
    module, prog, inputs = softmax
    cmp, findings, _, _ = H.run_and_compare(module, prog, 0)
    assert not findings
    assert all(c.ok for c in cmp), [c.line() for c in cmp]


def test_softmax_every_flag_pair_is_needed(softmax):
    _, prog, inputs = softmax
    pairs = _flag_pairs(prog)
    assert pairs, prog.to_text()
    for s, w in pairs:
        kinds = _kinds(_without(prog, {id(s), id(w)}), inputs)
        assert "race" in kinds, f"deleting {s} / {w} left the program race-free:\n{prog.to_text()}"


def test_softmax_every_pipe_barrier_is_needed(softmax):
    _, prog, inputs = softmax
    barriers = [i for i in prog.body if i.opcode == "pipe_barrier"]
    assert barriers
    for b in barriers:
        kinds = _kinds(_without(prog, {id(b)}), inputs)
        assert "race" in kinds, f"deleting the barrier at {b.origin} left no race:\n{prog.to_text()}"


def test_softmax_lone_wait_flag_deadlocks(softmax):
    _, prog, inputs = softmax
    for s, _ in _flag_pairs(prog):
        kinds = _kinds(_without(prog, {id(s)}), inputs)
        assert "deadlock" in kinds, f"deleting only {s} did not deadlock"


ACCUMULATE = """
module {
  func.func @acc(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %xv = pto.make_tensor_view %x, shape = [%c64, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    %acc0 = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32>
    pto.texpands ins(%zero : f32) outs(%acc0 : !pto.tile_buf<vec, 16x64xf32>)
    %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %acc0) -> (!pto.tile_buf<vec, 16x64xf32>) {
      %row = arith.muli %i, %c16 : index
      %xp = pto.partition_view %xv, offsets = [%row, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
      %t = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32>
      pto.tload ins(%xp : !pto.partition_tensor_view<16x64xf32>) outs(%t : !pto.tile_buf<vec, 16x64xf32>)
      pto.tadd ins(%acc, %t : !pto.tile_buf<vec, 16x64xf32>, !pto.tile_buf<vec, 16x64xf32>) outs(%acc : !pto.tile_buf<vec, 16x64xf32>)
      scf.yield %acc : !pto.tile_buf<vec, 16x64xf32>
    }
    pto.tstore ins(%r : !pto.tile_buf<vec, 16x64xf32>) outs(%yp : !pto.partition_tensor_view<16x64xf32>)
    return
  }
}
"""

IF_YIELD = """
module {
  func.func @pick(%a: !pto.ptr<f16>, %b: !pto.ptr<f16>, %y: !pto.ptr<f16>, %n: i32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0 : i32
    %av = pto.make_tensor_view %a, shape = [%c32, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf16>
    %bv = pto.make_tensor_view %b, shape = [%c32, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf16>
    %yv = pto.make_tensor_view %y, shape = [%c32, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf16>
    %ap = pto.partition_view %av, offsets = [%c0, %c0], sizes = [%c32, %c64] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<32x64xf16>
    %bp = pto.partition_view %bv, offsets = [%c0, %c0], sizes = [%c32, %c64] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<32x64xf16>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c32, %c64] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<32x64xf16>
    %ta = pto.alloc_tile : !pto.tile_buf<vec, 32x64xf16>
    %tb = pto.alloc_tile : !pto.tile_buf<vec, 32x64xf16>
    pto.tload ins(%ap : !pto.partition_tensor_view<32x64xf16>) outs(%ta : !pto.tile_buf<vec, 32x64xf16>)
    pto.tload ins(%bp : !pto.partition_tensor_view<32x64xf16>) outs(%tb : !pto.tile_buf<vec, 32x64xf16>)
    %pos = arith.cmpi sgt, %n, %zero : i32
    %r = scf.if %pos -> (!pto.tile_buf<vec, 32x64xf16>) {
      %s = pto.alloc_tile : !pto.tile_buf<vec, 32x64xf16>
      pto.tadd ins(%ta, %tb : !pto.tile_buf<vec, 32x64xf16>, !pto.tile_buf<vec, 32x64xf16>) outs(%s : !pto.tile_buf<vec, 32x64xf16>)
      scf.yield %s : !pto.tile_buf<vec, 32x64xf16>
    } else {
      %d = pto.alloc_tile : !pto.tile_buf<vec, 32x64xf16>
      pto.tmax ins(%ta, %tb : !pto.tile_buf<vec, 32x64xf16>, !pto.tile_buf<vec, 32x64xf16>) outs(%d : !pto.tile_buf<vec, 32x64xf16>)
      scf.yield %d : !pto.tile_buf<vec, 32x64xf16>
    }
    pto.tstore ins(%r : !pto.tile_buf<vec, 32x64xf16>) outs(%yp : !pto.partition_tensor_view<32x64xf16>)
    return
  }
}
"""


def test_tile_accumulated_across_loop_iterations():
    prog = H.assert_pass(ACCUMULATE)
    assert any(isinstance(n, Loop) for n in prog.body)


@pytest.mark.parametrize("n", [5, -5])
def test_if_yielding_different_tiles(n):
    prog = H.assert_pass(IF_YIELD, given={"n": n})
    assert any(isinstance(n_, If) for n_ in prog.body)


@pytest.mark.parametrize("name", ["vadd", "softmax", "layernorm", "rowclamp_manual", "rowscale300"])
def test_examples_run_without_race(name):
    path = REPO / "examples" / f"{name}.pto"
    H.assert_pass(path.read_text())
