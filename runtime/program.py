"""The a2a3 *program*: a lowered function decoded once for the executor and the barrier pass.

A :class:`Program` is what :func:`program_of` reads out of a module after pto-lower-a2a3 and
a2a3-complete-barriers (DESIGN.md §2, "program" level; on ascend950 after pto-lower-vf's
emission) and what the NumPy executor (``runtime/executor.py``), the cycle model
(``runtime/cycles.py``) and a2a3-complete-barriers consume.  It is a tree: a body of
:class:`Instr` (one ``a2a3`` op, reference/vector_isa.md §1; its operand fields, pipes and
defaults are dialects/a2a3.py's table), :class:`Loop` (an ``scf.for`` the scalar unit runs; its
body is issued once per trip), :class:`While` (``scf.while``) and :class:`If` (``scf.if``).

Operands are numbers, GM addresses (:class:`GmAddr`) or *slots*: every SSA value the scalar
unit computes gets a slot, a key of the scalar environment (the names ``%block_idx``,
``%block_num``, ``%subblock_idx`` and ``%subblock_num`` are predefined; a kernel scalar, loop
variable or register keeps its name, an ``arith`` result is ``#N``).  An instruction carries the
``arith`` ops its slots need as *steps* (``(fn, slot, operand, ...)``, in order), run when the
scalar unit issues it (:func:`operands`); an ``arith`` op whose operands are all constants is
folded when decoding.  The listing of a lowered module (``ptoc --emit program``) is
``runtime/listing.py``'s; ``Program.to_text`` prints the function it was decoded from.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple, Union

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType, NameLoc

from pto_compiler.diagnostics import PtocError, location_of, op_error, value_name
from pto_compiler.dialects import a2a3, pto
from pto_compiler.dialects.a2a3 import OPCODES, PIPES, OpSpec
from pto_compiler.runtime.kernel_interface import _int_width, int_arith_function

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

PREDEFINED = ("block_idx", "block_num", "subblock_idx", "subblock_num")
"""Slots the executor fills before a block runs (the launch's values)."""


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
# The scalar unit's arithmetic: the integer arith ops it runs
# ---------------------------------------------------------------------------------------------

ARITH = {
    "addi": "+", "subi": "-", "muli": "*", "divsi": "/", "divui": "divui", "remsi": "%", "remui": "remui",
    "floordivsi": "floordiv", "ceildivsi": "ceildiv", "ceildivui": "ceildivui",
    "maxsi": "max", "maxui": "maxui", "minsi": "min", "minui": "minui", "andi": "&", "ori": "or", "xori": "xor",
    "shli": "shl", "shrsi": "ashr", "shrui": "lshr", "select": "select",
}
"""The integer arith ops the scalar unit runs -> the listing's operator or function name (``/`` and
``%`` as in C on signed values: the quotient rounded toward zero; ``floordiv`` rounds toward -inf;
``ashr`` shifts the sign in, ``lshr`` zeros, as C's ``>>`` on a signed and an unsigned operand; an
unsigned op keeps its arith name, so the listing tells it from the signed one)."""
_I1_WIDTH = IntegerType(1).width
ARITH_I1 = {"andi": "*", "ori": "max", "xori": "!="}
"""The listing's symbols of the logic ops on ``i1`` (0 or 1)."""
CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=", "ult": "ult", "ule": "ule",
        "ugt": "ugt", "uge": "uge"}
"""The listing's symbols of the integer compares: C's on signed values, the predicate's name on unsigned ones."""


def _cmp(f):
    return lambda a, b: int(f(a, b))


CMPF = {"oeq": (_cmp(operator.eq), "=="), "une": (_cmp(operator.ne), "!="), "olt": (_cmp(operator.lt), "<"),
        "ole": (_cmp(operator.le), "<="), "ogt": (_cmp(operator.gt), ">"), "oge": (_cmp(operator.ge), ">=")}
