"""The listing of a lowered module: ``ptoc --emit program``, printed from the module's ``a2a3`` ops.

The listing prints a lowered function for people and for lit tests; nothing reads it back (tests
write programs as a2a3 MLIR).  It starts with its header::

    .kernel @softmax target=a2a3
    .gm @x f32[64,256]
    .scalar %n i32

then one instruction per line, ``PIPE OPCODE[.DTYPE] ARG ARG ...  ; FILE:LINE:COL OPNAME``:

* ``PIPE`` is left-aligned in a 5-character column; ``vconv.f32.f16`` converts f32 (src) to f16
  (dst), as the CCE intrinsic ``vconv_f322f16`` is spelled.
* ``ARG`` is ``key=value``: UB addresses and masks in hex, counts in decimal, GM addresses
  ``@arg+OFFSET``; an operand the scalar unit computes is printed as the ``arith`` that computes
  it, without blanks (``0x1000+%i*1024``, ``min(240,%n-%r)``; ``+``/``-`` terms of an address in
  hex, multipliers in decimal); an unsigned op keeps its arith name (``ult(%i,%n)``,
  ``divui(%a,4)``) and a cast that changes a value shows the type it casts to
  (``trunci.i8(%n)``).
* ``blk=1,1,0`` lists the block strides of the operands that have one, in operand order, and
  ``rep=8,8,1`` the repeat strides.
* ``set_flag MTE2->V id=0`` is in the source pipe's column, ``wait_flag`` in the destination's,
  ``pipe_barrier ALL`` in the ``S`` column.
* Float ``arith`` is the scalar ALU's (``smul.f32 dst=%f3 src0=%s src1=2.0``); a value an ``scf``
  op carries is a register, moved with ``smov`` at entry and at each yield.
* The trailing comment is the origin: the tile op the instruction was lowered from.

Loops and conditionals::

    S    loop %i = 0 to 2 step 1 {
    V      vmax.f32 dst=0x0+0x7800*%i src0=... repeat=240 blk=1,1,0 rep=8,8,1  ; t.pto:12:3 pto.trowexpandmax
    S    }

ascend950 programs launch vector functions: ``V    vf_call callee=@k_texp_2 args=0x100,%n`` runs
``vf.func @k_texp_2`` (dialects/vf.py) on the UB; the listing prints each launched ``vf.func``
after the header as a ``.vf @name`` line followed by the function's MLIR, indented by two spaces.
"""

from __future__ import annotations

import math
import re

from pto_compiler.dialects.a2a3 import OPCODES, OpSpec
from pto_compiler.runtime.kernel_interface import _int_width
from pto_compiler.runtime.program import FunctionReader, GmAddr, arith_symbol, complete

M64 = (1 << 64) - 1

_PREC = {"&": 2, "+": 4, "-": 4, "*": 5, "/": 5, "%": 5, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3}

_QUIET_DEFAULTS = ("right_pad", "pad_value", "order", "round", "src_r0", "src_c0", "dst_r0", "dst_c0",
                   "src_col_stride", "dst_col_stride")
"""Fields printed only when not the default."""


def _cast_name(op) -> str:
    """``trunci.i8``: a cast that changes a value (the reader passes the others through) with the
    type it casts to, printed as a function of its operand."""
    t = op.results[0].type
    return f"{op.name[6:]}.{f'i{t.width.data}' if hasattr(t, 'width') else 'index'}"


def _narrows(op) -> bool:
    """A cast to fewer bits (``trunci``, an ``index_cast`` of an index to an integer)."""
    if op.name not in ("arith.trunci", "arith.index_cast", "arith.index_castui"):
        return False
    src, dst = (_int_width(v.type) for v in (op.operands[0], op.results[0]))
    return dst < src


def number_text(v, hexints: bool) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        if hexints:
            return f"-{hex(-v)}" if v < 0 else hex(v)
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


def _gm_text(g: GmAddr, text) -> str:
    if isinstance(g.offset, int) and g.offset == 0:
        return f"@{g.arg}"
    off = text(g.offset, True)
    return f"@{g.arg}{off}" if off.startswith("-") else f"@{g.arg}+{off}"


def _field_text(spec: OpSpec, name: str, v, text) -> str:
    kind = spec.kinds.get(name, "int")
    if spec.family == "mask" and name in ("hi", "lo") and isinstance(v, int):
        return hex(v & M64)
    if kind == "reg":
        return f"%{v}"
    if kind == "sym":
        return _printed_name(v)
    if kind == "list":
        return ",".join(text(x, True) for x in v)
    if kind == "gm":
        return _gm_text(v, text)
    return text(v, kind in ("ub", "ub_elem"))


