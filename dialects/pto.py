"""The ``pto`` dialect: tile types and one op class per PTO tile instruction.

One instruction, one place: each op class below carries its mnemonic, its operand
structure (through its family base class), its dtype set per target, its verifier
and its element function (``FN``) that the golden model (runtime/reference.py)
and the backends use.  The family base classes hold what a whole family shares
(TROWEXPAND* Mode 1 / Mode 2 rules, reduction shapes, ...).

Every tile op serves both IR levels, the way linalg ops take tensors or memrefs:

* L1 (SSA):  ``%d = pto.tadd %a, %b : (!pto.tile<..>, !pto.tile<..>) -> !pto.tile<..>``
* L2 (DPS):  ``pto.tadd ins(%a, %b : !pto.tile_buf<..>, ..) outs(%d : !pto.tile_buf<..>)``

Both are printed and parsed by :class:`TileOp` (xDSL custom syntax), so what
``ptoc --emit pto`` prints, ``ptoc-opt`` reads back.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    StringAttr,
)
from xdsl.ir import Attribute, Dialect, Operation, OpTraits, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    OpDef,
    IRDLOperation,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_region_def,
    var_result_def,
)
from xdsl.irdl.attributes import ParamAttrDef
from xdsl.irdl.operations import get_accessors_from_op_def
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.runtime_final import runtime_final

from pto_compiler.dialects.segments import decode_segments_once, init_groups


# --------------------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------------------

DTYPE_NAMES = ("f16", "bf16", "f32", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64")


def dtype_name(t: Attribute) -> str:
    """Short name of an element type: ``f32``, ``i16``, ``ui8``, ``bf16`` ... (i1 -> ``i1``)."""
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, BFloat16Type):
        return "bf16"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    if isinstance(t, IntegerType):
        prefix = "ui" if t.signedness.data == Signedness.UNSIGNED else "i"
        return f"{prefix}{t.width.data}"
    if isinstance(t, IndexType):
        return "index"
    return str(t)


def element_bytes(t: Attribute) -> int:
    if type(t).__name__.startswith("Float8"):
        return 1
    if isinstance(t, (Float16Type, BFloat16Type)):
        return 2
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, Float64Type):
        return 8
    if isinstance(t, IntegerType):
        return max(1, t.width.data // 8)
    raise VerifyException(f"{t} is not a tile element type")


def is_float(t: Attribute) -> bool:
    return isinstance(t, (Float16Type, BFloat16Type, Float32Type, Float64Type))


# dtype sets, named as the ISA pages group them
F16_F32 = frozenset({"f16", "f32"})
A2A3_ARITH = frozenset({"f16", "f32", "i16", "i32"})
A5_ARITH = A2A3_ARITH | {"ui16", "ui32", "bf16", "i8", "ui8"}
A5_ARITH64 = A5_ARITH | {"i64", "ui64"}
B8_B16_B32 = frozenset({"i8", "ui8", "i16", "ui16", "i32", "ui32", "f16", "bf16", "f32"})
ALL_DTYPES = frozenset(DTYPE_NAMES)
INT_DTYPES = frozenset(n for n in DTYPE_NAMES if n[0] in "iu")

# --------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------

DYNAMIC = -1
"""A valid row/col only known at run time (``?`` or ``-1`` in the source)."""

TILE_LOCS = ("vec", "mat", "left", "right", "acc", "bias", "scaling", "scalar")
BLAYOUTS = ("row_major", "col_major")
SLAYOUTS = ("none_box", "row_major", "col_major")
TILE_DEFAULTS = {"blayout": "row_major", "slayout": "none_box", "fractal": 512, "pad": 0, "compact": 0}
MAX_TILE_DIM = 1 << 20


def _dim(d: int) -> int:
    return DYNAMIC if d in (DYNAMIC_INDEX, -1) else d


def _dims_text(dims: Sequence[int]) -> str:
    return "x".join("?" if d == DYNAMIC else str(d) for d in dims)


class TileLikeType(ParametrizedAttribute, TypeAttribute):
    """Shared parameters of ``!pto.tile`` (L1 value) and ``!pto.tile_buf`` (L2 buffer).

    Printed as ``<16x64xf32[, loc=..][, valid=RxC][, blayout=..][, slayout=..][, fractal=..][, pad=..][, compact=..]>``
    (tile_buf puts the loc first, as PTOAS's compact form does); only non-default keys are printed.
    """

    loc: StringAttr
    element_type: Attribute
    shape: ArrayAttr[IntAttr]
    valid: ArrayAttr[IntAttr]
    blayout: StringAttr
    slayout: StringAttr
    fractal: IntAttr
    pad: IntAttr
    compact: IntAttr

    LOC_FIRST: ClassVar[bool] = False

    def __init__(self, element_type: Attribute, shape: Sequence[int], *, loc: str = "vec",
                 valid: Sequence[int] | None = None, blayout: str = "row_major",
                 slayout: str = "none_box", fractal: int = 512, pad: int = 0, compact: int = 0):
        valid = shape if valid is None else valid
        super().__init__(StringAttr(loc), element_type, ArrayAttr(IntAttr(d) for d in shape),
                         ArrayAttr(IntAttr(_dim(d)) for d in valid), StringAttr(blayout),
                         StringAttr(slayout), IntAttr(fractal), IntAttr(pad), IntAttr(compact))

    # ---- convenient views -------------------------------------------------------
    @property
    def rows(self) -> int:
        return self.shape.data[0].data

    @property
    def cols(self) -> int:
        return self.shape.data[1].data

    @property
    def valid_row(self) -> int:
        return self.valid.data[0].data

    @property
    def valid_col(self) -> int:
        return self.valid.data[1].data

    @property
    def valid_shape(self) -> tuple[int, int]:
        return (self.valid_row, self.valid_col)

    @property
    def is_row_major(self) -> bool:
        return self.blayout.data == "row_major"

    @property
    def dtype(self) -> str:
        return dtype_name(self.element_type)

    @property
    def elem_bytes(self) -> int:
        return element_bytes(self.element_type)

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.elem_bytes

    def with_valid(self, valid: Sequence[int]) -> TileLikeType:
        return type(self)(self.element_type, [self.rows, self.cols], loc=self.loc.data, valid=valid,
                          **self._keys())

    def _keys(self) -> dict:
        return {"blayout": self.blayout.data, "slayout": self.slayout.data, "fractal": self.fractal.data,
                "pad": self.pad.data, "compact": self.compact.data}

    def verify(self) -> None:
        if len(self.shape.data) != 2 or len(self.valid.data) != 2:
            raise VerifyException("a tile has exactly two dimensions (rows x cols)")
        for d in (self.rows, self.cols):
            if d <= 0 or d > MAX_TILE_DIM:
                raise VerifyException(f"tile dimension {d} is out of range 1..{MAX_TILE_DIM}")
        for v, s in zip((self.valid_row, self.valid_col), (self.rows, self.cols)):
            if v != DYNAMIC and not 0 <= v <= s:
                raise VerifyException(
                    f"valid region {_dims_text(self.valid_shape)} exceeds tile shape {self.rows}x{self.cols}")
        if self.loc.data not in TILE_LOCS:
            raise VerifyException(f"unknown tile location '{self.loc.data}' (expected one of {', '.join(TILE_LOCS)})")
        if self.blayout.data not in BLAYOUTS:
            raise VerifyException(f"unknown blayout '{self.blayout.data}' (expected row_major or col_major)")
        if self.slayout.data not in SLAYOUTS:
            raise VerifyException(f"unknown slayout '{self.slayout.data}'")
        if not 0 <= self.pad.data <= 3:
            raise VerifyException(f"pad must be 0..3 (Null, Zero, Max, Min), got {self.pad.data}")
        element_bytes(self.element_type)

    # ---- syntax -----------------------------------------------------------------
    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        keys: dict[str, object] = {}
        loc = "vec"
        with parser.in_angle_brackets():
            if cls.LOC_FIRST:  # tile_buf starts with its location: `<vec, 16x16xf32, ...>`
                loc = parser.parse_identifier()
                parser.parse_punctuation(",")
            shape, elt = parser.parse_ranked_shape()
            while parser.parse_optional_punctuation(","):
                pos = parser.pos
                key = parser.parse_identifier()
                parser.parse_punctuation("=")
                if key in keys:
                    parser.raise_error(f"duplicate tile key '{key}'", pos, parser.pos)
                if key == "valid":
                    keys[key] = [_dim(d) for d in parser.parse_dimension_list()]
                elif key in ("loc", "blayout", "slayout") and not (key == "loc" and cls.LOC_FIRST):
                    keys[key] = parser.parse_identifier()
                elif key in ("fractal", "pad", "compact"):
                    keys[key] = parser.parse_integer()
                else:
                    parser.raise_error(f"unknown tile key '{key}'", pos, parser.pos)
        loc = str(keys.pop("loc", loc))
        return list(cls(elt, shape, loc=loc, **keys).parameters)  # type: ignore[arg-type]

    def print_parameters(self, printer: Printer) -> None:
        parts = []
        if self.LOC_FIRST:
            parts.append(self.loc.data)
        head = _dims_text([self.rows, self.cols]) + "x"
        printer.print_string("<")
        if parts:
            printer.print_string(parts[0] + ", ")
        printer.print_string(head)
        printer.print_attribute(self.element_type)
        if not self.LOC_FIRST and self.loc.data != "vec":
            printer.print_string(f", loc={self.loc.data}")
        if self.valid_shape != (self.rows, self.cols):
            printer.print_string(f", valid={_dims_text(self.valid_shape)}")
        for key, value in self._keys().items():
            if value != TILE_DEFAULTS[key]:
                printer.print_string(f", {key}={value}")
        printer.print_string(">")


@irdl_attr_definition
class TileType(TileLikeType):
    """``!pto.tile<16x64xf32>``: an L1 tile value (no buffer yet)."""

    name = "pto.tile"


@irdl_attr_definition
class TileBufType(TileLikeType):
    """``!pto.tile_buf<vec, 16x64xf32, valid=?x?>``: an L2 tile buffer in UB (or another location)."""

    name = "pto.tile_buf"
    LOC_FIRST: ClassVar[bool] = True


def _compare_by_parameters(*classes: type[ParametrizedAttribute]) -> None:
    """The dataclass ``__eq__`` irdl makes for a subclass sees only the subclass's own fields;
    these types declare theirs on a shared base, so compare the parameter tuples instead (after
    identity: the front end makes one object per type text, and verifiers compare types per op)."""
    for cls in classes:
        cls.__eq__ = lambda self, other: self is other or (type(self) is type(other)
                                                           and self.parameters == other.parameters)
        cls.__hash__ = lambda self: hash((type(self), self.parameters))


_compare_by_parameters(TileType, TileBufType)


def is_tile(t: Attribute) -> bool:
    return isinstance(t, TileLikeType)


class _ShapedViewType(ParametrizedAttribute, TypeAttribute):
    """``<?x?xf32>``-style GM view types; ``?`` dims print and parse as in MLIR."""

    shape: ArrayAttr[IntAttr]
    element_type: Attribute

    def __init__(self, shape: Sequence[int], element_type: Attribute):
        super().__init__(ArrayAttr(IntAttr(_dim(d)) for d in shape), element_type)

    @property
    def dims(self) -> list[int]:
        return [d.data for d in self.shape.data]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            shape, elt = parser.parse_ranked_shape()
        return [ArrayAttr(IntAttr(_dim(d)) for d in shape), elt]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + (_dims_text(self.dims) + "x" if self.dims else ""))
        printer.print_attribute(self.element_type)
        printer.print_string(">")


@irdl_attr_definition
class TensorViewType(_ShapedViewType):
    name = "pto.tensor_view"


@irdl_attr_definition
class PartitionTensorViewType(_ShapedViewType):
    name = "pto.partition_tensor_view"


_compare_by_parameters(TensorViewType, PartitionTensorViewType)


@irdl_attr_definition
class PtrType(ParametrizedAttribute, TypeAttribute):
    """``!pto.ptr<f32>``: a GM pointer (a kernel argument)."""

    name = "pto.ptr"
    element_type: Attribute
    space: StringAttr

    def __init__(self, element_type: Attribute, space: str = "gm"):
        super().__init__(element_type, StringAttr(space))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            elt = parser.parse_type()
            space = "gm"
            if parser.parse_optional_punctuation(","):
                space = parser.parse_identifier()
        return [elt, StringAttr(space)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.element_type)
        if self.space.data != "gm":
            printer.print_string(f", {self.space.data}")
        printer.print_string(">")


class _RawBodyMixin:
    """Keeps the text between ``<`` and ``>`` verbatim (enum-like and opaque pto attributes/types)."""

    body: StringAttr

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        tok = parser._current_token
        if tok.text == "<":
            return [StringAttr(parser._parse_dialect_symbol_body().strip())]
        content = parser.lexer.input.content
        kind = cls.name.split(".", 1)[1]
        opaque = re.search(r"[#!]pto\s*<\s*" + re.escape(kind) + r"$", content[: tok.span.start].rstrip())
        if not opaque or tok.text == ">":  # `!pto.pipe` with no body, or `#pto<name>`
            return [StringAttr("")]
        # opaque form `#pto<name BODY>`: the caller consumes the closing `>`
        start = tok.span.start
        end = parser._raw_scan_balanced(start)
        parser.lexer.pos = end
        parser._parser_state.current_token = parser.lexer.lex()
        return [StringAttr(parser.lexer.input.content[start:end].strip())]

    def print_parameters(self, printer: Printer) -> None:
        if self.body.data or self.ALWAYS_BRACKETS:
            printer.print_string(f"<{self.body.data}>")

    ALWAYS_BRACKETS: ClassVar[bool] = True


@functools.cache
def _raw_base(is_type: bool) -> tuple[type[ParametrizedAttribute], tuple]:
    """The frozen dataclass every raw attribute (or type) class derives from, and its parameters."""
    bases = (_RawBodyMixin, ParametrizedAttribute) + ((TypeAttribute,) if is_type else ())
    base = dataclasses.dataclass(frozen=True, init=False)(
        type("RawType" if is_type else "RawAttr", bases, {"__annotations__": {"body": StringAttr}}))
    params = ParamAttrDef.from_pyrdl(type("X", (base,), {"name": "pto.x"})).parameters
    return base, params


def _raw_attr(attr_name: str, *, is_type: bool = False) -> type[ParametrizedAttribute]:
    """``irdl_attr_definition`` of the class of ``#pto.<attr_name><...>`` (``!pto.`` with ``is_type``),
    but the dataclass methods (a third of this module's import for 36 classes) are those of one base."""
    base, params = _raw_base(is_type)
    cls_name = "".join(p.capitalize() for p in attr_name.replace(".", "_").split("_")) + ("Type" if is_type else "Attr")
    cls = type(cls_name, (base,), {"name": f"pto.{attr_name}", "ALWAYS_BRACKETS": not is_type,
                                   "__doc__": f"``{'!' if is_type else '#'}pto.{attr_name}<...>`` kept verbatim."})
    attr_def = ParamAttrDef(cls.name, params)
    cls.get_irdl_definition = classmethod(lambda _: attr_def)
    return runtime_final(cls)


RAW_ATTR_NAMES = (
    "address_space", "layout", "kernel_kind", "sync_op_type", "pipe_event_type", "pipe", "event",
    "tile_buf_config", "acc_to_vec_mode", "slayout", "blayout", "pad_value", "compact_mode", "mask_pattern",
    "round_mode", "cmp", "saturation_mode", "st_phase", "atomic_type", "relu_pre_mode", "inferred_layout",
    "device", "pad_mode", "cmp_mode", "fractal", "quant_type",
    "gather_oob", "scatter_atomic_op", "scatter_oob", "scatter_conflict", "coalesce",
)
RAW_ATTRS = {n: _raw_attr(n) for n in RAW_ATTR_NAMES}
RAW_TYPE_NAMES = ("async_session", "async_event", "eventid_array", "pipe", "event", "mask", "vreg", "memref", "global",
                  "tile_view")
RAW_TYPES = {n: _raw_attr(n, is_type=True) for n in RAW_TYPE_NAMES}


@functools.cache
def raw_attr(kind: str, body: str) -> ParametrizedAttribute:
    """``#pto.<kind><body>``, e.g. ``raw_attr("pipe", "PIPE_V")``: one (immutable) attribute per
    word, shared by every sync op that names it."""
    return RAW_ATTRS[kind](StringAttr(body))


def raw_type(kind: str, body: str = "") -> ParametrizedAttribute:
    return RAW_TYPES[kind](StringAttr(body))


# --------------------------------------------------------------------------------------
# Op syntax shared by every tile op
# --------------------------------------------------------------------------------------


def _print_operands_with_types(printer: Printer, values: Sequence[SSAValue]) -> None:
    printer.print_list(values, printer.print_operand)
    if values:
        printer.print_string(" : ")
        printer.print_list([v.type for v in values], printer.print_attribute)


def _parse_group(parser: Parser) -> tuple[list[UnresolvedOperand], list[Attribute]]:
    """``(%a, %b : T, U)`` -> unresolved operands and their types."""
    parser.parse_punctuation("(")
    operands: list[UnresolvedOperand] = []
    types: list[Attribute] = []
    if parser.parse_optional_punctuation(")"):
        return operands, types
    operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    parser.parse_punctuation(")")
    return operands, types


def _resolve(parser: Parser, operands, types, pos) -> list[SSAValue]:
    if len(operands) != len(types):
        parser.raise_error(f"{len(operands)} operands but {len(types)} types", pos, parser.pos)
    return [parser.resolve_operand(o, t) for o, t in zip(operands, types)]


@functools.cache
def _plain_groups(cls) -> bool:
    """Is ``cls`` built from exactly TileOp's groups (``ins``, ``outs``, ``res``, ``regs``)?"""
    d = cls.get_irdl_definition()
    return ([n for n, _ in d.operands], [n for n, _ in d.results], [n for n, _ in d.regions], list(d.properties),
            list(d.attributes), d.successors) == (["ins", "outs"], ["res"], ["regs"], ["operandSegmentSizes"], [], [])


_OP_DEFS: dict[type, OpDef] = {}
"""The OpDef of each base that op classes only name (:func:`_named_op`), made once: xDSL's
``OpDef.from_pyrdl`` reads the same fields of every such class (a third of this module's import)."""


def _named_op(name: str, base: type[IRDLOperation], **ns) -> type[IRDLOperation]:
    """``irdl_op_definition`` of the op class ``pto.<name>`` that adds to ``base`` only its doc and
    upper-case class constants (``ns``): base's OpDef under the new name, its own traits object."""
    cls_name = "".join(p.capitalize() for p in name.replace(".", "_").split("_")) + "Op"
    cls = type(cls_name, (base,), {"name": f"pto.{name}", **ns})
    if not all(k.isupper() or k in ("__doc__", "__annotations__") for k in ns):
        return irdl_op_definition(cls)
    template = _OP_DEFS.get(base)
    if template is None:
        op_def = _OP_DEFS[base] = OpDef.from_pyrdl(cls)
    else:
        op_def = dataclasses.replace(template, name=cls.name, traits=OpTraits(template.traits.gen_traits))
    for key, value in get_accessors_from_op_def(op_def, getattr(cls, "verify_", None)).items():
        setattr(cls, key, value)
    return cls


class TileOp(IRDLOperation):
    """Base of every PTO tile instruction: operands in ``ins``, DPS destinations in ``outs``, L1 results.

    Class-level facts that subclasses set:

    * ``dtypes``: ``{"a2a3": set, "ascend950": set}`` of element type names; ``None`` = not checked.
    * ``FN``: the name of the element function (NumPy, runtime/elementwise.py) the golden model applies.
    * ``HAS_SEMANTICS``: False for ops ptoc parses and verifies but cannot run.
    """

    ins = var_operand_def()
    outs = var_operand_def()
    res = var_result_def()
    regs = var_region_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    DTYPES: ClassVar[dict[str, frozenset[str]] | None] = None
    HAS_SEMANTICS: ClassVar[bool] = False
    FN: ClassVar[str | None] = None
    """The name of the op's element function in ``runtime/elementwise.py``, exact per dtype (the
    dialect names it; the runtime owns it): ``fn(a, b)`` for the binary, tile-scalar and
    expand-binary families (``fn(s_i, x)`` when src0 is the expanded operand) and the pair
    reduction; ``fn(x)`` for unary ops; ``fn(x, axis)`` for reductions; ``fn(x, dtype, mode)`` for
    TCVT.  None for pure data movement (tload, tstore, tmov, texpands, trowexpand, tcolexpand) and
    for ops without semantics."""
    FAMILY: ClassVar[str] = "other"
    A2A3_VOP: ClassVar[str | None] = None
    """The a2a3 repeat-vector instruction the op lowers to (its main one)."""
    READS_DST: ClassVar[bool] = False
    """The op reads its ``outs`` tile too (TAXPY: dst = s * src + dst)."""
    TMP_AT: ClassVar[int | None] = None
    """Where the op's tmp tile stands in ``ins`` when its family does not say (TPOW, TPOWS)."""
    BY_SCALAR: ClassVar[int | None] = None
    """A unary op computed as its tile-scalar instruction with this scalar on both targets
    (TNEG: ``vmuls``/``vf.muls`` by -1, exact: a sign flip for floats, wrapping for ints)."""

    def __init__(self, ins: Sequence[SSAValue] = (), outs: Sequence[SSAValue] = (),
                 result_types: Sequence[Attribute] = (), attributes: dict[str, Attribute] | None = None,
                 regions=()):
        if regions or not _plain_groups(type(self)):
            super().__init__(operands=[list(ins), list(outs)], result_types=[list(result_types)],
                             attributes=attributes or {}, regions=[list(regions)])
            return
        init_groups(self, (ins, outs), result_types, attributes)

    # ---- the operand view the verifiers and the lowering use ---------------------------
    @property
    def is_dps(self) -> bool:
        return len(self.outs) > 0

    @property
    def dst_type(self) -> TileLikeType | None:
        if self.outs:
            t = self.outs[0].type
        elif self.res:
            t = self.res[0].type
        else:
            return None
        return t if isinstance(t, TileLikeType) else None

    @property
    def dst(self) -> SSAValue | None:
        return self.outs[0] if self.outs else (self.res[0] if self.res else None)

    def tile_ins(self) -> list[SSAValue]:
        return [v for v in self.ins if isinstance(v.type, TileLikeType)]

    def scalar_ins(self) -> list[SSAValue]:
        return [v for v in self.ins if not isinstance(v.type, TileLikeType)]

    # ---- syntax -------------------------------------------------------------------
    def print(self, printer: Printer) -> None:
        attrs = {k: v for k, v in self.attributes.items()}
        if self.outs or not self.res:
            printer.print_string(" ins(")
            _print_operands_with_types(printer, self.ins)
            printer.print_string(")")
            if self.outs:
                printer.print_string(" outs(")
                _print_operands_with_types(printer, self.outs)
                printer.print_string(")")
            if self.res:
                printer.print_string(" -> ")
                printer.print_list([r.type for r in self.res], printer.print_attribute)
        else:
            if self.ins:
                printer.print_string(" ")
                printer.print_list(self.ins, printer.print_operand)
        if attrs:
            printer.print_string(" ")
            printer.print_attr_dict(attrs)
        if not (self.outs or not self.res):
            printer.print_string(" : (")
            printer.print_list([v.type for v in self.ins], printer.print_attribute)
            printer.print_string(") -> ")
            types = [r.type for r in self.res]
            if len(types) == 1:
                printer.print_attribute(types[0])
            else:
                printer.print_string("(")
                printer.print_list(types, printer.print_attribute)
                printer.print_string(")")
        for region in self.regs:
            printer.print_string(" ")
            printer.print_region(region)

    @classmethod
    def parse(cls, parser: Parser) -> TileOp:
        pos = parser.pos
        if parser.parse_optional_keyword("ins") is not None:
            ops, tys = _parse_group(parser)
            ins = _resolve(parser, ops, tys, pos)
            outs: list[SSAValue] = []
            if parser.parse_optional_keyword("outs") is not None:
                pos = parser.pos
                ops, tys = _parse_group(parser)
                outs = _resolve(parser, ops, tys, pos)
            results: list[Attribute] = []
            if parser.parse_optional_punctuation("->"):
                results = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            attrs = parser.parse_optional_attr_dict()
        else:
            operands = []
            if parser._current_token.text.startswith("%"):
                operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
            attrs = parser.parse_optional_attr_dict()
            parser.parse_punctuation(":")
            fn_pos = parser.pos
            in_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
            parser.parse_punctuation("->")
            if parser._current_token.text == "(":
                results = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
            else:
                results = [parser.parse_type()]
            ins = _resolve(parser, operands, in_types, fn_pos)
            outs = []
        regions = []
        while parser._current_token.text == "{":
            regions.append(parser.parse_region())
        return cls(ins, outs, results, attrs, regions)

    # ---- verification -----------------------------------------------------------------
    def verify_(self) -> None:
        check_rules(self)
        if any(isinstance(v.type, MemRefType) for v in (*self.ins, *self.outs, *self.res)):
            return  # a lowered (memref) form of the corpus: parsed and type-checked by xDSL, not run
        if self.outs and self.res and self.FAMILY != "other":
            raise VerifyException("a tile op takes either `outs` (L2) or results (L1), not both")
        if self.outs:
            for v in self.outs:
                if isinstance(v.type, TileType):
                    raise VerifyException("DPS `outs` must be !pto.tile_buf buffers, not !pto.tile values")
        self.verify_family()

    def verify_family(self) -> None:
        """Constraints from the op's ISA page; overridden per family."""

    def check_dtype_for_target(self, target_name: str) -> None:
        """The per-target dtype set (run by pto-verify-target, not by verify_)."""
        target_rule = TARGET_RULES.get(self.name)
        if target_rule is not None:
            target_rule(self, target_name)
        if self.DTYPES is None:
            return
        t = self.dst_type or (self.tile_ins()[0].type if self.tile_ins() else None)
        if not isinstance(t, TileLikeType):
            return
        allowed = self.DTYPES.get(target_name, frozenset())
        if t.dtype not in allowed:
            names = ", ".join(sorted(allowed)) or "none"
            raise VerifyException(
                f"element type {t.dtype} is not supported on {target_name} (supported: {names})")


# ---- small verifier helpers (messages name the rule) ------------------------------


def _tiles(op: TileOp, n: int, what: str) -> list[TileLikeType]:
    tiles = [v.type for v in op.ins]
    if len(tiles) < n or not all(isinstance(t, TileLikeType) for t in tiles[:n]):
        raise VerifyException(f"expects {what}")
    return tiles  # type: ignore[return-value]


def _need_dst(op: TileOp) -> TileLikeType:
    dst = op.dst_type
    if dst is None:
        raise VerifyException("expects one destination tile (an `outs` tile_buf or an L1 result)")
    if len(op.outs) + len(op.res) != 1:
        raise VerifyException("expects exactly one destination tile")
    return dst


def _same_dtype(*types: TileLikeType, rule: str = "dst and src element types must match") -> None:
    first = types[0].element_type
    if any(t.element_type != first for t in types[1:]):
        names = ", ".join(t.dtype for t in types)
        raise VerifyException(f"{rule} (got {names})")


def _known(*dims: int) -> bool:
    return all(d != DYNAMIC for d in dims)


def _may_equal(a: Sequence[int], b: Sequence[int]) -> bool:
    """Valid shapes a and b can be equal at run time: every dim known on both sides is equal."""
    return all(x == y or DYNAMIC in (x, y) for x, y in zip(a, b))


def _same_valid(a: TileLikeType, b: TileLikeType, rule: str) -> None:
    if _known(*a.valid_shape, *b.valid_shape) and a.valid_shape != b.valid_shape:
        raise VerifyException(f"{rule} ({_dims_text(a.valid_shape)} vs {_dims_text(b.valid_shape)})")


def _row_major(t: TileLikeType, who: str) -> None:
    if not t.is_row_major:
        raise VerifyException(f"{who} must be RowMajor (blayout=row_major)")


# --------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------


class ElementwiseBinaryOp(TileOp):
    """``dst = fn(src0, src1)`` over dst's valid region; no implicit broadcast."""

    FAMILY: ClassVar[str] = "binary"
    HAS_SEMANTICS: ClassVar[bool] = True
    TMP_OK: ClassVar[bool] = False
    """The op takes an optional third ``ins`` operand, a tmp tile (TREM): the lowerings need none."""

    def verify_family(self) -> None:
        dst = _need_dst(self)
        a, b = _tiles(self, 2, "two source tiles")[:2]
        if len(self.ins) != 2 and not (self.TMP_OK and len(self.ins) == 3 and is_tile(self.ins[2].type)):
            raise VerifyException(f"expects ins(src0, src1{'[, tmp]' if self.TMP_OK else ''}), "
                                  f"got {len(self.ins)} operands")
        _same_dtype(dst, a, b, rule="dst, src0 and src1 must have the same element type")
        _same_valid(a, dst, "src0 valid shape must equal dst valid shape (no implicit broadcast)")
        _same_valid(b, dst, "src1 valid shape must equal dst valid shape (no implicit broadcast)")
        for t, who in ((dst, "dst"), (a, "src0"), (b, "src1")):
            _row_major(t, who)


def partial_regions(dst: tuple[int, int], src0: tuple[int, int], src1: tuple[int, int]) -> tuple[int, tuple[int, int]] | None:
    """TPARTADD.md's pattern for static valid shapes: (index of the source whose valid region equals
    dst's, the other source's valid region, inside dst's), or None when no source equals dst's or
    the other exceeds it (A2A3 asserts; A5 runs only such patterns)."""
    for full, other in ((0, src1), (1, src0)):
        if (src0, src1)[full] == dst and other[0] <= dst[0] and other[1] <= dst[1]:
            return full, other
    return None


class PartialBinaryOp(TileOp):
    """TPARTADD/TPARTMUL/TPARTMAX/TPARTMIN over dst's valid region: ``fn(src0, src1)`` where both
    sources are valid, the one valid source elsewhere; one source's valid region equal to dst's and
    the other's inside it (:func:`partial_regions`), checked here for static valid shapes and by the
    golden model at run time otherwise."""

    FAMILY: ClassVar[str] = "part"
    HAS_SEMANTICS: ClassVar[bool] = True

    def part_split(self) -> tuple[int, tuple[int, int]]:
        """(the source valid on all of dst's valid region, the valid region where fn applies)."""
        dst, a, b = (self.dst_type, self.ins[0].type, self.ins[1].type)
        found = partial_regions(dst.valid_shape, a.valid_shape, b.valid_shape)
        assert found is not None, "verified"
        return found

    def verify_family(self) -> None:
        dst, a, b = _row_major_pair(self)
        if not _known(*dst.valid_shape, *a.valid_shape, *b.valid_shape):
            return
        if partial_regions(dst.valid_shape, a.valid_shape, b.valid_shape) is None and 0 not in dst.valid_shape:
            raise VerifyException(
                "needs one source's valid region equal to dst's and the other's no larger in rows and cols "
                f"(TPARTADD.md: A2A3 asserts otherwise, A5 runs no other pattern; got src0 "
                f"{_dims_text(a.valid_shape)}, src1 {_dims_text(b.valid_shape)}, dst {_dims_text(dst.valid_shape)})")


PART_ARG_INDEX = {"f16": ("i16", "ui16", "i32", "ui32"), "f32": ("i32", "ui32")}
"""TPARTARGMAX.md: the index types of each value type (a static_assert on A2A3; A5 lists int16..uint32)."""


class PartialArgOp(TileOp):
    """TPARTARGMAX/TPARTARGMIN ``ins(src0Val, src1Val, src0Idx, src1Idx) outs(dstVal, dstIdx)``
    (TPARTARGMAX.md, TPARTARGMIN.md, pto-isa @3186c38): over dst's valid region, where both sources
    are valid ``(src0Val, src0Idx)`` if ``src0Val > src1Val`` (TPARTARGMIN: ``<``), else
    ``(src1Val, src1Idx)`` -- ties go to src1, as the pages' second case (``src1Val >= src0Val``)
    and include/pto/cpu/TPartArgMax.hpp; include/pto/npu/a5/TPartArgBinOps.hpp sends ties to src0
    (``vcmp_gt(src1, src0)``), and the page wins.  A NaN value satisfies neither of the pages'
    cases; ptoc takes src1 then, as the CPU simulator's if/else does (the A5 header takes src0).
    Where only one source is valid: its value and index.  Static valid shapes, one source pair's
    valid region equal to dst's and the other's inside it (:func:`partial_regions`); each value
    tile's valid region equals its index tile's: checked here for static valid shapes and by the
    golden model at run time otherwise."""

    FAMILY: ClassVar[str] = "partarg"
    HAS_SEMANTICS: ClassVar[bool] = True
    IS_MAX: ClassVar[bool] = True

    def verify_family(self) -> None:
        if len(self.ins) != 4 or len(self.outs) + len(self.res) != 2:
            raise VerifyException("expects ins(src0Val, src1Val, src0Idx, src1Idx) and two destinations "
                                  f"(dstVal, dstIdx), got {len(self.ins)} operands")
        v0, v1, i0, i1 = _tiles(self, 4, "four source tiles")
        dv, di = (v.type for v in (self.outs or self.res))
        if not all(is_tile(t) for t in (dv, di)):
            raise VerifyException("expects two destination tiles (dstVal, dstIdx)")
        _same_dtype(dv, v0, v1, rule="dstVal, src0Val and src1Val must have the same element type")
        _same_dtype(di, i0, i1, rule="dstIdx, src0Idx and src1Idx must have the same element type")
        if di.dtype not in PART_ARG_INDEX["f16"]:
            raise VerifyException(f"the indices must be i16, ui16, i32 or ui32, got {di.dtype}")
        for t, who in ((v0, "src0Val"), (v1, "src1Val"), (i0, "src0Idx"), (i1, "src1Idx"), (dv, "dstVal"),
                       (di, "dstIdx")):
            _row_major(t, who)
        for a, b, who in ((v0, i0, "src0"), (v1, i1, "src1"), (dv, di, "dst")):
            _same_valid(a, b, f"{who}Val and {who}Idx must have the same valid shape")
        if not _known(*dv.valid_shape, *v0.valid_shape, *v1.valid_shape):
            return
        if partial_regions(dv.valid_shape, v0.valid_shape, v1.valid_shape) is None and 0 not in dv.valid_shape:
            raise VerifyException(
                "needs one source's valid region equal to dst's and the other's no larger in rows and cols "
                f"(got src0 {_dims_text(v0.valid_shape)}, src1 {_dims_text(v1.valid_shape)}, "
                f"dst {_dims_text(dv.valid_shape)})")

    def check_dtype_for_target(self, target_name: str) -> None:
        super().check_dtype_for_target(target_name)
        val, idx = self.ins[0].type.dtype, self.ins[2].type.dtype
        if target_name == "a2a3" and idx not in PART_ARG_INDEX.get(val, ()):
            raise VerifyException(f"a {val} value takes {'/'.join(PART_ARG_INDEX.get(val, ()))} indices on A2/A3 "
                                  f"(TPARTARGMAX.md), got {idx}")


class UnaryOp(TileOp):
    """``dst = fn(src)``; TRSQRT takes an optional tmp."""

    FAMILY: ClassVar[str] = "unary"
    HAS_SEMANTICS: ClassVar[bool] = True
    MAX_INS: ClassVar[int] = 1

    def verify_family(self) -> None:
        dst = _need_dst(self)
        srcs = _tiles(self, 1, "a source tile")
        if not 1 <= len(self.ins) <= self.MAX_INS:
            raise VerifyException(f"expects {self.MAX_INS} source operand(s), got {len(self.ins)}")
        _same_dtype(dst, srcs[0])
        _same_valid(srcs[0], dst, "src valid shape must equal dst valid shape")
        _row_major(dst, "dst")
        _row_major(srcs[0], "src")


class TileScalarOp(TileOp):
    """``dst = fn(src, s)``; with ``scalar_first`` orders (TDIVS ``ins(%s, %src)``) ``fn(s, src)``."""

    FAMILY: ClassVar[str] = "scalar"
    HAS_SEMANTICS: ClassVar[bool] = True

    @property
    def scalar_first(self) -> bool:
        return len(self.ins) == 2 and not isinstance(self.ins[0].type, TileLikeType)

    @property
    def src(self) -> SSAValue:
        """The source tile (the first tile operand; a third ``ins`` operand is the tmp)."""
        return self.tile_ins()[0]

    def verify_family(self) -> None:
        dst = _need_dst(self)
        tmp = self.TMP_OK and len(self.ins) == 3 and is_tile(self.ins[2].type)
        if len(self.ins) != 2 and not tmp:
            raise VerifyException(f"expects a tile and a scalar operand{' (and an optional tmp)' if self.TMP_OK else ''}"
                                  f", got {len(self.ins)} operands")
        tiles, scalars = self.tile_ins()[:1], self.scalar_ins()
        if len(self.tile_ins()) != 1 + tmp or len(scalars) != 1:
            raise VerifyException("expects exactly one tile and one scalar operand")
        if self.scalar_first and not self.SCALAR_FIRST_OK:
            raise VerifyException("the scalar operand must come second")
        src = tiles[0].type
        _same_dtype(dst, src)  # type: ignore[arg-type]
        _same_valid(src, dst, "src valid shape must equal dst valid shape")  # type: ignore[arg-type]
        _row_major(dst, "dst")

    SCALAR_FIRST_OK: ClassVar[bool] = False
    TMP_OK: ClassVar[bool] = False
    """``ins(src, s, tmp)`` is accepted (TREMS, TXORS): the lowerings need no tmp."""


class ExpandScalarOp(TileOp):
    """TEXPANDS: ``dst = s`` over the valid region."""

    FAMILY: ClassVar[str] = "expands"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        _need_dst(self)
        if len(self.ins) != 1 or isinstance(self.ins[0].type, TileLikeType):
            raise VerifyException("expects one scalar operand")


def block_elems(t: TileLikeType) -> int:
    """Elements in one 32-byte block: 32 / sizeof(T)."""
    return 32 // t.elem_bytes


AT_RUN_TIME = -1
"""TROWEXPAND*'s expanded operand when only the run-time valid shapes tell it (``expand_analysis``)."""


class RowExpandBinaryOp(TileOp):
    """TROWEXPAND{ADD,SUB,MUL,DIV,MAX,MIN,EXPDIF} (seeds/000 for MAX; reference/pto_isa.md §4.1).

    Exactly one of src0/src1 has dst's valid shape (the full operand); the other is expanded:
    Mode 1 (ColMajor, one scalar per row) or Mode 2 (RowMajor, one 32-byte block per row).
    Operand order is kept: with src0 expanded the result is ``fn(s_i, src1[i, j])``.
    An optional third ``ins`` operand is the tmp tile (Mode 1 only).
    """

    FAMILY: ClassVar[str] = "rowexpand"
    HAS_SEMANTICS: ClassVar[bool] = True

    def expand_analysis(self) -> tuple[int, int]:
        """(index of the expanded operand in ins: 0 or 1, or :data:`AT_RUN_TIME`; mode: 1 or 2).
        Raises VerifyException."""
        dst = _need_dst(self)
        tiles = _tiles(self, 2, "two source tiles (src0, src1) and an optional tmp")
        a, b = tiles[0], tiles[1]
        if not _known(*dst.valid_shape, *a.valid_shape, *b.valid_shape):
            # Dynamic valid shapes: a ColMajor operand is the expanded one; else one whose known valid
            # dims differ from dst's known ones; else both RowMajor operands may be dst's shape: the
            # choice is made at run time, src0 full when its valid shape is dst's (the CPU simulator's
            # and A5's order), in Mode 2.
            if a.is_row_major and b.is_row_major and _may_equal(a.valid_shape, dst.valid_shape) \
                    and _may_equal(b.valid_shape, dst.valid_shape):
                _row_major(dst, "dst")
                return AT_RUN_TIME, 2
            expanded = 0 if not a.is_row_major or not _may_equal(a.valid_shape, dst.valid_shape) else 1
        else:
            a_full = a.valid_shape == dst.valid_shape
            b_full = b.valid_shape == dst.valid_shape
            if a_full and b_full:
                raise VerifyException(
                    "exactly one of src0 or src1 must have dst's valid shape "
                    f"({_dims_text(dst.valid_shape)}); both do, so the expanded operand is ambiguous")
            if not a_full and not b_full:
                raise VerifyException(
                    "exactly one of src0 or src1 must have dst's valid shape "
                    f"({_dims_text(dst.valid_shape)}); got src0 {_dims_text(a.valid_shape)}, "
                    f"src1 {_dims_text(b.valid_shape)}")
            expanded = 1 if a_full else 0
        full, exp = (a, b) if expanded == 1 else (b, a)
        who = f"src{expanded}"
        _row_major(full, f"the full-size operand (src{1 - expanded})")
        if not exp.is_row_major:
            mode = 1
            if exp.valid_col not in (1, DYNAMIC):
                raise VerifyException(
                    f"Mode 1 (ColMajor {who}) requires {who} valid cols == 1, got {exp.valid_col}")
        else:
            mode = 2
            want = block_elems(dst)
            if exp.valid_col not in (want, DYNAMIC):
                raise VerifyException(
                    f"Mode 2 (RowMajor {who}) requires {who} valid cols == 32/sizeof({dst.dtype}) = {want}, "
                    f"got {exp.valid_col}")
        if _known(exp.valid_row, dst.valid_row) and exp.valid_row != dst.valid_row:
            raise VerifyException(
                f"Mode {mode} requires {who} valid rows == dst valid rows ({exp.valid_row} vs {dst.valid_row})")
        return expanded, mode

    @property
    def tmp(self) -> SSAValue | None:
        return self.ins[2] if len(self.ins) == 3 else None

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if len(self.ins) not in (2, 3):
            raise VerifyException(f"expects ins(src0, src1[, tmp]), got {len(self.ins)} operands")
        tiles = _tiles(self, len(self.ins), "tile operands")
        _row_major(dst, "dst")
        _same_dtype(dst, tiles[0], tiles[1], rule="dst, src0 and src1 must have the same element type")
        _, mode = self.expand_analysis()
        if self.tmp is not None and mode == 2:
            raise VerifyException("a tmp operand is only allowed with Mode 1 (ColMajor expanded operand); "
                                  "Mode 2 needs no broadcast buffer")


def _row_major_pair(op: TileOp) -> tuple[TileLikeType, TileLikeType, TileLikeType]:
    """(dst, src0, src1) of ``ins(src0, src1)``: one element type, all RowMajor."""
    dst = _need_dst(op)
    if len(op.ins) != 2:
        raise VerifyException(f"expects ins(src0, src1), got {len(op.ins)} operands")
    a, b = _tiles(op, 2, "two source tiles")[:2]
    _same_dtype(dst, a, b, rule="dst, src0 and src1 must have the same element type")
    for t, who in ((dst, "dst"), (a, "src0"), (b, "src1")):
        _row_major(t, who)
    return dst, a, b


class ColExpandBinaryOp(TileOp):
    """TCOLEXPAND{ADD,...}: ``dst[i,j] = fn(src0[i,j], src1[0,j])`` (only src1 is expanded)."""

    FAMILY: ClassVar[str] = "colexpand"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst, a, b = _row_major_pair(self)
        _same_valid(a, dst, "src0 valid shape must equal dst valid shape")
        if _known(b.valid_col, dst.valid_col) and b.valid_col != dst.valid_col:
            raise VerifyException(f"src1 valid cols must equal dst valid cols ({b.valid_col} vs {dst.valid_col})")


class RowExpandOp(TileOp):
    """TROWEXPAND: ``dst[i,j] = src[i,0]``."""

    FAMILY: ClassVar[str] = "rowbroadcast"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        (src,) = _tiles(self, 1, "one source tile")[:1]
        if len(self.ins) != 1:
            raise VerifyException("expects one source tile")
        _same_dtype(dst, src)
        _row_major(dst, "dst")
        if _known(src.valid_row, dst.valid_row) and src.valid_row != dst.valid_row:
            raise VerifyException(f"src valid rows must equal dst valid rows ({src.valid_row} vs {dst.valid_row})")


class ColExpandOp(TileOp):
    """TCOLEXPAND: ``dst[i,j] = src[0,j]``."""

    FAMILY: ClassVar[str] = "colbroadcast"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        (src,) = _tiles(self, 1, "one source tile")[:1]
        if len(self.ins) != 1:
            raise VerifyException("expects one source tile")
        _same_dtype(dst, src)
        _row_major(dst, "dst")
        _row_major(src, "src")
        if _known(src.valid_col, dst.valid_col) and src.valid_col != dst.valid_col:
            raise VerifyException(f"src valid cols must equal dst valid cols ({src.valid_col} vs {dst.valid_col})")


def _src_with_tmp(op: TileOp) -> tuple[TileLikeType, TileLikeType]:
    """(dst, src) of ``ins(src[, tmp])``: one element type."""
    dst = _need_dst(op)
    if len(op.ins) not in (1, 2):
        raise VerifyException(f"expects ins(src[, tmp]), got {len(op.ins)} operands")
    src = _tiles(op, len(op.ins), "tile operands")[0]
    _same_dtype(dst, src)
    return dst, src


class RowReduceOp(TileOp):
    """TROWSUM/TROWMAX/TROWMIN/TROWPROD ``ins(src[, tmp]) -> dst``: ``dst[i,0] = reduce_j src[i,j]``."""

    FAMILY: ClassVar[str] = "rowreduce"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst, src = _src_with_tmp(self)
        _row_major(src, "src")
        if src.valid_row == 0 or src.valid_col == 0:
            raise VerifyException("src valid region must not be empty (validRow != 0 and validCol != 0)")
        if _known(src.valid_row, dst.valid_row) and src.valid_row != dst.valid_row:
            raise VerifyException(f"src valid rows must equal dst valid rows ({src.valid_row} vs {dst.valid_row})")
        if not dst.is_row_major and dst.cols != 1:
            raise VerifyException("a ColMajor dst must have exactly 1 column")


class ColReduceOp(TileOp):
    """TCOLSUM/TCOLMAX/TCOLMIN/TCOLPROD ``ins(src[, tmp]) -> dst``: ``dst[0,j] = reduce_i src[i,j]``."""

    FAMILY: ClassVar[str] = "colreduce"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst, src = _src_with_tmp(self)
        _row_major(src, "src")
        _row_major(dst, "dst")
        if _known(src.valid_col, dst.valid_col) and src.valid_col != dst.valid_col:
            raise VerifyException(f"src valid cols must equal dst valid cols ({src.valid_col} vs {dst.valid_col})")


ARG_INDEX_DTYPES = ("i32", "ui32")
"""Index tiles of the arg reductions (TROWARGMAX.md, TCOLARGMAX.md: uint32_t or int32_t)."""


class ArgReduceOp(TileOp):
    """TROWARGMAX/TROWARGMIN (``AXIS = 1``: ``dst[i, 0] = argmax_j src[i, j]``) and
    TCOLARGMAX/TCOLARGMIN (``AXIS = 0``: ``dst[0, j] = argmax_i src[i, j]``), ``ins(src[, tmp])``:
    the index of the first extreme element (FN, runtime/elementwise.py), an i32/ui32 dst.
    ``DTYPES`` are the *source* types (the pages list them per target)."""

    HAS_SEMANTICS: ClassVar[bool] = True
    AXIS: ClassVar[int] = 1

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if len(self.ins) not in (1, 2):
            raise VerifyException(f"expects ins(src[, tmp]), got {len(self.ins)} operands")
        tiles = _tiles(self, len(self.ins), "tile operands")
        src = tiles[0]
        if len(tiles) == 2:
            _same_dtype(src, tiles[1], rule="tmp must have src's element type")
        if dst.dtype not in ARG_INDEX_DTYPES:
            raise VerifyException(f"dst (the indices) must be i32 or ui32, got {dst.dtype}")
        _row_major(src, "src")
        if src.valid_row == 0 or src.valid_col == 0:
            raise VerifyException("src valid region must not be empty (validRow != 0 and validCol != 0)")
        if self.AXIS == 1:
            if _known(src.valid_row, dst.valid_row) and src.valid_row != dst.valid_row:
                raise VerifyException(f"src valid rows must equal dst valid rows ({src.valid_row} vs {dst.valid_row})")
            if not dst.is_row_major and dst.cols != 1:
                raise VerifyException("a ColMajor dst must have exactly 1 column")
        else:
            _row_major(dst, "dst")
            if _known(src.valid_col, dst.valid_col) and src.valid_col != dst.valid_col:
                raise VerifyException(f"src valid cols must equal dst valid cols ({src.valid_col} vs {dst.valid_col})")
            if _known(dst.valid_row) and dst.valid_row != 1:
                raise VerifyException(f"dst valid rows must be 1 (got {dst.valid_row})")

    def check_dtype_for_target(self, target_name: str) -> None:
        allowed = self.DTYPES.get(target_name, frozenset())
        src = self.ins[0].type
        if isinstance(src, TileLikeType) and src.dtype not in allowed:
            raise VerifyException(f"src element type {src.dtype} is not supported on {target_name} "
                                  f"(supported: {', '.join(sorted(allowed)) or 'none'})")


CMP_MODES = ("EQ", "NE", "LT", "GT", "GE", "LE")
PREDICATE_DTYPES = {"a2a3": ("i8", "ui8"), "ascend950": ("i8", "ui8", "i32", "ui32")}
"""The element types of a predicate tile (TCMP/TCMPS dst) per target: TCMP.md gives ``uint8_t``
(A2A3) and ``uint32_t`` (A5), PTOAS's verifier (lib/PTO/IR/PTO.cpp TCmpOp) an 8-bit one on both;
the bytes are the same either way (:class:`CompareOp`)."""


class CompareOp(TileOp):
    """TCMP ``ins(src0, src1) outs(dst)`` and TCMPS ``ins(src, s) outs(dst)`` (``s`` a scalar, or a
    tile whose element (0, 0) is compared: TCMPS.md's tile form), ``{cmpMode = #pto.cmp<GT>}``
    (EQ when absent, as PTOAS: TCmpSOp's DefaultValuedAttr, PTOToEmitC's TCMP default).

    ``p[i, j] = src0[i, j] cmpMode src1[i, j]`` (IEEE: only NE holds for a NaN) over src0's valid
    region ``R x C``, packed: bit ``j % 8`` of byte ``j // 8`` of dst's row ``i`` (at dst's row
    stride) is ``p[i, j]``, bits past ``C`` are 0, as are the other bytes of dst's valid columns.
    The pages call the packing 'target-defined'; every public definition of it in pto-isa
    (github.com/hw-native-sys/pto-isa @3186c38) is this one: include/pto/npu/a2a3/TCmp.hpp (vcmpv per
    row at dst's Cols), include/pto/npu/a5/TCmp.hpp (psts per row at dst's RowStride),
    include/pto/cpu/TCmp.h, and the NPU tests' goldens tests/npu/{a2a3,a5}/src/st/testcase/tcmp/
    gen_data.py (per row ``packbits(bitorder='little')``, zeros past the valid columns).  A u32 dst
    holds the same bytes (little-endian words).  On A2A3 the pages say i32 compares with EQ whatever
    cmpMode is; ptoc rejects the other modes there instead of running a different compare."""

    FAMILY: ClassVar[str] = "cmp"
    HAS_SEMANTICS: ClassVar[bool] = True
    SCALAR: ClassVar[bool] = False

    @property
    def mode(self) -> str:
        a = self.attributes.get("cmpMode", self.attributes.get("cmp_mode"))
        if a is None:
            return "EQ"
        m = re.search(r"\b(eq|ne|lt|gt|ge|le)\b", str(a), re.IGNORECASE)
        if m is None:
            raise VerifyException(f"cmpMode must be one of {', '.join(CMP_MODES)} (got {a})")
        return m.group(1).upper()

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if len(self.ins) != 2:
            raise VerifyException(f"expects ins({'src, scalar' if self.SCALAR else 'src0, src1'}), "
                                  f"got {len(self.ins)} operands")
        src = _tiles(self, 1, "a source tile")[0]
        other = self.ins[1].type
        if is_tile(other):
            _same_dtype(src, other, rule="src0 and src1 must have the same element type")
            if not self.SCALAR:
                _same_valid(src, other, "src1 valid shape must equal src0's")
        elif not self.SCALAR:
            raise VerifyException("expects two source tiles (tcmps compares with a scalar)")
        _row_major(src, "src")
        _row_major(dst, "dst")
        if not any(dst.dtype in names for names in PREDICATE_DTYPES.values()):
            raise VerifyException(f"dst (the packed predicate) must be an 8- or 32-bit integer tile, got {dst.dtype}")
        if _known(src.valid_row, dst.valid_row) and src.valid_row != dst.valid_row:
            raise VerifyException(f"src valid rows must equal dst valid rows ({src.valid_row} vs {dst.valid_row})")
        if _known(src.valid_col, dst.valid_col) and dst.valid_col * dst.elem_bytes * 8 < src.valid_col:
            raise VerifyException(f"dst's {dst.valid_col} valid columns of {dst.dtype} hold fewer than the "
                                  f"{src.valid_col} predicate bits of a row")
        self.mode

    def check_dtype_for_target(self, target_name: str) -> None:
        src, dst = self.ins[0].type, self.dst_type
        allowed = self.DTYPES.get(target_name, frozenset())
        if isinstance(src, TileLikeType) and src.dtype not in allowed:
            raise VerifyException(f"src element type {src.dtype} is not supported on {target_name} "
                                  f"(supported: {', '.join(sorted(allowed)) or 'none'})")
        if dst is not None and dst.dtype not in PREDICATE_DTYPES[target_name]:
            raise VerifyException(f"dst (the packed predicate) must be {'/'.join(PREDICATE_DTYPES[target_name])} "
                                  f"on {target_name}, got {dst.dtype}")
        if target_name == "a2a3" and isinstance(src, TileLikeType) and src.dtype == "i32" and self.mode != "EQ":
            raise VerifyException(f"i32 compares only with EQ on A2/A3 (cmpMode {self.mode}): the page says "
                                  "'For int32_t input, only CmpMode::EQ is supported; other comparison modes fall "
                                  "back to EQ'")


class SelectOp(TileOp):
    """TSEL ``ins(mask, src0, src1[, tmp]) outs(dst)``: ``dst[i, j] = src0[i, j]`` where the mask bit
    of (i, j) is 1, else ``src1[i, j]``; TSELS ``ins(mask, src[, tmp], s) outs(dst)``: ``src[i, j]``
    or the scalar ``s`` (TSEL.md, TSELS.md), over dst's valid region.  The mask bit of (i, j) is bit
    ``j % 8`` of byte ``j // 8`` of the mask's row ``i`` (at its row stride), whatever the mask's
    integer type: the packing :class:`CompareOp` writes, as include/pto/npu/{a2a3,a5}/TSel.hpp read it
    (a2a3: ``vsel`` in tensor-tensor mode per row from ``mask + i * RowStride``; a5: ``plds`` per row)
    and the NPU tests' goldens tests/npu/{a2a3,a5}/src/st/testcase/tsel/gen_data.py build it (pto-isa
    @3186c38).  The tmp the A2A3 header uses for its cmpmask address is not needed."""

    FAMILY: ClassVar[str] = "sel"
    HAS_SEMANTICS: ClassVar[bool] = True
    SCALAR: ClassVar[bool] = False
    TMP_AT: ClassVar[int | None] = 3

    def verify_family(self) -> None:
        dst = _need_dst(self)
        tiles, scalars = self.tile_ins(), self.scalar_ins()
        want = (2, 3) if self.SCALAR else (3, 4)
        if len(tiles) not in want or len(scalars) != int(self.SCALAR):
            raise VerifyException(f"expects ins({'mask, src[, tmp], scalar' if self.SCALAR else 'mask, src0, src1[, tmp]'})"
                                  f", got {len(self.ins)} operands")
        mask, sources = tiles[0].type, [v.type for v in tiles[1:2 if self.SCALAR else 3]]
        _same_dtype(dst, *sources, rule="dst and the sources must have the same element type")
        for s in sources:
            _same_valid(s, dst, "a source's valid shape must equal dst's")
            _row_major(s, "src")
        _row_major(dst, "dst")
        _row_major(mask, "mask")
        if mask.dtype not in INT_DTYPES:
            raise VerifyException(f"mask (packed predicate bits) must be an integer tile, got {mask.dtype}")
        if _known(mask.valid_row, dst.valid_row) and mask.valid_row < dst.valid_row:
            raise VerifyException(f"mask valid rows {mask.valid_row} are fewer than dst's {dst.valid_row}")
        if _known(mask.valid_col, dst.valid_col) and mask.valid_col * mask.elem_bytes * 8 < dst.valid_col:
            raise VerifyException(f"mask's {mask.valid_col} valid columns of {mask.dtype} hold fewer than the "
                                  f"{dst.valid_col} bits of a dst row")


class PairReduceOp(TileOp):
    """TPAIRREDUCESUM (seeds/004): ``dst[i,k] = src[i,2k] + src[i,2k+1]`` for k < ceil(C/2), rest 0."""

    FAMILY: ClassVar[str] = "pairreduce"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if len(self.ins) != 1:
            raise VerifyException(f"expects one source tile, got {len(self.ins)} operands")
        (src,) = _tiles(self, 1, "one source tile")[:1]
        _same_dtype(dst, src, rule="dst and src0 must have the same element type")
        _row_major(dst, "dst")
        _row_major(src, "src0")
        _same_valid(src, dst, "src0 must have the same valid shape as dst")


GATHER_PATTERNS = {"P0101": (2, 0), "P1010": (2, 1), "P0001": (4, 0), "P0010": (4, 1), "P0100": (4, 2),
                   "P1000": (4, 3), "P1111": (1, 0)}
"""TGATHER maskPattern -> (period, position): pto-isa's MaskPattern, the vreducev2 pattern modes 1..7
("01-bits patterns are read from right to left; right bits are low index positions": P0101 takes
the first of every two elements, P1000 the fourth of every four, P1111 all)."""


ISA_TREE = "pto-isa (github.com/hw-native-sys/pto-isa @3186c38) "
"""The public pto-isa tree the "no semantics" reasons were checked against (pages docs/isa/, CPU
simulator include/pto/cpu/, NPU headers include/pto/npu/)."""
GATHER_COMPARE_NO_SEMANTICS = (
    "no semantics: the compare form of tgather: " + ISA_TREE + "docs/isa/tile/ops/irregular-and-complex/tgather.md "
    "says only 'dst holds the matching indices and cdst holds the match count per row', and its two "
    "implementations disagree: include/pto/npu/a2a3/TGather.hpp compares src with k converted from signed "
    "integers and numbers the indices offset + r * Cols + c; include/pto/npu/a5/TGather.hpp rounds src to s32, "
    "compares unsigned and numbers them on from offset across rows; no CPU simulator form")


class GatherOp(TileOp):
    """TGATHER (TGATHER.md; pto_isa.md §3 "index tile or maskPattern"), told apart by its operands:

    * index ``ins(src, indices[, tmp]) outs(dst)``: ``dst[i, j]`` = element number ``indices[i, j]``
      of src's tile storage (row-major; the A2A3 header multiplies the indices by sizeof(T) and
      gathers from src's base, TGather.hpp);
    * mask ``ins(src) outs(dst) {maskPattern}``: the elements :data:`GATHER_PATTERNS` selects in each
      valid row of src, rows in turn, packed contiguously from dst's first element (vreducev2; the
      header asserts a contiguous dst);
    * compare ``ins(src, k, tmp) outs(dst, cdst) {cmpMode, offset}``: parsed and verified only
      (:data:`GATHER_COMPARE_NO_SEMANTICS`).
    """

    FAMILY: ClassVar[str] = "gather"
    HAS_SEMANTICS: ClassVar[bool] = True
    BYTE_OFFSETS: ClassVar[bool] = False
    """TGATHERB (TGATHERB.md, ``ins(src, offsets) outs(dst)``): ``dst[i, j] = *(srcBase +
    offsets[i, j])``, a dst element read at a *byte* offset of src's tile storage (offsets 4-byte
    integers read as uint32).  The page wins over the A2A3 header and the CPU simulator (one offset
    per 32-byte block of dst, vgatherb): ISA pages first, digests next, implementations last.  An
    offset past src's tile or not a multiple of sizeof(dst element) ("out-of-range offsets are
    target-defined"; a read across two elements) is a run-time error."""

    @property
    def form(self) -> str:
        if self.BYTE_OFFSETS:
            return "index"
        if len(self.outs) == 2:
            return "compare"
        return "index" if len(self.ins) >= 2 and is_tile(self.ins[1].type) else "mask"

    def pattern(self) -> tuple[int, int]:
        m = re.search(r"P[01]{4}", str(self.attributes.get("maskPattern", "")))
        if m is None or m.group(0) not in GATHER_PATTERNS:
            raise VerifyException(f"the mask form needs maskPattern = #pto.mask_pattern<{'|'.join(GATHER_PATTERNS)}>")
        return GATHER_PATTERNS[m.group(0)]

    def verify_family(self) -> None:
        if self.form == "compare":
            return
        dst = _need_dst(self)
        src = _tiles(self, 1, "a source tile")[0]
        if self.BYTE_OFFSETS:
            if len(self.ins) != 2:
                raise VerifyException(f"expects ins(src, offsets), got {len(self.ins)} operands")
            offsets = _tiles(self, 2, "tile operands")[1]
            if offsets.dtype not in ("i32", "ui32"):
                raise VerifyException(f"offsets must be i32 or ui32 (uint32 byte offsets), got {offsets.dtype}")
        else:
            _same_dtype(dst, src, rule="dst and src must have the same element type")
        _row_major(src, "src")
        _row_major(dst, "dst")
        if self.form == "mask":
            if len(self.ins) != 1:
                raise VerifyException(f"the mask form expects ins(src), got {len(self.ins)} operands")
            self.pattern()
            return
        idx = self.ins[1].type
        _row_major(idx, "indices")
        if not self.BYTE_OFFSETS and idx.dtype not in ("i16", "ui16", "i32", "ui32"):
            raise VerifyException(f"indices must be i16, ui16, i32 or ui32, got {idx.dtype}")
        if _known(*idx.valid_shape, *dst.valid_shape) and (idx.valid_row < dst.valid_row or
                                                         idx.valid_col < dst.valid_col):
            raise VerifyException(f"indices' valid shape {_dims_text(idx.valid_shape)} does not cover dst's "
                                  f"{_dims_text(dst.valid_shape)}")


class Sort32Op(TileOp):
    """TSORT32 ``ins(src, idx[, tmp]) outs(dst)`` (TSORT32.md): each valid row of src in blocks of 32
    columns, block ``b`` holding ``n_b = min(32, C - 32 b)`` values; each value paired with its
    ``idx`` element (ui32; idx has src's valid shape, or one row every row shares), the pairs sorted
    by value, descending, equal values by the smaller index first (VBS32), and written as 8-byte
    pairs from pair ``32 b`` of dst's row: ``[value, index]`` for f32, ``[value, 0x0000, index]``
    for f16 (dst is ``2 C`` / ``4 C`` elements a row).  Without tmp, C must be a multiple of 32."""

    FAMILY: ClassVar[str] = "sort32"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if len(self.ins) not in (2, 3):
            raise VerifyException(f"expects ins(src, idx[, tmp]), got {len(self.ins)} operands")
        tiles = _tiles(self, len(self.ins), "tile operands")
        src, idx = tiles[0], tiles[1]
        _same_dtype(dst, src, *tiles[2:], rule="dst, src and tmp must have the same element type")
        if idx.dtype != "ui32":
            raise VerifyException(f"idx must be ui32, got {idx.dtype}")
        for t, who in ((dst, "dst"), (src, "src"), (idx, "idx")):
            _row_major(t, who)
        if _known(*idx.valid_shape, *src.valid_shape) and (
                idx.valid_col != src.valid_col or idx.valid_row not in (1, src.valid_row)):
            raise VerifyException(f"idx's valid shape must be src's or one row of its cols ({_dims_text(idx.valid_shape)} "
                                  f"vs {_dims_text(src.valid_shape)})")
        if len(self.ins) == 2 and _known(src.valid_col) and src.valid_col % SORT_BLOCK:
            raise VerifyException(f"without a tmp tile src's valid cols must be a multiple of {SORT_BLOCK} "
                                  f"(got {src.valid_col})")

    def dst_error(self, r: int, dst_valid: tuple[int, int]) -> str | None:
        """Why dst cannot take the pairs of src's r rows, else None (PTOAS does not check it, so the
        golden model and the lowerings do, where they write).  A dst row narrower than its pairs is
        no error: see :meth:`dst_bytes_written`."""
        if dst_valid[0] >= r:
            return None
        return f"dst's valid rows ({dst_valid[0]}) do not cover src's {r} rows of value-index pairs (TSORT32.md)"

    def dst_bytes_written(self) -> int:
        """The bytes from dst's first element the op writes at most.  Row i's 8 C bytes of pairs go
        to i times dst's row stride, rows in order, whatever dst's size (pto-isa TSort32.hpp:
        ``vbitsort(dstPtr + i * dstStride, ...)``; TSORT32.md: "dst is always C x 8 bytes"), so in a
        dst row narrower than that the next row's pairs overwrite the ones that do not fit, and the
        last row's run on past the tile (PTOAS's test/basic/tsort32_emitc.pto sorts 1x32 f16 into a
        1x64 tile: 256 bytes into 128).  pto-plan-memory keeps these bytes for dst."""
        src, dst = self.ins[0].type, self.dst_type
        rows = min(src.rows if src.valid_row == DYNAMIC else src.valid_row, dst.rows)
        cols = src.cols if src.valid_col == DYNAMIC else src.valid_col
        return (rows - 1) * dst.cols * dst.elem_bytes + 8 * cols if rows > 0 else 0


SORT_BLOCK = 32
"""TSORT32 sorts blocks of 32 elements (VBS32)."""


class MrgSortOp(TileOp):
    """TMRGSORT (TMRGSORT.md) on 8-byte (value, index) pairs (TSORT32's layout: 2 f32 / 4 f16
    elements a pair), every tile one row:

    * multi-list ``ins(src0, src1[, src2[, src3]], tmp {exhausted}) outs(dst[, executed])``: the
      lists merged into dst: at each step the head pair of largest value goes out, equal values
      from the lowest-numbered list first (the CPU simulator's TMrgSort.hpp: a later list wins only
      with a strictly larger value); ``exhausted = true`` stops once a list is used up.  PTOAS's
      ``executed`` operand is an input SSA value (it has no place to receive the counts): ignored;
    * single-list ``ins(src, blockLen) outs(dst)``: each group of 4 blocks of ``blockLen``
      elements of src merged the same way into the same columns of dst."""

    FAMILY: ClassVar[str] = "mrgsort"
    HAS_SEMANTICS: ClassVar[bool] = True

    @property
    def single(self) -> bool:
        return len(self.ins) == 2 and not is_tile(self.ins[1].type)

    @property
    def exhausted(self) -> bool:
        a = self.attributes.get("exhausted")
        return isinstance(a, IntegerAttr) and bool(a.value.data)

    @property
    def TMP_AT(self):  # noqa: N802 - the TileOp hook (passes/tile_access.py): the multi-list form's tmp
        return None if self.single else len(self.ins) - 1

    def verify_family(self) -> None:
        dst = self.dst_type
        if dst is None:
            raise VerifyException("expects a dst tile (outs(dst[, executed]) or an L1 result)")
        tiles = [v.type for v in self.ins if is_tile(v.type)]
        if self.single:
            want = "ins(src, blockLen)"
        elif len(tiles) == len(self.ins) and 3 <= len(tiles) <= 5:
            want = None
        else:
            want = "ins(src0, src1[, src2[, src3]], tmp) or ins(src, blockLen)"
        if want and not self.single:
            raise VerifyException(f"expects {want}, got {len(self.ins)} operands")
        _same_dtype(dst, *tiles, rule="every tile must have the same element type")
        for t in (dst, *tiles):
            _row_major(t, "every tile")
            if t.rows != 1:
                raise VerifyException(f"every tile must be one row (TMRGSORT.md), got {t.rows} rows")

    def merge_error(self, src_cols: list[int], dst_cols: int, block_len: int | None = None) -> str | None:
        """Why the valid cols do not make a merge the page defines, else None (PTOAS checks none of it,
        so the golden model and the lowerings do, where they write)."""
        coef = 8 // self.dst_type.elem_bytes
        if block_len is not None:
            c = src_cols[0]
            if block_len <= 0 or block_len % 64:
                return f"blockLen must be a positive multiple of 64 (TMRGSORT.md), got {block_len}"
            if c % (4 * block_len) or not 1 <= c // (4 * block_len) <= 255:
                return (f"src's valid cols ({c}) must be 1 to 255 groups of 4 blocks of blockLen ({block_len}) "
                        "elements (TMRGSORT.md)")
            need = c
        else:
            if any(c % coef for c in src_cols):
                return f"a list's valid cols {src_cols} are not whole {coef}-element (value, index) pairs"
            if self.exhausted and 0 in src_cols:
                return (f"with exhausted = true, a list of no pairs (valid cols {src_cols}) has no meaning: "
                        "TMRGSORT.md does not say whether it stops the merge before its first pair")
            need = sum(src_cols)
        if dst_cols < need:
            return f"dst's valid cols ({dst_cols}) do not hold the {need} elements merged"
        return None


class ScatterOp(TileOp):
    """TSCATTER ``ins(src, indices) outs(dst)`` (pto_isa.md §3 "scatter by flattened per-element
    offsets"; TScatter.hpp): dst's whole tile is zeroed, then for (i, j) over the indices' valid region
    in row-major order ``dst[indices[i, j]] = src[i, j]``, dst's storage counted element by element
    row-major; the last writer wins."""

    FAMILY: ClassVar[str] = "scatter"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if len(self.ins) != 2:
            raise VerifyException(f"expects ins(src, indices), got {len(self.ins)} operands")
        src, idx = _tiles(self, 2, "ins(src, indices) tiles")[:2]
        _same_dtype(dst, src, rule="dst and src must have the same element type")
        for t, who in ((dst, "dst"), (src, "src"), (idx, "indices")):
            _row_major(t, who)
        if idx.dtype not in ("i16", "ui16", "i32", "ui32"):
            raise VerifyException(f"indices must be i16, ui16, i32 or ui32, got {idx.dtype}")
        if idx.elem_bytes != max(2, dst.elem_bytes):
            raise VerifyException(f"{dst.dtype} data takes {8 * max(2, dst.elem_bytes)}-bit indices, got {idx.dtype}")
        if _known(*idx.valid_shape, *src.valid_shape) and (src.valid_row < idx.valid_row or
                                                         src.valid_col < idx.valid_col):
            raise VerifyException(f"src's valid shape {_dims_text(src.valid_shape)} does not cover the indices' "
                                  f"{_dims_text(idx.valid_shape)}")


MGATHER_PAGE = ISA_TREE + "docs/isa/MGATHER.md"
MSCATTER_PAGE = ISA_TREE + "docs/isa/MSCATTER.md"
COALESCE_MODES = ("row", "elem")
"""``coalesce = #pto<coalesce row|elem>``: MGATHER.md/MSCATTER.md ``Coalesce`` (``Row``, the C++
default, gathers/scatters whole rows ``table[idx[r], :]``; ``Elem`` elements of the flat table)."""


def _option(op: Operation, key: str, words: Sequence[str], default: str) -> str:
    """Which of ``words`` the option attribute ``key`` names (``#pto<gather_oob zero>``), else ``default``."""
    a = op.attributes.get(key) or op.properties.get(key)
    if a is None:
        return default
    found = [w for w in words if re.search(rf"\b{w}\b", str(a).lower())]
    if len(found) != 1:
        raise VerifyException(f"{key} must name one of {'/'.join(words)} (got {a})")
    return found[0]


class IndexedGmOp(TileOp):
    """MGATHER / MSCATTER: a UB data tile moved from / to a GM table (a partition view) through a
    UB index tile (i32 or ui32, read as uint32 as every NPU header does: ``static_cast<uint32_t>``,
    so a negative index is out of bounds).  ``Coalesce::Row``: data row r is table row ``idx[r]``
    (the index tile of valid shape [1, R], on A5 also [R, 1]; the table's last dim equals the data's
    valid cols); ``Coalesce::Elem``: data element (r, c) is table element ``idx[r, c]`` of the
    partition's elements in C order (the index tile of the data's valid shape).  Without a
    ``coalesce`` attribute (PTOAS spells none) the mode is Row, the pages' default, unless the index
    tile has the data's valid shape and is no Row index: then Elem (the PTOAS manual's
    ``dst[i, j] = mem[idx[i, j]]``).  ``capacity`` is the table's rows (Row) or elements (Elem)."""

    HAS_SEMANTICS: ClassVar[bool] = True
    OOB_KEY: ClassVar[str] = ""
    OOB_MODES: ClassVar[tuple[str, ...]] = ()
    PAGE: ClassVar[str] = ""
    FLAT_TABLE_RULE: ClassVar[str] = ("Coalesce::Elem reads a flat table (table[idx]; the kernels address tablePtr[idx]): "
                                      "a partition whose elements are not contiguous in GM has no flat index")
    A5_ROWS_RULE: ClassVar[str] = ("on A5 Coalesce::Row addresses the table as packed ND rows of the valid cols "
                                   "('anything other than packed ND with row width = validCols produces wrong output')")

    @property
    def table(self) -> SSAValue:
        raise NotImplementedError

    @property
    def data(self) -> SSAValue:
        """The UB tile the table is read into (MGATHER dst) or written from (MSCATTER src)."""
        raise NotImplementedError

    @property
    def index(self) -> SSAValue:
        return self.ins[1]

    @property
    def oob(self) -> str:
        return _option(self, self.OOB_KEY, self.OOB_MODES, "undefined")

    @property
    def coalesce(self) -> str:
        """"row" or "elem": the attribute, else as the class docstring says."""
        mode = _option(self, "coalesce", COALESCE_MODES, "")
        if mode:
            return mode
        data, idx = self.data.type.valid_shape, self.index.type.valid_shape
        if not _known(*data, *idx):
            raise VerifyException("with a run-time valid shape needs coalesce = #pto<coalesce row|elem> "
                                  f"({self.PAGE}: the mode is explicit, never auto-detected)")
        row_index = idx in ((1, data[0]), (data[0], 1))
        return "elem" if idx == data and not row_index else "row"

    def verify_family(self) -> None:
        if len(self.ins) + len(self.outs) + len(self.res) != 3 or len(self.ins) < 2:
            raise VerifyException(f"expects {self.FORM}")
        table, data, idx = self.table.type, self.data.type, self.index.type
        if not isinstance(table, PartitionTensorViewType) or not is_tile(data) or not is_tile(idx):
            raise VerifyException(f"expects {self.FORM}")
        if dtype_name(table.element_type) != data.dtype:
            raise VerifyException(f"the table's element type ({dtype_name(table.element_type)}) must be the "
                                  f"{self.DATA_NAME}'s ({data.dtype})")
        if idx.dtype not in ("i32", "ui32"):
            raise VerifyException(f"indices must be i32 or ui32, got {idx.dtype}")
        for t, who in ((data, self.DATA_NAME), (idx, "the index tile")):
            if t.loc.data != "vec" or t.slayout.data != "none_box":
                raise VerifyException(f"{who} must be a vec tile with slayout=none_box")
        self.oob  # noqa: B018 (raises on an unknown mode)
        mode = self.coalesce
        R, C = data.valid_shape
        if _known(R, C) and (R < 1 or C < 1):
            raise VerifyException(f"{self.DATA_NAME} valid shape {_dims_text(data.valid_shape)}: both modes require "
                                  f"ValidRow >= 1 and ValidCol >= 1 ({self.PAGE})")
        if mode == "row":
            if _known(*idx.valid_shape, R) and idx.valid_shape not in ((1, R), (R, 1)):
                raise VerifyException(f"Coalesce::Row needs an index tile of valid shape [1, {R}] (or [{R}, 1] on "
                                      f"A5), got {_dims_text(idx.valid_shape)}")
            if idx.valid_row != 1 and idx.is_row_major and idx.cols != 1:
                raise VerifyException(f"a Coalesce::Row index tile of valid shape [R, 1] must be ColMajor: the kernel "
                                      f"reads idx[r] from 'a linear R-element layout in UB' ({self.PAGE})")
            if table.dims and _known(table.dims[-1], C) and table.dims[-1] != C:
                raise VerifyException(f"Coalesce::Row moves table rows of {self.DATA_NAME}'s {C} valid cols: the "
                                      f"table's last dim is {table.dims[-1]} ({self.PAGE}: table[TableRows, C])")
        else:
            _same_valid(idx, data, f"Coalesce::Elem needs an index tile of the {self.DATA_NAME}'s valid shape")

    def verify_target(self, target: str) -> None:
        """The per-target rules of the page's A2/A3 and A5 constraint sections."""
        data, idx = self.data.type, self.index.type
        if target == "a2a3":
            for t, who in ((data, self.DATA_NAME), (idx, "the index tile")):
                if not t.is_row_major:
                    raise VerifyException(f"on A2/A3 {who} must be RowMajor ({self.PAGE}, Tile Constraints (A2/A3))")
            if self.coalesce == "row" and _known(*idx.valid_shape) and idx.valid_row != 1:
                raise VerifyException(f"on A2/A3 Coalesce::Row needs an index tile of valid shape [1, R] "
                                      f"({self.PAGE}), got {_dims_text(idx.valid_shape)}")
        contiguous = data.cols if data.is_row_major else data.rows
        if contiguous * data.elem_bytes % 32:
            raise VerifyException(f"{self.DATA_NAME}'s padded {'Cols' if data.is_row_major else 'Rows'} * "
                                  f"sizeof(T) must be a multiple of 32 bytes ({self.PAGE})")


class MGatherOp(IndexedGmOp):
    """MGATHER ``ins(%table, %idx) outs(%dst)`` (docs/isa/MGATHER.md): ``dst[r, :] = table[idx[r], :]``
    (Row) or ``dst[r, c] = table[idx[r, c]]`` (Elem), out-of-bounds indices by ``gatherOob``:
    Undefined (the caller guarantees idx < capacity: an index past it is a run-time error), Clamp
    (``min(idx, capacity - 1)``), Wrap (``idx % capacity``), Zero (the row or element is 0)."""

    FAMILY: ClassVar[str] = "mgather"
    FORM: ClassVar[str] = ("ins(%table, %idx) outs(%dst), or %dst = pto.mgather %table, %idx (a partition view, an "
                           "index tile, a vec tile)")
    DATA_NAME: ClassVar[str] = "dst"
    OOB_KEY: ClassVar[str] = "gatherOob"
    OOB_MODES: ClassVar[tuple[str, ...]] = ("undefined", "clamp", "wrap", "zero")
    PAGE: ClassVar[str] = MGATHER_PAGE

    @property
    def table(self) -> SSAValue:
        return self.ins[0]

    @property
    def data(self) -> SSAValue:
        return self.outs[0] if self.outs else self.res[0]


SCATTER_ATOMIC_DTYPES = {
    "a2a3": {"none": B8_B16_B32, "add": frozenset({"i8", "i16", "i32", "f16", "bf16", "f32"})},
    "ascend950": {"none": B8_B16_B32, "add": frozenset({"i32", "ui32", "f32", "f16", "bf16"}),
                  "max": frozenset({"i32", "ui32", "f32"}), "min": frozenset({"i32", "ui32", "f32"})},
}
"""MSCATTER.md "Atomic Type Support": the element types of each ``scatterAtomicOp`` per target
(A2/A3 has no Max/Min: "rejected at compile time by MScatterCheck")."""


class MScatterOp(IndexedGmOp):
    """MSCATTER ``ins(%src, %idx) outs(%table)`` (docs/isa/MSCATTER.md): ``table[idx[r], :] (+)= src[r, :]``
    (Row) or ``table[idx[r, c]] (+)= src[r, c]`` (Elem) in row-major order, ``scatterAtomicOp``
    none (replace; with ``scatterConflict`` Last, the default, the last writer in row-major order
    wins) / add / max / min; out-of-bounds indices by ``scatterOob``: Undefined (an index past the
    capacity is a run-time error), Skip (not written), Clamp, Wrap.  ``scatterConflict = default``
    (A5 only: "warp-scheduler dependent") with two writers of one slot is a run-time error."""

    FAMILY: ClassVar[str] = "mscatter"
    FORM: ClassVar[str] = ("ins(%src, %idx) outs(%table), or pto.mscatter %src, %idx, %table (a vec tile, an index "
                           "tile, a partition view)")
    DATA_NAME: ClassVar[str] = "src"
    OOB_KEY: ClassVar[str] = "scatterOob"
    OOB_MODES: ClassVar[tuple[str, ...]] = ("undefined", "skip", "clamp", "wrap")
    PAGE: ClassVar[str] = MSCATTER_PAGE

    @property
    def dst_type(self):  # the destination is GM, not a tile
        return None

    @property
    def table(self) -> SSAValue:
        return self.outs[0] if self.outs else self.ins[2]

    @property
    def data(self) -> SSAValue:
        return self.ins[0]

    @property
    def atomic(self) -> str:
        return _option(self, "scatterAtomicOp", ("none", "add", "max", "min"), "none")

    @property
    def conflict(self) -> str:
        return _option(self, "scatterConflict", ("last", "default"), "last")

    def verify_family(self) -> None:
        super().verify_family()
        self.atomic, self.conflict  # noqa: B018 (raise on unknown words)

    def verify_target(self, target: str) -> None:
        super().verify_target(target)
        allowed = SCATTER_ATOMIC_DTYPES[target].get(self.atomic)
        dtype = self.data.type.dtype
        if allowed is None or dtype not in allowed:
            names = ", ".join(sorted(allowed)) if allowed else "none"
            raise VerifyException(f"scatterAtomicOp {self.atomic} on {target} takes {names}, not {dtype} "
                                  f"({MSCATTER_PAGE}, Atomic Type Support)")
        if target == "a2a3" and self.conflict != "last":
            raise VerifyException(f"A2/A3 has no ScatterConflict parameter (its kernel is sequential: the last "
                                  f"write wins; {MSCATTER_PAGE})")


AXPY_TYPES = {("f16", "f16"), ("f32", "f32"), ("f16", "f32"), ("bf16", "bf16")}
"""(src, dst) element types of TAXPY: one float type, or f16 into an f32 dst (the PTOAS sample)."""


class AxpyOp(TileOp):
    """TAXPY ``ins(src, s) outs(dst)``: ``dst = s * src + dst`` (pto_isa.md §3), src converted to
    dst's type first (exact), the product and the sum each rounded once (no fused rounding: the
    documented instructions are vmuls and vadd)."""

    FAMILY: ClassVar[str] = "axpy"
    HAS_SEMANTICS: ClassVar[bool] = True
    READS_DST: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if not self.outs:
            raise VerifyException("accumulates into its dst: only the DPS form ins(src, s) outs(dst) has one")
        if len(self.ins) != 2 or not is_tile(self.ins[0].type) or is_tile(self.ins[1].type):
            raise VerifyException("expects ins(src, scalar)")
        src = self.ins[0].type
        if (src.dtype, dst.dtype) not in AXPY_TYPES:
            ok = ", ".join(f"{a} -> {b}" for a, b in sorted(AXPY_TYPES))
            raise VerifyException(f"src and dst element types {src.dtype} -> {dst.dtype} are not one of {ok}")
        _same_valid(src, dst, "src valid shape must equal dst valid shape")
        _row_major(dst, "dst")
        _row_major(src, "src")


class ComposedOp(TileOp):
    """A tile op that is a fixed sequence of elementwise instructions (pto_isa.md §3: TADDC a+b+c,
    TSUBC a-b+c, TMULADDDST a*b+dst, TFUSEDMULADD a*dst+b, TFUSEDMULADDRELU relu(a*dst+b),
    TSUBRELU relu(a-b), TPOW/TPOWS a**b, TADDSC/TSUBSC a±s+b).  ``STEPS`` holds the sequence, each
    step ``(instruction, operand, ...)`` over ``a``, ``b``, ``c`` (the ``ins`` tiles), ``s`` (the
    scalar operand), ``-s`` (its negation: x - s is x + (-s), exact in IEEE and in wrapping
    integers), ``dst`` and ``t`` (the previous step's result); the last step's result is dst.  Each
    step is rounded to the element type (the CPU simulator forces the rounding between steps,
    pto_isa.md §6); the golden model applies the instructions' element functions (dialects/a2a3.py
    ``OPCODES``), the lowerings the instructions themselves."""

    FAMILY: ClassVar[str] = "composed"
    HAS_SEMANTICS: ClassVar[bool] = True
    STEPS: ClassVar[tuple] = ()
    N_TILES: ClassVar[int] = 2
    SCALAR: ClassVar[bool] = False

    @classmethod
    def uses(cls, name: str) -> bool:
        return any(name in step[1:] for step in cls.STEPS)

    def named_operands(self) -> dict[str, SSAValue]:
        """The named operands of ``STEPS``: a, b, c (tiles in ins order), s (the scalar), dst."""
        tiles = [v for v in self.ins if is_tile(v.type)][:self.N_TILES]
        named = dict(zip("abc", tiles))
        if self.SCALAR:
            named["s"] = self.scalar_ins()[0]
        named["dst"] = self.dst
        return named

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if self.uses("dst") and not self.outs:
            raise VerifyException("reads its dst: only the DPS form ins(...) outs(dst) has one")
        tiles, scalars = self.tile_ins(), self.scalar_ins()
        n_tmp = len(tiles) - self.N_TILES
        tmp_ok = self.TMP_AT is not None
        if n_tmp not in (0, 1) or len(scalars) != int(self.SCALAR) or (n_tmp and not tmp_ok):
            want = ", ".join([*"abc"[:self.N_TILES], *(["s"] if self.SCALAR else [])])
            raise VerifyException(f"expects ins({want}{'[, tmp]' if tmp_ok else ''})")
        for t in tiles[:self.N_TILES]:
            _same_dtype(dst, t.type, rule="the source tiles and dst must have the same element type")
            _same_valid(t.type, dst, "source valid shapes must equal dst valid shape")
            _row_major(t.type, "a source")
        _row_major(dst, "dst")


RELU_CONV_PAIRS = (("f32", "f16"), ("f16", "i8"), ("i16", "i8"))
"""(src, dst) element types of TADDRELUCONV / TSUBRELUCONV (TADDReluConv.md)."""


def _fused_sources(op: TileOp, dst: TileLikeType, page: str) -> tuple[TileLikeType, TileLikeType]:
    """src0, src1 of a fused add/sub op: one element type, RowMajor, dst's valid shape, not empty."""
    a, b = _tiles(op, 2, "two source tiles (src0, src1)")[:2]
    _same_dtype(a, b, rule=f"src0 and src1 must have the same element type ({page})")
    for t, who in ((dst, "dst"), (a, "src0"), (b, "src1")):
        _row_major(t, who)
        if who != "dst":
            _same_valid(t, dst, f"{who}'s valid shape must equal dst's ({page})")
    if 0 in dst.valid_shape:
        raise VerifyException(f"dst's valid rows and cols must be greater than 0 ({page}), got "
                              f"{_dims_text(dst.valid_shape)}")
    return a, b


class ReluConvOp(TileOp):
    """TADDRELUCONV / TSUBRELUCONV ``ins(src0, src1) outs(dst)`` (TADDReluConv.md; TSubReluConv has
    no page of its own: pto_isa.md §3 gives both as ``convert(max(0, a±b))``): over dst's valid region
    ``dst = convert(max(0, src0 ± src1))``, the sum and the ReLU in the source type, the conversion
    saturating and rounding to nearest even (runtime/elementwise.py ``saturating_convert``); (src,
    dst) one of :data:`RELU_CONV_PAIRS`."""

    FAMILY: ClassVar[str] = "reluconv"
    HAS_SEMANTICS: ClassVar[bool] = True
    PAGE: ClassVar[str] = "TADDReluConv.md"

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if len(self.ins) != 2:
            raise VerifyException(f"expects ins(src0, src1), got {len(self.ins)} operands")
        a, _ = _fused_sources(self, dst, self.PAGE)
        if (a.dtype, dst.dtype) not in RELU_CONV_PAIRS:
            pairs = ", ".join(f"{s} -> {d}" for s, d in RELU_CONV_PAIRS)
            raise VerifyException(f"(src, dst) element types must be one of {pairs} ({self.PAGE}), got "
                                  f"{a.dtype} -> {dst.dtype}")


class DeqReluOp(TileOp):
    """TADDDEQRELU ``ins(src0, src1, deqScale, tmp) outs(dst)`` (TAddDeqRelu.md): over dst's valid
    region ``dst = half(max(0, (src0 + src1) * deqScale))`` by the page's sequence
    (runtime/elementwise.py ``add_deq_relu``); src0, src1 and tmp i32, deqScale an f32 scalar, dst f16,
    tmp at least dst's valid region."""

    FAMILY: ClassVar[str] = "deqrelu"
    HAS_SEMANTICS: ClassVar[bool] = True
    TMP_AT: ClassVar[int] = 3

    def verify_family(self) -> None:
        page = "TAddDeqRelu.md"
        dst = _need_dst(self)
        tiles, scalars = self.tile_ins(), self.scalar_ins()
        if len(self.ins) != 4 or len(tiles) != 3 or self.ins[2] in tiles:
            raise VerifyException(f"expects ins(src0, src1, deqScale, tmp), got {len(self.ins)} operands")
        a, _ = _fused_sources(self, dst, page)
        tmp = tiles[2].type
        for t, who, want in ((a, "src0 and src1", "i32"), (tmp, "tmp", "i32"), (dst, "dst", "f16")):
            if t.dtype != want:
                raise VerifyException(f"{who} must be {want} ({page}), got {t.dtype}")
        if not isinstance(scalars[0].type, Float32Type):
            raise VerifyException(f"deqScale must be an f32 scalar ({page}), got {scalars[0].type}")
        _row_major(tmp, "tmp")
        if _known(*dst.valid_shape) and (tmp.rows < dst.valid_row or tmp.cols < dst.valid_col):
            raise VerifyException(f"tmp ({tmp.rows}x{tmp.cols}) must be at least dst's valid region "
                                  f"{_dims_text(dst.valid_shape)} ({page})")


class TransposeOp(TileOp):
    """TTRANS ``ins(src[, tmp]) outs(dst)`` (pto_isa.md §3 "transpose"): ``dst[j, i] = src[i, j]``
    over src's valid region (R x C); dst's valid region is C x R."""

    FAMILY: ClassVar[str] = "trans"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst, src = _src_with_tmp(self)
        if _known(*src.valid_shape, *dst.valid_shape) and dst.valid_shape != src.valid_shape[::-1]:
            raise VerifyException(f"dst valid shape must be src's transposed ({_dims_text(dst.valid_shape)} vs "
                                  f"{_dims_text(src.valid_shape[::-1])})")


class FillOp(TileOp):
    """A dst filled from one scalar operand and the element's position (``ins(%s) outs(%dst)``):
    TCI (family ``ci``) and TTRI (family ``tri``); see their ``_define`` lines."""

    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if len(self.ins) != 1 or is_tile(self.ins[0].type):
            raise VerifyException("expects one scalar operand")
        _row_major(dst, "dst")

    def flag(self, key: str) -> int:
        """An integer or boolean attribute (``descending``, ``upperOrLower``); 0 when absent."""
        a = self.attributes.get(key)
        if a is None:
            return 0
        if isinstance(a, IntegerAttr):
            return int(a.value.data)
        raise VerifyException(f"attribute {key} must be an integer or a boolean, got {a}")


class ConcatOp(TileOp):
    """TCONCAT ``ins(src0, src1) outs(dst)`` (pto_isa.md §3 "column concatenation"):
    ``dst[i, j] = src0[i, j]`` for ``j < C0``, ``src1[i, j - C0]`` for ``C0 <= j < C0 + C1`` (C0, C1
    the sources' valid cols; every valid row of dst)."""

    FAMILY: ClassVar[str] = "concat"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst, a, b = _row_major_pair(self)
        for t, who in ((a, "src0"), (b, "src1")):
            if _known(t.valid_row, dst.valid_row) and t.valid_row != dst.valid_row:
                raise VerifyException(f"{who} valid rows must equal dst valid rows ({t.valid_row} vs {dst.valid_row})")
        if _known(a.valid_col, b.valid_col, dst.valid_col) and a.valid_col + b.valid_col != dst.valid_col:
            raise VerifyException(f"dst valid cols must be src0's plus src1's ({dst.valid_col} vs "
                                  f"{a.valid_col} + {b.valid_col})")


class FillPadOp(TileOp):
    """TFILLPAD / TFILLPAD_EXPAND / TFILLPAD_INPLACE ``ins(src) outs(dst)`` (TFILLPAD.md, "Math
    Interpretation"; the other two pages defer to it): for every element (i, j) of dst's tile,
    ``dst[i, j] = src[i, j]`` if ``i < VR and j < VC`` (src's valid region), else dst's PadValue
    (Zero 0, Max +inf / int max, Min -inf / int min).  The element bits are copied (same size,
    not necessarily the same type).  TFILLPAD: src and dst of one static shape; _EXPAND: dst's at
    least src's; _INPLACE: one static shape and the same storage ("destination and source must alias
    the same storage": the golden model checks it at run time; the lowerings copy src as TFILLPAD
    does, the identity on shared storage)."""

    FAMILY: ClassVar[str] = "fillpad"
    HAS_SEMANTICS: ClassVar[bool] = True
    EXPAND: ClassVar[bool] = False
    INPLACE: ClassVar[bool] = False

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if len(self.ins) != 1:
            raise VerifyException(f"expects ins(src), got {len(self.ins)} operands")
        src = _tiles(self, 1, "a source tile")[0]
        page = "TFILLPAD.md"
        if dst.pad.data == 0:
            raise VerifyException(f"dst's PadValue must not be Null (pad=0) ({page})")
        if src.elem_bytes != dst.elem_bytes or src.elem_bytes not in (1, 2, 4):
            raise VerifyException(f"src and dst elements must be of one size, 1, 2 or 4 bytes ({page}; got "
                                  f"{src.dtype}, {dst.dtype})")
        if self.EXPAND:
            if dst.rows < src.rows or dst.cols < src.cols:
                raise VerifyException(f"dst's static shape must be at least src's ({page}; {dst.rows}x{dst.cols} "
                                      f"vs {src.rows}x{src.cols})")
        elif (dst.rows, dst.cols) != (src.rows, src.cols):
            raise VerifyException(f"src and dst must have the same static shape ({page}; {src.rows}x{src.cols} "
                                  f"vs {dst.rows}x{dst.cols})")


class InterleaveOp(TileOp):
    """TINTERLEAVE ``ins(src0, src1) outs(dst0, dst1)`` and TDEINTERLEAVE ``ins(src0, src1 | src)
    outs(dst0, dst1)`` (TINTERLEAVE.md, TDEINTERLEAVE.md, pto_isa.md §3.1; A5 only), per valid row
    i, with VC dst0's valid cols (even):

    * interleave: the stream ``src0[i,0], src1[i,0], src0[i,1], ...`` (2 VC long), its first half
      to dst0, its second half to dst1;
    * deinterleave, two sources: ``combined = src0[i, :VC] ++ src1[i, :VC]``, ``dst0[i, k] =
      combined[2k]``, ``dst1[i, k] = combined[2k+1]``;
    * deinterleave, one source: ``dst0[i, k] = src[i, 2k]``, ``dst1[i, k] = src[i, 2k+1]`` for
      ``k < C / 2`` (C src's valid cols); the rest of a dst row is unspecified (not written)."""

    FAMILY: ClassVar[str] = "interleave"
    HAS_SEMANTICS: ClassVar[bool] = True
    DEINTERLEAVE: ClassVar[bool] = False

    @property
    def page(self) -> str:
        return "TDEINTERLEAVE.md" if self.DEINTERLEAVE else "TINTERLEAVE.md"

    @property
    def single(self) -> bool:
        return self.DEINTERLEAVE and len(self.ins) == 1

    @property
    def dsts(self) -> list[SSAValue]:
        return list(self.outs) if self.outs else list(self.res)

    def verify_family(self) -> None:
        if len(self.dsts) != 2:
            raise VerifyException(f"expects two destinations, dst0 and dst1 ({self.page}), got {len(self.dsts)}")
        n = "1 or 2" if self.DEINTERLEAVE else "2"
        if len(self.ins) not in ((1, 2) if self.DEINTERLEAVE else (2,)):
            raise VerifyException(f"expects {n} sources ({self.page}), got {len(self.ins)}")
        srcs = _tiles(self, len(self.ins), "tile sources")
        dst0, dst1 = (v.type for v in self.dsts)
        if not all(isinstance(t, TileLikeType) for t in (dst0, dst1)):
            raise VerifyException("dst0 and dst1 must be tiles")
        _same_dtype(dst0, dst1, *srcs, rule=f"every tile must have the same element type ({self.page})")
        for t, who in ((dst0, "dst0"), (dst1, "dst1"), *((s, f"src{k}") for k, s in enumerate(srcs))):
            _row_major(t, who)
        _same_valid(dst0, dst1, f"dst0 and dst1 must have the same valid shape ({self.page})")
        if self.single:
            src = srcs[0]
            if _known(src.valid_col) and src.valid_col % 2:
                raise VerifyException(f"src's valid cols must be even ({self.page}), got {src.valid_col}")
            if _known(src.valid_row, dst0.valid_row) and src.valid_row != dst0.valid_row:
                raise VerifyException(f"src and dst0 must have the same valid rows ({self.page}; {src.valid_row} "
                                      f"vs {dst0.valid_row})")
            if _known(src.valid_col, dst0.valid_col) and dst0.valid_col < src.valid_col // 2:
                raise VerifyException(f"dst0's valid cols must hold half of src's ({self.page}; {dst0.valid_col} "
                                      f"vs {src.valid_col} / 2)")
            if src.cols * src.elem_bytes < 512:
                raise VerifyException(f"the source tile must be at least 2 x 256 / sizeof(T) wide ({self.page}; "
                                      f"{src.cols} x {src.elem_bytes} bytes)")
            return
        for k, s in enumerate(srcs):
            _same_valid(s, dst0, f"src{k} and dst0 must have the same valid shape ({self.page})")
        if _known(dst0.valid_col) and dst0.valid_col % 2:
            raise VerifyException(f"the valid cols must be even ({self.page}), got {dst0.valid_col}")


class DequantOp(TileOp):
    """TDEQUANT ``ins(src, scale, offset) outs(dst)`` (TDEQUANT.md):
    ``dst[i, j] = (f32(src[i, j]) - offset[i]) * scale[i]`` over dst's valid region, each step
    rounded to f32 (the page's vsub then vmul); src i8/i16, dst/scale/offset f32, scale and offset
    one value a row (valid cols 1: the page's other readings of more columns disagree, its
    ``min(j, paraCols - 1)`` against its "broadcast in 32-byte blocks")."""

    FAMILY: ClassVar[str] = "dequant"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if len(self.ins) != 3:
            raise VerifyException(f"expects ins(src, scale, offset), got {len(self.ins)} operands")
        src, scale, offset = _tiles(self, 3, "three tile operands: src, scale, offset")
        page = "TDEQUANT.md"
        if src.dtype not in ("i8", "i16"):
            raise VerifyException(f"src must be i8 or i16 ({page}), got {src.dtype}")
        for t, who in ((dst, "dst"), (scale, "scale"), (offset, "offset")):
            if t.dtype != "f32":
                raise VerifyException(f"{who} must be f32 ({page}), got {t.dtype}")
        _row_major(src, "src")
        _row_major(dst, "dst")
        _same_valid(src, dst, f"src and dst must have the same valid shape ({page})")
        for t, who in ((scale, "scale"), (offset, "offset")):
            if _known(t.valid_row, dst.valid_row) and t.valid_row != dst.valid_row:
                raise VerifyException(f"{who}'s valid rows must equal dst's ({page}; {t.valid_row} vs "
                                      f"{dst.valid_row})")
            if _known(t.valid_col) and t.valid_col != 1:
                raise VerifyException(f"{who} must hold one value a row (valid cols 1, {page}'s typical form; "
                                      f"its readings of more columns disagree), got {t.valid_col}")


ROUND_MODES = ("RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD", "NONE")
"""The conversion rounding modes (TCVT's ``rmode``, vf.cvt's ``round``; their math and spellings:
runtime/element_types.py, which reads them here: a dialect does not import the runtime)."""


class ConvertOp(TileOp):
    """TCVT ``{rmode = #pto.round_mode<...>}``: element conversion with a rounding mode."""

    FAMILY: ClassVar[str] = "cvt"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if not 1 <= len(self.ins) <= 2:
            raise VerifyException("expects ins(src[, tmp])")
        (src,) = _tiles(self, 1, "a source tile")[:1]
        if _known(*src.valid_shape, *dst.valid_shape) and src.valid_shape != dst.valid_shape \
                and (src.rows, src.cols) != (dst.rows, dst.cols):
            raise VerifyException(f"expects src and dst to have compatible shapes ({src.rows}x{src.cols} vs "
                                  f"{dst.rows}x{dst.cols}, valid {_dims_text(src.valid_shape)} vs "
                                  f"{_dims_text(dst.valid_shape)})")
        _same_valid(src, dst, "expects src and dst to have the same valid_shape")


MOVE_DOMAINS = {("vec", "vec"), ("mat", "left"), ("mat", "right"), ("mat", "bias"), ("mat", "scaling"),
                ("acc", "vec"), ("acc", "mat"), ("vec", "mat")}
"""TMOV's (src loc, dst loc) pairs (pto_isa.md §3 "Data movement": vec->vec, mat->left/right/bias/
scaling, acc->vec/mat; vec->mat on A5 only, which pto-verify-target checks)."""
ACC_CONVERSIONS = {"f32": ("f32", "f16", "bf16"), "i32": ("i32",)}
"""The element types a move out of acc may convert to without a quantisation operand (the fixpipe,
pto_isa.md §4.8 "Acc types: f32 -> f32/f16/bf16, i32 -> i32")."""


def check_acc_conversion(src: TileLikeType, dst_dtype: str) -> None:
    """A move/store out of acc converts only along the fixpipe's paths; others keep the type."""
    if src.loc.data == "acc":
        if dst_dtype not in ACC_CONVERSIONS.get(src.dtype, ()):
            raise VerifyException(f"acc {src.dtype} converts only to {', '.join(ACC_CONVERSIONS.get(src.dtype, ()))} "
                                  f"(without a quantisation operand), not to {dst_dtype}")
    elif src.dtype != dst_dtype:
        raise VerifyException(f"dst and src element types must match (got {dst_dtype}, {src.dtype})")


class MoveOp(TileOp):
    """TMOV: copy between tiles of the domains of :data:`MOVE_DOMAINS`; out of acc through the
    fixpipe (f32 -> f16/bf16 conversion, ``reluPreMode``)."""

    FAMILY: ClassVar[str] = "mov"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        (src,) = _tiles(self, 1, "a source tile")[:1]
        pair = (src.loc.data, dst.loc.data)
        if pair not in MOVE_DOMAINS:
            raise VerifyException(f"has no move from loc={pair[0]} to loc={pair[1]}")
        if len(self.ins) == 1:
            check_acc_conversion(src, dst.dtype)
        _same_valid(src, dst, "src valid shape must equal dst valid shape")


class LoadOp(TileOp):
    """TLOAD ``ins(%partition_view) outs(%tile)`` (L1: ``%t = pto.tload %pv : (PV) -> T``)."""

    FAMILY: ClassVar[str] = "load"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        dst = _need_dst(self)
        if not self.ins or not isinstance(self.ins[0].type, (PartitionTensorViewType, TensorViewType)):
            if self.ins and not is_tile(self.ins[0].type):
                return  # memref-level forms of the corpus: parsed, not run
            raise VerifyException("expects a !pto.partition_tensor_view source")
        view = self.ins[0].type
        if element_bytes(view.element_type) != dst.elem_bytes:
            raise VerifyException(
                f"sizeof(tile element) must equal sizeof(GM element) ({dst.dtype} vs {dtype_name(view.element_type)})")


def attr_says(op: Operation, keys: tuple[str, ...], word: str) -> bool:
    """The first of the attribute spellings ``keys`` that ``op`` has names ``word`` (an option
    enum such as ``#pto<atomic_type atomic_add>``)."""
    for key in keys:
        a = op.attributes.get(key) or op.properties.get(key)
        if a is not None:
            return word in str(a).lower()
    return False


class StoreOp(TileOp):
    """TSTORE ``ins(%tile) outs(%partition_view)``."""

    FAMILY: ClassVar[str] = "store"
    HAS_SEMANTICS: ClassVar[bool] = True

    @property
    def dst_type(self):  # a store's destination is GM, not a tile
        return None

    @property
    def atomic_add(self) -> bool:
        """``atomicType = #pto<atomic_type atomic_add>`` (also ``#atomic=add``): GM += the value."""
        return attr_says(self, ("atomicType", "atomic_type", "atomic"), "add")

    def verify_family(self) -> None:
        if not self.ins:  # `pto.tstore <PIPE_V>` (fuzzer): nothing to store
            raise VerifyException("expects ins(%tile) outs(%partition_view)")
        if not is_tile(self.ins[0].type):
            if not self.outs:
                raise VerifyException("expects ins(%tile) outs(%partition_view)")
            return
        tile, view = self.ins[0].type, self.outs[0].type if self.outs else None
        if isinstance(view, PartitionTensorViewType) and _known(*view.dims, *tile.valid_shape):
            count = 1
            for d in view.dims:
                count *= d
            if count != tile.valid_row * tile.valid_col:
                raise VerifyException(
                    f"expects dst static element count ({_dims_text(view.dims)} = {count}) to equal the tile's "
                    f"valid element count ({_dims_text(tile.valid_shape)} = {tile.valid_row * tile.valid_col})")
        if self.atomic_add and isinstance(view, PartitionTensorViewType):
            gm = dtype_name(view.element_type)
            if gm not in ATOMIC_ADD_DTYPES:
                raise VerifyException(f"expects an atomic-add destination of element type "
                                      f"{'/'.join(ATOMIC_ADD_DTYPES)} (got {gm})")


ATOMIC_ADD_DTYPES = ("f16", "bf16", "f32", "i8", "i16", "i32")
"""GM element types TSTORE's AtomicAdd takes, on both targets (pto-isa TStore.hpp ``SetAtomicAdd``:
"Dst and src must be half / float / int16_t / int32_t / int8_t / bfloat16_t"; pto_isa.md §4.8
A5 ``set_atomic_{f32,f16,bf16,s32,s16,s8}``)."""


MATMUL_DTYPES = (("i32", "i8", "i8"), ("f32", "f16", "f16"), ("f32", "bf16", "bf16"), ("f32", "f32", "f32"))
"""(acc, left, right) element types of TMATMUL/TGEMV on both targets (ptoas_peer.md §2.3, the PTO IR
manual's a2a3 tmatmul verifier; pto_isa.md §3 Matrix)."""
MATMUL_MAX_DIM = 4095
"""m, k, n in [1, 4095] (the same verifier)."""


class MatmulOp(TileOp):
    """TMATMUL / TGEMV and their ``.acc`` / ``.bias`` forms: ``C = [Cin +] A·B [+ bias]`` with A in
    ``loc=left`` (M x K), B in ``loc=right`` (K x N), C in ``loc=acc`` (M x N), over the valid
    regions; ``ins(a, b)``, ``ins(c_in, a, b)`` (ACC) or ``ins(a, b, bias)`` (BIAS, a 1 x N
    ``loc=bias`` tile).  TGEMV is the same with M = 1."""

    FAMILY: ClassVar[str] = "matmul"
    HAS_SEMANTICS: ClassVar[bool] = True
    ACC: ClassVar[bool] = False
    BIAS: ClassVar[bool] = False

    def operands_abc(self) -> tuple[SSAValue | None, SSAValue, SSAValue, SSAValue | None]:
        """(c_in, a, b, bias)."""
        if self.ACC:
            return self.ins[0], self.ins[1], self.ins[2], None
        return None, self.ins[0], self.ins[1], (self.ins[2] if self.BIAS else None)

    def verify_family(self) -> None:
        c = _need_dst(self)
        n = 3 if self.ACC or self.BIAS else 2
        _tiles(self, n, f"ins({'c_in, ' if self.ACC else ''}a, b{', bias' if self.BIAS else ''}) tiles")
        if len(self.ins) != n:
            raise VerifyException(f"expects {n} tile operands in ins, got {len(self.ins)}")
        c_in, a, b, bias = (v.type if v is not None else None for v in self.operands_abc())
        for t, loc, who in ((a, "left", "a"), (b, "right", "b"), (c, "acc", "dst"), (c_in, "acc", "c_in"),
                            (bias, "bias", "bias")):
            if t is not None and t.loc.data != loc:
                raise VerifyException(f"{who} must be a loc={loc} tile, got loc={t.loc.data}")
        triple = (c.dtype, a.dtype, b.dtype)
        if triple not in MATMUL_DTYPES:
            ok = ", ".join("(" + ", ".join(t) + ")" for t in MATMUL_DTYPES)
            raise VerifyException(f"(acc, left, right) element types ({', '.join(triple)}) are not one of {ok}")
        if c_in is not None and c_in.dtype != c.dtype:
            raise VerifyException(f"c_in element type {c_in.dtype} differs from dst's {c.dtype}")
        if bias is not None and bias.dtype != c.dtype:
            raise VerifyException(f"bias element type {bias.dtype} differs from dst's {c.dtype}")
        (m, k), (k2, nn), (m2, n2) = a.valid_shape, b.valid_shape, c.valid_shape
        if _known(k, k2) and k != k2:
            raise VerifyException(f"a valid cols (K = {k}) differ from b valid rows ({k2})")
        if _known(m, m2) and m != m2:
            raise VerifyException(f"a valid rows (M = {m}) differ from dst valid rows ({m2})")
        if _known(nn, n2) and nn != n2:
            raise VerifyException(f"b valid cols (N = {nn}) differ from dst valid cols ({n2})")
        for d, name in ((m, "m"), (k, "k"), (nn, "n")):
            if _known(d) and not 1 <= d <= MATMUL_MAX_DIM:
                raise VerifyException(f"{name} = {d} is outside [1, {MATMUL_MAX_DIM}]")
        if bias is not None and _known(*bias.valid_shape, n2) and bias.valid_shape[1] != n2:
            raise VerifyException(f"bias valid cols {bias.valid_shape[1]} differ from dst valid cols ({n2})")


class SubTileOp(TileOp):
    """TEXTRACT ``ins(src, row, col) outs(dst)``: ``dst[i, j] = src[row + i, col + j]`` over dst's
    valid region; TINSERT ``ins(src, row, col) outs(dst)``: ``dst[row + i, col + j] = src[i, j]`` over
    src's valid region (pto_isa.md §3 "sub-tile extract/insert at (row, col)")."""

    FAMILY: ClassVar[str] = "subtile"
    HAS_SEMANTICS: ClassVar[bool] = True
    INSERT: ClassVar[bool] = False

    def verify_family(self) -> None:
        dst = _need_dst(self)
        (src,) = _tiles(self, 1, "a source tile")[:1]
        if len(self.ins) != 3 or any(isinstance(v.type, TileLikeType) for v in self.ins[1:]):
            raise VerifyException("expects ins(src, row, col) with index offsets")
        if self.INSERT:
            check_acc_conversion(src, dst.dtype)  # acc -> mat goes through the fixpipe, as TMOV does
        else:
            _same_dtype(dst, src)


class PrintOp(TileOp):
    """TPRINT ``ins(%tile)``: a debug print of the tile's valid region (on PIPE_V, as every tile op
    but the copies); the golden model and the executor both print it to stderr
    (runtime/elementwise.py ``tile_text``), in program order."""

    FAMILY: ClassVar[str] = "print"
    HAS_SEMANTICS: ClassVar[bool] = True

    def verify_family(self) -> None:
        if self.outs or self.res or len(self.ins) != 1 or not is_tile(self.ins[0].type):
            raise VerifyException("expects ins(%tile) and no destination")


class OpaqueTileOp(TileOp):
    """An instruction ptoc parses and type-checks but has no semantics or lowering for."""


# --------------------------------------------------------------------------------------
# The instructions (one class each)
# --------------------------------------------------------------------------------------

def _per_target(a2a3, ascend950):
    return {"a2a3": frozenset(a2a3), "ascend950": frozenset(ascend950)}


ARITH = _per_target(A2A3_ARITH, A5_ARITH64)
FLOAT_ONLY = _per_target(F16_F32, F16_F32 | {"bf16"})
EXPAND_ARITH = _per_target(A2A3_ARITH, A5_ARITH)
EXPAND_FLOAT = _per_target(F16_F32, F16_F32)
BROADCAST = _per_target(B8_B16_B32, B8_B16_B32 | {"i64", "ui64"})
BYTES_1_2_4 = _per_target(B8_B16_B32, B8_B16_B32)
ANY = _per_target(ALL_DTYPES, ALL_DTYPES)


def _op(name: str, base: type[TileOp], dtypes=None, doc: str = "", **extra) -> type[TileOp]:
    ns = {"__doc__": doc or base.__doc__, **extra}
    if dtypes is not None:
        ns["DTYPES"] = dtypes
    return _named_op(name, base, **ns, __annotations__={k: ClassVar for k in ns if k.isupper()})


# Element functions live in runtime/elementwise.py (NumPy); each op names its own with FN="..."
TILE_OPS: dict[str, type[TileOp]] = {}


def _define(name: str, base: type[TileOp], dtypes=None, doc: str = "", **extra) -> type[TileOp]:
    cls = _op(name, base, dtypes, doc, **extra)
    TILE_OPS[cls.name] = cls
    return cls


TAddOp = _define("tadd", ElementwiseBinaryOp, ARITH, "TADD: dst = src0 + src1.", A2A3_VOP="vadd", FN="add")
TSubOp = _define("tsub", ElementwiseBinaryOp, ARITH, "TSUB: dst = src0 - src1.", A2A3_VOP="vsub", FN="sub")
TMulOp = _define("tmul", ElementwiseBinaryOp, ARITH, "TMUL: dst = src0 * src1.", A2A3_VOP="vmul", FN="mul")
TDivOp = _define("tdiv", ElementwiseBinaryOp, FLOAT_ONLY, "TDIV: dst = src0 / src1.", A2A3_VOP="vdiv",
                 FN="div")
TMaxOp = _define("tmax", ElementwiseBinaryOp, ARITH, "TMAX: dst = max(src0, src1) (NaN wins, -0 < +0).",
                 A2A3_VOP="vmax", FN="maximum")
TMinOp = _define("tmin", ElementwiseBinaryOp, ARITH, "TMIN: dst = min(src0, src1) (NaN wins, -0 < +0).",
                 A2A3_VOP="vmin", FN="minimum")

PART_DTYPES = _per_target(A2A3_ARITH, A5_ARITH)
TPartAddOp = _define("tpartadd", PartialBinaryOp, PART_DTYPES, "TPARTADD: src0 + src1 where both are valid.",
                     A2A3_VOP="vadd", FN="add")
TPartMulOp = _define("tpartmul", PartialBinaryOp, PART_DTYPES, "TPARTMUL: src0 * src1 where both are valid "
                     "(dtypes 'analogous to TPARTADD / TPARTMAX / TPARTMIN').", A2A3_VOP="vmul", FN="mul")
TPartMaxOp = _define("tpartmax", PartialBinaryOp, PART_DTYPES, "TPARTMAX: max(src0, src1) where both are valid.",
                     A2A3_VOP="vmax", FN="maximum")
TPartMinOp = _define("tpartmin", PartialBinaryOp, PART_DTYPES, "TPARTMIN: min(src0, src1) where both are valid.",
                     A2A3_VOP="vmin", FN="minimum")

TExpOp = _define("texp", UnaryOp, FLOAT_ONLY, "TEXP: dst = exp(src).", A2A3_VOP="vexp", FN="exp")
TLogOp = _define("tlog", UnaryOp, FLOAT_ONLY, "TLOG: dst = ln(src).", A2A3_VOP="vln", FN="log")
TSqrtOp = _define("tsqrt", UnaryOp, FLOAT_ONLY, "TSQRT: dst = sqrt(src).", A2A3_VOP="vsqrt", FN="sqrt")
TRsqrtOp = _define("trsqrt", UnaryOp, FLOAT_ONLY, "TRSQRT: dst = 1/sqrt(src) (optional tmp).",
                   A2A3_VOP="vrsqrt", MAX_INS=2, FN="rsqrt")
TRecipOp = _define("trecip", UnaryOp, FLOAT_ONLY, "TRECIP: dst = 1/src.", A2A3_VOP="vrec", FN="recip")
TAbsOp = _define("tabs", UnaryOp, _per_target(A2A3_ARITH, A5_ARITH), "TABS: dst = |src|.", A2A3_VOP="vabs",
                 FN="abs_")
TNegOp = _define("tneg", UnaryOp, _per_target(F16_F32 | {"i16", "i32"}, F16_F32 | {"bf16", "i16", "i32"}),
                 "TNEG: dst = -src.", A2A3_VOP="vmuls", BY_SCALAR=-1, FN="neg")
TReluOp = _define("trelu", UnaryOp, _per_target(A2A3_ARITH, A5_ARITH), "TRELU: dst = max(src, 0).",
                  A2A3_VOP="vrelu", FN="relu")

TAddsOp = _define("tadds", TileScalarOp, ARITH, "TADDS: dst = src + s.", A2A3_VOP="vadds", FN="add")
TSubsOp = _define("tsubs", TileScalarOp, ARITH, "TSUBS: dst = src - s.", A2A3_VOP="vadds", FN="sub")
TMulsOp = _define("tmuls", TileScalarOp, ARITH, "TMULS: dst = src * s.", A2A3_VOP="vmuls", FN="mul")
TDivsOp = _define("tdivs", TileScalarOp, FLOAT_ONLY, "TDIVS: dst = src / s, or s / src with the scalar first.",
                  A2A3_VOP="vdivs", SCALAR_FIRST_OK=True, FN="div")
TMaxsOp = _define("tmaxs", TileScalarOp, ARITH, "TMAXS: dst = max(src, s).", A2A3_VOP="vmaxs", FN="maximum")
TMinsOp = _define("tmins", TileScalarOp, ARITH, "TMINS: dst = min(src, s).", A2A3_VOP="vmins", FN="minimum")
# Remainders, bitwise ops, shifts, PReLU (pto_isa.md §3; no page lists their dtypes: the arithmetic
# sets for the remainders, the integer types for the bitwise ops (8-bit ones on A5 only: a2a3 runs
# b8 data as b16, vector_isa.md §1.4), the float types for PReLU)
INT16_32 = frozenset({"i16", "ui16", "i32", "ui32"})
INTS = _per_target(INT16_32, INT16_32 | {"i8", "ui8", "i64", "ui64"})
REM = _per_target(A2A3_ARITH, A5_ARITH)
TRemOp = _define("trem", ElementwiseBinaryOp, REM, "TREM: dst = fmod(src0, src1), + src1 when the signs differ.",
                 A2A3_VOP="vrem", FN="rem", TMP_OK=True)
TFmodOp = _define("tfmod", ElementwiseBinaryOp, REM, "TFMOD: dst = fmod(src0, src1) (C % for integers).",
                  A2A3_VOP="vfmod", FN="fmod")
TAndOp = _define("tand", ElementwiseBinaryOp, INTS, "TAND: dst = src0 & src1.", A2A3_VOP="vand", FN="bitand")
TOrOp = _define("tor", ElementwiseBinaryOp, INTS, "TOR: dst = src0 | src1.", A2A3_VOP="vor", FN="bitor")
TXorOp = _define("txor", ElementwiseBinaryOp, INTS, "TXOR: dst = src0 ^ src1.", A2A3_VOP="vxor", FN="bitxor")
TShlOp = _define("tshl", ElementwiseBinaryOp, INTS, "TSHL: dst = src0 << src1.", A2A3_VOP="vshl", FN="shl")
TShrOp = _define("tshr", ElementwiseBinaryOp, INTS, "TSHR: dst = src0 >> src1 (arithmetic when signed).",
                 A2A3_VOP="vshr", FN="shr")
TPreluOp = _define("tprelu", ElementwiseBinaryOp, FLOAT_ONLY, "TPRELU: dst = src0 > 0 ? src0 : src0 * src1.",
                   A2A3_VOP="vprelu", FN="prelu")
TNotOp = _define("tnot", UnaryOp, INTS, "TNOT: dst = ~src.", A2A3_VOP="vnot", FN="bitnot")
TRemsOp = _define("trems", TileScalarOp, REM, "TREMS: dst = rem(src, s).", A2A3_VOP="vrems", FN="rem", TMP_OK=True)
TFmodsOp = _define("tfmods", TileScalarOp, REM, "TFMODS: dst = fmod(src, s).", A2A3_VOP="vfmods", FN="fmod")
TAndsOp = _define("tands", TileScalarOp, INTS, "TANDS: dst = src & s.", A2A3_VOP="vands", FN="bitand")
TOrsOp = _define("tors", TileScalarOp, INTS, "TORS: dst = src | s.", A2A3_VOP="vors", FN="bitor")
TXorsOp = _define("txors", TileScalarOp, INTS, "TXORS: dst = src ^ s.", A2A3_VOP="vxors", FN="bitxor", TMP_OK=True)
TShlsOp = _define("tshls", TileScalarOp, INTS, "TSHLS: dst = src << s.", A2A3_VOP="vshls", FN="shl")
TShrsOp = _define("tshrs", TileScalarOp, INTS, "TSHRS: dst = src >> s.", A2A3_VOP="vshrs", FN="shr")
TLreluOp = _define("tlrelu", TileScalarOp, FLOAT_ONLY, "TLRELU: dst = src > 0 ? src : src * s.",
                   A2A3_VOP="vlrelu", FN="prelu")
TExpandsOp = _define("texpands", ExpandScalarOp, BROADCAST, "TEXPANDS: dst = s.", A2A3_VOP="vector_dup")

TRowExpandOp = _define("trowexpand", RowExpandOp, BROADCAST)
TColExpandOp = _define("tcolexpand", ColExpandOp, BROADCAST)
TRowExpandAddOp = _define("trowexpandadd", RowExpandBinaryOp, EXPAND_ARITH, A2A3_VOP="vadd", FN="add")
TRowExpandSubOp = _define("trowexpandsub", RowExpandBinaryOp, EXPAND_ARITH, A2A3_VOP="vsub", FN="sub")
TRowExpandMulOp = _define("trowexpandmul", RowExpandBinaryOp, EXPAND_ARITH, A2A3_VOP="vmul", FN="mul")
TRowExpandDivOp = _define("trowexpanddiv", RowExpandBinaryOp, EXPAND_FLOAT, A2A3_VOP="vdiv", FN="div")
TRowExpandMaxOp = _define("trowexpandmax", RowExpandBinaryOp, EXPAND_ARITH, A2A3_VOP="vmax", FN="maximum")
TRowExpandMinOp = _define("trowexpandmin", RowExpandBinaryOp, EXPAND_ARITH, A2A3_VOP="vmin", FN="minimum")
TRowExpandExpdifOp = _define("trowexpandexpdif", RowExpandBinaryOp, EXPAND_FLOAT, A2A3_VOP="vsub",
                             FN="expdif")
TColExpandAddOp = _define("tcolexpandadd", ColExpandBinaryOp, EXPAND_ARITH, A2A3_VOP="vadd", FN="add")
TColExpandSubOp = _define("tcolexpandsub", ColExpandBinaryOp, EXPAND_ARITH, A2A3_VOP="vsub", FN="sub")
TColExpandMulOp = _define("tcolexpandmul", ColExpandBinaryOp, EXPAND_ARITH, A2A3_VOP="vmul", FN="mul")
TColExpandDivOp = _define("tcolexpanddiv", ColExpandBinaryOp, EXPAND_FLOAT, A2A3_VOP="vdiv", FN="div")
TColExpandMaxOp = _define("tcolexpandmax", ColExpandBinaryOp, EXPAND_ARITH, A2A3_VOP="vmax", FN="maximum")
TColExpandMinOp = _define("tcolexpandmin", ColExpandBinaryOp, EXPAND_ARITH, A2A3_VOP="vmin", FN="minimum")
TColExpandExpdifOp = _define("tcolexpandexpdif", ColExpandBinaryOp, EXPAND_FLOAT, A2A3_VOP="vsub",
                             FN="expdif")

ROW_SUM_DTYPES = _per_target(A2A3_ARITH, A2A3_ARITH | {"i64", "ui64"})
ROW_MAXMIN_DTYPES = _per_target(A2A3_ARITH, A2A3_ARITH | {"i64", "ui64", "i8", "ui8"})
COL_DTYPES = _per_target(A2A3_ARITH, A5_ARITH64)
TRowSumOp = _define("trowsum", RowReduceOp, ROW_SUM_DTYPES, A2A3_VOP="vcadd", FN="reduce_sum")
TRowMaxOp = _define("trowmax", RowReduceOp, ROW_MAXMIN_DTYPES, A2A3_VOP="vcmax", FN="reduce_max")
TRowMinOp = _define("trowmin", RowReduceOp, ROW_MAXMIN_DTYPES, A2A3_VOP="vcmin", FN="reduce_min")
TRowProdOp = _define("trowprod", RowReduceOp, _per_target(A2A3_ARITH, A2A3_ARITH | {"bf16", "ui16", "ui32"}),
                     "TROWPROD: dst[i, 0] = the product of row i, left to right (the CPU simulator's order).",
                     FAMILY="rowprod", FN="reduce_prod")
TColSumOp = _define("tcolsum", ColReduceOp, COL_DTYPES, A2A3_VOP="vadd", FN="reduce_sum")
TColMaxOp = _define("tcolmax", ColReduceOp, COL_DTYPES, A2A3_VOP="vmax", FN="reduce_max")
TColMinOp = _define("tcolmin", ColReduceOp, COL_DTYPES, A2A3_VOP="vmin", FN="reduce_min")
TColProdOp = _define("tcolprod", ColReduceOp, _per_target(A2A3_ARITH, A2A3_ARITH | {"bf16", "ui16", "ui32"}),
                     A2A3_VOP="vmul", FN="reduce_prod")
ROW_ARG_DTYPES = _per_target(F16_F32, F16_F32)
COL_ARG_DTYPES = _per_target(F16_F32 | {"ui16", "ui32"}, F16_F32 | {"ui16", "ui32", "i16", "i32", "i8", "ui8"})
"""TCOLARGMAX.md / TCOLARGMIN.md: A2A3 half/float/uint16/uint32; A5 every 8-, 16- and 32-bit type."""
TRowArgMaxOp = _define("trowargmax", ArgReduceOp, ROW_ARG_DTYPES, FAMILY="rowarg", FN="reduce_argmax")
TRowArgMinOp = _define("trowargmin", ArgReduceOp, ROW_ARG_DTYPES, FAMILY="rowarg", FN="reduce_argmin")
TColArgMaxOp = _define("tcolargmax", ArgReduceOp, COL_ARG_DTYPES, FAMILY="colarg", AXIS=0, FN="reduce_argmax")
TColArgMinOp = _define("tcolargmin", ArgReduceOp, COL_ARG_DTYPES, FAMILY="colarg", AXIS=0, FN="reduce_argmin")
TPairReduceSumOp = _define("tpairreducesum", PairReduceOp, _per_target(F16_F32, F16_F32), A2A3_VOP="vcpadd",
                           FN="add")

TCvtOp = _define("tcvt", ConvertOp, ANY, FN="convert")
FLOAT_ARITH = _per_target(F16_F32, F16_F32 | {"bf16"})
TAddcOp = _define("taddc", ComposedOp, REM, "TADDC: dst = a + b + c.", N_TILES=3,
                  STEPS=(("vadd", "a", "b"), ("vadd", "t", "c")))
TSubcOp = _define("tsubc", ComposedOp, REM, "TSUBC: dst = a - b + c.", N_TILES=3,
                  STEPS=(("vsub", "a", "b"), ("vadd", "t", "c")))
TSubReluOp = _define("tsubrelu", ComposedOp, REM, "TSUBRELU: dst = relu(a - b).",
                     STEPS=(("vsub", "a", "b"), ("vrelu", "t")))
TMulAddDstOp = _define("tmuladddst", ComposedOp, FLOAT_ARITH, "TMULADDDST: dst = a * b + dst.",
                       STEPS=(("vmul", "a", "b"), ("vadd", "t", "dst")), READS_DST=True)
TFusedMulAddOp = _define("tfusedmuladd", ComposedOp, FLOAT_ARITH, "TFUSEDMULADD: dst = a * dst + b.",
                         STEPS=(("vmul", "a", "dst"), ("vadd", "t", "b")), READS_DST=True)
TFusedMulAddReluOp = _define("tfusedmuladdrelu", ComposedOp, FLOAT_ARITH,
                             "TFUSEDMULADDRELU: dst = relu(a * dst + b).", READS_DST=True,
                             STEPS=(("vmul", "a", "dst"), ("vadd", "t", "b"), ("vrelu", "t")))
TPowOp = _define("tpow", ComposedOp, FLOAT_ARITH, "TPOW: dst = a ** b (computed in double, rounded once).",
                 STEPS=(("vpow", "a", "b"),), TMP_AT=2)
TPowsOp = _define("tpows", ComposedOp, FLOAT_ARITH, "TPOWS: dst = a ** s (computed in double, rounded once).",
                  STEPS=(("vpows", "a", "s"),), N_TILES=1, SCALAR=True, TMP_AT=2)
TAddscOp = _define("taddsc", ComposedOp, _per_target(A2A3_ARITH, A2A3_ARITH),
                   "TADDSC ``ins(src0, s, src1)``: dst = (src0 + s) + src1.", SCALAR=True,
                   STEPS=(("vadds", "a", "s"), ("vadd", "t", "b")))
TSubscOp = _define("tsubsc", ComposedOp, _per_target(A2A3_ARITH, A2A3_ARITH),
                   "TSUBSC ``ins(src0, s, src1)``: dst = (src0 - s) + src1.", SCALAR=True,
                   STEPS=(("vadds", "a", "-s"), ("vadd", "t", "b")))
TAddReluConvOp = _define("taddreluconv", ReluConvOp, A2A3_VOP="vadd", FN="add_relu_conv")
TSubReluConvOp = _define("tsubreluconv", ReluConvOp, A2A3_VOP="vsub", FN="sub_relu_conv")
TAddDeqReluOp = _define("tadddeqrelu", DeqReluOp, FN="add_deq_relu")
TAxpyOp = _define("taxpy", AxpyOp, _per_target(F16_F32, F16_F32 | {"bf16"}))
TCiOp = _define("tci", FillOp, _per_target(INT16_32, INT16_32 | {"i8", "ui8", "i64", "ui64"}),
                "TCI ``{descending}``: dst[i, j] = s + k (descending: s - k), k = i * C + j the position in the "
                "valid region in row-major order, wrapping in the element type.", FAMILY="ci", FN="sequence")
TTriOp = _define("ttri", FillOp, _per_target(A2A3_ARITH, A5_ARITH),
                 "TTRI ``{upperOrLower}``: the triangular mask with diagonal offset s (an integer): 1 where "
                 "j <= i + s (0, lower) or j >= i + s (1, upper), else 0.", FAMILY="tri", FN="triangle")
TTransOp = _define("ttrans", TransposeOp, BROADCAST)
TScatterOp = _define("tscatter", ScatterOp, _per_target(B8_B16_B32, B8_B16_B32))
TGatherOp = _define("tgather", GatherOp, _per_target(B8_B16_B32 - {"i8", "ui8"}, ALL_DTYPES))
TPartArgMaxOp = _define("tpartargmax", PartialArgOp, EXPAND_FLOAT,
                        "TPARTARGMAX: the larger value and its index where both sources are valid.")
TPartArgMinOp = _define("tpartargmin", PartialArgOp, EXPAND_FLOAT,
                        "TPARTARGMIN: the smaller value and its index where both sources are valid.", IS_MAX=False)
TCmpOp = _define("tcmp", CompareOp, _per_target({"i32", "f16", "f32"}, B8_B16_B32 | {"i64", "ui64"}),
                 "TCMP: the packed predicate of src0 cmpMode src1 (TCMP.md; A5 64-bit: include/pto/npu/a5/TCmp.hpp).")
TCmpsOp = _define("tcmps", CompareOp, _per_target({"i16", "ui16", "i32", "f16", "f32"}, B8_B16_B32),
                  "TCMPS: the packed predicate of src cmpMode s (TCMPS.md).", SCALAR=True)
SEL_A2A3 = ("i16", "i32", "f16", "f32")
"""TSEL/TSELS element types on A2/A3: PTOAS's verifier (lib/PTO/IR/PTO.cpp, narrower than TSEL.md's list)."""
TSelOp = _define("tsel", SelectOp, _per_target(SEL_A2A3, ALL_DTYPES),
                 "TSEL: src0 where the mask bit is 1, else src1 (TSEL.md).")
TSelsOp = _define("tsels", SelectOp, _per_target(SEL_A2A3, ALL_DTYPES - {"bf16"}),
                  "TSELS: src where the mask bit is 1, else the scalar (TSELS.md).", SCALAR=True, TMP_AT=2)
TMGatherOp = _define("mgather", MGatherOp, BYTES_1_2_4)  # MGATHER.md: the same nine types on both
TMScatterOp = _define("mscatter", MScatterOp, BYTES_1_2_4)
TGatherbOp = _define("tgatherb", GatherOp, BYTES_1_2_4, BYTE_OFFSETS=True)  # "element size 1, 2, or 4 bytes"
TSort32Op = _define("tsort32", Sort32Op, _per_target(F16_F32, F16_F32), FN="sort_pairs")
TMrgSortOp = _define("tmrgsort", MrgSortOp, _per_target(F16_F32, F16_F32), FN="merge_pairs")
TFillPadOp = _define("tfillpad", FillPadOp, BYTES_1_2_4, FN="fill_pad")
TFillPadExpandOp = _define("tfillpad_expand", FillPadOp, BYTES_1_2_4, EXPAND=True, FN="fill_pad")
TFillPadInplaceOp = _define("tfillpad_inplace", FillPadOp, BYTES_1_2_4, INPLACE=True, FN="fill_pad")
TInterleaveOp = _define("tinterleave", InterleaveOp, _per_target(frozenset(), B8_B16_B32), FN="interleave")
TDeinterleaveOp = _define("tdeinterleave", InterleaveOp, _per_target(frozenset(), B8_B16_B32), DEINTERLEAVE=True,
                          FN="deinterleave")
TDequantOp = _define("tdequant", DequantOp, _per_target(frozenset({"f32"}), frozenset({"f32"})),
                     FN="dequant")
TConcatOp = _define("tconcat", ConcatOp, _per_target(B8_B16_B32, B8_B16_B32 | {"i64", "ui64"}))
TMovOp = _define("tmov", MoveOp, ANY)
TMatmulOp = _define("tmatmul", MatmulOp)
TMatmulAccOp = _define("tmatmul.acc", MatmulOp, ACC=True)
TMatmulBiasOp = _define("tmatmul.bias", MatmulOp, BIAS=True)
TGemvOp = _define("tgemv", MatmulOp)
TGemvAccOp = _define("tgemv.acc", MatmulOp, ACC=True)
TGemvBiasOp = _define("tgemv.bias", MatmulOp, BIAS=True)
TExtractOp = _define("textract", SubTileOp)
TInsertOp = _define("tinsert", SubTileOp, INSERT=True)
TLoadOp = _define("tload", LoadOp, ANY)
TPrintOp = _define("tprint", PrintOp, ANY)
TStoreOp = _define("tstore", StoreOp, ANY)

# Instructions ptoc parses and verifies structurally but does not run (yet): the rest of the
# catalogue (reference/pto_isa.md §3) and the PTOAS-specific ops of the corpus.
OPAQUE_TILE_OP_NAMES = (
    "thistogram",
    "tstore_fp", "tstore.fp", "tprefetch", "tprefetch_async",
    "tmatmul.mx", "tmatmul.mx.acc", "tmatmul.mx.bias", "tgemv.mx", "tgemv.mx.acc", "tgemv.mx.bias",
    "tmov.fp", "tmov_fp", "treshape", "textract_fp", "tinsert_fp",
    "timg2col", "tpack", "tsubview",
    "tquant", "trandom", "tsync", "tget_scale_addr", "tpush", "tpop", "tfree",
    "tpush_to_aiv", "tpush_to_aic", "tpop_from_aic", "tpop_from_aiv", "tfree_from_aic", "tfree_from_aiv",
    "tput_async", "tget_async", "tput", "tget",
)
for _name in OPAQUE_TILE_OP_NAMES:
    _define(_name, OpaqueTileOp)

NO_SEMANTICS = {
    "pto.trandom": "a random fill: " + ISA_TREE + "docs/isa/TRANDOM.md calls it a 'ChaCha-like' counter-based "
                   "generator without the rounds' math, while include/pto/cpu/TRandom.hpp computes a "
                   "Philox-style multiply-xor round; the PTO-AS form's key and counter tiles have no layout",
    "pto.tquant": ISA_TREE + "docs/isa/TQUANT.md: the MX forms' stage 3 'uses hardware cast with stochastic "
                  "rounding'; its INT8 forms give q = round(x / scale) + offset in [-128, 127], while "
                  "include/pto/cpu/TQuant.hpp multiplies by the parameter (invScale) and clamps INT8_ASYM to "
                  "[0, 255]",
    "pto.thistogram": ISA_TREE + "docs/isa/THISTOGRAM.md: 'the exact in-memory interleaved layout of the bin "
                      "counts (N0/N1 dual banks, even/odd split) is implementation-defined'",
    "pto.tpack": ISA_TREE + "docs/isa/tile/ops/layout-and-rearrangement/tpack.md: 'Semantics are "
                 "instruction-specific', constraints 'Refer to backend-specific legality checks'; no TPACK "
                 "implementation in include/pto (cpu, npu/a2a3, npu/a5): neither truncation nor saturation is given",
    "pto.timg2col": ISA_TREE + "docs/isa/TIMG2COL.md: 'This instruction is target/implementation-specific' "
                    "(window, stride and padding come from an Img2colTileConfig the PTO-AS form does not carry)",
    "pto.tprefetch": "TPREFETCH.md: 'Semantics and caching behavior are target/implementation-defined' (a hint "
                     "into a 'tile-local cache/buffer (implementation-defined)')",
    "pto.tprefetch_async": "TPREFETCH_ASYNC.md: an L2 warm-up through SDMA with a host-prepared workspace and an "
                           "async event; the page gives no PTO-AS form and no effect on tile data",
}
"""Catalogue instructions ptoc does not run because their pages give no exact semantics.  The golden
model and both lowerings reject them located, with the reason (issue 12: never guess silently)."""


def no_semantics(op: Operation) -> str | None:
    """``"no semantics: REASON"`` for an op of :data:`NO_SEMANTICS`, else None."""
    reason = NO_SEMANTICS.get(op.name)
    return None if reason is None else f"no semantics: {reason}"


# --------------------------------------------------------------------------------------
# Non-instruction ops: GM views, allocation, placement, events
# --------------------------------------------------------------------------------------


def _print_kw_list(printer: Printer, key: str, values: Sequence[SSAValue]) -> None:
    printer.print_string(f"{key} = [")
    printer.print_list(values, printer.print_operand)
    printer.print_string("]")


@irdl_op_definition
class MakeTensorViewOp(IRDLOperation):
    """``%tv = pto.make_tensor_view %ptr, shape = [..], strides = [..] : !pto.tensor_view<..>``."""

    name = "pto.make_tensor_view"
    ptr = var_operand_def()
    shape_ = var_operand_def()
    strides_ = var_operand_def()
    result = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, ptr: SSAValue, shape: Sequence[SSAValue], strides: Sequence[SSAValue], result_type,
                 attributes=None):
        super().__init__(operands=[[ptr], list(shape), list(strides)], result_types=[result_type],
                         attributes=attributes or {})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.ptr[0])
        printer.print_string(", ")
        _print_kw_list(printer, "shape", self.shape_)
        printer.print_string(", ")
        _print_kw_list(printer, "strides", self.strides_)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        ptr = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        lists = []
        for key in ("shape", "strides"):
            parser.parse_keyword(key)
            parser.parse_punctuation("=")
            lists.append(parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())))
            parser.parse_optional_punctuation(",")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        rt = parser.parse_type()
        ptr_type = PtrType(rt.element_type) if isinstance(rt, TensorViewType) else rt
        return cls(parser.resolve_operand(ptr, ptr_type), lists[0], lists[1], rt, attrs)

    def verify_(self) -> None:
        rt = self.result.type
        if not isinstance(rt, TensorViewType):
            raise VerifyException("result must be a !pto.tensor_view")
        if len(self.shape_) != len(self.strides_):
            raise VerifyException(f"shape has {len(self.shape_)} entries but strides has {len(self.strides_)}")
        # PTOAS's older spelling `!pto.tensor_view<2xf32>` gives the rank, not a size.
        legacy_rank = len(rt.dims) == 1 and rt.dims[0] == len(self.shape_)
        if len(self.shape_) != len(rt.dims) and not legacy_rank:
            raise VerifyException(f"shape has {len(self.shape_)} entries but the view type has rank {len(rt.dims)}")
        if len(self.ptr) != 1:
            raise VerifyException("expects one pointer operand")
        pt = self.ptr[0].type
        if isinstance(pt, PtrType) and pt.element_type != rt.element_type:
            raise VerifyException(
                f"view element type {dtype_name(rt.element_type)} differs from the pointer's "
                f"{dtype_name(pt.element_type)}")


