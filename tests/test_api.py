"""pto_compiler.api: one call per ptoc step, strict inputs, findings as data, errors as PtocError,
and no shared state between threads."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.api import PtocError

REPO = Path(__file__).resolve().parent.parent


def _module(name: str):
    path = REPO / "examples" / name
    return api.parse(path.read_text(), str(path))


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layernorm(x, g, b):
    xc = x - x.mean(axis=1, keepdims=True)
    return xc / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + 1e-5) * g + b


def test_compile_every_level():
    module = _module("vadd.pto")
    assert api.compile(module, "a2a3", "pto").name == "builtin.module"
    assert "alloc_tile" in api.print_module(api.compile(module, "a2a3", "placed"))
    assert "vf.func" in api.print_module(api.compile(module, "ascend950", "vf"))
    assert api.compile(module, "a2a3").to_text().startswith(".kernel @vadd")
    with pytest.raises(PtocError) as info:
        api.compile(module, "a2a3", "vf")
    assert info.value.exit_code == 2


@pytest.mark.parametrize(("inputs", "fragment"), [
    ({"x": np.zeros((32, 32), np.float32)}, "missing input for argument(s) y, z"),
    ({"x": np.zeros((32, 32), np.float32), "y": np.zeros((32, 32), np.float32),
      "z": np.zeros((32, 32), np.float32), "w": 1.0}, "no kernel argument named 'w'"),
    ({"x": np.zeros((32, 32)), "y": np.zeros((32, 32), np.float32), "z": np.zeros((32, 32), np.float32)},
     "input 'x' has element type f64, expected f32"),
    ({"x": np.zeros((32, 31), np.float32), "y": np.zeros((32, 32), np.float32),
      "z": np.zeros((32, 32), np.float32)}, "input 'x' has shape (32, 31)"),
])
def test_inputs_are_checked_as_strictly_as_the_cli(inputs, fragment):
    """run() and reference() refuse the same inputs, with the same words (exit 2), never filling
    in zeros or casting."""
    module = _module("vadd.pto")
    program = api.compile(module, "a2a3")
    for call in (lambda: api.run(program, inputs), lambda: api.reference(module, inputs)):
        with pytest.raises(PtocError) as info:
            call()
        assert info.value.exit_code == 2 and fragment in info.value.diagnostics[0].message


_BF16_ADD = """func.func @k(%x: !pto.tile<16x16xbf16>, %y: !pto.tile<16x16xbf16>) -> !pto.tile<16x16xbf16> {
  %d = pto.tadd %x, %y : !pto.tile<16x16xbf16>, !pto.tile<16x16xbf16> -> !pto.tile<16x16xbf16>
  return %d : !pto.tile<16x16xbf16>
}
"""


def test_inputs_run_takes_are_what_checking_them_gives():
    """pipeline.program_inputs passes an array of the argument's element type, shape and C order
    through as it is (what reference.check_array would return, unchecked again), and checks any
    other value as before: another layout or shape of the same element count, raw bf16 bits, no
    ``resultN``; another element type is refused with the same words."""
    import ml_dtypes

    from pto_compiler import pipeline

    program = api.compile(_module("vadd.pto"), "a2a3")
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    exact = {"x": x, "y": x + 1, "z": np.zeros((32, 32), np.float32)}
    gm, scalars = pipeline.program_inputs(program, exact)
    assert all(gm[n] is exact[n] for n in "xyz") and scalars == {}
    others = {"x": np.asfortranarray(x), "y": (x + 1).reshape(-1), "z": np.zeros((64, 32), np.float32)[::2]}
    gm, _ = pipeline.program_inputs(program, others)
    for n in "xyz":
        want = pipeline._checked_array(n, np.dtype(np.float32), others[n], (32, 32))
        assert gm[n].shape == (32, 32) and gm[n].flags.c_contiguous and np.array_equal(gm[n], want)
        assert np.array_equal(gm[n], exact[n])

    bf = api.compile(api.parse(_BF16_ADD, "bf.pto"), "ascend950")
    a = np.arange(256, dtype=np.float32).reshape(16, 16).astype(ml_dtypes.bfloat16)
    raw = {"x": a.view(np.dtype("V2")), "y": a}  # raw bits of x; no result0
    gm, _ = pipeline.program_inputs(bf, raw)
    assert set(gm) == {"x", "y"} and gm["x"].dtype == a.dtype and np.array_equal(gm["x"].view(np.uint16),
                                                                               a.view(np.uint16))
    assert np.array_equal(api.run(bf, raw).outputs["result0"].view(np.uint16),
                          (a.astype(np.float32) * 2).astype(ml_dtypes.bfloat16).view(np.uint16))
    with pytest.raises(PtocError) as info:
        api.run(bf, {"x": a.astype(np.float32), "y": a})
    assert info.value.exit_code == 2
    assert info.value.diagnostics[0].message == "input 'x' has element type f32, expected bf16"


def test_run_and_reference_agree():
    module = _module("vadd.pto")
    rng = np.random.default_rng(1)
    inputs = {n: rng.uniform(-2, 2, (32, 32)).astype(np.float32) for n in "xyz"}
    got = api.run(api.compile(module, "a2a3"), inputs)
    want = api.reference(module, inputs)
    assert np.array_equal(got.outputs["z"], inputs["x"] + inputs["y"])
    assert np.array_equal(want["z"], inputs["x"] + inputs["y"])
    assert not got.findings and got.stats.total_cycles > 0


def test_check_fills_missing_inputs_as_the_cli_seeds_them():
    module = _module("softmax.pto")
    res = api.check(module, "a2a3", seed=7)
    assert res.ok and [c.name for c in res.comparisons] == ["y"]
    assert np.array_equal(res.inputs["x"], api.make_inputs(module, seed=7)["x"])
    assert np.allclose(res.outputs["y"], _softmax(res.inputs["x"]), rtol=1e-5, atol=1e-7)


def test_race_is_data_located_at_the_instruction():
    """vadd_synced.pto with its wait_flag removed, sync insertion off: a race, not an exception."""
    path = REPO / "examples" / "vadd_synced.pto"
    lines = path.read_text().split("\n")
    cut = next(i for i, line in enumerate(lines) if line.strip().startswith("pto.wait_flag"))
    text = "\n".join(lines[:cut] + lines[cut + 1:])
    res = api.check(api.parse(text, "racy.pto"), "a2a3", insert_sync=False)
    # the set_flag whose wait was removed is also left pending at the end (a "sync" finding)
    assert not res.ok and {f.kind for f in res.findings} == {"race", "sync"}
    d = res.diagnostics[0]
    assert d.filename == "racy.pto" and d.source_line == text.split("\n")[d.line - 1]


def test_errors_are_ptoc_errors_quoting_their_source():
    with pytest.raises(PtocError) as info:
        api.verify(api.parse("%d = pto.tadd %a : !pto.tile<8x8xf32> -> !pto.tile<8x8xf32>\n", "k.pto"))
    d = info.value.diagnostics[0]
    assert (d.filename, d.line, d.column) == ("k.pto", 1, 6)
    assert str(info.value).split("\n")[1] == "%d = pto.tadd %a : !pto.tile<8x8xf32> -> !pto.tile<8x8xf32>"
    with pytest.raises(PtocError) as info:
        api.compile(_module("vadd.pto"), "no-such-target")
    assert info.value.exit_code == 2 and "unknown target 'no-such-target'" in info.value.diagnostics[0].message
    with pytest.raises(PtocError) as info:
        api.run(object(), {})  # not a program: an internal error, still a PtocError
    assert info.value.exit_code == 70


def test_threads_compile_and_run_different_kernels_at_once():
    """Four kernels on eight threads, each compiled for both targets and run: every result is the
    NumPy one, and every error message quotes its own file."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, (64, 256)).astype(np.float32)
    xl = rng.uniform(-2, 2, (32, 128)).astype(np.float32)
    g, b = (rng.uniform(-2, 2, (1, 128)).astype(np.float32) for _ in range(2))
    a, c = (rng.uniform(-2, 2, (32, 32)).astype(np.float32) for _ in range(2))
    jobs = {
        "softmax.pto": ({"x": x, "y": np.zeros_like(x)}, "y", _softmax(x)),
        "layernorm.pto": ({"x": xl, "gamma": g, "beta": b, "y": np.zeros_like(xl)}, "y", _layernorm(xl, g, b)),
        "vadd.pto": ({"x": a, "y": c, "z": np.zeros_like(a)}, "z", a + c),
    }
    errors: list = []
    results: dict = {}

    def work(name: str, target: str) -> None:
        try:
            if name == "bad":
                text = f"%d = pto.tadd %a : !pto.tile<8x8x{target[:3]}> -> !pto.tile<8x8xf32>\n"
                try:
                    api.verify(api.parse(text, f"{target}.pto"))
                except PtocError as e:
                    results[name, target] = str(e)
                return
            inputs, out, want = jobs[name]
            res = api.run(api.compile(_module(name), target), inputs)
            results[name, target] = (np.allclose(res.outputs[out], want, rtol=1e-4, atol=1e-5), res.findings)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append((name, target, e))

    threads = [threading.Thread(target=work, args=(n, t)) for n in (*jobs, "bad") for t in ("a2a3", "ascend950")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for name in jobs:
        for target in ("a2a3", "ascend950"):
            assert results[name, target] == (True, []), (name, target)
    for target in ("a2a3", "ascend950"):
        assert results["bad", target].startswith(f"{target}.pto:1:")
        assert f"!pto.tile<8x8x{target[:3]}>" in results["bad", target].split("\n")[1]
