"""MGATHER and MSCATTER (issue 12, item 1) against the pages' math, pto-isa docs/isa/MGATHER.md and
MSCATTER.md (@3186c38), written here as plain loops:

* Row coalesce: ``dst[r, j] = table[idx[r], j]`` / ``table[idx[r], j] <- atom(table[idx[r], j], src[r, j])``;
* Elem coalesce: ``dst[r, c] = table[idx[r, c]]`` / ``table[idx[r, c]] <- atom(.., src[r, c])``, the
  table flat;
* indices read as uint32 (every NPU header: ``static_cast<uint32_t>``), out of bounds by the mode:
  Clamp ``min(idx, cap - 1)``, Wrap ``idx % cap``, Zero (gather: 0), Skip (scatter: no write),
  Undefined (the caller's promise: a run-time error here);
* scatter in row-major order, the last writer winning; atomic add/max/min accumulate in that order in
  the element type.
"""

from __future__ import annotations

import numpy as np
import pytest

from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.runtime import elementwise as E
from pto_compiler.runtime import reference as R

DTYPES = ("i8", "ui8", "i16", "ui16", "i32", "ui32", "f16", "bf16", "f32")
NP = {d: E.np_dtype(d) for d in DTYPES}
GATHER_OOB = ("undefined", "clamp", "wrap", "zero")
SCATTER_OOB = ("undefined", "skip", "clamp", "wrap")


