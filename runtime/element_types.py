"""Element type names, float formats and round-mode spellings, NumPy-free: the compile path checks
them here without importing NumPy (0.09 s of start-up); runtime/elementwise.py computes with the
same tables."""

from __future__ import annotations

from pto_compiler.dialects.pto import ROUND_MODES

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

FLOAT_FORMATS: dict[str, tuple[int, int, int, int]] = {
    "f16": (11, -14, 15, 0x7E00),
    "bf16": (8, -126, 127, 0x7FC0),
    "f32": (24, -126, 127, 0x7FC00000),
    "f64": (53, -1022, 1023, 0x7FF8000000000000),
}
"""Each float type's (precision p incl. the implicit bit, min normal exponent, max exponent,
canonical quiet NaN bits)."""

FLOAT_NAMES = frozenset(FLOAT_FORMATS)


def canonical_name(name: str) -> str | None:
    """``"F32"`` -> ``"f32"``, ``"u8"`` -> ``"ui8"``; None when ``name`` is no element type."""
    name = name.lower()
    if name.startswith("u") and not name.startswith("ui"):
        name = "ui" + name[1:]
    return name if name in NUMPY_NAMES else None


def holds_exactly(value: float, name: str) -> bool:
    """The float type ``name`` holds ``value`` unrounded because it is an integer below 2**p (0.0, 1.0,
    255.0 ...); other values round with NumPy (``elementwise.scalar_to``)."""
    return value.is_integer() and abs(value) < 2 ** FLOAT_FORMATS[name][0]


class ElementwiseError(ValueError):
    """An element function has no defined result (integer division by zero, unknown mode)."""


_MODE_ALIASES = {
    "CAST_RINT": "RINT", "CAST_ROUND": "ROUND", "CAST_FLOOR": "FLOOR", "CAST_CEIL": "CEIL",
    "CAST_TRUNC": "TRUNC", "CAST_ODD": "ODD", "CAST_NONE": "NONE",
    "RNE": "RINT", "RZ": "TRUNC", "RP": "CEIL", "RM": "FLOOR", "RNA": "ROUND",
}


def round_mode(mode: str | None) -> str:
    """Normalise a round-mode spelling (``CAST_RINT``, ``round``, ``rz``...) to one of ROUND_MODES."""
    if mode is None:
        return "RINT"
    m = str(mode).strip().upper()
    m = _MODE_ALIASES.get(m, m)
    if m not in ROUND_MODES:
        raise ElementwiseError(f"unknown round mode '{mode}' (expected one of {', '.join(ROUND_MODES)}, CAST_RINT)")
    return m
