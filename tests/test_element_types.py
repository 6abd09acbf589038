"""runtime/element_types.py: the NumPy-free element type facts the compile path reads, checked
against NumPy's own (ml_dtypes' for bf16)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pto_compiler.runtime import elementwise as E
from pto_compiler.runtime.element_types import FLOAT_FORMATS, NUMPY_NAMES, canonical_name, holds_exactly


@pytest.mark.parametrize("name", sorted(FLOAT_FORMATS))
def test_float_formats_are_numpys(name):
    info = ml_dtypes.finfo(ml_dtypes.bfloat16) if name == "bf16" else np.finfo(NUMPY_NAMES[name])
    p, emin, emax, nan = FLOAT_FORMATS[name]
    assert (p, emin, emax) == (info.nmant + 1, info.minexp, info.maxexp - 1)
    dtype = E.np_dtype(name)
    uint = np.dtype(f"uint{8 * dtype.itemsize}")
    value = np.array(nan, dtype=uint).view(dtype)
    assert np.isnan(value) and int(value.view(uint)) & (1 << (p - 2))  # quiet: the top fraction bit set


@pytest.mark.parametrize("given_name, canonical", [("f32", "f32"), ("F16", "f16"), ("u8", "ui8"), ("UI32", "ui32"),
                                                   ("i1", "i1"), ("bf16", "bf16"), ("index", None), ("f8", None)])
def test_canonical_name(given_name, canonical):
    assert canonical_name(given_name) == canonical


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(FLOAT_FORMATS)),
       st.one_of(st.integers(-(1 << 25), 1 << 25).map(float), st.floats(allow_nan=True, allow_infinity=True)))
def test_a_value_held_exactly_is_its_own_rounding(name, value):
    """When holds_exactly says so, rounding to the type (the golden model's scalar_to) keeps the value."""
    if holds_exactly(value, name):
        rounded = float(E.scalar_to(value, E.np_dtype(name)).astype(np.float64))
        assert rounded == value and np.signbit(rounded) == np.signbit(value)
