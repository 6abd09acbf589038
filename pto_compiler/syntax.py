"""PTO-AS text -> Lark parse tree (``grammar.lark``, LALR(1), contextual lexer, cached).

:func:`parse_tree` is the only entry point (an error quotes the offending line).  It accepts the PTOAS ``.pto`` file shape (MLIR text:
``module``, ``func.func``, ``arith``/``scf``/``memref``/``func`` ops, every ``pto`` op spelling of the
PTOAS corpus), the doc-style L1 SSA and L2 DPS lines, and the short form without ``pto.``, with or
without a ``module``/``func.func`` around them.  Any syntax error becomes a :class:`PtocError` located
at the offending token (1-based line and column); no Lark exception escapes.

Lexical rules
=============
* Comments: ``//`` to the end of the line; a line whose first non-blank character is ``#``
  followed by a blank or the end of the line.  ``#pto.foo<...>`` is an attribute, not a comment.
* Newlines separate statements (``;`` also does).  A statement continues on the next line when the
  break is inside ``(`` ``[`` ``<``, when the line ends with ``,`` ``=`` ``:`` ``->`` ``{`` or when the
  next line starts with a token that cannot begin a statement: ``:`` ``->`` ``}`` ``)`` ``]`` ``>``
  ``{`` ``(`` ``[`` ``<`` ``,`` ``=`` ``@`` ``!`` ``#name`` ``ins`` ``outs`` ``iter_args`` ``to``
  ``step`` ``else`` ``attributes`` or ``name =``.  So attribute dicts may span lines; regions stay line-separated
  (``{ a; b }`` on one line works too).
* Op names: ``OPNAME`` is any dialect-qualified name (``pto.tadd``, ``arith.constant``,
  ``pto.tmatmul.acc``).  ``SHORT_OP`` is the short form: a lower-case mnemonic that starts with
  ``t`` (``tadd``, ``trowexpandmax``, ``tmatmul.acc``; not ``tensor.*``/``test.*``/``tosa.*``/
  ``transform.*``); **the front end must read a SHORT_OP ``x`` as ``pto.x``**.  ``RETURN`` is
  ``return`` (= ``func.return``).  ``SCF_FOR``, ``SCF_IF``, ``REGION_OPNAME`` (``pto.section.*``,
  ``scf.execute_region``, ``vf.func``), ``REINTERPRET_CAST`` and a ``STRING`` (MLIR generic form) are op names
  with their own rules.  Only these ops take regions.
* Tokens kept in the tree (Lark ``Token``: a ``str`` with ``.type .line .column .end_line
  .end_column``):

  ===============  ===========================================================================
  ``SSA``          ``%name`` or ``%name#N`` (the text includes ``%`` and any ``#N``)
  ``SYMBOL``       ``@name`` or ``@"name"`` (text includes ``@``)
  ``NAME``         bare identifier: a word operand (``eq``), a builtin type name, a tile key/value
  ``KEY``          attribute-dict key, may be dotted (``pto.entry``); ``STRING`` keys keep quotes
  ``INT``          decimal integer, optional sign (``-1``)
  ``FLOAT``        ``1.5e-01``, ``2.0``, ``-4.0001e+00``
  ``HEX``          ``0x1000``
  ``STRING``       ``"..."`` including the quotes, escapes not processed
  ``TRUE/FALSE``   ``true`` / ``false``
  ``QMARK``        ``?`` (a dynamic size)
  ``DIM``          one dimension of an ``AxBxT`` shape; the postlexer strips the ``x``, so the
                   value is ``"16"`` or ``"?"``
  ``TILE_KW``      ``!pto.tile`` or ``!pto.tile_buf``
  ``BANG_NAME``    any other ``!dialect.type`` name (``!pto.ptr``)
  ``TYPE_TEXT``    a whole ``!pto.tile_buf<...>`` / ``tile`` / ``tensor_view`` /
                   ``partition_tensor_view`` / ``ptr`` type on one line with no nested ``<``,
                   brackets, quotes or comments, where an op's operand, result or argument types
                   are written (see ``type_text`` below)
  ``DPS_INS``      a whole ``ins(%a, %b : T, f32)`` / ``outs(...)`` group on one line holding only
  ``DPS_OUTS``     SSA values and then ``TYPE_TEXT`` or scalar types: never in the tree, whose
                   ``ins`` / ``outs`` node (a :class:`DpsGroup`) gets the children its tokens
                   would give, located where they are
  ``DPS_OP``       ``pto.tadd ins(...) outs(...)`` / ``tadd ins(...) outs(...)``, both groups
                   ``DPS_INS`` / ``DPS_OUTS`` ones: never in the tree, whose ``op`` node gets the
                   op-name token and the two group nodes its tokens would give
  ``SSA_OP``       ``%v = pto.partition_view %t, offsets = [%a, %b], sizes = [..] : T -> U``,
                   ``%d = tadd %a, %b : T, T -> T``, ``%i = arith.index_cast %x : i32 to index``
                   on one line (one result, SSA operands and ``name = %v`` / ``name = [%v, ..]``
                   arguments, ``TYPE_TEXT`` or scalar types, an arrow or ``to`` before the last
                   one): never in the tree, whose ``op`` node (a :class:`SsaOp`) gets the children
                   its tokens would give
  ``HASH_NAME``    ``#pto.address_space``, ``#pto``
  ``VISIBILITY``   ``private`` / ``public`` / ``nested``
  op names         ``OPNAME``, ``SHORT_OP``, ``RETURN``, ``SCF_FOR``, ``SCF_IF``, ``SCF_WHILE``, ``SCF_CONDITION``,
                   ``REGION_OPNAME``, ``REINTERPRET_CAST``, ``MODULE``, ``FUNC_FUNC``
  ===============  ===========================================================================

  Punctuation and keywords (``ins``, ``outs``, ``to``, ``step``, ``else``, ``iter_args``,
  ``attributes``, ``->``, ``memref`` ...) are dropped from the tree.

Tree shape, rule by rule
========================
``[x]`` below means "``x`` or ``None``" (a fixed position); ``x?``/``x*`` mean the child is simply
absent / repeated.  Literal tokens appear directly as children where a value is allowed.

File and functions
------------------
* ``start``: the top-level items in order: ``module_op``, ``func_op`` or ``op``.  Bare ``op``
  statements at top level form an L1 kernel body (nothing special is built for them here).
* ``module_op``: ``MODULE, [SYMBOL], [attr_dict], region`` (the dict is ``attributes {...}``).
* ``func_op``: ``FUNC_FUNC, [VISIBILITY], SYMBOL, func_args, [func_results], [attr_dict],
  [region]`` (the dict is ``attributes {...}``; no region = declaration).
* ``func_args``: ``func_arg*``.  ``func_arg``: ``SSA, type, [attr_dict]`` or, in a declaration
  without names, just ``type``.
* ``func_results``: the result types (``-> T``, ``-> (T, U)``, ``-> ()`` gives no children).
* ``region``: the items of its single block, in order (ops; ``func_op`` inside a module).

Statements: ``op``
------------------
Every statement is an ``op``.  ``children[0]`` is ``results`` or ``None``; ``children[1]`` is the
op-name Token (its ``.type`` tells which kind, see above); the remaining children are the *parts*,
in source order.  ``results``: the ``SSA`` tokens left of ``=`` (an ``SSA`` may be followed by an
``INT`` token: the count of ``%r:2 = ...``).  Locate an op at its op-name token.  Parts:

=================  ===========================================================================
``operand``        ``SSA`` [, ``indices``]: ``%x`` or ``%x[%i, 0]``; ``indices`` holds values
``kwarg``          ``NAME, value``: ``shape = [...]``, ``addr = %a``, ``valid_row = %r``,
                   ``isBinary = false``, ``sizes [16, 16]`` (value = the ``list``),
                   ``offset: [..]`` of reinterpret_cast, ``c2v = %x`` inside a group
``ins`` / ``outs`` DPS operand groups; children as for ``group``
``group``          a parenthesised group ``( ... )``: items and types in source order (below)
``attr_dict``      ``{k = v, unit}``: ``dict_entry*``
``list``           ``[a, b]`` (``pto.record_event [...]``, ``pto.get_buf[...]``)
``signature``      ``: ...`` (below)
``result_types``   ``-> T`` / ``-> (T, U)`` without ``:`` (``pto.declare_tile -> T``,
                   ``scf.if %c -> (i64)``, ``pto.tput_async(...) -> T``): the types
``region``         a region (``scf.for``, ``scf.if`` then/else, ``pto.section.*``, generic form)
``loop_bounds``    scf.for only: ``SSA`` (induction var), ``operand`` lb, ``operand`` ub,
                   ``operand`` step
``iter_args``      scf.for only: ``iter_arg*``, each ``SSA, value`` (``%acc = %init``)
``properties``     generic form only: ``<{...}>`` -> ``attr_dict``
literal tokens     ``INT FLOAT HEX STRING TRUE FALSE SYMBOL NAME`` (``arith.constant 0``,
                   ``arith.cmpi eq, ...``, ``func.call @f(...)``, ``tassign %t, @tile(0x1000)``)
``hash_attr`` ...  an attribute value (``pto.barrier #pto.pipe<PIPE_V>``, ``pto.barrier <PIPE_V>``,
                   ``arith.constant dense<0> : vector<4xi16>``)
=================  ===========================================================================

Forms, by op-name token type:

* custom form (``OPNAME``/``SHORT_OP``/``RETURN``): a comma list of arguments (operands,
  literals, attributes, words, lists; after the first, also ``kwarg``), then juxtaposed
  ``kwarg`` / ``attr_dict`` / ``group`` parts, then optionally ``signature`` or ``result_types``.
  Examples: ``%d = pto.tadd %a, %b : (T, T) -> T`` -> ``op(results, OPNAME, operand, operand,
  signature)``; ``pto.alloc_tile addr = %a : T`` -> ``op(results, OPNAME, kwarg, signature)``;
  ``func.call @f(%a) : (T) -> T`` -> ``op(None, OPNAME, SYMBOL, group, signature)``.
* DPS form (same op-name tokens): ``ins``, optional ``outs``, then any ``attr_dict`` / ``kwarg``
  (``{stPhase = ...}``, ``isBinary = false``).  Attribute dicts written inside ``ins(...)``
  (``%1{rmode = ...}`` or ``%src, {maskPattern = ...}``) appear inside the ``ins`` node; they are
  op attributes.  PTOAS's scalar-result DPS form ``%v = pto.tgetval ins(...) outs : f32`` has a
  ``signature`` (the result type) in place of the ``outs`` node.
* ``SCF_FOR``: ``loop_bounds, iter_args?, result_types?, region``.
* ``SCF_IF``: ``operand`` (condition), ``result_types?``, ``region`` (then), ``region?`` (else).
* ``SCF_WHILE``: ``while_inits`` (``iter_arg*``: the condition region's arguments and their
  initial values), ``signature`` (``(T, ...) -> (U, ...)``), ``region`` (condition), ``do_region``
  (``block_label?`` = ``BLOCK_ID, block_arg*`` each ``SSA, type``, then the statements).
* ``SCF_CONDITION``: ``operand`` (the i1), ``operand*`` (the values passed on), ``signature?``.
* ``REGION_OPNAME``: ``(SYMBOL, group)?, attr_dict?, result_types?, region``; the symbol and group
  are ``vf.func @name(%a : T, %n : i32)`` (a ``__simd_vf__`` function, dialects/vf.py), the dict
  its ``attributes {...}``.
* ``REINTERPRET_CAST``: ``operand, kwarg+`` (``offset``/``sizes``/``strides``, each a ``list``),
  ``attr_dict?``, ``signature`` (``T to U``).
* MLIR generic form, op name = ``STRING`` with quotes: ``group`` (operands), ``properties?``,
  ``region*``, ``attr_dict?``, ``signature``.

Groups (``group``, ``ins``, ``outs``)
-------------------------------------
Children in source order: items (``operand``, ``kwarg``, ``attr_dict``, literal tokens such as
``STRING``/``INT``/``HEX``/``SYMBOL``) and type nodes.  Types written after a ``:`` belong to the
value-carrying items before it: **the k-th type is the type of the k-th ``operand`` or ``kwarg``
item of the group** (attribute dicts and literals have no type).  This covers ``(%a, %b : T, U)``,
interleaved ``(%acc : T, %pq : i64)``, ``(%x{rmode = ...} : T)`` (the dict is the next child after
the operand), ``(%src, {maskPattern = ...} : T)``, ``("fmt", %v : f32)`` and
``(c2v_consumer_buf = %x : i32, ...)``.

Signatures
----------
``signature``: ``[sig_in]`` then, when there is an arrow or ``to``, ``sig_out``.
``sig_in``/``sig_out`` hold type nodes.  ``: T`` and ``: f32, T`` -> only ``sig_in`` (a plain
type list; its meaning depends on the op); ``: A, B -> C``, ``: (A, B) -> C``, ``: A -> (B, C)``
and the cast form ``: A to B`` -> ``sig_in`` and ``sig_out``; ``: () -> T`` -> ``None, sig_out``;
``-> ()`` gives an empty ``sig_out``.

Types
-----
* ``type_text``: one ``TYPE_TEXT`` token.  :func:`parse_type_text` gives its tree (one of the type
  nodes below, located where the token is); the post-lexer parses each distinct text once as it
  streams, so an error inside such a type is raised in order and located as if it had been read
  token by token.
* ``builtin_type``: ``NAME`` (``f16 bf16 f32 i1 i8 i16 i32 i64 ui8.. u8.. int8 int32 index`` ...;
  not validated here).
* ``tile_type``: ``[TILE_KW]`` (``None`` = prefix elided, ``<loc=acc, ...>``; PTOAS reads that
  as ``!pto.tile_buf``), then its parameters in order, each a ``tile_kv`` (``NAME, value``) or a
  ``tile_pos`` (``value``); a value is a ``NAME``, ``INT`` (may be ``-1``), ``QMARK``, ``shape`` or
  ``dims`` token/node.  Examples: keyed ``<loc=vec, dtype=f16, rows=16, ..., pad=0>`` -> all
  ``tile_kv``; compact ``<vec, 16x16xf16, valid=?x?, blayout=col_major>`` -> ``tile_pos(NAME vec)``,
  ``tile_pos(shape)``, ``tile_kv(valid, dims)``, ``tile_kv(blayout, NAME)``;
  ``<16x16xf32>`` -> ``tile_pos(shape)``; ``<f32, 16, 16>`` and ``<loc=vec, f32, 16, 16, RowMajor,
  NoneBox, None, Zero>`` -> ``tile_pos``/``tile_kv`` with ``NAME``/``INT`` values.
* ``shape``: ``DIM+`` then the element type node (``16x16xf32`` -> ``DIM 16, DIM 16,
  builtin_type(f32)``).  ``dims``: ``DIM+`` then the last size as ``INT``/``QMARK``
  (``13x1`` -> ``DIM 13, INT 1``; ``?x?`` -> ``DIM ?, QMARK``).
* ``memref_type`` / ``tensor_type``: ``shape`` (or an element type for rank 0), then layout /
  memory-space parameters: ``strided_layout`` (``list``, then the offset ``INT``/``QMARK`` if
  given), ``hash_attr`` (``#pto.address_space<vec>``) or ``INT``.  ``vector_type``: ``shape``.
* ``dialect_type``: ``BANG_NAME`` then its parameters (types, ``shape``, ``INT``, ``QMARK``,
  ``STRING``, ``hash_attr``): ``!pto.ptr<f32>``, ``!pto.tensor_view<?x?xf32>``,
  ``!pto.partition_tensor_view<1x1x1x16x16xf32>``, ``!pto.eventid_array<4>``, ``!pto.async_session``.

Attributes and values
---------------------
* ``attr_dict``: ``dict_entry*``; ``dict_entry``: key (``KEY`` or quoted ``STRING``), then the value
  or ``None`` for a unit attribute (``{pto.entry}``).
* ``hash_attr``: ``HASH_NAME`` then its parameters: values, ``kwarg`` (``blayout=#pto.blayout<..>``,
  ``pad=0 : i32``) or ``enum_words`` (``#pto<round_mode ROUND>`` -> ``enum_words(NAME round_mode,
  NAME ROUND)``).  ``angle_attr``: the same parameters without a name (``<EVENT_ID0>``).
* ``list``: values.  ``typed_attr``: literal, type (``0 : i32``).  ``dense_attr``: [value].
  ``array_attr``: type, values (``array<i32: 1, 2>``).
* A value is one of: ``operand``, a literal token, ``QMARK``, ``NAME`` (a bare word), ``SYMBOL``,
  ``hash_attr``, ``angle_attr``, ``dense_attr``, ``array_attr``, ``list``, ``attr_dict``,
  ``typed_attr`` (inside ``{}``, ``[]`` and ``#attr<...>`` only: at op level ``0 : i32`` is a
  literal and a signature), or a ``tile_type`` / ``dialect_type`` written with its ``!`` prefix.

Helpers for the transformer: :data:`TYPE_NODES` (the rule names that are types: use it to split a
group's children into items and types) and :func:`first_token` (the first Token under a node,
for locating a type or attribute; trees carry no ``meta`` positions).

Errors
------
``PtocError`` with one diagnostic, MLIR-worded: ``expected ')' or ',' but found ':'`` (the
alternatives are what the parser could really take there; "end of line" stands for any statement
end), ``unexpected '%b'`` when more than five alternatives exist, ``unexpected character '$'``,
``unexpected end of input``, ``nesting too deep ...``, ``input too large ...``.  The location is
the offending token; for the end of input, the position just after the last non-blank character.

Limits: nesting of brackets and regions is capped at :data:`MAX_NESTING` levels and input size at
:data:`MAX_INPUT_CHARS`; both give a located error.  The grammar is LALR(1) without conflicts, so
parsing is linear in the input.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import re
import threading
from pathlib import Path
from typing import NamedTuple

import lark
from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from pto_compiler.diagnostics import PtocError, error_at

__all__ = ["parse_tree", "parse_type_text", "get_parser", "first_token", "DpsGroup", "dps_items", "item_token",
           "SsaOp", "ssa_op_items", "op_name_kind",
           "TYPE_NODES", "MAX_NESTING", "MAX_INPUT_CHARS", "GRAMMAR_PATH"]

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")
MAX_NESTING = 64
MAX_INPUT_CHARS = 4 * 1024 * 1024
MAX_INT_DIGITS = 40
"""Digits of an integer literal (a 128-bit value has 39): longer ones are refused when lexed,
before Python's int() (which itself refuses 4,300 digits) is ever asked."""

