"""The kernel's interface, known before any run: which function is the entry, its arguments, the
shapes of its GM arguments, and the integer ``arith`` those shapes are computed with.

NumPy-free: the compile path (pto-lower-a2a3, pto-lower-vf) reads the interface, and NumPy costs
0.09 s of start-up; an argument's NumPy dtype is made when a run first asks for it.  The golden
model (runtime/reference.py) evaluates the rest of ``arith`` (floats) with NumPy.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, MemRefType, ModuleOp, Signedness, VectorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from pto_compiler.diagnostics import Diagnostic, PtocError, op_error
from pto_compiler.dialects import pto
from pto_compiler.runtime import pipes
from pto_compiler.runtime.element_types import FLOAT_NAMES, canonical_name


def usage_error(message: str) -> PtocError:
    """A usage/I-O error (exit 2), not located in the source."""
    return PtocError([Diagnostic(message)], exit_code=2)


def _int_width(t) -> int | None:
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType):
        return t.width.data
    return None


DEFAULT_MAX_STEPS = 5_000_000
"""Issued instructions plus loop trips a run may take (``ptoc --max-steps``; the executor and the
golden model count alike): far above any real kernel (the examples take < 20,000), low enough
that a runaway loop stops within minutes."""


def _is_unsigned(t) -> bool:
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED


def _norm_int(v: int, t) -> int:
    """Wrap a Python int into type t: signed range for index/signless/signed, unsigned for ui, 0/1 for i1."""
    w = _int_width(t)
    v = int(v) & ((1 << w) - 1)
    if w == 1:
        return v
    if not _is_unsigned(t) and v >= 1 << (w - 1):
        v -= 1 << w
    return v


def _as_unsigned(v: int, w: int) -> int:
    return int(v) & ((1 << w) - 1)


def _as_signed(v: int, w: int) -> int:
    v = _as_unsigned(v, w)
    return v - (1 << w) if w > 1 and v >= 1 << (w - 1) else v


_INT_BINARY = frozenset((
    "addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "ceildivsi", "ceildivui", "floordivsi", "andi", "ori",
    "xori", "shli", "shrsi", "shrui", "maxsi", "minsi", "maxui", "minui"))


def divsi(a: int, b: int) -> int:
    """``arith.divsi``: the quotient rounded toward zero (Python's ``//`` rounds toward -inf)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def remsi(a: int, b: int) -> int:
    """``arith.remsi``: the remainder of :func:`divsi`, with the dividend's sign."""
    return a - b * divsi(a, b)


def ceildivsi(a: int, b: int) -> int:
    """``arith.ceildivsi``: the quotient rounded toward +inf."""
    return -((-a) // b)


def _int_binary(name: str, a: int, b: int, w: int, t) -> int:
    sa, sb, ua, ub = _as_signed(a, w), _as_signed(b, w), _as_unsigned(a, w), _as_unsigned(b, w)
    if name == "addi":
        r = sa + sb
    elif name == "subi":
        r = sa - sb
    elif name == "muli":
        r = sa * sb
    elif name in ("divsi", "remsi", "ceildivsi", "floordivsi", "divui", "remui", "ceildivui"):
        if (sb if name.endswith("si") else ub) == 0:
            raise ZeroDivisionError("integer division by zero")
        if name == "divsi":
            r = divsi(sa, sb)
        elif name == "remsi":
            r = remsi(sa, sb)
        elif name == "floordivsi":
            r = sa // sb
        elif name == "ceildivsi":
            r = ceildivsi(sa, sb)
        elif name == "divui":
            r = ua // ub
        elif name == "remui":
            r = ua % ub
        else:
            r = -((-ua) // ub)
    elif name == "andi":
        r = ua & ub
    elif name == "ori":
        r = ua | ub
    elif name == "xori":
        r = ua ^ ub
    elif name == "shli":
        r = ua << ub if ub < w else 0
    elif name == "shrui":
        r = ua >> ub if ub < w else 0
    elif name == "shrsi":
        r = sa >> min(ub, w - 1)
    elif name == "maxsi":
        r = max(sa, sb)
    elif name == "minsi":
        r = min(sa, sb)
    elif name == "maxui":
        r = max(ua, ub)
    elif name == "minui":
        r = min(ua, ub)
    else:
        raise NotImplementedError(name)
    return _norm_int(r, t)


_CMPI = arith.CMPI_COMPARISON_OPERATIONS
_CASTS = ("index_cast", "extsi", "trunci", "index_castui", "extui")
_RING = {"addi": operator.add, "subi": operator.sub, "muli": operator.mul, "andi": operator.and_, "ori": operator.or_,
         "xori": operator.xor}
"""Ops whose result modulo 2**width is that of their operands modulo 2**width: Python's on ints, wrapped."""


def _wrapping(fn, t):
    """``fn`` on ints of type ``t``, its result wrapped to ``t`` (the range test first: a wrap is
    rare).  Operands need not be wrapped: the result modulo 2**width does not depend on them."""
    w = _int_width(t)
    lo, hi = (0, (1 << w) - 1) if w == 1 or _is_unsigned(t) else (-(1 << (w - 1)), (1 << (w - 1)) - 1)

    def wrapped(a, b):
        r = fn(a, b)
        return r if lo <= r <= hi else _norm_int(r, t)

    if w == 64:  # affine in a loop variable as fn is, over any offset a GM can hold (runtime/program.depends)
        wrapped.__wrapped__ = fn
    return wrapped


def _select(c, a, b):
    return a if c else b


def int_arith_function(op: Operation):
    """The function on Python ints of an integer ``arith`` op (binary, ``cmpi``, ``select``, cast),
    as arith defines it: signed or unsigned operands as the op reads them, the result wrapped to
    its type's width.  None for any other op.  The golden model and the a2a3 executor both run
    kernel scalars through it."""
    name = op.name.split(".", 1)[1]
    rt = op.results[0].type if op.results else None
    if name in _RING and _int_width(rt) is not None:
        return _wrapping(_RING[name], rt)
    if name in _INT_BINARY:
        w = _int_width(rt)
        return None if w is None else lambda a, b: _int_binary(name, a, b, w, rt)
    if name == "cmpi":
        pred = _CMPI[op.predicate.value.data]
        ow = _int_width(op.operands[0].type)
        read = _as_unsigned if pred in ("ult", "ule", "ugt", "uge") else _as_signed
        rel = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
               "ge": operator.ge}[pred[1:] if pred[0] in "su" else pred]
        return lambda a, b: int(rel(read(a, ow), read(b, ow)))
    if name == "select":
        return _select
    if name in _CASTS:
        iw = _int_width(op.operands[0].type)
        read = _as_unsigned if name in ("index_castui", "extui") else _as_signed
        return lambda v: _norm_int(read(v, iw), rt)
    return None


def eval_int_arith(op: Operation, vals: list) -> list | None:
    """The results of an integer ``arith`` op (an integer constant, :func:`int_arith_function`'s
    ops) on the Python ints ``vals``; None for any other op."""
    if op.name == "arith.constant":
        attr = op.properties.get("value", op.attributes.get("value"))
        return [_norm_int(attr.value.data, op.results[0].type)] if isinstance(attr, IntegerAttr) else None
    fn = int_arith_function(op)
    return None if fn is None else [fn(*vals)]


# ---- entry selection and kernel arguments ------------------------------------------------


def _functions(module: ModuleOp) -> list[func.FuncOp]:
    """The module's functions (also those of nested modules; no need to walk their bodies)."""
    out = []
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            out.append(op)
        elif isinstance(op, ModuleOp):
            out.extend(_functions(op))
    return out


def _fname(f: func.FuncOp) -> str:
    return f.sym_name.data


def select_entry(module: ModuleOp, entry: str | None = None) -> func.FuncOp:
    """DESIGN.md §2: ``entry`` if named, else the function marked ``pto.entry``, else the only one,
    else the only public one."""
    funcs = [f for f in _functions(module) if f.body.blocks]
    if entry is not None:
        for f in funcs:
            if _fname(f) == entry:
                return f
        names = ", ".join(_fname(f) for f in funcs) or "none"
        raise usage_error(f"no function named '{entry}' (functions: {names})")
    marked = [f for f in funcs if "pto.entry" in f.attributes]
    if len(marked) == 1:
        return marked[0]
    if len(marked) > 1:
        raise usage_error("several functions are marked pto.entry ("
                          + ", ".join(_fname(f) for f in marked) + "); choose one with --entry")
    if len(funcs) == 1:
        return funcs[0]
    if not funcs:
        raise usage_error("the module has no function to run")
    public = [f for f in funcs if getattr(f.sym_visibility, "data", None) != "private"]
    if len(public) == 1:  # PTOAS: the private functions are helpers of the one public kernel
        return public[0]
    pair = pipes.peer_pair(module)
    if pair is not None:  # a cube and a vector kernel linked by a pipe: they run together
        return pair[0]
    raise usage_error("the module has several functions (" + ", ".join(_fname(f) for f in funcs)
                      + ") and none is marked pto.entry; choose one with --entry")


@dataclass
class ArgSpec:
    """One kernel argument: ``kind`` is ``gm``, ``tile``, ``scalar`` or ``vector`` (a by-value
    ``vector<NxiK>``, e.g. tmrgsort's executed list: an array of its shape, read by no op); ``elem``
    is its element type's name (``"f32"``; None for an index/integer scalar, a Python int)."""

    name: str
    index: int
    kind: str
    type: object
    elem: str | None
    value: SSAValue = field(repr=False)

    @functools.cached_property
    def dtype(self):
        """The NumPy dtype of ``elem`` (None for an integer scalar), made when a run first asks."""
        if self.elem is None:
            return None
        from pto_compiler.runtime.elementwise import np_dtype

        return np_dtype(self.elem)

    @property
    def is_int_scalar(self) -> bool:
        return self.kind == "scalar" and self.elem is None


def _arg_name(arg: BlockArgument) -> str:
    hint = arg.name_hint
    return hint if hint else f"arg{arg.index}"


def kernel_args(fn: func.FuncOp) -> list[ArgSpec]:
    specs = []
    seen: set[str] = set()
    for arg in fn.body.blocks[0].args:
        name = _arg_name(arg)
        if name in seen:
            name = f"arg{arg.index}"
        seen.add(name)
        t = arg.type
        if isinstance(t, pto.PtrType):
            specs.append(ArgSpec(name, arg.index, "gm", t, _elem(fn, name, t, pto.dtype_name(t.element_type)), arg))
        elif isinstance(t, pto.TileLikeType):
            specs.append(ArgSpec(name, arg.index, "tile", t, _elem(fn, name, t, t.dtype), arg))
        elif float_name(t) is not None:
            specs.append(ArgSpec(name, arg.index, "scalar", t, float_name(t), arg))
        elif _int_width(t) is not None:
            specs.append(ArgSpec(name, arg.index, "scalar", t, None, arg))
        elif isinstance(t, VectorType) and _int_width(t.element_type) is not None:
            specs.append(ArgSpec(name, arg.index, "vector", t, _elem(fn, name, t, pto.dtype_name(t.element_type)), arg))
        elif isinstance(t, MemRefType):
            from pto_compiler.passes.raise_memref import memref_form_error

            raise memref_form_error(fn)
        else:
            raise PtocError([Diagnostic(f"kernel argument '%{name}' has type {t}, which ptoc cannot run")],
                            exit_code=2)
    return specs


def _elem(fn: func.FuncOp, name: str, t, elem: str) -> str:
    canonical = canonical_name(elem)
    if canonical is None:
        raise op_error(fn, f"argument '%{name}' has type {t}, whose element type ptoc cannot compile or run")
    return canonical


def float_name(t) -> str | None:
    """The element type name of a float scalar type (``f32``), else None."""
    name = pto.dtype_name(t)
    return name if name in FLOAT_NAMES else None


# ---- static evaluation of GM view shapes ---------------------------------------------


def _static(value: SSAValue, known: dict[SSAValue, object], depth: int = 0):
    """The value of an SSA integer computable before the run (constants, given scalars,
    arith on those), else None."""
    if value in known:
        return known[value]
    if depth > 64 or not isinstance(value, SSAValue) or isinstance(value, BlockArgument):
        return None
    op = value.owner
    if not isinstance(op, Operation) or not op.name.startswith("arith.") or op.regions:
        return None
    env = {}
    for o in op.operands:
        v = _static(o, known, depth + 1)
        if v is None:
            return None
        env[o] = v
    try:
        results = eval_int_arith(op, [env[o] for o in op.operands])
        if results is None:  # a float op: the golden model's arithmetic (NumPy)
            from pto_compiler.runtime.reference import _eval_arith

            results = _eval_arith(op, env)
    except Exception:  # noqa: BLE001 - not statically evaluable
        return None
    for r, v in zip(op.results, results):
        known[r] = v
    return known.get(value)


def _views_of(fn: func.FuncOp, arg_index: int, depth: int = 0) -> list[tuple[pto.MakeTensorViewOp, dict]]:
    """make_tensor_view ops made from argument ``arg_index`` of ``fn`` (following func.call),
    each with the map of values known in its function (the callee's params bound statically)."""
    out = []
    if depth > 8:
        return out
    arg = fn.body.blocks[0].args[arg_index]
    for use in list(arg.uses):
        op = use.operation
        if isinstance(op, pto.MakeTensorViewOp):
            out.append((op, {}))
        elif isinstance(op, func.CallOp):
            callee = _lookup_func(fn, op.callee.root_reference.data)
            if callee is not None and callee.body.blocks:
                out.extend(_views_of(callee, use.index, depth + 1))
    return out


def _lookup_func(anchor: Operation, name: str) -> func.FuncOp | None:
    top = anchor
    while top.parent_op() is not None:
        top = top.parent_op()
    for op in top.walk():
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    return None


def gm_shape(fn: func.FuncOp, spec: ArgSpec, scalars: Mapping[str, object] | None = None) -> tuple[int, ...]:
    """The I/O shape of a GM argument (see the module doc); ``scalars`` are given integer
    scalar arguments by name.  Raises a usage error when it cannot be known before the run."""
    known: dict[SSAValue, object] = {}
    if scalars:
        from pto_compiler.runtime.reference import coerce_scalar

        for s in kernel_args(fn):
            if s.kind == "scalar" and s.name in scalars:
                known[s.value] = coerce_scalar(scalars[s.name], s.type)
    views = _views_of(fn, spec.index)
    if not views:
        return (0,)
    described = []
    for op, _ in views:
        rt = op.result.type
        shape = [_static(v, known) for v in op.shape_]
        if isinstance(rt, pto.TensorViewType) and len(rt.dims) == len(shape):  # `<2xf32>`: a rank, old PTOAS
            shape = [d if d != pto.DYNAMIC else s for d, s in zip(rt.dims, shape)]
        strides = [_static(v, known) for v in op.strides_]
        described.append((shape, strides))

    def full(xs):
        return all(isinstance(x, int) for x in xs)

    def extent(shape, strides):
        if any(d == 0 for d in shape):
            return 0
        return 1 + sum((d - 1) * abs(s) for d, s in zip(shape, strides))

    if len(described) == 1 and full(described[0][0]):
        shape, strides = described[0]
        if full(strides) and extent(shape, strides) > math.prod(shape):
            return (extent(shape, strides),)
        return tuple(int(d) for d in shape)
    if all(full(sh) and full(st) for sh, st in described):
        return (max(extent(sh, st) for sh, st in described),)
    raise usage_error(f"cannot size GM argument '{spec.name}': the shapes or strides of its tensor views "
                      "are only known at run time; give the integer scalars they depend on with --input")
