"""api.KernelBuilder, the front-end example (examples/frontend/) and the README's API example."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.api import PtocError

REPO = Path(__file__).resolve().parent.parent


def _line_of(marker: str) -> int:
    return next(i for i, line in enumerate(Path(__file__).read_text().split("\n"), 1) if marker in line)


def test_ops_are_located_at_the_python_call_and_verified_as_built():
    kb = api.KernelBuilder("bad")
    a, b = kb.tile("f32", (16, 64)), kb.tile("f16", (16, 64))
    with pytest.raises(PtocError) as info:
        kb.tadd(a, b)  # MARK-tadd
    d = info.value.diagnostics[0]
    assert (d.filename, d.line, d.column) == (__file__, _line_of("# MARK-tadd"), 9)
    assert d.message == "'pto.tadd' op dst, src0 and src1 must have the same element type (got f32, f32, f16)"
    assert d.source_line.strip() == "kb.tadd(a, b)  # MARK-tadd"


def test_target_errors_at_compile_quote_the_python_line():
    kb = api.KernelBuilder("div_int")
    x = kb.gm("x", "i32", (8, 64))
    t = kb.tile("i32", (8, 64))
    kb.tload(x, out=t)
    kb.tstore(kb.tdiv(t, t), out=x)  # MARK-tdiv
    module = kb.finish()
    with pytest.raises(PtocError) as info:
        api.compile(module, "a2a3")
    d = info.value.diagnostics[0]
    assert (d.line, d.column) == (_line_of("# MARK-tdiv"), 15)
    assert "i32 is not supported on a2a3" in d.message and "MARK-tdiv" in d.source_line


def test_given_locations_and_unknown_ops():
    kb = api.KernelBuilder("k")
    t = kb.tile("f32", (8, 64), loc=("kernel.dsl", 3, 7))
    assert api.print_module(kb.finish(), debuginfo=True).count('loc("kernel.dsl":3:7)') == 1
    kb = api.KernelBuilder("k")
    with pytest.raises(PtocError) as info:
        kb.op("tadx", t)
    assert "unknown tile op 'tadx'" in info.value.diagnostics[0].message
    with pytest.raises(AttributeError):
        kb.no_such_op(t)


def test_every_tile_op_is_a_method():
    from pto_compiler.dialects import pto

    kb = api.KernelBuilder("k")
    for name in pto.TILE_OPS:
        if "." not in name[4:]:
            assert callable(getattr(kb, name[4:]))


def test_partitions_and_scalars():
    """z[8:16, :] = x[0:8, :] * s for a scalar argument s: rows 0..7 of z untouched."""
    kb = api.KernelBuilder("part")
    x, z = kb.gm("x", "f32", (16, 64)), kb.gm("z", "f32", (16, 64))
    s = kb.scalar("s", "f32")
    t = kb.tile("f32", (8, 64))
    kb.tload(x[0:8], out=t)
    kb.tstore(kb.tmuls(t, s), out=z[8:16, :])
    module = kb.finish()
    x_in = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    z_in = np.full((16, 64), -1.0, np.float32)
    for target in ("a2a3", "ascend950"):
        out = api.run(api.compile(module, target), {"x": x_in, "z": z_in, "s": 0.5}).outputs["z"]
        assert np.array_equal(out[:8], z_in[:8]) and np.array_equal(out[8:], x_in[:8] * np.float32(0.5))


def test_frontend_example_runs():
    r = subprocess.run([sys.executable, "examples/frontend/run.py"], cwd=REPO, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["softmax a2a3", "softmax ascend950", "layernorm a2a3",
                                                      "layernorm ascend950"]
    assert all("golden PASS, numpy PASS" in line for line in lines)


def test_readme_api_example_runs():
    text = (REPO / "README.md").read_text()
    block = re.search(r"## Python API.*?```python\n(.*?)```", text, re.S).group(1)
    exec(compile(block, "README.md", "exec"), {"__name__": "readme"})


def test_bad_types_and_attributes_are_located_ptoc_errors():
    kb = api.KernelBuilder("k")
    with pytest.raises(PtocError) as info:
        kb.tile("f99", (8, 64))  # MARK-f99
    d = info.value.diagnostics[0]
    assert d.line == _line_of("# MARK-f99") and "'!pto.tile_buf<vec, 8x64xf99>'" in d.message
    t = kb.tile("f32", (8, 64))
    with pytest.raises(PtocError) as info:
        kb.tcvt(t, out=kb.tile("f16", (8, 64)), rmode="#pto<round_mode")  # MARK-attr
    assert info.value.diagnostics[0].line == _line_of("# MARK-attr")
    with pytest.raises(PtocError) as info:
        kb.tadd(t, "not a value")
    assert info.value.exit_code == 70 and isinstance(info.value.__cause__, Exception)
