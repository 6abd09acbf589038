"""``pto-verify-target``: the constraints that depend on the target (DESIGN.md §4).

Each op's dtype set per target (declared on the op class, dialects/pto.py), a single tile no
larger than the target's UB, ``vf`` ops only where the target has vector functions, and a
TCVT round mode that exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from pto_compiler.diagnostics import Diagnostic, PtocError, argument_location, location_of, sources_of
from pto_compiler.dialects.pto import ConvertOp, TileBufType, TileLikeType, TileOp
from pto_compiler.targets import Target, lookup_target


def _diag(op, message: str) -> Diagnostic:
    filename, line, col = location_of(op)
    return Diagnostic(f"'{op.name}' op {message}", filename, line, col)


def _check_round_mode(op) -> None:
    """A TCVT round mode must be one the golden model and both lowerings know (checked here, not
    in dialects/pto.py, because the spellings live in runtime/elementwise.py)."""
    if not isinstance(op, ConvertOp):
        return
    from pto_compiler.runtime import elementwise as E  # NumPy: only kernels with a TCVT import it

    for key in ("rmode", "round_mode", "roundMode"):
        attr = op.attributes.get(key) or op.properties.get(key)
        if attr is not None:
            body = getattr(attr, "body", attr)
            try:
                E.round_mode(body.data if isinstance(getattr(body, "data", None), str) else str(attr))
            except E.ElementwiseError as e:
                raise VerifyException(str(e)) from None


def target_diagnostics(module: ModuleOp, target: Target) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for op in module.walk():
        if op.dialect_name() == "vf" and not target.has_vf:
            found.append(_diag(op, f"{op.name} is not available on {target.name} "
                                   "(vector functions exist only on ascend950)"))
            continue
        if isinstance(op, TileOp):
            try:
                op.check_dtype_for_target(target.name)
                _check_round_mode(op)
            except VerifyException as e:
                found.append(_diag(op, str(e)))
                continue
        for res in op.results:
            t = res.type
            if isinstance(t, TileBufType) and t.loc.data == "vec" and t.nbytes > target.ub_bytes:
                found.append(_diag(op, f"tile of {t.nbytes} bytes does not fit in the {target.name} UB "
                                       f"({target.ub_bytes // 1024} KiB)"))
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    t = arg.type
                    if isinstance(t, TileLikeType) and t.nbytes > target.ub_bytes:
                        name = arg.name_hint or f"arg{arg.index}"
                        found.append(Diagnostic(f"tile argument %{name} of {t.nbytes} bytes does not fit in "
                                                f"the {target.name} UB ({target.ub_bytes // 1024} KiB)",
                                                *argument_location(op, name, sources_of(module))))
    return found


@dataclass(frozen=True)
class VerifyTargetPass(ModulePass):
    name = "pto-verify-target"

    target: str = "a2a3"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = lookup_target(self.target)
        if target is None:
            raise PtocError([Diagnostic(f"unknown target '{self.target}' (expected a2a3 or ascend950)")])
        diags = target_diagnostics(op, target)
        if diags:
            raise PtocError(diags)
