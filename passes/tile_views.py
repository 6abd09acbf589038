"""Tile views: ``%r = pto.treshape %t : A -> B`` (the same bytes read as another tile type, pto_isa.md
§3 "TRESHAPE: byte-preserving reinterpretation") and ``%s = pto.subset %t[%i, %j] sizes [h, w]``
(the h x w block of ``%t`` at row i, column j: PTOAS lowers it to a memref.subview of the tile).

Neither moves data: the result names bytes of its source.  The golden model makes the result a
view of the source's bytes (runtime/reference.py); pto-plan-memory gives it no buffer of its own
but its source's (from its byte offset), so every lowering sees a tile at that address.  A
subset the hardware can address as a tile is contiguous in its source: whole rows of a RowMajor
tile (or a part of one row), whole columns of a ColMajor one; the golden model takes any block.

A subset whose offset is computed at run time (a loop's sub-tile) is placed the same way once its
byte offsets are known to stay in the source, contiguous and aligned (passes/int_range.py): after
planning it becomes a ``pto.tassign`` of a tile at the address the run computes
(:func:`bind_at_run_time`), which every later pass and both lowerings already handle.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, i64
from xdsl.ir import Operation, OpResult, SSAValue

from pto_compiler.dialects import pto
from pto_compiler.passes.int_range import IntRange, int_range
from pto_compiler.targets import ADDRESS_ALIGN

VIEW_OPS = ("pto.treshape", "pto.subset", "pto.valid_view")
WHOLE_VIEWS = ("pto.treshape", "pto.valid_view")
"""Views of all of their source's bytes (offset 0); ``pto.valid_view %t, %vr, %vc`` is the tile
with a run-time valid shape that a ``pto.set_validshape`` gave it (passes/set_validshape.py)."""


def subset_valid(parent_valid: int, offset: int, size: int) -> int:
    """A subset's valid extent in one dimension, PTOAS's "periodic valid dims" rule
    (SubsetOp::inferReturnTypes): ``min(size, pv - offset mod pv)``, so a block starting at the
    parent's valid extent (a ping/pong half of a wider workspace) is a full one; 0 when pv is 0."""
    return min(size, parent_valid - offset % parent_valid) if parent_valid > 0 else 0


def subset_type(src: pto.TileBufType, sizes: tuple[int, int], offsets: list[int | None]) -> pto.TileBufType:
    """The type PTOAS infers for ``pto.subset %src[offsets] sizes [sizes]``: the sizes, src's
    layout, and per dimension :func:`subset_valid` of a constant offset and a static parent valid
    extent, else ``?``."""
    valid = [pto.DYNAMIC if pv == pto.DYNAMIC or off is None else subset_valid(pv, off, size)
             for pv, off, size in zip(src.valid_shape, offsets, sizes)]
    return type(src)(src.element_type, list(sizes), loc=src.loc.data, valid=valid, **src._keys())


def is_view(op: Operation) -> bool:
    return op.name in VIEW_OPS and len(op.results) == 1 and bool(op.operands)


def view_error(op: Operation, offsets: tuple[int, int] | None = None) -> str | None:
    """What makes ``op`` no view of its source (types, bounds), else None; ``offsets`` (subset):
    the row and column, when known."""
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(src, pto.TileBufType) or not isinstance(dst, pto.TileBufType):
        return "needs a !pto.tile_buf source and result"
    if src.loc != dst.loc:
        return f"result is in loc={dst.loc.data}, its source in loc={src.loc.data}"
    if op.name in WHOLE_VIEWS:
        if src.nbytes != dst.nbytes:
            return f"reinterprets {src.nbytes} bytes as a {dst.nbytes}-byte tile (TRESHAPE keeps the bytes)"
        return None
    if src.element_type != dst.element_type or src.is_row_major != dst.is_row_major:
        return "result must have its source's element type and layout"
    if offsets is not None:
        (r, c), (h, w) = offsets, (dst.rows, dst.cols)
        if r < 0 or c < 0 or r + h > src.rows or c + w > src.cols:
            return f"block [{r}:{r + h}, {c}:{c + w}] is outside the {src.rows}x{src.cols} source"
    return None


def static_offsets(op: Operation) -> tuple[int, int] | None:
    """A subset's (row, column) when they are constants; a whole view's (0, 0)."""
    if op.name in WHOLE_VIEWS:
        return 0, 0
    found = [pto.constant_int(v) for v in op.operands[1:3]]
    return None if len(found) != 2 or None in found else (found[0], found[1])


def byte_offset(op: Operation) -> tuple[int | None, str | None]:
    """Where the view starts in its source's bytes, or why it has no such place (a run-time offset,
    a block the hardware cannot address as one tile)."""
    offsets = static_offsets(op)
    if offsets is None:
        return None, "has a run-time offset, which pto-plan-memory cannot place yet"
    why = view_error(op, offsets)
    if why is not None or op.name in WHOLE_VIEWS:
        return (None if why else 0), why
    src, dst = op.operands[0].type, op.results[0].type
    (r, c), (h, w) = offsets, (dst.rows, dst.cols)
    if not _contiguous(src, h, w):
        return None, _not_contiguous(src, f"{r}:{r + h}", f"{c}:{c + w}", h, w)
    start = r * src.cols + c if src.is_row_major else c * src.rows + r
    return start * src.elem_bytes, None


