"""``vf-fuse-launches``: per-row launches and consecutive VF launches over the same chunks fused.

First, a kernel ``scf.for`` whose body is one ``vf.call`` with operands computed from the
induction variable (the per-row launches pto-lower-vf emits for the broadcast families, and the
study's own tail/head/mid_axis_1 kernels) becomes one launch of a VF that runs the loop around
the callee's body, constants and masks hoisted before it (tail_axis_2, head_axis_3; mid_axis_1
becomes mid_axis_4); inner loops first, so a nest of launch loops folds into one VF level by
level.  A launch operand may be a sub-tile bound by ``pto.tassign`` at an address affine in the
induction variable (rows 3m..3m+2 of x): the VF takes the tile spanning every trip's bytes and
moves each trip's accesses by its sub-tile's offset.  The trips ran in order on the V pipe
before and still do.

seeds/001: every ``asc_vf_call`` costs a launch (PUSHQ VF) and its parameters (PUSH_PB), and a
value passed between two VFs goes through the UB.  pto-lower-vf gives each tile op its own VF,
so ``z = a * x + y`` written as TMULS then TADD is two launches of a 305-trip loop, the second
reloading what the first stored.  The study's AXPY is one VF whose loop does both.

Two ``vf.call`` in one block, with only ``arith`` ops, ``wait_flag``, ``set_flag`` and V-pipe
barriers between them, whose callees are each one flat chunk loop

    scf.for %i = LB to UB step S iter_args(%n = COUNT) -> (i32) {
      %m, %n2 = vf.update_mask %n  ...  NORM loads/stores at offset %i * C  ...  scf.yield %n2 }

with the same constant bounds, COUNT and C, become one ``vf.func`` (the arguments of both, each
buffer once) whose loop runs the first body, then the second with the first's mask; a load in
the second body of the chunk the first body just stored, whose every use is a ZEROING op under
that mask, takes the stored register instead (the lanes it reads are the ones the store wrote).
Trip i of either body touches only chunk i of each buffer, so running the bodies trip by trip
reads and writes what running them one after the other did.  The fused call stands where the
second call stood: the waits between the two stay before it, the set_flags between them move
after it, a V barrier between them is dropped (one VF orders its own accesses).

In the default pipeline pto-lower-vf already lowers such a chain of tile ops fused
(``pto-lower-vf{fuse=true}``: :class:`Fusion`, the bodies copied from its templates), and this
pass finds it so.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import UNKNOWN_LOC, FunctionType, IndexType, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from pto_compiler.dialects import pto, vf
from pto_compiler.passes.vf_multi_accumulator import _index, _inside, const_value

_BETWEEN = ("pto.wait_flag", "pto.set_flag", "pto.barrier")
_V_BARRIER: dict[int, tuple] = {}
"""id(args of a pto.barrier) -> (the args, held so no other object takes its id; a V barrier?): the
sync ops share their args (pto._args_attr), and printing them costs more than the rest of a fusion."""


def _v_barrier(op: Operation) -> bool:
    """``op`` is a ``pto.barrier`` of PIPE_V."""
    args = op.properties["args"]
    known = _V_BARRIER.get(id(args))
    if known is None:
        known = _V_BARRIER[id(args)] = (args, "PIPE_V>" in str(args))
    return known[1]


@dataclass
class _Flat:
    fn: vf.VfFuncOp
    loop: scf.ForOp
    key: tuple
    """(lb, ub, step, count, chunk elements): equal keys walk the same chunks."""
    stores: dict
    """Buffer -> the loop body's last ``vf.store_align`` to it (kept as launches fuse into ``fn``)."""
    constants: dict
    """(value, type) -> the ``arith.constant`` of ``fn``'s prelude (the first of equal ones)."""
    order: dict
    """The loop body's ops -> increasing numbers in body order (fused bodies are appended)."""


