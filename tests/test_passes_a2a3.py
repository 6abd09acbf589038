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
    ("computed-address-always-misaligned",
     "  %a0 = arith.constant 4096 : i64\n  %a16 = arith.constant 16 : i64\n  %a1 = arith.addi %a0, %a16 : i64\n"
     + alloc("%a") + f"  %a2 = pto.tassign %a, %a1 : {T16} -> {T16}\n" + load("%a2") + store("%a2"),
     "%a2 = pto.tassign", "every UB address this gives %a2 (0x1010) is not 32-byte aligned"),
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
    ("strided-subset",
     alloc("%a", T32) + f"  %s = pto.subset %a[%c0, %c0] sizes [16, 16] : {T32}\n" + load("%a", t=T32,
                                                                                        pv="!pto.partition_tensor_view<32x32xf32>"),
     "%s = pto.subset", "block [0:16, 0:16] of a 32x32 tile is not contiguous, so it is no tile the hardware "
     "can address"),
]


@pytest.mark.parametrize("case", PM_ERRORS, ids=[c[0] for c in PM_ERRORS])
def test_plan_memory_errors_are_located(case):
    name, body, needle, fragment = case
    extra = ", %c: i1" if "scf.if" in body else (", %base: i64" if "%base" in body else "")
    rows = 32 if name == "strided-subset" else 16
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


# =====================================================================================
# pto-select-expand-mode
# =====================================================================================

SEM = "pto-select-expand-mode"
COL16 = "!pto.tile_buf<vec, 16x1xf32, blayout=col_major>"
ROW64 = "!pto.tile_buf<vec, 16x64xf32>"


def rowexpand(op: str, a: tuple[str, str], b: tuple[str, str], d: tuple[str, str] = ("%d", ROW64),
              tmp: tuple[str, str] | None = None, attrs: str = "") -> str:
    ins = [a, b] + ([tmp] if tmp else [])
    names = ", ".join(n for n, _ in ins)
    types = ", ".join(t for _, t in ins)
    return f"  pto.{op} ins({names} : {types}) outs({d[0]} : {d[1]}){attrs}\n"


def expand_attrs(module) -> list[tuple]:
    out = []
    for op in module.walk():
        if isinstance(op, (pto.RowExpandBinaryOp, pto.ColExpandBinaryOp)):
            get = lambda k: op.attributes[k].value.data if k in op.attributes else None  # noqa: E731
            out.append((op.name, get("expand_mode"), get("expanded_operand")))
    return out


def test_expand_mode_attributes():
    b8 = "!pto.tile_buf<vec, 16x8xf32>"
    f16row, f16blk = "!pto.tile_buf<vec, 16x64xf16>", "!pto.tile_buf<vec, 16x16xf16>"
    body = (alloc("%x", ROW64) + alloc("%s", COL16) + alloc("%b", b8) + alloc("%d", ROW64)
            + alloc("%h", f16row) + alloc("%k", f16blk) + alloc("%e", f16row)
            + alloc("%c", "!pto.tile_buf<vec, 1x64xf32>")
            + rowexpand("trowexpandmax", ("%x", ROW64), ("%s", COL16))          # Mode 1, src1
            + rowexpand("trowexpandsub", ("%s", COL16), ("%x", ROW64))          # Mode 1, src0
            + rowexpand("trowexpandadd", ("%x", ROW64), ("%b", b8))             # Mode 2: 32/4 = 8 cols
            + rowexpand("trowexpanddiv", ("%k", f16blk), ("%h", f16row), ("%e", f16row))  # 32/2 = 16
            + f"  pto.tcolexpandmax ins(%x, %c : {ROW64}, !pto.tile_buf<vec, 1x64xf32>) outs(%d : {ROW64})\n")
    got = expand_attrs(run(kernel(body), SEM))
    assert got == [("pto.trowexpandmax", 1, 1), ("pto.trowexpandsub", 1, 0), ("pto.trowexpandadd", 2, 1),
                   ("pto.trowexpanddiv", 2, 0), ("pto.tcolexpandmax", None, 1)]


def test_expand_mode_is_idempotent_and_keeps_agreeing_attributes():
    body = alloc("%x", ROW64) + alloc("%s", COL16) + alloc("%d", ROW64) + rowexpand(
        "trowexpandmax", ("%x", ROW64), ("%s", COL16), attrs=" {expand_mode = 1 : i64}")
    m = run(kernel(body), SEM + "," + SEM)
    assert expand_attrs(m) == [("pto.trowexpandmax", 1, 1)]


