"""Random well-typed PTO-AS kernels for differential fuzzing (issue 15): every kernel this makes is
valid by construction on the targets it is made for, so ``ptoc K --target T --run`` must print
PASS and exit 0 on each; anything else (a FAIL, a race, a rejection, an internal error) is a bug
in ptoc, with one exception the oracle checks: a float row sum followed by cancellation
(trowexpandsub of values of the sum's size, then trecip or tdiv) can make an output depend on the
summation order beyond the float-sum tolerance.  Such a FAIL is ill-conditioned, not a bug, when
the golden model summing in another legal order moves every failing element too
(pto_compiler/fuzz.py, order_dependent).

A kernel loads x and y (GM, ``R x C``) into tiles of one element type (f32 f16 bf16 i32 i16 i8
ui32 ui16 ui8) and valid region, runs a chain of catalogue ops with ``scf.for`` loops and
``scf.if`` branches around parts of it, and stores one tile to z.  The ops: elementwise
tile-tile (arithmetic, bitwise, TPART*), tile-scalar, ternary, unary, expand-scalar, copy,
TCI/TTRI, row and column reductions into an ``R x 1`` ColMajor / ``1 x C`` tile with the
row/column-expand ops back, TCMP/TCMPS into a ``ui8`` predicate tile read by TSEL/TSELS, and
TCVT into a tile of another type and back.
Each op is drawn only where every target's page allows its element type (``DTYPES`` of
dialects/pto.py), and integer operands with a domain (shift counts, divisors) are constants
inside it.  Tiles are placed by the planner or, in about a third of the kernels, by hand
(``alloc_tile addr = %a``).  A tile is read only once something has written it on every path
(the generator tracks that), so the kernel never reads undefined bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pto_compiler.dialects import pto
from pto_compiler.passes.tile_access import IN_PLACE_SAFE
from pto_compiler.targets import TARGETS
ELEM_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i16": 2, "i8": 1, "ui32": 4, "ui16": 2, "ui8": 1}
FLOATS = ("f32", "f16", "bf16")

_BINARY = ("tadd", "tsub", "tmul", "tmax", "tmin", "tdiv", "tand", "tor", "txor", "tsubrelu", "tprelu", "tpow",
           "tpartadd", "tpartmul", "tpartmax", "tpartmin")
_BINARY_FLOAT = ("trem", "tfmod")
"""Integer divisors could be 0, which C leaves undefined (the golden model rejects the input)."""
_SCALAR = ("tadds", "tsubs", "tmuls", "tmaxs", "tmins", "tdivs", "tands", "tors", "txors", "tlrelu", "tpows")
_SCALAR_DIVISOR = ("trems", "tfmods")
_SCALAR_SHIFT = ("tshls", "tshrs")
_TERNARY = ("taddc", "tsubc")
_SCALAR_TERNARY = ("taddsc", "tsubsc")
_UNARY = ("tabs", "trelu", "tneg", "tnot", "texp", "trecip", "tsqrt", "tlog", "trsqrt")
_ROW_REDUCE = ("trowmax", "trowmin", "trowsum", "trowprod")
_ROW_EXPAND = ("trowexpandadd", "trowexpandsub", "trowexpandmul", "trowexpandmax", "trowexpandmin",
               "trowexpanddiv", "trowexpandexpdif", "trowexpand")
_COL_REDUCE = ("tcolmax", "tcolmin", "tcolsum", "tcolprod")
_COL_EXPAND = ("tcolexpandadd", "tcolexpandsub", "tcolexpandmul", "tcolexpandmax", "tcolexpandmin",
               "tcolexpanddiv", "tcolexpandexpdif", "tcolexpand")
_CMP_MODES = ("EQ", "NE", "LT", "GT", "GE", "LE")
_ROUND_TRIPS = {"f32": (("f16", "CAST_RINT", "CAST_RINT"), ("i32", "CAST_TRUNC", "CAST_RINT")),
                "f16": (("f32", "CAST_RINT", "CAST_RINT"), ("i16", "CAST_ROUND", "CAST_RINT"),
                        ("i8", "CAST_FLOOR", "CAST_RINT")),
                "i32": (("f32", "CAST_RINT", "CAST_TRUNC"),), "i16": (("f16", "CAST_RINT", "CAST_ROUND"),),
                "i8": (("f16", "CAST_RINT", "CAST_FLOOR"),)}
"""TCVT there and back: type -> (other type, rmode there, rmode back), pairs both targets convert."""
_SCALARS = {"float": ["0.5", "1.5", "-2.0", "0.0", "3.25"], "signed": [0, 1, -3, 7, 100],
            "unsigned": [0, 1, 3, 7, 100]}


@dataclass
class _Gen:
    rng: random.Random
    dtype: str
    rows: int
    cols: int
    vr: int
    vc: int
    manual: bool
    targets: tuple[str, ...]
    tiles: list[str]
    lines: list[str] = field(default_factory=list)
    written: set[str] = field(default_factory=set)
    consts: dict[str, str] = field(default_factory=dict)
    args: dict[str, tuple[int, str]] = field(default_factory=dict)
    other: tuple[str, str, str] | None = None
    """The TCVT round trip (:data:`_ROUND_TRIPS`) of the kernel, if any: (type, rmode there, back)."""
    """Unsigned scalars, kernel arguments (arith.constant is signless): name -> (value, type)."""
    next_addr: int = 0
    depth: int = 0

    def allowed(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """The ops of ``names`` whose pages allow this kernel's element type on every target."""
        return tuple(n for n in names
                     if all(self.dtype in pto.TILE_OPS[f"pto.{n}"].DTYPES[t] for t in self.targets))

    @property
    def tile(self) -> str:
        v = "" if (self.vr, self.vc) == (self.rows, self.cols) else f", valid={self.vr}x{self.vc}"
        return f"!pto.tile_buf<vec, {self.rows}x{self.cols}x{self.dtype}{v}>"

    @property
    def col(self) -> str:
        v = "" if self.vr == self.rows else f", valid={self.vr}x1"
        return f"!pto.tile_buf<vec, {self.rows}x1x{self.dtype}, blayout=col_major{v}>"

    @property
    def row(self) -> str:
        v = "" if self.vc == self.cols else f", valid=1x{self.vc}"
        return f"!pto.tile_buf<vec, 1x{self.cols}x{self.dtype}{v}>"

    @property
    def mask(self) -> str:
        """A predicate tile: one bit per column, 32 bytes a row."""
        v = "" if self.vr == self.rows else f", valid={self.vr}x32"
        return f"!pto.tile_buf<vec, {self.rows}x32xui8{v}>"

    def emit(self, text: str) -> None:
        self.lines.append("    " + "  " * self.depth + text)

    def constant(self, value, type_: str) -> str:
        name = f"%s{len(self.consts) + len(self.args)}"
        if type_.startswith("ui"):
            self.args[name] = (value, type_)
        else:
            self.consts[name] = f"{name} = arith.constant {value} : {type_}"
        return name

    def scalar(self) -> str:
        kind = "float" if self.dtype in FLOATS else "unsigned" if self.dtype.startswith("u") else "signed"
        return self.constant(self.rng.choice(_SCALARS[kind]), self.dtype)

    def alloc(self, name: str, type_: str, nbytes: int) -> str:
        if not self.manual:
            return f"%{name} = pto.alloc_tile : {type_}"
        addr = self.next_addr
        self.next_addr += -(-nbytes // 32) * 32
        self.consts[f"%a{addr}"] = f"%a{addr} = arith.constant {addr} : i64"
        return f"%{name} = pto.alloc_tile addr = %a{addr} : {type_}"

    def pick(self, k: int = 1) -> list[str]:
        pool = sorted(self.written - {"r", "c", "m", "v"})
        return [self.rng.choice(pool) for _ in range(k)]

    def dst(self, op: str, sources: list[str]) -> str:
        """A tile for ``op`` to write: any, or one of none of its sources if it cannot work in place."""
        safe = pto.TILE_OPS[f"pto.{op}"].FAMILY in IN_PLACE_SAFE
        dst = self.rng.choice([t for t in self.tiles if safe or t not in sources])
        self.written.add(dst)
        return dst

    def op(self) -> None:
        """One op (or a reduction and its expand, a compare and its select)."""
        families = [(w, f) for w, f, ok in (
            (25, self.binary, self.allowed(_BINARY)), (17, self.with_scalar, self.allowed(_SCALAR)),
            (6, self.ternary, self.allowed(_TERNARY + _SCALAR_TERNARY)), (10, self.unary, self.allowed(_UNARY)),
            (5, self.expand_scalar, True), (3, self.index_or_triangle, self.allowed(("tci", "ttri"))),
            (8, self.copy, True),
            (10, self.row_reduce_expand, self.vc > 1 and self.allowed(_ROW_REDUCE)),  # (one valid column:
            (8, self.col_reduce_expand, self.vr > 1 and self.allowed(_COL_REDUCE)),  # an expand of either)
            (8, self.compare_select, self.allowed(("tcmp", "tcmps")) and self.allowed(("tsel", "tsels"))),
            (5, self.convert_round_trip, self.other is not None),
        ) if ok]
        weights, makers = zip(*families)
        self.rng.choices(makers, weights)[0]()

    def binary(self) -> None:
        t = self.tile
        a, b = self.pick(2)
        integer = self.dtype not in FLOATS
        name = self.rng.choice(self.allowed(_BINARY + (() if integer else _BINARY_FLOAT)))
        self.emit(f"pto.{name} ins(%{a}, %{b} : {t}, {t}) outs(%{self.dst(name, [a, b])} : {t})")

    def with_scalar(self) -> None:
        rng, t, dt = self.rng, self.tile, self.dtype
        integer = dt not in FLOATS
        (a,) = self.pick()
        name = rng.choice(self.allowed(_SCALAR + _SCALAR_DIVISOR + (_SCALAR_SHIFT if integer else ())))
        if name in _SCALAR_SHIFT:
            s = self.constant(rng.randrange(8 * ELEM_BYTES[dt]), dt)
        elif name in _SCALAR_DIVISOR and integer:
            s = self.constant(rng.choice([1, 3, 7, 100]), dt)
        else:
            s = self.scalar()
        self.emit(f"pto.{name} ins(%{a}, {s} : {t}, {dt}) outs(%{self.dst(name, [a])} : {t})")

    def ternary(self) -> None:
        t, dt = self.tile, self.dtype
        a, b, c = self.pick(3)
        name = self.rng.choice(self.allowed(_TERNARY + _SCALAR_TERNARY))
        if name in _TERNARY:
            self.emit(f"pto.{name} ins(%{a}, %{b}, %{c} : {t}, {t}, {t}) outs(%{self.dst(name, [a, b, c])} : {t})")
        else:
            s = self.scalar()
            self.emit(f"pto.{name} ins(%{a}, {s}, %{c} : {t}, {dt}, {t}) outs(%{self.dst(name, [a, c])} : {t})")

    def unary(self) -> None:
        (a,) = self.pick()
        name = self.rng.choice(self.allowed(_UNARY))
        self.emit(f"pto.{name} ins(%{a} : {self.tile}) outs(%{self.dst(name, [a])} : {self.tile})")

    def expand_scalar(self) -> None:
        self.emit(f"pto.texpands ins({self.scalar()} : {self.dtype}) outs(%{self.dst('texpands', [])} : {self.tile})")

    def index_or_triangle(self) -> None:
        rng, t = self.rng, self.tile
        if rng.choice(self.allowed(("tci", "ttri"))) == "tci":
            desc = rng.choice(["true", "false"])
            s = self.scalar()
            self.emit(f"pto.tci ins({s} {{descending = {desc}}} : {self.dtype}) outs(%{self.dst('tci', [])} : {t})")
        else:
            n, upper = self.constant(rng.randint(-2, self.vc + 1), "i32"), rng.randint(0, 1)
            self.emit(f"pto.ttri ins({n} : i32) outs(%{self.dst('ttri', [])} : {t}) {{upperOrLower = {upper} : i32}}")

    def copy(self) -> None:
        (a,) = self.pick()
        self.emit(f"pto.tmov ins(%{a} : {self.tile}) outs(%{self.dst('tmov', [a])} : {self.tile})")

    def row_reduce_expand(self) -> None:
        self.reduce_expand("r", self.col, _ROW_REDUCE, _ROW_EXPAND)

    def col_reduce_expand(self) -> None:
        self.reduce_expand("c", self.row, _COL_REDUCE, _COL_EXPAND)

    def reduce_expand(self, name: str, type_: str, reduces: tuple, expands: tuple) -> None:
        """A row (column) reduction into ``name`` and a row (column) expand of it into a tile."""
        rng, t = self.rng, self.tile
        (a,) = self.pick()
        self.emit(f"pto.{rng.choice(self.allowed(reduces))} ins(%{a} : {t}) outs(%{name} : {type_})")
        expand = rng.choice(self.allowed(expands))
        if expand in ("trowexpand", "tcolexpand"):
            self.emit(f"pto.{expand} ins(%{name} : {type_}) outs(%{self.dst(expand, [])} : {t})")
        else:
            (b,) = self.pick()
            self.emit(f"pto.{expand} ins(%{b}, %{name} : {t}, {type_}) outs(%{self.dst(expand, [b])} : {t})")

    def other_tile(self) -> str:
        v = "" if (self.vr, self.vc) == (self.rows, self.cols) else f", valid={self.vr}x{self.vc}"
        return f"!pto.tile_buf<vec, {self.rows}x{self.cols}x{self.other[0]}{v}>"

    def convert_round_trip(self) -> None:
        """TCVT into the tile of the other type ``v`` and back into a tile."""
        other, there, back = self.other
        t, v = self.tile, self.other_tile()
        (a,) = self.pick()
        self.emit(f"pto.tcvt ins(%{a} {{rmode = #pto<round_mode {there}>}} : {t}) outs(%v : {v})")
        self.emit(f"pto.tcvt ins(%v {{rmode = #pto<round_mode {back}>}} : {v}) outs(%{self.dst('tcvt', [])} : {t})")

    def compare_select(self) -> None:
        """TCMP/TCMPS into the predicate tile and TSEL/TSELS of it (A2/A3 compares i32 with EQ only)."""
        rng, t, dt, m = self.rng, self.tile, self.dtype, self.mask
        a, b = self.pick(2)
        mode = "EQ" if dt == "i32" and "a2a3" in self.targets else rng.choice(_CMP_MODES)
        cmp = rng.choice(self.allowed(("tcmp", "tcmps")))
        other, other_type = (f"%{b}", t) if cmp == "tcmp" else (self.scalar(), dt)
        self.emit(f"pto.{cmp} ins(%{a}, {other} {{cmpMode = #pto.cmp<{mode}>}} : {t}, {other_type}) outs(%m : {m})")
        a, b = self.pick(2)
        if rng.choice(self.allowed(("tsel", "tsels"))) == "tsel":
            self.emit(f"pto.tsel ins(%m, %{a}, %{b} : {m}, {t}, {t}) outs(%{self.dst('tsel', [a, b])} : {t})")
        else:
            s = self.scalar()
            self.emit(f"pto.tsels ins(%m, %{a}, {s} : {m}, {t}, {dt}) outs(%{self.dst('tsels', [a])} : {t})")

    def chain(self, n: int) -> None:
        for _ in range(n):
            roll = self.rng.random()
            if roll < 0.12 and self.depth < 2:
                trips = self.rng.randint(1, 3)
                self.consts[f"%n{trips}"] = f"%n{trips} = arith.constant {trips} : index"
                self.emit(f"scf.for %i{len(self.lines)} = %c0 to %n{trips} step %c1 {{")
                self.depth += 1
                self.chain(self.rng.randint(1, 3))
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
                self.chain(self.rng.randint(1, 2))
                self.depth -= 1
                self.emit("}")
                self.written = before  # what only one branch writes is not written on every path
            else:
                self.op()


INPUTS = "// inputs: "
"""The first line of a kernel with unsigned scalar arguments: their values, ``NAME=VALUE ...``."""


def kernel_inputs(text: str) -> dict[str, int]:
    """The scalar arguments' values a generated kernel states on its first line (:data:`INPUTS`)."""
    first = text.split("\n", 1)[0]
    if not first.startswith(INPUTS):
        return {}
    return {name: int(value) for name, value in (item.split("=") for item in first[len(INPUTS):].split())}


def random_kernel(rng: random.Random, targets: tuple[str, ...] = tuple(TARGETS)) -> str:
    """One random kernel (PTO-AS text) ``@fuzz(%x, %y, %z, ...)`` valid on every target of
    ``targets``; z is its output, the scalar arguments' values are :func:`kernel_inputs`."""
    dtype = rng.choice(sorted(ELEM_BYTES))
    esz = ELEM_BYTES[dtype]
    rows = rng.choice([1, 2, 4, 8, 16])
    cols = rng.choice([1, 2, 4]) * (32 // esz)
    vr = rows if rng.random() < 0.5 else rng.randint(1, rows)
    vc = cols if rng.random() < 0.5 else rng.randint(1, cols)
    tiles = [f"t{k}" for k in range(rng.randint(4, 6))]  # (one more than a ternary op reads)
    g = _Gen(rng, dtype, rows, cols, vr, vc, manual=rng.random() < 0.33, targets=targets, tiles=tiles)
    nbytes = rows * cols * esz
    body: list[str] = []
    for name in tiles:
        body.append("    " + g.alloc(name, g.tile, nbytes))
    body.append("    " + g.alloc("r", g.col, rows * esz))
    body.append("    " + g.alloc("c", g.row, cols * esz))
    body.append("    " + g.alloc("m", g.mask, rows * 32))
    trips = [trip for trip in _ROUND_TRIPS.get(dtype, ()) if cols * ELEM_BYTES[trip[0]] % 32 == 0]
    g.other = rng.choice(trips) if trips else None  # (rows of both types whole 32-byte blocks)
    if g.other is not None:
        body.append("    " + g.alloc("v", g.other_tile(), rows * cols * ELEM_BYTES[g.other[0]]))
    part = f"!pto.partition_tensor_view<{vr}x{vc}x{dtype}>"
    view = f"!pto.tensor_view<?x?x{dtype}>"
    body.append(f"    pto.tload ins(%xp : {part}) outs(%t0 : {g.tile})")
    body.append(f"    pto.tload ins(%yp : {part}) outs(%t1 : {g.tile})")
    g.written = {"t0", "t1"}
    g.chain(rng.randint(1, 8))
    (out,) = g.pick()
    g.emit(f"pto.tstore ins(%{out} : {g.tile}) outs(%zp : {part})")
    args = "".join(f", {name}: {type_}" for name, (_, type_) in g.args.items())
    head = [
        *([INPUTS + " ".join(f"{name[1:]}={value}" for name, (value, _) in g.args.items())] if g.args else []),
        "module {",
        f"  func.func @fuzz(%x: !pto.ptr<{dtype}>, %y: !pto.ptr<{dtype}>, %z: !pto.ptr<{dtype}>{args}) {{",
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
