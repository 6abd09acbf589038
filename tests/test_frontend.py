"""Front end on real input: the PTOAS corpus, every op in its three forms, round trip, fuzz."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.fuzz import fuzz
from pto_compiler.dialects import pto
from pto_compiler.targets import A2A3, lookup_target
from samples import SAMPLES, is_negative, needs_samples

LIT_INPUTS = sorted((Path(__file__).resolve().parents[1] / "lit_tests" / "pto").glob("*.pto"))
EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.pto"))


def target_for(text: str, module):
    """The target a corpus file is written for: its RUN line's --pto-arch, else pto.target_arch, else a2a3."""
    m = re.search(r"--pto-arch[= ](\w+)", text)
    if m:
        return lookup_target(m.group(1))
    arch = api.module_target_arch(module)
    return (lookup_target(arch) if arch else None) or A2A3


@needs_samples
def test_corpus_is_there():
    assert len(SAMPLES) >= 123


@needs_samples
@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_parses_and_verifies(path):
    text = path.read_text()
    negative = is_negative(path)
    try:
        module = api.parse(text, str(path))
        api.verify(module, target_for(text, module))
    except PtocError as err:
        assert negative, str(err)
        assert err.diagnostics[0].line > 0, "a negative sample's error must be located"


def _round_trip(text: str, name: str) -> None:
    module = api.parse(text, name)
    printed = api.print_module(module)
    again = api.print_module(api.parse_printed(printed, name))
    assert again == printed


@pytest.mark.parametrize("path", SAMPLES + LIT_INPUTS + EXAMPLES, ids=lambda p: p.name)
def test_round_trip_is_a_fixed_point(path):
    text = path.read_text()
    try:
        api.parse(text, str(path))
    except PtocError:
        pytest.xfail("negative sample: nothing to print") if "not ptoas" in text else None
        raise
    _round_trip(text, str(path))


# ---- every instruction in the three forms ------------------------------------------------

T = "!pto.tile<16x64xf32>"
B = "!pto.tile_buf<vec, 16x64xf32>"
COL1 = "!pto.tile<16x1xf32, blayout=col_major>"
COL1B = "!pto.tile_buf<vec, 16x1xf32, blayout=col_major>"
ROW1 = "!pto.tile<1x64xf32>"
ROW1B = "!pto.tile_buf<vec, 1x64xf32>"

# name -> (L1 operands with types, result type, DPS ins types, DPS out type)
FORMS = {}
for n in ("tadd", "tsub", "tmul", "tdiv", "tmax", "tmin"):
    FORMS[n] = ([T, T], T, [B, B], B)
for n in ("texp", "tlog", "tsqrt", "trsqrt", "tabs", "trelu", "trecip", "tmov", "tcvt"):
    FORMS[n] = ([T], T, [B], B)
for n in ("tadds", "tsubs", "tmuls", "tdivs", "tmaxs", "tmins"):
    FORMS[n] = ([T, "f32"], T, [B, "f32"], B)
FORMS["texpands"] = (["f32"], T, ["f32"], B)
for n in ("add", "sub", "mul", "div", "max", "min", "expdif"):
    FORMS[f"trowexpand{n}"] = ([T, COL1], T, [B, COL1B], B)
    FORMS[f"tcolexpand{n}"] = ([T, ROW1], T, [B, ROW1B], B)
FORMS["trowexpand"] = ([COL1], T, [COL1B], B)
FORMS["tcolexpand"] = ([ROW1], T, [ROW1B], B)
for n in ("trowsum", "trowmax", "trowmin"):
    FORMS[n] = ([T], COL1, [B], COL1B)
for n in ("tcolsum", "tcolmax", "tcolmin"):
    FORMS[n] = ([T], ROW1, [B], ROW1B)
FORMS["tpairreducesum"] = ([T], T, [B], B)


def test_every_catalogue_op_has_forms():
    required = {"tload", "tstore"} | set(FORMS)
    assert required <= {name.split(".", 1)[1] for name in pto.TILE_OPS}


def _l1(name: str, prefix: str) -> str:
    ins, res, _, _ = FORMS[name]
    args = ", ".join(f"%x{i}: {t}" for i, t in enumerate(ins))
    uses = ", ".join(f"%x{i}" for i in range(len(ins)))
    return (f"func.func @k({args}) -> {res} {{\n"
            f"  %d = {prefix}{name} {uses} : ({', '.join(ins)}) -> {res}\n  return %d : {res}\n}}\n")


