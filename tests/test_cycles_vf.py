"""The ascend950 cycle model: the study's counters, dependency bubbles, --stats json, --trace."""

import json

import numpy as np
import pytest

from pto_compiler import api, pipeline
from pto_compiler.runtime import cycles
from pto_compiler.targets import TARGETS

_CHAIN = """
module attributes {pto.target_arch = "a5"} {
  func.func @k(%x: !pto.ptr<f32>, %z: !pto.ptr<f32>) attributes {pto.entry} {
    vf.func @body(%xt: !pto.tile_buf<vec, 16x64xf32>, %zt: !pto.tile_buf<vec, 1x64xf32>) {
      %m = vf.create_mask ALL : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %c16 = arith.constant 16 : index
      %ninf = arith.constant -3.0e+38 : f32
      %init = vf.dup %ninf, %m
      %r = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %init) -> (!vf.reg<64xf32>) {
        %off = arith.muli %i, %c64 : index
        %v = vf.load_align %xt[%off]
        %n = vf.max %acc, %v, %m
        scf.yield %n : !vf.reg<64xf32>
      }
      vf.store_align %zt[0], %r, %m
    }
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %zv = pto.make_tensor_view %z, shape = [%c1, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    %zp = pto.partition_view %zv, offsets = [%c0, %c0], sizes = [%c1, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<1x64xf32>
    %xt = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32>
    %zt = pto.alloc_tile : !pto.tile_buf<vec, 1x64xf32>
    pto.tload ins(%xp : !pto.partition_tensor_view<16x64xf32>) outs(%xt : !pto.tile_buf<vec, 16x64xf32>)
    vf.call @body(%xt, %zt)
    pto.tstore ins(%zt : !pto.tile_buf<vec, 1x64xf32>) outs(%zp : !pto.partition_tensor_view<1x64xf32>)
    return
  }
}
"""


def _stats(text: str, blocks: int = 1):
    module = api.parse(text, "k.pto")
    prog = pipeline.compile_module(module, TARGETS["ascend950"], vf_opt="none")  # the chain as written
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    res = pipeline.run_program(prog, {"x": x, "z": np.zeros((1, 64), np.float32)}, blocks=blocks)
    return res


def test_study_counters_and_chain_bubbles():
    res = _stats(_CHAIN)
    np.testing.assert_array_equal(res.outputs["z"][0], np.arange(15 * 64, 16 * 64, dtype=np.float32))
    v = res.stats.vf
    assert v["vf_count"] == 1 and v["push_pb"] == cycles.VF_PARAMS["push_pb"][0]
    assert v["rveclp"] == 1  # one loop instance entered
    assert v["rvecld"] == 16 * cycles.VF_EVENT_CYCLES["vf.load_align"]
    # the loop's 16 vmax form one chain: the body waits lat_max per trip, not 1/dispatch_width
    p = {k: val for k, (val, _s) in cycles.VF_PARAMS.items()}
    assert v["pushq_vf"] >= p["launch"] + 16 * p["lat_max"]
    slow = cycles.vf_timing(_log(res), {"lat_max": 10.0})["pushq_vf"]
    assert slow >= p["launch"] + 16 * 10.0


_CHAIN_VF = """builtin.module {
  vf.func @chain(%xt: !pto.tile_buf<vec, 16x64xf32>, %zt: !pto.tile_buf<vec, 1x64xf32>) {
    %m = vf.create_mask ALL : !vf.mask<b32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c16 = arith.constant 16 : index
    %init = vf.load_align %xt[0] : !pto.tile_buf<vec, 16x64xf32>
    %r = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %init) -> (!vf.reg<64xf32>) {
      %off = arith.muli %i, %c64 : index
      %v = vf.load_align %xt[%off] : !pto.tile_buf<vec, 16x64xf32>
      %n = vf.max %acc, %v, %m : !vf.reg<64xf32>
      scf.yield %n : !vf.reg<64xf32>
    }
    vf.store_align %zt[0], %r, %m : !pto.tile_buf<vec, 1x64xf32>
  }
}
"""


