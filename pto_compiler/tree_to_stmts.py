"""Lark tree (shape documented in syntax.py) -> :class:`frontend.Stmt` records and xDSL types/attributes.

Types and attributes are converted here, each error located at the type's first token.
"""

from __future__ import annotations

import ast
from typing import Any

from lark import Token, Tree
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from pto_compiler.diagnostics import PtocError, error_at
from pto_compiler.dialects import pto
from pto_compiler.frontend import (
    BLAYOUT_NAMES,
    FRACTAL_NAMES,
    PAD_NAMES,
    SLAYOUT_NAMES,
    Operand,
    Pos,
    Stmt,
    TypeRef,
    element_type,
)
from pto_compiler.syntax import (
    TYPE_NODES,
    DpsGroup,
    SsaOp,
    dps_items,
    first_token,
    item_token,
    op_name_kind,
    parse_type_text,
    ssa_op_items,
)

LITERAL_TOKENS = {"INT", "FLOAT", "HEX", "STRING", "TRUE", "FALSE"}


def _pos(tok: Token | None) -> Pos:
    return Pos(tok.line, tok.column) if tok is not None else Pos(1, 1)


def _literal(tok: Token) -> Any:
    t = tok.type
    if t == "INT":
        return int(tok)
    if t == "HEX":
        return int(tok, 16)
    if t == "FLOAT":
        return float(tok)
    if t == "TRUE":
        return True
    if t == "FALSE":
        return False
    if t == "STRING":
        return ast.literal_eval(tok) if "\\" in tok else str(tok)[1:-1]
    return str(tok)


def _shape_key(node) -> tuple:
    """What a tile type's conversion reads of its tree: rule names and token kinds and texts."""
    if isinstance(node, Tree):
        return (node.data, *(_shape_key(c) for c in node.children))
    return (node.type, str(node)) if node is not None else None


