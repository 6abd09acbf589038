"""The cube half: matmul semantics against an independent NumPy reference, domain moves, the cube
memories per target (targets.py), their planning (pto-plan-memory) and verification.

The reference here is plain NumPy written next to each case (``a.astype(f32) @ b.astype(f32)``
for floats, int64 then wrapped for i8 -> i32); the golden model (runtime/reference.py +
runtime/cube.py) must agree with it within the float-sum tolerance (floats) or bit for bit (ints).
"""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.runtime import reference as R
from pto_compiler.targets import A2A3, ASCEND950

from cube_kernels import COMBOS, inputs_for, matmul_kernel, numpy_matmul
from test_sync_proof import _without

F32 = np.float32


def assert_matmul(got, want, acc: str, K: int):
    if acc == "i32":
        np.testing.assert_array_equal(got, want)
    else:
        # the f32 reference sums in f32 in NumPy's order, the model exactly: K roundings apart
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * K)


@pytest.mark.parametrize("ab,acc", COMBOS)
@pytest.mark.parametrize("M,K,N,kt,vm,vn", [(16, 32, 16, 32, None, None), (32, 128, 32, 32, None, None),
                                            (32, 64, 48, 32, 19, 37), (16, 256, 16, 64, 1, None)])
def test_golden_matmul_matches_numpy(ab, acc, M, K, N, kt, vm, vn):
    if ab == "i8" and kt % 32:
        kt = 32
    mod = api.parse(matmul_kernel(ab, acc, M, K, N, kt, vm=vm, vn=vn))
    ins = inputs_for(ab, vm or M, vn or N, K, acc=acc)
    out = R.evaluate(mod, ins)
    assert_matmul(out["c"], numpy_matmul(ins["a"], ins["b"], acc), acc, K)


@pytest.mark.parametrize("ab,acc", [("f16", "f32"), ("i8", "i32")])
def test_golden_matmul_bias(ab, acc):
    mod = api.parse(matmul_kernel(ab, acc, 16, 64, 32, 32, bias=True))
    ins = inputs_for(ab, 16, 32, 64, bias=True, acc=acc)
    out = R.evaluate(mod, ins)
    assert_matmul(out["c"], numpy_matmul(ins["a"], ins["b"], acc, ins["bias"]), acc, 64)