def test_bitcast_is_free():
    """A round trip through another element type (vf.bitcast: the same register reread as other
    lanes, no instruction) costs no cycle: the chain takes as long with it as without."""
    casts = _CHAIN_VF.replace(
        "%n = vf.max %acc, %v, %m", "%u = vf.bitcast %v : !vf.reg<64xf32> -> !vf.reg<64xi32>\n"
        "      %w = vf.bitcast %u : !vf.reg<64xi32> -> !vf.reg<64xf32>\n      %n = vf.max %acc, %w, %m")
    assert casts != _CHAIN_VF
    plain, cast = (next(o for o in api.parse_printed(t).walk() if o.name == "vf.func") for t in (_CHAIN_VF, casts))
    assert len([o for o in cast.walk() if o.name == "vf.bitcast"]) == 2
    p = {k: val for k, (val, _s) in cycles.VF_PARAMS.items()}
    assert cycles.vf_static_cycles(plain) >= p["launch"] + 16 * p["lat_max"]  # the chain shows
    assert cycles.vf_static_cycles(cast) == cycles.vf_static_cycles(plain)


def _log(res):
    (e,) = [t for t in res.exec_result.trace if t.opcode == "vf_call"]
    return e.vf_log


def test_a_unit_bound_loop_extrapolates_as_every_trip_scheduled():
    """softmax's row max and row sum loops are EX-bound: EX runs ever further ahead of the front,
    so its busy intervals pile up until those no instruction can meet are dropped; then the
    trips repeat and the rest are extrapolated.  The counters equal those of every trip
    scheduled one by one (the written-out stream is never extrapolated)."""
    from pathlib import Path

    from pto_compiler.runtime import reference as golden
    from pto_compiler.runtime.vf_executor import expand_log

    text = (Path(__file__).resolve().parents[1] / "examples" / "softmax.pto").read_text()
    module = api.parse(text, "softmax.pto")
    prog = pipeline.compile_module(module, TARGETS["ascend950"])
    res = pipeline.run_program(prog, pipeline.gm_inputs(golden.make_inputs(module, 0)))
    logs = [t.vf_log for t in res.exec_result.trace if t.opcode == "vf_call"]
    assert len(logs) == 5
    for log in logs:
        got, want = cycles.vf_timing(log), cycles.vf_timing(expand_log(log))
        assert got.keys() == want.keys()
        for k in want:
            assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-9), k


def test_stats_json_and_trace():
    res = _stats(_CHAIN, blocks=2)
    d = res.stats.to_dict()
    c = d["cycles"]
    assert {"pushq_vf", "vf_count", "push_pb", "total", "pipes"} <= set(c)
    assert c["vf_count"] == 2  # one launch per block
    assert all(0 <= p["utilization"] <= 1 for p in d["pipes"].values())
    tr = res.stats.chrome_trace()
    ev = tr["traceEvents"]
    assert {e["name"] for e in ev if e["ph"] == "X" and e["tid"] == 1} >= {"body"}
    assert {e["args"]["name"] for e in ev if e.get("name") == "process_name"} == {"block 0", "block 1"}
    us = 1 / (res.stats.clock_ghz * 1000)
    (call,) = [e for e in ev if e["name"] == "body" and e["pid"] == 0]
    assert abs(call["dur"] - call["args"]["cycles"] * us) <= 0.005 * us  # cycles rounded to 0.01
    json.dumps(tr)