def chunk_loop(fn: vf.VfFuncOp | None) -> _Flat | None:
    """``fn`` as constants and masks then one flat chunk loop (the module doc's form), or None."""
    # (operands and properties are read directly: IRDL's named accessors cost more than the checks)
    if fn is None:
        return None
    loop = None
    constants = {}
    for o in fn.block.ops:
        if isinstance(o, scf.ForOp) and loop is None:
            loop = o
        elif isinstance(o, arith.ConstantOp):
            constants.setdefault((o.properties["value"], o.results[0].type), o.results[0])
        elif not isinstance(o, vf.CreateMaskOp):
            return None
    if loop is None:
        return None
    lb, ub, step, *iter_args = loop.operands
    b = [const_value(v) for v in (lb, ub, step)]
    if None in b or len(iter_args) != 1 or loop.results[0].uses:
        return None
    init = iter_args[0].owner
    if not isinstance(init, arith.ConstantOp) or not isinstance(init.properties["value"], IntegerAttr):
        return None
    body = loop.regions[0].blocks[0]
    upd = [u.operation for u in body.args[1].uses]
    if len(upd) != 1 or not isinstance(upd[0], vf.UpdateMaskOp) or list(body.last_op.operands) != [upd[0].results[1]]:
        return None
    chunk = None
    stores = {}
    order = {}
    for o in body.ops:
        order[o] = len(order)
        if o.regions and any(isinstance(x, scf.ForOp) for x in o.walk()):
            return None
        if isinstance(o, vf._MemOp):
            if not isinstance(o, vf.LoadAlignOp | vf.StoreAlignOp) or o.dist_name != "NORM" or o.static_offset:
                return None
            off = o.dyn_offset
            off = off.owner if off is not None else None
            if not isinstance(off, arith.MuliOp) or off.operands[0] is not body.args[0]:
                return None
            c = const_value(off.operands[1])
            if c is None or chunk not in (None, c):
                return None
            chunk = c
            if isinstance(o, vf.StoreAlignOp):
                stores[o.tile] = o
    if chunk is None:
        return None
    return _Flat(fn, loop, (*b, init.properties["value"].value.data, chunk), stores, constants, order)


def _upd(loop: scf.ForOp) -> vf.UpdateMaskOp:
    return next(u.operation for u in loop.body.blocks[0].args[1].uses)


