"""The ``--run`` harness of a kernel that writes no GM (PTOAS's codegen tests: a tile op on tiles
nothing loads, whose result nothing stores).

Such a kernel computes only on-chip, so a run would compare nothing.  ``ptoc --run`` runs it in a
harness instead, on a clone (the kernel as written is what ``ptoc`` compiles without ``--run``):

* every tile of the entry function's top level (or of a ``pto.section``'s) that a kernel op reads
  before any writes it gets a GM argument ``tile_NAME`` and a ``tload`` from it right after its ``alloc_tile`` (the run
  seeds it as any GM input), so the ops compute on data rather than on zeros;
* every such tile a kernel op writes is stored back to ``tile_NAME`` after the block's last op, so
  the tile it ends with is an output the executor's run and the golden model's are compared on;
* a ``pto.barrier <PIPE_ALL>`` follows each load and precedes the stores.

A tile a plain ``tload``/``tstore`` moves (a vec tile in the ND layout or a one-column DN one, a
mat tile in the NZ layout: loaded; an f32/i32 acc tile: stored) moves that way.  Any other tile
(an L0A/L0B tile, an acc tile read before anything writes it, a boxed vec tile, a mat tile in
another layout) moves through a *window*: a tload / tstore marked ``harness_window``
(passes/lower_cube.py) whose instruction is no hardware one (dialects/a2a3.py
``harness_load_*``/``harness_store_*``): it copies the valid region between the ND GM argument
and the tile's bytes in its own layout (runtime/cube.py ``tile_offsets``, where the executor's
cube moves put each element), as the golden model's tload/tstore copy the logical tile.  So a
codegen test whose result stays on chip (a textract into L0A, a tinsert into L1) is compared.
Each harnessed tile has a static valid shape and is not used as a *tmp* operand (scratch whose
contents no page defines); a tile a ``pto.tassign`` moves is not stored (its first name no
longer holds it), and one placed by hand at bytes another tile placed by hand may share is not
loaded; an acc tile leaves only through the fixpipe (an f32/i32 one).
A mixed kernel written as a cube and a vector function (PTOAS's frontend pipe tests) is harnessed
in both: each core moves its own tiles, both get every added argument, of one shape (the cores
share arguments by name, runtime/pipes.py), and the vector function stores its tiles only on
sub-block 0 (the others would write the same GM).  Each tile a core pops from the other is stored
as popped, right after the pop (a vector sub-block's copy at rows ``subblock * R`` of a tensor
of two: a split pipe gives each sub-block its part).  A kernel that stores to GM, returns a tile, or is written in ``vf`` ops, and
a mixed kernel in one function (``pto.section``), runs as written.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import FunctionType, IndexType, IntegerAttr, ModuleOp, UnitAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.traits import IsTerminator

from pto_compiler.diagnostics import location_of
from pto_compiler.dialects import pto
from pto_compiler.passes.lower_cube import WINDOW
from pto_compiler.passes.tile_access import root_alloc, tile_reads, tile_writes, tmp_operands

HARNESSED = "pto.harnessed"
SUBBLOCKS = 2
"""Vector sub-blocks of a mixed kernel at most (runtime/pipes.py): AIV0 and AIV1."""
PREFIX = "tile_"
"""The GM argument of a harnessed tile is ``tile_`` + the tile's SSA name."""

_LOADABLE = {("vec", "row_major", "none_box"), ("mat", "col_major", "row_major")}
_STORABLE = {("vec", "row_major", "none_box"), ("acc", "col_major", "row_major")}
_ACC_STORED = frozenset({"f32", "i32"})


def _layout(t: pto.TileLikeType) -> tuple[str, str, str]:
    """A one-column DN vec tile (an argmax's index column) is the ND one's bytes."""
    if t.loc.data == "vec" and t.slayout.data == "none_box" and t.valid_col == 1:
        return "vec", "row_major", "none_box"
    return t.loc.data, t.blayout.data, t.slayout.data


