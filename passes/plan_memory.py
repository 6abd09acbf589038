"""``pto-plan-memory{target=... manual=false}``: an address for every tile buffer, per memory.

Every ``pto.alloc_tile`` gets the attribute

``ub_addr`` (i64)
    the byte address of its buffer in the memory its ``loc`` names (``Target.spaces``,
    pto_compiler/targets.py: vec = UB, mat = L1, left = L0A, right = L0B, acc = L0C, bias = BT,
    scaling = FB; the name is historical: for a cube tile it is an L1/L0 address), a multiple of
    the space's alignment (32 B; one 512-byte fractal in L0A/L0B/L0C); the buffer spans
    ``[ub_addr, ub_addr + rows*cols*sizeof(T))``.

so that tiles of one memory whose data is live at the same time never overlap, and never run
past the memory's capacity (UB: 192 KiB on a2a3, 256 KiB on ascend950; the cube memories per
target in the same table).  Each memory is planned on its own, with the rules below.

**Liveness** is a backward data-flow over the structured control flow: a buffer is live from
a write to every read that can follow it; an ``scf.for`` body loops back to its head (a tile
read in the body before it is written there stays live around the whole loop), an
``scf.while`` runs its condition region, then its do region back to the condition, and leaves
from the condition (tiles are not carried through its arguments), an ``scf.if`` runs one of
its branches.  A write of the whole buffer (a full valid region, dst of an
elementwise, broadcast, copy or load op) ends the old contents' life; a tmp operand is
overwritten before use.  Tiles whose lives do not overlap share space (first fit in program
order of first use).

**Carried tiles** (pypto #1934).  Tiles linked through ``scf.for`` iter_args (init operand,
block argument, yielded value, loop result), through ``scf.if`` results (the values both
branches yield) or through ``pto.tassign`` results all get ONE buffer.  That is only right if
no two of them hold different live data at once; when one of them is written while another
still holds data something will read (or a non-elementwise op writes one while reading
another in place), the pass reports a located error asking for a ``pto.tmov`` copy instead of
silently diverging.

**Fixed addresses** are reservations the planner places the rest around:
``pto.alloc_tile addr = %c`` with ``%c = arith.constant`` (the ``addr`` operand is kept),
the doc form ``pto.tassign %t, @tile(0x1000)`` and the PTOAS form ``%t1 = pto.tassign %t,
%c`` with a constant ``%c``.  Two fixed tiles with exactly the same byte range are one
buffer under two names (manual code, e.g. PyPTO's level-3 output, writes a reshape or a
loop-carried value that way; the CPU simulator aliases them too, pto_isa.md §4.8); a partial
overlap with a tile live at the same time is an error.  Each address is copied into the alloc's ``ub_addr`` and the
``pto.tassign`` op is **erased** (uses of a result ``%t1`` become uses of ``%t``), so that
``ub_addr`` is the single source of truth for the lowering.  An alloc that already carries
``ub_addr`` (written by hand, or by an earlier run: the pass is idempotent) is fixed there too.

**Views** (``pto.treshape``, ``pto.subset``; passes/tile_views.py) get no buffer of their own:
their uses are uses of their source's buffer, writing a subset does not end the rest's life,
and once placed each becomes an ``alloc_tile`` at its source's address plus its byte offset.
A subset with a run-time offset becomes a ``pto.tassign`` to the address the run computes, when
its offsets stay in its source, contiguous and aligned (passes/tile_views.py); otherwise, and for
a block that is not contiguous, it is a located error.

**The a2a3 scratch.**  An op with ``bcast_source = "scratch"`` (pto-tmp-strategy) writes the
8 KiB ``TMP_UB_OFFSET`` buffer ``[184 KiB, 192 KiB)``: no tile live across such an op (or used
by it) is placed there; without such an op the range is ordinary UB.

**Reads** (passes/tile_reads_check.py, once every buffer has its bytes): a tile op reading a
tmp's leftovers, or a value another tile at the same bytes overwrote unread (a clobber, not an
alias), and a destination partially overlapping its own source, are located errors.

Located errors: an address that is not an ``arith.constant`` (e.g. a loop-dependent
``pto.tassign %t, %addr``: not supported by pto-plan-memory yet), two different addresses for
one buffer, a misaligned address, a tile past the end of UB, a fixed tile overlapping another
fixed tile live at the same time (both lines named; with ``manual=true``, PTOAS's level 3,
which leaves the addresses to the kernel and checks none, a located warning: the later write
replaces the other's bytes, and the golden model and the executor both compute with the bytes
the hardware holds), a fixed tile overlapping the scratch
while a Mode-1 op uses it, carried tiles that cannot share a buffer, more live bytes than UB
holds (the peak, its line and the capacity named), an L1 (unbufferized) tile op, a tile value
from an op the planner does not know, and with ``manual=true`` (``ptoc --manual``) a vec
tile without an address.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from pto_compiler.diagnostics import location_of, op_error, warn
from pto_compiler.dialects import pto
from pto_compiler.runtime.pipes import PIPE_OPS, internal_pipe_error, internal_pipe_init
from pto_compiler.passes.int_range import IntRange, int_range
from pto_compiler.passes.tile_access import (
    UB_ADDR,
    constant_int,
    full_write,
    in_place_safe,
    tile_reads,
    tile_writes,
    tmp_operands,
    uses_scratch,
)
from pto_compiler.passes.tile_reads_check import TileReadsCheck
from pto_compiler.passes.tile_views import (
    RunTimeView,
    bind_at_run_time,
    byte_offset,
    is_view,
    run_time_offset,
    static_offsets,
)
from pto_compiler.passes.tmp_strategy import resolve_target
from pto_compiler.targets import ADDRESS_ALIGN, Space, Target

ALIGN = ADDRESS_ALIGN


def _kib(n: int) -> str:
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n}-byte"


def _align_up(n: int, align: int = ALIGN) -> int:
    return -(-n // align) * align


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _line(op: Operation | None) -> int:
    return location_of(op)[1] if op is not None else 0


@dataclass
class _Var:
    """One tile value with its own identity: an alloc (and its constant tassign results), a
    computed tassign's result, an scf.for block argument or result, or an scf.if result."""

    index: int
    value: SSAValue
    kind: str  # "alloc", "moved", "iter_arg", "result"
    def_op: Operation
    size: int
    fixed: list[tuple[int, Operation]] = field(default_factory=list)
    moved: IntRange | None = None
    """kind "moved" (a computed tassign's result): its possible addresses (None: unknown)."""

    @property
    def name(self) -> str:
        return f"%{self.value.name_hint}" if self.value.name_hint else "an unnamed tile"

    @property
    def line(self) -> int:
        return _line(self.def_op)


