"""A short seeded fuzz campaign (issue 15; bench/fuzz.py runs the long one): byte-, token- and
structure-level mutants of the examples and lit inputs, and generated well-typed kernels, each
compiled and run with ``--run`` on both targets.  No internal error, no run over 10 s, and every
generated kernel PASSes."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

import numpy as np

from pto_compiler import api
from pto_compiler.fuzz import (MUTATION_KINDS, TARGET_NAMES, Campaign, Outcome, campaign, case_file, case_problem,
                               case_runs, mutant, order_dependent, repo_sources, run_ptoc)
from pto_compiler.fuzz_kernels import kernel_inputs, random_kernel

REPO = Path(__file__).resolve().parents[2]


def test_short_campaign_has_no_internal_error_timeout_or_failing_generated_kernel():
    res = campaign(repo_sources(REPO), seed=15, mutants=3, kernels=1)
    assert sum(res.runs.values()) == 8
    assert not res.failures, res.summary() + "\n" + "\n".join(f"{k} {t}:\n{text}\n{out}" for k, t, text, out in res.failures)


def test_mutators_change_the_text_and_keep_it_a_string():
    sources = repo_sources(REPO)
    rng = random.Random(1)
    for kind in MUTATION_KINDS:
        changed = [mutant(rng, sources, kind) for _ in range(20)]
        assert all(isinstance(t, str) for t in changed)
        assert sum(t not in sources for t in changed) >= 12, kind


def test_generated_kernels_are_deterministic_per_seed():
    assert random_kernel(random.Random(7)) == random_kernel(random.Random(7))
    assert random_kernel(random.Random(7)) != random_kernel(random.Random(8))


def _kernels(targets, n=300, seed=12):
    rng = random.Random(seed)
    return [random_kernel(rng, targets) for _ in range(n)]


def _dtype(text):
    return re.search(r"%x: !pto.ptr<(\w+)>", text).group(1)


@pytest.mark.parametrize("targets", [TARGET_NAMES, ("a2a3",), ("ascend950",)])
def test_generated_kernels_draw_every_element_type_and_the_newer_ops(targets):
    """i8/ui8 (and the other seven types) in every target set, and the ops the catalogue gained:
    compares and selects, bitwise and shifts, TPART*, ternary, TCI/TTRI, column reductions and
    expands, TCVT round trips; on ascend950 alone also i8 arithmetic (A2/A3 has none: its pages allow i8 in copies,
    expands and TEXPANDS only)."""
    kernels = _kernels(targets)
    dtypes = {_dtype(k) for k in kernels}
    assert dtypes == {"f32", "f16", "bf16", "i32", "i16", "i8", "ui32", "ui16", "ui8"}
    ops = {m for k in kernels for m in re.findall(r"pto\.(t\w+) ins", k)}
    assert {"tcmp", "tcmps", "tsel", "tsels", "tand", "tshrs", "tnot", "tpartmax", "taddc", "tsubsc", "tci",
            "ttri", "tcolsum", "tcolexpandmul", "trowprod", "tneg", "tcvt"} <= ops, ops
    i8_math = {m for k in kernels if _dtype(k) == "i8" for m in re.findall(r"pto\.(t\w+) ins", k)}
    assert ("tadd" in i8_math) == (targets == ("ascend950",))


@pytest.mark.parametrize("targets", [TARGET_NAMES, ("ascend950",)])
@pytest.mark.parametrize("dtype", ["i8", "ui8"])
def test_generated_byte_kernels_pass_on_their_targets(dtype, targets):
    """The first i8 / ui8 kernels the generator makes for both targets and for ascend950 alone (where
    the page allows byte arithmetic, compares and selects) run to PASS; unsigned scalars are
    kernel arguments whose values the kernel's first line gives (arith.constant is signless)."""
    text = next(k for k in _kernels(targets) if _dtype(k) == dtype and k.count(" ins(") >= 6)
    given = [f"--input={n}={v}" for n, v in kernel_inputs(text).items()]
    for target in targets:
        o = run_ptoc(text, ["--target", target, "--run", *given])
        assert o.rc == 0 and o.output.startswith("PASS"), text + o.output


def test_a_run_over_the_limit_is_a_timeout():
    """The deadline interrupts a long run (a 10^9-trip loop) and the case counts as a timeout."""
    text = (REPO / "examples" / "vadd.pto").read_text()
    o = run_ptoc(text, ["--run", "--max-steps", "1000000000", "--blocks", "4096"], limit_s=0.5)
    assert o.timed_out and o.rc == 130


CASES = sorted((Path(__file__).parent / "cases").glob("*.pto"))
CASE_RUNS = [(case, flags, expect) for case in CASES for flags, expect in case_runs(case.read_text(), case.name)]


@pytest.mark.parametrize("case,flags,expect", CASE_RUNS,
                         ids=[f"{c.stem}-{f[f.index('--target') + 1] if '--target' in f else 'default'}"
                              for c, f, _ in CASE_RUNS])
def test_cases_the_fuzzer_found(case, flags, expect):
    """Cases bench/fuzz.py found (each file says how; ``--save`` writes them so): every file of
    tests/fuzz/cases runs as its header says (``// ptoc-flags:``, ``// expect:``; by default
    ``--target T --run`` on both targets, expecting PASS)."""
    o = run_ptoc(case.read_text(), flags, limit_s=60)
    problem = case_problem(o, expect)
    assert problem is None, f"{case.name} {' '.join(flags)}: {problem}\n{o.output[-3000:]}"