def _static_valid(t: pto.TileLikeType) -> bool:
    return pto.DYNAMIC not in t.valid_shape and t.dtype != "i1"


def loadable(t: pto.TileLikeType) -> bool:
    return _layout(t) in _LOADABLE and _static_valid(t)


def storable(t: pto.TileLikeType) -> bool:
    return (_layout(t) in _STORABLE and _static_valid(t)
            and (t.loc.data != "acc" or t.dtype in _ACC_STORED))


def _windowed(t: pto.TileLikeType, load: bool) -> bool:
    """A tile the harness moves through a window (module doc) instead of a tload / tstore."""
    if not _static_valid(t):
        return False
    return not loadable(t) if load else not storable(t) and t.loc.data != "acc"


def _top_blocks(fn: func.FuncOp) -> list[Block]:
    """The function body's block and those of the ``pto.section`` s directly in it."""
    block = fn.body.blocks[0]
    out = [block]
    for op in block.ops:
        if op.name.startswith("pto.section"):
            out += [b for r in op.regions for b in r.blocks]
    return out


def _tiles_used(fn: func.FuncOp) -> tuple[set, set, set]:
    """(read first, written, tmp) root allocs of the function's tile ops: "read first" when the
    first op in program order that touches the tile reads it (a loop body reading before writing)."""
    read_first, written, tmp = set(), set(), set()
    for op in fn.walk():
        tmps = tmp_operands(op)
        tmp.update(root_alloc(v) for v in tmps)
        read_first.update(a for a in (root_alloc(v) for v in tile_reads(op)) if a not in written)
        written.update(root_alloc(v) for v in tile_writes(op) if v not in tmps)
    return read_first, written, tmp


def _kernels(module: ModuleOp, fn: func.FuncOp) -> list[func.FuncOp]:
    """The functions the harness works on: ``fn``, or a mixed kernel's cube and vector functions
    (none for a mixed kernel in one function)."""
    from pto_compiler.runtime.pipes import agent_root, is_mixed, kernel_kind

    if not is_mixed(module):
        return [fn]
    roots = [agent_root(module, fn, kind) for kind in ("cube", "vector")]
    return roots if all(r is not None and kernel_kind(r) for r in roots) else []


def applies(module: ModuleOp, fn: func.FuncOp) -> bool:
    """No function of the kernel (:func:`_kernels`) writes GM or returns a tile, and the module has
    no ``vf`` op."""
    from pto_compiler.runtime.reference import _stored_params

    kernels = _kernels(module, fn)
    uses_vf = any(op.dialect_name() == "vf" for op in module.walk())  # runs on the VF executor as written
    return bool(kernels) and not uses_vf and not any(
        f.function_type.outputs.data or _stored_params(f) for f in kernels)


class _At:
    """Inserts ops before ``anchor`` (or at the end of ``block``), located at ``location``."""

    def __init__(self, block: Block, anchor: Operation | None, location):
        self.block, self.anchor, self.location = block, anchor, location

    def add(self, op: Operation) -> Operation:
        op.location = self.location
        if self.anchor is None:
            self.block.add_op(op)
        else:
            self.block.insert_op_before(op, self.anchor)
        return op

    def index(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, IndexType()))).results[0]

    def tensor(self, ptr: SSAValue, t: pto.TileLikeType, copies: int = 1) -> Operation:
        """The GM tensor view of ``ptr`` (the argument's shape): ``copies`` tiles' valid regions, one
        below the other."""
        shape = [t.valid_row * copies, t.valid_col]
        sizes = [self.index(d) for d in shape]
        strides = [self.index(shape[1]), self.index(1)]
        return self.add(pto.MakeTensorViewOp(ptr, sizes, strides, pto.TensorViewType(shape, t.element_type)))

    def view(self, ptr: SSAValue, t: pto.TileLikeType, copies: int = 1, row: SSAValue | None = None) -> SSAValue:
        """The tile's partition of the GM tensor behind ``ptr``: all of it, or the rows from ``row``."""
        tv = self.tensor(ptr, t, copies)
        zero = self.index(0)
        return self.add(pto.PartitionViewOp(tv.results[0], [row or zero, zero], [self.index(d) for d in t.valid_shape],
                                            pto.PartitionTensorViewType(list(t.valid_shape), t.element_type))).results[0]


