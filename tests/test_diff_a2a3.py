"""Differential matrix of the a2a3 backend: executor output == golden model, per op x dtype x shape.

Every tile op the a2a3 lowering handles, in every a2a3 element type its ISA page allows, on
shapes with R in {1, 7, 8, 9, 16, 240, 255, 256, 257, 300} rows and three column configurations
(valid == tile, valid < tile, odd valid columns; a wide one of several repeats for short
tiles), compiled in-process by the default pipeline (tests/a2a3_harness.py) from an L1 kernel
(pto-bufferize adds the tload/tstore), executed with hazard checking, and compared with the
golden model by the ``--run`` rule: bit-exact, float sums within ``rtol * (|want| + 1)``.

``pytest -m full tests/test_diff_a2a3.py`` runs the whole matrix; CI runs a seeded sample that
covers every op variant with every row count, every (op, dtype) pair and every column
configuration at least once.
"""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest

import a2a3_harness as H
import test_mgather as MG
from pto_compiler.dialects import pto
from pto_compiler.runtime import elementwise as E

ROWS = (1, 7, 8, 9, 16, 240, 255, 256, 257, 300)
ESIZE = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1, "ui8": 1, "i16": 2, "ui16": 2, "i32": 4, "ui32": 4,
         "i64": 8, "ui64": 8}
TILE_BUDGET = 32 * 1024
"""Bytes of one full-size tile (a kernel holds up to three, plus tmps, in 192 KiB)."""


def a2a3_dtypes(op: str) -> list[str]:
    order = ("f32", "f16", "bf16", "i32", "i16", "i8", "ui32", "ui16", "ui8", "i64", "ui64")
    allowed = pto.TILE_OPS[f"pto.{op}"].DTYPES["a2a3"]
    return [d for d in order if d in allowed]


# (op, variant) -> dtypes; variants change the operand form
BINARY = ("tadd", "tsub", "tmul", "tdiv", "tmax", "tmin", "trem", "tfmod", "tand", "tor", "txor", "tshl", "tshr",
          "tprelu", "tsubrelu", "tpow")
TERNARY = ("taddc", "tsubc")
SCALAR_TERNARY = ("taddsc", "tsubsc")
"""``ins(src0, s, src1)``: the scalar between the tiles (TADDSC.md)."""
PART = ("tpartadd", "tpartmul", "tpartmax", "tpartmin")
PART_VARIANTS = ("src0-cols", "src1-both")
"""src0's valid cols halved; src1's valid rows halved and 3 cols fewer (each at least 1)."""
UNARY = ("texp", "tlog", "tsqrt", "trsqrt", "trecip", "tabs", "trelu", "tneg", "tnot")
SCALAR = ("tadds", "tsubs", "tmuls", "tdivs", "tmaxs", "tmins", "trems", "tfmods", "tands", "tors", "txors",
          "tshls", "tshrs", "tlrelu", "tpows")
DIVISOR_OPS = ("trem", "tfmod", "tshl", "tshr", "trems", "tfmods", "tshls", "tshrs")
"""Ops whose second operand has a domain on integer types: a nonzero divisor, a shift count in
0..bits-1 (outside it the golden model rejects the input, as C++ leaves it undefined)."""
ROWEXP = ("trowexpandadd", "trowexpandsub", "trowexpandmul", "trowexpanddiv", "trowexpandmax",
          "trowexpandmin", "trowexpandexpdif")
COLEXP = ("tcolexpandadd", "tcolexpandsub", "tcolexpandmul", "tcolexpanddiv", "tcolexpandmax",
          "tcolexpandmin", "tcolexpandexpdif")
ROWRED = ("trowsum", "trowmax", "trowmin", "trowprod")
COLRED = ("tcolsum", "tcolmax", "tcolmin", "tcolprod")
ROWARG = ("trowargmax", "trowargmin")
COLARG = ("tcolargmax", "tcolargmin")
CVT_PAIRS = (("f32", "f16", "CAST_RINT"), ("f16", "f32", "CAST_RINT"), ("f32", "i32", "CAST_TRUNC"),
             ("i32", "f32", "CAST_RINT"), ("f16", "i16", "CAST_ROUND"), ("i16", "f16", "CAST_RINT"),
             ("f32", "f16", "CAST_ODD"), ("f16", "i8", "CAST_FLOOR"), ("i8", "f16", "CAST_RINT"),
             ("f32", "i16", "CAST_CEIL"), ("i32", "i16", "CAST_RINT"), ("ui8", "i8", "CAST_RINT"),
             ("i32", "i16", "SAT"), ("ui32", "i32", "SAT"), ("i16", "ui32", "SAT"))
"""(src, dst, round mode); SAT: CAST_RINT with ``sat_mode ON`` (int -> int saturation)."""


