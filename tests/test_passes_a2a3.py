"""The a2a3 backend passes 2-5: pto-select-expand-mode, pto-tmp-strategy, pto-plan-memory,
pto-insert-sync (DESIGN.md §5; issue 5).

Expected values come from the ISA pages, not from ptoc's output: tile sizes are
rows*cols*sizeof(T), UB addresses are 32-byte aligned in a 192 KiB UB with the 8 KiB
TMP_UB_OFFSET scratch at 184 KiB (reference/pto_isa.md §4.8, §5), Mode-1 broadcast buffers
hold ceil(R/8)*256 bytes (R < 256) or 7680 bytes (seeds/000), pipes are tload = MTE2,
tstore = MTE3, vector ops = V (pto_isa.md §2), same-pipe RAW/WAW need a pipe_barrier and
cross-pipe hazards a set_flag/wait_flag pair (vector_isa.md §1.11).  Each located error is
checked at the exact line:col of the op its rule points to (found by text search in the
kernel, not copied from ptoc).
"""

from __future__ import annotations

import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.passes import PassPipeline

from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.dialects import pto
from pto_compiler.passes import get_all_passes

T16 = "!pto.tile_buf<vec, 16x16xf32>"
T32 = "!pto.tile_buf<vec, 32x32xf32>"
PV16 = "!pto.partition_tensor_view<16x16xf32>"
TV = "!pto.tensor_view<?x?xf32>"


