"""The a2a3 *program*: per-pipe micro-instruction streams, their text form and its parser.

A :class:`Program` is what backend emission produces from a lowered module (DESIGN.md §2,
"program" level) and what the NumPy executor (``runtime/executor.py``) and the cycle model
(``runtime/cycles.py``) consume.  It is a tree: a body of :class:`Instr` (one A2/A3
micro-instruction, reference/vector_isa.md §1), :class:`Loop` (a scalar loop the scalar
unit runs; its body is issued once per trip), :class:`While` (``scf.while``) and :class:`If`.

Every instruction belongs to one pipe: ``MTE2`` (GM -> UB copies), ``V`` (vector unit,
including the mask registers and ``copy_ubuf_to_ubuf``), ``MTE3`` (UB -> GM copies) or
``S`` (the scalar unit: loops, scalar UB reads/writes, scalar arithmetic).  Operands are
named as the ISA names them (vector_isa.md §1.1: ``dst``, ``src0``, ``src1``, ``repeat``,
``dst_blk_stride``, ``src0_rep_stride``, ...).  UB operands are **byte addresses**; block and
repeat strides are in the unit each instruction defines (see the opcode table below).

Text form
=========

One item per line.  A program starts with its header::

    .kernel @softmax target=a2a3
    .gm @x f32[64,256]
    .gm @y f32[64,256]
    .scalar %n i32

then one instruction per line::

    PIPE OPCODE[.DTYPE] ARG ARG ...  ; FILE:LINE:COL OPNAME

* ``PIPE`` is left-aligned in a 5-character column (``S``, ``V``, ``MTE2``, ``MTE3``).
* ``OPCODE.DTYPE`` e.g. ``vmax.f32``; ``vconv.f32.f16`` converts f32 (src) to f16 (dst), as
  the CCE intrinsic ``vconv_f322f16`` is spelled.
* ``ARG`` is ``key=value``.  Values: integers (UB addresses and masks printed in hex, counts in
  decimal), floats (``1.5``, ``-inf``, ``nan``), scalar registers / loop variables ``%name``,
  GM addresses ``@arg`` or ``@arg+OFFSET`` (byte offset into kernel argument ``arg``), and
  expressions over these without blanks: ``0x1000+0x400*%i``, ``min(240,%n-%r)``
  (``+ - * / %`` with ``/`` the floor division of integers, comparisons ``< <= == != > >=``,
  ``min``/``max``, parentheses).
* Stride groups: ``blk=1,1,0`` lists the block strides of the operands that have one, in
  operand order (``dst, src0, src1``), and ``rep=8,8,1`` the repeat strides; any single field
  may also be given by its full name (``src1_blk_stride=0``).  The printer always prints the
  groups; the parser fills omitted fields with the ISA defaults (block stride 1, repeat
  stride 8 = contiguous).
* ``set_flag MTE2->V id=0`` / ``wait_flag MTE2->V id=0`` (set_flag is in the source pipe's
  column, wait_flag in the destination pipe's), ``pipe_barrier V`` (``ALL`` for PIPE_ALL,
  printed in the ``S`` column).
* Scalar registers are global and untyped (a number); ``%block_idx``, ``%block_num``,
  ``%subblock_idx`` and ``%subblock_num`` are
  predefined (also readable with ``get_block_idx``/``get_block_num``).  Operands are evaluated
  when the scalar unit issues the instruction.
* The trailing comment ``; FILE:LINE:COL OPNAME`` is the origin: the tile op the instruction
  was lowered from.  Other ``;`` comments and lines starting with ``#`` or ``;`` are ignored.

Loops and conditionals (bounds and conditions are expressions; the scalar unit runs them)::

    S    loop %i = 0 to 2 step 1 {
    V      vmax.f32 dst=0x0+0x7800*%i src0=... repeat=240 blk=1,1,0 rep=8,8,1  ; t.pto:12:3 pto.trowexpandmax
    S    }
    S    if %n>0 {
    ...
    S    } else {
    ...
    S    }

Example (the lines of a Mode-1 TROWEXPANDMAX on 16 rows of 64 f32)::

    V    vbrcb.f32 dst=0x2e000 src=0x4000 repeat=2 blk=1 rep=8  ; t.pto:12:3 pto.trowexpandmax
    V    pipe_barrier V  ; t.pto:12:3 pto.trowexpandmax
    V    vmax.f32 dst=0x0 src0=0x1000 src1=0x2e000 repeat=16 blk=1,1,0 rep=8,8,1  ; t.pto:12:3 pto.trowexpandmax

Opcodes (fields in ISA order; ``*`` marks optional fields with their default)
=============================================================================

========================================  ====  ===================================================
opcode                                    pipe  fields
========================================  ====  ===================================================
vadd vsub vmul vdiv vmax vmin             V     dst src0 src1 repeat, blk (dst,src0,src1), rep (dst,src0,src1)
vadds vmuls vmaxs vmins                   V     dst src scalar repeat, blk (dst,src), rep (dst,src)
vexp vln vsqrt vrsqrt vrec vabs vrelu     V     dst src repeat, blk (dst,src), rep (dst,src)
vector_dup                                V     dst scalar repeat, blk (dst), rep (dst)
vbrcb                                     V     dst src repeat, blk (dst), rep (dst); src reads 8 elems/repeat
vcadd vcmax vcmin                         V     dst src repeat, blk (src), rep (dst in ELEMENTS, src), order*=value
vcgadd vcgmax vcgmin                      V     dst src repeat, blk (src), rep (dst in 8-element units, src)
vcpadd                                    V     dst src repeat, blk (src), rep (dst in 32 B blocks, src)
vconv                                     V     dst src repeat round*=r (r a f c z o), blk (dst,src), rep (dst,src)
copy_gm_to_ubuf                           MTE2  dst(UB) src(GM) n_burst len_burst(B) src_gap(B) dst_gap(blk)
                                                right_pad*=0 (elements) pad_value*=0
copy_ubuf_to_gm                           MTE3  dst(GM) src(UB) n_burst len_burst(B) src_gap(blk) dst_gap(B)
                                                atomic*=none (add: GM += the bytes as GM's element type)
copy_ubuf_to_ubuf                         V     dst src n_burst len_burst src_gap dst_gap (all in 32 B blocks)
set_vector_mask                           V     hi lo (128-bit mask; count mode: hi=0, lo=count)
set_vector_count                          V     count  (= set_vector_mask hi=0 lo=count, SetVectorCount)
set_mask_norm set_mask_count              V     -
pipe_barrier                              any   pipe (V, MTE2, MTE3, S or ALL)
set_flag / wait_flag                      src/dst  src_pipe dst_pipe event_id (0..7)
ld_ub                                     S     dst(reg) addr(UB byte address): scalar read of one element
st_ub                                     S     addr src: scalar write of one element
smov                                      S     dst src   (an expression)
sadd ssub smul sdiv smax smin             S     dst src0 src1: scalar arithmetic in the element type
get_block_idx get_block_num               S     dst
print_ub                                  V     src rows cols row_stride col_stride: TPRINT to stderr
vf_call                                   V     callee(@name) args(comma list: tile UB addresses, scalars)
========================================  ====  ===================================================

ascend950 programs launch vector functions: ``V    vf_call callee=@k_texp_2 args=0x100,%n``
runs ``vf.func @k_texp_2`` (dialects/vf.py) with those arguments on the UB.  The program
carries the functions it launches (``Program.vf_funcs``: the lowered module's ``vf.func`` ops,
which the executor runs as they are); the listing prints each after the header as a ``.vf @name``
line followed by the function's printed MLIR, indented by two spaces (:func:`parse_program` does
not read them back: a program with VFs exists only as lowered).

All vector operands are UB byte addresses; vector and copy operand starts must be 32-byte aligned,
except the destination of the whole-repeat and per-block reductions (vcadd/vcmax/vcmin,
vcg*), which only needs element alignment (the headers step it by single elements).

API: :class:`Instr`, :class:`Loop`, :class:`While`, :class:`If`, :class:`Program`, :class:`GmArg`,
:class:`ScalarArg`, :class:`Origin`, :class:`GmAddr`, expression nodes :class:`Var`,
:class:`BinOp`, :class:`Call`; :func:`parse_program`, :func:`format_program`
(= ``Program.to_text()``), :func:`validate_program`, :data:`OPCODES`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple, Union

from pto_compiler.dialects.a2a3 import EVENT_IDS, OPCODES, PIPES, OpSpec

# ---------------------------------------------------------------------------------------------
# Pipes, dtypes
# ---------------------------------------------------------------------------------------------


_PIPE_ALIASES = {p: p for p in PIPES}
_PIPE_ALIASES.update({f"PIPE_{p}": p for p in PIPES})
_PIPE_ALIASES.update({"ALL": "ALL", "PIPE_ALL": "ALL"})

DTYPE_SIZES = {
    "f16": 2, "bf16": 2, "f32": 4,
    "i8": 1, "i16": 2, "i32": 4, "i64": 8,
    "u8": 1, "u16": 2, "u32": 4, "u64": 8,
}
_DTYPE_ALIASES = {d: d for d in DTYPE_SIZES}
_DTYPE_ALIASES.update({"ui8": "u8", "ui16": "u16", "ui32": "u32", "ui64": "u64",
                       "half": "f16", "float": "f32", "s8": "i8", "s16": "i16", "s32": "i32",
                       "s64": "i64"})

FLOAT_DTYPES = ("f16", "bf16", "f32")



def canonical_dtype(name: str) -> str:
    try:
        return _DTYPE_ALIASES[name]
    except KeyError:
        raise ValueError(f"unknown element type '{name}'") from None


def canonical_pipe(name: str) -> str:
    try:
        return _PIPE_ALIASES[name.upper()]
    except KeyError:
        raise ValueError(f"unknown pipe '{name}'") from None


# ---------------------------------------------------------------------------------------------
# Expressions (scalar-unit arithmetic on loop variables, scalar registers and kernel scalars)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Var:
    """A scalar register, loop variable or kernel scalar: ``%name``."""
    name: str

    def __str__(self) -> str:
        return f"%{self.name}"


_BINOPS = {
    "+": (4, lambda a, b: a + b), "-": (4, lambda a, b: a - b),
    "*": (5, lambda a, b: a * b),
    "/": (5, lambda a, b: a // b if isinstance(a, int) and isinstance(b, int) else a / b),
    "%": (5, lambda a, b: a % b),
    "<": (3, lambda a, b: int(a < b)), "<=": (3, lambda a, b: int(a <= b)),
    ">": (3, lambda a, b: int(a > b)), ">=": (3, lambda a, b: int(a >= b)),
    "==": (3, lambda a, b: int(a == b)), "!=": (3, lambda a, b: int(a != b)),
}
_CALLS = {"min": min, "max": max}


@dataclass(frozen=True)
class BinOp:
    op: str
    lhs: "Expr"
    rhs: "Expr"

    def __str__(self) -> str:
        return format_expr(self)


@dataclass(frozen=True)
class Call:
    fn: str
    args: tuple["Expr", ...]

    def __str__(self) -> str:
        return format_expr(self)


Expr = Union[int, float, Var, BinOp, Call]


@dataclass(frozen=True)
class GmAddr:
    """A GM byte address: kernel argument ``arg`` plus a byte offset (an expression)."""
    arg: str
    offset: Expr = 0

    def __str__(self) -> str:
        if isinstance(self.offset, int) and self.offset == 0:
            return f"@{self.arg}"
        off = format_expr(self.offset, hexints=True)
        return f"@{self.arg}{off}" if off.startswith("-") else f"@{self.arg}+{off}"


def is_const(e) -> bool:
    return isinstance(e, (int, float)) and not isinstance(e, bool)


def evaluate(e, env: dict):
    """Value of an expression; ``env`` maps variable names (without %) to numbers."""
    if isinstance(e, (int, float)):
        return e
    if isinstance(e, Var):
        try:
            return env[e.name]
        except KeyError:
            raise NameError(f"undefined scalar %{e.name}") from None
    if isinstance(e, BinOp):
        return _BINOPS[e.op][1](evaluate(e.lhs, env), evaluate(e.rhs, env))
    if isinstance(e, Call):
        return _CALLS[e.fn](*(evaluate(a, env) for a in e.args))
    if isinstance(e, GmAddr):
        return GmAddr(e.arg, evaluate(e.offset, env))
    if isinstance(e, str):
        return e
    raise TypeError(f"not an expression: {e!r}")


def expr_vars(e) -> set[str]:
    if isinstance(e, Var):
        return {e.name}
    if isinstance(e, BinOp):
        return expr_vars(e.lhs) | expr_vars(e.rhs)
    if isinstance(e, Call):
        out: set[str] = set()
        for a in e.args:
            out |= expr_vars(a)
        return out
    if isinstance(e, GmAddr):
        return expr_vars(e.offset)
    return set()


def _format_number(v, hexints: bool) -> str:
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
        r = repr(v)
        return r
    raise TypeError(v)


def format_expr(e, hexints: bool = False, _prec: int = 0) -> str:
    """Print an expression without blanks; ``hexints`` prints integer constants in hex."""
    if isinstance(e, (int, float)):
        s = _format_number(e, hexints)
        return f"({s})" if _prec > 4 and s.startswith("-") else s
    if isinstance(e, Var):
        return str(e)
    if isinstance(e, Call):
        return f"{e.fn}(" + ",".join(format_expr(a, hexints) for a in e.args) + ")"
    if isinstance(e, BinOp):
        prec = _BINOPS[e.op][0]
        h = hexints and e.op in "+-"  # address terms in hex, multipliers in decimal
        # Left-associative: the right operand of - / % needs parentheses at equal precedence.
        lhs = format_expr(e.lhs, h, prec)
        rhs = format_expr(e.rhs, h, prec + 1 if e.op in "-/%" or prec == 3 else prec)
        s = f"{lhs}{e.op}{rhs}"
        return f"({s})" if prec < _prec else s
    if isinstance(e, GmAddr):
        return str(e)
    raise TypeError(f"not an expression: {e!r}")


_TOKEN_RE = re.compile(r"""
    (?P<num>0[xX][0-9a-fA-F]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\d+)
  | (?P<var>%[A-Za-z_][A-Za-z0-9_.$]*)
  | (?P<gm>@[A-Za-z_][A-Za-z0-9_.$]*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><=|>=|==|!=|[-+*/%<>(),])
