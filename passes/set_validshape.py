"""``pto-set-validshape``: ``pto.set_validshape %t, %vr, %vc`` becomes a value, ``%t2 = pto.valid_view
%t, %vr, %vc``, and the ops after it use ``%t2``.

The op changes a tile's run-time valid shape in place (PTOAS: the tile descriptor); every later op
on the tile works on the new region.  The lowerings take a tile's valid shape from its value
(the ``alloc_tile`` operands), so this pass makes the change a new value: pto-plan-memory gives
it the tile's buffer (passes/tile_views.py) and writes it as an ``alloc_tile`` with the new
``valid_row``/``valid_col`` there.  Ops after the set_validshape in its block, and inside later
ops' regions, see the new shape, as they run after it.  A set_validshape in another block than
the tile's (inside a branch or a loop the tile outlives) would make the shape after it depend on
the path taken: a located error (the golden model runs it).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, Operation
from xdsl.passes import ModulePass

from pto_compiler.diagnostics import op_error
from pto_compiler.dialects import pto


def _defining_block(value):
    return value.block if isinstance(value, BlockArgument) else value.owner.parent_block()


def _ancestor_in(op: Operation, block) -> Operation | None:
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def rewrite(op: Operation) -> None:
    t, vr, vc = op.operands
    block = op.parent_block()
    if _defining_block(t) is not block:
        raise op_error(op, "in another block than its tile's has no lowering yet (the valid shape after "
                           "the branch or loop would depend on the path taken)")
    order = {o: i for i, o in enumerate(block.ops)}
    view = pto.GENERIC_OPS["pto.valid_view"]([t, vr, vc], [t.type])
    view.location = op.location
    block.insert_op_before(view, op)
    for use in list(t.uses):
        user = _ancestor_in(use.operation, block)
        if user is not None and user is not view and order.get(user, -1) > order[op]:
            use.operation.operands[use.index] = view.results[0]
    op.detach()
    op.erase()


def has_set_validshape(module: ModuleOp) -> bool:
    return any(op.name == "pto.set_validshape" for op in module.walk())


@dataclass(frozen=True)
class SetValidshapePass(ModulePass):
    name = "pto-set-validshape"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for s in [o for o in op.walk() if o.name == "pto.set_validshape"]:
            if len(s.operands) != 3 or not isinstance(s.operands[0].type, pto.TileBufType):
                raise op_error(s, "expects `%tile, %valid_row, %valid_col`")
            rewrite(s)
