"""vf.reduce_min / reduce_max / reduce_sum against the rules of seeds/002, written out in plain Python.

The expected values below never come from the executor: ``expect_extreme`` and ``expect_sum``
walk the lanes one by one with the article's rules (first minimum's index, NaN -> the type's NaN
and the first NaN's index, -0 < +0, empty mask -> the type's maximum, ZEROING/MERGING) and the
decisions documented in runtime/vf_executor.py (index = the lane's unsigned bit pattern; a
datablock is 64 bytes: 32 lanes of a 16-bit type, 16 of a 32-bit type; its results go to the low
lanes in order without an index; sums add in a pairwise tree with inactive lanes as +0).

Each case runs twice: through PTO-AS (a vf.func parsed by the front end, the mask made by
vf.update_mask from a lane count, the MERGING source loaded from a tile) and, for masks that are
not a prefix, through the register-level function ``vf_executor.reduce``.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.dialects import vf
from pto_compiler.runtime import vf_executor as vx
from pto_compiler.targets import ASCEND950

# ---------------------------------------------------------------------------------------------
# The article's rules, in plain Python
# ---------------------------------------------------------------------------------------------

DTYPES = {  # name: (numpy dtype, is_float, lanes)
    "f16": (np.float16, True, 128), "f32": (np.float32, True, 64),
    "i16": (np.int16, False, 128), "ui16": (np.uint16, False, 128),
    "i32": (np.int32, False, 64), "ui32": (np.uint32, False, 64),
    "i64": (np.int64, False, 32), "ui64": (np.uint64, False, 32),
}
MATRIX_DTYPES = ("f16", "f32", "i16", "ui16", "i32", "ui32", "i64")
TYPE_MAX = {"f16": math.inf, "f32": math.inf, "i16": 2**15 - 1, "ui16": 2**16 - 1, "i32": 2**31 - 1,
            "ui32": 2**32 - 1, "i64": 2**63 - 1, "ui64": 2**64 - 1}
TYPE_MIN = {"f16": -math.inf, "f32": -math.inf, "i16": -2**15, "ui16": 0, "i32": -2**31, "ui32": 0,
            "i64": -2**63, "ui64": 0}
NAN_BITS = {"f16": 0x7E00, "f32": 0x7FC00000}  # the type's (canonical quiet) NaN
UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.uint64}
DATABLOCK_LANES = {2: 32, 4: 16}  # seeds/002: 32 elements per datablock for 16-bit types, 16 for 32-bit


def is_neg_zero(v) -> bool:
    return v == 0 and math.copysign(1.0, float(v)) < 0


def before(a, b, kind: str) -> bool:
    """Is a strictly better than b (smaller for min, larger for max), with -0 < +0?"""
    if kind == "min":
        return a < b or (a == 0 and b == 0 and is_neg_zero(a) and not is_neg_zero(b))
    return a > b or (a == 0 and b == 0 and not is_neg_zero(a) and is_neg_zero(b))


def expect_extreme(values, active, dt: str, kind: str):
    """(value, index) of one group per seeds/002."""
    is_float = DTYPES[dt][1]
    chosen = [(i, v) for i, (v, a) in enumerate(zip(values, active)) if a]
    if not chosen:
        return (TYPE_MAX[dt] if kind == "min" else TYPE_MIN[dt]), 0
    if is_float:
        nans = [i for i, v in chosen if math.isnan(v)]
        if nans:
            return "NaN", nans[0]
    best_i, best_v = chosen[0]
    for i, v in chosen[1:]:
        if before(v, best_v, kind):
            best_i, best_v = i, v
    return best_v, best_i


def rounded_add(a, b, dt: str):
    if dt == "f16":
        return float(np.float16(float(a) + float(b)))  # exact in float64, rounded once to f16
    if dt == "f32":
        return float(np.float32(float(a) + float(b)))  # float64 then f32: innocuous double rounding
    w = np.dtype(DTYPES[dt][0]).itemsize * 8
    s = (int(a) + int(b)) % (1 << w)
    if not dt.startswith("ui") and s >= 1 << (w - 1):
        s -= 1 << w
    return s


def expect_sum(values, active, dt: str):
    """Pairwise tree: (lane 0 + lane 1), (lane 2 + lane 3), ... then neighbours, inactive lanes +0."""
    level = [v if a else (0.0 if DTYPES[dt][1] else 0) for v, a in zip(values, active)]
    while len(level) > 1:
        level = [rounded_add(level[2 * k], level[2 * k + 1], dt) for k in range(len(level) // 2)]
    return level[0]


def expected_register(values, active, old, dt: str, kind: str, datablock: bool, mode: str) -> np.ndarray:
    """The whole destination register, as an array of the element type."""
    npdt, is_float, n = DTYPES[dt]
    out = list(old) if mode == "MERGING" else [0] * n
    groups = [(0, n)]
    if datablock:
        s = DATABLOCK_LANES[np.dtype(npdt).itemsize]
        groups = [(g * s, (g + 1) * s) for g in range(n // s)]
    results = []
    for lo, hi in groups:
        if kind == "sum":
            results.append((expect_sum(values[lo:hi], active[lo:hi], dt), None))
        else:
            results.append(expect_extreme(values[lo:hi], active[lo:hi], dt, kind))
    arr = np.array([0 if (isinstance(x, float) and math.isnan(x)) else x for x in out], dtype=npdt)
    if mode == "MERGING":
        arr = np.array(old, dtype=npdt) if not is_float else _float_array(old, npdt)
    bits = arr.view(UINT_OF[np.dtype(npdt).itemsize])
    for k, (value, index) in enumerate(results):
        if datablock:
            _put(arr, bits, k, value, dt)
        else:
            _put(arr, bits, 0, value, dt)
            if index is not None:
                bits[1] = index  # the index's integer bit pattern in lane 1
    return arr


def _float_array(values, npdt):
    return np.array(values, dtype=np.float64).astype(npdt)


def _put(arr, bits, lane, value, dt):
    if value == "NaN":
        bits[lane] = NAN_BITS[dt]
    else:
        arr[lane] = value


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------

def base_values(dt: str, seed: int):
    npdt, is_float, n = DTYPES[dt]
    rng = random.Random(seed)
    if is_float:
        return [float(npdt(rng.uniform(1.0, 100.0))) for _ in range(n)]
    if dt.startswith("ui"):
        w = np.dtype(npdt).itemsize * 8
        # large unsigned values (top bit set) must compare as large, not as negative
        return [rng.choice([rng.randrange(100, 1000), (1 << w) - rng.randrange(1, 1000)]) for _ in range(n)]
    return [rng.randrange(-1000, 1000) for _ in range(n)]


def make_case(case: str, dt: str, kind: str):
    """(values, count of active leading lanes) for a case; lanes are a prefix (update_mask)."""
    npdt, is_float, n = DTYPES[dt]
    v = base_values(dt, hash((case, dt, kind)) & 0xFFFF)
    count = n
    extreme = (-5000 if not dt.startswith("ui") else 0) if kind == "min" else \
        (5000 if not dt.startswith("ui") else (1 << (np.dtype(npdt).itemsize * 8)) - 1)
    if is_float:
        extreme = -500.0 if kind == "min" else 500.0
    if case == "ties":
        for i in (5, 9, n - 1, n // 2 + 1):
            v[i] = extreme  # first occurrence is lane 5 (and per datablock, the first in each group)
        v[n // 4 + 3] = extreme
    elif case == "nan_first":
        v[0] = math.nan
        v[3] = math.nan
    elif case == "nan_middle":
        v[n // 2] = math.nan
        v[n // 2 + 7] = math.nan
        v[2] = extreme
    elif case == "nan_last":
        v[n - 1] = math.nan
        v[1] = extreme
    elif case == "nan_inactive":
        count = n // 2
        v[n - 2] = math.nan
    elif case == "signed_zero":
        sign = 1.0 if kind == "min" else -1.0
        v = [sign * abs(x) for x in v]
        v[3], v[7], v[n // 2 + 2], v[n // 2 + 5] = 0.0, -0.0, -0.0, 0.0
        if kind == "max":  # max(-0, +0) = +0: put +0 after -0 as well
            v[3], v[7] = -0.0, 0.0
    elif case == "empty":
        count = 0
    elif case == "partial":
        count = n // 2 + 3
        v[n - 3] = extreme  # the best value sits in an inactive lane: it must be ignored
        v[n // 2 + 1] = extreme // 2 if not is_float else extreme / 2
    elif case == "one_lane":
        count = 1
    elif case == "random":
        pass
    return v, count


CASES_ALL = ("ties", "empty", "partial", "one_lane", "random")
CASES_FLOAT = ("nan_first", "nan_middle", "nan_last", "nan_inactive", "signed_zero")


def matrix():
    out = []
    for dt in MATRIX_DTYPES:
        for db in (False, True):
            if db and dt in ("i64", "ui64"):
                continue
            for mode in ("ZEROING", "MERGING"):
                for case in CASES_ALL + (CASES_FLOAT if DTYPES[dt][1] else ()):
                    out.append((dt, db, mode, case))
    return out


# ---------------------------------------------------------------------------------------------
# Running through PTO-AS
# ---------------------------------------------------------------------------------------------

_FUNCS: dict = {}


def vf_func(kind: str, dt: str, datablock: bool, mode: str) -> vf.VfFuncOp:
    key = (kind, dt, datablock, mode)
    if key not in _FUNCS:
        n = DTYPES[dt][2]
        tile = f"!pto.tile_buf<vec, 1x{n}x{dt}>"
        opts = (", datablock = true" if datablock else "") + (", merge_mode = MERGING, dst = %o"
                                                              if mode == "MERGING" else "")
        text = f"""