def _fuse_into(a: _Flat, b: _Flat, params: dict, b_args: list, copy: bool = False) -> list[vf.StoreAlignOp]:
    """Move ``b``'s body into ``a.fn`` after ``a``'s (the caller erases ``b.fn``), or with ``copy``
    copy it there (``b`` is a template pto-lower-vf launches with ``b_args``, whose names its
    parameters take): ``params`` maps each call operand to its parameter of ``a.fn`` (each buffer
    once; ``b``'s new operands are added, in order); returns the first body's stores the second
    body's loads now take from the register.  A fusion costs what ``b`` holds, so a chain of k fused
    launches costs k fusions, not k**2 op moves."""
    block = a.fn.block
    vm: dict[SSAValue, SSAValue] = {}  # copy: b's values -> a.fn's

    def redirect(old: SSAValue, new: SSAValue) -> None:
        if copy:
            vm[old] = new
        else:
            _redirect(old, new)

    added = set()
    for p, v in zip(b.fn.args, b_args):
        if v not in params:
            params[v] = block.insert_arg(p.type, len(block.args))
            added.add(v)
        if v in added:  # the first bodies' names win
            params[v].name_hint = v.name_hint if copy else p.name_hint
        redirect(p, params[v])
    pre_b = []
    for o in [o for o in b.fn.block.ops if o is not b.loop]:
        key = (o.properties["value"], o.results[0].type) if isinstance(o, arith.ConstantOp) else None
        known = a.constants.get(key) if key is not None else None  # (hashing a key hashes its attributes)
        if known is not None:
            redirect(o.results[0], known)  # one constant per value
            continue
        if copy:
            o = vf.copy_op(o, vm)
        else:
            o.detach()
        pre_b.append(o)
        if key is not None:
            a.constants[key] = o.results[0]
    block.insert_ops_before(pre_b, block.first_op)
    lb = a.loop.body.blocks[0]
    ua, ub_ = _upd(a.loop), _upd(b.loop)
    bb = b.loop.body.blocks[0]
    b_mask = ub_.res[0] if copy else ua.res[0]  # the mask b's ops read once redirected
    redirect(bb.args[0], lb.args[0])
    redirect(ub_.res[0], ua.res[0])  # ub_, its count argument and b's yield stay in b.loop
    forwarded: list[vf.StoreAlignOp] = []
    new = []
    for o in list(bb.ops):
        if o is ub_ or isinstance(o, scf.YieldOp):
            continue
        if not copy:
            o.detach()
        if isinstance(o, vf.LoadAlignOp):
            s = a.stores.get(vm.get(o.tile, o.tile))  # the first body's last store to the buffer the load reads
            if s is not None and s.mask is ua.res[0] and _masked_uses(o, b_mask):
                redirect(o.res[0], s.value)
                if s not in forwarded:  # the second body may load the stored chunk more than once
                    forwarded.append(s)
                if not copy:
                    o.erase()
                continue
        new.append(vf.copy_op(o, vm) if copy else o)
    lb.insert_ops_before(new, lb.last_op)
    a.stores.update((o.tile, o) for o in new if isinstance(o, vf.StoreAlignOp))
    start = len(a.order)  # (not read inside the update: the dict grows as it is updated)
    a.order.update((o, start + k) for k, o in enumerate(new))
    return forwarded


class Fusion:
    """Launches fused one after another into the first one's function (``a.fn``): the call
    operands (:func:`_own_params`), the names and the ops between each two launches."""

    def __init__(self, a: _Flat, args: list, name: str):
        self.a = a
        self.params = _own_params(a.fn, args)
        self.names = [name]
        self.gaps: list[list[Operation]] = []

    def add(self, b: _Flat, args: list, gap: list[Operation], name: str, dead, copy: bool = False) -> None:
        """Fuse the launch of ``b`` with ``args`` (see :func:`_fuse_into`), ``gap`` the ops before it;
        ``dead(tile)``: nothing reads the kernel tile after this launch (a forwarded store to it is
        then dead, unless the fused body reads it later)."""
        a = self.a
        forwarded = _fuse_into(a, b, self.params, args, copy)
        by_param = {p: v for v, p in self.params.items()}
        for st in forwarded:
            if dead(by_param[st.tile]) and not _read_after(st, a.order):
                if a.stores.get(st.tile) is st:
                    del a.stores[st.tile]
                st.parent_block().erase_op(st)
        self.names.append(name)
        self.gaps.append(gap)

    def finish(self, anchor: Operation) -> vf.VfCallOp:
        """The function renamed after every launch, and its call before ``anchor`` (where the last
        launch stood): the waits between the launches stay before it, the set_flags move after it,
        the V barriers go."""
        fn = self.a.fn
        name = "_".join(self.names)
        fn.properties["sym_name"] = StringAttr(name)
        fn.properties["function_type"] = FunctionType.from_lists([p.type for p in fn.block.args], [])
        fn.attributes, fn.location = {}, UNKNOWN_LOC  # the fused VF is no one tile op's
        block = anchor.parent_block()
        call = last = vf.VfCallOp(name, list(self.params))
        call.location = anchor.location  # the last fused op's: a race or deadlock names its line
        block.insert_op_before(call, anchor)
        for o in (o for gap in self.gaps for o in gap):
            if o.name == "pto.set_flag":
                o.detach()
                block.insert_op_after(o, last)
                last = o
            elif o.name == "pto.barrier":
                block.erase_op(o)
        return call


