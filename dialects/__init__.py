"""ptoc's dialects: ``pto`` (tile ops), ``vf`` (vector functions, ascend950), ``a2a3`` (micro-instructions)."""


def context():
    """An xDSL Context with every dialect ptoc prints: builtin, func, arith, scf, pto loaded; memref,
    vf and a2a3 registered, loaded only when IR that uses them is parsed (so a2a3 never imports vf,
    and a compile makes only the a2a3 op classes it uses: dialects/a2a3.py ``OPS``)."""
    from xdsl.context import Context
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.scf import Scf

    from pto_compiler.dialects.pto import PTO

    ctx = Context()
    for dialect in (Builtin, Func, Arith, Scf, PTO):
        ctx.load_dialect(dialect)
    ctx.register_dialect("memref", _memref)
    ctx.register_dialect("vf", _vf)
    ctx.register_dialect("a2a3", _a2a3)
    return ctx


def _memref():
    from xdsl.dialects.memref import MemRef

    return MemRef


def _a2a3():
    from pto_compiler.dialects.a2a3 import A2A3

    return A2A3


def _vf():
    from pto_compiler.dialects.vf import VF

    return VF
