"""Differential matrix of the ascend950 backend: the VF executor's output == golden model.

The cases of tests/test_diff_a2a3.py (every op variant, R in {1, 7, 8, 9, 16, 240, 255, 256, 257,
300} rows, the same column configurations), in every element type the **A5** lists of
dialects/pto.py allow (int8/uint8/uint16/uint32/bf16/int64/uint64 where the ISA page does),
compiled in-process by the default ascend950 pipeline (pto-bufferize, pto-select-expand-mode,
pto-tmp-strategy, pto-plan-memory at 256 KiB, pto-insert-sync, pto-lower-vf, the VF optimisation
passes, program emission; a third of the sample also without those passes, --vf-opt=none),
executed with hazard checking (``vf_call`` on the V pipe through the VF executor), and compared
with the golden model by the ``--run`` rule: bit-exact, float sums (TROWSUM/TCOLSUM) within
``rtol * (|want| + 1)``.

``pytest -m full tests/test_diff_ascend950.py`` runs the whole matrix; CI runs a seeded sample
that covers every op variant with every row count, every (op, dtype) pair and every column
configuration at least once.
"""

from __future__ import annotations

import random
import zlib

import pytest

import test_diff_a2a3 as M
from pto_compiler import api, pipeline
from pto_compiler.dialects import pto
from pto_compiler.passes import lower_vf
from pto_compiler.runtime import reference as golden
from pto_compiler.targets import ASCEND950

ROWS = M.ROWS
ORDER = ("f32", "f16", "bf16", "i32", "i16", "i8", "ui32", "ui16", "ui8", "i64", "ui64")


def a5_dtypes(op: str) -> list[str]:
    allowed = pto.TILE_OPS[f"pto.{op}"].DTYPES["ascend950"]
    return [d for d in ORDER if d in allowed]


# (a saturating widening conversion is a located error on ascend950: tests/test_vector_catalogue.py)
CVT_PAIRS = tuple(p for p in M.CVT_PAIRS if not (p[2] == "SAT" and M.ESIZE[p[0]] < M.ESIZE[p[1]])) + (
    ("bf16", "f32", "CAST_RINT"), ("f32", "bf16", "CAST_RINT"), ("ui16", "ui8", "CAST_RINT"),
    ("i16", "i32", "CAST_RINT"), ("i64", "i32", "CAST_RINT"), ("ui16", "i16", "SAT"), ("i16", "i8", "SAT"))


def variants():
    """(op, variant, [dtypes]) as tests/test_diff_a2a3.py, with the A5 dtype lists."""
    out = []
    for op, variant, dts in M.variants():
        if op == "tcvt":
            continue
        if op == "tmov":
            out.append((op, variant, a5_dtypes(op)))
            continue
        if (op == "taxpy" and "-" in variant) or pto.TILE_OPS[f"pto.{op}"].DTYPES is None:
            out.append((op, variant, dts))  # a mixed-type form: its dst type only; type pairs: as a2a3
            continue
        out.append((op, variant, a5_dtypes(op)))
    for src, dst, mode in CVT_PAIRS:
        out.append(("tcvt", f"{src}-{mode}", [dst]))
    for op, variant in (("tinterleave", ""), ("tdeinterleave", "two"), ("tdeinterleave", "one")):  # A5 only
        out.append((op, variant, a5_dtypes(op)))
    return out


def col_configs(R, dt, op, variant=""):
    return M.col_configs(R, dt, op, variant)


kernel = M.kernel


def _given(text: str):
    if "pto.ttri" in text:
        return {"s": -3}
    for t in ("ui8", "ui16", "ui32", "ui64"):
        if f"%s: {t}" in text:
            return {"s": 3}
    for t in ("i8", "i16", "i32", "i64"):
        if f"%s: {t}" in text:
            return {"s": -3}
    return None


def compile_text(text: str, filename: str = "<test>", vf_opt: str | None = None):
    """(original module, module at the vf level, ascend950 program): the default pipeline, with
    the VF optimisation passes unless ``vf_opt`` is "none" (pto-lower-vf's naive form)."""
    m = api.parse(text, filename)
    api.verify(m, ASCEND950)
    lowered = pipeline.compile_module(m, ASCEND950, stop_after="vf", vf_opt=vf_opt)
    lowered.verify()
    return m, lowered, lower_vf.lower_to_program(lowered, ASCEND950)