def _own_params(fn: vf.VfFuncOp, args: list) -> dict:
    """Call operand -> parameter of ``fn``: a value passed twice becomes one parameter, named as the last."""
    params: dict[SSAValue, SSAValue] = {}
    for p, v in zip(list(fn.block.args), args):
        if v in params:
            _redirect(p, params[v])
            fn.block.erase_arg(p)
        params[v] = params.get(v, p)
        params[v].name_hint = p.name_hint
    return params


def next_after(op: Operation, is_next) -> tuple[Operation | None, list[Operation]]:
    """The first op after ``op`` in its block for which ``is_next`` holds and the ops between, or
    None when an op other than ``arith``, a wait, a set_flag or a V barrier comes first."""
    between: list[Operation] = []
    second = op.next_op
    while second is not None and not is_next(second):
        if not (second.name.startswith("arith.") or second.name in _BETWEEN) or (
                second.name == "pto.barrier" and not _v_barrier(second)):
            return None, between
        between.append(second)
        second = second.next_op
    return second, between


def _redirect(old: SSAValue, new: SSAValue) -> None:
    """Every use of ``old`` reads ``new``, whose name stays as it was (xDSL's
    replace_all_uses_with would give an unnamed ``new`` the name of ``old``)."""
    hint = new.name_hint
    old.replace_all_uses_with(new)
    new.name_hint = hint


def _masked_uses(load: vf.LoadAlignOp, mask: SSAValue) -> bool:
    """Every use reads the loaded register only in the lanes of ``mask`` (ZEROING ops under it)."""
    for u in load.res[0].uses:
        o = u.operation
        if not isinstance(o, vf._ComputeOp) or o.mode != "ZEROING" or o.mask_operand is not mask:
            return False
    return True


def _read_after(store: vf.StoreAlignOp, order: dict) -> bool:
    """An op other than an aligned store takes ``store``'s buffer after it in the loop body (an op
    of unknown place counts as after): a load the fusion did not forward (e.g. one whose register a
    store uses) reads what the store wrote.  A load before it reads chunk i before trip i stores it
    (every access of the loop is chunk i), so it does not keep the store."""
    at = order[store]
    return any(not isinstance(u.operation, vf.StoreAlignOp) and order.get(u.operation, at + 1) > at
               for u in store.tile.uses)


class Uses:
    """Where each tile is last used: the index of the top-level op of its function that uses it
    (in an operand anywhere inside), from one walk before the pass changes anything.  Fusing calls
    keeps the set of tiles the ops after any point use (a fused call takes both calls' operands and
    stands where the second stood; only set_flags and barriers, which use no tile, move or go), so
    the indices stay true: a fused call takes its second call's index."""

    def __init__(self, root: Operation):
        self.index: dict[Operation, int] = {}
        self.last: dict[SSAValue, int] = {}
        for fn in vf.kernel_walk(root):
            if fn.name != "func.func" or not fn.regions[0].blocks:
                continue
            for i, top in enumerate(fn.regions[0].blocks[0].ops):
                self.index[top] = i
                for o in top.walk():
                    for v in o.operands:
                        self.last[v] = i

    def dead_after(self, call: Operation, tile: SSAValue) -> bool:
        """Nothing reads ``tile`` after ``call``: a tile the kernel allocates, a call outside loops,
        no later op of the function using the tile (a forwarded store to it is then dead)."""
        if not isinstance(tile.owner, Operation) or tile.owner.name != "pto.alloc_tile":
            return False
        if call.parent_op() is None or call.parent_op().name != "func.func":
            return False
        return self.last.get(tile, -1) <= self.index[call]


