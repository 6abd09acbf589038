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


CVT = """
vf.func @k(%a: !pto.tile_buf<vec, 1x64xf32>) {
  %m = vf.create_mask ALL : !vf.mask<b32>
  %x = vf.load_align %a[0] : !pto.tile_buf<vec, 1x64xf32>
  %w = vf.cvt %x, %m, round = MODE : !vf.reg<64xf32> -> !vf.reg<64xi32>
}"""


@pytest.mark.parametrize("spelling", ["RINT", "round", "CAST_FLOOR", "ceil", "rz", "ODD", "CAST_NONE", "HALF_UP"])
def test_vf_cvt_takes_the_round_modes_the_conversions_define(spelling):
    """One table of round modes (dialects/pto.ROUND_MODES): every spelling ``round_mode`` knows
    normalises to a mode vf.cvt verifies; a mode it does not know is refused by both, naming the same modes."""
    from pto_compiler import api
    from pto_compiler.dialects import vf
    from pto_compiler.runtime.element_types import ElementwiseError, round_mode

    if spelling == "HALF_UP":
        with pytest.raises(ElementwiseError, match="RINT, ROUND, FLOOR, CEIL, TRUNC, ODD, NONE"):
            round_mode(spelling)
        with pytest.raises(Exception, match="RINT, ROUND, FLOOR, CEIL, TRUNC, ODD, NONE"):
            api.parse_printed(CVT.replace("MODE", spelling)).verify()
        return
    mode = round_mode(spelling)
    module = api.parse_printed(CVT.replace("MODE", mode))
    module.verify()
    (cvt,) = [o for o in module.walk() if isinstance(o, vf.CvtOp)]
    assert cvt.round_name == mode