def check(text: str, seed: int = 0, given=None, vf_opt: str | None = None):
    m, _, prog = compile_text(text, vf_opt=vf_opt)
    values = golden.make_inputs(m, seed, None, given or {})
    want = golden.evaluate(m, values)
    res = pipeline.run_program(prog, pipeline.gm_inputs(values), pipeline.kernel_scalars(m, values), stats=False)
    return pipeline.compare_outputs(res.outputs, want, lower_vf.float_sum_outputs(m)), res.findings, prog


def all_cases():
    cases = []
    for op, variant, dts in variants():
        for dt in dts:
            for R in ROWS:
                for cols, C in col_configs(R, dt, op, variant):
                    cases.append((op, variant, dt, R, cols, C))
    return cases


def sample_cases(seed: int = 20240950):
    """Every op variant with every R (dtype and column config rotating), then every (op, dtype)
    pair and column config not yet covered."""
    rnd = random.Random(seed)
    out = []
    seen_dt, seen_cfg = set(), set()
    for op, variant, dts in variants():
        start = rnd.randrange(len(dts))
        for i, R in enumerate(ROWS):
            dt = dts[(start + i) % len(dts)]
            cfgs = col_configs(R, dt, op, variant)
            k = rnd.randrange(len(cfgs))
            out.append((op, variant, dt, R, *cfgs[k]))
            seen_dt.add((op, dt))
            seen_cfg.add((op, variant, k))
        for dt in dts:
            if (op, dt) not in seen_dt:
                R = rnd.choice(ROWS)
                out.append((op, variant, dt, R, *rnd.choice(col_configs(R, dt, op, variant))))
                seen_dt.add((op, dt))
        for k in range(4):
            if (op, variant, k) not in seen_cfg:
                R = rnd.choice((1, 7, 8, 9, 16))
                cfgs = col_configs(R, dts[0], op, variant)
                if k < len(cfgs):
                    out.append((op, variant, dts[0], R, *cfgs[k]))
    return out


def _id(case):
    op, variant, dt, R, cols, C = case
    return f"{op}{'-' + variant if variant else ''}-{dt}-R{R}-{cols}x{C}"


def run_case(case, vf_opt: str | None = None):
    text = kernel(*case)
    seed = zlib.crc32(_id(case).encode()) % 1000
    cmp, findings, _ = check(text, seed, M.domain_inputs(case, _given(text)), vf_opt)
    bad = [c.line() for c in cmp if not c.ok]
    assert cmp, "no outputs compared"
    assert not findings, "\n".join(str(f) for f in findings[:3])
    assert not bad, "\n".join(bad) + "\n" + text


@pytest.mark.parametrize("case", sample_cases(), ids=_id)
def test_sample(case):
    run_case(case)


@pytest.mark.parametrize("case", sample_cases()[::3], ids=_id)
def test_sample_naive(case):
    """A third of the sample again in pto-lower-vf's naive form (--vf-opt=none)."""
    run_case(case, "none")


@pytest.mark.full
@pytest.mark.parametrize("case", all_cases(), ids=_id)
def test_full(case):
    run_case(case)


@pytest.mark.full
@pytest.mark.parametrize("case", all_cases(), ids=_id)
def test_full_naive(case):
    run_case(case, "none")


def test_sample_covers_every_op_dtype_and_row_count():
    sample = sample_cases()
    ops = {(op, v) for op, v, _ in variants()}
    assert {(c[0], c[1]) for c in sample} == ops
    pairs = {(op, dt) for op, _, dts in variants() for dt in dts}
    assert {(c[0], c[2]) for c in sample} == pairs
    for op, v in ops:
        assert {c[3] for c in sample if (c[0], c[1]) == (op, v)} == set(ROWS), (op, v)
    lowered = {c[0] for c in sample}
    assert lowered >= {n.split(".", 1)[1] for n, cls in pto.TILE_OPS.items()
                       if cls.HAS_SEMANTICS and cls.DTYPES and cls.DTYPES.get("ascend950")
                       and n not in ("pto.tload", "pto.tstore", "pto.tprint")}  # tprint: test_constructs