def prelude(rows: int = 16, cols: int = 16, ptrs=("in", "out")) -> str:
    lines = ["  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             f"  %cr = arith.constant {rows} : index", f"  %cc = arith.constant {cols} : index"]
    pv = f"!pto.partition_tensor_view<{rows}x{cols}xf32>"
    for p in ptrs:
        lines.append(f"  %{p}v = pto.make_tensor_view %{p}, shape = [%cr, %cc], strides = [%cc, %c1] : {TV}")
        lines.append(f"  %{p}p = pto.partition_view %{p}v, offsets = [%c0, %c0], sizes = [%cr, %cc] : {TV} -> {pv}")
    return "\n".join(lines) + "\n"


def kernel(body: str, rows: int = 16, cols: int = 16, ptrs=("in", "out"), extra_args: str = "") -> str:
    args = ", ".join(f"%{p}: !pto.ptr<f32>" for p in ptrs) + extra_args
    return f"func.func @k({args}) {{\n{prelude(rows, cols, ptrs)}{body}  return\n}}\n"


def run(text: str, spec: str, l1: bool = False):
    module = api.parse(text, "k.pto")
    if l1:
        spec = "pto-bufferize," + spec
    PassPipeline.parse_spec(get_all_passes(), spec).apply(api.context(), module)
    module.verify()
    return module


def located(text: str, spec: str, l1: bool = False) -> tuple[int, int, str]:
    with pytest.raises(PtocError) as info:
        run(text, spec, l1)
    d = info.value.diagnostics[0]
    assert d.filename == "k.pto", d
    return d.line, d.column, d.message


def pos(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """(line, col) of the op on the line holding the nth occurrence of ``needle``: the column
    of its ``pto.``/``scf.`` op name (where the front end locates an op)."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line_start = text.rfind("\n", 0, at) + 1
    line_text = text[line_start:text.index("\n", at)]
    line = text.count("\n", 0, at) + 1
    for name in ("pto.", "scf.", "arith."):
        j = line_text.find(name)
        if j >= 0:
            return line, j + 1
    raise AssertionError(needle)


def lines_in(fragment: str, text: str) -> str:
    """Replace each ``{needle}`` in a message fragment by the line number of ``needle`` in text."""
    import re

    return re.sub(r"\{([^}]+)\}", lambda m: str(pos(text, m.group(1))[0]), fragment)


def allocs(module) -> dict[str, int]:
    return {op.result.name_hint: op.attributes["ub_addr"].value.data
            for op in module.walk() if isinstance(op, pto.AllocTileOp) and "ub_addr" in op.attributes}


def ops_named(module, name: str):
    return [op for op in module.walk() if op.name == name]


# =====================================================================================
# pto-plan-memory
# =====================================================================================

PM = "pto-plan-memory{target=a2a3}"


def load(tile: str, view: str = "%inp", t: str = T16, pv: str = PV16) -> str:
    return f"  pto.tload ins({view} : {pv}) outs({tile} : {t})\n"


def store(tile: str, view: str = "%outp", t: str = T16, pv: str = PV16) -> str:
    return f"  pto.tstore ins({tile} : {t}) outs({view} : {pv})\n"


def binop(op: str, a: str, b: str, d: str, t: str = T16) -> str:
    return f"  pto.{op} ins({a}, {b} : {t}, {t}) outs({d} : {t})\n"


def alloc(name: str, t: str = T16, addr: str | None = None) -> str:
    a = f" addr = {addr}" if addr else ""
    return f"  {name} = pto.alloc_tile{a} : {t}\n"


def test_addresses_are_aligned_disjoint_when_live_and_reused_when_dead():
    body = (alloc("%a") + alloc("%b") + alloc("%s") + alloc("%t")
            + load("%a") + load("%b") + binop("tadd", "%a", "%b", "%s") + binop("tmul", "%s", "%s", "%t")
            + store("%t"))
    addrs = allocs(run(kernel(body), PM))
    # a and b live together, s is written while a, b are read: three 1 KiB tiles
    assert addrs["a"] == 0 and addrs["b"] == 1024 and addrs["s"] == 2048
    # a and b are dead once s is written, so t reuses the first free 1 KiB
    assert addrs["t"] == 0
    assert all(a % 32 == 0 for a in addrs.values())


def test_sizes_round_up_to_32_bytes():
    body = (alloc("%u", "!pto.tile_buf<vec, 1x3xf32>") + alloc("%v", "!pto.tile_buf<vec, 1x3xf32>")
            + "  %one = arith.constant 1.0 : f32\n"
            + "  pto.texpands ins(%one : f32) outs(%u : !pto.tile_buf<vec, 1x3xf32>)\n"
            + "  pto.texpands ins(%one : f32) outs(%v : !pto.tile_buf<vec, 1x3xf32>)\n"
            + "  pto.tadd ins(%u, %v : !pto.tile_buf<vec, 1x3xf32>, !pto.tile_buf<vec, 1x3xf32>) "
              "outs(%u : !pto.tile_buf<vec, 1x3xf32>)\n")
    addrs = allocs(run(kernel(body), PM))
    assert addrs == {"u": 0, "v": 32}  # 12 bytes each, 32-byte aligned


def test_tile_live_across_a_loop_is_not_reused_inside_it():
    # %w is read in the loop body before it is written there: live around the back edge
    body = (alloc("%w") + alloc("%x") + alloc("%y") + load("%w")
            + "  %c4 = arith.constant 4 : index\n"
            + "  scf.for %i = %c0 to %c4 step %c1 {\n"
            + "  " + load("%x") + "  " + binop("tadd", "%w", "%x", "%y") + "  " + binop("tmul", "%y", "%y", "%w")
            + "  }\n" + store("%w"))
    addrs = allocs(run(kernel(body), PM))
    assert len({addrs["w"], addrs["x"], addrs["y"]}) == 3


def test_loop_carried_accumulator_shares_one_buffer():
    body = (alloc("%init") + alloc("%x") + alloc("%n")
            + "  %zero = arith.constant 0.0 : f32\n"
            + f"  pto.texpands ins(%zero : f32) outs(%init : {T16})\n"
            + "  %c4 = arith.constant 4 : index\n"
            + f"  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %init) -> ({T16}) {{\n"
            + "  " + load("%x") + "  " + binop("tadd", "%acc", "%x", "%n")
            + f"    scf.yield %n : {T16}\n  }}\n" + store("%r"))
    addrs = allocs(run(kernel(body), PM))
    assert addrs["init"] == addrs["n"] != addrs["x"]


def test_if_yielding_different_tiles_shares_one_buffer():
    body = (alloc("%x") + alloc("%t") + alloc("%e") + load("%x")
            + f"  %s = scf.if %c -> ({T16}) {{\n" + "  " + binop("tadd", "%x", "%x", "%t")
            + f"    scf.yield %t : {T16}\n  }} else {{\n" + "  " + binop("tmul", "%x", "%x", "%e")
            + f"    scf.yield %e : {T16}\n  }}\n" + store("%s"))
    addrs = allocs(run(kernel(body, extra_args=", %c: i1"), PM))
    assert addrs["t"] == addrs["e"]
    assert addrs["x"] != addrs["t"]


def test_fixed_addresses_are_kept_and_tassign_is_erased():
    body = ("  %a0 = arith.constant 4096 : i64\n" + alloc("%m", addr="%a0")
            + "  pto.tassign %n, @tile(0x800)\n" + alloc("%n") + alloc("%p")
            + load("%m") + binop("tadd", "%m", "%m", "%n") + binop("tadd", "%m", "%n", "%p") + store("%p"))
    module = run(kernel(body), PM)
    addrs = allocs(module)
    assert addrs["m"] == 4096 and addrs["n"] == 0x800
    assert addrs["p"] == 0  # [0, 1 KiB) is free: 0x800 + 1 KiB = 0xC00 <= 0x1000
    assert not ops_named(module, "pto.tassign")


def test_ptoas_tassign_with_constant_address():
    body = ("  %a0 = arith.constant 8192 : i64\n" + alloc("%t")
            + f"  %t1 = pto.tassign %t, %a0 : {T16} -> {T16}\n" + load("%t1") + store("%t1"))
    module = run(kernel(body), PM)
    assert allocs(module) == {"t": 8192}
    assert not ops_named(module, "pto.tassign")
    tl = ops_named(module, "pto.tload")[0]
    assert tl.outs[0].owner.name == "pto.alloc_tile"


def test_same_range_fixed_tiles_are_one_buffer():
    # PyPTO level-3 style: a reshape written as two tiles at the same address
    body = ("  %a0 = arith.constant 0 : i64\n" + alloc("%col", "!pto.tile_buf<vec, 16x1xf32, blayout=col_major>", "%a0")
            + alloc("%row", "!pto.tile_buf<vec, 1x16xf32>", "%a0") + alloc("%x")
            + load("%x")
            + "  pto.trowsum ins(%x : !pto.tile_buf<vec, 16x16xf32>) "
              "outs(%col : !pto.tile_buf<vec, 16x1xf32, blayout=col_major>)\n"
            + "  pto.tprint ins(%row : !pto.tile_buf<vec, 1x16xf32>)\n")
    addrs = allocs(run(kernel(body), PM))
    assert addrs["col"] == addrs["row"] == 0 and addrs["x"] == 64  # right after the 64-byte buffer


def test_scratch_is_reserved_only_around_mode1_scratch_ops():
    big = "!pto.tile_buf<vec, 45x1024xf32>"  # 184320 bytes = 180 KiB at 0
    x, col, d = "!pto.tile_buf<vec, 8x8xf32>", "!pto.tile_buf<vec, 8x1xf32, blayout=col_major>", \
        "!pto.tile_buf<vec, 8x8xf32>"
    body = ("  %a0 = arith.constant 0 : i64\n  %one = arith.constant 1.0 : f32\n" + alloc("%k", big, "%a0")
            + alloc("%x", x) + alloc("%b", col) + alloc("%d", d)
            + f"  pto.texpands ins(%one : f32) outs(%k : {big})\n"
            + f"  pto.texpands ins(%one : f32) outs(%x : {x})\n"
            + f"  pto.texpands ins(%one : f32) outs(%b : {col})\n"
            + f"  pto.trowexpandmax ins(%x, %b : {x}, {col}) outs(%d : {d})\n"
            + f"  pto.tprint ins(%k : {big})\n  pto.tprint ins(%d : {d})\n")
    # without the scratch the three small tiles sit right after %k, inside [184 KiB, 192 KiB)
    addrs = allocs(run(kernel(body), PM))
    assert addrs["x"] == 184320 and addrs["b"] == 184320 + 256 and addrs["d"] == 184320 + 288
    # Mode 1 through the scratch: [188416, 196608) is written by the op, [184320, 188416) = 4 KiB
    # is all that is left for the three tiles live at the op
    addrs = allocs(run(kernel(body), "pto-tmp-strategy{target=a2a3}," + PM))
    for name, size in (("x", 256), ("b", 32), ("d", 256)):
        assert 184320 <= addrs[name] and addrs[name] + size <= 188416


def test_manual_mode_accepts_fully_placed_kernels():
    body = ("  %a0 = arith.constant 0 : i64\n  %a1 = arith.constant 1024 : i64\n"
            + alloc("%a", addr="%a0") + alloc("%b", addr="%a1") + load("%a") + binop("tadd", "%a", "%a", "%b")
            + store("%b"))
    assert allocs(run(kernel(body), "pto-plan-memory{target=a2a3 manual=true}")) == {"a": 0, "b": 1024}


def test_in_place_manual_placement_of_an_elementwise_op_is_allowed():
    # the CPU-sim tests do TASSIGN(src0, 0); TASSIGN(dst, 0) (pto_isa.md §4.8)
    body = ("  %a0 = arith.constant 0 : i64\n" + alloc("%a", addr="%a0") + alloc("%b", addr="%a0")
            + load("%a") + "  pto.texp ins(%a : !pto.tile_buf<vec, 16x16xf32>) outs(%b : !pto.tile_buf<vec, 16x16xf32>)\n"
            + store("%b"))
    assert allocs(run(kernel(body), PM)) == {"a": 0, "b": 0}


def test_ascend950_capacity_is_256k():
    big = "!pto.tile_buf<vec, 62x1024xf32>"  # 253952 bytes: fits only in the 256 KiB UB
    body = alloc("%k", big) + "  %one = arith.constant 1.0 : f32\n" + \
        f"  pto.texpands ins(%one : f32) outs(%k : {big})\n"
    assert allocs(run(kernel(body), "pto-plan-memory{target=ascend950}")) == {"k": 0}
    line, col, msg = located(kernel(body), PM)
    assert (line, col) == pos(kernel(body), "%k = pto.alloc_tile")
    assert "253952 bytes" in msg and "196608" in msg


# ---- located errors ----------------------------------------------------------------------

PM_ERRORS = [
    ("misaligned-addr",
     "  %a0 = arith.constant 4100 : i64\n" + alloc("%a", addr="%a0") + load("%a") + store("%a"),
     "%a = pto.alloc_tile", "UB address 0x1004 of %a is not 32-byte aligned"),
    ("misaligned-tassign",
     alloc("%a") + "  pto.tassign %a, @tile(0x1010)\n" + load("%a") + store("%a"),
     "pto.tassign %a", "UB address 0x1010 of %a is not 32-byte aligned"),
    ("out-of-ub",
     "  %a0 = arith.constant 196096 : i64\n" + alloc("%a", addr="%a0") + load("%a") + store("%a"),
     "%a = pto.alloc_tile", "%a (1024 bytes at 0x2fe00) ends at 0x30200, past the end of the 192 KiB a2a3 UB (0x30000)"),
    ("overlap-live",
     "  %a0 = arith.constant 0 : i64\n  %a1 = arith.constant 512 : i64\n"
     + alloc("%a", addr="%a0") + alloc("%b", addr="%a1") + load("%a") + load("%b")
     + binop("tadd", "%a", "%b", "%b") + store("%b"),
     "%b = pto.alloc_tile", "%b (line {%b = pto}) at [0x200, 0x600) overlaps %a (line {%a = pto}) at [0x0, 0x400) while both are live"),
    ("overlap-live-tassign",
     alloc("%a") + "  pto.tassign %a, @tile(0x0)\n" + alloc("%b") + "  pto.tassign %b, @tile(0x3e0)\n"
     + load("%a") + load("%b") + binop("tadd", "%a", "%b", "%b") + store("%b"),
     "pto.tassign %b", "%b (line {%b = pto}) at [0x3e0, 0x7e0) overlaps %a (line {%a = pto}) at [0x0, 0x400)"),
    ("conflicting-addresses",
     "  %a0 = arith.constant 4096 : i64\n" + alloc("%a", addr="%a0") + "  pto.tassign %a, @tile(0x2000)\n"
     + load("%a") + store("%a"),
     "pto.tassign %a", "gives address 0x2000 to a buffer that line {%a = pto} already placed at 0x1000"),
    ("non-constant-address",
     "  %a0 = arith.constant 4096 : i64\n  %a1 = arith.addi %a0, %a0 : i64\n" + alloc("%a")
     + f"  %a2 = pto.tassign %a, %a1 : {T16} -> {T16}\n" + load("%a2") + store("%a2"),
     "%a2 = pto.tassign", "not supported by pto-plan-memory yet"),
    ("non-constant-alloc-addr",
     alloc("%a", addr="%base") + load("%a") + store("%a"),
     "%a = pto.alloc_tile", "the 'addr' operand is not an arith.constant"),
    ("over-capacity",
     "".join(alloc(f"%t{i}", "!pto.tile_buf<vec, 64x256xf32>") for i in range(4))
     + "  %one = arith.constant 1.0 : f32\n"
     + "".join(f"  pto.texpands ins(%one : f32) outs(%t{i} : !pto.tile_buf<vec, 64x256xf32>)\n" for i in range(4))
     + "".join(f"  pto.tprint ins(%t{i} : !pto.tile_buf<vec, 64x256xf32>)\n" for i in range(4)),
     "%t3 = pto.alloc_tile", "cannot place %t3 (65536 bytes); 262144 bytes of tiles are live at once at line "
                             "{outs(%t3} (the peak), more than the "
                             "196608 bytes of the a2a3 UB"),
    ("manual-missing-address",
     "  %a0 = arith.constant 0 : i64\n" + alloc("%a", addr="%a0") + alloc("%b") + load("%a")
     + binop("tadd", "%a", "%a", "%b") + store("%b"),
     "%b = pto.alloc_tile", "%b has no UB address; manual placement (--manual) needs"),
    ("carried-if-both-live",
     alloc("%a") + alloc("%b") + alloc("%d") + load("%a") + load("%b")
     + f"  %s = scf.if %c -> ({T16}) {{\n    scf.yield %a : {T16}\n  }} else {{\n    scf.yield %b : {T16}\n  }}\n"
     + binop("tadd", "%s", "%a", "%d") + store("%d"),
     "outs(%b", "writes %b (line {%b = pto}) while %a (line {%a = pto}) still holds data that is read later"),
    ("carried-loop-not-in-place",
     alloc("%init") + alloc("%n") + load("%init") + "  %c4 = arith.constant 4 : index\n"
     + f"  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %init) -> ({T16}) {{\n"
     + f"    pto.tpairreducesum ins(%acc : {T16}) outs(%n : {T16})\n    scf.yield %n : {T16}\n  }}\n"
     + store("%r"),
     "pto.tpairreducesum", "is read by the same op, which cannot work in place"),
    ("carried-acc-read-after-write",
     alloc("%init") + alloc("%n") + alloc("%x") + load("%init") + "  %c4 = arith.constant 4 : index\n"
     + f"  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %init) -> ({T16}) {{\n"
     + "  " + binop("tadd", "%acc", "%acc", "%n") + "  " + binop("tmul", "%acc", "%n", "%x")
     + "  " + store("%x") + f"    scf.yield %n : {T16}\n  }}\n" + store("%r"),
     "pto.tadd ins(%acc", "writes %n (line {%n = pto}) while %acc (line {%r = scf}) still holds data"),
    ("unknown-tile-producer",
     alloc("%a", T32) + f"  %s = pto.subset %a[%c0, %c0] sizes [16, 16] : {T32}\n" + load("%a", t=T32,
                                                                                        pv="!pto.partition_tensor_view<32x32xf32>"),
     "%s = pto.subset", "defines a tile buffer that pto-plan-memory cannot place yet"),
]


@pytest.mark.parametrize("case", PM_ERRORS, ids=[c[0] for c in PM_ERRORS])
def test_plan_memory_errors_are_located(case):
    name, body, needle, fragment = case
    extra = ", %c: i1" if "scf.if" in body else (", %base: i64" if "%base" in body else "")
    rows = 32 if name == "unknown-tile-producer" else 16
    text = kernel(body, rows=rows, cols=rows, extra_args=extra)
    spec = "pto-plan-memory{target=a2a3 manual=true}" if name.startswith("manual") else PM
    line, col, msg = located(text, spec)
    assert (line, col) == pos(text, needle), msg
    assert lines_in(fragment, text) in msg, msg


def test_plan_memory_error_on_l1_kernel():
    text = "func.func @k(%a: !pto.tile<16x16xf32>) -> !pto.tile<16x16xf32> {\n" \
           "  %d = pto.texp %a : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n  return %d : !pto.tile<16x16xf32>\n}\n"
    line, col, msg = located(text, PM)
    assert (line, col) == (2, 8) and "run pto-bufferize before pto-plan-memory" in msg


def test_scratch_overlap_is_located():
    x, col = "!pto.tile_buf<vec, 8x8xf32>", "!pto.tile_buf<vec, 8x1xf32, blayout=col_major>"
    body = ("  %a0 = arith.constant 188416 : i64\n  %one = arith.constant 1.0 : f32\n"
            + alloc("%x", x, "%a0") + alloc("%b", col) + alloc("%d", x)
            + f"  pto.texpands ins(%one : f32) outs(%x : {x})\n"
            + f"  pto.texpands ins(%one : f32) outs(%b : {col})\n"
            + f"  pto.trowexpandmax ins(%x, %b : {x}, {col}) outs(%d : {x})\n")
    text = kernel(body)
    line, col_, msg = located(text, "pto-tmp-strategy{target=a2a3}," + PM)
    assert (line, col_) == pos(text, "%x = pto.alloc_tile")
    assert "overlaps the a2a3 TMP_UB_OFFSET scratch [0x2e000, 0x30000)" in msg
    assert f"line {pos(text, 'pto.trowexpandmax')[0]}" in msg
    # with Mode 2 (or ascend950) the same placement is fine
    run(text, "pto-tmp-strategy{target=ascend950},pto-plan-memory{target=ascend950}")