def test_a_saved_case_runs_as_it_ran_in_the_campaign(tmp_path):
    """What bench/fuzz.py --save writes (case_file) reads back (case_runs) as the campaign ran it:
    the flags of its run (target, seed, a generated kernel's inputs) and what a fixed ptoc gives."""
    text = "// inputs: s=3\nfunc.func @fuzz() {\n  return\n}\n"
    flags = ["--target", "ascend950", "--run", "--seed", "12", "--input=s=3"]
    saved = case_file("generated", "ascend950", text, "failure", flags, 1401)
    assert saved.endswith(text) and saved.startswith("// Found by bench/fuzz.py --seed 1401: generated kernel")
    assert case_runs(saved, "0-generated-ascend950.pto") == [(flags, "PASS")]
    mutant_case = case_file("structure", "a2a3", text, "failure", None)
    assert case_runs(mutant_case, "3-structure-a2a3.pto") == [(["--target", "a2a3", "--run", "--input=s=3"],
                                                               "no-internal-error")]
    assert case_runs(text, "k.pto") == [(["--target", t, "--run", "--input=s=3"], "PASS") for t in TARGET_NAMES]
    assert case_problem(Outcome(1, 0.1, False, "k.pto:1:1: error: x"), "no-internal-error") is None
    assert case_problem(Outcome(70, 0.1, False, "internal error"), "no-internal-error") == "internal error (exit 70)"
    assert case_problem(Outcome(1, 0.1, False, "error"), "PASS") == "exit 1, not PASS"
    assert case_problem(Outcome(1, 0.1, False, "error"), "exit 1") is None


ILL = Path(__file__).parent / "ill_conditioned" / "rowsum_sub_recip.pto"


def _ill_inputs():
    """Row 0 of x sums to 1 exactly and to 0 left to right; y is 1 + 2**-10, so z's row 0 is 1024
    (exact sum) or 0.999 (left to right).  Row 1 sums exactly in any order: z = 1/(3 - 7) = -0.25."""
    x = np.zeros((2, 8), np.float32)
    x[0, :3] = [2.0**24, 1.0, -(2.0**24)]
    x[1] = np.arange(8, dtype=np.float32) / 4
    y = np.full((2, 8), 1 + 2.0**-10, np.float32)
    y[1] = 3.0
    return {"x": x, "y": y}


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_a_fail_that_the_summation_order_decides_is_ill_conditioned_not_a_failure(target):
    """The stop-22 finding in small: row sum -> trowexpandsub -> trecip.  ptoc's order gives 0.999
    where the golden model's exact sum gives 1024, so ``--run`` FAILs; the golden model summing
    left to right or as a pairwise tree gives 0.999 too, so the fuzzer files it as ill-conditioned,
    neither a PASS nor a ptoc bug."""
    text = ILL.read_text()
    res = api.check(api.parse(text, "k.pto"), target, _ill_inputs())
    (z,) = res.comparisons
    assert not z.ok and z.mismatch[0] == (0, 0) and z.mismatch[2] == 1024.0
    np.testing.assert_array_equal(res.outputs["z"].reshape(2, 8)[1], np.full(8, -0.25, np.float32))

    why = order_dependent(text, target, 0, _ill_inputs())
    assert why is not None and why.startswith("z: all 8 element(s)") and "at (0, 0)" in why, why
    found = Campaign()
    found.record("generated", target, text, Outcome(3, 0.1, False, z.line()), why)
    assert found.ill_conditioned and not found.failures


def test_a_mismatch_where_every_summation_order_agrees_stays_a_failure(monkeypatch):
    """A wrong element in row 1 (which sums exactly in any order) is ptoc's bug even though row 0 is
    ill-conditioned: the executor's output is corrupted there and the fuzzer must not excuse it."""
    real = api.run

    def corrupted(*args, **kwargs):
        res = real(*args, **kwargs)
        res.outputs["z"].reshape(2, 8)[1, 3] = 7.0
        return res

    monkeypatch.setattr(api, "run", corrupted)
    assert order_dependent(ILL.read_text(), "a2a3", 0, _ill_inputs()) is None


def test_the_golden_models_other_summation_orders_match_numpy_f32_loops():
    """``E.sum_in_order``: left to right, right to left and the pairwise tree, each partial sum
    rounded to f32, against NumPy f32 scalar loops; rows of mixed scale, so the orders differ."""
    from pto_compiler.runtime import elementwise as E

    rng = np.random.default_rng(3)
    x = (rng.standard_normal((6, 13)) * 10.0 ** rng.integers(-4, 8, (6, 13))).astype(np.float32)

    def loop(row):
        acc = row[0]
        for v in row[1:]:
            acc = np.float32(acc + v)
        return acc

    def pairwise(row):
        row = list(row)
        while len(row) > 1:
            row += [np.float32(0)] * (len(row) % 2)
            row = [np.float32(row[k] + row[k + 1]) for k in range(0, len(row), 2)]
        return row[0]

    want = {"sequential": [loop(r) for r in x], "reverse": [loop(r[::-1]) for r in x],
            "pairwise": [pairwise(r) for r in x]}
    for order, rows in want.items():
        np.testing.assert_array_equal(E.sum_in_order(x, 1, order), np.array(rows, np.float32), err_msg=order)
        np.testing.assert_array_equal(E.sum_in_order(x.T, 0, order), np.array(rows, np.float32), err_msg=order)
    np.testing.assert_array_equal(E.sum_in_order(x, 1, "exact"), E.reduce_sum(x, 1))
    assert len({tuple(E.sum_in_order(x, 1, o)) for o in E.SUM_ORDERS}) == 4
    ints = rng.integers(-100, 100, (3, 9)).astype(np.int16)
    np.testing.assert_array_equal(E.sum_in_order(ints, 1, "sequential"), ints.sum(1).astype(np.int16))
