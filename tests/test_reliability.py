"""Regression tests of issue 15: inputs that crashed ptoc (exit 70), ran unbounded, or gave a silent
wrong result now give a located diagnostic (exit 1), a usage error (exit 2) or a correct run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pto_compiler import cli

REPO = Path(__file__).resolve().parent.parent
TARGETS = ("a2a3", "ascend950")


def kernel(args: str = "", body: str = "", shape: str = "%c16, %c16", consts: str = "") -> str:
    """A 16x16 f32 copy kernel ``x -> y`` with extra arguments ``args`` and ``body`` before the store."""
    return f"""module {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>{args}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index{consts}
    %xv = pto.make_tensor_view %x, shape = [{shape}], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %t = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%t : !pto.tile_buf<vec, 16x16xf32>)
{body}    pto.tstore ins(%t : !pto.tile_buf<vec, 16x16xf32>) outs(%yp : !pto.partition_tensor_view<16x16xf32>)
    return
  }}
}}
"""


def run(tmp_path, text: str, *flags: str, name: str = "k.pto") -> tuple[int, str, str]:
    src = tmp_path / name
    src.write_bytes(text.encode() if isinstance(text, str) else text)
    import io
    import contextlib

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(src), *flags])
    return rc, out.getvalue(), err.getvalue()


def located(err: str, line: int, col: int | None = None) -> bool:
    head = err.splitlines()[0] if err else ""
    want = f"k.pto:{line}:" + (f"{col}:" if col is not None else "")
    return want in head and "error:" in head


# ---- internal errors that are now diagnostics ----------------------------------------------------

def test_list_of_ssa_values_as_keyword_is_located(tmp_path):
    text = kernel().replace("outs(%t : !pto.tile_buf<vec, 16x16xf32>)\n",
                            "outs(%t : !pto.tile_buf<vec, 16x16xf32>) foo = [%c0, %c1]\n", 1)
    rc, _, err = run(tmp_path, text)
    assert rc == 1 and located(err, 11) and "SSA value %c0" in err, err


@pytest.mark.parametrize("target", TARGETS)
def test_f64_scalar_argument_is_located(tmp_path, target):
    body = "    pto.tadds ins(%t, %s : !pto.tile_buf<vec, 16x16xf32>, f64) outs(%t : !pto.tile_buf<vec, 16x16xf32>)\n"
    rc, _, err = run(tmp_path, kernel(", %s: f64", body), "--target", target, "--run")
    assert rc == 1 and located(err, 2) and "'%s' has type f64" in err, err


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("cond", ["0", "1"])
def test_i1_scalar_argument_runs(tmp_path, target, cond):
    """An i1 kernel argument (a condition) compiles and runs; both branches match the golden model."""
    body = ("    %r = scf.if %c -> (!pto.tile_buf<vec, 16x16xf32>) {\n"
            "      pto.tadd ins(%t, %t : !pto.tile_buf<vec, 16x16xf32>, !pto.tile_buf<vec, 16x16xf32>) outs(%t : !pto.tile_buf<vec, 16x16xf32>)\n"
            "      scf.yield %t : !pto.tile_buf<vec, 16x16xf32>\n"
            "    } else {\n"
            "      pto.tabs ins(%t : !pto.tile_buf<vec, 16x16xf32>) outs(%t : !pto.tile_buf<vec, 16x16xf32>)\n"
            "      scf.yield %t : !pto.tile_buf<vec, 16x16xf32>\n"
            "    }\n")
    rc, out, err = run(tmp_path, kernel(", %c: i1", body), "--target", target, "--run", "--input", f"c={cond}")
    assert rc == 0 and out.startswith("PASS y "), out + err


@pytest.mark.parametrize("target", TARGETS)
def test_unused_f8_pointer_argument_is_located(tmp_path, target):
    rc, _, err = run(tmp_path, kernel(", %s: !pto.ptr<f8E4M3FN>"), "--target", target, "--run")
    assert rc == 1 and located(err, 2) and "f8E4M3FN" in err, err


@pytest.mark.parametrize("flags", [[], ["--run"]])
@pytest.mark.parametrize("target", TARGETS)
def test_unused_f64_pointer_argument_is_located(tmp_path, target, flags):
    """Found by bench/fuzz.py --seed 1203 (a lit input with its pointer's type mutated): exit 70 in
    the decoder (canonical_dtype('f64')), compiling or running.  GM holds what TLOAD moves."""
    rc, _, err = run(tmp_path, kernel(", %s: !pto.ptr<f64>"), "--target", target, *flags)
    assert rc == 1 and located(err, 2) and f"GM argument %s: element type f64 is not supported on {target}" in err, err


@pytest.mark.parametrize("split", ["a39d1", "3"])
@pytest.mark.parametrize("target", TARGETS)
def test_a_pipe_split_that_is_not_0_1_or_2_is_located(tmp_path, target, split):
    """Found by bench/fuzz.py --seed 1203 (a byte mutant of lit_tests/passes/resolve_reserved_buffers.pto):
    ``split = a39d1`` was exit 70 on ascend950 (runtime/pipes.vector_subblocks read it as an integer);
    3 was taken as left/right."""
    tile = "!pto.tile_buf<vec, 16x32xf32>"
    text = ("func.func @consumer() attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {\n"
            "  %z = arith.constant 0 : i32\n"
            "  %buf = pto.reserve_buffer {name = \"c2v\", size = 16384, location = #pto.address_space<vec>, "
            "auto = true} -> i32\n"
            "  pto.aiv_initialize_pipe {dir_mask = 1, slot_size = 2048} (c2v_consumer_buf = %buf : i32, "
            "v2c_consumer_buf = %z : i32)\n"
            f"  %t = pto.alloc_tile : {tile}\n"
            f"  %p0 = pto.tpop_from_aic {{split = 1}} -> {tile}\n"
            f"  pto.tadd ins(%p0, %p0 : {tile}, {tile}) outs(%t : {tile})\n"
            f"  pto.tfree_from_aic {{split = {split}}}\n"
            "  return\n}\n")
    rc, _, err = run(tmp_path, text, "--target", target, "--run")
    assert rc == 1 and located(err, 8, 3), err
    assert "'pto.tfree_from_aic' op expects 'split' to be 0 (no split), 1 (up/down) or 2 (left/right)" in err, err


@pytest.mark.parametrize("target", TARGETS)
def test_memref_tmov_is_raised_and_runs(tmp_path, target):
    """Once an internal error in lower_vf (tmov on memrefs); PTOAS's memref form is now raised to tiles."""
    m = "memref<16x16xf16, #pto.address_space<{}>>"
    text = (f"module {{\n  func.func @k(%a: {m.format('gm')}, %b: {m.format('gm')}) {{\n"
            f"    %u0 = memref.alloc() : {m.format('vec')}\n    %u1 = memref.alloc() : {m.format('vec')}\n"
            f"    pto.tload ins(%a : {m.format('gm')}) outs(%u0 : {m.format('vec')})\n"
            f"    pto.tmov ins(%u0 : {m.format('vec')}) outs(%u1 : {m.format('vec')})\n"
            f"    pto.tstore ins(%u1 : {m.format('vec')}) outs(%b : {m.format('gm')})\n    return\n  }}\n}}\n")
    rc, out, err = run(tmp_path, text, "--target", target, "--run")
    assert rc == 0 and out.startswith("PASS b "), out + err


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", ["#pto<round_mode BOGUS>", "#pto.round_mode<XX>", '"round_mode CAST_ODD"'])
def test_tcvt_invalid_round_mode_is_rejected_by_the_verifier(tmp_path, target, mode):
    text = f"%d = pto.tcvt %a {{rmode = {mode}}} : !pto.tile<16x64xf32> -> !pto.tile<16x64xf16>\n"
    rc, _, err = run(tmp_path, text, "--target", target, "--emit", "pto")
    assert rc == 1 and located(err, 1, 6) and "unknown round mode" in err, err


def test_integer_literal_over_python_int_limit_is_located(tmp_path):
    text = kernel(consts="\n    %cx = arith.constant " + "9" * 5000 + " : index")
    rc, _, err = run(tmp_path, text)
    assert rc == 1 and located(err, 6, 26) and "too long" in err, err


@pytest.mark.parametrize("value", ["18446744073709551616", "99999999999999999999999999"])
def test_index_constant_beyond_64_bits_is_located(tmp_path, value):
    rc, _, err = run(tmp_path, kernel(consts=f"\n    %cx = arith.constant {value} : index"))
    assert rc == 1 and located(err, 6) and "does not fit in index" in err, err


# ---- limits --------------------------------------------------------------------------------------

def test_huge_gm_view_is_refused_before_allocating(tmp_path):
    text = kernel(shape="%c16, %cbig", consts="\n    %cbig = arith.constant 10000000000 : index")
    rc, _, err = run(tmp_path, text, "--run")
    assert rc == 2 and "over the limit" in err and "--max-gm-bytes" in err, err
    rc, _, err = run(tmp_path, kernel(), "--run", "--max-gm-bytes", "1000")
    assert rc == 2 and "1024 bytes, over the limit of 1000" in err, err


def test_npy_header_claiming_a_huge_shape_is_refused(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((16, 16), np.float32))
    data = (tmp_path / "x.npy").read_bytes()
    n = int.from_bytes(data[8:10], "little")
    header = data[10:10 + n].replace(b"(16, 16)", b"(10000000000, 10000)")
    (tmp_path / "huge.npy").write_bytes(data[:8] + len(header).to_bytes(2, "little") + header + data[10 + n:])
    rc, _, err = run(tmp_path, kernel(), "--run", "--input", f"x={tmp_path / 'huge.npy'}")
    assert rc == 2 and "claims shape (10000000000, 10000)" in err, err


def test_max_steps_stops_a_long_loop(tmp_path):
    body = ("    %n = arith.constant 1000000000 : index\n"
            "    scf.for %i = %c0 to %n step %c1 {\n"
            "      pto.tadd ins(%t, %t : !pto.tile_buf<vec, 16x16xf32>, !pto.tile_buf<vec, 16x16xf32>) outs(%t : !pto.tile_buf<vec, 16x16xf32>)\n"
            "    }\n")
    rc, _, err = run(tmp_path, kernel(body=body), "--run", "--max-steps", "2000")
    assert rc == 2 and "exceeded 2000 steps" in err, err


def test_blocks_are_bounded(tmp_path):
    rc, _, err = run(tmp_path, kernel(), "--run", "--blocks", "100000")
    assert rc == 2 and f"at most {cli.MAX_BLOCKS} blocks" in err, err


# ---- CLI -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("flags", [["-o", "{src}"], ["--run", "--trace", "{src}"]])
def test_output_naming_the_input_is_refused(tmp_path, flags):
    text = kernel()
    src = tmp_path / "k.pto"
    rc, _, err = run(tmp_path, text, *[f.format(src=src) for f in flags])
    assert rc == 2 and "is the input file" in err, err
    assert src.read_text() == text


# ---- diagnostics ---------------------------------------------------------------------------------

def test_duplicate_function_name_is_located(tmp_path):
    fn = "func.func @f(%a: !pto.tile<8x64xf32>) -> !pto.tile<8x64xf32> {\n  return %a : !pto.tile<8x64xf32>\n}\n"
    rc, _, err = run(tmp_path, fn + fn)
    assert rc == 1 and located(err, 4, 1) and "redefines @f (first defined at line 1)" in err, err


def test_non_utf8_byte_is_located(tmp_path):
    rc, _, err = run(tmp_path, b"func.func @f() {\n  return\n}\n// caf\xe9\n")
    assert rc == 1 and located(err, 4, 7) and "byte 0xe9" in err, err


@pytest.mark.parametrize("text, line, col, quoted", [
    ("func.func @f() {\n\f  %x = pto.bogus\n  return\n}\n", 2, 9, "   %x = pto.bogus"),
    ("func.func @f() {\n  // a\u2028b\n  %x = pto.bogus\n  return\n}\n", 3, 8, "  %x = pto.bogus"),
    ("func.func @f() {\r  %x = pto.bogus\r  return\r}\r", 1, 25, "func.func @f() {   %x = pto.bogus"),
])
def test_quoted_line_and_caret_follow_the_lexer(tmp_path, text, line, col, quoted):
    """Form feed, U+2028 and CR-only endings: the lexer counts lines by \\n only; so does the quote."""
    rc, _, err = run(tmp_path, text)
    head, source, caret = err.splitlines()[:3]
    assert rc == 1 and located(err, line, col), err
    assert source.startswith(quoted) and caret == " " * (col - 1) + "^", err


# ---- silent wrong results ------------------------------------------------------------------------

MANUAL = (REPO / "examples" / "rowclamp_manual.pto").read_text()


@pytest.mark.parametrize("old, new, line, what", [
    ("%xt = pto.alloc_tile :", "%xt = pto.alloc_tile addr = %cneg :", 25, "'addr' operand"),
    ("%xt = pto.alloc_tile : !pto.tile_buf<vec, 16x128xf16>",
     "%xt0 = pto.alloc_tile : !pto.tile_buf<vec, 16x128xf16>\n"
     "    %xt = pto.tassign %xt0, %cneg : !pto.tile_buf<vec, 16x128xf16>", 26, "address operand"),
])
def test_negative_manual_address_is_located(tmp_path, old, new, line, what):
    text = MANUAL.replace("    pto.tassign %xt, @tile(0x0)\n", "    %cneg = arith.constant -64 : i64\n")
    rc, _, err = run(tmp_path, text.replace(old, new), "--target", "a2a3")
    assert rc == 1 and located(err, line, 11) and f"{what} gives the negative UB address -64" in err, err


def test_unterminated_string_in_printed_ir_is_located_quickly(tmp_path):
    """A file starting with '"' is read as printed IR; xDSL's lexer backtracks exponentially on an
    unclosed string of a long line (found by the fuzzer: minutes for this 95-character line)."""
    line = '"[(a// The tmp (a 2x64 f32 tile, 512 bytes) is the ceil(16/8) * 256 bytes that vbrcb writes for'
    rc, out, err = run(tmp_path, line + "\n", "--emit", "pto")
    assert rc == 1
    assert "k.pto:1:1: error: unterminated string literal" in err
    assert err.splitlines()[1] == line


@pytest.mark.parametrize("param", ["5", '"f32"'])
def test_pointer_of_a_non_type_is_located(tmp_path, param):
    """Found by bench/fuzz.py (exit 70): a dialect type parameter that is a token, not a type."""
    text = f"module {{\n  func.func @k(%x: !pto.ptr<{param}>) {{\n    return\n  }}\n}}\n"
    rc, out, err = run(tmp_path, text, "--emit", "pto")
    assert rc == 1
    assert f"k.pto:2:29: error: expected a type, found '{param}'" in err


@pytest.mark.parametrize("target", TARGETS)
def test_tpairreducesum_in_place_is_located(tmp_path, target):
    """Found by bench/fuzz.py (seed 3): an op that cannot work in place given one tile as source and
    destination ran differently per target (ascend950 FAIL, a2a3 PASS); now a located error."""
    body = "    pto.tpairreducesum ins(%t : !pto.tile_buf<vec, 16x16xf32>) outs(%t : !pto.tile_buf<vec, 16x16xf32>)\n"
    rc, out, err = run(tmp_path, kernel(body=body), "--target", target, "--run")
    assert rc == 1
    assert "k.pto:12:5: error: 'pto.tpairreducesum' op %t (line 10) is both a source and the destination" in err


@pytest.mark.parametrize("target", TARGETS)
def test_tstore_without_operands_is_located(tmp_path, target):
    """Found by bench/fuzz.py (seed 4, exit 70 in the lowering): `pto.tstore <PIPE_V>` verified."""
    rc, out, err = run(tmp_path, kernel(body="    pto.tstore <PIPE_V>\n"), "--target", target, "--run")
    assert rc == 1
    assert "k.pto:12:5: error: 'pto.tstore' op expects ins(%tile) outs(%partition_view)" in err


def test_vf_dst_word_is_located(tmp_path):
    """Found by bench/fuzz.py (seed 4, exit 70): `dst = NEXT` is a word (a StringAttr, which has a
    ``name`` too), taken for a register value."""
    text = """module attributes {pto.target_arch = "a5"} {
  func.func @k(%x: !pto.ptr<f32>) attributes {pto.entry} {
    vf.func @body(%t: !pto.tile_buf<vec, 1x64xf32>) {
      %m = vf.create_mask ALL : f32
      %v = vf.load_align %t[0]
      %a = vf.mul %v, %v, %m, merge_mode = MERGING, dst = NEXT
      vf.store_align %t[0], %a, %m
    }
    return
  }
}
"""
    rc, out, err = run(tmp_path, text, "--target", "ascend950", "--emit", "pto")
    assert rc == 1
    assert "k.pto:6:12: error: dst must be a register value" in err


_PIPE_CONSUMER = """func.func @consumer() attributes {KIND} {
  %z = arith.constant 0 : i32
  %buf = pto.reserve_buffer {name = "c2v", size = 16384, location = #pto.address_space<vec>, auto = true} -> i32
  pto.aiv_initialize_pipe {INIT} (c2v_consumer_buf = %buf : i32, v2c_consumer_buf = %z : i32)
  %t = pto.alloc_tile : !pto.tile_buf<vec, 16x32xf32>
  %p0 = pto.tpop_from_aic {split = 1} -> !pto.tile_buf<vec, 16x32xf32>
  pto.tadd ins(%p0, %p0 : !pto.tile_buf<vec, 16x32xf32>, !pto.tile_buf<vec, 16x32xf32>) outs(%t : !pto.tile_buf<vec, 16x32xf32>)
  pto.tfree_from_aic {split = 1}
  return
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_pipe_pop_on_a_kernel_without_vector_kind_is_located(tmp_path, target):
    """Found by bench/fuzz.py (seed 4 rerun, exit 70: KeyError 'AIC' in the FIFO): a mutated
    `pto.kernel_kind` attribute left the consumer running as the cube core, which has no C2V pop."""
    text = _PIPE_CONSUMER.replace("KIND", "pl_kind = #pto.kernel_kind<vector>") \
        .replace("INIT", "dir_mask = 1, slot_size = 2048")
    rc, out, err = run(tmp_path, text, "--target", target, "--run")
    assert rc == 1
    assert located(err, 6, 9) and "pop of the C2V pipe runs on the other core" in err


@pytest.mark.parametrize("target", TARGETS)
def test_pipe_init_without_dir_mask_is_located(tmp_path, target):
    """Found by bench/fuzz.py (seed 4 rerun, exit 70: KeyError 'dir_mask' in the golden model)."""
    text = _PIPE_CONSUMER.replace("KIND", "pto.kernel_kind = #pto.kernel_kind<vector>") \
        .replace("INIT", "dir_3mask = 1, slot_size = 2048")
    rc, out, err = run(tmp_path, text, "--target", target, "--run")
    assert rc == 1
    assert located(err, 4, 3) and "requires integer attribute 'dir_mask'" in err


@pytest.mark.parametrize("which", ["ptoc", "ptoc-opt"])
def test_ptoc_called_in_process_gives_the_caller_its_collector_back(tmp_path, capsys, which):
    """ptoc freezes what a run keeps (it exits right after); in-process (tests, bench/fuzz.py) that
    kept every compiled module alive: the fuzzer grew by 1.3 GB in 5 minutes.  After the call
    nothing it made is frozen and the collector's thresholds are the caller's."""
    import gc

    from pto_compiler import opt

    src = tmp_path / "k.pto"
    src.write_text(kernel())
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    rc = cli.main([str(src), "--run"]) if which == "ptoc" else opt.main([str(src), "-p", "cse"])
    assert rc == 0, capsys.readouterr()
    assert gc.get_freeze_count() <= frozen and gc.get_threshold() == threshold  # (frozen objects may die)
