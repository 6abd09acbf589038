"""The ``vf`` dialect: A5 (ascend950) register-level vector functions, with PyPTO's op names.

A vector function (VF, Ascend C ``__simd_vf__``) is a straight-line body of register
instructions, ``arith`` scalar arithmetic and ``scf.for`` hardware loops, launched from a
kernel by ``vf.call`` (the ``asc_vf_call`` of seeds/001).  Registers are 256 bytes
(reference/vector_isa.md §2.1); masks (predicates) have one bit per lane.  The semantics of
every op are in ``runtime/vf_executor.py`` (exact, per seeds/002 and vector_isa.md §2); this
module holds the types, the ops, their syntax and their verifiers; the PTO-AS front end's
builder is ``pto_compiler/vf_builder.py`` (:func:`build_from_stmt`).

Types
=====
``!vf.reg<64xf32>``  one vector register of the element type: 256 x 8-bit, 128 x 16-bit,
                     64 x 32-bit or 32 x 64-bit lanes (element types i8 ui8 i16 ui16 i32 ui32
                     i64 ui64 f16 bf16 f32; the lane count must fill 256 bytes).
``!vf.mask<b32>``    a predicate register typed by lane width (b8 b16 b32 b64): 256, 128, 64
                     or 32 lanes.  An op's mask must have its register's lane width.

Wherever an op's text names a register or mask type, the element type alone is accepted as a
shorthand (``: f32`` = ``!vf.reg<64xf32>`` / ``!vf.mask<b32>``).  The PTO-AS front end (Lark)
reads only the shorthand, since its type syntax has no ``!vf`` types; register and mask types
are otherwise inferred from the operands, so PTO-AS code rarely writes a type at all.

Structure
=========
::

    vf.func @reduce_min_vf(%src: !pto.tile_buf<vec, 1x64xf32>, %dst: !pto.tile_buf<vec, 1x64xf32>) {
      %m = vf.create_mask ALL : !vf.mask<b32>
      %v = vf.load_align %src[0] : !pto.tile_buf<vec, 1x64xf32>
      %r = vf.reduce_min %v, %m : !vf.reg<64xf32>
      vf.store_align %dst[0], %r, %m : !pto.tile_buf<vec, 1x64xf32>
    }
    ...
    vf.call @reduce_min_vf(%a, %out) : (!pto.tile_buf<vec, 1x64xf32>, !pto.tile_buf<vec, 1x64xf32>) -> ()

* ``vf.func @name(%arg: T, ...) [attributes {...}] { body }``: the arguments are UB tile
  buffers (``!pto.tile_buf`` with ``loc=vec``), whose UB base address the body addresses with
  element offsets, and scalars (integers, ``index``, floats: the "PB parameters").  The body
  (one block, no terminator) holds ``vf`` register and memory ops, ``arith`` ops and
  ``scf.for`` hardware loops (trip count <= 65535, uint16 as in the study); no branches
  (``scf.if``), no calls, no tile ops.  A ``vf.func`` may stand at module level or inside the
  kernel's ``func.func`` body; ``vf.call`` finds it in the enclosing blocks, innermost first.
  (PTO-AS: the grammar gives ``vf.func`` a region; at the top level of a PTO-AS file the
  front end currently wraps non-``func.func`` statements into an L1 kernel, so write the
  ``vf.func`` inside the kernel's ``func.func`` there.)
* ``vf.call @name(%a, %b, %n) : (T, U, i32) -> ()``: one VF launch on the V pipe; tiles and
  scalars are passed as the callee declares them (the signature is optional in PTO-AS).

Register and memory ops
=======================
Operands come first (``%tile[OFFSET]`` addresses a tile argument, OFFSET an ``index`` value,
an integer literal, or ``%off + 64`` as printed), then ``key = value`` options (only
non-default ones are printed), then ``:`` and the one type the op needs to be read back.

========================================================  ===========================================
``%m = vf.create_mask ALL : !vf.mask<b32>``                pattern ALL, ALLF (none), VL1 VL2 VL3 VL4
                                                           VL8 VL16 VL32 VL64 VL128 (first N lanes),
                                                           H (low half), Q (low quarter), M3/M4
                                                           (first largest multiple of 3/4 lanes);
                                                           also ``pattern = ALL``
``%m, %rest = vf.update_mask %count : !vf.mask<b32>``      UpdateMask/plt: first ``min(count, VL)``
                                                           lanes; ``rest = count < VL ? 0 : count - VL``
                                                           (count is an i32, read as unsigned)
``%v = vf.load_align %t[%off], dist = BRC_B32 : TILE``     dist NORM (default), BRC_B8/B16/B32 (one
                                                           element broadcast), BLK (one 32-byte block
                                                           repeated over the 8 VLanes), UNPK_B8/B16/B32
                                                           (128 bytes; element i zero-extended into
                                                           the double-width lane i, i.e. lane 2i),
                                                           UNPK4_B8 (64 bytes; byte i into the 32-bit
                                                           lane i, i.e. lane 4i: TDEQUANT.md)
``%v = vf.load_unalign %t[%off] : TILE``                    256 bytes from an element-aligned address
``vf.store_align %t[%off], %v, %m, dist = ONEPT : TILE``   dist NORM (active lanes), ONEPT (lane 0),
                                                           PK_B16/B32/B64 (the low half of each active
                                                           16/32/64-bit lane, packed contiguously; the
                                                           mask is !vf.mask<bN>)
``vf.store_unalign %t[%off], %v, count = N : TILE``        the low N lanes, through the unaligned-
                                                           store buffer of ``%t``
``vf.store_unalign_post %t : TILE``                        flushes that buffer; must follow (the
                                                           verifier pairs them)
``%r = vf.add %a, %b, %m[, merge_mode = MERGING][, dst = %d] : !vf.reg<64xf32>``
                                                           also ``sub mul div max min``
``%r = vf.adds %a, %s, %m[, ...] : !vf.reg<64xf32>, f32``  also ``muls maxs mins``; %s a scalar of
                                                           the element type
``%r = vf.exp %a, %m[, ...] : !vf.reg<64xf32>``             also ``ln sqrt rsqrt rec`` (float types),
                                                           ``abs relu`` (every type)
``%r = vf.pair_reduce_sum %a, %m : !vf.reg<64xf32>``       vcpadd: r[k] = a[2k] + a[2k+1] (inactive
                                                           lanes +0), upper half 0; f16/f32, ZEROING
``%r = vf.cvt %a, %m[, round = R][, part = EVEN|ODD]``     vcvt; ``: !vf.reg<128xf16> -> !vf.reg<64xf32>``;
                                                           widening takes lanes 2i+p, narrowing writes
                                                           lanes 2i+p; mask of the wider lanes
``%r = vf.dup %s[, %m][, ...] : !vf.reg<64xf32>, f32``     a scalar to every (active) lane, or lane 0
                                                           of a register source (vdup POS_LOWEST)
``%r = vf.reduce_min %v, %m[, datablock = true][, merge_mode = MERGING][, dst = %d] : !vf.reg<64xf32>``
                                                           also ``reduce_max``, ``reduce_sum``
``%r = vf.bitcast %a : !vf.reg<64xf32> -> !vf.reg<64xui32>``  the same bytes as another type
``%r = vf.deinterleave %a, %b[, part = ODD] : !vf.reg<..>``  vdintlv: lanes 2k + p of a ++ b
========================================================  ===========================================

Merge modes: ``ZEROING`` (default) zeroes the lanes an op does not write; ``MERGING`` keeps
them from the register ``dst`` names, by default the op's first register operand, i.e. the
in-place form ``Add<MERGING>(acc, acc, x, mask)`` of seeds/001 is
``%acc1 = vf.add %acc, %x, %mask, merge_mode = MERGING``.  ``dst`` is only allowed with
MERGING.

In PTO-AS the same statements parse, with these conveniences: the trailing type may be
omitted (inferred) or written as the element type; a mask pattern, dist mode or merge mode
may be a bare word (``vf.create_mask ALL``, ``vf.add %a, %b, %m, MERGING``); a scalar
operand may be a literal or ``INF``/``NEG_INF``/``NAN``/``MAX``/``MIN`` (the element type's
values; an arith.constant is made); an integer offset or count of another integer type is
converted with ``arith.index_cast``/``arith.trunci`` first.  Loop-carried registers need their
type in ``scf.for ... -> (...)`` and ``scf.yield``: until the Lark converter reads ``!vf`` types
(``vf.type_from_text`` is the hook), write such VFs in the printed (xDSL) form, or give the
count only (``-> (f32)``, which the front end checks by number).

Verifier rules (vector_isa.md §2, seeds/001, seeds/002)
======================================================
* register ops stand inside a ``vf.func``; ``vf.call`` stands outside one and matches its
  callee's signature;
* every register operand and the result of an op have one register type (``dst type =
  src type``); masks have the register's lane width; scalars have the element type (integers:
  any signedness of the same width);
* reductions: element types f16 f32 i16 ui16 i32 ui32 i64 ui64; ``datablock = true`` only for
  i16, ui16, f16, i32, ui32, f32 (64-bit types reduce the whole register);
* ``div``, ``exp``, ``ln``, ``sqrt``, ``rsqrt``, ``rec`` take f16, bf16 and f32 (bf16 as the A5 tile
  ISA lists it for TDIV/TEXP...; the math is runtime/elementwise.py's), ``pair_reduce_sum`` f16
  and f32; the other element ops every register type; ``cvt`` lane-width ratio 1 or 2;
* NORM/BLK loads and NORM stores need 32-byte aligned addresses, BRC loads, ONEPT stores and
  unaligned ones element alignment (checked at run time: offsets are dynamic);
* ``create_mask VLn`` must fit the mask's lanes; ``store_unalign`` count 1..VL;
* every ``vf.store_unalign`` to a tile is followed, at the same or a shallower loop level, by
  a ``vf.store_unalign_post`` of that tile, and every post has a store before it (the
  ``vf.func``'s check, one walk);
* ``vf`` ops exist only on ascend950 (``pto-verify-target``: "vf.X is not available on a2a3").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from io import StringIO
from typing import Any, ClassVar

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    FunctionType,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    SymbolRefAttr,
    UnregisteredOp,
)
from xdsl.ir import (
    Attribute, Block, BlockArgument, Dialect, Operation, OpResult, ParametrizedAttribute, Region, SSAValue, SSAValues,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from pto_compiler.dialects.pto import ROUND_MODES, TileBufType, TileLikeType, dtype_name, element_bytes, is_float
from pto_compiler.dialects.bare_ops import op_with_operands
from pto_compiler.dialects.verify_tables import run_table

# --------------------------------------------------------------------------------------
# Machine constants (reference/vector_isa.md §2.1, seeds/002)
# --------------------------------------------------------------------------------------

REG_BYTES = 256
"""A vector register (``RegTensor``) is 256 bytes."""

DATABLOCK_BYTES = 64
"""``datablock = true`` (vcgmin/vcgmax/vcgadd) reduces groups of this many bytes.  seeds/002 says
a datablock is 32 elements of a 16-bit type and 16 of a 32-bit type, i.e. 64 bytes, four per
register; vector_isa.md §2.1 describes 8 VLanes of 32 bytes for group reductions.  ptoc follows
the article (see runtime/vf_executor.py); this constant is the one place to change."""

HW_LOOP_MAX = 65535
"""Hardware loops count trips in uint16 (seeds/001: ``for (uint16_t i ...)``)."""

REG_DTYPES = ("i8", "ui8", "i16", "ui16", "i32", "ui32", "i64", "ui64", "f16", "bf16", "f32")
REDUCE_DTYPES = frozenset({"f16", "f32", "i16", "ui16", "i32", "ui32", "i64", "ui64"})
DATABLOCK_DTYPES = ("i16", "ui16", "f16", "i32", "ui32", "f32")
FLOAT_DTYPES = frozenset({"f16", "bf16", "f32"})
ARITH_DTYPES = frozenset(REG_DTYPES)
PAIR_DTYPES = frozenset({"f16", "f32"})

MASK_PATTERNS = ("ALL", "ALLF", "VL1", "VL2", "VL3", "VL4", "VL8", "VL16", "VL32", "VL64", "VL128",
                 "H", "Q", "M3", "M4")
LOAD_DISTS = ("NORM", "BRC_B8", "BRC_B16", "BRC_B32", "BLK", "UNPK_B8", "UNPK_B16", "UNPK_B32", "UNPK4_B8")
STORE_DISTS = ("NORM", "ONEPT", "PK_B16", "PK_B32", "PK_B64")
CVT_PARTS = ("EVEN", "ODD")
MERGE_MODES = ("ZEROING", "MERGING")


def lanes_of(elt: Attribute) -> int:
    return REG_BYTES // element_bytes(elt)


def pattern_lanes(pattern: str, lanes: int) -> int:
    """How many leading lanes a create_mask pattern enables (ALL..., as PyPTO names them)."""
    if pattern == "ALL":
        return lanes
    if pattern == "ALLF":
        return 0
    if pattern == "H":
        return lanes // 2
    if pattern == "Q":
        return lanes // 4
    if pattern in ("M3", "M4"):
        k = int(pattern[1])
        return lanes // k * k
    return int(pattern[2:])


# --------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------


@irdl_attr_definition
class RegType(ParametrizedAttribute, TypeAttribute):
    """``!vf.reg<64xf32>``: a 256-byte vector register of ``lanes`` elements."""

    name = "vf.reg"
    lanes: IntAttr
    element_type: Attribute

    def __init__(self, element_type: Attribute, lanes: int | None = None):
        if lanes is None:
            lanes = lanes_of(element_type)
        super().__init__(IntAttr(lanes), element_type)

    @property
    def dtype(self) -> str:
        return dtype_name(self.element_type)

    @property
    def elem_bytes(self) -> int:
        return element_bytes(self.element_type)

    @property
    def nlanes(self) -> int:
        return self.lanes.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        pos = parser.pos
        with parser.in_angle_brackets():
            shape, elt = parser.parse_ranked_shape()
        problem = _reg_problem(list(shape), elt)
        if problem:
            parser.raise_error(problem, pos, parser.pos)
        return [IntAttr(shape[0]), elt]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.lanes.data}x")
        printer.print_attribute(self.element_type)
        printer.print_string(">")

    def verify(self) -> None:
        problem = _reg_problem([self.lanes.data], self.element_type)
        if problem:
            raise VerifyException(problem)


def _reg_problem(shape: list[int], elt: Attribute) -> str | None:
    if len(shape) != 1:
        return "a vector register has one dimension (!vf.reg<64xf32>)"
    name = dtype_name(elt)
    if name not in REG_DTYPES:
        return f"{name} is not a register element type (expected one of {', '.join(REG_DTYPES)})"
    want = REG_BYTES // element_bytes(elt)
    if shape[0] != want:
        return f"a register holds {want} x {name} (256 bytes), not {shape[0]}"
    return None


@irdl_attr_definition
class MaskType(ParametrizedAttribute, TypeAttribute):
    """``!vf.mask<b32>``: a predicate register, one bit per lane of the given width."""

    name = "vf.mask"
    width: IntAttr

    def __init__(self, width: int):
        super().__init__(IntAttr(width))

    @property
    def bits(self) -> int:
        return self.width.data

    @property
    def nlanes(self) -> int:
        return REG_BYTES * 8 // self.width.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        pos = parser.pos
        with parser.in_angle_brackets():
            word = parser.parse_identifier()
        if word not in ("b8", "b16", "b32", "b64"):
            parser.raise_error(f"mask width must be b8, b16, b32 or b64, got '{word}'", pos, parser.pos)
        return [IntAttr(int(word[1:]))]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<b{self.width.data}>")

    def verify(self) -> None:
        if self.width.data not in (8, 16, 32, 64):
            raise VerifyException(f"mask width must be 8, 16, 32 or 64 bits, got {self.width.data}")


def reg_type(elt: Attribute) -> RegType:
    return RegType(elt)


def mask_type(elt_or_width: Attribute | int) -> MaskType:
    """The mask for an element type (or a lane width in bits)."""
    if isinstance(elt_or_width, int):
        return MaskType(elt_or_width)
    return MaskType(8 * element_bytes(elt_or_width))


I32 = IntegerType(32)
INDEX = IndexType()


def _is_scalar_type(t: Attribute) -> bool:
    return isinstance(t, (IntegerType, IndexType, Float16Type, BFloat16Type, Float32Type, Float64Type))


def _scalar_fits(t: Attribute, elt: Attribute) -> bool:
    """A scalar of type t may feed an op on elt lanes: same float type, or an integer of the same width."""
    if is_float(elt):
        return t == elt
    return isinstance(t, IntegerType) and isinstance(elt, IntegerType) and t.width.data == elt.width.data


def _signless(elt: Attribute) -> Attribute:
    if isinstance(elt, IntegerType) and elt.signedness.data != Signedness.SIGNLESS:
        return IntegerType(elt.width.data)
    return elt


def _tname(t: Attribute) -> str:
    if isinstance(t, (RegType, MaskType, TileLikeType)):
        return str(t)
    return dtype_name(t)


# --------------------------------------------------------------------------------------
# Shared syntax helpers
# --------------------------------------------------------------------------------------


def _parse_anchor(parser: Parser, want: str) -> Attribute:
    """After ``:``: a register (``want='reg'``) or mask type, or the element-type shorthand."""
    pos = parser.pos
    t = parser.parse_type()
    if want == "reg":
        if isinstance(t, RegType):
            return t
        if dtype_name(t) in REG_DTYPES:
            return RegType(t)
        parser.raise_error(f"expected a register type (!vf.reg<64xf32>) or an element type, got {t}",
                           pos, parser.pos)
    if want == "mask":
        if isinstance(t, MaskType):
            return t
        if dtype_name(t) in REG_DTYPES:
            return mask_type(t)
        parser.raise_error(f"expected a mask type (!vf.mask<b32>) or an element type, got {t}", pos, parser.pos)
    if want == "tile":
        if isinstance(t, TileLikeType):
            return t
        parser.raise_error(f"expected a !pto.tile_buf type, got {t}", pos, parser.pos)
    return t


def _parse_options(parser: Parser, first: bool = False) -> tuple[list, dict[str, Any]]:
    """``, %x`` operands and ``, key = value`` options, in any order after the leading operand(s).

    Returns (unresolved operands in order, options); a value is an unresolved operand, an
    identifier, an integer or a bool."""
    operands: list = []
    options: dict[str, Any] = {}
    while True:
        if not first and parser.parse_optional_punctuation(",") is None:
            break
        first = False
        if parser._current_token.text.startswith("%"):
            if options:
                parser.raise_error("operands come before the `key = value` options")
            operands.append(parser.parse_unresolved_operand())
            continue
        pos = parser.pos
        key = parser.parse_identifier()
        parser.parse_punctuation("=")
        if key in options:
            parser.raise_error(f"duplicate option '{key}'", pos, parser.pos)
        if parser._current_token.text.startswith("%"):
            options[key] = parser.parse_unresolved_operand()
        else:
            b = parser.parse_optional_boolean()
            if b is not None:
                options[key] = b
            else:
                i = parser.parse_optional_integer()
                options[key] = i if i is not None else parser.parse_identifier()
        options[key + "@pos"] = pos
    return operands, options


def _take_word(parser: Parser, options: dict, key: str, allowed: Sequence[str], default: str | None) -> str | None:
    v = options.pop(key, None)
    pos = options.pop(key + "@pos", None)
    if v is None:
        return default
    if not isinstance(v, str) or v not in allowed:
        parser.raise_error(f"{key} must be one of {', '.join(allowed)}, got '{v}'", pos, parser.pos)
    return v


def _no_more_options(parser: Parser, options: dict, opname: str) -> None:
    for k in options:
        if not k.endswith("@pos"):
            parser.raise_error(f"'{opname}' has no option '{k}'", options[k + "@pos"], parser.pos)


def _print_options(printer: Printer, items: Sequence[tuple[str, Any]]) -> None:
    for key, value in items:
        printer.print_string(f", {key} = ")
        if isinstance(value, SSAValue):
            printer.print_operand(value)
        elif isinstance(value, bool):
            printer.print_string("true" if value else "false")
        else:
            printer.print_string(str(value))


def _print_attrs_and_colon(printer: Printer, op: Operation) -> None:
    if op.attributes:
        printer.print_string(" ")
        printer.print_attr_dict(op.attributes)
    printer.print_string(" : ")


def _parse_address(parser: Parser) -> tuple[Any, Any, int]:
    """``%t``, ``%t[%off]``, ``%t[64]`` or ``%t[%off + 64]`` -> (tile, offset operand or None, static offset)."""
    tile = parser.parse_unresolved_operand()
    dyn, static = None, 0
    if parser.parse_optional_punctuation("[") is not None:
        if parser._current_token.text.startswith("%"):
            dyn = parser.parse_unresolved_operand()
            if parser.parse_optional_punctuation("+") is not None:
                static = parser.parse_integer(allow_negative=False)
        else:
            static = parser.parse_integer(allow_negative=False)
        parser.parse_punctuation("]")
    return tile, dyn, static


def _print_address(printer: Printer, tile: SSAValue, dyn: SSAValue | None, static: int, always: bool = True) -> None:
    printer.print_operand(tile)
    if dyn is None and static == 0 and not always:
        return
    printer.print_string("[")
    if dyn is not None:
        printer.print_operand(dyn)
        if static:
            printer.print_string(f" + {static}")
    else:
        printer.print_string(str(static))
    printer.print_string("]")


# --------------------------------------------------------------------------------------
# Base classes
# --------------------------------------------------------------------------------------


def enclosing_vf_func(op: Operation) -> VfFuncOp | None:
    p = op.parent_op()
    while p is not None:
        if isinstance(p, VfFuncOp):
            return p
        p = p.parent_op()
    return None


class VfOp(IRDLOperation):
    """Base of the register and memory ops: one operand list (decoded per op by type), results,
    and the options as properties.  ``args`` and ``res`` are the whole operand and result lists;
    the methods read them as ``operands`` and ``results``, which cost a fifth of IRDL's lookup."""

    args = var_operand_def()
    res = var_result_def()
    merge_mode = opt_prop_def(StringAttr)
    datablock = opt_prop_def(IntegerAttr)
    dist = opt_prop_def(StringAttr)
    pattern = opt_prop_def(StringAttr)
    offset = opt_prop_def(IntegerAttr)
    count = opt_prop_def(IntegerAttr)
    rmode = opt_prop_def(StringAttr)
    part = opt_prop_def(StringAttr)

    PYPTO: ClassVar[str] = ""
    """The Ascend C / ISA name, for messages and docs."""
    PROPS: ClassVar[frozenset[str]] = frozenset()
    """The option properties this op takes (the others are rejected by the verifier)."""

    def __init__(self, operands: Sequence[SSAValue | Operation], result_types: Sequence[Attribute],
                 properties: dict[str, Attribute] | None = None, attributes: dict[str, Attribute] | None = None):
        super().__init__(operands=[[SSAValue.get(v) for v in operands]], result_types=[list(result_types)],
                         properties={k: v for k, v in (properties or {}).items() if v is not None},
                         attributes=attributes or {})

    # ---- option views --------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self.merge_mode.data if self.merge_mode is not None else "ZEROING"

    @property
    def is_datablock(self) -> bool:
        return self.datablock is not None and bool(self.datablock.value.data)

    @property
    def static_offset(self) -> int:
        return self.offset.value.data if self.offset is not None else 0

    def verify_(self) -> None:
        if enclosing_vf_func(self) is None:
            raise VerifyException(f"{self.name} may only appear inside a vf.func (a __simd_vf__ function body)")
        for key, allowed in (("merge_mode", MERGE_MODES),):
            a = self.properties.get(key)
            if a is not None and a.data not in allowed:
                raise VerifyException(f"{key} must be ZEROING or MERGING, got '{a.data}'")
        extra = sorted(set(self.properties) - self.PROPS)
        if extra:
            raise VerifyException(f"{self.name} has no option '{extra[0]}'")
        self.verify_vf()

    def verify_vf(self) -> None:
        """Op-specific checks."""


