"""Golden-model speed against bare NumPy, measured side by side in one run.

    python bench/bench_reference.py [--repeat 20] [--size 256]

For a 256x256 f32 tile: TROWEXPANDMAX (Mode 1, a 256x1 ColMajor per-row operand; and Mode 2,
one 8-wide f32 block per row) and TROWSUM (into a 256x1 ColMajor dst), each run through
``reference.evaluate`` on an L1 kernel, against a bare NumPy expression of the same math
(``np.maximum(x, s[:, None])``, ``np.maximum(x, np.tile(b, 32))``, ``x.sum(axis=1)``).
Prints ns per element (median of ``--repeat`` runs) and the ratio.  The golden model pays for
its exactness (seeds/002 NaN and ±0 rules, canonical NaN, the exact-sum certificate) and
for walking the IR, so the ratio is the price of being obviously right.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.dialects.scf import Scf
from xdsl.parser import Parser

from pto_compiler.dialects.pto import PTO
from pto_compiler.runtime import reference as R


def parse(text: str):
    ctx = Context()
    for d in (Builtin, Func, Arith, Scf, PTO):
        ctx.load_dialect(d)
    m = Parser(ctx, text).parse_module()
    m.verify()
    return m


def kernel(op: str, arg_types: list[str], res: str) -> str:
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(arg_types))
    operands = ", ".join(f"%a{i}" for i in range(len(arg_types)))
    return (f"func.func @k({args}) -> {res} {{\n  %d = pto.{op} {operands} : ({', '.join(arg_types)}) -> {res}\n"
            f"  func.return %d : {res}\n}}\n")


def median_ns(fn, repeat: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--size", type=int, default=256)
    args = ap.parse_args(argv)
    n = args.size
    full = f"!pto.tile<{n}x{n}xf32>"
    col = f"!pto.tile<{n}x1xf32, blayout=col_major>"
    blk = f"!pto.tile<{n}x8xf32>"
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n)).astype(np.float32)
    s = rng.standard_normal((n, 1)).astype(np.float32)
    b = rng.standard_normal((n, 8)).astype(np.float32)

    cases = [
        ("trowexpandmax mode 1", parse(kernel("trowexpandmax", [full, col], full)), {"a0": x, "a1": s},
         lambda: np.maximum(x, s[:, 0][:, None])),
        ("trowexpandmax mode 2", parse(kernel("trowexpandmax", [full, blk], full)), {"a0": x, "a1": b},
         lambda: np.maximum(x, np.tile(b, n // 8))),
        ("trowsum", parse(kernel("trowsum", [full], col)), {"a0": x},
         lambda: x.sum(axis=1, keepdims=True)),
    ]
    elems = n * n
    print(f"golden model vs bare NumPy, {n}x{n} f32, median of {args.repeat} (ns/element)")
    print(f"{'op':<22} {'reference':>10} {'numpy':>10} {'ratio':>8}")
    for name, module, inputs, bare in cases:
        ref_out = R.evaluate(module, inputs)["result0"]
        np_out = bare()
        if "sum" in name:
            ok = np.all(np.abs(ref_out - np_out) <= 1e-3 * (np.abs(ref_out) + 1))
        else:
            ok = np.array_equal(ref_out, np_out)
        t_ref = median_ns(lambda: R.evaluate(module, inputs), args.repeat) / elems
        t_np = median_ns(bare, args.repeat) / elems
        print(f"{name:<22} {t_ref:>10.2f} {t_np:>10.2f} {t_ref / t_np:>7.1f}x{'' if ok else '  MISMATCH'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
