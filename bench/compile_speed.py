"""Compile speed of ptoc against xdsl-opt, measured side by side in one run (issue 9).

    python bench/compile_speed.py [--sizes 10,100,1000,10000] [--repeat 3] [--budget 120]

Prints:

* per target, the whole compile of a straight-line kernel of N tile ops (parse, verify, every pass,
  program emission; ``pipeline.compile_module`` in this process, the host times ``ptoc --stats``
  reports) as time per op, the share of each pass at the largest N, and the growth exponent
  ``log(t2/t1) / log(n2/n1)`` between successive sizes (1 = linear);
* the compile time of an ``scf.for`` kernel at 16 and 4,096 trips;
* the CPU seconds of ``xdsl-opt`` parsing and printing 1,000 and 10,000 ``arith.addi`` ops and of
  ``ptoc FILE --target T -o /dev/null`` on the kernel of as many tile ops, whole processes: the
  ratio to beat (sizes skipped above are skipped here), and ptoc's at 4,000 ops as a multiple
  of its 1,000-op time;
* start-up: the CPU seconds of ``ptoc`` on a one-line kernel with ``--emit pto`` against
  ``python -c "import xdsl.dialects.arith, xdsl.dialects.scf, xdsl.dialects.func"``.

Processes compared with each other run in turn, once each per repetition, and each gives its
median: on a loaded machine, load that comes and goes weighs on all of them alike.

A size whose previous size took longer than ``--budget`` / 10 seconds is skipped (printed as such):
a superlinear pass would otherwise run for hours.
"""

from __future__ import annotations

import argparse
import compileall
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_kernels import straight_line, tiled_loop  # noqa: E402  (bench/ is not a package)

def compile_once(text: str, target):
    """(seconds of the whole compile, HostTimes) of ``text`` for ``target``, in this process."""
    from pto_compiler import api, pipeline
    from pto_compiler.timing import HostTimes

    times = HostTimes()
    t0 = time.perf_counter()
    with times.phase("parse"):
        module = api.parse(text, "bench.pto")
    pipeline.compile_module(module, target, times=times)
    return time.perf_counter() - t0, times


def cpu_seconds(runs: dict[str, tuple[list[str], str | None]], repeat: int = 3) -> dict[str, float]:
    """Median CPU seconds (user + system) of each child process ``name: (command, stdin)``, the
    commands run in turn, once each per repetition."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, (cmd, stdin) in runs.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(cmd, input=stdin, text=True, stdout=subprocess.DEVNULL, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            samples[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return {name: statistics.median(s) for name, s in samples.items()}


def arith_module(n: int) -> str:
    lines = ["func.func @f(%a: i32) -> i32 {", "  %v0 = arith.addi %a, %a : i32"]
    lines += [f"  %v{i} = arith.addi %v{i - 1}, %a : i32" for i in range(1, n)]
    lines += [f"  func.return %v{max(n - 1, 0)} : i32", "}"]
    return "\n".join(lines) + "\n"


def tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # Byte-compile ptoc first, as `pip install` does: with PYTHONDONTWRITEBYTECODE set, every ptoc
    # process would otherwise recompile the modules changed since the last byte-compilation.
    root = Path(__file__).resolve().parents[1]
    compileall.compile_dir(root / "pto_compiler", quiet=1)
    for sub in ("dialects", "passes", "runtime"):
        compileall.compile_dir(root / sub, quiet=1)
    ap.add_argument("--sizes", default="10,100,1000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=120.0, help="seconds a size may take (see the doc)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    from pto_compiler.cli import few_collections
    from pto_compiler.targets import A2A3, ASCEND950

    few_collections()  # as a ptoc process does
    compile_once(straight_line(8), A2A3)  # imports and caches: not the compiler's growth
    print("compile time per tile op (gen_kernels.straight_line; median of --repeat, one process)")
    print(f"{'target':<10}{'ops':>7}{'total s':>10}{'us/op':>10}{'exponent':>10}")
    shares = {}
    for target in (A2A3, ASCEND950):
        prev = None
        for n in sizes:
            if prev is not None and prev[1] > args.budget / 10:
                print(f"{target.name:<10}{n:>7}   skipped: {prev[0]} ops took {prev[1]:.1f} s")
                continue
            text = straight_line(n)
            runs = [compile_once(text, target) for _ in range(args.repeat if n <= 1000 else 1)]
            total, times = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
            exp = f"{math.log(total / prev[1]) / math.log(n / prev[0]):.2f}" if prev else "-"
            print(f"{target.name:<10}{n:>7}{total:>10.3f}{total / n * 1e6:>10.1f}{exp:>10}")
            prev, shares[target.name] = (n, total), (n, total, times)
    print()
    for name, (n, total, times) in shares.items():
        parts = {"parse": times.seconds.get("parse", 0.0), **times.passes, "emit": times.seconds.get("emit", 0.0)}
        print(f"shares at {n} ops, {name}: " + ", ".join(f"{k} {v / total:.0%}" for k, v in parts.items()))

    print("\nscf.for of 4 tile ops (gen_kernels.tiled_loop): compile time by trip count (goal: independent of it)")
    for target in (A2A3, ASCEND950):
        t16, t4096 = (compile_once(tiled_loop(trips), target)[0] for trips in (16, 4096))
        print(f"  {target.name:<10} 16 trips {t16:.3f} s, 4096 trips {t4096:.3f} s: {t4096 / t16:.2f}x")

    print("\nwhole processes, CPU s: xdsl-opt parsing + printing N arith.addi vs `ptoc FILE --target T -o /dev/null`")
    at_1000: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1000, 4000, 10000):
            kernel = Path(tmp, f"k{n}.pto")
            kernel.write_text(straight_line(n))
            ptoc = {name: ([tool("ptoc"), str(kernel), "--target", name, "-o", "/dev/null"], None)
                    for name, (m, _, _) in shares.items() if m >= n}
            if not ptoc:
                continue
            xdsl = {"xdsl-opt": ([tool("xdsl-opt")], arith_module(n))} if n != 4000 else {}
            cpu = cpu_seconds({**xdsl, **ptoc}, args.repeat if n < 10000 else 1)
            if n == 1000:
                at_1000 = {name: cpu[name] for name in ptoc}
            if n == 4000:
                print(f"  {n:>6} ops: " + ", ".join(f"ptoc {name} {cpu[name]:.2f} ({cpu[name] / at_1000[name]:.1f}x "
                                                      "its 1,000-op time)" for name in ptoc))
            else:
                print(f"  {n:>6} ops: xdsl-opt {cpu['xdsl-opt']:.2f}" + "".join(
                    f", ptoc {name} {cpu[name]:.2f} ({cpu[name] / cpu['xdsl-opt']:.2f}x)" for name in ptoc))

    one = "%z = pto.tadd %x, %y : !pto.tile<16x16xf32>\n"
    with tempfile.NamedTemporaryFile("w", suffix=".pto", delete=False) as f:
        f.write(one)
    cpu = cpu_seconds({"import": ([sys.executable, "-c", "import xdsl.dialects.arith, xdsl.dialects.scf, "
                                                          "xdsl.dialects.func"], None),
                       "ptoc": ([tool("ptoc"), f.name, "--emit", "pto"], None)}, repeat=max(args.repeat, 5))
    Path(f.name).unlink()
    print(f"\nstart-up (CPU s): ptoc one-line --emit pto {cpu['ptoc']:.3f}, python -c 'import xdsl arith,scf,func' "
          f"{cpu['import']:.3f}: {cpu['ptoc'] / cpu['import']:.2f}x (goal <= 2x)")


if __name__ == "__main__":
    main()