def _l2(name: str, prefix: str) -> str:
    _, _, ins, out = FORMS[name]
    lines = []
    for i, t in enumerate(ins):
        if t.startswith("!pto"):
            lines.append(f"  %x{i} = pto.alloc_tile : {t}")
    lines.append(f"  %d = pto.alloc_tile : {out}")
    names = ", ".join(f"%x{i}" if t.startswith("!pto") else "%s" for i, t in enumerate(ins))
    lines.append(f"  {prefix}{name} ins({names} : {', '.join(ins)}) outs(%d : {out})")
    return "func.func @k(%s: f32) {\n" + "\n".join(lines) + "\n  return\n}\n"


@pytest.mark.parametrize("name", sorted(FORMS))
@pytest.mark.parametrize("form", ["l1", "l1-short", "l2", "l2-short"])
def test_op_in_every_form(name, form):
    src = (_l1 if form.startswith("l1") else _l2)(name, "" if form.endswith("short") else "pto.")
    module = api.parse(src, "forms.pto")
    ops = [op for op in module.walk() if op.name == f"pto.{name}"]
    assert len(ops) == 1
    op = ops[0]
    assert (len(op.res), len(op.outs)) == ((1, 0) if form.startswith("l1") else (0, 1))
    _round_trip(src, "forms.pto")


def test_doc_l1_snippet_becomes_a_kernel():
    src = (f"# Manual mode: bind resources explicitly\n"
           f"pto.tassign %src0, @tile(0x1000)\n"
           f"%dst = pto.trowexpandmax %src0, %src1 : {T}, {COL1} -> {T}\n")
    module = api.parse(src, "doc.pto")
    (fn,) = [op for op in module.body.block.ops]
    assert [a.name_hint for a in fn.body.block.args] == ["src0", "src1"]
    assert [str(t) for t in fn.function_type.outputs.data] == [T]
    assign = [op for op in fn.walk() if isinstance(op, pto.TAssignOp)][0]
    assert assign.static_addr == 0x1000 and assign.location.line.data == 2


def test_tload_tstore_forms():
    src = """
func.func @k(%p: !pto.ptr<f16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %tv = pto.make_tensor_view %p, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf16>
  %pv = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<16x16xf16>
  %t = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf16>
  tload ins(%pv : !pto.partition_tensor_view<16x16xf16>) outs(%t : !pto.tile_buf<vec, 16x16xf16>)
  pto.tstore ins(%t : !pto.tile_buf<vec, 16x16xf16>) outs(%pv : !pto.partition_tensor_view<16x16xf16>)
  return
}
"""
    module = api.parse(src, "io.pto")
    api.verify(module, A2A3)
    _round_trip(src, "io.pto")


# ---- fuzz: random byte mutations never give a traceback nor hang ------------------------


def test_mutations_give_located_errors_only():
    sources = [p.read_text() for p in SAMPLES[:40]] + [_l1(n, "pto.") for n in sorted(FORMS)][:20]
    stats = fuzz(sources, 300, seed=20261202)
    assert not stats.crashes, stats.crashes[0]
    assert stats.unlocated_errors == 0
    assert stats.slowest_s < 2.0


def test_top_level_vf_func_and_vf_types():
    src = """vf.func @k(%src: !pto.tile_buf<vec, 1x64xf32>, %dst: !pto.tile_buf<vec, 1x64xf32>) {
  %all = vf.create_mask ALL : !vf.mask<b32>
  %v = vf.load_align %src[0], dist = NORM : !pto.tile_buf<vec, 1x64xf32>
  %r = vf.reduce_min %v, %all : !vf.reg<64xf32>
  vf.store_align %dst[0], %r, %all : !pto.tile_buf<vec, 1x64xf32>
}
"""
    module = api.parse(src, "vf.pto")
    assert [op.name for op in module.body.block.ops] == ["vf.func"]
    _round_trip(src, "vf.pto")


def test_bad_vf_type_is_located():
    src = "vf.func @k(%a: !vf.reg<65xf32>) {\n}\n"
    with pytest.raises(PtocError) as info:
        api.parse(src, "vf.pto")
    d = info.value.diagnostics[0]
    assert (d.line, d.column) == (1, 16)
