"""The a2a3 program model, its text form, the NumPy executor and its hazard checker.

Expected values are computed here from reference/vector_isa.md §1's rules with plain Python
loops over (repeat, block, element) and NumPy scalars, not with the executor's index
arithmetic: addr(r, b, e) = X + (r*repStride + b*blkStride)*32 + e*E, lane = b*EPB + e.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pto_compiler.runtime.executor import ExecutionError, execute
from pto_compiler.runtime.program import GmArg, Instr, Loop, Program

from a2a3_programs import a2a3_program

UB = 192 * 1024
NP = {"f16": np.float16, "f32": np.float32, "i16": np.int16, "i32": np.int32}
rng = np.random.default_rng(1234)


# ------------------------------------------------------------------------------------------------
# helpers (independent of the executor)
# ------------------------------------------------------------------------------------------------

def ub_with(**placed):
    """A UB image; keyword a_0x100=array places the array's bytes at 0x100."""
    ub = np.zeros(UB, np.uint8)
    for key, arr in placed.items():
        addr = int(key.split("_", 1)[1], 16)
        b = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
        ub[addr:addr + b.size] = b
    return ub


def read(ub, addr, n, dt):
    e = np.dtype(dt).itemsize
    return ub[addr:addr + n * e].copy().view(dt)


def run_body(body, ub=None, gm=None, scalars=None, **kw):
    """Run a function body of a2a3 ops (tests/a2a3_programs.py) on the UB image ``ub``."""
    return execute(a2a3_program(body, gm, scalars), ub=ub, **kw)


def lane_addrs(base, repeat, blk, rep, esize, lanes=None):
    """[[element address of (repeat r, lane)]] per vector_isa.md §1.1, with Python loops."""
    epb = 32 // esize
    lanes = lanes or 256 // esize
    out = []
    for r in range(repeat):
        row = []
        for lane in range(lanes):
            b, e = divmod(lane, epb)
            row.append(base + (r * rep + b * blk) * 32 + e * esize)
        out.append(row)
    return out


def mask_lanes(lo, hi, lanes):
    bits = (lo & (2 ** 64 - 1)) | ((hi & (2 ** 64 - 1)) << 64)
    return [bool(bits >> k & 1) for k in range(lanes)]


def elementwise_ref(ub, dt, op, dst, srcs, repeat, blks, reps, active=None):
    """Apply op lane by lane in repeat order (reads of a repeat before its writes)."""
    ub = ub.copy()
    e = np.dtype(dt).itemsize
    lanes = 256 // e
    d_addr = lane_addrs(dst, repeat, blks[0], reps[0], e)
    s_addr = [lane_addrs(s, repeat, b, r, e) for s, b, r in zip(srcs, blks[1:], reps[1:])]
    for r in range(repeat):
        vals = []
        for lane in range(lanes):
            if active is not None and not active[r][lane]:
                vals.append(None)
                continue
            args = [np.frombuffer(ub[a[r][lane]:a[r][lane] + e].tobytes(), dt)[0] for a in s_addr]
            vals.append(op(*args))
        for lane in range(lanes):
            if vals[lane] is not None:
                a = d_addr[r][lane]
                ub[a:a + e] = np.frombuffer(np.array(vals[lane], dt).tobytes(), np.uint8)
    return ub


def tree(vals, dt):
    """Pairwise tree sum in the element type (lane 2k + lane 2k+1, recursively)."""
    v = [np.array(x, dt) for x in vals]
    while len(v) > 1:
        v = [np.array(np.float64(v[i]) + np.float64(v[i + 1])).astype(dt) for i in range(0, len(v), 2)]
    return v[0]


# ------------------------------------------------------------------------------------------------
# text form
# ------------------------------------------------------------------------------------------------

SAMPLE = """\
  a2a3.copy_gm_to_ubuf dst=%c0x0 src=(%x : !pto.ptr<f32>)+%c0 n_burst=%c64 len_burst=%c1024 src_gap=%c0 dst_gap=%c0 right_pad=%c0 pad_value=(%f0 : f32) : f32 loc("pto.tload"("t.pto":5:3))
  a2a3.set_flag MTE2 -> V id=%c0
  a2a3.wait_flag MTE2 -> V id=%c0
  a2a3.vbrcb dst=%c0x2e000 src=%c0x4000 repeat=%c2 blk=%c1 rep=%c8 : f32 loc("pto.trowexpandmax"("t.pto":12:3))
  a2a3.pipe_barrier V loc("pto.trowexpandmax"("t.pto":12:3))
  a2a3.vmax dst=%c0x0 src0=%c0x1000 src1=%c0x2e000 repeat=%c16 blk=%c1,%c1,%c0 rep=%c8,%c8,%c1 : f32 loc("pto.trowexpandmax"("t.pto":12:3))
  a2a3.vcmax dst=%c0x100 src=%c0x0 repeat=%c16 blk=%c1 rep=%c1,%c8 order=value_index : f32
  a2a3.vconv dst=%c0x0 src=%c0x100 repeat=%c1 blk=%c1,%c1 rep=%c4,%c8 round=z : f32, f16
  scf.for %i = %c0 to %n step %c2 {
    %d = arith.muli %i, %c256 : index
    %dst = arith.addi %d, %c0x400 : index
    a2a3.vadds dst=%dst src=%c0x0 scalar=(%f-inf : f32) repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32
    %a = arith.muli %i, %c4 : index
    %addr = arith.addi %a, %c0x100 : index
    %r = a2a3.ld_ub addr=%addr : f32, f32
    %pos = arith.cmpi sgt, %n, %c0 : index
    scf.if %pos {
      a2a3.vector_dup dst=%c0x0 scalar=(%r : f32) repeat=%c1 blk=%c1 rep=%c8 : f32
    } else {
      a2a3.vector_dup dst=%c0x0 scalar=(%f0.5 : f32) repeat=%c1 blk=%c1 rep=%c8 : f32
    }
  }
  %off = arith.muli %n, %c1024 : index
  a2a3.copy_ubuf_to_gm dst=(%x : !pto.ptr<f32>)+%off src=%c0x0 n_burst=%c64 len_burst=%c1024 src_gap=%c0 dst_gap=%c0 : f32
  a2a3.pipe_barrier ALL
"""


def test_decoded_program():
    """The listing's decoder reads a2a3 ops, their operands, strides and origins as written."""
    p = a2a3_program(SAMPLE, gm={"x": ("f32", (64, 256))}, scalars={"n": "index"}, name="softmax")
    assert [(g.name, g.dtype, g.shape) for g in p.gm_args] == [("x", "f32", (64, 256))]
    ins = p.body[0]
    assert ins.pipe == "MTE2" and ins.opcode == "copy_gm_to_ubuf"
    assert tuple(ins.origin) == ("t.pto", 5, 3, "pto.tload")
    vmax = p.body[5]
    assert vmax.args["src1_blk_stride"] == 0 and vmax.args["src1_rep_stride"] == 1
    assert vmax.args["dtype"] == "f32"
    assert p.body[6].args["order"] == "value_index" and p.body[6].args["dst_rep_stride"] == 1
    assert (p.body[7].args["src_dtype"], p.body[7].args["dtype"], p.body[7].args["round"]) == ("f32", "f16", "z")
    loop = p.body[8]
    assert isinstance(loop, Loop) and loop.var == "i" and loop.step == 2
    text = p.to_text()
    assert "V    vcmax.f32 dst=0x100 src=0x0 repeat=16 blk=1 rep=1,8 order=value_index" in text
    assert "V    vconv.f32.f16 dst=0x0 src=0x100 repeat=1 blk=1,1 rep=4,8 round=z" in text