vf.func @t(%src: {tile}, %old: {tile}, %dst: {tile}, %n: i32) {{
  %m, %rest = vf.update_mask %n : {dt}
  %full = vf.create_mask ALL : {dt}
  %v = vf.load_align %src[0]
  %o = vf.load_align %old[0]
  %r = vf.reduce_{kind} %v, %m{opts}
  vf.store_align %dst[0], %r, %full
}}
"""
        module = api.parse(text, f"reduce_{kind}_{dt}.pto")
        api.verify(module, ASCEND950)
        _FUNCS[key] = next(o for o in module.walk() if isinstance(o, vf.VfFuncOp))
    return _FUNCS[key]


def to_array(values, dt: str) -> np.ndarray:
    npdt, is_float, _ = DTYPES[dt]
    if is_float:
        return np.array(values, dtype=np.float64).astype(npdt)
    return np.array([int(x) for x in values], dtype=npdt)


def run_ir(kind, dt, datablock, mode, values, count, old):
    fn = vf_func(kind, dt, datablock, mode)
    out = vx.execute_vf(fn, {"src": to_array(values, dt), "old": to_array(old, dt), "n": count})
    return out["dst"].reshape(-1)


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    u = UINT_OF[got.dtype.itemsize]
    return np.array_equal(got.view(u), want.view(u))


def old_values(dt: str):
    npdt, is_float, n = DTYPES[dt]
    if is_float:
        return [float(npdt(100 + i * 0.5)) for i in range(n)]
    return [(i * 7 + 3) % 100 for i in range(n)]


@pytest.mark.parametrize("dt,datablock,mode,case", matrix(),
                         ids=[f"{d}-{'db' if b else 'reg'}-{m[:4]}-{c}" for d, b, m, c in matrix()])
def test_reduce_min_matrix(dt, datablock, mode, case):
    values, count = make_case(case, dt, "min")
    active = [i < count for i in range(len(values))]
    old = old_values(dt)
    want = expected_register(values, active, old, dt, "min", datablock, mode)
    got = run_ir("min", dt, datablock, mode, values, count, old)
    assert same_bits(got, want), f"\ngot  {got[:8]}\nwant {want[:8]}"


@pytest.mark.parametrize("kind", ["max", "sum"])
@pytest.mark.parametrize("dt,datablock,mode,case", matrix()[::3],
                         ids=[f"{d}-{'db' if b else 'reg'}-{m[:4]}-{c}" for d, b, m, c in matrix()[::3]])
def test_reduce_max_sum_matrix(kind, dt, datablock, mode, case):
    values, count = make_case(case, dt, kind)
    active = [i < count for i in range(len(values))]
    old = old_values(dt)
    want = expected_register(values, active, old, dt, kind, datablock, mode)
    got = run_ir(kind, dt, datablock, mode, values, count, old)
    assert same_bits(got, want), f"\ngot  {got[:8]}\nwant {want[:8]}"


# ---------------------------------------------------------------------------------------------
# Scattered (non-prefix) masks, through the register-level function
# ---------------------------------------------------------------------------------------------

MASKS = {
    "every_third": lambda n: [i % 3 == 0 for i in range(n)],
    "odd": lambda n: [i % 2 == 1 for i in range(n)],
    "high_half": lambda n: [i >= n // 2 for i in range(n)],
    "sparse": lambda n: [i in (1, n // 3, n - 1) for i in range(n)],
    "one_group_empty": lambda n: [not (n // 4 <= i < n // 2) for i in range(n)],
}


@pytest.mark.parametrize("kind", ["min", "max", "sum"])
@pytest.mark.parametrize("mask_name", sorted(MASKS))
@pytest.mark.parametrize("dt", sorted(DTYPES))
def test_scattered_masks(kind, mask_name, dt):
    npdt, is_float, n = DTYPES[dt]
    values = base_values(dt, 7)
    if is_float:
        values[n - 1] = math.nan if kind != "sum" else values[n - 1]
        values[4] = -0.0
        values[6] = 0.0
    active = MASKS[mask_name](n)
    old = old_values(dt)
    for datablock in (False, True):
        if datablock and np.dtype(npdt).itemsize == 8:
            continue
        for mode in ("ZEROING", "MERGING"):
            want = expected_register(values, active, old, dt, kind, datablock, mode)
            got = vx.reduce(kind, vx.to_reg(to_array(values, dt)), np.array(active), npdt, datablock=datablock,
                            mode=mode, old=vx.to_reg(to_array(old, dt)))
            assert same_bits(got.view(npdt), want), (datablock, mode)


# ---------------------------------------------------------------------------------------------
# Hand-written cases from the article's text
# ---------------------------------------------------------------------------------------------

def test_article_example_5_3_7_3():
    """src = [5, 3, 7, 3] -> dst[0] = 3, dst[1] = 1 (the first minimum); the rest zero."""
    values = [5, 3, 7, 3] + [100] * 60
    got = run_ir("min", "i32", False, "ZEROING", values, 4, [9] * 64)
    assert got[0] == 3 and got[1] == 1 and not got[2:].any()


def test_f32_index_is_the_uint32_bit_pattern():
    values = [float(x) for x in range(64, 0, -1)]  # the minimum 1.0 is at lane 63
    got = run_ir("min", "f32", False, "ZEROING", values, 64, [0.0] * 64)
    assert got[0] == np.float32(1.0)
    assert got.view(np.uint32)[1] == 63
    assert got[1] == np.uint32(63).view(np.float32)  # a denormal when read as f32
    assert 0 < got[1] < 1e-40


def test_nan_gives_the_types_nan_and_the_first_nan_index():
    values = [1.0] * 64
    values[10] = math.nan
    values[20] = -math.inf
    values[30] = math.nan
    got = run_ir("min", "f32", False, "ZEROING", values, 64, [0.0] * 64)
    assert got.view(np.uint32)[0] == 0x7FC00000 and got.view(np.uint32)[1] == 10


def test_min_of_minus_zero_and_plus_zero_is_minus_zero():
    values = [1.0] * 64
    values[2], values[5] = 0.0, -0.0
    got = run_ir("min", "f32", False, "ZEROING", values, 64, [0.0] * 64)
    assert got[0] == 0 and math.copysign(1.0, float(got[0])) < 0
    assert got.view(np.uint32)[1] == 5
    got = run_ir("max", "f32", False, "ZEROING", [-1.0] * 2 + [-0.0, 0.0] + [-1.0] * 60, 64, [0.0] * 64)
    assert got[0] == 0 and math.copysign(1.0, float(got[0])) > 0 and got.view(np.uint32)[1] == 3


@pytest.mark.parametrize("dt,want", [("f32", np.inf), ("f16", np.inf), ("i32", 2**31 - 1), ("ui16", 65535),
                                     ("i64", 2**63 - 1), ("i16", 32767), ("ui32", 2**32 - 1)])
def test_empty_mask_gives_the_types_maximum(dt, want):
    n = DTYPES[dt][2]
    got = run_ir("min", dt, False, "ZEROING", base_values(dt, 1), 0, old_values(dt))
    assert got[0] == want and got.view(UINT_OF[got.dtype.itemsize])[1] == 0 and not got[2:].any()


def test_datablock_groups_and_low_lanes():
    """f32: 4 datablocks of 16 lanes; result k = min of lanes [16k, 16k+16), written to lane k."""
    values = [float(100 + i) for i in range(64)]
    values[20], values[47], values[50] = -1.0, -2.0, -3.0
    got = run_ir("min", "f32", True, "ZEROING", values, 64, [7.0] * 64)
    assert list(got[:4]) == [100.0, -1.0, -2.0, -3.0] and not got[4:].any()
    merged = run_ir("min", "f32", True, "MERGING", values, 64, [7.0] * 64)
    assert list(merged[:4]) == [100.0, -1.0, -2.0, -3.0] and (merged[4:] == 7.0).all()
    # f16: 4 datablocks of 32 lanes
    h = [float(200 - i) for i in range(128)]
    got = run_ir("max", "f16", True, "ZEROING", h, 128, [0.0] * 128)
    assert list(got[:4]) == [200.0, 168.0, 136.0, 104.0] and not got[4:].any()


def test_sum_order_is_a_pairwise_tree():
    """[2**24, 1, 1, 1, ...] in f32: a sequential sum loses every 1 (2**24 + 1 rounds to 2**24), the
    tree adds the ones among themselves first."""
    values = [float(2**24)] + [1.0] * 63
    got = run_ir("sum", "f32", False, "ZEROING", values, 64, [0.0] * 64)
    seq = np.float32(0)
    for x in values:
        seq = np.float32(seq + np.float32(x))
    assert seq == np.float32(2**24)  # a sequential order: every 2**24 + 1 rounds back to 2**24
    want = expect_sum(values, [True] * 64, "f32")
    assert got[0] == np.float32(want) and want == 2**24 + 62  # only lane 1's 1 is lost (2**24 + 1 -> 2**24)
    assert not got[1:].any()


def test_sum_wraps_integers_and_ignores_inactive_lanes():
    values = [2**31 - 1, 1] + [5] * 62
    got = run_ir("sum", "i32", False, "ZEROING", values, 2, [0] * 64)
    assert got[0] == -2**31 and not got[1:].any()


def test_64bit_datablock_is_rejected():
    text = """
vf.func @t(%src: !pto.tile_buf<vec, 1x32xi64>) {
  %m = vf.create_mask ALL : i64
  %v = vf.load_align %src[0]
  %r = vf.reduce_min %v, %m, datablock = true
}
"""
    m = api.parse(text, "db.pto")
    with pytest.raises(PtocError) as e:
        api.verify(m, ASCEND950)
    d = e.value.diagnostics[0]
    assert (d.line, d.column) == (5, 8)
    assert "datablock = true supports only i16, ui16, f16, i32, ui32, f32 (got i64)" in d.message