def instr_line(spec: OpSpec, pipe: str, a: dict, text, depth: int = 0, origin=None) -> str:
    """One instruction's line; ``text(value, hexints)`` prints an operand that is not a field's
    own kind of constant (a number, or a value the scalar unit computes)."""
    head = spec.name
    if spec.family == "conv":
        head += f".{a['src_dtype']}.{a['dtype']}"
    elif a.get("dtype"):
        head += f".{a['dtype']}"
    parts = [head]
    if spec.name in ("set_flag", "wait_flag"):
        parts.append(f"{a['src_pipe']}->{a['dst_pipe']}")
        parts.append(f"id={text(a['event_id'], False)}")
    elif spec.name == "pipe_barrier":
        parts.append(a["pipe"])
    else:
        grouped = set(spec.blk) | set(spec.rep)
        for f in spec.fields:
            if f in grouped or f not in a or spec.kinds.get(f, "").startswith("enum:"):
                continue
            if f in _QUIET_DEFAULTS and a[f] == spec.defaults.get(f):
                continue
            parts.append(f"{f}={_field_text(spec, f, a[f], text)}")
        if spec.blk:
            parts.append("blk=" + ",".join(text(a[f], False) for f in spec.blk))
        if spec.rep:
            parts.append("rep=" + ",".join(text(a[f], False) for f in spec.rep))
        for f in spec.fields:  # enum options (order=, round=) after the stride groups
            if spec.kinds[f].startswith("enum:") and f in a and a[f] != spec.defaults.get(f):
                parts.append(f"{f}={a[f]}")
    line = f"{pipe:<5}{'  ' * depth}{' '.join(parts)}"
    return line if origin is None else f"{line}  ; {origin}"


class _Printer(FunctionReader):
    """The listing's lines of a lowered function (a value the scalar unit computes is its arith op,
    printed where it is used)."""

    def __init__(self, fn, target, scalars=None):
        super().__init__(fn, target, scalars)
        self.lines: list[str] = []
        self.depth = 0
        self.marks: list = []
        """Per open if: the line its else branch would start at."""

    def text(self, v, hexints: bool = False, prec: int = 0) -> str:
        if type(v) is str:
            return f"%{v}"
        if isinstance(v, (int, float)):
            s = number_text(v, hexints)
            return f"({s})" if prec > 4 and s.startswith("-") else s
        return self.arith_text(v, hexints, prec)

    def arith_text(self, op, hexints: bool, prec: int) -> str:
        args = [self.vals[o] for o in op.operands]
        sym = arith_symbol(op) or _cast_name(op)
        if sym not in _PREC:
            return f"{sym}(" + ",".join(self.text(x, hexints) for x in args) + ")"
        p = _PREC[sym]
        h = hexints and sym in ("+", "-")
        lhs = self.text(args[0], h, p)
        rhs = self.text(args[1], h, p + 1 if sym in ("-", "/", "%") or p == 3 else p)
        s = f"{lhs}{sym}{rhs}"
        return f"({s})" if p < prec else s

    def field_text(self, v, hexints: bool = False) -> str:
        """An instruction operand: a narrowing cast on top is the instruction's type's to say (a
        store or a scalar of that width keeps the low bits), so it prints as its operand."""
        if not isinstance(v, (str, int, float)) and _narrows(v):
            v = self.vals[v.operands[0]]
        return self.text(v, hexints)

    def computed(self, op, fn, values):
        return op

    def emit(self, opcode, dtype, args, op=None):
        pipe, _, full = complete(opcode, dtype, args)
        self.lines.append(instr_line(OPCODES[opcode], pipe, full, self.field_text, self.depth, self.origin))

    def line(self, text: str, origin: bool = False) -> None:
        s = f"{'S':<5}{'  ' * self.depth}{text}"
        self.lines.append(f"{s}  ; {self.origin}" if origin and self.origin is not None else s)

    def begin(self, kind, op, **f):
        t = self.text
        if kind == "loop":
            self.line(f"loop %{f['var']} = {t(f['start'])} to {t(f['stop'])} step {t(f['step'])} {{", True)
        elif kind == "if":
            self.line(f"if {t(f['cond'])} {{", True)
        elif kind == "while":
            self.line("while {", True)
        elif kind == "else":
            self.marks.append(len(self.lines))
            return
        else:  # do
            self.depth -= 1
            self.line(f"}} do if {t(f['cond'])} {{")
        self.depth += 1

    def end(self, kind):
        self.depth -= 1
        if kind == "if":
            at = self.marks.pop()
            if at < len(self.lines):
                self.lines.insert(at, f"{'S':<5}{'  ' * self.depth}}} else {{")
        self.line("}")


def function_listing(fn, target, scalars: dict | None = None) -> str:
    """The listing of a lowered function (see the module doc)."""
    from pto_compiler.dialects import a2a3

    p = _Printer(fn, target, scalars)
    p.run()
    out = [f".kernel {_printed_name(fn.sym_name.data)} target={target.name}"]
    out += [f".gm @{g.name} {g.dtype}[{','.join(str(s) for s in g.shape)}]" for g in p.gm_args]
    out += [f".scalar %{s.name} {s.dtype}" for s in p.scalar_args]
    calls = [op for op in fn.walk() if isinstance(op, a2a3.OPS["vf_call"])]
    if calls:
        from pto_compiler.dialects import vf

        symbols = vf.VfSymbols(fn.parent_op() or fn)
        texts = _VfTexts()
        for name in dict.fromkeys(op.field_value("callee") for op in calls):
            out.append(f".vf {_printed_name(name)}")
            out.extend("  " + line for line in texts.text(symbols.lookup(calls[0], name)).splitlines())
    return "\n".join(out + p.lines) + "\n"


