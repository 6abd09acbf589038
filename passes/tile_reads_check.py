"""What pto-plan-memory checks about each tile read once every buffer has its UB bytes (issue 15).

A forward may-analysis over the planner's control-flow graph (one node per tile op, loops and
branches as the planner builds them) tracks, per tile variable:

* **tmp garbage**: the last write of its bytes on some path was a *tmp* operand (scratch the op
  leaves undefined, tile_access.py);
* **own writes not yet read**, and those **lost**: overwritten through *another* tile placed at
  the same bytes before anything read them.

A tile op reading a tile is a located error when on some path its bytes are a tmp's leftovers, or
when what its own name last wrote was lost (with manual placement, PTOAS's level 3, which checks
no address, a lost write is a located warning: the bytes the hardware then holds are defined, and
the golden model and the executor both read them).  (A read of a tile nothing wrote is legal code, as
PTOAS's own codegen tests show; the golden model locates it when such a kernel is run.)  The last rule
separates a clobber from intended aliasing: manual code reinterprets bytes (a 16x1 tile read as
1x16) or updates a loop-carried value through a second name (PyPTO's level-3 output), and in both
the value written under one name is read under another, or was read before being replaced; a
clobber is two tiles holding different live values in the same bytes, which shows as a value
written under a name, overwritten under another name unread, then read under the first name.

Per tile op, a destination (or tmp) whose bytes partially overlap one of its sources is an error,
and so is the exact same bytes when the op cannot work in place (tile_access.in_place_safe).  Only
tiles placed by hand can overlap this way; the planner keeps the others apart.
"""

from __future__ import annotations

from pto_compiler.diagnostics import location_of, op_error, warn
from pto_compiler.dialects import pto
from pto_compiler.passes.tile_access import in_place_safe, tile_reads, tmp_operands


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class _State:
    __slots__ = ("garbage", "pending", "lost")

    def __init__(self, garbage=frozenset(), pending=frozenset(), lost=frozenset()):
        self.garbage = garbage  # (var, tmp node)
        self.pending = pending  # (var, write node): written under its own name, not read since
        self.lost = lost  # (var, write node, clobbering node, clobbering var)

    def join(self, other: _State) -> _State:
        return _State(self.garbage | other.garbage, self.pending | other.pending, self.lost | other.lost)

    def key(self):
        return (self.garbage, self.pending, self.lost)


