"""What a scalar integer can be at run time, for addresses computed in the kernel (issue 12).

``int_range(v)`` over-approximates the values ``v`` takes on any run as an :class:`IntRange`:
every value lies in ``[lo, hi]`` and is ``lo`` plus a multiple of ``stride`` (stride 0: exactly
``lo``).  It sees through ``arith.constant``, the ``scf.for`` induction variable (constant
bounds and step: ``lb, lb+step, ..., last``), ``addi``/``subi``/``muli``/``shli``, division and
remainder by a positive constant, ``select``, ``cmpi`` (0 or 1), integer casts, ``scf.if``
results (the hull of what the branches yield); anything else (a kernel scalar, a block index, a
loop-carried value) is unknown: ``None``.

pto-plan-memory keeps planned tiles off the whole range of a ``pto.tassign`` address computed at
run time, and pto-insert-sync orders its accesses as if they touched that whole range, so both are
exact when the address is constant and conservative over a loop's range otherwise; the executors
check each address when it is computed (alignment, bounds).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from xdsl.dialects import scf
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from pto_compiler.dialects.pto import constant_int


@dataclass(frozen=True)
class IntRange:
    lo: int
    hi: int
    stride: int = 0

    def values_aligned(self, align: int) -> bool | None:
        """True: every value is a multiple of ``align``; False: none is; None: some may be."""
        if self.lo % align == 0 and self.stride % align == 0:
            return True
        if self.stride % align == 0:
            return False
        return None


def _exact(c: int) -> IntRange:
    return IntRange(c, c, 0)


def _hull(a: IntRange, b: IntRange) -> IntRange:
    return IntRange(min(a.lo, b.lo), max(a.hi, b.hi), gcd(gcd(a.stride, b.stride), abs(a.lo - b.lo)))


def _add(a: IntRange, b: IntRange) -> IntRange:
    return IntRange(a.lo + b.lo, a.hi + b.hi, gcd(a.stride, b.stride))


def _scale(a: IntRange, k: int) -> IntRange:
    lo, hi = sorted((a.lo * k, a.hi * k))
    return IntRange(lo, hi, abs(a.stride * k))


def _mul(a: IntRange, b: IntRange) -> IntRange:
    if a.stride == 0:
        return _scale(b, a.lo)
    if b.stride == 0:
        return _scale(a, b.lo)
    corners = [x * y for x in (a.lo, a.hi) for y in (a.lo, a.hi)]
    g = gcd(a.lo, a.stride) * gcd(b.lo, b.stride)  # every product is a multiple of both factors' gcds
    lo = min(corners)
    return IntRange(lo, max(corners), g) if lo % g == 0 else IntRange(lo, max(corners), 1)


def int_range(value: SSAValue, _depth: int = 0) -> IntRange | None:
    """The values ``value`` (an integer or index scalar) can take; None when unknown."""
    c = constant_int(value)
    if c is not None:
        return _exact(c)
    if _depth > 64:
        return None
    sub = lambda v: int_range(v, _depth + 1)  # noqa: E731
    if isinstance(value, BlockArgument):
        parent = value.block.parent_op()
        if isinstance(parent, scf.ForOp) and value.index == 0:
            lb, ub, step = sub(parent.lb), sub(parent.ub), constant_int(parent.step)
            if lb is None or ub is None or step is None or step <= 0:
                return None
            if lb.stride == 0 and ub.stride == 0:
                if ub.lo <= lb.lo:
                    return _exact(lb.lo)  # no trip: never used
                return IntRange(lb.lo, lb.lo + (ub.lo - 1 - lb.lo) // step * step, step)
            return IntRange(lb.lo, max(lb.hi, ub.hi - 1), gcd(lb.stride, step))
        return None
    if not isinstance(value, OpResult):
        return None
    op: Operation = value.op
    name = op.name
    if isinstance(op, scf.IfOp):
        out = None
        for region in op.regions:
            for block in region.blocks:
                y = block.last_op
                if not isinstance(y, scf.YieldOp) or value.index >= len(y.operands):
                    return None
                r = sub(y.operands[value.index])
                if r is None:
                    return None
                out = r if out is None else _hull(out, r)
        return out
    args = [sub(v) for v in op.operands] if name.startswith("arith.") else []
    if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci"):
        return args[0]
    if name == "arith.cmpi":
        return IntRange(0, 1, 1)
    if name == "arith.select":
        return _hull(args[1], args[2]) if args[1] is not None and args[2] is not None else None
    if len(args) != 2 or args[0] is None or args[1] is None:
        return None
    a, b = args
    if name == "arith.addi":
        return _add(a, b)
    if name == "arith.subi":
        return _add(a, _scale(b, -1))
    if name == "arith.muli":
        return _mul(a, b)
    if name == "arith.shli" and b.stride == 0 and 0 <= b.lo < 63:
        return _scale(a, 1 << b.lo)
    if b.stride != 0 or b.lo <= 0 or a.lo < 0:
        return None
    k = b.lo
    if name in ("arith.divui", "arith.divsi", "arith.floordivsi"):
        return IntRange(a.lo // k, a.hi // k, a.stride // k if a.stride % k == 0 else 1)
    if name in ("arith.remui", "arith.remsi"):
        if a.hi < k:
            return a
        g = gcd(a.stride, k)  # the remainders are lo % g plus multiples of g
        return IntRange(a.lo % g, k - g + a.lo % g, g) if g < k else _exact(a.lo % k)
    return None
