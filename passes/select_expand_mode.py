"""``pto-select-expand-mode``: which operand of a TROWEXPAND* is expanded, and in which mode.

seeds/000 (TROWEXPANDMAX) and reference/pto_isa.md §4.1: exactly one of src0/src1 has dst's
valid shape (the full-size operand, RowMajor); the other is the expanded operand, either

* **Mode 1**: ColMajor, valid cols == 1 (one scalar per row), or
* **Mode 2**: RowMajor, valid cols == 32 / sizeof(T) (one 32-byte block per row),

with valid rows == dst valid rows in both modes.  With dynamic valid shapes the ColMajor
operand is the expanded one, else one whose known valid dims differ from dst's, else (both
RowMajor, either may be dst's shape) the choice is made at run time, src0 full when its valid
shape is dst's (CPU simulator and A5 order; ``RowExpandBinaryOp.expand_analysis``).

Attributes set (printed in the op's attribute dictionary):

``expand_mode`` (i64, 1 or 2)
    on every TROWEXPAND{ADD,SUB,MUL,DIV,MAX,MIN,EXPDIF}: Mode 1 or Mode 2 as above.
``expanded_operand`` (i64, 0 or 1)
    on every TROWEXPAND{...}: the index in ``ins`` of the expanded operand (0 means src0 is
    expanded, so the result is ``OP(s_i, src1[i, j])``; operand order is kept), or -1
    (``pto.AT_RUN_TIME``) when only the run-time valid shapes tell it.  Also set to 1
    on TCOLEXPAND{...} (only src1 is ever expanded there; no modes).

Located errors: no or both operands full-size, a full-size operand that is not RowMajor, a
Mode 1 operand with valid cols != 1, a Mode 2 operand with valid cols != 32/sizeof(T), valid
rows differing from dst's, a tmp operand with Mode 2 (the tmp overload is Mode 1 only), and an
``expand_mode``/``expanded_operand`` already on the op that disagrees with its operands.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from pto_compiler.diagnostics import op_error
from pto_compiler.dialects import pto

EXPAND_MODE = "expand_mode"
EXPANDED_OPERAND = "expanded_operand"


def _existing(op: pto.TileOp, key: str) -> int | None:
    a = op.attributes.get(key)
    if a is None:
        return None
    if not isinstance(a, IntegerAttr):
        raise op_error(op, f"attribute '{key}' must be an integer, got {a}")
    return a.value.data


def select_mode(op: pto.RowExpandBinaryOp) -> tuple[int, int]:
    """(expanded operand index, mode) of one op, as a located PtocError when invalid."""
    try:
        if len(op.ins) not in (2, 3):
            raise VerifyException(f"expects ins(src0, src1[, tmp]), got {len(op.ins)} operands")
        expanded, mode = op.expand_analysis()
    except VerifyException as e:
        raise op_error(op, str(e)) from None
    if op.tmp is not None and mode == 2:
        raise op_error(op, "a tmp operand is only allowed with Mode 1 (ColMajor expanded operand); "
                           "Mode 2 needs no broadcast buffer")
    return expanded, mode


def _record(op: pto.TileOp, key: str, value: int) -> None:
    old = _existing(op, key)
    if old is not None and old != value:
        raise op_error(op, f"'{key} = {old}' disagrees with the operands, which give {value}")
    op.attributes[key] = IntegerAttr(value, 64)


@dataclass(frozen=True)
class SelectExpandModePass(ModulePass):
    name = "pto-select-expand-mode"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, pto.RowExpandBinaryOp):
                expanded, mode = select_mode(inner)
                _record(inner, EXPAND_MODE, mode)
                _record(inner, EXPANDED_OPERAND, expanded)
            elif isinstance(inner, pto.ColExpandBinaryOp):
                _record(inner, EXPANDED_OPERAND, 1)