def _props(merge_mode: str | None = None, datablock: bool | None = None, dist: str | None = None,
           pattern: str | None = None, offset: int | None = None, count: int | None = None) -> dict[str, Attribute]:
    """Option properties, normalised so the default of each is absent (round trips compare equal)."""
    p: dict[str, Attribute] = {}
    if merge_mode not in (None, "ZEROING"):
        p["merge_mode"] = StringAttr(merge_mode)
    if datablock:
        p["datablock"] = IntegerAttr(1, IntegerType(1))
    if dist not in (None, "NORM"):
        p["dist"] = StringAttr(dist)
    if pattern is not None:
        p["pattern"] = StringAttr(pattern)
    if offset:
        p["offset"] = IntegerAttr(offset, 64)
    if count is not None:
        p["count"] = IntegerAttr(count, 64)
    return p


# ---- masks -------------------------------------------------------------------------------


@irdl_op_definition
class CreateMaskOp(VfOp):
    """``%m = vf.create_mask PATTERN : !vf.mask<bN>`` (CreateMask<T, MaskPattern::PATTERN>, pset)."""

    name = "vf.create_mask"
    PYPTO: ClassVar[str] = "CreateMask/pset"
    PROPS: ClassVar[frozenset[str]] = frozenset({"pattern"})

    def __init__(self, pattern: str, result_type: MaskType, attributes=None):
        super().__init__([], [result_type], _props(pattern=pattern), attributes)

    @property
    def pattern_name(self) -> str:
        return self.pattern.data if self.pattern is not None else "ALL"

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.pattern_name}")
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> CreateMaskOp:
        pos = parser.pos
        if parser.parse_optional_keyword("pattern") is not None:
            parser.parse_punctuation("=")
        word = parser.parse_identifier()
        if word not in MASK_PATTERNS:
            parser.raise_error(f"unknown mask pattern '{word}' (expected one of {', '.join(MASK_PATTERNS)})",
                               pos, parser.pos)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        return cls(word, _parse_anchor(parser, "mask"), attrs)

    def verify_vf(self) -> None:
        if self.operands or len(self.results) != 1 or not isinstance(self.results[0].type, MaskType):
            raise VerifyException("expects no operands and one !vf.mask result")
        p = self.pattern_name
        if p not in MASK_PATTERNS:
            raise VerifyException(f"unknown mask pattern '{p}' (expected one of {', '.join(MASK_PATTERNS)})")
        lanes = self.results[0].type.nlanes
        if pattern_lanes(p, lanes) > lanes:
            raise VerifyException(f"pattern {p} selects more lanes than a {self.results[0].type} has ({lanes})")


