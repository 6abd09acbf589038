"""The SIMD VF study (seeds/001) against ptoc's ascend950 cycle model, side by side.

Runs each transcribed variant in bench/study/ on the executor, checks its output against a NumPy
reference (max/add exact, sums to the study's |got - ref| <= 1e-3 (|ref| + 1)), and prints per
variant the study's counters, the model's, their ratio, and per case group whether the model
orders the variants as the study does (pairs that differ by more than 5 % in the study).

    python bench/study_fit.py
"""

from __future__ import annotations

import itertools
import pathlib
import sys

import numpy as np

from pto_compiler import api, pipeline
from pto_compiler.runtime import reference as golden
from pto_compiler.targets import TARGETS

HERE = pathlib.Path(__file__).resolve().parent / "study"

# seeds/001: (VF count, PUSHQ VF sum_cycles, PUSH_PB sum_cycles or None where not printed).
# The elemwise/reduce tables print VF count 5 where their code shows one asc_vf_call
# ("VF 计算位于 Compute()"); the other 4 launches cost next to nothing: PUSHQ VF exceeds the one
# VF's steady span by 3-4 cycles in total (elemwise 625 vs 621, max_ra 510 vs 506, max_ra unroll
# 358 vs 355: the "VF IPC" rows).  So they are launches outside Compute() the seed does not show;
# the model counts the kernel's one.
STUDY = {
    "tail_axis_1_naive": (17, 1247, 68), "tail_axis_2_distbrc": (1, 356, 8),
    "head_axis_1_naive": (17, 839, 68), "head_axis_2_vfloop_nm": (1, 275, 4), "head_axis_3_vfloop_mn": (1, 442, 4),
    "mid_axis_1_naive": (24, 1168, 96), "mid_axis_2_vfloop_nb": (8, 884, 32), "mid_axis_3_vfloop_bn": (8, 751, 32),
    "mid_axis_4_vfloop_mbn": (1, 593, 8), "mid_axis_5_vfloop_mnb": (1, 710, 8),
    "elemwise_axpy_baseline": (5, 625, None), "elemwise_axpy_unroll": (5, 646, None),
    "elemwise_axpy_pragma": (5, 640, None),
    "reduce_max_ar_baseline": (5, 699, None), "reduce_max_ar_unroll": (5, 592, None),
    "reduce_max_ar_pragma": (5, 699, None),
    "reduce_max_ra_baseline": (5, 510, None), "reduce_max_ra_unroll": (5, 358, None),
    "reduce_max_ra_pragma": (5, 524, None),
    "reduce_sum_ar_baseline": (5, 792, None), "reduce_sum_ar_unroll": (5, 670, None),
    "reduce_sum_ar_pragma": (5, 788, None), "reduce_sum_ar_binary": (5, 384, None),
    "reduce_sum_ra_baseline": (5, 757, None), "reduce_sum_ra_unroll": (5, 364, None),
    "reduce_sum_ra_pragma": (5, 720, None),
}


# pairs whose study order the model does not keep, with why
EXPLAINED = {
    ("reduce_sum_ra_baseline", "reduce_sum_ra_pragma"):
        "seeds/001 calls every pragma variant = its baseline (#pragma unroll keeps the one chain); "
        "this pair is 5.1 % apart, reduce_max_ra's -2.7 % the other way: noise no model orders",
}


def group(name: str) -> str:
    return name.rsplit("_", 1)[0] if name.startswith("reduce") else name.split("_", 1)[0]


def reference(name: str, x: dict) -> dict:
    """The study's formulas in NumPy (float32 math, float64 sums)."""
    if name.startswith("tail"):
        return {"y": x["x"] + x["a"].reshape(-1, 1)}
    if name.startswith("head"):
        return {"y": x["x"] + x["a"]}
    if name.startswith("mid"):
        return {"y": (x["x"].reshape(8, 3, -1) + x["a"].reshape(8, 1, -1)).reshape(24, -1)}
    if name.startswith("elemwise"):
        return {"z": np.float32(2.5) * x["x"] + x["y"]}
    axis = 1 if "_ar_" in name else 0
    if "max" in name:
        return {"z": x["x"].max(axis=axis).reshape(1, -1)}
    return {"z": x["x"].astype(np.float64).sum(axis=axis).reshape(1, -1)}


def run(name: str, seed: int = 0, vf_opt: str = "none"):
    """(model stats, outputs, reference) of one variant (``vf_opt`` "none": its VFs as written)."""
    text = (HERE / f"{name}.pto").read_text()
    module = api.parse(text, f"{name}.pto")
    values = golden.prepare_inputs(module, seed)
    rng = np.random.default_rng(seed)  # the study's inputs: uniform [-1, 1)
    gm = {k: rng.uniform(-1, 1, v.shape).astype(v.dtype) if k in ("x", "y", "a") else v
          for k, v in pipeline.gm_inputs(values).items()}
    program = pipeline.compile_module(module, TARGETS["ascend950"], vf_opt=vf_opt)
    res = pipeline.run_program(program, gm)
    if res.findings:
        raise SystemExit(f"{name}: the executor found {res.findings[0]}")
    return res.stats, res.outputs, reference(name, gm)


def matches(name: str, got: dict, want: dict) -> bool:
    for k, ref in want.items():
        g = np.asarray(got[k], np.float64)
        if "sum" in name:
            if not np.all(np.abs(g - ref) <= 1e-3 * (np.abs(ref) + 1)):
                return False
        elif not np.array_equal(got[k], ref.astype(got[k].dtype)):
            return False
    return True


def main() -> int:
    rows = {}
    print(f"{'variant':<26}{'VF':>4}{'/st':>4}{'PB':>5}{'/st':>5}{'PUSHQ VF':>10}{'study':>7}{'ratio':>7}  ok")
    for name in STUDY:
        stats, out, want = run(name)
        v = stats.vf
        vfc, pushq, pb = STUDY[name]
        ok = matches(name, out, want)
        rows[name] = v["pushq_vf"]
        print(f"{name:<26}{v['vf_count']:>4.0f}{vfc:>4}{v['push_pb']:>5.0f}{pb if pb is not None else '-':>5}"
              f"{v['pushq_vf']:>10.0f}{pushq:>7}{v['pushq_vf'] / pushq:>7.2f}  {'PASS' if ok else 'FAIL'}")
    print("\norders inside each case group (pairs > 5 % apart in the study):")
    for g, names in itertools.groupby(STUDY, group):
        names = list(names)
        bad = []
        pairs = 0
        for a, b in itertools.combinations(names, 2):
            sa, sb = STUDY[a][1], STUDY[b][1]
            if abs(sa - sb) <= 0.05 * min(sa, sb):
                continue
            pairs += 1
            if (sa < sb) != (rows[a] < rows[b]):
                why = EXPLAINED.get((a, b))
                bad.append(f"{a} vs {b}" + (f" ({why})" if why else " (unexplained)"))
        print(f"  {g:<16} {pairs - len(bad)}/{pairs} pairs in the study's order" + (f"; differ: {', '.join(bad)}" if bad else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
