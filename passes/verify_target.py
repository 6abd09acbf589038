"""``pto-verify-target``: the constraints that depend on the target (DESIGN.md §4).

Each op's dtype set per target (declared on the op class, dialects/pto.py), a single tile no
larger than its memory on the target (UB, L1, L0A, L0B, L0C, bias table, fixpipe buffer:
targets.py), the cube tiles' layouts (:data:`CUBE_LAYOUTS`; boxed L1 tiles of whole fractals),
TMOV vec -> mat
only where it exists, GM pointer arguments of an element type TLOAD moves, ``vf`` ops only where the target has vector functions, and a TCVT round
mode that exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from pto_compiler.diagnostics import Diagnostic, PtocError, argument_location, location_of, sources_of
from pto_compiler.dialects.pto import TILE_OPS, ConvertOp, MoveOp, PtrType, TileBufType, TileLikeType, TileOp, dtype_name
from pto_compiler.targets import Target, lookup_target


GM_DTYPES = TILE_OPS["pto.tload"].DTYPES
"""The element types a GM pointer argument may hold per target: those TLOAD moves (its page)."""


def _diag(op, message: str) -> Diagnostic:
    filename, line, col = location_of(op)
    return Diagnostic(f"'{op.name}' op {message}", filename, line, col)


def _check_round_mode(op) -> None:
    """A TCVT round mode must be one the golden model and both lowerings know (checked here, not
    in dialects/pto.py, because the spellings live in runtime/element_types.py)."""
    if not isinstance(op, ConvertOp):
        return
    from pto_compiler.runtime.element_types import ElementwiseError, round_mode

    for key in ("rmode", "round_mode", "roundMode"):
        attr = op.attributes.get(key) or op.properties.get(key)
        if attr is not None:
            body = getattr(attr, "body", attr)
            try:
                round_mode(body.data if isinstance(getattr(body, "data", None), str) else str(attr))
            except ElementwiseError as e:
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
        if isinstance(op, MoveOp) and op.ins and op.outs and not target.vec_to_mat and \
                all(isinstance(v.type, TileBufType) for v in (op.ins[0], op.outs[0])) and \
                (op.ins[0].type.loc.data, op.outs[0].type.loc.data) == ("vec", "mat"):
            found.append(_diag(op, f"has no vec -> mat move on {target.name} (ascend950 only)"))
        for res in op.results:
            t = res.type
            if not isinstance(t, TileBufType):
                continue
            space = target.space_of(t.loc.data)
            if space is not None and t.nbytes > space.bytes:
                found.append(_diag(op, f"tile of {t.nbytes} bytes does not fit in the {target.name} {space.name} "
                                       f"({_size(space.bytes)})"))
            why = _cube_layout_error(t)
            if why:
                found.append(_diag(op, why))
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    t = arg.type
                    name = arg.name_hint or f"arg{arg.index}"
                    if isinstance(t, TileLikeType) and t.nbytes > target.ub_bytes:
                        found.append(Diagnostic(f"tile argument %{name} of {t.nbytes} bytes does not fit in "
                                                f"the {target.name} UB ({target.ub_bytes // 1024} KiB)",
                                                *argument_location(op, name, sources_of(module))))
                    gm = GM_DTYPES.get(target.name, frozenset())
                    if isinstance(t, PtrType) and dtype_name(t.element_type) not in gm:
                        found.append(Diagnostic(f"GM argument %{name}: element type {dtype_name(t.element_type)} "
                                                f"is not supported on {target.name} (supported: {', '.join(sorted(gm))})",
                                                *argument_location(op, name, sources_of(module))))
    return found


CUBE_LAYOUTS = {"left": (None, "row_major"), "right": ("row_major", "col_major"), "acc": ("col_major", "row_major")}
"""(blayout, slayout) of the L0 tiles (pto_isa.md §2 TileLeft/TileRight aliases, acc Nz); ``None``:
either, as PTOAS rewrites a left tile's blayout per target at parse time (row_major on A3, col_major
on A5, ptoas_peer.md §1.8) and ptoc keeps the declared one, which places elements consistently."""


def _size(n: int) -> str:
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n} bytes"


def _cube_layout_error(t: TileBufType) -> str | None:
    """The layout rules of the cube memories: the L0 tiles' fixed layouts, L1 tiles of whole
    fractals (pto_isa.md §2: a boxed tile's rows and cols are multiples of the inner box)."""
    loc = t.loc.data
    want = CUBE_LAYOUTS.get(loc)
    if want is not None:
        bl, sl = want
        if (bl is not None and t.blayout.data != bl) or t.slayout.data != sl:
            return (f"a loc={loc} tile must have {'blayout=' + bl + ', ' if bl else ''}slayout={sl} "
                    f"(got blayout={t.blayout.data}, slayout={t.slayout.data})")
    if loc != "mat" or t.slayout.data == "none_box":
        return None  # L0 tiles may be partial fractals (TGEMV's 1-row left/acc tiles, PTOAS's tests)
    from pto_compiler.runtime.cube import box_shape, layout_name  # NumPy: only kernels with cube tiles

    br, bc = box_shape(layout_name(t.blayout.data, t.slayout.data), t.fractal.data, t.elem_bytes)
    if t.rows % br or t.cols % bc:
        return (f"a {t.rows}x{t.cols} {t.dtype} loc={loc} tile is not a whole number of its {br}x{bc} "
                f"fractals (fractal={t.fractal.data})")
    return None


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