@dataclass(frozen=True)
class VfFuseLaunchesPass(ModulePass):
    """Consecutive VF launches walking the same chunks -> one launch, one loop."""

    name = "vf-fuse-launches"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernel_loops = [o for o in vf.kernel_walk(op) if isinstance(o, scf.ForOp)]
        if not kernel_loops and all(next_after(o, _is_launch)[0] is None for o in vf.kernel_walk(op) if _is_launch(o)):
            return  # no launch loop and no two launches next to each other (the fused pto-lower-vf's output)
        fuser = _Fuser(op)
        for loop in reversed(kernel_loops):  # inner loops first: a nest of launches folds level by level
            fuser.inline_row_loop(loop)
        fuser.run([o for o in vf.kernel_walk(op) if _is_launch(o)])
        if fuser.moved_reads:
            # a tile the S pipe read is now read by a launch on V: order its producer before that
            # launch too (pto-insert-sync keeps the syncs already there and adds what is missing)
            from pto_compiler.passes.insert_sync import InsertSyncPass

            InsertSyncPass("ascend950").apply(ctx, op)


def _is_launch(op: Operation) -> bool:
    return isinstance(op, vf.VfCallOp)


def _broadcastable(get: Operation, call: vf.VfCallOp, fn: vf.VfFuncOp) -> bool:
    """A ``pto.tgetval`` whose value the launch passes only as the scalar of ZEROING
    ``vf.adds/muls/maxs/mins`` (same lanes either way): a BRC load of the element in the VF gives
    every lane that value (tail_axis_1 -> tail_axis_2 of seeds/001)."""
    if any(u.operation is not call for u in get.results[0].uses):
        return False
    for v, p in zip(call.arguments, fn.args):
        if v is get.results[0] and not all(
                type(u.operation) in vf.SCALAR_FORMS.values() and u.index == 1 and u.operation.mode == "ZEROING"
                for u in p.uses):
            return False
    return True


def _affine(v: SSAValue, iv: SSAValue) -> tuple[int, int] | None:
    """(c0, c1) with ``v == c0 + c1 * iv`` for every value of ``iv``: constants, ``iv``, integer
    casts, addi/subi, muli by a constant; None for anything else."""
    if v is iv:
        return 0, 1
    c = const_value(v)
    if c is not None:
        return c, 0
    op = v.owner
    if isinstance(op, arith.IndexCastOp):
        return _affine(op.input, iv)
    if not isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp):
        return None
    a, b = _affine(op.lhs, iv), _affine(op.rhs, iv)
    if a is None or b is None:
        return None
    if isinstance(op, arith.AddiOp):
        return a[0] + b[0], a[1] + b[1]
    if isinstance(op, arith.SubiOp):
        return a[0] - b[0], a[1] - b[1]
    return None if a[1] and b[1] else (a[0] * b[0], a[0] * b[1] + a[1] * b[0])