def test_builder_matches_listing():
    ins = Instr.make("vmax", "f32", dst=0, src0=0x1000, src1=0x2000, repeat=16,
                     src1_blk_stride=0, src1_rep_stride=1, origin=("t.pto", 12, 3, "pto.trowexpandmax"))
    line = ins.to_text()
    assert line == ("V    vmax.f32 dst=0x0 src0=0x1000 src1=0x2000 repeat=16 blk=1,1,0 rep=8,8,1"
                    "  ; t.pto:12:3 pto.trowexpandmax")
    p = a2a3_program("  scf.for %i = %c0 to %c2 step %c1 {\n"
                     "    %d = arith.muli %i, %c1024 : index\n"
                     "    %a = arith.addi %d, %c0x1000 : index\n"
                     "    a2a3.vmax dst=%a src0=%c0x1000 src1=%c0x2000 repeat=%c16 blk=%c1,%c1,%c0 rep=%c8,%c8,%c1 : f32\n"
                     "  }")
    assert "S    loop %i = 0 to 2 step 1 {" in p.to_text()
    assert "\nV      vmax.f32 dst=%i*1024+0x1000 src0=0x1000 src1=0x2000 repeat=16 blk=1,1,0 rep=8,8,1" in p.to_text()


# ------------------------------------------------------------------------------------------------
# elementwise ops
# ------------------------------------------------------------------------------------------------

BIN = {"vadd": lambda a, b: a + b, "vsub": lambda a, b: a - b, "vmul": lambda a, b: a * b,
       "vdiv": lambda a, b: a / b, "vmax": max, "vmin": min}


@pytest.mark.parametrize("op", sorted(BIN))
def test_binary_ops_strided_f32(op):
    a = rng.uniform(0.5, 4, 600).astype(np.float32)
    b = rng.uniform(0.5, 4, 600).astype(np.float32)
    ub = ub_with(a_0x0=a, b_0x1000=b)
    blks, reps = (1, 2, 1), (8, 16, 9)
    body = f"a2a3.{op} dst=%c0x4000 src0=%c0x0 src1=%c0x1000 repeat=%c3 blk=%c1,%c2,%c1 rep=%c8,%c16,%c9 : f32\n"
    got = run_body(body, ub).ub
    want = elementwise_ref(ub, np.float32, BIN[op], 0x4000, [0x0, 0x1000], 3, blks, reps)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("dt", ["f16", "i16", "i32"])
@pytest.mark.parametrize("op", ["vadd", "vmax", "vmul", "vsub"])
def test_binary_ops_dtypes(dt, op):
    t = NP[dt]
    e = np.dtype(t).itemsize
    n = 3 * 256 // e
    if dt.startswith("i"):
        info = np.iinfo(t)
        a = rng.integers(info.min, info.max, n, dtype=t)  # products and sums overflow: wrap
        b = rng.integers(info.min, info.max, n, dtype=t)
        with np.errstate(over="ignore"):
            fn = {"vadd": lambda x, y: t(x + y), "vsub": lambda x, y: t(x - y),
                  "vmul": lambda x, y: t(x * y), "vmax": max}[op]
    else:
        a = rng.uniform(-4, 4, n).astype(t)
        b = rng.uniform(-4, 4, n).astype(t)
        fn = {"vadd": lambda x, y: t(np.float64(x) + np.float64(y)),
              "vsub": lambda x, y: t(np.float64(x) - np.float64(y)),
              "vmul": lambda x, y: t(np.float64(x) * np.float64(y)), "vmax": max}[op]
    ub = ub_with(a_0x0=a, b_0x2000=b)
    got = run_body(f"a2a3.{op} dst=%c0x4000 src0=%c0x0 src1=%c0x2000 repeat=%c3 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : {dt}\n", ub).ub
    with np.errstate(over="ignore"):
        want = elementwise_ref(ub, t, fn, 0x4000, [0, 0x2000], 3, (1, 1, 1), (8, 8, 8))
    assert np.array_equal(got, want)


def test_block_stride_zero_broadcasts_one_block():
    """TROWEXPANDMAX Mode 1/2: src1 blk stride 0, rep stride 1 reads block r for every block."""
    x = rng.standard_normal((4, 64)).astype(np.float32)
    s = rng.standard_normal((4, 8)).astype(np.float32)  # one 32 B block per row
    ub = ub_with(x_0x0=x, s_0x1000=s)
    got = run_body("a2a3.vmax dst=%c0x2000 src0=%c0x0 src1=%c0x1000 repeat=%c4 blk=%c1,%c1,%c0 rep=%c8,%c8,%c1 : f32\n", ub).ub
    out = read(got, 0x2000, 256, np.float32).reshape(4, 64)
    assert np.array_equal(out, np.maximum(x, np.tile(s, (1, 8))))


def test_nan_and_signed_zero_in_vmax_vmin():
    a = np.array([np.nan, 1, -0.0, 0.0] * 16, np.float32)
    b = np.array([1, np.nan, 0.0, -0.0] * 16, np.float32)
    ub = ub_with(a_0x0=a, b_0x100=b)
    got = run_body("a2a3.vmax dst=%c0x200 src0=%c0x0 src1=%c0x100 repeat=%c1 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n"
                   "a2a3.vmin dst=%c0x300 src0=%c0x0 src1=%c0x100 repeat=%c1 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n", ub).ub
    mx, mn = read(got, 0x200, 64, np.float32), read(got, 0x300, 64, np.float32)
    assert np.isnan(mx[0]) and np.isnan(mx[1]) and np.isnan(mn[0]) and np.isnan(mn[1])
    assert not np.signbit(mx[2]) and not np.signbit(mx[3])
    assert np.signbit(mn[2]) and np.signbit(mn[3])


@pytest.mark.parametrize("op,fn", [("vadds", lambda a, s: a + s), ("vmuls", lambda a, s: a * s),
                                   ("vmaxs", max), ("vmins", min)])
def test_scalar_ops(op, fn):
    a = rng.uniform(-3, 3, 256).astype(np.float32)
    ub = ub_with(a_0x0=a)
    got = run_body(f"a2a3.{op} dst=%c0x1000 src=%c0x0 scalar=(%f0.75 : f32) repeat=%c2 blk=%c2,%c1 rep=%c16,%c8 : f32\n", ub).ub
    want = elementwise_ref(ub, np.float32, lambda x: np.float32(fn(x, np.float32(0.75))),
                           0x1000, [0], 2, (2, 1), (16, 8))
    assert np.array_equal(got, want)