SEM_ERRORS = [
    # the pass checks the ISA rules itself, on IR no verifier has seen
    ("both-full", rowexpand("trowexpandmax", ("%b", "!pto.tile_buf<vec, 16x8xf32>"),
                            ("%b", "!pto.tile_buf<vec, 16x8xf32>"), ("%b", "!pto.tile_buf<vec, 16x8xf32>")),
     "both do, so the expanded operand is ambiguous"),
    ("none-full", rowexpand("trowexpandmax", ("%w", "!pto.tile_buf<vec, 16x32xf32>"), ("%s", COL16)),
     "exactly one of src0 or src1 must have dst's valid shape (16x64); got src0 16x32, src1 16x1"),
    ("mode1-cols", rowexpand("trowexpandmax", ("%x", ROW64), ("%s2", "!pto.tile_buf<vec, 16x2xf32, blayout=col_major>")),
     "Mode 1 (ColMajor src1) requires src1 valid cols == 1, got 2"),
    ("mode2-cols", rowexpand("trowexpandmax", ("%x", ROW64), ("%w16", "!pto.tile_buf<vec, 16x16xf32>")),
     "Mode 2 (RowMajor src1) requires src1 valid cols == 32/sizeof(f32) = 8, got 16"),
    ("mode1-rows", rowexpand("trowexpandmax", ("%x", ROW64), ("%s8", "!pto.tile_buf<vec, 8x1xf32, blayout=col_major>")),
     "Mode 1 requires src1 valid rows == dst valid rows (8 vs 16)"),
    ("full-colmajor", rowexpand("trowexpandmax", ("%xc", "!pto.tile_buf<vec, 16x64xf32, blayout=col_major>"),
                                ("%s", COL16)),
     "the full-size operand (src0) must be RowMajor"),
    ("tmp-mode2", rowexpand("trowexpandmax", ("%x", ROW64), ("%b", "!pto.tile_buf<vec, 16x8xf32>"),
                            tmp=("%x", ROW64)),
     "a tmp operand is only allowed with Mode 1"),
    ("disagrees", rowexpand("trowexpandmax", ("%x", ROW64), ("%s", COL16), attrs=" {expand_mode = 2 : i64}"),
     "'expand_mode = 2' disagrees with the operands, which give 1"),
    ("operand-disagrees", rowexpand("trowexpandmax", ("%x", ROW64), ("%s", COL16),
                                    attrs=" {expanded_operand = 0 : i64}"),
     "'expanded_operand = 0' disagrees with the operands, which give 1"),
]

_SEM_TILES = {"%x": ROW64, "%s": COL16, "%d": ROW64, "%b": "!pto.tile_buf<vec, 16x8xf32>",
              "%w": "!pto.tile_buf<vec, 16x32xf32>", "%w16": "!pto.tile_buf<vec, 16x16xf32>", "%s2": "!pto.tile_buf<vec, 16x2xf32, blayout=col_major>",
              "%s8": "!pto.tile_buf<vec, 8x1xf32, blayout=col_major>",
              "%xc": "!pto.tile_buf<vec, 16x64xf32, blayout=col_major>"}


@pytest.mark.parametrize("case", SEM_ERRORS, ids=[c[0] for c in SEM_ERRORS])
def test_select_expand_mode_errors_are_located(case):
    _, line, fragment = case
    body = "".join(alloc(n, t) for n, t in _SEM_TILES.items()) + line
    text = kernel(body)
    got = located(text, SEM)
    assert got[:2] == pos(text, "pto.trowexpandmax"), got
    assert fragment in got[2], got[2]


# =====================================================================================
# pto-tmp-strategy
# =====================================================================================

def bcast(module) -> list[tuple]:
    return [(op.attributes["bcast_source"].data,
             op.attributes["bcast_bytes"].value.data if "bcast_bytes" in op.attributes else None)
            for op in module.walk() if isinstance(op, pto.RowExpandBinaryOp)]


def mode1(rows: int, tmp_shape: str | None = None, dtype: str = "f32") -> str:
    x, s = f"!pto.tile_buf<vec, {rows}x32x{dtype}>", f"!pto.tile_buf<vec, {rows}x1x{dtype}, blayout=col_major>"
    body = alloc("%x", x) + alloc("%s", s)
    tmp = None
    if tmp_shape:
        t = f"!pto.tile_buf<vec, {tmp_shape}x{dtype}>"
        body += alloc("%t", t)
        tmp = ("%t", t)
    return body + rowexpand("trowexpandmax", ("%x", x), ("%s", s), ("%x", x), tmp)


@pytest.mark.parametrize("rows,want", [(1, 256), (7, 256), (8, 256), (9, 512), (16, 512), (240, 7680),
                                       (255, 8192), (256, 7680), (257, 7680), (300, 7680)])
def test_mode1_broadcast_bytes(rows, want):
    # ceil(R/8)*256 for R < 256, 7680 (30 repeats of the 240-row loop) for R >= 256
    assert bcast(run(kernel(mode1(rows)), "pto-tmp-strategy{target=a2a3}")) == [("scratch", want)]


def test_mode1_user_tmp_big_enough_is_used():
    # R = 16 needs 512 bytes; a 2x64xf32 tmp holds exactly 512
    assert bcast(run(kernel(mode1(16, "2x64")), "pto-tmp-strategy{target=a2a3}")) == [("tmp", 512)]


def test_mode1_tmp_is_unused_on_ascend950_and_mode2_needs_none():
    assert bcast(run(kernel(mode1(16, "1x8")), "pto-tmp-strategy{target=ascend950}")) == [("none", None)]
    b8 = "!pto.tile_buf<vec, 16x8xf32>"
    body = alloc("%x", ROW64) + alloc("%b", b8) + rowexpand("trowexpandmax", ("%x", ROW64), ("%b", b8), ("%x", ROW64))
    assert bcast(run(kernel(body), "pto-tmp-strategy{target=a2a3}")) == [("none", None)]


@pytest.mark.parametrize("rows,tmp,need,have", [(16, "16x1", 512, 64), (9, "1x64", 512, 256),
                                                (300, "16x64", 7680, 4096)])