""", re.VERBOSE)


class _ExprParser:
    def __init__(self, text: str):
        self.text = text
        self.toks: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos].isspace():
                pos += 1
                continue
            m = _TOKEN_RE.match(text, pos)
            if not m:
                raise ValueError(f"bad expression '{text}' at '{text[pos:]}'")
            self.toks.append((m.lastgroup, m.group()))
            pos = m.end()
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        if tok[0] is None or (value is not None and tok[1] != value):
            raise ValueError(f"bad expression '{self.text}': expected {value or 'more'}")
        self.i += 1
        return tok

    def parse(self):
        e = self.expr(0)
        if self.i != len(self.toks):
            raise ValueError(f"bad expression '{self.text}': unexpected '{self.toks[self.i][1]}'")
        return e

    def expr(self, min_prec):
        lhs = self.unary()
        while True:
            kind, val = self.peek()
            if kind != "op" or val not in _BINOPS or _BINOPS[val][0] < min_prec:
                return lhs
            prec = _BINOPS[val][0]
            self.i += 1
            rhs = self.expr(prec + 1)
            lhs = _fold(BinOp(val, lhs, rhs))

    def unary(self):
        kind, val = self.peek()
        if kind == "op" and val == "-":
            self.i += 1
            e = self.unary()
            return -e if is_const(e) else _fold(BinOp("-", 0, e))
        if kind == "op" and val == "+":
            self.i += 1
            return self.unary()
        return self.atom()

    def atom(self):
        kind, val = self.take()
        if kind == "num":
            if val.lower().startswith("0x"):
                return int(val, 16)
            if re.fullmatch(r"\d+", val):
                return int(val)
            return float(val)
        if kind == "var":
            return Var(val[1:])
        if kind == "gm":
            name = val[1:]
            k2, v2 = self.peek()
            if k2 == "op" and v2 in "+-":
                self.i += 1
                off = self.expr(4)
                if v2 == "-":
                    off = -off if is_const(off) else BinOp("-", 0, off)
                return GmAddr(name, off)
            return GmAddr(name, 0)
        if kind == "name":
            if val in ("inf", "INF"):
                return math.inf
            if val in ("nan", "NAN"):
                return math.nan
            if val in _CALLS:
                self.take("(")
                args = [self.expr(0)]
                while self.peek() == ("op", ","):
                    self.i += 1
                    args.append(self.expr(0))
                self.take(")")
                return _fold(Call(val, tuple(args)))
            raise ValueError(f"bad expression '{self.text}': unknown name '{val}'")
        if kind == "op" and val == "(":
            e = self.expr(0)
            self.take(")")
            return e
        raise ValueError(f"bad expression '{self.text}': unexpected '{val}'")


def _fold(e):
    """Constant-fold a node whose operands are all constants; drop ``0+x``, ``x+0``, ``1*x``."""
    if isinstance(e, BinOp) and is_const(e.lhs) and is_const(e.rhs):
        return _BINOPS[e.op][1](e.lhs, e.rhs)
    if isinstance(e, BinOp):
        if e.op == "+" and e.lhs == 0 and isinstance(e.lhs, int):
            return e.rhs
        if e.op in "+-" and e.rhs == 0 and isinstance(e.rhs, int):
            return e.lhs
        if e.op == "*" and e.lhs == 1 and isinstance(e.lhs, int):
            return e.rhs
        if e.op in "*/" and e.rhs == 1 and isinstance(e.rhs, int):
            return e.lhs
    if isinstance(e, Call) and all(is_const(a) for a in e.args):
        return _CALLS[e.fn](*e.args)
    return e


def parse_expr(text: str):
    """Parse an expression (also a GM address ``@x+8*%i`` or a single number)."""
    return _ExprParser(text).parse()



# ---------------------------------------------------------------------------------------------
# The program tree
# ---------------------------------------------------------------------------------------------


class Origin(NamedTuple):
    """The tile op an instruction came from."""
    file: str
    line: int
    col: int
    op: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col} {self.op}"


@dataclass(eq=False)
class Instr:
    """One micro-instruction.  ``args`` holds every operand by its ISA name, plus ``dtype``
    (and ``src_dtype`` for vconv) when the opcode has an element type."""
    pipe: str
    opcode: str
    args: dict
    origin: Origin | None = None
    line: int = 0
    """Line in the program text it was parsed from (0 when built in Python)."""

    @property
    def spec(self) -> OpSpec:
        return OPCODES[self.opcode]

    @property
    def dtype(self) -> str | None:
        return self.args.get("dtype")

    @classmethod
    def make(cls, opcode: str, dtype: str | None = None, origin: Origin | tuple | None = None,
             **args) -> "Instr":
        """Build an instruction, filling the pipe and omitted defaults from the opcode table.

        ``Instr.make("vmax", "f32", dst=0, src0=0x1000, src1=0x2000, repeat=16,
        src1_blk_stride=0, src1_rep_stride=1, origin=("t.pto", 12, 3, "pto.trowexpandmax"))``
        """
        spec = OPCODES.get(opcode)
        if spec is None:
            raise ValueError(f"unknown opcode '{opcode}'")
        full = dict(spec.defaults)
        full.update(args)
        if dtype is not None:
            full["dtype"] = canonical_dtype(dtype)
        for k in ("src_pipe", "dst_pipe", "pipe"):
            if k in full and isinstance(full[k], str):
                full[k] = canonical_pipe(full[k])
        pipe = _pipe_of(opcode, full)
        if origin is not None and not isinstance(origin, Origin):
            origin = Origin(*origin)
        return cls(pipe, opcode, full, origin)

    def to_text(self, depth: int = 0, origin: bool = True) -> str:
        """The instruction's line of the text form (``origin=False``: without the comment)."""
        return _format_instr(self, depth, origin)

    def __str__(self) -> str:
        return _format_instr(self, 0, False).strip()


