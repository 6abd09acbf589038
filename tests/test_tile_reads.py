"""Issue 15 regressions: misuse of tiles and flags that ptoc accepted (a silent clobber, a FAIL on one
target only, a missing output) is now a located diagnostic; the golden model has a step budget; a
set_flag never waited for is reported.  Each kernel here was accepted before its fix."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_reliability import located, run
from tests.test_ub_alias import COL16, T16x16, kernel

TARGETS = ("a2a3", "ascend950")


def k16(body: str) -> str:
    """x (16x16 f32) loaded into %xt at UB 0; ``body`` defines %yt, stored to y.  Line 19 is %xt's
    alloc_tile, line 20 its tload, ``body`` starts at line 21."""
    return kernel((16, 16), T16x16, T16x16, (16, 16), body)


CLOBBER = f"""    %b = pto.alloc_tile addr = %a0 : {T16x16}
    pto.texpands ins(%seven : f32) outs(%b : {T16x16})
    %yt = pto.alloc_tile addr = %a4096 : {T16x16}
    pto.tadd ins(%xt, %b : {T16x16}, {T16x16}) outs(%yt : {T16x16})"""


@pytest.mark.parametrize("target", TARGETS)
def test_two_live_tiles_at_one_address_are_a_clobber(tmp_path, target):
    """%xt and %b at UB 0 both hold data the tadd reads: %b's write destroys %xt's unread value."""
    rc, _, err = run(tmp_path, k16(CLOBBER), "--target", target, "--run")
    assert rc == 1 and located(err, 24, 5), err
    assert "reads %xt (line 19), but what line 20 wrote to it was overwritten unread at line 22 through %b" in err


@pytest.mark.parametrize("target", TARGETS)
def test_a_clobber_at_level3_warns_and_runs_on_the_bytes_the_hardware_holds(tmp_path, target):
    """PTOAS's level 3 checks no address: the same kernel compiles with a located warning, and the
    tadd reads %xt's bytes as %b's texpands left them (golden model and executor alike): y = 7 + 7."""
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    np.save(tmp_path / "x.npy", x)
    rc, out, err = run(tmp_path, k16(CLOBBER), "--target", target, "--run", "--pto-level=level3",
                       "--input", f"x={tmp_path / 'x.npy'}", "--save-outputs", str(tmp_path / "o"))
    assert rc == 0 and out.startswith("PASS y"), out + err
    assert "k.pto:24:5: warning: 'pto.tadd' op reads %xt (line 19), but what line 20 wrote to it was overwritten " \
        "unread at line 22 through %b" in err, err
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), np.full((16, 16), 14, np.float32))


@pytest.mark.parametrize("target", TARGETS)
def test_read_then_replaced_through_an_alias_is_not_a_clobber(tmp_path, target):
    """The loop-carried update PyPTO writes: %acc is read, then replaced through %acc2 at the same
    bytes, then read again (the new value): accepted, and it runs PASS."""
    body = f"""    %acc = pto.alloc_tile addr = %a4096 : {T16x16}
    pto.texpands ins(%two : f32) outs(%acc : {T16x16})
    %c3 = arith.constant 3 : index
    scf.for %i = %c0 to %c3 step %c1 {{
      %t = pto.alloc_tile addr = %a128 : {T16x16}
      pto.tadd ins(%acc, %xt : {T16x16}, {T16x16}) outs(%t : {T16x16})
      %acc2 = pto.alloc_tile addr = %a4096 : {T16x16}
      pto.tmov ins(%t : {T16x16}) outs(%acc2 : {T16x16})
    }}
    %yt = pto.alloc_tile addr = %a4096 : {T16x16}"""
    body = body.replace("%a128", "%a8192").replace("    %acc = pto", "    %a8192 = arith.constant 8192 : i64\n    %acc = pto", 1)
    rc, out, err = run(tmp_path, k16(body), "--target", target, "--run")
    assert rc == 0 and out.startswith("PASS y"), out + err


@pytest.mark.parametrize("target", TARGETS)
def test_destination_partially_overlapping_its_source_is_rejected(tmp_path, target):
    body = f"""    %a512 = arith.constant 512 : i64
    %yt = pto.alloc_tile addr = %a512 : {T16x16}
    pto.tadds ins(%xt, %two : {T16x16}, f32) outs(%yt : {T16x16})"""
    rc, _, err = run(tmp_path, k16(body), "--target", target, "--run")
    assert rc == 1 and located(err, 23, 5), err
    assert "destination %yt (line 22) at [0x200, 0x600) partially overlaps its source %xt (line 19)" in err


@pytest.mark.parametrize("target", TARGETS)
def test_in_place_on_the_same_bytes_is_fine(tmp_path, target):
    """dst at exactly its source's bytes, for an elementwise op (the page allows in place)."""
    body = f"""    %yt = pto.alloc_tile addr = %a0 : {T16x16}
    pto.tadds ins(%xt, %two : {T16x16}, f32) outs(%yt : {T16x16})"""
    rc, out, err = run(tmp_path, k16(body), "--target", target, "--run")
    assert rc == 0 and out.startswith("PASS y"), out + err