def test_mode1_tmp_too_small_is_located(rows, tmp, need, have):
    text = kernel(mode1(rows, tmp))
    line, col, msg = located(text, "pto-tmp-strategy{target=a2a3}")
    assert (line, col) == pos(text, "pto.trowexpandmax")
    assert f"the tmp tile holds {have} bytes" in msg and f"into {need} bytes" in msg
    assert "ceil(R/8)*256 bytes for R < 256, 7680 bytes for R >= 256" in msg


def test_row_reduce_tmp_insertion_and_placement():
    wide, col = "!pto.tile_buf<vec, 16x256xf32>", COL16
    body = (alloc("%x", wide) + alloc("%r", col) + "  %one = arith.constant 1.0 : f32\n"
            + f"  pto.texpands ins(%one : f32) outs(%x : {wide})\n"
            + f"  pto.trowmax ins(%x : {wide}) outs(%r : {col})\n" + f"  pto.tprint ins(%r : {col})\n")
    m = run(kernel(body), "pto-tmp-strategy{target=a2a3},pto-plan-memory{target=a2a3}")
    (red,) = [op for op in m.walk() if isinstance(op, pto.RowReduceOp)]
    assert red.attributes["tmp_source"].data == "inserted"
    tmp = red.ins[1]
    assert tmp.type == pto.TileBufType(tmp.type.element_type, [16, 64])  # validRow x 256/sizeof(f32)
    assert tmp.owner.next_op is red and tmp.owner.location == red.location
    addrs = allocs(m)
    # x (16 KiB) and the tmp (4 KiB) are live together at the op, then r (64 B)
    assert addrs == {"x": 0, "r": 16384, "tmp": 16384 + 64}


def test_row_reduce_tmp_errors():
    wide = "!pto.tile_buf<vec, 16x256xf32>"
    small = "!pto.tile_buf<vec, 16x32xf32>"
    body = alloc("%x", wide) + alloc("%t", small) + alloc("%r", COL16) + \
        f"  pto.trowsum ins(%x, %t : {wide}, {small}) outs(%r : {COL16})\n"
    text = kernel(body)
    line, col, msg = located(text, "pto-tmp-strategy{target=a2a3}")
    assert (line, col) == pos(text, "pto.trowsum")
    assert "validRow x 256/sizeof(T) = 16x64 elements" in msg
    # ascend950 does not use the tmp
    run(text, "pto-tmp-strategy{target=ascend950}")


def test_tmp_strategy_unknown_target():
    with pytest.raises(PtocError) as info:
        run(kernel(mode1(8)), "pto-tmp-strategy{target=a9}")
    assert "unknown target 'a9'" in str(info.value)


# =====================================================================================
# pto-insert-sync
# =====================================================================================

FULL = ("pto-select-expand-mode,pto-tmp-strategy{target=a2a3},pto-plan-memory{target=a2a3},"
        "pto-insert-sync{target=a2a3}")
SYNC_NAMES = ("pto.set_flag", "pto.wait_flag", "pto.barrier")


def _args(op) -> tuple:
    return tuple(a.body.data for a in op.args.data)


def sync_trace(block) -> list:
    """The block's ops as a list: tile ops by name, syncs as (name, args), loops/ifs nested."""
    out = []
    for op in block.ops:
        if op.name in SYNC_NAMES or op.name in ("pto.record_event", "pto.wait_event"):
            out.append((op.name.split(".")[1], *_args(op)))
        elif isinstance(op, scf.ForOp):
            out.append(("for", sync_trace(op.body.block)))
        elif isinstance(op, scf.IfOp):
            out.append(("if", *[sync_trace(r.block) for r in op.regions if r.blocks]))
        elif isinstance(op, pto.TileOp):
            out.append(op.name[4:])
    return out


def fn_trace(module) -> list:
    (fn,) = [op for op in module.walk() if op.name == "func.func"]
    return sync_trace(fn.body.block)


def setf(src, dst, e=0):
    return ("set_flag", f"PIPE_{src}", f"PIPE_{dst}", f"EVENT_ID{e}")


def waitf(src, dst, e=0):
    return ("wait_flag", f"PIPE_{src}", f"PIPE_{dst}", f"EVENT_ID{e}")


def bar(p="V"):
    return ("barrier", f"PIPE_{p}")


SOFTMAX_L1 = """func.func @softmax(%x: !pto.tile<16x64xf32>) -> !pto.tile<16x64xf32> {
  %m = pto.trowmax %x : !pto.tile<16x64xf32> -> !pto.tile<16x1xf32, blayout=col_major>
  %s = pto.trowexpandsub %x, %m : !pto.tile<16x64xf32>, !pto.tile<16x1xf32, blayout=col_major> -> !pto.tile<16x64xf32>
  %e = pto.texp %s : !pto.tile<16x64xf32> -> !pto.tile<16x64xf32>
  %z = pto.trowsum %e : !pto.tile<16x64xf32> -> !pto.tile<16x1xf32, blayout=col_major>
  %y = pto.trowexpanddiv %e, %z : !pto.tile<16x64xf32>, !pto.tile<16x1xf32, blayout=col_major> -> !pto.tile<16x64xf32>
  return %y : !pto.tile<16x64xf32>
}
"""


