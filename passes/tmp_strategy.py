"""``pto-tmp-strategy{target=...}``: where the scratch data of TROWEXPAND* and row reductions lives.

**TROWEXPAND{ADD,SUB,MUL,DIV,MAX,MIN,EXPDIF}** (seeds/000 "Temporary Tile", reference/pto_isa.md
§4.1, vector_isa.md §1.12).  On a2a3 a Mode-1 op broadcasts each row scalar with ``vbrcb``
into a buffer (8 rows per 256-byte repeat; loops of 30 repeats = 240 rows when R >= 256):

* the user's tmp tile (third ``ins`` operand) when given, which must hold at least
  ``ceil(R/8) * 256`` bytes for R < 256 and ``30 * 256 = 7680`` bytes for R >= 256
  (R = dst valid rows; for a dynamic R, the largest value over R <= dst rows);
* else the hidden 8 KiB ``TMP_UB_OFFSET`` scratch at UB byte 184 KiB, which pto-plan-memory
  then keeps free of tiles live across the op and pto-insert-sync treats as written by it.

Mode 2 needs no buffer (a tmp with Mode 2 is an error).  ascend950 broadcasts with
``vlds BRC`` and needs none; a tmp given there is accepted and unused.

**TROWSUM / TROWMAX / TROWMIN** (pto_isa.md §4.5).  On a2a3, float/half rows longer than one
repeat (valid cols > 256/sizeof(T), or dynamic) fold chunk by chunk into a tmp of
``validRow x 256/sizeof(T)`` elements (row stride = the tmp's cols); int16/int32 always
accumulate through a tmp (the headers need one 32-byte block; ptoc's lowering folds each row
to one 256-byte repeat first, so it gets the same shape as floats).  When the user gave no
tmp, this pass inserts ``pto.alloc_tile`` for one right before the op (RowMajor, cols =
256/sizeof(T), rows = the valid rows, or the source's rows when dynamic) and appends it as the
op's second ``ins`` operand, so that pto-plan-memory places it.  A user tmp that is too small
is a located error (float: fewer than validRow rows or rows shorter than 256 bytes; integer:
less than 32 bytes).  ascend950 needs no tmp.

Attributes set:

``bcast_source`` (string) on every TROWEXPAND{...}
    ``"tmp"``: a2a3 Mode 1, vbrcb into the op's tmp operand (``ins[2]``);
    ``"scratch"``: a2a3 Mode 1 without tmp, vbrcb into UB ``[184 KiB, 192 KiB)``;
    ``"none"``: no broadcast buffer (Mode 2, or ascend950).
``bcast_bytes`` (i64) with ``bcast_source`` ``"tmp"`` or ``"scratch"``
    the bytes vbrcb writes from the buffer's start: ``ceil(R/8)*256`` (R < 256) or 7680
    (R >= 256, one 240-row pass reused per loop trip); dynamic R: the bound over R <= rows.
``tmp_source`` (string) on every TROWSUM/TROWMAX/TROWMIN
    ``"user"`` (the user's tmp, ``ins[1]``), ``"inserted"`` (this pass added ``ins[1]``) or
    ``"none"`` (no tmp: one repeat per row suffices, or ascend950).

The expand mode comes from ``expand_mode`` (pto-select-expand-mode) when present, else from
the operands.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from pto_compiler.diagnostics import Diagnostic, PtocError, op_error
from pto_compiler.dialects import pto
from pto_compiler.passes.select_expand_mode import EXPAND_MODE, select_mode
from pto_compiler.targets import Target, lookup_target

REPEAT_BYTES = 256
BLOCK_BYTES = 32
VBRCB_ROWS_PER_REPEAT = 8
LOOP_ROWS = 240  # 30 repeats of vbrcb per pass when R >= 256


def vbrcb_bytes(rows: int) -> int:
    """Bytes of the Mode-1 broadcast buffer for R valid rows (seeds/000, "Temporary Tile")."""
    if rows >= 256:
        return (LOOP_ROWS // VBRCB_ROWS_PER_REPEAT) * REPEAT_BYTES
    return -(-rows // VBRCB_ROWS_PER_REPEAT) * REPEAT_BYTES


def vbrcb_rule(rows: int) -> str:
    if rows >= 256:
        return f"7680 bytes (30 repeats x 256 B, the 240-row loop) for R = {rows} >= 256"
    return f"ceil(R/8)*256 = {vbrcb_bytes(rows)} bytes for R = {rows}"


def bcast_bytes_bound(dst: pto.TileLikeType) -> tuple[int, int]:
    """(bytes, R) for the dst's valid rows; for a dynamic R the largest over R <= dst rows."""
    if dst.valid_row != pto.DYNAMIC:
        return vbrcb_bytes(dst.valid_row), dst.valid_row
    best = (0, 0)
    for r in range(1, min(dst.rows, 256) + 1):
        best = max(best, (vbrcb_bytes(r), r))
    return best


