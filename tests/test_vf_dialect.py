"""The vf dialect: types, syntax round trips (PTO-AS -> xDSL text -> xDSL parser), front-end forms."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerType, Signedness

from pto_compiler import api
from pto_compiler.dialects import vf
from pto_compiler.targets import ASCEND950

F32_TILE = "!pto.tile_buf<vec, 1x64xf32>"

KERNEL = f"""
module {{
  func.func @kernel(%a: !pto.ptr<f32>) attributes {{pto.entry}} {{
    vf.func @body(%src: {F32_TILE}, %dst: {F32_TILE}, %n: i32, %alpha: f32) {{
      %m = vf.create_mask ALL : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = vf.load_align %src[0]
      %b = vf.load_align %src[%c0], dist = BRC_B32
      %k = vf.load_align %src[8], BLK
      %u = vf.load_unalign %src[%c1]
      %r = vf.reduce_min %v, %m, datablock = true, merge_mode = MERGING
      %r2 = vf.reduce_max %v, %m
      %r3 = vf.reduce_sum %v, %m, merge_mode = MERGING, dst = %b
      %s = vf.adds %v, 2.0, %m, MERGING
      %s2 = vf.muls %v, %alpha, %m
      %s3 = vf.maxs %v, NEG_INF, %m
      %s4 = vf.mins %v, %alpha, %m
      %e = vf.exp %s, %m
      %z = vf.dup 0.0 : f32
      %z2 = vf.dup NEG_INF, %m, merge_mode = MERGING, dst = %e : f32
      %z3 = vf.dup %v, %m
      %d1 = vf.sub %v, %b, %m
      %d2 = vf.mul %v, %b, %m
      %d3 = vf.div %v, %b, %m
      %d4 = vf.max %v, %b, %m
      %d5 = vf.min %v, %b, %m, merge_mode = MERGING, dst = %k
      %acc = scf.for %i = %c0 to %c4 step %c1 iter_args(%x = %z) -> (f32) {{
        %y = vf.add %x, %v, %m, merge_mode = MERGING
        scf.yield %y
      }}
      %m2, %rest = vf.update_mask %n : f32
      %h = vf.create_mask pattern = VL16 : f32
      vf.store_align %dst[0], %r, %m
      vf.store_align %dst[%c1], %r, %h, dist = ONEPT
      vf.store_unalign %dst[%c1], %r, count = 1
      vf.store_unalign_post %dst
    }}
    %c0 = arith.constant 0 : index
    return
  }}
}}
"""


def parse_ok(text: str, name: str = "k.pto"):
    m = api.parse(text, name)
    api.verify(m, ASCEND950)
    return m


def test_types_print_and_parse():
    r = vf.RegType(Float32Type())
    assert str(r) == "!vf.reg<64xf32>" and r.nlanes == 64
    assert str(vf.RegType(Float16Type())) == "!vf.reg<128xf16>"
    assert str(vf.RegType(IntegerType(64))) == "!vf.reg<32xi64>"
    assert str(vf.RegType(IntegerType(8, Signedness.UNSIGNED))) == "!vf.reg<256xui8>"
    assert str(vf.mask_type(Float32Type())) == "!vf.mask<b32>"
    assert vf.MaskType(16).nlanes == 128 and vf.MaskType(64).nlanes == 32
    assert vf.type_from_text("vf.reg", "64xf32") == r
    assert vf.type_from_text("vf.mask", "b16") == vf.MaskType(16)
    assert vf.RegType(Float32Type()) == vf.RegType(Float32Type())
    assert vf.RegType(Float32Type()) != vf.RegType(Float16Type())


@pytest.mark.parametrize("name,body,msg", [
    ("vf.reg", "32xf32", "a register holds 64 x f32 (256 bytes), not 32"),
    ("vf.reg", "4x16xf32", "one dimension"),
    ("vf.reg", "64xf64", "f64 is not a register element type"),
    ("vf.mask", "b12", "mask width must be b8, b16, b32 or b64"),
])
def test_bad_types(name, body, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        vf.type_from_text(name, body)


def test_kernel_round_trip():
    m = parse_ok(KERNEL)
    printed = api.print_module(m)
    again = api.parse_printed(printed)
    again.verify()
    assert again.is_structurally_equivalent(m)
    assert api.print_module(again) == printed
    # the printed form names full types
    assert "vf.reduce_min %v, %m, datablock = true, merge_mode = MERGING : !vf.reg<64xf32>" in printed
    assert "vf.load_align %src[%c0], dist = BRC_B32 : !pto.tile_buf<vec, 1x64xf32>" in printed
    assert "%m2, %rest = vf.update_mask %n : !vf.mask<b32>" in printed
    assert "vf.store_unalign_post %dst : " in printed


def test_generic_form_round_trip():
    from io import StringIO

    from xdsl.printer import Printer

    m = parse_ok(KERNEL)
    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(m)
    again = api.parse_printed(out.getvalue())
    assert again.is_structurally_equivalent(m)


def test_shorthand_and_offset_forms_in_xdsl_text():
    text = f"""
    vf.func @f(%t: {F32_TILE}, %o: index) {{
      %m = vf.create_mask VL8 : f32
      %v = vf.load_align %t[%o + 64] : {F32_TILE}
      %r = vf.add %v, %v, %m : f32
      %s = vf.dup %v, %m : f32, !vf.reg<64xf32>
      vf.store_align %t[%o + 64], %r, %m : {F32_TILE}
    }}
    """
    m = api.parse_printed(text)
    m.verify()
    ops = list(m.walk())
    load = next(o for o in ops if isinstance(o, vf.LoadAlignOp))
    assert load.static_offset == 64 and load.dyn_offset is not None
    printed = api.print_module(m)
    assert "%t[%o + 64]" in printed and "vf.add %v, %v, %m : !vf.reg<64xf32>" in printed
    assert api.parse_printed(printed).is_structurally_equivalent(m)


def test_accessors_for_lowering_authors():
    m = parse_ok(KERNEL)
    ops = list(m.walk())
    red = next(o for o in ops if isinstance(o, vf.ReduceMinOp))
    assert red.is_datablock and red.mode == "MERGING"
    assert red.merge_source is red.sources[0] and red.dst_operand is None
    s3 = next(o for o in ops if isinstance(o, vf.ReduceSumOp))
    assert s3.dst_operand is not None and s3.merge_source is s3.dst_operand
    call_free = next(o for o in ops if isinstance(o, vf.VfFuncOp))
    assert [str(t) for t in call_free.arg_types][2:] == ["i32", "f32"]
    st = next(o for o in ops if isinstance(o, vf.StoreAlignOp) and o.dist_name == "ONEPT")
    assert st.dyn_offset is not None and st.value.type == vf.RegType(Float32Type())


def test_vf_call_round_trip_and_lookup():
    text = f"""
    module {{
      vf.func @copy(%s: {F32_TILE}, %d: {F32_TILE}) {{
        %m = vf.create_mask ALL : f32
        %v = vf.load_align %s[0]
        vf.store_align %d[0], %v, %m
      }}
      func.func @k(%x: !pto.ptr<f32>) {{
        %a = pto.alloc_tile : {F32_TILE}
        %b = pto.alloc_tile : {F32_TILE}
        vf.call @copy(%a, %b)
        return
      }}
    }}
    """
    # PTO-AS puts top-level vf.func into an L1 kernel today; the xDSL text form has it at module level
    printed_like = text.replace("vf.create_mask ALL : f32", "vf.create_mask ALL : !vf.mask<b32>") \
        .replace("%v = vf.load_align %s[0]", f"%v = vf.load_align %s[0] : {F32_TILE}") \
        .replace("vf.store_align %d[0], %v, %m", f"vf.store_align %d[0], %v, %m : {F32_TILE}") \
        .replace("vf.call @copy(%a, %b)", f"vf.call @copy(%a, %b) : ({F32_TILE}, {F32_TILE}) -> ()") \
        .replace("return", "func.return")
    m = api.parse_printed(printed_like)
    m.verify()
    call = next(o for o in m.walk() if isinstance(o, vf.VfCallOp))
    assert call.resolve() is not None and call.callee_name == "copy"
    assert api.parse_printed(api.print_module(m)).is_structurally_equivalent(m)


# ---------------------------------------------------------------------------------------------
# Verifier errors, located at the offending op (api.parse + api.verify)
# ---------------------------------------------------------------------------------------------

from pto_compiler.diagnostics import PtocError  # noqa: E402
from pto_compiler.targets import A2A3  # noqa: E402

T16 = "!pto.tile_buf<vec, 1x128xf16>"
TI32 = "!pto.tile_buf<vec, 1x64xi32>"


def first_error(text: str, target=ASCEND950):
    m = api.parse(text, "bad.pto")
    with pytest.raises(PtocError) as e:
        api.verify(m, target)
    return e.value.diagnostics


def located(text: str, marker: str):
    """(line, column) of ``marker`` in text (1-based): where a diagnostic must point."""
    for i, line in enumerate(text.splitlines(), 1):
        if marker in line:
            return i, line.index(marker) + 1
    raise AssertionError(marker)


def vf_text(body: str, params: str = f"%s: {F32_TILE}, %h: {T16}, %k: {TI32}, %n: i32") -> str:
    return f"vf.func @f({params}) {{\n  %m = vf.create_mask ALL : f32\n  %v = vf.load_align %s[0]\n{body}\n}}\n"


VERIFY_ERRORS = [
    # (body, marker (the op name the error points at), message fragment)
    ("  %w = vf.load_align %h[0]\n  %r = vf.reduce_min %v, %m, merge_mode = MERGING, dst = %w",
     "vf.reduce_min", "dst type must equal src type: dst is !vf.reg<128xf16>, the result is !vf.reg<64xf32>"),
    ("  %w = vf.load_align %h[0]\n  %r = vf.add %v, %w, %m",
     "vf.add", "dst type must equal src type: source #1 is !vf.reg<128xf16>"),
    ("  %m16 = vf.create_mask ALL : f16\n  %r = vf.add %v, %v, %m16",
     "vf.add", "mask lane width b16 does not match the 32-bit lanes of !vf.reg<64xf32> (use !vf.mask<b32>)"),
    ("  %m16 = vf.create_mask ALL : f16\n  %r = vf.reduce_min %v, %m16",
     "vf.reduce_min", "mask lane width b16 does not match"),
    ("  %mi = vf.create_mask ALL : i32\n  %w = vf.load_align %k[0]\n  %r = vf.div %w, %w, %mi",
     "vf.div", "element type i32 is not supported (supported: f16, bf16, f32)"),
    ("  %mi = vf.create_mask ALL : i32\n  %w = vf.load_align %k[0]\n  %r = vf.exp %w, %mi",
     "vf.exp", "element type i32 is not supported"),
    ("  %r = vf.add %v, %v, %m, dst = %v",
     "vf.add", "`dst` (the register whose lanes MERGING keeps) needs merge_mode = MERGING"),
    ("  %x = vf.create_mask VL128 : f32",
     "vf.create_mask", "pattern VL128 selects more lanes than a !vf.mask<b32> has (64)"),
    ("  %b = vf.load_align %s[0], dist = BRC_B16",
     "vf.load_align", "dist BRC_B16 broadcasts 16-bit elements, but the tile holds f32 (use BRC_B32)"),
    ("  vf.store_unalign %s[3], %v, count = 1",
     "vf.func", "vf.store_unalign at 4:3 to %s is never flushed"),
    ("  vf.store_unalign_post %s",
     "vf.func", "vf.store_unalign_post at 4:3 of %s has no vf.store_unalign before it"),
    ("  vf.store_unalign %s[3], %v, count = 65\n  vf.store_unalign_post %s",
     "vf.store_unalign", "count must be 1..64 (the register's lanes), got 65"),
    ("  %h2 = arith.constant 1.0 : f16\n  %r = vf.adds %v, %h2, %m",
     "vf.adds", "scalar operand has type f16, but the f32 lanes need f32"),
    ("  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %big = arith.constant 70000 : index\n"
     "  scf.for %i = %c0 to %big step %c1 {\n    %q = vf.create_mask ALL : f32\n  }",
     "vf.func", "runs 70000 trips, more than 65535 (uint16 trip count)"),
    ("  %t = arith.constant true\n  scf.if %t {\n    %q = vf.create_mask ALL : f32\n  }",
     "vf.func", "scf.if at 5:3 is a branch; __simd_vf__ code has no branches"),
]


@pytest.mark.parametrize("body,marker,message", VERIFY_ERRORS, ids=[m[:40] for _, _, m in VERIFY_ERRORS])
def test_verifier_errors_are_located(body, marker, message):
    text = vf_text(body)
    diags = first_error(text)
    hit = [d for d in diags if message in d.message]
    assert hit, [d.message for d in diags]
    if marker == "vf.func":
        want = (1, 1)
    else:  # the last op of that name in the text (the preamble also makes a mask and a load)
        want = [(i, line.index(marker + " ") + 1) for i, line in enumerate(text.splitlines(), 1)
                if marker + " " in line][-1]
    assert (hit[0].filename, hit[0].line, hit[0].column) == ("bad.pto", *want), hit[0]


def test_vf_op_outside_a_vf_func():
    text = "func.func @k() {\n  %m = vf.create_mask ALL : f32\n  return\n}\n"
    d = first_error(text)[0]
    assert (d.line, d.column) == (2, 8)
    assert "vf.create_mask may only appear inside a vf.func" in d.message


def test_vf_func_takes_ub_tile_buffers_and_scalars():
    d = first_error("vf.func @f(%t: !pto.tile<1x64xf32>) {\n}\n")[0]
    assert (d.line, d.column) == (1, 1) and "a VF takes UB tile buffers" in d.message


def test_no_pto_ops_or_calls_inside_a_vf_func():
    text = f"vf.func @f(%a: {F32_TILE}, %b: {F32_TILE}) {{\n  pto.tadd ins(%a, %a : {F32_TILE}, {F32_TILE}) " \
           f"outs(%b : {F32_TILE})\n}}\n"
    d = first_error(text)[0]
    assert "pto.tadd at 2:3 is not allowed in a vf.func" in d.message


CALLS = f"""
func.func @k(%p: !pto.ptr<f32>) {{
  vf.func @g(%s: {F32_TILE}, %n: i32) {{
    %m = vf.create_mask ALL : f32
  }}
  %a = pto.alloc_tile : {F32_TILE}
  %h = pto.alloc_tile : {T16}
  %n = arith.constant 3 : i32
  %i = arith.constant 3 : index
  CALL
  return
}}
"""


@pytest.mark.parametrize("call,message", [
    ("vf.call @nosuch(%a, %n)", "no vf.func named @nosuch is visible here"),
    ("vf.call @g(%h, %n)", "argument #0 has type !pto.tile_buf<vec, 1x128xf16>, but @g takes !pto.tile_buf<vec, 1x64xf32>"),
    ("vf.call @g(%a, %i)", "argument #1 has type index, but @g takes i32"),
    ("vf.call @g(%a)", "@g takes 2 argument(s), 1 given"),
])
def test_vf_call_errors(call, message):
    text = CALLS.replace("CALL", call)
    d = first_error(text)[0]
    assert message in d.message and (d.line, d.column) == located(text, "vf.call"), d


def test_vf_call_inside_a_vf_func_is_rejected():
    text = f"vf.func @f(%s: {F32_TILE}) {{\n  vf.call @f(%s)\n}}\n"
    msgs = [d.message for d in first_error(text)]
    assert any("a VF cannot launch another VF" in m for m in msgs)


def test_vf_ops_are_rejected_on_a2a3_at_their_location():
    text = vf_text("  %r = vf.reduce_min %v, %m")
    diags = first_error(text, A2A3)
    hit = [d for d in diags if d.message.startswith("'vf.reduce_min' op vf.reduce_min is not available on a2a3")]
    assert hit and (hit[0].filename, hit[0].line, hit[0].column) == ("bad.pto", 4, 8)
    assert located(text, "vf.reduce_min") == (4, 8)


# ---------------------------------------------------------------------------------------------
# Front-end (PTO-AS) errors
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("body,message", [
    ("  %r = vf.frobnicate %v", "unknown operation 'vf.frobnicate'"),
    ("  %r = vf.add %v, %v, %m, colour = red", "'vf.add' has no option 'colour'"),
    ("  %r = vf.add %v, %v, %m, merge_mode = SOMETIMES", "merge_mode must be one of ZEROING, MERGING, got 'SOMETIMES'"),
    ("  %x = vf.create_mask ALL", "'vf.create_mask' needs the element type its mask is for"),
    ("  %x = vf.create_mask EVERYTHING : f32", "'vf.create_mask' needs a pattern"),
    ("  %r = vf.add %v, %m", "'vf.add' expects `%r = vf.add %a, %b, %mask`"),
    ("  %r = vf.add %v, %v, %m : f16", "the registers hold f32, but the signature says f16"),
    ("  %b = vf.load_align %s[0], dist = WIDE", "dist must be one of NORM, BRC_B8, BRC_B16, BRC_B32, BLK"),
    ("  %b = vf.load_align %n[0]", "%n is not a tile"),
    ("  %b = vf.load_align %s[1, 2]", "a VF address takes one element offset"),
    ("  %r = vf.add %q, %v, %m", "use of undefined value '%q'"),
    ("  %r = vf.reduce_sum %v, %m, datablock = 3", "datablock must be true or false"),
    ("  %z = vf.dup 1.0", "'vf.dup' of a literal needs the element type"),
])
def test_front_end_errors_are_located(body, message):
    text = vf_text(body)
    with pytest.raises(PtocError) as e:
        api.parse(text, "bad.pto")
    d = e.value.diagnostics[0]
    assert message in d.message, d.message
    assert d.filename == "bad.pto" and d.line == 4 + body.count("\n")


def test_vf_func_body_is_isolated_from_the_kernel():
    text = f"""