def test_softmax_chain_gets_exactly_the_syncs_its_hazards_need():
    m = run(SOFTMAX_L1, FULL, l1=True)
    # RAW x: MTE2 -> V before trowmax (trowexpandsub's read of x is then ordered); each V op
    # reads its predecessor's result: a V barrier before each; RAW y: V -> MTE3 before tstore
    assert fn_trace(m) == [
        "tload", setf("MTE2", "V"), waitf("MTE2", "V"), "trowmax", bar(), "trowexpandsub", bar(), "texp", bar(),
        "trowsum", bar(), "trowexpanddiv", setf("V", "MTE3"), waitf("V", "MTE3"), "tstore"]


ACC = f"""func.func @acc(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %xv = pto.make_tensor_view %x, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
  %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
  %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {PV16}
  %acc0 = pto.alloc_tile : {T16}
  %t = pto.alloc_tile : {T16}
  %n = pto.alloc_tile : {T16}
  pto.texpands ins(%zero : f32) outs(%acc0 : {T16})
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %acc0) -> ({T16}) {{
    %row = arith.muli %i, %c16 : index
    %xp = pto.partition_view %xv, offsets = [%row, %c0], sizes = [%c16, %c16] : {TV} -> {PV16}
    pto.tload ins(%xp : {PV16}) outs(%t : {T16})
    pto.tadd ins(%acc, %t : {T16}, {T16}) outs(%n : {T16})
    scf.yield %n : {T16}
  }}
  pto.tstore ins(%r : {T16}) outs(%yp : {PV16})
  return
}}
"""


def test_loop_accumulation_uses_the_ping_pong_pattern():
    m = run(ACC, FULL)
    assert allocs(m)["acc0"] == allocs(m)["n"]  # one buffer for the carried tile
    assert fn_trace(m) == [
        "texpands", setf("V", "MTE2"),
        ("for", [waitf("V", "MTE2"), "tload", setf("MTE2", "V"), waitf("MTE2", "V"), "tadd", setf("V", "MTE2")]),
        waitf("V", "MTE2"), setf("V", "MTE3"), waitf("V", "MTE3"), "tstore"]


IF_IN_LOOP = f"""func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %n: i32) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0 : i32
  %fzero = arith.constant 0.0 : f32
  %xv = pto.make_tensor_view %x, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
  %yv = pto.make_tensor_view %y, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
  %t = pto.alloc_tile : {T16}
  %u = pto.alloc_tile : {T16}
  pto.texpands ins(%fzero : f32) outs(%u : {T16})
  %pos = arith.cmpi sgt, %n, %zero : i32
  scf.for %i = %c0 to %c4 step %c1 {{
    %row = arith.muli %i, %c16 : index
    %xp = pto.partition_view %xv, offsets = [%row, %c0], sizes = [%c16, %c16] : {TV} -> {PV16}
    %yp = pto.partition_view %yv, offsets = [%row, %c0], sizes = [%c16, %c16] : {TV} -> {PV16}
    scf.if %pos {{
      pto.tload ins(%xp : {PV16}) outs(%t : {T16})
      pto.texp ins(%t : {T16}) outs(%u : {T16})
    }}
    pto.tstore ins(%u : {T16}) outs(%yp : {PV16})
  }}
  return
}}
"""


def test_carried_hazards_inside_an_if_in_a_loop_are_balanced():
    m = run(IF_IN_LOOP, FULL)
    assert fn_trace(m) == [
        "texpands", setf("V", "MTE2"), setf("MTE3", "V"),
        ("for", [waitf("MTE3", "V"),
                 ("if", [waitf("V", "MTE2"), "tload", setf("MTE2", "V"), waitf("MTE2", "V"), "texp",
                         setf("V", "MTE2")], []),
                 setf("V", "MTE3"), waitf("V", "MTE3"), "tstore", setf("MTE3", "V")]),
        waitf("V", "MTE2"), waitf("MTE3", "V")]


def _flag_balance(trace, counts=None, path="") -> None:
    """Every wait has a set before it on every path (the trace's nested loops/ifs)."""
    counts = dict(counts or {})

    def walk(items, c):
        for it in items:
            if isinstance(it, tuple) and it[0] == "set_flag":
                c[it[1:]] = c.get(it[1:], 0) + 1
            elif isinstance(it, tuple) and it[0] == "wait_flag":
                assert c.get(it[1:], 0) > 0, f"unmatched {it}"
                c[it[1:]] -= 1
            elif isinstance(it, tuple) and it[0] == "for":
                for _ in range(3):  # three trips
                    c = walk(it[1], c)
            elif isinstance(it, tuple) and it[0] == "if":
                outs = [walk(b, dict(c)) for b in it[1:]] + ([dict(c)] if len(it) == 2 else [])
                outs = [{k: v for k, v in o.items() if v} for o in outs]
                assert all(o == outs[0] for o in outs), f"branches leave different flags: {outs}"
                c = outs[0]
        return c

    final = walk(trace, counts)
    assert all(v == 0 for v in final.values()), final


@pytest.mark.parametrize("text", [ACC, IF_IN_LOOP], ids=["acc", "if-in-loop"])
def test_inserted_flags_are_balanced_on_every_path(text):
    _flag_balance(fn_trace(run(text, FULL)))