@irdl_op_definition
class UpdateMaskOp(VfOp):
    """``%m, %rest = vf.update_mask %count : !vf.mask<bN>`` (UpdateMask<T>(count), plt POST_UPDATE)."""

    name = "vf.update_mask"
    PYPTO: ClassVar[str] = "UpdateMask/plt"

    def __init__(self, count: SSAValue, result_type: MaskType, attributes=None):
        super().__init__([count], [result_type, I32], None, attributes)

    @property
    def count_in(self) -> SSAValue:
        return self.operands[0]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operands[0])
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> UpdateMaskOp:
        count = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        mt = _parse_anchor(parser, "mask")
        return cls(parser.resolve_operand(count, I32), mt, attrs)

    def verify_vf(self) -> None:
        if len(self.operands) != 1 or self.operands[0].type != I32:
            raise VerifyException("expects one i32 count (the lanes still to process)")
        if len(self.results) != 2 or not isinstance(self.results[0].type, MaskType) or self.results[1].type != I32:
            raise VerifyException("results are the mask and the decremented i32 count")


# ---- memory ------------------------------------------------------------------------------


class _MemOp(VfOp):
    """Memory ops: ``args = [tile, offset(index)?, ...]``."""

    @property
    def tile(self) -> SSAValue:
        return self.operands[0]

    @property
    def dyn_offset(self) -> SSAValue | None:
        ops = self._operands
        if len(ops) < 2:
            return None
        off = tuple.__getitem__(ops, 1)  # (SSAValues' own __getitem__ costs more than the rest)
        return off if isinstance(off.type, IndexType) else None

    @property
    def rest(self) -> tuple[SSAValue, ...]:
        return tuple(self.operands[2:] if self.dyn_offset is not None else self.operands[1:])

    @property
    def tile_type(self) -> TileLikeType:
        return self.operands[0].type  # type: ignore[return-value]

    def _print_head(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_address(printer, self.tile, self.dyn_offset, self.static_offset, always=self.ADDRESSED)
        for v in self.rest:
            printer.print_string(", ")
            printer.print_operand(v)

    ADDRESSED: ClassVar[bool] = True

    def _check_tile(self) -> TileLikeType:
        if not self.operands or not isinstance(self.operands[0].type, TileBufType):
            raise VerifyException("the first operand must be a !pto.tile_buf argument of the vf.func")
        t = self.operands[0].type
        if t.loc.data != "vec":
            raise VerifyException(f"VF code addresses UB (loc=vec) tiles only, got loc={t.loc.data}")
        if dtype_name(t.element_type) not in REG_DTYPES:
            raise VerifyException(f"tile element type {t.dtype} has no vector register type")
        return t

    def _check_rest(self, *kinds: str) -> tuple[SSAValue, ...]:
        rest = self.rest
        if len(rest) != len(kinds):
            raise VerifyException(f"expects {len(kinds)} operand(s) after the address, got {len(rest)}")
        t = self.tile_type
        for v, k in zip(rest, kinds):
            want = RegType(t.element_type) if k == "reg" else mask_type(t.element_type)
            if v.type != want:
                raise VerifyException(
                    f"{'value' if k == 'reg' else 'mask'} operand has type {_tname(v.type)}, but the "
                    f"{t.dtype} tile needs {want}")
        return rest


@irdl_op_definition
class LoadAlignOp(_MemOp):
    """``%v = vf.load_align %t[%off][, dist = D] : TILE`` (LoadAlign / vlds)."""

    name = "vf.load_align"
    PYPTO: ClassVar[str] = "LoadAlign/vlds"
    PROPS: ClassVar[frozenset[str]] = frozenset({"dist", "offset"})

    def __init__(self, tile: SSAValue, offset: SSAValue | int | None = None, dist: str = "NORM", attributes=None,
                 static_offset: int = 0):
        dyn, static = _split_offset(offset, static_offset)
        super().__init__([tile] + ([dyn] if dyn is not None else []), [RegType(SSAValue.get(tile).type.element_type)],
                         _props(dist=dist, offset=static), attributes)

    @property
    def dist_name(self) -> str:
        return self.dist.data if self.dist is not None else "NORM"

    def print(self, printer: Printer) -> None:
        self._print_head(printer)
        if self.dist_name != "NORM":
            _print_options(printer, [("dist", self.dist_name)])
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.tile_type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadAlignOp:
        tile, dyn, static = _parse_address(parser)
        extra, options = _parse_options(parser)
        if extra:
            parser.raise_error("vf.load_align takes only an address and `dist = ...`")
        dist = _take_word(parser, options, "dist", LOAD_DISTS, "NORM")
        _no_more_options(parser, options, cls.name)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tt = _parse_anchor(parser, "tile")
        t = parser.resolve_operand(tile, tt)
        off = parser.resolve_operand(dyn, INDEX) if dyn is not None else None
        return cls(t, off, dist, attrs, static_offset=static)

    def verify_vf(self) -> None:
        t = self._check_tile()
        self._check_rest()
        d = self.dist_name
        if d not in LOAD_DISTS:
            raise VerifyException(f"dist must be one of {', '.join(LOAD_DISTS)}, got '{d}'")
        if d.startswith("BRC_B") and int(d[5:]) != 8 * t.elem_bytes:
            raise VerifyException(f"dist {d} broadcasts {d[5:]}-bit elements, but the tile holds {t.dtype} "
                                  f"(use BRC_B{8 * t.elem_bytes})")
        bits = d.rpartition("_B")[2]
        if d.startswith("UNPK") and int(bits) != 8 * t.elem_bytes:
            raise VerifyException(f"dist {d} unpacks {bits}-bit elements, but the tile holds {t.dtype} "
                                  f"(use UNPK_B{8 * t.elem_bytes})")
        if len(self.results) != 1 or self.results[0].type != RegType(t.element_type):
            raise VerifyException(f"result must be {RegType(t.element_type)} (the tile's element type)")


@irdl_op_definition
class LoadUnalignOp(_MemOp):
    """``%v = vf.load_unalign %t[%off] : TILE`` (vldas + vldus: 256 bytes from any element address)."""

    name = "vf.load_unalign"
    PYPTO: ClassVar[str] = "LoadUnAlign/vldus"
    PROPS: ClassVar[frozenset[str]] = frozenset({"offset"})

    def __init__(self, tile: SSAValue, offset: SSAValue | int | None = None, attributes=None,
                 static_offset: int = 0):
        dyn, static = _split_offset(offset, static_offset)
        super().__init__([tile] + ([dyn] if dyn is not None else []), [RegType(SSAValue.get(tile).type.element_type)],
                         _props(offset=static), attributes)

    def print(self, printer: Printer) -> None:
        self._print_head(printer)
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.tile_type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadUnalignOp:
        tile, dyn, static = _parse_address(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tt = _parse_anchor(parser, "tile")
        t = parser.resolve_operand(tile, tt)
        return cls(t, parser.resolve_operand(dyn, INDEX) if dyn is not None else None, attrs, static_offset=static)

    def verify_vf(self) -> None:
        t = self._check_tile()
        self._check_rest()
        if len(self.results) != 1 or self.results[0].type != RegType(t.element_type):
            raise VerifyException(f"result must be {RegType(t.element_type)} (the tile's element type)")


@irdl_op_definition
class StoreAlignOp(_MemOp):
    """``vf.store_align %t[%off], %v, %m[, dist = ONEPT] : TILE`` (StoreAlign / vsts)."""

    name = "vf.store_align"
    PYPTO: ClassVar[str] = "StoreAlign/vsts"
    PROPS: ClassVar[frozenset[str]] = frozenset({"dist", "offset"})

    def __init__(self, tile: SSAValue, offset: SSAValue | int | None, value: SSAValue, mask: SSAValue,
                 dist: str = "NORM", attributes=None, static_offset: int = 0):
        dyn, static = _split_offset(offset, static_offset)
        super().__init__([tile] + ([dyn] if dyn is not None else []) + [value, mask], [],
                         _props(dist=dist, offset=static), attributes)

    @property
    def value(self) -> SSAValue:
        return self.rest[0]

    @property
    def mask(self) -> SSAValue:
        return self.rest[1]

    @property
    def dist_name(self) -> str:
        return self.dist.data if self.dist is not None else "NORM"

    def print(self, printer: Printer) -> None:
        self._print_head(printer)
        if self.dist_name != "NORM":
            _print_options(printer, [("dist", self.dist_name)])
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.tile_type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreAlignOp:
        tile, dyn, static = _parse_address(parser)
        extra, options = _parse_options(parser)
        if len(extra) != 2:
            parser.raise_error("vf.store_align expects `%tile[offset], %value, %mask`")
        dist = _take_word(parser, options, "dist", STORE_DISTS, "NORM")
        _no_more_options(parser, options, cls.name)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tt = _parse_anchor(parser, "tile")
        elt = tt.element_type
        t = parser.resolve_operand(tile, tt)
        v = parser.resolve_operand(extra[0], RegType(elt))
        m = parser.resolve_operand(extra[1], mask_type(int(dist[4:]) if dist.startswith("PK_B") else elt))
        return cls(t, parser.resolve_operand(dyn, INDEX) if dyn is not None else None, v, m, dist, attrs,
                   static_offset=static)

    def verify_vf(self) -> None:
        t = self._check_tile()
        d = self.dist_name
        if d not in STORE_DISTS:
            raise VerifyException(f"dist must be one of {', '.join(STORE_DISTS)}, got '{d}'")
        if d.startswith("PK_B"):
            # pack: the low half of each PK_Bn lane; the mask selects the n-bit lanes
            if int(d[4:]) != 16 * t.elem_bytes:
                raise VerifyException(f"dist {d} packs {d[4:]}-bit lanes to {int(d[4:]) // 2}-bit elements, but "
                                      f"the tile holds {t.dtype} (use PK_B{16 * t.elem_bytes})")
            rest = self.rest
            if len(rest) != 2 or rest[0].type != RegType(t.element_type) or rest[1].type != mask_type(int(d[4:])):
                raise VerifyException(f"dist {d} stores a {RegType(t.element_type)} under a "
                                      f"{mask_type(int(d[4:]))}")
        else:
            self._check_rest("reg", "mask")
        if self.results:
            raise VerifyException("vf.store_align has no results")


@irdl_op_definition
class StoreUnalignOp(_MemOp):
    """``vf.store_unalign %t[%off], %v, count = N : TILE`` (StoreUnAlign: the low N lanes, buffered)."""

    name = "vf.store_unalign"
    PYPTO: ClassVar[str] = "StoreUnAlign/vstus"
    PROPS: ClassVar[frozenset[str]] = frozenset({"count", "offset"})

    def __init__(self, tile: SSAValue, offset: SSAValue | int | None, value: SSAValue, count: int = 1,
                 attributes=None, static_offset: int = 0):
        dyn, static = _split_offset(offset, static_offset)
        super().__init__([tile] + ([dyn] if dyn is not None else []) + [value], [],
                         _props(offset=static, count=count), attributes)

    @property
    def value(self) -> SSAValue:
        return self.rest[0]

    @property
    def lanes(self) -> int:
        return self.count.value.data if self.count is not None else 1

    def print(self, printer: Printer) -> None:
        self._print_head(printer)
        _print_options(printer, [("count", self.lanes)])
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.tile_type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreUnalignOp:
        tile, dyn, static = _parse_address(parser)
        extra, options = _parse_options(parser)
        if len(extra) != 1:
            parser.raise_error("vf.store_unalign expects `%tile[offset], %value, count = N`")
        count = options.pop("count", 1)
        cpos = options.pop("count@pos", parser.pos)
        if not isinstance(count, int) or isinstance(count, bool):
            parser.raise_error("count must be an integer", cpos, parser.pos)
        _no_more_options(parser, options, cls.name)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tt = _parse_anchor(parser, "tile")
        t = parser.resolve_operand(tile, tt)
        v = parser.resolve_operand(extra[0], RegType(tt.element_type))
        return cls(t, parser.resolve_operand(dyn, INDEX) if dyn is not None else None, v, count, attrs,
                   static_offset=static)

    def verify_vf(self) -> None:
        t = self._check_tile()
        self._check_rest("reg")
        lanes = lanes_of(t.element_type)
        if not 1 <= self.lanes <= lanes:
            raise VerifyException(f"count must be 1..{lanes} (the register's lanes), got {self.lanes}")


@irdl_op_definition
class StoreUnalignPostOp(_MemOp):
    """``vf.store_unalign_post %t : TILE`` (StoreUnAlignPost: flush the tile's unaligned-store buffer)."""

    name = "vf.store_unalign_post"
    PYPTO: ClassVar[str] = "StoreUnAlignPost/vstas"
    ADDRESSED: ClassVar[bool] = False

    def __init__(self, tile: SSAValue, attributes=None):
        super().__init__([tile], [], None, attributes)

    def print(self, printer: Printer) -> None:
        self._print_head(printer)
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.tile_type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreUnalignPostOp:
        tile = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tt = _parse_anchor(parser, "tile")
        return cls(parser.resolve_operand(tile, tt), attrs)

    def verify_vf(self) -> None:
        self._check_tile()
        if len(self.operands) != 1:
            raise VerifyException("expects just the tile (`vf.store_unalign_post %t`)")


def _split_offset(offset: SSAValue | int | None, static_offset: int) -> tuple[SSAValue | None, int]:
    """(dynamic index operand or None, static element offset): ``offset`` is an index value or an int."""
    if isinstance(offset, (SSAValue, Operation)):
        return SSAValue.get(offset), int(static_offset)
    return None, int(offset or 0) + int(static_offset)


def _value_name(v: SSAValue) -> str:
    return f"%{v.name_hint}" if v.name_hint else "its tile"


def _loops_of(op: Operation, fn: Operation) -> list[Operation]:
    out = []
    p = op.parent_op()
    while p is not None and p is not fn:
        if isinstance(p, scf.ForOp):
            out.append(p)
        p = p.parent_op()
    return out


def _check_unaligned_pairs(fn: Operation, ops: list[Operation]) -> None:
    """StoreUnAlign and StoreUnAlignPost pair: every store is followed, at the same or an outer
    loop level, by a post of its tile, and every post has a store of its tile before it (checked
    here, over the function's ops in order, not by each op walking its function)."""
    stored = set()
    for op in ops:
        if isinstance(op, StoreUnalignOp):
            stored.add(op.tile)
        elif isinstance(op, StoreUnalignPostOp) and op.tile not in stored:
            raise VerifyException(f"vf.store_unalign_post{_where(op)} of {_value_name(op.tile)} has no "
                                  "vf.store_unalign before it; StoreUnAlign and StoreUnAlignPost must pair")
    posts: dict = {}  # tile -> loop nests of the posts after the current op
    for op in reversed(ops):
        if isinstance(op, StoreUnalignPostOp):
            posts.setdefault(op.tile, []).append(_loops_of(op, fn))
        elif isinstance(op, StoreUnalignOp):
            loops = _loops_of(op, fn)
            if not any(all(x in loops for x in nest) for nest in posts.get(op.tile, ())):
                raise VerifyException(
                    f"vf.store_unalign{_where(op)} to {_value_name(op.tile)} is never flushed: a "
                    "vf.store_unalign_post of that tile must follow it (at the same or an outer loop level); "
                    "StoreUnAlign and StoreUnAlignPost must pair")


# ---- compute -----------------------------------------------------------------------------


class _ComputeOp(VfOp):
    """Register compute: ``args = [sources..., mask, dst?]`` (dst only with MERGING)."""

    N_SRC: ClassVar[int] = 2
    HAS_SCALAR: ClassVar[bool] = False
    DTYPES: ClassVar[frozenset[str]] = ARITH_DTYPES
    PROPS: ClassVar[frozenset[str]] = frozenset({"merge_mode"})

    def __init__(self, sources: Sequence[SSAValue], mask: SSAValue | None, result_type: RegType,
                 merge_mode: str = "ZEROING", dst: SSAValue | None = None, datablock: bool = False,
                 attributes=None):
        operands = list(sources) + ([mask] if mask is not None else []) + ([dst] if dst is not None else [])
        super().__init__(operands, [result_type], _props(merge_mode=merge_mode, datablock=datablock), attributes)

    # ---- operand views ---------------------------------------------------------------------
    @property
    def sources(self) -> tuple[SSAValue, ...]:
        out = []
        for v in self.operands:
            if isinstance(v.type, MaskType):
                break
            out.append(v)
        if self.mask_operand is None and len(out) > self.N_SRC:
            out = out[: self.N_SRC]
        return tuple(out)

    @property
    def mask_operand(self) -> SSAValue | None:
        for v in self.operands:
            if isinstance(v.type, MaskType):
                return v
        return None

    @property
    def dst_operand(self) -> SSAValue | None:
        """The register MERGING keeps lanes from, when given explicitly (``dst = %d``)."""
        seen = False
        for v in self.operands:
            if seen:
                return v
            seen = isinstance(v.type, MaskType)
        return None

    @property
    def merge_source(self) -> SSAValue:
        """What MERGING keeps: ``dst`` if given, else the first register operand."""
        d = self.dst_operand
        if d is not None:
            return d
        return next(v for v in self.operands if isinstance(v.type, RegType))

    @property
    def reg_type(self) -> RegType:
        return self.results[0].type  # type: ignore[return-value]

    # ---- syntax ----------------------------------------------------------------------------
    def _options(self) -> list[tuple[str, Any]]:
        items: list[tuple[str, Any]] = []
        if self.is_datablock:
            items.append(("datablock", True))
        if self.mode != "ZEROING":
            items.append(("merge_mode", self.mode))
        if self.dst_operand is not None:
            items.append(("dst", self.dst_operand))
        return items

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        ops = list(self.sources) + ([self.mask_operand] if self.mask_operand is not None else [])
        printer.print_list(ops, printer.print_operand)
        _print_options(printer, self._options())
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.reg_type)
        if self.HAS_SCALAR:
            printer.print_string(", ")
            printer.print_attribute(self.sources[-1].type)

    @classmethod
    def parse(cls, parser: Parser):
        operands, options = _parse_options(parser, first=True)
        datablock = options.pop("datablock", False)
        dpos = options.pop("datablock@pos", None)
        if not isinstance(datablock, bool):
            parser.raise_error("datablock must be true or false", dpos, parser.pos)
        if datablock and not issubclass(cls, ReduceOp):
            parser.raise_error(f"'{cls.name}' has no option 'datablock'", dpos, parser.pos)
        mode = _take_word(parser, options, "merge_mode", MERGE_MODES, "ZEROING")
        dst = options.pop("dst", None)
        options.pop("dst@pos", None)
        _no_more_options(parser, options, cls.name)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        rt = _parse_anchor(parser, "reg")
        types = cls._operand_types(parser, rt, len(operands))
        vals = [parser.resolve_operand(u, t) for u, t in zip(operands, types)]
        mask = next((v for v in vals if isinstance(v.type, MaskType)), None)
        sources = [v for v in vals if v is not mask]
        dv = parser.resolve_operand(dst, rt) if dst is not None else None
        return cls(sources, mask, rt, mode, dv, datablock, attrs)

    @classmethod
    def _operand_types(cls, parser: Parser, rt: RegType, n: int) -> list[Attribute]:
        """Types of the leading operands: N_SRC registers (the last a scalar for HAS_SCALAR), then the mask."""
        types: list[Attribute] = [rt] * cls.N_SRC
        if cls.HAS_SCALAR:
            parser.parse_punctuation(",")
            types[-1] = parser.parse_type()
        types.append(mask_type(rt.element_type))
        if n != len(types):
            parser.raise_error(f"'{cls.name}' expects {len(types)} operands before its options, got {n}")
        return types

    # ---- verification ----------------------------------------------------------------------
    def verify_vf(self) -> None:
        if len(self.results) != 1 or not isinstance(self.results[0].type, RegType):
            raise VerifyException("expects one !vf.reg result")
        rt = self.reg_type
        if rt.dtype not in self.DTYPES:
            raise VerifyException(f"element type {rt.dtype} is not supported (supported: "
                                  f"{', '.join(t for t in REG_DTYPES if t in self.DTYPES)})")
        srcs = self.sources
        if len(srcs) != self.N_SRC:
            raise VerifyException(f"expects {self.N_SRC} source operand(s), got {len(srcs)}")
        for i, v in enumerate(srcs):
            if self.HAS_SCALAR and i == len(srcs) - 1:
                if not _scalar_fits(v.type, rt.element_type):
                    raise VerifyException(f"scalar operand has type {_tname(v.type)}, but the {rt.dtype} lanes "
                                          f"need {rt.dtype}" + ("" if is_float(rt.element_type)
                                                               else f" (or another {rt.elem_bytes * 8}-bit integer)"))
                continue
            if v.type != rt:
                raise VerifyException(f"dst type must equal src type: source #{i} is {_tname(v.type)}, the result "
                                      f"is {rt}")
        m = self.mask_operand
        if m is None:
            raise VerifyException("expects a mask operand")
        self._check_mask(m)
        n_after = sum(1 for _ in self.operands) - len(srcs) - 1
        d = self.dst_operand
        if n_after > 1:
            raise VerifyException("unexpected operands after the mask")
        if d is not None:
            if self.mode != "MERGING":
                raise VerifyException("`dst` (the register whose lanes MERGING keeps) needs merge_mode = MERGING")
            if d.type != rt:
                raise VerifyException(f"dst type must equal src type: dst is {_tname(d.type)}, the result is {rt}")

    def _check_mask(self, m: SSAValue) -> None:
        rt = self.reg_type
        mt = m.type
        if not isinstance(mt, MaskType):
            raise VerifyException(f"mask operand has type {_tname(mt)}")
        if mt.bits != 8 * rt.elem_bytes:
            raise VerifyException(f"mask lane width b{mt.bits} does not match the {rt.elem_bytes * 8}-bit lanes of "
                                  f"{rt} (use !vf.mask<b{8 * rt.elem_bytes}>)")


class BinaryOp(_ComputeOp):
    """``%r = vf.OP %a, %b, %m[, merge_mode = MERGING][, dst = %d] : !vf.reg<..>``."""

    FN: ClassVar[str] = ""
    """Element function name in runtime/elementwise.py."""


@irdl_op_definition
class AddOp(BinaryOp):
    name = "vf.add"
    PYPTO: ClassVar[str] = "Add/vadd"
    FN: ClassVar[str] = "add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "vf.sub"
    PYPTO: ClassVar[str] = "Sub/vsub"
    FN: ClassVar[str] = "sub"


@irdl_op_definition
class MulOp(BinaryOp):
    name = "vf.mul"
    PYPTO: ClassVar[str] = "Mul/vmul"
    FN: ClassVar[str] = "mul"


@irdl_op_definition
class DivOp(BinaryOp):
    name = "vf.div"
    PYPTO: ClassVar[str] = "Div/vdiv"
    FN: ClassVar[str] = "div"
    DTYPES: ClassVar[frozenset[str]] = FLOAT_DTYPES


@irdl_op_definition
class MaxOp(BinaryOp):
    name = "vf.max"
    PYPTO: ClassVar[str] = "Max/vmax"
    FN: ClassVar[str] = "maximum"


@irdl_op_definition
class MinOp(BinaryOp):
    name = "vf.min"
    PYPTO: ClassVar[str] = "Min/vmin"
    FN: ClassVar[str] = "minimum"


class ScalarOp(_ComputeOp):
    """``%r = vf.OPs %a, %s, %m[, ...] : !vf.reg<..>, SCALAR_TYPE``."""

    HAS_SCALAR: ClassVar[bool] = True
    FN: ClassVar[str] = ""

    @property
    def scalar(self) -> SSAValue:
        return self.sources[1]


@irdl_op_definition
class AddsOp(ScalarOp):
    name = "vf.adds"
    PYPTO: ClassVar[str] = "Adds/vadds"
    FN: ClassVar[str] = "add"


@irdl_op_definition
class MulsOp(ScalarOp):
    name = "vf.muls"
    PYPTO: ClassVar[str] = "Muls/vmuls"
    FN: ClassVar[str] = "mul"


@irdl_op_definition
class MaxsOp(ScalarOp):
    name = "vf.maxs"
    PYPTO: ClassVar[str] = "Maxs/vmaxs"
    FN: ClassVar[str] = "maximum"


@irdl_op_definition
class MinsOp(ScalarOp):
    name = "vf.mins"
    PYPTO: ClassVar[str] = "Mins/vmins"
    FN: ClassVar[str] = "minimum"


SCALAR_FORMS = {AddOp: AddsOp, MulOp: MulsOp, MaxOp: MaxsOp, MinOp: MinsOp}
"""Each register op with a tile-scalar form: ``OP(x, broadcast(s))`` equals ``OPs(x, s)`` lane for
lane (passes/lower_vf.py passes a row's scalar as a parameter, vf-fuse-launches turns it back)."""


def refit_scalar_forms(op: Operation) -> None:
    """After a clone that put a scalar where a register was (or back): each op of
    :data:`SCALAR_FORMS` inside ``op`` whose second source is a scalar becomes its tile-scalar form,
    each tile-scalar op whose second source is a register its register form."""
    vector_of = {sc: v for v, sc in SCALAR_FORMS.items()}
    for o in list(op.walk()):
        scalar = type(o) in vector_of
        if type(o) not in SCALAR_FORMS and not scalar or isinstance(o.sources[1].type, RegType) != scalar:
            continue
        new = (vector_of if scalar else SCALAR_FORMS)[type(o)](list(o.sources), o.mask_operand, o.reg_type)
        new.res[0].name_hint = o.res[0].name_hint
        o.parent_block().insert_op_before(new, o)
        o.res[0].replace_all_uses_with(new.res[0])
        o.parent_block().erase_op(o)


class UnaryOp(_ComputeOp):
    """``%r = vf.OP %a, %m[, merge_mode = MERGING][, dst = %d] : !vf.reg<..>`` (one source)."""

    N_SRC: ClassVar[int] = 1
    FN: ClassVar[str] = ""
    """Element function name in runtime/elementwise.py."""


@irdl_op_definition
class ExpOp(UnaryOp):
    """``%r = vf.exp %a, %m[, ...] : !vf.reg<..>`` (float types)."""

    name = "vf.exp"
    PYPTO: ClassVar[str] = "Exp/vexp"
    DTYPES: ClassVar[frozenset[str]] = FLOAT_DTYPES
    FN: ClassVar[str] = "exp"


@irdl_op_definition
class LnOp(UnaryOp):
    name = "vf.ln"
    PYPTO: ClassVar[str] = "Ln/vln"
    DTYPES: ClassVar[frozenset[str]] = FLOAT_DTYPES
    FN: ClassVar[str] = "log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "vf.sqrt"
    PYPTO: ClassVar[str] = "Sqrt/vsqrt"
    DTYPES: ClassVar[frozenset[str]] = FLOAT_DTYPES
    FN: ClassVar[str] = "sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    name = "vf.rsqrt"
    PYPTO: ClassVar[str] = "Rsqrt/vrsqrt"
    DTYPES: ClassVar[frozenset[str]] = FLOAT_DTYPES
    FN: ClassVar[str] = "rsqrt"


@irdl_op_definition
class RecOp(UnaryOp):
    name = "vf.rec"
    PYPTO: ClassVar[str] = "Reciprocal/vrec"
    DTYPES: ClassVar[frozenset[str]] = FLOAT_DTYPES
    FN: ClassVar[str] = "recip"


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "vf.abs"
    PYPTO: ClassVar[str] = "Abs/vabs"
    FN: ClassVar[str] = "abs_"


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "vf.relu"
    PYPTO: ClassVar[str] = "Relu/vrelu"
    FN: ClassVar[str] = "relu"


@irdl_op_definition
class PairReduceSumOp(_ComputeOp):
    """``%r = vf.pair_reduce_sum %a, %m : !vf.reg<..>`` (PairReduceElem / vcpadd, ZEROING only).

    ``r[k] = a[2k] + a[2k+1]`` for k < VL/2 (the low half), inactive source lanes read as +0,
    lanes VL/2.. are 0 (reference/vector_isa.md §2.6; the [VD] "prefix sum" page is wrong)."""

    name = "vf.pair_reduce_sum"
    PYPTO: ClassVar[str] = "PairReduceElem/vcpadd"
    N_SRC: ClassVar[int] = 1
    DTYPES: ClassVar[frozenset[str]] = PAIR_DTYPES
    PROPS: ClassVar[frozenset[str]] = frozenset()


@irdl_op_definition
class CvtOp(_ComputeOp):
    """``%r = vf.cvt %a, %m[, round = R][, part = EVEN|ODD][, merge_mode = MERGING, dst = %d]
    : !vf.reg<SRC> -> !vf.reg<DST>`` (Cast / vcvt).

    Element conversion (runtime/elementwise.py ``convert``, round modes RINT ROUND FLOOR CEIL
    TRUNC ODD NONE; float -> int saturates, int -> int wraps).  Same lane width: lane i -> lane
    i.  Widening by 2 (f16 -> f32, i8 -> i16, ...): dst lane i = cvt(src lane 2i + p), p = 0
    for ``part = EVEN`` (the default), 1 for ODD (vcvt PART_EVEN/PART_ODD; with a
    ``load_align dist = UNPK_Bn`` source, whose element i sits in lane 2i, EVEN converts
    elements 0..VL/2-1 in order).  Narrowing by 2 (f32 -> f16, ...): dst lane 2i + p = cvt(src
    lane i), the other dst lanes 0 (ZEROING) or kept from ``dst`` (MERGING); ``store_align dist
    = PK_Bn`` then stores the converted lanes contiguously.  The mask has one lane per lane of
    the *wider* type."""

    name = "vf.cvt"
    PYPTO: ClassVar[str] = "Cast/vcvt"
    N_SRC: ClassVar[int] = 1
    PROPS: ClassVar[frozenset[str]] = frozenset({"merge_mode", "rmode", "part"})

    def __init__(self, source: SSAValue, mask: SSAValue, result_type: RegType, round_mode: str = "RINT",
                 part: str = "EVEN", merge_mode: str = "ZEROING", dst: SSAValue | None = None, attributes=None):
        super().__init__([source], mask, result_type, merge_mode, dst, attributes=attributes)
        if round_mode not in (None, "RINT"):
            self.properties["rmode"] = StringAttr(round_mode)
        if part not in (None, "EVEN"):
            self.properties["part"] = StringAttr(part)

    @property
    def round_name(self) -> str:
        return self.rmode.data if self.rmode is not None else "RINT"

    @property
    def part_name(self) -> str:
        return self.part.data if self.part is not None else "EVEN"

    @property
    def src_type(self) -> RegType:
        return self.operands[0].type  # type: ignore[return-value]

    @property
    def wide_bits(self) -> int:
        return 8 * max(self.src_type.elem_bytes, self.reg_type.elem_bytes)

    @property
    def merge_source(self) -> SSAValue:
        d = self.dst_operand
        return d if d is not None else self.operands[0]

    def _options(self) -> list[tuple[str, Any]]:
        items: list[tuple[str, Any]] = []
        if self.round_name != "RINT":
            items.append(("round", self.round_name))
        if self.part_name != "EVEN":
            items.append(("part", self.part_name))
        return items + super()._options()

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.operands[0], self.mask_operand], printer.print_operand)
        _print_options(printer, self._options())
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.src_type)
        printer.print_string(" -> ")
        printer.print_attribute(self.reg_type)

    @classmethod
    def parse(cls, parser: Parser):
        operands, options = _parse_options(parser, first=True)
        rnd = _take_word(parser, options, "round", ROUND_MODES, "RINT")
        part = _take_word(parser, options, "part", CVT_PARTS, "EVEN")
        mode = _take_word(parser, options, "merge_mode", MERGE_MODES, "ZEROING")
        dst = options.pop("dst", None)
        options.pop("dst@pos", None)
        _no_more_options(parser, options, cls.name)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        st = _parse_anchor(parser, "reg")
        parser.parse_punctuation("->")
        rt = _parse_anchor(parser, "reg")
        if len(operands) != 2:
            parser.raise_error("'vf.cvt' expects `%src, %mask`")
        wide = max(st.elem_bytes, rt.elem_bytes)
        src = parser.resolve_operand(operands[0], st)
        m = parser.resolve_operand(operands[1], mask_type(8 * wide))
        dv = parser.resolve_operand(dst, rt) if dst is not None else None
        return cls(src, m, rt, rnd, part, mode, dv, attrs)

    def verify_vf(self) -> None:
        if len(self.results) != 1 or not isinstance(self.results[0].type, RegType):
            raise VerifyException("expects one !vf.reg result")
        if not self.operands or not isinstance(self.operands[0].type, RegType):
            raise VerifyException("expects a register source")
        a, b = self.src_type.elem_bytes, self.reg_type.elem_bytes
        if max(a, b) != min(a, b) and max(a, b) != 2 * min(a, b):
            raise VerifyException(f"converts between lane widths of ratio 1 or 2 only ({self.src_type} -> "
                                  f"{self.reg_type})")
        if self.round_name not in ROUND_MODES:
            raise VerifyException(f"round must be one of {', '.join(ROUND_MODES)}")
        if self.part_name not in CVT_PARTS:
            raise VerifyException("part must be EVEN or ODD")
        m = self.mask_operand
        if m is None or not isinstance(m.type, MaskType) or m.type.bits != self.wide_bits:
            raise VerifyException(f"expects a !vf.mask<b{self.wide_bits}> (one lane per lane of the wider type)")
        d = self.dst_operand
        if d is not None:
            if self.mode != "MERGING":
                raise VerifyException("`dst` (the register whose lanes MERGING keeps) needs merge_mode = MERGING")
            if d.type != self.reg_type:
                raise VerifyException(f"dst must have the result type {self.reg_type}")
        elif self.mode == "MERGING" and self.src_type != self.reg_type:
            raise VerifyException("MERGING across types needs `dst = %d` (the register whose lanes are kept)")


