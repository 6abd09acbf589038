"""``pto-fold-view-yields``: an ``scf.if`` result that is a GM view both branches yield unchanged
is that view.

PTOAS's Python front end threads every GM tensor view through ``scf.if`` (Qwen3 decode:
``%k, %v = scf.if %c -> (!pto.tensor_view<..>, ..) { ...; scf.yield %k0, %v0 } else { scf.yield
%k0, %v0 }``): the view is the same either way, only the stores inside the branch differ.  The
lowerings carry scalars through ``scf.if``, not views, so this pass replaces such a result by
the yielded view and drops it from the ``scf.if``.  A view that differs per branch (a GM
address chosen at run time) stays, and the lowering says so, located.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, SSAValue
from xdsl.passes import ModulePass

from pto_compiler.dialects import pto

VIEW_TYPES = (pto.TensorViewType, pto.PartitionTensorViewType, pto.PtrType)


def _invariant(op: scf.IfOp, i: int) -> SSAValue | None:
    """The view both branches of ``op`` yield as result ``i``, when it is defined outside ``op``."""
    yields = [r.block.last_op for r in (op.true_region, op.false_region) if r.blocks]
    if len(yields) != 2 or not all(isinstance(y, scf.YieldOp) for y in yields):
        return None
    v = yields[0].operands[i]
    if v is not yields[1].operands[i] or not isinstance(v.type, VIEW_TYPES):
        return None
    owner = v.block.parent_op() if isinstance(v, BlockArgument) else v.owner
    while owner is not None:
        if owner is op:
            return None
        owner = owner.parent_op()
    return v


def has_view_results(module: ModuleOp) -> bool:
    return any(isinstance(o, scf.IfOp) and any(isinstance(r.type, VIEW_TYPES) for r in o.results)
               for o in module.walk())


def fold_if(op: scf.IfOp) -> None:
    folded = {i: v for i in range(len(op.results)) if (v := _invariant(op, i)) is not None}
    if not folded:
        return
    for i, v in folded.items():
        op.results[i].replace_all_uses_with(v)
    keep = [i for i in range(len(op.results)) if i not in folded]
    for region in (op.true_region, op.false_region):
        y = region.block.last_op
        y.parent_block().insert_op_before(scf.YieldOp(*[y.operands[i] for i in keep]), y)
        y.detach()
        y.erase()
    then, other = op.true_region, op.false_region
    new = scf.IfOp(op.cond, [op.results[i].type for i in keep], op.detach_region(then), op.detach_region(other))
    new.location = op.location
    op.parent_block().insert_op_before(new, op)
    for old_i, new_r in zip(keep, new.results):
        new_r.name_hint = op.results[old_i].name_hint
        op.results[old_i].replace_all_uses_with(new_r)
    op.detach()
    op.erase()


@dataclass(frozen=True)
class FoldViewYieldsPass(ModulePass):
    name = "pto-fold-view-yields"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for if_op in [o for o in op.walk() if isinstance(o, scf.IfOp) and o.results]:
            fold_if(if_op)