#: rule names of type nodes (everything else in a group / signature position is an item)
TYPE_NODES = frozenset({"builtin_type", "tile_type", "memref_type", "vector_type", "tensor_type",
                        "dialect_type", "type_text"})

_OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LESSTHAN": "MORETHAN", "LBRACE": "RBRACE"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}
# a line break right after one of these never ends a statement
_NL_DROP_AFTER = frozenset({"_NL", "COMMA", "EQUAL", "COLON", "_ARROW", "LBRACE", "LPAR", "LSQB",
                            "LESSTHAN", "SEMICOLON"})


class _PostLexer:
    """Turns raw ``_NL`` tokens into statement separators and strips the ``x`` of ``DIM`` tokens.

    It keeps a stack of open brackets: a line break inside ``()``, ``[]`` or ``<>`` is dropped,
    inside ``{}`` (a region, or an attribute dict whose breaks follow ``,``/``{`` or precede ``}``)
    it is kept.  The stack also enforces :data:`MAX_NESTING`.
    """

    always_accept = ("_NL",)

    def process(self, stream):
        stack: list[str] = []
        checked: set[str] = set()
        last = None
        filename = _FILENAME.get()
        for tok in stream:
            t = tok.type
            if t == "_NL":
                if last is None or last in _NL_DROP_AFTER or (stack and stack[-1] != "LBRACE"):
                    continue
            elif t in _OPENERS:
                stack.append(t)
                if len(stack) > MAX_NESTING:
                    raise error_at(f"nesting too deep (more than {MAX_NESTING} levels of brackets "
                                   f"or regions)", filename, tok.line, tok.column)
            elif t in _CLOSERS:
                if stack and stack[-1] == _CLOSERS[t]:
                    stack.pop()
            elif t == "DIM":
                tok = tok.update(value=tok.value[:-1])
            elif t == "TYPE_TEXT":  # its one `<` nests, and an error inside it is raised here, in order
                _check_type_text(tok, len(stack), checked, filename)
            elif t in _DPS_GROUPS:
                _check_dps_group(tok, len(stack), checked, filename)
            elif t == "DPS_OP":  # its groups, in order
                for group in _dps_op_parts(tok)[1:]:
                    _check_dps_group(group, len(stack), checked, filename)
            elif t == "SSA_OP":  # its first `[`, then its types, in order
                _check_ssa_op(tok, len(stack), checked, filename)
            if t in ("INT", "HEX", "DIM") and len(tok.value.lstrip("+-")) > MAX_INT_DIGITS + (t == "HEX") * 2:
                raise error_at(f"integer literal of {len(tok.value)} characters is too long (at most "
                               f"{MAX_INT_DIGITS} digits)", filename, tok.line, tok.column)
            last = t
            yield tok


