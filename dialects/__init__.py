"""ptoc's dialects: ``pto`` (tile ops), ``vf`` (vector functions, ascend950), ``a2a3`` (micro-instructions)."""


def context():
    """An xDSL Context with every dialect ptoc prints (builtin, func, arith, scf, memref, pto, vf,
    a2a3)."""
    from xdsl.context import Context
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.memref import MemRef
    from xdsl.dialects.scf import Scf

    from pto_compiler.dialects.a2a3 import A2A3
    from pto_compiler.dialects.pto import PTO
    from pto_compiler.dialects.vf import VF

    ctx = Context()
    for dialect in (Builtin, Func, Arith, Scf, MemRef, PTO, VF, A2A3):
        ctx.load_dialect(dialect)
    return ctx
