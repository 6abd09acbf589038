"""The cube rules of the a2a3 lowering (and of the ascend950 program emission, whose cube core is
the same machine): tile ops on ``mat/left/right/acc/bias/scaling`` tiles -> the cube rows of
dialects/a2a3.py's OPCODES, one instruction per tile op.

* ``tload`` GM -> L1: ``copy_gm_to_cbuf`` (MTE2; ND GM rows into the tile's layout, the ND2NZ
  DMA); ``tstore`` L1 -> GM ``copy_cbuf_to_gm`` (MTE3), L0C -> GM ``fixpipe_cc_to_gm`` (FIX, the
  acc conversion and ``reluPreMode``).
* ``tmov`` / ``textract`` / ``tinsert`` by (src loc, dst loc) (tile_access.CUBE_MOVES, which
  pto-insert-sync reads for the pipe): L1 -> L0A/L0B/BT
  on MTE1 (``load_cbuf_to_ca/cb/bt``), L1 -> FB on FIX (``copy_cbuf_to_fbuf``, PTOAS's TMOV_M2S
  pipe), L0C -> L1/UB through the fixpipe (FIX), UB -> L1 (``copy_ubuf_to_cbuf``, MTE3, ascend950);
  textract reads at (row, col) of its source, tinsert writes at (row, col) of its destination.
* ``tmatmul`` / ``tgemv`` (``.acc``, ``.bias``): one ``mmad`` (M) with ``init = zero`` (``acc`` for
  the ``.acc`` forms, whose c_in must be dst's buffer) and the bias table operand for ``.bias``.

Every operand carries its tile's geometry (rows, cols, layout), so the executor places elements
where the producer put them (runtime/cube.py ``tile_offsets``).
"""

from __future__ import annotations

from pto_compiler.dialects import pto
from pto_compiler.passes.tile_access import cube_move_opcode
from pto_compiler.runtime.cube import NO_SEMANTICS, PRE_QUANT, layout_name
from pto_compiler.runtime.pipes import PIPE_OPS
from pto_compiler.runtime.program import GmAddr

CUBE_LOCS = frozenset(("mat", "left", "right", "acc", "bias", "scaling"))
WINDOW = "harness_window"
"""Unit attribute of a tload / tstore passes/tile_harness.py adds for a tile no DMA moves: it lowers
to the ``harness_load_*`` / ``harness_store_*`` rows of dialects/a2a3.py (no hardware instruction)."""


def is_cube_op(op) -> bool:
    """A tile op the cube rules lower (it touches a cube-side tile, or is a cube<->vector pipe op)."""
    if isinstance(op, (pto.MatmulOp, pto.SubTileOp)) or op.name in PIPE_OPS or op.name in NO_SEMANTICS:
        return True
    if WINDOW in op.attributes:
        return True
    if cube_move_opcode(op):
        return True
    return isinstance(op, (pto.MoveOp, pto.LoadOp, pto.StoreOp)) and any(
        isinstance(v.type, pto.TileBufType) and v.type.loc.data in CUBE_LOCS for v in (*op.ins, *op.outs))


def geometry(t: pto.TileLikeType) -> dict:
    """The geometry fields of a local operand ``X``: X_rows, X_cols, X_layout."""
    layout = layout_name(t.blayout.data, t.slayout.data)
    if layout not in ("nd", "dn") and t.fractal.data == 1024:
        layout += "1024"
    return {"rows": t.rows, "cols": t.cols, "layout": layout}


def _local(name: str, ref) -> dict:
    return {name: ref.addr, **{f"{name}_{k}": v for k, v in geometry(ref.t).items()}}


def _cube_tile(low, v):
    """The TileRef of any tile (the vector rules' ``low.tile`` takes vec tiles only)."""
    from pto_compiler.passes.lower_a2a3 import TileRef

    t = low.vals.get(v)
    if not isinstance(t, TileRef):
        low.fail(f"operand {v} is not a tile the lowering knows")
    if t.addr is None:
        low.fail(f"tile {v} has no {t.t.loc.data} address: run pto-plan-memory, or bind it with pto.tassign")
    return t


