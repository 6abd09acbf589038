"""``vf-multi-accumulator``: k independent accumulators for a latency-bound VF reduction loop.

seeds/001 (reduce, "多路并行"): ``acc = max(acc, x[i])`` makes every trip wait for the previous
result (the chain is the loop's trip count long); k accumulators folded round-robin let the
k independent ops of a group fill each other's latency.  The pass rewrites a hardware loop

    %r = scf.for %i = LB to UB step S iter_args(%acc = %init) -> (!vf.reg<..>) {
      ...                                   (loads and arithmetic; no stores)
      %n = vf.OP %acc, %v, %m               (OP: add, max, min; ZEROING; %m defined outside)
      scf.yield %n
    }

into: accumulators 1..k-1 start as the ``%v`` of the first k-1 trips (a prologue; accumulator 0
starts as ``%init``), a loop of groups of k trips folding trip j of a group into accumulator j,
the leftover trips (if any) into accumulator 0 (the original loop from where the groups end), and
``(a0 OP a1) OP (a2 OP a3) ...`` under ``%m``.  The accumulators' inactive lanes hold loaded data
until the ZEROING merge clears them, as the chain's last op did, so max/min results are bit for
bit the same; float sums are re-associated (k partial sums: within the float-sum tolerance, and
usually closer to the exact sum than the single chain).

The MERGING form is a row's chunk chain as pto-lower-vf emits it (rows of more chunks than
vf-pairwise-fold unrolls), the mask counted down trip by trip:

    %c, %r = scf.for %i = LB to UB step S iter_args(%n = COUNT, %acc = %init) -> (i32, !vf.reg<..>) {
      %m, %n2 = vf.update_mask %n
      ...
      %a = vf.OP %acc, %v, %m, merge_mode = MERGING
      scf.yield %n2, %a
    }

Lanes a trip does not cover keep the accumulator's, so each lane of the result folds %init's lane
and the lane of every trip covering it.  The count threads through the trips in their order
(prologue, groups, leftover); the prologue trips must cover every lane (COUNT >= (k - 1) lanes:
their whole ``%v`` starts an accumulator), so each accumulator holds every lane and they merge
under an ALL mask: the same lanes folded, max/min bit for bit, sums re-associated as above.
k (1, 2, 4 or 8) is the one the cycle model (runtime/cycles.py ``vf_static_cycles``) gives the
fewest PUSHQ VF cycles.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from pto_compiler.dialects import vf

CHOICES = (1, 2, 4, 8)
_FOLDS = (vf.AddOp, vf.MaxOp, vf.MinOp)
_STORES = (vf.StoreAlignOp, vf.StoreUnalignOp, vf.StoreUnalignPostOp)


def const_value(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _index(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(value, IndexType()))


@dataclass
class _Chain:
    loop: scf.ForOp
    fold: vf.BinaryOp
    lb: int
    step: int
    trips: int
    acc: int
    """The accumulator's place among the loop's iter_args."""
    count: int | None
    """The MERGING form's mask count's place among the iter_args (None: the ZEROING form)."""
    full: int
    """How many leading trips fold every lane (all of them in the ZEROING form)."""


def _chain(loop: scf.ForOp) -> _Chain | None:
    """The loop's reduction chain, if it has exactly one of the forms the pass rewrites."""
    b = [const_value(v) for v in (loop.lb, loop.ub, loop.step)]
    regs = [k for k, v in enumerate(loop.iter_args) if isinstance(v.type, vf.RegType)]
    if None in b or len(regs) != 1 or len(loop.iter_args) > 2:
        return None
    ai = regs[0]
    body = loop.body.blocks[0]
    acc = body.args[1 + ai]
    uses = list(acc.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, _FOLDS):
        return None
    fold = uses[0].operation
    y = body.last_op
    m = fold.mask_operand
    if (fold.sources[0] is not acc or m is None or fold.dst_operand is not None or not isinstance(y, scf.YieldOp)
            or y.operands[ai] is not fold.res[0] or len(list(fold.res[0].uses)) != 1
            or any(isinstance(o, _STORES + (scf.ForOp,)) for o in body.ops)):
        return None
    lb, ub, step = b
    trips = max(0, -(-(ub - lb) // step))
    if len(loop.iter_args) == 1:
        if fold.mode != "ZEROING" or _inside(m, loop):
            return None
        return _Chain(loop, fold, lb, step, trips, ai, None, trips)
    ci = 1 - ai
    upd = [u.operation for u in body.args[1 + ci].uses]
    count0 = const_value(loop.iter_args[ci])
    if (fold.mode != "MERGING" or len(upd) != 1 or not isinstance(upd[0], vf.UpdateMaskOp) or m is not upd[0].res[0]
            or y.operands[ci] is not upd[0].res[1] or list(loop.results[ci].uses) or count0 is None or count0 < 0):
        return None
    return _Chain(loop, fold, lb, step, trips, ai, ci, min(trips, count0 // m.type.nlanes))


def _inside(v: SSAValue, loop: Operation) -> bool:
    owner = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
    while owner is not None:
        if owner is loop:
            return True
        owner = owner.parent_op()
    return False


def _clone_trip(c: _Chain, iv: SSAValue, count: SSAValue | None, acc: SSAValue | None,
                out: list[Operation]) -> tuple[SSAValue, SSAValue | None]:
    """The body of one trip with induction variable ``iv`` and mask count ``count``: (its ``%v``
    (acc None: without the fold) or the folded value, the count after it)."""
    body = c.loop.body.blocks[0]
    vm: dict = {body.args[0]: iv}
    if c.count is not None:
        vm[body.args[1 + c.count]] = count
    if acc is not None:
        vm[body.args[1 + c.acc]] = acc
    for op in body.ops:
        if isinstance(op, scf.YieldOp) or (acc is None and op is c.fold):
            continue
        out.append(op.clone(vm))
    nxt = vm[body.last_op.operands[c.count]] if c.count is not None else None
    return (vm[c.fold.res[0]] if acc is not None else vm[c.fold.sources[1]]), nxt


def rewrite(c: _Chain, k: int) -> None:
    """Replace the chain's loop by the k-accumulator form (see the module docstring)."""
    loop, fold = c.loop, c.fold
    rt, m = fold.res[0].type, fold.mask_operand
    pre: list[Operation] = []
    accs: list[SSAValue] = [loop.iter_args[c.acc]]
    count = loop.iter_args[c.count] if c.count is not None else None
    for j in range(k - 1):
        cst = _index(c.lb + j * c.step)
        pre.append(cst)
        v, count = _clone_trip(c, cst.result, count, None, pre)
        accs.append(v)
    groups = (c.trips - (k - 1)) // k
    first = c.lb + (k - 1) * c.step
    zero, one, ng = _index(0), _index(1), _index(groups)
    kstep, base0 = _index(k * c.step), _index(first)
    pre += [zero, one, ng, kstep, base0]
    carried = accs + ([count] if count is not None else [])
    body = Block(arg_types=[IndexType()] + [v.type for v in carried])
    ops: list[Operation] = [arith.MuliOp(body.args[0], kstep.result)]
    ops.append(arith.AddiOp(ops[-1].results[0], base0.result))
    base = ops[-1].results[0]
    folded = []
    n = body.args[1 + k] if count is not None else None
    for j in range(k):
        iv = base
        if j:
            off = _index(j * c.step)
            ops += [off, arith.AddiOp(base, off.result)]
            iv = ops[-1].results[0]
        v, n = _clone_trip(c, iv, n, body.args[1 + j], ops)
        folded.append(v)
    ops.append(scf.YieldOp(*folded, *([n] if n is not None else [])))
    body.add_ops(ops)
    main = scf.ForOp(zero.result, ng.result, one.result, carried, body)
    tail: list[Operation] = [main]
    vals = list(main.results[:k])
    if (c.trips - (k - 1)) % k:
        rest_lb = _index(first + groups * k * c.step)
        rest = loop.clone()
        inits = [main.results[0]]
        if c.count is not None:
            inits.insert(c.count, main.results[k])
        rest.operands = (rest_lb.result, loop.ub, loop.step, *inits)
        tail += [rest_lb, rest]
        vals[0] = rest.results[c.acc]
    if c.count is not None:  # every accumulator holds every lane: merge them all
        tail.append(vf.CreateMaskOp("ALL", m.type))
        m = tail[-1].results[0]
    while len(vals) > 1:
        nxt = []
        for a, b in zip(vals[0::2], vals[1::2]):
            tail.append(type(fold)([a, b], m, rt))
            nxt.append(tail[-1].res[0])
        vals = nxt + ([vals[-1]] if len(vals) % 2 else [])
    parent = loop.parent_block()
    parent.insert_ops_before(pre + tail, loop)
    loop.results[c.acc].replace_all_uses_with(vals[0])
    parent.erase_op(loop)


def _best_k(fn: vf.VfFuncOp, index: int) -> int:
    """The k of CHOICES the cycle model prefers for the index-th loop of ``fn``."""
    from pto_compiler.runtime.cycles import vf_static_cycles

    best, best_k = None, 1
    for k in CHOICES:
        trial = fn.clone()
        loops = vf.for_loops(trial)
        c = _chain(loops[index])
        if c is None or c.trips < 2 * k or c.full < k - 1:
            continue
        if k > 1:
            rewrite(c, k)
        cost = vf_static_cycles(trial)
        if cost is not None and (best is None or cost < best - 1e-9):
            best, best_k = cost, k
    return best_k


@dataclass(frozen=True)
class VfMultiAccumulatorPass(ModulePass):
    """Latency-bound VF reduction loops -> k independent accumulators (k by the cycle model)."""

    name = "vf-multi-accumulator"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in vf.kernel_walk(op) if isinstance(o, vf.VfFuncOp)]:
            loops = vf.for_loops(fn)
            for i in reversed(range(len(loops))):  # later loops first: earlier indices stay valid
                c = _chain(loops[i])
                if c is None:
                    continue
                k = _best_k(fn, i)
                if k > 1:
                    rewrite(c, k)
