"""Executor, golden model and bare NumPy per element, both targets, measured side by side.

    python bench/exec_speed.py [--repeat 3] [--quick]

Cases (f32): 128x128 TROWEXPANDMAX (Mode 1), 256x256 TROWSUM, softmax 64x256
(examples/softmax.pto), and a tiled loop of 2,048 trips, each TADD + TEXP of one 32x32 tile
(2M elements).  Columns: ``cold``, what issue 10's speed target is measured on:
``host_seconds.execute`` of ``ptoc FILE --run --stats json`` in a fresh process (the median of
``--repeat`` processes, each a single cold run), as a ratio to warm NumPy and (``c``) to cold
NumPy: the same math's first call in a fresh process that has parsed and compiled the kernel
as ptoc has (``cold NumPy``; NumPy's first calls cost several times its later ones); then, in
this process, the executor as ``ptoc --stats`` runs it (hazard checking, trace and cycle
model), with hazard checking only, with neither, the golden model (``reference.evaluate`` on
the same module), bare NumPy doing the same math; ns per element and the ratio to (warm)
NumPy.  Warm times are CPU seconds of this process (the machine is shared), the median of
``--repeat`` runs.
Every executor run is first checked against the golden model (the ``--run`` comparison).
``n/a``: the kernel does not fit the target's UB.  ``--quick`` runs the tiled loop with 64 trips.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def cold_execute_s(text: str, target: str, repeat: int) -> float:
    """``host_seconds.execute`` of ``ptoc --run --stats json`` on ``text``, each run a fresh
    process (the median of ``repeat`` of them); the run must PASS."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "kernel.pto"
        path.write_text(text)
        times = []
        for _ in range(repeat):
            out = subprocess.run([sys.executable, "-m", "pto_compiler", str(path), "--target", target, "--run",
                                  "--stats", "json"], capture_output=True, text=True, check=True).stdout
            report, _, stats = out.partition("{")
            assert "PASS" in report and "MISMATCH" not in report, report
            times.append(json.loads("{" + stats)["host_seconds"]["execute"])
    return statistics.median(times)


