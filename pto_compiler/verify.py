"""Located verification: every op's verifier, then the target's checks (pto-verify-target).

xDSL's ``module.verify()`` raises on the first failure without saying which op failed
(reference/xdsl_guide.md §0.3), so ptoc walks the ops itself and locates each error at the
op's FileLineColLoc.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException

from pto_compiler.diagnostics import PtocError, location_of
from pto_compiler.dialects.verify_tables import unchanged_ir
from pto_compiler.targets import Target


def op_diagnostics(module: ModuleOp) -> list:
    """One Diagnostic per op whose own verifier fails (nested ops checked individually)."""
    with unchanged_ir():
        return [d for op in module.walk() if (d := op_diagnostic(op)) is not None]


def op_diagnostic(op):
    """The located Diagnostic of ``op``'s own verifier, or None when it verifies."""
    from pto_compiler.diagnostics import Diagnostic

    if type(op) not in _REMEMBERING:
        _remember_passed_signatures(type(op))
    try:
        op.verify(verify_nested_ops=False)
    except VerifyException as e:
        filename, line, col = location_of(op)
        return Diagnostic(f"'{op.name}' op {_first_line(e)}", filename, line, col)
    return None


def entry_diagnostics(module: ModuleOp) -> list:
    """PTOAS's rule: the kernel entry (marked ``pto.entry``, else a module's only function) returns
    nothing; ptoc's L1 kernels may also return tiles."""
    from xdsl.dialects import func

    from pto_compiler.diagnostics import Diagnostic
    from pto_compiler.dialects.pto import is_tile

    funcs = [op for op in module.body.ops if isinstance(op, func.FuncOp)]
    entries = [f for f in funcs if "pto.entry" in f.attributes] or (funcs if len(funcs) == 1 else [])
    found = []
    for f in entries:
        bad = [t for t in f.function_type.outputs.data if not is_tile(t)]
        if bad:
            filename, line, col = location_of(f)
            found.append(Diagnostic(f"'func.func' op PTO entry functions must return void "
                                    f"(@{f.sym_name.data} returns {', '.join(map(str, bad))})", filename, line, col))
    return found


def manual_reserve_diagnostics(module: ModuleOp) -> list:
    """PTOAS's PlanMemory rule: a function that places a pipe's slot buffer itself
    (``pto.reserve_buffer`` with ``auto = false``) places every local buffer itself; a
    ``memref.alloc`` or an ``alloc_tile`` without ``addr`` there would still need planning."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import IntegerAttr

    from pto_compiler.diagnostics import Diagnostic
    from pto_compiler.dialects.pto import AllocTileOp

    found = []
    for fn in (op for op in module.walk() if isinstance(op, func.FuncOp)):
        ops = list(fn.walk())
        if not any(op.name == "pto.reserve_buffer" and isinstance(a := op.attributes.get("auto"), IntegerAttr)
                   and a.value.data == 0 for op in ops):
            continue
        for op in ops:
            if op.name == "memref.alloc" or (isinstance(op, AllocTileOp) and op.addr is None):
                kind = "memref.alloc" if op.name == "memref.alloc" else "pto.alloc_tile without addr"
                found.append(Diagnostic(f"'{op.name}' op cannot use pto.reserve_buffer with auto = false when "
                                        f"local {kind} still requires PlanMemory allocation", *location_of(op)))
    return found


class _PassedSignatures:
    """An op class's IRDL check (xDSL's ``OpDef.verify``: operand, result, property and attribute
    constraints, then the op's traits) that remembers the signatures it passed.  For an op without
    regions or successors, what it checks before the traits depends only on the op's operand and
    result types, properties and attributes; a kernel repeats a few such signatures (the same tile
    types, one shared operandSegmentSizes) on every line, and the check costs ~25 us per op.  So an
    op whose signature passed before runs only the traits, any other the whole check.  Signatures
    are keyed by the identity of their attributes, which the table keeps alive."""

    LIMIT = 4096

    def __init__(self, op_def):
        self.op_def, self.check = op_def, op_def.verify
        self.passed: dict[tuple, tuple] = {}

    def __call__(self, op) -> None:
        if op.regions or op.successors:
            return self.check(op)
        types, props, attrs = (*op.operand_types, None, *op.result_types), op.properties, op.attributes
        key = (*map(id, types), *props, *map(id, props.values()), None, *attrs, *map(id, attrs.values()))
        if key in self.passed:
            for trait in self.op_def.traits:
                trait.verify(op)
            return None
        self.check(op)
        if len(self.passed) >= self.LIMIT:
            self.passed.clear()
        self.passed[key] = (types, tuple(props.values()), tuple(attrs.values()))
        return None


_REMEMBERING: set[type] = set()
"""The op classes whose OpDef checks through a :class:`_PassedSignatures` (set on first use)."""


def _remember_passed_signatures(cls) -> None:
    op_def = cls.get_irdl_definition() if hasattr(cls, "get_irdl_definition") else None
    if op_def is not None and not isinstance(op_def.verify, _PassedSignatures):
        op_def.verify = _PassedSignatures(op_def)  # the OpDef's own method, for this one OpDef
    _REMEMBERING.add(cls)


def _first_line(e: Exception) -> str:
    return str(e).strip() or type(e).__name__


_VERIFIED_ATTR = "_ptoc_verified"
"""The Python attribute of a module naming the targets it verified clean for (ptoc verifies a
module, then the pipeline is handed the same module: it is not walked twice).  Kept on the module,
not in a process-wide table, so threads compiling different modules share nothing."""


def verify_module(module: ModuleOp, target: Target) -> None:
    """Raise PtocError with every located verifier and target diagnostic found."""
    from pto_compiler.passes.verify_target import target_diagnostics

    diags = op_diagnostics(module) + entry_diagnostics(module) + manual_reserve_diagnostics(module)
    if not diags:
        diags = target_diagnostics(module, target)
    if diags:
        raise PtocError(diags)
    setattr(module, _VERIFIED_ATTR, getattr(module, _VERIFIED_ATTR, frozenset()) | {target.name})


def verified(module: ModuleOp, target: Target) -> bool:
    """Did :func:`verify_module` pass on this very module for ``target``?  (Only for modules that
    are not changed afterwards, as the pipeline's input, which it clones.)"""
    return target.name in getattr(module, _VERIFIED_ATTR, ())


def verify_pto_level(module: ModuleOp, level: str, insert_sync: bool) -> None:
    """PTOAS's placement rules when its ``--pto-level`` is given (ptoc's own ``--manual`` and default
    mode also accept ``pto.tassign`` with sync insertion): ``pto.tassign`` only at level3 and not
    with ``--enable-insert-sync``; at level3 every ``pto.alloc_tile`` has ``addr``."""
    from pto_compiler.diagnostics import Diagnostic
    from pto_compiler.dialects.pto import AllocTileOp, TAssignOp

    found = []
    for op in module.walk():
        message = None
        if isinstance(op, TAssignOp) and level != "level3":
            message = "pto.tassign is only supported when --pto-level=level3"
        elif isinstance(op, TAssignOp) and insert_sync:
            message = "pto.tassign requires --enable-insert-sync to be disabled"
        elif isinstance(op, AllocTileOp) and level == "level3" and op.addr is None:
            message = "requires 'addr' operand when --pto-level=level3"
        if message is not None:
            filename, line, col = location_of(op)
            found.append(Diagnostic(f"'{op.name}' op {message}", filename, line, col))
    if found:
        raise PtocError(found)