def variants():
    """(op, variant, [dtypes])."""
    out = []
    for op in BINARY + UNARY + TERNARY:
        out.append((op, "", a2a3_dtypes(op)))
    for op in SCALAR:
        out.append((op, "arg", a2a3_dtypes(op)))
        out.append((op, "const", a2a3_dtypes(op)))
    out.append(("tdivs", "first", a2a3_dtypes("tdivs")))
    out.append(("tdivs", "pow2", a2a3_dtypes("tdivs")))
    out.append(("texpands", "", a2a3_dtypes("texpands")))
    for op in ROWEXP:
        for v in ("m1", "m1-src0", "m2", "m2-src0", "m1-tmp"):
            out.append((op, v, a2a3_dtypes(op)))
    for op in COLEXP:
        out.append((op, "", a2a3_dtypes(op)))
    out.append(("trowexpand", "", a2a3_dtypes("trowexpand")))
    out.append(("tcolexpand", "", a2a3_dtypes("tcolexpand")))
    for op in ROWRED:
        out.append((op, "dn", a2a3_dtypes(op)))
        out.append((op, "nd", a2a3_dtypes(op)))
    for op in COLRED:
        out.append((op, "", a2a3_dtypes(op)))
    for op in ROWARG:
        out.append((op, "dn-i32", a2a3_dtypes(op)))
        out.append((op, "nd-ui32", a2a3_dtypes(op)))
    for op in COLARG:
        out.append((op, "i32", a2a3_dtypes(op)))
        out.append((op, "ui32-tmp", a2a3_dtypes(op)))
    out.append(("tpairreducesum", "", a2a3_dtypes("tpairreducesum")))
    out.append(("tconcat", "", a2a3_dtypes("tconcat")))
    out.append(("tconcat", "inside", a2a3_dtypes("tconcat")))  # src1 starts inside a block: the scalar unit
    for v in ("index", "mask-P0101", "mask-P0010", "mask-P1000", "mask-P1111"):
        out.append(("tgather", v, a2a3_dtypes("tgather")))
    out.append(("tscatter", "", a2a3_dtypes("tscatter")))
    out.append(("tgatherb", "", a2a3_dtypes("tgatherb")))
    for op, modes in INDEXED.items():
        out += [(op, v, a2a3_dtypes(op)) for v in modes]
    for op in DPS_OPS:
        out.append((op, "dps", a2a3_dtypes(op)))
    out.append(("ttrans", "", a2a3_dtypes("ttrans")))
    out.append(("taxpy", "f16-f32", ["f32"]))
    for v in ("asc", "desc"):
        out.append(("tci", v, a2a3_dtypes("tci")))
    for v in ("lower", "upper"):
        out.append(("ttri", v, a2a3_dtypes("ttri")))
    out.append(("tmov", "", ["f32", "f16", "bf16", "i32", "i16", "i8", "ui8", "ui16", "ui32", "i64"]))
    for src, dst, mode in CVT_PAIRS:
        out.append(("tcvt", f"{src}-{mode}", [dst]))
    for op in SCALAR_TERNARY:
        out.append((op, "", a2a3_dtypes(op)))
    for op in PART:
        for v in PART_VARIANTS:
            out.append((op, v, a2a3_dtypes(op)))
    for v in ("", "idx1"):  # indices per row, one index row for every row
        out.append(("tsort32", v, a2a3_dtypes("tsort32")))
    for op, v in (("tfillpad", "max"), ("tfillpad", "min"), ("tfillpad_expand", "zero"), ("tfillpad_inplace", "min")):
        out.append((op, v, a2a3_dtypes(op)))
    for v in ("i16-col", "i16-row", "i8-col"):  # src type, scale/offset Rx1 ColMajor or valid Rx1 of Rx8
        out.append(("tdequant", v, a2a3_dtypes("tdequant")))
    for op in RELU_CONV:
        for src, dst in pto.RELU_CONV_PAIRS:  # variant: the source type; dtypes: the destination's
            out.append((op, f"{src}-relu", [dst]))
    out.append(("tadddeqrelu", "i32-deq", ["f16"]))
    # the scalar unit's compares and selects (slow to execute): two modes and forms here, every mode,
    # form and dtype in tests/test_catalogue_pages.py; A2/A3 compares i32 with EQ only (TCMP.md)
    for op, variant in (("tcmp", "eq"), ("tcmp", "lt"), ("tcmps", "eq-arg"), ("tcmps", "le-const")):
        out.append((op, variant, [d for d in a2a3_dtypes(op) if variant.startswith("eq") or d != "i32"]))
    out.append(("tsel", "", a2a3_dtypes("tsel")))
    for op, variant in (("tpartargmax", "src1-both"), ("tpartargmin", "src0-cols")):  # i32 / ui32 indices
        out.append((op, variant, a2a3_dtypes(op)))
    out.append(("tsels", "const", a2a3_dtypes("tsels")))
    for v in ("2", "3", "4", "single"):  # lists merged (exhausted: dst's rest is data-dependent, so the
        # oracle test covers it with a loaded dst); single: the blockLen form
        out.append(("tmrgsort", v, a2a3_dtypes("tmrgsort")))
    return out


