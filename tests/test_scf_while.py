"""``scf.while`` (issue 12 item 3): parsed, planned, synchronised as a loop over its do region,
lowered to a ``While`` of the program on both targets, and run against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import cli

TARGETS = ("a2a3", "ascend950")
T = "!pto.tile_buf<vec, 16x16xf32>"
PV = "!pto.partition_tensor_view<16x16xf32>"
TV = "!pto.tensor_view<?x?xf32>"


def kernel(before: str = "", after: str = "") -> str:
    """Trip k (k = 0, 1, ...) loads rows 16k.. of x, adds k + 1 and stores them to the same rows of
    y, while k < %n and no trip has stopped the loop (trip %stop sets %go to false after its
    store); then the row block at the count the while returns gets 100 more from that tile."""
    return f"""
func.func @w(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %n: index, %stop: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %true = arith.constant true
  %false = arith.constant false
  %hundred = arith.constant 100.0 : f32
  %fone = arith.constant 1.0 : f32
  %xv = pto.make_tensor_view %x, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
  %yv = pto.make_tensor_view %y, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
  %t = pto.alloc_tile : {T}
  %fin:3 = scf.while (%k = %c0, %go = %true, %f = %fone) : (index, i1, f32) -> (index, i1, f32) {{
    %lt = arith.cmpi slt, %k, %n : index
    %c = arith.andi %lt, %go : i1{before}
    scf.condition(%c) %k, %go, %f : index, i1, f32
  }} do {{
  ^bb0(%k2: index, %go2: i1, %f2: f32):
    %r = arith.muli %k2, %c16 : index
    %p = pto.partition_view %xv, offsets = [%r, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    %q = pto.partition_view %yv, offsets = [%r, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    pto.tload ins(%p : {PV}) outs(%t : {T})
    %k1 = arith.addi %k2, %c1 : index
    pto.tadds ins(%t, %f2 : {T}, f32) outs(%t : {T})
    %f1 = arith.addf %f2, %fone : f32
    pto.tstore ins(%t : {T}) outs(%q : {PV}){after}
    %last = arith.cmpi eq, %k2, %stop : index
    %g = arith.select %last, %false, %go2 : i1
    scf.yield %k1, %g, %f1 : index, i1, f32
  }}
  %rf = arith.muli %fin#0, %c16 : index
  %pf = pto.partition_view %yv, offsets = [%rf, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
  pto.tadds ins(%t, %hundred : {T}, f32) outs(%t : {T})
  pto.tstore ins(%t : {T}) outs(%pf : {PV})
  return
}}
"""


def want(x: np.ndarray, n: int, stop: int) -> tuple[np.ndarray, int]:
    """NumPy of the kernel: the trips it runs, and y where trips wrote (y starts as zeros)."""
    y = np.zeros_like(x)
    k, go, t = 0, True, None
    while k < n and go:
        t = x[16 * k:16 * k + 16] + np.float32(k + 1)
        y[16 * k:16 * k + 16] = t
        go = k != stop
        k += 1
    if t is not None:
        y[16 * k:16 * k + 16] = t + np.float32(100)
    return y, k


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n,stop", [(3, 9), (3, 1), (1, 0)])
def test_while_runs_its_trips_and_returns_its_count(target, n, stop, tmp_path, capsys):
    path = tmp_path / "w.pto"
    path.write_text(kernel())
    x = np.random.default_rng(5).standard_normal((64, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.zeros_like(x))
    rc = cli.main([str(path), "--target", target, "--run", "--input", f"x={tmp_path / 'x.npy'}",
                   "--input", f"y={tmp_path / 'y.npy'}", "--input", f"n={n}", "--input", f"stop={stop}",
                   "--save-outputs", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert out.startswith("PASS y"), out
    y, trips = want(x, n, stop)
    assert trips == min(n, stop + 1)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), y)


def test_while_program_listing_and_syncs(tmp_path, capsys):
    path = tmp_path / "w.pto"
    path.write_text(kernel())
    assert cli.main([str(path), "--emit", "program"]) == 0
    out = capsys.readouterr().out
    lines = [line.split(";")[0].rstrip() for line in out.splitlines()]
    start = lines.index("S    while {")
    do = next(i for i in range(start, len(lines)) if lines[i].startswith("S    } do if "))
    assert "(%v0<%n)*%v1" in lines[do]
    body = lines[do + 1:]
    # the next trip's tload overwrites the tile the previous trip's tstore reads (MTE3 -> MTE2), and
    # the tadds waits for the load (MTE2 -> V) and the store for the tadds (V -> MTE3)
    assert [x.split()[1] for x in body if "wait_flag" in x][:3] == ["wait_flag"] * 3
    waits = [x.split()[2] for x in body if "wait_flag" in x]
    assert waits[:3] == ["MTE3->MTE2", "MTE2->V", "V->MTE3"], out


@pytest.mark.parametrize("case,src,where,message", [
    ("tile-op-in-condition", kernel(before=f"\n    pto.tadds ins(%t, %hundred : {T}, f32) outs(%t : {T})"),
     "pto.tadds ins(%t, %hundred", "is in the condition region of an scf.while, which pto-insert-sync does not "
     "support"),
    ("argument-types", kernel().replace(": (index, i1, f32) -> (index, i1, f32) {", ": (index, i32, f32) -> "
                                        "(index, i1, f32) {"),
     "%fin:3 = scf.while", "argument types do not match the types of their initial values"),
    ("tile-carried", f"""func.func @c(%x: !pto.ptr<f32>) {{
  %t = pto.alloc_tile : {T}
  %true = arith.constant true
  %r = scf.while (%a = %t) : ({T}) -> {T} {{
    scf.condition(%true) %a : {T}
  }} do {{
  ^bb0(%b: {T}):
    scf.yield %b : {T}
  }}
  pto.tprint ins(%r : {T})
  return
}}
""", "%r = scf.while", "carries a tile through scf.while arguments"),
    ("condition-types", kernel().replace("scf.condition(%c) %k, %go, %f : index, i1, f32",
                                         "scf.condition(%c) %k : index"),
     "%fin:3 = scf.while", "result types do not match what its scf.condition passes on"),
])
def test_while_errors_are_located(case, src, where, message, tmp_path, capsys):
    path = tmp_path / "w.pto"
    path.write_text(src)
    assert cli.main([str(path), "--emit", "program"]) == 1, case
    err = capsys.readouterr().err
    lines = src.splitlines()
    line = next(i for i, text in enumerate(lines, 1) if where in text)
    col = lines[line - 1].index(where.split(" = ")[-1].split()[0]) + 1  # the op name
    assert f"{path}:{line}:{col}: error: " in err and message in err, err