@dataclass(eq=False)
class Loop:
    """``for var in range(start, stop, step)``, run by the scalar unit; bounds are expressions."""
    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: list = field(default_factory=list)
    origin: Origin | None = None
    line: int = 0


@dataclass(eq=False)
class If:
    """``if cond != 0: then_body else: else_body``, run by the scalar unit."""
    cond: Expr
    then_body: list = field(default_factory=list)
    else_body: list = field(default_factory=list)
    origin: Origin | None = None
    line: int = 0


@dataclass(eq=False)
class While:
    """``scf.while``, run by the scalar unit: ``cond_body``, then while ``cond != 0`` the
    ``body`` and ``cond_body`` again (the registers ``cond_body`` writes carry the values)."""
    cond_body: list
    cond: Expr
    body: list = field(default_factory=list)
    origin: Origin | None = None
    line: int = 0


Node = Union[Instr, Loop, If, While]


@dataclass
class GmArg:
    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        n = DTYPE_SIZES[self.dtype]
        for s in self.shape:
            n *= s
        return n


@dataclass
class ScalarArg:
    name: str
    dtype: str


@dataclass
class Program:
    target: str
    gm_args: list[GmArg]
    body: list
    scalar_args: list[ScalarArg] = field(default_factory=list)
    name: str = "kernel"
    vf_funcs: dict = field(default_factory=dict)
    """ascend950: name -> ``vf.func`` op (dialects/vf.py) that ``vf_call`` instructions launch."""

    def to_text(self) -> str:
        return format_program(self)

    def walk(self) -> Iterator[tuple[Node, int]]:
        """Every node in program order with its loop depth (loops before their bodies)."""
        yield from _walk(self.body, 0)

    def instructions(self) -> list[Instr]:
        return [n for n, _ in self.walk() if isinstance(n, Instr)]

    def gm_arg(self, name: str) -> GmArg:
        for a in self.gm_args:
            if a.name == name:
                return a
        raise KeyError(name)