def kernel(op, dt, R_, C, table_rows, table_cols, coalesce=None, idx_shape=None, cols=None, attrs="",
           idx_dt="i32"):
    """A PTOAS-style L2 kernel: MGATHER of table (GM) through idx (GM -> UB) into x (GM), or
    MSCATTER of x (GM -> UB) through idx into table (GM, read and written)."""
    cols = cols or max(C, 32 // NP[dt].itemsize)
    ir, ic = idx_shape or ((R_, C) if coalesce == "elem" else (1, R_))
    t = f"!pto.tile_buf<vec, {R_}x{cols}x{dt}, valid={R_}x{C}>"
    it = f"!pto.tile_buf<vec, {ir}x{max(8, -(-ic // 8) * 8)}x{idx_dt}, valid={ir}x{ic}>"
    if coalesce == "row" and ic == 1 and ir > 1:  # A5's [R, 1] Row index: a ColMajor column
        it = f"!pto.tile_buf<vec, {ir}x1x{idx_dt}, blayout=col_major>"

    def pv(r, c, d):
        return f"!pto.partition_tensor_view<{r}x{c}x{d}>"

    def tv(d):
        return f"!pto.tensor_view<?x?x{d}>"

    words = ([f"coalesce = #pto<coalesce {coalesce}>"] if coalesce else []) + ([attrs] if attrs else [])
    at = (" {" + ", ".join(words) + "}") if words else ""
    lines = [f"func.func @k(%tab: !pto.ptr<{dt}>, %idx: !pto.ptr<{idx_dt}>, %x: !pto.ptr<{dt}>) {{"]
    lines += [f"  %c{v} = arith.constant {v} : index" for v in sorted({0, 1, R_, C, table_rows, table_cols, ir, ic})]
    for name, arg, (r, c), d in (("t", "tab", (table_rows, table_cols), dt), ("i", "idx", (ir, ic), idx_dt),
                                 ("x", "x", (R_, C), dt)):
        lines += [f"  %{name}v = pto.make_tensor_view %{arg}, shape = [%c{r}, %c{c}], strides = [%c{c}, %c1] : {tv(d)}",
                  f"  %{name}p = pto.partition_view %{name}v, offsets = [%c0, %c0], sizes = [%c{r}, %c{c}] : "
                  f"{tv(d)} -> {pv(r, c, d)}"]
    lines += [f"  %it = pto.alloc_tile : {it}", f"  %t = pto.alloc_tile : {t}",
              f"  pto.tload ins(%ip : {pv(ir, ic, idx_dt)}) outs(%it : {it})"]
    lines += _op_lines(op, pv(table_rows, table_cols, dt), it, t, pv(R_, C, dt), at)
    return "\n".join(lines + ["  return", "}"]) + "\n"


def _op_lines(op, tab, it, t, x, at):
    """The op and x's copy: MGATHER into %t, then %t stored to x; or %t loaded from x, then MSCATTER."""
    if op == "mgather":
        return [f"  pto.mgather ins(%tp, %it : {tab}, {it}) outs(%t : {t}){at}",
                f"  pto.tstore ins(%t : {t}) outs(%xp : {x})"]
    return [f"  pto.tload ins(%xp : {x}) outs(%t : {t})",
            f"  pto.mscatter ins(%t, %it : {t}, {it}) outs(%tp : {tab}){at}"]


def data(rng, dt, n):
    """n random elements of dt (floats: finite values and ±0, as bits: a NaN's payload is copied too)."""
    if dt in ("f16", "bf16", "f32"):
        x = rng.uniform(-100, 100, n).astype(np.float32)
        x[rng.random(n) < 0.1] = -0.0
        return x.astype(NP[dt])
    info = np.iinfo(NP[dt])
    return rng.integers(int(info.min), int(info.max), n, endpoint=True).astype(NP[dt])


def remap(k: int, cap: int, mode: str):
    """The page's out-of-bounds rule for one uint32 index: the index used, or None (no access)."""
    if k < cap:
        return k
    return {"clamp": cap - 1, "wrap": k % cap}.get(mode)


def as_u32(idx) -> list[int]:
    return [int(v) for v in np.asarray(idx, np.int64).reshape(-1) & 0xFFFFFFFF]


def want_gather(table, idx, R_, C, table_cols, coalesce, mode, dt):
    out = np.zeros((R_, C), NP[dt])
    k = as_u32(idx)
    for r in range(R_):
        for j in range(C):
            if coalesce == "row":
                s = remap(k[r], table.size // table_cols, mode)
                out[r, j] = 0 if s is None else table[s * table_cols + j]
            else:
                s = remap(k[r * C + j], table.size, mode)
                out[r, j] = 0 if s is None else table[s]
    return out


def atom(old, new, atomic, dt):
    if atomic == "none":
        return new
    if dt in ("f16", "bf16", "f32"):
        f = {"add": lambda a, b: a + b, "max": max, "min": min}[atomic]
        return NP[dt].type(f(float(old), float(new)))
    f = {"add": lambda a, b: a + b, "max": max, "min": min}[atomic]
    bits = 8 * NP[dt].itemsize
    v = f(int(old), int(new)) % (1 << bits)
    return np.array(v, np.uint64).astype(np.dtype(f"u{bits // 8}")).view(NP[dt]).reshape(())[()]


def want_scatter(table, src, idx, R_, C, table_cols, coalesce, mode, atomic, dt):
    out = table.copy()
    k = as_u32(idx)
    for r in range(R_):
        for j in range(C):
            if coalesce == "row":
                s = remap(k[r], table.size // table_cols, mode)
                at = None if s is None else s * table_cols + j
            else:
                at = remap(k[r * C + j], table.size, mode)
            if at is not None:
                out[at] = atom(out[at], src[r * C + j], atomic, dt)
    return out


def golden(text, inputs, target="a2a3"):
    return R.evaluate(api.parse(text, "k.pto"), inputs, target=target)


def bits(x):
    x = np.asarray(x)
    return x.view(f"u{x.dtype.itemsize}")


# ---- the golden model ---------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mode", GATHER_OOB)
@pytest.mark.parametrize("coalesce", ["row", "elem"])
def test_mgather_golden_matches_the_page(dt, mode, coalesce):
    rng = np.random.default_rng(sum(map(ord, dt + mode + coalesce)))
    R_, C, trows = 5, 7, 6
    table = data(rng, dt, trows * C)
    cap = trows if coalesce == "row" else trows * C
    n = R_ if coalesce == "row" else R_ * C
    hi = cap if mode == "undefined" else cap + 5
    idx = rng.integers(0, hi, n).astype(np.int32)
    if mode != "undefined":
        idx[0], idx[-1] = -1, cap  # read as uint32: 4294967295, and the first index past the table
    text = kernel("mgather", dt, R_, C, trows, C, coalesce=coalesce, attrs=f"gatherOob = #pto<gather_oob {mode}>")
    got = golden(text, {"tab": table, "idx": idx, "x": np.zeros(R_ * C, NP[dt])})["x"]
    np.testing.assert_array_equal(bits(got).reshape(R_, C), bits(want_gather(table, idx, R_, C, C, coalesce, mode, dt)))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mode", SCATTER_OOB)
@pytest.mark.parametrize("coalesce", ["row", "elem"])
def test_mscatter_golden_matches_the_page_last_writer_wins(dt, mode, coalesce):
    rng = np.random.default_rng(sum(map(ord, dt + mode + coalesce)) + 1)
    R_, C, trows = 6, 5, 4
    table, src = data(rng, dt, trows * C), data(rng, dt, R_ * C)
    cap = trows if coalesce == "row" else trows * C
    n = R_ if coalesce == "row" else R_ * C
    idx = rng.integers(0, cap if mode == "undefined" else cap + 3, n).astype(np.int32)
    idx[1] = idx[2]  # a duplicate: the later row-major writer wins
    if mode != "undefined":
        idx[0] = -2
    text = kernel("mscatter", dt, R_, C, trows, C, coalesce=coalesce, attrs=f"scatterOob = #pto<scatter_oob {mode}>")
    got = golden(text, {"tab": table, "idx": idx, "x": src})["tab"]
    want = want_scatter(table, src, idx, R_, C, C, coalesce, mode, "none", dt)
    np.testing.assert_array_equal(bits(got).reshape(-1), bits(want))


ATOMIC = [("a2a3", "add", dt) for dt in ("i8", "i16", "i32", "f16", "bf16", "f32")] + \
         [("ascend950", a, dt) for a, dts in (("add", ("i32", "ui32", "f32", "f16", "bf16")),
                                              ("max", ("i32", "ui32", "f32")), ("min", ("i32", "ui32", "f32")))
          for dt in dts]


@pytest.mark.parametrize("target, atomic, dt", ATOMIC)
@pytest.mark.parametrize("coalesce", ["row", "elem"])
def test_mscatter_atomics_accumulate_in_row_major_order(target, atomic, dt, coalesce):
    """Every dtype MSCATTER.md's Atomic Type Support table gives each target; duplicates accumulate
    (floats rounded to the element type after each write, ints wrap)."""
    rng = np.random.default_rng(len(dt) + len(atomic))
    R_, C, trows = 8, 4, 3
    table, src = data(rng, dt, trows * C), data(rng, dt, R_ * C)
    cap = trows if coalesce == "row" else trows * C
    idx = rng.integers(0, cap, R_ if coalesce == "row" else R_ * C).astype(np.int32)
    text = kernel("mscatter", dt, R_, C, trows, C, coalesce=coalesce,
                  attrs=f"scatterAtomicOp = #pto<scatter_atomic_op {atomic}>")
    got = golden(text, {"tab": table, "idx": idx, "x": src}, target)["tab"]
    want = want_scatter(table, src, idx, R_, C, C, coalesce, "undefined", atomic, dt)
    np.testing.assert_array_equal(bits(got).reshape(-1), bits(want))


def test_edge_shapes_one_row_one_element_and_a_partial_tile():
    rng = np.random.default_rng(7)
    for R_, C, cols in ((1, 1, 8), (1, 8, 8), (3, 5, 16)):
        table = data(rng, "f32", 4 * C)
        for coalesce in ("row", "elem"):
            cap = 4 if coalesce == "row" else 4 * C
            idx = rng.integers(0, cap, R_ if coalesce == "row" else R_ * C).astype(np.int32)
            text = kernel("mgather", "f32", R_, C, 4, C, coalesce=coalesce, cols=cols)
            got = golden(text, {"tab": table, "idx": idx, "x": np.zeros(R_ * C, np.float32)})["x"]
            np.testing.assert_array_equal(got.reshape(R_, C), want_gather(table, idx, R_, C, C, coalesce, "undefined", "f32"))


def test_coalesce_defaults_to_row_and_to_elem_for_an_index_of_dst_shape():
    rng = np.random.default_rng(3)
    table = data(rng, "i32", 40)
    row_idx, elem_idx = np.array([4, 0, 2, 1], np.int32), rng.integers(0, 40, 32).astype(np.int32)
    got = golden(kernel("mgather", "i32", 4, 8, 5, 8, idx_shape=(1, 4)), {"tab": table, "idx": row_idx,
                                                                         "x": np.zeros(32, np.int32)})["x"]
    np.testing.assert_array_equal(got.reshape(4, 8), table.reshape(5, 8)[row_idx])
    got = golden(kernel("mgather", "i32", 4, 8, 5, 8, idx_shape=(4, 8)), {"tab": table, "idx": elem_idx,
                                                                         "x": np.zeros(32, np.int32)})["x"]
    np.testing.assert_array_equal(got.reshape(-1), table[elem_idx])


def test_a5_row_index_may_be_a_column():
    table = np.arange(24, dtype=np.float32)
    idx = np.array([2, 0, 1], np.int32)
    text = kernel("mgather", "f32", 3, 8, 3, 8, coalesce="row", idx_shape=(3, 1))
    got = golden(text, {"tab": table, "idx": idx, "x": np.zeros(24, np.float32)}, "ascend950")["x"]
    np.testing.assert_array_equal(got.reshape(3, 8), table.reshape(3, 8)[idx])


# ---- what the pages leave undefined, and the rules they state ----------------------------------

def _error(text, inputs, target="a2a3"):
    with pytest.raises(PtocError) as e:
        golden(text, inputs, target)
    assert e.value.exit_code == 1
    return str(e.value)


def test_undefined_mode_with_an_index_past_the_table_is_a_located_error():
    text = kernel("mgather", "f32", 2, 8, 3, 8)
    msg = _error(text, {"tab": np.zeros(24, np.float32), "idx": np.array([0, 3], np.int32),
                        "x": np.zeros(16, np.float32)})
    assert "k.pto:" in msg and "index 3 (read as uint32) is outside the table's capacity 3 with gatherOob = undefined" \
        in msg and "MGATHER.md" in msg
    text = kernel("mscatter", "f32", 2, 8, 3, 8, coalesce="elem")
    msg = _error(text, {"tab": np.zeros(24, np.float32), "idx": np.r_[np.arange(15), -1].astype(np.int32),
                        "x": np.zeros(16, np.float32)})
    assert "index 4294967295 (read as uint32)" in msg and "MSCATTER.md" in msg


def test_conflict_default_with_two_writers_is_a_located_error_on_a5():
    text = kernel("mscatter", "f32", 2, 8, 3, 8, attrs="scatterConflict = #pto<scatter_conflict default>")
    ins = {"tab": np.zeros(24, np.float32), "idx": np.array([1, 1], np.int32), "x": np.ones(16, np.float32)}
    assert "warp-scheduler dependent" in _error(text, ins, "ascend950")
    ins["idx"] = np.array([1, 2], np.int32)
    assert golden(text, ins, "ascend950")["tab"].sum() == 16


def test_elem_mode_needs_a_flat_table():
    """A partition of a wider tensor (rows 16 apart, 8 used) has no flat index."""
    text = kernel("mgather", "f32", 1, 8, 3, 8, coalesce="elem").replace(
        "shape = [%c3, %c8], strides = [%c8, %c1]", "shape = [%c3, %c8], strides = [%c16, %c1]").replace(
        "  %c0 =", "  %c16 = arith.constant 16 : index\n  %c0 =")
    msg = _error(text, {"tab": np.zeros(40, np.float32), "idx": np.arange(8, dtype=np.int32),
                        "x": np.zeros(8, np.float32)})
    assert "a partition whose elements are not contiguous in GM has no flat index" in msg


@pytest.mark.parametrize("target, text, why", [
    ("a2a3", kernel("mscatter", "f32", 2, 8, 3, 8, attrs="scatterAtomicOp = #pto<scatter_atomic_op max>"),
     "scatterAtomicOp max on a2a3 takes none, not f32"),
    ("a2a3", kernel("mscatter", "ui32", 2, 8, 3, 8, attrs="scatterAtomicOp = #pto<scatter_atomic_op add>"),
     "scatterAtomicOp add on a2a3 takes bf16, f16, f32, i16, i32, i8, not ui32"),
    ("ascend950", kernel("mscatter", "i16", 2, 16, 3, 16, attrs="scatterAtomicOp = #pto<scatter_atomic_op add>"),
     "scatterAtomicOp add on ascend950 takes bf16, f16, f32, i32, ui32, not i16"),
    ("a2a3", kernel("mscatter", "f32", 2, 8, 3, 8, attrs="scatterConflict = #pto<scatter_conflict default>"),
     "A2/A3 has no ScatterConflict parameter"),
    ("a2a3", kernel("mgather", "f32", 3, 8, 3, 8, coalesce="row", idx_shape=(3, 1)),
     "on A2/A3 the index tile must be RowMajor"),
    ("a2a3", kernel("mgather", "f32", 3, 8, 3, 8, coalesce="row", idx_shape=(3, 1)).replace(
        "3x1xi32, blayout=col_major", "3x1xi32"), "on A2/A3 Coalesce::Row needs an index tile of valid shape [1, R]"),
    ("ascend950", kernel("mgather", "f32", 3, 8, 3, 8, coalesce="row", idx_shape=(3, 1)).replace(
        "3x1xi32, blayout=col_major", "3x8xi32, valid=3x1"), "index tile of valid shape [R, 1] must be ColMajor"),
    ("a2a3", kernel("mgather", "f32", 3, 8, 3, 8, coalesce="row", idx_shape=(1, 2)),
     "Coalesce::Row needs an index tile of valid shape [1, 3]"),
    ("a2a3", kernel("mgather", "f32", 3, 8, 3, 16, coalesce="row"), "the table's last dim is 16"),
    ("a2a3", kernel("mgather", "f32", 3, 8, 3, 8, coalesce="elem", idx_shape=(3, 4)),
     "Coalesce::Elem needs an index tile of the dst's valid shape"),
    ("a2a3", kernel("mgather", "f32", 3, 8, 3, 8, attrs="gatherOob = #pto<gather_oob skip>"),
     "gatherOob must name one of undefined/clamp/wrap/zero"),
    ("a2a3", kernel("mgather", "f32", 3, 8, 3, 8, idx_dt="i16"), "indices must be i32 or ui32, got i16"),
    ("a2a3", kernel("mgather", "f32", 3, 4, 3, 4, cols=4), "dst's padded Cols * sizeof(T) must be a multiple of 32"),
])
def test_page_rules_are_located_errors(target, text, why):
    with pytest.raises(PtocError) as e:
        api.compile(api.parse(text, "k.pto"), target)
    assert e.value.exit_code == 1 and "k.pto:" in str(e.value) and why in str(e.value), str(e.value)


# ---- both backends: executor == golden model == the page's loops ---------------------------------

def _backend(target, op, dt, coalesce, attrs, seed, R_=5, C=7, trows=6, oob_reach=3):
    rng = np.random.default_rng(seed)
    cap = trows if coalesce == "row" else trows * C
    idx = rng.integers(0, cap + oob_reach, R_ if coalesce == "row" else R_ * C).astype(np.int32)
    if oob_reach:
        idx[-1] = -1  # uint32 4294967295
    table, x = data(rng, dt, trows * C), data(rng, dt, R_ * C)
    text = kernel(op, dt, R_, C, trows, C, coalesce=coalesce, attrs=attrs)
    res = api.check(api.parse(text, "k.pto"), target, {"tab": table, "idx": idx, "x": x})
    assert res.ok and res.comparisons, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
    return res.outputs, table, x, idx


def _gather_case(target, dt, coalesce, mode, seed):
    out, table, _, idx = _backend(target, "mgather", dt, coalesce, f"gatherOob = #pto<gather_oob {mode}>", seed,
                                  oob_reach=0 if mode == "undefined" else 3)
    want = want_gather(table, idx, 5, 7, 7, coalesce, mode, dt)
    np.testing.assert_array_equal(bits(out["x"]).reshape(5, 7), bits(want))


def _scatter_case(target, dt, coalesce, mode, atomic, seed):
    attrs = f"scatterOob = #pto<scatter_oob {mode}>, scatterAtomicOp = #pto<scatter_atomic_op {atomic}>"
    out, table, x, idx = _backend(target, "mscatter", dt, coalesce, attrs, seed,
                                  oob_reach=0 if mode == "undefined" else 3)
    want = want_scatter(table, x, idx, 5, 7, 7, coalesce, mode, atomic, dt)
    np.testing.assert_array_equal(bits(out["tab"]).reshape(-1), bits(want))


def _cases(full: bool):
    """(target, op, dtype, coalesce, mode, atomic): every mode of both ops and coalesces on both targets
    (the CI sample rotates the dtype, then adds any dtype not met), every atomic and its dtypes."""
    out = []
    for t_i, target in enumerate(("a2a3", "ascend950")):
        for op, modes in (("mgather", GATHER_OOB), ("mscatter", SCATTER_OOB)):
            seen = set()
            for i, (coalesce, mode) in enumerate((c, m) for c in ("row", "elem") for m in modes):
                for dt in DTYPES if full else (DTYPES[(i + 3 * t_i) % len(DTYPES)],):
                    out.append((target, op, dt, coalesce, mode, "none"))
                    seen.add(dt)
            out += [(target, op, dt, "elem", "wrap", "none") for dt in DTYPES if dt not in seen]
    out += [(t, "mscatter", dt, c, "skip", a) for t, a, dt in ATOMIC for c in ("row", "elem")]
    return out


def _id(case):
    return "-".join(case)


def _run(case):
    target, op, dt, coalesce, mode, atomic = case
    seed = sum(map(ord, _id(case)))
    if op == "mgather":
        _gather_case(target, dt, coalesce, mode, seed)
    else:
        _scatter_case(target, dt, coalesce, mode, atomic, seed)


@pytest.mark.parametrize("case", _cases(False), ids=_id)
def test_backends_match_the_page(case):
    _run(case)


@pytest.mark.full
@pytest.mark.parametrize("case", sorted(set(_cases(True)) - set(_cases(False))), ids=_id)
def test_backends_match_the_page_full(case):
    _run(case)


def test_a5_column_index_and_column_major_data_on_the_backend():
    """A5 Row: the index tile [R, 1]; dst ColMajor (the SIMT kernel is layout-agnostic): moved element by element."""
    table = np.arange(3 * 8, dtype=np.float32)
    idx = np.array([2, 0, 1, 2, 2, 0, 1, 1], np.int32)
    text = kernel("mgather", "f32", 8, 3, 3, 3, coalesce="row", idx_shape=(8, 1)).replace(
        "!pto.tile_buf<vec, 8x3xf32, valid=8x3>", "!pto.tile_buf<vec, 8x3xf32, valid=8x3, blayout=col_major>")
    res = api.check(api.parse(text, "k.pto"), "ascend950", {"tab": table[:9], "idx": idx, "x": np.zeros(24, np.float32)})
    assert res.ok and res.comparisons
    np.testing.assert_array_equal(res.outputs["x"].reshape(8, 3), table[:9].reshape(3, 3)[idx])


def dyn_kernel(op, coalesce, R_=8, cols=16, trows=10):
    """f32 data and index tiles of run-time valid shape (``valid=?x?``, %vr x %vc; the Row index 1 x %vr),
    loaded/stored through partitions of that size; the table trows x cols."""
    t = f"!pto.tile_buf<vec, {R_}x{cols}xf32, valid=?x?>"
    ir, ic, iv = ("%c1", "%vr", "valid_col = %vr") if coalesce == "row" else ("%vr", "%vc", "valid_row = %vr valid_col = %vc")
    it = f"!pto.tile_buf<vec, {R_ if coalesce == 'elem' else 1}x{max(R_, cols)}xi32, valid={'?x?' if coalesce == 'elem' else '1x?'}>"
    dyn = "!pto.partition_tensor_view<?x?x{}>"
    tab = f"!pto.partition_tensor_view<{trows}x{cols}xf32>"
    attrs = f"{{coalesce = #pto<coalesce {coalesce}>}}"
    lines = ["func.func @k(%tab: !pto.ptr<f32>, %idx: !pto.ptr<i32>, %x: !pto.ptr<f32>, %vr: index, %vc: index) {",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             f"  %ct = arith.constant {trows} : index", f"  %cc = arith.constant {cols} : index",
             "  %tv = pto.make_tensor_view %tab, shape = [%ct, %cc], strides = [%cc, %c1] : !pto.tensor_view<?x?xf32>",
             f"  %tp = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%ct, %cc] : !pto.tensor_view<?x?xf32> -> {tab}",
             f"  %iv = pto.make_tensor_view %idx, shape = [{ir}, {ic}], strides = [{ic}, %c1] : !pto.tensor_view<?x?xi32>",
             f"  %ip = pto.partition_view %iv, offsets = [%c0, %c0], sizes = [{ir}, {ic}] : !pto.tensor_view<?x?xi32> -> "
             f"{dyn.format('i32')}",
             "  %xv = pto.make_tensor_view %x, shape = [%vr, %vc], strides = [%vc, %c1] : !pto.tensor_view<?x?xf32>",
             f"  %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%vr, %vc] : !pto.tensor_view<?x?xf32> -> "
             f"{dyn.format('f32')}",
             f"  %it = pto.alloc_tile {iv} : {it}", f"  %t = pto.alloc_tile valid_row = %vr valid_col = %vc : {t}",
             f"  pto.tload ins(%ip : {dyn.format('i32')}) outs(%it : {it})"]
    lines += _op_lines(op, tab, it, t, dyn.format("f32"), f" {attrs}")
    return "\n".join(lines + ["  return", "}"]) + "\n"


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
@pytest.mark.parametrize("op", ["mgather", "mscatter"])
@pytest.mark.parametrize("coalesce", ["row", "elem"])
def test_run_time_valid_shapes(target, op, coalesce):
    """One compiled kernel, valid regions chosen at run time (Row: the table's 16 cols, so vc = 16)."""
    m = api.parse(dyn_kernel(op, coalesce), "k.pto")
    rng = np.random.default_rng(5)
    table = data(rng, "f32", 160)
    for vr, vc in ((8, 16), (3, 16), (1, 16)) if coalesce == "row" else ((8, 16), (3, 5), (1, 1)):
        n = vr if coalesce == "row" else vr * vc
        idx = rng.integers(0, 10 if coalesce == "row" else 160, n).astype(np.int32)
        x = data(rng, "f32", vr * vc)
        res = api.check(m, target, {"tab": table, "idx": idx, "x": x, "vr": vr, "vc": vc})
        assert res.ok and res.comparisons, [c.line() for c in res.comparisons] + [str(f) for f in res.findings]
        if op == "mgather":
            want = want_gather(table, idx, vr, vc, 16, coalesce, "undefined", "f32")
            np.testing.assert_array_equal(res.outputs["x"].reshape(vr, vc), want)
        else:
            want = want_scatter(table, x, idx, vr, vc, 16, coalesce, "undefined", "none", "f32")
            np.testing.assert_array_equal(res.outputs["tab"].reshape(-1), want)


def test_ssa_forms_of_the_pages_assembly_syntax():
    """AS Level 1: ``%dst = pto.mgather %mem, %idx : (...) -> tile`` and ``pto.mscatter %src, %idx, %mem``
    (pto-bufferize gives dst its buffer), on both targets."""
    view = "!pto.partition_tensor_view<10x8xf32>"
    it, t = "!pto.tile<1x8xi32, valid=1x4>", "!pto.tile<4x8xf32>"
    text = "\n".join([
        f"func.func @k(%tab: !pto.ptr<f32>, %i: {it}, %s: {t}) -> {t} {{",
        *(f"  %c{v} = arith.constant {v} : index" for v in (0, 1, 8, 10)),
        "  %tv = pto.make_tensor_view %tab, shape = [%c10, %c8], strides = [%c8, %c1] : !pto.tensor_view<?x?xf32>",
        f"  %tp = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c10, %c8] : !pto.tensor_view<?x?xf32> -> {view}",
        f"  %d = pto.mgather %tp, %i : ({view}, {it}) -> {t}",
        f"  pto.mscatter %s, %i, %tp : ({t}, {it}, {view}) -> ()",
        f"  return %d : {t}", "}"]) + "\n"
    table = np.arange(80, dtype=np.float32)
    idx = np.array([[7, 2, 7, 0]], np.int32)
    src = -np.arange(32, dtype=np.float32).reshape(4, 8)
    for target in ("a2a3", "ascend950"):
        res = api.check(api.parse(text, "k.pto"), target, {"tab": table, "i": idx, "s": src})
        assert res.ok and res.comparisons
        np.testing.assert_array_equal(res.outputs["result0"], table.reshape(10, 8)[[7, 2, 7, 0]])
        want = table.reshape(10, 8).copy()
        for r, k in enumerate([7, 2, 7, 0]):
            want[k] = src[r]
        np.testing.assert_array_equal(res.outputs["tab"].reshape(10, 8), want)