def _check_type_text(tok: Token, depth: int, checked: set[str], filename: str) -> None:
    if depth >= MAX_NESTING:
        raise error_at(f"nesting too deep (more than {MAX_NESTING} levels of brackets "
                       f"or regions)", filename, tok.line, tok.column + tok.index("<"))
    if tok.value not in checked:
        parse_type_text(tok, filename)
        checked.add(tok.value)


def _check_dps_group(tok: Token, depth: int, checked: set[str], filename: str) -> None:
    """A one-token DPS group: its `(`, then each type as a TYPE_TEXT token there."""
    if depth >= MAX_NESTING:
        raise error_at(f"nesting too deep (more than {MAX_NESTING} levels of brackets "
                       f"or regions)", filename, tok.line, tok.column + tok.index("("))
    for node, kind, text, off in dps_items(tok.value):
        if kind == "TYPE_TEXT" and (text not in checked or depth + 1 >= MAX_NESTING):
            _check_type_text(item_token(tok, kind, text, off), depth + 1, checked, filename)


def _check_ssa_op(tok: Token, depth: int, checked: set[str], filename: str) -> None:
    """A one-token op: its first `[` (its lists nest), then each type as a TYPE_TEXT token there (no
    other part of it looks like one)."""
    if depth >= MAX_NESTING and "[" in tok.value:
        raise error_at(f"nesting too deep (more than {MAX_NESTING} levels of brackets "
                       f"or regions)", filename, tok.line, tok.column + tok.index("["))
    for m in _type_text().finditer(tok.value) if "<" in tok.value else ():
        if m.group() not in checked or depth >= MAX_NESTING:
            _check_type_text(item_token(tok, "TYPE_TEXT", m.group(), m.start()), depth, checked, filename)


