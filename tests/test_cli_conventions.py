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
    # with insertion on (ptoc's default, PTOAS's --enable-insert-sync) ptoc adds the missing order;
    # the set_flag whose wait was deleted is still left pending at the kernel's end (issue 15)
    assert cli.main([str(racy), "--enable-insert-sync", "--run"]) == 4
    out, err = capsys.readouterr()
    assert out == "PASS z 0\n" and "data race" not in err and "is never waited for" in err, err


def test_a_race_on_a_fused_vf_launch_is_located_at_the_last_fused_op(tmp_path, capsys):
    """vadd_synced.pto with a tmul after the tadd in place of the V -> MTE3 flags: on ascend950 the two
    launches fuse into one vf.call, whose write the store reads unordered; the race names the
    tmul's line (where the fused call stands), not ``<unknown>:0:0``."""
    text = (REPO / "examples" / "vadd_synced.pto").read_text()
    tile = next(line.split(" : ")[1] for line in text.splitlines() if "%s = pto.alloc_tile" in line)
    flags = "".join(f"    pto.{f}[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]\n" for f in ("set_flag", "wait_flag"))
    assert flags in text
    path = tmp_path / "fused_race.pto"
    path.write_text(text.replace(flags, f"    pto.tmul ins(%s, %a : {tile}, {tile}) outs(%s : {tile})\n"))
    lines = path.read_text().splitlines()
    mul, store = (next(i for i, line in enumerate(lines, 1) if op in line) for op in ("pto.tmul", "pto.tstore"))
    assert cli.main([str(path), "--target", "ascend950", "--no-insert-sync", "--run"]) == 4
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:{store}:5: error: race: data race (RAW)"), err
    assert "V vf_call callee=@vadd_synced_tadd_0_vadd_synced_tmul_1 " in first
    assert f"(from {path}:{mul}:5 vf.call) wrote" in first
    assert "<unknown>" not in err


def test_ptoas_spellings(capsys):
    assert cli.main(["examples/vadd.pto", "--pto-arch=a5", "--emit", "vf"]) == 0
    assert "vf.func" in capsys.readouterr().out
    # level3 is --manual with PTOAS's rule that every alloc_tile has addr=, which vadd.pto leaves to ptoc
    assert cli.main(["examples/vadd.pto", "--pto-level=level3"]) == 1
    level3 = capsys.readouterr().err
    assert "'pto.alloc_tile' op requires 'addr' operand when --pto-level=level3" in level3
    assert cli.main(["examples/vadd.pto", "--manual"]) == 1
    manual = capsys.readouterr().err
    assert level3.startswith("examples/vadd.pto:") and manual.startswith("examples/vadd.pto:")
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


# ---- loc(...) round trip, ptoc-opt diagnostics, --verify-diagnostics, progress line ------------------

def test_printed_locations_survive_a_round_trip(tmp_path, capsys, monkeypatch):
    """ptoc --emit pto --mlir-print-debuginfo k.pto | ptoc - : an error is reported at k.pto's line,
    quoting k.pto (read from disk), not at the printed text's line."""
    src = (REPO / "examples" / "softmax.pto").read_text().replace(
        "pto.trowexpanddiv ins(%e, %s", "pto.trowexpanddiv ins(%e, %e").replace(
        "!pto.tile_buf<vec, 64x256xf32>, !pto.tile_buf<vec, 64x1xf32, blayout=col_major>) outs(%e : "
        "!pto.tile_buf<vec, 64x256xf32>)\n    pto.tstore",
        "!pto.tile_buf<vec, 64x256xf32>, !pto.tile_buf<vec, 64x256xf32>) outs(%e : "
        "!pto.tile_buf<vec, 64x256xf32>)\n    pto.tstore")
    path = tmp_path / "k.pto"
    path.write_text(src)
    line = next(i for i, text in enumerate(src.split("\n"), 1) if "trowexpanddiv ins(%e, %e" in text)
    from pto_compiler import api  # the module as parsed (ptoc would refuse to print it: it does not verify)

    text = api.print_module(api.parse(src, str(path)), debuginfo=True)
    assert f'loc("{path}":{line}:5)' in text
    r = _run(str(BIN / "ptoc"), "-", "--emit", "pto", stdin=text)
    assert r.returncode == 1
    head, quoted, caret = r.stderr.splitlines()[:3]
    assert head.startswith(f"{path}:{line}:5: error: 'pto.trowexpanddiv' op exactly one of src0 or src1")
    assert quoted == src.split("\n")[line - 1] and caret == "    ^"


def test_ptoc_opt_names_values_as_the_source_does():
    r = _run(str(BIN / "ptoc-opt"), "examples/vadd.pto", "-p", "pto-lower-a2a3")
    assert r.returncode == 1
    assert r.stderr.startswith("examples/vadd.pto:28:5: error: 'pto.tload' op tile %a has no UB address"), r.stderr
    assert "OpResult" not in r.stderr and "builtin.module" not in r.stderr


@pytest.mark.parametrize(("annotation", "code", "report"), [
    ("// expected-error@+1 {{must have the same element type}}", 0, ""),
    ("// expected-error@+2 {{must have the same element type}}", 1,
     'k.pto:1:4: error: expected error "must have the same element type" was not produced'),
    ("// expected-error@+1 {{no such message}}", 1,
     'k.pto:1:4: error: expected error "no such message" was not produced'),
    ("// no annotation", 1, "k.pto:2:6: error: unexpected error: 'pto.tadd' op dst, src0 and src1"),
])
def test_verify_diagnostics(tmp_path, annotation, code, report):
    path = tmp_path / "k.pto"
    path.write_text(f"{annotation}\n%d = pto.tadd %a, %b : !pto.tile<8x64xf16>, !pto.tile<8x64xf32> -> "
                    "!pto.tile<8x64xf32>\n")
    r = subprocess.run([str(BIN / "ptoc-opt"), "k.pto", "--verify-diagnostics", "-o", "/dev/null"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == code, r.stderr
    assert r.stderr.startswith(report) and (report or not r.stderr), r.stderr


def test_expected_offsets():
    from pto_compiler.expected import expectations

    text = "a\n// expected-error@-1 {{x}}\n// expected-error@above {{y}} expected-error@below {{z}}\nb // expected-error {{w}}"
    assert [(e.message, e.line, e.at) for e in expectations(text)] == [
        ("x", 1, (2, 4)), ("y", 2, (3, 4)), ("z", 4, (3, 31)), ("w", 4, (4, 6))]


def test_progress_line_only_on_a_terminal_and_not_with_quiet(monkeypatch):
    from pto_compiler.timing import HostTimes

    made = []
    real = cli.Progress

    class Spy(real):
        def __init__(self, times, enabled):
            made.append(enabled)
            super().__init__(times, enabled)

    monkeypatch.setattr(cli, "Progress", Spy)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    for argv in (["examples/vadd.pto", "--emit", "pto"], ["examples/vadd.pto", "--emit", "pto", "--quiet"]):
        assert cli.main(argv) == 0
    assert made == [True, False]
    times = HostTimes()
    with times.pass_("pto-plan-memory"):
        assert real(times, False).line(2.4) == "\rptoc: pto-plan-memory... 2s\x1b[K"
