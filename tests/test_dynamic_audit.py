"""Audit of run-time valid shapes (issue 12 item 1: "set_validshape, dynamic valid rows/cols, for every
family"): each vector op family, on both targets, in every element type each target's page allows.

One kernel per (family, target, dtype, form).  The alloc form: the sources are loaded from GM
through partitions of the run-time size into ``valid=?x?`` tiles allocated with those dims (a column
tile ``?x1``, a row tile ``1x?``, Mode 2's block tile ``?xB``), y is loaded into dst (what the op
leaves unwritten keeps y's values), the op runs and dst's valid region is stored back into y.  The
set_validshape form: every tile is loaded whole and ``pto.set_validshape`` gives it the run-time
region just before the op (dst's set back to the whole tile after it, then stored whole).  From that
one compiled kernel the valid region (vr, vc) runs over the whole tile, a smaller one with odd cols,
one element, half the cols plus one, no rows and no cols (families whose page forbids an empty
source skip the last two).  y == NumPy of the op over the valid region, from the executor and the
golden model: bit for bit, float sums within ``eps * (sum |x| + 1)``; outside the valid region the
rest of the 32-byte block a valid line ends in is not compared (:func:`_block_tail`).  Families whose run-time
forms have their own tests are listed in :data:`ELSEWHERE`; :func:`test_every_family_is_audited`
checks that the table and that list name every family with semantics.

CI runs each (family, target) once in the alloc form and each family once in the set_validshape
form, the element type (and the latter's target) a seeded choice; ``-m full`` runs every element
type in both forms.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.dialects import pto
from pto_compiler.targets import lookup_target

TARGETS = ("a2a3", "ascend950")
NPD = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "ui8": np.uint8,
       "i16": np.int16, "ui16": np.uint16, "i32": np.int32, "ui32": np.uint32, "i64": np.int64, "ui64": np.uint64}
EPS = {"f32": 2.0 ** -20, "f16": 2.0 ** -9, "bf16": 2.0 ** -6}
"""Float sums: the executor's order of additions within ``EPS * (sum |x| + 1)`` of the exact sum."""


@dataclass(frozen=True)
class Spec:
    """``line``: the op, with %s0.. the sources, %d the destination, %sc a kernel scalar of the
    source type (given 3), %f an f32 3.0, %g an f32 2^-20, %n an i32 7 and {t0}.. {td} {sdt} the
    types; ``srcs``/``dst``: the tiles' kinds ("full" R x C, "col" R x 1 ColMajor, "row" 1 x C,
    "blk" R x 32/sizeof(T), "tall" C x R, "whole" R x C of static valid shape, loaded whole: a
    gather's source; "mask" R x 32 bytes of packed predicate bits, valid vr x ceil(vc / its bits
    an element): TCMP's dst, TSEL's mask); ``want(xs, y, dt)``: NumPy of the op on the sources' valid regions (y: dst's
    region before, for the ops that read it), giving dst's valid region."""
    line: str
    srcs: tuple[str, ...]
    dst: str
    want: object
    out: str | dict | None = None
    """dst's element type when it is not the sources' ("i32": the index forms), or one per target."""
    pairs: tuple[tuple[str, str], ...] = ()
    """(source, destination) element types instead of the op's dtype list (conversions)."""
    empty: bool = True
    """Run with empty valid regions too (a row reduction or index reduction of nothing is an error)."""
    sums: bool = False
    """A float sum: compared within EPS (integers bit for bit)."""
    values: str = "any"
    """"any": floats ~N(0, 16), integers over their whole range; "small": integers in -3..3 (products);
    "few": every type in -3..3 (0..3 unsigned), so that compares for equality hold often."""
    idx: str | None = None
    """The last source's element type when it holds indices into the first source's tile: element
    numbers ("i32": TGATHER) or byte offsets ("ui32": TGATHERB); ``want`` gets the whole tiles."""
    mask: str = "ui8"
    """A "mask" source's element type (TSEL's mask: any integer type, its bytes read)."""

    @property
    def op(self) -> str:
        return self.line.split("pto.", 1)[1].split(" ", 1)[0]


def _left_to_right(f, axis):
    def go(x):
        x = np.moveaxis(x, axis, 0)
        acc = x[0].copy()
        for v in x[1:]:
            acc = f(acc, v).astype(x.dtype)
        return np.expand_dims(acc, axis)
    return go


