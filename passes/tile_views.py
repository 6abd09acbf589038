"""Tile views: ``%r = pto.treshape %t : A -> B`` (the same bytes read as another tile type, pto_isa.md
§3 "TRESHAPE: byte-preserving reinterpretation") and ``%s = pto.subset %t[%i, %j] sizes [h, w]``
(the h x w block of ``%t`` at row i, column j: PTOAS lowers it to a memref.subview of the tile).

Neither moves data: the result names bytes of its source.  The golden model makes the result a
view of the source's bytes (runtime/reference.py); pto-plan-memory gives it no buffer of its own
but its source's (from its byte offset), so every lowering sees a tile at that address.  A
subset the hardware can address as a tile is contiguous in its source: whole rows of a RowMajor
tile (or a part of one row), whole columns of a ColMajor one; the golden model takes any block.
"""

from __future__ import annotations

from xdsl.ir import Operation

from pto_compiler.dialects import pto

VIEW_OPS = ("pto.treshape", "pto.subset", "pto.valid_view")
WHOLE_VIEWS = ("pto.treshape", "pto.valid_view")
"""Views of all of their source's bytes (offset 0); ``pto.valid_view %t, %vr, %vc`` is the tile
with a run-time valid shape that a ``pto.set_validshape`` gave it (passes/set_validshape.py)."""


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
    if src.is_row_major:
        contiguous, start = h == 1 or (c == 0 and w == src.cols), r * src.cols + c
    else:
        contiguous, start = w == 1 or (r == 0 and h == src.rows), c * src.rows + r
    if not contiguous:
        return None, (f"block [{r}:{r + h}, {c}:{c + w}] of a {src.rows}x{src.cols} tile is not contiguous, "
                      "so it is no tile the hardware can address")
    return start * src.elem_bytes, None
