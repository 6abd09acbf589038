"""Programs for executor tests, written as the lowered module holds them: ``a2a3`` ops (dialects/a2a3.py)
plus ``scf``/``arith``, parsed by xDSL and decoded as the executor decodes a lowered module (``program_of``).

Constants are spelled by their value so a test line reads like the instruction it is: every
``%cN`` / ``%c0xH`` the body uses is declared as that ``index`` constant, every typed
``(%fV : T)`` as that ``T`` constant (``(%f-0.5 : f32)``, ``(%f-inf : f32)``, ``(%f-5 : i32)``)."""

from __future__ import annotations

import math
import re

from pto_compiler import api
from pto_compiler.passes.lower_a2a3 import program_of
from pto_compiler.runtime.program import Program
from pto_compiler.targets import A2A3

_INDEX = re.compile(r"%c(-?(?:0x[0-9a-fA-F]+|\d+))\b")
_FLOAT = re.compile(r"\(%f([-\w.]+) : (\w+)\)")


def a2a3_func(body: str, gm: dict | None = None, scalars: dict | None = None, name: str = "t") -> str:
    """The MLIR text of ``func.func @name`` with ``body``.  ``gm`` maps a GM argument to
    ``(dtype, shape)`` (a tensor view gives the program its shape), ``scalars`` a kernel scalar to
    its type."""
    gm, scalars = gm or {}, scalars or {}
    views = []
    for arg, (dt, shape) in gm.items():
        strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
        dims = "x".join(str(s) for s in shape)
        views.append(f"  %{arg}_view = pto.make_tensor_view %{arg}, shape = [{', '.join(f'%c{s}' for s in shape)}], "
                     f"strides = [{', '.join(f'%c{s}' for s in strides)}] : !pto.tensor_view<{dims}x{dt}>")
    text = "\n".join(views) + "\n" + body
    consts = [f"  %c{v} = arith.constant {int(v, 0)} : index" for v in dict.fromkeys(_INDEX.findall(text))]
    consts += [f"  %f{v} = arith.constant {_literal(v, t)} : {t}" for v, t in dict.fromkeys(_FLOAT.findall(text))]
    args = [f"%{a}: !pto.ptr<{dt}>" for a, (dt, _) in gm.items()] + [f"%{s}: {t}" for s, t in scalars.items()]
    return f"func.func @{name}({', '.join(args)}) {{\n" + "\n".join(consts) + f"\n{text}\n  func.return\n}}\n"


def _literal(v: str, t: str) -> str:
    if t[0] in "iu":
        return v
    if v.lstrip("-") == "inf":
        return "0xFF800000" if v.startswith("-") else "0x7F800000"
    return v if "." in v or "e" in v else f"{v}.0"


def a2a3_program(body: str, gm: dict | None = None, scalars: dict | None = None, name: str = "t") -> Program:
    """The program of :func:`a2a3_func`'s function, as the executor runs it."""
    return program_of(api.parse_printed(a2a3_func(body, gm, scalars, name)), A2A3)