@irdl_op_definition
class PartitionViewOp(IRDLOperation):
    """``%pv = pto.partition_view %tv, offsets = [..], sizes = [..] : TV -> PV``."""

    name = "pto.partition_view"
    source = var_operand_def()
    offsets = var_operand_def()
    sizes = var_operand_def()
    result = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, source: SSAValue, offsets, sizes, result_type, attributes=None):
        init_groups(self, ((source,), offsets, sizes), (result_type,), attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source[0])
        printer.print_string(", ")
        _print_kw_list(printer, "offsets", self.offsets)
        printer.print_string(", ")
        _print_kw_list(printer, "sizes", self.sizes)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source[0].type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        lists = []
        for key in ("offsets", "sizes"):
            parser.parse_keyword(key)
            parser.parse_punctuation("=")
            lists.append(parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())))
            parser.parse_optional_punctuation(",")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        st = parser.parse_type()
        parser.parse_punctuation("->")
        rt = parser.parse_type()
        return cls(parser.resolve_operand(src, st), lists[0], lists[1], rt, attrs)

    def verify_(self) -> None:
        if len(self.source) != 1:
            raise VerifyException("expects one source view")
        if len(self.offsets) != len(self.sizes):
            raise VerifyException(f"{len(self.offsets)} offsets but {len(self.sizes)} sizes")
        st = self.source[0].type
        legacy_rank = isinstance(st, TensorViewType) and len(st.dims) == 1 and st.dims[0] == len(self.offsets)
        if isinstance(st, TensorViewType) and len(self.offsets) != len(st.dims) and not legacy_rank:
            raise VerifyException(f"{len(self.offsets)} offsets for a rank-{len(st.dims)} tensor view")
        rt = self.result.type
        if isinstance(rt, PartitionTensorViewType) and isinstance(st, TensorViewType):
            if rt.element_type != st.element_type:
                raise VerifyException("partition element type must equal the tensor view's")
        self._verify_constant_bounds()

    def _verify_constant_bounds(self) -> None:
        """Constant offsets and sizes of a view of constant shape stay inside it (else every run
        would read or write GM the view does not cover)."""
        view = self.source[0].owner
        if not isinstance(view, MakeTensorViewOp) or len(view.shape_) != len(self.offsets):
            return
        for k, (dim, off, size) in enumerate(zip(view.shape_, self.offsets, self.sizes)):
            d, o, n = (constant_int(v) for v in (dim, off, size))
            if o is not None and o < 0:
                raise VerifyException(f"offset {o} of dimension {k} is negative")
            if d is not None and o is not None and n is not None and o + n > d:
                raise VerifyException(f"partition [{o}, {o + n}) of dimension {k} is past the view's extent {d}")


