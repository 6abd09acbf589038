"""The decoded form of a vf.func (runtime/vf_executor.py ``vf_plan``) says what xDSL's accessors
and the golden model say of the same ops: loop operands, carried values and block arguments,
integer constants' values, and which ops it sends to which handler."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, scf

from pto_compiler import api
from pto_compiler.dialects import vf
from pto_compiler.runtime import reference as golden
from pto_compiler.runtime import vf_executor as vx
from pto_compiler.runtime.executor import plan_of
from pto_compiler.targets import ASCEND950

from test_vf_executor import tile, vfunc_ir

AXPY = f"""
vf.func @axpy(%x: {tile('f32', 192)}, %z: {tile('f32', 192)}, %n: i32, %loops: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %last = scf.for %i = %c0 to %loops step %c1 iter_args(%count = %n) -> (i32) {{
    %mask, %rest = vf.update_mask %count : !vf.mask<b32>
    %off = arith.muli %i, %c64 : index
    %vx = vf.load_align %x[%off] : {tile('f32', 192)}
    %vs = vf.max %vx, %vx, %mask : !vf.reg<64xf32>
    vf.store_align %z[%off], %vs, %mask : {tile('f32', 192)}
    scf.yield %rest : i32
  }}
}}"""

CONSTANTS = """
vf.func @k() {
  %a = arith.constant 0 : index
  %b = arith.constant -1 : index
  %c = arith.constant 9223372036854775807 : index
  %d = arith.constant -9223372036854775808 : index
  %e = arith.constant -1 : i32
  %f = arith.constant 2147483647 : i32
  %g = arith.constant -2147483648 : i32
  %h = arith.constant 255 : i8
  %i = arith.constant 1 : i1
  %j = arith.constant -7 : i64
  %k = arith.constant 1.5 : f32
}"""

ROWEXPANDMAX = """func.func @k(%x: !pto.tile<16x128xf32>, %s: !pto.tile<16x1xf32, blayout=col_major>) -> !pto.tile<16x128xf32> {
  %d = pto.trowexpandmax %x, %s : !pto.tile<16x128xf32>, !pto.tile<16x1xf32, blayout=col_major> -> !pto.tile<16x128xf32>
  return %d : !pto.tile<16x128xf32>
}
"""


def _loops(fn):
    return [op for op in fn.walk() if isinstance(op, scf.ForOp)]


def _for_plans(plan):
    for code, op, entry, name, x in plan.entries:
        assert entry == (vx.LOG_OP, op) and name == op.name
        if code == vx._FOR:
            yield op, x
            yield from _for_plans(x.body)


def _compiled_vfs(text: str):
    program = api.compile(api.parse(text, "k.pto"), ASCEND950, decode=True)
    return program, list(program.vf_funcs.values())


@pytest.mark.parametrize("source", ["axpy", "rowexpandmax"])
def test_loop_plans_hold_what_xdsl_accessors_give(source):
    fns = [vfunc_ir(AXPY)] if source == "axpy" else _compiled_vfs(ROWEXPANDMAX)[1]
    seen = 0
    for fn in fns:
        plans = dict((id(op), fp) for op, fp in _for_plans(vx.vf_plan(fn).body))
        for op in _loops(fn):
            fp = plans[id(op)]
            block = op.body.blocks[0]
            assert (fp.lb, fp.ub, fp.step) == (op.lb, op.ub, op.step)
            assert fp.inits == tuple(op.iter_args) and fp.results == tuple(op.results)
            assert fp.args == tuple(block.args) and fp.yielded is block.last_op
            seen += 1
    assert seen == (1 if source == "axpy" else 2)


def test_constants_decode_to_the_golden_models_values():
    fn = vfunc_ir(CONSTANTS)
    consts = {op.results[0]: op for op in fn.walk() if isinstance(op, arith.ConstantOp)}
    decoded = {}
    for code, op, _, _, x in vx.vf_plan(fn).body.entries:
        if code == vx._CONST:
            assert x[0] is op.results[0]
            decoded[x[0]] = x[1]
    ints = [r for r in consts if not str(r.type).startswith("f")]
    assert set(decoded) == set(ints)  # every integer constant, not the float one
    for r, v in decoded.items():
        assert v == golden._eval_arith(consts[r], {})[0], consts[r]


def test_ops_go_to_their_handlers():
    fn = vfunc_ir(AXPY)
    top = vx.vf_plan(fn).body.entries
    assert [c for c, *_ in top] == [vx._CONST] * 3 + [vx._FOR]
    body = top[-1][-1].body.entries
    kinds = {op.name: (c, x) for c, op, _, _, x in body}
    assert kinds["scf.yield"] == (vx._YIELD, tuple(body[-1][1].operands))
    assert kinds["arith.muli"][0] == vx._ARITH
    for name, cls, mem in (("vf.load_align", vf.LoadAlignOp, True), ("vf.store_align", vf.StoreAlignOp, True),
                           ("vf.max", type(next(o for o in fn.walk() if o.name == "vf.max")), False),
                           ("vf.update_mask", vf.UpdateMaskOp, False)):
        code, (h, hb, px, is_mem) = kinds[name]
        assert code == vx._OP and h is vx._HANDLERS[cls] and is_mem == mem
        assert hb is vx._BATCHED.get(cls) and hb is not None


def test_the_compile_decodes_the_vfs_with_the_program():
    program, fns = _compiled_vfs(ROWEXPANDMAX)
    plan_of(program)
    assert fns and all("_vfplan" in fn.__dict__ for fn in fns)


@pytest.mark.parametrize("source", ["axpy", "rowexpandmax"])
def test_prefetched_properties_are_what_xdsl_accessors_give(source):
    fns = [vfunc_ir(AXPY)] if source == "axpy" else _compiled_vfs(ROWEXPANDMAX)[1]
    seen = 0
    for fn in fns:
        vx.vf_plan(fn).body  # (made when a launch needs it: a VF with a static plan has it made here)
        for op in fn.walk():
            px = op.__dict__.get("_vfx")
            if px is None:
                continue
            got = {k: v for k, v in px.__dict__.items() if k != "_op"}
            assert got, op.name  # looked up by the plan, before any run
            for k, v in got.items():
                want = getattr(op, k)
                assert v == want or v is want, (op.name, k)
            seen += 1
    assert seen >= 4


def test_all_lanes_is_numpys_all():
    import numpy as np

    for act in (np.ones(64, bool), np.zeros(0, bool), np.array([1, 1, 0], bool), np.ones((4, 64), bool)[:, ::2],
                np.frombuffer(bytes([2, 1, 3]), np.uint8).view(bool), np.frombuffer(bytes([2, 0, 3]), np.uint8).view(bool),
                np.arange(5) > 0, np.arange(5) >= 0):
        assert vx.all_lanes(act) == bool(act.all())