UNARY = {"vexp": np.exp, "vln": np.log, "vsqrt": np.sqrt, "vrsqrt": lambda x: 1 / np.sqrt(x),
         "vrec": lambda x: 1 / x, "vabs": np.abs, "vrelu": lambda x: np.maximum(x, 0)}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_unary_ops(op, dt):
    t = NP[dt]
    n = 2 * 256 // np.dtype(t).itemsize
    lo = 0.1 if op in ("vln", "vsqrt", "vrsqrt") else -2
    a = rng.uniform(lo, 3, n).astype(t)
    ub = ub_with(a_0x0=a)
    got = run_body(f"a2a3.{op} dst=%c0x1000 src=%c0x0 repeat=%c2 blk=%c1,%c1 rep=%c8,%c8 : {dt}\n", ub).ub
    want = UNARY[op](a.astype(np.float64)).astype(t)  # computed in f64, rounded once
    assert np.array_equal(read(got, 0x1000, n, t), want)


# ------------------------------------------------------------------------------------------------
# masks
# ------------------------------------------------------------------------------------------------

def test_norm_mode_partial_mask_f32_and_f16():
    a = rng.standard_normal(128).astype(np.float32)
    ub = ub_with(a_0x0=a, d_0x1000=np.full(128, 7, np.float32))
    body = ("a2a3.set_vector_mask hi=%c0x0 lo=%c0x5555555555555555\n"
            "  a2a3.vadds dst=%c0x1000 src=%c0x0 scalar=(%f1.0 : f32) repeat=%c2 blk=%c1,%c1 rep=%c8,%c8 : f32\n")
    got = read(run_body(body, ub).ub, 0x1000, 128, np.float32)
    act = mask_lanes(0x5555555555555555, 0, 64) * 2
    want = np.where(act, a + np.float32(1), np.float32(7))
    assert np.array_equal(got, want)
    # f16: lanes 64..127 come from hi; first 70 lanes on (SetContinuousMask(70))
    h = rng.standard_normal(128).astype(np.float16)
    ub = ub_with(a_0x0=h, d_0x1000=np.zeros(128, np.float16))
    body = ("a2a3.set_vector_mask hi=%c0x3f lo=%c0xffffffffffffffff\n"
            "  a2a3.vmuls dst=%c0x1000 src=%c0x0 scalar=(%f2.0 : f16) repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f16\n")
    got = read(run_body(body, ub).ub, 0x1000, 128, np.float16)
    assert np.array_equal(got[:70], h[:70] * np.float16(2)) and not got[70:].any()


def test_count_mode_last_repeat_partial_and_strides_apply():
    a = rng.standard_normal(256).astype(np.float32)
    ub = ub_with(a_0x0=a)
    body = ("a2a3.set_mask_count \n"
            "  a2a3.set_vector_count count=%c100\n"
            "  a2a3.vadds dst=%c0x1000 src=%c0x0 scalar=(%f1.0 : f32) repeat=%c0 blk=%c1,%c1 rep=%c16,%c16 : f32\n")
    got = run_body(body, ub).ub
    # 2 repeats, repeat 1 has 36 lanes; repeat stride 16 blocks = 128 elements
    act = [[True] * 64, [True] * 36 + [False] * 28]
    want = elementwise_ref(ub, np.float32, lambda x: x + np.float32(1), 0x1000, [0], 2,
                           (1, 1), (16, 16), act)
    assert np.array_equal(got, want)


def test_vector_dup_masked():
    ub = ub_with(d_0x0=np.full(64, 3, np.int32))
    body = ("a2a3.set_vector_mask hi=%c0x0 lo=%c0xff\n"
            "  a2a3.vector_dup dst=%c0x0 scalar=(%f-5 : i32) repeat=%c1 blk=%c1 rep=%c8 : i32\n")
    got = read(run_body(body, ub).ub, 0, 64, np.int32)
    assert list(got[:8]) == [-5] * 8 and list(got[8:]) == [3] * 56


# ------------------------------------------------------------------------------------------------
# vbrcb, reductions, vcpadd, vconv
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_vbrcb(dt):
    t = NP[dt]
    e = np.dtype(t).itemsize
    s = rng.standard_normal(16).astype(t)
    ub = ub_with(s_0x0=s)
    # partial mask must not matter; dst blk stride 0 acts as 1
    body = (f"a2a3.set_vector_mask hi=%c0x0 lo=%c0x1\n"
            f"  a2a3.vbrcb dst=%c0x1000 src=%c0x0 repeat=%c2 blk=%c0 rep=%c8 : {dt}\n")
    got = run_body(body, ub).ub
    epb = 32 // e
    want = np.repeat(s, epb)  # block i holds scalar i
    assert np.array_equal(read(got, 0x1000, 16 * epb, t), want)


def test_vcadd_vcmax_vcmin_per_repeat():
    x = rng.standard_normal((3, 64)).astype(np.float32)
    x[1, 17] = x[1, 40] = 9.0  # tie: the lowest lane wins
    ub = ub_with(x_0x0=x)
    body = ("a2a3.vcadd dst=%c0x1000 src=%c0x0 repeat=%c3 blk=%c1 rep=%c2,%c8 : f32\n"
            "  a2a3.vcmax dst=%c0x1100 src=%c0x0 repeat=%c3 blk=%c1 rep=%c1,%c8 : f32\n"
            "  a2a3.vcmin dst=%c0x1200 src=%c0x0 repeat=%c3 blk=%c1 rep=%c1,%c8 order=value_index : f32\n"
            "  a2a3.vcmax dst=%c0x1300 src=%c0x0 repeat=%c3 blk=%c1 rep=%c1,%c8 order=value_index : f32\n")
    got = run_body(body, ub).ub
    sums = read(got, 0x1000, 6, np.float32)[0::2]  # dst repeat stride 2 elements
    assert [s.tobytes() for s in sums] == [tree(x[r], np.float32).tobytes() for r in range(3)]
    assert np.array_equal(read(got, 0x1100, 3, np.float32), x.max(axis=1))
    vi = read(got, 0x1200, 6, np.float32)
    assert np.array_equal(vi[0::2], x.min(axis=1))
    assert list(vi[1::2].view(np.uint32)) == list(x.argmin(axis=1))
    vm = read(got, 0x1300, 6, np.float32)
    assert vm[3].view(np.uint32) == 17


def test_vcadd_count_mode_rows_of_f16():
    x = rng.standard_normal((4, 128)).astype(np.float16)
    ub = ub_with(x_0x0=x)
    body = ("a2a3.set_mask_count \na2a3.set_vector_count count=%c500\n"
            "  a2a3.vcadd dst=%c0x1000 src=%c0x0 repeat=%c0 blk=%c1 rep=%c1,%c8 : f16\n")
    got = read(run_body(body, ub).ub, 0x1000, 4, np.float16)
    want = [tree(x[r], np.float16) for r in range(3)] + [tree(list(x[3, :116]) + [0] * 12, np.float16)]
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]


def test_vcgadd_vcgmax_per_block():
    x = rng.standard_normal((2, 64)).astype(np.float32)
    ub = ub_with(x_0x0=x)
    body = ("a2a3.vcgadd dst=%c0x1000 src=%c0x0 repeat=%c2 blk=%c1 rep=%c1,%c8 : f32\n"
            "  a2a3.vcgmax dst=%c0x1100 src=%c0x0 repeat=%c2 blk=%c1 rep=%c2,%c8 : f32\n")
    got = run_body(body, ub).ub
    blocks = x.reshape(2, 8, 8)
    s = read(got, 0x1000, 16, np.float32)
    want = [tree(blocks[r, b], np.float32) for r in range(2) for b in range(8)]
    assert [v.tobytes() for v in s] == [w.tobytes() for w in want]
    m = read(got, 0x1100, 32, np.float32)  # dst rep stride 2 x 8 elements
    assert np.array_equal(m[:8], blocks[0].max(axis=1)) and np.array_equal(m[16:24], blocks[1].max(axis=1))


