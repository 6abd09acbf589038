"""``vf-loop-order``: a row loop around a chunk loop interchanged when the cycle model says so.

seeds/001 (head_axis, mid_axis): with a broadcast row ``a[n]`` added to every row, the rows-outer
order (``m -> n``: each row's chunks contiguous) reloads ``a``'s chunk and updates the mask per
row; the chunks-outer order (``n -> m``) loads ``a``'s chunk and makes the mask once per chunk
and reuses them down the rows, but its inner loop is as short as the row count.  Which is faster
depends on the shape (head: n -> m; mid with b = 3: b -> n), so the pass builds the interchanged
VF and keeps whichever form ``vf_static_cycles`` (runtime/cycles.py) gives fewer PUSHQ VF cycles.

The nest it interchanges (what pto-lower-vf emits for TCOLEXPAND* and the elementwise ops):

    scf.for %r = ... {                       (no iter_args; only arith ops besides the inner loop)
      %base = arith...(%r)
      %rest = scf.for %c = ... iter_args(%n = COUNT) -> (i32) {
        %m, %n2 = vf.update_mask %n  ...  loads, compute, stores  ...  scf.yield %n2 } }

becomes a chunk loop carrying the count, holding the mask and every op that does not depend on
the row (a broadcast chunk's load), around a row loop with the rest.  Legal because each trip
stores only at offsets that depend on both the row and the chunk and every load of a stored tile
reads exactly the trip's own store offset (so no trip reads what another wrote); tiles the nest
stores are not loaded at other offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from pto_compiler.dialects import vf
from pto_compiler.passes.vf_multi_accumulator import _inside, const_value


@dataclass
class _Nest:
    outer: scf.ForOp
    inner: scf.ForOp
    pre: list
    """The outer body's arith ops before the inner loop."""


def _match(outer: scf.ForOp) -> _Nest | None:
    if outer.iter_args or list(outer.results):
        return None
    ops = [o for o in outer.body.blocks[0].ops if not isinstance(o, scf.YieldOp)]
    if not ops or not isinstance(ops[-1], scf.ForOp):
        return None
    inner, pre = ops[-1], ops[:-1]
    if not all(o.name.startswith("arith.") for o in pre):
        return None
    if (len(inner.iter_args) != 1 or list(inner.results[0].uses) or _inside(inner.iter_args[0], outer)
            or any(_inside(v, outer) for v in (inner.lb, inner.ub, inner.step))):
        return None
    body = inner.body.blocks[0]
    upd = [u.operation for u in body.args[1].uses]
    if len(upd) != 1 or not isinstance(upd[0], vf.UpdateMaskOp) or list(body.last_op.operands) != [upd[0].res[1]]:
        return None
    if any(isinstance(o, scf.ForOp) for o in body.ops):
        return None
    stores = [o for o in body.ops if isinstance(o, vf.StoreAlignOp)]
    if not stores or any(o.dist_name != "NORM" or o.dyn_offset is None for o in stores):
        return None
    stored = {o.tile for o in stores}
    offsets = {o.dyn_offset for o in stores}
    if len(offsets) != 1 or len(stored) != len(stores):
        return None
    for o in body.ops:
        if isinstance(o, vf._MemOp) and not isinstance(o, vf.StoreAlignOp):
            if not isinstance(o, vf.LoadAlignOp):
                return None
            if o.tile in stored and o.dyn_offset not in offsets:
                return None
    nest = _Nest(outer, inner, pre)
    if next(iter(offsets)).owner not in _dependents(nest):
        return None
    return nest


def _dependents(n: _Nest) -> set:
    """The inner body's ops whose value depends on the row (transitively)."""
    row_vals: set = {n.outer.body.blocks[0].args[0]} | {r for o in n.pre for r in o.results}
    dep: set = set()
    for o in n.inner.body.blocks[0].ops:
        if any(v in row_vals for v in o.operands):
            dep.add(o)
            row_vals.update(o.results)
    return dep


def interchange(n: _Nest) -> None:
    outer, inner = n.outer, n.inner
    ib = inner.body.blocks[0]
    dep = _dependents(n)
    cb = Block(arg_types=[IndexType(), ib.args[1].type])
    vm: dict = {ib.args[0]: cb.args[0], ib.args[1]: cb.args[1]}
    cops: list[Operation] = []
    for o in ib.ops:
        if o not in dep and not isinstance(o, scf.YieldOp):
            cops.append(o.clone(vm))
    rb = Block(arg_types=[IndexType()])
    vm[outer.body.blocks[0].args[0]] = rb.args[0]
    rops: list[Operation] = [o.clone(vm) for o in n.pre]
    rops += [o.clone(vm) for o in ib.ops if o in dep]
    rops.append(scf.YieldOp())
    rb.add_ops(rops)
    cops.append(scf.ForOp(outer.lb, outer.ub, outer.step, [], rb))
    cops.append(scf.YieldOp(vm[ib.last_op.operands[0]]))
    cb.add_ops(cops)
    new = scf.ForOp(inner.lb, inner.ub, inner.step, [inner.iter_args[0]], cb)
    block = outer.parent_block()
    block.insert_op_before(new, outer)
    block.erase_op(outer)


def _distinct_at_calls(module: ModuleOp, fn: vf.VfFuncOp, n: _Nest) -> bool:
    """At every launch of ``fn`` the stored tiles are other buffers than the tiles loaded at other
    offsets (a VF argument does not say whether two tiles share UB bytes; its calls do)."""
    body = n.inner.body.blocks[0]
    stored = {o.tile for o in body.ops if isinstance(o, vf.StoreAlignOp)}
    offsets = {o.dyn_offset for o in body.ops if isinstance(o, vf.StoreAlignOp)}
    others = {o.tile for o in body.ops if isinstance(o, vf.LoadAlignOp) and o.dyn_offset not in offsets}
    params = list(fn.args)
    for call in vf.kernel_walk(module):
        if isinstance(call, vf.VfCallOp) and call.callee_name == fn.sym_name.data:
            args = list(call.operands)
            if {args[params.index(t)] for t in stored} & {args[params.index(t)] for t in others}:
                return False
    return True


def _launch_constants(module: ModuleOp, fn: vf.VfFuncOp) -> dict:
    """{parameter index: value} of the parameters every launch of ``fn`` passes as the same
    ``arith.constant`` (a loop bound such as the study's ``vfLoopN``)."""
    seen: dict = {}
    for call in vf.kernel_walk(module):
        if isinstance(call, vf.VfCallOp) and call.callee_name == fn.sym_name.data:
            for k, v in enumerate(call.operands):
                seen.setdefault(k, set()).add(const_value(v))
    return {k: next(iter(vs)) for k, vs in seen.items() if len(vs) == 1 and None not in vs}


@dataclass(frozen=True)
class VfLoopOrderPass(ModulePass):
    """Row/chunk loop nests in the order (rows outer or chunks outer) the cycle model prefers."""

    name = "vf-loop-order"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in vf.kernel_walk(op) if isinstance(o, vf.VfFuncOp)]:
            loops = vf.for_loops(fn)
            for i in reversed(range(len(loops))):
                n = _match(loops[i])
                if n is None or not _distinct_at_calls(op, fn, n):
                    continue
                from pto_compiler.runtime.cycles import vf_static_cycles  # (a kernel with no such nest: not imported)

                trial = fn.clone()
                interchange(_match(vf.for_loops(trial)[i]))
                known = _launch_constants(op, fn)
                before, after = vf_static_cycles(fn, known), vf_static_cycles(trial, known)
                if before is not None and after is not None and after < before:
                    interchange(_match(loops[i]))