def test_vf_opt_passes_keep_results_and_cut_cycles():
    """The default pipeline (VF optimisation passes) against --vf-opt=none on the study's tile-level
    cases: same outputs (bit for bit except sums, within the float-sum tolerance), fewer PUSHQ VF."""
    import pathlib

    from pto_compiler.runtime import reference as golden

    root = pathlib.Path(__file__).resolve().parents[1] / "examples" / "study"
    for name in ("reduce_max_ra", "reduce_sum_ra", "reduce_max_ar", "reduce_sum_ar", "head_broadcast", "axpy",
                 "tail_broadcast", "mid_broadcast"):
        module = api.parse((root / f"{name}.pto").read_text(), f"{name}.pto")
        gm = pipeline.gm_inputs(golden.prepare_inputs(module, 3))
        runs = {opt: pipeline.run_program(pipeline.compile_module(module, TARGETS["ascend950"], vf_opt=opt), gm)
                for opt in ("none", "default")}
        out = "y" if "broadcast" in name else "z"
        a, b = (np.asarray(runs[o].outputs[out], np.float64) for o in ("none", "default"))
        if "sum" not in name:
            np.testing.assert_array_equal(a, b)
        else:
            assert np.all(np.abs(a - b) <= 1e-3 * (np.abs(a) + 1))
        assert runs["default"].stats.vf["pushq_vf"] < runs["none"].stats.vf["pushq_vf"]


def test_vf_opt_none_launches_per_row_as_the_study_naive():
    """--vf-opt=none launches a broadcast op's VF once per row, as the study's naive variants do
    (seeds/001: tail_axis_1 and head_axis_1 17 launches, mid_axis_1 24); the default pipeline moves
    the row loop into the VF, and mid's loop over m of sub-tiles at addresses computed from m
    too (1 launch each).  Both forms compute what the golden model computes."""
    import pathlib

    from pto_compiler.runtime import reference as golden

    root = pathlib.Path(__file__).resolve().parents[1] / "examples" / "study"
    for name, naive, fused in (("tail_broadcast", 17, 1), ("head_broadcast", 17, 1), ("mid_broadcast", 24, 1)):
        module = api.parse((root / f"{name}.pto").read_text(), f"{name}.pto")
        values = golden.prepare_inputs(module, 5)
        want = pipeline.golden_outputs(module, values)
        for opt, launches in (("none", naive), ("default", fused)):
            res = pipeline.run_program(pipeline.compile_module(module, TARGETS["ascend950"], vf_opt=opt),
                                       pipeline.gm_inputs(values))
            assert not res.findings and all(c.ok for c in pipeline.compare_outputs(res.outputs, want, set()))
            assert res.stats.vf["vf_count"] == launches, (name, opt)


def test_scalar_ub_read_waits_for_the_vf_and_the_launch_for_the_read():
    """seeds/001 tail_axis_1 (GetValue(j) before each launch): the Main Scalar's UB read starts
    once the VF in flight is done, and the next launch, whose PB push carries the value, waits
    ``sload`` for it; that wait is PUSHQ VF time."""
    import pathlib

    text = (pathlib.Path(__file__).resolve().parents[1] / "lit_tests" / "vf" / "fuse_getval_launches.pto").read_text()
    prog = pipeline.compile_module(api.parse(text, "k.pto"), TARGETS["ascend950"], vf_opt="none")
    gm = {"x": np.ones((4, 64), np.float32), "a": np.arange(8, dtype=np.float32).reshape(1, 8),
          "y": np.zeros((4, 64), np.float32)}
    res = pipeline.run_program(prog, gm)
    np.testing.assert_array_equal(res.outputs["y"], 1 + np.arange(4, dtype=np.float32)[:, None] * np.ones((1, 64)))
    ev = [e for e in res.stats.events if e[2] in ("ld_ub", "row_vf")]
    assert [e[2] for e in ev] == ["ld_ub", "row_vf"] * 4
    sload = cycles.VF_PARAMS["sload"][0]
    for k in range(0, 8, 2):
        ld, call = ev[k], ev[k + 1]
        if k:
            assert ld[3] >= ev[k - 1][4]  # the read starts after the previous VF ended
        assert ld[5] == ld[4] + sload and call[4] - call[3] >= ld[5] - call[3] + cycles.VF_PARAMS["launch"][0]
    assert res.stats.vf["pushq_vf"] >= 4 * sload


@pytest.mark.parametrize("op,dt,cols,valid", [
    ("trowmax", "f32", 2560, 2530), ("trowsum", "f32", 2560, 2501), ("trowmin", "i32", 2048, 2047),
    ("trowsum", "f16", 4096, 3001), ("trowmax", "i8", 8192, 7000), ("trowmin", "i16", 4096, 4096)])