def test_vcpadd_pairs_and_block_rep_stride():
    x = rng.standard_normal((2, 64)).astype(np.float32)
    ub = ub_with(x_0x0=x, d_0x1000=np.full(64, 5, np.float32))
    # dst rep stride 8 blocks = 64 elements: row r's 32 pair sums at 0x1000 + r*256
    got = run_body("a2a3.vcpadd dst=%c0x1000 src=%c0x0 repeat=%c2 blk=%c1 rep=%c8,%c8 : f32\n", ub).ub
    out = read(got, 0x1000, 128, np.float32).reshape(2, 64)
    assert np.array_equal(out[:, :32], x[:, 0::2] + x[:, 1::2])
    assert np.all(out[0, 32:] == 5)
    # count mode, even count 10: 5 pair sums, the rest untouched
    ub = ub_with(x_0x0=x, d_0x1000=np.full(64, 5, np.float32))
    body = "a2a3.set_mask_count \na2a3.set_vector_count count=%c10\na2a3.vcpadd dst=%c0x1000 src=%c0x0 repeat=%c0 blk=%c1 rep=%c4,%c8 : f32\n"
    out = read(run_body(body, ub).ub, 0x1000, 64, np.float32)
    assert np.array_equal(out[:5], x[0, 0:10:2] + x[0, 1:10:2]) and np.all(out[5:] == 5)


def test_vconv():
    x = np.array([1.5, 2.5, -1.5, 1e6, 3.25, -0.0] + [0.1] * 58, np.float32)  # 1e6 -> f16 inf
    ub = ub_with(x_0x0=x)
    body = ("a2a3.vconv dst=%c0x1000 src=%c0x0 repeat=%c1 blk=%c1,%c1 rep=%c4,%c8 : f32, f16\n"
            "  a2a3.vconv dst=%c0x2000 src=%c0x0 repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 round=z : f32, i32\n"
            "  a2a3.vconv dst=%c0x3000 src=%c0x0 repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32, i32\n")
    got = run_body(body, ub).ub
    with np.errstate(over="ignore"):
        assert np.array_equal(read(got, 0x1000, 64, np.float16), x.astype(np.float16))
    assert list(read(got, 0x2000, 6, np.int32)) == [1, 2, -1, 1000000, 3, 0]
    assert list(read(got, 0x3000, 6, np.int32)) == [2, 2, -2, 1000000, 3, 0]
    h = rng.standard_normal(64).astype(np.float16)
    got = run_body("a2a3.vconv dst=%c0x1000 src=%c0x0 repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f16, f32\n", ub_with(h_0x0=h)).ub
    assert np.array_equal(read(got, 0x1000, 64, np.float32), h.astype(np.float32))


def test_in_place_overlap_runs_repeats_in_order():
    """dst of repeat 0 is src0 of repeat 1: repeat 1 must read the new values."""
    a = np.arange(192, dtype=np.float32)
    ub = ub_with(a_0x0=a)
    body = "a2a3.vadds dst=%c0x100 src=%c0x0 scalar=(%f1.0 : f32) repeat=%c2 blk=%c1,%c1 rep=%c8,%c8 : f32\n"
    got = read(run_body(body, ub).ub, 0, 192, np.float32)
    assert np.array_equal(got[:64], a[:64])
    assert np.array_equal(got[64:128], a[:64] + 1)
    assert np.array_equal(got[128:], a[:64] + 2)


def test_row_max_compaction_from_the_headers():
    """§3.3 fast path: vmax(tmp, tmp, tmp+8, 8 repeats, blk 1,2,2, rep 8,16,16) on [64,16]."""
    t = rng.standard_normal((64, 16)).astype(np.float32)
    ub = ub_with(t_0x0=t)
    got = run_body("a2a3.vmax dst=%c0x0 src0=%c0x0 src1=%c0x20 repeat=%c8 blk=%c1,%c2,%c2 rep=%c8,%c16,%c16 : f32\n", ub).ub
    want = elementwise_ref(ub, np.float32, max, 0, [0, 0x20], 8, (1, 2, 2), (8, 16, 16))
    assert np.array_equal(got, want)
    assert np.array_equal(read(got, 0, 512, np.float32).reshape(64, 8), np.maximum(t[:, :8], t[:, 8:]))


# ------------------------------------------------------------------------------------------------
# copies
# ------------------------------------------------------------------------------------------------

def test_copies_with_gaps_and_padding():
    x = rng.standard_normal((4, 10)).astype(np.float32)
    prog = a2a3_program("""\
  a2a3.copy_gm_to_ubuf dst=%c0x0 src=(%x : !pto.ptr<f32>)+%c8 n_burst=%c3 len_burst=%c20 src_gap=%c20 dst_gap=%c1 right_pad=%c3 pad_value=(%f-1.0 : f32) : f32
  a2a3.set_flag MTE2 -> V id=%c0
  a2a3.wait_flag MTE2 -> V id=%c0
  a2a3.copy_ubuf_to_ubuf dst=%c0x1000 src=%c0x0 n_burst=%c3 len_burst=%c1 src_gap=%c1 dst_gap=%c0
  a2a3.set_flag V -> MTE3 id=%c1
  a2a3.wait_flag V -> MTE3 id=%c1
  a2a3.copy_ubuf_to_gm dst=(%y : !pto.ptr<f32>)+%c4 src=%c0x0 n_burst=%c3 len_burst=%c20 src_gap=%c1 dst_gap=%c20 : f32
""", gm={"x": ("f32", (4, 10)), "y": ("f32", (4, 10))})
    r = execute(prog, {"x": x})
    flat = x.reshape(-1)
    ub = r.ub
    for i in range(3):  # burst i: 5 elements at GM byte 8 + i*40, UB block 2*i
        row = read(ub, 64 * i, 8, np.float32)
        assert np.array_equal(row[:5], flat[2 + 10 * i: 7 + 10 * i])
        assert np.array_equal(row[5:8], [-1, -1, -1])
    cp = read(ub, 0x1000, 24, np.float32).reshape(3, 8)  # blocks 0, 2, 4 packed
    assert np.array_equal(cp, np.stack([read(ub, 64 * i, 8, np.float32) for i in range(3)]))
    y = r.outputs["y"].reshape(-1)
    for i in range(3):  # UB burst i at 64*i (stride 2 blocks) -> GM byte 4 + i*40
        assert np.array_equal(y[1 + 10 * i: 6 + 10 * i], flat[2 + 10 * i: 7 + 10 * i])
    assert y[0] == 0 and y[6] == 0


def test_gm_out_of_bounds_names_the_argument():
    body = """\
  a2a3.copy_gm_to_ubuf dst=%c0x0 src=(%x : !pto.ptr<f32>)+%c64 n_burst=%c4 len_burst=%c32 src_gap=%c0 dst_gap=%c0 right_pad=%c0 pad_value=(%f0 : f32) : f32 loc("pto.tload"("k.pto":3:5))
"""
    with pytest.raises(ExecutionError) as e:
        run_body(body, gm={"x": ("f32", (4, 8))})
    f = e.value.findings[0]
    assert f.kind == "bounds" and "@x" in f.message and "[16, 48)" in f.message
    assert e.value.exit_code == 4
    assert e.value.diagnostics[0].line == 3


