"""Element type names, NumPy-free: the compile path checks names here without importing NumPy
(0.09 s of start-up); ``elementwise.np_dtype`` makes the dtypes from the same table."""

from __future__ import annotations

NUMPY_NAMES: dict[str, str] = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
}
"""ptoc element type name (``u8`` ... spell ``ui8`` ...) -> NumPy dtype name."""

FLOAT_NAMES = frozenset({"f16", "bf16", "f32", "f64"})


def canonical_name(name: str) -> str | None:
    """``"F32"`` -> ``"f32"``, ``"u8"`` -> ``"ui8"``; None when ``name`` is no element type."""
    name = name.lower()
    if name.startswith("u") and not name.startswith("ui"):
        name = "ui" + name[1:]
    return name if name in NUMPY_NAMES else None

_PRECISION = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
"""Significand bits of each float type, the implicit bit included."""


def holds_exactly(value: float, name: str) -> bool:
    """The float type ``name`` holds ``value`` unrounded because it is an integer of at most the type's
    precision (0.0, 1.0, 255.0 ...); other values round with NumPy (``elementwise.scalar_to``)."""
    return value.is_integer() and abs(value) < 2 ** _PRECISION[name]