class _VfTexts:
    """The MLIR text of launched ``vf.func`` s, printed once per structure (:func:`_structure`): a
    kernel's VFs are mostly copies of a few (one per chain of tile ops, on other tiles) that differ
    only in their names and their parameters' names, and printing costs several times what
    reading the structure does.  The text of a copy is its first's, with its own names in it."""

    def __init__(self):
        self.templates: dict[tuple, list[str]] = {}
        """Structure -> the first's text split at its name and parameter names (:meth:`_template`)."""

    def text(self, fn) -> str:
        key = _structure(fn)
        if key is None:
            return _printed(fn)
        parts = self.templates.get(key)
        if parts is None:
            parts = self.templates[key] = self._template(fn)
        names = [_printed_name(fn.sym_name.data), *_param_names(fn)]
        return "".join(names[int(p)] if i % 2 else p for i, p in enumerate(parts))

    @staticmethod
    def _template(fn) -> list[str]:
        """``fn``'s text split at ``\\0``: literal text, then alternately the index of the name (0:
        ``@name``) or of a parameter (1 + its position: the name after its ``%``) and literal text.  (Printed with markers for those names,
        which the text does not otherwise hold: every other value is numbered.)"""
        from pto_compiler.dialects import vf

        class Marking(vf.VfPrinter):
            def print_symbol_name(self, sym_name: str) -> None:
                if sym_name == fn.sym_name.data and not self.marked:
                    self.marked = True
                    self.print_string("\0" "0" "\0")
                else:
                    super().print_symbol_name(sym_name)

        buf = _stream()
        printer = Marking(stream=buf)
        printer.marked = False
        for i, a in enumerate(fn.body.blocks[0].args):
            printer._ssa_values[a] = f"\0{i + 1}\0"  # printed after its '%'
        printer.print_op(fn)
        return buf.getvalue().split("\0")


def _stream():
    from io import StringIO

    return StringIO()


def _printed(op) -> str:
    from pto_compiler.dialects import vf

    buf = _stream()
    vf.VfPrinter(stream=buf).print_op(op)
    return buf.getvalue()


_BARE_ID = re.compile(r"[A-Za-z_][\w$.]*")
"""MLIR's bare identifier, which a symbol name is printed as without quotes."""


def _printed_name(sym_name: str) -> str:
    """``@name`` as the printer spells it (quoted when not an identifier)."""
    if _BARE_ID.fullmatch(sym_name):
        return "@" + sym_name
    from xdsl.printer import Printer

    buf = _stream()
    Printer(stream=buf).print_symbol_name(sym_name)
    return buf.getvalue()


def _param_names(fn) -> list[str]:
    """The names the printer gives ``fn``'s parameters (it names them first, from their hints)."""
    from xdsl.printer import Printer

    printer = Printer(stream=_stream())
    return [printer.print_ssa_value(a) for a in fn.body.blocks[0].args]


def _structure(fn) -> tuple | None:
    """All that printing a ``vf.func`` reads but its name and its parameters' names: the op classes
    and names, which value each operand is, the types, properties and attributes (as objects: copies
    share them), the nesting of regions and blocks.  None when another value or a block is named, a
    parameter is not or an op has successors (then the names in its text interlock).  (xDSL's
    operand tuples are read directly: its ``operands`` view costs more than the rest.)"""
    block = fn.body.blocks[0]
    if not all(a.name_hint for a in block.args):
        return None
    number = {a: i for i, a in enumerate(block.args)}
    key: list = [tuple(map(id, fn.attributes.values())), tuple(fn.attributes), tuple(id(a.type) for a in block.args)]
    return tuple(key) if _add_block(block, number, key) else None


def _add_block(block, number: dict, key: list) -> bool:
    """:func:`_structure` of ``block``'s ops onto ``key``; False when there is none."""
    for op in block.ops:
        try:
            operands = tuple(number[v] for v in op._operands)
        except KeyError:  # a value from outside, or used before it is defined
            return False
        if op._successors:
            return False
        for r in op.results:
            if r.name_hint:
                return False
            number[r] = len(number)
        key.append((type(op), op.name, operands, tuple(id(r.type) for r in op.results),
                    tuple(op.properties), tuple(map(id, op.properties.values())),
                    tuple(op.attributes), tuple(map(id, op.attributes.values())), len(op.regions)))
        for region in op.regions:
            key.append(len(region.blocks))
            for b in region.blocks:
                if b.name_hint or any(a.name_hint for a in b.args):
                    return False
                number.update((a, len(number) + i) for i, a in enumerate(b.args))
                key.append(tuple(id(a.type) for a in b.args))
                if not _add_block(b, number, key):
                    return False
                key.append(None)  # the block's end
    return True
