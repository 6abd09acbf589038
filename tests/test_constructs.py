"""PTOAS constructs the corpus uses (issue 12 item 3): each compiled and run on both targets,
the executor's outputs checked against NumPy written from the construct's meaning."""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import cli

TARGETS = ("a2a3", "ascend950")
T16 = "!pto.tile_buf<vec, 16x16xf32>"
PV = "!pto.partition_tensor_view<16x16xf32>"


def _views(names):
    lines = ["%c0 = arith.constant 0 : index", "%c1 = arith.constant 1 : index", "%c16 = arith.constant 16 : index"]
    for n in names:
        lines.append(f"%{n}v = pto.make_tensor_view %{n}, shape = [%c16, %c16], strides = [%c16, %c1] "
                     ": !pto.tensor_view<?x?xf32>")
        lines.append(f"%{n}p = pto.partition_view %{n}v, offsets = [%c0, %c0], sizes = [%c16, %c16] "
                     f": !pto.tensor_view<?x?xf32> -> {PV}")
    return "\n    ".join(lines)


def _run(tmp_path, capsys, src: str, target: str, inputs: dict, extra=()):
    path = tmp_path / "k.pto"
    path.write_text(src)
    args = [str(path), "--target", target, "--run", "--save-outputs", str(tmp_path / "o"), *extra]
    for name, value in inputs.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    rc = cli.main(args)
    out, err = capsys.readouterr()
    return rc, out, err


CALL_KERNEL = f"""
module {{
  func.func @kernel(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %z: !pto.ptr<f32>) {{
    {_views("xyz")}
    %a = pto.alloc_tile : {T16}
    %b = pto.alloc_tile : {T16}
    pto.tload ins(%xp : {PV}) outs(%a : {T16})
    pto.tload ins(%yp : {PV}) outs(%b : {T16})
    func.call @axpb(%a, %b) : ({T16}, {T16}) -> ()
    pto.tstore ins(%a : {T16}) outs(%zp : {PV})
    return
  }}
  func.func private @axpb(%p: {T16}, %q: {T16}) {{
    %two = func.call @two() : () -> f32
    pto.tmuls ins(%p, %two : {T16}, f32) outs(%p : {T16})
    pto.tadd ins(%p, %q : {T16}, {T16}) outs(%p : {T16})
    return
  }}
  func.func private @two() -> f32 {{
    %c = arith.constant 2.0 : f32
    return %c : f32
  }}
}}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_func_call_is_inlined_and_runs(target, tmp_path, capsys):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 16)).astype(np.float32)
    y = rng.standard_normal((16, 16)).astype(np.float32)
    rc, out, err = _run(tmp_path, capsys, CALL_KERNEL, target, {"x": x, "y": y})
    assert rc == 0, out + err
    assert out.startswith("PASS z"), out
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "z.npy"), x * np.float32(2) + y)


def test_recursive_call_is_a_located_error(tmp_path, capsys):
    src = "func.func @k() {\n  func.call @k() : () -> ()\n  func.return\n}\n"
    path = tmp_path / "r.pto"
    path.write_text(src)
    assert cli.main([str(path), "--emit", "program"]) == 1
    assert f"{path}:2:3: error: 'func.call' op call chain deeper than 64 (recursion?)" in capsys.readouterr().err