def test_long_rows_fold_into_several_accumulators(op, dt, cols, valid):
    """A row of more chunks than vf-pairwise-fold unrolls (16) stays a chain of MERGING folds;
    vf-multi-accumulator splits it into k accumulators (prologue chunks whole, the leftover chunks
    into accumulator 0, all merged over every lane): the result is NumPy's (sums within the
    float-sum tolerance), in fewer modelled cycles than the single chain of --vf-opt=none."""
    from pto_compiler.runtime import reference as golden

    tile = f"!pto.tile<3x{cols}x{dt}, valid=3x{valid}>"
    out = f"!pto.tile<3x{32 // {'f32': 4, 'i32': 4, 'f16': 2, 'i16': 2, 'i8': 1}[dt]}x{dt}, valid=3x1>"
    text = f"func.func @k(%a: {tile}) -> {out} {{\n  %d = pto.{op} %a : {tile} -> {out}\n  return %d : {out}\n}}\n"
    module = api.parse(text, "k.pto")
    values = golden.make_inputs(module, 7)
    x = np.asarray(values["a"])[:, :valid]
    want = {"trowmax": x.max(axis=1), "trowmin": x.min(axis=1),
            "trowsum": x.astype(np.float64).sum(axis=1)}[op]
    runs = {}
    for opt in ("none", "default"):
        vfm = pipeline.compile_module(module, TARGETS["ascend950"], stop_after="vf", vf_opt=opt)
        chains = [o for o in vfm.walk() if o.name == "scf.for" and sum(
            1 for v in o.results if v.type.name == "vf.reg") >= 2]
        assert bool(chains) == (opt == "default"), opt  # k accumulators only with the passes
        runs[opt] = res = pipeline.run_program(pipeline.compile_module(module, TARGETS["ascend950"], vf_opt=opt),
                                               pipeline.gm_inputs(values))
        got = np.asarray(res.outputs["result0"])[:, 0]
        assert not res.findings
        if op == "trowsum":
            assert np.all(np.abs(got.astype(np.float64) - want) <= 1e-3 * (np.abs(want) + 1)), (opt, got, want)
        else:
            np.testing.assert_array_equal(got, want)
    assert runs["default"].stats.vf["pushq_vf"] < runs["none"].stats.vf["pushq_vf"]


def test_sub_tiles_at_loop_dependent_addresses_fuse_only_when_affine():
    """vf-fuse-launches fuses a loop of launches on pto.tassign sub-tiles whose addresses are
    affine in the loop variable (lit_tests/vf/fuse_swept_launches.pto; also with x's and y's row
    pairs taken in reverse, (1 - m) * 512: one launch); an address computed with a remainder is
    not affine to the pass, and the loop keeps its launches.  Each form gives NumPy's y: row pair
    m of y = x's same rows + the row of a of the trip that wrote them."""
    import pathlib

    text = (pathlib.Path(__file__).resolve().parents[1] / "lit_tests" / "vf" / "fuse_swept_launches.pto").read_text()
    x = np.arange(4 * 64, dtype=np.float32).reshape(4, 64)
    a = np.arange(2 * 64, dtype=np.float32).reshape(2, 64) * 0.5
    xo = "%xo = arith.muli %m, %c512 : index"
    reverse = text.replace(xo, "%rm = arith.subi %c1, %m : index\n    %xo = arith.muli %rm, %c512 : index")
    parity = text.replace(xo, "%pm = arith.remui %m, %c2 : index\n    %xo = arith.muli %pm, %c512 : index")
    assert xo in text and reverse != text and parity != text
    for src, launches, a_rows in ((text, 1, [0, 0, 1, 1]), (reverse, 1, [1, 1, 0, 0]), (parity, 2, [0, 0, 1, 1])):
        prog = pipeline.compile_module(api.parse(src, "k.pto"), TARGETS["ascend950"])
        res = pipeline.run_program(prog, {"x": x, "a": a, "y": np.zeros((4, 64), np.float32)})
        assert not res.findings and res.stats.vf["vf_count"] == launches
        np.testing.assert_array_equal(res.outputs["y"], x + a[a_rows])


