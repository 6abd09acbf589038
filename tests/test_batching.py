"""Batched execution is trip-by-trip execution (runtime/loop_batch.py, runtime/vf_batch.py).

Each kernel runs twice: as the executor runs it, and with batching switched off (every scalar
loop trip by trip, every VF hardware loop trip by trip).  Outputs, the UB, counters, the trace
the cycle model reads and the findings must be the same, also for every program made by
deleting one synchronisation instruction of the loop (the races and deadlocks found).
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

from pto_compiler import api, pipeline
from pto_compiler.runtime import loop_batch, reference as golden, vf_batch, vf_executor
from pto_compiler.runtime import cycles
from pto_compiler.runtime.executor import execute, expand_trace
from pto_compiler.runtime.vf_executor import expand_log
from pto_compiler.runtime.program import Instr
from pto_compiler.targets import A2A3, ASCEND950

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
from exec_speed import tiled_loop as batched_loop  # noqa: E402  (bench/ is not a package)
from gen_kernels import tiled_loop  # noqa: E402
from a2a3_programs import a2a3_program  # noqa: E402
from test_sync_proof import _without  # noqa: E402


ROWEXPANDMAX = """func.func @k(%x: !pto.tile<40x128xf32>, %s: !pto.tile<40x1xf32, blayout=col_major>) -> !pto.tile<40x128xf32> {
  %d = pto.trowexpandmax %x, %s : !pto.tile<40x128xf32>, !pto.tile<40x1xf32, blayout=col_major> -> !pto.tile<40x128xf32>
  return %d : !pto.tile<40x128xf32>
}
"""


ROWSUM = """func.func @k(%x: !pto.tile<8x2048xf32>) -> !pto.tile<8x1xf32, blayout=col_major> {
  %d = pto.trowsum %x : !pto.tile<8x2048xf32> -> !pto.tile<8x1xf32, blayout=col_major>
  return %d : !pto.tile<8x1xf32, blayout=col_major>
}
"""
"""On ascend950 its VF accumulates in a register the hardware loop carries: run trip by trip."""


SOFTMAX = (pathlib.Path(__file__).resolve().parents[1] / "examples" / "softmax.pto").read_text()
"""On ascend950 its row reductions store one lane per row (ONEPT), batched."""


@pytest.fixture
def unbatched(monkeypatch):
    def off():
        monkeypatch.setattr(loop_batch, "EXACT_TRIPS", 10 ** 9)
        monkeypatch.setattr(vf_executor, "run_batched", lambda *a: False)
        monkeypatch.setattr(vf_batch.StaticPlan, "launch", lambda *a: None)
    return off


def _run(program, gm):
    return execute(program, gm, raise_on_findings=False)


def _same(a, b):
    assert [str(f) for f in a.findings] == [str(f) for f in b.findings]
    assert a.outputs.keys() == b.outputs.keys()
    for k in a.outputs:
        assert np.array_equal(a.outputs[k], b.outputs[k]), k
    assert np.array_equal(a.ub, b.ub)
    assert a.counts == b.counts
    key = lambda e: (e.seq, e.pipe, e.opcode, e.dtype, e.repeats, e.nbytes, e.bursts, e.flag,  # noqa: E731
                     getattr(e, "vf_counts", None), expand_log(getattr(e, "vf_log", None) or []))
    assert [key(e) for e in expand_trace(a.trace)] == [key(e) for e in expand_trace(b.trace)]


@pytest.mark.parametrize("target", [A2A3, ASCEND950], ids=lambda t: t.name)
@pytest.mark.parametrize("text", [tiled_loop(9), ROWEXPANDMAX, ROWSUM, SOFTMAX],
                         ids=["tiled_loop", "rowexpandmax", "rowsum", "softmax"])
def test_batched_run_is_the_trip_by_trip_run(target, text, unbatched, monkeypatch):
    module = api.parse(text, "<k>")
    values = golden.make_inputs(module, 3)
    program = pipeline.compile_module(module, target)
    gm = pipeline.gm_inputs(values)
    batched = []
    run_batched, launch = vf_executor.run_batched, vf_batch.StaticPlan.launch
    monkeypatch.setattr(vf_executor, "run_batched", lambda *a: batched.append(run_batched(*a)) or batched[-1])
    monkeypatch.setattr(vf_batch.StaticPlan, "launch",  # (a static plan's launch runs every loop batched)
                        lambda *a: (lambda res: batched.append(res is not None) or res)(launch(*a)))
    fast = _run(program, gm)
    assert not fast.findings
    if text is SOFTMAX and target is ASCEND950:  # every VF's hardware loop ran batched
        assert batched == [True] * 5
    unbatched()
    _same(fast, _run(program, gm))


@pytest.mark.parametrize("target", [A2A3, ASCEND950], ids=lambda t: t.name)
def test_the_cycle_model_extrapolates_repeated_trips_exactly(target):
    """A batched loop's trips (TraceRepeat) and a VF's repeated hardware-loop trips (LOG_LOOP) are
    scheduled until steady, then extrapolated: the figures are those of every trip scheduled."""
    module = api.parse(batched_loop(40), "<k>")
    program = pipeline.compile_module(module, target)
    r = execute(program, pipeline.gm_inputs(golden.make_inputs(module, 0)))
    assert len(expand_trace(r.trace)) > 3 * len(r.trace)
    a, b = cycles.simulate(r.trace, target.name), cycles.simulate(expand_trace(r.trace), target.name)
    assert a.to_dict() == b.to_dict()
    ta, tb = a.chrome_trace()["traceEvents"], b.chrome_trace()["traceEvents"]
    assert len(ta) == len(tb)
    assert sorted(e["ts"] for e in ta if e["ph"] == "X") == pytest.approx(sorted(e["ts"] for e in tb if e["ph"] == "X"))
    for e in r.trace:
        log = getattr(e, "vf_log", None)
        if log:
            got, want = cycles.vf_timing(log), cycles.vf_timing(expand_log(log))
            assert got == pytest.approx(want, rel=1e-9)


def test_deleting_any_sync_of_a_batched_loop_finds_the_same(unbatched, monkeypatch):
    module = api.parse(tiled_loop(8), "<k>")
    gm = pipeline.gm_inputs(golden.make_inputs(module, 0))
    prog = pipeline.compile_module(module, A2A3)
    syncs = [n for n, _ in prog.walk() if isinstance(n, Instr) and n.spec.family == "sync"]
    assert len(syncs) >= 8
    programs = [_without(prog, {id(n)}) for n in syncs]
    fast = [_run(p, gm) for p in programs]
    unbatched()
    for p, f in zip(programs, fast):
        _same(f, _run(p, gm))
    assert any(f.findings for f in fast)


def test_a_loop_reading_what_an_earlier_trip_wrote_runs_trip_by_trip():
    """Trip i adds 1 to the tile trip i-1 left in UB: batching would lose the chain."""
    prog = a2a3_program("""\
  %zero = arith.constant 0.0 : f32
  a2a3.vector_dup dst=%c0x0 scalar=(%zero : f32) repeat=%c1 blk=%c1 rep=%c8 : f32
  scf.for %i = %c0 to %c9 step %c1 {
    a2a3.pipe_barrier V
    a2a3.vadds dst=%c0x0 src=%c0x0 scalar=(%f1.0 : f32) repeat=%c1 blk=%c1,%c1 rep=%c8,%c8 : f32
  }
  a2a3.set_flag V -> MTE3 id=%c0
  a2a3.wait_flag V -> MTE3 id=%c0
  a2a3.copy_ubuf_to_gm dst=(%y : !pto.ptr<f32>)+%c0 src=%c0x0 n_burst=%c1 len_burst=%c256 src_gap=%c0 dst_gap=%c0 : f32
""", gm={"y": ("f32", (64,))})
    r = execute(prog)
    assert r.findings == [] and (r.outputs["y"] == 9).all()
