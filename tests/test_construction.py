"""How ptoc builds and checks IR cheaply (issue 9) and that it is the IR and the diagnostics the plain
way gives: tile ops and partition views built without xDSL's generic builder, op classes sharing
their base's definition, raw attribute classes one dataclass, operand groups read through
decoded-once segment sizes, pto-lower-vf copying a body built once, vf-fuse-launches moving bodies
into a fused VF, the IRDL check skipped for signatures that passed."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from io import StringIO
from types import MethodType

import pytest
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, ModuleOp, StringAttr, i32, i64
from xdsl.ir import Block, Region, TypeAttribute
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


def test_a_partition_view_built_directly_equals_the_generic_builders():
    module = api.parse("""
func.func @v(%x: !pto.ptr<f32>, %r: index, %c: index) {
  %xv = pto.make_tensor_view %x, shape = [%r, %c], strides = [%c, %c] : !pto.tensor_view<?x?xf32>
  %xp = pto.partition_view %xv, offsets = [%r, %c], sizes = [%c] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
  return
}""", "v.pto")
    (op,) = [o for o in module.walk() if isinstance(o, pto.PartitionViewOp)]
    groups, attrs = [list(op.source), list(op.offsets), list(op.sizes)], {"k": pto.raw_attr("pipe", "PIPE_V")}
    fast = pto.PartitionViewOp(op.source[0], groups[1], groups[2], op.result.type, attrs)
    slow = pto.PartitionViewOp.__new__(pto.PartitionViewOp)
    IRDLOperation.__init__(slow, operands=groups, result_types=[op.result.type], attributes=attrs)
    assert (fast.properties, fast.attributes, fast.result_types) == (slow.properties, slow.attributes, slow.result_types)
    assert list(fast.operands) == list(slow.operands)
    assert [list(fast.source), list(fast.offsets), list(fast.sizes)] == groups
    for o in (fast, slow):
        o.drop_all_references()


def test_raw_attribute_classes_behave_as_defined_ones():
    """dialects/pto.py derives the ``#pto.<kind><...>`` classes from one frozen dataclass."""
    pipe, event = pto.RAW_ATTRS["pipe"], pto.RAW_ATTRS["event"]
    a, b = pipe(StringAttr("PIPE_V")), pto.raw_attr("pipe", "PIPE_V")
    assert a == b and hash(a) == hash(b) and a != event(StringAttr("PIPE_V")) != pipe(StringAttr("PIPE_S"))
    assert repr(a) == "PipeAttr(body=StringAttr(data='PIPE_V'))" and isinstance(pto.raw_type("mask"), TypeAttribute)
    with pytest.raises(FrozenInstanceError):
        a.body = StringAttr("PIPE_S")
    with pytest.raises(TypeError):
        type("Sub", (pipe,), {})
    assert {c.name for c in pto.PTO.attributes} >= {f"pto.{n}" for n in (*pto.RAW_ATTR_NAMES, *pto.RAW_TYPE_NAMES)}
    assert all(c.get_irdl_definition().name == c.name for c in (*pto.RAW_ATTRS.values(), *pto.RAW_TYPES.values()))


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


def _function(name: str, body) -> func.FuncOp:
    block = Block(arg_types=[i32, i64])
    block.add_ops(body(*block.args))
    return func.FuncOp(name, ([i32, i64], []), Region(block))


def test_verification_skips_only_signatures_that_passed(monkeypatch):
    """op_diagnostics checks a signature that passed before by its op's traits only, and gives the
    diagnostics of xDSL's plain check: a failing signature fails at every op, and a trait fails
    where the same signature passed elsewhere (func.return in a loop)."""
    def first(a, b):  # three adds that pass, two that do not (i32 + i64), a return that passes
        return [*(arith.AddiOp(a, a) for _ in range(3)),
                *(arith.AddiOp.create(operands=[a, b], result_types=[i32]) for _ in range(2)), func.ReturnOp()]

    def second(a, b):  # the same return, in a loop: not in a func.func
        c = arith.ConstantOp.from_int_and_width(0, IndexType())
        body = Block([func.ReturnOp()], arg_types=[IndexType()])
        return [arith.AddiOp(a, a), c, scf.ForOp(c, c, c, [], Region(body)), func.ReturnOp()]

    module = ModuleOp([_function("f", first), _function("g", second)])
    classes = {type(op) for op in module.walk()}
    with monkeypatch.context() as plain:
        for cls in classes:
            op_def = cls.get_irdl_definition()
            plain.setattr(op_def, "verify", MethodType(OpDef.verify, op_def))
        want = [d.message for d in op_diagnostics(module)]
    assert sum("i64" in m for m in want) == 2 and any("func.return" in m for m in want), want
    assert [d.message for d in op_diagnostics(module)] == want
    assert [d.message for d in op_diagnostics(module)] == want  # every signature now seen
