"""A tiny kernel DSL on pto_compiler.api: tiles are Python values, operators pick the PTO tile op.

    x - x.rowmax()     a tile minus a per-row column  -> pto.trowexpandsub
    xc * gamma         a tile times a 1xN row         -> pto.tcolexpandmul
    x * 0.5, x + y     a scalar, a tile of x's shape  -> pto.tmuls, pto.tadd

Each op is located at the kernel's line that wrote it (this file is ``internal`` to the builder).
"""

from pto_compiler import api


class Tile:
    def __init__(self, k, value):
        self.k, self.v = k, value
        self.shape = (value.type.rows, value.type.cols)

    def _op(self, other, name):
        kb = self.k.kb
        if isinstance(other, (int, float)):
            return Tile(self.k, getattr(kb, f"t{name}s")(self.v, other))
        if other.shape == self.shape:
            return Tile(self.k, getattr(kb, f"t{name}")(self.v, other.v))
        family = "row" if other.shape == (self.shape[0], 1) else "col"
        return Tile(self.k, getattr(kb, f"t{family}expand{name}")(self.v, other.v))

    def __add__(self, o): return self._op(o, "add")
    def __sub__(self, o): return self._op(o, "sub")
    def __mul__(self, o): return self._op(o, "mul")
    def __truediv__(self, o): return self._op(o, "div")
    def exp(self): return Tile(self.k, self.k.kb.texp(self.v))
    def rsqrt(self): return Tile(self.k, self.k.kb.trsqrt(self.v))

    def _reduce(self, name):
        out = self.k.kb.tile(self.v.type.dtype, (self.shape[0], 1), blayout="col_major")
        return Tile(self.k, getattr(self.k.kb, f"trow{name}")(self.v, out=out))

    def rowmax(self): return self._reduce("max")
    def rowsum(self): return self._reduce("sum")

    def expand(self, cols):
        """A per-row column broadcast across ``cols`` columns (pto.trowexpand)."""
        out = self.k.kb.tile(self.v.type.dtype, (self.shape[0], cols))
        return Tile(self.k, self.k.kb.trowexpand(self.v, out=out))


class Kernel:
    def __init__(self, name, dtype="f32"):
        self.kb, self.dtype = api.KernelBuilder(name, internal=(__file__,)), dtype

    def input(self, name, shape):
        t = self.kb.tile(self.dtype, shape)
        self.kb.tload(self.kb.gm(name, self.dtype, shape), out=t)
        return Tile(self, t)

    def output(self, name, value):
        self.kb.tstore(value.v, out=self.kb.gm(name, self.dtype, value.shape))
        return self.kb.finish()