def _contiguous(src: pto.TileBufType, h: int, w: int) -> bool:
    """Is an h x w block of ``src`` one run of its bytes wherever it lies in bounds (a full-width
    block can only start at column 0)?"""
    return (h == 1 or w == src.cols) if src.is_row_major else (w == 1 or h == src.rows)


def _not_contiguous(src: pto.TileBufType, rows: str, cols: str, h: int, w: int) -> str:
    return (f"block [{rows}, {cols}] of a {src.rows}x{src.cols} tile is not contiguous, so it is no "
            f"tile the hardware can address (PTOAS binds a {h}x{w} tile at the block's first element, whose rows "
            "are then not the block's)")


RunTimeView = tuple[SSAValue, list[int | None]]
"""A subset placed at run time: its byte offset (an index value) and the valid extent of each of
its ``?`` dimensions (None for a static one)."""


def _constant_valid(pv: int, span: IntRange, size: int) -> int | None:
    """The one valid extent :func:`subset_valid` gives at every offset in ``span``, else None."""
    if pv == pto.DYNAMIC or (span.hi - span.lo) // max(span.stride, 1) > 4096:
        return None
    found = {subset_valid(pv, off, size) for off in range(span.lo, span.hi + 1, max(span.stride, 1))}
    return found.pop() if len(found) == 1 else None


def run_time_offset(op: Operation) -> tuple[RunTimeView | None, str | None]:
    """A subset with a run-time offset: its byte offset in its source (arith ops put before it) and
    the valid extents of its ``?`` dimensions, or why it cannot be placed: a range :func:`int_range`
    cannot bound, a block that may leave the source or is not contiguous, an offset that may be
    misaligned, a valid extent that changes with the offset (PTOAS's periodic rule)."""
    why = view_error(op)
    if why is not None:
        return None, why
    src, dst = op.operands[0].type, op.results[0].type
    h, w = dst.rows, dst.cols
    r, c = op.operands[1:3]
    rr, cr = int_range(r), int_range(c)
    if rr is None or cr is None:
        return None, ("has a run-time offset whose range pto-plan-memory cannot bound (passes/int_range.py: "
                      "constants, scf.for induction variables with constant bounds, and arith on them)")
    if rr.lo < 0 or cr.lo < 0 or rr.hi + h > src.rows or cr.hi + w > src.cols:
        return None, (f"may take rows [{rr.lo}, {rr.hi + h}) and cols [{cr.lo}, {cr.hi + w}), outside its "
                      f"{src.rows}x{src.cols} source")
    if not _contiguous(src, h, w):
        return None, _not_contiguous(src, f"{rr.lo}..{rr.hi} + {h}", f"{cr.lo}..{cr.hi} + {w}", h, w)
    valid = [None if v != pto.DYNAMIC else _constant_valid(pv, span, size)
             for v, pv, span, size in zip(dst.valid_shape, src.valid_shape, (rr, cr), (h, w))]
    for k, (v, bad) in enumerate(zip(dst.valid_shape, valid)):
        if v == pto.DYNAMIC and bad is None:
            return None, (f"has valid {('rows', 'cols')[k]} that depend on the run-time offset (PTOAS's "
                          "min(size, parent valid - offset mod parent valid)), which pto-plan-memory cannot place yet")
    outer, inner, stride = (r, c, src.cols) if src.is_row_major else (c, r, src.rows)
    ops = [k := arith.ConstantOp(IntegerAttr(stride, IndexType())), m := arith.MuliOp(outer, k.result),
           lin := arith.AddiOp(m.result, inner), e := arith.ConstantOp(IntegerAttr(src.elem_bytes, IndexType())),
           byte := arith.MuliOp(lin.result, e.result)]
    for new in ops:
        new.location = op.location
        op.parent_block().insert_op_before(new, op)
    span: IntRange = int_range(byte.result)
    if span.values_aligned(ADDRESS_ALIGN) is not True:
        return None, (f"may start at a byte offset of its source that is not a multiple of {ADDRESS_ALIGN} "
                      f"(offsets {span.lo}..{span.hi} in steps of {span.stride})")
    return (byte.result, valid), None


def bind_at_run_time(op: Operation, view: RunTimeView, base: int) -> pto.AllocTileOp:
    """Replaces the subset ``op`` whose source starts at UB byte ``base`` by ``pto.tassign`` of a
    tile of its type, its ``?`` valid extents the constants :func:`run_time_offset` proved (placed at
    ``base``, where its source is defined: a loop body keeps only the address arithmetic and the
    tassign, which vf-fuse-launches sweeps), to ``base + offset``; returns that tile's alloc."""
    offset, valid = view
    t = op.results[0].type
    t = t.with_valid([v if v is not None else d for v, d in zip(valid, t.valid_shape)])
    src = op.operands[0]
    alias = pto.AllocTileOp(t)
    alias.location = op.location
    if isinstance(src, OpResult):
        src.op.parent_block().insert_op_after(alias, src.op)
    else:
        src.block.insert_op_before(alias, src.block.first_op)
    at = arith.ConstantOp(IntegerAttr(base, IndexType()))
    addr = arith.AddiOp(offset, at.result)
    addr64 = arith.IndexCastOp(addr.result, i64)
    moved = pto.TAssignOp(alias.result, addr64.result, t)
    for new in (at, addr, addr64, moved):
        new.location = op.location
        op.parent_block().insert_op_before(new, op)
    op.results[0].replace_all_uses_with(moved.result[0])
    op.detach()
    op.erase()
    return alias