def test_ub_out_of_range():
    with pytest.raises(ExecutionError) as e:
        run_body("a2a3.vadd dst=%c0x2ff00 src0=%c0x0 src1=%c0x0 repeat=%c2 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n")
    assert e.value.findings[0].kind == "bounds" and "192 KiB" in e.value.findings[0].message


def test_alignment_checked():
    with pytest.raises(ExecutionError) as e:
        run_body("a2a3.vadd dst=%c0x10 src0=%c0x0 src1=%c0x0 repeat=%c1 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n")
    assert e.value.findings[0].kind == "align"


# ------------------------------------------------------------------------------------------------
# hazards
# ------------------------------------------------------------------------------------------------

PIPELINE_GM = {"x": ("f32", (16, 64)), "y": ("f32", (16, 64))}
PIPELINE = """\
  a2a3.copy_gm_to_ubuf dst=%c0x0 src=(%x : !pto.ptr<f32>)+%c0 n_burst=%c1 len_burst=%c4096 src_gap=%c0 dst_gap=%c0 right_pad=%c0 pad_value=(%f0 : f32) : f32 loc("pto.tload"("k.pto":4:3))
  a2a3.set_flag MTE2 -> V id=%c0 loc("pto.tload"("k.pto":4:3))
  a2a3.wait_flag MTE2 -> V id=%c0 loc("pto.texp"("k.pto":5:3))
  a2a3.vexp dst=%c0x1000 src=%c0x0 repeat=%c16 blk=%c1,%c1 rep=%c8,%c8 : f32 loc("pto.texp"("k.pto":5:3))
  a2a3.pipe_barrier V loc("pto.tadds"("k.pto":6:3))
  a2a3.vadds dst=%c0x1000 src=%c0x1000 scalar=(%f1.0 : f32) repeat=%c16 blk=%c1,%c1 rep=%c8,%c8 : f32 loc("pto.tadds"("k.pto":6:3))
  a2a3.set_flag V -> MTE3 id=%c0 loc("pto.tstore"("k.pto":7:3))
  a2a3.wait_flag V -> MTE3 id=%c0 loc("pto.tstore"("k.pto":7:3))
  a2a3.copy_ubuf_to_gm dst=(%y : !pto.ptr<f32>)+%c0 src=%c0x1000 n_burst=%c1 len_burst=%c4096 src_gap=%c0 dst_gap=%c0 : f32 loc("pto.tstore"("k.pto":7:3))
"""


def test_correct_program_reports_nothing():
    x = rng.standard_normal((16, 64)).astype(np.float32)
    r = run_body(PIPELINE, gm=PIPELINE_GM, inputs={"x": x})
    assert r.findings == []
    assert np.array_equal(r.outputs["y"], (np.exp(x.astype(np.float64)).astype(np.float32) + np.float32(1)))


def drop(text, *needles):
    lines = text.splitlines(keepends=True)
    out = [ln for ln in lines if not any(n in ln for n in needles)]
    assert len(out) == len(lines) - len(needles)
    return "".join(out)


def test_missing_flag_pair_is_a_race_naming_both():
    body = drop(PIPELINE, "set_flag MTE2 -> V", "wait_flag MTE2 -> V")
    with pytest.raises(ExecutionError) as e:
        run_body(body, gm=PIPELINE_GM, inputs={"x": np.ones((16, 64), np.float32)})
    races = [f for f in e.value.findings if f.kind == "race"]
    assert len(races) == 1
    m = races[0].message
    assert "RAW" in m and "vexp.f32" in m and "copy_gm_to_ubuf.f32" in m
    assert "k.pto:5:3 pto.texp" in m and "k.pto:4:3 pto.tload" in m
    assert "MTE2 to V" in m
    assert e.value.result is not None and e.value.exit_code == 4


def test_missing_barrier_is_a_same_pipe_race():
    with pytest.raises(ExecutionError) as e:
        run_body(drop(PIPELINE, "pipe_barrier V"), gm=PIPELINE_GM, inputs={"x": np.ones((16, 64), np.float32)})
    (f,) = e.value.findings
    assert f.kind == "race" and "no pipe_barrier V" in f.message and "vadds.f32" in f.message


def test_missing_set_flag_alone_is_a_deadlock():
    with pytest.raises(ExecutionError) as e:
        run_body(drop(PIPELINE, "set_flag V -> MTE3"), gm=PIPELINE_GM)
    (f,) = e.value.findings
    assert f.kind == "deadlock" and "wait_flag V->MTE3 id=0" in f.message


def test_wait_flag_on_scalar_pipe_without_set_is_a_deadlock():
    with pytest.raises(ExecutionError) as e:
        run_body("a2a3.vadds dst=%c0x0 src=%c0x0 scalar=(%f1.0 : f32) repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32\na2a3.wait_flag V -> S id=%c0\n")
    assert e.value.findings[0].kind == "deadlock"


def test_war_across_pipes():
    """MTE2 reloads a buffer V is still reading: WAR unless V signals MTE2."""
    body = """\
  a2a3.copy_gm_to_ubuf dst=%c0x0 src=(%x : !pto.ptr<f32>)+%c0 n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 right_pad=%c0 pad_value=(%f0 : f32) : f32
  a2a3.set_flag MTE2 -> V id=%c0
  a2a3.wait_flag MTE2 -> V id=%c0
  a2a3.vadds dst=%c0x100 src=%c0x0 scalar=(%f1.0 : f32) repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32
{sync}  a2a3.copy_gm_to_ubuf dst=%c0x0 src=(%x : !pto.ptr<f32>)+%c0 n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 right_pad=%c0 pad_value=(%f0 : f32) : f32
"""
    gm = {"x": ("f32", (64,))}
    with pytest.raises(ExecutionError) as e:
        run_body(body.format(sync=""), gm=gm)
    war = [f for f in e.value.findings if "(WAR)" in f.message]
    assert len(war) == 1 and "overwrites what 'V vadds.f32" in war[0].message
    r = run_body(body.format(sync="a2a3.set_flag V -> MTE2 id=%c1\na2a3.wait_flag V -> MTE2 id=%c1\n"), gm=gm)
    assert r.findings == []


def test_flag_chain_is_transitive_and_scalar_reads_need_flags():
    """V writes, V->S flag, S reads with ld_ub, S->MTE3 flag... MTE3 may store V's bytes."""
    body = """\
  a2a3.vector_dup dst=%c0x0 scalar=(%f2.5 : f32) repeat=%c1 blk=%c1 rep=%c8 : f32
  a2a3.set_flag V -> S id=%c0
  a2a3.wait_flag V -> S id=%c0
  %v = a2a3.ld_ub addr=%c0x8 : f32, f32
  %w = a2a3.sadd src0=(%v : f32) src1=(%f1.0 : f32) : f32, f32
  a2a3.st_ub addr=%c0x4 src=(%w : f32) : f32
  a2a3.set_flag S -> MTE3 id=%c0
  a2a3.wait_flag S -> MTE3 id=%c0
  a2a3.copy_ubuf_to_gm dst=(%y : !pto.ptr<f32>)+%c0 src=%c0x0 n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 : f32
"""
    gm = {"y": ("f32", (64,))}
    r = run_body(body, gm=gm)
    assert r.findings == [] and r.scalars["v"] == 2.5
    assert list(r.outputs["y"][:3]) == [2.5, 3.5, 2.5]
    with pytest.raises(ExecutionError) as e:
        run_body(drop(body, "set_flag V -> S", "wait_flag V -> S"), gm=gm)
    assert "ld_ub.f32" in e.value.findings[0].message