@dataclass
class _Sweep:
    """A launch operand ``pto.tassign %t, ADDR`` with ADDR = c0 + c1 * i over the loop's trips i,
    c1 whole rows of %t (a sub-tile at a loop-dependent place, e.g. rows 3m..3m+2 of a tile at a
    fixed address): the fused VF takes ``union``, a row-major tile at the lowest address spanning
    every trip's rows (placed there: ``ub_addr``), and trip i's accesses move by (ADDR(i) -
    lowest) / element bytes elements.  pto-insert-sync and the executors then see the launch
    touch the union, the rows the trips touched."""

    union: pto.AllocTileOp
    c0: int
    c1: int

    @staticmethod
    def of(t: Operation, call: vf.VfCallOp, loop: scf.ForOp, trips: range) -> "_Sweep | None":
        sub = t.results[0].type
        aff = _affine(t.operands[1], loop.body.blocks[0].args[0])
        if (aff is None or not isinstance(sub, pto.TileBufType) or not sub.is_row_major
                or sub.slayout.data != "none_box" or any(u.operation is not call for u in t.results[0].uses)):
            return None
        addrs = [aff[0] + aff[1] * i for i in trips]
        low = min(addrs)
        row = sub.cols * sub.elem_bytes
        if any(a % 32 for a in addrs) or aff[1] % row:  # misaligned, or not whole rows apart
            return None
        union = pto.TileBufType(sub.element_type, [(max(addrs) - low) // row + sub.rows, sub.cols], loc=sub.loc.data)
        tile = pto.AllocTileOp(union, attributes={"ub_addr": IntegerAttr(low, 64)})
        tile.result.name_hint = t.results[0].name_hint
        return _Sweep(tile, aff[0] - low, aff[1])

    def trip_offset(self, index, block: Block, iv: SSAValue) -> SSAValue:
        """The element offset of trip ``iv``'s sub-tile in the union, computed at the end of
        ``block`` (``index(v)``: the VF's index constant v)."""
        e = self.union.result.type.elem_bytes
        block.add_op(off := arith.MuliOp(iv, index(self.c1 // e)))
        if not self.c0:
            return off.result
        block.add_op(at := arith.AddiOp(off.result, index(self.c0 // e)))
        return at.result


def _shift(op: vf._MemOp, by: SSAValue) -> None:
    """``op`` addresses ``by`` elements further into its tile."""
    if op.dyn_offset is None:
        op.operands = (op.tile, by, *op.rest)
        return
    add = arith.AddiOp(op.dyn_offset, by)
    op.parent_block().insert_op_before(add, op)
    op.operands = (op.tile, add.result, *op.rest)


class _Fuser:
    """One run of the pass: the module's vf.funcs by name (:class:`vf.VfSymbols`), the launches
    per VF (a VF with none is erased), the tiles' last uses and each VF's loop (:func:`chunk_loop`),
    each gathered once."""

    def __init__(self, module: ModuleOp):
        self.symbols = vf.VfSymbols(module)
        self.launches = Counter(c.callee_name for c in vf.kernel_walk(module) if isinstance(c, vf.VfCallOp))
        self.uses = Uses(module)
        self.flats: dict[vf.VfFuncOp, _Flat | None] = {}
        self.moved_reads = False
        """A ``pto.tgetval`` (S) became a load in a VF (V)."""

    def flat(self, fn: vf.VfFuncOp | None) -> _Flat | None:
        if fn not in self.flats:
            self.flats[fn] = chunk_loop(fn)
        return self.flats[fn]

    def run(self, calls: list[vf.VfCallOp]) -> None:
        i = 0
        while i < len(calls):
            chain, gaps = self.chain_after(calls[i])
            if len(chain) == 1:
                i += 1
                continue
            # the calls after calls[i] are the next ones in walk order (they are neighbours in one
            # block); only the call before the fused one can now fuse differently
            calls[i:i + len(chain)] = [self.fuse(chain, gaps)]
            i = max(i - 1, 0)

    def inline_row_loop(self, loop: scf.ForOp) -> vf.VfCallOp | None:
        """A kernel loop whose body is one launch, the ``arith`` ops computing its operands from
        the induction variable, the ``pto.tassign`` of its sub-tile operands (:class:`_Sweep`) and
        V barriers -> one launch of a VF running that loop: those
        ``arith`` ops, then the callee's body (the callee's constants and masks, and the kernel
        constants the loop uses, before the loop).  Operands from outside the loop stay
        parameters; a V barrier between two launches is dropped (one VF orders its own accesses).
        None if ``loop`` is not one."""
        body = loop.body.blocks[0]
        ops = [o for o in body.ops if not isinstance(o, scf.YieldOp)]
        calls = [o for o in ops if isinstance(o, vf.VfCallOp)]
        bounds = [const_value(v) for v in (loop.lb, loop.ub, loop.step)]
        if (loop.iter_args or len(calls) != 1 or None in bounds or not 0 < len(range(*bounds)) <= vf.HW_LOOP_MAX
                or any(o is not calls[0] and not (o.name.startswith("arith.") and not o.regions)
                       and o.name not in ("pto.tgetval", "pto.tassign")
                       and not (o.name == "pto.barrier" and _v_barrier(o)) for o in ops)):
            return None
        call = calls[0]
        fn = self.symbols.lookup(call, call.callee_name)
        arith_ops = [o for o in ops if o.name.startswith("arith.")]
        if fn is None or not any(_inside(v, loop) for v in call.arguments):
            return None
        gets = [o for o in ops if o.name == "pto.tgetval"]
        if any(_inside(g.operands[0], loop) or not _broadcastable(g, call, fn) for g in gets):
            return None
        sweeps: dict[SSAValue, _Sweep] = {}  # a sub-tile operand at a trip-dependent address
        for t in (o for o in ops if o.name == "pto.tassign"):
            sweep = _Sweep.of(t, call, loop, range(*bounds))
            if sweep is None:
                return None
            sweeps[t.results[0]] = sweep
        outside: list[SSAValue] = []  # kernel values the VF takes as parameters
        consts: list[Operation] = []  # kernel constants cloned into the VF
        for v, sweep in sweeps.items():  # each such tile: the tile over all trips' bytes, from before the loop
            loop.parent_block().insert_op_before(sweep.union, loop)
        args = [sweeps[v].union.result if v in sweeps else x
                for v in call.arguments for x in (v.owner.operands if any(v.owner is g for g in gets) else [v])]
        for v in [v for o in arith_ops for v in o.operands] + args:  # a read tile where its value was
            if _inside(v, loop) or v in outside or any(v is c.result for c in consts):
                continue
            if isinstance(v.owner, arith.ConstantOp) and any(v in o.operands for o in arith_ops):
                consts.append(v.owner)
            else:
                outside.append(v)
        old = fn.sym_name.data
        name = old if self.launches[old] == 1 else f"{old}_rows"
        by_param = dict(zip(call.arguments, fn.args))
        new = vf.VfFuncOp(name, [v.type for v in outside], attributes=dict(fn.attributes))
        new.location = fn.location
        vm: dict = dict(zip(outside, new.args))
        for v, a in zip(outside, new.args):
            a.name_hint = by_param[v].name_hint if v in by_param else v.name_hint
        pre = [o for o in fn.block.ops if isinstance(o, arith.ConstantOp | vf.CreateMaskOp)]
        new.block.add_ops([o.clone(vm) for o in consts])
        have = {(str(o.value), str(o.result.type)): o.result for o in new.block.ops}

        def index(v: int) -> SSAValue:
            """An index constant of the new VF, one per value."""
            c = _index(v)
            key = (str(c.value), str(c.result.type))
            if key not in have:
                new.block.add_op(c)
                have[key] = c.result
            return have[key]

        lub = [index(v) for v in bounds]
        inner = Block(arg_types=[IndexType()])
        inner.args[0].name_hint = body.args[0].name_hint
        vm[body.args[0]] = inner.args[0]
        inner.add_ops([o.clone(vm) for o in arith_ops])
        self.moved_reads |= bool(gets)
        for g in gets:  # the scalar read becomes a broadcast load in the VF
            brc = vf.LoadAlignOp(vm[g.operands[0]], vm[g.operands[1]], dist=f"BRC_B{8 * g.operands[0].type.elem_bytes}")
            inner.add_op(brc)
            vm[g.results[0]] = brc.res[0]
        for v, sweep in sweeps.items():
            vm[v] = vm[sweep.union.result]
        fvm: dict = {p: vm[v] for v, p in zip(call.arguments, fn.args)}
        new.block.add_ops([o.clone(fvm) for o in pre])
        for o in new.block.ops:
            if isinstance(o, arith.ConstantOp):
                have.setdefault((str(o.value), str(o.result.type)), o.result)
        shifts = {fvm[p]: sweeps[v].trip_offset(index, inner, inner.args[0])
                  for v, p in zip(call.arguments, fn.args) if v in sweeps}
        inner.add_ops([o.clone(fvm) for o in fn.block.ops if not any(o is p for p in pre)])
        for o in list(inner.walk()):
            if isinstance(o, vf._MemOp) and o.ADDRESSED and o.tile in shifts:
                _shift(o, shifts[o.tile])
        for o in inner.ops:
            vf.refit_scalar_forms(o)
        inner.add_op(scf.YieldOp())
        new.block.add_op(scf.ForOp(*lub, [], Region(inner)))
        for blk in (inner, new.block):  # the tassigns' address arithmetic and its constants, now unused
            for o in reversed(list(blk.ops)):
                if o.name.startswith("arith.") and not any(r.uses for r in o.results):
                    blk.erase_op(o)
        self.launches[old] -= 1
        fn.parent_block().insert_op_before(new, fn)
        if not self.launches[old]:
            self.symbols.remove(fn)
            fn.parent_block().erase_op(fn)
        self.symbols.add(new)
        self.launches[name] += 1
        launch = vf.VfCallOp(name, outside)
        launch.location = call.location
        block = loop.parent_block()
        block.insert_op_before(launch, loop)
        if loop in self.uses.index:
            self.uses.index[launch] = self.uses.index[loop]
        block.erase_op(loop)
        return launch

    def chain_after(self, first: vf.VfCallOp) -> tuple[list[vf.VfCallOp], list[list[Operation]]]:
        """``first`` and the launches after it that fuse with it, one after another (each flat, with
        the key of ``first``), and the ops between each two."""
        chain, gaps = [first], []
        a = None  # (a launch with no launch next to it: its VF is not analysed)
        while True:
            second, between = next_after(chain[-1], _is_launch)
            if second is None:
                break
            if a is None:
                a = self.flat(self.symbols.lookup(first, first.callee_name))
                if a is None:
                    break
            b = self.flat(self.symbols.lookup(second, second.callee_name))
            if b is None or a.key != b.key:
                break
            chain.append(second)
            gaps.append(between)
        return chain, gaps

    def _owned(self, f: _Flat) -> _Flat:
        """``f``, or a copy of its function when another call launches it too."""
        return f if self.launches[f.fn.sym_name.data] == 1 else chunk_loop(f.fn.clone())

    def fuse(self, chain: list[vf.VfCallOp], gaps: list[list[Operation]]) -> vf.VfCallOp:
        """Fuse a chain of launches (:meth:`chain_after`) into one, as fusing each launch in turn
        into the launch the ones before it fused into would: the bodies one after another in the
        first's function, renamed after all; the fused call."""
        fns = [self.symbols.lookup(c, c.callee_name) for c in chain]
        names = [f.sym_name.data for f in fns]
        a = self._owned(self.flats[fns[0]])
        if a.fn is fns[0]:
            self.symbols.remove(fns[0])
            self.flats.pop(fns[0], None)
        else:
            fns[0].parent_block().insert_op_before(a.fn, fns[0])
        fusion = Fusion(a, list(chain[0].operands), names[0])
        for second, fb, gap, name in zip(chain[1:], fns[1:], gaps, names[1:]):
            b = self._owned(self.flats[fb])
            fusion.add(b, list(second.operands), gap, name, lambda t: self.uses.dead_after(second, t))
            if b.fn is not fb:
                b.fn.erase()  # a copy's shell: drop its uses of the values that moved
        fn = a.fn
        call = fusion.finish(chain[-1])
        self.symbols.add(fn)
        self.flats[fn] = a
        if chain[-1] in self.uses.index:
            self.uses.index[call] = self.uses.index[chain[-1]]
        for c in chain:
            c.parent_block().erase_op(c)
        self.launches[call.callee_name] += 1
        for old, f in zip(names, fns):
            self.launches[old] -= 1
            if not self.launches[old] and f is not fn:
                self.symbols.remove(f)
                self.flats.pop(f, None)
                f.parent_block().erase_op(f)
        return call
