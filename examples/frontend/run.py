"""Row softmax and layer norm written in tiny_dsl, compiled for both targets, run on the NumPy
executor and compared with NumPy (and with ptoc's golden model).  Exit 1 if anything differs.

    python examples/frontend/run.py
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_dsl import Kernel  # noqa: E402

from pto_compiler import api  # noqa: E402


def softmax(rows=32, cols=128):
    k = Kernel("softmax")
    x = k.input("x", (rows, cols))
    e = (x - x.rowmax()).exp()
    return k.output("y", e / e.rowsum())


def layernorm(rows=16, cols=128, eps=1e-5):
    k = Kernel("layernorm")
    x, gamma, beta = k.input("x", (rows, cols)), k.input("gamma", (1, cols)), k.input("beta", (1, cols))
    xc = x - (x * (1.0 / cols)).rowsum()
    var = (xc * xc * (1.0 / cols)).rowsum()
    return k.output("y", xc * (var.expand(cols) + eps).rsqrt() * gamma + beta)


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_layernorm(x, gamma, beta, eps=1e-5):
    xc = x - x.mean(axis=1, keepdims=True)
    return xc / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + eps) * gamma + beta


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (32, 128)).astype(np.float32)
    xl, g, b = (rng.uniform(-2, 2, s).astype(np.float32) for s in ((16, 128), (1, 128), (1, 128)))
    cases = [("softmax", softmax(), {"x": x}, numpy_softmax(x)),
             ("layernorm", layernorm(), {"x": xl, "gamma": g, "beta": b}, numpy_layernorm(xl, g, b))]
    failed = 0
    for name, module, inputs, want in cases:
        for target in ("a2a3", "ascend950"):
            res = api.check(module, target, inputs)
            close = np.allclose(res.outputs["y"], want, rtol=1e-4, atol=1e-5)
            err = float(np.abs(res.outputs["y"] - want).max())
            print(f"{name} {target}: golden {'PASS' if res.ok else 'FAIL'}, numpy {'PASS' if close else 'FAIL'} "
                  f"(max abs err {err:.2g}), {res.stats.total_cycles:.0f} cycles")
            failed += not (res.ok and close)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