def test_if_yield_orders_around_the_whole_if():
    text = f"""func.func @pick(%a: !pto.ptr<f32>, %y: !pto.ptr<f32>, %c: i1) {{
{prelude(ptrs=("a", "y"))}  %ta = pto.alloc_tile : {T16}
  %s = pto.alloc_tile : {T16}
  %d = pto.alloc_tile : {T16}
  pto.tload ins(%ap : {PV16}) outs(%ta : {T16})
  %r = scf.if %c -> ({T16}) {{
    pto.tadd ins(%ta, %ta : {T16}, {T16}) outs(%s : {T16})
    scf.yield %s : {T16}
  }} else {{
    pto.tmax ins(%ta, %ta : {T16}, {T16}) outs(%d : {T16})
    scf.yield %d : {T16}
  }}
  pto.tstore ins(%r : {T16}) outs(%yp : {PV16})
  return
}}
"""
    m = run(text, FULL)
    assert allocs(m)["s"] == allocs(m)["d"]
    assert fn_trace(m) == ["tload", setf("MTE2", "V"), waitf("MTE2", "V"), ("if", ["tadd"], ["tmax"]),
                           setf("V", "MTE3"), waitf("V", "MTE3"), "tstore"]


def test_same_pipe_waw_on_mte2_and_mte3_and_scratch_needs_barriers():
    body = (alloc("%a") + load("%a") + load("%a", "%outp") + store("%a") + store("%a"))
    m = run(kernel(body), FULL)
    # second tload overwrites a (WAW MTE2); both stores write the same GM partition (WAW MTE3)
    assert fn_trace(m) == ["tload", bar("MTE2"), "tload", setf("MTE2", "MTE3"), waitf("MTE2", "MTE3"), "tstore",
                           bar("MTE3"), "tstore"]


def test_user_syncs_are_kept_and_not_doubled():
    body = (alloc("%a") + alloc("%b") + load("%a")
            + "  pto.set_flag [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID3>]\n"
            + "  pto.wait_flag [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID3>]\n"
            + "  " + binop("tadd", "%a", "%a", "%b").strip() + "\n"
            + "  pto.barrier [#pto.pipe<PIPE_V>]\n" + binop("tmul", "%b", "%b", "%b") + store("%b"))
    m = run(kernel(body), FULL)
    assert fn_trace(m) == ["tload", setf("MTE2", "V", 3), waitf("MTE2", "V", 3), "tadd", bar(), "tmul",
                           setf("V", "MTE3"), waitf("V", "MTE3"), "tstore"]


def test_insert_sync_is_idempotent():
    once = api.print_module(run(IF_IN_LOOP, FULL))
    twice = api.print_module(run(IF_IN_LOOP, FULL + ",pto-insert-sync{target=a2a3}"))
    assert once == twice


def test_event_ids_avoid_user_ids_and_are_reused_when_free():
    # three loads read later: three MTE2 -> V pairs outstanding at once; the user holds id 0
    body = "".join(alloc(f"%l{i}") for i in range(3)) + "".join(alloc(f"%o{i}") for i in range(3))
    body += ("  pto.set_flag [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID0>]\n"
             "  pto.wait_flag [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID0>]\n")
    body += "".join(load(f"%l{i}") for i in range(3))
    body += "".join(f"  pto.texp ins(%l{i} : {T16}) outs(%o{i} : {T16})\n" for i in range(3))
    body += "".join(f"  pto.tprint ins(%o{i} : {T16})\n" for i in range(3))
    tr = fn_trace(run(kernel(body), FULL))
    ids = [t[3] for t in tr if isinstance(t, tuple) and t[0] == "set_flag"]
    assert ids == ["EVENT_ID0", "EVENT_ID1", "EVENT_ID2", "EVENT_ID3"]


def test_more_than_eight_outstanding_events_is_located():
    n = 9
    body = "".join(alloc(f"%l{i}") for i in range(n)) + "".join(alloc(f"%o{i}") for i in range(n))
    body += "".join(load(f"%l{i}") for i in range(n))
    body += "".join(f"  pto.texp ins(%l{i} : {T16}) outs(%o{i} : {T16})\n" for i in range(n))
    body += "".join(f"  pto.tprint ins(%o{i} : {T16})\n" for i in range(n))
    text = kernel(body)
    line, col, msg = located(text, FULL)
    assert (line, col) == pos(text, "pto.texp ins(%l8")
    assert "needs more than the 8 free event ids of PIPE_MTE2 -> PIPE_V" in msg


