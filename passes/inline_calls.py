"""``pto-inline-calls``: every ``func.call`` of a function with a body is replaced by that body.

PTOAS kernels call helper functions (``func.func private @helper``, corpus
``pto_entry_multifunc``); the golden model executes calls, the backends lower one function, so
the compiler inlines them first: the callee's single block is cloned at the call with its
arguments mapped to the call's operands, and the call's results replaced by what its
``func.return`` returns.  Calls inside an inlined body are inlined in turn; a chain deeper than
:data:`MAX_DEPTH` (recursion) and a call of a declaration or of an unknown symbol are located
errors.  The callees stay in the module (another kernel may call them).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from pto_compiler.diagnostics import op_error

MAX_DEPTH = 64


def _inline_one(call: func.CallOp, callee: func.FuncOp) -> list[Operation]:
    """Clone ``callee``'s body before ``call``; returns the cloned ops (to inline their calls)."""
    block = callee.body.blocks[0]
    value_map = dict(zip(block.args, call.arguments))
    parent = call.parent_block()
    cloned = []
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            results = [value_map.get(v, v) for v in op.arguments]
            for r, v in zip(call.res, results):
                r.replace_all_uses_with(v)
            break
        new = op.clone(value_mapper=value_map)
        parent.insert_op_before(new, call)
        cloned.append(new)
    parent.erase_op(call)
    return cloned


def inline_calls(module: ModuleOp) -> None:
    funcs = {f.sym_name.data: f for f in module.body.ops if isinstance(f, func.FuncOp)}
    work = [(op, 0) for op in module.walk() if isinstance(op, func.CallOp)]
    while work:
        call, depth = work.pop()
        name = call.callee.root_reference.data
        callee = funcs.get(name)
        if callee is None:
            raise op_error(call, f"calls unknown function @{name}")
        if not callee.body.blocks:
            raise op_error(call, f"calls @{name}, a declaration without a body, which ptoc cannot inline")
        if len(callee.body.blocks) != 1:
            raise op_error(call, f"calls @{name}, whose body has several blocks, which ptoc cannot inline")
        if depth >= MAX_DEPTH:
            raise op_error(call, f"call chain deeper than {MAX_DEPTH} (recursion?)")
        for op in _inline_one(call, callee):
            for inner in op.walk():
                if isinstance(inner, func.CallOp):
                    work.append((inner, depth + 1))


@dataclass(frozen=True)
class InlineCallsPass(ModulePass):
    """``pto-inline-calls``: ``func.call`` -> the callee's body."""

    name = "pto-inline-calls"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        inline_calls(op)

