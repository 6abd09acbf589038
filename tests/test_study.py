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
