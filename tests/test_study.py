"""bench/study/: the SIMD VF study's 26 variants (seeds/001) in PTO-AS with vf code run on the
executor and match the study's formulas (bench/study_fit.py's NumPy reference); the model's VF
count and PUSH_PB equal the study's where the variant launches what the study's code shows."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
import study_fit  # noqa: E402


@pytest.mark.parametrize("name", list(study_fit.STUDY))
def test_variant_matches_reference(name):
    stats, out, want = study_fit.run(name, seed=1)
    assert study_fit.matches(name, out, want)
    vf_count, _pushq, push_pb = study_fit.STUDY[name]
    if push_pb is not None:  # broadcast cases: the launches are the kernel's own
        assert stats.vf["vf_count"] == vf_count
        assert stats.vf["push_pb"] == push_pb  # one PB push per launch, two for three address strides
    else:
        assert stats.vf["push_pb"] == 4 * stats.vf["vf_count"]


@pytest.mark.parametrize("name", ["tail_axis_1_naive", "head_axis_1_naive", "mid_axis_1_naive", "mid_axis_2_vfloop_nb"])
def test_default_pipeline_folds_the_study_launch_loops(name):
    """The study's own per-row / per-block launch loops (offsets computed in the loop, V barriers
    between launches) compiled with the default pipeline: vf-fuse-launches moves the loops into
    one VF, which still computes the study's formula."""
    stats, out, want = study_fit.run(name, seed=2, vf_opt="default")
    assert study_fit.matches(name, out, want)
    assert stats.vf["vf_count"] == 1
