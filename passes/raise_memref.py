"""``pto-raise-memref``: PTOAS's lowered memref form -> ptoc's GM view / tile model.

PTOAS tests write kernels after its own bufferization: GM kernel arguments are
``memref<..., #pto.address_space<gm>>``, on-chip buffers ``memref.alloc() : memref<...,
#pto.address_space<vec|mat|left|right|acc|...>>``, and tile ops take those memrefs.  The same
kernel in ptoc's model is a ``!pto.ptr<T>`` argument with a ``make_tensor_view`` +
``partition_view`` of the whole memref, and ``pto.alloc_tile`` buffers; this pass rewrites the
former into the latter so the golden model, the planner and both lowerings see one model
(ptoc raises at parse time, :func:`raise_module`).

A memref buffer of shape ``d0 x .. x dn`` becomes a ``prod(d0..dn-1) x dn`` tile (one row per
innermost line, as a GM tensor of that shape is loaded row by row), in the layout its memory
requires (the cube memories' fixed layouts).  ``memref.reinterpret_cast`` of a GM argument at
offset 0 is a tensor view with its sizes and strides.  A function using a memref any other way
(``pto.bind_tile``, memrefs through ``scf.yield``, dynamic shapes, async sessions) stays in the
memref form; :func:`unraisable` says why, located, when it is compiled or run.

A GM memref that PTOAS's pto-infer-layout tags NZ (:func:`ptoas_gm_layout`) moved to or from a
``memref.alloc`` buffer is read ND, as that buffer's tile is: PTOAS gives the buffer no tile config,
so its EmitC tile is ND, and pto-isa's TLOAD/TSTORE static_asserts refuse the NZ GlobalTensor /
ND tile pair PTOAS emits (its plan-memory tests never build that C++).  What such a kernel
computes in GM does not depend on the reading as long as its tile ops are elementwise (the
corpus's plan_memory_* files copy): the same element goes out where it came in.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func  # memref: imported where one is met (a kernel with none skips it)
from xdsl.dialects.builtin import DYNAMIC_INDEX, FunctionType, IndexType, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from pto_compiler.diagnostics import location_of, op_error
from pto_compiler.dialects import pto
from pto_compiler.passes.raise_pipes import raise_pipes
from pto_compiler.runtime.pipes import INIT_OPS, INTERNAL_PIPE_INITS, internal_pipe_error

TILE_CONFIG = {
    "vec": {},
    "mat": {"blayout": "col_major", "slayout": "row_major"},
    "left": {"blayout": "row_major", "slayout": "row_major"},
    "right": {"blayout": "row_major", "slayout": "col_major"},
    "acc": {"blayout": "col_major", "slayout": "row_major", "fractal": 1024},
    "bias": {},
    "scaling": {},
}
"""The tile layout of a memref buffer per address space (verify_target.CUBE_LAYOUTS, mat: Nz)."""

GM_USES = ("pto.tload", "pto.tstore")


def _space(t) -> str | None:
    space = getattr(t, "memory_space", None)
    body = getattr(space, "body", None)
    return getattr(body, "data", None)


def _is_gm(t) -> bool:
    return isinstance(t, MemRefType) and _space(t) in ("gm", None)


def _static_shape(t: MemRefType) -> list[int] | None:
    shape = list(t.get_shape())
    return None if not shape or DYNAMIC_INDEX in shape or any(d <= 0 for d in shape) else shape


def _strides(t: MemRefType) -> list[int] | None:
    """The memref's strides: its ``strided<[..]>`` layout, else row-major contiguous."""
    shape = _static_shape(t)
    layout = getattr(t.layout, "strides", None)
    if layout is not None:
        strides = [getattr(s, "data", s) for s in layout.data]
        return None if any(not isinstance(s, int) or s == DYNAMIC_INDEX for s in strides) else strides
    return [math.prod(shape[i + 1:]) for i in range(len(shape))] if shape else None