def _walk(body, depth):
    for n in body:
        yield n, depth
        if isinstance(n, Loop):
            yield from _walk(n.body, depth + 1)
        elif isinstance(n, If):
            yield from _walk(n.then_body, depth + 1)
            yield from _walk(n.else_body, depth + 1)
        elif isinstance(n, While):
            yield from _walk(n.cond_body, depth + 1)
            yield from _walk(n.body, depth + 1)


def _pipe_of(opcode: str, args: dict) -> str:
    spec = OPCODES[opcode]
    if spec.pipe is not None:
        return spec.pipe
    if opcode == "set_flag":
        return args["src_pipe"]
    if opcode == "wait_flag":
        return args["dst_pipe"]
    # pipe_barrier: in the column of the pipe it orders; PIPE_ALL in the scalar column.
    return "S" if args["pipe"] == "ALL" else args["pipe"]


# ---------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------

def _fmt_value(kind: str, v) -> str:
    if isinstance(v, str):
        return v
    if kind in ("ub", "ub_elem"):
        return format_expr(v, hexints=True)
    if kind == "gm":
        return str(v)
    return format_expr(v, hexints=False)


def _fmt_field(spec: OpSpec, name: str, v) -> str:
    kind = spec.kinds.get(name, "int")
    if spec.family == "mask" and name in ("hi", "lo") and isinstance(v, int):
        return hex(v & ((1 << 64) - 1))
    if kind == "reg":
        return f"%{v.name}" if isinstance(v, Var) else str(v)
    if kind == "sym":
        return f"@{v}"
    if kind == "list":
        return ",".join(format_expr(x, hexints=True) for x in v)
    return _fmt_value(kind, v)