def _gm(low, part, t) -> dict:
    """A 2-D GM region for a tile (ND or DN): base byte address, row and column strides (elements)."""
    from pto_compiler.passes.lower_a2a3 import PartRef, _is_int

    if not isinstance(part, PartRef):
        low.unsupported("the GM side is not a partition view of a kernel argument")
    view = part.view
    if view.esize != t.esize:
        low.fail(f"GM element size {view.esize} differs from the tile's {t.esize}")
    strides = list(view.strides)
    if len(strides) < 2:
        low.unsupported("a cube tile from a 1-D GM view")
    lead = [(sz, st) for sz, st in zip(part.sizes[:-2], strides[:-2]) if not (_is_int(sz) and sz == 1)]
    if lead:
        low.unsupported("a cube tile from a GM partition with more than two non-unit dimensions")
    offset = low.add(*[low.mul(o, low.mul(s, t.esize)) for o, s in zip(part.offsets, strides)])
    return {"gm": GmAddr(view.arg, offset), "stride": strides[-2], "col_stride": strides[-1]}


def _gm_fields(name: str, g: dict) -> dict:
    return {name: g["gm"], f"{name}_stride": g["stride"], f"{name}_col_stride": g["col_stride"]}


def _region(low, t) -> tuple:
    from pto_compiler.passes.lower_a2a3 import _is_int

    if not (_is_int(t.vr) and _is_int(t.vc)):
        low.unsupported("a cube tile whose valid region is known only at run time")
    return t.vr, t.vc


def _window(low, op, t, load: bool) -> None:
    """A harness window (:data:`WINDOW`): the tile's valid region from / to the ND GM view."""
    rows, cols = _region(low, t)
    space = low.target.space_of(t.t.loc.data).name.lower()
    g = _gm(low, low.vals.get(op.ins[0] if load else op.outs[0]), t)
    if load:
        low.emit(f"harness_load_{space}", t.dtype, **_local("dst", t), **_gm_fields("src", g), rows=rows, cols=cols)
    else:
        low.emit(f"harness_store_{space}", t.dtype, **_gm_fields("dst", g), **_local("src", t), rows=rows, cols=cols)


def tile_load(low, op) -> None:
    t = _cube_tile(low, op.outs[0])
    if WINDOW in op.attributes:
        return _window(low, op, t, load=True)
    if t.t.loc.data != "mat":
        low.unsupported(f"tload into loc={t.t.loc.data} (GM loads into loc=mat or loc=vec)")
    g = _gm(low, low.vals.get(op.ins[0]), t)
    rows, cols = _region(low, t)
    low.emit("copy_gm_to_cbuf", t.dtype, **_local("dst", t), **_gm_fields("src", g), rows=rows, cols=cols)


def tile_store(low, op) -> None:
    from pto_compiler.runtime.cube import acc_store_error, relu_pre
    from pto_compiler.runtime.program import canonical_dtype

    t = _cube_tile(low, op.ins[0])
    if WINDOW in op.attributes:
        return _window(low, op, t, load=False)
    target = op.outs[0] if op.outs else None
    if target is None or len(op.ins) > 1:
        low.unsupported(f"a tstore with a pre-quant operand: {PRE_QUANT}")
    atomic = "add" if op.atomic_add else "none"
    part = low.vals.get(target)
    rows, cols = _region(low, t)
    loc = t.t.loc.data
    if loc == "acc":
        dt = canonical_dtype(pto.dtype_name(target.type.element_type))
        why = acc_store_error(t.dtype, dt)
        if why:
            low.unsupported(why)
        g = _gm(low, part, _Sized(t, dt))
        low.emit("fixpipe_cc_to_gm", dt, **_gm_fields("dst", g), **_local("src", t), rows=rows, cols=cols,
                 src_type=t.dtype, relu="yes" if relu_pre(op) else "no", atomic=atomic)
    elif loc == "mat":
        g = _gm(low, part, t)
        low.emit("copy_cbuf_to_gm", t.dtype, **_gm_fields("dst", g), **_local("src", t), rows=rows, cols=cols,
                 atomic=atomic)
    else:
        low.unsupported(f"tstore from loc={loc} (GM stores take vec, mat or acc tiles)")


class _Sized:
    """A tile ref seen with the GM side's element size (a store out of acc converts)."""

    def __init__(self, t, dtype: str):
        from pto_compiler.runtime.program import DTYPE_SIZES

        self.t, self.esize = t, DTYPE_SIZES[dtype]


