"""PTOAS's internal pipe form -> its frontend form, when the consumer's slot buffer is a kernel argument.

PTOAS's pto-lower-frontend-pipe-ops turns ``aic/aiv_initialize_pipe`` + ``tpush_to_*`` /
``tpop_from_*`` / ``tfree_from_*`` into ``initialize_l2g2l_pipe`` (A2/A3) or ``initialize_l2l_pipe``
(A5) + ``tpush`` / ``declare_tile`` + ``tpop`` / ``tfree`` (ptoas-tpush-tpop-design.md §5), one to
one.  A test may also write that internal form by hand with the consumer's slot buffer base a
kernel argument (``%c2v_consumer_buf : i32``, explicit ``flag_base``): the caller chose where the
popped tiles land.  What the kernels compute does not depend on that address (it only has to
keep clear of the consumer's other tiles), so ptoc runs the pair in the frontend form, with the
consumer's slot buffer a ``pto.reserve_buffer`` it places itself and the producer importing it;
the address argument stays in the signature, unread.

Raised when the module's kernels (``pto.kernel_kind``) are one cube and one vector kernel, each with one
one-direction (``dir_mask`` 1 or 2) internal init whose consumer buffer operand is a kernel
argument, the two inits agreeing on every attribute, with ``local_slot_num == slot_num`` (what the
frontend lowering makes) and an explicit ``flag_base`` (PTOAS's rule for an address that is no
reserved buffer); anything else stays and is located as before (runtime/pipes.internal_pipe_error).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, SymbolRefAttr, i32
from xdsl.ir import BlockArgument, Operation

from pto_compiler.dialects import pto
from pto_compiler.runtime.pipes import INTERNAL_PIPE_INITS, kernel_kind

_ATTRS = ("dir_mask", "slot_size", "slot_num", "local_slot_num", "flag_base")
_DIRECTION = {1: ("c2v", "vector"), 2: ("v2c", "cube")}
"""dir_mask -> (direction, the consumer's kernel kind)."""
_FRONTEND = {  # (direction, kernel kind) -> (init, push, pop, free)
    ("c2v", "cube"): ("pto.aic_initialize_pipe", "pto.tpush_to_aiv", None, None),
    ("c2v", "vector"): ("pto.aiv_initialize_pipe", None, "pto.tpop_from_aic", "pto.tfree_from_aic"),
    ("v2c", "vector"): ("pto.aiv_initialize_pipe", "pto.tpush_to_aic", None, None),
    ("v2c", "cube"): ("pto.aic_initialize_pipe", None, "pto.tpop_from_aiv", "pto.tfree_from_aiv"),
}
_BUFFER_LOC = {"vector": "vec", "cube": "mat"}


def _ints(op: Operation) -> dict[str, int | None]:
    return {k: (a.value.data if isinstance(a := op.attributes.get(k), IntegerAttr) else None) for k in _ATTRS}


def _uses_ok(init: Operation, kind: str, direction: str) -> bool:
    """Every use of the init's pipe is a push on the producer side, a pop into a ``declare_tile``
    or a free on the consumer side."""
    _, push, pop, free = _FRONTEND[(direction, kind)]
    allowed = {"pto.tpush": push, "pto.tpop": pop, "pto.tfree": free}
    for use in init.results[0].uses:
        op = use.operation
        if allowed.get(op.name) is None or "split" not in op.attributes or use.index != len(op.operands) - 1:
            return False
        if op.name == "pto.tpop" and getattr(op.operands[0].owner, "name", "") != "pto.declare_tile":
            return False
    return True


def _pair(module: ModuleOp) -> list[tuple[func.FuncOp, Operation]] | None:
    """The (kernel, its internal init) of the cube and the vector kernel, cube first, when they can
    be raised."""
    kernels = [f for f in module.ops if isinstance(f, func.FuncOp) and f.body.blocks and kernel_kind(f)]
    pair = []
    for fn in kernels:
        inits = [op for op in fn.walk() if op.name in INTERNAL_PIPE_INITS]
        if len(inits) != 1:
            return None
        pair.append((fn, inits[0]))
    if sorted(kernel_kind(fn) or "" for fn, _ in pair) != ["cube", "vector"]:
        return None
    (_, a), (_, b) = pair
    attrs = _ints(a)
    if (a.name != b.name or attrs != _ints(b) or attrs["dir_mask"] not in _DIRECTION or attrs["flag_base"] is None
            or attrs["local_slot_num"] not in (None, attrs["slot_num"])):
        return None
    direction = _DIRECTION[attrs["dir_mask"]][0]
    for fn, init in pair:
        buf = init.operands[-1]  # (gm_addr,) consumer_buf
        if len(init.operands) != (2 if init.name == "pto.initialize_l2g2l_pipe" else 1) or \
                not isinstance(buf, BlockArgument) or buf.type != i32 or not _uses_ok(init, kernel_kind(fn), direction):
            return None
    return sorted(pair, key=lambda p: kernel_kind(p[0]))


def _insert(before: Operation, new: Operation) -> Operation:
    new.location = before.location
    before.parent_block().insert_op_before(new, before)
    return new


def raise_pipes(module: ModuleOp) -> None:
    """Rewrites a raisable internal-form pipe pair of ``module`` in the frontend form, in place."""
    pair = _pair(module)
    if pair is None:
        return
    attrs = _ints(pair[0][1])
    direction, consumer_kind = _DIRECTION[attrs["dir_mask"]]
    name = f"{direction}_fifo"
    consumer = next(fn for fn, _ in pair if kernel_kind(fn) == consumer_kind)
    for fn, init in pair:
        kind = kernel_kind(fn)
        init_name, push, pop, free = _FRONTEND[(direction, kind)]
        if kind == consumer_kind:
            buf = pto.GENERIC_OPS["pto.reserve_buffer"](result_types=[i32], attributes={
                "name": StringAttr(name), "size": IntegerAttr(attrs["slot_num"] * attrs["slot_size"], 64),
                "location": pto.raw_attr("address_space", _BUFFER_LOC[kind]), "auto": IntegerAttr(1, 1)})
        else:
            buf = pto.GENERIC_OPS["pto.import_reserved_buffer"](result_types=[i32], attributes={
                "name": StringAttr(name), "peer_func": SymbolRefAttr(consumer.sym_name.data)})
        _insert(init, buf)
        _insert(init, pto.GENERIC_OPS[init_name]([*init.operands[:-1], buf.results[0]], attributes={
            k: IntegerAttr(attrs[k], 64) for k in ("dir_mask", "slot_size")}))
        for use in list(init.results[0].uses):
            op = use.operation
            split = {"split": op.attributes["split"]}
            if op.name == "pto.tpush":
                _insert(op, pto.TILE_OPS[push](ins=[op.operands[0]], attributes=split))
            elif op.name == "pto.tpop":
                decl = op.operands[0]
                popped = _insert(op, pto.TILE_OPS[pop](result_types=[decl.type], attributes=split))
                decl.replace_all_uses_with(popped.results[0])
                decl.owner.detach()
                decl.owner.erase(safe_erase=False)
            else:
                _insert(op, pto.TILE_OPS[free](attributes=split))
            op.detach()
            op.erase(safe_erase=False)
        init.detach()
        init.erase()
