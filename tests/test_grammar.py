"""The Lark grammar (pto_compiler/grammar.lark) through pto_compiler.syntax.parse_tree: parse trees only."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from lark import Lark, Token, Tree

from pto_compiler import syntax
from pto_compiler.diagnostics import PtocError
from pto_compiler.syntax import MAX_NESTING, parse_tree, parse_type_text
from pto_compiler.tree_to_stmts import to_stmts

from samples import SAMPLES as SAMPLE_FILES, needs_samples


def sx(node) -> str:
    """A compact s-expression of a tree, for readable assertions; a ``type_text`` node (a type lexed
    as one token) shows the tree of its text, as :func:`parse_type_text` gives it."""
    if isinstance(node, Tree) and node.data == "type_text":
        node = parse_type_text(node.children[0])
    if node is None:
        return "None"
    if isinstance(node, Token):
        return f"{node.type}:{node}"
    return "(" + " ".join([node.data] + [sx(c) for c in node.children]) + ")"


def ops(text: str) -> list[Tree]:
    return parse_tree(text, "t.pto").children


def one(text: str) -> Tree:
    items = ops(text)
    assert len(items) == 1, [sx(i) for i in items]
    return items[0]


def parts(op: Tree, data: str) -> list[Tree]:
    return [c for c in op.children[2:] if isinstance(c, Tree) and c.data == data]


# --------------------------------------------------------------------------------------- corpus


@needs_samples
@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if "not ptoas" in text:
        # negative tests of the PTOAS compiler: must parse or fail with a located PtocError
        try:
            parse_tree(text, str(path))
        except PtocError as exc:
            assert exc.diagnostics[0].line >= 1 and exc.diagnostics[0].column >= 1
        return
    tree = parse_tree(text, str(path))
    assert tree.data == "start" and tree.children


@needs_samples
def test_corpus_size_and_largest_file_parses() -> None:
    assert len(SAMPLE_FILES) >= 100
    largest = max(SAMPLE_FILES, key=lambda p: p.stat().st_size)
    assert parse_tree(largest.read_text(encoding="utf-8"), str(largest)).children


# ------------------------------------------------------------------------------ documented forms

DOCUMENTED_FORMS = [
    # real PTOAS file shape
    """module attributes {"pto.target_arch" = "a3"} {
  func.func private @helper(%arg0: i32) -> i32 {
    %c1 = arith.constant 1 : i32
    %0 = arith.addi %arg0, %c1 : i32
    return %0 : i32
  }
  func.func @k(%a: !pto.ptr<f32>, %s: f32, %n: index) -> () attributes {pto.entry, pto.kernel_kind = #pto.kernel_kind<vector>} {
    %0 = func.call @helper(%c) : (i32) -> i32
    func.return
  }
}""",
    "%c0 = arith.constant 0 : index",
    "%f = arith.constant 1.5e-01 : f32",
    "%t = arith.constant true",
    "%m = arith.constant -3 : i32",
    "%e = arith.cmpi eq, %a, %b : index",
    "%s = arith.addi %a, %b : index",
    "%i = arith.index_cast %x : i32 to index",
    "%r = arith.select %c, %a, %b : index",
    "%d = arith.constant dense<[128, 64, 0, 0]> : vector<4xi16>",
    """%r = scf.for %i = %lb to %ub step %s iter_args(%acc = %init, %b = %t) -> (f32, i1) {
  scf.yield %acc, %b : f32, i1
}""",
    """%a = scf.if %c -> (i64, i64) {
  scf.yield %x, %y : i64, i64
} else {
  scf.yield %y, %x : i64, i64
}""",
    "scf.if %c { scf.yield }",
    """%r:2 = scf.while (%i = %c0, %go = %t) : (index, i1) -> (index, i1) {
  %c = arith.andi %go, %t : i1
  scf.condition(%c) %i, %go : index, i1
} do {
^bb0(%j: index, %g: i1):
  scf.yield %j, %g : index, i1
}""",
    "scf.while : () -> () {\n  scf.condition(%t)\n} do {\n  scf.yield\n}",
    "%m = memref.alloc() : memref<16x16xf16, #pto.address_space<vec>>",
    "%src = memref.reinterpret_cast %dst to offset: [%c0], sizes: [%c1, %c16], strides: [%c16, %c1] "
    "{layout = #pto.layout<nd>} : memref<16xi16, #pto.address_space<gm>> to "
    "memref<1x16xi16, strided<[16, 1], offset: ?>, #pto.address_space<gm>>",
    "pto.section.cube {\n  pto.trap\n}",
    """%fifo = pto.reserve_buffer {
      name = "fifo",
      size = 4096,
      location = #pto.address_space<vec>,
      auto = true
    } -> i32""",
    "%a, %b = pto.tsort32 %src : !pto.tile<1x32xf32> -> (!pto.tile<1x64xf32>, !pto.tile<1x32xui32>)",
    """%tile = pto.alloc_tile addr = %addr0
      : !pto.tile_buf<loc=vec, dtype=f16, rows=32, cols=32, v_row=32, v_col=32,
                      blayout=row_major, slayout=none_box, fractal=512, pad=0>""",
    # pto op spellings of the corpus
    "pto.tadd ins(%a, %b : !pto.tile_buf<vec, 16x16xf16>, !pto.tile_buf<vec, 16x16xf16>) "
    "outs(%d : !pto.tile_buf<vec, 16x16xf16>) {foo = 1}",
    "pto.tcvt ins(%1{rmode = #pto<round_mode ROUND>} : !pto.tile_buf<vec, 16x16xf16>) "
    "outs(%4 : !pto.tile_buf<vec, 16x16xf32>)",
    "pto.tstore ins(%acc : !pto.tile_buf<acc, 16x16xf32>, %pq : i64) outs(%pv : !pto.partition_tensor_view<16x16xf16>) "
    "{stPhase = #pto<st_phase final>}",
    "pto.tcolsum ins(%s, %t : !pto.tile<16x16xf32>, !pto.tile<16x16xf32>) outs(%d : !pto.tile<1x16xf32>) isBinary = false",
    "pto.tgather ins(%src, {maskPattern = #pto.mask_pattern<P1111>} : !pto.tile<1x32xf16>) outs(%d : !pto.tile<1x32xf16>)",
    "%tv = pto.make_tensor_view %arg0, shape = [%c32, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>",
    "%pv = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c16, %c16] : "
    "!pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>",
    "%t = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f16, rows=16, cols=16, v_row=?, v_col=-1, "
    "blayout=row_major, slayout=none_box, fractal=512, pad=0, compact=1>",
    "%t = pto.alloc_tile addr = %a valid_row = %vr valid_col = %vc : !pto.tile_buf<vec, 16x16xf16, valid=?x?>",
    "%t1 = pto.tassign %t, %addr : !pto.tile_buf<vec, 16x16xf16> -> !pto.tile_buf<vec, 16x16xf16>",
    "pto.tassign %t, @tile(0x1000)",
    "pto.record_event [#pto.pipe_event_type<TLOAD>, #pto.pipe_event_type<TVEC>, #pto.event<EVENT_ID0>]",
    "pto.wait_event[#pto.sync_op_type<TLOAD>, #pto.sync_op_type<TMOV_M2L>, <EVENT_ID0>]",
    "pto.barrier <PIPE_V>",
    "pto.barrier #pto.pipe<PIPE_ALL>",
    "pto.get_buf[#pto.pipe_event_type<TLOAD>, 0]",
    "pto.rls_buf [#pto.pipe_event_type<TMATMUL>, 1] { mode = 0 }",
    "%e = pto.tput_async(%a, %b : !pto.ptr<f32>, !pto.async_session) -> !pto.async_event",
    "%eid = pto.eventid_array_get %arr[%c0] : !pto.eventid_array<4>",
    "pto.eventid_array_set %arr[%c0], %c2 : !pto.eventid_array<4>",
    "%arr = pto.declare_eventid_array -> !pto.eventid_array<4>",
    "%sub = pto.subset %src[%c0, %c0] sizes [16, 16] : !pto.tile_buf<vec, 32x32xf32>",
    "%r = pto.tpop_from_aic(%vr, %vc) {split = 0}\n  -> !pto.tile_buf<vec, 16x16xf32>",
    "pto.aic_initialize_pipe {dir_mask = 3, slot_size = 1024}\n  (c2v_consumer_buf = %a : i32,\n   v2c_consumer_buf = %b : i32)",
    "pto.sync.set #pto.pipe<PIPE_M>, 0",
    "%b = pto.get_block_idx",
    "%av = pto.bind_tile %a, %c16, %c16\n  {config = #pto.tile_buf_config<blayout=1 : i32, slayout=1 : i32, s_fractal_size=512, pad=0 : i32>}\n"
    "  : memref<16x16xf16, #pto.address_space<vec>> -> memref<16x16xf16, #pto.address_space<vec>>",
    "pto.print ins(\"%+08.3f\", %v : f32)",
    # doc-style L1 / L2 / short form, no module around them
    "%d = pto.trowexpandmax %a, %b : !pto.tile<16x64xf32>, !pto.tile<16x1xf32, blayout=col_major> -> !pto.tile<16x64xf32>",
    "%d = pto.tadd %a, %b : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> !pto.tile<16x16xf32>",
    "%d = pto.texp %a : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>",
    "%d = tadd %a, %b : !pto.tile<16x16xf32>",
    "%d = pto.tadds %a, %s : (!pto.tile<16x16xf32>, f32) -> !pto.tile<16x16xf32>",
    "%d = pto.texpands %s : f32 -> !pto.tile<16x16xf32>",
    "tadd ins(%a, %b : !pto.tile_buf<f32,16,16>, !pto.tile_buf<f32,16,16>) outs(%d : !pto.tile_buf<f32,16,16>)",
    "%d = trowexpandmax %a, %b : !pto.tile<16x64xf32>, !pto.tile<16x1xf32> -> !pto.tile<16x64xf32>",
    "%d = tmatmul.acc %c, %a, %b : !pto.tile<16x16xf32>",
    "%d = pto.tcmp %a, %b{cmpMode = #pto<cmp gt>}: (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> !pto.tile<16x16xi1>",
    "tstore %t1, %sv_out[%c0, %c0]",
    # type spellings
    "%x = pto.foo : !pto.tile<16x1xf32, blayout=col_major, valid=13x1>",
    "%x = pto.foo : !pto.tile<f32, 16, 16>",
    "%x = pto.foo : !pto.tile<loc=vec, f32, 16, 16, RowMajor, NoneBox, None, Zero>",
    "%x = pto.foo : !pto.tile_buf<loc=left, int8, 16, 16, RowMajor, RowMajor, NZ, Null>",
    "%x = pto.foo : !pto.tile_buf<vec, 16x16xf16, valid=?x?, blayout=col_major, pad=1>",
    "%x = pto.foo %a : !pto.ptr<f32>, !pto.tensor_view<?x?xf32>, !pto.partition_tensor_view<1x1x1x16x16xf32>, "
    "!pto.async_session, !pto.eventid_array<4>, vector<64xf32>, memref<?x16xf32>, u8, int8, int32, ui16, bf16, i1",
    "%x = pto.foo {a = array<i32: 1, 2>, b = dense<1.0>, c = \"s\", d = 1.5, e = false, f, g = @sym, "
    "h = #pto.tile_buf_config<blayout=#pto.blayout<row_major>, slayout=#pto.slayout<none_box>>, i = [1, ?]}",
    # comments
    "# Auto mode: comment\n%d = pto.texp %a : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>  // trailing\n"
    "  # pto.tassign %arg0, @tile(0x1000)\n#\n",
    # MLIR generic op form (e.g. vf ops printed by xDSL)
    "%r = \"vf.add\"(%a, %b) <{k = 1}> ({\n  \"vf.yield\"() : () -> ()\n}) {z} : (f32, f32) -> f32",
    # classic PTO-AS `;` terminator
    "%dst = tadd %src0, %src1 : (!pto.tile<32x32xf32>, !pto.tile<32x32xf32>) -> !pto.tile<32x32xf32>;",
]


@pytest.mark.parametrize("text", DOCUMENTED_FORMS)
def test_documented_form_parses(text: str) -> None:
    tree = parse_tree(text, "doc.pto")
    assert tree.children


# ------------------------------------------------------------------------------------ tree shape


def test_ssa_l1_shape() -> None:
    op = one("%d = pto.tadd %a, %b : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> !pto.tile<16x16xf32>")
    assert op.data == "op"
    results, name = op.children[0], op.children[1]
    assert [str(t) for t in results.children] == ["%d"]
    assert (name.type, str(name), name.line, name.column) == ("OPNAME", "pto.tadd", 1, 6)
    assert [sx(p) for p in parts(op, "operand")] == ["(operand SSA:%a)", "(operand SSA:%b)"]
    (sig,) = parts(op, "signature")
    sig_in, sig_out = sig.children
    assert len(sig_in.children) == 2 and len(sig_out.children) == 1
    assert sx(sig_out.children[0]) == "(tile_type TILE_KW:!pto.tile (tile_pos (shape DIM:16 DIM:16 (builtin_type NAME:f32))))"


def test_dps_shape_with_interleaved_types_and_attrs() -> None:
    op = one("pto.tstore ins(%acc : !pto.tile<16x16xf32>, %pq : i64) outs(%pv : !pto.ptr<f32>) {a = 1}")
    assert op.children[0] is None
    ins, outs, attrs = op.children[2:]
    assert sx(ins) == ("(ins (operand SSA:%acc) (tile_type TILE_KW:!pto.tile (tile_pos (shape DIM:16 DIM:16 "
                       "(builtin_type NAME:f32)))) (operand SSA:%pq) (builtin_type NAME:i64))")
    assert sx(outs) == "(outs (operand SSA:%pv) (dialect_type BANG_NAME:!pto.ptr (builtin_type NAME:f32)))"
    assert sx(attrs) == "(attr_dict (dict_entry KEY:a INT:1))"
    op = one("pto.tcvt ins(%1{rmode = #pto<round_mode ROUND>} : f16) outs(%4 : f32)")
    assert sx(op.children[2]) == ("(ins (operand SSA:%1) (attr_dict (dict_entry KEY:rmode (hash_attr HASH_NAME:#pto "
                                  "(enum_words NAME:round_mode NAME:ROUND)))) (builtin_type NAME:f16))")


def test_short_form_op_name_token() -> None:
    op = one("tadd ins(%a : f32) outs(%d : f32)")
    assert op.children[1].type == "SHORT_OP" and str(op.children[1]) == "tadd"
    op = one("%d = trowexpandmax %a, %b : f32, f32 -> f32")
    assert op.children[1].type == "SHORT_OP"
    assert one("%d = tmatmul.acc %a : f32").children[1].type == "SHORT_OP"
    assert one("%d = tensor.empty : f32").children[1].type == "OPNAME"


def test_tile_type_spellings() -> None:
    def tile(spelling: str) -> str:
        op = one(f"%x = pto.foo : {spelling}")
        return sx(parts(op, "signature")[0].children[0].children[0])

    assert tile("!pto.tile_buf<loc=vec, dtype=f16, rows=16, cols=16, v_row=?, v_col=-1, blayout=row_major, "
                "slayout=none_box, fractal=512, pad=0>") == (
        "(tile_type TILE_KW:!pto.tile_buf (tile_kv NAME:loc NAME:vec) (tile_kv NAME:dtype NAME:f16) "
        "(tile_kv NAME:rows INT:16) (tile_kv NAME:cols INT:16) (tile_kv NAME:v_row QMARK:?) (tile_kv NAME:v_col INT:-1) "
        "(tile_kv NAME:blayout NAME:row_major) (tile_kv NAME:slayout NAME:none_box) (tile_kv NAME:fractal INT:512) "
        "(tile_kv NAME:pad INT:0))")
    assert tile("!pto.tile_buf<vec, 16x16xf16, valid=?x?, pad=1>") == (
        "(tile_type TILE_KW:!pto.tile_buf (tile_pos NAME:vec) (tile_pos (shape DIM:16 DIM:16 (builtin_type NAME:f16))) "
        "(tile_kv NAME:valid (dims DIM:? QMARK:?)) (tile_kv NAME:pad INT:1))")
    assert tile("!pto.tile<16x1xf32, valid=13x1>") == (
        "(tile_type TILE_KW:!pto.tile (tile_pos (shape DIM:16 DIM:1 (builtin_type NAME:f32))) "
        "(tile_kv NAME:valid (dims DIM:13 INT:1)))")
    assert tile("!pto.tile<f32, 16, 16>") == (
        "(tile_type TILE_KW:!pto.tile (tile_pos NAME:f32) (tile_pos INT:16) (tile_pos INT:16))")
    assert tile("<loc=acc, dtype=f32, rows=16>") == (
        "(tile_type None (tile_kv NAME:loc NAME:acc) (tile_kv NAME:dtype NAME:f32) (tile_kv NAME:rows INT:16))")


def test_control_flow_shape() -> None:
    op = one("%r = scf.for %i = %lb to %ub step %s iter_args(%acc = %init) -> (f32) {\n  scf.yield %acc : f32\n}")
    assert op.children[1].type == "SCF_FOR"
    assert [c.data for c in op.children[2:]] == ["loop_bounds", "iter_args", "result_types", "region"]
    assert sx(op.children[2]) == "(loop_bounds SSA:%i (operand SSA:%lb) (operand SSA:%ub) (operand SSA:%s))"
    op = one("scf.if %c {\n  pto.trap\n} else {\n  pto.trap\n  pto.trap\n}")
    assert [c.data for c in op.children[2:]] == ["operand", "region", "region"]
    assert len(op.children[4].children) == 2


def test_module_and_function_shape() -> None:
    (mod,) = ops("module {\n  func.func private @h(%a: i32) -> i32\n  func.func @k() attributes {pto.entry} {\n    return\n  }\n}")
    assert mod.data == "module_op" and mod.children[1:3] == [None, None]
    decl, kernel = mod.children[3].children
    assert sx(decl) == ("(func_op FUNC_FUNC:func.func VISIBILITY:private SYMBOL:@h (func_args (func_arg SSA:%a "
                        "(builtin_type NAME:i32) None)) (func_results (builtin_type NAME:i32)) None None)")
    assert sx(kernel.children[5]) == "(attr_dict (dict_entry KEY:pto.entry None))"
    assert sx(kernel.children[6]) == "(region (op None RETURN:return))"


def test_custom_form_parts() -> None:
    op = one("%tv = pto.make_tensor_view %p, shape = [%c32, %c1], strides = [%c1, %c1] : !pto.tensor_view<?x?xf32>")
    assert [c.data for c in op.children[2:]] == ["operand", "kwarg", "kwarg", "signature"]
    assert sx(op.children[3]) == "(kwarg NAME:shape (list (operand SSA:%c32) (operand SSA:%c1)))"
    op = one("%t = pto.alloc_tile addr = %a valid_row = %r valid_col = %c : f32")
    assert [str(k.children[0]) for k in parts(op, "kwarg")] == ["addr", "valid_row", "valid_col"]
    op = one("pto.tassign %t, @tile(0x1000)")
    assert sx(op) == "(op None OPNAME:pto.tassign (operand SSA:%t) SYMBOL:@tile (group HEX:0x1000))"
    op = one("%0 = func.call @f(%a, %b) : (i32, f32) -> ()")
    assert sx(op.children[-1]) == ("(signature (sig_in (builtin_type NAME:i32) (builtin_type NAME:f32)) (sig_out))")
    op = one("%x = pto.foo : () -> i32")
    assert sx(op.children[-1]) == "(signature None (sig_out (builtin_type NAME:i32)))"
    op = one("%e = arith.cmpi eq, %a, %b : index")
    assert op.children[2].type == "NAME" and str(op.children[2]) == "eq"


def test_multiline_statement_and_positions() -> None:
    text = "%t = pto.alloc_tile addr = %a\n    : !pto.tile_buf<loc=vec,\n      dtype=f16>\n%u = pto.get_block_idx"
    first, second = ops(text)
    assert (first.children[1].line, first.children[1].column) == (1, 6)
    assert (second.children[1].line, second.children[1].column) == (4, 6)
    ssa = parts(first, "kwarg")[0].children[1].children[0]
    assert (ssa.type, ssa.line, ssa.column) == ("SSA", 1, 28)


# ------------------------------------------------------------------------------------ bad inputs

BAD_INPUTS = [
    # (text, line, column, message fragment)
    ("pto.tadd ins(%a, %b : f32, f32) outs(%d : f32", 1, 46, "expected ')' or ',' but found end of input"),
    ("pto.tadd ins(%a, %b : f32, f32) (%d : f32)", 1, 33, "expected 'outs'"),
    ("pto.tadd ins(%a, %b : f32, f32) %d", 1, 33, "but found '%d'"),
    ("%a = pto.tadd %a $ %b", 1, 18, "unexpected character '$'"),
    ("%a = = pto.tadd %a", 1, 6, "unexpected '='"),
    ("%d = pto.tadd %a, %b = %c", 1, 22, "unexpected '='"),
    ("%a pto.tadd %a", 1, 4, "expected ',', ':' or '=' but found 'pto.tadd'"),
    ("pto.tadd %a %b", 1, 13, "unexpected '%b'"),
    ("module {\n  func.func @f() {\n    return\n  }\n", 4, 4, "expected '}' but found end of input"),
    ("module {\n}\n}", 3, 1, "expected end of input but found '}'"),
    ("%a = pto.tadd %a, %b : (f32, f32 -> f32", 1, 34, "expected ')' but found '->'"),
    ("%a = pto.tadd %a : !pto.tile<16x16xf32", 1, 39, "expected ',' or '>' but found end of input"),
    ("%a = pto.foo %b : !pto.tile<16x16xf32>>", 1, 39, "expected ',', '->', 'to' or end of line but found '>'"),
    ("scf.for %i = %a to %b {\n}", 1, 23, "expected 'step' but found '{'"),
    ("pto.tadd ins(%a : f32) outs(%b : )", 1, 34, "unexpected ')'"),
    ("func.func @f(%a f32) {\n}", 1, 17, "expected ':' but found 'f32'"),
    ("%a = pto.foo {a = 1, b = }", 1, 26, "unexpected '}'"),
    ("%a = pto.foo {a = 1\n  b = 2}", 2, 3, "expected ',', ':' or '}' but found 'b'"),
    ("%a = pto.foo %b # not a comment here", 1, 17, "unexpected character '#'"),
    ("%a = pto.foo %b\n  %c", 2, 5, "but found end of input"),
    ("%a = pto.foo \x00", 1, 14, "unexpected character '\\x00'"),
    ("%a = pto.foo [1, 2", 1, 19, "expected ',', ':' or ']' but found end of input"),
    ("pto.record_event [#pto.event<EVENT_ID0>,, 1]", 1, 41, "unexpected ','"),
    ("%x = arith.constant 0 : index extra", 1, 31, "expected ',', '->', 'to' or end of line but found 'extra'"),
    ("%c = pto.tadd %a, %b : f32\n%d = pto.tadd ins(%a : f32) outs(%d : f32) (\n", 2, 44,
     "expected '{', identifier or end of line but found '('"),
    ("%c = pto.tadd %a, %b : f32\n%d = pto.tadd ins(%a : f32) outs(%d : f32) {\n", 2, 45,
     "expected '}', attribute name or string but found end of input"),
]


@pytest.mark.parametrize("text,line,column,message", BAD_INPUTS)
def test_bad_input_is_located(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(PtocError) as info:
        parse_tree(text, "bad.pto")
    diag = info.value.diagnostics[0]
    assert (diag.filename, diag.line, diag.column) == ("bad.pto", line, column), diag.message
    assert message in diag.message


def test_error_formatting_has_file_line_col() -> None:
    with pytest.raises(PtocError) as info:
        parse_tree("%a = pto.tadd %a $ %b", "k.pto")
    assert str(info.value).startswith("k.pto:1:18: error: unexpected character '$'")


def test_operand_types_are_one_token() -> None:
    op = one("pto.tadd ins(%a, %b : !pto.tile_buf<vec, 16x16xf32>, f32) outs(%d : !pto.ptr<f32>)")
    ins, outs = op.children[2:]
    assert [(c.data, [t.type for t in c.children]) for c in ins.children[2:]] == [
        ("type_text", ["TYPE_TEXT"]), ("builtin_type", ["NAME"])]
    tok = outs.children[1].children[0]
    assert (str(tok), tok.line, tok.column) == ("!pto.ptr<f32>", 1, 69)
    assert sx(parse_type_text(tok)) == "(dialect_type BANG_NAME:!pto.ptr (builtin_type NAME:f32))"
    # a value is no operand type: token by token, as is a type spanning lines
    op = one("%x = pto.foo t = !pto.tile<16x16xf32>")
    assert op.children[2].children[1].data == "tile_type"
    op = one("%x = pto.foo : !pto.tile<16x16xf32,\n valid=?x?>")
    assert parts(op, "signature")[0].children[0].children[0].data == "tile_type"


@pytest.mark.parametrize("bad,column", [("!pto.tile_buf<vec 16x16xf32>", 19), ("!pto.tile<16x16xf32, >", 22),
                                        ("!pto.ptr<f32, $>", 15), ("!pto.tile<16x16xf32, " + "9" * 50 + ">", 22)])
def test_error_inside_a_one_token_type(bad: str, column: int) -> None:
    """Located where it is, worded as when the type is read token by token (split over two lines)."""
    def error(text: str):
        with pytest.raises(PtocError) as info:
            parse_tree(text, "bad.pto")
        return info.value.diagnostics[0]

    one_token = error(f"%c = pto.tadd %a\n%d = pto.foo %a : {bad}, f32\n")
    assert (one_token.line, one_token.column) == (2, 18 + column)
    split = bad.index("<") + 1
    lines = error(f"%c = pto.tadd %a\n%d = pto.foo %a : {bad[:split]}\n{bad[split:]}, f32\n")
    assert (lines.line, lines.column, lines.message) == (3, column - split, one_token.message)
    assert error(f"%d = pto.tadd %a, {bad} %b").message == error(f"%d = pto.tadd %a, {bad.split('<')[0]} %b").message


# ------------------------------------------------------------------- one-token DPS groups


def _token_by_token_parser():
    """The grammar without its one-token ops and DPS groups (SSA_OP, DPS_OP, DPS_INS, DPS_OUTS)."""
    text = syntax.GRAMMAR_PATH.read_text(encoding="utf-8")
    plain = text.replace(" | DPS_INS\n", "\n").replace(" | DPS_OUTS\n", "\n")
    plain = re.sub(r"\n  \| (?:\[results\] DPS_OP|SSA_OP) [^\n]*", "\n", plain)
    assert plain.count("\n") == text.count("\n") and not re.search(r"[|\]] (?:DPS|SSA)_", plain)
    return Lark(plain, parser="lalr", lexer="contextual", postlex=syntax._POSTLEX, maybe_placeholders=True,
                start=["start", "type"])


def _outcome(text: str, parser=None):
    """Every token of the tree with its type, text and position, then the statements tree_to_stmts
    makes of it (or the error's text of either)."""
    saved = syntax._PARSER
    syntax._PARSER = parser or saved
    try:
        tree = parse_tree(text, "g.pto")
    except PtocError as exc:
        return str(exc)
    finally:
        syntax._PARSER = saved
    try:
        stmts = to_stmts(tree, "g.pto", text)[:2]
    except PtocError as exc:
        stmts = str(exc)
    return [(n.data, len(n.children)) if isinstance(n, Tree) else
            (n.type, str(n), n.start_pos, n.line, n.column, n.end_line, n.end_column, n.end_pos) if isinstance(n, Token)
            else n for n in _preorder(tree)], stmts


def _preorder(node):
    yield node
    for c in node.children if isinstance(node, Tree) else ():
        yield from _preorder(c)


_DPS_SNIPPETS = ["%", "!", "<", ">", "(", ")", "[", "]", "{a = 1}", ",", ":", "=", " ", "\n", "\t", "//", "?",
                 "ins(", "outs(", "f32", "foo32", "index", "true", "dense", "%a", "%1#2", " : ", "!pto.tile<",
                 "9" * 50, "pto.", "t", ".x", "section.", "tensor.", "%r = ", "\n  {b = 2}", " isBinary = false",
                 "->", " to ", "\n  -> f32", ", f32", "= [%a, %b]", ", k = %c", "true", "arith.", "x = [", "%2:2"]
_ONE_TOKEN_OP = re.compile(r"(?m)^[ \t]*(?=\S+[ \t]+ins\(|%\S+ = \S+ %.*(?:->| to ))|\b(?:ins|outs)\(")


def test_one_token_ops_and_groups_change_nothing() -> None:
    """``pto.tadd ins(%a, %b : T, f32) outs(%d : T)``, its groups and ``%v = OP %a, k = [%b] : T -> U``
    lexed as one token give the tree token by token lexing gives, each token where it is, and the
    same statements (tree_to_stmts reads such an op's text, not its tokens); on inputs mutated in
    such ops the same tree and statements, or the same error."""
    plain = _token_by_token_parser()
    root = Path(__file__).resolve().parents[1]
    sources = [p.read_text(encoding="utf-8") for p in sorted(root.glob("examples/**/*.pto")) +
               sorted(root.glob("lit_tests/**/*.pto")) + SAMPLE_FILES]
    sources.append("pto.tadd ins(%a, %b : !pto.tile_buf<vec, 16x16xf32>, f32) outs(%d : !pto.ptr<f32>)\n"
                   "pto.tload ins (%p:!pto.partition_tensor_view<16x16xf32> )\n  outs(%t#1 : index)\n"
                   "%r = tmatmul.acc ins(%a : f32) outs(%b : f32) {c}\ntinsert\tins(%a:i8)outs(%b:i8)\n"
                   "%v = pto.partition_view %t,offsets=[%a,%b],sizes = [ %c ] : !pto.tensor_view<?x?xf32> -> f32\n"
                   "%w = tadd %a, %b, addr = %c, to = [%d] : f32, i64->!pto.tile<16x16xf32>\n"
                   "%i = arith.index_cast %x : i32 to index\n")
    sources += ["scf.execute_region {\n" * depth + line + "}\n" * depth for depth in (MAX_NESTING - 1, MAX_NESTING)
                for line in ("%v = pto.x %a, k = [%b] : f32 -> f32\n", "%v = pto.x %a : !pto.tile<4x4xf32> -> f32\n",
                             "pto.x ins(%a : f32) outs(%b : !pto.ptr<f32>)\n")]
    sources = [s for s in sources if _ONE_TOKEN_OP.search(s)]
    for text in sources:
        assert _outcome(text) == _outcome(text, plain)
    rng = random.Random(9)
    for _ in range(600):
        text = rng.choice(sources)
        start = rng.choice([m.start() for m in _ONE_TOKEN_OP.finditer(text)])
        for _ in range(rng.randint(1, 2)):
            end = text.find("\n", start)  # within the op's line
            pos = rng.randint(start, end if end >= 0 else len(text))
            cut = rng.choice([0, 0, 1, 3])
            text = text[:pos] + rng.choice(_DPS_SNIPPETS) * (cut != 3) + text[pos + cut:]
        assert _outcome(text) == _outcome(text, plain), text[start - 20:start + 120]


# ---------------------------------------------------------------------------------------- limits


def test_nesting_is_capped() -> None:
    deep = "%a = pto.foo " + "[" * (MAX_NESTING + 10) + "1" + "]" * (MAX_NESTING + 10)
    with pytest.raises(PtocError) as info:
        parse_tree(deep, "deep.pto")
    diag = info.value.diagnostics[0]
    assert "nesting too deep" in diag.message and (diag.line, diag.column) == (1, 14 + MAX_NESTING)
    regions = "pto.section.cube {\n" * (MAX_NESTING + 1) + "}\n" * (MAX_NESTING + 1)
    with pytest.raises(PtocError) as info:
        parse_tree(regions, "deep.pto")
    assert info.value.diagnostics[0].line == MAX_NESTING + 1
    ok = "pto.section.cube {\n" * 20 + "}\n" * 20
    parse_tree(ok, "ok.pto")
    typed = "pto.section.cube {\n" * MAX_NESTING + "%x = pto.foo : !pto.tile<16x16xf32>\n"  # its `<` nests
    with pytest.raises(PtocError) as info:
        parse_tree(typed, "deep.pto")
    assert (info.value.diagnostics[0].line, info.value.diagnostics[0].column) == (MAX_NESTING + 1, 25)
    parse_tree("pto.section.cube {\n" * (MAX_NESTING - 1) + "%x = pto.foo : !pto.tile<16x16xf32>\n" + "}\n" * 63,
               "ok.pto")


def test_absurd_inputs_fail_at_their_first_bad_token() -> None:
    """Huge inputs stop at the first token the grammar cannot take, or at the nesting limit, located
    there (the parser never walks the rest: no deep recursion, no hang)."""
    for text, col, message in [("(" * 100_000, 1, "unexpected '('"), ("<" * 100_000, 1, "unexpected '<'"),
                               ("{" * 100_000, 1, "unexpected '{'"),
                               ("%a = pto.x " + "[" * 1_000_000, 12 + MAX_NESTING, "nesting too deep")]:
        with pytest.raises(PtocError) as err:
            parse_tree(text, "absurd.pto")
        assert f"absurd.pto:1:{col}: error: {message}" in str(err.value)
    assert parse_tree("\n" * 200_000 + "// c\n" * 50_000, "blank.pto").children == []


def test_empty_and_comment_only_inputs() -> None:
    for text in ["", "\n\n", "// only a comment", "# only a comment\n#\n", "  \t\n"]:
        assert parse_tree(text, "e.pto").children == []


# -------------------------------------------------------------------------------- mutation fuzz

_SNIPPETS = ["%", "@", "#", "!", "<", ">", "(", ")", "[", "]", "{", "}", ",", ":", "=", ";", "-", "->", "?",
             '"', " ", "\n", "\t", "x", "ins(", "outs(", "//", "# ", "\x00", "$", "0x", "16x", "!pto.tile<",
             "scf.for", "{\n", "\n}", "é"]


@needs_samples
def test_random_mutations_give_only_ptocerror_or_success() -> None:
    rng = random.Random(20240611)
    sources = [p.read_text(encoding="utf-8") for p in SAMPLE_FILES]
    outcomes = {"ok": 0, "error": 0}
    for _ in range(400):
        data = bytearray(rng.choice(sources).encode("utf-8"))
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(data))
            roll = rng.random()
            if roll < 0.3:
                del data[pos:pos + rng.randint(1, 12)]
            elif roll < 0.6:
                data[pos:pos] = rng.choice(_SNIPPETS).encode("utf-8")
            elif roll < 0.8:
                data[pos] = rng.randrange(256)
            else:
                src = rng.randrange(len(data))
                data[pos:pos] = data[src:src + rng.randint(1, 40)]
        text = data.decode("utf-8", errors="replace")
        try:
            parse_tree(text, "mutant.pto")
            outcomes["ok"] += 1
        except PtocError as exc:
            outcomes["error"] += 1
            diag = exc.diagnostics[0]
            assert diag.line >= 1 and diag.column >= 1 and diag.filename == "mutant.pto"
    assert outcomes["ok"] > 0 and outcomes["error"] > 0