_DPS_GROUPS = {"DPS_INS": "ins", "DPS_OUTS": "outs"}


_OP_NAME = re.compile(r"[^ \t]+")


def op_name_kind(name: str) -> str:
    """The token an op name of a one-token op would be: ``pto.`` / ``arith.`` ones are ``OPNAME`` s,
    the others (``tadd``, ``tmatmul.acc``) the short form's ``SHORT_OP`` s."""
    return "OPNAME" if name.startswith(("pto.", "arith.")) else "SHORT_OP"


def _dps_op_parts(tok: Token) -> tuple[Token, Token, Token]:
    """A ``DPS_OP`` token's op name (``OPNAME``, or ``SHORT_OP`` without ``pto.``), ``DPS_INS`` and
    ``DPS_OUTS`` tokens, located where they are (a group holds no ``)`` but its last)."""
    text = tok.value
    name_end = _OP_NAME.match(text).end()
    ins = text.index("ins", name_end)
    outs = text.index("outs", text.index(")", ins))
    name = text[:name_end]
    return (item_token(tok, op_name_kind(name), name, 0),
            item_token(tok, "DPS_INS", text[ins:text.index(")", ins) + 1], ins),
            item_token(tok, "DPS_OUTS", text[outs:], outs))


def item_token(group: Token, kind: str, text: str, offset: int) -> Token:
    start, column = group.start_pos + offset, group.column + offset
    return Token(kind, text, start, group.line, column, group.line, column + len(text), start + len(text))


