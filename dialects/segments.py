"""Operand groups of ops with ``operandSegmentSizes`` (``ins``/``outs`` of every tile op) read
without decoding the attribute each time.

xDSL's accessor unpacks the DenseArrayBase bytes on every ``op.ins`` (about 7 us); the passes
read a tile op's groups some twenty times per compile, so at 1,000 ops the decoding alone cost
a few tenths of a second.  Where the group lies in the operand tuple is worked out once per
distinct byte string (a kernel has a handful: (2, 1), (1, 1), ...), by xDSL's own accessor."""

from __future__ import annotations

from xdsl.dialects.builtin import DenseArrayBase, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl.operations import BaseAttrAccessor, VarIRConstruct

class _Decoded:
    """``op.<group>``: xDSL's accessor ``inner``, its position in the operands (a slice, an index
    or None) worked out once per distinct sizes attribute and applied to the operand tuple."""

    def __init__(self, inner: BaseAttrAccessor):
        self.inner = inner
        self.as_property, self.name = inner.option.as_property, inner.option.attribute_name
        self.at: dict[bytes, slice | int | None] = {}

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        attr = (obj.properties if self.as_property else obj.attributes)[self.name]
        raw = attr.data.data
        try:
            at = self.at[raw]
        except KeyError:
            sizes = tuple(attr.get_values())
            at = self.inner.index(sizes, range(sum(sizes)))  # where xDSL's accessor would look
            at = self.at[raw] = slice(at.start, at.stop) if isinstance(at, range) else at
        return None if at is None else obj._operands[at]

    def __set__(self, obj, value):
        self.inner.__set__(obj, value)


def decode_segments_once(ops) -> None:
    """Give each op class of ``ops`` the decoding-once accessors for its operand groups."""
    for cls in ops:
        for name, acc in list(vars(cls).items()):
            if isinstance(acc, BaseAttrAccessor) and acc.construct == VarIRConstruct.OPERAND:
                setattr(cls, name, _Decoded(acc))


_SEGMENTS: dict[tuple[int, ...], DenseArrayBase] = {}


def segment_sizes(*sizes: int) -> DenseArrayBase:
    """The ``operandSegmentSizes`` property of these group sizes, one shared (immutable) attribute
    per distinct sizes: xDSL's builder packs and verifies a new one for every op it builds."""
    attr = _SEGMENTS.get(sizes)
    if attr is None:
        attr = _SEGMENTS[sizes] = DenseArrayBase.from_list(i32, sizes)
    return attr


def init_groups(op: Operation, groups, result_types, attributes: dict[str, Attribute] | None) -> None:
    """What xDSL's builder makes of an op whose operands are ``groups`` (sequences of values) sized
    by its operandSegmentSizes property, its only one, and the given result types and attributes
    (None ones dropped): the same op, with the shared sizes attribute, without the builder's
    per-group checks and packing."""
    Operation.__init__(op, operands=[SSAValue.get(v) for group in groups for v in group],
                       result_types=list(result_types),
                       properties={"operandSegmentSizes": segment_sizes(*map(len, groups))},
                       attributes={k: v for k, v in (attributes or {}).items() if v is not None})
