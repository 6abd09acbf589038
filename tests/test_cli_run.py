"""``ptoc FILE --target a2a3 --run`` and friends (issue 5, item 4), and ``api.lower`` / ``api.run``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pto_compiler import api, cli, pipeline
from pto_compiler.runtime.program import Instr, Program

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["vadd", "vadd_synced", "softmax", "layernorm", "rowclamp_manual", "rowscale300"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_run_pass(name, capsys):
    rc = cli.main([f"examples/{name}.pto", "--target", "a2a3", "--run"])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    lines = out.splitlines()
    assert lines and all(line.startswith("PASS ") for line in lines), out
    assert err == ""


def test_default_output_is_the_program(capsys):
    assert cli.main(["examples/softmax.pto", "--target", "a2a3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(".kernel @softmax target=a2a3\n.gm @x f32[64,256]\n.gm @y f32[64,256]\n")
    assert "vbrcb.f32 dst=0x2e000" in out and "pto.trowexpandsub" in out


def test_emit_placed_has_addresses_and_syncs(capsys):
    assert cli.main(["examples/softmax.pto", "--target", "a2a3", "--emit", "placed"]) == 0
    out = capsys.readouterr().out
    assert "ub_addr = " in out and "pto.set_flag" in out and "expand_mode = 1" in out


def test_emit_program_of_every_function(tmp_path, capsys):
    src = tmp_path / "two.pto"
    src.write_text("func.func @f(%a: !pto.tile<8x64xf32>) -> !pto.tile<8x64xf32> {\n"
                   "  %d = pto.texp %a : !pto.tile<8x64xf32> -> !pto.tile<8x64xf32>\n"
                   "  return %d : !pto.tile<8x64xf32>\n}\n"
                   "func.func @g(%a: !pto.tile<8x64xf16>) -> !pto.tile<8x64xf16> {\n"
                   "  %d = pto.tabs %a : !pto.tile<8x64xf16> -> !pto.tile<8x64xf16>\n"
                   "  return %d : !pto.tile<8x64xf16>\n}\n")
    assert cli.main([str(src)]) == 0
    out = capsys.readouterr().out
    assert out.index(".kernel @f") < out.index(".kernel @g")
    assert "vexp.f32" in out and "vabs.f16" in out
    assert cli.main([str(src), "--entry", "g"]) == 0
    out = capsys.readouterr().out
    assert ".kernel @f" not in out and ".kernel @g" in out


def test_stats_trace_and_saved_outputs(tmp_path, capsys):
    trace = tmp_path / "t.json"
    out_dir = tmp_path / "out"
    rc = cli.main(["examples/vadd.pto", "--target", "a2a3", "--run", "--seed", "7", "--stats", "json",
                   "--trace", str(trace), "--save-outputs", str(out_dir)])
    out = capsys.readouterr().out
    assert rc == 0
    first, rest = out.split("\n", 1)
    assert first == "PASS z 0"
    stats = json.loads(rest)
    assert stats["total_cycles"] > 0 and stats["instruction_counts"]["vadd"] == 1
    assert set(stats["pipes"]) == {"S", "V", "MTE2", "MTE3"}
    host = stats["host_seconds"]  # where the host time went: its shape, never its values
    assert list(host) == ["parse", "passes", "emit", "execute", "golden", "compare"]
    assert list(host["passes"]) == ["verify", "pto-select-expand-mode", "pto-tmp-strategy", "pto-plan-memory",
                                    "pto-insert-sync", "pto-lower-a2a3", "a2a3-complete-barriers"]
    assert all(v >= 0 for v in [*host["passes"].values()] + [v for k, v in host.items() if k != "passes"])
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e["name"] == "vadd" for e in events)
    z = np.load(out_dir / "z.npy")
    assert z.shape == (32, 32) and z.dtype == np.float32


def test_stats_text_without_run(capsys):
    assert cli.main(["examples/softmax.pto", "--stats"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cycle model (a2a3): total ")
    assert "PASS" not in out
    host = out.split("\nhost time: ", 1)[1].splitlines()
    assert [line.split()[0] for line in host[1:]] == ["parse", *["pass"] * 7, "emit", "execute", "golden", "compare"]


def test_given_inputs_and_seed(tmp_path, capsys):
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    np.save(tmp_path / "x.npy", x)
    rc = cli.main(["examples/vadd.pto", "--run", "--input", f"x={tmp_path / 'x.npy'}", "--seed", "3",
                   "--save-outputs", str(tmp_path / "o")])
    assert rc == 0, capsys.readouterr().err
    z = np.load(tmp_path / "o" / "z.npy")
    module = api.parse((REPO / "examples/vadd.pto").read_text())
    y = api.reference(module, api.make_inputs(module, {"x": x}, seed=3))["z"]
    assert np.array_equal(z, y)
    assert not np.array_equal(z, x)  # y is random, not zero


BLOCKS = """
module {
  func.func @vadd_blocks(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %z: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %b64 = pto.get_block_idx : i64
    %b = arith.index_cast %b64 : i64 to index
    %row = arith.muli %b, %c16 : index
    %xv = pto.make_tensor_view %x, shape = [%c32, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c32, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %zv = pto.make_tensor_view %z, shape = [%c32, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%row, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    %yp = pto.partition_view %yv, offsets = [%row, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    %zp = pto.partition_view %zv, offsets = [%row, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    %a = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32>
    %t = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32>
    pto.tload ins(%xp : !pto.partition_tensor_view<16x64xf32>) outs(%a : !pto.tile_buf<vec, 16x64xf32>)
    pto.tload ins(%yp : !pto.partition_tensor_view<16x64xf32>) outs(%t : !pto.tile_buf<vec, 16x64xf32>)
    pto.tadd ins(%a, %t : !pto.tile_buf<vec, 16x64xf32>, !pto.tile_buf<vec, 16x64xf32>) outs(%a : !pto.tile_buf<vec, 16x64xf32>)
    pto.tstore ins(%a : !pto.tile_buf<vec, 16x64xf32>) outs(%zp : !pto.partition_tensor_view<16x64xf32>)
    return
  }
}
"""


def test_blocks_each_take_their_rows(tmp_path, capsys):
    src = tmp_path / "blocks.pto"
    src.write_text(BLOCKS)
    assert cli.main([str(src), "--run", "--blocks", "2", "--save-outputs", str(tmp_path / "o")]) == 0
    assert capsys.readouterr().out == "PASS z 0\n"
    assert cli.main([str(src)]) == 0
    assert "src=@x+%block_idx*4096" in capsys.readouterr().out


def test_blocks_storing_the_same_gm_race(capsys):
    assert cli.main(["examples/vadd.pto", "--run", "--blocks", "2"]) == 4
    out, err = capsys.readouterr()
    assert out == "PASS z 0\n"
    assert "they run in different blocks (0 and 1)" in err


def test_mismatch_exits_3_with_first_mismatch(monkeypatch, capsys):
    from pto_compiler.runtime import reference

    real = reference.evaluate

    def off_by_one(module, values, entry=None, **blocks):
        out = real(module, values, entry, **blocks)
        out["z"] = out["z"].copy()
        out["z"][1, 2] += 1
        return out

    monkeypatch.setattr(reference, "evaluate", off_by_one)
    rc = cli.main(["examples/vadd.pto", "--run"])
    out = capsys.readouterr().out
    assert rc == 3
    assert out.startswith("FAIL z 1 first mismatch at (1, 2): got ")
    assert " want " in out


def _drop(program: Program, pred) -> Program:
    body = [n for n in program.body if not (isinstance(n, Instr) and pred(n))]
    return Program(program.target, program.gm_args, body, program.scalar_args, program.name)


@pytest.mark.parametrize(("drop", "kind"), [
    (lambda i: i.opcode in ("set_flag", "wait_flag") and i.args["dst_pipe"] == "MTE3", "race"),
    (lambda i: i.opcode == "set_flag" and i.args["dst_pipe"] == "MTE3", "deadlock"),
])
def test_race_or_deadlock_exits_4(monkeypatch, capsys, drop, kind):
    real = pipeline.compile_module

    def broken(*args, **kwargs):
        prog = real(*args, **kwargs)
        return _drop(prog, drop) if isinstance(prog, Program) else prog

    monkeypatch.setattr(pipeline, "compile_module", broken)
    rc = cli.main(["examples/vadd.pto", "--run"])
    out, err = capsys.readouterr()
    assert rc == 4
    assert f"error: {kind}" in err
    assert "vadd.pto:" in err  # located at the tile op the instruction came from
    if kind == "race":
        assert out.startswith("PASS z") or out.startswith("FAIL z")  # the run still finished


def test_no_a2a3_lowering_is_a_located_error(tmp_path, capsys):
    src = tmp_path / "k.pto"
    src.write_text("func.func @k(%a: !pto.tile<8x64xf32>, %b: !pto.tile<8x64xf32>) -> !pto.tile<8x64xf32> {\n"
                   "  %d = pto.tpack %a : !pto.tile<8x64xf32> -> !pto.tile<8x64xf32>\n"
                   "  return %d : !pto.tile<8x64xf32>\n}\n")
    assert cli.main([str(src), "--run"]) == 1
    err = capsys.readouterr().err
    assert f"{src}:2:8: error: 'pto.tpack' op has no a2a3 lowering" in err
    assert "Traceback" not in err


def test_api_lower_and_run():
    module = api.parse((REPO / "examples/softmax.pto").read_text(), "softmax.pto")
    program = api.compile(module, "a2a3")
    assert program.name == "softmax" and program.to_text().startswith(".kernel @softmax")
    x = np.random.default_rng(0).uniform(-2, 2, (64, 256)).astype(np.float32)
    y = np.zeros_like(x)
    res = api.run(program, {"x": x, "y": y})
    e = np.exp(x - x.max(axis=1, keepdims=True))
    assert np.allclose(res.outputs["y"], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert res.stats.total_cycles > 0 and not res.findings
    racy = api.run(_drop(program, lambda i: i.opcode == "pipe_barrier"), {"x": x, "y": y})
    assert racy.findings and {f.kind for f in racy.findings} == {"race"}
    assert racy.diagnostics[0].filename == "softmax.pto" and racy.diagnostics[0].line > 0


def test_compare_rule():
    want = {"s": np.array([1000.0, 0.0], np.float32), "e": np.array([1.0, -0.0], np.float32)}
    got = {"s": np.array([1000.5, 0.0009], np.float32), "e": np.array([1.0, 0.0], np.float32)}
    res = {c.name: c for c in pipeline.compare_outputs(got, want, {"s"})}
    assert res["s"].ok and res["s"].rule.startswith("float sum")
    assert not res["e"].ok and res["e"].mismatch[0] == (1,)  # -0 vs +0: not bit-exact
    got["s"] = np.array([1001.5, 0.0], np.float32)
    assert not pipeline.compare_outputs(got, want, {"s"})[0].ok
    h = {"h": np.array([10.0], np.float16)}
    assert pipeline.compare_outputs({"h": np.array([10.1], np.float16)}, h, {"h"})[0].ok



def _ill_conditioned_args(tmp_path) -> list[str]:
    """tests/fuzz/test_fuzz.py's inputs of its ill-conditioned kernel as ``--input`` files: z's row 0
    is 1024 with the golden model's exact sum and 0.999 with ptoc's; row 1 sums exactly in any order."""
    from tests.fuzz.test_fuzz import _ill_inputs

    for name, value in _ill_inputs().items():
        np.save(tmp_path / f"{name}.npy", value)
    return ["--input", f"x={tmp_path / 'x.npy'}", "--input", f"y={tmp_path / 'y.npy'}"]


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_run_says_ill_conditioned_where_the_summation_order_decides(target, tmp_path, capsys):
    """A row sum, subtracted from values near it, then the reciprocal: the golden model summing left
    to right or as a pairwise tree fails at the same elements, so ``--run`` says ``ILL-CONDITIONED``
    with why (exit 5), not FAIL."""
    from tests.fuzz.test_fuzz import ILL

    rc = cli.main([str(ILL), "--target", target, "--run", *_ill_conditioned_args(tmp_path)])
    out = capsys.readouterr().out
    assert rc == cli.EXIT_ILL_CONDITIONED == 5, out
    assert out.startswith("ILL-CONDITIONED z ") and "first mismatch at (0, 0)" in out, out
    assert "want 1024 (all 8 element(s) failing" in out and "golden exact 1024, sequential" in out, out


def test_a_wrong_element_every_summation_order_agrees_on_stays_a_fail(tmp_path, capsys, monkeypatch):
    """A corrupted element in row 1 (which sums exactly in any order) makes z a FAIL (exit 3) though
    row 0 is ill-conditioned: the executor is wrong there whatever the order."""
    from tests.fuzz.test_fuzz import ILL

    def corrupt(res):
        res.outputs["z"].reshape(2, 8)[1, 3] = 7.0
        return res

    real = api.run
    monkeypatch.setattr(api, "run", lambda *args, **kwargs: corrupt(real(*args, **kwargs)))
    rc = cli.main([str(ILL), "--target", "a2a3", "--run", *_ill_conditioned_args(tmp_path)])
    out = capsys.readouterr().out
    assert rc == cli.EXIT_MISMATCH and out.startswith("FAIL z "), out