@pytest.mark.parametrize("name", ["mid_axis_4_vfloop_mbn", "tail_axis_2_distbrc", "head_axis_2_vfloop_nm",
                                  "elemwise_axpy_baseline"])
def test_push_pb_of_the_decoding_equals_the_walk(name):
    """vf_timing takes a launch's PB pushes from the offsets its own decoding of the VF collected
    (one walk of the VF, not two); a decoding from an earlier call (the IR may have changed since)
    is never trusted: PB pushes are then counted by pb_pushes' own walk.  Both equal the walk's."""
    from pathlib import Path

    from pto_compiler.runtime import reference as golden

    text = (Path(__file__).resolve().parents[1] / "bench" / "study" / f"{name}.pto").read_text()
    module = api.parse(text, f"{name}.pto")
    prog = pipeline.compile_module(module, TARGETS["ascend950"], vf_opt="none")
    res = pipeline.run_program(prog, pipeline.gm_inputs(golden.make_inputs(module, 0)))
    log = [t for t in res.exec_result.trace if t.opcode == "vf_call"][0].vf_log
    fn = cycles._vf_func(log)
    per_push = cycles.VF_PARAMS["push_pb"][0]
    want = per_push * cycles.pb_pushes(fn, cycles.VF_PARAMS["pb_regs"][0])
    for op in cycles._nested_ops(fn, []):  # a fresh decoding, by this call
        op.__dict__.pop("_vft", None)
    assert cycles.vf_timing(log)["push_pb"] == want
    assert cycles.vf_timing(log)["push_pb"] == want  # decoded before: the walk
    fn._vf_offsets = (fn._vf_offsets[0], [], {})  # a stale decoding's offsets are not read
    assert cycles.vf_timing(log)["push_pb"] == want
    if name == "mid_axis_4_vfloop_mbn":
        assert want == 2 * per_push  # three strides: two pushes (test_study)


@pytest.mark.parametrize("name", ["mid_axis_4_vfloop_mbn", "head_axis_3_vfloop_mn", "reduce_max_ra_unroll",
                                  "tail_axis_2_distbrc"])
def test_operands_ready_by_the_front_never_delay(name):
    """The timer leaves out of a VF op's timed operands the values ready no later than the front
    (induction variables, address arithmetic on them), and does not run such arithmetic that only
    VF ops read in a written-out loop: timing every operand and every op gives the same figures, to
    the last bit, for the extrapolated and the written-out stream."""
    from pathlib import Path

    from pto_compiler.runtime import reference as golden
    from pto_compiler.runtime.vf_executor import expand_log

    text = (Path(__file__).resolve().parents[1] / "bench" / "study" / f"{name}.pto").read_text()
    module = api.parse(text, f"{name}.pto")
    prog = pipeline.compile_module(module, TARGETS["ascend950"], vf_opt="none")
    res = pipeline.run_program(prog, pipeline.gm_inputs(golden.make_inputs(module, 0)))
    logs = [t.vf_log for t in res.exec_result.trace if t.opcode == "vf_call"]
    fn = cycles._vf_func(logs[0])
    fast = [cycles.vf_timing(log) for log in logs] + [cycles.vf_timing(expand_log(logs[0]))]
    pruned = 0
    for op in cycles._nested_ops(fn, []):  # (_vft: cycles._decode_ops)
        d = op._vft
        if d[0] == cycles._VF:
            pruned += len(d[8]) - len(d[1])
            op._vft = (d[0], d[8], *d[2:])  # every operand not ready at 0 timed
        elif d[0] == cycles._FREE:
            op._vft = (*d[:3], False)  # no arithmetic hidden
    assert pruned  # (the study's loops address by their induction variables)
    assert fast == [cycles.vf_timing(log) for log in logs] + [cycles.vf_timing(expand_log(logs[0]))]


