"""Synthetic PTO-AS kernels of a chosen size, for compile-speed measurements.

    from bench.gen_kernels import straight_line, tiled_loop   (or run this file: prints one)

* :func:`straight_line` — ``n_ops`` tile ops with no control flow: loads of 32x32 f32 GM
  blocks into four vec tiles, vector ops chaining them, stores back, so every pass sees real
  MTE2 -> V -> MTE3 hazards and tile reuse at every size.
* :func:`tiled_loop` — one ``scf.for`` of ``trips`` trips, each loading a 32x32 block of x and
  y at row ``32*i``, adding them and storing z's block: the compile time should not depend on
  ``trips``.
"""

from __future__ import annotations

import sys

TILE = "!pto.tile_buf<vec, 32x32xf32>"
PART = "!pto.partition_tensor_view<32x32xf32>"
VIEW = "!pto.tensor_view<?x?xf32>"

_VECTOR = ("tadd", "tmul", "tsub", "tmax")


def _header(name: str, rows: int) -> list[str]:
    return [
        "module {",
        f"  func.func @{name}(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %z: !pto.ptr<f32>) {{",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        "    %c32 = arith.constant 32 : index",
        f"    %rows = arith.constant {rows} : index",
        *(f"    %{g}v = pto.make_tensor_view %{g}, shape = [%rows, %c32], strides = [%c32, %c1] : {VIEW}"
          for g in "xyz"),
    ]


def _part(name: str, gm: str, row: str) -> str:
    return (f"    %{name} = pto.partition_view %{gm}v, offsets = [{row}, %c0], sizes = [%c32, %c32] : "
            f"{VIEW} -> {PART}")


def straight_line(n_ops: int) -> str:
    """A kernel of ``n_ops`` tile ops (tload / vector / tstore in a 2:4:1 mix) on four tiles;
    GM blocks of x and y are read and z's blocks written at 64 distinct row offsets."""
    blocks = 64
    lines = _header(f"straight{n_ops}", 32 * blocks)
    lines += [f"    %r{b} = arith.constant {32 * b} : index" for b in range(blocks)]
    for b in range(blocks):
        lines += [_part(f"{g}p{b}", g, f"%r{b}") for g in "xyz"]
    lines += [f"    %t{k} = pto.alloc_tile : {TILE}" for k in range(4)]
    for i in range(n_ops):
        step, b = i % 7, (i // 7) % blocks
        a, c, d = (i // 7) % 4, (i // 7 + 1) % 4, (i // 7 + 2) % 4
        if step in (0, 1):
            gm, t = ("x", a) if step == 0 else ("y", c)
            lines.append(f"    pto.tload ins(%{gm}p{b} : {PART}) outs(%t{t} : {TILE})")
        elif step < 6:
            lines.append(f"    pto.{_VECTOR[step - 2]} ins(%t{a}, %t{c} : {TILE}, {TILE}) outs(%t{d} : {TILE})")
        else:
            lines.append(f"    pto.tstore ins(%t{d} : {TILE}) outs(%zp{b} : {PART})")
    return "\n".join(lines + ["    return", "  }", "}", ""])


def tiled_loop(trips: int) -> str:
    """``z[32i:32i+32] = x[32i:32i+32] + y[32i:32i+32]`` for ``i`` in ``0..trips``, one scf.for."""
    lines = _header(f"tiled{trips}", 32 * trips)
    lines += [f"    %trips = arith.constant {trips} : index",
              *(f"    %t{k} = pto.alloc_tile : {TILE}" for k in range(3)),
              "    scf.for %i = %c0 to %trips step %c1 {",
              "      %row = arith.muli %i, %c32 : index",
              *("  " + _part(f"{g}p", g, "%row") for g in "xyz"),
              f"      pto.tload ins(%xp : {PART}) outs(%t0 : {TILE})",
              f"      pto.tload ins(%yp : {PART}) outs(%t1 : {TILE})",
              f"      pto.tadd ins(%t0, %t1 : {TILE}, {TILE}) outs(%t2 : {TILE})",
              f"      pto.tstore ins(%t2 : {TILE}) outs(%zp : {PART})",
              "    }"]
    return "\n".join(lines + ["    return", "  }", "}", ""])


if __name__ == "__main__":
    kind, n = (sys.argv[1], int(sys.argv[2])) if len(sys.argv) == 3 else ("straight", 100)
    sys.stdout.write(straight_line(n) if kind == "straight" else tiled_loop(n))
