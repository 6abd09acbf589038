"""``pto-bufferize``: L1 (SSA tile values) -> L2 (DPS on ``!pto.tile_buf`` buffers).

One ``pto.alloc_tile`` per SSA tile value; reusing buffers is pto-plan-memory's job.
An L1 kernel (a function taking or returning ``!pto.tile`` values, DESIGN.md §2) gets GM
copies: each tile argument ``%a`` becomes a ``!pto.ptr<T>`` argument ``%a`` loaded with
``tload`` at entry, and each result ``i`` a ``!pto.ptr<T>`` argument ``%result<i>`` written
with ``tstore`` before the return.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from pto_compiler.diagnostics import op_error
from pto_compiler.dialects import pto


def buffer_type(t: pto.TileLikeType) -> pto.TileBufType:
    return pto.TileBufType(t.element_type, [t.rows, t.cols], loc=t.loc.data, valid=list(t.valid_shape),
                           **t._keys())


def _is_l1(fn: func.FuncOp) -> bool:
    types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
    if any(isinstance(t, pto.TileType) for t in types):
        return True
    return any(isinstance(r.type, pto.TileType) for op in fn.walk() for r in op.results)


class _Emitter:
    """Appends ops to a block, carrying the location of the op being bufferized."""

    def __init__(self, block: Block):
        self.block = block
        self.location = None
        self.constants: dict[int, SSAValue] = {}

    def add(self, op: Operation) -> Operation:
        if self.location is not None:
            op.location = self.location
        self.block.add_op(op)
        return op

    def index(self, value: int) -> SSAValue:
        if value not in self.constants:
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            self.constants[value] = self.add(op).results[0]
            op.results[0].name_hint = f"c{value}"
        return self.constants[value]

    def gm_view(self, ptr: SSAValue, t: pto.TileLikeType) -> SSAValue:
        rows, cols = t.valid_shape
        if pto.DYNAMIC in (rows, cols):
            raise op_error(ptr.owner if isinstance(ptr.owner, Operation) else None,
                           "an L1 kernel tile needs a static valid shape")
        tv = self.add(pto.MakeTensorViewOp(ptr, [self.index(rows), self.index(cols)],
                                           [self.index(cols), self.index(1)],
                                           pto.TensorViewType([rows, cols], t.element_type)))
        pv = self.add(pto.PartitionViewOp(tv.results[0], [self.index(0), self.index(0)],
                                          [self.index(rows), self.index(cols)],
                                          pto.PartitionTensorViewType([rows, cols], t.element_type)))
        return pv.results[0]

    def alloc(self, t: pto.TileLikeType, hint: str | None) -> SSAValue:
        op = self.add(pto.AllocTileOp(buffer_type(t)))
        op.results[0].name_hint = hint
        return op.results[0]


def bufferize_function(fn: func.FuncOp) -> func.FuncOp:
    old_block = fn.body.block
    in_types = list(fn.function_type.inputs.data)
    out_types = list(fn.function_type.outputs.data)
    new_in = [pto.PtrType(t.element_type) if isinstance(t, pto.TileType) else t for t in in_types]
    new_in += [pto.PtrType(t.element_type) for t in out_types]
    block = Block(arg_types=new_in)
    emit = _Emitter(block)
    emit.location = fn.location
    mapping: dict[SSAValue, SSAValue] = {}
    for old, new in zip(old_block.args, block.args):
        new.name_hint = old.name_hint
        if isinstance(old.type, pto.TileType):
            buf = emit.alloc(old.type, old.name_hint)
            emit.add(pto.TLoadOp([emit.gm_view(new, old.type)], [buf]))
            mapping[old] = buf
        else:
            mapping[old] = new
    result_ptrs = block.args[len(in_types):]
    for i, ptr in enumerate(result_ptrs):
        ptr.name_hint = f"result{i}"

    for op in list(old_block.ops):
        emit.location = op.location
        if isinstance(op, func.ReturnOp):
            for value, ptr in zip(op.operands, result_ptrs):
                src = mapping.get(value, value)
                emit.add(pto.TStoreOp([src], [emit.gm_view(ptr, value.type)]))
            emit.add(func.ReturnOp())
            continue
        if isinstance(op, pto.TileOp) and op.res:
            outs = [emit.alloc(r.type, r.name_hint) for r in op.res]
            ins = [mapping.get(v, v) for v in op.ins]
            new = emit.add(type(op)(ins, outs, [], dict(op.attributes)))
            for r, o in zip(op.res, outs):
                mapping[r] = o
            del new
            continue
        if isinstance(op, pto.TAssignOp) and op.tile and op.tile[0] in mapping and not op.result:
            emit.add(op.clone(value_mapper=mapping))
            continue
        if any(isinstance(r.type, pto.TileType) for r in op.results) or op.regions and _has_l1(op):
            raise op_error(op, "pto-bufferize does not handle L1 tiles inside this op yet")
        emit.add(op.clone(value_mapper=mapping))

    new_fn = func.FuncOp(fn.sym_name.data, (new_in, []), Region(block), visibility=fn.sym_visibility)
    for k, v in fn.attributes.items():
        if k not in ("sym_name", "function_type", "sym_visibility"):
            new_fn.attributes[k] = v
    new_fn.location = fn.location
    return new_fn


def _has_l1(op: Operation) -> bool:
    return any(isinstance(r.type, pto.TileType) for o in op.walk() for r in o.results)


@dataclass(frozen=True)
class BufferizePass(ModulePass):
    name = "pto-bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in list(op.body.block.ops):
            if isinstance(fn, func.FuncOp) and fn.body.blocks and _is_l1(fn):
                new_fn = bufferize_function(fn)
                op.body.block.insert_op_before(new_fn, fn)
                fn.detach()
                fn.erase(safe_erase=False)