def _reference_timing(stream: list, P: dict) -> dict:
    """The VF timer's definition (vf_timing's docstring), interpreted op by op on a stream with
    every loop written out (``expand_log``): no compiled plan, no busy interval ever dropped, every
    operand of every op read, every op run."""
    from bisect import insort

    from pto_compiler.runtime.vf_executor import LOG_ENTER, LOG_EXIT, LOG_OP, LOG_TRIP

    def parent(op):
        return op.parent.parent.parent

    front = end = 0.0
    ready, pend, issued = {}, {}, []
    busy = {u: [] for u in ("LD", "ST", "MSK", "EX")}
    c = dict.fromkeys(cycles.VF_COUNTERS, 0.0)
    for kind, op in stream:
        name = op.name
        if kind == LOG_OP and name == "scf.yield":
            if parent(op) in pend:
                pend[parent(op)] = [ready.get(v, 0.0) for v in op.operands]
        elif kind == LOG_OP and name.startswith("vf.") and name != "vf.bitcast":
            unit = cycles._VF_UNIT.get(name, "EX")
            occ = P[cycles._VF_OCC[name]] if name in cycles._VF_OCC else 1.0
            front += 1.0 / P["dispatch_width"]
            t = max([front] + [ready.get(v, 0.0) for v in op.operands])
            if len(issued) >= int(P["window"]):
                t = max(t, issued[-int(P["window"])])
            for s, e in busy[unit]:  # (sorted, never overlapping)
                if e > t and s < t + occ:
                    t = e
            insort(busy[unit], (t, t + occ))
            issued.append(t)
            c["rvec" + {"MSK": "ex"}.get(unit, unit.lower())] += cycles.VF_EVENT_CYCLES.get(name, 1)
            for r in op.results:
                ready[r] = t + P[cycles._VF_LAT.get(name, "lat_other")]
            end = max(end, t + P[cycles._VF_LAT.get(name, "lat_other")], t + occ)
        elif kind == LOG_OP:  # arith, scf.for, vf.bitcast: ready with their operands
            for r in op.results:
                ready[r] = max([0.0] + [ready.get(v, 0.0) for v in op.operands])
        elif kind == LOG_ENTER:
            body = op.body.blocks[0]
            innermost = not any(o.name == "scf.for" for o in body.ops)
            scalars = sum(1 for v in op.operands[3:] if not v.type.name.startswith("vf."))
            c["rveclp"] += P["rveclp"]
            c["rvecsu"] += P["rvecsu"] * ((innermost or parent(op).name == "vf.func") + scalars)
            front += P["loop_entry"]
            pend[op] = [ready.get(v, 0.0) for v in op.operands[3:]]
        elif kind == LOG_TRIP:
            ready[op.body.blocks[0].args[0]] = front
            ready.update(zip(op.body.blocks[0].args[1:], pend[op]))
        elif kind == LOG_EXIT:
            ready.update(zip(op.results, pend.pop(op)))
    c["vf_count"] = 1
    c["pushq_vf"] = P["launch"] + max(end, front)
    del c["push_pb"]  # (pb_pushes: test_push_pb_is_the_walks_at_every_call)
    return c


