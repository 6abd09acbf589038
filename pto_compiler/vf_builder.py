"""The PTO-AS front end of the ``vf`` dialect: one ``vf.*`` statement -> ops.

``pto_compiler.frontend`` calls :func:`build_from_stmt` for every statement whose op name starts
with ``vf.``; the syntax is the one dialects/vf.py documents.  It lives in the driver, not in the
dialect, so that ``dialects/`` imports neither the front end nor the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType, Signedness, StringAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from pto_compiler.dialects.pto import TileLikeType, dtype_name, is_float
from pto_compiler.dialects.vf import (
    BINARY_OPS, CVT_PARTS, I32, INDEX, LOAD_DISTS, MASK_PATTERNS, MERGE_MODES, REDUCE_OPS, REG_DTYPES,
    ROUND_MODES, SCALAR_OPS, SCALAR_WORDS, STORE_DISTS, UNARY_OPS, CreateMaskOp, CvtOp, DupOp, LoadAlignOp,
    LoadUnalignOp, MaskType, PairReduceSumOp, RegType, StoreAlignOp, StoreUnalignOp, StoreUnalignPostOp,
    UpdateMaskOp, VfCallOp, VfFuncOp, _scalar_fits, _signless, _tname, mask_type,
)


class _StmtBuilder:
    def __init__(self, b, stmt, scope):
        self.b, self.stmt, self.scope = b, stmt, scope
        self.pre: list[Operation] = []
        self.used: set[str] = set()
        self.words = [w for w in stmt.words]

    # ---- errors ------------------------------------------------------------------------
    def err(self, message: str, pos=None):
        return self.b.err(message, pos or self.stmt.pos)

    def located(self, op: Operation) -> Operation:
        return self.b.located(op, self.stmt.pos)

    # ---- pieces ------------------------------------------------------------------------
    def value(self, operand, expected: Attribute | None = None) -> SSAValue:
        if operand.indices:
            raise self.err(f"%{operand.name} takes no [offset] here", operand.pos)
        v = self.b.value(self.scope, operand)
        if expected is not None and v.type != expected:
            raise self.err(f"%{operand.name} has type {_tname(v.type)}, expected {_tname(expected)}", operand.pos)
        return v

    def kwarg(self, key: str):
        self.used.add(key)
        return self.stmt.kwargs.get(key)

    def word_option(self, key: str, allowed: Sequence[str], default: str | None) -> str | None:
        v = self.kwarg(key)
        if v is None:
            for w in list(self.words):
                if w in allowed:
                    self.words.remove(w)
                    return w
            return default
        text = v.data if isinstance(v, StringAttr) else v if isinstance(v, str) else None
        if text not in allowed:
            raise self.err(f"{key} must be one of {', '.join(allowed)}, got {_show(v)}")
        return text

    def finish(self, op: Operation) -> list[Operation]:
        unknown = sorted(set(self.stmt.kwargs) - self.used)
        if unknown:
            raise self.err(f"'{self.stmt.opname}' has no option '{unknown[0]}'")
        leftover = list(self.words)
        if leftover:
            raise self.err(f"unexpected '{leftover[0]}' in '{self.stmt.opname}'")
        if self.stmt.attrs:
            for k, v in self.stmt.attrs.items():
                op.attributes[k] = v
        return [*self.pre, self.located(op)]

    def annotated_elt(self, allow_mask: bool = False) -> Attribute | None:
        """The element type a trailing `: T` names (an element type, or a !vf.reg / !vf.mask type
        once the Lark converter reads them), if any."""
        types = [t.attr for t in self.stmt.in_types + self.stmt.out_types]
        elts = [t for t in types if not isinstance(t, TileLikeType)]
        if not elts:
            return None
        t = elts[0]
        if isinstance(t, RegType):
            return t.element_type
        if isinstance(t, MaskType):
            if allow_mask:
                return t
            raise self.err(f"'{self.stmt.opname}' takes a register type here, not {t}")
        if dtype_name(t) not in REG_DTYPES:
            raise self.err(f"'{self.stmt.opname}' names its register type by element type (`: f32`), got {t}")
        return t

    def annotated_tile(self) -> Attribute | None:
        types = [t.attr for t in self.stmt.in_types + self.stmt.out_types]
        tiles = [t for t in types if isinstance(t, TileLikeType)]
        return tiles[0] if tiles else None

    def cast(self, v: SSAValue, to: Attribute, what: str, pos) -> SSAValue:
        if v.type == to:
            return v
        t = v.type
        if isinstance(to, IndexType) and isinstance(t, IntegerType):
            op = arith.IndexCastOp(v, to)
        elif to == I32 and isinstance(t, IndexType):
            op = arith.IndexCastOp(v, to)
        elif to == I32 and isinstance(t, IntegerType) and t.signedness.data == Signedness.SIGNLESS:
            op = arith.TruncIOp(v, to) if t.width.data > 32 else arith.ExtUIOp(v, to) if t.width.data < 32 else None
            if op is None:
                return v
        else:
            raise self.err(f"{what} has type {_tname(t)}; expected {_tname(to)}", pos)
        self.pre.append(self.located(op))
        return op.results[0]

    def constant(self, value: Any, elt: Attribute, pos) -> SSAValue:
        """An arith.constant of the lane type from a literal or INF/NEG_INF/NAN/MAX/MIN."""
        import math

        name = dtype_name(elt)
        if isinstance(value, str):
            word = value.upper()
            if is_float(elt):
                from pto_compiler.runtime import elementwise as ew

                fmax = ew.max_finite(ew.np_dtype(name))
                value = {"INF": math.inf, "NEG_INF": -math.inf, "NAN": math.nan, "MAX": fmax, "MIN": -fmax}[word]
            else:
                w = elt.width.data
                unsigned = elt.signedness.data == Signedness.UNSIGNED
                lo, hi = (0, (1 << w) - 1) if unsigned else (-(1 << (w - 1)), (1 << (w - 1)) - 1)
                if word not in ("MAX", "MIN"):
                    raise self.err(f"{word} is not a value of {name}", pos)
                value = hi if word == "MAX" else lo
        if is_float(elt):
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise self.err(f"expected a {name} literal", pos)
            op = arith.ConstantOp(FloatAttr(float(value), elt))
        else:
            if not isinstance(value, int) or isinstance(value, bool):
                raise self.err(f"expected an integer literal for {name}", pos)
            w = elt.width.data
            sl = _signless(elt)
            v = value & ((1 << w) - 1)
            if v >= 1 << (w - 1):
                v -= 1 << w
            op = arith.ConstantOp(IntegerAttr(v, sl))
        self.pre.append(self.located(op))
        return op.results[0]

    def scalar_literal(self) -> Any | None:
        """A number or INF/NEG_INF/NAN/MAX/MIN word written among the operands, if any (consumed)."""
        for w in list(self.words):
            if _is_number(w):
                self.words.remove(w)
                return self.stmt.literal if self.stmt.literal is not None else _number(w)
            if w.upper() in SCALAR_WORDS:
                self.words.remove(w)
                return w
        return None

    def address(self, operand) -> tuple[SSAValue, SSAValue | int]:
        tile = self.b.value(self.scope, _plain(operand))
        if not isinstance(tile.type, TileLikeType):
            raise self.err(f"%{operand.name} is not a tile (it has type {_tname(tile.type)})", operand.pos)
        t = self.annotated_tile()
        if t is not None and t != tile.type:
            raise self.err(f"%{operand.name} has type {tile.type}, but the signature says {t}", operand.pos)
        idx = operand.indices
        if not idx:
            return tile, 0
        if len(idx) != 1:
            raise self.err("a VF address takes one element offset: %tile[%off]", operand.pos)
        o = idx[0]
        if isinstance(o, bool) or not (isinstance(o, int) or _is_operand(o)):
            raise self.err("the offset must be an SSA value or an integer literal", operand.pos)
        if isinstance(o, int):
            if o < 0:
                raise self.err("the offset must be non-negative", operand.pos)
            return tile, o
        v = self.b.value(self.scope, o)
        return tile, self.cast(v, INDEX, f"offset %{o.name}", o.pos)


def _is_number(word: str) -> bool:
    try:
        _number(word)
    except ValueError:
        return False
    return True


def _number(word: str) -> int | float:
    try:
        return int(word, 0)
    except ValueError:
        return float(word) if any(c.isdigit() for c in word) else float("x")


def _is_operand(x) -> bool:
    from pto_compiler.frontend import Operand

    return isinstance(x, Operand)


def _plain(operand):
    from pto_compiler.frontend import Operand

    return Operand(operand.name, operand.pos)


def _show(v: Any) -> str:
    if isinstance(v, StringAttr):
        return f"'{v.data}'"
    if hasattr(v, "name") and hasattr(v, "pos"):
        return f"%{v.name}"
    return repr(v)


def build_from_stmt(b, stmt, scope) -> list[Operation]:
    """Front-end entry: one PTO-AS statement whose op name starts with ``vf.`` -> ops (the last
    one defines the statement's results; casts and constants it needs come first)."""
    name = stmt.opname
    handler = _BUILDERS.get(name)
    if handler is None:
        known = ", ".join(sorted(_BUILDERS))
        raise b.err(f"unknown operation '{name}' (the vf dialect has {known})", stmt.pos)
    return handler(_StmtBuilder(b, stmt, scope))


def _n_operands(sb: _StmtBuilder, n: int | tuple[int, ...], form: str) -> list:
    ops = sb.stmt.operands
    ok = (len(ops) in n) if isinstance(n, tuple) else len(ops) == n
    if not ok:
        raise sb.err(f"'{sb.stmt.opname}' expects `{form}`")
    return ops


def _b_func(sb: _StmtBuilder) -> list[Operation]:
    from pto_compiler.frontend import Scope

    stmt, b = sb.stmt, sb.b
    if stmt.symbol is None:
        raise sb.err("'vf.func' needs a name: `vf.func @name(%a: T, ...) { ... }`")
    if not stmt.regions:
        raise sb.err("'vf.func' needs a body `{ ... }`")
    types = []
    for o in stmt.operands:
        t = getattr(o, "type", None)
        if t is None:
            raise sb.err(f"vf.func argument %{o.name} needs a type (`%{o.name}: T`)", o.pos)
        if o.indices:
            raise sb.err(f"unexpected [..] after vf.func argument %{o.name}", o.pos)
        types.append(t.attr)
    block = Block(arg_types=types)
    body_scope = Scope(None)  # isolated from above: only the arguments are visible
    # an undefined name inside a VF is an error, never a kernel argument
    with b.isolated(f"vf.func @{stmt.symbol}", stmt.regions[0]):
        for o, arg in zip(stmt.operands, block.args):
            b.define(body_scope, o, arg)
        b.build_block(stmt.regions[0], block, body_scope)
    op = VfFuncOp(stmt.symbol, types, Region(block), dict(stmt.attrs))
    if stmt.results:
        raise sb.err("'vf.func' has no results")
    return [sb.located(op)]


def _b_call(sb: _StmtBuilder) -> list[Operation]:
    stmt = sb.stmt
    if stmt.symbol is None:
        raise sb.err("'vf.call' needs a callee: `vf.call @name(%a, ...)`")
    types = stmt.in_types
    if types and len(types) != len(stmt.operands):
        raise sb.err(f"{len(stmt.operands)} arguments but {len(types)} types")
    args = [sb.b.value(sb.scope, o, types[i].attr if types else getattr(o, "type", None) and o.type.attr)
            for i, o in enumerate(stmt.operands)]
    if stmt.out_types:
        raise sb.err("'vf.call' has no results")
    return [*sb.pre, sb.located(VfCallOp(stmt.symbol, args, dict(stmt.attrs)))]


def _b_create_mask(sb: _StmtBuilder) -> list[Operation]:
    _n_operands(sb, 0, "vf.create_mask PATTERN : T")
    pattern = sb.word_option("pattern", MASK_PATTERNS, None)
    if pattern is None:
        raise sb.err(f"'vf.create_mask' needs a pattern ({', '.join(MASK_PATTERNS)})")
    elt = _mask_elt(sb, "vf.create_mask ALL : f32")
    return sb.finish(CreateMaskOp(pattern, mask_type(elt)))


def _mask_elt(sb: _StmtBuilder, form: str) -> Attribute | int:
    """The element type (or, from a !vf.mask<bN> annotation, the lane width) a mask is made for."""
    elt = sb.annotated_elt(allow_mask=True)
    if isinstance(elt, MaskType):
        return elt.bits
    dt = sb.kwarg("dtype")
    if dt is not None:
        from pto_compiler.frontend import ELEMENT_TYPES

        name = dt.data if isinstance(dt, StringAttr) else None
        if name not in ELEMENT_TYPES:
            raise sb.err(f"unknown dtype {_show(dt)}")
        elt = ELEMENT_TYPES[name]
    if elt is None:
        raise sb.err(f"'{sb.stmt.opname}' needs the element type its mask is for: `{form}`")
    if isinstance(elt, int):
        return elt
    if dtype_name(elt) not in REG_DTYPES:
        raise sb.err(f"{dtype_name(elt)} has no vector register type")
    return elt


def _b_update_mask(sb: _StmtBuilder) -> list[Operation]:
    (c,) = _n_operands(sb, 1, "%m, %rest = vf.update_mask %count : f32")
    elt = _mask_elt(sb, "%m, %rest = vf.update_mask %count : f32")
    count = sb.cast(sb.value(c), I32, f"count %{c.name}", c.pos)
    return sb.finish(UpdateMaskOp(count, mask_type(elt)))


def _b_load(sb: _StmtBuilder) -> list[Operation]:
    (a,) = _n_operands(sb, 1, f"%v = {sb.stmt.opname} %tile[%offset]")
    tile, off = sb.address(a)
    _check_tile_elt(sb, tile)
    if sb.stmt.opname == "vf.load_align":
        dist = sb.word_option("dist", LOAD_DISTS, "NORM")
        op = LoadAlignOp(tile, off, dist)
    else:
        op = LoadUnalignOp(tile, off)
    elt = sb.annotated_elt()
    if elt is not None and elt != tile.type.element_type:
        raise sb.err(f"the tile holds {tile.type.dtype}, but the signature says {dtype_name(elt)}")
    return sb.finish(op)


def _check_tile_elt(sb: _StmtBuilder, tile: SSAValue) -> None:
    if dtype_name(tile.type.element_type) not in REG_DTYPES:
        raise sb.err(f"tile element type {tile.type.dtype} has no vector register type")


def _b_store_align(sb: _StmtBuilder) -> list[Operation]:
    a, v, m = _n_operands(sb, 3, "vf.store_align %tile[%offset], %value, %mask")
    tile, off = sb.address(a)
    _check_tile_elt(sb, tile)
    dist = sb.word_option("dist", STORE_DISTS, "NORM")
    return sb.finish(StoreAlignOp(tile, off, sb.value(v), sb.value(m), dist))


def _b_store_unalign(sb: _StmtBuilder) -> list[Operation]:
    a, v = _n_operands(sb, 2, "vf.store_unalign %tile[%offset], %value, count = N")
    tile, off = sb.address(a)
    _check_tile_elt(sb, tile)
    count = sb.kwarg("count")
    if count is None:
        count = 1
    if not isinstance(count, int) or isinstance(count, bool):
        raise sb.err("count must be an integer literal")
    return sb.finish(StoreUnalignOp(tile, off, sb.value(v), count))


def _b_store_unalign_post(sb: _StmtBuilder) -> list[Operation]:
    (a,) = _n_operands(sb, 1, "vf.store_unalign_post %tile")
    if a.indices:
        raise sb.err("vf.store_unalign_post takes the tile alone (`vf.store_unalign_post %tile`)", a.pos)
    tile, _ = sb.address(a)
    return sb.finish(StoreUnalignPostOp(tile))


def _reg_of(sb: _StmtBuilder, v: SSAValue, operand) -> RegType:
    if not isinstance(v.type, RegType):
        raise sb.err(f"%{operand.name} is not a register (it has type {_tname(v.type)})", operand.pos)
    return v.type


def _merge_and_dst(sb: _StmtBuilder) -> tuple[str, SSAValue | None]:
    mode = sb.word_option("merge_mode", MERGE_MODES, "ZEROING")
    d = sb.kwarg("dst")
    dv = None
    if d is not None:
        if not _is_operand(d):  # a word (`dst = NEXT`, fuzzer) is a StringAttr, which has a .name too
            raise sb.err("dst must be a register value (`dst = %old`)")
        dv = sb.value(d)
    return mode, dv


def _check_annotation(sb: _StmtBuilder, rt: RegType) -> None:
    elt = sb.annotated_elt()
    if elt is not None and elt != rt.element_type:
        raise sb.err(f"the registers hold {rt.dtype}, but the signature says {dtype_name(elt)}")


def _b_binary(sb: _StmtBuilder) -> list[Operation]:
    a, bb, m = _n_operands(sb, 3, f"%r = {sb.stmt.opname} %a, %b, %mask")
    va = sb.value(a)
    rt = _reg_of(sb, va, a)
    _check_annotation(sb, rt)
    mode, dv = _merge_and_dst(sb)
    cls = BINARY_OPS[sb.stmt.opname]
    return sb.finish(cls([va, sb.value(bb)], sb.value(m), rt, mode, dv))


def _b_scalar(sb: _StmtBuilder) -> list[Operation]:
    lit = sb.scalar_literal()
    if lit is None:
        a, s, m = _n_operands(sb, 3, f"%r = {sb.stmt.opname} %a, %scalar, %mask")
    else:
        a, m = _n_operands(sb, 2, f"%r = {sb.stmt.opname} %a, LITERAL, %mask")
    va = sb.value(a)
    rt = _reg_of(sb, va, a)
    _check_annotation(sb, rt)
    sv = sb.value(s) if lit is None else sb.constant(lit, rt.element_type, sb.stmt.pos)
    mode, dv = _merge_and_dst(sb)
    cls = SCALAR_OPS[sb.stmt.opname]
    return sb.finish(cls([va, sv], sb.value(m), rt, mode, dv))


def _b_unary(sb: _StmtBuilder) -> list[Operation]:
    a, m = _n_operands(sb, 2, f"%r = {sb.stmt.opname} %a, %mask")
    va = sb.value(a)
    rt = _reg_of(sb, va, a)
    _check_annotation(sb, rt)
    mode, dv = _merge_and_dst(sb)
    return sb.finish(UNARY_OPS[sb.stmt.opname]([va], sb.value(m), rt, mode, dv))


def _b_pair(sb: _StmtBuilder) -> list[Operation]:
    a, m = _n_operands(sb, 2, "%r = vf.pair_reduce_sum %a, %mask")
    va = sb.value(a)
    rt = _reg_of(sb, va, a)
    _check_annotation(sb, rt)
    return sb.finish(PairReduceSumOp([va], sb.value(m), rt))


def _b_cvt(sb: _StmtBuilder) -> list[Operation]:
    a, m = _n_operands(sb, 2, "%r = vf.cvt %a, %mask[, round = R][, part = EVEN|ODD] : DST_ELEMENT_TYPE")
    va = sb.value(a)
    _reg_of(sb, va, a)
    elt = sb.annotated_elt()
    if elt is None:
        raise sb.err("'vf.cvt' needs the result element type: `%r = vf.cvt %a, %m : f32`")
    rnd = sb.word_option("round", ROUND_MODES, "RINT")
    part = sb.word_option("part", CVT_PARTS, "EVEN")
    mode, dv = _merge_and_dst(sb)
    return sb.finish(CvtOp(va, sb.value(m), RegType(elt), rnd, part, mode, dv))


def _b_dup(sb: _StmtBuilder) -> list[Operation]:
    lit = sb.scalar_literal()
    ops = sb.stmt.operands
    elt = sb.annotated_elt()
    if lit is not None:
        if len(ops) > 1:
            raise sb.err("'vf.dup' expects `%r = vf.dup VALUE[, %mask] : T`")
        if elt is None:
            raise sb.err("'vf.dup' of a literal needs the element type: `vf.dup 0.0 : f32`")
        src = sb.constant(lit, elt, sb.stmt.pos)
        mask_ops = ops
    else:
        if len(ops) not in (1, 2):
            raise sb.err("'vf.dup' expects `%r = vf.dup %scalar_or_reg[, %mask]`")
        src = sb.value(ops[0])
        mask_ops = ops[1:]
        if isinstance(src.type, RegType):
            if elt is not None and elt != src.type.element_type:
                raise sb.err(f"the register holds {src.type.dtype}, but the signature says {dtype_name(elt)}")
            elt = src.type.element_type
        elif elt is None:
            elt = src.type
    if dtype_name(elt) not in REG_DTYPES:
        raise sb.err(f"{dtype_name(elt)} has no vector register type")
    if not isinstance(src.type, RegType) and not _scalar_fits(src.type, elt):
        raise sb.err(f"scalar source has type {_tname(src.type)}, but the lanes are {dtype_name(elt)}")
    mask = sb.value(mask_ops[0]) if mask_ops else None
    mode, dv = _merge_and_dst(sb)
    return sb.finish(DupOp([src], mask, RegType(elt), mode, dv))


def _b_reduce(sb: _StmtBuilder) -> list[Operation]:
    a, m = _n_operands(sb, 2, f"%r = {sb.stmt.opname} %src, %mask")
    va = sb.value(a)
    rt = _reg_of(sb, va, a)
    _check_annotation(sb, rt)
    db = sb.kwarg("datablock")
    if db is None:
        db = False
    if isinstance(db, IntegerAttr):
        db = bool(db.value.data)
    if not isinstance(db, bool):
        raise sb.err(f"datablock must be true or false, got {_show(db)}")
    mode, dv = _merge_and_dst(sb)
    cls = REDUCE_OPS[sb.stmt.opname]
    return sb.finish(cls([va], sb.value(m), rt, mode, dv, db))


_BUILDERS = {
    "vf.func": _b_func, "vf.call": _b_call,
    "vf.create_mask": _b_create_mask, "vf.update_mask": _b_update_mask,
    "vf.load_align": _b_load, "vf.load_unalign": _b_load,
    "vf.store_align": _b_store_align, "vf.store_unalign": _b_store_unalign,
    "vf.store_unalign_post": _b_store_unalign_post,
    **{n: _b_binary for n in BINARY_OPS}, **{n: _b_scalar for n in SCALAR_OPS},
    **{n: _b_unary for n in UNARY_OPS}, "vf.dup": _b_dup, **{n: _b_reduce for n in REDUCE_OPS},
    "vf.pair_reduce_sum": _b_pair, "vf.cvt": _b_cvt,
}
