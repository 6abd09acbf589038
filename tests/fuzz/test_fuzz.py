"""A short seeded fuzz campaign (issue 15; bench/fuzz.py runs the long one): byte-, token- and
structure-level mutants of the examples and lit inputs, and generated well-typed kernels, each
compiled and run with ``--run`` on both targets.  No internal error, no run over 10 s, and every
generated kernel PASSes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pto_compiler.fuzz import MUTATION_KINDS, TARGET_NAMES, campaign, mutant, repo_sources, run_ptoc
from pto_compiler.fuzz_kernels import random_kernel

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


def test_a_run_over_the_limit_is_a_timeout():
    """The deadline interrupts a long run (a 10^9-trip loop) and the case counts as a timeout."""
    text = (REPO / "examples" / "vadd.pto").read_text()
    o = run_ptoc(text, ["--run", "--max-steps", "1000000000", "--blocks", "4096"], limit_s=0.5)
    assert o.timed_out and o.rc == 130


CASES = sorted((Path(__file__).parent / "cases").glob("*.pto"))


@pytest.mark.parametrize("target", TARGET_NAMES)
@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_cases_the_fuzzer_found_pass(case, target):
    """Kernels bench/fuzz.py generated that ptoc got wrong (each file says how): now PASS."""
    o = run_ptoc(case.read_text(), ["--target", target, "--run"], limit_s=60)
    assert o.rc == 0 and o.output.startswith("PASS"), o.output
