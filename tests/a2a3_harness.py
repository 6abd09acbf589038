"""Test harness for the a2a3 backend: compile in-process, run the executor and the golden model.

``compile_text`` runs the real default pipeline (pto_compiler.pipeline) when every pass of it is
registered; a pass that has not landed is replaced by a stand-in that sets the same attributes
(the contract of pto-select-expand-mode, pto-tmp-strategy, pto-plan-memory, pto-insert-sync):

* expand mode: ``expand_mode`` / ``expanded_operand`` from the op's ``expand_analysis()``;
* tmp strategy: ``bcast_source`` = "tmp" | "scratch" | "none";
* plan memory: ``ub_addr`` by a bump allocator (32-byte aligned, no reuse), around the
  8 KiB scratch at 184 KiB;
* insert sync: ``set_flag``/``wait_flag`` (event 0) at every change of pipe between
  consecutive tile ops of a block, and ``pto.barrier PIPE_ALL`` around scf bodies.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr

from pto_compiler import api, pipeline
from pto_compiler.dialects import pto
from pto_compiler.passes import get_all_passes
from pto_compiler.passes.lower_a2a3 import float_sum_outputs, lower_to_program
from pto_compiler.runtime import reference as golden
from pto_compiler.targets import A2A3

STAND_INS: list[str] = []
"""Names of the passes replaced by stand-ins in this session (for test reports)."""


def _available(name: str) -> bool:
    try:
        factory = get_all_passes().get(name)
        if factory is None:
            return False
        factory()
        return True
    except Exception:  # noqa: BLE001 - a pass being written may not import yet
        return False


def use_real_pipeline() -> bool:
    return all(_available(n) for n in pipeline.PIPELINES["a2a3"])


# ---- stand-ins ------------------------------------------------------------------------------

def _select_expand(module):
    for op in module.walk():
        if isinstance(op, pto.RowExpandBinaryOp):
            expanded, mode = op.expand_analysis()
            op.attributes["expand_mode"] = IntegerAttr(mode, 64)
            op.attributes["expanded_operand"] = IntegerAttr(expanded, 64)


def _tmp_strategy(module):
    for op in module.walk():
        if isinstance(op, pto.RowExpandBinaryOp):
            mode = op.attributes["expand_mode"].value.data
            src = "none" if mode == 2 else ("tmp" if op.tmp is not None else "scratch")
            op.attributes["bcast_source"] = StringAttr(src)


def _plan_memory(module, target=A2A3):
    scratch = any(isinstance(op, pto.RowExpandBinaryOp) and op.attributes.get("bcast_source") == StringAttr("scratch")
                  for op in module.walk())
    fixed = []
    for op in module.walk():
        if isinstance(op, pto.TAssignOp) and op.static_addr is not None:
            t = op.tile[0].type
            fixed.append((op.static_addr, op.static_addr + t.rows * t.cols * t.elem_bytes))
    addr = 0
    limit = target.scratch_offset if scratch else target.ub_bytes
    for op in module.walk():
        if isinstance(op, pto.AllocTileOp) and "ub_addr" not in op.attributes and op.addr is None:
            if any(isinstance(u.operation, pto.TAssignOp) for u in op.result.uses):
                continue
            t = op.result.type
            size = -(-t.rows * t.cols * t.elem_bytes // 32) * 32
            moved = True
            while moved:
                moved = False
                for lo, hi in fixed:
                    if addr < hi and lo < addr + size:
                        addr = -(-hi // 32) * 32
                        moved = True
            if addr + size > limit:
                raise MemoryError(f"stand-in planner: UB full ({addr + size} > {limit})")
            op.attributes["ub_addr"] = IntegerAttr(addr, 64)
            addr += size


def _pipe(op) -> str | None:
    if isinstance(op, pto.TLoadOp):
        return "PIPE_MTE2"
    if isinstance(op, pto.TStoreOp):
        return "PIPE_MTE3"
    if isinstance(op, pto.TileOp):
        return "PIPE_V"
    return None


def _flag(op_cls, src, dst):
    return op_cls([pto.raw_attr("pipe", src), pto.raw_attr("pipe", dst), pto.raw_attr("event", "EVENT_ID0")])


def _insert_sync(module):
    def block_sync(block):
        prev = None
        for op in list(block.ops):
            for region in op.regions:
                for b in region.blocks:
                    block_sync(b)
            if op.regions and isinstance(op, (scf.ForOp, scf.IfOp)):
                block.insert_op_before(pto.BarrierOp([pto.raw_attr("pipe", "PIPE_ALL")]), op)
                block.insert_op_after(pto.BarrierOp([pto.raw_attr("pipe", "PIPE_ALL")]), op)
                prev = None
                for region in op.regions:
                    for b in region.blocks:
                        first = next(iter(b.ops), None)
                        if first is not None:
                            b.insert_op_before(pto.BarrierOp([pto.raw_attr("pipe", "PIPE_ALL")]), first)
                        last = b.last_op
                        if last is not None:
                            b.insert_op_before(pto.BarrierOp([pto.raw_attr("pipe", "PIPE_ALL")]), last)
                continue
            p = _pipe(op)
            if p is None:
                continue
            if prev is not None and prev != p:
                block.insert_op_before(_flag(pto.SetFlagOp, prev, p), op)
                block.insert_op_before(_flag(pto.WaitFlagOp, prev, p), op)
            prev = p

    for op in module.walk():
        if op.name == "func.func" and op.body.blocks:
            block_sync(op.body.blocks[0])


# ---- compile / run ----------------------------------------------------------------------------

def parse(text: str, filename: str = "<test>"):
    m = api.parse(text, filename)
    api.verify(m, A2A3)
    return m


def place(module, target=A2A3):
    """The placed module (real passes where registered, stand-ins otherwise)."""
    if use_real_pipeline():
        return pipeline.compile_module(module, target, stop_after="placed")
    m = module.clone()
    ctx = api.context()
    from pto_compiler.passes.bufferize import BufferizePass

    if pipeline._has_l1(m):
        BufferizePass().apply(ctx, m)
    for name, fallback in (("pto-select-expand-mode", _select_expand), ("pto-tmp-strategy", _tmp_strategy),
                           ("pto-plan-memory", _plan_memory), ("pto-insert-sync", _insert_sync)):
        if _available(name):
            pipeline._make_pass(name, target, False).apply(ctx, m)
        else:
            if name not in STAND_INS:
                STAND_INS.append(name)
            fallback(m)
    return m


def compile_text(text: str, filename: str = "<test>", scalars=None):
    """(original module, a2a3 program)."""
    m = parse(text, filename)
    return m, lower_to_program(place(m), A2A3, scalars=scalars)


def run_and_compare(module, program, seed: int = 0, given=None):
    """(comparisons, race findings, golden outputs, executor outputs)."""
    values = golden.make_inputs(module, seed, None, given or {})
    want = golden.evaluate(module, values)
    scalars = pipeline.kernel_scalars(module, values)
    res = pipeline.run_program(program, pipeline.gm_inputs(values), scalars, stats=False)
    cmp = pipeline.compare_outputs(res.outputs, want, float_sum_outputs(module))
    return cmp, res.findings, want, res.outputs


def check(text: str, seed: int = 0, given=None, filename: str = "<test>"):
    m, prog = compile_text(text, filename)
    cmp, findings, _, _ = run_and_compare(m, prog, seed, given)
    return cmp, findings, prog


def assert_pass(text: str, seed: int = 0, given=None):
    cmp, findings, prog = check(text, seed, given)
    bad = [c.line() for c in cmp if not c.ok]
    assert not findings, "\n".join(str(f) for f in findings) + "\n" + prog.to_text()
    assert not bad, "\n".join(bad) + "\n" + prog.to_text()
    return prog


def np_equal_bits(a, b) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()
