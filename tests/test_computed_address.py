"""``pto.tassign`` with an address computed at run time (issue 12 item 3): pto-plan-memory keeps
planned tiles off every address it may have, pto-insert-sync orders its accesses over that whole
range, both executors and the golden model check each address when it is bound."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import scf

from pto_compiler import cli
from pto_compiler.api import parse
from pto_compiler.passes.int_range import IntRange, int_range

TARGETS = ("a2a3", "ascend950")
T = "!pto.tile_buf<vec, 16x16xf32>"
PV = "!pto.partition_tensor_view<16x16xf32>"
TV = "!pto.tensor_view<?x?xf32>"


def kernel(address: str, keep: bool = True, args: str = "") -> str:
    """y[16i:16i+16] = x[16i:16i+16] + x[0:16] for i < 4, the trip's tile at ``address`` (computed
    from %i, the trip's parity %par, or a kernel scalar %n); %keep (x[0:16]) is live throughout."""
    add = (f"pto.tadd ins(%ti, %keep : {T}, {T}) outs(%ti : {T})" if keep
           else f"pto.tadds ins(%ti, %one : {T}, f32) outs(%ti : {T})")
    return f"""
func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>{args}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c48 = arith.constant 48 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %one = arith.constant 1.0 : f32
  %xv = pto.make_tensor_view %x, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
  %yv = pto.make_tensor_view %y, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
  %t = pto.alloc_tile : {T}
  %keep = pto.alloc_tile : {T}
  %p0 = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
  pto.tload ins(%p0 : {PV}) outs(%keep : {T})
  scf.for %i = %c0 to %c4 step %c1 {{
    %par = arith.remui %i, %c2 : index
    %off = {address}
    %a = arith.index_cast %off : index to i64
    %ti = pto.tassign %t, %a : {T} -> {T}
    %r = arith.muli %i, %c16 : index
    %p = pto.partition_view %xv, offsets = [%r, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    %q = pto.partition_view %yv, offsets = [%r, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    pto.tload ins(%p : {PV}) outs(%ti : {T})
    {add}
    pto.tstore ins(%ti : {T}) outs(%q : {PV})
  }}
  return
}}
"""


PING_PONG = "arith.muli %par, %c1024 : index"


def run(tmp_path, capsys, src: str, target: str, *extra: str):
    path = tmp_path / "k.pto"
    path.write_text(src)
    x = np.random.default_rng(3).standard_normal((64, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    rc = cli.main([str(path), "--target", target, "--run", "--input", f"x={tmp_path / 'x.npy'}",
                   "--save-outputs", str(tmp_path / "o"), *extra])
    out, err = capsys.readouterr()
    return rc, out, err, x, path


@pytest.mark.parametrize("target", TARGETS)
def test_ping_pong_tile_at_a_loop_dependent_address(target, tmp_path, capsys):
    rc, out, err, x, _ = run(tmp_path, capsys, kernel(PING_PONG), target)
    assert rc == 0, out + err
    assert out.startswith("PASS y"), out
    want = x + np.tile(x[:16], (4, 1))  # %keep must not sit in [0, 2048), where the trips' tiles go
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), want)


@pytest.mark.parametrize("target", TARGETS)
def test_a_misaligned_computed_address_is_a_located_run_time_error(target, tmp_path, capsys):
    # %i * 48: trip 0 binds at 0, trip 1 at 48, not a multiple of 32
    rc, out, err, _, path = run(tmp_path, capsys, kernel("arith.muli %i, %c48 : index"), target)
    assert rc == 1, out + err
    line = kernel("arith.muli %i, %c48 : index").splitlines().index(
        f"    %ti = pto.tassign %t, %a : {T} -> {T}") + 1
    assert f"{path}:{line}:11: error: 'pto.tassign' op binds a tile at UB address 0x30, not 32-byte aligned" in err


@pytest.mark.parametrize("target", TARGETS)
def test_an_out_of_bounds_kernel_scalar_address_is_a_located_run_time_error(target, tmp_path, capsys):
    src = kernel("arith.index_cast %n : i64 to index", keep=False, args=", %n: i64")
    rc, out, err, _, path = run(tmp_path, capsys, src, target, "--input", "n=1048576")
    assert rc == 1, out + err
    assert f"{path}:" in err and "error: 'pto.tassign' op binds a 1024-byte tile at UB address 0x100000, outside" in err
    rc, out, err, x, _ = run(tmp_path, capsys, src, target, "--input", "n=4096")
    assert rc == 0 and out.startswith("PASS y"), out + err
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), x + np.float32(1))


def test_a_planned_tile_live_beside_an_unknown_address_is_located(tmp_path, capsys):
    src = kernel("arith.index_cast %n : i64 to index", keep=True, args=", %n: i64")
    path = tmp_path / "k.pto"
    path.write_text(src)
    assert cli.main([str(path), "--emit", "placed"]) == 1
    err = capsys.readouterr().err
    assert "error: 'pto.alloc_tile' op cannot place %keep: it is live while %ti" in err
    assert "address computed at run time whose range is unknown" in err


@pytest.mark.parametrize("case,where,message", [
    ("every address misaligned", "arith.addi %c16, %c1024 : index",
     "every UB address this gives %ti (0x410) is not 32-byte aligned"),
    ("every address past the end", "arith.muli %c1024, %c1024 : index", "outside the 192 KiB a2a3 UB"),
])
def test_an_address_range_that_is_always_wrong_is_a_compile_error(case, where, message, tmp_path, capsys):
    # an exact but non-constant value (an arith op of constants) is still "computed"
    path = tmp_path / "k.pto"
    path.write_text(kernel(where))
    assert cli.main([str(path), "--emit", "placed"]) == 1, case
    assert message in capsys.readouterr().err