"""The float compares of the scalar unit (TCMP/TCMPS): (Python's on floats, IEEE: a NaN operand
makes only ``!=`` hold, as ``une``; the ordered ones false; the listing's symbol)."""
CASTS = ("index_cast", "index_castui", "extsi", "extui", "trunci")
"""Casts the scalar unit computes (one that keeps every value is its operand; the listing prints
another as ``trunci.i8(x)``)."""
SALU = {"addf": "sadd", "subf": "ssub", "mulf": "smul", "divf": "sdiv", "maximumf": "smax", "minimumf": "smin",
        "maxnumf": "smax", "minnumf": "smin"}
"""Float arith -> the scalar-unit ALU instruction that computes it (a register it writes)."""


def arith_symbol(op) -> str | None:
    """The listing's operator or function name of an integer ``arith`` op the scalar unit runs, or None."""
    name = op.name[6:]
    if name == "cmpi":
        return CMPI[arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]]
    if name == "cmpf":
        entry = CMPF.get(arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data])
        return None if entry is None else entry[1]
    if name in ARITH_I1 and getattr(op.results[0].type, "width", None) == _I1_WIDTH:
        return ARITH_I1[name]
    return ARITH.get(name)


def arith_function(op):
    """The function on Python numbers of an integer ``arith`` op the scalar unit runs, as arith
    defines it (the result wrapped to its width: ``kernel_interface.int_arith_function``); the
    identity for a cast that keeps every value; a float compare: ``CMPF``'s; None for another op."""
    name = op.name[6:]
    if name in CASTS:
        return _identity if keeps_value(op) else int_arith_function(op)
    if name == "cmpf":
        entry = CMPF.get(arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data])
        return None if entry is None else entry[0]
    return None if arith_symbol(op) is None else int_arith_function(op)


def keeps_value(op) -> bool:
    """A cast whose result equals its (signed) operand: a sign extension, a widening index_cast,
    a zero extension of an i1."""
    name = op.name[6:]
    src, dst = _int_width(op.operands[0].type), _int_width(op.results[0].type)
    return name == "extsi" or (name == "index_cast" and dst >= src) or (name in ("extui", "index_castui") and src == 1)


def _identity(x):
    return x


def is_slot(x) -> bool:
    return type(x) is str


def run_steps(steps, env: dict) -> None:
    """Runs ``(fn, slot, operand...)`` steps in order, each writing its slot in ``env``."""
    for fn, dst, *xs in steps:
        env[dst] = fn(*[env[x] if type(x) is str else x for x in xs])


def scalar(x, env: dict):
    """The value of an operand: a number, or the value of its slot."""
    return env[x] if type(x) is str else x


def depends(steps, slot, var: str) -> tuple[bool, bool]:
    """(does ``slot`` depend on slot ``var``, is it affine in it) over ``steps``."""
    info: dict = {var: (True, True)}

    def of(x):
        return info.get(x, (False, True)) if type(x) is str else (False, True)

    for fn, dst, *xs in steps:
        a = [of(x) for x in xs]
        dep = any(d for d, _ in a)
        fn = getattr(fn, "__wrapped__", fn)  # 64-bit arith wraps only beyond any GM offset
        if not dep or fn in (operator.add, operator.sub):
            aff = all(f for _, f in a)
        elif fn is operator.mul:
            aff = (not a[0][0] and a[1][1]) or (not a[1][0] and a[0][1])
        else:
            aff = False
        info[dst] = (dep, aff)
    return of(slot)


