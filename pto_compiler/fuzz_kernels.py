"""Random well-typed PTO-AS kernels for differential fuzzing (issue 15): every kernel this makes is
valid by construction, so ``ptoc K --target T --run`` must print PASS and exit 0 on both
targets; anything else (a FAIL, a race, a rejection, an internal error) is a bug in ptoc, with one
exception the oracle checks: a float row sum followed by cancellation (trowexpandsub of values of
the sum's size, then trecip or tdiv) can make an output depend on the summation order beyond the
float-sum tolerance.  Such a FAIL is ill-conditioned, not a bug, when the golden model summing
in another legal order moves every failing element too (pto_compiler/fuzz.py, order_dependent).

A kernel loads x and y (GM, ``R x C``) into tiles of one element type and valid region, runs a
chain of catalogue ops (elementwise tile-tile, tile-scalar, unary, expand-scalar, copy, row
reductions into an ``R x 1`` ColMajor tile and row-expand ops back) with ``scf.for`` loops and
``scf.if`` branches around parts of it, and stores one tile to z.  Tiles are placed by the
planner or, in about a third of the kernels, by hand (``alloc_tile addr = %a``).  A tile is
read only once something has written it on every path (the generator tracks that), so the
kernel never reads undefined bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

ELEM_BYTES = {"f32": 4, "f16": 2, "i32": 4, "i16": 2}
FLOATS = ("f32", "f16")

_BINARY = ("tadd", "tsub", "tmul", "tmax", "tmin")
_SCALAR = ("tadds", "tsubs", "tmuls", "tmaxs", "tmins")
_UNARY_ANY = ("tabs", "trelu")
_UNARY_FLOAT = ("texp", "trecip")
_ROW_REDUCE = ("trowmax", "trowmin", "trowsum")
_ROW_EXPAND = ("trowexpandadd", "trowexpandsub", "trowexpandmul", "trowexpandmax", "trowexpandmin")


@dataclass
class _Gen:
    rng: random.Random
    dtype: str
    rows: int
    cols: int
    vr: int
    vc: int
    manual: bool
    lines: list[str] = field(default_factory=list)
    written: set[str] = field(default_factory=set)
    consts: dict[str, str] = field(default_factory=dict)
    next_addr: int = 0
    depth: int = 0

    @property
    def tile(self) -> str:
        v = "" if (self.vr, self.vc) == (self.rows, self.cols) else f", valid={self.vr}x{self.vc}"
        return f"!pto.tile_buf<vec, {self.rows}x{self.cols}x{self.dtype}{v}>"

    @property
    def col(self) -> str:
        v = "" if self.vr == self.rows else f", valid={self.vr}x1"
        return f"!pto.tile_buf<vec, {self.rows}x1x{self.dtype}, blayout=col_major{v}>"

    def emit(self, text: str) -> None:
        self.lines.append("    " + "  " * self.depth + text)

    def scalar(self) -> str:
        if self.dtype in FLOATS:
            value = self.rng.choice(["0.5", "1.5", "-2.0", "0.0", "3.25"])
        else:
            value = str(self.rng.choice([0, 1, -3, 7, 100]))
        name = f"%s{len(self.consts)}"
        self.consts[name] = f"{name} = arith.constant {value} : {self.dtype}"
        return name

    def alloc(self, name: str, type_: str, nbytes: int) -> str:
        if not self.manual:
            return f"%{name} = pto.alloc_tile : {type_}"
        addr = self.next_addr
        self.next_addr += -(-nbytes // 32) * 32
        self.consts[f"%a{addr}"] = f"%a{addr} = arith.constant {addr} : i64"
        return f"%{name} = pto.alloc_tile addr = %a{addr} : {type_}"

    def pick(self, k: int = 1) -> list[str]:
        pool = sorted(self.written - {"r"})
        return [self.rng.choice(pool) for _ in range(k)]

    def op(self, tiles: list[str]) -> None:
        rng, t = self.rng, self.tile
        dst = rng.choice(tiles)
        kind = rng.random()
        if kind < 0.3:
            a, b = self.pick(2)
            name = rng.choice(_BINARY + (("tdiv",) if self.dtype in FLOATS else ()))
            self.emit(f"pto.{name} ins(%{a}, %{b} : {t}, {t}) outs(%{dst} : {t})")
        elif kind < 0.5:
            (a,) = self.pick()
            s = self.scalar()
            self.emit(f"pto.{rng.choice(_SCALAR)} ins(%{a}, {s} : {t}, {self.dtype}) outs(%{dst} : {t})")
        elif kind < 0.65:
            (a,) = self.pick()
            names = _UNARY_ANY + (_UNARY_FLOAT if self.dtype in FLOATS else ())
            self.emit(f"pto.{rng.choice(names)} ins(%{a} : {t}) outs(%{dst} : {t})")
        elif kind < 0.72:
            self.emit(f"pto.texpands ins({self.scalar()} : {self.dtype}) outs(%{dst} : {t})")
        elif kind < 0.8 or self.vc == 1:  # (with one valid column a row expand could expand either operand)
            (a,) = self.pick()
            self.emit(f"pto.tmov ins(%{a} : {t}) outs(%{dst} : {t})")
        else:
            (a,) = self.pick()
            reduce = rng.choice(_ROW_REDUCE if self.dtype in FLOATS else _ROW_REDUCE[:2])
            self.emit(f"pto.{reduce} ins(%{a} : {t}) outs(%r : {self.col})")
            (b,) = self.pick()
            self.emit(f"pto.{rng.choice(_ROW_EXPAND)} ins(%{b}, %r : {t}, {self.col}) outs(%{dst} : {t})")
        self.written.add(dst)

    def chain(self, tiles: list[str], n: int) -> None:
        for _ in range(n):
            roll = self.rng.random()
            if roll < 0.12 and self.depth < 2:
                trips = self.rng.randint(1, 3)
                self.consts[f"%n{trips}"] = f"%n{trips} = arith.constant {trips} : index"
                self.emit(f"scf.for %i{len(self.lines)} = %c0 to %n{trips} step %c1 {{")
                self.depth += 1
                self.chain(tiles, self.rng.randint(1, 3))
                self.depth -= 1
                self.emit("}")
            elif roll < 0.2 and self.depth < 2:
                a, b = self.rng.randint(0, 3), self.rng.randint(0, 3)
                for v in (a, b):
                    self.consts[f"%k{v}"] = f"%k{v} = arith.constant {v} : index"
                cond = f"%cond{len(self.lines)}"
                self.emit(f"{cond} = arith.cmpi slt, %k{a}, %k{b} : index")
                self.emit(f"scf.if {cond} {{")
                before = set(self.written)
                self.depth += 1
                self.chain(tiles, self.rng.randint(1, 2))
                self.depth -= 1
                self.emit("}")
                self.written = before  # what only one branch writes is not written on every path
            else:
                self.op(tiles)


def random_kernel(rng: random.Random) -> str:
    """One random kernel (PTO-AS text) ``@fuzz(%x, %y, %z)``; z is its output."""
    dtype = rng.choice(sorted(ELEM_BYTES))
    esz = ELEM_BYTES[dtype]
    rows = rng.choice([1, 2, 4, 8, 16])
    cols = rng.choice([1, 2, 4]) * (32 // esz)
    vr = rows if rng.random() < 0.5 else rng.randint(1, rows)
    vc = cols if rng.random() < 0.5 else rng.randint(1, cols)
    g = _Gen(rng, dtype, rows, cols, vr, vc, manual=rng.random() < 0.33)
    nbytes = rows * cols * esz
    n_tiles = rng.randint(3, 5)
    tiles = [f"t{k}" for k in range(n_tiles)]
    body: list[str] = []
    for name in tiles:
        body.append("    " + g.alloc(name, g.tile, nbytes))
    body.append("    " + g.alloc("r", g.col, rows * esz))
    part = f"!pto.partition_tensor_view<{vr}x{vc}x{dtype}>"
    view = f"!pto.tensor_view<?x?x{dtype}>"
    body.append(f"    pto.tload ins(%xp : {part}) outs(%t0 : {g.tile})")
    body.append(f"    pto.tload ins(%yp : {part}) outs(%t1 : {g.tile})")
    g.written = {"t0", "t1"}
    g.chain(tiles, rng.randint(1, 8))
    (out,) = g.pick()
    g.emit(f"pto.tstore ins(%{out} : {g.tile}) outs(%zp : {part})")
    head = [
        "module {",
        f"  func.func @fuzz(%x: !pto.ptr<{dtype}>, %y: !pto.ptr<{dtype}>, %z: !pto.ptr<{dtype}>) {{",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %rows = arith.constant {rows} : index",
        f"    %cols = arith.constant {cols} : index",
        f"    %vr = arith.constant {vr} : index",
        f"    %vc = arith.constant {vc} : index",
        *("    " + c for c in g.consts.values()),
    ]
    for gm in "xyz":
        head.append(f"    %{gm}v = pto.make_tensor_view %{gm}, shape = [%rows, %cols], strides = [%cols, %c1] : {view}")
        head.append(f"    %{gm}p = pto.partition_view %{gm}v, offsets = [%c0, %c0], sizes = [%vr, %vc] : {view} -> {part}")
    return "\n".join(head + body + g.lines + ["    return", "  }", "}", ""])