func.func @k() {{
  %outer = arith.constant 3 : i32
  vf.func @f(%s: {F32_TILE}) {{
    %m, %r = vf.update_mask %outer : f32
  }}
  return
}}
"""
    with pytest.raises(PtocError) as e:
        api.parse(text, "iso.pto")
    assert "use of undefined value '%outer': vf.func @f is isolated from above" in e.value.diagnostics[0].message


def test_offsets_and_counts_of_other_integer_types_are_converted():
    text = f"vf.func @f(%s: {F32_TILE}, %o: i32, %n: index) {{\n" \
           "  %m, %rest = vf.update_mask %n : f32\n  %v = vf.load_align %s[%o]\n}\n"
    m = parse_ok(text)
    names = [op.name for op in m.walk()]
    assert names.count("arith.index_cast") == 2
    upd = next(o for o in m.walk() if isinstance(o, vf.UpdateMaskOp))
    assert str(upd.count_in.type) == "i32"


# ---------------------------------------------------------------------------------------------
# Ready for the front end to read !vf types: vf.type_from_text is the hook tree_to_stmts needs
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def vf_types_in_pto_as(monkeypatch):
    """Emulate the proposed 4-line hook in tree_to_stmts.Converter.dialect_type."""
    import pto_compiler.tree_to_stmts as t2s

    orig = t2s.Converter.dialect_type

    def dialect_type(self, node):
        name = str(node.children[0])[1:]
        if name.startswith("vf."):
            try:
                return vf.type_from_text(name, self.raw_body(node.children[0]))
            except ValueError as e:
                raise self.err(str(e), node) from None
        return orig(self, node)

    monkeypatch.setattr(t2s.Converter, "dialect_type", dialect_type)


def test_printed_types_are_accepted_by_the_builder(vf_types_in_pto_as):
    from pto_compiler.runtime import vf_executor as vx

    text = f"""
