"""The a2a3 dialect: one op per row of the opcode table, and an assembly format that reads back."""

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, ModuleOp, StringAttr, f32
from xdsl.utils.exceptions import VerifyException

from pto_compiler import api
from pto_compiler.dialects import a2a3


def test_one_op_per_opcode():
    assert set(a2a3.OPS) == set(a2a3.OPCODES)
    for name, cls in a2a3.OPS.items():
        assert cls.name == f"a2a3.{name}" and cls.SPEC is a2a3.OPCODES[name]


@pytest.mark.parametrize("opcode", sorted(n for n, s in a2a3.OPCODES.items() if s.family in a2a3.VECTOR_FAMILIES))
def test_vector_ops_round_trip(opcode):
    """Every vector op, built with an operand per field, prints and parses back to the same op."""
    spec = a2a3.OPCODES[opcode]
    consts = {}
    ops = []
    for f in spec.fields:
        kind = spec.kinds[f]
        if kind.startswith("enum:"):
            continue
        c = arith.ConstantOp(FloatAttr(1.5, f32)) if kind == "scalar" else \
            arith.ConstantOp.from_int_and_width(len(consts) * 32, IndexType())
        ops.append(c)
        consts[f] = c.result
    props = {"dtype": f32}
    for f in spec.fields:
        kind = spec.kinds[f]
        if kind.startswith("enum:"):
            props[f] = StringAttr(kind[5:].split("|")[-1])
    if spec.family == "conv":
        props["src_dtype"] = f32
    op = a2a3.OPS[opcode].build_from(consts, props, None)
    module = ModuleOp([*ops, op])
    module.verify()
    back = api.parse_printed(str(module))
    assert back.is_structurally_equivalent(module)
    for f in spec.fields:
        if spec.kinds[f].startswith("enum:"):
            assert f"{f}={props[f].data}" in str(op)


def test_verifier():
    c = arith.ConstantOp.from_int_and_width(0, IndexType())
    with pytest.raises(VerifyException, match="two different pipes"):
        a2a3.OPS["set_flag"].build_from({"event_id": c.result},
                                        {"src_pipe": StringAttr("V"), "dst_pipe": StringAttr("V")}, None).verify()
    with pytest.raises(VerifyException, match="unknown pipe"):
        a2a3.OPS["pipe_barrier"].build_from({}, {"pipe": StringAttr("MTE4")}, None).verify()
    with pytest.raises(VerifyException, match="needs an element type"):
        a2a3.OPS["vexp"].build_from({f: c.result for f in a2a3.OPCODES["vexp"].fields}, {}, None).verify()
    with pytest.raises(VerifyException, match="missing operand"):
        a2a3.OPS["vexp"].build_from({}, {"dtype": f32}, None)


def test_table_feeds_executor_and_cycle_model():
    """The element functions and the a2a3 costs are the table's (one place per fact)."""
    from pto_compiler.runtime import cycles, executor

    assert executor.ELEMENT_FUNCTIONS["vmax"] == a2a3.OPCODES["vmax"].semantics == "maximum"
    assert cycles.CYCLE_TABLES["a2a3"].ops["vexp"] is a2a3.OPCODES["vexp"].cost