def tile_of(t: MemRefType) -> pto.TileBufType | None:
    """The tile buffer of an on-chip memref, or None when it has no tile form."""
    shape = _static_shape(t)
    space = _space(t)
    if shape is None or space not in TILE_CONFIG:
        return None
    rows, cols = math.prod(shape[:-1]), shape[-1]
    return pto.TileBufType(t.element_type, [rows, cols], loc=space, **TILE_CONFIG[space])


ASYNC_COMM = ("pto.tput_async", "pto.tget_async", "pto.build_async_session")
"""PTOAS's async communication ops (ptoas_peer.md: "async DMA"), all on GM memrefs."""


def _static_cast(op: memref.ReinterpretCastOp) -> bool:
    """A cast ptoc can view: of a GM argument, at offset 0, static sizes and strides."""
    statics = [op.static_offsets.get_values(), op.static_sizes.get_values(), op.static_strides.get_values()]
    return (isinstance(op.source, SSAValue) and _is_gm(op.source.type) and not op.offsets and not op.sizes
            and not op.strides and tuple(statics[0]) == (0,) and all(d > 0 for d in statics[1])
            and all(s > 0 for s in statics[2]) and _gm_values_ok(op.result))


def _gm_values_ok(value: SSAValue) -> bool:
    return all(u.operation.name in GM_USES for u in value.uses)


def _boxed_config(op: Operation) -> bool:
    """A ``#pto.tile_buf_config<..., slayout=N, ...>`` with N != 0 (NoneBox): a fractal layout."""
    body = getattr(getattr(op.attributes.get("config"), "body", None), "data", "")
    m = re.search(r"slayout\s*=\s*(\d+)", body)
    return m is not None and int(m.group(1)) != 0


def ptoas_gm_layout(t: MemRefType) -> str:
    """The layout PTOAS's pto-infer-layout gives a static GM memref (lib/PTO/Transforms/
    InferPTOLayout.cpp inferLayout5D): its shape and strides right-aligned to 5-D are NZ when
    dims 2 and 3 are 16 rows of 32 bytes (``sh2 == 16``, ``sh2 * sh3 * sizeof(T) == 512``) with
    unit stride in dim 4 and ``st3 == sh4``; otherwise ND (a rank-3 16x16x16 f16 memref is NZ)."""
    shape, strides = _static_shape(t), _strides(t)
    if shape is None or strides is None or len(shape) > 5:
        return "nd"
    sh, st = [1] * (5 - len(shape)) + shape, [1] * (5 - len(shape)) + strides
    esize = pto.element_bytes(t.element_type)
    nz = sh[2] == 16 and sh[2] * sh[3] * esize == 512 and st[4] == 1 and st[3] == sh[4]
    return "nz" if nz else "nd"


def _boxed_bind_error(op: Operation) -> str:
    """Why a boxed (NZ) vec tile bound by ``op`` cannot run: TLOAD/TSTORE move a Vec tile ND->ND,
    DN->DN or NZ->NZ only (pto-isa tload_common.hpp: "TLOAD(VecTile, GlobalTensor) only support
    ND2ND/DN2DN/NZ2NZ!"), and an NZ GM view must be 16-row fractals whose rows are the tile's
    valid rows (CheckNzFormat: validRow == shape2 * shape3); an NZ <-> NZ move ptoc does not model."""
    for move in sorted({u.operation for u in op.results[0].uses}, key=lambda o: location_of(o)[1:]):
        gm = [v.type for v in move.operands if isinstance(v.type, MemRefType) and _is_gm(v.type)]
        if move.name not in GM_USES or not gm:
            continue
        at = f"the {move.name} at line {location_of(move)[1]}"
        shape = "x".join(map(str, gm[0].get_shape()))
        if ptoas_gm_layout(gm[0]) == "nd":
            return (f"binds a boxed vec tile (a fractal slayout in its config) that {at} moves from or to a {shape} "
                    "GM memref PTOAS's pto-infer-layout tags ND: TLOAD/TSTORE move a Vec tile ND->ND, DN->DN or "
                    "NZ->NZ only (pto-isa tload_common.hpp), so the move has no semantics")
        sh = [1] * (5 - len(gm[0].get_shape())) + list(gm[0].get_shape())
        return (f"binds a boxed vec tile (a fractal slayout in its config) that {at} moves from or to a {shape} GM "
                f"memref PTOAS's pto-infer-layout tags NZ (InferPTOLayout.cpp: right-aligned to 5-D "
                f"{'x'.join(map(str, sh))}): pto-isa's NZ move needs the tile's valid rows to be shape2 x shape3 = "
                f"{sh[2] * sh[3]} (tload_common.hpp CheckNzFormat), and ptoc does not model an NZ GM view; "
                "no semantics")
    return ("binds a boxed vec tile (a fractal slayout in its config): its NZ->NZ tload/tstore is not modelled "
            "(ptoc's vector tload/tstore move ND rows or DN columns)")


