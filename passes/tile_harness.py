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
A kernel that stores to GM, returns a tile, talks to the other core (pipes) or is written in
``vf`` ops runs as written.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FunctionType, IndexType, IntegerAttr, ModuleOp, UnitAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from pto_compiler.diagnostics import location_of
from pto_compiler.dialects import pto
from pto_compiler.passes.lower_cube import WINDOW
from pto_compiler.passes.tile_access import root_alloc, tile_reads, tile_writes, tmp_operands

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


def applies(module: ModuleOp, fn: func.FuncOp) -> bool:
    """``fn`` writes no GM and returns no tile, no tile op of it talks to the other core, and the
    module has no ``vf`` op."""
    from pto_compiler.runtime.pipes import is_mixed
    from pto_compiler.runtime.reference import _stored_params

    outputs = fn.function_type.outputs.data
    uses_vf = any(op.dialect_name() == "vf" for op in module.walk())  # runs on the VF executor as written
    return not outputs and not _stored_params(fn) and not is_mixed(module) and not uses_vf


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

    def view(self, ptr: SSAValue, t: pto.TileLikeType) -> SSAValue:
        """The ``valid rows x valid cols`` GM tensor behind ``ptr``, as a whole partition view."""
        shape = list(t.valid_shape)
        sizes = [self.index(d) for d in shape]
        strides = [self.index(shape[1]), self.index(1)]
        zero = self.index(0)
        tv = self.add(pto.MakeTensorViewOp(ptr, sizes, strides, pto.TensorViewType(shape, t.element_type)))
        return self.add(pto.PartitionViewOp(tv.results[0], [zero, zero], sizes,
                                            pto.PartitionTensorViewType(shape, t.element_type))).results[0]


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


def harness(module: ModuleOp, fn: func.FuncOp) -> list[str]:
    """Put ``fn`` (of ``module``, changed in place) in the harness; the GM arguments added."""
    read, written, tmp = _tiles_used(fn)
    shared = _shares_bytes(fn)
    body = fn.body.blocks[0]
    taken = {a.name_hint for a in body.args}
    added: list[str] = []
    for block in _top_blocks(fn):
        last = block.last_op if block.last_op is not None and block.last_op.has_trait(IsTerminator) else None
        stored = False
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
            added.append(name)
            ptr = body.insert_arg(pto.PtrType(t.element_type), len(body.args))
            ptr.name_hint = name
            if load:
                at = _At(block, alloc.next_op, alloc.location)
                _mark(at.add(pto.TLoadOp(ins=[at.view(ptr, t)], outs=[alloc.result])), _windowed(t, load=True))
                at.add(_barrier_all())
            if store:
                at = _At(block, last, alloc.location)
                if not stored:
                    at.add(_barrier_all())
                stored = True
                _mark(at.add(pto.TStoreOp(ins=[alloc.result], outs=[at.view(ptr, t)])), _windowed(t, load=False))
    fn.function_type = FunctionType.from_lists([a.type for a in body.args], fn.function_type.outputs.data)
    return added


def harnessed(module: ModuleOp, entry: str | None = None) -> ModuleOp:
    """``module`` with its entry kernel in the harness (a clone), or ``module`` itself when the
    harness does not apply or has no tile to move."""
    from pto_compiler.runtime.reference import select_entry

    fn = select_entry(module, entry)
    if not applies(module, fn):
        return module
    clone = module.clone()
    fn = select_entry(clone, entry)
    return clone if harness(clone, fn) else module