@irdl_op_definition
class AllocTileOp(IRDLOperation):
    """``%t = pto.alloc_tile [addr = %a] [valid_row = %r valid_col = %c] : !pto.tile_buf<..>``."""

    name = "pto.alloc_tile"
    addr = opt_operand_def()
    valid_row = opt_operand_def()
    valid_col = opt_operand_def()
    result = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, result_type, addr=None, valid_row=None, valid_col=None, attributes=None):
        super().__init__(operands=[[addr] if addr else [], [valid_row] if valid_row else [],
                                   [valid_col] if valid_col else []],
                         result_types=[result_type], attributes=attributes or {})

    def print(self, printer: Printer) -> None:
        for key in ("addr", "valid_row", "valid_col"):
            v = getattr(self, key)
            if v is not None:
                printer.print_string(f" {key} = ")
                printer.print_operand(v)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        vals = {}
        while (key := parser.parse_optional_keyword_in(("addr", "valid_row", "valid_col"))) is not None:
            parser.parse_punctuation("=")
            vals[key] = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        rt = parser.parse_type()
        types = {"addr": IntegerType(64), "valid_row": IndexType(), "valid_col": IndexType()}
        resolved = {k: parser.resolve_operand(v, types[k]) for k, v in vals.items()}
        return cls(rt, **resolved, attributes=attrs)

    def verify_(self) -> None:
        t = self.result.type
        if not isinstance(t, TileBufType):
            raise VerifyException("result must be a !pto.tile_buf")
        if (t.valid_row == DYNAMIC) != (self.valid_row is not None):
            raise VerifyException("valid_row must be given exactly when the type's v_row is '?'")
        if (t.valid_col == DYNAMIC) != (self.valid_col is not None):
            raise VerifyException("valid_col must be given exactly when the type's v_col is '?'")