def test_loops_with_ping_pong_events_and_address_expressions():
    x = rng.standard_normal((4, 64)).astype(np.float32)
    body = """\
  a2a3.set_flag MTE3 -> MTE2 id=%c0
  a2a3.set_flag MTE3 -> MTE2 id=%c1
  scf.for %i = %c0 to %c4 step %c1 {
    %e = arith.remsi %i, %c2 : index
    %in = arith.muli %e, %c0x200 : index
    %half = arith.muli %e, %c0x100 : index
    %out = arith.addi %half, %c0x1000 : index
    %g = arith.muli %i, %c256 : index
    a2a3.wait_flag MTE3 -> MTE2 id=%e
    a2a3.copy_gm_to_ubuf dst=%in src=(%x : !pto.ptr<f32>)+%g n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 right_pad=%c0 pad_value=(%f0 : f32) : f32
    a2a3.set_flag MTE2 -> V id=%e
    a2a3.wait_flag MTE2 -> V id=%e
    a2a3.vmuls dst=%out src=%in scalar=(%f2.0 : f32) repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32
    a2a3.set_flag V -> MTE3 id=%e
    a2a3.wait_flag V -> MTE3 id=%e
    a2a3.copy_ubuf_to_gm dst=(%y : !pto.ptr<f32>)+%g src=%out n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 : f32
    a2a3.set_flag MTE3 -> MTE2 id=%e
  }
  a2a3.wait_flag MTE3 -> MTE2 id=%c0
  a2a3.wait_flag MTE3 -> MTE2 id=%c1
"""
    gm = {"x": ("f32", (4, 64)), "y": ("f32", (4, 64))}
    r = run_body(body, gm=gm, inputs={"x": x})
    assert r.findings == [] and np.array_equal(r.outputs["y"], x * 2)
    assert r.counts["vmuls"] == 4
    # without the MTE3->MTE2 back-edge events, iteration 2 reloads a buffer iteration 0's
    # vmuls read (WAR V->MTE2 is ordered by the chain? no: V->MTE3 only) -> a race is found
    bad = drop(body, "wait_flag MTE3 -> MTE2 id=%e", "wait_flag MTE3 -> MTE2 id=%c0", "wait_flag MTE3 -> MTE2 id=%c1")
    with pytest.raises(ExecutionError) as e:
        run_body(bad, gm=gm, inputs={"x": x})
    # ... and the back-edge set_flags, no longer waited for, are left pending at the end
    assert e.value.kinds == {"race", "sync"} and "[%i=2]" in e.value.findings[0].message


def test_blocks_split_work_and_cross_block_conflicts():
    x = rng.standard_normal((2, 64)).astype(np.float32)
    body = """\
  %b = a2a3.get_block_idx : index
  %bf = a2a3.get_block_idx : f32
  %g = arith.muli %b, %c256 : index
  a2a3.copy_gm_to_ubuf dst=%c0x0 src=(%x : !pto.ptr<f32>)+%g n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 right_pad=%c0 pad_value=(%f0 : f32) : f32
  a2a3.set_flag MTE2 -> V id=%c0
  a2a3.wait_flag MTE2 -> V id=%c0
  a2a3.vadds dst=%c0x0 src=%c0x0 scalar=(%bf : f32) repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32
  a2a3.set_flag V -> MTE3 id=%c0
  a2a3.wait_flag V -> MTE3 id=%c0
  a2a3.copy_ubuf_to_gm dst=(%y : !pto.ptr<f32>)+%g src=%c0x0 n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 : f32
"""
    gm = {"x": ("f32", (2, 64)), "y": ("f32", (2, 64))}
    r = run_body(body, gm=gm, inputs={"x": x}, blocks=2)
    assert r.findings == [] and np.array_equal(r.outputs["y"], x + np.array([[0], [1]], np.float32))
    with pytest.raises(ExecutionError) as e:
        run_body(body.replace("(%y : !pto.ptr<f32>)+%g", "(%y : !pto.ptr<f32>)+%c0"), gm=gm, inputs={"x": x}, blocks=2)
    assert "different blocks (0 and 1)" in e.value.findings[0].message


# ------------------------------------------------------------------------------------------------
# a softmax-sized program: correct, race-free, and fast
# ------------------------------------------------------------------------------------------------