def unraisable(fn: func.FuncOp) -> tuple[Operation, str] | None:
    """Why a memref of ``fn`` has no place in the tile model (the op and the reason), else None."""
    from xdsl.dialects import memref

    for arg in fn.body.blocks[0].args:
        if isinstance(arg.type, MemRefType):
            if not _is_gm(arg.type):
                return fn, f"argument %{arg.name_hint or arg.index} is a memref outside GM"
            if _static_shape(arg.type) is None or _strides(arg.type) is None:
                return fn, f"GM memref argument %{arg.name_hint or arg.index} has a dynamic shape or strides"
            for u in arg.uses:
                if u.operation.name in INTERNAL_PIPE_INITS:  # its GM slot buffer: say what stops the pipe
                    return u.operation, internal_pipe_error(u.operation)
                if u.operation.name in ASYNC_COMM:
                    return u.operation, ("has no semantics in ptoc: an async DMA of PTOAS's comm layer (SDMA "
                                         "between ranks; pto_isa.md lists TPUT_ASYNC/TGET_ASYNC under Comm with "
                                         "no page of their semantics), and ptoc models one device")
                if u.operation.name not in (*GM_USES, *INIT_OPS) and not isinstance(u.operation,
                                                                                  memref.ReinterpretCastOp):
                    return u.operation, "takes a GM memref, which ptoc raises only for tload/tstore"
    for op in fn.walk():
        if op is fn or isinstance(op, memref.DeallocOp):
            continue
        if isinstance(op, memref.AllocOp):
            if tile_of(op.memref.type) is None or op.dynamic_sizes or op.symbol_operands:
                return op, "allocates a memref with no tile form (a dynamic shape or an unknown address space)"
            for u in op.memref.uses:
                if not (u.operation.name.startswith("pto.") or isinstance(u.operation, memref.DeallocOp)):
                    return u.operation, "carries a memref buffer, which ptoc raises only as a tile op operand"
        elif isinstance(op, memref.ReinterpretCastOp):
            if not _static_cast(op):
                return op, "is not a static cast at offset 0 of a GM argument used by tload/tstore"
        elif op.name == "pto.bind_tile" and _boxed_config(op):
            return op, _boxed_bind_error(op)
        elif any(isinstance(r.type, MemRefType) for r in op.results):
            return op, "defines a memref, which ptoc has no tile form for"
    return None


def has_memref_form(fn: func.FuncOp) -> bool:
    return any(isinstance(a.type, MemRefType) for a in fn.body.blocks[0].args) or any(
        isinstance(r.type, MemRefType) for op in fn.walk() for r in op.results)