INDEXED = {"mgather": ("row-zero", "elem-clamp"), "mscatter": ("row-wrap", "elem-skip")}
"""MGATHER/MSCATTER variants: coalesce-OOB mode (tests/test_mgather.py covers every mode and the
atomics); the table has R + 3 rows of the valid cols, the indices reach 2 rows/elements past it."""


def col_configs(R: int, dt: str, op: str, variant: str = ""):
    """[(tile cols, valid cols)]: valid == tile, valid < tile (even), odd valid cols; plus a wide
    one (more than two 256-byte repeats) when the tile is short."""
    e = ESIZE[dt]
    epb = 32 // e
    if op in ("tcvt", "taxpy", "tdequant", *RELU_CONV, "tadddeqrelu") and "-" in variant:  # rows of both types are 32-byte multiples; the wider bounds the tile
        other = ESIZE[variant.split("-")[0]]
        epb = 32 // min(e, other)
        e = max(e, other)
    # tsort32: an 8-byte (value, index) pair a dst element; tpartarg*: six tiles, indices of 4 bytes;
    budget_e = 8 if op == "tsort32" else 2 * e if op.startswith("tpartarg") else e
    if op in INDEXED and variant.startswith("elem"):  # the scalar unit's loop over each element: 2 K at most
        budget_e = TILE_BUDGET // 2048
    maxc = max(epb, TILE_BUDGET // (R * budget_e) // epb * epb)
    cols = min(maxc, 512 // e)  # two repeats
    out = [(cols, cols)]
    if cols > epb:
        out.append((cols, cols - epb))
    else:
        out.append((cols, max(1, cols // 2)))
    out.append((cols, cols - 1 if (cols - 1) % 2 else cols - 3))
    if maxc >= 1280 // e:
        wide = 1280 // e
        out.append((wide, wide - 2 * epb - 1))
    return out


def _t(r, c, dt, vr=None, vc=None, cm=False, pad=0):
    s = f"!pto.tile<{r}x{c}x{dt}"
    if cm:
        s += ", blayout=col_major"
    if pad:
        s += f", pad={pad}"
    vr = r if vr is None else vr
    vc = c if vc is None else vc
    if (vr, vc) != (r, c):
        s += f", valid={vr}x{vc}"
    return s + ">"


def kernel(op: str, variant: str, dt: str, R: int, cols: int, C: int) -> str:
    if op in INDEXED:
        coalesce, oob = variant.split("-")
        key = "gatherOob = #pto<gather_oob" if op == "mgather" else "scatterOob = #pto<scatter_oob"
        return MG.kernel(op, dt, R, C, R + 3, C, coalesce=coalesce, cols=cols, attrs=f"{key} {oob}>")
    if op == "tfillpad_inplace":
        return fillpad_inplace_kernel(dt, R, cols, C, PADS["min"])
    if op in DPS_OPS:
        if op == "taxpy":
            src_dt = variant.split("-")[0] if "-" in variant else dt
            return dps_kernel(op, 1, dt, R, cols, C, scalar=src_dt, src_dt=src_dt)
        return dps_kernel(op, 2, dt, R, cols, C)
    full = _t(R, cols, dt, R, C)
    e = ESIZE[dt]
    epb = 32 // e
    st = dt
    args: list[str] = []
    pre = ""
    rt = full
    if op in BINARY:
        args = [f"%a: {full}", f"%b: {full}"]
        body = f"%d = pto.{op} %a, %b : {full}, {full} -> {full}"
    elif op in TERNARY:
        args = [f"%a: {full}", f"%b: {full}", f"%c: {full}"]
        body = f"%d = pto.{op} %a, %b, %c : {full}, {full}, {full} -> {full}"
    elif op in PART:
        s0 = _t(R, cols, dt, R, max(1, C // 2)) if variant == "src0-cols" else full
        s1 = _t(R, cols, dt, max(1, (R + 1) // 2), max(1, C - 3)) if variant == "src1-both" else full
        args = [f"%a: {s0}", f"%b: {s1}"]
        body = f"%d = pto.{op} %a, %b : ({s0}, {s1}) -> {full}"
    elif op in SCALAR_TERNARY:
        args = [f"%a: {full}", f"%s: {st}", f"%b: {full}"]
        body = f"%d = pto.{op} %a, %s, %b : {full}, {st}, {full} -> {full}"
    elif op in UNARY or op == "tmov":
        args = [f"%a: {full}"]
        body = f"%d = pto.{op} %a : {full} -> {full}"
    elif op in SCALAR:
        args = [f"%a: {full}"]
        if variant in ("const", "pow2"):
            val = {"const": "3.0" if dt.startswith(("f", "b")) else "3", "pow2": "0.25"}[variant]
            if variant == "const" and op == "tdivs":
                val = "-1.7"
            pre = f"%s = arith.constant {val} : {st}\n  "
        else:
            args.append(f"%s: {st}")
        if variant == "first":
            body = f"%d = pto.{op} %s, %a : {st}, {full} -> {full}"
        else:
            body = f"%d = pto.{op} %a, %s : {full}, {st} -> {full}"
    elif op == "texpands":
        args = [f"%s: {st}"]
        body = f"%d = pto.texpands %s : {st} -> {full}"
    elif op in ROWEXP:
        mode = 2 if variant.startswith("m2") else 1
        ex = _t(R, 1, dt, cm=True) if mode == 1 else _t(R, epb, dt)
        if variant.endswith("src0"):
            args = [f"%b: {ex}", f"%a: {full}"]
            body = f"%d = pto.{op} %b, %a : {ex}, {full} -> {full}"
        elif variant == "m1-tmp":
            trows = -(-R // 8) if R < 256 else 30
            tmp = _t(trows, 256 // e, dt)
            args = [f"%a: {full}", f"%b: {ex}", f"%t: {tmp}"]
            body = f"%d = pto.{op} %a, %b, %t : {full}, {ex}, {tmp} -> {full}"
        else:
            args = [f"%a: {full}", f"%b: {ex}"]
            body = f"%d = pto.{op} %a, %b : {full}, {ex} -> {full}"
    elif op in COLEXP:
        ex = _t(1, cols, dt, 1, C)
        args = [f"%a: {full}", f"%b: {ex}"]
        body = f"%d = pto.{op} %a, %b : {full}, {ex} -> {full}"
    elif op == "trowexpand":
        ex = _t(R, 1, dt, cm=True)
        args = [f"%b: {ex}"]
        body = f"%d = pto.trowexpand %b : {ex} -> {full}"
    elif op == "tcolexpand":
        ex = _t(1, cols, dt, 1, C)
        args = [f"%b: {ex}"]
        body = f"%d = pto.tcolexpand %b : {ex} -> {full}"
    elif op in ROWRED:
        rt = _t(R, 1, dt, cm=True) if variant == "dn" else _t(R, epb, dt, R, 1)
        args = [f"%a: {full}"]
        body = f"%d = pto.{op} %a : {full} -> {rt}"
    elif op in COLRED:
        rt = _t(1, cols, dt, 1, C)
        args = [f"%a: {full}"]
        body = f"%d = pto.{op} %a : {full} -> {rt}"
    elif op in ROWARG or op in COLARG:
        idx = "ui32" if "ui32" in variant else "i32"
        if op in COLARG:
            rt = _t(1, -(-cols // 8) * 8, idx, 1, C)
        else:
            rt = _t(R, 1, idx, cm=True) if variant.startswith("dn") else _t(R, 8, idx, R, 1)
        args = [f"%a: {full}"]
        if variant.endswith("tmp"):
            args.append(f"%t: {full}")
            body = f"%d = pto.{op} %a, %t : ({full}, {full}) -> {rt}"
        else:
            body = f"%d = pto.{op} %a : {full} -> {rt}"
    elif op == "tgather" and variant == "index":
        it = _t(R, -(-cols // 8) * 8, "i32", R, C)  # i32 rows of whole 32-byte blocks (cols of an i64 src: 4k)
        args = [f"%a: {full}", f"%b: {it}"]
        body = f"%d = pto.tgather %a, %b : ({full}, {it}) -> {full}"
    elif op == "tgatherb":
        it = _t(R, -(-cols // 8) * 8, "ui32", R, C)
        args = [f"%a: {full}", f"%b: {it}"]
        body = f"%d = pto.tgatherb %a, %b : ({full}, {it}) -> {full}"
    elif op == "tscatter":
        it = _t(R, cols, "i32" if e == 4 else "i16", R, C)
        args = [f"%a: {full}", f"%b: {it}"]
        rt = _t(R, cols, dt)
        body = f"%d = pto.tscatter %a, %b : ({full}, {it}) -> {rt}"
    elif op == "tgather":
        period, pos = pto.GATHER_PATTERNS[variant[5:]]
        rt = _t(1, max(1, R * len(range(pos, C, period))), dt)
        args = [f"%a: {full}"]
        body = f"%d = pto.tgather %a {{maskPattern = #pto.mask_pattern<{variant[5:]}>}} : {full} -> {rt}"
    elif op == "tsort32":
        irows = 1 if variant == "idx1" else R
        it = _t(irows, -(-cols // 8) * 8, "ui32", irows, C)
        rt = _t(R, 8 // e * cols, dt, R, 8 // e * C)
        args = [f"%a: {full}", f"%b: {it}"]
        if C % 32:  # a tail block: the tmp form
            args.append(f"%t: {_t(1, -(-C // 32) * 32, dt)}")
            body = f"%d = pto.tsort32 %a, %b, %t : ({full}, {it}, {_t(1, -(-C // 32) * 32, dt)}) -> {rt}"
        else:
            body = f"%d = pto.tsort32 %a, %b : ({full}, {it}) -> {rt}"
    elif op == "tmrgsort":  # one-row tiles: R sets the pairs of list 0, C the others'
        coef = 8 // e
        if variant == "single":  # 1 + R % 3 groups of 4 blocks of 64 elements
            rt = src = _t(1, 256 * (1 + R % 3), dt)
            args = [f"%a: {src}"]
            pre = "%b = arith.constant 64 : i32\n  "
            body = f"%d = pto.tmrgsort %a, %b : ({src}, i32) -> {rt}"
        else:
            n = int(variant[0])
            lens = [coef * (R if k == 0 else (C * (k + 1)) % 53 + 1) for k in range(n)]
            srcs = [_t(1, -(-c // epb) * epb, dt, 1, c) for c in lens]
            tmp = _t(1, -(-sum(lens) // epb) * epb, dt)
            rt = _t(1, -(-sum(lens) // epb) * epb, dt, 1, sum(lens))
            args = [f"%s{k}: {t}" for k, t in enumerate(srcs)] + [f"%t: {tmp}"]
            names = ", ".join([f"%s{k}" for k in range(n)] + ["%t"])
            body = f"%d = pto.tmrgsort {names} {{exhausted = false}} : ({', '.join(srcs + [tmp])}) -> {rt}"
    elif op in ("tfillpad", "tfillpad_expand"):  # src valid (R - R // 4) x C; _expand: a larger dst
        src = _t(R, cols, dt, R - R // 4, C)
        rt = _t(R + (op == "tfillpad_expand"), cols + epb * (op == "tfillpad_expand"), dt, pad=PADS[variant])
        args = [f"%a: {src}"]
        body = f"%d = pto.{op} %a : {src} -> {rt}"
    elif op in ("tinterleave", "tdeinterleave"):  # even valid cols; one source: >= 512 bytes a row (the page)
        if R > 16 and variant == "two":  # odd halves: the scalar unit's moves, at most two 32-byte blocks a row
            cols = min(cols, 64 // e)
        vc = max(2, min(C, cols) - min(C, cols) % 2)
        if variant == "one":
            scols = max(cols, 512 // e)
            src, rt = _t(R, scols, dt, R, vc), _t(R, -(-vc // 2 // epb) * epb, dt, R, vc // 2)
            args, names = [f"%a: {src}"], "%a"
        else:
            src = rt = _t(R, cols, dt, R, vc)
            args, names = [f"%a: {src}", f"%b: {src}"], "%a, %b"
        srcs = ", ".join([src] * len(args))
        text = (f"func.func @k({', '.join(args)}) -> ({rt}, {rt}) {{\n  %d0, %d1 = pto.{op} {names} : ({srcs}) -> "
                f"({rt}, {rt})\n  return %d0, %d1 : {rt}, {rt}\n}}\n")
        return text
    elif op in RELU_CONV or op == "tadddeqrelu":
        src = _t(R, cols, variant.split("-")[0], R, C)
        args = [f"%a: {src}", f"%b: {src}"]
        body = f"%d = pto.{op} %a, %b : ({src}, {src}) -> {full}"
        if op == "tadddeqrelu":
            args += ["%s: f32", f"%t: {src}"]
            body = f"%d = pto.tadddeqrelu %a, %b, %s, %t : ({src}, {src}, f32, {src}) -> {full}"
    elif op == "tdequant":
        src = _t(R, cols, variant.split("-")[0], R, C)
        p = _t(R, 1, "f32", cm=True) if variant.endswith("col") else _t(R, 8, "f32", R, 1)
        args = [f"%a: {src}", f"%s: {p}", f"%o: {p}"]
        body = f"%d = pto.tdequant %a, %s, %o : ({src}, {p}, {p}) -> {full}"
    elif op in ("tpartargmax", "tpartargmin"):  # the PART shapes; (value, index) pairs, two results
        s0 = _t(R, cols, dt, R, max(1, C // 2)) if variant == "src0-cols" else full
        s1 = _t(R, cols, dt, max(1, (R + 1) // 2), max(1, C - 3)) if variant == "src1-both" else full
        it = "i32" if variant == "src1-both" else "ui32"
        i0, i1, di = (t.replace(f"x{dt}", f"x{it}") for t in (s0, s1, full))
        return (f"func.func @k(%a: {s0}, %b: {s1}, %i: {i0}, %j: {i1}) -> ({full}, {di}) {{\n"
                f"  %v, %x = pto.{op} %a, %b, %i, %j : ({s0}, {s1}, {i0}, {i1}) -> ({full}, {di})\n"
                f"  return %v, %x : {full}, {di}\n}}\n")
    elif op in ("tcmp", "tcmps"):  # a packed-predicate dst of ceil(C / 8) valid bytes a row
        mode, _, form = variant.partition("-")
        rt = _t(R, -(-cols // 256) * 32, "ui8", R, -(-C // 8))
        attr = f"{{cmpMode = #pto.cmp<{mode.upper()}>}}"
        if op == "tcmp":
            args = [f"%a: {full}", f"%b: {full}"]
            body = f"%d = pto.tcmp %a, %b {attr} : ({full}, {full}) -> {rt}"
        else:
            args = [f"%a: {full}"]
            if form == "const":
                st = dt[1:] if dt.startswith("ui") else dt  # arith constants are signless
                pre = f"%s = arith.constant {'0.5' if dt.startswith(('f', 'b')) else '3'} : {st}\n  "
            else:
                args.append(f"%s: {st}")
            body = f"%d = pto.tcmps %a, %s {attr} : ({full}, {st}) -> {rt}"
    elif op in ("tsel", "tsels"):  # a mask of random bytes, ceil(cols / 8) rounded to 32 a row
        mt = _t(R, -(-cols // 256) * 32, "ui8")
        if op == "tsel":
            args = [f"%m: {mt}", f"%a: {full}", f"%b: {full}"]
            body = f"%d = pto.tsel %m, %a, %b : ({mt}, {full}, {full}) -> {full}"
        else:
            args = [f"%m: {mt}", f"%a: {full}"]
            if variant == "const":
                st = dt[1:] if dt.startswith("ui") else dt
                pre = f"%s = arith.constant {'-0.0' if dt.startswith(('f', 'b')) else '3'} : {st}\n  "
            else:
                args.append(f"%s: {st}")
            body = f"%d = pto.tsels %m, %a, %s : ({mt}, {full}, {st}) -> {full}"
    elif op == "tpairreducesum":
        args = [f"%a: {full}"]
        body = f"%d = pto.tpairreducesum %a : {full} -> {full}"
    elif op == "ttrans":
        rt = _t(C, -(-R // epb) * epb, dt, C, R)
        args = [f"%a: {full}"]
        body = f"%d = pto.ttrans %a : {full} -> {rt}"
    elif op == "tci":
        args = [f"%s: {st}"]
        body = f"%d = pto.tci %s {{descending = {str(variant == 'desc').lower()}}} : {st} -> {full}"
    elif op == "ttri":
        args = ["%s: i32"]
        body = f"%d = pto.ttri %s {{upperOrLower = {int(variant == 'upper')} : i32}} : i32 -> {full}"
    elif op == "tconcat":
        # src0's valid cols whole 32-byte blocks (src1 starts on a block; "inside": an odd count, never
        # whole blocks), src1 the rest of C
        c0 = max(1, C // 2) | 1 if variant == "inside" else epb * max(1, C // 2 // epb)
        c1 = max(1, C - c0)
        dcols = max(cols, -(-(c0 + c1) // epb) * epb)
        rt = _t(R, dcols, dt, R, c0 + c1)
        s0, s1 = _t(R, dcols, dt, R, c0), _t(R, dcols, dt, R, c1)
        args = [f"%a: {s0}", f"%b: {s1}"]
        body = f"%d = pto.tconcat %a, %b : {s0}, {s1} -> {rt}"
    elif op == "tcvt":
        src_dt, mode = variant.split("-")
        src = _t(R, cols, src_dt, R, C)
        args = [f"%a: {src}"]
        sat = ", sat_mode = #pto<saturation_mode ON>" if mode == "SAT" else ""
        body = f"%d = pto.tcvt %a {{rmode = #pto<round_mode {'CAST_RINT' if sat else mode}>{sat}}} : {src} -> {full}"
    else:
        raise KeyError(op)
    text = f"func.func @k({', '.join(args)}) -> {rt} {{\n  {pre}{body}\n  return %d : {rt}\n}}\n"
    if dt.startswith("ui") and "arith.constant" in text:
        # arith constants are signless: the scalar of an unsigned tile is written as iN
        text = text.replace(f"arith.constant 3 : {dt}", f"arith.constant 3 : {dt[1:]}")
        text = text.replace(f", {dt} -> ", f", {dt[1:]} -> ").replace(f"%s, %a : {dt},", f"%s, %a : {dt[1:]},")
    return text


PADS = {"zero": 1, "max": 2, "min": 3}
"""TFILLPAD variants: dst's PadValue (the tile type's ``pad``)."""


def fillpad_inplace_kernel(dt, R, cols, C, pad):
    """x loaded into src (valid (R - R // 4) x C), TFILLPAD_INPLACE into dst, a full-valid tile with
    PadValue ``pad`` at src's UB address (the same storage), dst stored to z."""
    vr = R - R // 4
    ts = f"!pto.tile_buf<vec, {R}x{cols}x{dt}, valid={vr}x{C}>"
    td = f"!pto.tile_buf<vec, {R}x{cols}x{dt}, pad={pad}>"
    return f"""func.func @k(%x: !pto.ptr<{dt}>, %z: !pto.ptr<{dt}>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cr = arith.constant {R} : index
  %cv = arith.constant {vr} : index
  %cc = arith.constant {cols} : index
  %cvc = arith.constant {C} : index
  %a = arith.constant 0 : i64
  %vx = pto.make_tensor_view %x, shape = [%cv, %cvc], strides = [%cvc, %c1] : !pto.tensor_view<{vr}x{C}x{dt}>
  %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%cv, %cvc] : !pto.tensor_view<{vr}x{C}x{dt}> -> !pto.partition_tensor_view<{vr}x{C}x{dt}>
  %vz = pto.make_tensor_view %z, shape = [%cr, %cc], strides = [%cc, %c1] : !pto.tensor_view<{R}x{cols}x{dt}>
  %pz = pto.partition_view %vz, offsets = [%c0, %c0], sizes = [%cr, %cc] : !pto.tensor_view<{R}x{cols}x{dt}> -> !pto.partition_tensor_view<{R}x{cols}x{dt}>
  %s = pto.alloc_tile addr = %a : {ts}
  %d = pto.alloc_tile addr = %a : {td}
  pto.tload ins(%px : !pto.partition_tensor_view<{vr}x{C}x{dt}>) outs(%s : {ts})
  pto.tfillpad_inplace ins(%s : {ts}) outs(%d : {td})
  pto.tstore ins(%d : {td}) outs(%pz : !pto.partition_tensor_view<{R}x{cols}x{dt}>)
  return
}}
"""


RELU_CONV = ("taddreluconv", "tsubreluconv")
"""convert(max(0, a ± b)) ops (TADDReluConv.md): one variant per (src, dst) pair."""

DPS_OPS = ("taxpy", "tmuladddst", "tfusedmuladd", "tfusedmuladdrelu")
"""Ops that read their dst: kernels in the DPS form, every operand loaded from GM (:func:`dps_kernel`)."""


def dps_kernel(op, n_src, dt, R, cols, C, scalar=None, src_dt=None, scalar_at=None):
    """Sources x0.. (``src_dt``, default dt) and dst y loaded into R x cols tiles (valid R x C),
    ``op ins(x0.. [, %s]) outs(y)`` (``scalar``: the type of %s, at ins position ``scalar_at``,
    default last), y stored to z."""
    sdt = src_dt or dt
    ts, td = (f"!pto.tile_buf<vec, {R}x{cols}x{t}, valid={R}x{C}>" for t in (sdt, dt))
    gm = [(f"x{i}", sdt, ts) for i in range(n_src)] + [("y", dt, td), ("z", dt, None)]
    sarg = f", %s: {scalar}" if scalar else ""
    lines = [f"func.func @k({', '.join(f'%{n}: !pto.ptr<{t}>' for n, t, _ in gm)}{sarg}) {{",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             f"  %cr = arith.constant {R} : index", f"  %cc = arith.constant {C} : index"]
    for n, t, tile in gm:
        pv = f"!pto.partition_tensor_view<{R}x{C}x{t}>"
        lines.append(f"  %v{n} = pto.make_tensor_view %{n}, shape = [%cr, %cc], strides = [%cc, %c1] : "
                     f"!pto.tensor_view<{R}x{C}x{t}>")
        lines.append(f"  %p{n} = pto.partition_view %v{n}, offsets = [%c0, %c0], sizes = [%cr, %cc] : "
                     f"!pto.tensor_view<{R}x{C}x{t}> -> {pv}")
        if tile:
            lines += [f"  %t{n} = pto.alloc_tile : {tile}", f"  pto.tload ins(%p{n} : {pv}) outs(%t{n} : {tile})"]
    srcs, types = [f"%tx{i}" for i in range(n_src)], [ts] * n_src
    if scalar:
        at = n_src if scalar_at is None else scalar_at
        srcs.insert(at, "%s")
        types.insert(at, scalar)
    lines.append(f"  pto.{op} ins({', '.join(srcs)} : {', '.join(types)}) outs(%ty : {td})")
    lines += [f"  pto.tstore ins(%ty : {td}) outs(%pz : !pto.partition_tensor_view<{R}x{C}x{dt}>)", "  return", "}"]
    return "\n".join(lines) + "\n"


def _given(text: str):
    if "pto.ttri" in text:
        return {"s": -3}
    for t in ("i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64"):
        if f"%s: {t}" in text:
            return {"s": -3}
    return None


def domain_inputs(case, given):
    """``given`` with the second operand of a :data:`DIVISOR_OPS` op on an integer type drawn from
    its domain: divisors from ±1..±7 (1..15 unsigned), shift counts from 0..bits-1 (scalar: 3)."""
    op, variant, dt, R, _, C = case
    if variant.endswith("-SAT"):  # the whole source range, so that the clamp matters
        info = np.iinfo(E.np_dtype(variant.split("-")[0]))
        rng = np.random.default_rng(zlib.crc32(_id(case).encode()))
        return {**(given or {}), "a": rng.integers(int(info.min), int(info.max), size=(R, C), endpoint=True,
                                                   dtype=info.dtype)}
    if op == "tscatter":  # positions of dst's storage, repeats included (the last writer wins)
        rng = np.random.default_rng(zlib.crc32(_id(case).encode()))
        pos = rng.integers(0, min(R * case[4], 1 << 15), size=(R, C))
        return {**(given or {}), "b": pos.astype(np.int32 if ESIZE[dt] == 4 else np.int16)}
    if op == "tadddeqrelu":  # a dequant scale that keeps most sums inside f16's range
        return {**(given or {}), "s": np.float32(3e-6)}
    if op in ("tgather", "tgatherb") and variant in ("index", ""):  # positions inside src's valid region
        rng = np.random.default_rng(zlib.crc32(_id(case).encode()))
        pos = rng.integers(0, R, size=(R, C)) * case[4] + rng.integers(0, C, size=(R, C))
        if op == "tgatherb":  # the byte offset of the element
            return {**(given or {}), "b": (pos * ESIZE[dt]).astype(np.uint32)}
        return {**(given or {}), "b": pos.astype(np.int32)}
    if op in INDEXED:
        rng = np.random.default_rng(zlib.crc32(_id(case).encode()))
        n, cap = (R, R + 3) if variant.startswith("row") else (R * C, (R + 3) * C)
        return {**(given or {}), "idx": rng.integers(0, cap + 2, size=n).astype(np.int32)}
    if op not in DIVISOR_OPS or dt.startswith(("f", "b")):
        return given
    given = dict(given or {})
    rng = np.random.default_rng(zlib.crc32(_id(case).encode()))
    shift = op.startswith("tsh")
    if op.endswith("s"):
        if "s" in given:
            given["s"] = 3
        return given
    bits = ESIZE[dt] * 8
    if shift:
        vals = rng.integers(0, bits, size=(R, C))
    elif dt.startswith("ui"):
        vals = rng.integers(1, 16, size=(R, C))
    else:
        vals = rng.integers(1, 8, size=(R, C)) * rng.choice([-1, 1], size=(R, C))
    given["b"] = vals.astype(E.np_dtype(dt))
    return given


def all_cases():
    cases = []
    for op, variant, dts in variants():
        for dt in dts:
            for R in ROWS:
                for cols, C in col_configs(R, dt, op, variant):
                    cases.append((op, variant, dt, R, cols, C))
    return cases


def sample_cases(seed: int = 20240611):
    """Every op variant with every R (dtype and column config rotating), then any (op, dtype)
    pair and column config not yet covered."""
    rnd = random.Random(seed)
    out = []
    seen_dt, seen_cfg = set(), set()
    for op, variant, dts in variants():
        start = rnd.randrange(len(dts))
        for i, R in enumerate(ROWS):
            dt = dts[(start + i) % len(dts)]
            cfgs = col_configs(R, dt, op, variant)
            k = rnd.randrange(len(cfgs))
            out.append((op, variant, dt, R, *cfgs[k]))
            seen_dt.add((op, dt))
            seen_cfg.add((op, variant, k))
        for dt in dts:
            if (op, dt) not in seen_dt:
                R = rnd.choice(ROWS)
                out.append((op, variant, dt, R, *rnd.choice(col_configs(R, dt, op, variant))))
                seen_dt.add((op, dt))
        for k in range(4):
            if (op, variant, k) not in seen_cfg:
                R = rnd.choice((1, 7, 8, 9, 16))
                cfgs = col_configs(R, dts[0], op, variant)
                if k < len(cfgs):
                    out.append((op, variant, dts[0], R, *cfgs[k]))
    return out


def _id(case):
    op, variant, dt, R, cols, C = case
    return f"{op}{'-' + variant if variant else ''}-{dt}-R{R}-{cols}x{C}"


def run_case(case):
    op, variant, dt, R, cols, C = case
    text = kernel(*case)
    seed = zlib.crc32(_id(case).encode()) % 1000
    cmp, findings, prog = H.check(text, seed, domain_inputs(case, _given(text)))
    bad = [c.line() for c in cmp if not c.ok]
    assert cmp, "no outputs compared"
    assert not findings, "\n".join(str(f) for f in findings[:3])
    assert not bad, "\n".join(bad) + "\n" + text


@pytest.mark.parametrize("case", sample_cases(), ids=_id)
def test_sample(case):
    run_case(case)


@pytest.mark.full
@pytest.mark.parametrize("case", all_cases(), ids=_id)
def test_full(case):
    run_case(case)


def test_sample_covers_every_op_dtype_and_row_count():
    sample = sample_cases()
    ops = {(op, v) for op, v, _ in variants()}
    assert {(c[0], c[1]) for c in sample} == ops
    pairs = {(op, dt) for op, _, dts in variants() for dt in dts}
    assert {(c[0], c[2]) for c in sample} == pairs
    for op, v in ops:
        assert {c[3] for c in sample if (c[0], c[1]) == (op, v)} == set(ROWS), (op, v)
    lowered = {c[0] for c in sample}
    assert lowered >= {n.split(".", 1)[1] for n, cls in pto.TILE_OPS.items()
                       if cls.HAS_SEMANTICS and cls.DTYPES and cls.DTYPES.get("a2a3")
                       and n not in ("pto.tload", "pto.tstore", "pto.tprint")}  # tprint: test_constructs