@functools.lru_cache(maxsize=4096)
def dps_items(group: str) -> tuple:
    """(node, terminal, text, offset) of each item of a DPS group's text (a kernel writes few distinct
    groups)."""
    parser = get_parser()
    ssa, types = (parser.get_terminal(t).pattern.to_regexp() for t in ("SSA", "TYPE_TEXT"))
    colon = group.index(":")  # an SSA name has none; a type may
    items = [("operand", "SSA", m.group(), m.start()) for m in re.finditer(ssa, group[:colon])]
    for m in re.compile(rf"({types})|[^\s,)]+").finditer(group, colon + 1):  # a type or a scalar type's name
        node, kind = ("type_text", "TYPE_TEXT") if m.group(1) else ("builtin_type", "NAME")
        items.append((node, kind, m.group(), m.start()))
    return tuple(items)


class SsaOpItems(NamedTuple):
    """The parts of an ``SSA_OP`` token's text, each ``(text, offset)``: ``args`` holds
    ``("operand", ssa)`` and ``("kwarg", name, ssa)`` / ``("kwarg", name, [ssa, ...])``; the types are
    :func:`dps_items`-like ``(node, terminal, text, offset)``."""

    result: tuple[str, int]
    name: tuple[str, int]
    args: tuple
    sig_in: tuple
    sig_out: tuple


@functools.cache
def _type_text() -> re.Pattern:
    return re.compile(get_parser().get_terminal("TYPE_TEXT").pattern.to_regexp())


@functools.cache
def _ssa_op_lexer() -> re.Pattern:
    """The tokens of an ``SSA_OP`` token's text, blanks skipped."""
    ssa = get_parser().get_terminal("SSA").pattern.to_regexp()
    return re.compile(rf"(?P<ssa>{ssa})|(?P<type>{_type_text().pattern})|(?P<arrow>->|(?<![\w$.])to(?![\w$.]))"
                      rf"|(?P<word>[A-Za-z_][\w$.]*)|(?P<punct>[,=\[\]:])")