_QUIET_DEFAULTS = ("right_pad", "pad_value", "order", "round", "src_r0", "src_c0", "dst_r0", "dst_c0",
                   "src_col_stride", "dst_col_stride")


def _format_instr(ins: Instr, depth: int, with_origin: bool = True) -> str:
    spec = ins.spec
    a = ins.args
    head = ins.opcode
    if spec.family == "conv":
        head += f".{a['src_dtype']}.{a['dtype']}"
    elif a.get("dtype"):
        head += f".{a['dtype']}"
    parts = [head]
    if ins.opcode in ("set_flag", "wait_flag"):
        parts.append(f"{a['src_pipe']}->{a['dst_pipe']}")
        parts.append(f"id={format_expr(a['event_id'])}")
    elif ins.opcode == "pipe_barrier":
        parts.append(a["pipe"])
    else:
        grouped = set(spec.blk) | set(spec.rep)
        for f in spec.fields:
            if f in grouped or f not in a or spec.kinds.get(f, "").startswith("enum:"):
                continue
            if f in _QUIET_DEFAULTS and a[f] == spec.defaults.get(f):
                continue  # printed only when not the default
            parts.append(f"{f}={_fmt_field(spec, f, a[f])}")
        if spec.blk:
            parts.append("blk=" + ",".join(format_expr(a[f]) for f in spec.blk))
        if spec.rep:
            parts.append("rep=" + ",".join(format_expr(a[f]) for f in spec.rep))
        for f in spec.fields:  # enum options (order=, round=) after the stride groups
            if f in spec.defaults and isinstance(a.get(f), str) and a[f] != spec.defaults[f]:
                parts.append(f"{f}={a[f]}")
    text = f"{ins.pipe:<5}{'  ' * depth}{' '.join(parts)}"
    if with_origin and ins.origin is not None:
        text += f"  ; {ins.origin}"
    return text


def _format_body(body, depth, out: list[str]):
    for n in body:
        ind = "  " * depth
        if isinstance(n, Instr):
            out.append(_format_instr(n, depth))
        elif isinstance(n, Loop):
            line = (f"{'S':<5}{ind}loop %{n.var} = {format_expr(n.start)} to {format_expr(n.stop)}"
                    f" step {format_expr(n.step)} {{")
            if n.origin is not None:
                line += f"  ; {n.origin}"
            out.append(line)
            _format_body(n.body, depth + 1, out)
            out.append(f"{'S':<5}{ind}}}")
        elif isinstance(n, If):
            line = f"{'S':<5}{ind}if {format_expr(n.cond)} {{"
            if n.origin is not None:
                line += f"  ; {n.origin}"
            out.append(line)
            _format_body(n.then_body, depth + 1, out)
            if n.else_body:
                out.append(f"{'S':<5}{ind}}} else {{")
                _format_body(n.else_body, depth + 1, out)
            out.append(f"{'S':<5}{ind}}}")
        elif isinstance(n, While):
            out.append(f"{'S':<5}{ind}while {{" + (f"  ; {n.origin}" if n.origin is not None else ""))
            _format_body(n.cond_body, depth + 1, out)
            out.append(f"{'S':<5}{ind}}} do if {format_expr(n.cond)} {{")
            _format_body(n.body, depth + 1, out)
            out.append(f"{'S':<5}{ind}}}")
        else:
            raise TypeError(f"not a program node: {n!r}")