@irdl_op_definition
class BitcastOp(VfOp):
    """``%r = vf.bitcast %a : !vf.reg<SRC> -> !vf.reg<DST>`` (a RegTensor reinterpret_cast, as the A5
    headers do): the same 256 bytes seen as another element type; no instruction, no mask."""

    name = "vf.bitcast"
    PYPTO: ClassVar[str] = "reinterpret_cast"

    def __init__(self, source: SSAValue, result_type: RegType, attributes=None):
        super().__init__([source], [result_type], None, attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operands[0])
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.operands[0].type)
        printer.print_string(" -> ")
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        st = _parse_anchor(parser, "reg")
        parser.parse_punctuation("->")
        rt = _parse_anchor(parser, "reg")
        return cls(parser.resolve_operand(src, st), rt, attrs)

    def verify_vf(self) -> None:
        if len(self.operands) != 1 or not isinstance(self.operands[0].type, RegType):
            raise VerifyException("expects one register operand")
        if len(self.results) != 1 or not isinstance(self.results[0].type, RegType):
            raise VerifyException("expects one !vf.reg result")


@irdl_op_definition
class DeinterleaveOp(VfOp):
    """``%r = vf.deinterleave %a, %b[, part = ODD] : !vf.reg<..>`` (one result of DeInterleave /
    vdintlv): the even (``EVEN``, default) or odd lanes of the lane sequence a ++ b, i.e.
    ``r[k] = (a ++ b)[2k + p]``.  The A5 arg-reduce header takes the odd lanes of a vcmax
    result, where lane 1 holds the index (reference/vector_isa.md §2.6)."""

    name = "vf.deinterleave"
    PYPTO: ClassVar[str] = "DeInterleave/vdintlv"
    PROPS: ClassVar[frozenset[str]] = frozenset({"part"})

    def __init__(self, a: SSAValue, b: SSAValue, part: str = "EVEN", attributes=None):
        super().__init__([a, b], [a.type], {"part": StringAttr(part)} if part != "EVEN" else None, attributes)

    @property
    def part_name(self) -> str:
        return self.part.data if self.part is not None else "EVEN"

    @property
    def reg_type(self) -> RegType:
        return self.results[0].type  # type: ignore[return-value]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        if self.part_name != "EVEN":
            _print_options(printer, [("part", self.part_name)])
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser):
        operands, options = _parse_options(parser, first=True)
        part = _take_word(parser, options, "part", CVT_PARTS, "EVEN")
        _no_more_options(parser, options, cls.name)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        rt = _parse_anchor(parser, "reg")
        if len(operands) != 2:
            parser.raise_error("'vf.deinterleave' expects `%a, %b`")
        a, b = (parser.resolve_operand(u, rt) for u in operands)
        return cls(a, b, part, attrs)

    def verify_vf(self) -> None:
        if len(self.operands) != 2 or len(self.results) != 1 or not all(v.type == self.results[0].type for v in self.operands):
            raise VerifyException("expects two registers of the result's type")
        if not isinstance(self.results[0].type, RegType):
            raise VerifyException("expects one !vf.reg result")
        if self.part_name not in CVT_PARTS:
            raise VerifyException("part must be EVEN or ODD")