def ssa_op_items(text: str) -> SsaOpItems:
    """The parts of an ``SSA_OP`` token's text (the grammar has checked its form)."""
    toks = [(m.lastgroup, m.group(), m.start()) for m in _ssa_op_lexer().finditer(text)]
    result, name = toks[0][1:], toks[2][1:]
    args, i = [], 3
    while toks[i][1] != ":":
        kind, word, off = toks[i]
        if kind == "ssa":
            args.append(("operand", (word, off)))
            i += 1
        elif toks[i + 2][1] == "[":
            end = next(j for j in range(i + 3, len(toks)) if toks[j][1] == "]")
            args.append(("kwarg", (word, off), [t[1:] for t in toks[i + 3:end] if t[0] == "ssa"]))
            i = end + 1
        else:
            args.append(("kwarg", (word, off), toks[i + 2][1:]))
            i += 3
        if toks[i][1] == ",":
            i += 1
    sig, out = [], []
    for kind, word, off in toks[i + 1:]:
        if kind == "arrow":
            sig, out = out, sig
        elif kind != "punct":
            out.append(("type_text", "TYPE_TEXT", word, off) if kind == "type" else ("builtin_type", "NAME", word, off))
    return SsaOpItems(result, name, tuple(args), tuple(sig), tuple(out))


class SsaOp(Tree):
    """The ``op`` node of an ``SSA_OP`` token.  Its children are those the grammar builds from the
    op's tokens, made when first read: tree_to_stmts reads :attr:`token` and :func:`ssa_op_items`
    instead."""

    def __init__(self, token: Token):
        self.data, self.token, self._meta, self._children = "op", token, None, None

    @property
    def children(self) -> list:
        if self._children is None:
            tok, items = self.token, ssa_op_items(self.token.value)

            def leaf(kind: str, part: tuple[str, int]) -> Token:
                return item_token(tok, kind, *part)

            def operand(part: tuple[str, int]) -> Tree:
                return Tree("operand", [leaf("SSA", part)])

            def types(data: str, parts: tuple) -> Tree:
                return Tree(data, [Tree(node, [leaf(kind, (text, off))]) for node, kind, text, off in parts])

            name = items.name[0]
            args = [operand(a[1]) if a[0] == "operand" else
                    Tree("kwarg", [leaf("NAME", a[1]), Tree("list", [operand(p) for p in a[2]])
                                   if isinstance(a[2], list) else operand(a[2])]) for a in items.args]
            self._children = [Tree("results", [leaf("SSA", items.result)]),
                              leaf(op_name_kind(name), items.name),
                              *args, Tree("signature", [types("sig_in", items.sig_in), types("sig_out", items.sig_out)])]
        return self._children

    @children.setter
    def children(self, value: list) -> None:
        self._children = value


class DpsGroup(Tree):
    """The ``ins`` / ``outs`` node of a one-token DPS group (``DPS_INS`` / ``DPS_OUTS``, alone or in a
    ``DPS_OP``).  Its children are those the grammar builds from the group's tokens (``operand(SSA)``,
    ``type_text(TYPE_TEXT)``, ``builtin_type(NAME)``), each located where its text is, made when first
    read: tree_to_stmts reads :attr:`token` and :func:`dps_items` instead, as most ops of a kernel
    are such groups."""

    def __init__(self, data: str, token: Token):
        self.data, self.token, self._meta, self._children = data, token, None, None

    @property
    def children(self) -> list:
        if self._children is None:
            group = self.token
            self._children = [Tree(node, [item_token(group, kind, text, off)])
                              for node, kind, text, off in dps_items(group.value)]
        return self._children

    @children.setter
    def children(self, value: list) -> None:
        self._children = value


class _DpsGroups:
    """Lark calls it for the ``ins``, ``outs`` and ``op`` rules only (it has no ``__default__``: every
    other node is a plain Tree)."""

    def ins(self, children):
        return _group("ins", children)

    def outs(self, children):
        return _group("outs", children)

    def op(self, children):
        if len(children) == 1 and isinstance(children[0], Token) and children[0].type == "SSA_OP":
            return SsaOp(children[0])
        if len(children) > 1 and isinstance(children[1], Token) and children[1].type == "DPS_OP":
            name, ins, outs = _dps_op_parts(children[1])
            return Tree("op", [children[0], name, DpsGroup("ins", ins), DpsGroup("outs", outs), *children[2:]])
        return Tree("op", children)


def _group(data: str, children: list) -> Tree:
    if len(children) == 1 and isinstance(children[0], Token) and children[0].type in _DPS_GROUPS:
        return DpsGroup(data, children[0])
    return Tree(data, children)


_FILENAME: contextvars.ContextVar[str] = contextvars.ContextVar("ptoc_syntax_filename", default="<unknown>")
_POSTLEX = _PostLexer()
_PARSER: Lark | None = None
_PATTERNS: "_SavedPatterns | None" = None
_PARSER_LOCK = threading.Lock()


def get_parser() -> Lark:
    """The LALR parser, built once per process (and cached on disk by Lark, its lexers' patterns
    by :class:`_SavedPatterns`); it keeps no state between parses (the post-lexer's state is per
    call), so threads share it."""
    global _PARSER, _PATTERNS
    with _PARSER_LOCK:
        if _PARSER is None:
            _PARSER = _build_parser()
            _PATTERNS = _SavedPatterns.install(_PARSER)
    return _PARSER


