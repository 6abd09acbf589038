"""Float max/min as VF launches run them (elementwise.float_maxmin in a static plan's lane-wise
step, elementwise.maximum/minimum elsewhere) against a reference written element by element
here: NaN if either operand is NaN (the canonical quiet NaN), -0 < +0 on a tie of zeros, else
the larger (smaller) operand, bit for bit; integers as NumPy compares them."""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.runtime import elementwise as ew

CANONICAL_NAN = {"float16": 0x7E00, "bfloat16": 0x7FC0, "float32": 0x7FC00000, "float64": 0x7FF8000000000000}
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _reference(a: np.ndarray, b: np.ndarray, is_max: bool) -> np.ndarray:
    """The seed's max (min), one element at a time in Python floats, as bits of a's dtype."""
    a, b = np.broadcast_arrays(a, b)
    u = UINT[a.dtype.itemsize]
    out = np.empty(a.shape, u)
    ab, bb = a.view(u).reshape(-1), b.view(u).reshape(-1)
    sign = 1 << (8 * a.dtype.itemsize - 1)
    with np.errstate(invalid="ignore"):
        xs, ys = a.astype(np.float64).reshape(-1).tolist(), b.astype(np.float64).reshape(-1).tolist()
    for i, (x, y) in enumerate(zip(xs, ys)):
        if x != x or y != y:
            bits = CANONICAL_NAN[a.dtype.name]
        elif x == 0 and y == 0:  # a tie of zeros: max is -0 only if both are, min is +0 only if both are
            neg_a, neg_b = bool(int(ab[i]) & sign), bool(int(bb[i]) & sign)
            bits = sign if ((neg_a and neg_b) if is_max else (neg_a or neg_b)) else 0
        else:
            bits = int(ab[i]) if (x > y) == is_max else int(bb[i])
        out.reshape(-1)[i] = bits
    return out


def _specials(dtype: np.dtype, shape: tuple, seed: int) -> np.ndarray:
    """Values in [-2, 2) with ±0, ±inf and NaNs of several payloads and both signs mixed in."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, shape).astype(dtype)
    u = UINT[np.dtype(dtype).itemsize]
    bits = x.view(u).reshape(-1)
    n = 8 * np.dtype(dtype).itemsize
    qnan, sign = CANONICAL_NAN[np.dtype(dtype).name], 1 << (n - 1)
    quiet = qnan & -qnan  # (the quiet bit: the canonical NaN's lowest)
    odd = [0, sign, qnan | 1, qnan | sign, qnan | sign | 3, (qnan - quiet) | 1, (qnan - quiet) | sign | 2]
    where = rng.choice(bits.size, size=min(bits.size, 4 * len(odd)), replace=False)
    for k, i in enumerate(where):
        bits[i] = odd[k % len(odd)]
    return x


DTYPES = [np.float16, ew.np_dtype("bf16").type, np.float32, np.float64]


@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_float_maxmin_is_the_seeds_max_and_min(dtype, is_max):
    for shape_a, shape_b in [((3, 2, 64), (3, 1, 64)), ((7,), (7,)), ((5, 33), (5, 33)), ((4, 3), (4, 1))]:
        a, b = _specials(dtype, shape_a, 1), _specials(dtype, shape_b, 2)
        b.reshape(-1)[:2] = np.array([0.0, -0.0], dtype)  # ties with whatever a holds there
        a.reshape(-1)[:4] = np.array([-0.0, 0.0, 0.0, -0.0], dtype)
        want = _reference(a, b, is_max)
        with np.errstate(invalid="ignore"):
            got_both = ew.float_maxmin(is_max)(a, b), (ew.maximum if is_max else ew.minimum)(a, b)
        for got in got_both:
            assert got.dtype == a.dtype and got.shape == want.shape
            assert np.array_equal(got.view(want.dtype), want)


def test_float_maxmin_without_nan_or_zero_returns_the_ufuncs_result():
    a = np.linspace(0.5, 2, 64, dtype=np.float32)
    b = -a[::-1].copy()
    assert np.array_equal(ew.float_maxmin(True)(a, b), np.maximum(a, b))
    assert np.array_equal(ew.float_maxmin(False)(a, b), np.minimum(a, b))


def _kernel(op: str, rows: int, cols: int, dt: str) -> str:
    t = f"!pto.tile<{rows}x{cols}x{dt}>"
    s = f"!pto.tile<{rows}x1x{dt}, blayout=col_major>"
    if op.startswith("trowexpand"):
        return f"func.func @k(%x: {t}, %s: {s}) -> {t} {{\n  %d = pto.{op} %x, %s : {t}, {s} -> {t}\n  return %d : {t}\n}}\n"
    return f"func.func @k(%x: {t}, %y: {t}) -> {t} {{\n  %d = pto.{op} %x, %y : {t}, {t} -> {t}\n  return %d : {t}\n}}\n"


# (rows, cols): one register per row, a masked tail register (40, 96 f32 lanes), several per row (200)
LAUNCHES = [(op, rows, cols, dt) for op in ("trowexpandmax", "trowexpandmin", "tmax", "tmin")
            for dt in ("f32", "i32") for rows, cols in ((128, 128), (12, 40), (8, 96), (4, 200))]


@pytest.mark.parametrize("op,rows,cols,dt", LAUNCHES, ids=lambda v: str(v))
def test_vf_max_and_min_launches_give_the_seeds_bits(op, rows, cols, dt):
    text = _kernel(op, rows, cols, dt)
    program = api.compile(api.parse(text, "k.pto"), "ascend950")
    npdt = np.dtype(np.float32 if dt == "f32" else np.int32)
    if npdt.kind == "f":
        x, other = _specials(npdt, (rows, cols), 3), _specials(npdt, (rows, 1 if "rowexpand" in op else cols), 4)
        x[:, :2], other[:, :1] = 0.0, -0.0  # ties of zeros in every row
        x[1::2, :2] = -0.0
    else:
        rng = np.random.default_rng(5)
        x = rng.integers(-2**31, 2**31, (rows, cols), dtype=np.int64).astype(np.int32)
        other = rng.integers(-2**31, 2**31, (rows, 1 if "rowexpand" in op else cols), dtype=np.int64).astype(np.int32)
    name = "s" if "rowexpand" in op else "y"
    with np.errstate(all="ignore"):
        out = api.run(program, {"x": x.copy(), name: other.copy()}).outputs["result0"].reshape(rows, cols)
    is_max = op.endswith("max")
    if npdt.kind == "f":
        assert np.array_equal(out.view(np.uint32), _reference(x, other, is_max))
    else:
        want = np.maximum(x, other) if is_max else np.minimum(x, other)
        assert np.array_equal(out, want)