def _pairs(x):
    vr, vc = x.shape
    p = np.concatenate([x, np.zeros((vr, 1), x.dtype)], axis=1) if vc % 2 else x
    out = np.zeros_like(x)
    out[:, :(vc + 1) // 2] = p[:, 0::2] + p[:, 1::2]
    return out


def _first_index(x, axis, is_max):
    return (x.argmax if is_max else x.argmin)(axis=axis)


def _relu_conv(xs, y, dt):
    import test_vector_catalogue as VC
    from test_reference_props import py

    sdt = xs[0].dtype
    name = next(k for k, v in NPD.items() if np.dtype(v) == sdt)
    ddt = dict(pto.RELU_CONV_PAIRS)[name]
    a, b = xs
    return np.array([[VC.o_relu_conv(py(a[i, j], name), py(b[i, j], name), name, ddt, False)
                      for j in range(a.shape[1])] for i in range(a.shape[0])], dtype=NPD[ddt]).reshape(a.shape)


def _deq_relu(xs):
    import test_vector_catalogue as VC

    a, b = (x.astype(np.int64) for x in xs[:2])
    return np.array([[VC.o_deq_relu(int(a[i, j]), int(b[i, j]), 2.0 ** -20) for j in range(a.shape[1])]
                     for i in range(a.shape[0])], np.float16).reshape(a.shape)


def _packed(p, y, dt):
    """The page's predicate of ``p`` (R x C booleans) in dst's valid region ``y``: bit j % 8 of byte
    j // 8 of each row, the bytes past ceil(C / 8) zero."""
    nbytes = y.shape[1] * np.dtype(dt).itemsize
    out = np.zeros((p.shape[0], nbytes), np.uint8)
    bits = np.packbits(p, axis=1, bitorder="little")
    out[:, :bits.shape[1]] = bits
    return out.view(dt)


def _unpacked(m, cols):
    """Bit j % 8 of byte j // 8 of each row of the mask ``m``, for j < cols."""
    return np.unpackbits(np.ascontiguousarray(m).view(np.uint8), axis=1, bitorder="little")[:, :cols].astype(bool)


def _tile_blocks(b, vc):
    return b[:, np.arange(vc) % b.shape[1]]


FAMILIES = {
    "binary": Spec("pto.tadd ins(%s0, %s1 : {t0}, {t1}) outs(%d : {td})", ("full", "full"), "full",
                   lambda xs, y, dt: xs[0] + xs[1]),
    "binary-max": Spec("pto.tmax ins(%s0, %s1 : {t0}, {t1}) outs(%d : {td})", ("full", "full"), "full",
                       lambda xs, y, dt: np.maximum(xs[0], xs[1])),
    "unary": Spec("pto.tabs ins(%s0 : {t0}) outs(%d : {td})", ("full",), "full", lambda xs, y, dt: np.abs(xs[0])),
    "scalar": Spec("pto.tmuls ins(%s0, %sc : {t0}, {sdt}) outs(%d : {td})", ("full",), "full",
                   lambda xs, y, dt: xs[0] * np.asarray(3).astype(dt)),
    "expands": Spec("pto.texpands ins(%sc : {sdt}) outs(%d : {td})", (), "full",
                    lambda xs, y, dt: np.full(y.shape, 3, dt)),
    "rowexpand-m1": Spec("pto.trowexpandmul ins(%s0, %s1 : {t0}, {t1}) outs(%d : {td})", ("full", "col"), "full",
                         lambda xs, y, dt: xs[0] * xs[1]),
    "rowexpand-m2-src0": Spec("pto.trowexpandsub ins(%s0, %s1 : {t0}, {t1}) outs(%d : {td})", ("blk", "full"), "full",
                              lambda xs, y, dt: _tile_blocks(xs[0], xs[1].shape[1]) - xs[1]),
    "colexpand": Spec("pto.tcolexpandmax ins(%s0, %s1 : {t0}, {t1}) outs(%d : {td})", ("full", "row"), "full",
                      lambda xs, y, dt: np.maximum(xs[0], xs[1])),
    "rowbroadcast": Spec("pto.trowexpand ins(%s0 : {t0}) outs(%d : {td})", ("col",), "full",
                         lambda xs, y, dt: np.repeat(xs[0], y.shape[1], axis=1)),
    "colbroadcast": Spec("pto.tcolexpand ins(%s0 : {t0}) outs(%d : {td})", ("row",), "full",
                         lambda xs, y, dt: np.repeat(xs[0], y.shape[0], axis=0)),
    "rowreduce": Spec("pto.trowmax ins(%s0 : {t0}) outs(%d : {td})", ("full",), "col",
                      lambda xs, y, dt: xs[0].max(axis=1, keepdims=True), empty=False),
    "rowsum": Spec("pto.trowsum ins(%s0 : {t0}) outs(%d : {td})", ("full",), "col",
                   lambda xs, y, dt: xs[0].sum(axis=1, keepdims=True, dtype=np.float64 if xs[0].dtype.kind == "f"
                                               or xs[0].dtype == ml_dtypes.bfloat16 else dt),
                   empty=False, sums=True),
    "colreduce": Spec("pto.tcolmin ins(%s0 : {t0}) outs(%d : {td})", ("full",), "row",
                      lambda xs, y, dt: xs[0].min(axis=0, keepdims=True)),
    "colsum": Spec("pto.tcolsum ins(%s0 : {t0}) outs(%d : {td})", ("full",), "row",
                   lambda xs, y, dt: xs[0].sum(axis=0, keepdims=True, dtype=np.float64 if xs[0].dtype.kind == "f"
                                               or xs[0].dtype == ml_dtypes.bfloat16 else dt), sums=True),
    "rowprod": Spec("pto.trowprod ins(%s0 : {t0}) outs(%d : {td})", ("full",), "col",
                    lambda xs, y, dt: _left_to_right(np.multiply, 1)(xs[0]), empty=False, values="small"),
    "colprod": Spec("pto.tcolprod ins(%s0 : {t0}) outs(%d : {td})", ("full",), "row",
                    lambda xs, y, dt: _left_to_right(np.multiply, 0)(xs[0]), values="small"),
    "rowarg": Spec("pto.trowargmax ins(%s0 : {t0}) outs(%d : {td})", ("full",), "col",
                   lambda xs, y, dt: _first_index(xs[0], 1, True)[:, None], out="i32", empty=False),
    "colarg": Spec("pto.tcolargmin ins(%s0 : {t0}) outs(%d : {td})", ("full",), "row",
                   lambda xs, y, dt: _first_index(xs[0], 0, False)[None, :], out="i32"),
    "pairreduce": Spec("pto.tpairreducesum ins(%s0 : {t0}) outs(%d : {td})", ("full",), "full",
                       lambda xs, y, dt: _pairs(xs[0])),
    "composed": Spec("pto.taddc ins(%s0, %s1, %s2 : {t0}, {t1}, {t2}) outs(%d : {td})", ("full",) * 3, "full",
                     lambda xs, y, dt: (xs[0] + xs[1]) + xs[2]),
    "axpy": Spec("pto.taxpy ins(%s0, %sc : {t0}, {sdt}) outs(%d : {td})", ("full",), "full",
                 lambda xs, y, dt: xs[0] * np.asarray(3).astype(dt) + y),
    "tri": Spec("pto.ttri ins(%n : i32) outs(%d : {td}) {{upperOrLower = 0 : i32}}", (), "full",
                lambda xs, y, dt: (np.arange(y.shape[1])[None, :] <= np.arange(y.shape[0])[:, None] + 7).astype(dt)),
    "ci": Spec("pto.tci ins(%n : i32) outs(%d : {td}) {{descending = false}}", (), "full",
               lambda xs, y, dt: (7 + np.arange(y.size)).reshape(y.shape).astype(dt)),
    "cvt": Spec("pto.tcvt ins(%s0 {{rmode = #pto<round_mode CAST_RINT>}} : {t0}) outs(%d : {td})", ("full",), "full",
                lambda xs, y, dt: xs[0].astype(dt),
                pairs=(("f32", "f16"), ("f16", "f32"), ("i32", "f32"), ("i16", "f16"), ("f32", "bf16"))),
    "mov": Spec("pto.tmov ins(%s0 : {t0}) outs(%d : {td})", ("full",), "full", lambda xs, y, dt: xs[0]),
    "trans": Spec("pto.ttrans ins(%s0 : {t0}) outs(%d : {td})", ("full",), "tall", lambda xs, y, dt: xs[0].T),
    "gather": Spec("pto.tgather ins(%s0, %s1 : {t0}, {t1}) outs(%d : {td})", ("whole", "full"), "full",
                   lambda xs, y, dt: xs[0].reshape(-1)[xs[1][:y.shape[0], :y.shape[1]]], idx="i32"),
    "gatherb": Spec("pto.tgatherb ins(%s0, %s1 : {t0}, {t1}) outs(%d : {td})", ("whole", "full"), "full",
                    lambda xs, y, dt: xs[0].reshape(-1)[xs[1][:y.shape[0], :y.shape[1]] // xs[0].itemsize], idx="ui32"),
    "cmp": Spec("pto.tcmp ins(%s0, %s1 : {t0}, {t1}) outs(%d : {td}) {{cmpMode = #pto.cmp<EQ>}}", ("full", "full"),
                "mask", lambda xs, y, dt: _packed(xs[0] == xs[1], y, dt), out="ui8", values="few"),
    "cmps": Spec("pto.tcmps ins(%s0, %sc : {t0}, {sdt}) outs(%d : {td}) {{cmpMode = #pto.cmp<EQ>}}", ("full",), "mask",
                 lambda xs, y, dt: _packed(xs[0] == np.asarray(3).astype(xs[0].dtype), y, dt),
                 out={"a2a3": "i8", "ascend950": "ui32"}, values="few"),
    "sel": Spec("pto.tsel ins(%s0, %s1, %s2 : {t0}, {t1}, {t2}) outs(%d : {td})", ("mask", "full", "full"), "full",
                lambda xs, y, dt: np.where(_unpacked(xs[0], y.shape[1]), xs[1], xs[2])),
    "sels": Spec("pto.tsels ins(%s0, %s1, %sc : {t0}, {t1}, {sdt}) outs(%d : {td})", ("mask", "full"), "full",
                 lambda xs, y, dt: np.where(_unpacked(xs[0], y.shape[1]), xs[1], np.asarray(3).astype(dt)),
                 mask="i32"),
    "reluconv": Spec("pto.taddreluconv ins(%s0, %s1 : {t0}, {t1}) outs(%d : {td})", ("full", "full"), "full",
                     _relu_conv, pairs=pto.RELU_CONV_PAIRS, empty=False),
    "deqrelu": Spec("pto.tadddeqrelu ins(%s0, %s1, %g, %s2 : {t0}, {t1}, f32, {t2}) outs(%d : {td})", ("full",) * 3,
                    "full", lambda xs, y, dt: _deq_relu(xs), pairs=(("i32", "f16"),), empty=False),
}

ELSEWHERE = {
    "fillpad": "test_dynamic_valid.py::test_fillpad_forms_of_run_time_valid_shapes",
    "part": "test_dynamic_valid.py::test_tpart_of_run_time_valid_shapes",
    "partarg": "test_dynamic_audit.py::test_tpartarg_of_run_time_valid_shapes (two destinations)",
    "sort32": "test_dynamic_valid.py::test_tsort32_of_run_time_valid_shapes",
    "mrgsort": "test_dynamic_valid.py::test_tmrgsort_of_run_time_valid_shapes",
    "scatter": "test_dynamic_valid.py::test_tscatter_of_run_time_valid_shapes",
    "interleave": "test_dynamic_valid.py::test_interleave_of_run_time_valid_shapes_on_ascend950",
    "dequant": "test_dynamic_valid.py::test_tdequant_of_run_time_valid_shapes",
    "concat": "test_vector_catalogue.py::test_tconcat_with_src1_inside_a_block_or_run_time_shapes",
    "mgather": "test_mgather.py::test_run_time_valid_shapes",
    "mscatter": "test_mgather.py::test_run_time_valid_shapes",
    "load": "every kernel here (partitions of run-time size)",
    "store": "every kernel here (partitions of run-time size)",
}
"""Families whose run-time valid shapes are tested elsewhere (the test named)."""


def _shape(kind, R, C, B, M=1):
    """A tile's shape (``M``: the bytes of a mask tile's element)."""
    return {"full": (R, C), "whole": (R, C), "col": (R, 1), "row": (1, C), "blk": (R, B), "tall": (C, R),
            "mask": (R, 32 // M)}[kind]


def _valid(kind, vr, vc, B, M=1):
    return {"whole": (None, None), "full": (vr, vc), "col": (vr, 1), "row": (1, vc), "blk": (vr, B), "tall": (vc, vr),
            "mask": (vr, -(-vc // (8 * M)))}[kind]


def _valid_text(kind, B, set_form):
    if kind == "whole":
        return "whole"
    return "?x?" if set_form else {"full": "?x?", "col": "?x1", "row": "1x?", "blk": f"?x{B}", "tall": "?x?",
                                   "mask": "?x?"}[kind]


def _type(kind, dt, R, C, B, set_form=False):
    r, c = _shape(kind, R, C, B, np.dtype(NPD[dt]).itemsize)
    return (f"!pto.tile_buf<vec, {r}x{c}x{dt}, valid={_valid_text(kind, B, set_form).replace('whole', f'{r}x{c}')}"
            + (", blayout=col_major>" if kind == "col" else ">"))


def _dims(kind):
    """The valid region's dims (the alloc_tile operands of its run-time ones)."""
    return {"full": ("%vr", "%vc"), "col": ("%vr", "%c1"), "row": ("%c1", "%vc"), "blk": ("%vr", "%cb"),
            "tall": ("%vc", "%vr"), "mask": ("%vr", "%vm")}[kind]


def _source_types(spec: Spec, sdt: str, ddt: str) -> tuple[list[str], int]:
    """The sources' element types, and the bytes of an element of the mask tile (1 without one)."""
    dts = [spec.mask if k == "mask" else sdt for k in spec.srcs]
    if spec.idx:
        dts[-1] = spec.idx
    masks = [dt for k, dt in zip((*spec.srcs, spec.dst), (*dts, ddt)) if k == "mask"]
    return dts, np.dtype(NPD[masks[0] if masks else "ui8"]).itemsize


def kernel(spec: Spec, sdt: str, ddt: str, R: int, C: int, B: int, set_form: bool = False) -> str:
    """The kernel of one case.  ``set_form``: every tile allocated, loaded and stored whole, its
    valid region set with ``pto.set_validshape`` just before the op (dst's set back to the whole
    tile after it); else tiles allocated with the run-time valid dims and loaded/stored through
    partitions of that size."""
    names = [f"x{i}" for i in range(len(spec.srcs))]
    dts, m = _source_types(spec, sdt, ddt)
    args = ", ".join([f"%{n}: !pto.ptr<{dt}>" for n, dt in zip(names, dts)] + [f"%y: !pto.ptr<{ddt}>"]
                     + ([f"%sc: {sdt}"] if "%sc" in spec.line else []))
    lines = [f"func.func @k({args}, %vr: index, %vc: index) {{", "  %c0 = arith.constant 0 : index",
             "  %c1 = arith.constant 1 : index", f"  %cb = arith.constant {B} : index",
             "  %f = arith.constant 3.0 : f32", "  %g = arith.constant 9.5367431640625e-07 : f32",
             "  %n = arith.constant 7 : i32", f"  %cm = arith.constant {8 * m} : index",
             "  %vm = arith.ceildivui %vc, %cm : index"]
    types, tiles, sets = {}, {}, []
    for name, kind, dt in [*zip(names, spec.srcs, dts), ("y", spec.dst, ddt)]:
        r, c = _shape(kind, R, C, B, m)
        t = types[name] = _type(kind, dt, R, C, B, set_form)
        tile = tiles[name] = "%d" if name == "y" else "%s" + name[1:]
        whole = (f"%{name}r", f"%{name}c")
        vr, vc = whole if set_form or kind == "whole" else _dims(kind)
        ptype = f"!pto.partition_tensor_view<?x?x{dt}>"
        vt = _valid_text(kind, B, set_form)
        valid = " ".join(f"{k} = {v}" for k, v, dyn in (("valid_row", vr, vt.startswith("?")),
                                                       ("valid_col", vc, vt.endswith("?"))) if dyn)
        lines += [f"  %{name}r = arith.constant {r} : index", f"  %{name}c = arith.constant {c} : index",
                  f"  %{name}v = pto.make_tensor_view %{name}, shape = [%{name}r, %{name}c], strides = [%{name}c, %c1] "
                  f": !pto.tensor_view<?x?x{dt}>",
                  f"  %{name}p = pto.partition_view %{name}v, offsets = [%c0, %c0], sizes = [{vr}, {vc}] "
                  f": !pto.tensor_view<?x?x{dt}> -> {ptype}",
                  f"  {tile} = pto.alloc_tile {valid} : {t}",
                  f"  pto.tload ins(%{name}p : {ptype}) outs({tile} : {t})"]
        if set_form and kind != "whole":
            sets.append(f"  pto.set_validshape {tile}, {', '.join(_dims(kind))} : {t}")
    fmt = {f"t{i}": types[n] for i, n in enumerate(names)}
    lines += sets + ["  " + spec.line.format(**fmt, td=types["y"], sdt=sdt)]
    if set_form:
        lines.append(f"  pto.set_validshape %d, %yr, %yc : {types['y']}")
    lines.append(f"  pto.tstore ins(%d : {types['y']}) outs(%yp : !pto.partition_tensor_view<?x?x{ddt}>)")
    return "\n".join(lines + ["  return", "}"]) + "\n"


def _values(rng, dt, shape, how):
    d = np.dtype(NPD[dt])
    if how == "few":
        return rng.integers(0 if d.kind == "u" else -3, 4, size=shape).astype(d)
    if d.kind in "iu":
        if how == "small":
            return rng.integers(0 if d.kind == "u" else -3, 4, size=shape).astype(d)
        info = np.iinfo(d)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=np.int64 if d.itemsize < 8 else d).astype(d)
    scale = 1.0 if how == "small" else 4.0
    return (rng.standard_normal(shape) * scale).astype(d)


def dtype_pairs(spec: Spec, target: str) -> list[tuple[str, str]]:
    if spec.pairs:
        allowed = pto.TILE_OPS[f"pto.{spec.op}"].DTYPES
        return [p for p in spec.pairs if allowed is None or p[0] in allowed.get(target, ())
                or p[1] in allowed.get(target, ())]
    dts = sorted(pto.TILE_OPS[f"pto.{spec.op}"].DTYPES[target])
    out = spec.out.get(target) if isinstance(spec.out, dict) else spec.out
    return [(dt, out or dt) for dt in dts]


FORMS = ("alloc", "set_validshape")


def all_cases():
    return [(fam, target, s, d, form) for fam, spec in sorted(FAMILIES.items()) for target in TARGETS
            for s, d in dtype_pairs(spec, target) for form in FORMS]


def sample_cases(seed=12):
    """Each (family, target) once in the alloc form, its element type a seeded choice, and each
    family once in the set_validshape form (target and element type seeded)."""
    rnd = random.Random(seed)
    out = []
    for fam, spec in sorted(FAMILIES.items()):
        for target in TARGETS:
            pairs = dtype_pairs(spec, target)
            out.append((fam, target, *pairs[rnd.randrange(len(pairs))], "alloc"))
        target = rnd.choice(TARGETS)
        pairs = dtype_pairs(spec, target)
        out.append((fam, target, *pairs[rnd.randrange(len(pairs))], "set_validshape"))
    return out


def run_case(fam, target, sdt, ddt, form):
    spec = FAMILIES[fam]
    es = np.dtype(NPD[sdt]).itemsize
    e_min = min(np.dtype(NPD[t]).itemsize for t in (sdt, ddt, spec.idx or sdt))
    R, C, B = max(16, 32 // e_min), 96 // e_min, 32 // es  # (a tall tile's rows are R elements)
    dts, M = _source_types(spec, sdt, ddt)
    text = kernel(spec, sdt, ddt, R, C, B, form == "set_validshape")
    program = api.compile(api.parse(text, f"{fam}.pto"), lookup_target(target))
    rng = np.random.default_rng(C + len(fam))
    shapes = [(R, C), (5, C - 3), (1, 1), (11, C // 2 + 1)] + ([(0, 7), (3, 0)] if spec.empty else [])
    for vr, vc in shapes:
        xs = [_values(rng, dt, _shape(k, R, C, B, M), "any" if k == "mask" else spec.values)
              for k, dt in zip(spec.srcs, dts)]
        if spec.idx:  # element numbers or byte offsets inside the first source's tile
            xs[-1] = (rng.integers(0, R * C, size=(R, C)) * (es if spec.idx == "ui32" else 1)).astype(NPD[spec.idx])
        y0 = _values(rng, ddt, _shape(spec.dst, R, C, B, M), "any")
        inputs = {f"x{i}": x for i, x in enumerate(xs)}
        inputs.update(y=y0, vr=vr, vc=vc, **({"sc": 3} if "%sc" in spec.line else {}))
        dr, dc = _valid(spec.dst, vr, vc, B, M)
        want = y0.copy()
        regions = [x[:_valid(k, vr, vc, B, M)[0], :_valid(k, vr, vc, B, M)[1]] for x, k in zip(xs, spec.srcs)]
        if dr * dc and all(x.size for x in regions):
            with np.errstate(all="ignore"):
                got = spec.want(xs if spec.idx else regions, y0[:dr, :dc], NPD[ddt])
                want[:dr, :dc] = np.asarray(got).astype(NPD[ddt])
        free = _block_tail(spec.dst, dr, dc, want)
        res = api.run(program, inputs)
        assert not res.findings, [str(f) for f in res.findings]
        golden = api.reference(api.parse(text, f"{fam}.pto"), inputs, target=target)
        for who, got in (("executor", res.outputs["y"]), ("golden model", golden["y"])):
            got = got.reshape(want.shape)
            if spec.sums and ddt in EPS:
                scale = np.zeros(want.shape)
                axis = 1 if spec.dst == "col" else 0
                if dr * dc:
                    scale[:dr, :dc] = np.abs(regions[0].astype(np.float64)).sum(axis=axis, keepdims=True)
                ok = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= EPS[ddt] * (scale + 1)
                ok |= free
                assert ok.all(), f"{who}, valid {vr}x{vc}: {got[~ok][:4]} vs {want[~ok][:4]}"
            else:
                u = f"u{want.itemsize}"
                np.testing.assert_array_equal(got.view(u)[~free], want.view(u)[~free], err_msg=f"{who}, valid {vr}x{vc}")


def _block_tail(kind, dr, dc, y):
    """The cells of dst's tile outside its valid region that the op may write: the rest of the
    32-byte block each valid line ends in (block-granular UB copies and paired byte stores, as the
    hardware's TMOV/TCOLMAX/TEXPANDS paths; the pages define only the valid region).  Only the
    set_validshape form can see them (the alloc form stores the valid region alone)."""
    free = np.zeros(y.shape, bool)
    per_block = 32 // y.itemsize
    if dr * dc == 0:
        return free
    if kind == "col":  # ColMajor: a line is the column
        free[dr:-(-dr // per_block) * per_block, 0] = True
    else:
        free[:dr, dc:-(-dc // per_block) * per_block] = True
    return free


@pytest.mark.parametrize("fam, target, sdt, ddt, form", sample_cases())
def test_family_with_run_time_valid_shapes(fam, target, sdt, ddt, form):
    run_case(fam, target, sdt, ddt, form)


@pytest.mark.full
@pytest.mark.parametrize("fam, target, sdt, ddt, form", all_cases())
def test_family_with_run_time_valid_shapes_every_dtype(fam, target, sdt, ddt, form):
    run_case(fam, target, sdt, ddt, form)


def test_every_family_is_audited():
    """Every vector tile-op family with semantics is in the table or tested elsewhere (named)."""
    families = {cls.FAMILY for cls in pto.TILE_OPS.values() if cls.HAS_SEMANTICS}
    audited = {pto.TILE_OPS[f"pto.{s.op}"].FAMILY for s in FAMILIES.values()} | set(ELSEWHERE)
    missing = families - audited - NOT_VECTOR
    assert not missing, (f"families without a run-time valid-shape test: {sorted(missing)}; add a row to FAMILIES "
                         "or name the test that covers them in ELSEWHERE")


NOT_VECTOR = {"matmul", "subtile", "print"}
"""Cube ops (their valid shapes are the cube issue's), TEXTRACT/TINSERT (cube-space moves) and TPRINT."""


def _partarg_kernel(op: str, vdt: str, idt: str, rows: int, cols: int) -> str:
    """Values x0, x1 and their indices k0, k1 (rows x cols) loaded into tiles of valid (%r0, %c0)
    and (%r1, %c1); op into y (values) and z (indices) of valid (%rd, %cd), each stored into its
    (%rd, %cd) corner (y and z start random)."""
    lines = [f"func.func @k(%x0: !pto.ptr<{vdt}>, %x1: !pto.ptr<{vdt}>, %k0: !pto.ptr<{idt}>, %k1: !pto.ptr<{idt}>, "
             f"%y: !pto.ptr<{vdt}>, %z: !pto.ptr<{idt}>, %r0: index, %c0: index, %r1: index, %c1: index, %rd: index, "
             "%cd: index) {", "  %o = arith.constant 0 : index", "  %one = arith.constant 1 : index",
             f"  %cr = arith.constant {rows} : index", f"  %cc = arith.constant {cols} : index"]
    tv, ti = (f"!pto.tile_buf<vec, {rows}x{cols}x{dt}, valid=?x?>" for dt in (vdt, idt))
    for name, dt, r, c in (("x0", vdt, "%r0", "%c0"), ("x1", vdt, "%r1", "%c1"), ("k0", idt, "%r0", "%c0"),
                           ("k1", idt, "%r1", "%c1"), ("y", vdt, "%rd", "%cd"), ("z", idt, "%rd", "%cd")):
        t, pt = f"!pto.tile_buf<vec, {rows}x{cols}x{dt}, valid=?x?>", f"!pto.partition_tensor_view<?x?x{dt}>"
        lines += [f"  %{name}v = pto.make_tensor_view %{name}, shape = [%cr, %cc], strides = [%cc, %one] "
                  f": !pto.tensor_view<?x?x{dt}>",
                  f"  %{name}p = pto.partition_view %{name}v, offsets = [%o, %o], sizes = [{r}, {c}] "
                  f": !pto.tensor_view<?x?x{dt}> -> {pt}",
                  f"  %t{name} = pto.alloc_tile valid_row = {r} valid_col = {c} : {t}"]
        if name not in ("y", "z"):
            lines.append(f"  pto.tload ins(%{name}p : {pt}) outs(%t{name} : {t})")
    lines.append(f"  pto.{op} ins(%tx0, %tx1, %tk0, %tk1 : {tv}, {tv}, {ti}, {ti}) outs(%ty, %tz : {tv}, {ti})")
    for name, t, dt in (("y", tv, vdt), ("z", ti, idt)):
        lines.append(f"  pto.tstore ins(%t{name} : {t}) outs(%{name}p : !pto.partition_tensor_view<?x?x{dt}>)")
    return "\n".join(lines + ["  return", "}"]) + "\n"


def _partarg_cases():
    for target in TARGETS:
        for op in ("tpartargmax", "tpartargmin"):
            for vdt in sorted(pto.TILE_OPS[f"pto.{op}"].DTYPES[target]):
                for k, idt in enumerate(pto.PART_ARG_INDEX[vdt] if target == "a2a3" else pto.PART_ARG_INDEX["f16"]):
                    yield pytest.param(target, op, vdt, idt, marks=() if k == 0 else pytest.mark.full)


@pytest.mark.parametrize("target, op, vdt, idt", list(_partarg_cases()))
def test_tpartarg_of_run_time_valid_shapes(target, op, vdt, idt):
    """TPARTARGMAX.md / TPARTARGMIN.md with every valid region known only at run time (one compiled
    kernel, the shapes of TPART*'s test: equal, either source smaller, one element, a source of no
    rows, an empty dst): where both pairs are valid (src0Val, src0Idx) if src0Val > src1Val (<),
    else src1's (ties and NaN: src1), elsewhere the covering pair's; y, z == NumPy, bit for bit, from
    the executor and the golden model.  CI: each (target, op, value type) with its first index type."""
    import test_dynamic_valid as DV

    rows, cols = 12, 16
    text = _partarg_kernel(op, vdt, idt, rows, cols)
    program = api.compile(api.parse(text, "k.pto"), lookup_target(target))
    rng = np.random.default_rng(cols + len(idt))
    for shapes in DV.PART_SHAPES:
        (r0, c0), (r1, c1), (rd, cd) = ((r, c % cols if c < 0 else c) for r, c in shapes)
        x0, x1, y0 = (DV._values(rng, vdt, (rows, cols)) for _ in range(3))
        x1[::3] = x0[::3]  # ties
        k0, k1, z0 = (_values(rng, idt, (rows, cols), "any") for _ in range(3))
        inputs = {"x0": x0, "x1": x1, "k0": k0, "k1": k1, "y": y0, "z": z0,
                  "r0": r0, "c0": c0, "r1": r1, "c1": c1, "rd": rd, "cd": cd}
        want_y, want_z = y0.copy(), z0.copy()
        if rd * cd:
            full = 0 if (r0, c0) == (rd, cd) else 1
            want_y[:rd, :cd] = (x0, x1)[full][:rd, :cd]
            want_z[:rd, :cd] = (k0, k1)[full][:rd, :cd]
            sr, sc = min(r0, r1), min(c0, c1)
            a, b = x0[:sr, :sc], x1[:sr, :sc]
            with np.errstate(invalid="ignore"):
                take0 = a > b if op == "tpartargmax" else a < b
            want_y[:sr, :sc] = np.where(take0, a, b)
            want_z[:sr, :sc] = np.where(take0, k0[:sr, :sc], k1[:sr, :sc])
        res = api.run(program, inputs)
        assert not res.findings, [str(f) for f in res.findings]
        golden = api.reference(api.parse(text, "k.pto"), inputs, target=target)
        for who, out in (("executor", res.outputs), ("golden model", golden)):
            for name, want in (("y", want_y), ("z", want_z)):
                u = f"u{want.itemsize}"
                np.testing.assert_array_equal(out[name].reshape(want.shape).view(u), want.view(u),
                                              err_msg=f"{who}, {name}, {shapes}")


@pytest.mark.parametrize("target", TARGETS)
def test_tpartarg_pattern_broken_at_run_time_is_a_located_error(target):
    """Neither source pair's valid region equal to dst's at run time: the golden model stops, located."""
    text = _partarg_kernel("tpartargmax", "f32", "i32", 12, 16)
    z = np.zeros((12, 16), np.float32)
    k = np.zeros((12, 16), np.int32)
    with pytest.raises(PtocError) as info:
        api.reference(api.parse(text, "k.pto"), {"x0": z, "x1": z, "k0": k, "k1": k, "y": z, "z": k, "r0": 5,
                                                 "c0": 16, "r1": 9, "c1": 3, "rd": 9, "cd": 16}, target=target)
    assert "k.pto:" in str(info.value) and "needs one source's valid region equal to dst's" in str(info.value)
