"""PTO-AS -> xDSL: the Lark parse tree (pto_compiler/syntax.py) becomes ``pto``/``arith``/``scf``/``func`` ops.

Every op gets a ``FileLineColLoc`` at its op-name token, so later diagnostics point at the
user's line (reference/xdsl_guide.md §0.4).  The tree is first flattened into
:class:`Stmt` records (one per operation, whatever its spelling: L1 SSA, L2 DPS, short
form, PTOAS custom syntax); builders keyed by op name turn a Stmt into ops.

Choices where the syntax documents are silent:

* Bare statements outside any ``func.func`` form an L1 kernel ``@kernel``: values used before
  they are defined become its arguments (typed from the use's signature), values defined and
  never used become its results, in order.
* The doc form ``pto.tassign %t, @tile(0x1000)`` may name a tile defined later in the block;
  the op is placed right after that definition, keeping its own source location.
* Operand types come from their definitions; a type written in a signature must agree.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DictionaryAttr,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from pto_compiler.diagnostics import PtocError, did_you_mean, error_at, location_of, op_error
from pto_compiler.dialects import pto

# ---------------------------------------------------------------------------------------
# Flattened statements
# ---------------------------------------------------------------------------------------


@dataclass
class Pos:
    line: int
    column: int


@dataclass
class Operand:
    name: str  # without '%', with '#N' result index kept
    pos: Pos
    indices: list[Any] = field(default_factory=list)
    attrs: dict[str, Attribute] = field(default_factory=dict)
    type: Any = None
    """The TypeRef written for it inside a ``( ... : T)`` group, if any."""


@dataclass
class TypeRef:
    """A type written in the source, converted lazily so errors can be located."""

    attr: Attribute
    pos: Pos


@dataclass
class Stmt:
    results: list[Operand]
    opname: str
    pos: Pos
    operands: list[Operand] = field(default_factory=list)
    """Positional SSA operands (L1 form, PTOAS custom forms)."""
    ins: list[Operand] | None = None
    ins_types: list[TypeRef] = field(default_factory=list)
    outs: list[Operand] | None = None
    outs_types: list[TypeRef] = field(default_factory=list)
    in_types: list[TypeRef] = field(default_factory=list)
    """Signature types before ``->`` (or the only types, when there is no arrow)."""
    out_types: list[TypeRef] = field(default_factory=list)
    has_arrow: bool = False
    kwargs: dict[str, Any] = field(default_factory=dict)
    """``key = value`` parts: Operand, list of Operand/int, Attribute, int/str."""
    brackets: list[Any] = field(default_factory=list)
    """``[#a, #b, %c]`` or ``<PIPE_V>`` items (Attribute or Operand)."""
    attrs: dict[str, Attribute] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)
    """Bare keywords and literals in order (``eq`` of cmpi, ``private``, a constant's value, ...)."""
    literal: Any = None
    symbol: str | None = None
    """``@callee`` / ``@name``."""
    symbol_call: tuple[str, int] | None = None
    """``@tile(0x1000)``: (symbol, integer)."""
    regions: list[list[Stmt]] = field(default_factory=list)
    region_args: list[list[tuple[Operand, TypeRef | None]]] = field(default_factory=list)
    iter_args: list[tuple[Operand, Operand]] = field(default_factory=list)
    for_header: tuple[Operand, Operand, Operand, Operand] | None = None
    """``scf.for %i = %lb to %ub step %s``."""
    func_args: list[tuple[Operand, TypeRef]] = field(default_factory=list)
    func_results: list[TypeRef] = field(default_factory=list)
    func_attrs: dict[str, Attribute] = field(default_factory=dict)
    visibility: str | None = None


# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------

