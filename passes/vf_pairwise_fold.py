"""``vf-pairwise-fold``: a row reduction's chunks folded pairwise in registers, then one reduction.

pto-lower-vf reduces a row chunk by chunk (vector_isa.md §3.3): ``r0 = reduce(v0)``, then per
further chunk ``acc = OP(acc, reduce(v_j, m_j), VL1)``: one whole-register reduction per chunk
(vcadd/vcmax hold the vector unit several cycles) and a chain of N steps.  seeds/001
("二分 binary") folds the chunks first: pairs (j, j + h) with h the largest power of two below
the chunk count, ``OP<MERGING>(v_j, v_{j+h}, m_{j+h})`` (lanes the later chunk does not cover
keep the earlier chunk's value), halving until one register is left, then one reduction under
chunk 0's mask: log2(N) serial steps and one vcadd/vcmax per row instead of N.

The rewrite applies to the loop pto-lower-vf emits for a row (every use of its result a
``store_align dist = ONEPT``, i.e. only lane 0 is read; constant bounds, at most 15 trips):

    %a0 = vf.reduce_K %v0, %M0
    %c, %acc = scf.for %j = ... iter_args(%n = COUNT, %a = %a0) {
      %m, %n2 = vf.update_mask %n
      ... %v = vf.load_align ...
      %r = vf.reduce_K %v, %m
      %a2 = vf.OP %a, %r, %VL1            (OP = add, max, min for K = sum, max, min)
      scf.yield %n2, %a2 }

Numeric effect: max and min select the same element (bit for bit); a float sum adds the chunks'
lanes pairwise before the in-register tree instead of adding per-chunk sums left to right, a
different rounding within the float-sum tolerance (pairwise summation: its error bound grows
with log2 of the chunk count instead of linearly).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from pto_compiler.dialects import vf
from pto_compiler.passes.vf_multi_accumulator import _index, const_value

MAX_TRIPS = 15
_PAIRS = {vf.ReduceSumOp: vf.AddOp, vf.ReduceMaxOp: vf.MaxOp, vf.ReduceMinOp: vf.MinOp}


@dataclass
class _RowFold:
    loop: scf.ForOp
    first: vf.ReduceOp
    red: vf.ReduceOp
    comb: vf.BinaryOp


def _match(loop: scf.ForOp) -> _RowFold | None:
    b = [const_value(v) for v in (loop.lb, loop.ub, loop.step)]
    if None in b or len(loop.iter_args) != 2 or -(-(b[1] - b[0]) // b[2]) > MAX_TRIPS:
        return None
    body = loop.body.blocks[0]
    n, a = body.args[1], body.args[2]
    first = loop.iter_args[1].owner
    if not isinstance(first, tuple(_PAIRS)) or first.is_datablock or first.mode != "ZEROING":
        return None
    upd = [u.operation for u in n.uses]
    uses_a = [u.operation for u in a.uses]
    if len(upd) != 1 or not isinstance(upd[0], vf.UpdateMaskOp) or len(uses_a) != 1:
        return None
    comb = uses_a[0]
    if type(comb) is not _PAIRS[type(first)] or comb.mode != "ZEROING" or comb.sources[0] is not a:
        return None
    red = comb.sources[1].owner
    y = body.last_op
    if (type(red) is not type(first) or red.is_datablock or red.mode != "ZEROING"
            or red.mask_operand is not upd[0].res[0] or not isinstance(red.sources[0].owner, vf.LoadAlignOp)
            or list(y.operands) != [upd[0].res[1], comb.res[0]]
            or len(list(red.res[0].uses)) != 1 or len(list(comb.res[0].uses)) != 1):
        return None
    for u in loop.results[1].uses:
        if not (isinstance(u.operation, vf.StoreAlignOp) and u.operation.dist_name == "ONEPT"):
            return None
    if list(loop.results[0].uses):
        return None
    return _RowFold(loop, first, red, comb)


def rewrite(f: _RowFold) -> None:
    """Unroll the chunk loop into loads and masks, fold pairwise, reduce once."""
    loop = f.loop
    lb, ub, step = (const_value(v) for v in (loop.lb, loop.ub, loop.step))
    body = loop.body.blocks[0]
    ops: list[Operation] = []
    regs: list[SSAValue] = [f.first.sources[0]]
    masks: list[SSAValue | None] = [f.first.mask_operand]
    count = loop.iter_args[0]
    for j in range(lb, ub, step):
        iv = _index(j)
        ops.append(iv)
        vm: dict = {body.args[0]: iv.result, body.args[1]: count}
        for op in body.ops:
            if op is f.red or op is f.comb or isinstance(op, scf.YieldOp):
                continue
            ops.append(op.clone(vm))
        regs.append(vm[f.red.sources[0]])
        masks.append(vm[f.red.mask_operand])
        count = vm[body.last_op.operands[0]]
    pair = _PAIRS[type(f.first)]
    rt = f.first.res[0].type
    while len(regs) > 1:
        h = 1
        while 2 * h < len(regs):
            h *= 2
        for j in range(len(regs) - h):
            ops.append(pair([regs[j], regs[j + h]], masks[j + h], rt, merge_mode="MERGING"))
            regs[j] = ops[-1].res[0]
        regs, masks = regs[:h], masks[:h]
    ops.append(type(f.first)([regs[0]], f.first.mask_operand, rt))
    block = loop.parent_block()
    block.insert_ops_before(ops, loop)
    loop.results[1].replace_all_uses_with(ops[-1].res[0])
    block.erase_op(loop)
    if not list(f.first.res[0].uses):
        f.first.parent_block().erase_op(f.first)


@dataclass(frozen=True)
class VfPairwiseFoldPass(ModulePass):
    """Row reductions over several chunks -> pairwise register folds and one reduction."""

    name = "vf-pairwise-fold"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in [o for o in op.walk() if isinstance(o, scf.ForOp)]:
            f = _match(loop)
            if f is not None:
                rewrite(f)
