"""The VF executor: masks, loads, stores, merge modes, element ops, hardware loops, faults, and
kernels run end to end (run_vf_kernel) with the race checker on MTE/V hand-offs.

Expected values are written from vector_isa.md §2, seeds/001 and seeds/002 in plain Python
(or with NumPy element casts for rounding), never printed by the executor.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.dialects import vf
from pto_compiler.runtime import vf_executor as vx
from pto_compiler.runtime.executor import ExecutionError
from pto_compiler.targets import ASCEND950

ROOT = Path(__file__).resolve().parents[1]


def tile(dt: str, cols: int, rows: int = 1) -> str:
    return f"!pto.tile_buf<vec, {rows}x{cols}x{dt}>"


def vfunc(params: str, body: str, name: str = "t.pto") -> vf.VfFuncOp:
    """A vf.func written in PTO-AS, parsed and verified for ascend950."""
    text = f"vf.func @t({params}) {{\n{body}\n}}\n"
    m = api.parse(text, name)
    api.verify(m, ASCEND950)
    return next(o for o in m.walk() if isinstance(o, vf.VfFuncOp))


def vfunc_ir(text: str) -> vf.VfFuncOp:
    """A vf.func in xDSL's text form (needed for loop-carried registers: `-> (!vf.reg<...>)`)."""
    m = api.parse_printed(text)
    m.verify()
    return next(o for o in m.walk() if isinstance(o, vf.VfFuncOp))


def fault(fn, inputs) -> ExecutionError:
    with pytest.raises(ExecutionError) as e:
        vx.execute_vf(fn, inputs)
    return e.value


# ---------------------------------------------------------------------------------------------
# Masks
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt,pattern,n", [
    ("f32", "ALL", 64), ("f32", "ALLF", 0), ("f32", "VL1", 1), ("f32", "VL3", 3), ("f32", "VL16", 16),
    ("f32", "VL64", 64), ("f32", "H", 32), ("f32", "Q", 16), ("f32", "M3", 63), ("f32", "M4", 64),
    ("f16", "VL128", 128), ("f16", "M3", 126), ("f16", "H", 64), ("i64", "ALL", 32), ("i64", "VL32", 32),
    ("i64", "Q", 8), ("i8", "ALL", 256), ("i8", "VL128", 128), ("i8", "M3", 255),
])
def test_create_mask_patterns(dt, pattern, n):
    lanes = {"f32": 64, "f16": 128, "i64": 32, "i8": 256}[dt]
    one = "1.0" if dt.startswith("f") else "1"
    fn = vfunc(f"%dst: {tile(dt, lanes)}", f"""
      %m = vf.create_mask {pattern} : {dt}
      %one = vf.dup {one} : {dt}
      vf.store_align %dst[0], %one, %m""")
    out = vx.execute_vf(fn, {})["dst"].reshape(-1)
    assert (out[:n] == 1).all() and (out[n:] == 0).all()


def test_update_mask_counts_down_as_plt():
    assert [(int(a.sum()), r) for a, r in (vx.update_mask(c, 64) for c in (150, 86, 22, 0))] == \
        [(64, 86), (64, 22), (22, 0), (0, 0)]
    act, rest = vx.update_mask(-1, 64)  # the count is a uint32: -1 is 0xFFFFFFFF
    assert act.all() and rest == 0xFFFFFFFF - 64
    act, _ = vx.update_mask(5, 128)
    assert list(np.flatnonzero(act)) == [0, 1, 2, 3, 4]


def test_update_mask_in_a_loop_masks_the_tail():
    """seeds/001 AXPY shape: z = a * x + y over n = 150 floats in 3 register chunks; lanes 150.. untouched."""
    fn = vfunc_ir(f"""
    vf.func @axpy(%x: {tile('f32', 192)}, %y: {tile('f32', 192)}, %z: {tile('f32', 192)}, %a: f32, %n: i32,
                  %loops: index) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %last = scf.for %i = %c0 to %loops step %c1 iter_args(%count = %n) -> (i32) {{
        %mask, %rest = vf.update_mask %count : !vf.mask<b32>
        %off = arith.muli %i, %c64 : index
        %vx = vf.load_align %x[%off] : {tile('f32', 192)}
        %vy = vf.load_align %y[%off] : {tile('f32', 192)}
        %vt = vf.muls %vx, %a, %mask : !vf.reg<64xf32>, f32
        %vs = vf.add %vt, %vy, %mask : !vf.reg<64xf32>
        vf.store_align %z[%off], %vs, %mask : {tile('f32', 192)}
        scf.yield %rest : i32
      }}
    }}""")
    x = np.arange(192, dtype=np.float32) / 8
    y = np.full(192, 0.5, np.float32)
    z0 = np.full(192, -7.0, np.float32)
    out = vx.execute_vf(fn, {"x": x, "y": y, "z": z0, "a": 3.0, "n": 150, "loops": 3})["z"].reshape(-1)
    want = [float(np.float32(np.float32(3.0) * np.float32(v)) + np.float32(0.5)) for v in x[:150]]
    assert list(out[:150]) == [np.float32(w) for w in want]
    assert (out[150:] == -7.0).all()


# ---------------------------------------------------------------------------------------------
# Loads
# ---------------------------------------------------------------------------------------------

