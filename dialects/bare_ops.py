"""Ops made without xDSL's ``Operation.__init__`` for the passes that build thousands of them.

``__init__`` re-checks every field, fills IRDL defaults and walks parents; an op whose fields are
known to be valid (a copy of a verified op, or an a2a3/sync op built from a table row) can skip
that.  The other fields keep the dataclass defaults the class carries (no parent, no successor).
"""

from __future__ import annotations

from xdsl.ir import Operation, Use
from xdsl.ir.core import SSAValues


def op_with_operands(cls: type[Operation], operands) -> Operation:
    """A bare ``cls`` whose operands are ``operands``, each with its use registered."""
    op = cls.__new__(cls)
    op._operands = values = SSAValues(operands)
    op._operand_uses = uses = tuple([Use(op, i) for i in range(len(values))])
    for v, u in zip(values, uses):
        v.add_use(u)
    return op