@irdl_op_definition
class DupOp(_ComputeOp):
    """``%r = vf.dup %s[, %m][, ...] : !vf.reg<..>, SOURCE_TYPE`` (Duplicate / vdup, vbr).

    A scalar source goes to every lane (every active lane with a mask); a register source
    broadcasts its lane 0 (vdup POS_LOWEST).  Without a mask every lane is written."""

    name = "vf.dup"
    PYPTO: ClassVar[str] = "Duplicate/vdup"
    N_SRC: ClassVar[int] = 1

    @property
    def source(self) -> SSAValue:
        return self.operands[0]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        if self.mask_operand is not None:
            printer.print_string(", ")
            printer.print_operand(self.mask_operand)
        _print_options(printer, self._options())
        _print_attrs_and_colon(printer, self)
        printer.print_attribute(self.reg_type)
        printer.print_string(", ")
        printer.print_attribute(self.source.type)

    @classmethod
    def _operand_types(cls, parser: Parser, rt: RegType, n: int) -> list[Attribute]:
        parser.parse_punctuation(",")
        st = parser.parse_type()
        if n not in (1, 2):
            parser.raise_error(f"'vf.dup' expects a source and an optional mask, got {n} operands")
        return [st, mask_type(rt.element_type)][:n]

    @property
    def sources(self) -> tuple[SSAValue, ...]:
        return (self.operands[0],) if self.operands else ()

    @property
    def dst_operand(self) -> SSAValue | None:
        if self.mask_operand is None:
            return None
        return super().dst_operand

    def verify_vf(self) -> None:
        if len(self.results) != 1 or not isinstance(self.results[0].type, RegType):
            raise VerifyException("expects one !vf.reg result")
        rt = self.reg_type
        if not self.operands:
            raise VerifyException("expects a source operand")
        st = self.source.type
        if isinstance(st, RegType):
            if st != rt:
                raise VerifyException(f"dst type must equal src type: source is {st}, the result is {rt}")
        elif not _scalar_fits(st, rt.element_type):
            raise VerifyException(f"scalar source has type {_tname(st)}, but the lanes are {rt.dtype}")
        m = self.mask_operand
        if m is None:
            if len(self.operands) != 1:
                raise VerifyException("without a mask, vf.dup takes just its source")
            if self.mode != "ZEROING":
                raise VerifyException("merge_mode = MERGING needs a mask")
            return
        self._check_mask(m)
        d = self.dst_operand
        if len(self.operands) > 3 or (len(self.operands) == 3 and d is None):
            raise VerifyException("unexpected operands after the mask")
        if d is not None:
            if self.mode != "MERGING":
                raise VerifyException("`dst` (the register whose lanes MERGING keeps) needs merge_mode = MERGING")
            if d.type != rt:
                raise VerifyException(f"dst type must equal src type: dst is {_tname(d.type)}, the result is {rt}")