@irdl_op_definition
class TAssignOp(IRDLOperation):
    """Binds a tile's buffer to a UB address (manual placement).

    PTOAS form: ``%t1 = pto.tassign %t, %addr : T -> T`` (``%addr : i64``).
    Doc form:   ``pto.tassign %t, @tile(0x1000) : T`` (no result; the front end puts it
    right after ``%t``'s definition, since the ISA pages write it before the tile exists).
    """

    name = "pto.tassign"
    tile = var_operand_def()
    addr_value = var_operand_def()
    result = var_result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, tile: SSAValue, addr: SSAValue | int, result_type=None, attributes=None):
        attrs = dict(attributes or {})
        if isinstance(addr, int):
            attrs["addr"] = IntegerAttr(addr, 64)
            operands = [[tile], []]
        else:
            operands = [[tile], [addr]]
        super().__init__(operands=operands, result_types=[[result_type] if result_type else []],
                         attributes=attrs)

    @property
    def static_addr(self) -> int | None:
        a = self.attributes.get("addr")
        return a.value.data if isinstance(a, IntegerAttr) else None

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tile[0])
        printer.print_string(", ")
        if self.static_addr is not None:
            printer.print_string(f"@tile({self.static_addr:#x})")
        else:
            printer.print_operand(self.addr_value[0])
        rest = {k: v for k, v in self.attributes.items() if k != "addr"}
        if rest:
            printer.print_string(" ")
            printer.print_attr_dict(rest)
        printer.print_string(" : ")
        printer.print_attribute(self.tile[0].type)
        if self.result:
            printer.print_string(" -> ")
            printer.print_attribute(self.result[0].type)

    @classmethod
    def parse(cls, parser: Parser):
        tile = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        addr: object
        if parser.parse_optional_symbol_name() is not None:
            parser.parse_punctuation("(")
            addr = parser.parse_integer()
            parser.parse_punctuation(")")
        else:
            addr = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tt = parser.parse_type()
        rt = None
        if parser.parse_optional_punctuation("->"):
            rt = parser.parse_type()
        tile_v = parser.resolve_operand(tile, tt)
        if not isinstance(addr, int):
            addr = parser.resolve_operand(addr, IntegerType(64))
        return cls(tile_v, addr, rt, attrs)

    def verify_(self) -> None:
        if len(self.tile) != 1 or not is_tile(self.tile[0].type):
            raise VerifyException("expects one tile operand")
        if len(self.addr_value) + (self.static_addr is not None) != 1:
            raise VerifyException("expects one address (an i64 value or @tile(ADDR))")
        if self.result and self.result[0].type != self.tile[0].type:
            raise VerifyException("result type must equal the tile's type")
        a = self.static_addr
        if a is not None and a < 0:
            raise VerifyException(f"address {a} is negative")