@dataclass
class _Node:
    op: Operation
    uses: int = 0
    defs: int = 0
    kills: int = 0
    move: tuple[int, int] | None = None  # (dst var, src var): a carried value's copy
    scratch: bool = False
    tile_op: bool = False
    succ: list[int] = field(default_factory=list)


class _Planner:
    def __init__(self, fn: func.FuncOp, target: Target, manual: bool, space: Space, warned: set | None = None):
        self.fn = fn
        self.target = target
        self.manual = manual
        self.warned = set() if warned is None else warned
        """Located warnings already given (manual placement), as (file, line, column, message)."""
        self.space = space
        self.scratch = (target.scratch_offset, target.scratch_bytes) if space.locs == ("vec",) else (0, 0)
        """The a2a3 TMP_UB_OFFSET scratch (offset, bytes): UB only."""
        self.vars: list[_Var] = []
        self.var_of: dict[SSAValue, int] = {}
        self.parent: list[int] = []
        self.nodes: list[_Node] = []
        self.tassigns: list[pto.TAssignOp] = []
        self.computed: list[pto.TAssignOp] = []
        """tassigns whose address is computed at run time (kept in the IR)."""
        self.views: list[tuple[Operation, int, int]] = []
        """treshape/subset ops: (op, the var of their bytes, byte offset in it) (passes/tile_views.py)."""
        self.offset_of: dict[SSAValue, int] = {}
        """Byte offset of a view's result in its var's buffer."""
        self.partial: set[SSAValue] = set()
        """Views smaller than their buffer: writing all of one leaves the rest live."""
        self.moving_views: list[tuple[Operation, int, RunTimeView]] = []
        """subsets with a run-time offset: (op, the var of their bytes, passes/tile_views.run_time_offset's)."""

    # ---- variables ------------------------------------------------------------------------
    def _new_var(self, value: SSAValue, kind: str, def_op: Operation) -> int:
        i = len(self.vars)
        self.vars.append(_Var(i, value, kind, def_op, value.type.nbytes))
        self.var_of[value] = i
        self.parent.append(i)
        return i

    def _find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def _union(self, a: SSAValue, b: SSAValue) -> None:
        if a in self.var_of and b in self.var_of:
            ra, rb = self._find(self.var_of[a]), self._find(self.var_of[b])
            if ra != rb:
                self.parent[max(ra, rb)] = min(ra, rb)

    def mine(self, value: SSAValue) -> bool:
        """A tile buffer of this planner's memory."""
        t = value.type
        return isinstance(t, pto.TileBufType) and t.loc.data in self.space.locs

    def _address(self, op: Operation, value: SSAValue, what: str) -> int:
        c = constant_int(value)
        if c is None:
            raise op_error(op, f"{what} is not an arith.constant; a computed or loop-dependent {self.space.name} "
                               "address is not supported by pto-plan-memory yet")
        if c < 0:
            raise op_error(op, f"{what} gives the negative {self.space.name} address {c}")
        return c

    def collect(self) -> None:
        for op in self.fn.body.walk():
            if isinstance(op, pto.AllocTileOp):
                if self.mine(op.result):
                    v = self._new_var(op.result, "alloc", op)
                    if op.addr is not None:
                        self.vars[v].fixed.append((self._address(op, op.addr, "the 'addr' operand"), op))
                    placed = op.attributes.get(UB_ADDR)
                    if isinstance(placed, IntegerAttr):  # an earlier run's (or the user's) placement
                        self.vars[v].fixed.append((placed.value.data, op))
            elif isinstance(op, pto.TAssignOp):
                tile = op.tile[0]
                if not self.mine(tile):
                    continue
                if tile not in self.var_of:
                    raise op_error(op, "assigns an address to a tile that no pto.alloc_tile defines")
                if op.static_addr is None and constant_int(op.addr_value[0]) is None and op.result:
                    self._moved(op)
                    continue
                v = self.var_of[tile]
                addr = op.static_addr
                if addr is None:
                    addr = self._address(op, op.addr_value[0], "the address operand")
                self.vars[v].fixed.append((addr, op))
                for r in op.result:
                    self.var_of[r] = v
                self.tassigns.append(op)
            elif isinstance(op, scf.ForOp):
                body = op.body.block
                for k, init in enumerate(op.iter_args):
                    if self.mine(init):
                        self._new_var(body.args[k + 1], "iter_arg", op)
                        self._new_var(op.res[k], "result", op)
            elif isinstance(op, scf.IfOp):
                for r in op.output:
                    if self.mine(r):
                        self._new_var(r, "result", op)
            elif is_view(op) and self.mine(op.results[0]):
                self._view(op)
            elif isinstance(op, scf.WhileOp):
                if any(self.mine(v) for v in (*op.arguments, *op.res)):
                    raise op_error(op, "carries a tile through scf.while arguments, which pto-plan-memory does "
                                       "not support (use the tile by name; carry scalars only)")
            else:
                if isinstance(op, pto.TileOp) and any(isinstance(r.type, pto.TileType) for r in op.res):
                    raise op_error(op, "is an L1 (SSA) tile op; run pto-bufferize before pto-plan-memory")
                for r in op.results:
                    if self.mine(r) and op.name not in PIPE_OPS:  # a pipe slot: pto-resolve-reserved-buffers
                        init = internal_pipe_init(op)
                        if init is not None:
                            raise op_error(init, internal_pipe_error(init))
                        raise op_error(op, "defines a tile buffer that pto-plan-memory cannot place yet")
        for op in self.fn.body.walk():
            if isinstance(op, pto.Sort32Op) and self.mine(op.outs[0]):
                self._keep_bytes_written(op, op.outs[0], op.dst_bytes_written())
        # link carried values
        for op in self.fn.body.walk():
            if isinstance(op, scf.ForOp):
                body = op.body.block
                y = body.last_op
                for k, init in enumerate(op.iter_args):
                    arg = body.args[k + 1]
                    self._union(init, arg)
                    self._union(arg, op.res[k])
                    if isinstance(y, scf.YieldOp):
                        self._union(arg, y.operands[k])
            elif isinstance(op, scf.IfOp):
                for region in op.regions:
                    for block in region.blocks:
                        y = block.last_op
                        if isinstance(y, scf.YieldOp):
                            for k, r in enumerate(op.output):
                                self._union(r, y.operands[k])

    def _keep_bytes_written(self, op: Operation, dst: SSAValue, n: int) -> None:
        """An op that writes ``n`` bytes from dst's first element, past dst's tile (Sort32Op
        .dst_bytes_written): dst's buffer gets those bytes too, so no other tile live with it is there."""
        if n <= dst.type.nbytes:
            return
        if dst in self.offset_of or dst in self.partial:
            raise op_error(op, f"writes {n} bytes from its dst, past the {dst.type.nbytes}-byte tile, which is a "
                               "view of another tile's bytes")
        var = self.vars[self.var_of[dst]]
        var.size = max(var.size, n)

    def _moved(self, op: pto.TAssignOp) -> None:
        """``%r = pto.tassign %t, %a`` with %a computed at run time: %r is a tile of its own at the
        addresses :func:`int_range` allows (the executors check each one when it is computed)."""
        v = self._new_var(op.result[0], "moved", op)
        self.vars[v].moved = int_range(op.addr_value[0])
        self.computed.append(op)

    def check_moved_uses(self) -> None:
        """After a computed tassign, its buffer is used through that tassign's result only.  PTOAS
        rebinds one C++ tile variable (every name moves); ptoc gives each result the address its
        own tassign computed (the lowerings are static), and the two agree exactly when no use can
        run after a later tassign of the same buffer, which is what this checks."""
        order = {op: i for i, op in enumerate(self.fn.body.walk())}

        def loops(op: Operation) -> set[Operation]:
            out, p = set(), op.parent_op()
            while p is not None and p is not self.fn:
                if isinstance(p, (scf.ForOp, scf.WhileOp)):
                    out.add(p)
                p = p.parent_op()
            return out

        for t in self.computed:
            buf, t_loops = self._find(self.var_of[t.tile[0]]), loops(t)
            for value, v in self.var_of.items():
                if self._find(v) != buf:
                    continue
                d = self.vars[v].def_op if self.vars[v].kind == "moved" else None
                for use in value.uses:
                    u = use.operation
                    if isinstance(u, (pto.TAssignOp, scf.YieldOp)):
                        continue  # a rebinding or a carry reads the name, not the bytes
                    after = order[t] < order[u] and (d is None or order[d] < order[t])
                    around = any(d is None or loop not in loops(d) for loop in t_loops & loops(u))
                    if after or around:
                        name = f"%{value.name_hint}" if value.name_hint else "a tile"
                        raise op_error(u, f"uses {name} where the pto.tassign at line {_line(t)} may already "
                                          "have moved its buffer to an address computed at run time; use that "
                                          "tassign's result")

    def _view(self, op: Operation) -> None:
        """A treshape/subset result is bytes of its source's buffer, at an offset (no var of its own)."""
        src, res = op.operands[0], op.results[0]
        if src not in self.var_of:
            raise op_error(op, "views a tile that no pto.alloc_tile defines")
        if any(src is m.results[0] for m, _, _ in self.moving_views):
            raise op_error(op, "views a subset whose offset is computed at run time, which pto-plan-memory "
                               "cannot place yet")
        if static_offsets(op) is None:  # a loop's sub-tile: bound by a computed tassign once placed
            view, why = run_time_offset(op)
            if why is not None:
                raise op_error(op, why)
            self.var_of[res] = self.var_of[src]
            self.partial.add(res)
            self.moving_views.append((op, self.var_of[src], view))
            return
        if op.name == "pto.subset" and pto.DYNAMIC in res.type.valid_shape:
            raise op_error(op, "has a valid shape known only at run time (its source's), which pto-plan-memory "
                               "cannot place yet")
        offset, why = byte_offset(op)
        if offset is None:
            raise op_error(op, why)
        offset += self.offset_of.get(src, 0)
        if offset % ALIGN:
            raise op_error(op, f"starts at byte {offset} of its buffer, not a multiple of {ALIGN}")
        self.var_of[res] = self.var_of[src]
        self.offset_of[res] = offset
        if src in self.partial or res.type.nbytes < src.type.nbytes:
            self.partial.add(res)
        self.views.append((op, self.var_of[src], offset))

    def bit(self, value: SSAValue) -> int:
        i = self.var_of.get(value)
        return 0 if i is None else 1 << i

    # ---- control-flow graph -----------------------------------------------------------------
    def _node(self, preds: list[int], node: _Node) -> list[int]:
        n = len(self.nodes)
        self.nodes.append(node)
        for p in preds:
            self.nodes[p].succ.append(n)
        return [n]

    def _move(self, preds: list[int], dst: SSAValue, src: SSAValue, op: Operation) -> list[int]:
        d, s = self.var_of.get(dst), self.var_of.get(src)
        if d is None or s is None or d == s:
            return preds
        return self._node(preds, _Node(op, uses=1 << s, defs=1 << d, kills=1 << d, move=(d, s)))

    def _block(self, block: Block, preds: list[int]) -> list[int]:
        for op in block.ops:
            preds = self._op(op, preds)
        return preds

    def _op(self, op: Operation, preds: list[int]) -> list[int]:
        if isinstance(op, scf.ForOp):
            body = op.body.block
            carried = [(k, init) for k, init in enumerate(op.iter_args) if self.mine(init)]
            for k, init in carried:
                preds = self._move(preds, body.args[k + 1], init, op)
            head = self._node(preds, _Node(op))
            end = self._block(body, head)
            y = body.last_op
            if isinstance(y, scf.YieldOp):
                for k, _ in carried:
                    end = self._move(end, body.args[k + 1], y.operands[k], y)
            for p in end:
                self.nodes[p].succ.append(head[0])
            out = head
            for k, _ in carried:
                out = self._move(out, op.res[k], body.args[k + 1], op)
            return out
        if isinstance(op, scf.WhileOp):  # the condition region, then (maybe) the do region and again
            head = self._node(preds, _Node(op))
            exits = self._block(op.before_region.block, head)
            for p in self._block(op.after_region.block, exits):
                self.nodes[p].succ.append(head[0])
            return exits
        if isinstance(op, scf.IfOp):
            exits: list[int] = []
            branches = [r for r in op.regions if r.blocks]
            for region in branches:
                end = self._block(region.block, preds)
                y = region.block.last_op
                if isinstance(y, scf.YieldOp):
                    for k, r in enumerate(op.output):
                        end = self._move(end, r, y.operands[k], y)
                exits += end
            if len(branches) < 2:
                exits += preds
            return exits
        if op.regions:  # e.g. pto.section.vector: its body runs once
            for region in op.regions:
                for block in region.blocks:
                    preds = self._block(block, preds)
            return preds
        reads = [v for v in tile_reads(op) if v in self.var_of]
        writes = [v for v in tile_writes(op) if v in self.var_of]
        scratch = uses_scratch(op)
        if not reads and not writes and not scratch:
            return preds
        node = _Node(op, tile_op=True, scratch=scratch)
        for v in reads:
            node.uses |= self.bit(v)
        tmps = tmp_operands(op)
        for v in writes:
            node.defs |= self.bit(v)
            if (v in tmps or full_write(op, v)) and v not in self.partial:
                node.kills |= self.bit(v)
        node.kills &= ~node.uses
        return self._node(preds, node)

    # ---- liveness --------------------------------------------------------------------------
    def liveness(self) -> None:
        n = len(self.nodes)
        self.live_in = [0] * n
        self.live_out = [0] * n
        changed = True
        while changed:
            changed = False
            for i in range(n - 1, -1, -1):
                node = self.nodes[i]
                out = 0
                for s in node.succ:
                    out |= self.live_in[s]
                inn = node.uses | (out & ~node.kills)
                if out != self.live_out[i] or inn != self.live_in[i]:
                    self.live_out[i], self.live_in[i] = out, inn
                    changed = True
        # may-defined (forward): a tile nothing has written yet holds no data of its own, e.g. a
        # manual alias view (`alloc_tile addr = %c` of another tile's bytes, read but never written)
        preds: list[list[int]] = [[] for _ in range(n)]
        for i, node in enumerate(self.nodes):
            for s in node.succ:
                preds[s].append(i)
        self.def_in = [0] * n
        self.def_out = [0] * n
        changed = True
        while changed:
            changed = False
            for i, node in enumerate(self.nodes):
                inn = 0
                for p in preds[i]:
                    inn |= self.def_out[p]
                out = inn | node.defs
                if inn != self.def_in[i] or out != self.def_out[i]:
                    self.def_in[i], self.def_out[i] = inn, out
                    changed = True

    # ---- checks and placement ----------------------------------------------------------------
    def check_carried(self) -> None:
        """Values linked through iter_args / if results share one buffer: never two live at once."""
        for i, node in enumerate(self.nodes):
            for d in _bits(node.defs):
                group = self.group_vars[self._find(d)] & ~(1 << d)
                for other in _bits(self.live_out[i] & self.def_out[i] & group):
                    if node.move == (d, other):
                        continue
                    self._carried_error(node, d, other, "still holds data that is read later")
                if node.tile_op and not in_place_safe(node.op):
                    for other in _bits(node.uses & group & ~self.live_out[i]):
                        self._carried_error(node, d, other, "is read by the same op, which cannot work in place")

    def _carried_error(self, node: _Node, d: int, other: int, why: str):
        a, b = self.vars[d], self.vars[other]
        raise op_error(node.op, f"writes {a.name} (line {a.line}) while {b.name} (line {b.line}) {why}, but "
                                "the two are linked through scf.for iter_args / scf.if results and must share "
                                "one buffer; copy one of them with pto.tmov (carried tiles must not silently "
                                "diverge, pypto #1934)")

    def interference(self) -> None:
        roots = sorted({self._find(v.index) for v in self.vars})
        self.groups = roots
        self.group_index = {r: g for g, r in enumerate(roots)}
        G = len(roots)
        self.scratch_g = G  # pseudo group: the a2a3 TMP_UB_OFFSET scratch
        gbit = [1 << self.group_index[self._find(v.index)] for v in self.vars]

        def groups(mask: int) -> int:
            out = 0
            for v in _bits(mask):
                out |= gbit[v]
            return out

        self.strict = [0] * (G + 1)
        self.relaxed = [0] * (G + 1)
        self.first_use = [len(self.nodes)] * (G + 1)
        self.peak, self.peak_node = 0, None
        self.scratch_node_of: dict[int, int] = {}
        sizes = self.group_sizes
        for i, node in enumerate(self.nodes):
            occ_v = self.live_in[i] | self.live_out[i] | node.defs | node.uses
            occ = groups(occ_v)
            # the user's own placement is checked against tiles holding data they wrote
            held_v = ((self.live_in[i] | node.uses) & self.def_in[i]) | (self.live_out[i] & self.def_out[i]) \
                | node.defs
            held = groups(held_v)
            if node.scratch:
                occ |= 1 << self.scratch_g
                held |= 1 << self.scratch_g
            r_only = w_g = 0
            if node.tile_op and in_place_safe(node.op):
                dead = node.uses & ~self.live_out[i] & ~node.defs
                r_only = groups(dead) & ~groups(held_v & ~dead)
                w_g = groups(node.defs)
            total = 0
            for g in _bits(occ):
                self.strict[g] |= occ
                self.first_use[g] = min(self.first_use[g], i)
                total += self.scratch[1] if g == self.scratch_g else sizes[g]
            for g in _bits(held):
                mask = held
                if r_only >> g & 1:
                    mask &= ~w_g
                if w_g >> g & 1:
                    mask &= ~r_only
                self.relaxed[g] |= mask
                if node.scratch and g != self.scratch_g:
                    self.scratch_node_of.setdefault(g, i)
            if total > self.peak:
                self.peak, self.peak_node = total, i

    def plan(self) -> dict[int, int]:
        self.group_vars: dict[int, int] = {}
        for v in self.vars:
            r = self._find(v.index)
            self.group_vars[r] = self.group_vars.get(r, 0) | (1 << v.index)
        self.check_carried()
        roots = sorted(self.group_vars)
        self.group_sizes = [_align_up(max(self.vars[v].size for v in _bits(self.group_vars[r])), self.space.align)
                            for r in roots]
        self.interference()
        cap, mem = self.space.bytes, self.space.name
        fixed: dict[int, tuple[int, Operation]] = {}
        self.moved: dict[int, tuple[int, int]] = {}
        """group of a computed tassign's result -> the bytes it may occupy (planned tiles keep off)."""
        for g, r in enumerate(roots):
            members = [self.vars[v] for v in _bits(self.group_vars[r])]
            if any(m.kind == "moved" for m in members):
                self.moved[g] = self._moved_bytes(members, cap)
                continue
            seen: tuple[int, Operation] | None = None
            for addr, src in sorted((f for m in members for f in m.fixed), key=lambda f: _line(f[1])):
                if seen is not None and addr != seen[0]:
                    raise op_error(src, f"gives address {addr:#x} to a buffer that line {_line(seen[1])} already "
                                        f"placed at {seen[0]:#x}")
                seen = seen or (addr, src)
            if seen is None:
                if self.manual:
                    first = min(members, key=lambda m: m.line)
                    raise op_error(first.def_op, f"{first.name} has no {mem} address; manual placement "
                                                 "(--manual) needs `alloc_tile addr = %c` or `pto.tassign` "
                                                 "for every tile")
                continue
            addr, src = seen
            size = max(m.size for m in members)
            name = min(members, key=lambda m: m.line).name
            if addr % ALIGN:
                raise op_error(src, f"{mem} address {addr:#x} of {name} is not 32-byte aligned (a multiple of 32)")
            if addr + size > cap:
                raise op_error(src, f"{name} ({size} bytes at {addr:#x}) ends at {addr + size:#x}, past the end "
                                    f"of the {_kib(cap)} {self.target.name} {mem} ({cap:#x})")
            fixed[g] = (addr, src)
        self.check_fixed(fixed, roots)
        return self.place(fixed, roots, cap)

    def _moved_bytes(self, members: list[_Var], cap: int) -> tuple[int, int]:
        """The hull of the bytes a computed tassign's result may occupy; located errors when it
        is carried (one buffer would need two addresses) or when no address it can have is valid."""
        m = next(m for m in members if m.kind == "moved")
        if len(members) > 1:
            other = next(o for o in members if o is not m)
            raise op_error(m.def_op, f"{m.name} is at an address computed at run time, but it is linked to "
                                     f"{other.name} (line {other.line}) through scf.for iter_args / scf.if "
                                     "results, which must share one buffer; carry the address instead")
        r, mem = m.moved, self.space.name
        if r is None:
            return (0, cap)
        if r.values_aligned(ALIGN) is False:
            values = f"{r.lo:#x}" if r.stride == 0 else f"{r.lo:#x} + k*{r.stride:#x}"
            raise op_error(m.def_op, f"every {mem} address this gives {m.name} ({values}) is not {ALIGN}-byte "
                                     "aligned")
        if r.hi < 0 or r.lo + m.size > cap:
            raise op_error(m.def_op, f"every {mem} address this gives {m.name} (from {r.lo} to {r.hi}) puts its "
                                     f"{m.size} bytes outside the {_kib(cap)} {self.target.name} {mem}")
        return (max(r.lo, 0), min(r.hi + m.size, cap))

    def _group_name(self, g: int, roots: list[int]) -> tuple[str, int]:
        members = [self.vars[v] for v in _bits(self.group_vars[roots[g]])]
        first = min(members, key=lambda m: m.line)
        return first.name, first.line

    def check_fixed(self, fixed: dict[int, tuple[int, Operation]], roots: list[int]) -> None:
        order = sorted(fixed, key=lambda g: (_line(fixed[g][1]), g))
        for j, g in enumerate(order):
            lo, src = fixed[g]
            hi = lo + self.group_sizes_exact(g, roots)
            name, line = self._group_name(g, roots)
            for h in order[:j]:
                lo2, src2 = fixed[h]
                hi2 = lo2 + self.group_sizes_exact(h, roots)
                if (lo, hi) == (lo2, hi2):
                    continue  # the same bytes: one buffer under two names (an alias, as PyPTO writes a phi)
                if lo < hi2 and lo2 < hi and self.relaxed[g] >> h & 1:
                    name2, line2 = self._group_name(h, roots)
                    why = f"{name} (line {line}) at [{lo:#x}, {hi:#x}) overlaps {name2} (line {line2}) " \
                          f"at [{lo2:#x}, {hi2:#x}) while both are live"
                    if not self.manual:
                        raise op_error(src, why)
                    warn(src, why, self.warned)
            s_lo, s_n = self.scratch
            s_hi = s_lo + s_n
            if s_n and lo < s_hi and s_lo < hi and g in self.scratch_node_of:
                user = self.nodes[self.scratch_node_of[g]].op
                raise op_error(src, f"{name} (line {line}) at [{lo:#x}, {hi:#x}) overlaps the {self.target.name} "
                                    f"TMP_UB_OFFSET scratch [{s_lo:#x}, {s_hi:#x}) that the Mode-1 '{user.name}' at "
                                    f"line {_line(user)} writes while {name} is live (give that op a tmp tile, "
                                    "or move the tile)")

    def group_sizes_exact(self, g: int, roots: list[int]) -> int:
        return max(self.vars[v].size for v in _bits(self.group_vars[roots[g]]))

    def place(self, fixed: dict[int, tuple[int, Operation]], roots: list[int], cap: int) -> dict[int, int]:
        s_lo, s_n = self.scratch
        s_range = (s_lo, s_lo + s_n)
        free = [g for g in range(len(roots)) if g not in fixed and g not in self.moved]
        orders = [sorted(free, key=lambda g: (self.first_use[g], g)),
                  sorted(free, key=lambda g: (-self.group_sizes[g], self.first_use[g], g))]
        failed = None
        for order in orders:
            addr = {g: a for g, (a, _) in fixed.items()}
            ok = True
            for g in order:
                size = self.group_sizes[g]
                busy = [(addr[h], addr[h] + self.group_sizes[h]) for h in addr if self.strict[g] >> h & 1]
                busy += [span for h, span in self.moved.items() if self.strict[g] >> h & 1]
                if self.strict[g] >> self.scratch_g & 1:
                    busy.append(s_range)
                busy.sort()
                at = 0
                for lo, hi in busy:
                    if at + size <= lo:
                        break
                    at = max(at, _align_up(hi, self.space.align))
                if at + size > cap:
                    ok = False
                    failed = failed if failed is not None else g
                    break
                addr[g] = at
            if ok:
                return addr
        assert failed is not None
        mem = self.space.name
        name, _ = self._group_name(failed, roots)
        members = [self.vars[v] for v in _bits(self.group_vars[roots[failed]])]
        where = min(members, key=lambda m: m.line).def_op
        for h, span in self.moved.items():
            if span == (0, cap) and self.strict[failed] >> h & 1:
                moved, line = self._group_name(h, roots)
                raise op_error(where, f"cannot place {name}: it is live while {moved} (line {line}) is at a {mem} "
                                      "address computed at run time whose range is unknown (a kernel scalar, a "
                                      "loop-carried value, ...); place it with `alloc_tile addr =` or bound the "
                                      "address")
        peak_line = _line(self.nodes[self.peak_node].op) if self.peak_node is not None else 0
        if self.peak > cap:
            raise op_error(where, f"{mem} over capacity: cannot place {name} ({self.group_sizes[failed]} bytes); "
                                  f"{self.peak} bytes of tiles are live at once at line {peak_line} (the peak), "
                                  f"more than the {cap} bytes of the {self.target.name} {mem}")
        raise op_error(where, f"cannot place {name} ({self.group_sizes[failed]} bytes): the fixed addresses "
                              f"fragment the {cap}-byte {self.target.name} {mem} (peak {self.peak} bytes at line "
                              f"{peak_line})")

    def run(self) -> None:
        self.collect()
        if self.computed:
            self.check_moved_uses()
        self._block(self.fn.body.block, [])
        self.liveness()
        addr = self.plan() if self.vars else {}
        if self.vars:
            TileReadsCheck(self, addr).run()
        roots = sorted(self.group_vars) if self.vars else []
        for v in self.vars:
            if v.kind == "alloc":
                g = self.group_index[self._find(v.index)]
                v.def_op.attributes[UB_ADDR] = IntegerAttr(addr.get(g, 0), 64)
        del roots
        for op, var, offset in self.views:  # a tile at its bytes: what the lowerings place tiles by
            valid = list(op.operands[1:3]) if op.name == "pto.valid_view" else [None, None]
            alias = pto.AllocTileOp(op.results[0].type, None, *valid)
            alias.location = op.location
            alias.attributes[UB_ADDR] = IntegerAttr(addr.get(self.group_index[self._find(var)], 0) + offset, 64)
            op.parent_block().insert_op_before(alias, op)
            op.results[0].replace_all_uses_with(alias.result)
            op.detach()
            op.erase()
        for op, var, view in self.moving_views:
            base = addr.get(self.group_index[self._find(var)], 0) + self.offset_of.get(op.operands[0], 0)
            bind_at_run_time(op, view, base).attributes[UB_ADDR] = IntegerAttr(base, 64)
        for op in self.tassigns:
            for r in op.result:
                r.replace_all_uses_with(op.tile[0])
            op.detach()
            op.erase()


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    name = "pto-plan-memory"

    target: str = "a2a3"
    manual: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(self.target)
        warned: set = set()  # a callee's body is planned in it and in each caller it is inlined into: warn once
        for fn in op.walk():
            if isinstance(fn, func.FuncOp) and fn.body.blocks:
                locs = _buffer_locs(fn)
                for k, space in enumerate(target.spaces):
                    if k == 0 or locs.intersection(space.locs):
                        _Planner(fn, target, self.manual, space, warned).run()


def _buffer_locs(fn: func.FuncOp) -> set[str]:
    """The ``loc`` of every tile buffer value of ``fn``.  A planner whose space holds none of them
    finds nothing to place and changes nothing (the first one, which always runs, makes the checks
    that concern no space), so a vector kernel is not walked once per cube memory as well."""
    locs = set()
    for op in fn.walk():
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        locs.update(v.type.loc.data for v in values if isinstance(v.type, pto.TileBufType))
    return locs