class ReduceOp(_ComputeOp):
    """``%r = vf.reduce_X %v, %m[, datablock = true][, merge_mode = MERGING][, dst = %d] : !vf.reg<..>``.

    Whole register (vcmin/vcmax/vcadd): dst[0] = the reduction of the active lanes; for min/max
    dst[1] = the index of the first extreme lane (its integer bit pattern).  ``datablock``
    (vcgmin/vcgmax/vcgadd): one result per DATABLOCK_BYTES group, in dst lanes 0, 1, ...
    Other lanes: 0 (ZEROING) or kept (MERGING).  Exact rules: runtime/vf_executor.py."""

    N_SRC: ClassVar[int] = 1
    DTYPES: ClassVar[frozenset[str]] = REDUCE_DTYPES
    KIND: ClassVar[str] = ""
    PROPS: ClassVar[frozenset[str]] = frozenset({"merge_mode", "datablock"})

    def verify_vf(self) -> None:
        super().verify_vf()
        rt = self.reg_type
        if self.is_datablock and rt.dtype not in DATABLOCK_DTYPES:
            raise VerifyException(
                f"datablock = true supports only {', '.join(DATABLOCK_DTYPES)} (got {rt.dtype}); "
                "64-bit types reduce the whole register (datablock = false)")


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    name = "vf.reduce_min"
    PYPTO: ClassVar[str] = "ReduceMin/vcmin/vcgmin"
    KIND: ClassVar[str] = "min"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "vf.reduce_max"
    PYPTO: ClassVar[str] = "ReduceMax/vcmax/vcgmax"
    KIND: ClassVar[str] = "max"


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "vf.reduce_sum"
    PYPTO: ClassVar[str] = "ReduceSum/vcadd/vcgadd"
    KIND: ClassVar[str] = "sum"


