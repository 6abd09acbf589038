"""The a2a3 *program*: per-pipe micro-instruction streams, decoded from a lowered module, and its listing.

A :class:`Program` is what ``passes/lower_a2a3.program_of`` reads out of a module after
pto-lower-a2a3 and a2a3-complete-barriers (DESIGN.md §2, "program" level) and what the NumPy
executor (``runtime/executor.py``) and the cycle model (``runtime/cycles.py``) consume.  It is a
tree: a body of :class:`Instr` (one ``a2a3`` op, reference/vector_isa.md §1; its operand fields,
pipes and defaults are dialects/a2a3.py's table), :class:`Loop` (a scalar loop the scalar unit
runs; its body is issued once per trip), :class:`While` (``scf.while``) and :class:`If`.  Operands
are numbers, GM addresses (:class:`GmAddr`) or expressions over scalar registers and loop
variables (:class:`Var`), evaluated when the scalar unit issues the instruction; ``%block_idx``,
``%block_num``, ``%subblock_idx`` and ``%subblock_num`` are predefined.

The listing (``ptoc --emit program``, :func:`format_program`) prints a program for people and
for lit tests; nothing reads it back (tests write programs as a2a3 MLIR).  A program starts with
its header::

    .kernel @softmax target=a2a3
    .gm @x f32[64,256]
    .scalar %n i32

then one instruction per line, ``PIPE OPCODE[.DTYPE] ARG ARG ...  ; FILE:LINE:COL OPNAME``:

* ``PIPE`` is left-aligned in a 5-character column; ``vconv.f32.f16`` converts f32 (src) to f16
  (dst), as the CCE intrinsic ``vconv_f322f16`` is spelled.
* ``ARG`` is ``key=value``: UB addresses and masks in hex, counts in decimal, GM addresses
  ``@arg+OFFSET``, expressions without blanks (``0x1000+0x400*%i``, ``min(240,%n-%r)``).
* ``blk=1,1,0`` lists the block strides of the operands that have one, in operand order, and
  ``rep=8,8,1`` the repeat strides.
* ``set_flag MTE2->V id=0`` is in the source pipe's column, ``wait_flag`` in the destination's,
  ``pipe_barrier ALL`` in the ``S`` column.
* The trailing comment is the origin: the tile op the instruction was lowered from.

Loops and conditionals::

    S    loop %i = 0 to 2 step 1 {
    V      vmax.f32 dst=0x0+0x7800*%i src0=... repeat=240 blk=1,1,0 rep=8,8,1  ; t.pto:12:3 pto.trowexpandmax
    S    }

ascend950 programs launch vector functions: ``V    vf_call callee=@k_texp_2 args=0x100,%n`` runs
``vf.func @k_texp_2`` (dialects/vf.py) on the UB.  The program carries the lowered module's
``vf.func`` ops it launches (``Program.vf_funcs``); the listing prints each after the header as a
``.vf @name`` line followed by the function's MLIR, indented by two spaces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple, Union

from pto_compiler.dialects.a2a3 import OPCODES, PIPES, OpSpec

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


@dataclass(eq=False)
class If:
    """``if cond != 0: then_body else: else_body``, run by the scalar unit."""
    cond: Expr
    then_body: list = field(default_factory=list)
    else_body: list = field(default_factory=list)
    origin: Origin | None = None


@dataclass(eq=False)
class While:
    """``scf.while``, run by the scalar unit: ``cond_body``, then while ``cond != 0`` the
    ``body`` and ``cond_body`` again (the registers ``cond_body`` writes carry the values)."""
    cond_body: list
    cond: Expr
    body: list = field(default_factory=list)
    origin: Origin | None = None


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