def tile_move(low, op) -> None:
    """tmov, textract, tinsert by their (src loc, dst loc) pair."""
    from pto_compiler.runtime.cube import relu_pre

    s, d = _cube_tile(low, op.ins[0]), _cube_tile(low, op.outs[0])
    pair = (s.t.loc.data, d.t.loc.data)
    opcode = cube_move_opcode(op)
    if opcode is None:
        low.unsupported(f"a move from loc={pair[0]} to loc={pair[1]}")
    if opcode == "copy_ubuf_to_cbuf" and not low.target.vec_to_mat:
        low.unsupported(f"a vec -> mat move on {low.target.name} (ascend950 only)")
    if isinstance(op, pto.MoveOp) and len(op.ins) != 1:
        low.unsupported(f"tmov with a scaling/quantisation operand: {PRE_QUANT}")
    inserting = isinstance(op, pto.SubTileOp) and op.INSERT
    rows, cols = _region(low, s if inserting else d)
    args = {**_local("dst", d), **_local("src", s), "rows": rows, "cols": cols}
    if isinstance(op, pto.SubTileOp):
        r0, c0 = (low.expr(v, op) for v in op.ins[1:3])
        side = "dst" if inserting else "src"
        args.update({f"{side}_r0": r0, f"{side}_c0": c0})
    if opcode.startswith("fixpipe"):
        args.update(src_type=s.dtype, relu="yes" if relu_pre(op) else "no")
    low.emit(opcode, d.dtype, **args)


def tile_matmul(low, op) -> None:
    c_in, a, b, bias = (None if v is None else _cube_tile(low, v) for v in op.operands_abc())
    c = _cube_tile(low, op.outs[0])
    if c_in is not None and c_in.addr != c.addr:
        low.unsupported("tmatmul.acc whose c_in is not dst's buffer (copy c_in into dst first)")
    m, k = _region(low, a)
    _, n = _region(low, b)
    args = {**_local("dst", c), **_local("a", a), **_local("b", b), "m": m, "k": k, "n": n,
            "src_type": a.dtype, "init": "acc" if c_in is not None else "zero"}
    if bias is not None:
        args.update(_local("bias", bias))
    low.emit("mmad_bias" if bias is not None else "mmad", c.dtype, **args)


def lower_pipe_setup(low, op) -> None:
    """``aic/aiv_initialize_pipe``: ``pipe_init`` (S) configures the core's FIFOs; the buffer ops
    stay (their value, the slot base, is an address the pipe does not need)."""
    from pto_compiler.runtime.pipes import BUFFER_OPS

    if op.name in BUFFER_OPS:
        low.vals[op.results[0]] = _int_attr(op, "base") or 0
        return
    low.emit("pipe_init", dir_mask=_int_attr(op, "dir_mask") or 0, slot_size=_int_attr(op, "slot_size") or 0)
    low.lowered(op)


def _int_attr(op, key: str) -> int | None:
    from xdsl.dialects.builtin import IntegerAttr

    a = op.attributes.get(key)
    return a.value.data if isinstance(a, IntegerAttr) else None


def lower_pipe_op(low, op) -> None:
    """tpush / tpop (destination style, after pto-resolve-reserved-buffers) / tfree -> one
    instruction: ``tpush_cc`` (FIX, out of L0C) or ``tpush_ub`` (MTE3, out of UB), ``tpop_ub`` /
    ``tpop_cbuf`` (MTE2, into the slot tile), ``tfree_c2v`` / ``tfree_v2c`` (S)."""
    from pto_compiler.runtime.pipes import PIPE_OPS

    direction, action = PIPE_OPS[op.name]
    split = _int_attr(op, "split") or 0
    if action == "free":
        low.emit(f"tfree_{direction}", split=split)
        return
    if action == "pop" and not op.outs:
        low.fail("pops into no tile: run pto-resolve-reserved-buffers (it gives the pop its slot)")
    t = _cube_tile(low, op.ins[0] if action == "push" else op.outs[0])
    rows, cols = _region(low, t)
    loc = t.t.loc.data
    want = {("c2v", "push"): ("acc",), ("v2c", "push"): ("vec",), ("c2v", "pop"): ("vec",),
            ("v2c", "pop"): ("mat",)}[(direction, action)]
    if loc not in want:
        low.fail(f"{'pushes' if action == 'push' else 'pops'} a loc={loc} tile; the {direction.upper()} "
                 f"{action} takes loc={want[0]} (pto-isa TPUSH/TPOP: Acc -> Vec, Vec -> Mat)")
    opcode = {"acc": "tpush_cc", "mat": "tpop_cbuf"}.get(loc) or ("tpush_ub" if action == "push" else "tpop_ub")
    side = "src" if action == "push" else "dst"
    low.emit(opcode, t.dtype, **_local(side, t), rows=rows, cols=cols, split=split)


RULES = ((pto.MatmulOp, tile_matmul), (pto.SubTileOp, tile_move), (pto.MoveOp, tile_move),
         (pto.LoadOp, tile_load), (pto.StoreOp, tile_store))
"""The cube rule of each family (for the ops :func:`is_cube_op` accepts)."""


def lower_cube_op(low, op) -> None:
    rule = next(r for family, r in RULES if isinstance(op, family))
    rule(low, op)