def test_the_timer_is_its_definition_on_written_out_streams():
    """vf_timing of a stream with every loop written out equals the definition interpreted op by op
    (:func:`_reference_timing`), every counter to the last bit, on the study's VFs, the chain
    kernel and the 128x128 trowexpandmax, with the fitted parameters and others; a stream whose
    loops have at most STEADY_TRIPS + 1 trips (written out by the timer itself) times as its
    written-out form."""
    import pathlib
    import sys

    from pto_compiler.runtime import reference as golden
    from pto_compiler.runtime.vf_executor import LOG_LOOP, expand_log

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
    from exec_speed import ROWEXPANDMAX  # (bench/ is not a package)

    texts = [_CHAIN, ROWEXPANDMAX]
    for name in ["mid_axis_4_vfloop_mbn", "head_axis_3_vfloop_mn", "reduce_max_ra_unroll", "tail_axis_2_distbrc",
                 "reduce_sum_ar_binary", "elemwise_axpy_unroll", "reduce_max_ar_pragma"]:
        texts.append((pathlib.Path(__file__).resolve().parents[1] / "bench" / "study" / f"{name}.pto").read_text())
    base = {k: v for k, (v, _src) in cycles.VF_PARAMS.items()}
    params = [None, {"window": 4, "dispatch_width": 2.0}, {"dispatch_width": 5.0, "lat_max": 7.3, "rveclp": 0.3,
                                                          "occ_reduce_max": 3.0, "loop_entry": 0.5}]
    checked = short = 0
    for text in texts:
        module = api.parse(text, "<k>")
        res = pipeline.run_program(pipeline.compile_module(module, TARGETS["ascend950"], vf_opt="none"),
                                   pipeline.gm_inputs(golden.make_inputs(module, 0)))
        for log in [t.vf_log for t in res.exec_result.trace if t.opcode == "vf_call"][:3]:
            full = expand_log(log)
            for p in params:
                got = cycles.vf_timing(full, p)
                want = _reference_timing(full, {**base, **(p or {})})
                assert {k: v for k, v in got.items() if k != "push_pb"} == want, (text[:40], p)
                checked += 1
            trips = [x[2] for k, x in _loops(log) if k == LOG_LOOP]
            if trips and max(trips) <= cycles.STEADY_TRIPS + 1:
                assert cycles.vf_timing(log) == cycles.vf_timing(full)
                short += 1
    assert checked >= 30 and short


def _loops(log: list):
    from pto_compiler.runtime.vf_executor import LOG_LOOP

    for kind, x in log:
        yield kind, x
        if kind == LOG_LOOP:
            yield from _loops(x[1])


def _scheduled(trace: list, target: str, fed: bool) -> tuple:
    """One block of ``trace`` scheduled alone (``_alone``), or fed as ``_run_together`` feeds the
    cores of a block: the makespan, every figure and event."""
    busy, instrs = dict.fromkeys(cycles.PIPE_ORDER, 0.0), dict.fromkeys(cycles.PIPE_ORDER, 0)
    counts, events, vfc, flows, repeats = {}, [], {}, [], []
    table = cycles.CYCLE_TABLES[target]
    entries = sorted(trace, key=lambda e: e.seq)
    if fed:
        s = cycles._Scheduler(table, busy, instrs, counts, events, 0, vfc, flows, repeats, {})
        cycles._run_together({0: (s, s.feed(entries, trace))})
        end = s.finish()
    else:
        end = cycles._alone(table, busy, instrs, counts, events, 0, vfc, flows, repeats, entries, trace)
    return end, busy, instrs, counts, events, vfc, flows, repeats


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_a_block_scheduled_alone_is_the_block_fed(target):
    """One core: ``simulate`` issues the trace in a plain loop (its usual entries inline), without
    the generator that lets the cores of a mixed kernel wait for each other; every figure and event
    is the same (a batched loop's TraceRepeat, flags, barriers and on ascend950 a VF launch included)."""
    import pathlib
    import sys

    from pto_compiler.runtime import reference as golden
    from pto_compiler.runtime.executor import TraceRepeat

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
    from exec_speed import ROWEXPANDMAX, tiled_loop  # (bench/ is not a package)

    softmax = (pathlib.Path(__file__).resolve().parents[1] / "examples" / "softmax.pto").read_text()
    seen_repeat = False
    for text in (tiled_loop(16), ROWEXPANDMAX, softmax):
        module = api.parse(text, "<k>")
        values = golden.make_inputs(module, 0)
        res = pipeline.run_program(pipeline.compile_module(module, TARGETS[target]), pipeline.gm_inputs(values))
        trace = res.exec_result.trace
        seen_repeat |= any(isinstance(e, TraceRepeat) for e in trace)
        assert _scheduled(trace, target, False) == _scheduled(trace, target, True)
    assert seen_repeat


