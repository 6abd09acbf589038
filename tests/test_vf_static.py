"""A VF's static plan (runtime/vf_batch.py StaticPlan, made by vf_executor.vf_plan) runs it as
the dynamic batched path and the per-trip interpreter do: the same UB bytes, counts, executed
stream (log), bytes read and written, and the same data steps on replay; where a launch's
addresses fail its checks, the launch runs through the dynamic path and finds what it finds."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.dialects import pto
from pto_compiler.runtime import vf_batch, vf_executor as vx
from pto_compiler.runtime.vf_executor import TileRef, VfFault, VfRunner, expand_log, run_tape
from pto_compiler.targets import ASCEND950

from test_vf_executor import tile, vfunc

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _kernel(op: str, rows: int, cols: int, dt: str = "f32", valid: str = "") -> str:
    """A one-op tile kernel (``op`` of x and s, a row-broadcast source, or of x alone)."""
    t = f"!pto.tile<{rows}x{cols}x{dt}{valid}>"
    s = f"!pto.tile<{rows}x1x{dt}, blayout=col_major>"
    if op.startswith("trowexpand"):
        return (f"func.func @k(%x: {t}, %s: {s}) -> {t} {{\n  %d = pto.{op} %x, %s : {t}, {s} -> {t}\n"
                f"  return %d : {t}\n}}\n")
    if op.startswith("trow"):
        return (f"func.func @k(%x: {t}) -> {s} {{\n  %d = pto.{op} %x : {t} -> {s}\n  return %d : {s}\n}}\n")
    return f"func.func @k(%x: {t}, %y: {t}) -> {t} {{\n  %d = pto.{op} %x, %y : {t}, {t} -> {t}\n  return %d : {t}\n}}\n"


KERNELS = {
    "rowexpandmax_128x128": _kernel("trowexpandmax", 128, 128),
    "rowexpandmax_16x256_f16": _kernel("trowexpandmax", 16, 256, "f16"),
    "rowexpandsub_8x64": _kernel("trowexpandsub", 8, 64),
    "rowexpandmax_40x128": _kernel("trowexpandmax", 40, 128),
    "rowexpandmax_12x96": _kernel("trowexpandmax", 12, 96),       # 96 columns: a masked tail register
    "rowexpandmax_8x200": _kernel("trowexpandmax", 8, 200),       # 3 registers and 8 lanes per row
    "rowexpandmax_4x1000": _kernel("trowexpandmax", 4, 1000),
    "add_8x72": _kernel("tadd", 8, 72),
    "max_16x48_f16": _kernel("tmax", 16, 48, "f16"),
    "add_valid_8x128": _kernel("tadd", 8, 128, valid=", valid=5x100"),
    "rowsum_8x128": _kernel("trowsum", 8, 128),
    "rowsum_8x2048": _kernel("trowsum", 8, 2048),                # a register carried from trip to trip
    "rowexpandmax_32x32": _kernel("trowexpandmax", 32, 32),       # a row's register reaches the next row
    "rowmax_16x64": _kernel("trowmax", 16, 64),
}
FILES = ["examples/softmax.pto", "examples/layernorm.pto", "examples/study/tail_broadcast.pto",
         "examples/study/reduce_max_ar.pto", "examples/study/mid_broadcast.pto"]


def _vfs(text: str, name: str = "k.pto") -> list:
    program = api.compile(api.parse(text, name), ASCEND950)
    return list(program.vf_funcs.values())


def _all_vfs() -> list:
    out = []
    for name, text in KERNELS.items():
        out += [(f"{name}:{i}", fn) for i, fn in enumerate(_vfs(text))]
    for f in FILES:
        out += [(f"{f}:{i}", fn) for i, fn in enumerate(_vfs((ROOT / f).read_text(), f))]
    return out


def _place(fn, addrs=None):
    """Tile arguments 256-byte aligned from 0x100 (or at ``addrs``), scalars 0.75 (floats) or 3."""
    args, at = [], 0x100
    for i, p in enumerate(fn.args):
        t = p.type
        if not isinstance(t, pto.TileLikeType):
            args.append(0.75 if "f" in str(t) else 3)
            continue
        n = t.rows * t.cols * t.elem_bytes
        args.append(TileRef(at if addrs is None else addrs[i], n))
        at += -(-n // 256) * 256
    return args


def _fp(touched):
    fp = touched.footprint()
    return [int(x) for x in fp.los], [int(x) for x in fp.his]


def _launch(fn, args, ub, mode):
    """Run ``fn`` on a copy of ``ub``: ``static`` (as launches run), ``dynamic`` (no static plan)
    or ``trips`` (no batching at all); returns (ub, result or the fault's finding, tape, runner)."""
    ub = ub.copy()
    plan = vx.vf_plan(fn)
    static, run_batched = plan.static, vx.run_batched
    try:
        if mode != "static":
            plan.static = None
        if mode == "trips":
            vx.run_batched = lambda *a: False
        r = VfRunner(ub, tape=[])
        try:
            with np.errstate(all="ignore"):
                res = r.call(fn, args)
        except VfFault as f:
            res = str(f.finding)
    finally:
        plan.static, vx.run_batched = static, run_batched
    return ub, res, r.tape, r


def _same_run(fn, args, seed=0):
    ub = np.random.default_rng(seed).integers(0, 256, 256 * 1024, dtype=np.uint8)  # (NaNs too)
    runs = {m: _launch(fn, args, ub, m) for m in ("static", "dynamic", "trips")}
    ref_ub, ref, _, _ = runs["trips"]
    for mode, (got_ub, res, tape, r) in runs.items():
        assert isinstance(res, str) == isinstance(ref, str), mode
        if isinstance(res, str):
            assert res == ref, mode
            continue
        assert np.array_equal(got_ub, ref_ub), mode
        assert res.counts == ref.counts and list(res.counts) == list(runs["dynamic"][1].counts), mode
        assert expand_log(res.log) == expand_log(ref.log), mode
        assert _fp(res.reads) == _fp(ref.reads) and _fp(res.writes) == _fp(ref.writes), mode
        assert res.log == runs["dynamic"][1].log, mode  # the same loops written as repeated trips
        replay = ub.copy()  # the kept data steps again, on the same data
        with np.errstate(all="ignore"):
            run_tape(tape, type("M", (), {"ub": replay})(), None)
        assert np.array_equal(replay, ref_ub), mode
    return runs


VFS = _all_vfs()


@pytest.mark.parametrize("name,fn", VFS, ids=[n for n, _ in VFS])
def test_static_plan_runs_as_the_trips_do(name, fn):
    _same_run(fn, _place(fn))


def test_the_common_vfs_have_static_plans():
    static = {name for name, fn in VFS if vx.vf_plan(fn).static is not None}
    for name in ("rowexpandmax_128x128:0", "rowexpandmax_16x256_f16:0", "rowexpandsub_8x64:0", "add_8x72:0",
                 "add_valid_8x128:0", "max_16x48_f16:0", "rowmax_16x64:0", "rowsum_8x128:0",
                 "examples/study/reduce_max_ar.pto:0"):
        assert name in static, name
    # rows of 96 or 200 lanes: a row's last register reaches into the next row, whose first
    # register stores there (no batched run); layernorm's VFs with a scalar parameter
    for name in ("rowexpandmax_12x96:0", "rowexpandmax_8x200:0", "examples/layernorm.pto:0"):
        assert name not in static, name
    assert sum(n.startswith("examples/softmax.pto") for n in static) == 5


MASKED = f"""
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c200 = arith.constant 200 : index
  %n = arith.constant 150 : i32
  scf.for %r = %c0 to %c4 step %c1 {{
    %row = arith.muli %r, %c200 : index
    %b = vf.load_align %s[%r], dist = BRC_B32 : {tile('f32', 4)}
    %k = vf.load_align %s[%c0], dist = BLK : {tile('f32', 4)}
    %last = scf.for %i = %c0 to %c3 step %c1 iter_args(%count = %n) -> (i32) {{
      %mask, %rest = vf.update_mask %count : !vf.mask<b32>
      %o = arith.muli %i, %c64 : index
      %off = arith.addi %row, %o : index
      %vx = vf.load_align %x[%off] : {tile('f32', 800)}
      %vs = vf.add %vx, %b, %mask : !vf.reg<64xf32>
      %vm = vf.mul %vs, %k, %mask merge_mode = MERGING : !vf.reg<64xf32>
      %vr = vf.reduce_max %vm, %mask : !vf.reg<64xf32>
      vf.store_align %z[%off], %vm, %mask : {tile('f32', 800)}
      vf.store_align %m[%r], %vr, %mask, dist = ONEPT : {tile('f32', 8)}
      scf.yield %rest : i32
    }}
  }}"""


def _masked(body: str = MASKED, m: int = 8):
    return vfunc(f"%x: {tile('f32', 800)}, %s: {tile('f32', 4)}, %z: {tile('f32', 800)}, %m: {tile('f32', m)}", body)


def test_masked_tails_merging_reductions_and_onept_stores():
    """150 lanes in 3 registers (the last masked), a BRC and a BLK load, MERGING, a reduction
    stored lane 0 by ONEPT (each trip of a row to the same element: run trip by trip) and
    rows 200 elements apart."""
    fn = _masked()
    assert vx.vf_plan(fn).static is None  # (the ONEPT stores of a row's trips meet)
    _same_run(fn, _place(fn))
    apart = _masked(MASKED.replace("%m[%r]", "%m[%off]").replace(tile('f32', 8), tile('f32', 800)), 800)
    assert vx.vf_plan(apart).static is not None
    _same_run(apart, _place(apart))


def test_a_misaligned_or_aliased_launch_runs_through_the_dynamic_path():
    fn = _vfs(KERNELS["add_8x72"])[0]
    assert vx.vf_plan(fn).static is not None
    good = _place(fn)
    n = good[0].nbytes
    for addrs in ([0x100 + 4, 0x1000, 0x2000],       # a misaligned load: the per-trip run's fault
                  [0x100, 0x100, 0x100],             # every argument the same tile: in place
                  [0x100, 0x200, 0x100 + 256],       # the destination overlapping a source's later rows
                  [0x100, 0x1000, 256 * 1024 - n + 32]):  # a store past the UB
        args = _place(fn, addrs)
        assert vx.vf_plan(fn).static.bind(args, 256 * 1024) is None
        _same_run(fn, args)


def test_a_loop_the_plan_finds_unbatched_is_one_the_dynamic_path_does_not_batch():
    """The top-level loop a failed plan names (VfPlan.unbatched) runs trip by trip without trying
    _Batch first: _Batch, tried anyway, gives up on it (at every launch address tried)."""
    named = [(name, fn) for name, fn in VFS if vx.vf_plan(fn).unbatched is not None]
    assert {"rowsum_8x2048:0", "rowexpandmax_32x32:0", "rowexpandmax_12x96:0"} <= {n for n, _ in named}
    for name, fn in named:
        plan = vx.vf_plan(fn)
        loop, tried = plan.unbatched, []
        run_batched = vx.run_batched
        try:
            plan.unbatched = None
            vx.run_batched = lambda r, op, *a: tried.append((op, run_batched(r, op, *a))) or tried[-1][1]
            for addrs in (None, [0x2000 * (i + 1) + 32 * i for i in range(len(fn.args))]):
                ub = np.zeros(256 * 1024, np.uint8)
                with np.errstate(all="ignore"):
                    try:
                        VfRunner(ub).call(fn, _place(fn, addrs))
                    except VfFault:
                        pass
        finally:
            plan.unbatched, vx.run_batched = loop, run_batched
        assert tried and all(not ok for op, ok in tried if op is loop), name


def test_first_lanes_are_the_masks_numpy_makes():
    for n, lanes in ((0, 64), (1, 64), (37, 64), (64, 64), (128, 128), (256, 256), (3, 8), (9, 8), (-2, 8)):
        want = np.zeros(lanes, bool)
        want[:n] = True
        got = vx.first_lanes(n, lanes)
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
        assert not got.flags.writeable and vx.all_lanes(got) == bool(want.all())


def _in_place(second_store: bool):
    """x = x + x in place over 4 registers; with ``second_store`` also y = x * x of the x loaded
    before the first store wrote it (a register read after a store to its bytes)."""
    then = (f"      %u = vf.mul %v, %v, %full : !vf.reg<64xf32>\n"
            f"      vf.store_align %y[%off], %u, %full : {tile('f32', 256)}\n") if second_store else ""
    return vfunc(f"%x: {tile('f32', 256)}, %y: {tile('f32', 256)}", f"""
  %full = vf.create_mask ALL : !vf.mask<b32>
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  scf.for %off = %c0 to %c256 step %c64 {{
    %v = vf.load_align %x[%off] : {tile('f32', 256)}
    %w = vf.add %v, %v, %full : !vf.reg<64xf32>
    vf.store_align %x[%off], %w, %full : {tile('f32', 256)}
{then}    scf.yield
  }}""")


@pytest.mark.parametrize("second_store", [False, True])
def test_a_register_load_is_a_view_only_where_no_later_step_writes_its_bytes(second_store):
    """A VF that stores only in its last step keeps its loads as views of the UB (no copy);
    one that stores before a step reading a loaded register copies them, so that register still
    holds the bytes as loaded: both as the trips run them, replayed too."""
    fn = _in_place(second_store)
    assert vx.vf_plan(fn).static is not None
    args = _place(fn)
    _same_run(fn, args)
    ub = np.arange(256 * 1024, dtype=np.uint32).astype(np.float32).view(np.uint8)[:256 * 1024].copy()
    got_ub = _launch(fn, args, ub, "static")[0]
    x = ub[args[0].addr:args[0].addr + 1024].view(np.float32)
    assert np.array_equal(got_ub[args[0].addr:args[0].addr + 1024].view(np.float32), x + x)
    if second_store:
        assert np.array_equal(got_ub[args[1].addr:args[1].addr + 1024].view(np.float32), x * x)
    steps = vx.vf_plan(fn).static.bind(args, ub.size)
    regs: dict = {}
    steps[0](ub, regs)
    assert np.shares_memory(next(iter(regs.values())), ub) != second_store
