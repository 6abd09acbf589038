"""Issue 12 item 2: tiles placed at the same or overlapping UB bytes share those bytes in the golden
model, so a reinterpretation reads what the hardware holds.  Each kernel runs on both targets with
``--run`` (executor == golden model) and its saved output is checked against NumPy, which computes
the byte view independently (RowMajor element (r, c) at (r*cols + c), ColMajor at (c*rows + r))."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from pto_compiler import cli
from pto_compiler.runtime import reference as golden
from tests.samples import SAMPLES_DIR, needs_samples

TARGETS = ("a2a3", "ascend950")


def kernel(xshape, xtype, ytype, yshape, body, ydtype="f32") -> str:
    """x (f32, xshape) is loaded into %xt (``xtype``, at UB 0); ``body`` defines %yt (``ytype``),
    which is stored to y (``ydtype``, yshape)."""
    (xr, xc), (yr, yc) = xshape, yshape
    return f"""module {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<{ydtype}>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cxr = arith.constant {xr} : index
    %cxc = arith.constant {xc} : index
    %cyr = arith.constant {yr} : index
    %cyc = arith.constant {yc} : index
    %a0 = arith.constant 0 : i64
    %a64 = arith.constant 64 : i64
    %a128 = arith.constant 128 : i64
    %a4096 = arith.constant 4096 : i64
    %two = arith.constant 2.0 : f32
    %seven = arith.constant 7.0 : f32
    %xv = pto.make_tensor_view %x, shape = [%cxr, %cxc], strides = [%cxc, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%cyr, %cyc], strides = [%cyc, %c1] : !pto.tensor_view<?x?x{ydtype}>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%cxr, %cxc] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<{xr}x{xc}xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%cyr, %cyc] : !pto.tensor_view<?x?x{ydtype}> -> !pto.partition_tensor_view<{yr}x{yc}x{ydtype}>
    %xt = pto.alloc_tile addr = %a0 : {xtype}
    pto.tload ins(%xp : !pto.partition_tensor_view<{xr}x{xc}xf32>) outs(%xt : {xtype})
{body}
    pto.tstore ins(%yt : {ytype}) outs(%yp : !pto.partition_tensor_view<{yr}x{yc}x{ydtype}>)
    return
  }}
}}
"""


COL16 = "!pto.tile_buf<vec, 16x1xf32, blayout=col_major>"
ROW16 = "!pto.tile_buf<vec, 1x16xf32>"
T4x16 = "!pto.tile_buf<vec, 4x16xf32>"
T8x8 = "!pto.tile_buf<vec, 8x8xf32>"
I8x8 = "!pto.tile_buf<vec, 8x8xi32>"
T16x16 = "!pto.tile_buf<vec, 16x16xf32>"

CASES = {
    # the Qwen3 decode pattern: a 16x1 ColMajor column read back as a 1x16 RowMajor row
    "col_as_row": (kernel((16, 1), COL16, ROW16, (1, 16), f"""\
    %r = pto.alloc_tile addr = %a0 : {ROW16}
    %yt = pto.alloc_tile addr = %a4096 : {ROW16}
    pto.tmuls ins(%r, %two : {ROW16}, f32) outs(%yt : {ROW16})"""),
        lambda x: (x.reshape(-1) * np.float32(2)).reshape(1, 16)),
    # a row of a 4x16 tile, named by a 1x16 tile at its byte offset (row 2: 2*16*4 = 128)
    "row_of_tile": (kernel((4, 16), T4x16, ROW16, (1, 16), f"""\
    %r = pto.alloc_tile addr = %a128 : {ROW16}
    %yt = pto.alloc_tile addr = %a4096 : {ROW16}
    pto.tmuls ins(%r, %two : {ROW16}, f32) outs(%yt : {ROW16})"""),
        lambda x: x[2:3] * np.float32(2)),
    # the same bytes as another element type: bit reinterpretation
    "f32_as_i32": (kernel((8, 8), T8x8, I8x8, (8, 8), f"""\
    %yt = pto.alloc_tile addr = %a0 : {I8x8}""", ydtype="i32"),
        lambda x: x.view(np.int32)),
    # a write through the alias changes the tile it aliases (row 1 of a 16x16 tile: byte 64)
    "write_through_alias": (kernel((16, 16), T16x16, T16x16, (16, 16), f"""\
    %r = pto.alloc_tile addr = %a64 : {ROW16}
    pto.texpands ins(%seven : f32) outs(%r : {ROW16})
    %yt = pto.alloc_tile addr = %a0 : {T16x16}"""),
        lambda x: np.concatenate([x[:1], np.full((1, 16), 7, np.float32), x[2:]])),
}


def _run(tmp_path, text: str, *flags: str) -> tuple[int, str]:
    src = tmp_path / "k.pto"
    src.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(src), *flags])
    return rc, out.getvalue() + err.getvalue()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_reinterpretation_matches_numpy(tmp_path, case, target):
    text, want = CASES[case]
    xr, xc = (int(text.split(f"%cx{d} = arith.constant ")[1].split()[0]) for d in "rc")
    x = np.random.default_rng(3).standard_normal((xr, xc)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    rc, out = _run(tmp_path, text, "--target", target, "--run", "--input", f"x={tmp_path / 'x.npy'}",
                   "--save-outputs", str(tmp_path))
    assert rc == 0 and out.startswith("PASS y"), out
    got = np.load(tmp_path / "y.npy")
    ref = want(x)
    assert got.dtype == ref.dtype and np.array_equal(got.reshape(ref.shape), ref)


def test_golden_model_alone_aliases(tmp_path):
    """The golden model by itself (no executor): the column written as 16x1 is the row read as 1x16."""
    from pto_compiler import api

    text, want = CASES["col_as_row"]
    module = api.parse(text, "k.pto")
    x = np.arange(16, dtype=np.float32).reshape(16, 1)
    out = golden.evaluate(module, {"x": x, "y": np.zeros((1, 16), np.float32)})
    assert np.array_equal(out["y"], want(x))


def test_tassign_rebinds_to_the_bytes_at_the_new_address(tmp_path):
    """``pto.tassign`` moves a tile's name, not its data: after rebinding %r over %xt's row 3,
    %r reads that row."""
    text, _ = CASES["row_of_tile"]
    text = text.replace(f"%r = pto.alloc_tile addr = %a128 : {ROW16}",
                        f"%a192 = arith.constant 192 : i64\n    %r0 = pto.alloc_tile : {ROW16}\n"
                        f"    %r = pto.tassign %r0, %a192 : {ROW16} -> {ROW16}")
    text = text.replace("%yt = pto.alloc_tile addr = %a4096", "%yt = pto.alloc_tile addr = %a128")
    x = np.random.default_rng(5).standard_normal((4, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    for target in TARGETS:
        rc, out = _run(tmp_path, text, "--target", target, "--run", "--input", f"x={tmp_path / 'x.npy'}",
                       "--save-outputs", str(tmp_path))
        assert rc == 0 and out.startswith("PASS y"), out
        assert np.array_equal(np.load(tmp_path / "y.npy"), x[3:4] * np.float32(2))


QWEN = ["test__samples__Qwen3DecodeA3__qwen3_decode_incore_0.pto", "test__samples__Qwen3DecodeA5__qwen3_decode_incore_0.pto",
        "test__samples__Qwen3DecodeA5__qwen3_decode_incore_11.pto"]


@needs_samples
@pytest.mark.parametrize("name", QWEN)
def test_qwen3_decode_reinterpretation_passes(tmp_path, name):
    """The Qwen3 decode kernels reinterpret a 16x1 tile as 1x16 at the same address (FAILed before)."""
    path = SAMPLES_DIR / "corpus" / name
    text = path.read_text()
    inputs = ["--input", "arg3=0"] if "%arg3: index" in text else []
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(path), "--run", *inputs])
    assert rc == 0 and "PASS" in out.getvalue() and "FAIL" not in out.getvalue(), out.getvalue() + err.getvalue()