def format_program(p: Program) -> str:
    """The documented text form of a program (see the module docstring)."""
    out = [f".kernel @{p.name} target={p.target}"]
    for g in p.gm_args:
        out.append(f".gm @{g.name} {g.dtype}[{','.join(str(s) for s in g.shape)}]")
    for s in p.scalar_args:
        out.append(f".scalar %{s.name} {s.dtype}")
    for name, fn in p.vf_funcs.items():
        out.append(f".vf @{name}")
        out.extend("  " + line for line in _print_op(fn).splitlines())
    _format_body(p.body, 0, out)
    return "\n".join(out) + "\n"


def _print_op(op) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    buf = StringIO()
    Printer(stream=buf).print_op(op)
    return buf.getvalue()


def _split_top(text: str) -> list[str]:
    """Split at the commas outside parentheses (``args=0x0,min(1,%n)``)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    out.append(cur)
    return [x for x in out if x != ""]


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------

class ProgramSyntaxError(ValueError):
    """A malformed program text (or an invalid program built in Python)."""

    def __init__(self, message: str, filename: str = "<program>", line: int = 0):
        self.filename, self.line, self.message = filename, line, message
        super().__init__(f"{filename}:{line}: error: {message}" if line else f"{filename}: error: {message}")


_ORIGIN_RE = re.compile(r"^\s*(?P<file>.+?):(?P<line>\d+):(?P<col>\d+)\s+(?P<op>\S+)\s*$")
_LOOP_RE = re.compile(r"^loop\s+%(?P<var>[A-Za-z_][\w.$]*)\s*=\s*(?P<start>\S+)\s+to\s+(?P<stop>\S+)"
                      r"(?:\s+step\s+(?P<step>\S+))?\s*\{$")
_IF_RE = re.compile(r"^if\s+(?P<cond>\S+)\s*\{$")
_GM_RE = re.compile(r"^\.gm\s+@(?P<name>[\w.$]+)\s*:?\s*(?P<dtype>\w+)\s*\[(?P<shape>[\d,\sx]*)\]\s*$")
_SCALAR_RE = re.compile(r"^\.scalar\s+%(?P<name>[\w.$]+)\s*:?\s*(?P<dtype>\w+)\s*$")
_KERNEL_RE = re.compile(r"^\.kernel\s+@?(?P<name>[\w.$]+)(?P<rest>.*)$")


def _split_comment(line: str) -> tuple[str, str | None]:
    i = line.find(";")
    if i < 0:
        return line, None
    return line[:i], line[i + 1:]


def parse_program(text: str, filename: str = "<program>", validate: bool = True) -> Program:
    """Parse the text form (module docstring) into a :class:`Program`."""
    prog = Program(target="a2a3", gm_args=[], body=[])
    stack: list[tuple[object, list]] = []  # (node, body being filled)
    body = prog.body

    def err(msg, ln):
        return ProgramSyntaxError(msg, filename, ln)

    for ln, raw in enumerate(text.splitlines(), start=1):
        code, comment = _split_comment(raw)
        s = code.strip()
        if not s or s.startswith("#") or s.startswith("//"):
            continue
        origin = None
        if comment is not None:
            m = _ORIGIN_RE.match(comment)
            if m:
                origin = Origin(m["file"], int(m["line"]), int(m["col"]), m["op"])
        if s.startswith("."):
            if m := _KERNEL_RE.match(s):
                prog.name = m["name"]
                for kv in m["rest"].split():
                    k, _, v = kv.partition("=")
                    if k == "target":
                        prog.target = v
                    else:
                        raise err(f"unknown .kernel attribute '{k}'", ln)
            elif m := _GM_RE.match(s):
                shape = tuple(int(x) for x in re.split(r"[,x\s]+", m["shape"].strip()) if x)
                try:
                    prog.gm_args.append(GmArg(m["name"], canonical_dtype(m["dtype"]), shape))
                except ValueError as e:
                    raise err(str(e), ln) from None
            elif m := _SCALAR_RE.match(s):
                try:
                    prog.scalar_args.append(ScalarArg(m["name"], canonical_dtype(m["dtype"])))
                except ValueError as e:
                    raise err(str(e), ln) from None
            else:
                raise err(f"unknown directive '{s.split()[0]}'", ln)
            continue
        first, _, rest = s.partition(" ")
        rest = rest.strip()
        if first.upper() in _PIPE_ALIASES and first.upper() != "ALL":
            pipe = canonical_pipe(first)
        else:
            pipe, rest = None, s
        # Structure lines.
        if rest == "}" or rest.startswith("}"):
            if not stack:
                raise err("'}' without an open loop or if", ln)
            node, _ = stack[-1]
            tail = rest[1:].strip()
            if tail.startswith("else"):
                if not isinstance(node, If) or not re.fullmatch(r"else\s*\{", tail):
                    raise err("'else' must follow an if body", ln)
                stack[-1] = (node, node.else_body)
                body = node.else_body
                continue
            if tail:
                raise err(f"unexpected '{tail}' after '}}'", ln)
            stack.pop()
            body = stack[-1][1] if stack else prog.body
            continue
        if m := _LOOP_RE.match(rest):
            try:
                node = Loop(m["var"], parse_expr(m["start"]), parse_expr(m["stop"]),
                            parse_expr(m["step"]) if m["step"] else 1, [], origin, ln)
            except ValueError as e:
                raise err(str(e), ln) from None
            body.append(node)
            stack.append((node, node.body))
            body = node.body
            continue
        if m := _IF_RE.match(rest):
            try:
                node = If(parse_expr(m["cond"]), [], [], origin, ln)
            except ValueError as e:
                raise err(str(e), ln) from None
            body.append(node)
            stack.append((node, node.then_body))
            body = node.then_body
            continue
        try:
            ins = _parse_instr(rest, pipe, origin)
        except (ValueError, KeyError) as e:
            raise err(str(e.args[0]) if e.args else str(e), ln) from None
        ins.line = ln
        body.append(ins)
    if stack:
        node = stack[-1][0]
        raise err(f"{'loop' if isinstance(node, Loop) else 'if'} opened here is never closed",
                  node.line)
    prog.target = prog.target
    if validate:
        problems = check_program(prog)
        if problems:
            node, msg = problems[0]
            raise err(msg, getattr(node, "line", 0))
    return prog


def _parse_instr(text: str, pipe: str | None, origin) -> Instr:
    toks = text.split()
    head = toks[0]
    opcode, *types = head.split(".")
    spec = OPCODES.get(opcode)
    if spec is None:
        raise ValueError(f"unknown opcode '{opcode}'")
    args: dict = {}
    if spec.family == "conv":
        if len(types) != 2:
            raise ValueError("vconv needs two types: vconv.SRC.DST")
        args["src_dtype"], args["dtype"] = canonical_dtype(types[0]), canonical_dtype(types[1])
    elif types:
        if len(types) != 1 or spec.dtype == "none":
            raise ValueError(f"'{head}': {opcode} takes {'no' if spec.dtype == 'none' else 'one'} element type")
        args["dtype"] = canonical_dtype(types[0])
    elif spec.dtype == "required":
        raise ValueError(f"'{opcode}' needs an element type suffix, e.g. {opcode}.f32")
    given: dict = {}
    for t in toks[1:]:
        if "=" not in t:
            if opcode in ("set_flag", "wait_flag") and "->" in t:
                a, b = t.split("->")
                given["src_pipe"], given["dst_pipe"] = canonical_pipe(a), canonical_pipe(b)
                continue
            if opcode == "pipe_barrier" and "pipe" not in given:
                given["pipe"] = canonical_pipe(t)
                continue
            raise ValueError(f"expected key=value, got '{t}'")
        k, v = t.split("=", 1)
        if k == "id" and opcode in ("set_flag", "wait_flag"):
            k = "event_id"
        if k in ("blk", "rep"):
            names = spec.blk if k == "blk" else spec.rep
            vals = v.split(",")
            if not names or len(vals) != len(names):
                raise ValueError(f"'{k}=' of {opcode} takes {len(names)} value(s): "
                                 f"{', '.join(names) or 'none'}")
            for n_, v_ in zip(names, vals):
                given[n_] = parse_expr(v_)
            continue
        if k not in spec.kinds:
            raise ValueError(f"'{opcode}' has no operand '{k}' (operands: {', '.join(spec.fields)})")
        if k in given:
            raise ValueError(f"operand '{k}' given twice")
        kind = spec.kinds[k]
        if kind.startswith("enum:"):
            if v not in kind[5:].split("|"):
                raise ValueError(f"'{k}' must be one of {kind[5:].replace('|', ', ')}, got '{v}'")
            given[k] = v
        elif kind == "pipe":
            given[k] = canonical_pipe(v)
        elif kind == "reg":
            if not re.fullmatch(r"%[A-Za-z_][\w.$]*", v):
                raise ValueError(f"'{k}' must be a scalar register %name, got '{v}'")
            given[k] = Var(v[1:])
        elif kind == "sym":
            if not re.fullmatch(r"@[\w.$]+", v):
                raise ValueError(f"'{k}' must be a symbol @name, got '{v}'")
            given[k] = v[1:]
        elif kind == "list":
            given[k] = tuple(parse_expr(x) for x in _split_top(v))
        else:
            given[k] = parse_expr(v)
    if opcode == "pipe_barrier" and "pipe" not in given:
        raise ValueError("pipe_barrier needs a pipe: pipe_barrier V")
    full = dict(spec.defaults)
    full.update(args)
    full.update(given)
    missing = [f for f in spec.fields if f not in full]
    if missing:
        raise ValueError(f"'{opcode}' is missing operand(s): {', '.join(missing)}")
    actual_pipe = _pipe_of(opcode, full)
    if pipe is not None and pipe != actual_pipe:
        raise ValueError(f"'{opcode}' runs on pipe {actual_pipe}, not {pipe}")
    return Instr(actual_pipe, opcode, full, origin)


# ---------------------------------------------------------------------------------------------
# Validation (static; the executor checks what depends on run-time values)
# ---------------------------------------------------------------------------------------------

def check_program(p: Program) -> list[tuple[object, str]]:
    """Static problems of a program as (node, message) pairs; empty when valid."""
    problems: list[tuple[object, str]] = []
    gm = {g.name for g in p.gm_args}
    scalars = {s.name for s in p.scalar_args}
    # Scalar registers are global: one set, filled in program order.
    _check_body(p.body, gm, scalars | {"block_idx", "block_num", "subblock_idx", "subblock_num"}, problems)
    return problems


def _check_body(body, gm, defined: set, problems):
    for n in body:
        if isinstance(n, Loop):
            for e in (n.start, n.stop, n.step):
                _check_vars(n, e, defined, problems)
            if is_const(n.step) and n.step == 0:
                problems.append((n, "loop step must not be 0"))
            defined.add(n.var)
            _check_body(n.body, gm, defined, problems)
        elif isinstance(n, If):
            _check_vars(n, n.cond, defined, problems)
            _check_body(n.then_body, gm, defined, problems)
            _check_body(n.else_body, gm, defined, problems)
        elif isinstance(n, While):
            _check_body(n.cond_body, gm, defined, problems)
            _check_vars(n, n.cond, defined, problems)
            _check_body(n.body, gm, defined, problems)
        elif isinstance(n, Instr):
            _check_instr(n, gm, defined, problems)
        else:
            problems.append((n, f"not a program node: {n!r}"))


def _check_vars(node, e, defined, problems):
    for v in sorted(expr_vars(e)):
        if v not in defined:
            problems.append((node, f"scalar %{v} is used before it is defined"))


def _check_instr(ins: Instr, gm, defined: set, problems):
    spec = OPCODES.get(ins.opcode)
    if spec is None:
        problems.append((ins, f"unknown opcode '{ins.opcode}'"))
        return
    a = ins.args
    for f in spec.fields:
        if f not in a:
            problems.append((ins, f"'{ins.opcode}' is missing operand '{f}'"))
            return
    if spec.dtype == "required" and not a.get("dtype"):
        problems.append((ins, f"'{ins.opcode}' needs an element type"))
    if a.get("dtype") and a["dtype"] not in DTYPE_SIZES:
        problems.append((ins, f"unknown element type '{a['dtype']}'"))
    if spec.family == "conv" and a.get("src_dtype") not in DTYPE_SIZES:
        problems.append((ins, "vconv needs a source element type"))
    try:
        want = _pipe_of(ins.opcode, a)
    except KeyError:
        want = None
    if want is not None and ins.pipe != want:
        problems.append((ins, f"'{ins.opcode}' runs on pipe {want}, not {ins.pipe}"))
    for f in spec.fields:
        kind = spec.kinds.get(f, "int")
        v = a[f]
        if kind == "gm":
            if not isinstance(v, GmAddr):
                problems.append((ins, f"operand '{f}' must be a GM address @arg[+offset]"))
            elif v.arg not in gm:
                problems.append((ins, f"unknown GM argument @{v.arg}"))
            else:
                _check_vars(ins, v.offset, defined, problems)
        elif kind == "reg":
            if not isinstance(v, Var):
                problems.append((ins, f"operand '{f}' must be a scalar register"))
        elif kind == "pipe":
            if v not in PIPES and not (f == "pipe" and v == "ALL"):
                problems.append((ins, f"operand '{f}': unknown pipe '{v}'"))
        elif kind.startswith("enum:"):
            if v not in kind[5:].split("|"):
                problems.append((ins, f"operand '{f}' must be one of {kind[5:]}"))
        elif kind == "sym":
            if not isinstance(v, str):
                problems.append((ins, f"operand '{f}' must be a symbol"))
        elif kind == "list":
            for x in v:
                _check_vars(ins, x, defined, problems)
        else:
            if isinstance(v, GmAddr):
                problems.append((ins, f"operand '{f}' is a UB operand, not a GM address"))
            else:
                _check_vars(ins, v, defined, problems)
        if kind == "int" and is_const(v):
            if isinstance(v, float):
                problems.append((ins, f"operand '{f}' must be an integer"))
            elif v < 0 and f not in ("hi", "lo"):
                problems.append((ins, f"operand '{f}' must not be negative"))
            elif f == "repeat" and v > 255:
                problems.append((ins, f"repeat {v} exceeds REPEAT_MAX 255"))
            elif f == "event_id" and v >= EVENT_IDS:
                problems.append((ins, f"event id {v} out of range 0..{EVENT_IDS - 1}"))
    if spec.family in ("copy_in",) and is_const(a["right_pad"]) and a["right_pad"] and not a.get("dtype"):
        problems.append((ins, "right_pad needs an element type (copy_gm_to_ubuf.T)"))
    if ins.opcode in ("set_flag", "wait_flag") and a.get("src_pipe") == a.get("dst_pipe"):
        problems.append((ins, f"{ins.opcode} needs two different pipes"))
    for f in spec.fields:
        if spec.kinds.get(f) == "reg" and isinstance(a[f], Var):
            defined.add(a[f].name)


def validate_program(p: Program) -> None:
    """Raise :class:`ProgramSyntaxError` for the first static problem of ``p``."""
    problems = check_program(p)
    if problems:
        node, msg = problems[0]
        raise ProgramSyntaxError(msg, "<program>", getattr(node, "line", 0))
