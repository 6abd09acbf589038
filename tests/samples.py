"""Where the PTOAS corpus is: ``$PTOC_SHARED/ptoas_samples``, else ``../shared/ptoas_samples`` beside the
repository.  It is not part of the repository, so tests that read it skip (with this reason) without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_SHARED = Path(os.environ.get("PTOC_SHARED") or Path(__file__).resolve().parents[2] / "shared")
SAMPLES_DIR = _SHARED / "ptoas_samples"
SAMPLES = sorted(SAMPLES_DIR.glob("*.pto")) + sorted((SAMPLES_DIR / "corpus").glob("*.pto"))
needs_samples = pytest.mark.skipif(
    not SAMPLES, reason=f"PTOAS corpus not found at {SAMPLES_DIR} (set PTOC_SHARED to the folder holding ptoas_samples/)"
)


VERIFIER_REJECTS = {
    "tools__ptobc__testdata__recent_ops_v0_roundtrip.pto":
        "a ptobc bytecode round-trip input (tools/ptobc/tests/recent_ops_v0_encode.sh never runs ptoas on it); "
        "PTOAS's verifier rejects its tgemv.mx: 'only supported on A5 targets', and on A5 its f16 a/b are not "
        "fp8 (lib/PTO/IR/PTO.cpp TGemvMxOp::verify, verifyA5MxTypeTriple)",
}
"""Files with no RUN line that PTOAS's own verifier rejects: file name -> why."""


def is_negative(path: Path) -> bool:
    """A file PTOAS must reject: ``RUN: not ptoas``, a file whose CHECK is PTOAS's error (an
    ``*_invalid`` file, plan_memory_reserve_buffer_manual_reject_nested_alloc), or one of
    ``VERIFIER_REJECTS``."""
    text = path.read_text(errors="replace")
    return "not ptoas" in text or "CHECK: error:" in text or path.name in VERIFIER_REJECTS