def resolve_target(name: str) -> Target:
    target = lookup_target(name)
    if target is None:
        raise PtocError([Diagnostic(f"unknown target '{name}' (expected a2a3 or ascend950)")])
    return target


def _mode_of(op: pto.RowExpandBinaryOp) -> int:
    a = op.attributes.get(EXPAND_MODE)
    _, mode = select_mode(op)  # also validates the operands
    if isinstance(a, IntegerAttr) and a.value.data != mode:
        raise op_error(op, f"'{EXPAND_MODE} = {a.value.data}' disagrees with the operands, which give {mode}")
    return mode


def _row_expand(op: pto.RowExpandBinaryOp, target: Target) -> None:
    mode = _mode_of(op)
    tmp = op.tmp
    if mode == 2 or not target.mode1_needs_broadcast_buffer:
        op.attributes["bcast_source"] = StringAttr("none")
        op.attributes.pop("bcast_bytes", None)
        return
    dst = op.dst_type
    need, rows = bcast_bytes_bound(dst)
    if tmp is not None:
        have = tmp.type.nbytes
        if have < need:
            raise op_error(op, f"the tmp tile holds {have} bytes, but Mode 1 on {target.name} broadcasts "
                               f"the row scalars with vbrcb into {need} bytes: {vbrcb_rule(rows)} "
                               "(seeds/000: ceil(R/8)*256 bytes for R < 256, 7680 bytes for R >= 256)")
        source = "tmp"
    else:
        source = "scratch"
    op.attributes["bcast_source"] = StringAttr(source)
    op.attributes["bcast_bytes"] = IntegerAttr(need, 64)


def _row_reduce(op: pto.RowReduceOp, target: Target) -> None:
    has_tmp = len(op.ins) >= 2
    if not target.mode1_needs_broadcast_buffer:  # ascend950: no tmp is used
        op.attributes["tmp_source"] = StringAttr("user" if has_tmp else "none")
        return
    src = op.ins[0].type
    if not isinstance(src, pto.TileLikeType):
        return
    esize = src.elem_bytes
    per_repeat = REPEAT_BYTES // esize
    is_int = not pto.is_float(src.element_type)
    wide = src.valid_col == pto.DYNAMIC or src.valid_col > per_repeat
    needed = is_int or wide
    rows = src.valid_row if src.valid_row != pto.DYNAMIC else src.rows
    if has_tmp:
        t = op.ins[1].type
        if isinstance(t, pto.TileLikeType) and needed:
            if is_int:
                if t.nbytes < BLOCK_BYTES:
                    raise op_error(op, f"the tmp tile holds {t.nbytes} bytes, but an integer row reduction on "
                                       f"{target.name} accumulates through one 32-byte block "
                                       "(pto_isa.md §4.5)")
            elif t.cols * t.elem_bytes < REPEAT_BYTES or t.rows < rows:
                raise op_error(op, f"the tmp tile is {t.rows}x{t.cols}x{t.dtype}, but a row reduction over "
                                   f"more than {per_repeat} columns on {target.name} folds into a tmp of "
                                   f"validRow x 256/sizeof(T) = {rows}x{per_repeat} elements, row stride = "
                                   "its cols (pto_isa.md §4.5)")
        op.attributes["tmp_source"] = StringAttr("user")
        return
    if not needed:
        op.attributes["tmp_source"] = StringAttr("none")
        return
    if not op.outs:
        raise op_error(op, "needs a tmp tile on a2a3; run pto-bufferize first so that one can be allocated")
    tmp_type = pto.TileBufType(src.element_type, [rows, per_repeat], loc="vec")
    alloc = pto.AllocTileOp(tmp_type)
    alloc.location = op.location
    alloc.results[0].name_hint = "tmp"
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(alloc, op)
    ins, outs = list(op.ins), list(op.outs)
    op.operands = [*ins, alloc.results[0], *outs]  # ins grows by one; outs unchanged
    _fix_segments(op, len(ins) + 1, len(outs))
    op.attributes["tmp_source"] = StringAttr("inserted")


def _fix_segments(op: Operation, n_ins: int, n_outs: int) -> None:
    from xdsl.dialects.builtin import DenseArrayBase, i32

    op.properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, [n_ins, n_outs])


@dataclass(frozen=True)
class TmpStrategyPass(ModulePass):
    name = "pto-tmp-strategy"

    target: str = "a2a3"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(self.target)
        for inner in list(op.walk()):
            if isinstance(inner, pto.RowExpandBinaryOp):
                _row_expand(inner, target)
            elif isinstance(inner, pto.RowReduceOp):
                _row_reduce(inner, target)