class Converter:
    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self._tiles: dict[tuple, Attribute] = {}
        """Tile types by :func:`_shape_key`: a kernel writes a few tile types over and over, and
        each conversion builds and verifies a ten-parameter attribute."""
        self._texts: dict[str, Attribute] = {}
        """The types of ``type_text`` tokens by their text (the same few, on every line)."""

    def err(self, message: str, node) -> PtocError:
        p = _pos(first_token(node))
        return error_at(message, self.filename, p.line, p.column)

    # ---- raw bodies (for #pto.x<...> and !pto.x<...> kept verbatim) -----------------------
    def raw_body(self, name_tok: Token) -> str:
        pos = name_tok.end_pos
        text = self.text
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos >= len(text) or text[pos] != "<":
            return ""
        depth, start = 0, pos + 1
        while pos < len(text):
            c = text[pos]
            if c in "<([{":
                depth += 1
            elif c == "-" and text[pos + 1:pos + 2] == ">":
                pos += 1
            elif c in ">)]}":
                depth -= 1
                if depth == 0:
                    return " ".join(text[start:pos].split())
            elif c == '"':
                pos = text.index('"', pos + 1)
            pos += 1
        return " ".join(text[start:].split())

    # ---- types -------------------------------------------------------------------------
    def type_ref(self, node) -> TypeRef:
        return TypeRef(self.type(node), _pos(first_token(node)))

    def type(self, node) -> Attribute:
        if not isinstance(node, Tree):  # a dialect type's parameter that is no type: `!pto.ptr<5>`
            raise self.err(f"expected a type, found '{node}'", node)
        kind = node.data
        if kind == "type_text":
            tok = node.children[0]
            t = self._texts.get(tok.value)
            if t is None:
                t = self._texts[tok.value] = self.type(parse_type_text(tok, self.filename))
            return t
        if kind == "builtin_type":
            tok = node.children[0]
            return element_type(str(tok), self.filename, _pos(tok))
        if kind == "tile_type":
            key = _shape_key(node)
            t = self._tiles.get(key)
            if t is None:
                t = self._tiles[key] = self.tile_type(node)
            return t
        if kind in ("memref_type", "tensor_type", "vector_type"):
            return self.shaped_type(node)
        if kind == "dialect_type":
            return self.dialect_type(node)
        raise self.err(f"unexpected type syntax '{kind}'", node)

    def shape(self, node: Tree) -> tuple[list[int], Attribute]:
        dims = [-1 if str(c) == "?" else int(c) for c in node.children[:-1]]
        return dims, self.type(node.children[-1])

    def shaped_type(self, node: Tree) -> Attribute:
        head = node.children[0]
        if isinstance(head, Tree) and head.data == "shape":
            dims, elt = self.shape(head)
        else:
            dims, elt = [], self.type(head)
        if node.data == "vector_type":
            return VectorType(elt, dims)
        layout: Attribute = NoneAttr()
        space: Attribute = NoneAttr()
        for p in node.children[1:]:
            if isinstance(p, Tree) and p.data == "strided_layout":
                strides = [int(x) if isinstance(x, Token) and x.type == "INT" else None
                           for x in p.children[0].children]
                offset = None
                if len(p.children) > 1 and str(p.children[1]) != "?":
                    offset = int(p.children[1])
                layout = StridedLayoutAttr(strides, offset)
            elif isinstance(p, Tree) and p.data == "hash_attr":
                space = self.hash_attr(p)
            elif isinstance(p, Token) and p.type == "INT":
                space = IntegerAttr(int(p), 64)
        dims = [-1 if d < 0 else d for d in dims]
        if node.data == "tensor_type":
            return TensorType(elt, dims)
        try:
            return MemRefType(elt, dims, layout, space)
        except (VerifyException, ValueError, TypeError) as e:
            raise self.err(f"invalid memref type: {e}", node) from None

    def dialect_type(self, node: Tree) -> Attribute:
        name_tok = node.children[0]
        name = str(name_tok)[1:]
        params = node.children[1:]
        if name == "pto.ptr":
            if not params:
                raise self.err("!pto.ptr needs an element type", node)
            elt = self.type(params[0])
            space = str(params[1]) if len(params) > 1 else "gm"
            return pto.PtrType(elt, space)
        if name in ("pto.tensor_view", "pto.partition_tensor_view"):
            if len(params) != 1 or not isinstance(params[0], Tree):
                raise self.err(f"!{name} expects <DIMSxTYPE>", node)
            p = params[0]
            dims, elt = self.shape(p) if p.data == "shape" else ([], self.type(p))
            cls = pto.TensorViewType if name == "pto.tensor_view" else pto.PartitionTensorViewType
            return cls(dims, elt)
        if name.startswith("pto.") and name[4:] in pto.RAW_TYPES:
            return pto.raw_type(name[4:], self.raw_body(name_tok))
        if name.startswith("vf."):
            from pto_compiler.dialects import vf

            try:
                return vf.type_from_text(name, self.raw_body(name_tok))
            except ValueError as e:
                raise self.err(str(e), node) from None
        raise self.err(f"unknown type '!{name}'", node)

    def tile_type(self, node: Tree) -> Attribute:
        kw = node.children[0]
        cls = pto.TileType if kw is not None and str(kw) == "!pto.tile" else pto.TileBufType
        keys: dict[str, Any] = {}
        positional: list[Any] = []
        for p in node.children[1:]:
            if p.data == "tile_kv":
                key, val = str(p.children[0]), p.children[1]
                if key in keys:
                    raise self.err(f"duplicate tile key '{key}'", p)
                keys[key] = val
            else:
                positional.append(p.children[0])
        fields: dict[str, Any] = {}
        loc = None
        if "loc" in keys:
            loc = str(keys.pop("loc"))
        shape_node = next((v for v in positional if isinstance(v, Tree) and v.data == "shape"), None)
        if shape_node is not None:
            dims, elt = self.shape(shape_node)
            if len(dims) != 2:
                raise self.err(f"a tile has two dimensions, got {len(dims)}", shape_node)
            fields["rows"], fields["cols"] = dims
            fields["dtype"] = elt
            rest = [v for v in positional if v is not shape_node]
            if rest and isinstance(rest[0], Token) and rest[0].type == "NAME" and loc is None:
                loc = str(rest.pop(0))
            if rest:
                raise self.err("unexpected positional tile parameter", rest[0])
        elif positional:
            # `<f32, 16, 16[, blayout names...]>`, `<loc=vec, f32, 16, 16, RowMajor, NoneBox, None, Zero>`
            rest = list(positional)
            if loc is None and rest and str(rest[0]) in pto.TILE_LOCS and len(rest) > 3:
                loc = str(rest.pop(0))
            if rest:
                fields["dtype"] = element_type(str(rest.pop(0)), self.filename, _pos(first_token(node)))
            ints = [r for r in rest if isinstance(r, Token) and r.type in ("INT", "QMARK")]
            names = [r for r in rest if isinstance(r, Token) and r.type == "NAME"]
            order = ["rows", "cols", "v_row", "v_col"]
            for k, v in zip(order, ints):
                fields[k] = -1 if str(v) == "?" else int(v)
            layouts = [n for n in names if str(n).lower() in BLAYOUT_NAMES or str(n).lower() == "nonebox"]
            if layouts:
                fields["blayout"] = BLAYOUT_NAMES.get(str(layouts[0]).lower(), "row_major")
            if len(layouts) > 1:
                fields["slayout"] = SLAYOUT_NAMES.get(str(layouts[1]).lower(), "none_box")
            for n in names:
                low = str(n).lower()
                if low in PAD_NAMES and n is names[-1]:
                    fields["pad"] = PAD_NAMES[low]
        for key, val in keys.items():
            sval = str(val) if isinstance(val, Token) else None
            if key == "dtype":
                fields["dtype"] = element_type(sval or "", self.filename, _pos(first_token(val)))
            elif key in ("rows", "cols", "fractal", "pad", "compact", "v_row", "v_col"):
                if key in ("pad",) and sval and sval.lower() in PAD_NAMES:
                    fields[key] = PAD_NAMES[sval.lower()]
                elif key == "fractal" and sval and sval.lower() in FRACTAL_NAMES:
                    fields[key] = FRACTAL_NAMES[sval.lower()]
                elif sval is not None and (sval == "?" or sval.lstrip("-").isdigit()):
                    fields[key] = -1 if sval == "?" else int(sval)
                else:
                    raise self.err(f"tile key '{key}' expects an integer", val)
            elif key == "valid":
                if not (isinstance(val, Tree) and val.data == "dims"):
                    raise self.err("valid expects ROWSxCOLS", val)
                vals = [-1 if str(c) == "?" else int(c) for c in val.children]
                if len(vals) != 2:
                    raise self.err("valid expects ROWSxCOLS", val)
                fields["v_row"], fields["v_col"] = vals
            elif key == "blayout":
                if sval is None or sval.lower() not in BLAYOUT_NAMES:
                    raise self.err(f"unknown blayout '{sval}' (expected row_major or col_major)", val)
                fields[key] = BLAYOUT_NAMES[sval.lower()]
            elif key == "slayout":
                if sval is None or sval.lower() not in SLAYOUT_NAMES:
                    raise self.err(f"unknown slayout '{sval}' (expected none_box, row_major or col_major)", val)
                fields[key] = SLAYOUT_NAMES[sval.lower()]
            else:
                raise self.err(f"unknown tile key '{key}'", val)
        if "dtype" not in fields or "rows" not in fields or "cols" not in fields:
            raise self.err("a tile type needs an element type, rows and cols", node)
        rows, cols = fields.pop("rows"), fields.pop("cols")
        if rows < 0 or cols < 0:
            raise self.err("tile rows and cols must be static", node)
        valid = [fields.pop("v_row", rows), fields.pop("v_col", cols)]
        elt = fields.pop("dtype")
        try:
            pto.element_bytes(elt)
            return cls(elt, [rows, cols], loc=loc or "vec", valid=valid, **fields)
        except VerifyException as e:
            raise self.err(str(e), node) from None

    # ---- attributes and values ---------------------------------------------------------
    def hash_attr(self, node: Tree) -> Attribute:
        name_tok = node.children[0]
        name = str(name_tok)[1:]
        if name == "pto":
            words = node.children[1] if len(node.children) > 1 else None
            if isinstance(words, Tree) and words.data == "enum_words":
                kind = str(words.children[0])
                body = " ".join(str(w) for w in words.children[1:])
            elif isinstance(words, Token):
                kind, body = str(words), ""
            else:
                raise self.err("expected #pto<KIND VALUE>", node)
            if kind not in pto.RAW_ATTRS:
                raise self.err(f"unknown attribute '#pto.{kind}'", node)
            return pto.raw_attr(kind, body)
        if name.startswith("pto.") and name[4:] in pto.RAW_ATTRS:
            return pto.raw_attr(name[4:], self.raw_body(name_tok))
        raise self.err(f"unknown attribute '#{name}'", node)

    def angle_attr(self, node: Tree) -> Attribute:
        body = ", ".join(str(c) for c in node.children if isinstance(c, Token))
        if body.startswith("PIPE_"):
            return pto.raw_attr("pipe", body)
        if body.startswith("EVENT_ID"):
            return pto.raw_attr("event", body)
        return pto.raw_attr("pipe_event_type", body)

    def attr(self, node) -> Attribute:
        """An attribute value (inside {...}, [...], or as an op part)."""
        if isinstance(node, Token):
            t = node.type
            if t in ("INT", "HEX"):
                return IntegerAttr(_literal(node), 64)
            if t == "FLOAT":
                return FloatAttr(float(node), 64)
            if t in ("TRUE", "FALSE"):
                return BoolAttr(_literal(node), IntegerType(1))
            if t == "STRING":
                return StringAttr(_literal(node))
            if t == "SYMBOL":
                return SymbolRefAttr(str(node)[1:].strip('"'))
            if t == "QMARK":
                return StringAttr("?")
            return StringAttr(str(node))
        kind = node.data
        if kind == "hash_attr":
            return self.hash_attr(node)
        if kind == "angle_attr":
            return self.angle_attr(node)
        if kind == "list":
            return ArrayAttr([self.attr(c) for c in node.children])
        if kind == "attr_dict":
            return DictionaryAttr(self.attr_dict(node))
        if kind == "typed_attr":
            lit, t = node.children
            ty = self.type(t)
            if isinstance(lit, Tree):
                return self.dense(lit, ty)
            v = _literal(lit)
            if isinstance(ty, (IntegerType, IndexType)):
                if isinstance(v, bool):
                    v = int(v)
                return IntegerAttr(int(v), ty)
            return FloatAttr(float(v), ty)
        if kind == "array_attr":
            ty = self.type(node.children[0])
            vals = [_literal(c) for c in node.children[1:] if isinstance(c, Token)]
            return DenseArrayBase.from_list(ty, vals)
        if kind == "dense_attr":
            raise self.err("dense<...> needs a type (`dense<...> : vector<4xi16>`)", node)
        if kind == "kwarg":
            return DictionaryAttr({str(node.children[0]): self.attr(node.children[1])})
        if kind == "operand":
            raise self.err("an SSA value is not allowed here", node)
        if kind in TYPE_NODES:
            from xdsl.dialects.builtin import TypeAttribute  # noqa: F401
            return self.type(node)
        raise self.err(f"unsupported attribute syntax '{kind}'", node)

    def dense(self, node: Tree, ty: Attribute) -> Attribute:
        vals = []
        for c in node.children:
            if isinstance(c, Tree) and c.data == "list":
                vals.extend(_literal(x) for x in c.children)
            elif isinstance(c, Token):
                vals.append(_literal(c))
        try:
            if isinstance(ty, (VectorType, TensorType)):
                n = 1
                for d in ty.get_shape():
                    n *= d
                if len(vals) == 1:
                    vals = vals * n
                return DenseIntOrFPElementsAttr.from_list(ty, vals)
        except Exception as e:  # noqa: BLE001 - xDSL raises several kinds here
            raise self.err(f"invalid dense attribute: {e}", node) from None
        raise self.err("dense<...> needs a vector or tensor type", node)

    def attr_dict(self, node: Tree) -> dict[str, Attribute]:
        out: dict[str, Attribute] = {}
        for entry in node.children:
            key_tok, val = entry.children
            key = _literal(key_tok) if key_tok.type == "STRING" else str(key_tok)
            if key in out:
                raise self.err(f"duplicate attribute '{key}'", entry)
            out[key] = UnitAttr() if val is None else self.attr(val)
        return out

    def value(self, node) -> Any:
        """A kwarg / list value: Operand, int, list, or Attribute."""
        if isinstance(node, Tree):
            if node.data == "operand":
                return self.operand(node)
            if node.data == "list":
                return [self.value(c) for c in node.children]
            return self.attr(node)
        if node.type in ("INT", "HEX"):
            return _literal(node)
        if node.type in ("TRUE", "FALSE"):
            return _literal(node)
        if node.type == "NAME":
            return StringAttr(str(node))
        return self.attr(node)

    def operand(self, node: Tree) -> Operand:
        tok = node.children[0]
        indices = []
        if len(node.children) > 1 and node.children[1] is not None:
            indices = [self.value(c) for c in node.children[1].children]
        return Operand(str(tok)[1:], _pos(tok), indices)

    # ---- groups ------------------------------------------------------------------------
    def group(self, node: Tree, stmt: Stmt) -> tuple[list[Operand], list[TypeRef], list[Any]]:
        """(operands, their types, other items) of a ( ... ) / ins / outs group."""
        if isinstance(node, DpsGroup):
            return self.dps_group(node.token)
        operands: list[Operand] = []
        types: list[TypeRef] = []
        typed_items: list[Any] = []
        others: list[Any] = []
        for c in node.children:
            if isinstance(c, Tree) and c.data in TYPE_NODES:
                types.append(self.type_ref(c))
            elif isinstance(c, Tree) and c.data == "operand":
                o = self.operand(c)
                operands.append(o)
                typed_items.append(o)
            elif isinstance(c, Tree) and c.data == "kwarg":
                name, val = str(c.children[0]), self.value(c.children[1])
                stmt.kwargs[name] = val
                typed_items.append(val)
            elif isinstance(c, Tree) and c.data == "attr_dict":
                attrs = self.attr_dict(c)
                if operands and operands[-1] is typed_items[-1] if typed_items else False:
                    operands[-1].attrs.update(attrs)
                else:
                    stmt.attrs.update(attrs)
            else:
                others.append(c)
        # the k-th type belongs to the k-th operand/kwarg item
        op_types: list[TypeRef] = []
        for item, t in zip(typed_items, types):
            if isinstance(item, Operand):
                op_types.append(t)
        if types and len(types) != len(typed_items):
            raise self.err(f"{len(typed_items)} operands but {len(types)} types", node)
        return operands, op_types if types else [], others

    def dps_group(self, group: Token) -> tuple[list[Operand], list[TypeRef], list[Any]]:
        """:meth:`group` of a one-token DPS group, read from its text: the same operands and types,
        located alike, without the tokens and nodes of its children (syntax.DpsGroup)."""
        operands: list[Operand] = []
        types: list[TypeRef] = []
        items = dps_items(group.value)
        for node, kind, text, off in items:
            if node == "operand":
                operands.append(Operand(text[1:], Pos(group.line, group.column + off)))
            else:
                types.append(self.item_type(group, node, kind, text, off))
        if len(types) != len(operands):
            raise error_at(f"{len(operands)} operands but {len(types)} types", self.filename, group.line,
                           group.column + items[0][3])
        return operands, types, []

    def item_type(self, tok: Token, node: str, kind: str, text: str, offset: int) -> TypeRef:
        """:meth:`type_ref` of the type ``text`` at ``offset`` in a one-token op or group ``tok``."""
        pos = Pos(tok.line, tok.column + offset)
        if node == "builtin_type":
            return TypeRef(element_type(text, self.filename, pos), pos)
        t = self._texts.get(text)
        if t is None:
            t = self._texts[text] = self.type(parse_type_text(item_token(tok, kind, text, offset), self.filename))
        return TypeRef(t, pos)

    def ssa_op(self, tok: Token) -> Stmt:
        """:meth:`stmt` of a one-token op (syntax.SsaOp), read from its text: the same statement,
        located alike, without the tokens and nodes of its children."""
        items = ssa_op_items(tok.value)
        line, column = tok.line, tok.column

        def operand(part: tuple[str, int]) -> Operand:
            return Operand(part[0][1:], Pos(line, column + part[1]))

        name, off = items.name
        stmt = Stmt([operand(items.result)], "pto." + name if op_name_kind(name) == "SHORT_OP" else name,
                    Pos(line, column + off))
        for arg in items.args:
            if arg[0] == "operand":
                stmt.operands.append(operand(arg[1]))
            else:
                value = arg[2]
                stmt.kwargs[arg[1][0]] = [operand(p) for p in value] if isinstance(value, list) else operand(value)
        stmt.in_types = [self.item_type(tok, *t) for t in items.sig_in]
        stmt.has_arrow = True
        stmt.out_types = [self.item_type(tok, *t) for t in items.sig_out]
        return stmt

    # ---- statements --------------------------------------------------------------------
    def stmts(self, items) -> list[Stmt]:
        return [self.stmt(i) for i in items if i is not None]

    def stmt(self, node: Tree) -> Stmt:
        if isinstance(node, SsaOp):
            return self.ssa_op(node.token)
        if node.data == "func_op":
            return self.func(node)
        if node.data == "module_op":
            raise self.err("a module may not be nested", node)
        results_node, name_tok = node.children[0], node.children[1]
        results = []
        if results_node is not None:
            results = [Operand(str(t)[1:], _pos(t)) for t in results_node.children if t.type == "SSA"]
        name = str(name_tok)
        if name_tok.type == "SHORT_OP":
            name = "pto." + name
        elif name_tok.type == "RETURN":
            name = "return"
        elif name_tok.type == "STRING":
            name = _literal(name_tok)
        stmt = Stmt(results, name, _pos(name_tok))
        for part in node.children[2:]:
            self.part(part, stmt)
        return stmt

    def part(self, part, stmt: Stmt) -> None:
        if part is None:
            return
        if isinstance(part, Token):
            t = part.type
            if t in LITERAL_TOKENS:
                if stmt.literal is None:
                    stmt.literal = _literal(part)
                stmt.words.append(str(part))
            elif t == "SYMBOL":
                stmt.symbol = str(part)[1:].strip('"')
            elif t == "NAME":
                stmt.words.append(str(part))
            else:
                stmt.words.append(str(part))
            return
        kind = part.data
        if kind == "operand":
            stmt.operands.append(self.operand(part))
        elif kind == "kwarg":
            stmt.kwargs[str(part.children[0])] = self.value(part.children[1])
        elif kind in ("ins", "outs"):
            operands, types, others = self.group(part, stmt)
            if others:
                raise self.err("unexpected item in operand group", others[0])
            if kind == "ins":
                stmt.ins, stmt.ins_types = operands, types
            else:
                stmt.outs, stmt.outs_types = operands, types
        elif kind == "group":
            operands, types, others = self.group(part, stmt)
            if stmt.symbol is not None and not operands and len(others) == 1 and isinstance(others[0], Token) \
                    and others[0].type in ("INT", "HEX"):
                stmt.symbol_call = (stmt.symbol, _literal(others[0]))
                return
            if types:
                for o, t in zip(operands, types):
                    o.type = t  # type: ignore[attr-defined]
            stmt.operands.extend(operands)
            stmt.group_types = types  # type: ignore[attr-defined]
        elif kind == "attr_dict":
            stmt.attrs.update(self.attr_dict(part))
        elif kind == "properties":
            stmt.attrs.update(self.attr_dict(part.children[0]))
        elif kind == "list":
            stmt.brackets.extend(self.value(c) for c in part.children)
        elif kind in ("hash_attr", "angle_attr"):
            stmt.brackets.append(self.attr(part))
        elif kind == "dense_attr":
            stmt.literal = part
        elif kind == "array_attr":
            stmt.brackets.append(self.attr(part))
        elif kind == "signature":
            sig_in = part.children[0]
            stmt.in_types = [self.type_ref(t) for t in sig_in.children] if sig_in is not None else []
            if len(part.children) > 1:
                stmt.has_arrow = True
                stmt.out_types = [self.type_ref(t) for t in part.children[1].children]
        elif kind == "result_types":
            stmt.has_arrow = True
            stmt.out_types = [self.type_ref(t) for t in part.children]
        elif kind == "region":
            stmt.regions.append(self.stmts(part.children))
        elif kind == "loop_bounds":
            iv = part.children[0]
            lb, ub, step = (self.operand(c) for c in part.children[1:])
            stmt.for_header = (Operand(str(iv)[1:], _pos(iv)), lb, ub, step)
        elif kind == "do_region":
            label = part.children[0] if part.children and getattr(part.children[0], "data", None) == "block_label" \
                else None
            args = [(Operand(str(a.children[0])[1:], _pos(a.children[0])), self.type_ref(a.children[1]))
                    for a in (label.children[1:] if label is not None else [])]
            stmt.regions.append(self.stmts(part.children[1:] if label is not None else part.children))
            stmt.region_args.append(args)
        elif kind in ("iter_args", "while_inits"):
            for ia in part.children:
                name_tok, val = ia.children
                v = self.value(val)
                if not isinstance(v, Operand):
                    raise self.err("iter_args initial value must be an SSA value", ia)
                stmt.iter_args.append((Operand(str(name_tok)[1:], _pos(name_tok)), v))
        elif kind in TYPE_NODES:
            stmt.in_types.append(self.type_ref(part))
        else:
            raise self.err(f"unsupported syntax '{kind}'", part)

    def func(self, node: Tree) -> Stmt:
        ftok, vis, sym, args, results, attrs, region = node.children
        stmt = Stmt([], "func.func", _pos(ftok))
        stmt.symbol = str(sym)[1:].strip('"')
        stmt.visibility = str(vis) if vis is not None else None
        for a in args.children:
            if len(a.children) >= 2 and isinstance(a.children[0], Token) and a.children[0].type == "SSA":
                tok = a.children[0]
                stmt.func_args.append((Operand(str(tok)[1:], _pos(tok)), self.type_ref(a.children[1])))
            else:
                t = a.children[0]
                stmt.func_args.append((Operand(f"arg{len(stmt.func_args)}", _pos(first_token(t))), self.type_ref(t)))
        if results is not None:
            stmt.func_results = [self.type_ref(t) for t in results.children]
        if attrs is not None:
            stmt.func_attrs = self.attr_dict(attrs)
        if region is not None:
            stmt.regions.append(self.stmts(region.children))
        return stmt


def to_stmts(tree: Tree, filename: str, text: str = "") -> tuple[list[Stmt], dict[str, Attribute], Converter]:
    conv = Converter(text, filename)
    top: list[Stmt] = []
    module_attrs: dict[str, Attribute] = {}
    seen_module = False
    for item in tree.children:
        if isinstance(item, Tree) and item.data == "module_op":
            if seen_module:
                raise conv.err("only one top-level module is supported", item)
            seen_module = True
            _, _, attrs, region = item.children
            if attrs is not None:
                module_attrs = conv.attr_dict(attrs)
            top.extend(conv.stmts(region.children))
        else:
            top.append(conv.stmt(item))
    return top, module_attrs, conv
