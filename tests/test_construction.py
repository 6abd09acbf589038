"""How ptoc builds IR cheaply (issue 9) and that it is the IR the plain way gives: tile ops built
without xDSL's generic builder, operand groups read through decoded-once segment sizes, pto-lower-vf
copying a body built once, vf-fuse-launches moving bodies into a fused VF."""

from __future__ import annotations

from io import StringIO

from xdsl.irdl import IRDLOperation, OpDef
from xdsl.printer import Printer

from pto_compiler import api
from pto_compiler.dialects import pto, vf
from pto_compiler.passes import lower_vf
from pto_compiler.passes.vf_fuse_launches import VfFuseLaunchesPass
from pto_compiler.targets import ASCEND950
from pto_compiler.verify import op_diagnostics

T = "!pto.tile_buf<vec, 16x64xf32>"
H = "!pto.tile_buf<vec, 16x64xf16>"

# the same op on the same types several times, operands aliased two ways, another dtype
KERNEL = f"""
func.func @k() {{
  %a = pto.alloc_tile : {T}
  %b = pto.alloc_tile : {T}
  %c = pto.alloc_tile : {T}
  %h = pto.alloc_tile : {H}
  %g = pto.alloc_tile : {H}
  pto.tadd ins(%a, %b : {T}, {T}) outs(%c : {T})
  pto.tadd ins(%b, %c : {T}, {T}) outs(%a : {T})
  pto.tadd ins(%a, %a : {T}, {T}) outs(%c : {T})
  pto.tadd ins(%a, %c : {T}, {T}) outs(%c : {T})
  pto.tadd ins(%c, %c : {T}, {T}) outs(%c : {T})
  pto.tmul ins(%a, %b : {T}, {T}) outs(%c : {T})
  pto.tadd ins(%h, %g : {H}, {H}) outs(%h : {H})
  pto.texp ins(%a : {T}) outs(%b : {T})
  pto.texp ins(%c : {T}) outs(%a : {T})
  return
}}
"""


def test_tile_ops_built_directly_equal_the_generic_builders():
    module = api.parse(KERNEL, "k.pto")
    for op in [o for o in module.walk() if isinstance(o, pto.TileOp)]:
        ins, outs = list(op.ins), list(op.outs)
        fast = type(op)(ins, outs, attributes={"x": op.attributes.get("x")})
        slow = type(op).__new__(type(op))
        IRDLOperation.__init__(slow, operands=[ins, outs], result_types=[[]], attributes={"x": None}, regions=[[]])
        assert fast.properties == slow.properties and fast.attributes == slow.attributes == {}
        assert list(fast.operands) == list(slow.operands)
        assert (list(fast.ins), list(fast.outs)) == (ins, outs)
        fast.verify()
        # the groups follow operand replacement (only the sizes are decoded once)
        fast.operands = [outs[0], *ins[1:], ins[0]]
        assert (list(fast.ins), list(fast.outs)) == ([outs[0], *ins[1:]], [ins[0]])
        fast.drop_all_references()
        slow.drop_all_references()


def test_op_classes_that_only_name_their_base_have_the_op_definition_xdsl_makes():
    """dialects/pto.py gives such classes their base's OpDef under their name (``_named_op``)."""
    named = [cls for cls in pto.PTO.operations if cls.__bases__[0] in pto._OP_DEFS]
    assert len(named) > 150 and {pto.TAddOp, pto.BarrierOp, pto.GENERIC_OPS["pto.subset"]} <= set(named)
    for cls in named:
        plain = type(cls.__name__, cls.__bases__, {"name": cls.name})
        assert OpDef.from_pyrdl(plain) == cls.get_irdl_definition(), cls.name
    assert pto.TAddOp.traits is not pto.TSubOp.traits


def _text(op) -> str:
    out = StringIO()
    Printer(stream=out, print_debuginfo=True).print_op(op)
    return out.getvalue()


def test_copied_vf_bodies_print_as_built_ones():
    placed = api.compile(api.parse(KERNEL, "k.pto"), ASCEND950, "placed")
    ops = [o for o in placed.walk() if isinstance(o, pto.TileOp)]
    built: dict = {}
    for i, op in enumerate(ops):
        copied, call = lower_vf._OpLowering(op, f"k_{i}", ASCEND950).run(built)
        fresh, again = lower_vf._OpLowering(op, f"k_{i}", ASCEND950).run()
        assert _text(copied) == _text(fresh)
        assert list(call.operands) == list(again.operands)
    # one body per (op, operand types, aliasing): tadd x4 (a,b / a,a / a,c->c / c,c), tmul, tadd f16, texp
    assert len(built) == 7


def _three_launches_of_one_vf():
    """A kernel whose three adjacent tadds launch one vf.func @f (as a hand-written VF module may)."""
    text = f"""
func.func @k() {{
  %a = pto.alloc_tile : {T}
  %b = pto.alloc_tile : {T}
  %c = pto.alloc_tile : {T}
  pto.tadd ins(%a, %b : {T}, {T}) outs(%c : {T})
  pto.tadd ins(%a, %b : {T}, {T}) outs(%c : {T})
  pto.tadd ins(%a, %b : {T}, {T}) outs(%c : {T})
  return
}}
"""
    module = api.compile(api.parse(text, "k.pto"), ASCEND950, "vf", vf_opt="none")
    funcs = [o for o in module.body.block.ops if isinstance(o, vf.VfFuncOp)]
    calls = [o for o in module.walk() if isinstance(o, vf.VfCallOp)]
    assert len(funcs) == len(calls) == 3
    for f in funcs[1:]:
        module.body.block.erase_op(f)
    name = funcs[0].sym_name.data
    for c in calls[1:]:
        c.properties["callee"] = calls[0].properties["callee"]
    return module, name


def test_fusing_a_vf_launched_elsewhere_too_moves_copies_of_its_body():
    module, name = _three_launches_of_one_vf()
    VfFuseLaunchesPass().apply(api.context(), module)
    funcs = [o for o in module.body.block.ops if isinstance(o, vf.VfFuncOp)]
    assert [f.sym_name.data for f in funcs] == [f"{name}_{name}_{name}"]  # @f lost its last launch
    assert sum(isinstance(o, vf.AddOp) for o in funcs[0].walk()) == 3
    assert op_diagnostics(module) == []
    inside = set(module.walk())
    for op in inside:  # no value keeps a use by an op outside the module (a copy's leftover shell)
        for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            assert all(u.operation in inside for u in v.uses), op