# ---------------------------------------------------------------------------------------------
# The program tree
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GmAddr:
    """A GM byte address: kernel argument ``arg`` plus a byte offset (a number or a slot)."""
    arg: str
    offset: object = 0


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
    (and ``src_dtype`` for vconv) when the opcode has an element type; a register it writes is
    the register's slot.  ``dyn`` lists the operands whose value is a slot's (``(field, slot)``,
    ``((field, i), slot)`` for an element of a list, a GM field's offset by the field) and
    ``steps`` the arith that computes those slots (:func:`operands`)."""
    pipe: str
    opcode: str
    args: dict
    origin: Origin | None = None
    dyn: tuple = ()
    steps: tuple = ()

    def __post_init__(self):
        self.spec: OpSpec = OPCODES[self.opcode]
        """The opcode's row, looked up once (the executor asks for it several times per issue; a
        cached_property's first access takes a lock)."""

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
        if opcode not in OPCODES:
            raise ValueError(f"unknown opcode '{opcode}'")
        if dtype is not None:
            dtype = canonical_dtype(dtype)
        for k in ("src_pipe", "dst_pipe", "pipe"):
            if k in args and isinstance(args[k], str):
                args[k] = canonical_pipe(args[k])
        if origin is not None and not isinstance(origin, Origin):
            origin = Origin(*origin)
        return cls(*complete(opcode, dtype, args), origin)

    def to_text(self, depth: int = 0, origin: bool = True, args: dict | None = None) -> str:
        """The instruction's listing line (``args``: its operands as issued; ``origin=False``:
        without the comment)."""
        from pto_compiler.runtime.listing import instr_line

        return instr_line(self.spec, self.pipe, self.args if args is None else args, _value_text, depth,
                          self.origin if origin else None)

    def __str__(self) -> str:
        return self.to_text(0, False).strip()


def _value_text(v, hexints: bool) -> str:
    from pto_compiler.runtime.listing import number_text

    return f"%{v}" if type(v) is str else number_text(v, hexints)


def operands(ins: Instr, env: dict) -> dict:
    """The instruction's operands as the scalar unit issues it with ``env`` (KeyError: a slot
    it reads has no value)."""
    if not ins.dyn:
        return ins.args
    run_steps(ins.steps, env)
    a = dict(ins.args)
    for f, slot in ins.dyn:
        v = env[slot]
        if type(f) is tuple:
            f, i = f
            a[f] = a[f][:i] + (v,) + a[f][i + 1:]
        elif type(a[f]) is GmAddr:
            a[f] = GmAddr(a[f].arg, v)
        else:
            a[f] = v
    return a


@dataclass(eq=False)
class Loop:
    """``for var in range(start, stop, step)``, run by the scalar unit; the bounds are numbers or
    slots, computed by ``steps``; ``bound``: the most trips a run-time ``stop`` allows."""
    var: str
    start: object
    stop: object
    step: object
    body: list = field(default_factory=list)
    origin: Origin | None = None
    steps: tuple = ()
    bound: int | None = None

    def bounds(self, env: dict) -> tuple:
        run_steps(self.steps, env)
        return scalar(self.start, env), scalar(self.stop, env), scalar(self.step, env)


@dataclass(eq=False)
class If:
    """``if cond != 0: then_body else: else_body``, run by the scalar unit."""
    cond: object
    then_body: list = field(default_factory=list)
    else_body: list = field(default_factory=list)
    origin: Origin | None = None
    steps: tuple = ()

    def test(self, env: dict):
        run_steps(self.steps, env)
        return scalar(self.cond, env)


@dataclass(eq=False)
class While:
    """``scf.while``, run by the scalar unit: ``cond_body``, then while ``cond != 0`` the
    ``body`` and ``cond_body`` again (the registers ``cond_body`` writes carry the values)."""
    cond_body: list
    cond: object
    body: list = field(default_factory=list)
    origin: Origin | None = None
    steps: tuple = ()

    test = If.test


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
    fn: object = None
    """The lowered ``func.func`` it was decoded from (its listing is ``to_text``)."""
    scalars: dict | None = None
    """The kernel scalars the GM shapes were sized with."""

    def to_text(self) -> str:
        """The listing of the lowered function (runtime/listing.py)."""
        from pto_compiler.runtime.listing import function_listing
        from pto_compiler.targets import lookup_target

        return function_listing(self.fn, lookup_target(self.target), self.scalars)

    def walk(self) -> Iterator[tuple[Node, int]]:
        """Every node in program order with its loop depth (loops before their bodies)."""
        yield from _walk(self.body, 0)

    def instructions(self) -> list[Instr]:
        """Every instruction in program order (a straight-line body is its own list)."""
        if all(type(n) is Instr for n in self.body):
            return list(self.body)
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


def origin_of(op) -> Origin:
    """Where an op comes from: its source position and the tile op a lowered op was made for (its
    NameLoc), else its own name."""
    f, line, col = location_of(op)
    loc = op.location
    return Origin(f, line, col, loc.desc.data if isinstance(loc, NameLoc) else op.name)


def complete(opcode: str, dtype: str | None, args: dict) -> tuple[str, str, dict]:
    """(pipe, opcode, every operand): the omitted ones are the table's defaults."""
    full = {**OPCODES[opcode].defaults, **args}
    if dtype is not None:
        full["dtype"] = dtype
    return _pipe_of(opcode, full), opcode, full


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
# Reading a lowered function
# ---------------------------------------------------------------------------------------------

class FunctionReader:
    """Walks a lowered function in program order: ``a2a3`` ops, the ``arith`` the scalar unit
    computes (integer arith as values, float arith as scalar-ALU instructions writing a
    register), ``scf`` with the values it carries in registers (``smov`` at entry and at each
    yield).  Names the registers and loop variables.  :class:`Decoder` makes the
    :class:`Program`, runtime/listing.py the listing; each says what a value is
    (:meth:`computed`) and what a node is (:meth:`emit`, :meth:`begin`, :meth:`end`)."""

    def __init__(self, fn, target, scalars=None):
        from pto_compiler.runtime.kernel_interface import gm_shape, kernel_args

        self.fn, self.target, self.scalars = fn, target, scalars
        self.names: set = set(PREDEFINED)
        self.counter = 0
        self.vals: dict = {}
        """SSA value -> a number or what the reader makes of it (a slot, an op to print)."""
        self.gm: dict = {}
        """SSA value of a GM pointer argument -> the argument's name."""
        self.origin: Origin | None = None
        self.op = None
        self._origins: dict = {}
        """id of a location -> (the location, its Origin): a tile op's many a2a3 ops share one."""
        self.gm_args: list[GmArg] = []
        self.scalar_args: list[ScalarArg] = []
        specs = kernel_args(fn)
        self.names.update(s.name for s in specs)
        for s in specs:
            if s.kind == "gm":
                try:
                    shape = gm_shape(fn, s, scalars)
                except PtocError:  # a shape only the run knows: the listing shows 0
                    shape = (0,)
                self.gm_args.append(GmArg(s.name, canonical_dtype(pto.dtype_name(s.type.element_type)),
                                          tuple(int(d) for d in shape)))
                self.gm[s.value] = s.name
            elif s.kind == "scalar":
                self.scalar_args.append(ScalarArg(s.name, scalar_dtype(fn, s)))
                self.vals[s.value] = s.name
            elif s.kind != "vector":  # a vector<> argument: only tmrgsort's executed list, never read
                raise op_error(fn, f"has an L1 tile argument '%{s.name}'; run pto-bufferize before "
                                   "the a2a3 lowering")

    # ---- what the subclass makes -------------------------------------------------------------
    def computed(self, op, fn, values: list):
        """What an integer arith op with a non-constant operand is."""
        raise NotImplementedError

    def emit(self, opcode: str, dtype, args: dict, op=None) -> None:
        """One instruction (``op``: the a2a3 op it is, None for a register move of ``scf``)."""
        raise NotImplementedError

    def begin(self, kind: str, op, **fields) -> None:
        """A loop (``var start stop step``), if (``cond``) or while starts; ``begin("else")`` /
        ``begin("do", cond=...)`` start the else branch / the body of a while."""
        raise NotImplementedError

    def end(self, kind: str) -> None:
        raise NotImplementedError

    # ---- naming ----------------------------------------------------------------------------
    def fresh(self, stem: str) -> str:
        while True:
            name = f"{stem}{self.counter}"
            self.counter += 1
            if name not in self.names:
                self.names.add(name)
                return name

    def register(self, v, stem: str) -> str:
        """The name of a register holding ``v`` (its own name unless taken)."""
        name = stem if stem not in self.names else self.fresh(stem)
        self.names.add(name)
        self.vals[v] = name
        return name

    def fail(self, message: str, op=None):
        raise op_error(op or self.op, message)

    # ---- values ------------------------------------------------------------------------------
    def value(self, v):
        got = self.vals.get(v)
        if got is None:

            if isinstance(v.owner, arith.ConstantOp):
                try:
                    got = self.vals[v] = constant_value(v.owner)
                except ValueError as e:
                    self.fail(f"has no {self.target.name} lowering: {e}", v.owner)
            else:

                self.fail(f"operand {value_name(v)} has no value the {self.target.name} program knows")
        return got

    # ---- walking -----------------------------------------------------------------------------
    def run(self):
        self.block(self.fn.body.blocks[0])
        return self

    def block(self, block) -> list | None:
        """Reads the ops of a block; returns the operands of its terminator."""

        for op in block.ops:
            if isinstance(op, (scf.YieldOp, func.ReturnOp, scf.ConditionOp)):
                return list(op.operands)
            saved = (self.origin, self.op)
            self.set_origin(op)
            try:
                self.read(op)
            finally:
                self.origin, self.op = saved
        return None

    def set_origin(self, op):
        loc = op.location
        got = self._origins.get(id(loc))
        if got is None or got[0] is not loc:
            got = self._origins[id(loc)] = (loc, origin_of(op))
        self.origin = got[1]
        self.op = op

    def read(self, op):
        if isinstance(op, a2a3.A2A3Op):
            return self.instr(op)
        name = op.name
        if name.startswith("arith."):
            return self.arith(op)
        if isinstance(op, scf.ForOp):
            return self.loop(op)
        if isinstance(op, scf.IfOp):
            return self.if_(op)
        if isinstance(op, scf.WhileOp):
            return self.while_(op)
        if name in _LAUNCH:
            self.vals[op.results[0]] = name.removeprefix("pto.get_")  # the launch's values
        # tile allocations, views and event-id arrays: the lowering has used them

    def instr(self, op):
        spec = op.SPEC
        args: dict = {}
        value = self.value
        operands = tuple(op.operands)
        for f, kind, at in _fields(type(op)):
            if at is not None:
                args[f] = value(operands[at])
            elif kind == "reg":
                res = op.results[0]
                args[f] = self.register(res, res.name_hint or "s")
            elif kind == "list":
                args[f] = tuple(value(v) for v in op.args)
            elif kind == "gm":
                ptr, off = op.field_value(f)
                if ptr not in self.gm:
                    self.fail(f"GM operand {f} is not a kernel argument")
                args[f] = GmAddr(self.gm[ptr], value(off))
            elif kind in ("pipe", "sym") or kind.startswith("enum:"):
                v = op.field_value(f)
                if v is not None:
                    args[f] = v
            else:  # after a list
                args[f] = value(getattr(op, f))
        p = op.properties
        if "src_dtype" in p:
            args["src_dtype"] = _dtype(p["src_dtype"])
        self.emit(spec.name, _dtype(p.get("dtype")), args, op)

    def arith(self, op):
        name = op.name[6:]
        if name == "constant":
            return  # its number when an operand needs it
        values = [self.value(v) for v in op.operands]
        fn = arith_function(op)
        if fn is _identity:
            self.vals[op.results[0]] = values[0]
        elif fn is not None:
            if any(is_slot(x) or not isinstance(x, (int, float)) for x in values):
                self.vals[op.results[0]] = self.computed(op, fn, values)
            else:
                self.vals[op.results[0]] = fn(*values)
        elif name in SALU:
            reg = self.fresh("f")
            self.emit(SALU[name], canonical_dtype(pto.dtype_name(op.results[0].type)),
                      {"dst": reg, "src0": values[0], "src1": values[1]}, op)
            self.vals[op.results[0]] = reg
        else:
            self.fail(f"has no {self.target.name} lowering: arith op '{name}' on scalars is not supported by "
                      "the scalar unit model")

    # ---- scf ---------------------------------------------------------------------------------
    def carried(self, values) -> list:
        """A register per non-tile value an scf op carries (None for a tile: tiles share a buffer)."""

        return [None if isinstance(v.type, pto.TileLikeType) else self.fresh("v") for v in values]

    def move(self, dst: str, src) -> None:
        self.emit("smov", None, {"dst": dst, "src": src})

    def yields(self, values, regs) -> None:
        """The registers ``regs`` take ``values`` (a parallel copy through temporaries)."""
        tmps = []
        for v, reg in zip(values, regs):
            if reg is not None:
                tmp = self.fresh("t")
                self.move(tmp, self.value(v))
                tmps.append((reg, tmp))
        for reg, tmp in tmps:
            self.move(reg, tmp)

    def bind(self, values, regs) -> None:
        for v, reg in zip(values, regs):
            if reg is not None:
                self.vals[v] = reg

    def loop(self, op):
        lb, ub, step = (self.value(v) for v in (op.lb, op.ub, op.step))
        body = op.body.blocks[0]
        iv = body.args[0]
        regs = self.carried(op.iter_args)
        for init, reg in zip(op.iter_args, regs):
            if reg is not None:
                self.move(reg, self.value(init))
        stem = iv.name_hint or "i"
        var = self.fresh(stem) if stem in self.names else stem
        self.names.add(var)
        self.vals[iv] = var
        self.bind(body.args[1:], regs)
        bound = op.attributes[a2a3.MAX_TRIPS].value.data if a2a3.MAX_TRIPS in op.attributes else None
        self.begin("loop", op, var=var, start=lb, stop=ub, step=step, bound=bound)
        self.yields(self.block(body) or [], regs)
        self.end("loop")
        self.bind(op.res, regs)

    def if_(self, op):
        cond = self.value(op.cond)
        regs = self.carried(op.output)
        self.begin("if", op, cond=cond)
        for k, region in enumerate((op.true_region, op.false_region)):
            if k:
                self.begin("else", op)
            if region.blocks:
                self.yields(self.block(region.blocks[0]) or [], regs)
        self.end("if")
        self.bind(op.output, regs)

    def while_(self, op):
        before, after = op.before_region.block, op.after_region.block
        if any(isinstance(v.type, pto.TileLikeType) for v in (*op.arguments, *op.res)):
            self.fail(f"has no {self.target.name} lowering: a tile carried through scf.while (use the tile by "
                      "name; carry scalars only)")
        regs, passed = self.carried(op.arguments), self.carried(op.res)
        for init, reg in zip(op.arguments, regs):
            self.move(reg, self.value(init))
        self.begin("while", op)
        self.bind(before.args, regs)
        cond, *values = self.block(before)
        cond = self.value(cond)
        self.yields(values, passed)
        self.begin("do", op, cond=cond)
        self.bind(after.args, passed)
        self.yields(self.block(after) or [], regs)
        self.end("while")
        self.bind(op.res, passed)


_LAUNCH = ("pto.get_block_idx", "pto.get_block_num", *pto.SUBBLOCK)
"""The ops that read the launch's values (kept by the lowering, read as the predefined slots)."""


@functools.cache
def _fields(cls) -> tuple:
    """(field, kind, index of its operand or None) of an a2a3 op class, in ISA order: a field that is
    one operand of its own is read by position (the ops' operands are their fields in order; a GM
    field is two, a list any number)."""
    out, at = [], 0
    for f in cls.SPEC.fields:
        kind = cls.SPEC.kinds[f]
        own = kind not in ("reg", "pipe", "sym", "list", "gm") and not kind.startswith("enum:")
        out.append((f, kind, at if own else None))
        if at is not None and kind not in ("reg", "pipe", "sym") and not kind.startswith("enum:"):
            at = None if kind == "list" else at + (2 if kind == "gm" else 1)
    return tuple(out)


@functools.cache
def _operand_fields(opcode: str) -> tuple:
    """(field, kind) of the fields of ``opcode`` whose value may be a slot."""
    spec = OPCODES[opcode]
    return tuple((f, k) for f, k in spec.kinds.items() if k not in ("reg", "pipe", "sym") and not k.startswith("enum:"))


def scalar_dtype(fn, spec) -> str:
    """The program dtype of a scalar kernel argument: index and i1 (a condition, 0 or 1) travel
    as i64; a type no scalar register holds (f64, ...) is a located error."""


    t = spec.type
    if isinstance(t, IndexType) or (isinstance(t, IntegerType) and t.width.data == 1):
        return "i64"
    try:
        return canonical_dtype(pto.dtype_name(t))
    except ValueError:
        raise op_error(fn, f"scalar argument '%{spec.name}' has type {t}, which no scalar register "
                           f"holds (use {', '.join(sorted(DTYPE_SIZES))})") from None


def _dtype(t) -> str | None:

    return None if t is None else canonical_dtype(pto.dtype_name(t))


def constant_value(op):
    """The number of an ``arith.constant`` (an ``i1`` as 0 or 1, a float rounded to its type);
    ValueError for a constant no scalar register holds."""
    from pto_compiler.runtime.element_types import holds_exactly
    from pto_compiler.runtime.kernel_interface import float_name

    attr = op.value
    if isinstance(attr, IntegerAttr):
        w = getattr(getattr(op.result.type, "width", None), "data", None)
        return attr.value.data & 1 if w == 1 else attr.value.data
    if isinstance(attr, FloatAttr):
        v, name = float(attr.value.data), float_name(op.result.type)
        if name is None or holds_exactly(v, name):
            return v
        from pto_compiler.runtime import elementwise as E

        return float(E.scalar_to(v, E.np_dtype(name)).astype("float64"))
    raise ValueError("non-scalar constant")


class Decoder(FunctionReader):
    """A lowered function -> its :class:`Program`; ``op_of`` maps each node to its op."""

    def __init__(self, fn, target, scalars=None):
        super().__init__(fn, target, scalars)
        self.body: list = []
        self.stack: list = []
        self.op_of: dict = {}
        self.defs: dict = {}
        """slot of an arith result -> its step."""

    def computed(self, op, fn, values):
        slot = f"#{len(self.defs)}"
        self.defs[slot] = (fn, slot, *values)
        return slot

    def steps(self, values) -> tuple:
        """The steps that compute the slots of ``values``, in order."""
        out: list = []
        seen: set = set()

        def visit(x):
            step = self.defs.get(x)
            if step is None or x in seen:
                return
            seen.add(x)
            for y in step[2:]:
                if type(y) is str:
                    visit(y)
            out.append(step)

        for x in values:
            if type(x) is str:
                visit(x)
        return tuple(out)

    def emit(self, opcode, dtype, args, op=None):
        ins = Instr(*complete(opcode, dtype, args), self.origin)
        a = ins.args
        dyn = []
        for f, kind in _operand_fields(opcode):
            v = a[f]
            if kind == "list":
                dyn += [((f, i), x) for i, x in enumerate(v) if type(x) is str]
            elif kind == "gm":
                if type(v.offset) is str:
                    dyn.append((f, v.offset))
            elif type(v) is str:
                dyn.append((f, v))
        if dyn:
            ins.dyn = tuple(dyn)
            ins.steps = self.steps(s for _, s in dyn)
        self.body.append(ins)
        if op is not None:
            self.op_of[id(ins)] = op

    def begin(self, kind, op, **f):
        if kind == "loop":
            node = Loop(f["var"], f["start"], f["stop"], f["step"], [], self.origin,
                        self.steps((f["start"], f["stop"], f["step"])), f["bound"])
        elif kind == "if":
            node = If(f["cond"], [], [], self.origin, self.steps((f["cond"],)))
        elif kind == "while":
            node = While([], 0, [], self.origin)
        elif kind == "else":
            self.body = self.stack[-1][1].else_body
            return
        else:  # "do": the while's condition is known, its body follows
            node = self.stack[-1][1]
            node.cond, node.steps = f["cond"], self.steps((f["cond"],))
            self.body = node.body
            return
        self.body.append(node)
        self.op_of[id(node)] = op
        self.stack.append((self.body, node))
        self.body = node.cond_body if kind == "while" else node.then_body if kind == "if" else node.body

    def end(self, kind):
        self.body, _ = self.stack.pop()

    def program(self) -> Program:
        return Program(target=self.target.name, gm_args=self.gm_args, body=self.body,
                       scalar_args=self.scalar_args, name=self.fn.sym_name.data, fn=self.fn,
                       scalars=self.scalars)


def program_of(module, target, entry: str | None = None, scalars: dict | None = None) -> Program:
    """The program of a lowered module's entry function (after a2a3-complete-barriers)."""
    from pto_compiler.runtime.kernel_interface import select_entry

    return Decoder(select_entry(module, entry), target, scalars).run().program()