def test_saved_lexer_patterns_lex_as_re_does(tmp_path):
    """The lexers build their patterns from a file of compiled programs (``syntax._SavedPatterns``):
    each is the pattern ``re.compile`` makes, the trees are those of lexers compiling with ``re``,
    and a damaged file changes nothing."""
    import marshal

    contextual = syntax.get_parser().parser.lexer.lexer
    lexers = list({id(lx): lx for lx in (*contextual.lexers.values(), contextual.root_lexer)}.values())
    text = (Path(__file__).resolve().parents[1] / "examples" / "softmax.pto").read_text()

    def parse_with(re_module):
        kept = [(lx, lx.re, lx._scanner) for lx in lexers]
        try:
            for lx in lexers:
                lx.re, lx._scanner = re_module, None  # (the scanner is built again, with re_module)
            return parse_tree(text, "softmax.pto")
        finally:
            for lx, r, scanner in kept:
                lx.re, lx._scanner = r, scanner

    want = parse_with(re)
    path = tmp_path / "patterns"
    first = syntax._SavedPatterns(str(path))
    assert parse_with(first) == want and first.new
    first.save()
    second = syntax._SavedPatterns(str(path))
    assert second.saved == first.saved and len(second.saved) > 10
    for pattern, flags in second.saved:
        got, ref = second.compile(pattern, flags), re.compile(pattern, flags)
        assert (got.pattern, got.flags, got.groups, got.groupindex) == (ref.pattern, ref.flags, ref.groups,
                                                                         ref.groupindex)
    assert parse_with(second) == want and not second.new
    for damaged in (b"garbage", marshal.dumps({key: (0, b"\0\0\0\0", 0, {}, ()) for key in second.saved})):
        path.write_bytes(damaged)
        assert parse_with(syntax._SavedPatterns(str(path))) == want