def _mark(op: Operation, window: bool) -> None:
    if window:
        op.attributes[WINDOW] = UnitAttr()


def _barrier_all() -> Operation:
    """``pto.barrier <PIPE_ALL>``: the harness's moves are ordered against the kernel's ops by
    themselves, so a kernel run with its own syncs (``--no-insert-sync``) needs none for them."""
    return pto.BarrierOp([pto.raw_attr("pipe", "PIPE_ALL")])


def _shares_bytes(fn: func.FuncOp) -> set:
    """The allocs placed by hand (``addr =``) whose bytes another such alloc may share: loading
    both would clobber one load with the other (and a run-time address may be anywhere)."""
    placed = [op for op in fn.walk() if isinstance(op, pto.AllocTileOp) and op.addr is not None]
    spans = {a: (lo, lo + a.result.type.nbytes) if (lo := pto.constant_int(a.addr)) is not None else None
             for a in placed}
    return {a for a in placed if spans[a] is None or any(
        b is not a and (spans[b] is None or (spans[b][0] < spans[a][1] and spans[a][0] < spans[b][1]))
        for b in placed)}


def _moves(fn: func.FuncOp, taken: set) -> list[tuple[Block, pto.AllocTileOp, str, bool, bool]]:
    """(block, alloc, GM argument name, load?, store?) of each tile of ``fn`` the harness moves."""
    read, written, tmp = _tiles_used(fn)
    shared = _shares_bytes(fn)
    out = []
    for block in _top_blocks(fn):
        for alloc in [op for op in block.ops if isinstance(op, pto.AllocTileOp)]:
            t = alloc.result.type
            load = alloc in read and alloc not in tmp and alloc not in shared and _static_valid(t)
            moved = any(isinstance(use.operation, pto.TAssignOp) for use in alloc.result.uses)
            store = (alloc in written and alloc not in tmp and not moved
                     and (storable(t) or _windowed(t, load=False)))
            if not (load or store):
                continue
            name = PREFIX + (alloc.result.name_hint or f"line{location_of(alloc)[1]}")
            while name in taken:
                name += "_"
            taken.add(name)
            out.append((block, alloc, name, load, store))
    return out


def _pops(fn: func.FuncOp, taken: set) -> list[tuple[Block, Operation, str]]:
    """(block, pop, GM argument name) of each tile ``fn`` pops from the other core (stored as popped)."""
    from pto_compiler.runtime.pipes import PIPE_OPS

    out = []
    for block in _top_blocks(fn):
        for op in block.ops:
            if PIPE_OPS.get(op.name, ("", ""))[1] == "pop" and op.results and _static_valid(op.results[0].type):
                name = PREFIX + (op.results[0].name_hint or f"line{location_of(op)[1]}")
                while name in taken:
                    name += "_"
                taken.add(name)
                out.append((block, op, name))
    return out


def _subblock_row(at: _At, rows: int) -> SSAValue:
    """``get_subblock_idx * rows``: where this vector sub-block's copy of a popped tile goes."""
    sb = at.add(pto.GENERIC_OPS["pto.get_subblock_idx"](result_types=[i64]))
    idx = at.add(arith.IndexCastOp(sb.results[0], IndexType()))
    return at.add(arith.MuliOp(idx.results[0], at.index(rows))).results[0]