def _load_store(dt: str, cols: int, load: str):
    lanes = {"f32": 64, "f16": 128, "i8": 256, "i32": 64, "i64": 32}[dt]
    return vfunc(f"%src: {tile(dt, cols)}, %dst: {tile(dt, lanes)}, %o: index", f"""
      %all = vf.create_mask ALL : {dt}
      %v = {load}
      vf.store_align %dst[0], %v, %all""")


def test_load_norm_at_an_offset():
    fn = _load_store("f32", 256, "vf.load_align %src[%o]")
    x = np.arange(256, dtype=np.float32)
    assert list(vx.execute_vf(fn, {"src": x, "o": 64})["dst"].reshape(-1)) == list(x[64:128])


@pytest.mark.parametrize("dt,dist", [("f32", "BRC_B32"), ("f16", "BRC_B16"), ("i8", "BRC_B8"), ("i32", "BRC_B32")])
def test_load_broadcast_one_element(dt, dist):
    fn = _load_store(dt, 256, f"vf.load_align %src[%o], dist = {dist}")
    x = (np.arange(256) % 100).astype(dt.replace("f", "float").replace("i", "int"))
    out = vx.execute_vf(fn, {"src": x, "o": 5})["dst"].reshape(-1)
    assert (out == x[5]).all()  # element-aligned offset 5 is fine for BRC


def test_load_blk_repeats_one_32_byte_block():
    fn = _load_store("f32", 256, "vf.load_align %src[%o], BLK")
    x = np.arange(256, dtype=np.float32)
    out = vx.execute_vf(fn, {"src": x, "o": 8})["dst"].reshape(-1)
    assert list(out) == [float(8 + i % 8) for i in range(64)]  # lane i = element 8 + (i mod 8)