vf.func @acc(%x: !pto.tile_buf<vec, 1x256xf32>, %z: {F32_TILE}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %m = vf.create_mask ALL : !vf.mask<b32>
  %zero = vf.dup 0.0 : !vf.reg<64xf32>
  %acc = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %zero) -> (!vf.reg<64xf32>) {{
    %o = arith.muli %i, %c64 : index
    %v = vf.load_align %x[%o] : !pto.tile_buf<vec, 1x256xf32>
    %a2 = vf.add %a, %v, %m, merge_mode = MERGING : !vf.reg<64xf32>
    scf.yield %a2 : !vf.reg<64xf32>
  }}
  vf.store_align %z[0], %acc, %m : {F32_TILE}
}}
"""
    m = parse_ok(text)
    fn = next(o for o in m.walk() if isinstance(o, vf.VfFuncOp))
    x = np.arange(256, dtype=np.float32)
    out = vx.execute_vf(fn, {"x": x})["z"].reshape(-1)
    assert list(out) == [float(sum(x[j::64])) for j in range(64)]
    with pytest.raises(PtocError) as e:
        api.parse(text.replace("-> (!vf.reg<64xf32>)", "-> (!vf.reg<32xf32>)"), "bad.pto")
    d = e.value.diagnostics[0]
    assert "a register holds 64 x f32 (256 bytes), not 32" in d.message and d.line == 9


def _printed(printer_class, op) -> str:
    from io import StringIO

    out = StringIO()
    printer_class(stream=out).print_op(op)
    return out.getvalue()


def test_vf_printer_prints_what_xdsl_prints():
    """The listing's VfPrinter takes short cuts (no trait look-up, arith ops and scf.yield without the
    declarative-format interpreter); an op it does not know the form of, or that has attributes or
    overflow flags, goes through xDSL's printer.  Every op of the kernel above, those, and the VFs
    of the examples print as xDSL prints them."""
    from pathlib import Path

    from xdsl.dialects import arith
    from xdsl.dialects.builtin import FloatAttr, IndexType, UnitAttr
    from xdsl.printer import Printer

    fn = next(o for o in parse_ok(KERNEL).walk() if isinstance(o, vf.VfFuncOp))
    c0, c1 = [o.result for o in fn.block.ops if isinstance(o, arith.ConstantOp)][:2]
    flagged = arith.AddiOp(c0, c1, overflow=arith.IntegerOverflowAttr([arith.IntegerOverflowFlag.NSW]))
    marked = arith.MuliOp(flagged.result, c1)
    marked.attributes["note"] = UnitAttr()
    extra = [flagged, marked, arith.SubiOp(marked.result, c0), arith.IndexCastOp(marked.result, IntegerType(32)),
             arith.CeilDivUIOp(c1, c1), arith.ConstantOp(FloatAttr(-1.5, Float32Type())),
             arith.ConstantOp.from_int_and_width(-3, IndexType())]
    fn.block.insert_ops_before(extra, fn.block.last_op)
    assert _printed(vf.VfPrinter, fn) == _printed(Printer, fn)
    assert "overflow<nsw>" in _printed(vf.VfPrinter, fn) and "{note}" in _printed(vf.VfPrinter, fn)
    examples = Path(__file__).resolve().parents[1] / "examples"
    for path in sorted(examples.glob("**/*.pto")):  # every example compiles for ascend950
        lowered = api.compile(api.parse(path.read_text(), path.name), ASCEND950, "vf")
        for op in lowered.body.blocks[0].ops:
            if isinstance(op, vf.VfFuncOp):
                assert _printed(vf.VfPrinter, op) == _printed(Printer, op), path.name


def test_listing_prints_every_vf_as_xdsl_prints_it():
    """The listing prints one VF of each structure and the others from its text with their own names
    (runtime/listing.py ``_VfTexts``): every ``.vf`` section of a kernel of alike VFs on other tiles
    -- some given one tile twice, some with a name that must be quoted -- is what xDSL prints for
    that vf.func."""
    from xdsl.printer import Printer

    tile, part, view = ("!pto.tile_buf<vec, 16x16xf32>", "!pto.partition_tensor_view<16x16xf32>",
                        "!pto.tensor_view<?x?xf32>")
    lines = ['  func.func @"k 1"(%x: !pto.ptr<f32>) {', "    %c0 = arith.constant 0 : index",
             "    %c1 = arith.constant 1 : index", "    %c16 = arith.constant 16 : index",
             f"    %v = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : {view}",
             f"    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c16, %c16] : {view} -> {part}",
             *(f"    %t{k} = pto.alloc_tile : {tile}" for k in range(3))]
    for i in range(6):
        a, b = i % 3, (i + 1) % 3
        c = a if i % 2 else (i + 2) % 3  # odd steps pass one tile twice
        lines += [f"    pto.tload ins(%p : {part}) outs(%t{a} : {tile})",
                  f"    pto.tadd ins(%t{a}, %t{b} : {tile}, {tile}) outs(%t{c} : {tile})",
                  f"    pto.tmul ins(%t{c}, %t{b} : {tile}, {tile}) outs(%t{b} : {tile})",
                  f"    pto.tstore ins(%t{b} : {tile}) outs(%p : {part})"]
    prog = api.compile(api.parse("\n".join(["module {", *lines, "    return", "  }", "}"]), "k.pto"), ASCEND950)
    sections = prog.to_text().split("\n.vf @")[1:]
    assert len(sections) == len(prog.vf_funcs) == 6
    for section in sections:
        name, *body = section.split("\n")
        body = "\n".join(line[2:] for line in body if line.startswith("  "))
        assert body == _printed(Printer, prog.vf_funcs[name.strip('"')]).rstrip("\n"), name