USER_WAIT_ERRORS = [
    ("no-set", "  pto.wait_flag [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID1>]\n",
     "pto.wait_flag", "waits for PIPE_MTE2 -> PIPE_V EVENT_ID1, but no matching set"),
    ("set-after", "  pto.wait_event [#pto.pipe_event_type<TLOAD>, #pto.pipe_event_type<TVEC>, #pto.event<EVENT_ID0>]\n"
                  "  pto.record_event [#pto.pipe_event_type<TLOAD>, #pto.pipe_event_type<TVEC>, #pto.event<EVENT_ID0>]\n",
     "pto.wait_event", "waits for PIPE_MTE2 -> PIPE_V EVENT_ID0"),
    ("set-in-one-branch", "  scf.if %c {\n"
                          "    pto.set_flag [#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE3>, #pto.event<EVENT_ID2>]\n  }\n"
                          "  pto.wait_flag [#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE3>, #pto.event<EVENT_ID2>]\n",
     "pto.wait_flag", "PIPE_V -> PIPE_MTE3 EVENT_ID2"),
    ("other-event", "  pto.set_flag [#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE3>, #pto.event<EVENT_ID2>]\n"
                    "  pto.wait_flag [#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE3>, #pto.event<EVENT_ID4>]\n",
     "pto.wait_flag", "EVENT_ID4"),
    ("second-wait-in-loop", "  %c4 = arith.constant 4 : index\n"
                            "  pto.set_flag [#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE3>, #pto.event<EVENT_ID2>]\n"
                            "  scf.for %i = %c0 to %c4 step %c1 {\n"
                            "    pto.wait_flag [#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE3>, #pto.event<EVENT_ID2>]\n  }\n",
     "pto.wait_flag", "EVENT_ID2"),
]


@pytest.mark.parametrize("case", USER_WAIT_ERRORS, ids=[c[0] for c in USER_WAIT_ERRORS])
def test_user_wait_without_set_is_located(case):
    _, body, needle, fragment = case
    text = kernel(body, extra_args=", %c: i1")
    line, col, msg = located(text, "pto-insert-sync{target=a2a3}")
    assert (line, col) == pos(text, needle), msg
    assert fragment in msg, msg


def test_user_ping_pong_in_a_loop_is_accepted():
    body = ("  %c4 = arith.constant 4 : index\n"
            "  pto.set_flag [#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE2>, #pto.event<EVENT_ID1>]\n"
            "  scf.for %i = %c0 to %c4 step %c1 {\n"
            "    pto.wait_flag [#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE2>, #pto.event<EVENT_ID1>]\n"
            "    pto.set_flag [#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE2>, #pto.event<EVENT_ID1>]\n  }\n"
            "  pto.wait_flag [#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE2>, #pto.event<EVENT_ID1>]\n")
    run(kernel(body), "pto-insert-sync{target=a2a3}")


def test_insert_sync_rejects_l1_ops():
    line, col, msg = located(SOFTMAX_L1, "pto-insert-sync{target=a2a3}")
    assert (line, col) == pos(SOFTMAX_L1, "pto.trowmax") and "run pto-bufferize and pto-plan-memory" in msg


# ---- the executor is the proof: no race, no deadlock, right results ------------------------

H = pytest.importorskip("a2a3_harness")


@pytest.mark.parametrize("text,given", [
    (SOFTMAX_L1, {}), (ACC, {}), (IF_IN_LOOP, {"n": 3}), (IF_IN_LOOP, {"n": -3}),
], ids=["softmax", "acc", "if-in-loop-taken", "if-in-loop-skipped"])
def test_executor_finds_no_race_or_deadlock(text, given):
    assert H.use_real_pipeline()
    H.assert_pass(text, given=given)


def test_plan_memory_is_idempotent_and_keeps_manual_placements():
    body = (alloc("%m") + "  pto.tassign %m, @tile(0x4000)\n" + alloc("%n") + alloc("%p")
            + load("%m") + binop("tadd", "%m", "%m", "%n") + binop("tadd", "%m", "%n", "%p") + store("%p"))
    once = run(kernel(body), PM)
    twice = run(kernel(body), PM + "," + PM)
    assert allocs(once) == allocs(twice) and allocs(once)["m"] == 0x4000
    assert api.print_module(once) == api.print_module(twice)


def test_tassign_of_a_tile_without_alloc_is_located():
    text = (f"func.func @k(%t: {T16}) {{\n  pto.tassign %t, @tile(0x100)\n  pto.tprint ins(%t : {T16})\n"
            "  return\n}\n")
    line, col, msg = located(text, PM)
    assert (line, col) == pos(text, "pto.tassign") and "no pto.alloc_tile defines" in msg


def test_fixed_addresses_fragmenting_ub_is_located():
    # 95 KiB fixed at 1 KiB and at 97 KiB leave two 1 KiB holes; a 2 KiB tile live with both
    # cannot be placed although the peak (192 KiB) fits
    big = "!pto.tile_buf<vec, 95x256xf32>"
    mid = "!pto.tile_buf<vec, 16x32xf32>"
    body = ("  %a0 = arith.constant 1024 : i64\n  %a1 = arith.constant 99328 : i64\n"
            "  %one = arith.constant 1.0 : f32\n"
            + alloc("%a", big, "%a0") + alloc("%b", big, "%a1") + alloc("%c", mid)
            + "".join(f"  pto.texpands ins(%one : f32) outs({n} : {t})\n" for n, t in (("%a", big), ("%b", big),
                                                                                       ("%c", mid)))
            + "".join(f"  pto.tprint ins({n} : {t})\n" for n, t in (("%a", big), ("%b", big), ("%c", mid))))
    text = kernel(body)
    line, col, msg = located(text, PM)
    assert (line, col) == pos(text, "%c = pto.alloc_tile")
    assert "cannot place %c (2048 bytes): the fixed addresses fragment the 196608-byte a2a3 UB (peak 196608" in msg