_args_attr = functools.cache(ArrayAttr)
"""The ``args`` of a sync op: one attribute per distinct list (pto-insert-sync makes thousands of
ops from a few dozen)."""


class _BracketAttrsOp(IRDLOperation):
    """Sync ops written ``pto.OP [#a, #b, ...]`` (PTOAS) with attribute arguments and optional SSA ones."""

    args = prop_def(ArrayAttr)
    operands_ = var_operand_def()

    def __init__(self, args: Sequence[Attribute], operands: Sequence[SSAValue] = (), attributes=None,
                 location=None):
        # what xDSL's builder makes of these arguments, without its per-op checks (pto-insert-sync
        # makes thousands of these ops)
        Operation.__init__(self, operands=tuple(operands), properties={"args": _args_attr(tuple(args))},
                           attributes=attributes or {}, location=location)

    def print(self, printer: Printer) -> None:
        printer.print_string(" [")
        printer.print_list(self.args.data, printer.print_attribute)
        if self.operands_:
            if self.args.data:
                printer.print_string(", ")
            printer.print_list(self.operands_, printer.print_operand)
        printer.print_string("]")
        if self.operands_:
            printer.print_string(" : ")
            printer.print_list([v.type for v in self.operands_], printer.print_attribute)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        args: list[Attribute] = []
        unresolved = []

        def one():
            if parser._current_token.text.startswith("%"):
                unresolved.append(parser.parse_unresolved_operand())
            else:
                args.append(parser.parse_attribute())

        parser.parse_comma_separated_list(parser.Delimiter.SQUARE, one)
        operands = []
        if unresolved:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            operands = [parser.resolve_operand(u, t) for u, t in zip(unresolved, types)]
        attrs = parser.parse_optional_attr_dict()
        return cls(args, operands, attrs)