@pytest.mark.parametrize("dist, k", [("UNPK_B8", 2), ("UNPK4_B8", 4)])
def test_unpack_loads_spread_bytes_over_wider_lanes(dist, k):
    """UNPK_B8: 128 bytes, byte i into lane 2i; UNPK4_B8 (TDEQUANT.md): 64 bytes, byte i into lane
    4i; the other byte lanes 0."""
    fn = _load_store("i8", 256, f"vf.load_align %src[%o], dist = {dist}")
    x = (np.arange(256) % 97 - 48).astype(np.int8)
    out = vx.execute_vf(fn, {"src": x, "o": 32})["dst"].reshape(-1)
    want = [int(x[32 + i // k]) if i % k == 0 else 0 for i in range(256)]
    assert out.tolist() == want


def test_load_unalign_from_any_element():
    fn = _load_store("f32", 256, "vf.load_unalign %src[%o]")
    x = np.arange(256, dtype=np.float32)
    assert list(vx.execute_vf(fn, {"src": x, "o": 3})["dst"].reshape(-1)) == list(x[3:67])


def test_misaligned_norm_load_is_a_located_fault():
    fn = _load_store("f32", 256, "vf.load_align %src[%o]")
    e = fault(fn, {"o": 3})
    assert e.findings[0].kind == "align" and "not 32-byte aligned" in str(e)
    d = e.diagnostics[0]
    assert (d.filename, d.line) == ("t.pto", 4)  # line 4: the vf.load_align


def test_misaligned_blk_load_is_a_fault():
    fn = _load_store("f32", 256, "vf.load_align %src[%o], BLK")
    assert fault(fn, {"o": 4}).findings[0].kind == "align"


def test_load_may_read_past_its_tile_but_not_past_the_ub():
    fn = _load_store("f32", 64, "vf.load_align %src[%o]")
    vx.execute_vf(fn, {"o": 64})  # reads the next tile's bytes: allowed (tail lanes are masked later)
    e = fault(fn, {"o": 65536})
    assert e.findings[0].kind == "bounds" and "outside the 256 KiB UB" in str(e)


# ---------------------------------------------------------------------------------------------
# Stores
# ---------------------------------------------------------------------------------------------

def test_store_norm_writes_only_active_lanes():
    fn = vfunc(f"%dst: {tile('f32', 64)}, %n: i32", """
      %m, %rest = vf.update_mask %n : f32
      %v = vf.dup 2.5 : f32
      vf.store_align %dst[0], %v, %m""")
    out = vx.execute_vf(fn, {"dst": np.full(64, -1.0, np.float32), "n": 10})["dst"].reshape(-1)
    assert (out[:10] == 2.5).all() and (out[10:] == -1.0).all()


def test_store_onept_writes_lane_0_only():
    fn = vfunc(f"%src: {tile('f32', 64)}, %dst: {tile('f32', 64)}, %o: index, %n: i32", """
      %m, %rest = vf.update_mask %n : f32
      %v = vf.load_align %src[0]
      vf.store_align %dst[%o], %v, %m, dist = ONEPT""")
    x = np.arange(1, 65, dtype=np.float32)
    out = vx.execute_vf(fn, {"src": x, "dst": np.zeros(64, np.float32), "o": 5, "n": 64})["dst"].reshape(-1)
    assert out[5] == 1.0 and np.count_nonzero(out) == 1  # element-aligned offset 5
    out = vx.execute_vf(fn, {"src": x, "dst": np.zeros(64, np.float32), "o": 5, "n": 0})["dst"].reshape(-1)
    assert not out.any()  # lane 0 inactive: nothing stored


def test_store_outside_its_tile_is_a_fault():
    fn = vfunc(f"%dst: {tile('f32', 64)}, %o: index", """
      %m = vf.create_mask ALL : f32
      %v = vf.dup 1.0 : f32
      vf.store_align %dst[%o], %v, %m""")
    e = fault(fn, {"o": 8})
    assert e.findings[0].kind == "bounds" and "outside its tile buffer" in str(e)


def rowsum(post: bool) -> vf.VfFuncOp:
    """seeds/001 `ar` output: one scalar per row through StoreUnAlign, then StoreUnAlignPost."""
    text = f"""
vf.func @rowsum(%x: {tile('f32', 64, 8)}, %z: {tile('f32', 64)}, %rows: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %full = vf.create_mask ALL : !vf.mask<b32>
  scf.for %i = %c0 to %rows step %c1 {{
    %off = arith.muli %i, %c64 : index
    %v = vf.load_align %x[%off] : {tile('f32', 64, 8)}
    %s = vf.reduce_sum %v, %full : !vf.reg<64xf32>
    vf.store_unalign %z[%i], %s, count = 1 : {tile('f32', 64)}
    scf.yield
  }}
  {"vf.store_unalign_post %z : " + tile('f32', 64) if post else ""}
}}"""
    if post:
        return vfunc_ir(text)
    m = api.parse_printed(text)  # the verifier rejects a store_unalign with no post: run it unverified
    with pytest.raises(Exception, match="never flushed"):
        m.verify()
    return next(o for o in m.walk() if isinstance(o, vf.VfFuncOp))


def test_store_unalign_appends_and_post_flushes():
    x = np.arange(8 * 64, dtype=np.float32).reshape(8, 64) % 7
    z0 = np.full(64, -1.0, np.float32)
    out = vx.execute_vf(rowsum(True), {"x": x, "z": z0, "rows": 5})["z"].reshape(-1)
    assert list(out[:5]) == [float(sum(r)) for r in x[:5]] and (out[5:] == -1.0).all()


def test_store_unalign_without_a_post_loses_the_open_block():
    """No flush: the 5 sums (20 bytes) never leave the partly filled 32-byte block."""
    fn = rowsum(False)
    x = np.ones((8, 64), np.float32)
    out = vx.execute_vf(fn, {"x": x, "z": np.full(64, -1.0, np.float32), "rows": 5})["z"]
    assert (out == -1.0).all()
    # 8 sums fill block 0 exactly: once the stream moves past it, block 0 is written without a post
    out = vx.execute_vf(fn, {"x": x, "z": np.full(64, -1.0, np.float32), "rows": 10})["z"].reshape(-1)
    assert (out[:8] == 64.0).all() and (out[8:] == -1.0).all()


# ---------------------------------------------------------------------------------------------
# Compute ops and merge modes
# ---------------------------------------------------------------------------------------------

def _binop(op: str, dt: str = "f32", mode: str = "", dst: bool = False):
    lanes = {"f32": 64, "f16": 128, "i16": 128, "i32": 64}[dt]
    opts = (", merge_mode = MERGING" if mode == "MERGING" else "") + (", dst = %vc" if dst else "")
    return vfunc(f"%a: {tile(dt, lanes)}, %b: {tile(dt, lanes)}, %c: {tile(dt, lanes)}, %out: {tile(dt, lanes)}, "
                 f"%n: i32", f"""
      %m, %rest = vf.update_mask %n : {dt}
      %all = vf.create_mask ALL : {dt}
      %va = vf.load_align %a[0]
      %vb = vf.load_align %b[0]
      %vc = vf.load_align %c[0]
      %r = vf.{op} %va, %vb, %m{opts}
      vf.store_align %out[0], %r, %all""")


def _run_binop(fn, a, b, c, n):
    return vx.execute_vf(fn, {"a": a, "b": b, "c": c, "n": n})["out"].reshape(-1)


def test_merge_modes_zeroing_merging_and_dst():
    a = np.arange(64, dtype=np.float32)
    b = np.full(64, 100.0, np.float32)
    c = np.full(64, -3.0, np.float32)
    z = _run_binop(_binop("add"), a, b, c, 10)
    assert list(z[:10]) == [100.0 + i for i in range(10)] and (z[10:] == 0).all()
    mg = _run_binop(_binop("add", mode="MERGING"), a, b, c, 10)
    assert list(mg[:10]) == [100.0 + i for i in range(10)] and list(mg[10:]) == list(a[10:])  # keeps src0
    md = _run_binop(_binop("add", mode="MERGING", dst=True), a, b, c, 10)
    assert (md[10:] == -3.0).all()  # keeps the named dst


def test_zeroing_clears_all_bits_and_merging_keeps_nan_payloads():
    a = np.full(64, -0.0, np.float32)
    c = np.full(64, 0, np.uint32).view(np.float32)
    c.view(np.uint32)[:] = 0x7FA00001  # a signalling NaN payload, kept bit for bit by MERGING
    z = _run_binop(_binop("max", mode="MERGING", dst=True), a, a, c, 1)
    assert z.view(np.uint32)[0] == 0x80000000 and (z.view(np.uint32)[1:] == 0x7FA00001).all()


def _lane(fn_name: str, x: float, y: float) -> float:
    """One lane by the rules (seeds/002 max/min; IEEE f32, rounded once)."""
    if fn_name in ("max", "min"):
        if math.isnan(x) or math.isnan(y):
            return math.nan
        if x == 0 and y == 0:
            neg = (math.copysign(1, x) < 0) + (math.copysign(1, y) < 0)
            return -0.0 if (neg == 2 if fn_name == "max" else neg >= 1) else 0.0
        return max(x, y) if fn_name == "max" else min(x, y)
    with np.errstate(all="ignore"):
        r = {"add": np.float64(x) + y, "sub": np.float64(x) - y, "mul": np.float64(x) * y,
             "div": np.float64(x) / np.float64(y) if y != 0 else (math.nan if x == 0 or math.isnan(x)
                                                                   else math.copysign(math.inf, x) *
                                                                   math.copysign(1, y))}[fn_name]
        return float(np.float32(r))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "min"])
def test_binary_ops_lane_by_lane(op):
    specials = [0.0, -0.0, 1.0, -1.5, math.inf, -math.inf, math.nan, 3e38, 1e-45, 7.25]
    a = np.array([specials[i % 10] for i in range(64)], np.float32)
    b = np.array([specials[(i // 10 + i) % 10] for i in range(64)], np.float32)
    out = _run_binop(_binop(op), a, b, a, 64)
    for i in range(64):
        want = _lane(op, float(a[i]), float(b[i]))
        if math.isnan(want):
            assert out.view(np.uint32)[i] == 0x7FC00000, i  # the canonical NaN
        else:
            assert out[i] == np.float32(want) and math.copysign(1, out[i]) == math.copysign(1, want), (i, a[i], b[i])


def test_integer_ops_wrap():
    a = np.array([32767, -32768, 200, -5] * 32, np.int16)
    b = np.array([1, -1, 200, 3] * 32, np.int16)
    add = _run_binop(_binop("add", "i16"), a, b, a, 128)
    mul = _run_binop(_binop("mul", "i16"), a, b, a, 128)
    assert list(add[:4]) == [-32768, 32767, 400, -2]
    assert list(mul[:4]) == [32767, -32768, 40000 - 65536, -15]


@pytest.mark.parametrize("op,fn", [("adds", lambda x, s: x + s), ("muls", lambda x, s: x * s),
                                   ("maxs", max), ("mins", min)])
def test_scalar_ops_with_a_pb_parameter(op, fn):
    f = vfunc(f"%a: {tile('f32', 64)}, %out: {tile('f32', 64)}, %s: f32", f"""
      %all = vf.create_mask ALL : f32
      %v = vf.load_align %a[0]
      %r = vf.{op} %v, %s, %all
      vf.store_align %out[0], %r, %all""")
    a = np.linspace(-4, 4, 64).astype(np.float32)
    out = vx.execute_vf(f, {"a": a, "s": 0.75})["out"].reshape(-1)
    assert list(out) == [np.float32(fn(np.float64(x), 0.75)) for x in a]


def test_scalar_literal_and_type_words():
    f = vfunc(f"%out: {tile('i32', 64)}", """
      %all = vf.create_mask ALL : i32
      %z = vf.dup MIN : i32
      %r = vf.adds %z, -1, %all
      %q = vf.maxs %r, MAX, %all, merge_mode = MERGING
      vf.store_align %out[0], %r, %all""")
    out = vx.execute_vf(f, {})["out"].reshape(-1)
    assert (out == 2**31 - 1).all()  # INT32_MIN + (-1) wraps to INT32_MAX


def test_exp_f16_rounds_once():
    f = vfunc(f"%a: {tile('f16', 128)}, %out: {tile('f16', 128)}", """
      %all = vf.create_mask ALL : f16
      %v = vf.load_align %a[0]
      %r = vf.exp %v, %all
      vf.store_align %out[0], %r, %all""")
    a = np.linspace(-8, 11, 128).astype(np.float16)
    out = vx.execute_vf(f, {"a": a})["out"].reshape(-1)
    assert all(out[i] == np.float16(math.exp(float(a[i]))) for i in range(128))  # 11.0 -> 59874 fits f16


def test_dup_scalar_register_lane0_and_masked():
    f = vfunc(f"%a: {tile('f32', 64)}, %out: {tile('f32', 64)}, %o2: {tile('f32', 64)}, %s: f32", """
      %all = vf.create_mask ALL : f32
      %v = vf.load_align %a[0]
      %m = vf.create_mask VL4 : f32
      %b = vf.dup %v
      %d = vf.dup %s, %m, merge_mode = MERGING, dst = %b
      vf.store_align %out[0], %b, %all
      vf.store_align %o2[0], %d, %all""")
    a = np.arange(7, 71, dtype=np.float32)
    r = vx.execute_vf(f, {"a": a, "s": -2.0})
    assert (r["out"] == 7.0).all()  # lane 0 of the register source, everywhere
    assert list(r["o2"].reshape(-1)[:5]) == [-2.0] * 4 + [7.0]


# ---------------------------------------------------------------------------------------------
# The study's reduce kernels (seeds/001): `ar` needs MERGING across blocks
# ---------------------------------------------------------------------------------------------

def ar_reduce_max(mode: str) -> vf.VfFuncOp:
    t = tile("f32", 160, 4)
    opt = ", merge_mode = MERGING" if mode == "MERGING" else ""
    return vfunc_ir(f"""
    vf.func @ar(%x: {t}, %z: {tile('f32', 8)}, %d0: index, %d1: i32, %pad: index, %chunks: index) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %full = vf.create_mask ALL : !vf.mask<b32>
      %ninf = arith.constant 0xFF800000 : f32
      scf.for %i = %c0 to %d0 step %c1 {{
        %acc0 = vf.dup %ninf : !vf.reg<64xf32>, f32
        %base = arith.muli %i, %pad : index
        %acc, %left = scf.for %c = %c0 to %chunks step %c1 iter_args(%a = %acc0, %cols = %d1)
            -> (!vf.reg<64xf32>, i32) {{
          %mask, %rest = vf.update_mask %cols : !vf.mask<b32>
          %co = arith.muli %c, %c64 : index
          %off = arith.addi %base, %co : index
          %in = vf.load_align %x[%off] : {t}
          %a2 = vf.max %a, %in, %mask{opt} : !vf.reg<64xf32>
          scf.yield %a2, %rest : !vf.reg<64xf32>, i32
        }}
        %red = vf.reduce_max %acc, %full : !vf.reg<64xf32>
        vf.store_unalign %z[%i], %red, count = 1 : {tile('f32', 8)}
        scf.yield
      }}
      vf.store_unalign_post %z : {tile('f32', 8)}
    }}""")


def test_study_ar_reduce_max_needs_merging():
    """Rows of 150 negative values (d1Pad 160, 3 chunks): MERGING keeps the folded columns of the
    earlier chunks in the lanes the 22-lane tail chunk leaves out; ZEROING wipes them to 0."""
    rng = np.random.default_rng(5)
    x = np.zeros((4, 160), np.float32)
    x[:, :150] = -rng.uniform(1, 100, (4, 150)).astype(np.float32)
    x[:, 150:] = 1e30  # padding: must never win
    inputs = {"x": x, "d0": 4, "d1": 150, "pad": 160, "chunks": 3}
    good = vx.execute_vf(ar_reduce_max("MERGING"), inputs)["z"].reshape(-1)
    assert list(good[:4]) == [max(float(v) for v in row[:150]) for row in x]
    bad = vx.execute_vf(ar_reduce_max("ZEROING"), inputs)["z"].reshape(-1)
    assert list(bad[:4]) == [0.0] * 4  # the zeroed lanes beat every negative value


def test_study_ra_reduce_sum_columns():
    """`ra`: per column chunk one accumulator over the rows, constant mask, ZEROING; d1 = 70."""
    t = tile("f32", 128, 6)
    fn = vfunc_ir(f"""
    vf.func @ra(%x: {t}, %z: {tile('f32', 128)}, %d0: index, %d1: i32, %pad: index, %chunks: index) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %left = scf.for %c = %c0 to %chunks step %c1 iter_args(%cols = %d1) -> (i32) {{
        %mask, %rest = vf.update_mask %cols : !vf.mask<b32>
        %acc0 = vf.dup %zero : !vf.reg<64xf32>, f32
        %co = arith.muli %c, %c64 : index
        %acc = scf.for %i = %c0 to %d0 step %c1 iter_args(%a = %acc0) -> (!vf.reg<64xf32>) {{
          %ro = arith.muli %i, %pad : index
          %off = arith.addi %ro, %co : index
          %in = vf.load_align %x[%off] : {t}
          %a2 = vf.add %a, %in, %mask : !vf.reg<64xf32>
          scf.yield %a2 : !vf.reg<64xf32>
        }}
        vf.store_align %z[%co], %acc, %mask : {tile('f32', 128)}
        scf.yield %rest : i32
      }}
    }}""")
    x = (np.arange(6 * 128, dtype=np.float32).reshape(6, 128) % 13) - 6
    z0 = np.full(128, 99.0, np.float32)
    out = vx.execute_vf(fn, {"x": x, "z": z0, "d0": 6, "d1": 70, "pad": 128, "chunks": 2})["z"].reshape(-1)
    want = [float(np.float32(sum(float(x[r, j]) for r in range(6)))) for j in range(70)]
    assert list(out[:70]) == want and (out[70:] == 99.0).all()


# ---------------------------------------------------------------------------------------------
# Hardware loops and scalar code
# ---------------------------------------------------------------------------------------------

def test_hardware_loop_trip_limit_at_run_time():
    fn = vfunc(f"%dst: {tile('f32', 64)}, %n: index", """
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %m = vf.create_mask ALL : f32
      }""")
    vx.execute_vf(fn, {"n": 3})
    e = fault(fn, {"n": 70000})
    assert e.findings[0].kind == "invalid" and "70000 trips, more than 65535" in str(e)


def test_counts_per_trip():
    fn = rowsum(True)
    r = vx.VfRunner(np.zeros(1 << 18, np.uint8)).call(fn, [0, 4096, 3])
    assert r.counts["vf.reduce_sum"] == 3 and r.counts["vf.store_unalign_post"] == 1


# ---------------------------------------------------------------------------------------------
# Kernels end to end
# ---------------------------------------------------------------------------------------------

def load_example(name: str):
    path = ROOT / "examples" / name
    m = api.parse(path.read_text(), str(path))
    api.verify(m, ASCEND950)
    return m


def test_example_reduce_min_f32():
    m = load_example("reduce_min_f32.pto")
    a = np.linspace(3, -2, 64).astype(np.float32)
    a[40] = a[50] = np.float32(-5.0)
    out = vx.run_vf_kernel(m, {"a": a}, "ascend950")["out"].reshape(-1)
    assert out[0] == np.float32(-5.0) and out.view(np.uint32)[1] == 40 and not out[2:].any()
    assert vx.uses_vf(m)


def test_example_reduce_min_i64():
    m = load_example("reduce_min_i64.pto")
    a = np.array([(i * 37) % 101 - 50 for i in range(32)], np.int64)
    a[7] = a[19] = -2**63
    out = vx.run_vf_kernel(m, {"a": a})["out"].reshape(-1)
    assert list(out[:2]) == [-2**63, 7] and not out[2:].any()


def test_a_vf_kernels_tile_ops_follow_the_target_it_runs_on():
    """The golden model runs a VF kernel's tile ops with ascend950's rules (its UB size, A5's
    early return of TPART* on an empty source), not with the default target's."""
    m = load_example("reduce_min_f32.pto")
    ev = vx._KernelEvaluator(m, np.zeros(ASCEND950.ub_bytes, np.uint8), None, 0, ASCEND950.name)
    assert (ev.target, ev.ub_bytes) == ("ascend950", 256 * 1024)


def test_example_seeded_inputs_and_names():
    m = load_example("reduce_min_f32.pto")
    r = vx.run_vf_kernel_result(m, None, ASCEND950, seed=3)
    assert set(r.outputs) == {"out"} and not r.checked and r.counts["vf.reduce_min"] == 1
    a = vx.golden.make_inputs(m, 3)["a"].reshape(-1)
    first_min = min(range(64), key=lambda i: (float(a[i]), i))
    assert r.outputs["out"].reshape(-1)[0] == a[first_min]
    assert r.outputs["out"].view(np.uint32).reshape(-1)[1] == first_min


def test_vf_kernels_do_not_run_on_a2a3():
    m = load_example("reduce_min_f32.pto")
    with pytest.raises(PtocError) as e:
        vx.run_vf_kernel(m, None, "a2a3")
    assert e.value.exit_code == 2 and "only on ascend950" in str(e.value.diagnostics[0].message)


SYNC = ("pto.set_flag [#pto.pipe<PIPE_{a}>, #pto.pipe<PIPE_{b}>, #pto.event<EVENT_ID0>]",
        "pto.wait_flag [#pto.pipe<PIPE_{a}>, #pto.pipe<PIPE_{b}>, #pto.event<EVENT_ID0>]")


def synced_kernel(mte2_v: str = "sw", v_mte3: str = "sw") -> str:
    src = (ROOT / "examples" / "reduce_min_f32.pto").read_text()
    before = [SYNC[0].format(a="MTE2", b="V")] * ("s" in mte2_v) + [SYNC[1].format(a="MTE2", b="V")] * ("w" in mte2_v)
    after = [SYNC[0].format(a="V", b="MTE3")] * ("s" in v_mte3) + [SYNC[1].format(a="V", b="MTE3")] * ("w" in v_mte3)
    call = "    vf.call @example_vf(%in_a, %t_out)\n"
    return src.replace(call, "".join(f"    {x}\n" for x in before) + call + "".join(f"    {x}\n" for x in after))


def test_synchronised_kernel_is_checked_and_clean():
    m = api.parse(synced_kernel(), "sync.pto")
    r = vx.run_vf_kernel_result(m, {"a": np.arange(64, dtype=np.float32)})
    assert r.checked and not r.findings and r.outputs["out"].reshape(-1)[0] == 0.0


def test_missing_wait_is_a_race_at_the_tstore():
    m = api.parse(synced_kernel(v_mte3="s"), "race.pto")
    with pytest.raises(ExecutionError) as e:
        vx.run_vf_kernel(m, {"a": np.arange(64, dtype=np.float32)})
    f = e.value.findings[0]
    assert f.kind == "race" and "'pto.tstore'" in f.message and "'vf.call @example_vf'" in f.message
    assert "no set_flag/wait_flag chain from V to MTE3" in f.message
    tstore_line = 1 + next(i for i, line in enumerate(synced_kernel(v_mte3="s").splitlines()) if "pto.tstore" in line)
    assert e.value.exit_code == 4 and e.value.diagnostics[0].line == tstore_line
    assert e.value.result.outputs["out"].reshape(-1)[0] == 0.0  # the run still completed


def test_missing_mte2_to_v_sync_is_a_race_at_the_vf_call():
    m = api.parse(synced_kernel(mte2_v=""), "race2.pto")
    with pytest.raises(ExecutionError) as e:
        vx.run_vf_kernel(m, {"a": np.arange(64, dtype=np.float32)})
    f = e.value.findings[0]
    assert f.kind == "race" and "(RAW)" in f.message and "reads what 'pto.tload'" in f.message


def test_wait_without_set_is_a_deadlock():
    m = api.parse(synced_kernel(mte2_v="w"), "dead.pto")
    with pytest.raises(ExecutionError) as e:
        vx.run_vf_kernel(m, {"a": np.arange(64, dtype=np.float32)})
    assert e.value.kinds == {"deadlock"}


def test_auto_placed_tiles_and_a_loop_of_vf_calls():
    """alloc_tile without addr, four VF launches over the rows of a 4x64 tile (pass a row offset)."""
    t = "!pto.tile_buf<vec, 4x64xf32>"
    text = f"""
module {{
  func.func @rows(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {{
    vf.func @row_max(%src: {t}, %dst: {t}, %row: index) {{
      %c64 = arith.constant 64 : index
      %all = vf.create_mask ALL : f32
      %one = vf.create_mask VL1 : f32
      %off = arith.muli %row, %c64 : index
      %v = vf.load_align %src[%off]
      %r = vf.reduce_max %v, %all
      vf.store_align %dst[%off], %r, %one
    }}
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %xv = pto.make_tensor_view %x, shape = [%c4, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c4, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c4, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<4x64xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c4, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<4x64xf32>
    %a = pto.alloc_tile : {t}
    %b = pto.alloc_tile : {t}
    pto.tload ins(%xp : !pto.partition_tensor_view<4x64xf32>) outs(%a : {t})
    scf.for %i = %c0 to %c4 step %c1 {{
      vf.call @row_max(%a, %b, %i)
    }}
    pto.tstore ins(%b : {t}) outs(%yp : !pto.partition_tensor_view<4x64xf32>)
    return
  }}
}}
"""
    m = api.parse(text, "rows.pto")
    api.verify(m, ASCEND950)
    x = np.arange(256, dtype=np.float32).reshape(4, 64) * np.array([[1], [-1], [2], [-2]], np.float32)
    out = vx.run_vf_kernel(m, {"x": x})["y"]
    assert list(out[:, 0]) == [63.0, -64.0, 2 * 191.0, -2 * 192.0]
    assert not out[:, 1:].any()  # a fresh UB is zero; only lane 0 of each row was stored


def test_fault_inside_a_kernel_is_located_at_the_vf_op():
    src = (ROOT / "examples" / "reduce_min_f32.pto").read_text().replace(
        "vf.store_align %dst_tile[0], %min0, %preg_all", "vf.store_align %dst_tile[4], %min0, %preg_all")
    m = api.parse(src, "bad.pto")
    with pytest.raises(ExecutionError) as e:
        vx.run_vf_kernel(m, None)
    assert e.value.findings[0].kind == "align"
    d = e.value.diagnostics[0]
    assert (d.filename, d.line) == ("bad.pto", src.splitlines().index(
        next(line for line in src.splitlines() if "%dst_tile[4]" in line)) + 1)


def test_vf_launches_on_the_v_pipe_are_ordered():
    """Two VFs in a row writing the same tile need no pipe_barrier: VF launches complete in order."""
    call = "    vf.call @example_vf(%in_a, %t_out)\n"
    text = synced_kernel().replace(call, call + call)
    r = vx.run_vf_kernel_result(api.parse(text, "twice.pto"), {"a": np.arange(64, dtype=np.float32)})
    assert r.checked and not r.findings and r.counts["vf.call"] == 2


def test_check_true_forces_the_race_checker_on_an_unsynchronised_kernel():
    m = load_example("reduce_min_f32.pto")
    with pytest.raises(ExecutionError) as e:
        vx.run_vf_kernel(m, None, check=True)
    assert {f.kind for f in e.value.findings} == {"race"} and len(e.value.findings) == 2  # MTE2->V, V->MTE3


def test_built_with_python_constructors_like_a_lowering():
    """What pto-lower-vf would build for a Mode-1 TROWEXPANDMAX (vector_isa.md §3.1, A5 2-D path):
    per row i: vlds BRC of s_i; per chunk j: plt(C), vlds NORM, vmax ZEROING, vsts NORM.  Built with
    the op constructors, verified, printed, read back and run."""
    from xdsl.dialects import arith, scf
    from xdsl.dialects.builtin import Float32Type, IndexType, IntegerAttr, IntegerType, ModuleOp
    from xdsl.ir import Block, Region

    f32, idx, i32 = Float32Type(), IndexType(), IntegerType(32)
    R, C, COLS = 3, 100, 128
    from pto_compiler.dialects.pto import TileBufType

    src_t, col_t = TileBufType(f32, [R, COLS]), TileBufType(f32, [R, 1], blayout="col_major")
    fn = vf.VfFuncOp("trowexpandmax_m1", [src_t, col_t, src_t])
    src, col, dst = fn.args
    blk = fn.block

    def add(op):
        blk.add_op(op)
        return op.results[0] if op.results else None

    c = {v: add(arith.ConstantOp(IntegerAttr(v, idx))) for v in (0, 1, R, 2, 64, COLS)}
    cC = add(arith.ConstantOp(IntegerAttr(C, i32)))
    rows = Block(arg_types=[idx])
    i = rows.args[0]
    s = vf.LoadAlignOp(col, i, dist="BRC_B32")  # Src1 Cols = 1: element offset i
    rows.add_op(s)
    chunks = Block(arg_types=[idx, i32])
    j, count = chunks.args
    upd = vf.UpdateMaskOp(count, vf.mask_type(f32))
    roff = arith.MuliOp(i, c[COLS])
    coff = arith.MuliOp(j, c[64])
    off = arith.AddiOp(roff, coff)
    x = vf.LoadAlignOp(src, off)
    mx = vf.MaxOp([x.results[0], s.results[0]], upd.results[0], vf.RegType(f32))
    st = vf.StoreAlignOp(dst, off, mx.results[0], upd.results[0])
    for op in (upd, roff, coff, off, x, mx, st, scf.YieldOp(upd.results[1])):
        chunks.add_op(op)
    rows.add_op(scf.ForOp(c[0], c[2], c[1], [cC], Region(chunks)))
    rows.add_op(scf.YieldOp())
    add(scf.ForOp(c[0], c[R], c[1], [], Region(rows)))
    module = ModuleOp([fn])
    module.verify()
    again = api.parse_printed(api.print_module(module))
    assert again.is_structurally_equivalent(module)

    rng = np.random.default_rng(2)
    a = rng.uniform(-3, 3, (R, COLS)).astype(np.float32)
    scol = np.array([[-1.0], [0.5], [2.0]], np.float32)
    out = vx.execute_vf(next(o for o in again.walk() if isinstance(o, vf.VfFuncOp)),
                        {"arg0": a, "arg1": scol, "arg2": np.full((R, COLS), 9.0, np.float32)})["arg2"]
    for r in range(R):
        assert list(out[r, :C]) == [max(float(v), float(scol[r, 0])) for v in a[r, :C]]
        assert (out[r, C:] == 9.0).all()  # lanes past the valid columns: masked, untouched


def test_planned_ub_addr_is_honoured():
    """After pto-plan-memory every vec alloc_tile carries ``ub_addr``; the runner puts the tile there."""
    from xdsl.dialects.builtin import IntegerAttr, IntegerType

    src = (ROOT / "examples" / "reduce_min_f32.pto").read_text()
    src = src.replace("pto.alloc_tile addr = %addr_out :", "pto.alloc_tile :")
    m = api.parse(src, "planned.pto")
    alloc = [o for o in m.walk() if o.name == "pto.alloc_tile"][1]
    alloc.attributes["ub_addr"] = IntegerAttr(0x2000, IntegerType(64))
    r = vx.run_vf_kernel_result(m, {"a": np.arange(64, 0, -1, dtype=np.float32)})
    assert r.ub[0x2000:0x2004].view(np.float32)[0] == 1.0  # the result tile sits at 0x2000
    assert r.outputs["out"].reshape(-1)[0] == 1.0


_RELAUNCH = """
module {
  func.func @k(%x: !pto.ptr<f32>, %z: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c32 = arith.constant 32 : index
    %xv = pto.make_tensor_view %x, shape = [%c32, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>
    %zv = pto.make_tensor_view %z, shape = [%c32, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c32, %c32] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<32x32xf32>
    %zp = pto.partition_view %zv, offsets = [%c0, %c0], sizes = [%c32, %c32] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<32x32xf32>
    %a = pto.alloc_tile : !pto.tile_buf<vec, 32x32xf32>
    pto.tload ins(%xp : !pto.partition_tensor_view<32x32xf32>) outs(%a : !pto.tile_buf<vec, 32x32xf32>)
    scf.for %i = %c0 to %c3 step %c1 {
      pto.tadd ins(%a, %a : !pto.tile_buf<vec, 32x32xf32>, !pto.tile_buf<vec, 32x32xf32>) outs(%a : !pto.tile_buf<vec, 32x32xf32>)
    }
    pto.tstore ins(%a : !pto.tile_buf<vec, 32x32xf32>) outs(%zp : !pto.partition_tensor_view<32x32xf32>)
    return
  }
}
"""


def test_a_relaunch_with_the_same_arguments_runs_on_the_new_data(monkeypatch):
    """The same VF launched three times on the same tile (a = a + a): decoded at its first launch,
    the later ones run its kept data steps on what the UB holds then, so z = 8x."""
    from pto_compiler import pipeline

    from pto_compiler.runtime import vf_batch

    decodes, launches = [], []
    call, launch = vx.VfRunner.call, vf_batch.StaticPlan.launch
    # (a first launch runs the static plan, else (or when its checks fail) VfRunner.call's
    # dynamic path: each at most once; the later launches run the kept data steps)
    monkeypatch.setattr(vx.VfRunner, "call", lambda self, *a: decodes.append(1) or call(self, *a))
    monkeypatch.setattr(vf_batch.StaticPlan, "launch", lambda self, *a: launches.append(1) or launch(self, *a))
    prog = pipeline.compile_module(api.parse(_RELAUNCH, "relaunch.pto"), ASCEND950)
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32) / 7
    res = pipeline.run_program(prog, {"x": x, "z": np.zeros((32, 32), np.float32)})
    assert not res.findings
    assert np.array_equal(res.outputs["z"], x * np.float32(8))
    assert res.stats.vf["vf_count"] == 3 and len(decodes) <= 1 and len(launches) <= 1 and decodes + launches
