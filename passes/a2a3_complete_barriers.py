"""``a2a3-complete-barriers``: the same-pipe ``pipe_barrier`` s a lowered module needs, and no others.

pto-insert-sync orders the pipes against each other; within one pipe, an instruction that reads
or overwrites UB (32 B blocks) or GM bytes that an earlier instruction of the same pipe wrote
since the last barrier needs a ``pipe_barrier`` in between, and a barrier that orders nothing
is dropped (loops are analysed trip by trip).  The analysis (:func:`~pto_compiler.passes.
lower_a2a3.complete_barriers`) runs on the function's listing; this pass carries its verdict back
into the IR: an ``a2a3.pipe_barrier`` before each instruction that needs one, and the barriers
that order nothing erased.  The barriers do not depend on the values of kernel scalars, so one
module serves every input.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from pto_compiler.dialects import a2a3
from pto_compiler.passes import lower_a2a3 as L
from pto_compiler.runtime.program import If, Instr, Loop, Program
from pto_compiler.targets import A2A3, Target, lookup_target


def complete_function(fn, target: Target = A2A3) -> None:
    """Completes the barriers of one lowered function in place."""
    low = L._FnLowering(fn, target)
    prog = Program(target=target.name, gm_args=low.gm_args, body=low.run())
    barriers = [n for n, _ in prog.walk() if isinstance(n, Instr) and n.opcode == "pipe_barrier"]
    L.complete_barriers(prog, {}, low.trip_bounds)
    kept: set = set()

    def carry_back(body):
        for i, n in enumerate(body):
            if isinstance(n, Loop):
                carry_back(n.body)
            elif isinstance(n, If):
                carry_back(n.then_body)
                carry_back(n.else_body)
            elif id(n) in low.op_of:
                kept.add(id(n))
            elif n.opcode == "pipe_barrier":  # a new one, before the instruction it orders
                op = a2a3.OPS["pipe_barrier"].build_from({}, {"pipe": StringAttr(n.args["pipe"])}, None)
                op.location = L.location(n.origin)
                Rewriter.insert_op(op, InsertPoint.before(low.op_of[id(body[i + 1])]))

    carry_back(prog.body)
    for n in barriers:
        if id(n) not in kept:
            Rewriter.erase_op(low.op_of[id(n)])


@dataclass(frozen=True)
class CompleteBarriersPass(ModulePass):
    """``a2a3-complete-barriers{target=a2a3 entry=NAME}`` (see the module doc)."""

    name = "a2a3-complete-barriers"

    target: str = "a2a3"
    entry: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = lookup_target(self.target) or A2A3
        for fn in L.lowered_functions(op, self.entry):
            complete_function(fn, target)