SYNC_OPS = {
    n: _named_op(n, _BracketAttrsOp, __doc__=d) for n, d in (
        ("record_event", "``pto.record_event [src_op, dst_op, event]`` (PTOAS)."),
        ("wait_event", "``pto.wait_event [src_op, dst_op, event]`` (PTOAS)."),
        ("set_flag", "``pto.set_flag [#pto.pipe<SRC>, #pto.pipe<DST>, #pto.event<EVENT_IDn>]``."),
        ("wait_flag", "``pto.wait_flag [#pto.pipe<SRC>, #pto.pipe<DST>, #pto.event<EVENT_IDn>]``."),
        ("set_flag_dyn", "``pto.set_flag_dyn [src, dst, %eid]``."),
        ("wait_flag_dyn", "``pto.wait_flag_dyn [src, dst, %eid]``."),
        ("barrier", "``pto.barrier <PIPE_V>``: a pipe barrier (args[0] is a #pto.pipe)."),
        ("barrier_sync", "``pto.barrier_sync [#pto.sync_op_type<..>]``."),
        ("get_buf", "``pto.get_buf [#pto.pipe_event_type<..>, id]`` (A5)."),
        ("rls_buf", "``pto.rls_buf [#pto.pipe_event_type<..>, id]`` (A5)."),
    )
}
SYNC_OPS_BY_NAME = {cls.name: cls for cls in SYNC_OPS.values()}
RecordEventOp = SYNC_OPS["record_event"]
WaitEventOp = SYNC_OPS["wait_event"]
SetFlagOp = SYNC_OPS["set_flag"]
WaitFlagOp = SYNC_OPS["wait_flag"]
BarrierOp = SYNC_OPS["barrier"]


