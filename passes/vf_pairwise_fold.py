"""``vf-pairwise-fold``: a row reduction's chain of chunk folds made a pairwise tree.

pto-lower-vf reduces a row as seeds/001's baseline does: chunk 0 loaded, then per further chunk
``acc = OP<MERGING>(acc, v_j, m_j)`` (lanes the chunk does not cover keep their value), one
cross-lane reduction at the end: a chain of N - 1 dependent folds per row.  seeds/001
("二分 binary") folds the chunks pairwise instead: pairs (j, j + h) with h the largest power of
two below the chunk count, ``OP<MERGING>(v_j, v_{j+h}, m_{j+h})``, halving until one register
is left: log2(N) serial steps, the same one reduction.

The rewrite applies to the chunk loop of a row (constant bounds, at most 15 trips) whose
result only a reduction of the same kind reads, whose result only ``store_align dist = ONEPT``
stores read (directly or through a ``vf.cvt``), i.e. a row's lane 0:

    %c, %acc = scf.for %j = ... iter_args(%n = COUNT, %a = %v0) {
      %m, %n2 = vf.update_mask %n
      ... %v = ...                        (loads, conversions: no store)
      %a2 = vf.OP %a, %v, %m, merge_mode = MERGING    (OP = add, max, min)
      scf.yield %n2, %a2 }
    %r = vf.reduce_K %acc, %M0            (K = sum, max, min)

Numeric effect: max and min select the same element (bit for bit); a float sum adds each lane's
chunks pairwise instead of left to right, a different rounding within the float-sum tolerance
(pairwise summation: its error bound grows with log2 of the chunk count instead of linearly).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from pto_compiler.dialects import vf
from pto_compiler.passes.vf_multi_accumulator import _STORES, _index, const_value

MAX_TRIPS = 15
_FOLD_OF = {vf.ReduceSumOp: vf.AddOp, vf.ReduceMaxOp: vf.MaxOp, vf.ReduceMinOp: vf.MinOp}


@dataclass
class _RowFold:
    loop: scf.ForOp
    comb: vf.BinaryOp


def _lane0_only(v: SSAValue) -> bool:
    """Only ``store_align dist = ONEPT`` reads ``v``, directly or through conversions."""
    uses = list(v.uses)
    return bool(uses) and all(
        _lane0_only(u.operation.res[0]) if isinstance(u.operation, vf.CvtOp) else
        isinstance(u.operation, vf.StoreAlignOp) and u.operation.dist_name == "ONEPT" for u in uses)


def _match(loop: scf.ForOp) -> _RowFold | None:
    b = [const_value(v) for v in (loop.lb, loop.ub, loop.step)]
    if None in b or len(loop.iter_args) != 2 or -(-(b[1] - b[0]) // b[2]) > MAX_TRIPS:
        return None
    body = loop.body.blocks[0]
    n, a = body.args[1], body.args[2]
    upd = [u.operation for u in n.uses]
    uses_a = [u.operation for u in a.uses]
    if len(upd) != 1 or not isinstance(upd[0], vf.UpdateMaskOp) or len(uses_a) != 1:
        return None
    comb = uses_a[0]
    reds = [u.operation for u in loop.results[1].uses]
    if (len(reds) != 1 or type(reds[0]) not in _FOLD_OF or type(comb) is not _FOLD_OF[type(reds[0])]
            or reds[0].is_datablock or not _lane0_only(reds[0].res[0]) or list(loop.results[0].uses)):
        return None
    if (comb.mode != "MERGING" or comb.dst_operand is not None or comb.sources[0] is not a
            or comb.mask_operand is not upd[0].res[0] or list(body.last_op.operands) != [upd[0].res[1], comb.res[0]]
            or len(list(comb.res[0].uses)) != 1 or any(isinstance(o, _STORES + (scf.ForOp,)) for o in body.ops)):
        return None
    return _RowFold(loop, comb)


def rewrite(f: _RowFold) -> None:
    """Unroll the chunk loop into loads and masks, fold the chunk registers pairwise."""
    loop = f.loop
    lb, ub, step = (const_value(v) for v in (loop.lb, loop.ub, loop.step))
    body = loop.body.blocks[0]
    ops: list[Operation] = []
    regs: list[SSAValue] = [loop.iter_args[1]]
    masks: list[SSAValue | None] = [None]
    count = loop.iter_args[0]
    for j in range(lb, ub, step):
        iv = _index(j)
        ops.append(iv)
        vm: dict = {body.args[0]: iv.result, body.args[1]: count}
        for op in body.ops:
            if op is f.comb or isinstance(op, scf.YieldOp):
                continue
            ops.append(op.clone(vm))
        regs.append(vm[f.comb.sources[1]])
        masks.append(vm[f.comb.mask_operand])
        count = vm[body.last_op.operands[0]]
    pair, rt = type(f.comb), f.comb.res[0].type
    while len(regs) > 1:
        h = 1
        while 2 * h < len(regs):
            h *= 2
        for j in range(len(regs) - h):
            ops.append(pair([regs[j], regs[j + h]], masks[j + h], rt, merge_mode="MERGING"))
            regs[j] = ops[-1].res[0]
        regs, masks = regs[:h], masks[:h]
    block = loop.parent_block()
    block.insert_ops_before(ops, loop)
    loop.results[1].replace_all_uses_with(regs[0])
    block.erase_op(loop)


@dataclass(frozen=True)
class VfPairwiseFoldPass(ModulePass):
    """A row reduction's chain of chunk folds -> a pairwise tree of folds (log2 serial steps)."""

    name = "vf-pairwise-fold"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in vf.for_loops(op):
            f = _match(loop)
            if f is not None:
                rewrite(f)
