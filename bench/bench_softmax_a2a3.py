"""Row softmax (examples/softmax.pto, 64x256 f32) through the a2a3 backend, measured in one run.

    python bench/bench_softmax_a2a3.py [--repeat 10]

Prints, side by side:

* compile time: parse + verify, the pass pipeline (pto-select-expand-mode, pto-tmp-strategy,
  pto-plan-memory, pto-insert-sync) and the lowering to the micro-instruction program;
* run time per element (median of ``--repeat`` runs) of the emitted program on the NumPy
  executor with hazard checking on (as ``ptoc --run`` runs it) and off, of the golden model
  (``reference.evaluate`` on the same module), and of a bare NumPy softmax
  (``e = exp(x - max); e / e.sum()``), with the ratios to NumPy;
* the cycle model's total for the program (placeholder costs, runtime/cycles.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def median_ns(fn, repeat: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times)


def compile_softmax(text: str, path: str):
    """(module, program, {stage: seconds}) through the real pipeline when every pass is
    registered, else tests/a2a3_harness.py's stand-ins for the missing ones."""
    from pto_compiler import api, pipeline
    from pto_compiler.passes.lower_a2a3 import lower_to_program
    from pto_compiler.targets import A2A3

    t0 = time.perf_counter()
    module = api.parse(text, path)
    api.verify(module, A2A3)
    t1 = time.perf_counter()
    try:
        placed = pipeline.compile_module(module, A2A3, stop_after="placed")
        how = "default pipeline"
    except Exception:  # noqa: BLE001 - a pass of the pipeline has not landed yet
        sys.path.insert(0, str(REPO / "tests"))
        import a2a3_harness

        placed = a2a3_harness.place(module)
        how = "pipeline with stand-ins for " + ", ".join(a2a3_harness.STAND_INS)
    t2 = time.perf_counter()
    program = lower_to_program(placed, A2A3)
    t3 = time.perf_counter()
    return module, program, {"parse+verify": t1 - t0, "passes": t2 - t1, "lowering": t3 - t2}, how


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args(argv)

    from pto_compiler import pipeline
    from pto_compiler.passes.lower_a2a3 import float_sum_outputs
    from pto_compiler.runtime import cycles
    from pto_compiler.runtime import reference as golden
    from pto_compiler.runtime.executor import execute

    path = REPO / "examples" / "softmax.pto"
    text = path.read_text()
    compile_times = [compile_softmax(text, str(path)) for _ in range(3)]
    module, program, stages, how = compile_times[-1]
    stage_median = {k: statistics.median(c[2][k] for c in compile_times) for k in stages}

    values = golden.make_inputs(module, 0)
    x = values["x"]
    gm = pipeline.gm_inputs(values)
    n = x.size

    def np_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    # correctness first: the executor against the golden model, and NumPy against both
    r = execute(program, gm)
    want = golden.evaluate(module, values)
    cmp = pipeline.compare_outputs(r.outputs, want, float_sum_outputs(module))
    assert all(c.ok for c in cmp), [c.line() for c in cmp]
    assert np.allclose(np_softmax(), want["y"], rtol=1e-5, atol=1e-7)

    t_exec = median_ns(lambda: execute(program, gm, trace=False), args.repeat)
    t_exec_nocheck = median_ns(lambda: execute(program, gm, check=False, trace=False), args.repeat)
    t_golden = median_ns(lambda: golden.evaluate(module, values), args.repeat)
    t_numpy = median_ns(np_softmax, max(args.repeat, 50))
    stats = cycles.simulate(execute(program, gm).trace, "a2a3")

    total_compile = sum(stage_median.values())
    print(f"softmax 64x256 f32 on a2a3 ({how}); {len(program.instructions())} instructions, "
          f"{sum(r.counts.values())} executed")
    print(f"compile: {total_compile * 1e3:.1f} ms  (" +
          ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in stage_median.items()) + ")")
    print(f"{'run (median of ' + str(args.repeat) + ')':<34}{'ns/elem':>10}{'x NumPy':>10}")
    for name, t in (("executor, hazard checking on", t_exec), ("executor, hazard checking off", t_exec_nocheck),
                    ("golden model", t_golden), ("bare NumPy softmax", t_numpy)):
        print(f"{name:<34}{t / n:>10.2f}{t / t_numpy:>10.1f}")
    print(f"executor / golden model: {t_exec / t_golden:.2f} (checking on), {t_exec_nocheck / t_golden:.2f} (off)")
    print(f"cycle model: {stats.total_cycles:,.0f} cycles (placeholder costs); " +
          ", ".join(f"{p} busy {s.busy:,.0f}" for p, s in stats.pipes.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