# --------------------------------------------------------------------------------------
# vf.func and vf.call
# --------------------------------------------------------------------------------------

ALLOWED_IN_VF = (scf.ForOp, scf.YieldOp)


@irdl_op_definition
class VfFuncOp(IRDLOperation):
    """``vf.func @name(%t: !pto.tile_buf<vec, ...>, %n: i32) [attributes {...}] { body }``."""

    name = "vf.func"
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove(), NoTerminator())

    def __init__(self, name: str, arg_types: Sequence[Attribute], body: Region | None = None, attributes=None):
        if body is None:
            body = Region(Block(arg_types=list(arg_types)))
        super().__init__(properties={"sym_name": StringAttr(name),
                                     "function_type": FunctionType.from_lists(list(arg_types), [])},
                         regions=[body], attributes=attributes or {})

    @property
    def args(self) -> tuple[SSAValue, ...]:
        block = self.body.first_block
        return tuple(block.args) if block is not None else ()

    @property
    def arg_types(self) -> tuple[Attribute, ...]:
        return tuple(self.function_type.inputs.data)

    @property
    def block(self) -> Block:
        return self.body.blocks[0]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        printer.print_list(self.body.blocks[0].args, printer.print_block_argument)
        printer.print_string(")")
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=True)

    @classmethod
    def parse(cls, parser: Parser) -> VfFuncOp:
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
        attrs = {}
        if parser.parse_optional_keyword("attributes") is not None:
            attrs = parser.parse_optional_attr_dict()
        region = parser.parse_region(args)
        return cls(name, [a.type for a in args], region, attrs)

    def verify_(self) -> None:
        block = self.body.blocks[0] if self.body.blocks else None
        if block is None:
            raise VerifyException("a vf.func needs a body")
        if tuple(a.type for a in block.args) != self.arg_types:
            raise VerifyException("block arguments do not match the function type")
        if enclosing_vf_func(self) is not None:
            raise VerifyException("a vf.func may not be nested in another vf.func")
        parent = self.parent_block()
        first = next((o for o in parent.ops if isinstance(o, VfFuncOp)), None) if parent is not None else None
        if first is self:  # the first vf.func of the block checks them all: one pass, not one per function
            seen = set()
            for o in parent.ops:
                if isinstance(o, VfFuncOp):
                    if o.sym_name.data in seen:
                        raise VerifyException(f"another vf.func named @{o.sym_name.data} is defined in the same "
                                              "block")
                    seen.add(o.sym_name.data)
        for i, a in enumerate(block.args):
            t = a.type
            if isinstance(t, TileLikeType):
                if not isinstance(t, TileBufType) or t.loc.data != "vec":
                    raise VerifyException(f"argument #{i} ({_tname(t)}): a VF takes UB tile buffers "
                                          "(!pto.tile_buf with loc=vec) and scalars")
            elif not _is_scalar_type(t):
                raise VerifyException(f"argument #{i} has type {_tname(t)}: a VF takes UB tile buffers "
                                      "(!pto.tile_buf, loc=vec) and scalars (integers, index, floats)")
        ops = [op for op in self.walk() if op is not self]
        for op in ops:
            where = _where(op)
            if isinstance(op, scf.IfOp) or op.name in ("scf.while", "scf.index_switch", "cf.br", "cf.cond_br"):
                raise VerifyException(f"{op.name}{where} is a branch; __simd_vf__ code has no branches "
                                      "(select lanes with masks instead)")
            if isinstance(op, (VfFuncOp, VfCallOp)):
                raise VerifyException(f"{op.name}{where} may not appear inside a vf.func")
            if not (isinstance(op, VfOp) or isinstance(op, ALLOWED_IN_VF) or op.name.startswith("arith.")):
                raise VerifyException(f"{op.name}{where} is not allowed in a vf.func (its body holds vf register "
                                      "and memory ops, arith ops and scf.for hardware loops)")
            if isinstance(op, scf.ForOp):
                trips = _static_trips(op)
                if trips is not None and trips > HW_LOOP_MAX:
                    raise VerifyException(f"the hardware loop{where} runs {trips} trips, more than {HW_LOOP_MAX} "
                                          "(uint16 trip count)")
        _check_unaligned_pairs(self, ops)


