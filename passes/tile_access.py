"""What each op reads and writes, on which pipe: the facts pto-plan-memory and pto-insert-sync share.

The a2a3 lowering can use the same helpers (``pipe_of``, ``root_alloc``, ``ub_range``), so that
the placement, the syncs and the emitted micro-instructions agree on one model:

* **Pipes** (reference/pto_isa.md §2 "event classes", ptoas_peer.md §1.5): ``pto.tload`` and
  ``pto.mgather`` run on ``PIPE_MTE2`` (GM -> UB or L1), ``pto.tstore`` and ``pto.mscatter`` on
  ``PIPE_MTE3`` (UB/L1 -> GM) or
  ``PIPE_FIX`` (acc -> GM), matmuls on ``PIPE_M``, moves touching the cube on the pipe of their
  instruction (:data:`CUBE_MOVES`: mat -> left/right/bias ``PIPE_MTE1``, out of acc and mat ->
  scaling ``PIPE_FIX``, vec -> mat ``PIPE_MTE3``), every other tile op on ``PIPE_V``; the scalar ops that touch a tile or GM (``pto.tgetval``, ``pto.tsetval``,
  ``pto.load_scalar``, ``pto.store_scalar``) on ``PIPE_S``.
* **Reads / writes.** A tile op reads its ``ins`` tiles and writes its ``outs`` tiles.  A
  *tmp* operand (the last ``ins`` operand of TROWEXPAND*, TROWSUM/MAX/MIN, TCOLSUM/MAX/MIN,
  TRSQRT, TCVT when present) is scratch the op overwrites before reading it: it counts as
  written (and, for hazards, read too).  An a2a3 Mode-1 TROWEXPAND* with
  ``bcast_source = "scratch"`` (pto-tmp-strategy) writes and reads the hidden
  ``TMP_UB_OFFSET`` buffer ``[184 KiB, 192 KiB)`` (reference/vector_isa.md §1.12).
* **Buffers.** Every tile_buf value comes from one ``pto.alloc_tile``: directly, through a
  ``pto.tassign`` result, an ``scf.for`` iter_arg / result (its init operand) or an ``scf.if``
  result (its yielded values).  pto-plan-memory gives all values linked that way ONE buffer,
  so :func:`root_alloc` may follow any one of the links.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from pto_compiler.dialects import a2a3, pto
from pto_compiler.dialects.pto import constant_int
from pto_compiler.passes.int_range import int_range
from pto_compiler.runtime.pipes import PIPE_OPS

PIPE_S = "PIPE_S"
PIPE_V = "PIPE_V"
PIPE_MTE2 = "PIPE_MTE2"
PIPE_MTE3 = "PIPE_MTE3"
PIPES = tuple(f"PIPE_{p}" for p in a2a3.PIPES)
IN_ORDER = frozenset(f"PIPE_{p}" for p in ("S", *a2a3.IN_ORDER_PIPES))
"""Pipes whose instructions see what the previous one of the pipe wrote (no pipe_barrier)."""

CUBE_MOVES = {("mat", "left"): "load_cbuf_to_ca", ("mat", "right"): "load_cbuf_to_cb",
              ("mat", "bias"): "load_cbuf_to_bt", ("mat", "scaling"): "copy_cbuf_to_fbuf",
              ("mat", "mat"): "copy_cbuf_to_cbuf", ("acc", "mat"): "fixpipe_cc_to_cbuf",
              ("acc", "vec"): "fixpipe_cc_to_ubuf", ("vec", "mat"): "copy_ubuf_to_cbuf"}
"""(src loc, dst loc) of a tmov / textract / tinsert touching the cube -> its instruction (the
a2a3 OPCODES row, which names the pipe).  A vec -> vec tmov between two layouts (ND -> NZ before a
tpush_to_aic, PTOAS's pto-a5-normalize-tmov case) is ``copy_ubuf_layout`` on V."""

PIPE_OP_PIPES = {("c2v", "push"): "PIPE_FIX", ("v2c", "push"): PIPE_MTE3, ("c2v", "pop"): PIPE_MTE2,
                 ("v2c", "pop"): PIPE_MTE2, ("c2v", "free"): None, ("v2c", "free"): None}
"""The cube<->vector pipe ops (runtime/pipes.py): a push reads its tile on the pipe that moves it
out (L0C through the fixpipe, UB on MTE3), a pop writes its slot on MTE2 (A2/A3's TPOP is a GM ->
local DMA, PTOAS's insert-sync puts MTE2 -> V / MTE1 after it), a free touches no tile."""

UB_ADDR = "ub_addr"
"""Attribute pto-plan-memory sets on every vec ``pto.alloc_tile``: i64 byte address in UB."""

# families whose last `ins` operand, when present beyond the sources, is a tmp tile
_TMP_AT = {"rowexpand": 2, "rowreduce": 1, "colreduce": 1, "unary": 1, "cvt": 1, "binary": 2, "scalar": 2,
           "trans": 1, "rowarg": 1, "colarg": 1, "rowprod": 1,
           "gather": 2, "sort32": 2}

# families whose dst valid region is written completely (a "full write" when valid == shape)
_FULL_WRITE = {"binary", "part", "unary", "scalar", "expands", "rowexpand", "colexpand", "rowbroadcast", "concat", "axpy",
               "cmp", "sel", "partarg",
               "composed", "trans", "scatter",
               "colbroadcast", "cvt", "mov", "load"}

# families that may write dst in place over a source (same index read then written)
IN_PLACE_SAFE = {"binary", "unary", "scalar", "expands", "rowexpand", "colexpand", "mov", "axpy", "fillpad"}
# (not "composed": a step writes dst before a later step reads a source that may share its bytes)

_SCALAR_READ = {"pto.tgetval", "pto.load_scalar"}
_SCALAR_WRITE = {"pto.tsetval", "pto.store_scalar"}


def is_tile_buf(value: SSAValue) -> bool:
    return isinstance(value.type, pto.TileBufType)


def is_vec_buf(value: SSAValue) -> bool:
    t = value.type
    return isinstance(t, pto.TileBufType) and t.loc.data == "vec"


def is_gm_view(value: SSAValue) -> bool:
    return isinstance(value.type, (pto.PartitionTensorViewType, pto.TensorViewType, pto.PtrType))


def _loc(value: SSAValue) -> str | None:
    t = value.type
    return t.loc.data if isinstance(t, pto.TileBufType) else None


def cube_move_opcode(op: Operation) -> str | None:
    """The cube instruction of a tmov / textract / tinsert between the cube memories (or in/out
    of them), else None."""
    if not isinstance(op, (pto.MoveOp, pto.SubTileOp)) or not op.ins or not op.outs:
        return None
    pair = (_loc(op.ins[0]), _loc(op.outs[0]))
    if pair == ("vec", "vec"):  # a sub-tile move within UB, or a tmov between layouts (else tmov's vector path)
        moves = isinstance(op, pto.SubTileOp) or _layout(op.ins[0]) != _layout(op.outs[0])
        return "copy_ubuf_layout" if moves else None
    return CUBE_MOVES.get(pair)


def _layout(value: SSAValue) -> tuple:
    t = value.type
    return (t.blayout.data, t.slayout.data, t.fractal.data if t.slayout.data != "none_box" else 0)


def pipe_of(op: Operation) -> str | None:
    """The pipe an op's memory accesses run on, or None for an op that touches no tile/GM."""
    if isinstance(op, (pto.TLoadOp, pto.MGatherOp)):  # MGATHER/MSCATTER: PTOAS's getPipe (MTE2, MTE3)
        return PIPE_MTE2
    if isinstance(op, pto.MScatterOp):
        return PIPE_MTE3
    if isinstance(op, pto.TStoreOp):
        return "PIPE_FIX" if op.ins and _loc(op.ins[0]) == "acc" else PIPE_MTE3
    if isinstance(op, pto.MatmulOp):
        return "PIPE_M"
    opcode = cube_move_opcode(op)
    if opcode is not None:
        return f"PIPE_{a2a3.OPCODES[opcode].pipe}"
    if op.name in PIPE_OPS:
        return PIPE_OP_PIPES[PIPE_OPS[op.name]]
    if isinstance(op, pto.TileOp) or op.name == "vf.call":
        return PIPE_V
    if isinstance(op, pto.GenericPtoOp) and (op.name in _SCALAR_READ | _SCALAR_WRITE or any(
            is_tile_buf(v) for v in op.operands)):
        return PIPE_S
    return None


def tmp_operands(op: Operation) -> list[SSAValue]:
    """The tmp tile operand(s) of a tile op (scratch the op overwrites)."""
    if not isinstance(op, pto.TileOp):
        return []
    at = op.TMP_AT if op.TMP_AT is not None else _TMP_AT.get(op.FAMILY)
    if at is None or len(op.ins) <= at:
        return []
    return [v for v in op.ins[at:] if is_tile_buf(v)]


def tile_reads(op: Operation) -> list[SSAValue]:
    """Tile buffers whose data the op reads (tmp operands excluded)."""
    if isinstance(op, pto.TileOp):
        tmps = tmp_operands(op)
        dst = list(op.outs) if op.READS_DST else []
        return [v for v in (*op.ins, *dst) if is_tile_buf(v) and v not in tmps]
    if isinstance(op, pto.GenericPtoOp):
        if op.name in _SCALAR_WRITE:
            return []
        return [v for v in op.operands if is_tile_buf(v)]
    if op.name == "vf.call":  # a VF launch (V pipe) may read every tile it is given
        return [v for v in op.operands if is_tile_buf(v)]
    return []


def tile_writes(op: Operation) -> list[SSAValue]:
    """Tile buffers the op writes: its ``outs`` tiles and its tmp operands (a ``vf.call``: every
    tile it is given)."""
    if op.name == "vf.call":
        return [v for v in op.operands if is_tile_buf(v)]
    if isinstance(op, pto.TileOp):
        return [v for v in op.outs if is_tile_buf(v)] + tmp_operands(op)
    if isinstance(op, pto.GenericPtoOp):
        if op.name in _SCALAR_READ:
            return []
        return [v for v in op.operands if is_tile_buf(v)]
    return []


def gm_reads(op: Operation) -> list[SSAValue]:
    if isinstance(op, pto.TLoadOp):
        return [v for v in op.ins if is_gm_view(v)]
    if isinstance(op, pto.MGatherOp) or (isinstance(op, pto.MScatterOp) and op.atomic != "none"):
        return [op.table]
    if isinstance(op, pto.GenericPtoOp) and op.name in _SCALAR_READ:
        return [v for v in op.operands if is_gm_view(v)]
    return []


def gm_writes(op: Operation) -> list[SSAValue]:
    if isinstance(op, pto.MScatterOp):
        return [op.table]
    if isinstance(op, pto.TStoreOp):
        return [v for v in op.outs if is_gm_view(v)]
    if isinstance(op, pto.GenericPtoOp) and op.name in _SCALAR_WRITE:
        return [v for v in op.operands if is_gm_view(v)]
    return []


def uses_scratch(op: Operation) -> bool:
    """The op broadcasts through the hidden a2a3 TMP_UB_OFFSET scratch (pto-tmp-strategy)."""
    a = op.attributes.get("bcast_source")
    return a is not None and getattr(a, "data", None) == "scratch"


def full_write(op: Operation, value: SSAValue) -> bool:
    """True when the op overwrites all of ``value``'s buffer (its old contents are dead)."""
    if not isinstance(op, pto.TileOp) or value not in op.outs:
        return False
    t = value.type
    if not isinstance(t, pto.TileBufType) or t.valid_shape != (t.rows, t.cols):
        return False
    fam = op.FAMILY
    if fam in _FULL_WRITE:
        return True
    if fam in ("rowreduce", "rowarg", "rowprod"):
        return t.cols == 1
    if fam in ("colreduce", "colarg"):
        return t.rows == 1
    return False


def in_place_safe(op: Operation) -> bool:
    """The op may write its dst over one of its sources (element (i, j) read before written)."""
    if not isinstance(op, pto.TileOp) or op.FAMILY not in IN_PLACE_SAFE:
        return False
    if op.FAMILY == "cvt":
        return False
    return True


def fixed_ub_range(value: SSAValue) -> tuple[int, int] | None:
    """``[addr, addr + nbytes)`` of a tile the source itself places at a constant UB address
    (``alloc_tile addr = %c``, a ``pto.tassign`` result), before pto-plan-memory; else None."""
    owner = value.owner
    addr = None
    if isinstance(owner, pto.AllocTileOp) and owner.addr is not None:
        addr = constant_int(owner.addr)
    elif isinstance(owner, pto.TAssignOp):
        addr = owner.static_addr if owner.static_addr is not None else constant_int(owner.addr_value[0])
    if addr is None or not isinstance(value.type, pto.TileLikeType):
        return None
    return (addr, addr + value.type.nbytes)


def _yields(region_op: Operation) -> Iterator[scf.YieldOp]:
    for region in region_op.regions:
        for block in region.blocks:
            last = block.last_op
            if isinstance(last, scf.YieldOp):
                yield last


def root_alloc(value: SSAValue, _seen: set | None = None) -> pto.AllocTileOp | None:
    """The ``pto.alloc_tile`` whose buffer ``value`` is (see the module docstring), or None."""
    seen = _seen if _seen is not None else set()
    if value in seen:
        return None
    seen.add(value)
    if isinstance(value, OpResult):
        owner = value.op
        if isinstance(owner, pto.AllocTileOp):
            return owner
        if isinstance(owner, pto.TAssignOp) and owner.tile:
            return root_alloc(owner.tile[0], seen)
        if isinstance(owner, scf.ForOp):
            return root_alloc(owner.iter_args[value.index], seen)
        if isinstance(owner, scf.IfOp):
            for y in _yields(owner):
                found = root_alloc(y.operands[value.index], seen)
                if found is not None:
                    return found
        return None
    if isinstance(value, BlockArgument):
        block: Block = value.block
        parent = block.parent_op()
        if isinstance(parent, scf.ForOp) and value.index >= 1:
            k = value.index - 1
            found = root_alloc(parent.iter_args[k], seen)
            if found is None:
                y = block.last_op
                if isinstance(y, scf.YieldOp) and k < len(y.operands):
                    found = root_alloc(y.operands[k], seen)
            return found
    return None


def tile_range(value: SSAValue) -> tuple[int, int] | None:
    """``[ub_addr, ub_addr + nbytes)`` of a placed tile in its memory (its loc's), else None.  A
    computed ``pto.tassign`` result spans every address its address may have (passes/int_range.py)."""
    if not is_tile_buf(value):
        return None
    owner = value.owner
    if isinstance(owner, pto.TAssignOp) and owner.static_addr is None and constant_int(owner.addr_value[0]) is None:
        r = int_range(owner.addr_value[0])
        return None if r is None else (r.lo, r.hi + value.type.nbytes)
    alloc = root_alloc(value)
    if alloc is None:
        return None
    a = alloc.attributes.get(UB_ADDR)
    if not isinstance(a, IntegerAttr):
        return None
    start = a.value.data
    return (start, start + value.type.nbytes)

