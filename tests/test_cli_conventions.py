"""Command-line conventions (issue 14): printed IR as input, PTOAS's flags, sync insertion off with the
race detector checking a kernel's own flags, the pipeline and the IR between passes, "did you mean",
``python -m pto_compiler``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pto_compiler import cli

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TILE_EXAMPLES = ["vadd", "vadd_synced", "softmax", "layernorm", "rowclamp_manual", "rowscale300"]


def _run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=120, cwd=REPO)


@pytest.mark.parametrize("name", TILE_EXAMPLES)
def test_ptoc_opt_output_runs_through_ptoc(name):
    # ptoc-opt FILE.pto -p pto-bufferize | ptoc - --target a2a3 --run
    opt = _run(str(BIN / "ptoc-opt"), f"examples/{name}.pto", "-p", "pto-bufferize")
    assert opt.returncode == 0 and opt.stdout.startswith("builtin.module"), opt.stderr
    r = _run(str(BIN / "ptoc"), "-", "--target", "a2a3", "--run", stdin=opt.stdout)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() and all(line.startswith("PASS ") for line in r.stdout.splitlines())


def test_generic_form_and_emit_pto_read_back(tmp_path, capsys):
    assert cli.main(["examples/softmax.pto", "--emit", "pto"]) == 0
    custom = tmp_path / "softmax.mlir"
    custom.write_text(capsys.readouterr().out)
    generic = _run(str(BIN / "ptoc-opt"), str(custom), "--print-op-generic")
    assert generic.stdout.startswith('"builtin.module"'), generic.stderr
    (tmp_path / "generic.txt").write_text(generic.stdout)
    for path in (custom, tmp_path / "generic.txt"):
        assert cli.main([str(path), "--run"]) == 0
        assert capsys.readouterr().out.startswith("PASS y ")


def test_printed_ir_syntax_error_is_located(capsys):
    text = "builtin.module {\n  func.func @f() {\n    %x = pto.bogus\n  }\n}\n"
    src = REPO / "examples" / "vadd.pto"  # any readable path; the text comes from stdin
    assert src.exists()
    r = _run(str(BIN / "ptoc"), "-", stdin=text)
    assert r.returncode == 1
    head = r.stderr.splitlines()[0]
    assert head.startswith("<stdin>:") and ": error: " in head and "pto.bogus" in head
    assert "Traceback" not in r.stderr


def _racy(tmp_path) -> Path:
    """examples/vadd_synced.pto without the wait_flag that orders the loads (MTE2) before the add (V)."""
    lines = (REPO / "examples" / "vadd_synced.pto").read_text().splitlines(keepends=True)
    drop = [i for i, line in enumerate(lines) if line.strip().startswith("pto.wait_flag[<PIPE_MTE2>, <PIPE_V>")]
    assert len(drop) == 1
    path = tmp_path / "racy.pto"
    path.write_text("".join(lines[:drop[0]] + lines[drop[0] + 1:]))
    return path


def test_hand_synchronised_kernel_runs_as_written(capsys):
    assert cli.main(["examples/vadd_synced.pto", "--no-insert-sync", "--run"]) == 0
    assert capsys.readouterr().out == "PASS z 0\n"


def test_missing_wait_flag_is_a_located_race(tmp_path, capsys):
    racy = _racy(tmp_path)
    add_line = next(i for i, line in enumerate(racy.read_text().splitlines(), 1) if "pto.tadd" in line)
    assert cli.main([str(racy), "--no-insert-sync", "--run"]) == 4
    out, err = capsys.readouterr()
    assert out == "PASS z 0\n"  # NumPy runs in program order: the values agree, the schedule does not
    first = err.splitlines()[0]
    assert first.startswith(f"{racy}:{add_line}:5: error: race: data race (RAW)"), err
    assert "no set_flag/wait_flag chain from MTE2 to V" in first
    # with insertion on (ptoc's default, PTOAS's --enable-insert-sync) ptoc adds the missing order
    assert cli.main([str(racy), "--enable-insert-sync", "--run"]) == 0


def test_ptoas_spellings(capsys):
    assert cli.main(["examples/vadd.pto", "--pto-arch=a5", "--emit", "vf"]) == 0
    assert "vf.func" in capsys.readouterr().out
    # level3 is --manual: every tile placed by hand, which vadd.pto leaves to ptoc
    assert cli.main(["examples/vadd.pto", "--pto-level=level3"]) == 1
    level3 = capsys.readouterr().err
    assert cli.main(["examples/vadd.pto", "--manual"]) == 1
    assert level3 == capsys.readouterr().err and level3.startswith("examples/vadd.pto:")
    assert cli.main(["examples/vadd.pto", "--pto-level", "level2", "-o", "/dev/null"]) == 0
    assert cli.main(["examples/vadd.pto", "--no-insert-sync", "--enable-insert-sync"]) == 2


def test_print_pipeline_and_ir_after(capsys):
    assert cli.main(["examples/softmax.pto", "--emit", "placed", "--no-insert-sync", "--print-pipeline",
                     "--print-ir-after", "pto-plan-memory"]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert lines[0] == ("ptoc: pipeline (a2a3): verify,pto-select-expand-mode,pto-tmp-strategy,"
                        "pto-plan-memory")
    assert lines[1] == "// -----// IR Dump After pto-plan-memory //----- //"
    assert "ub_addr = " in err and "pto.set_flag" not in out
    assert cli.main(["examples/vadd.pto", "--print-ir-after-all", "-o", "/dev/null"]) == 0
    dumps = [line for line in capsys.readouterr().err.splitlines() if line.startswith("// -----// IR Dump")]
    assert [d.split()[5] for d in dumps] == ["verify", "pto-select-expand-mode", "pto-tmp-strategy",
                                            "pto-plan-memory", "pto-insert-sync", "pto-lower-a2a3",
                                            "a2a3-complete-barriers"]


def test_did_you_mean(tmp_path, capsys):
    assert cli.main(["examples/vadd.pto", "--print-ir-after", "pto-insrt-sync"]) == 2
    assert "did you mean 'pto-insert-sync'?" in capsys.readouterr().err
    assert cli.main(["examples/vadd.pto", "--target", "a55"]) == 2
    assert "unknown target 'a55'; did you mean 'a5'?" in capsys.readouterr().err
    src = tmp_path / "k.pto"
    src.write_text("%z = pto.tadds2 %x, %y : !pto.tile<16x16xf32>\n")
    assert cli.main([str(src)]) == 1
    assert capsys.readouterr().err.splitlines()[0] == \
        f"{src}:1:6: error: unknown operation 'pto.tadds2'; did you mean 'pto.tadds'?"


def test_python_dash_m_runs_ptoc():
    r = _run(sys.executable, "-m", "pto_compiler", "examples/vadd.pto", "--run")
    assert (r.returncode, r.stdout) == (0, "PASS z 0\n"), r.stderr


def test_element_type_mismatch_lists_operands_in_the_order_it_names(tmp_path, capsys):
    src = tmp_path / "k.pto"
    src.write_text("func.func @k(%x: !pto.tile<16x16xf32>, %y: !pto.tile<16x16xf16>) -> !pto.tile<16x16xf32> {\n"
                   "  %z = pto.tadd %x, %y : (!pto.tile<16x16xf32>, !pto.tile<16x16xf16>) -> !pto.tile<16x16xf32>\n"
                   "  return %z : !pto.tile<16x16xf32>\n}\n")
    assert cli.main([str(src), "--emit", "pto"]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        f"{src}:2:8: error: 'pto.tadd' op dst, src0 and src1 must have the same element type (got f32, f32, f16)")