class TileReadsCheck:
    """Runs on a finished ``plan_memory._Planner`` and its group addresses."""

    def __init__(self, planner, addr: dict[int, int]):
        self.p = planner
        n = len(planner.vars)
        self.range: list[tuple[int, int] | None] = [None] * n
        fixed_groups = {planner._find(v.index) for v in planner.vars if v.fixed}
        for v in planner.vars:
            root = planner._find(v.index)
            if root in fixed_groups:
                lo = addr[planner.group_index[root]]
                self.range[v.index] = (lo, lo + v.size)
        self._access: dict[int, tuple[set[int], list[int]]] = {}
        self.alias = [1 << i for i in range(n)]  # vars sharing bytes with each (itself included)
        self.covered = [1 << i for i in range(n)]  # vars whose bytes each one's bytes cover
        fixed = [i for i in range(n) if self.range[i] is not None]
        for i in fixed:
            lo, hi = self.range[i]
            for j in fixed:
                lo2, hi2 = self.range[j]
                if lo < hi2 and lo2 < hi:
                    self.alias[i] |= 1 << j
                    if lo <= lo2 and hi2 <= hi:
                        self.covered[i] |= 1 << j

    def run(self) -> None:
        nodes = self.p.nodes
        preds: list[list[int]] = [[] for _ in nodes]
        for i, node in enumerate(nodes):
            for s in node.succ:
                preds[s].append(i)
        empty = _State()
        out = [empty] * len(nodes)
        if all(q < i for i, ps in enumerate(preds) for q in ps):
            # no loop, nodes in order: each in-state is final when its node is reached (one pass, reporting)
            for i, node in enumerate(nodes):
                inn = empty
                for q in preds[i]:
                    inn = inn.join(out[q])
                out[i] = self.transfer(i, inn, node.op)
            return
        changed = True
        while changed:
            changed = False
            for i in range(len(nodes)):
                inn = empty
                for q in preds[i]:
                    inn = inn.join(out[q])
                new = self.transfer(i, inn, None)
                if new.key() != out[i].key():
                    out[i], changed = new, True
        for i in range(len(nodes)):
            inn = empty
            for q in preds[i]:
                inn = inn.join(out[q])
            self.transfer(i, inn, nodes[i].op)

    def access(self, i: int) -> tuple[set[int], list[int]]:
        """(tmp vars, read vars) of node ``i``'s op: worked out on its first visit (the fixed point
        visits every node two or more times)."""
        acc = self._access.get(i)
        if acc is None:
            op, var_of = self.p.nodes[i].op, self.p.var_of
            acc = self._access[i] = ({var_of[v] for v in tmp_operands(op) if v in var_of},
                                     [var_of[v] for v in tile_reads(op) if v in var_of])
        return acc

    def var_name(self, v: int) -> str:
        var = self.p.vars[v]
        return f"{var.name} (line {var.line})"

    def transfer(self, i: int, s: _State, report) -> _State:
        """The state after node ``i``; with ``report`` (the node's op), raise what it reads wrong."""
        node = self.p.nodes[i]
        garbage, pending, lost = set(s.garbage), set(s.pending), set(s.lost)
        if node.move is not None:  # a carried value's copy: the destination holds what the source held
            d, src = node.move
            garbage = {g for g in garbage if g[0] != d} | {(d, t) for v, t in garbage if v == src}
            return _State(frozenset(garbage), frozenset(pending), frozenset(lost))
        op = node.op
        tmps, reads = self.access(i)
        if report is not None and isinstance(op, pto.TileOp):
            self.check_overlap(op, reads, [d for d in _bits(node.defs)], tmps)
            for u in reads:
                self.check_read(op, u, garbage, lost)
        for u in reads:
            pending = {p for p in pending if not self.alias[u] >> p[0] & 1}
        for d in _bits(node.defs):
            if d in tmps:
                garbage |= {(x, i) for x in _bits(self.alias[d])}
                pending = {p for p in pending if not self.alias[d] >> p[0] & 1}
                continue
            full = node.kills >> d & 1
            covered = self.covered[d] if full else 1 << d
            garbage = {g for g in garbage if not covered >> g[0] & 1}
            for x, w in [p for p in pending if covered >> p[0] & 1 and p[0] != d]:
                lost.add((x, w, i, d))
            pending = {p for p in pending if not covered >> p[0] & 1}
            pending.add((d, i))
            lost = {q for q in lost if q[0] != d}
        return _State(frozenset(garbage), frozenset(pending), frozenset(lost))

    def check_read(self, op, u: int, garbage: set, lost: set) -> None:
        nodes = self.p.nodes
        for v, t in sorted(garbage):
            if v == u:
                tmp_op = nodes[t].op
                raise op_error(op, f"reads {self.var_name(u)}, whose bytes the tmp operand of '{tmp_op.name}' at "
                                   f"line {_line(tmp_op)} overwrote (a tmp holds nothing after the op); write "
                                   "it again first, or give that op another tmp tile")
        for v, w, c, d in sorted(lost):
            if v == u:
                lo, hi = self.range[d]
                why = (f"reads {self.var_name(u)}, but what line {_line(nodes[w].op)} wrote to it was overwritten "
                       f"unread at line {_line(nodes[c].op)} through {self.var_name(d)}, placed at the same "
                       f"{self.p.space.name} bytes [{lo:#x}, {hi:#x}); two live tiles need different addresses")
                if not self.p.manual:
                    raise op_error(op, why)
                warn(op, why, self.p.warned)

    def check_overlap(self, op, reads: list[int], defs: list[int], tmps: set[int]) -> None:
        for d in defs:
            for u in reads:
                if u == d:
                    # an accumulating op (tmatmul.acc, taxpy, tmuladddst) reads its dst by definition; any other op's
                    # lowerings order reads and writes differently per target
                    if not in_place_safe(op) and not getattr(op, "ACC", False) and not getattr(op, "READS_DST", False):
                        raise op_error(op, f"{self.var_name(d)} is both a source and the destination, and "
                                           f"'{op.name}' cannot work in place: give its result another tile")
                    continue
                if not self.alias[d] >> u & 1:
                    continue
                (lo, hi), (lo2, hi2) = self.range[d], self.range[u]
                what = "tmp" if d in tmps else "destination"
                if (lo, hi) != (lo2, hi2):
                    raise op_error(op, f"{what} {self.var_name(d)} at [{lo:#x}, {hi:#x}) partially overlaps its "
                                       f"source {self.var_name(u)} at [{lo2:#x}, {hi2:#x})")
                if d in tmps or not in_place_safe(op):
                    raise op_error(op, f"{what} {self.var_name(d)} is placed at the same UB bytes as its source "
                                       f"{self.var_name(u)} [{lo:#x}, {hi:#x}), and '{op.name}' cannot work in place")


def _line(op) -> int:
    return location_of(op)[1]