def cold_numpy_s(case: int, target: str, quick: bool, repeat: int) -> float:
    """The first call of case ``case``'s NumPy math in a fresh process that parsed the kernel,
    made its inputs and compiled it for ``target`` first (the median of ``repeat`` processes)."""
    cmd = [sys.executable, __file__, "--cold-numpy", str(case), "--target", target, *(["--quick"] if quick else [])]
    return statistics.median(float(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
                             for _ in range(repeat))


def _cold_numpy_child(case: int, target: str, quick: bool) -> None:
    from pto_compiler import api
    from pto_compiler.runtime import reference as golden

    name, text, np_fn, _ = cases(64 if quick else 2048)[case]
    module = api.parse(text, f"<{name}>")
    values = golden.make_inputs(module, 0)
    api.compile(module, target, decode=True)
    t0 = time.perf_counter()
    np_fn(values)
    print(time.perf_counter() - t0)


def _l1(name: str, args: str, body: str, result: str) -> str:
    return f"func.func @{name}({args}) -> {result} {{\n{body}\n  return %d : {result}\n}}\n"


ROWEXPANDMAX = _l1(
    "rowexpandmax", "%x: !pto.tile<128x128xf32>, %s: !pto.tile<128x1xf32, blayout=col_major>",
    "  %d = pto.trowexpandmax %x, %s : !pto.tile<128x128xf32>, !pto.tile<128x1xf32, blayout=col_major>"
    " -> !pto.tile<128x128xf32>", "!pto.tile<128x128xf32>")
ROWSUM = _l1(
    "rowsum", "%x: !pto.tile<256x256xf32>",
    "  %d = pto.trowsum %x : !pto.tile<256x256xf32> -> !pto.tile<256x1xf32, blayout=col_major>",
    "!pto.tile<256x1xf32, blayout=col_major>")


def tiled_loop(trips: int) -> str:
    """z[i] = exp(x[i] + y[i]) over ``trips`` 32x32 tiles of a (trips*32)x32 GM array."""
    t = "!pto.tile_buf<vec, 32x32xf32>"
    v = "!pto.tensor_view<?x?xf32>"
    p = "!pto.partition_tensor_view<32x32xf32>"
    views = "\n".join(f"    %{n}v = pto.make_tensor_view %{n}, shape = [%rows, %c32], strides = [%c32, %c1] : {v}"
                      for n in "xyz")
    parts = "\n".join(f"      %{n}p = pto.partition_view %{n}v, offsets = [%row, %c0], sizes = [%c32, %c32] : {v} -> {p}"
                      for n in "xyz")
    return f"""module {{
  func.func @tiled(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %z: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %trips = arith.constant {trips} : index
    %rows = arith.constant {trips * 32} : index
{views}
    scf.for %i = %c0 to %trips step %c1 {{
      %row = arith.muli %i, %c32 : index
{parts}
      %a = pto.alloc_tile : {t}
      %b = pto.alloc_tile : {t}
      pto.tload ins(%xp : {p}) outs(%a : {t})
      pto.tload ins(%yp : {p}) outs(%b : {t})
      pto.tadd ins(%a, %b : {t}, {t}) outs(%a : {t})
      pto.texp ins(%a : {t}) outs(%a : {t})
      pto.tstore ins(%a : {t}) outs(%zp : {p})
    }}
    return
  }}
}}
"""


def cases(trips: int):
    softmax = (REPO / "examples" / "softmax.pto").read_text()

    def np_softmax(v):
        x = v["x"]
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return [
        ("trowexpandmax 128x128", ROWEXPANDMAX, lambda v: np.maximum(v["x"], v["s"]), 128 * 128),
        ("trowsum 256x256", ROWSUM, lambda v: v["x"].sum(axis=1, keepdims=True), 256 * 256),
        ("softmax 64x256", softmax, np_softmax, 64 * 256),
        (f"tiled loop {trips} x (tadd+texp 32x32)", tiled_loop(trips),
         lambda v: np.exp(v["x"] + v["y"]), trips * 1024),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cold-numpy", type=int, help=argparse.SUPPRESS)  # the child of cold_numpy_s
    ap.add_argument("--target", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.cold_numpy is not None:
        _cold_numpy_child(args.cold_numpy, args.target, args.quick)
        return 0

    from pto_compiler import api, pipeline
    from pto_compiler.diagnostics import PtocError
    from pto_compiler.passes.lower_a2a3 import float_sum_outputs
    from pto_compiler.runtime import reference as golden
    from pto_compiler.runtime.executor import execute
    from pto_compiler.targets import A2A3, ASCEND950

    columns = ("exec --stats", "exec check", "exec nocheck", "golden")
    print(f"{'case':<38}{'target':<11}{'cold (x NumPy, c cold)':>24}{''.join(f'{c:>16}' for c in columns)}"
          f"{'NumPy':>9}{'cold NumPy':>11}   ns/elem (x NumPy)")
    for k, (name, text, np_fn, n) in enumerate(cases(64 if args.quick else 2048)):
        module = api.parse(text, f"<{name}>")
        values = golden.make_inputs(module, 0)
        want = golden.evaluate(module, values)
        t_np = median_s(lambda: np_fn(values), max(args.repeat, 20))
        t_golden = median_s(lambda: golden.evaluate(module, values), args.repeat)
        tolerant = float_sum_outputs(module)
        for target in (A2A3, ASCEND950):
            try:
                program = pipeline.compile_module(module, target)
            except PtocError:
                row, cold, t_np_cold = ("n/a",) * 3, "n/a", None
            else:
                gm = pipeline.gm_inputs(values)
                got = execute(program, gm).outputs
                bad = [c.line() for c in pipeline.compare_outputs(got, want, tolerant) if not c.ok]
                assert not bad, bad
                t_stats = median_s(lambda: pipeline.run_program(program, gm), args.repeat)
                t_on = median_s(lambda: execute(program, gm, trace=False), args.repeat)
                t_off = median_s(lambda: execute(program, gm, check=False, trace=False), args.repeat)
                t_cold = cold_execute_s(text, target.name, args.repeat)
                t_np_cold = cold_numpy_s(k, target.name, args.quick, args.repeat)
                cold = f"{t_cold / n * 1e9:.0f} ({t_cold / t_np:.0f}x, c {t_cold / t_np_cold:.1f}x)"
                row = tuple(f"{t / n * 1e9:.0f} ({t / t_np:.0f}x)" for t in (t_stats, t_on, t_off))
            gold = f"{t_golden / n * 1e9:.1f} ({t_golden / t_np:.1f}x)"
            np_cold = f"{t_np_cold / n * 1e9:.2f}" if t_np_cold is not None else "n/a"
            print(f"{name:<38}{target.name:<11}{cold:>24}{''.join(f'{c:>16}' for c in row)}{gold:>16}"
                  f"{t_np / n * 1e9:>9.2f}{np_cold:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
