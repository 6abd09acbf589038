"""The vf dialect: types, syntax round trips (PTO-AS -> xDSL text -> xDSL parser), front-end forms."""

from __future__ import annotations

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