def _on_subblock_0(at: _At) -> _At:
    """Where ops run only on vector sub-block 0: the body of an ``scf.if`` added at ``at``."""
    sb = at.add(pto.GENERIC_OPS["pto.get_subblock_idx"](result_types=[i64]))
    zero = at.add(arith.ConstantOp(IntegerAttr(0, i64)))
    cond = at.add(arith.CmpiOp(sb.results[0], zero.results[0], "eq"))
    end = scf.YieldOp()
    body = Block([end])
    at.add(scf.IfOp(cond.results[0], [], Region(body)))
    return _At(body, end, at.location)


def harness(module: ModuleOp, fn: func.FuncOp) -> list[str]:
    """Put ``fn`` (of ``module``, changed in place; both functions of a mixed kernel) in the
    harness; the GM arguments added."""
    from pto_compiler.runtime.pipes import is_mixed, kernel_kind

    kernels = _kernels(module, fn)
    taken = {a.name_hint for f in kernels for a in f.body.blocks[0].args}
    moves = {f: _moves(f, taken) for f in kernels}
    pops = {f: _pops(f, taken) for f in kernels}
    vector = {f: is_mixed(module) and kernel_kind(f) == "vector" for f in kernels}
    # name -> (tile type, copies): a vector core's popped tile has one copy per sub-block (split pipes
    # give each its part), below one another
    added = {name: (alloc.result.type, 1) for f in kernels for _, alloc, name, _, _ in moves[f]}
    added.update({name: (pop.results[0].type, SUBBLOCKS if vector[f] else 1) for f in kernels
                  for _, pop, name in pops[f]})
    for f in kernels:
        body = f.body.blocks[0]
        ptrs = {}
        for name, (t, _) in added.items():
            ptrs[name] = body.insert_arg(pto.PtrType(t.element_type), len(body.args))
            ptrs[name].name_hint = name
        f.function_type = FunctionType.from_lists([a.type for a in body.args], f.function_type.outputs.data)
        at = _At(body, body.first_op, f.location)
        own = {name for _, _, name, _, _ in moves[f]} | {name for _, _, name in pops[f]}
        for name, (t, copies) in added.items():  # another core's tile: a view gives its argument the same shape here
            if name not in own:
                at.tensor(ptrs[name], t, copies)
        for block, pop, name in pops[f]:
            t, copies = added[name]
            at = _At(block, pop.next_op, pop.location)
            at.add(_barrier_all())
            row = _subblock_row(at, t.valid_row) if vector[f] else None
            _mark(at.add(pto.TStoreOp(ins=[pop.results[0]], outs=[at.view(ptrs[name], t, copies, row)])),
                  _windowed(t, load=False))
            at.add(_barrier_all())
        stores: dict[Block, _At] = {}
        for block, alloc, name, load, store in moves[f]:
            t = alloc.result.type
            if load:
                at = _At(block, alloc.next_op, alloc.location)
                _mark(at.add(pto.TLoadOp(ins=[at.view(ptrs[name], t)], outs=[alloc.result])), _windowed(t, load=True))
                at.add(_barrier_all())
            if store:
                at = stores.get(block)
                if at is None:
                    last = block.last_op if block.last_op is not None and block.last_op.has_trait(IsTerminator) else None
                    at = _At(block, last, alloc.location)
                    at = stores[block] = _on_subblock_0(at) if vector[f] else at
                    at.add(_barrier_all())
                _mark(at.add(pto.TStoreOp(ins=[alloc.result], outs=[at.view(ptrs[name], t)])),
                      _windowed(t, load=False))
    return list(added)


def harnessed(module: ModuleOp, entry: str | None = None) -> ModuleOp:
    """``module`` with its entry kernel in the harness (a clone, marked ``pto.harnessed``), or
    ``module`` itself when it is in the harness already, the harness does not apply or has no tile
    to move."""
    from pto_compiler.runtime.reference import select_entry

    fn = select_entry(module, entry)
    if HARNESSED in module.attributes or not applies(module, fn):
        return module
    clone = module.clone()
    clone.attributes[HARNESSED] = UnitAttr()
    fn = select_entry(clone, entry)
    return clone if harness(clone, fn) else module