@pytest.mark.parametrize("target", TARGETS)
def test_tile_read_after_serving_as_tmp_is_located(tmp_path, target):
    """a2a3 FAILed at --run (its trowsum writes the tmp), ascend950 passed: now both reject it."""
    body = f"""    %tmp = pto.alloc_tile : {T16x16}
    pto.tmuls ins(%xt, %two : {T16x16}, f32) outs(%tmp : {T16x16})
    %s = pto.alloc_tile : {COL16}
    pto.trowsum ins(%xt, %tmp : {T16x16}, {T16x16}) outs(%s : {COL16})
    %yt = pto.alloc_tile : {T16x16}
    pto.tadd ins(%xt, %tmp : {T16x16}, {T16x16}) outs(%yt : {T16x16})"""
    rc, _, err = run(tmp_path, k16(body), "--target", target, "--run")
    assert rc == 1 and located(err, 26, 5), err
    assert "reads %tmp (line 21), whose bytes the tmp operand of 'pto.trowsum' at line 24 overwrote" in err


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("addr", ["", " addr = %a4096"])
def test_read_of_a_never_written_tile_is_located_when_run(tmp_path, target, addr):
    """Legal code (PTOAS's own samples read tiles nothing wrote), so it compiles and runs, but the
    run warns, located at the read (the golden model; for a tile placed by hand: no byte of it was
    written through any name)."""
    body = f"""    %u = pto.alloc_tile{addr} : {T16x16}
    %yt = pto.alloc_tile : {T16x16}
    pto.tadd ins(%xt, %u : {T16x16}, {T16x16}) outs(%yt : {T16x16})"""
    assert run(tmp_path, k16(body), "--target", target)[0] == 0
    rc, _, err = run(tmp_path, k16(body), "--target", target, "--run")
    head = f"{tmp_path / 'k.pto'}:23:5: warning: 'pto.tadd' op reads %u, which nothing has written"
    assert rc == 0 and err.startswith(head), err


def test_returning_a_never_written_tile_is_located_when_run(tmp_path):
    text = """func.func @k(%a: !pto.tile<16x16xf32>) -> (!pto.tile<16x16xf32>, !pto.tile_buf<vec, 16x16xf32>) {
  %b = pto.tabs %a : !pto.tile<16x16xf32>
  %t = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
  return %b, %t : !pto.tile<16x16xf32>, !pto.tile_buf<vec, 16x16xf32>
}
"""
    rc, _, err = run(tmp_path, text, "--reference")
    assert rc == 1 and located(err, 4, 3) and "returns %t, which nothing has written" in err, err


def test_constant_partition_offset_past_its_view_is_located(tmp_path):
    text = k16("    %yt = pto.alloc_tile addr = %a0 : " + T16x16)
    text = text.replace("%yp = pto.partition_view %yv, offsets = [%c0, %c0]", "%yp = pto.partition_view %yv, offsets = [%c1, %c0]")
    rc, _, err = run(tmp_path, text, "--emit", "pto")
    assert rc == 1 and located(err, 18, 11) and "partition [1, 17) of dimension 0 is past the view's extent 16" in err, err


def test_ub_overflow_of_tile_arguments_is_located_at_each_argument_once(tmp_path):
    text = """func.func @k(%a: !pto.tile<256x256xf32>,
             %b: !pto.tile<256x256xf32>) -> !pto.tile<256x256xf32> {
  %c = pto.tadd %a, %b : !pto.tile<256x256xf32>
  return %c : !pto.tile<256x256xf32>
}
"""
    rc, _, err = run(tmp_path, text, "--run")
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert rc == 1 and lines == [
        f"{tmp_path / 'k.pto'}:1:14: error: tile argument %a of 262144 bytes does not fit in the a2a3 UB (192 KiB)",
        f"{tmp_path / 'k.pto'}:2:14: error: tile argument %b of 262144 bytes does not fit in the a2a3 UB (192 KiB)",
    ], err


def test_golden_model_has_a_step_budget(tmp_path):
    body = ("    %n = arith.constant 100000 : index\n"
            "    scf.for %i = %c0 to %n step %c1 {\n"
            f"      pto.tadd ins(%xt, %xt : {T16x16}, {T16x16}) outs(%xt : {T16x16})\n"
            "    }\n"
            f"    %yt = pto.alloc_tile addr = %a0 : {T16x16}")
    rc, _, err = run(tmp_path, k16(body), "--reference", "--max-steps", "2000")
    assert rc == 2 and "the golden model stopped after 2000 steps" in err, err


@pytest.mark.parametrize("target", TARGETS)
def test_set_flag_never_waited_for_is_reported(tmp_path, target):
    """vadd_synced.pto with one extra set_flag at the end: the run still compares (PASS), then the
    pending event is a located finding (exit 4)."""
    from tests.test_reliability import REPO

    text = (REPO / "examples" / "vadd_synced.pto").read_text()
    lines = text.splitlines()
    last_wait = max(i for i, ln in enumerate(lines) if "pto.wait_flag" in ln)
    extra = lines[last_wait].replace("wait_flag", "set_flag")
    lines.insert(last_wait + 1, extra)
    rc, out, err = run(tmp_path, "\n".join(lines) + "\n", "--target", target, "--run", "--no-insert-sync")
    assert rc == 4 and out.startswith("PASS"), out + err
    assert located(err, last_wait + 2) and "is never waited for" in err, err