def test_integer_and_l1_row_reduce_tmp_errors_are_located():
    i32, t = "!pto.tile_buf<vec, 8x8xi32>", "!pto.tile_buf<vec, 1x4xi32>"
    col = "!pto.tile_buf<vec, 8x1xi32, blayout=col_major>"
    text = kernel(alloc("%x", i32) + alloc("%t", t) + alloc("%r", col)
                  + f"  pto.trowmax ins(%x, %t : {i32}, {t}) outs(%r : {col})\n")
    line, col_, msg = located(text, "pto-tmp-strategy{target=a2a3}")
    assert (line, col_) == pos(text, "pto.trowmax") and "holds 16 bytes" in msg and "one 32-byte block" in msg
    l1 = ("func.func @k(%x: !pto.tile<8x512xf16>) -> !pto.tile<8x1xf16, blayout=col_major> {\n"
          "  %r = pto.trowsum %x : !pto.tile<8x512xf16> -> !pto.tile<8x1xf16, blayout=col_major>\n"
          "  return %r : !pto.tile<8x1xf16, blayout=col_major>\n}\n")
    line, col_, msg = located(l1, "pto-tmp-strategy{target=a2a3}")
    assert (line, col_) == pos(l1, "pto.trowsum") and "run pto-bufferize first" in msg
    # after bufferization the same kernel gets its tmp
    m = run(l1, "pto-tmp-strategy{target=a2a3}", l1=True)
    (red,) = [op for op in m.walk() if isinstance(op, pto.RowReduceOp)]
    assert red.ins[1].type == pto.TileBufType(red.ins[0].type.element_type, [8, 128])


def test_tmp_strategy_checks_expand_mode_attribute():
    body = alloc("%x", ROW64) + alloc("%s", COL16) + alloc("%d", ROW64) + rowexpand(
        "trowexpandmax", ("%x", ROW64), ("%s", COL16), attrs=" {expand_mode = 2 : i64}")
    text = kernel(body)
    line, col, msg = located(text, "pto-tmp-strategy{target=a2a3}")
    assert (line, col) == pos(text, "pto.trowexpandmax") and "'expand_mode = 2' disagrees" in msg


# ---- random kernels: loops, ifs, iter_args, if results, Mode-1 scratch, reductions ----------

_C1 = "!pto.tile_buf<vec, 16x1xf32, blayout=col_major>"
_B8 = "!pto.tile_buf<vec, 16x8xf32>"


def _random_kernel(seed: int) -> str:
    import random

    rng = random.Random(seed)
    counter = [0]

    def fresh(p):
        counter[0] += 1
        return f"%{p}{counter[0]}"

    def gen(names, depth, offsets, ind):
        lines, names = [], list(names)
        for _ in range(rng.randint(1, 5)):
            k = rng.random()
            t = lambda: rng.choice(names)  # noqa: E731
            c = lambda: f"%cc{rng.randrange(2)}"  # noqa: E731
            if k < 0.1 and depth < 2:
                v, tc = fresh("i"), fresh("tc")
                lines.append(f"{ind}{tc} = arith.constant {rng.randint(1, 3)} : index")
                if rng.random() < 0.5:
                    acc, res = fresh("acc"), fresh("r")
                    lines.append(f"{ind}{res} = scf.for {v} = %c0 to {tc} step %c1 iter_args({acc} = {t()}) -> ({T16}) {{")
                    inner = names + [acc]
                    lines.append(f"{ind}  {v}m = arith.muli {v}, %c16 : index")
                    lines += gen(inner, depth + 1, offsets + [v + "m"], ind + "  ")
                    lines.append(f"{ind}  scf.yield {rng.choice(inner)} : {T16}\n{ind}}}")
                    names.append(res)
                else:
                    lines.append(f"{ind}scf.for {v} = %c0 to {tc} step %c1 {{\n{ind}  {v}m = arith.muli {v}, %c16 : index")
                    lines += gen(names, depth + 1, offsets + [v + "m"], ind + "  ")
                    lines.append(f"{ind}}}")
            elif k < 0.2 and depth < 2:
                if rng.random() < 0.5:
                    res = fresh("s")
                    lines.append(f"{ind}{res} = scf.if %pos -> ({T16}) {{")
                    lines += gen(names, depth + 1, offsets, ind + "  ")
                    lines.append(f"{ind}  scf.yield {t()} : {T16}\n{ind}}} else {{")
                    lines += gen(names, depth + 1, offsets, ind + "  ")
                    lines.append(f"{ind}  scf.yield {t()} : {T16}\n{ind}}}")
                    names.append(res)
                else:
                    lines.append(f"{ind}scf.if %pos {{")
                    lines += gen(names, depth + 1, offsets, ind + "  ")
                    lines.append(f"{ind}}}")
            else:
                kind = rng.choice(["load", "load", "store", "store", "bin", "bin", "abs", "loady", "red",
                                   "mode1", "mode2"])
                if kind in ("load", "store", "loady"):
                    off = rng.choice(offsets) if offsets and rng.random() < 0.5 else \
                        f"%c{rng.choice([0, 16, 32, 48])}"
                    pv = fresh("p")
                    src = "%xv" if kind == "load" else "%yv"
                    lines.append(f"{ind}{pv} = pto.partition_view {src}, offsets = [{off}, %c0], "
                                 f"sizes = [%c16, %c16] : {TV} -> {PV16}")
                    lines.append(f"{ind}pto.tstore ins({t()} : {T16}) outs({pv} : {PV16})" if kind == "store" else
                                 f"{ind}pto.tload ins({pv} : {PV16}) outs({t()} : {T16})")
                elif kind == "abs":
                    lines.append(f"{ind}pto.tabs ins({t()} : {T16}) outs({t()} : {T16})")
                elif kind == "red":
                    lines.append(f"{ind}pto.{rng.choice(['trowmax', 'trowsum'])} ins({t()} : {T16}) outs({c()} : {_C1})")
                elif kind == "mode1":  # Mode 1 through the a2a3 scratch
                    op = rng.choice(["trowexpandsub", "trowexpandmax"])
                    (a, ta), (b, tb) = (t(), T16), (c(), _C1)
                    if rng.random() < 0.5:  # src0 expanded
                        (a, ta), (b, tb) = (b, tb), (a, ta)
                    lines.append(f"{ind}pto.{op} ins({a}, {b} : {ta}, {tb}) outs({t()} : {T16})")
                elif kind == "mode2":
                    lines.append(f"{ind}pto.trowexpandadd ins({t()}, %bb : {T16}, {_B8}) outs({t()} : {T16})")
                else:
                    op = rng.choice(["tadd", "tmin", "tmax", "tsub"])
                    lines.append(f"{ind}pto.{op} ins({t()}, {t()} : {T16}, {T16}) outs({t()} : {T16})")
        return lines

    head = [f"func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %n: i32) {{", prelude(64, 16, ()).rstrip(),
            "  %c32 = arith.constant 32 : index", "  %c48 = arith.constant 48 : index",
            "  %c16 = arith.constant 16 : index",
            "  %zero = arith.constant 0 : i32", "  %pos = arith.cmpi sgt, %n, %zero : i32",
            "  %one = arith.constant 1.0 : f32",
            f"  %xv = pto.make_tensor_view %x, shape = [%cr, %cc], strides = [%cc, %c1] : {TV}",
            f"  %yv = pto.make_tensor_view %y, shape = [%cr, %cc], strides = [%cc, %c1] : {TV}"]
    names = [f"%a{i}" for i in range(rng.randint(2, 5))]
    for name, ty in [(n, T16) for n in names] + [("%cc0", _C1), ("%cc1", _C1), ("%bb", _B8)]:
        head += [f"  {name} = pto.alloc_tile : {ty}", f"  pto.texpands ins(%one : f32) outs({name} : {ty})"]
    return "\n".join(head + gen(names, 0, [], "  ")) + "\n  return\n}\n"