SECTION_OPS = ("pto.section.cube", "pto.section.vector")
"""A kernel's cube and vector parts.  With no cube<->vector pipe op ptoc runs their bodies inline, in
program order (one machine has both halves' pipes and memories); a kernel that uses the pipe runs
each part on its own cores, concurrently (runtime/pipes.py)."""


class GenericPtoOp(IRDLOperation):
    """PTOAS ops outside the tile ISA (sections, pipes, buffers, scalars); printed in generic form."""

    traits = traits_def(NoTerminator())
    operands_ = var_operand_def()
    results_ = var_result_def()
    regions_ = var_region_def()

    def __init__(self, operands=(), result_types=(), attributes=None, regions=()):
        super().__init__(operands=[list(operands)], result_types=[list(result_types)],
                         attributes=attributes or {}, regions=[list(regions)])

    def verify_(self) -> None:
        check_rules(self)


GENERIC_OP_NAMES = (
    "get_block_idx", "get_block_num", "get_subblock_idx", "get_subblock_num", "addptr", "load_scalar",
    "store_scalar", "get_tensor_view_dim", "set_validshape", "subset", "declare_tile", "bind_tile",
    "section.cube", "section.vector", "reserve_buffer", "import_reserved_buffer", "pointer_cast",
    "aic_initialize_pipe", "aiv_initialize_pipe", "initialize_l2l_pipe", "initialize_l2g2l_pipe",
    "declare_eventid_array", "eventid_array_get", "eventid_array_set", "build_async_session",
    "wait_async_event", "test_async_event", "sync.set", "sync.wait", "tgetval", "tsetval", "talloc", "subview",
    "valid_view",  # ptoc's own: a set_validshape as a value (passes/set_validshape.py)
)
GENERIC_OPS: dict[str, type[IRDLOperation]] = {}
for _name in GENERIC_OP_NAMES:
    GENERIC_OPS[f"pto.{_name}"] = _named_op(_name, GenericPtoOp, __doc__=GenericPtoOp.__doc__)