def softmax_program(R=64, C=256):
    """Row softmax on R x C f32 as the a2a3 headers build it (vector_isa.md §3.1, §3.3): the body of
    a function of @x and @y (:func:`softmax_gm`), one a2a3 op per line."""
    assert C % 64 == 0 and C >= 128 and R <= 255
    X, T, TMP, MAX, SUM, SCR = 0x0, 0x10000, 0x20000, 0x24000, 0x24100, 0x2E000
    rs = C // 8  # row stride in blocks
    L = []
    o = lambda line, op: L.append(f'  {line} loc("pto.{op[0]}"("softmax.pto":{op[1]}:3))')  # noqa: E731
    copy = "n_burst=%c{} len_burst=%c{} src_gap=%c0 dst_gap=%c0".format(R, C * 4)

    o(f"a2a3.copy_gm_to_ubuf dst=%c{X:#x} src=(%x : !pto.ptr<f32>)+%c0 {copy} right_pad=%c0 "
      "pad_value=(%f0 : f32) : f32", ("tload", 4))
    o("a2a3.set_flag MTE2 -> V id=%c0", ("tload", 4))
    o("a2a3.wait_flag MTE2 -> V id=%c0", ("trowmax", 5))

    def rowreduce(op, red, src, dst, tag):
        o("a2a3.set_mask_count", tag)
        o(f"a2a3.set_vector_count count=%c{R * 64}", tag)
        o(f"a2a3.{op} dst=%c{TMP:#x} src0=%c{src:#x} src1=%c{src + 256:#x} repeat=%c0 blk=%c1,%c1,%c1 "
          f"rep=%c8,%c{rs},%c{rs} : f32", tag)
        for k in range(2, C // 64):
            o("a2a3.pipe_barrier V", tag)
            o(f"a2a3.{op} dst=%c{TMP:#x} src0=%c{TMP:#x} src1=%c{src + 256 * k:#x} repeat=%c0 blk=%c1,%c1,%c1 "
              f"rep=%c8,%c8,%c{rs} : f32", tag)
        o("a2a3.pipe_barrier V", tag)
        o(f"a2a3.{red} dst=%c{dst:#x} src=%c{TMP:#x} repeat=%c0 blk=%c1 rep=%c1,%c8 : f32", tag)
        o("a2a3.set_mask_norm", tag)
        o("a2a3.set_vector_mask hi=%c-1 lo=%c-1", tag)
        o("a2a3.pipe_barrier V", tag)

    def rowexpand(op, src0, col, dst, tag):
        o(f"a2a3.vbrcb dst=%c{SCR:#x} src=%c{col:#x} repeat=%c{-(-R // 8)} blk=%c1 rep=%c8 : f32", tag)
        o("a2a3.pipe_barrier V", tag)
        for k in range(C // 64):
            o(f"a2a3.{op} dst=%c{dst + 256 * k:#x} src0=%c{src0 + 256 * k:#x} src1=%c{SCR:#x} "
              f"repeat=%c{R} blk=%c1,%c1,%c0 rep=%c{rs},%c{rs},%c1 : f32", tag)
        o("a2a3.pipe_barrier V", tag)

    rowreduce("vmax", "vcmax", X, MAX, ("trowmax", 5))
    rowexpand("vsub", X, MAX, T, ("trowexpandsub", 6))
    n = R * C // 64
    done = 0
    while done < n:
        k = min(255, n - done)
        o(f"a2a3.vexp dst=%c{T + done * 256:#x} src=%c{T + done * 256:#x} repeat=%c{k} blk=%c1,%c1 rep=%c8,%c8 : f32",
          ("texp", 7))
        done += k
    o("a2a3.pipe_barrier V", ("texp", 7))
    rowreduce("vadd", "vcadd", T, SUM, ("trowsum", 8))
    rowexpand("vdiv", T, SUM, T, ("trowexpanddiv", 9))
    o("a2a3.set_flag V -> MTE3 id=%c0", ("tstore", 10))
    o("a2a3.wait_flag V -> MTE3 id=%c0", ("tstore", 10))
    o(f"a2a3.copy_ubuf_to_gm dst=(%y : !pto.ptr<f32>)+%c0 src=%c{T:#x} {copy} : f32", ("tstore", 10))
    return "\n".join(L) + "\n"


def softmax_gm(R=64, C=256) -> dict:
    return {"x": ("f32", (R, C)), "y": ("f32", (R, C))}


def softmax(text, R=64, C=256):
    return a2a3_program(text, softmax_gm(R, C), name="softmax")


def test_softmax_64x256_is_right_and_race_free():
    prog = softmax(softmax_program())
    x = rng.standard_normal((64, 256)).astype(np.float32) * 4
    r = execute(prog, {"x": x})
    assert r.findings == []
    xd = x.astype(np.float64)
    want = np.exp(xd - xd.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    assert np.allclose(r.outputs["y"], want, rtol=1e-5, atol=1e-7)


def test_softmax_every_deleted_sync_is_found():
    text = softmax_program(R=16, C=128)
    lines = text.splitlines()
    x = rng.standard_normal((16, 128)).astype(np.float32)
    barriers = [i for i, ln in enumerate(lines) if "pipe_barrier V" in ln]
    unneeded = []
    for i in barriers:
        try:
            execute(softmax("\n".join(lines[:i] + lines[i + 1:]), 16, 128), {"x": x})
            unneeded.append(i)
        except ExecutionError as e:
            assert e.kinds == {"race"}
    # every barrier between dependent vector instructions is needed; only the last one, right
    # before set_flag V->MTE3 (which waits for every earlier V instruction), is redundant
    assert len(barriers) == 9 and unneeded == [barriers[-1]]
    assert "set_flag V -> MTE3" in lines[barriers[-1] + 1]
    for src, dst in (("MTE2", "V"), ("V", "MTE3")):
        s = next(i for i, ln in enumerate(lines) if f"set_flag {src} -> {dst}" in ln)
        w = next(i for i, ln in enumerate(lines) if f"wait_flag {src} -> {dst}" in ln)
        both = [ln for i, ln in enumerate(lines) if i not in (s, w)]
        with pytest.raises(ExecutionError) as e:
            execute(softmax("\n".join(both), 16, 128), {"x": x})
        assert e.value.kinds == {"race"}
        only_set = [ln for i, ln in enumerate(lines) if i != s]
        with pytest.raises(ExecutionError) as e:
            execute(softmax("\n".join(only_set), 16, 128), {"x": x})
        assert e.value.kinds == {"deadlock"}


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_first_checked_run_decides_the_later_runs(target):
    """A straight-line program's first checked run checks hazards and keeps its NumPy steps; a
    later run on other data replays them: both give np.maximum of their own inputs, the same
    trace, counts and cycle stats; the program without its flags reports the race on every run."""
    from pto_compiler import api

    text = """func.func @k(%x: !pto.tile<32x64xf32>, %s: !pto.tile<32x1xf32, blayout=col_major>) -> !pto.tile<32x64xf32> {
  %d = pto.trowexpandmax %x, %s : !pto.tile<32x64xf32>, !pto.tile<32x1xf32, blayout=col_major> -> !pto.tile<32x64xf32>
  return %d : !pto.tile<32x64xf32>
}
"""
    prog = api.compile(api.parse(text, "k.pto"), target, decode=True)
    runs = []
    for _ in range(2):
        x = rng.standard_normal((32, 64)).astype(np.float32)
        s = rng.standard_normal((32, 1)).astype(np.float32)
        r = execute(prog, {"x": x, "s": s})
        assert r.findings == []
        assert np.array_equal(r.outputs["result0"], np.maximum(x, s))
        runs.append(r)
    first, later = runs
    assert later.replay is first.replay is not None  # the later run replayed what the first kept
    assert [(e.opcode, e.pipe) for e in later.trace] == [(e.opcode, e.pipe) for e in first.trace]
    assert later.counts == first.counts
    assert later.cycle_stats(target).to_dict() == first.cycle_stats(target).to_dict()

    waits = [i for i, n in enumerate(prog.body) if isinstance(n, Instr) and n.opcode == "wait_flag"
             and n.args["dst_pipe"] == "V"]
    unsynced = dataclasses.replace(prog, body=prog.body[:waits[0]] + prog.body[waits[0] + 1:])
    for _ in range(2):
        with pytest.raises(ExecutionError) as e:
            execute(unsynced, {"x": x, "s": s})
        assert e.value.kinds == {"race", "sync"}  # (the set_flag left without its wait: "sync")


# ------------------------------------------------------------------------------------------------
# cycle model
# ------------------------------------------------------------------------------------------------

from pto_compiler.runtime.cycles import CYCLE_TABLES, estimate, simulate  # noqa: E402


def test_cycle_stats_of_softmax():
    prog = softmax(softmax_program())
    r = execute(prog, {"x": rng.standard_normal((64, 256)).astype(np.float32)})
    st = simulate(r.trace)
    d = st.to_dict()
    assert d["instruction_counts"] == r.counts
    assert d["instructions"] == sum(r.counts.values())
    assert set(d["pipes"]) == {"S", "V", "MTE2", "MTE3"}
    assert d["pipes"]["MTE2"]["instructions"] == 2 and d["pipes"]["V"]["instructions"] == sum(
        v for k, v in r.counts.items() if k not in ("copy_gm_to_ubuf", "copy_ubuf_to_gm")) - 2
    assert all(p["busy_cycles"] <= d["total_cycles"] for p in d["pipes"].values())
    # the three pipes run one after the other here (load, compute, store): no overlap
    assert d["total_cycles"] >= d["pipes"]["V"]["busy_cycles"] + d["pipes"]["MTE2"]["busy_cycles"]
    import json
    assert json.loads(st.to_json())["total_cycles"] == d["total_cycles"]
    assert "V" in st.to_text() and "total" in st.to_text()
    assert st.chrome_trace()["traceEvents"]


def test_cycles_scale_with_repeats_and_barriers_add_latency():
    t = CYCLE_TABLES["a2a3"].ops["vadd"]

    def total(body):
        return simulate(run_body(body, check=False).trace)

    a = total("a2a3.vadd dst=%c0x0 src0=%c0x0 src1=%c0x0 repeat=%c100 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n")
    b = total("a2a3.vadd dst=%c0x0 src0=%c0x0 src1=%c0x0 repeat=%c200 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n")
    assert b.pipes["V"].busy - a.pipes["V"].busy == pytest.approx(100 * t.per_unit)
    two = "a2a3.vadd dst=%c0x0 src0=%c0x0 src1=%c0x0 repeat=%c10 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n{}a2a3.vadd dst=%c0x1000 src0=%c0x0 src1=%c0x0 repeat=%c10 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n"
    free = total(two.format(""))
    barrier = total(two.format("a2a3.pipe_barrier V\n"))
    assert barrier.total_cycles - free.total_cycles >= t.latency


def test_double_buffering_overlaps_pipes():
    body = """\
  a2a3.set_flag MTE3 -> MTE2 id=%c0
  a2a3.set_flag MTE3 -> MTE2 id=%c1
  scf.for %i = %c0 to %c8 step %c1 {
    %e = arith.remsi %i, %c2 : index
    %in = arith.muli %e, %c0x2000 : index
    %out = arith.addi %in, %c0x4000 : index
    %g = arith.muli %i, %c8192 : index
    a2a3.wait_flag MTE3 -> MTE2 id=%e
    a2a3.copy_gm_to_ubuf dst=%in src=(%x : !pto.ptr<f32>)+%g n_burst=%c1 len_burst=%c8192 src_gap=%c0 dst_gap=%c0 right_pad=%c0 pad_value=(%f0 : f32) : f32
    a2a3.set_flag MTE2 -> V id=%e
    a2a3.wait_flag MTE2 -> V id=%e
    a2a3.vexp dst=%out src=%in repeat=%c32 blk=%c1,%c1 rep=%c8,%c8 : f32
    a2a3.set_flag V -> MTE3 id=%e
    a2a3.wait_flag V -> MTE3 id=%e
    a2a3.copy_ubuf_to_gm dst=(%y : !pto.ptr<f32>)+%g src=%out n_burst=%c1 len_burst=%c8192 src_gap=%c0 dst_gap=%c0 : f32
    a2a3.set_flag MTE3 -> MTE2 id=%e
  }
  a2a3.wait_flag MTE3 -> MTE2 id=%c0
  a2a3.wait_flag MTE3 -> MTE2 id=%c1
"""
    x = rng.standard_normal((8, 2048)).astype(np.float32)
    r = run_body(body, gm={"x": ("f32", (8, 2048)), "y": ("f32", (8, 2048))}, inputs={"x": x})
    assert r.findings == []
    assert np.array_equal(r.outputs["y"], np.exp(x.astype(np.float64)).astype(np.float32))
    st = simulate(r.trace)
    busy = sum(p.busy for n, p in st.pipes.items() if n != "S")
    assert st.total_cycles < busy  # MTE2, V and MTE3 work overlaps
    assert st.to_dict()["loop_trips"] == 8


def test_blocks_run_in_parallel_in_the_cycle_model():
    body = """\
  %b = a2a3.get_block_idx : index
  %bf = a2a3.get_block_idx : f32
  %g = arith.muli %b, %c256 : index
  a2a3.vector_dup dst=%c0x0 scalar=(%bf : f32) repeat=%c1 blk=%c1 rep=%c8 : f32
  a2a3.set_flag V -> MTE3 id=%c0
  a2a3.wait_flag V -> MTE3 id=%c0
  a2a3.copy_ubuf_to_gm dst=(%y : !pto.ptr<f32>)+%g src=%c0x0 n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 : f32
"""
    prog = a2a3_program(body, gm={"y": ("f32", (2, 64))})
    one, two = estimate(prog), estimate(prog, blocks=2)
    assert two.blocks == 2 and len(two.per_block_cycles) == 2
    assert two.total_cycles == pytest.approx(one.total_cycles)
    assert two.counts["copy_ubuf_to_gm"] == 2


# ------------------------------------------------------------------------------------------------
# builders, error type
# ------------------------------------------------------------------------------------------------

def test_sync_builders_and_error_type():
    from pto_compiler.diagnostics import PtocError
    s = Instr.make("set_flag", src_pipe="MTE2", dst_pipe="V", event_id=3)
    w = Instr.make("wait_flag", src_pipe="PIPE_MTE2", dst_pipe="PIPE_V", event_id=3)
    b = Instr.make("pipe_barrier", pipe="ALL")
    assert (s.pipe, w.pipe, b.pipe) == ("MTE2", "V", "S")
    assert s.to_text() == "MTE2 set_flag MTE2->V id=3" and b.to_text() == "S    pipe_barrier ALL"
    c = Instr.make("vconv", "f16", src_dtype="f32", dst=0x100, src=0, repeat=2, dst_rep_stride=4)
    assert c.to_text() == "V    vconv.f32.f16 dst=0x100 src=0x0 repeat=2 blk=1,1 rep=4,8"
    assert issubclass(ExecutionError, PtocError)


def test_burst_views_are_the_bytes_they_name():
    """_Bursts.view: a slice when the bursts are one run, NumPy's strided view otherwise; either
    way the (n, length) bytes the bursts name, writable through to the array."""
    from pto_compiler.runtime.executor import _Bursts

    for base, n, length, stride in [(0, 4, 16, 16), (8, 3, 10, 10), (5, 1, 7, 32), (0, 3, 8, 24), (4, 0, 8, 8)]:
        arr = np.arange(256, dtype=np.uint8)
        v = _Bursts(base, n, length, stride).view(arr)
        want = np.array([arr[base + i * stride:base + i * stride + length] for i in range(n)], np.uint8)
        assert v.shape == (n, length) and np.array_equal(v, want.reshape(n, length))
        v[...] = 0
        assert all(not arr[base + i * stride:base + i * stride + length].any() for i in range(n))


def test_a_run_ignores_fp_errors_and_restores_the_callers_state():
    """A block runs with NumPy's floating-point errors ignored (IEEE results, no warnings), and the
    caller's error state is back afterwards, also when the run stops at a finding."""
    ub = ub_with(a_0x0=np.ones(64, np.float32), b_0x100=np.zeros(64, np.float32))
    div = "a2a3.vdiv dst=%c0x200 src0=%c0x0 src1=%c0x100 repeat=%c1 blk=%c1,%c1,%c1 rep=%c8,%c8,%c8 : f32\n"
    with np.errstate(all="raise"):
        before = np.geterr()
        got = run_body(div, ub).ub
        assert np.geterr() == before
        with pytest.raises(ExecutionError):
            run_body(div.replace("%c0x200", "%c0x40000"), ub)
        assert np.geterr() == before
    assert np.isposinf(read(got, 0x200, 64, np.float32)).all()