class _Entry:
    """Inserts index constants and GM views at the top of the function body, in the order made.

    Each goes after the last one inserted (the body's first op at the start may be a
    reinterpret_cast that raising erases before the next argument's views are made)."""

    def __init__(self, block: Block, location):
        self.block = block
        self.location = location
        self.last: Operation | None = None
        self.constants: dict[int, SSAValue] = {}

    def add(self, op: Operation) -> Operation:
        op.location = self.location
        if self.last is not None:
            self.block.insert_op_after(op, self.last)
        elif self.block.first_op is not None:
            self.block.insert_op_before(op, self.block.first_op)
        else:
            self.block.add_op(op)
        self.last = op
        return op

    def index(self, value: int) -> SSAValue:
        if value not in self.constants:
            op = self.add(arith.ConstantOp(IntegerAttr(value, IndexType())))
            op.results[0].name_hint = f"c{value}"
            self.constants[value] = op.results[0]
        return self.constants[value]

    def whole_view(self, ptr: SSAValue, shape: list[int], strides: list[int], elt) -> SSAValue:
        """``partition_view`` of all of a ``make_tensor_view`` of ``ptr``."""
        sizes, steps, zeros = ([self.index(d) for d in ds] for ds in (shape, strides, [0] * len(shape)))
        tv = self.add(pto.MakeTensorViewOp(ptr, sizes, steps, pto.TensorViewType(shape, elt)))
        pv = self.add(pto.PartitionViewOp(tv.results[0], zeros, sizes, pto.PartitionTensorViewType(shape, elt)))
        return pv.results[0]


def raise_function(fn: func.FuncOp) -> None:
    from xdsl.dialects import memref

    block = fn.body.blocks[0]
    entry = _Entry(block, fn.location)
    for arg in list(block.args):
        if not isinstance(arg.type, MemRefType):
            continue
        t = arg.type
        new = block.insert_arg(pto.PtrType(t.element_type), arg.index)
        new.name_hint = arg.name_hint
        # the whole view also sizes the argument's GM as declared (runtime/reference.gm_shape)
        view = entry.whole_view(new, _static_shape(t), _strides(t), t.element_type)
        for use in list(arg.uses):
            user = use.operation
            if isinstance(user, memref.ReinterpretCastOp):
                sizes = list(user.static_sizes.get_values())
                strides = list(user.static_strides.get_values())
                entry.location = user.location
                cast_view = entry.whole_view(new, sizes, strides, t.element_type)
                user.result.replace_all_uses_with(cast_view)
                user.detach()
                user.erase()
            elif user.name in INIT_OPS:  # a pipe's GM slot buffer: the pointer itself
                user.operands[use.index] = new
            else:
                user.operands[use.index] = view
        block.erase_arg(arg)
    for op in list(fn.walk()):
        if isinstance(op, memref.DeallocOp):
            op.detach()
            op.erase()
        elif isinstance(op, memref.AllocOp):
            alloc = pto.AllocTileOp(tile_of(op.memref.type))
            alloc.location = op.location
            alloc.results[0].name_hint = op.memref.name_hint
            op.parent_block().insert_op_before(alloc, op)
            op.memref.replace_all_uses_with(alloc.results[0])
            op.detach()
            op.erase()
    fn.function_type = FunctionType.from_lists([a.type for a in block.args], fn.function_type.outputs.data)


def memref_form_error(fn: func.FuncOp):
    """The located error for a function left in the memref form (compiling or running it)."""
    where, why = unraisable(fn) or (fn, "is in PTOAS's memref form (raised only from PTO-AS text)")
    return op_error(where, f"{why}: ptoc compiles and runs PTOAS's memref form only where it maps onto "
                           "tiles and GM views")


def raise_module(module: ModuleOp) -> None:
    raise_pipes(module)
    for fn in [op for op in module.walk() if isinstance(op, func.FuncOp)]:
        if fn.body.blocks and has_memref_form(fn) and unraisable(fn) is None:
            raise_function(fn)


@dataclass(frozen=True)
class RaiseMemrefPass(ModulePass):
    name = "pto-raise-memref"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise_module(op)