class _SavedPatterns:
    """The ``re`` of the parser's lexers, which keeps each compiled pattern's program in a file
    beside Lark's own cache.  The contextual lexer has a lexer per parser state, and each compiles
    the alternation of the terminals its state accepts, the first time it lexes: ~50 patterns of up
    to 2,500 characters for a kernel, 30 ms of every run.  ``re`` compiles a pattern to a program of
    code words (``re._compiler``) that ``_sre.compile`` makes the pattern object of; the file keeps
    those programs, keyed by the Python build and the grammar, and is written when a run compiled a
    pattern it lacked.  Anything unexpected falls back to ``re`` (a lexer then compiles as before)."""

    error = re.error

    def __init__(self, path: str):
        import marshal

        self.path = path
        self.saved: dict = {}
        try:
            with open(path, "rb") as f:
                saved = marshal.load(f)
            if isinstance(saved, dict):
                self.saved = saved
        except (OSError, EOFError, ValueError, TypeError):
            pass
        self.new = False

    @classmethod
    def install(cls, parser: Lark) -> "_SavedPatterns | None":
        """The parser's lexers compile with a new instance, which is returned (None: they keep ``re``)."""
        import _sre
        import hashlib
        import sys
        import tempfile

        try:
            from re import _compiler, _parser  # noqa: F401  (CPython's, 3.11+)

            contextual = parser.parser.lexer.lexer
            lexers = [*contextual.lexers.values(), contextual.root_lexer]
        except (ImportError, AttributeError):
            return None
        if _sre.CODESIZE != 4 or any(lexer.re is not re for lexer in lexers):
            return None
        key = hashlib.sha256(f"{sys.version}|{_sre.MAGIC}|{lark.__version__}|".encode()
                             + GRAMMAR_PATH.read_bytes()).hexdigest()[:32]
        patterns = cls(f"{tempfile.gettempdir()}/.ptoc_lexer_patterns_{key}.tmp")
        for lexer in lexers:
            lexer.re = patterns
        return patterns

    def compile(self, pattern, flags=0):
        import _sre
        from array import array

        key = (pattern, int(flags))
        program = self.saved.get(key)
        if program is None:
            if not isinstance(pattern, str):
                return re.compile(pattern, flags)
            program = self.saved[key] = _program(pattern, key[1])
            self.new = True
        try:
            flags, code, groups, groupindex, indexgroup = program
            return _sre.compile(pattern, flags, array("I", code).tolist(), groups, groupindex, indexgroup)
        except (TypeError, ValueError, RuntimeError, OverflowError):  # a damaged file: compile it
            del self.saved[key]
            return re.compile(pattern, key[1])

    def match(self, pattern, string, flags=0):
        return self.compile(pattern, flags).match(string)

    def save(self) -> None:
        """Write the programs if a pattern was compiled (to a new file moved over the old one: runs
        at once each read a whole file)."""
        import marshal
        import os

        if not self.new:
            return
        self.new = False
        tmp = f"{self.path}.{os.getpid()}.{threading.get_ident()}"
        try:
            with open(tmp, "wb") as f:
                marshal.dump(dict(self.saved), f)  # (a copy: another thread may add to it)
            os.replace(tmp, self.path)
        except OSError:  # an unwritable temp dir: compile again next time
            pass


def _program(pattern: str, flags: int) -> tuple:
    """What ``re.compile(pattern, flags)`` hands ``_sre.compile`` (as ``re._compiler.compile``
    makes it), in a form ``marshal`` writes: the code words as bytes."""
    from array import array
    from re import _compiler, _parser

    p = _parser.parse(pattern, flags)
    indexgroup = [None] * p.state.groups
    for name, i in p.state.groupdict.items():
        indexgroup[i] = name
    return (int(flags | p.state.flags), array("I", _compiler._code(p, flags)).tobytes(), p.state.groups - 1,
            dict(p.state.groupdict), tuple(indexgroup))


def _build_parser() -> Lark:
    # An unreadable / unwritable cache file is not an error (Lark rebuilds), but Lark would log
    # it with a traceback: keep its logger quiet while building.
    level = lark.logger.level
    lark.logger.setLevel(logging.CRITICAL)
    try:
        return Lark(
            GRAMMAR_PATH.read_text(encoding="utf-8"),
            parser="lalr",
            lexer="contextual",
            postlex=_POSTLEX,
            maybe_placeholders=True,
            propagate_positions=False,
            start=["start", "type"],
            transformer=_DpsGroups(),
            cache=True,  # a file in the user's temp dir, keyed by a hash of grammar and options
        )
    finally:
        lark.logger.setLevel(level)


# ---------------------------------------------------------------------------------------- errors

_FRIENDLY = {
    "_NL": "end of line",
    "$END": "end of input",
    "SSA": "SSA value",
    "SYMBOL": "symbol",
    "NAME": "identifier",
    "KEY": "attribute name",
    "STRING": "string",
    "INT": "integer",
    "FLOAT": "float",
    "HEX": "hex integer",
    "DIM": "shape",
    "TILE_KW": "'!pto.tile'",
    "TYPE_TEXT": "type",
    "DPS_INS": "'ins'",
    "DPS_OUTS": "'outs'",
    "DPS_OP": "operation name",
    "SSA_OP": "SSA value",
    "BANG_NAME": "type",
    "HASH_NAME": "attribute",
    "OPNAME": "operation name",
    "SHORT_OP": "operation name",
    "REGION_OPNAME": "operation name",
    "VISIBILITY": "'private'",
}


def _describe_terminal(name: str) -> str:
    if name in _FRIENDLY:
        return _FRIENDLY[name]
    parser = get_parser()
    try:
        term = parser.get_terminal(name)
    except (KeyError, LarkError):
        return name.lower()
    pattern = term.pattern
    if isinstance(pattern, lark.lexer.PatternStr):
        return f"'{pattern.value}'"
    return name.lower()