@pytest.mark.parametrize("block", range(4))
def test_random_kernels_run_race_free_and_right(block):
    """Random kernels through the real pipeline and the executor: no race, no deadlock, golden
    outputs; programs whose carried tiles conflict are rejected by pto-plan-memory instead."""
    rejected = 0
    for seed in range(block * 50, block * 50 + 50):
        text = _random_kernel(seed)
        for n in (3, -3):
            try:
                cmp, findings, prog = H.check(text, given={"n": n})
            except PtocError as e:
                assert "must share one buffer" in str(e) or "cannot work in place" in str(e), (seed, str(e))
                rejected += 1
                break
            assert not findings, (seed, n, [str(f) for f in findings][:2], text)
            assert all(c.ok for c in cmp), (seed, n, [c.line() for c in cmp if not c.ok], text)
    assert rejected < 25


def test_loop_dependent_tassign_address_is_kept_for_run_time():
    # PTOAS test/basic/tassign_level3_loop_rebind.pto: the address alternates per trip
    body = ("  %a0 = arith.constant 0 : i64\n  %a1 = arith.constant 32768 : i64\n  %c2 = arith.constant 2 : index\n"
            + alloc("%t", addr="%a0")
            + "  scf.for %i = %c0 to %c2 step %c1 {\n"
            + "    %first = arith.cmpi eq, %i, %c0 : index\n"
            + "    %addr = scf.if %first -> (i64) {\n      scf.yield %a0 : i64\n    } else {\n"
            + "      scf.yield %a1 : i64\n    }\n"
            + f"    %ti = pto.tassign %t, %addr : {T16} -> {T16}\n"
            + f"    pto.tprint ins(%ti : {T16})\n  }}\n")
    module = run(kernel(body), PM)
    (op,) = ops_named(module, "pto.tassign")
    assert op.static_addr is None and op.result[0].uses  # the tprint reads the tile at the run-time address


def test_mode1_dynamic_rows_use_the_bound_over_the_tile_rows():
    def k(rows):
        x = f"!pto.tile_buf<vec, {rows}x32xf32, valid=?x32>"
        s = f"!pto.tile_buf<vec, {rows}x1xf32, valid=?x1, blayout=col_major>"
        return kernel(f"  %x = pto.alloc_tile valid_row = %r : {x}\n  %s = pto.alloc_tile valid_row = %r : {s}\n"
                      + rowexpand("trowexpandmax", ("%x", x), ("%s", s), ("%x", x)), extra_args=", %r: index")
    # R <= 16: at most ceil(16/8)*256; R <= 300: R = 249..255 needs 32 repeats = 8192 bytes
    assert bcast(run(k(16), "pto-tmp-strategy{target=a2a3}")) == [("scratch", 512)]
    assert bcast(run(k(300), "pto-tmp-strategy{target=a2a3}")) == [("scratch", 8192)]