def test_golden_i32_accumulator_wraps():
    mod = api.parse(matmul_kernel("i8", "i32", 16, 32768 // 256 * 256, 16, 256))
    K = 32768
    ins = {"a": np.full((16, K), -128, np.int8), "b": np.full((K, 16), -128, np.int8),
           "c": np.zeros((16, 16), np.int32)}
    out = R.evaluate(mod, ins)
    want = np.int64(K * 128 * 128)  # 2**29: fits; now twice over the range
    assert int(out["c"][0, 0]) == want
    mod2 = api.parse(matmul_kernel("i8", "i32", 16, 4 * K, 16, 256))
    ins2 = {"a": np.full((16, 4 * K), -128, np.int8), "b": np.full((4 * K, 16), -128, np.int8),
            "c": np.zeros((16, 16), np.int32)}
    out2 = R.evaluate(mod2, ins2)
    assert int(out2["c"][0, 0]) == (4 * K * 128 * 128) - (1 << 32)  # 2**31 wraps to -2**31


def test_golden_fixpipe_f16_store_and_relu():
    text = matmul_kernel("f16", "f32", 16, 32, 16, 32).replace(
        "pto.tstore ins(%acc", "pto.tstore ins(%acc").replace(
        "outs(%pc : !pto.partition_tensor_view<16x16xf32>)",
        "outs(%pc : !pto.partition_tensor_view<16x16xf32>) {reluPreMode = #pto<relu_pre_mode normal_relu>}")
    mod = api.parse(text)
    ins = inputs_for("f16", 16, 16, 32)
    out = R.evaluate(mod, ins)
    want = np.maximum(numpy_matmul(ins["a"], ins["b"], "f32"), 0)
    np.testing.assert_allclose(out["c"], want, rtol=1e-5, atol=1e-4)
    assert (out["c"] >= 0).all()


EXTRACT = """module {
  func.func @ex(%a: !pto.ptr<f16>, %o: !pto.ptr<f16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %va = pto.make_tensor_view %a, shape = [%c32, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf16>
    %vo = pto.make_tensor_view %o, shape = [%c16, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf16>
    %pa = pto.partition_view %va, offsets = [%c0, %c0], sizes = [%c32, %c64] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<32x64xf16>
    %po = pto.partition_view %vo, offsets = [%c0, %c0], sizes = [%c16, %c32] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<16x32xf16>
    %m = pto.alloc_tile : !pto.tile_buf<mat, 32x64xf16, blayout=col_major, slayout=row_major>
    %s = pto.alloc_tile : !pto.tile_buf<mat, 16x32xf16, blayout=col_major, slayout=row_major>
    pto.tload ins(%pa : !pto.partition_tensor_view<32x64xf16>) outs(%m : !pto.tile_buf<mat, 32x64xf16, blayout=col_major, slayout=row_major>)
    pto.textract ins(%m, %c16, %c32 : !pto.tile_buf<mat, 32x64xf16, blayout=col_major, slayout=row_major>, index, index) outs(%s : !pto.tile_buf<mat, 16x32xf16, blayout=col_major, slayout=row_major>)
    pto.tstore ins(%s : !pto.tile_buf<mat, 16x32xf16, blayout=col_major, slayout=row_major>) outs(%po : !pto.partition_tensor_view<16x32xf16>)
    return
  }
}
"""


def test_golden_textract():
    a = np.arange(32 * 64, dtype=np.float32).astype(np.float16).reshape(32, 64)
    out = R.evaluate(api.parse(EXTRACT), {"a": a, "o": np.zeros((16, 32), np.float16)})
    np.testing.assert_array_equal(out["o"], a[16:32, 32:64])


# ---- targets, planning, verification -------------------------------------------------------

def test_cube_memories_per_target():
    a2 = {s.name: s.bytes for s in A2A3.spaces}
    a5 = {s.name: s.bytes for s in ASCEND950.spaces}
    assert a2 == {"UB": 192 << 10, "L1": 512 << 10, "L0A": 64 << 10, "L0B": 64 << 10, "L0C": 128 << 10,
                  "BT": 1 << 10, "FB": 2 << 10}
    assert a5 == {"UB": 256 << 10, "L1": 512 << 10, "L0A": 64 << 10, "L0B": 64 << 10, "L0C": 256 << 10,
                  "BT": 4 << 10, "FB": 4 << 10}
    assert A2A3.space_of("left").name == "L0A" and ASCEND950.space_of("acc").align == 512


def _placed(text: str, target="a2a3"):
    from pto_compiler import pipeline
    from pto_compiler.targets import lookup_target

    placed = pipeline.compile_module(api.parse(text), lookup_target(target), stop_after="placed")
    return {op.result.name_hint: op.attributes["ub_addr"].value.data
            for op in placed.walk() if op.name == "pto.alloc_tile"}


def test_plan_memory_places_each_cube_space_on_its_own():
    addr = _placed(matmul_kernel("f16", "f32", 32, 128, 32, 32))
    # mat tiles share L1 (two 2 KiB tiles live at once), the others each start their own memory
    assert sorted((addr["ma"], addr["mb"])) == [0, 2048]
    assert addr["la"] == 0 and addr["rb"] == 0 and addr["acc"] == 0


TWO_LEFT = """func.func @k(%a: !pto.ptr<f16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c96 = arith.constant 96 : index
  %c256 = arith.constant 256 : index
  %va = pto.make_tensor_view %a, shape = [%c96, %c256], strides = [%c256, %c1] : !pto.tensor_view<?x?xf16>
  %pa = pto.partition_view %va, offsets = [%c0, %c0], sizes = [%c96, %c256] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<96x256xf16>
  %ma = pto.alloc_tile : !pto.tile_buf<mat, 96x256xf16, blayout=col_major, slayout=row_major>
  %la1 = pto.alloc_tile ADDR1: !pto.tile_buf<left, 96x256xf16, slayout=row_major>
  %la2 = pto.alloc_tile ADDR2: !pto.tile_buf<left, 96x256xf16, slayout=row_major>
  %rb = pto.alloc_tile : !pto.tile_buf<right, 256x16xf16, slayout=col_major>
  %acc = pto.alloc_tile : !pto.tile_buf<acc, 96x16xf32, blayout=col_major, slayout=row_major, fractal=1024>
  pto.tload ins(%pa : !pto.partition_tensor_view<96x256xf16>) outs(%ma : !pto.tile_buf<mat, 96x256xf16, blayout=col_major, slayout=row_major>)
  pto.tmov ins(%ma : !pto.tile_buf<mat, 96x256xf16, blayout=col_major, slayout=row_major>) outs(%la1 : !pto.tile_buf<left, 96x256xf16, slayout=row_major>)
  pto.tmov ins(%ma : !pto.tile_buf<mat, 96x256xf16, blayout=col_major, slayout=row_major>) outs(%la2 : !pto.tile_buf<left, 96x256xf16, slayout=row_major>)
  pto.tmatmul ins(%la1, %rb : !pto.tile_buf<left, 96x256xf16, slayout=row_major>, !pto.tile_buf<right, 256x16xf16, slayout=col_major>) outs(%acc : !pto.tile_buf<acc, 96x16xf32, blayout=col_major, slayout=row_major, fractal=1024>)
  pto.tmatmul ins(%la2, %rb : !pto.tile_buf<left, 96x256xf16, slayout=row_major>, !pto.tile_buf<right, 256x16xf16, slayout=col_major>) outs(%acc : !pto.tile_buf<acc, 96x16xf32, blayout=col_major, slayout=row_major, fractal=1024>)
  return
}
"""


def test_plan_memory_l0a_overflow_is_located():
    # two 96 x 256 f16 left tiles (48 KiB each) live at once: more than L0A's 64 KiB
    with pytest.raises(PtocError) as e:
        _placed(TWO_LEFT.replace("ADDR1", "").replace("ADDR2", ""))
    assert "L0A over capacity" in str(e.value) and "65536 bytes" in str(e.value)


def test_plan_memory_l0a_manual_overlap_is_located():
    fixed = TWO_LEFT.replace("ADDR1", "addr = %x0 ").replace("ADDR2", "addr = %x1 ").replace(
        "  %c0 = arith.constant 0 : index\n",
        "  %c0 = arith.constant 0 : index\n  %x0 = arith.constant 0 : i64\n  %x1 = arith.constant 512 : i64\n")
    with pytest.raises(PtocError) as e:
        _placed(fixed)
    assert "overlaps" in str(e.value) and "while both are live" in str(e.value)


def test_manual_l0c_address_past_the_end_is_located():
    text = matmul_kernel("f16", "f32", 16, 32, 16, 32).replace(
        "%acc = pto.alloc_tile :", "%a0 = arith.constant 131072 : i64\n    %acc = pto.alloc_tile addr = %a0 :")
    with pytest.raises(PtocError) as e:
        _placed(text)
    msg = str(e.value)
    assert "L0C" in msg and "past the end" in msg
    assert _placed(text, "ascend950")["acc"] == 131072  # 256 KiB of L0C on ascend950


@pytest.mark.parametrize("bad,msg", [
    ("!pto.tile_buf<acc, 16x16xf16, blayout=col_major, slayout=row_major, fractal=1024>",
     "(acc, left, right) element types (f16, f16, f16)"),
])
def test_verify_matmul_dtype_triple(bad, msg):
    text = matmul_kernel("f16", "f32", 16, 32, 16, 32).replace(
        "!pto.tile_buf<acc, 16x16xf32, valid=16x16, blayout=col_major, slayout=row_major, fractal=1024>", bad)
    with pytest.raises(PtocError) as e:
        api.verify(api.parse(text), A2A3)
    assert msg in str(e.value)


def test_verify_tmov_domains():
    text = EXTRACT.replace("pto.textract ins(%m, %c16, %c32 : !pto.tile_buf<mat, 32x64xf16, blayout=col_major, "
                           "slayout=row_major>, index, index)",
                           "pto.tmov ins(%m : !pto.tile_buf<mat, 32x64xf16, blayout=col_major, slayout=row_major>)")
    with pytest.raises(PtocError) as e:
        api.verify(api.parse(text), A2A3)
    assert "has no move from loc=mat to loc=mat" in str(e.value)


# ---- lowering and execution (both targets) ----------------------------------------------------

def _run(text: str, ins: dict, target: str):
    prog = api.compile(api.parse(text), target)
    return prog, api.run(prog, ins)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("ab,acc", COMBOS)
def test_executor_matmul_matches_numpy(target, ab, acc):
    M, K, N, kt = 32, 128, 48, 64 if ab != "i8" else 64
    text = matmul_kernel(ab, acc, M, K, N, kt, vm=29, vn=40)
    ins = inputs_for(ab, 29, 40, K, acc=acc)
    _, res = _run(text, ins, target)
    assert not res.findings
    outputs = res.outputs
    assert_matmul(outputs["c"], numpy_matmul(ins["a"], ins["b"], acc), acc, K)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_executor_bias_and_nz_layouts_in_l1(target):
    text = matmul_kernel("bf16", "f32", 16, 64, 32, 32, bias=True)
    ins = inputs_for("bf16", 16, 32, 64, bias=True)
    prog, res = _run(text, ins, target)
    assert not res.findings
    outputs = res.outputs
    assert_matmul(outputs["c"], numpy_matmul(ins["a"], ins["b"], "f32", ins["bias"]), "f32", 64)
    listing = prog.to_text()
    assert "dst_layout=nz" in listing and "mmad_bias.f32" in listing and "load_cbuf_to_bt" in listing


def test_tile_offsets_nz_fractals():
    from pto_compiler.runtime.cube import tile_offsets

    # f16 Nz: 16 x 16 fractals (16 rows x 32 B), fractals column-major: (r, c) of a 32x32 tile
    off = tile_offsets(32, 32, "nz", 512, 2) // 2
    assert off[0, 0] == 0 and off[0, 15] == 15 and off[1, 0] == 16
    assert off[16, 0] == 256          # the second fractal down the first column of fractals
    assert off[0, 16] == 512          # the first fractal of the second column
    assert sorted(off.reshape(-1)) == list(range(32 * 32))
    # Zn (right tiles): fractals row-major, each column-major inside
    zn = tile_offsets(32, 32, "zn", 512, 2) // 2
    assert zn[0, 1] == 16 and zn[1, 0] == 1 and zn[0, 16] == 256


def _sync_instrs(prog):
    from pto_compiler.runtime.program import If, Instr, Loop

    out = []

    def walk(body):
        for n in body:
            if isinstance(n, Loop):
                walk(n.body)
            elif isinstance(n, If):
                walk(n.then_body)
                walk(n.else_body)
            elif isinstance(n, Instr) and n.opcode in ("set_flag", "wait_flag"):
                out.append(n)
    walk(prog.body)
    return out


def _after_loop(prog):
    from pto_compiler.runtime.program import Loop

    i = max(k for k, n in enumerate(prog.body) if isinstance(n, Loop))
    return prog.body[i + 1:]


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_removing_any_cube_sync_is_a_race_or_deadlock(target):
    from pto_compiler.runtime.executor import execute

    text = (REPO / "examples" / "matmul.pto").read_text()
    prog = api.compile(api.parse(text, "matmul.pto"), target)
    ins = inputs_for("f16", 32, 32, 128)
    ok = execute(prog, ins, raise_on_findings=False)
    assert not ok.findings
    np.testing.assert_allclose(ok.outputs["c"], numpy_matmul(ins["a"], ins["b"], "f32"), rtol=1e-5, atol=2e-3)
    cube = {"MTE1", "M", "FIX"}
    # every sync touching MTE1/M/FIX except the drain waits after the K loop, which order nothing
    # that follows (removing one leaves an event set at exit: not a race or a deadlock)
    after_loop = _after_loop(prog)
    syncs = [i for i in _sync_instrs(prog) if {i.args["src_pipe"], i.args["dst_pipe"]} & cube
             and not (i.opcode == "wait_flag" and i in after_loop and i.args["dst_pipe"] != "FIX")]
    assert len(syncs) >= 10
    for ins_ in syncs:
        r = execute(_without(prog, {id(ins_)}), ins, raise_on_findings=False)
        kinds = {f.kind for f in r.findings}
        assert kinds & {"race", "deadlock"}, f"removing {ins_} went unnoticed"


REPO = __import__("pathlib").Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_section_bodies_run_inline(target):
    """``pto.section.cube`` runs its body in program order: the same program as without it."""
    text = matmul_kernel("f16", "f32", 16, 64, 16, 32)
    head, body = text.split("    %c0 = arith.constant 0 : index\n", 1)
    body, tail = body.rsplit("    return\n", 1)
    sectioned = head + "    pto.section.cube {\n    %c0 = arith.constant 0 : index\n" + body + "    }\n    return\n" + tail
    ins = inputs_for("f16", 16, 16, 64)
    want = numpy_matmul(ins["a"], ins["b"], "f32")
    assert_matmul(R.evaluate(api.parse(sectioned), ins)["c"], want, "f32", 64)
    prog = api.compile(api.parse(sectioned), target)
    plain = api.compile(api.parse(text), target)
    strip = lambda p: [line.split("  ;")[0] for line in p.to_text().splitlines()]  # noqa: E731
    assert strip(prog) == strip(plain)
    res = api.run(prog, ins)
    assert not res.findings
    assert_matmul(res.outputs["c"], want, "f32", 64)


@pytest.mark.parametrize("old,new,msg", [
    ("!pto.tile_buf<right, 32x16xf16, valid=32x16, slayout=col_major>",
     "!pto.tile_buf<right, 32x16xf16, valid=32x16, slayout=row_major>",
     "a loc=right tile must have blayout=row_major, slayout=col_major (got blayout=row_major, slayout=row_major)"),
    ("!pto.tile_buf<acc, 16x16xf32, valid=16x16, blayout=col_major, slayout=row_major, fractal=1024>",
     "!pto.tile_buf<acc, 16x16xf32, valid=16x16, slayout=row_major, fractal=1024>",
     "a loc=acc tile must have blayout=col_major, slayout=row_major"),
    ("!pto.tile_buf<mat, 16x32xf16, valid=16x32, blayout=col_major, slayout=row_major>",
     "!pto.tile_buf<mat, 24x32xf16, valid=16x32, blayout=col_major, slayout=row_major>",
     "a 24x32 f16 loc=mat tile is not a whole number of its 16x16 fractals"),
])
def test_verify_target_cube_layouts(old, new, msg):
    text = matmul_kernel("f16", "f32", 16, 32, 16, 32)
    assert old in text
    with pytest.raises(PtocError) as e:
        api.verify(api.parse(text.replace(old, new)), A2A3)
    assert msg in str(e.value)


def test_verify_target_cube_capacity_and_vec_to_mat():
    big = "!pto.tile_buf<acc, 256x256xf32, blayout=col_major, slayout=row_major, fractal=1024>"  # 256 KiB
    text = f"func.func @k() {{\n  %t = pto.alloc_tile : {big}\n  return\n}}\n"
    with pytest.raises(PtocError) as e:
        api.verify(api.parse(text), A2A3)
    assert "does not fit in the a2a3 L0C (128 KiB)" in str(e.value)
    api.verify(api.parse(text), ASCEND950)  # 256 KiB of L0C there
    mv = ("func.func @k() {\n  %v = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf16>\n"
          "  %m = pto.alloc_tile : !pto.tile_buf<mat, 16x16xf16, blayout=col_major, slayout=row_major>\n"
          "  pto.tmov ins(%v : !pto.tile_buf<vec, 16x16xf16>) outs(%m : !pto.tile_buf<mat, 16x16xf16, "
          "blayout=col_major, slayout=row_major>)\n  return\n}\n")
    with pytest.raises(PtocError) as e:
        api.verify(api.parse(mv), A2A3)
    assert "has no vec -> mat move on a2a3 (ascend950 only)" in str(e.value)
    api.verify(api.parse(mv), ASCEND950)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_mixed_matmul_softmax_example(target):
    text = (REPO / "examples" / "mixed_matmul_softmax.pto").read_text()
    rng = np.random.default_rng(3)
    q = rng.uniform(-1, 1, (16, 64)).astype(np.float16)
    k = rng.uniform(-1, 1, (64, 64)).astype(np.float16)
    ins = {"q": q, "k": k, "s": np.zeros((16, 64), F32), "p": np.zeros((16, 64), F32)}
    s = q.astype(F32) @ k.astype(F32).T
    e = np.exp(s - s.max(axis=1, keepdims=True))
    res = api.run(api.compile(api.parse(text, "mixed_matmul_softmax.pto"), target), ins)
    assert not res.findings
    np.testing.assert_allclose(res.outputs["s"], s, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(res.outputs["p"], e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("ab", ["f16", "bf16", "f32"])
def test_matmul_nan_inf_and_signed_zero(ab, target):
    """IEEE cases in a 16 x 32 x 16 matmul against NumPy (f32 products summed in f32, whose
    NaN/inf rules are IEEE's too): a NaN in A poisons its row; an inf in A times a zero of B is
    NaN, times a nonzero an inf of the product's sign; a row of -0 gives +0 everywhere (the
    stated rule: an exact-zero sum is +0).  Finite elements within the float-sum tolerance,
    NaN/inf/zero-sign exactly; the executor's output matches the golden model bit for bit."""
    mod = api.parse(matmul_kernel(ab, "f32", 16, 32, 16, 32))
    ins = inputs_for(ab, 16, 16, 32, seed=5)
    a, b = ins["a"], ins["b"]
    a[0, 3] = np.nan
    a[1, :] = 0
    a[1, 0] = np.inf
    b[0, 2] = 0
    a[2, :] = -0.0
    b[:, 7] = np.abs(b[:, 7]) * -1
    with np.errstate(invalid="ignore"):
        want = a.astype(F32) @ b.astype(F32)
    res = api.check(mod, target, ins)
    got, ref = res.outputs["c"], res.reference["c"]
    assert res.ok, [c.line() for c in res.comparisons]
    np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))
    assert np.isnan(ref[0]).all() and np.isnan(want[0]).all()
    assert np.isnan(ref[1, 2]) and np.isnan(want[1, 2])
    row1 = np.delete(np.arange(16), 2)
    np.testing.assert_array_equal(ref[1, row1], want[1, row1])  # +-inf by the sign of b[0, j]
    assert (ref[2] == 0).all() and not np.signbit(ref[2]).any()
    finite = np.isfinite(want)
    finite[:3] = False
    np.testing.assert_allclose(ref[finite], want[finite], rtol=1e-5, atol=1e-5 * 32)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("ab,acc", [("f16", "f32"), ("i8", "i32")])
def test_atomic_add_store_of_acc(ab, acc, target):
    """``atomicType = atomic_add`` on a store out of acc: GM += the converted acc value, in the GM
    element type (pto_isa.md §4.8 TSTORE: "AtomicAdd does +="): c ends as c0 + a @ b."""
    text = matmul_kernel(ab, acc, 16, 64, 32, 32)
    store = text.index("pto.tstore ins(%acc")
    end = text.index("\n", store)
    text = text[:end] + " {atomicType = #pto<atomic_type atomic_add>}" + text[end:]
    ins = inputs_for(ab, 16, 32, 64, seed=9, acc=acc)
    c0 = (np.arange(16 * 32).reshape(16, 32) % 7 - 3).astype(DT_ACC[acc])
    ins["c"] = c0.copy()
    res = api.check(api.parse(text), target, ins)
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    want = numpy_matmul(ins["a"], ins["b"], acc)
    if acc == "i32":
        np.testing.assert_array_equal(res.outputs["c"], (c0.astype(np.int64) + want).astype(np.int32))
    else:
        np.testing.assert_allclose(res.outputs["c"], c0 + want, rtol=1e-5, atol=1e-5 * 64)


DT_ACC = {"f32": np.float32, "i32": np.int32}


NO_SEMANTICS_CASES = {
    "tmov.fp": ("""
    %acc = pto.alloc_tile : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024>
    %fp = pto.alloc_tile : !pto.tile_buf<scaling, 1x16xui64>
    %v = pto.alloc_tile : !pto.tile_buf<vec, 16x16xi8>
    pto.tmov.fp ins(%acc, %fp : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024>, !pto.tile_buf<scaling, 1x16xui64>) outs(%v : !pto.tile_buf<vec, 16x16xi8>)""",
                "implementation-defined"),
    "tmatmul.mx": ("""
    %a = pto.alloc_tile : !pto.tile_buf<left, 16x64xf16, slayout=row_major>
    %as = pto.alloc_tile : !pto.tile_buf<scaling, 16x2xui8>
    %b = pto.alloc_tile : !pto.tile_buf<right, 64x32xf16, slayout=col_major>
    %bs = pto.alloc_tile : !pto.tile_buf<scaling, 2x32xui8>
    %c = pto.alloc_tile : !pto.tile_buf<acc, 16x32xf32, blayout=col_major, slayout=row_major, fractal=1024>
    pto.tmatmul.mx ins(%a, %as, %b, %bs : !pto.tile_buf<left, 16x64xf16, slayout=row_major>, !pto.tile_buf<scaling, 16x2xui8>, !pto.tile_buf<right, 64x32xf16, slayout=col_major>, !pto.tile_buf<scaling, 2x32xui8>) outs(%c : !pto.tile_buf<acc, 16x32xf32, blayout=col_major, slayout=row_major, fractal=1024>)""",
                   "target-defined"),
}


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("name", sorted(NO_SEMANTICS_CASES))
def test_cube_ops_without_semantics_say_why(name, target):
    """tmov.fp / tstore.fp and tmatmul.mx parse and verify but the pages do not define their values:
    the lowering and the golden model both stop at the op, located, naming the reason (on A5, PTOAS's
    verifier already rejects an mx matmul of f16 operands: it takes fp8, which ptoc does not have)."""
    body, why = NO_SEMANTICS_CASES[name]
    text = f"module {{\n  func.func @k() {{{body}\n    return\n  }}\n}}\n"
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if f"pto.{name} ins" in ln)
    mod = api.parse(text, "nosem.pto")
    compiled = "expects A5 mx operands a and b to use fp8" if name == "tmatmul.mx" and target == "ascend950" else why
    for call, reason in ((lambda: api.compile(mod, target), compiled), (lambda: api.reference(mod, {}), why)):
        with pytest.raises(PtocError) as e:
            call()
        assert f"nosem.pto:{line}:" in str(e.value) and reason in str(e.value), str(e.value)


ACC_I32 = "!pto.tile_buf<acc, 16x16xi32, blayout=col_major, slayout=row_major, fractal=1024>"


def acc_i32_to_f16_store(pre_quant: bool) -> str:
    """An i32 acc stored to a 16x16 f16 GM view (the tstore at line 9), with a pre-quant scalar
    operand (then at line 10) or without."""
    pre = "    %pre = arith.constant 7 : i64\n" if pre_quant else ""
    ins = f"%acc : {ACC_I32}, %pre : i64" if pre_quant else f"%acc : {ACC_I32}"
    return f"""module {{
  func.func @k(%o: !pto.ptr<f16>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
{pre}    %v = pto.make_tensor_view %o, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf16>
    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<16x16xf16>
    %acc = pto.alloc_tile : {ACC_I32}
    pto.tstore ins({ins}) outs(%p : !pto.partition_tensor_view<16x16xf16>)
    return
  }}
}}
"""


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_i32_acc_stored_as_f16_without_quant_is_located_no_semantics(target):
    """PTOAS accepts an i32 acc stored to f16 GM with no pre-quant scalar (corpus tstore_forms_emitc);
    the pages convert i32 -> f16 only through quantisation, so both models stop there, located."""
    mod = api.parse(acc_i32_to_f16_store(pre_quant=False), "i32f16.pto")
    for call in (lambda: api.compile(mod, target), lambda: api.reference(mod, {"o": np.zeros((16, 16), np.float16)})):
        with pytest.raises(PtocError) as e:
            call()
        assert "i32f16.pto:9:" in str(e.value) and "acc i32 stored as f16" in str(e.value), str(e.value)


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_pre_quant_store_is_located_no_semantics(target):
    with pytest.raises(PtocError) as e:
        api.compile(api.parse(acc_i32_to_f16_store(pre_quant=True), "pq.pto"), target)
    assert "pq.pto:10:" in str(e.value) and "pre-quant operand: no semantics" in str(e.value)


def subtile_vec_kernel(insert: bool) -> str:
    """TINSERT b (8 x 16) into a (32 x 32) at (8, 16), or TEXTRACT the 8 x 16 block at (8, 16) of a:
    vec -> vec, within the UB (A5 keeps it on PIPE_V: corpus tinsert_a5_vec_pipe_selection)."""
    big, small = "!pto.tile_buf<vec, 32x32xf16>", "!pto.tile_buf<vec, 8x16xf16>"
    move = (f"pto.tinsert ins(%tb, %c8, %c16 : {small}, index, index) outs(%ta : {big})" if insert else
            f"pto.textract ins(%ta, %c8, %c16 : {big}, index, index) outs(%tb : {small})")
    out, ot, oshape = ("%ta", big, "32x32") if insert else ("%tb", small, "8x16")
    return f"""module {{
  func.func @k(%a: !pto.ptr<f16>, %b: !pto.ptr<f16>, %o: !pto.ptr<f16>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %va = pto.make_tensor_view %a, shape = [%c32, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf16>
    %vb = pto.make_tensor_view %b, shape = [%c8, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf16>
    %pa = pto.partition_view %va, offsets = [%c0, %c0], sizes = [%c32, %c32] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<32x32xf16>
    %pb = pto.partition_view %vb, offsets = [%c0, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<8x16xf16>
    %ta = pto.alloc_tile : {big}
    %tb = pto.alloc_tile : {small}
    pto.tload ins(%pa : !pto.partition_tensor_view<32x32xf16>) outs(%ta : {big})
    pto.tload ins(%pb : !pto.partition_tensor_view<8x16xf16>) outs(%tb : {small})
    {move}
    %vo = pto.make_tensor_view %o, shape = [%c{oshape.split("x")[0]}, %c{oshape.split("x")[1]}], strides = [%c{oshape.split("x")[1]}, %c1] : !pto.tensor_view<?x?xf16>
    %po = pto.partition_view %vo, offsets = [%c0, %c0], sizes = [%c{oshape.split("x")[0]}, %c{oshape.split("x")[1]}] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<{oshape}xf16>
    pto.tstore ins({out} : {ot}) outs(%po : !pto.partition_tensor_view<{oshape}xf16>)
    return
  }}
}}
"""


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("insert", [True, False])
def test_subtile_within_the_ub_matches_numpy(insert, target):
    rng = np.random.default_rng(8)
    a = rng.uniform(-4, 4, (32, 32)).astype(np.float16)
    b = rng.uniform(-4, 4, (8, 16)).astype(np.float16)
    o = np.zeros((32, 32) if insert else (8, 16), np.float16)
    res = api.check(api.parse(subtile_vec_kernel(insert)), target, {"a": a, "b": b, "o": o})
    assert res.ok, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    want = a.copy()
    if insert:
        want[8:16, 16:32] = b
    else:
        want = a[8:16, 16:32]
    np.testing.assert_array_equal(res.outputs["o"], want)