def test_using_the_source_after_a_computed_tassign_is_located(tmp_path, capsys):
    src = kernel(PING_PONG).replace(f"    pto.tstore ins(%ti : {T})", f"    pto.tstore ins(%t : {T})")
    path = tmp_path / "k.pto"
    path.write_text(src)
    assert cli.main([str(path), "--emit", "placed"]) == 1
    err = capsys.readouterr().err
    line = src.splitlines().index(f"    pto.tstore ins(%t : {T}) outs(%q : {PV})") + 1
    assert f"{path}:{line}:5: error: 'pto.tstore' op uses %t where the pto.tassign at line" in err
    assert "use that tassign's result" in err


def _ranges(body: str) -> dict[str, IntRange | None]:
    """int_range of every named index value of a kernel body."""
    module = parse(f"func.func @k(%n: index) {{\n  %c0 = arith.constant 0 : index\n"
                       f"  %c1 = arith.constant 1 : index\n  %c3 = arith.constant 3 : index\n"
                       f"  %c10 = arith.constant 10 : index\n{body}  return\n}}\n", "r.pto")
    out = {}
    for op in module.walk():
        for r in op.results:
            if r.name_hint:
                out[r.name_hint] = int_range(r)
        if isinstance(op, scf.ForOp):
            out[op.body.block.args[0].name_hint] = int_range(op.body.block.args[0])
    return out


def test_int_range_follows_loops_arithmetic_and_branches():
    r = _ranges("  scf.for %i = %c1 to %c10 step %c3 {\n"
                "    %a = arith.muli %i, %c10 : index\n    %b = arith.addi %a, %c3 : index\n"
                "    %m = arith.remui %i, %c3 : index\n    %d = arith.divui %a, %c10 : index\n"
                "    %lt = arith.cmpi slt, %i, %c3 : index\n"
                "    %s = arith.select %lt, %c0, %c10 : index\n"
                "    %f = scf.if %lt -> (index) {\n      scf.yield %c1 : index\n    } else {\n"
                "      scf.yield %b : index\n    }\n"
                "    %u = arith.addi %i, %n : index\n  }\n")
    # %i in {1, 4, 7}: the loop's own values, checked against the set each expression gives
    values = [1, 4, 7]
    assert r["i"] == IntRange(1, 7, 3)
    assert r["a"] == IntRange(10, 70, 30)
    assert r["b"] == IntRange(13, 73, 30)
    assert r["m"] == IntRange(1, 1, 0) and {v % 3 for v in values} == {1}
    assert r["d"] == IntRange(1, 7, 3)
    assert r["lt"] == IntRange(0, 1, 1)
    assert r["s"] == IntRange(0, 10, 10)
    assert r["f"] == IntRange(1, 73, 6)  # 1 or 13 + 30k: all are 1 + 6k
    assert r["u"] is None  # a kernel scalar: unknown
    for v in values:
        for name, value in (("a", v * 10), ("b", v * 10 + 3), ("d", v)):
            rg = r[name]
            assert rg.lo <= value <= rg.hi and (value - rg.lo) % (rg.stride or 1) == 0


@pytest.mark.parametrize("target", TARGETS)
def test_an_op_needing_free_ub_keeps_off_the_computed_range(target, tmp_path, capsys):
    # tdivs by 3 (not a power of two) dups the scalar into UB no tile occupies; the trips' tiles may be
    # anywhere in [0, 2048), so the scratch goes elsewhere
    src = kernel(PING_PONG, keep=False).replace("%one = arith.constant 1.0 : f32", "%one = arith.constant 3.0 : f32")
    src = src.replace("pto.tadds ins(%ti, %one", "pto.tdivs ins(%ti, %one")
    rc, out, err, x, _ = run(tmp_path, capsys, src, target)
    assert rc == 0 and out.startswith("PASS y"), out + err
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), x / np.float32(3))


@pytest.mark.parametrize("target", TARGETS)
def test_signed_division_of_a_kernel_scalar_rounds_toward_zero(target, tmp_path, capsys):
    # the trip count is divsi(n, -2) + remsi(n, -2) + ceildivsi(n, -2) + 3 (arith's rounding, not Python's //)
    n = 3
    trips = int(n / -2) + int(np.fmod(n, -2)) + int(np.ceil(n / -2)) + 3
    assert trips == 2
    bound = """%cm2 = arith.constant -2 : index
  %c3 = arith.constant 3 : index
  %ni = arith.index_cast %n : i64 to index
  %q = arith.divsi %ni, %cm2 : index
  %r = arith.remsi %ni, %cm2 : index
  %c = arith.ceildivsi %ni, %cm2 : index
  %qr = arith.addi %q, %r : index
  %qrc = arith.addi %qr, %c : index
  %ub = arith.addi %qrc, %c3 : index
  scf.for %i = %c0 to %ub step %c1"""
    src = kernel(PING_PONG, keep=False, args=", %n: i64").replace("scf.for %i = %c0 to %c4 step %c1", bound)
    rc, out, err, x, _ = run(tmp_path, capsys, src, target, "--input", f"n={n}")
    assert rc == 0 and out.startswith("PASS y"), out + err
    y = np.load(tmp_path / "o" / "y.npy")
    np.testing.assert_array_equal(y[:16 * trips], x[:16 * trips] + np.float32(1))