def test_xdsl_links_read_directly_are_xdsls():
    """``_offset_only`` reads xDSL's use list directly; it answers what the definition over
    ``v.uses`` answers, for every value of the study's VFs; ``_parent_op`` is ``parent_op()``."""
    from pathlib import Path

    def by_uses(v) -> bool:
        uses = list(v.uses)
        return bool(uses) and all(
            u.index == 1 if u.operation.name.startswith("vf.") else
            u.operation.name == "arith.addi" and by_uses(u.operation.results[0]) for u in uses)

    checked = 0
    for path in sorted((Path(__file__).resolve().parents[1] / "bench" / "study").glob("*.pto")):
        module = api.parse(path.read_text(), path.name)
        for fn in module.walk():
            assert cycles._parent_op(fn) is fn.parent_op()
            if fn.name != "vf.func":
                continue
            values = list(fn.args) + [r for op in cycles._nested_ops(fn, []) for r in op.results]
            values += [a for op in cycles._nested_ops(fn, []) for region in op.regions
                       for block in region.blocks for a in block.args]
            for v in values:
                assert cycles._offset_only(v) == by_uses(v)
                checked += 1
    assert checked > 100


def test_a_written_out_loop_fused_times_as_entered_and_exited(monkeypatch):
    """A loop of few trips is written out with its hand-overs fused (entered + first trip, yield +
    next trip, yield + exit: ``_written_out``); timing it with the separate entries (enter, trip,
    yield, exit through the timer's ``pend``) gives the same figures to the last bit."""
    from pathlib import Path

    from pto_compiler.runtime import reference as golden
    from pto_compiler.runtime.vf_executor import expand_log

    logs = []
    for name in ["mid_axis_4_vfloop_mbn", "head_axis_3_vfloop_mn", "reduce_max_ra_unroll", "tail_axis_2_distbrc",
                 "reduce_sum_ar_binary", "elemwise_axpy_unroll"]:
        text = (Path(__file__).resolve().parents[1] / "bench" / "study" / f"{name}.pto").read_text()
        module = api.parse(text, f"{name}.pto")
        prog = pipeline.compile_module(module, TARGETS["ascend950"], vf_opt="none")
        res = pipeline.run_program(prog, pipeline.gm_inputs(golden.make_inputs(module, 0)))
        logs += [t.vf_log for t in res.exec_result.trace if t.opcode == "vf_call"][:1]
    module = api.parse(_CHAIN, "<k>")
    res = pipeline.run_program(pipeline.compile_module(module, TARGETS["ascend950"], vf_opt="none"),
                               pipeline.gm_inputs(golden.make_inputs(module, 0)))
    logs += [t.vf_log for t in res.exec_result.trace if t.opcode == "vf_call"]
    streams = logs + [expand_log(log) for log in logs]
    params = [None, {"window": 4, "dispatch_width": 2.0}]
    fused = [cycles.vf_timing(s, p) for s in streams for p in params]
    calls = []
    real = cycles._written_out
    monkeypatch.setattr(cycles, "_written_out", lambda *a: calls.append(real(*a)))
    assert fused == [cycles.vf_timing(s, p) for s in streams for p in params]
    assert any(c is not None for c in calls)  # (fused entries were made, and are not used now)


def test_the_memory_ops_are_the_ld_and_st_ops():
    """The timer's decode takes a vf op's dynamic offset (PB pushes) where its unit is LD or ST:
    exactly the vf ops with a ``dyn_offset`` (what ``pb_pushes``' own walk reads)."""
    from xdsl.irdl import IRDLOperation

    from pto_compiler.dialects import vf

    ops = [c for c in vars(vf).values() if isinstance(c, type) and issubclass(c, IRDLOperation)
           and isinstance(getattr(c, "name", None), str) and c.name.startswith("vf.")]
    assert len(ops) > 30 and any(hasattr(c, "dyn_offset") for c in ops)
    for c in ops:
        assert hasattr(c, "dyn_offset") == (cycles._VF_UNIT.get(c.name) in ("LD", "ST")), c.name