ELEMENT_TYPES: dict[str, Attribute] = {
    "f16": Float16Type(), "half": Float16Type(), "bf16": BFloat16Type(), "bfloat16": BFloat16Type(),
    "bfloat16_t": BFloat16Type(), "f32": Float32Type(), "float": Float32Type(), "f64": Float64Type(),
    "index": IndexType(), "i1": IntegerType(1),
}
for _name in ("f8E4M3", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E8M0FNU"):
    import xdsl.dialects.builtin as _builtin

    ELEMENT_TYPES[_name] = getattr(_builtin, "Float" + _name[1:] + "Type")()
for _w in (8, 16, 32, 64):
    ELEMENT_TYPES[f"i{_w}"] = IntegerType(_w)
    ELEMENT_TYPES[f"si{_w}"] = IntegerType(_w)
    ELEMENT_TYPES[f"int{_w}"] = IntegerType(_w)
    ELEMENT_TYPES[f"int{_w}_t"] = IntegerType(_w)
    ELEMENT_TYPES[f"ui{_w}"] = IntegerType(_w, Signedness.UNSIGNED)
    ELEMENT_TYPES[f"u{_w}"] = IntegerType(_w, Signedness.UNSIGNED)
    ELEMENT_TYPES[f"uint{_w}"] = IntegerType(_w, Signedness.UNSIGNED)
    ELEMENT_TYPES[f"uint{_w}_t"] = IntegerType(_w, Signedness.UNSIGNED)


def element_type(name: str, filename: str, pos: Pos) -> Attribute:
    t = ELEMENT_TYPES.get(name)
    if t is None:
        raise error_at(f"unknown element type '{name}'", filename, pos.line, pos.column)
    return t


BLAYOUT_NAMES = {"row_major": "row_major", "rowmajor": "row_major", "col_major": "col_major",
                 "colmajor": "col_major"}
SLAYOUT_NAMES = {"none_box": "none_box", "nonebox": "none_box", "row_major": "row_major",
                 "rowmajor": "row_major", "col_major": "col_major", "colmajor": "col_major"}
PAD_NAMES = {"null": 0, "zero": 1, "max": 2, "min": 3, "invalid": 0}
FRACTAL_NAMES = {"none": 512, "nz": 512, "zn": 512, "fr": 512, "rn": 512}

# ---------------------------------------------------------------------------------------
# Builder
# ---------------------------------------------------------------------------------------


class Scope:
    def __init__(self, parent: Scope | None = None):
        self.parent = parent
        self.values: dict[str, SSAValue] = {}

    def lookup(self, name: str) -> SSAValue | None:
        s: Scope | None = self
        while s is not None:
            if name in s.values:
                return s.values[name]
            s = s.parent
        return None


MAX_DEPTH = 64


class Builder:
    """Turns Stmt records into xDSL ops, resolving SSA names through nested scopes."""

    def __init__(self, filename: str):
        self.filename = filename
        self._file = StringAttr(filename)  # one attribute for every op's location
        self._columns: dict[int, IntAttr] = {}
        self.depth = 0
        self.implicit_args: list[tuple[str, SSAValue]] | None = None
        self.l1_uses: dict[str, tuple[Scope, Pos]] = {}
        """An L1 kernel's implicit arguments: where each name was first used (its scope and position)."""
        self.defs: dict[str, Pos] = {}
        """Names the function (or L1 kernel) being built has defined so far, and where first."""
        self.body_defs: dict[str, Pos] = {}
        """Every name the function (or L1 kernel) being built defines, in any of its regions."""
        self.module_defs: dict[str, Pos] = {}
        """Names the module's bare statements (its L1 kernel) define, and where."""
        self.func_args: dict[str, tuple[str, Pos]] = {}
        """Names of the module's functions' arguments: function and position (the first such)."""
        self.current_func: str | None = None
        """The isolated-from-above op being built (``func.func @k``, ``vf.func @f``), None in an L1 kernel."""
        self.outer_defs: dict[str, Pos] = {}
        """Names defined outside the isolated op being built (which its body cannot see)."""

    # ---- errors and locations --------------------------------------------------------
    def err(self, message: str, pos: Pos) -> PtocError:
        return error_at(message, self.filename, pos.line, pos.column)

    def loc(self, pos: Pos) -> FileLineColLoc:
        """``loc("file":line:col)``, made as xDSL's constructor makes it minus the check of its three
        parameters (ours: a StringAttr and two IntAttr), a tenth of the building of a tile op; the
        column attributes are shared (a few distinct columns)."""
        column = self._columns.get(pos.column)
        if column is None:
            column = self._columns[pos.column] = IntAttr(pos.column)
        loc = object.__new__(FileLineColLoc)
        for name, value in (("filename", self._file), ("line", IntAttr(pos.line)), ("column", column)):
            object.__setattr__(loc, name, value)
        return loc

    def located(self, op: Operation, pos: Pos) -> Operation:
        op.location = self.loc(pos)
        return op

    # ---- values ----------------------------------------------------------------------
    def value(self, scope: Scope, operand: Operand, expected: Attribute | None = None,
              expected_pos: Pos | None = None) -> SSAValue:
        v = scope.lookup(operand.name)
        if v is None:
            if self.implicit_args is not None and expected is not None and "#" not in operand.name:
                v = self._implicit_arg(scope, operand, expected)
            else:
                raise self.undefined(operand)
        if expected is not None and v.type != expected:
            raise self.err(f"%{operand.name} has type {v.type}, but the signature says {expected}", operand.pos)
        return v

    def undefined(self, operand: Operand) -> PtocError:
        """MLIR's ``use of undefined value '%x'``, or why a name defined elsewhere is out of sight:
        SSA scoping (a value is visible after its definition, in its block and the regions nested
        there) and func.func's isolation from above."""
        name = operand.name
        if name in self.defs:
            message = f"use of value '%{name}' outside the region that defines it (line {self.defs[name].line})"
        elif name in self.body_defs:
            message = f"use of value '%{name}' before its definition (line {self.body_defs[name].line})"
        else:
            message = f"use of undefined value '%{name}'"
            if self.current_func is not None and name in self.outer_defs:
                message += (f": {self.current_func} is isolated from above, its body sees only its arguments "
                            f"and its own values ('%{name}' is defined outside it, line {self.outer_defs[name].line})")
            elif self.current_func is None and name in self.func_args:
                fn, pos = self.func_args[name]
                message += f" ('%{name}' is an argument of @{fn} at line {pos.line}, visible only in its body)"
        return self.err(message, operand.pos)

    @contextmanager
    def isolated(self, what: str, body: list[Stmt]):
        """Building the body of an op isolated from above (``what``: ``func.func @k``): no
        implicit arguments, its own names; what is defined outside is out of its sight."""
        saved = self.implicit_args, self.current_func, self.defs, self.body_defs, self.outer_defs
        self.outer_defs = {**self.module_defs, **self.body_defs, **self.defs}
        self.implicit_args, self.current_func, self.defs, self.body_defs = None, what, {}, defined_names(body)
        try:
            yield
        finally:
            self.implicit_args, self.current_func, self.defs, self.body_defs, self.outer_defs = saved

    def _implicit_arg(self, scope: Scope, operand: Operand, t: Attribute) -> SSAValue:
        if operand.name in self.defs:  # defined in a region that does not enclose this use
            raise self.undefined(operand)
        self.l1_uses.setdefault(operand.name, (scope, operand.pos))
        block = self.l1_block
        arg = block.insert_arg(t, len(block.args))
        arg.name_hint = _hint(operand.name)
        root = scope
        while root.parent is not None:
            root = root.parent
        root.values[operand.name] = arg
        self.implicit_args.append((operand.name, arg))  # type: ignore[union-attr]
        return arg

    def define(self, scope: Scope, operand: Operand, value: SSAValue) -> None:
        if operand.name in scope.values:
            raise self.err(f"redefinition of %{operand.name}", operand.pos)
        if self.implicit_args is not None:
            self._l1_define(scope, operand)
        self.defs.setdefault(operand.name, operand.pos)
        scope.values[operand.name] = value
        if "#" not in operand.name:
            value.name_hint = _hint(operand.name)

    def _l1_define(self, scope: Scope, operand: Operand) -> None:
        """An L1 kernel's undefined values become its arguments; a name it also defines is not one
        of them: a use before the definition (in its block or a region nested there) or beside it
        (a sibling region) is an error, as MLIR's dominance and region scoping make it."""
        used = self.l1_uses.get(operand.name)
        if used is not None:
            use_scope, use_pos = used
            s: Scope | None = use_scope
            while s is not None and s is not scope:
                s = s.parent
            how = "before its definition" if s is scope else "outside the region that defines it"
            raise self.err(f"use of value '%{operand.name}' {how} (line {operand.pos.line})", use_pos)

    def define_results(self, scope: Scope, stmt: Stmt, op: Operation) -> None:
        names = stmt.results
        if len(names) == 1 and len(op.results) > 1:
            base = names[0]
            for i, r in enumerate(op.results):
                self.define(scope, Operand(f"{base.name}#{i}", base.pos), r)
            return
        if len(names) != len(op.results):
            raise self.err(f"'{stmt.opname}' defines {len(op.results)} result(s) but {len(names)} name(s) are bound",
                           stmt.pos)
        for n, r in zip(names, op.results):
            self.define(scope, n, r)

    # ---- blocks ----------------------------------------------------------------------
    def build_block(self, stmts: list[Stmt], block: Block, scope: Scope) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.err(f"regions nested deeper than {MAX_DEPTH}", stmts[0].pos if stmts else Pos(1, 1))
        deferred: list[Stmt] = []
        for stmt in stmts:
            if stmt.opname in ("pto.tassign", "tassign") and stmt.symbol_call is not None:
                target = stmt.operands[0] if stmt.operands else None
                if target is not None and scope.lookup(target.name) is None:
                    deferred.append(stmt)
                    continue
            ops = self.build_stmt(stmt, scope)
            for op in ops:
                block.add_op(op)
            for d in list(deferred):
                if scope.lookup(d.operands[0].name) is not None:
                    for op in self.build_stmt(d, scope):
                        block.add_op(op)
                    deferred.remove(d)
        for d in deferred:
            raise self.undefined(d.operands[0])
        self.depth -= 1

    # ---- statements ------------------------------------------------------------------
    def build_stmt(self, stmt: Stmt, scope: Scope) -> list[Operation]:
        name = stmt.opname
        if not name.startswith(("pto.", "arith.", "scf.", "func.", "memref.", "builtin.", "vf.")) and name not in (
                "return", "module", "func"):
            name = "pto." + name
        try:
            ops = self._dispatch(name, stmt, scope)
        except _NotAnAttribute as e:
            pos = e.value.pos if isinstance(e.value, Operand) else stmt.pos
            what = f"SSA value %{e.value.name}" if isinstance(e.value, Operand) else repr(e.value)
            raise self.err(f"'{name}' takes an attribute here, not the {what}", pos) from None
        if ops and stmt.results and ops[-1].results:
            self.define_results(scope, stmt, ops[-1])
        elif stmt.results and not (ops and ops[-1].results):
            raise self.err(f"'{name}' has no results, but {len(stmt.results)} name(s) are bound", stmt.pos)
        return ops

    def _dispatch(self, name: str, stmt: Stmt, scope: Scope) -> list[Operation]:
        handler = SPECIAL.get(name)
        if handler is not None:
            ops = handler(self, stmt, scope)
        elif name in pto.TILE_OPS:
            ops = [self.tile_op(pto.TILE_OPS[name], stmt, scope)]
        elif name in pto.SYNC_OPS_BY_NAME:
            ops = [self.sync_op(pto.SYNC_OPS_BY_NAME[name], stmt, scope)]
        elif name in pto.GENERIC_OPS:
            ops = [self.generic_op(pto.GENERIC_OPS[name], stmt, scope)]
        elif name.startswith("arith."):
            ops = [self.arith_op(name, stmt, scope)]
        elif name.startswith("vf."):
            from pto_compiler import vf_builder

            ops = vf_builder.build_from_stmt(self, stmt, scope)
        else:
            known = (*pto.TILE_OPS, *pto.SYNC_OPS_BY_NAME, *pto.GENERIC_OPS)
            raise self.err(f"unknown operation '{name}'{did_you_mean(name, known)}", stmt.pos)
        return ops

    # ---- tile instructions -------------------------------------------------------------
    def tile_op(self, cls: type[pto.TileOp], stmt: Stmt, scope: Scope) -> Operation:
        attrs = dict(stmt.attrs)
        for k, v in stmt.kwargs.items():
            attrs[k] = _kwarg_attr(v)
        for operand in (stmt.ins or []) + stmt.operands:
            attrs.update(operand.attrs)
        segments = attrs.pop("operandSegmentSizes", None)
        if segments is not None and stmt.ins is None and not stmt.results:
            # MLIR generic form of a PTOAS DPS op: segment 1 is the destination.
            sizes = [int(x) for x in segments.get_values()]
            values = [self.value(scope, o, o.type.attr if o.type else None) for o in stmt.operands]
            if sum(sizes) != len(values) or len(sizes) < 2:
                raise self.err("operandSegmentSizes does not match the operands", stmt.pos)
            bounds = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
            groups = [values[bounds[i]:bounds[i + 1]] for i in range(len(sizes))]
            ins = groups[0] + [v for g in groups[2:] for v in g]
            return self.located(cls(ins, groups[1], [], attrs), stmt.pos)
        if stmt.ins is not None:
            ins = self.typed_group(stmt.ins, stmt.ins_types, scope, stmt)
            outs = self.typed_group(stmt.outs or [], stmt.outs_types, scope, stmt)
            result_types = [t.attr for t in stmt.out_types] if stmt.has_arrow else []
            op = cls(ins, outs, result_types, attrs)
            return self.located(op, stmt.pos)
        # L1 / synchronous form: `%d = OP %a, %b : sig`
        in_types, out_types = stmt.in_types, stmt.out_types
        n = len(stmt.operands)
        if not stmt.has_arrow:
            # a single type list: `: T` (every operand and the result) or `: f32, T` (texpands)
            if len(in_types) == 1:
                in_types, out_types = [in_types[0]] * n, [in_types[0]]
            elif len(in_types) == n + 1:
                in_types, out_types = in_types[:n], in_types[n:]
            elif in_types:
                raise self.err(f"{n} operands but {len(in_types)} types", stmt.pos)
        if in_types and len(in_types) != n:
            raise self.err(f"{n} operands but {len(in_types)} types", stmt.pos)
        ins = []
        for i, operand in enumerate(stmt.operands):
            t = in_types[i] if in_types else None
            ins.append(self.value(scope, operand, t.attr if t else None))
        if not out_types:
            if not stmt.results:
                op = cls(ins, [], [], attrs)
                return self.located(op, stmt.pos)
            raise self.err("missing result type (`-> !pto.tile<...>`)", stmt.pos)
        op = cls(ins, [], [t.attr for t in out_types], attrs)
        return self.located(op, stmt.pos)

    def typed_group(self, operands: list[Operand], types: list[TypeRef], scope: Scope, stmt: Stmt) -> list[SSAValue]:
        if types and len(types) != len(operands):
            raise self.err(f"{len(operands)} operands but {len(types)} types", stmt.pos)
        return [self.value(scope, o, types[i].attr if types else None) for i, o in enumerate(operands)]

    def sync_op(self, cls, stmt: Stmt, scope: Scope) -> Operation:
        args, operands = [], []
        items = list(stmt.brackets)
        for item in items:
            if isinstance(item, Operand):
                operands.append(self.value(scope, item))
            elif isinstance(item, Attribute):
                args.append(item)
            else:
                args.append(_kwarg_attr(item))
        for o in stmt.operands:
            operands.append(self.value(scope, o))
        return self.located(cls(args, operands, dict(stmt.attrs)), stmt.pos)

    def generic_op(self, cls, stmt: Stmt, scope: Scope) -> Operation:
        group = (stmt.ins or []) + (stmt.outs or [])
        group_types = stmt.ins_types + stmt.outs_types
        operands = [self.value(scope, o, o.type.attr if o.type else None) for o in stmt.operands]
        operands += self.typed_group(group, group_types, scope, stmt) if group else []
        operands += [self.value(scope, b) for b in stmt.brackets if isinstance(b, Operand)]
        attrs = dict(stmt.attrs)
        for k, v in stmt.kwargs.items():
            if isinstance(v, Operand):
                operands.append(self.value(scope, v))
            elif isinstance(v, list) and v and all(isinstance(x, Operand) for x in v):
                operands.extend(self.value(scope, x) for x in v)
            else:
                attrs[k] = _kwarg_attr(v)
        for o in stmt.operands:
            for idx in o.indices:
                if isinstance(idx, Operand):
                    operands.append(self.value(scope, idx))
        result_types: list[Attribute] = []
        if stmt.results:
            short = cls.name.split(".", 1)[1]
            if stmt.has_arrow:
                result_types = [t.attr for t in stmt.out_types]
            elif short in GENERIC_I64_RESULTS:
                result_types = [IntegerType(64)] * len(stmt.results)
            elif short == "subset" and stmt.in_types and isinstance(stmt.kwargs.get("sizes"), list):
                from pto_compiler.passes.tile_views import subset_type

                src_t = stmt.in_types[-1].attr
                rows, cols = _static_ints(self, stmt.kwargs["sizes"], stmt, "'pto.subset' sizes", count=2)
                if not isinstance(src_t, pto.TileLikeType):
                    raise self.err("'pto.subset' needs a tile source type", stmt.pos)
                try:
                    result_types = [subset_type(src_t, (rows, cols), [pto.constant_int(v) for v in operands[1:3]])]
                except VerifyException as e:
                    raise self.err(f"'pto.subset' sizes [{rows}, {cols}]: {e}", stmt.pos) from None
            elif stmt.in_types and (not operands or short in GENERIC_RESULT_FROM_SIGNATURE):
                result_types = [stmt.in_types[-1].attr]
            else:
                result_types = [IndexType()] * len(stmt.results)
        regions = []
        for body in stmt.regions:
            block = Block()
            self.build_block(body, block, Scope(scope))
            regions.append(Region(block))
        op = cls(operands, result_types, attrs, regions)
        return self.located(op, stmt.pos)

    # ---- arith -------------------------------------------------------------------------
    def arith_op(self, name: str, stmt: Stmt, scope: Scope) -> Operation:
        mnemonic = name.split(".", 1)[1]
        types = [t.attr for t in stmt.in_types]
        if mnemonic in ARITH_BINARY:
            if len(stmt.operands) != 2 or len(types) != 1:
                raise self.err(f"'{name}' expects `%a, %b : type`", stmt.pos)
            a, b = (self.value(scope, o, types[0]) for o in stmt.operands)
            return self.located(ARITH_BINARY[mnemonic](a, b), stmt.pos)
        if mnemonic in ARITH_CASTS:
            if len(stmt.operands) != 1 or len(types) != 1 or len(stmt.out_types) != 1:
                raise self.err(f"'{name}' expects `%x : A to B`", stmt.pos)
            x = self.value(scope, stmt.operands[0], types[0])
            return self.located(ARITH_CASTS[mnemonic](x, stmt.out_types[0].attr), stmt.pos)
        if mnemonic in ("cmpi", "cmpf"):
            if not stmt.words or len(stmt.operands) != 2 or len(types) != 1:
                raise self.err(f"'{name}' expects `PRED, %a, %b : type`", stmt.pos)
            a, b = (self.value(scope, o, types[0]) for o in stmt.operands)
            cls = arith.CmpiOp if mnemonic == "cmpi" else arith.CmpfOp
            try:
                op = cls(a, b, stmt.words[0])
            except (KeyError, ValueError, TypeError):
                raise self.err(f"unknown predicate '{stmt.words[0]}'", stmt.pos) from None
            return self.located(op, stmt.pos)
        if mnemonic == "select":
            if len(stmt.operands) != 3 or not types:
                raise self.err("'arith.select' expects `%c, %a, %b : type`", stmt.pos)
            c = self.value(scope, stmt.operands[0])
            a, b = (self.value(scope, o, types[-1]) for o in stmt.operands[1:])
            return self.located(arith.SelectOp(c, a, b), stmt.pos)
        raise self.err(f"unknown operation '{name}'", stmt.pos)


GENERIC_I64_RESULTS = {"get_block_idx", "get_block_num", "get_subblock_idx", "get_subblock_num"}
"""PTOAS's block-id queries return i64 (the corpus does i64 arithmetic on them)."""
GENERIC_RESULT_FROM_SIGNATURE = {"set_validshape"}
"""Ops written ``%r = pto.OP %src, ... : T`` whose one type is the result's."""


def _hint(name: str) -> str | None:
    if not name or name[0].isdigit():
        return None
    return name if name.replace("_", "a").isalnum() else None


def _kwarg_attr(v: Any) -> Attribute:
    if isinstance(v, Attribute):
        return v
    if isinstance(v, bool):
        return IntegerAttr(int(v), 1)
    if isinstance(v, int):
        return IntegerAttr(v, 64)
    if isinstance(v, float):
        return FloatAttr(v, 64)
    if isinstance(v, str):
        return StringAttr(v)
    if isinstance(v, list):
        return ArrayAttr([_kwarg_attr(x) for x in v])
    if v is None:
        return UnitAttr()
    raise _NotAnAttribute(v)


class _NotAnAttribute(Exception):
    """A keyword value that cannot be an attribute (an SSA value where a constant belongs);
    :meth:`Builder.build_stmt` turns it into a located diagnostic."""

    def __init__(self, value: Any):
        super().__init__(value)
        self.value = value


ARITH_BINARY = {
    "addi": arith.AddiOp, "subi": arith.SubiOp, "muli": arith.MuliOp, "divsi": arith.DivSIOp,
    "divui": arith.DivUIOp, "remsi": arith.RemSIOp, "remui": arith.RemUIOp, "andi": arith.AndIOp,
    "ori": arith.OrIOp, "xori": arith.XOrIOp, "shli": arith.ShLIOp, "shrsi": arith.ShRSIOp,
    "shrui": arith.ShRUIOp, "maxsi": arith.MaxSIOp, "minsi": arith.MinSIOp, "maxui": arith.MaxUIOp,
    "minui": arith.MinUIOp, "ceildivsi": arith.CeilDivSIOp, "floordivsi": arith.FloorDivSIOp,
    "ceildivui": arith.CeilDivUIOp, "addf": arith.AddfOp, "subf": arith.SubfOp, "mulf": arith.MulfOp,
    "divf": arith.DivfOp, "maximumf": arith.MaximumfOp, "minimumf": arith.MinimumfOp,
}
ARITH_CASTS = {
    "index_cast": arith.IndexCastOp, "index_castui": getattr(arith, "IndexCastUIOp", arith.IndexCastOp),
    "extsi": arith.ExtSIOp, "extui": arith.ExtUIOp, "trunci": arith.TruncIOp, "sitofp": arith.SIToFPOp,
    "uitofp": getattr(arith, "UIToFPOp", arith.SIToFPOp), "fptosi": arith.FPToSIOp, "extf": arith.ExtFOp,
    "truncf": arith.TruncFOp, "bitcast": getattr(arith, "BitcastOp", arith.IndexCastOp),
}


# ---- ops with their own syntax ----------------------------------------------------------


def _constant(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    lit = stmt.literal
    t = stmt.in_types[0].attr if stmt.in_types else None
    if isinstance(t, VectorType):
        from lark import Tree

        if not isinstance(lit, Tree):
            raise b.err("a vector constant needs dense<...>", stmt.pos)
        return [b.located(arith.ConstantOp(b.converter.dense(lit, t)), stmt.pos)]
    if isinstance(lit, bool) or t == IntegerType(1):
        value = IntegerAttr(int(bool(lit)), IntegerType(1))
    elif t is None:
        raise b.err("'arith.constant' needs a type (`: i32`, `: index`, ...)", stmt.pos)
    elif isinstance(t, (IntegerType, IndexType)):
        if not isinstance(lit, int):
            raise b.err(f"integer constant expected for {t}", stmt.pos)
        width = t.width.data if isinstance(t, IntegerType) else 64  # index: a 64-bit register
        lo, hi = -(1 << (width - 1)), (1 << width) - 1
        if not lo <= lit <= hi:
            raise b.err(f"constant {lit} does not fit in {t}", stmt.pos)
        if lit > (1 << (width - 1)) - 1:
            lit -= 1 << width
        value = IntegerAttr(lit, t)
    elif isinstance(t, (Float16Type, BFloat16Type, Float32Type, Float64Type)):
        if not isinstance(lit, (int, float)):
            raise b.err(f"float constant expected for {t}", stmt.pos)
        value = FloatAttr(float(lit), t)
    else:
        raise b.err(f"unsupported constant type {t}", stmt.pos)
    return [b.located(arith.ConstantOp(value), stmt.pos)]


def _func(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    arg_types = [t.attr for _, t in stmt.func_args]
    result_types = [t.attr for t in stmt.func_results]
    body_scope = Scope(None)  # isolated from above: only the arguments are visible
    region = None
    if stmt.regions:
        block = Block(arg_types=arg_types)
        with b.isolated(f"func.func @{stmt.symbol or 'kernel'}", stmt.regions[0]):
            for (operand, _), arg in zip(stmt.func_args, block.args):
                b.define(body_scope, operand, arg)
            b.build_block(stmt.regions[0], block, body_scope)
        if not block.ops or not block.last_op.has_trait(_is_terminator()):
            block.add_op(b.located(func.ReturnOp(), stmt.pos))
        region = Region(block)
    op = func.FuncOp(stmt.symbol or "kernel", (arg_types, result_types), region,
                     visibility=stmt.visibility)
    for k, v in stmt.func_attrs.items():
        op.attributes[k] = v
    return [b.located(op, stmt.pos)]


def defined_names(stmts: list[Stmt], names: dict[str, Pos] | None = None) -> dict[str, Pos]:
    """Every SSA name ``stmts`` define, in their regions too (results, loop variables, iter_args,
    block arguments), each at its first definition: what a use that cannot see one is told."""
    names = {} if names is None else names
    for stmt in stmts:
        defined = list(stmt.results)
        if stmt.for_header is not None:
            defined.append(stmt.for_header[0])
        defined += [name for name, _ in stmt.iter_args]
        defined += [name for args in stmt.region_args for name, _ in args]
        if stmt.opname.endswith("tgetval") and stmt.outs:
            defined += stmt.outs
        for operand in defined:
            names.setdefault(operand.name, operand.pos)
        if stmt.opname not in ("func.func", "func", "vf.func"):
            for region in stmt.regions:
                defined_names(region, names)
    return names


def _is_terminator():
    from xdsl.traits import IsTerminator

    return IsTerminator


def _return(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    types = stmt.in_types
    if types and len(types) != len(stmt.operands):
        raise b.err(f"{len(stmt.operands)} operands but {len(types)} types", stmt.pos)
    vals = [b.value(scope, o, types[i].attr if types else None) for i, o in enumerate(stmt.operands)]
    return [b.located(func.ReturnOp(*vals), stmt.pos)]


def _call(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    if stmt.symbol is None:
        raise b.err("'func.call' needs a callee `@name`", stmt.pos)
    types = stmt.in_types
    vals = [b.value(scope, o, types[i].attr if i < len(types) else None) for i, o in enumerate(stmt.operands)]
    return [b.located(func.CallOp(stmt.symbol, vals, [t.attr for t in stmt.out_types]), stmt.pos)]


def _yield(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    types = stmt.in_types
    vals = [b.value(scope, o, types[i].attr if i < len(types) else None) for i, o in enumerate(stmt.operands)]
    return [b.located(scf.YieldOp(*vals), stmt.pos)]


def _for(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    if stmt.for_header is None:
        raise b.err("'scf.for' expects `%i = %lb to %ub step %s`", stmt.pos)
    iv, lb, ub, step = stmt.for_header
    lbv, ubv, stepv = (b.value(scope, o) for o in (lb, ub, step))
    inits = [b.value(scope, init) for _, init in stmt.iter_args]
    result_types = [t.attr for t in stmt.out_types]
    if len(result_types) != len(inits):
        raise b.err(f"{len(inits)} iter_args but {len(result_types)} result types", stmt.pos)
    block = Block(arg_types=[lbv.type, *[v.type for v in inits]])
    body_scope = Scope(scope)
    b.define(body_scope, iv, block.args[0])
    for (name, _), arg in zip(stmt.iter_args, block.args[1:]):
        b.define(body_scope, name, arg)
    b.build_block(stmt.regions[0] if stmt.regions else [], block, body_scope)
    if not block.ops or not isinstance(block.last_op, scf.YieldOp):
        if inits:
            raise b.err("'scf.for' with iter_args must end its body with scf.yield", stmt.pos)
        block.add_op(scf.YieldOp())
    return [b.located(scf.ForOp(lbv, ubv, stepv, inits, Region(block)), stmt.pos)]


def _if(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    if len(stmt.operands) != 1:
        raise b.err("'scf.if' expects one i1 condition", stmt.pos)
    cond = b.value(scope, stmt.operands[0])
    result_types = [t.attr for t in stmt.out_types]
    regions = []
    for body in stmt.regions[:2]:
        block = Block()
        b.build_block(body, block, Scope(scope))
        if not block.ops or not isinstance(block.last_op, scf.YieldOp):
            if result_types:
                raise b.err("'scf.if' with results must end each branch with scf.yield", stmt.pos)
            block.add_op(scf.YieldOp())
        regions.append(Region(block))
    if len(regions) == 1:
        if result_types:
            raise b.err("'scf.if' with results needs an else branch", stmt.pos)
        regions.append(Region(Block([scf.YieldOp()])))
    return [b.located(scf.IfOp(cond, result_types, regions[0], regions[1]), stmt.pos)]


def _while(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    """``scf.while (%a = %init) : (T) -> (U) { ...; scf.condition(%c) %x : U } do { ^bb0(%y: U): ... }``."""
    inits = [b.value(scope, init) for _, init in stmt.iter_args]
    arg_types = [t.attr for t in stmt.in_types] or [v.type for v in inits]
    result_types = [t.attr for t in stmt.out_types]
    if len(arg_types) != len(inits) or len(stmt.regions) != 2:
        raise b.err("'scf.while' expects `(%a = %init, ...) : (T, ...) -> (U, ...) { ... } do { ... }`", stmt.pos)
    if arg_types != [v.type for v in inits]:
        raise b.err("'scf.while' argument types do not match the types of their initial values", stmt.pos)
    before = Block(arg_types=arg_types)
    before_scope = Scope(scope)
    for (name, _), arg in zip(stmt.iter_args, before.args):
        b.define(before_scope, name, arg)
    b.build_block(stmt.regions[0], before, before_scope)
    if not before.ops or not isinstance(before.last_op, scf.ConditionOp):
        raise b.err("'scf.while' must end its condition region with scf.condition", stmt.pos)
    if [v.type for v in before.last_op.args] != result_types:
        raise b.err("'scf.while' result types do not match what its scf.condition passes on", stmt.pos)
    labelled = stmt.region_args[0] if stmt.region_args else []
    if labelled and [t.attr for _, t in labelled] != result_types:
        raise b.err("'scf.while' do-region arguments do not match its result types", stmt.pos)
    after = Block(arg_types=result_types)
    after_scope = Scope(scope)
    for (name, _), arg in zip(labelled, after.args):
        b.define(after_scope, name, arg)
    b.build_block(stmt.regions[1], after, after_scope)
    if not after.ops or not isinstance(after.last_op, scf.YieldOp):
        if arg_types:
            raise b.err("'scf.while' must end its do region with scf.yield", stmt.pos)
        after.add_op(scf.YieldOp())
    return [b.located(scf.WhileOp(inits, result_types, Region(before), Region(after)), stmt.pos)]


def _condition(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    if not stmt.operands:
        raise b.err("'scf.condition' expects `(%cond) %a, ... : T, ...`", stmt.pos)
    types = stmt.in_types
    vals = [b.value(scope, o, types[i].attr if i < len(types) else None) for i, o in enumerate(stmt.operands[1:])]
    return [b.located(scf.ConditionOp(b.value(scope, stmt.operands[0]), *vals), stmt.pos)]


def _make_tensor_view(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    if len(stmt.operands) != 1 or "shape" not in stmt.kwargs or "strides" not in stmt.kwargs:
        raise b.err("'pto.make_tensor_view' expects `%ptr, shape = [...], strides = [...] : type`", stmt.pos)
    if not stmt.in_types:
        raise b.err("'pto.make_tensor_view' needs its result type", stmt.pos)
    ptr = b.value(scope, stmt.operands[0])
    shape = [b.value(scope, o) for o in _operand_list(b, stmt.kwargs["shape"], stmt)]
    strides = [b.value(scope, o) for o in _operand_list(b, stmt.kwargs["strides"], stmt)]
    attrs = {k: _kwarg_attr(v) for k, v in stmt.kwargs.items() if k not in ("shape", "strides")}
    attrs.update(stmt.attrs)
    return [b.located(pto.MakeTensorViewOp(ptr, shape, strides, stmt.in_types[-1].attr, attrs), stmt.pos)]


def _operand_list(b: Builder, v: Any, stmt: Stmt) -> list[Operand]:
    if isinstance(v, Operand):
        return [v]
    if not isinstance(v, list) or not all(isinstance(x, Operand) for x in v):
        raise b.err("expected a list of SSA values `[%a, %b]`", stmt.pos)
    return v


def _partition_view(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    if len(stmt.operands) != 1 or "offsets" not in stmt.kwargs or "sizes" not in stmt.kwargs:
        raise b.err("'pto.partition_view' expects `%tv, offsets = [...], sizes = [...] : A -> B`", stmt.pos)
    if not stmt.out_types:
        raise b.err("'pto.partition_view' needs `: source type -> result type`", stmt.pos)
    src = b.value(scope, stmt.operands[0], stmt.in_types[0].attr if stmt.in_types else None)
    offsets = [b.value(scope, o) for o in _operand_list(b, stmt.kwargs["offsets"], stmt)]
    sizes = [b.value(scope, o) for o in _operand_list(b, stmt.kwargs["sizes"], stmt)]
    attrs = {k: _kwarg_attr(v) for k, v in stmt.kwargs.items() if k not in ("offsets", "sizes")}
    attrs.update(stmt.attrs)
    return [b.located(pto.PartitionViewOp(src, offsets, sizes, stmt.out_types[-1].attr, attrs), stmt.pos)]


def _alloc_tile(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    if not stmt.in_types:
        raise b.err("'pto.alloc_tile' needs its type (`: !pto.tile_buf<...>`)", stmt.pos)
    vals = {}
    for key in ("addr", "valid_row", "valid_col"):
        if key in stmt.kwargs:
            o = stmt.kwargs[key]
            if not isinstance(o, Operand):
                raise b.err(f"'{key}' expects an SSA value", stmt.pos)
            vals[key] = b.value(scope, o)
    unknown = set(stmt.kwargs) - {"addr", "valid_row", "valid_col"}
    if unknown:
        raise b.err(f"'pto.alloc_tile' has no option '{sorted(unknown)[0]}'", stmt.pos)
    return [b.located(pto.AllocTileOp(stmt.in_types[-1].attr, **vals, attributes=dict(stmt.attrs)), stmt.pos)]


def _tassign(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    if stmt.symbol_call is not None:
        if len(stmt.operands) != 1:
            raise b.err("'pto.tassign' expects `%tile, @tile(ADDR)`", stmt.pos)
        tile = b.value(scope, stmt.operands[0])
        return [b.located(pto.TAssignOp(tile, stmt.symbol_call[1]), stmt.pos)]
    if stmt.ins is not None:
        operands, types = stmt.ins, stmt.ins_types
    else:
        operands, types = stmt.operands, stmt.in_types
    if len(operands) != 2:
        raise b.err("'pto.tassign' expects `%tile, %addr : T -> T` or `%tile, @tile(ADDR)`", stmt.pos)
    tile = b.value(scope, operands[0], types[0].attr if types else None)
    addr = b.value(scope, operands[1])
    rt = stmt.out_types[0].attr if stmt.out_types else (tile.type if stmt.results else None)
    return [b.located(pto.TAssignOp(tile, addr, rt, dict(stmt.attrs)), stmt.pos)]


def _memref_dealloc(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    from xdsl.dialects import memref  # only memref kernels pay its import

    if len(stmt.operands) != 1:
        raise b.err("'memref.dealloc' expects one memref", stmt.pos)
    return [b.located(memref.DeallocOp.get(b.value(scope, stmt.operands[0])), stmt.pos)]


def _reinterpret_cast(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    from xdsl.dialects import memref  # only memref kernels pay its import

    if len(stmt.operands) != 1 or len(stmt.out_types) != 1 or not stmt.in_types:
        raise b.err("'memref.reinterpret_cast' expects `%src to offset: [..], sizes: [..], strides: [..] : A to B`",
                    stmt.pos)
    src = b.value(scope, stmt.operands[0], stmt.in_types[0].attr)
    parts = {}
    for key in ("offset", "sizes", "strides"):
        vals = stmt.kwargs.get(key, [])
        vals = vals if isinstance(vals, list) else [vals]
        dyn, static = [], []
        for v in vals:
            if isinstance(v, Operand):
                value = b.value(scope, v)
                known = _constant_int(value)
                if known is None:
                    dyn.append(value)
                static.append(memref.DYNAMIC_INDEX if known is None else known)
            else:
                static += _static_ints(b, [v], stmt, f"'memref.reinterpret_cast' {key}")
        parts[key] = (dyn, static)
    op = memref.ReinterpretCastOp(src, parts["offset"][0], parts["sizes"][0], parts["strides"][0],
                                  parts["offset"][1], parts["sizes"][1], parts["strides"][1],
                                  stmt.out_types[0].attr)
    for k, v in stmt.attrs.items():
        op.attributes[k] = v
    return [b.located(op, stmt.pos)]


def _static_ints(b: Builder, values: list[Any], stmt: Stmt, what: str, count: int | None = None) -> list[int]:
    """The integers of a static list (``sizes = [16, 16]``), else a located error naming what is there."""
    if count is not None and len(values) != count:
        raise b.err(f"{what} takes {count} integers, got {len(values)}", stmt.pos)
    out = []
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool):
            shown = "true" if v is True else "false" if v is False else \
                v.data if isinstance(v, StringAttr) else f"%{v.name}" if isinstance(v, Operand) else \
                v.value.data if isinstance(v, (IntegerAttr, FloatAttr)) else v
            raise b.err(f"{what} takes integers, not '{shown}'", stmt.pos)
        out.append(v)
    return out


def _constant_int(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _memref_alloc(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    from xdsl.dialects import memref  # only memref kernels pay its import

    if not stmt.in_types or not isinstance(stmt.in_types[-1].attr, MemRefType):
        raise b.err("'memref.alloc' needs a memref result type", stmt.pos)
    dyn = [b.value(scope, o) for o in stmt.operands]
    t = stmt.in_types[-1].attr
    return [b.located(memref.AllocOp(dyn, [], t), stmt.pos)]


def _tgetval(b: Builder, stmt: Stmt, scope: Scope) -> list[Operation]:
    """``%v = pto.tgetval ins(%src, %i : T, index) outs : f32`` (PTOAS) or the ISA page's
    ``pto.tgetval ins(%src, %i : T, index) outs(%v : f32)``, whose ``outs`` names the result."""
    out = None
    if stmt.outs is not None:
        if stmt.results or len(stmt.outs) != 1 or len(stmt.outs_types) > 1:
            raise b.err("'pto.tgetval' expects `outs(%val : dtype)` or `%val = ... outs : dtype`", stmt.pos)
        out = stmt.outs[0]
        types = stmt.outs_types
    else:
        types = stmt.in_types
    ins = b.typed_group(stmt.ins or [], stmt.ins_types, scope, stmt)
    src_t = ins[0].type if ins else None
    if types:
        rtype = types[0].attr
    elif isinstance(src_t, pto.TileLikeType):
        rtype = src_t.element_type
    else:
        raise b.err("'pto.tgetval' needs its result type (`outs : dtype`)", stmt.pos)
    op = b.located(pto.GENERIC_OPS["pto.tgetval"](ins, [rtype], dict(stmt.attrs)), stmt.pos)
    if out is not None:
        b.define(scope, out, op.results[0])
    return [op]


SPECIAL = {
    "pto.tgetval": _tgetval,
    "arith.constant": _constant,
    "func.func": _func, "func": _func,
    "return": _return, "func.return": _return,
    "func.call": _call,
    "scf.yield": _yield, "scf.for": _for, "scf.if": _if, "scf.while": _while, "scf.condition": _condition,
    "pto.make_tensor_view": _make_tensor_view,
    "pto.partition_view": _partition_view,
    "pto.alloc_tile": _alloc_tile,
    "pto.tassign": _tassign,
    "memref.alloc": _memref_alloc,
    "memref.dealloc": _memref_dealloc,
    "memref.reinterpret_cast": _reinterpret_cast,
}


# ---------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------


def parse_module(text: str, filename: str = "<stdin>") -> ModuleOp:
    """PTO-AS text -> ``builtin.module`` with located ops. Raises PtocError."""
    from pto_compiler.syntax import parse_tree
    from pto_compiler.tree_to_stmts import to_stmts

    from pto_compiler.diagnostics import add_sources, quoting

    with quoting({filename: text}):
        tree = parse_tree(text, filename)
        top, module_attrs, converter = to_stmts(tree, filename, text)
        module = build_module(top, module_attrs, filename, converter)
    add_sources(module, {filename: text})
    return module


def build_module(top: list[Stmt], module_attrs: dict[str, Attribute], filename: str, converter=None) -> ModuleOp:
    b = Builder(filename)
    b.converter = converter
    top_level = ("func.func", "func", "vf.func")
    funcs = [s for s in top if s.opname in top_level]
    bare = [s for s in top if s.opname not in top_level]
    root = Scope()
    for s in funcs:
        for operand, _ in s.func_args:
            b.func_args.setdefault(operand.name, (s.symbol or "kernel", operand.pos))
    for s in bare:
        for operand in s.results:
            b.module_defs.setdefault(operand.name, operand.pos)
    ops: list[Operation] = []
    for s in funcs:
        ops.extend(b.build_stmt(s, root))
    if bare:
        ops.append(build_l1_kernel(b, bare, root, "kernel" if not funcs else "main"))
    seen: dict[str, Operation] = {}
    for op in ops:
        sym = op.attributes.get("sym_name") or op.properties.get("sym_name")
        if isinstance(sym, StringAttr):
            if sym.data in seen:
                _, line, _ = location_of(seen[sym.data])
                raise op_error(op, f"redefines @{sym.data} (first defined at line {line})")
            seen[sym.data] = op
    module = ModuleOp(ops)
    for k, v in module_attrs.items():
        module.attributes[k] = v
    return module


def build_l1_kernel(b: Builder, stmts: list[Stmt], root: Scope, name: str) -> Operation:
    """Bare statements -> ``func.func @kernel`` (free values -> arguments, unused results -> results)."""
    block = Block()
    b.l1_block = block
    b.implicit_args = []
    b.defs, b.body_defs = {}, defined_names(stmts)
    scope = Scope(root)
    b.build_block(stmts, block, scope)
    results = [r for op in block.ops for r in op.results if not r.uses and pto.is_tile(r.type)]
    ret = func.ReturnOp(*results)
    ret.location = b.loc(stmts[-1].pos)
    block.add_op(ret)
    b.implicit_args = None
    fop = func.FuncOp(name, ([a.type for a in block.args], [r.type for r in results]), Region(block))
    fop.attributes["pto.entry"] = UnitAttr()
    fop.location = b.loc(stmts[0].pos)
    return fop