PTO = Dialect(
    "pto",
    [*TILE_OPS.values(), MakeTensorViewOp, PartitionViewOp, AllocTileOp, TAssignOp, *SYNC_OPS.values(),
     *GENERIC_OPS.values()],
    [TileType, TileBufType, TensorViewType, PartitionTensorViewType, PtrType, *RAW_ATTRS.values(),
     *RAW_TYPES.values()],
)
decode_segments_once(PTO.operations)


def constant_int(value: SSAValue) -> int | None:
    """The integer an ``arith.constant`` defines, else None."""
    owner = value.owner
    if isinstance(owner, Operation) and owner.name == "arith.constant":
        v = owner.properties.get("value", owner.attributes.get("value"))
        if isinstance(v, IntegerAttr):
            return v.value.data
    return None


SUBBLOCK = {"pto.get_subblock_idx": 0, "pto.get_subblock_num": 1}
"""Outside a mixed kernel each block ptoc runs is one vector core: sub-block 0 of 1 (``--blocks``
counts vector cores); a mixed kernel's vector part runs on sub-blocks 0 and 1 (runtime/pipes.py)."""
EVENTID_ARRAY_OPS = ("pto.declare_eventid_array", "pto.eventid_array_set", "pto.eventid_array_get")


def eventid_array_size(t) -> int:
    """N of ``!pto.eventid_array<N>``."""
    body = getattr(getattr(t, "body", None), "data", "")
    digits = "".join(ch for ch in body if ch.isdigit())
    if not digits:
        raise VerifyException(f"event-id array type {t} has no size")
    return int(digits)


def view_root(value: SSAValue) -> SSAValue:
    """What a GM view or a re-bound tile is made from: follows ``pto.partition_view``,
    ``pto.make_tensor_view``, ``pto.addptr`` and ``pto.tassign`` results back to the first value
    that is none of them (a kernel's GM pointer argument when the chain is static)."""
    for _ in range(32):
        owner = value.owner
        if isinstance(owner, PartitionViewOp):
            value = owner.source[0]
        elif isinstance(owner, MakeTensorViewOp):
            value = owner.ptr[0]
        elif isinstance(owner, GenericPtoOp) and owner.name == "pto.addptr" and owner.operands:
            value = owner.operands[0]
        elif isinstance(owner, TAssignOp) and owner.result:
            value = owner.tile[0]
        else:
            break
    return value



# --------------------------------------------------------------------------------------
# Rules PTOAS checks on ops ptoc parses but does not run (its negative tests, RUN: not ptoas)
# --------------------------------------------------------------------------------------
# Each rule raises VerifyException with PTOAS's wording of the rule, so a rejected file names it.


def _int_attr(op: IRDLOperation, key: str) -> int | None:
    a = op.attributes.get(key, op.properties.get(key))
    if isinstance(a, IntegerAttr):
        return a.value.data
    return None


def _rule_tput_async(op: IRDLOperation) -> None:
    dst = op.operands[0].type if op.operands else None
    if isinstance(dst, MemRefType) and (len(dst.get_shape()) != 1 or DYNAMIC_INDEX in dst.get_shape()):
        raise VerifyException("expects dst to be a static flat contiguous logical 1D GM memref")


def _rule_tget_scale_addr(op: TileOp) -> None:
    dst = op.dst_type
    if dst is not None and dst.loc.data != "scaling":
        raise VerifyException(f"expects dst to be in the scaling address space (got loc={dst.loc.data})")


def _rule_tpop(op: TileOp) -> None:
    dst = op.dst_type
    if op.ins and dst is not None and dst.valid_shape != (DYNAMIC, DYNAMIC):
        raise VerifyException("expects tile result to have dynamic validShape (?, ?) when valid_row/valid_col "
                              "operands are provided")


PIPE_SPLITS = {0: "no split", 1: "up/down", 2: "left/right"}
"""TPUSH/TPOP/TFREE ``split``: how the two vector sub-blocks share a tile (pto-isa TPUSH)."""


def _rule_split(op: IRDLOperation) -> None:
    split = op.attributes.get("split", op.properties.get("split"))
    if split is not None and _int_attr(op, "split") not in PIPE_SPLITS:
        *each, last = (f"{k} ({v})" for k, v in PIPE_SPLITS.items())
        raise VerifyException(f"expects 'split' to be {', '.join(each)} or {last}, got {split}")


def _pipe_buffer_source(v: SSAValue) -> str | None:
    owner = v.owner
    name = getattr(owner, "name", "")
    return name if name in ("pto.reserve_buffer", "pto.import_reserved_buffer") else None


def _rule_initialize_l2l_pipe(op: IRDLOperation) -> None:
    if "flag_base" in op.attributes or not op.operands:
        return
    src = _pipe_buffer_source(op.operands[0])
    if src is None:
        raise VerifyException("requires local_addr to come from pto.reserve_buffer or pto.import_reserved_buffer "
                              "when 'flag_base' is not explicit")
    # the peer side (the function importing / reserving the same buffer name) must initialise its pipe too
    name = op.operands[0].owner.attributes.get("name")
    module = op.get_toplevel_object()
    peers = [o for o in module.walk() if getattr(o, "name", "") in ("pto.reserve_buffer", "pto.import_reserved_buffer")
             and o.attributes.get("name") == name and o is not op.operands[0].owner]
    for peer in peers:
        if not any("initialize" in getattr(u.operation, "name", "") for r in peer.results for u in r.uses):
            raise VerifyException("requires a complete peer init pair when local_addr comes from "
                                  "pto.reserve_buffer or pto.import_reserved_buffer")


def _rule_pipe_init(op: IRDLOperation) -> None:
    """The pipe's shape comes from these two attributes (FIFO depth from dir_mask, slot bytes)."""
    if _int_attr(op, "dir_mask") not in (1, 2, 3):
        raise VerifyException("requires integer attribute 'dir_mask' = 1 (C2V), 2 (V2C) or 3 (both)")
    slot_size = _int_attr(op, "slot_size")
    if slot_size is None or slot_size <= 0:
        raise VerifyException("requires a positive integer attribute 'slot_size'")


def _rule_nosplit(op: IRDLOperation) -> None:
    nosplit = op.attributes.get("nosplit")
    if not isinstance(nosplit, IntegerAttr) or nosplit.value.data != 0:
        return
    fn = op.parent_op()
    while fn is not None and fn.name != "func.func":
        fn = fn.parent_op()
    if fn is None:
        return
    for o in fn.walk():
        if o.name.startswith(("pto.tpush", "pto.tpop", "pto.tfree")) and _int_attr(o, "split") == 0:
            raise VerifyException("explicit 'nosplit = false' conflicts with downstream users that require split = 0")


def _rule_tgetval(op: IRDLOperation) -> None:
    """TGETVAL (PTO-IR-ops §5.2): ``ins(%src, %index : tile, index)``, one result of the tile's
    element type: the element at flat offset ``index`` of the tile's storage (its blayout order)."""
    ok = len(op.operands) == 2 and isinstance(op.operands[0].type, TileBufType) and \
        isinstance(op.operands[1].type, (IndexType, IntegerType))
    if not ok:
        raise VerifyException("expects `ins(%src, %index : !pto.tile_buf<...>, index)`")
    t = op.operands[0].type
    if len(op.results) != 1 or op.results[0].type != t.element_type:
        raise VerifyException(f"yields one value of the tile's element type {t.dtype}")
    if t.slayout.data != "none_box":
        raise VerifyException(f"of a {t.slayout.data} (boxed) tile has no semantics in ptoc yet")


RULES: dict[str, tuple] = {
    "pto.tgetval": (_rule_tgetval,),
    "pto.tput_async": (_rule_tput_async,),
    "pto.tget_scale_addr": (_rule_tget_scale_addr,),
    "pto.tpop_from_aic": (_rule_tpop, _rule_split),
    "pto.tpop_from_aiv": (_rule_tpop, _rule_split),
    "pto.tpush_to_aiv": (_rule_split,),
    "pto.tpush_to_aic": (_rule_split,),
    "pto.tfree_from_aic": (_rule_split,),
    "pto.tfree_from_aiv": (_rule_split,),
    "pto.initialize_l2l_pipe": (_rule_initialize_l2l_pipe,),
    "pto.aic_initialize_pipe": (_rule_pipe_init, _rule_nosplit),
    "pto.aiv_initialize_pipe": (_rule_pipe_init, _rule_nosplit),
}
"""op name -> checks PTOAS's verifier makes (the op's own verify_ runs them first)."""


def check_rules(op: IRDLOperation) -> None:
    for rule in RULES.get(op.name, ()):
        rule(op)


def _only_a5(op: TileOp, target_name: str) -> None:
    if target_name != "ascend950":
        raise VerifyException(f"{op.name.split('.', 1)[1]} is only supported on A5 (ascend950)")


def _tgather_compare_a2a3(op: TileOp, target_name: str) -> None:
    """The compare form (``ins(src, scalar, tmp) outs(dst, cdst)``) on A2/A3."""
    if target_name != "a2a3" or len(op.outs) != 2 or not op.ins or not is_tile(op.ins[0].type):
        return
    src = op.ins[0].type.dtype
    eq = "eq" in str(op.attributes.get("cmpMode", op.attributes.get("cmp_mode", ""))).lower()
    if src not in ("f16", "f32") and not (src == "i32" and eq):
        raise VerifyException("expects A2/A3 compare-form tgather src element type to be f16/f32, "
                              f"or i32 when cmpMode=eq (got {src})")


def _tgather_index_a2a3(op: TileOp, target_name: str) -> None:
    """TGATHER.md, A2A3 index form: b32 indices."""
    if target_name == "a2a3" and isinstance(op, GatherOp) and op.form == "index" and \
            op.ins[1].type.dtype not in ("i32", "ui32"):
        raise VerifyException(f"A2/A3 tgather indices must be i32 or ui32 (got {op.ins[1].type.dtype})")


def _tsel_a2a3(op: TileOp, target_name: str) -> None:
    dst = op.dst_type
    if target_name == "a2a3" and dst is not None and dst.dtype not in SEL_A2A3:
        raise VerifyException(f"expects A2/A3 tsel src0, src1, and dst element type to be {'/'.join(SEL_A2A3)} "
                              f"(got {dst.dtype})")


def _tpush_split_a5(op: TileOp, target_name: str) -> None:
    """pto-isa TPUSH, A5 split behaviour: a C2V (L0C -> UB) split takes b32 data only, with a
    power-of-2 number of valid rows (up/down) or a multiple of 32 valid columns (left/right); a
    V2C (UB -> L1) split needs valid columns of a multiple of 32 bytes."""
    split = _int_attr(op, "split") or 0
    t = op.ins[0].type if op.ins else None
    if target_name != "ascend950" or split == 0 or not isinstance(t, TileBufType):
        return
    vr, vc = t.valid_shape
    how = "up/down" if split == 1 else "left/right"
    if op.name == "pto.tpush_to_aiv":
        if t.elem_bytes != 4:
            raise VerifyException(f"a C2V {how} split on A5 supports only b32 data (got {t.dtype})")
        if split == 1 and vr > 0 and vr & (vr - 1):
            raise VerifyException(f"a C2V up/down split on A5 needs a power-of-2 number of valid rows (got {vr})")
        if split == 2 and vc > 0 and vc % 32:
            raise VerifyException(f"a C2V left/right split on A5 needs valid columns a multiple of 32 (got {vc})")
    elif vc > 0 and (vc * t.elem_bytes) % 32:
        raise VerifyException(f"a V2C {how} split on A5 needs valid columns of a multiple of 32 bytes "
                              f"(got {vc} x {t.elem_bytes} B)")


def _mx_matmul(op: TileOp, target_name: str) -> None:
    """PTOAS's verifier of the MX matmuls (lib/PTO/IR/PTO.cpp, TGemvMxOp/TMatmulMxOp::verify and
    verifyA5MxTypeTriple): tgemv.mx* only on A5; on A5 operands a and b of an 8-bit float type
    (``ins(a, a_scale, b, b_scale[, bias])``, ``.acc``: ``ins(c_in, a, a_scale, b, b_scale)``)
    and an f32 dst."""
    kind = op.name.split(".", 1)[1]
    if target_name != "ascend950":
        if kind.startswith("tgemv"):
            raise VerifyException(f"{kind} is only supported on A5 targets")
        return
    first = 1 if kind.endswith(".acc") else 0
    a, b = (op.ins[first + k].type for k in (0, 2)) if len(op.ins) >= first + 4 else (None, None)
    if not all(isinstance(t, TileLikeType) and t.dtype.startswith("f8") for t in (a, b)):
        raise VerifyException("expects A5 mx operands a and b to use fp8 element types")
    if op.dst_type is None or op.dst_type.dtype != "f32":
        raise VerifyException("expects A5 mx result dst to use f32 element type")


def tpart_a5_early_return(op, target: str) -> None:
    """TPARTMAX.md/TPARTMIN.md (A5): the op 'returns early' when any of src0/src1/dst has a zero valid
    region, so dst keeps its old contents; A2A3 then writes the other source (not modelled: rejected)."""
    shapes = (op.ins[0].type.valid_shape, op.ins[1].type.valid_shape)
    if target == "ascend950" and 0 not in op.dst_type.valid_shape and any(0 in v for v in shapes):
        # (run-time valid shapes: the golden model checks this at run time, family_part)
        raise VerifyException("with a source of zero valid region returns early on A5 (dst left as it was, "
                              "unlike on A2A3); not supported by ptoc")


TARGET_RULES: dict[str, object] = {
    "pto.tpartmax": tpart_a5_early_return, "pto.tpartmin": tpart_a5_early_return,
    "pto.tpush_to_aiv": _tpush_split_a5,
    "pto.tpush_to_aic": _tpush_split_a5,
    "pto.thistogram": _only_a5, "pto.tinterleave": _only_a5, "pto.tdeinterleave": _only_a5,
    "pto.tsel": _tsel_a2a3,
    **{f"pto.{m}.mx{s}": _mx_matmul for m in ("tmatmul", "tgemv") for s in ("", ".acc", ".bias")},
    "pto.tgather": lambda op, target: (_tgather_compare_a2a3(op, target), _tgather_index_a2a3(op, target)),
    "pto.mgather": lambda op, target: op.verify_target(target),
    "pto.mscatter": lambda op, target: op.verify_target(target),
}
"""op name -> target-dependent checks (run by pto-verify-target with the op's dtype set)."""
