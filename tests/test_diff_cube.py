"""Differential matrix of the cube family: executor output == golden model, per target x dtype
combination x shape x valid region x (plain | bias) matmul over a K loop.

Each case is a ``tload -> tmov -> tmatmul[.bias] / tmatmul.acc -> tstore`` kernel
(tests/cube_kernels.py) compiled by the default pipeline of its target, executed with hazard
checking, and compared with the golden model by the ``--run`` rule (float matmul outputs within
the float-sum tolerance, i32 bit for bit); the golden model itself is checked against NumPy in
test_cube.py.  ``pytest -m full tests/test_diff_cube.py`` runs the whole matrix; CI runs a
seeded sample covering every (target, dtype combination), every shape and every valid-region
configuration at least once.
"""

from __future__ import annotations

import itertools
import random

import pytest
from cube_kernels import COMBOS, inputs_for, matmul_kernel

from pto_compiler import api, pipeline
from pto_compiler.passes.lower_a2a3 import float_sum_outputs
from pto_compiler.runtime import reference as R

TARGETS = ("a2a3", "ascend950")
SHAPES = ((16, 32, 16, 32), (32, 128, 32, 64), (64, 256, 48, 128), (16, 512, 96, 64), (128, 64, 16, 64))
"""(M, K, N, K per step)."""
VALID = ("full", "partial_m", "partial_mn", "gemv")
BIAS = (False, True)


def valid_of(M: int, N: int, cfg: str) -> tuple[int | None, int | None]:
    return {"full": (None, None), "partial_m": (M - 3, None), "partial_mn": (M - 5, N - 7),
            "gemv": (1, None)}[cfg]


def all_cases():
    return list(itertools.product(TARGETS, COMBOS, SHAPES, VALID, BIAS))


def sample_cases(seed: int = 11):
    rnd = random.Random(seed)
    out = []
    for i, (t, combo) in enumerate(itertools.product(TARGETS, COMBOS)):
        out.append((t, combo, SHAPES[i % len(SHAPES)], VALID[i % len(VALID)], bool(i % 2)))
    out += [(rnd.choice(TARGETS), rnd.choice(COMBOS), s, rnd.choice(VALID), rnd.choice(BIAS)) for s in SHAPES]
    return out


def _id(case):
    t, (ab, acc), (M, K, N, kt), cfg, bias = case
    return f"{t}-{ab}-{acc}-{M}x{K}x{N}k{kt}-{cfg}{'-bias' if bias else ''}"


def run_case(case):
    t, (ab, acc), (M, K, N, kt), cfg, bias = case
    if ab == "i8" and kt < 32:
        kt = 32
    vm, vn = valid_of(M, N, cfg)
    text = matmul_kernel(ab, acc, M, K, N, kt, vm=vm, vn=vn, bias=bias)
    mod = api.parse(text)
    ins = inputs_for(ab, vm or M, vn or N, K, seed=len(_id(case)), bias=bias, acc=acc)
    want = R.evaluate(mod, ins)
    prog = api.compile(mod, t)
    res = api.run(prog, ins)
    assert not res.findings, res.findings[:2]
    cmp = pipeline.compare_outputs(res.outputs, want, float_sum_outputs(mod))
    assert cmp and all(c.ok for c in cmp), "\n".join(c.line() for c in cmp) + "\n" + text


@pytest.mark.parametrize("case", sample_cases(), ids=_id)
def test_sample(case):
    run_case(case)


@pytest.mark.full
@pytest.mark.parametrize("case", all_cases(), ids=_id)
def test_full(case):
    run_case(case)


def test_sample_covers_every_combination_shape_and_valid_region():
    s = sample_cases()
    assert {(c[0], c[1]) for c in s} == set(itertools.product(TARGETS, COMBOS))
    assert {c[2] for c in s} == set(SHAPES)
    assert {c[3] for c in s} == set(VALID)
    assert {c[4] for c in s} == set(BIAS)