def _show_char(ch: str) -> str:
    if ch.isprintable() and ch not in "'\\":
        return f"'{ch}'"
    return repr(ch)


def _show_token(tok: Token) -> str:
    if tok.type == "_NL":
        return "end of line"
    if tok.type == "$END":
        return "end of input"
    text = str(tok)
    if tok.type == "TYPE_TEXT":  # token by token, the type's name is what the parser would find here
        text = text[:text.index("<")]
    elif tok.type in _DPS_GROUPS:  # and `ins` / `outs` here
        text = _DPS_GROUPS[tok.type]
    elif tok.type == "DPS_OP":  # and the op name here
        text = str(_dps_op_parts(tok)[0])
    elif tok.type == "SSA_OP":  # and the result here
        text = ssa_op_items(tok.value).result[0]
    if len(text) > 40:
        text = text[:37] + "..."
    return f"'{text}'"


def _join_alternatives(items: list[str]) -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " or " + items[-1]


def _end_position(text: str) -> tuple[int, int]:
    """Line and column just after the last non-blank character (where 'end of input' is reported)."""
    stripped = text.rstrip()
    line = stripped.count("\n") + 1
    col = len(stripped) - (stripped.rfind("\n") + 1) + 1
    return line, col


def _expected_terminals(exc: UnexpectedToken) -> set[str]:
    """The terminals the parser could take at the error (the lexer's own set also holds ignored
    and always-accepted terminals, so prefer the parse table when the state is known)."""
    interactive = getattr(exc, "interactive_parser", None)
    if interactive is not None:
        try:
            return set(interactive.accepts())  # exact: simulates the reductions for each candidate
        except Exception:  # noqa: BLE001 - fall back to the parse table below
            pass
    state = getattr(exc, "state", None)
    try:
        return {t for t in state.parse_conf.states[state.position] if t.isupper()}
    except (AttributeError, KeyError, TypeError):
        return {t for t in exc.expected if t not in ("WS", "COMMENT", "_CONT", "FIRST_LINE_HASH_COMMENT")}


def _token_error(exc: UnexpectedToken, text: str, filename: str) -> PtocError:
    tok = exc.token
    if tok.type == "$END":
        line, col = _end_position(text)
    else:
        line, col = tok.line, tok.column
    names = _expected_terminals(exc)
    ends = names & {"_NL", "SEMICOLON", "$END"}
    names -= {"_NL", "SEMICOLON", "$END"}
    if "_NL" in ends:  # a statement may end here: by a line break, ';' or the region's '}'
        names.discard("RBRACE")
    expected = sorted({_describe_terminal(n) for n in names})
    if "_NL" in ends:
        expected.append("end of line")
    elif "$END" in ends:
        expected.append("end of input")
    found = _show_token(tok)
    if 0 < len(expected) <= 5:
        return error_at(f"expected {_join_alternatives(expected)} but found {found}", filename, line, col)
    if tok.type == "$END":
        return error_at("unexpected end of input", filename, line, col)
    return error_at(f"unexpected {found}", filename, line, col)


def _char_error(exc: UnexpectedCharacters, text: str, filename: str) -> PtocError:
    pos = exc.pos_in_stream
    ch = text[pos] if 0 <= pos < len(text) else ""
    return error_at(f"unexpected character {_show_char(ch)}", filename, exc.line, exc.column)


# ---------------------------------------------------------------------------------------- entry


def first_token(node: Tree | Token | None) -> Token | None:
    """The first Token in ``node`` (itself if it is one), e.g. to locate a type or an attribute."""
    if node is None or isinstance(node, Token):
        return node
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Token):
            return current
        if isinstance(current, Tree):
            stack.extend(reversed(current.children))
    return None


def parse_tree(text: str, filename: str = "<unknown>") -> Tree:
    """Parse PTO-AS ``text``; raise :class:`PtocError` (located) on any syntax error."""
    if len(text) > MAX_INPUT_CHARS:
        raise error_at(f"input too large ({len(text)} characters; the limit is {MAX_INPUT_CHARS})",
                       filename, 1, 1)
    try:
        return _parse(text, filename, "start")
    except PtocError as exc:
        raise exc.quote({filename: text})


def parse_type_text(tok: Token, filename: str = "<unknown>") -> Tree:
    """The tree of a ``TYPE_TEXT`` token: its text parsed by the grammar's ``type`` rule, every token
    (and any error) located where it is in the file.  The diagnostics are not quoted (the caller
    has the file's text)."""
    return _parse("\n" * (tok.line - 1) + " " * (tok.column - 1) + tok.value, filename, "type")


def _parse(text: str, filename: str, start: str) -> Tree:
    parser = get_parser()
    reset = _FILENAME.set(filename)
    try:
        return parser.parse(text, start)
    except UnexpectedToken as exc:
        raise _token_error(exc, text, filename) from None
    except UnexpectedCharacters as exc:
        raise _char_error(exc, text, filename) from None
    except UnexpectedInput as exc:  # UnexpectedEOF and friends
        line, col = _end_position(text)
        raise error_at("unexpected end of input", filename, getattr(exc, "line", line) or line,
                       getattr(exc, "column", col) or col) from None
    except (LarkError, RecursionError) as exc:
        raise error_at(f"syntax error: {exc.__class__.__name__}", filename, 1, 1) from None
    finally:
        _FILENAME.reset(reset)
        if _PATTERNS is not None:
            _PATTERNS.save()