def _where(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f" at {loc.line.data}:{loc.column.data}"
    return ""


def _const_int(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _static_trips(op: scf.ForOp) -> int | None:
    lb, ub, step = (_const_int(v) for v in (op.lb, op.ub, op.step))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def lookup_vf_func(anchor: Operation, name: str) -> VfFuncOp | None:
    """The vf.func @name visible from ``anchor``: the enclosing blocks, innermost first, then the module."""
    op: Operation | None = anchor
    while op is not None:
        block = op.parent_block()
        if block is None:
            break
        for o in block.ops:
            if isinstance(o, VfFuncOp) and o.sym_name.data == name:
                return o
        op = block.parent_op()
    return None


def copy_op(op: Operation, values: dict) -> Operation:
    """``op.clone(values)`` of an op whose body defines each value before its uses (a VF
    pto-lower-vf built), in one pass and without xDSL's constructor: an operand is mapped when its
    op is made (xDSL's clone sets every operand twice, in a second walk), and the fields a copy of a
    verified op has are set directly (``Operation.__init__`` re-checks them, fills defaults and walks
    parents: most of pto-lower-vf's time, which copies one VF body per tile op)."""
    new_op = op_with_operands(type(op), [values.get(v, v) for v in op._operands])
    new_op._successors = new_op._successor_uses = ()
    new_op.properties, new_op.attributes = dict(op.properties), dict(op.attributes)
    new_op.location = op.location
    new_op.parent = new_op._next_op = new_op._prev_op = None
    results = []
    for r in op.results:
        values[r] = x = OpResult(r.type, new_op, r.index)
        x._name = r._name  # a copied name is valid
        results.append(x)
    new_op.results = SSAValues(results)
    regions = []
    for region in op.regions:
        new_region = Region()
        for block in region.blocks:
            new = Block()
            new._args = tuple(BlockArgument(a.type, new, a.index, a.location) for a in block.args)
            for a, x in zip(block.args, new.args):
                values[a] = x
                x._name = a._name
            prev = None
            for o in block.ops:
                c = copy_op(o, values)
                c.parent, c._prev_op = new, prev
                if prev is None:
                    new._first_op = c
                else:
                    prev._next_op = c
                prev = c
            new._last_op = prev
            new_region.add_block(new)
        new_region.parent = new_op
        regions.append(new_region)
    new_op.regions = tuple(regions)
    return new_op


def kernel_walk(root: Operation) -> Iterator[Operation]:
    """``root.walk()`` without the bodies of vf.funcs (the vf.funcs themselves are yielded): the
    kernel's ops, its launches and the functions they launch.  A VF body holds no vf.func and
    no vf.call, and holds most of a lowered module's ops."""
    yield root
    if isinstance(root, VfFuncOp):
        return
    for region in root.regions:
        for block in region.blocks:
            for op in block.ops:
                yield from kernel_walk(op)


def for_loops(root: Operation) -> list[scf.ForOp]:
    """The ``scf.for`` ops inside ``root``, in ``root.walk()`` order, found by descending only into
    ops with regions (xDSL's walk makes a generator per op; a lowered module holds thousands of VF
    ops and a few loops)."""
    found: list[scf.ForOp] = []
    _add_loops(root, found)
    return found


def _add_loops(op: Operation, found: list) -> None:
    for region in op.regions:
        for block in region.blocks:
            for o in block.ops:
                if o.regions:
                    if isinstance(o, scf.ForOp):
                        found.append(o)
                    _add_loops(o, found)


class VfSymbols:
    """:func:`lookup_vf_func` for a pass that resolves many calls: the vf.funcs of every block by
    name, gathered in one walk of ``root``, so a lookup climbs the enclosing blocks without
    scanning them (a kernel of n tile ops has n VFs and n calls).  :meth:`add` / :meth:`remove`
    keep it true while the pass inserts and erases vf.funcs."""

    def __init__(self, root: Operation):
        self._by_block: dict[Block, dict[str, list[VfFuncOp]]] = {}
        for op in kernel_walk(root):
            if isinstance(op, VfFuncOp):
                self.add(op)

    def add(self, fn: VfFuncOp) -> None:
        self._by_block.setdefault(fn.parent_block(), {}).setdefault(fn.sym_name.data, []).append(fn)

    def remove(self, fn: VfFuncOp) -> None:
        same = self._by_block[fn.parent_block()][fn.sym_name.data]
        same[:] = [f for f in same if f is not fn]

    def lookup(self, anchor: Operation, name: str) -> VfFuncOp | None:
        op: Operation | None = anchor
        while op is not None:
            block = op.parent_block()
            if block is None:
                break
            found = self._by_block.get(block, {}).get(name)
            if found:  # several of one name in a block: the first in block order, as lookup_vf_func
                return found[0] if len(found) == 1 else next(o for o in block.ops if any(o is f for f in found))
            op = block.parent_op()
        return None


class VfPrinter(Printer):
    """xDSL's printer, faster on VF bodies (the listing prints every launched VF): an op's results and
    name are printed without looking up its traits (:func:`_form`), arith constants, binary ops and
    casts and ``scf.yield`` (a third of a VF's ops) without xDSL's interpreter of declarative formats,
    a tile, register or mask type's text is made once, and a token without a newline goes straight
    to the stream (xDSL writes each token through ``print()``).  Prints what :class:`Printer` prints."""

    def print_op(self, op: Operation) -> None:
        form = _FORMS.get(type(op))
        if form is None:
            form = _FORMS[type(op)] = _form(type(op))
        if (not form or op.attributes or not form[0](op) or self.print_generic_format or self.print_debuginfo
                or op in self.diagnostic.op_messages):
            super().print_op(op)
            return
        if op.results:
            self.print_list(op.results, self.print_ssa_value)
            self.print_string(" = ")
        self.print_string(op.name)
        form[1](self, op)

    def print_string(self, text: str, *, indent: int | None = None) -> None:
        if "\n" in text or self.stream is None:
            super().print_string(text, indent=indent)
            return
        self._current_column += len(text)
        self.stream.write(text)

    def print_attribute(self, attribute: Attribute) -> None:
        if not isinstance(attribute, TileBufType | RegType | MaskType):
            super().print_attribute(attribute)
            return
        known = _TYPE_TEXT.get(id(attribute))
        if known is None:
            buf = StringIO()
            Printer(stream=buf).print_attribute(attribute)
            known = _TYPE_TEXT[id(attribute)] = (attribute, buf.getvalue())
        self.print_string(known[1])


def _always(op: Operation) -> bool:
    return True


def _no_overflow_flags(op: Operation) -> bool:
    return op.properties.get("overflowFlags", _NO_OVERFLOW) == _NO_OVERFLOW


def _print_binary(printer: Printer, op: Operation) -> None:
    """``$lhs `,` $rhs attr-dict `:` type($result)`` with no attributes."""
    lhs, rhs = op.operands
    printer.print_string(" ")
    printer.print_ssa_value(lhs)
    printer.print_string(", ")
    printer.print_ssa_value(rhs)
    printer.print_string(" : ")
    printer.print_attribute(op.results[0].type)


def _print_cast(printer: Printer, op: Operation) -> None:
    """``$input attr-dict `:` type($input) `to` type($result)`` with no attributes."""
    (v,) = op.operands
    printer.print_string(" ")
    printer.print_ssa_value(v)
    printer.print_string(" : ")
    printer.print_attribute(v.type)
    printer.print_string(" to ")
    printer.print_attribute(op.results[0].type)


def _print_yield(printer: Printer, op: Operation) -> None:
    """``attr-dict ($arguments^ `:` type($arguments))?`` with no attributes."""
    if op.operands:
        printer.print_string(" ")
        printer.print_list(op.operands, printer.print_ssa_value)
        printer.print_string(" : ")
        printer.print_list([v.type for v in op.operands], printer.print_attribute)


def _print_constant(printer: Printer, op: Operation) -> None:
    """``attr-dict $value`` with no attributes."""
    printer.print_string(" ")
    printer.print_attribute(op.properties["value"])


def _form(cls: type[Operation]):
    """How :class:`VfPrinter` prints an op of ``cls`` after its results and name, and when it may:
    (may(op), print(printer, op)), or None: xDSL's ``print_op`` (an op with regions of their own
    scope, or printed in the generic form)."""
    fmt = getattr(cls, "assembly_format", None)
    if fmt in _BINARY_FORMATS:
        return _no_overflow_flags, _print_binary
    if fmt == "$input attr-dict `:` type($input) `to` type($result)":
        return _always, _print_cast
    if fmt == "attr-dict ($arguments^ `:` type($arguments))?":
        return _always, _print_yield
    if cls is arith.ConstantOp:
        return _always, _print_constant
    if (cls.print is Operation.print or issubclass(cls, UnregisteredOp)
            or cls.get_trait(IsolatedFromAbove) is not None):
        return None
    return _always, lambda printer, op: op.print(printer)


_BINARY_FORMATS = ("$lhs `,` $rhs attr-dict `:` type($result)",
                   "$lhs `,` $rhs (`overflow` `` $overflowFlags^)? attr-dict `:` type($result)")
_NO_OVERFLOW = arith.IntegerOverflowAttr("none")
_FORMS: dict[type, tuple | None] = {}
"""Op class -> its :func:`_form`."""


_TYPE_TEXT: dict[int, tuple[Attribute, str]] = {}
"""id(type) -> (the type, held so no other object takes its id; its text): a type's hash costs as
much as printing it."""


@irdl_op_definition
class VfCallOp(IRDLOperation):
    """``vf.call @name(%a, ...) : (T, ...) -> ()``: one VF launch (asc_vf_call); scalars are PB parameters."""

    name = "vf.call"
    callee = prop_def(SymbolRefAttr)
    arguments = var_operand_def()

    def __init__(self, callee: str, args: Sequence[SSAValue], attributes=None):
        super().__init__(operands=[list(args)], properties={"callee": SymbolRefAttr(callee)},
                         attributes=attributes or {})

    @property
    def callee_name(self) -> str:
        return self.callee.root_reference.data

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.callee_name)
        printer.print_string("(")
        printer.print_list(self.arguments, printer.print_operand)
        printer.print_string(")")
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(FunctionType.from_lists([a.type for a in self.arguments], []))

    @classmethod
    def parse(cls, parser: Parser) -> VfCallOp:
        name = parser.parse_symbol_name().data
        unresolved = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ft = parser.parse_function_type()
        if len(ft.inputs.data) != len(unresolved) or ft.outputs.data:
            parser.raise_error(f"expected a signature of {len(unresolved)} argument(s) and no results", pos, parser.pos)
        return cls(name, [parser.resolve_operand(u, t) for u, t in zip(unresolved, ft.inputs.data)], attrs)

    def resolve(self) -> VfFuncOp | None:
        root = self
        while root.parent_op() is not None:
            root = root.parent_op()
        symbols = run_table((VfSymbols, root), lambda: VfSymbols(root))
        if symbols is not None:  # verifying: one table for the module's n calls, not n scans
            return symbols.lookup(self, self.callee_name)
        return lookup_vf_func(self, self.callee_name)

    def verify_(self) -> None:
        if enclosing_vf_func(self) is not None:
            raise VerifyException("vf.call inside a vf.func: a VF cannot launch another VF")
        fn = self.resolve()
        if fn is None:
            if self.parent_op() is None:
                return  # detached (being built)
            raise VerifyException(f"no vf.func named @{self.callee_name} is visible here")
        want = fn.arg_types
        if len(want) != len(self.arguments):
            raise VerifyException(f"@{self.callee_name} takes {len(want)} argument(s), {len(self.arguments)} given")
        for i, (a, t) in enumerate(zip(self.arguments, want)):
            if a.type != t and not _call_compatible(a.type, t):
                raise VerifyException(f"argument #{i} has type {_tname(a.type)}, but @{self.callee_name} takes "
                                      f"{_tname(t)}")


def _call_compatible(actual: Attribute, formal: Attribute) -> bool:
    """A tile_buf whose valid region is dynamic (``?``) in the callee accepts any valid region."""
    if isinstance(actual, TileBufType) and isinstance(formal, TileBufType):
        if actual.element_type != formal.element_type or (actual.rows, actual.cols) != (formal.rows, formal.cols):
            return False
        if actual._keys() != formal._keys() or actual.loc != formal.loc:
            return False
        return all(f == -1 or f == a for f, a in zip(formal.valid_shape, actual.valid_shape))
    return False


# --------------------------------------------------------------------------------------
# Remainder, bitwise, shift, PReLU and power lanes (the tile ops TREM ... TLRELU, TPOW, TPOWS).  vector_isa.md does
# not describe these instructions (pto_isa.md §3 names vand among the A5 micro-instructions); each
# computes its element function lane-wise under the mask, as vf.add does.
# --------------------------------------------------------------------------------------

INT_DTYPES = ARITH_DTYPES - FLOAT_DTYPES


def _lane_op(base: type[_ComputeOp], name: str, pypto: str, fn: str, dtypes=ARITH_DTYPES) -> type[_ComputeOp]:
    cls_name = "".join(p.capitalize() for p in name.split(".", 1)[1].split("_")) + "Op"
    return irdl_op_definition(type(cls_name, (base,), {
        "name": name, "PYPTO": pypto, "FN": fn, "DTYPES": dtypes, "__doc__": base.__doc__, "__module__": __name__,
        "__annotations__": {"PYPTO": ClassVar[str], "FN": ClassVar[str], "DTYPES": ClassVar[frozenset[str]]}}))


LANE_BINARY_OPS = tuple(_lane_op(BinaryOp, f"vf.{n}", p, fn, d) for n, p, fn, d in (
    ("rem", "Rem/vrem", "rem", ARITH_DTYPES), ("fmod", "Fmod/vfmod", "fmod", ARITH_DTYPES),
    ("and", "And/vand", "bitand", INT_DTYPES), ("or", "Or/vor", "bitor", INT_DTYPES),
    ("xor", "Xor/vxor", "bitxor", INT_DTYPES), ("shl", "ShiftLeft/vshl", "shl", INT_DTYPES),
    ("shr", "ShiftRight/vshr", "shr", INT_DTYPES), ("prelu", "Prelu/vprelu", "prelu", FLOAT_DTYPES),
    ("pow", "Pow/vpow", "power", FLOAT_DTYPES)))
LANE_SCALAR_OPS = tuple(_lane_op(ScalarOp, f"vf.{n}", p, fn, d) for n, p, fn, d in (
    ("rems", "Rems/vrems", "rem", ARITH_DTYPES), ("fmods", "Fmods/vfmods", "fmod", ARITH_DTYPES),
    ("ands", "Ands/vands", "bitand", INT_DTYPES), ("ors", "Ors/vors", "bitor", INT_DTYPES),
    ("xors", "Xors/vxors", "bitxor", INT_DTYPES), ("shls", "ShiftLefts/vshls", "shl", INT_DTYPES),
    ("shrs", "ShiftRights/vshrs", "shr", INT_DTYPES), ("lrelu", "LeakyRelu/vlrelu", "prelu", FLOAT_DTYPES),
    ("pows", "Pows/vpows", "power", FLOAT_DTYPES)))
NotOp = _lane_op(UnaryOp, "vf.not", "Not/vnot", "bitnot", INT_DTYPES)

# --------------------------------------------------------------------------------------
# Op tables (the PTO-AS front end's builders are in pto_compiler/vf_builder.py)
# --------------------------------------------------------------------------------------

SCALAR_WORDS = ("INF", "NEG_INF", "NAN", "MAX", "MIN")

BINARY_OPS: dict[str, type[BinaryOp]] = {c.name: c for c in (AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp,
                                                              *LANE_BINARY_OPS)}
SCALAR_OPS: dict[str, type[ScalarOp]] = {c.name: c for c in (AddsOp, MulsOp, MaxsOp, MinsOp, *LANE_SCALAR_OPS)}
UNARY_OPS: dict[str, type[UnaryOp]] = {c.name: c for c in (ExpOp, LnOp, SqrtOp, RsqrtOp, RecOp, AbsOp, ReluOp,
                                                           NotOp)}
REDUCE_OPS: dict[str, type[ReduceOp]] = {c.name: c for c in (ReduceMinOp, ReduceMaxOp, ReduceSumOp)}


def type_from_text(name: str, body: str, parse_error=None) -> Attribute:
    """``!vf.reg<BODY>`` / ``!vf.mask<BODY>`` from the text between the angle brackets (for a
    front end that meets a ``!vf`` type; raises ValueError with a message otherwise)."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.utils.exceptions import ParseError

    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(VF)
    try:
        return Parser(ctx, f"!{name}<{body}>").parse_type()
    except (ParseError, VerifyException) as e:
        msg = getattr(e, "msg", None) or str(e).strip().splitlines()[-1]
        raise ValueError(msg) from None


OPS: tuple[type[IRDLOperation], ...] = (
    VfFuncOp, VfCallOp, CreateMaskOp, UpdateMaskOp, LoadAlignOp, LoadUnalignOp, StoreAlignOp, StoreUnalignOp,
    StoreUnalignPostOp, AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, AddsOp, MulsOp, MaxsOp, MinsOp, ExpOp, DupOp,
    ReduceMinOp, ReduceMaxOp, ReduceSumOp, LnOp, SqrtOp, RsqrtOp, RecOp, AbsOp, ReluOp, PairReduceSumOp, CvtOp,
    BitcastOp, DeinterleaveOp, *LANE_BINARY_OPS, *LANE_SCALAR_OPS, NotOp,
)

VF = Dialect("vf", list(OPS), [RegType, MaskType])
