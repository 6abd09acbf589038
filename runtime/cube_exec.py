"""The executor's cube instructions (the ``cube_*`` and ``mmad`` rows of dialects/a2a3.py's
OPCODES): tile moves between GM and the cube memories (MTE2/MTE3), inside the cube core
(MTE1), out of L0C through the fixpipe (FIX), and the matmul itself (M).

Each cube memory (L1, L0A, L0B, L0C, BT, FB; ``Target.cube_spaces``) is a byte array of the
executor, like the UB; a tile operand is its byte address plus its tile's geometry (X_rows,
X_cols, X_layout: ``runtime/cube.py`` ``tile_offsets`` places element (r, c)), so a producer and
its consumer agree on where every element is.  The cube pipes MTE1, M and FIX run in order
(an instruction reads what the previous one of its pipe wrote: no pipe_barrier between them).
Every access goes through the executor's bounds and hazard checks (space = the memory's name),
so a missing set_flag/wait_flag between MTE2, MTE1, M and FIX is a
race, exactly as between MTE2, V and MTE3.  Values: runtime/cube.py (``matmul``, ``fixpipe``).
"""

from __future__ import annotations

import numpy as np

from . import cube
from . import elementwise as ew
from .hazards import Footprint


class _Operand:
    """One side of a cube instruction: a region of a tile in a memory, or of a GM argument (element
    (r, c) at offset + (r*X_stride + c*X_col_stride) elements)."""

    def __init__(self, m, d, a: dict, name: str, dtype: str, rows: int, cols: int, r0: int = 0, c0: int = 0):
        from . import executor as X

        self.space = d.ins.spec.spaces.get(name)
        self.esize = X.DTYPE_SIZES[dtype]
        self.dtype = dtype
        if self.space is None:  # GM: row r at byte offset + r*stride*esize
            self.gm, base = X._gm_base(m, d, a, name)
            stride, cstride = X._ints(m, d, a, [f"{name}_stride", f"{name}_col_stride"])
            off = (base + (np.arange(rows, dtype=np.int64)[:, None] * stride
                           + np.arange(cols, dtype=np.int64)[None, :] * cstride) * self.esize)
        else:
            base = X._ub_addr(m, d, a, name, 32)
            R, C = X._ints(m, d, a, [f"{name}_rows", f"{name}_cols"])
            layout = a[f"{name}_layout"]
            fractal = 1024 if layout.endswith("1024") else 512
            layout = layout[:2]
            if r0 + rows > R or c0 + cols > C:
                m.fail("invalid", f"{X._desc(d)}: the {rows}x{cols} region at ({r0}, {c0}) runs past the "
                       f"{R}x{C} {name} tile", d)
            off = base + cube.tile_offsets(R, C, layout, fractal, self.esize)[r0:r0 + rows, c0:c0 + cols]
        self.bytes = off

    def access(self, m, write: bool, what: str):
        """The executor's access record: GM elements of the argument, or bytes of the memory."""
        from . import executor as X

        if self.space is None:
            return X._Acc(self.gm, write, Footprint.of_units(self.bytes // m.gm_esize[self.gm]), what=what)
        return X._Acc(self.space, write, Footprint.of_starts(self.bytes.reshape(-1), self.esize), what=what)

    def read(self, m) -> np.ndarray:
        if self.space is None:
            arr = m.gm_bytes[self.gm]
        else:
            arr = m.local[self.space]
        idx = self.bytes[..., None] + np.arange(self.esize)
        return arr[idx].reshape(-1).view(ew.np_dtype(self.dtype)).reshape(self.bytes.shape)

    def write(self, m, values: np.ndarray) -> None:
        arr = m.gm_bytes[self.gm] if self.space is None else m.local[self.space]
        v = np.ascontiguousarray(values.astype(ew.np_dtype(self.dtype), copy=False))
        idx = self.bytes[..., None] + np.arange(self.esize)
        arr[idx] = v.view(np.uint8).reshape(idx.shape)


def _region(m, d, a):
    from . import executor as X

    return X._ints(m, d, a, ["rows", "cols"])


def cube_copy(m, d, p: int, te) -> None:
    """A rows x cols region from ``src`` (at src_r0, src_c0) to ``dst`` (at dst_r0, dst_c0), either
    side a tile of a cube memory / the UB or a GM argument; out of L0C through the fixpipe
    (``src_type`` the acc type, ``relu``), else the same bits."""
    from . import executor as X

    a = d.args
    rows, cols = _region(m, d, a)
    dt = a.get("dtype")
    st = a.get("src_type", dt)
    so = [int(X._int(a[f])) for f in ("src_r0", "src_c0") if f in a] or [0, 0]
    do = [int(X._int(a[f])) for f in ("dst_r0", "dst_c0") if f in a] or [0, 0]
    src = _Operand(m, d, a, "src", st, rows, cols, *so)
    dst = _Operand(m, d, a, "dst", dt, rows, cols, *do)
    if te is not None:
        te.nbytes, te.bursts = rows * cols * dst.esize, rows
    atomic = a.get("atomic") == "add"
    m._accesses(d, p, [src.access(m, False, "src"), *([dst.access(m, False, "dst")] if atomic else []),
                       dst.access(m, True, "dst")])
    x = src.read(m)
    if d.ins.spec.family == "fix":
        try:
            x = cube.fixpipe(x, ew.np_dtype(dt), a.get("relu") == "yes")
        except ew.ElementwiseError as e:
            m.fail("invalid", f"{X._desc(d)}: {e}", d)
    if atomic:  # the GM side adds what arrives, in its element type (pto_isa.md §4.8 TSTORE AtomicAdd)
        x = ew.add(dst.read(m), x)
    dst.write(m, x)


def mmad(m, d, p: int, te) -> None:
    """``mmad``: C (m x n, L0C) = [C +] A (m x k, L0A) . B (k x n, L0B) [+ bias (BT)] in the acc type;
    ``init = zero`` starts from 0 (or from the bias), ``acc`` adds to C."""
    from . import executor as X

    a = d.args
    M, K, N = X._ints(m, d, a, ["m", "k", "n"])
    acc_t = a["dtype"]
    in_t = a["src_type"]
    A = _Operand(m, d, a, "a", in_t, M, K)
    B = _Operand(m, d, a, "b", in_t, K, N)
    C = _Operand(m, d, a, "dst", acc_t, M, N)
    accs = [A.access(m, False, "a"), B.access(m, False, "b")]
    bias = None
    if "bias" in a:
        bias = _Operand(m, d, a, "bias", acc_t, 1, N)
        accs.append(bias.access(m, False, "bias"))
    init = a.get("init", "zero") == "zero"
    if not init:
        accs.append(C.access(m, False, "c_in"))
    accs.append(C.access(m, True, "dst"))
    if te is not None:  # fractal MACs: 16 x (32 B of the input type) x 16 per cube cycle
        k0 = 32 // A.esize
        te.repeats = -(-M // 16) * -(-K // k0) * -(-N // 16)
    m._accesses(d, p, accs)
    out = cube.matmul(A.read(m), B.read(m), ew.np_dtype(acc_t), None if init else C.read(m),
                      None if bias is None else bias.read(m).reshape(-1))
    C.write(m, out)


HANDLERS = {"cube_copy": cube_copy, "fix": cube_copy, "mmad": mmad}
"""family -> handler (runtime/executor.py merges these into its table)."""
