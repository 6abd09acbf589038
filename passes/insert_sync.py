"""``pto-insert-sync{target=...}``: the set_flag / wait_flag / pipe_barrier a placed kernel needs.

Runs after pto-plan-memory (it reads ``ub_addr``).  Pipes (passes/tile_access.py):
``pto.tload`` = ``PIPE_MTE2``, ``pto.tstore`` = ``PIPE_MTE3`` (``PIPE_FIX`` out of acc),
matmuls = ``PIPE_M``, moves touching the cube = their instruction's pipe (``PIPE_MTE1``,
``PIPE_FIX``, ``PIPE_MTE3``), every other tile op = ``PIPE_V``, scalar tile/GM accesses =
``PIPE_S``.  Tiles of different memories (UB, L1, L0A, L0B, L0C, BT, FB: their ``loc``) never
conflict; the cube pipes MTE1, M and FIX run in order, so a same-pipe pair there needs no barrier.

**Hazards.**  Two tile ops conflict when one writes bytes the other reads or writes: UB bytes
``[ub_addr, ub_addr + rows*cols*sizeof(T))`` of the tiles they read/write (a tmp operand and,
for an a2a3 Mode-1 op with ``bcast_source = "scratch"``, the 8 KiB scratch at 184 KiB count
as written and read by the op), or GM: the same pointer argument (partitions with all-constant
offsets, sizes and strides are compared exactly; otherwise the same pointer is a hazard; an
unknown pointer conflicts with every GM access).  A conflict orders the pair when the first op
can run before the second: earlier in program order, or anywhere in a common ``scf.for`` body
(the previous trip).  ``scf.if`` is conservative: ops after the ``if`` are ordered against
both branches; the two branches of one ``if`` are never ordered against each other within a
trip.

**What is inserted** (vector_isa.md §1.11; the executor's model, runtime/executor.py):

* different pipes (RAW, WAR or WAW): ``pto.set_flag [#pto.pipe<SRC>, #pto.pipe<DST>,
  #pto.event<EVENT_IDn>]`` right after the producer and ``pto.wait_flag [...]`` right before
  the consumer, both in the innermost block holding the two (the producer's enclosing
  ``scf.for``/``scf.if`` is waited for as a whole: the set goes after it; likewise the
  consumer's);
* the same pipe (RAW or WAW; WAR is ordered by in-order issue): ``pto.barrier
  [#pto.pipe<P>]`` right before the consumer (or its enclosing ``scf.for``/``scf.if``);
* a hazard across an ``scf.for`` back edge (a consumer early in the body and a producer later
  in it, or in the other branch of an ``scf.if``, or the same op on the next trip): the
  ping-pong pattern ``set`` before the loop, ``wait`` before the consumer, ``set`` after the
  producer, ``wait`` after the loop, so every wait has exactly one set on every path (a trip
  that skips an ``scf.if`` branch skips its wait/set pair too).

A sync is added only when the pair is not already ordered.  "Ordered" is decided by a
data-flow over the structured program of what each pipe knows to be complete (the executor's
vector clocks, per static op: ``set_flag`` passes on everything its pipe knows plus its
pipe's own earlier ops, ``wait_flag`` merges that in, ``pipe_barrier`` completes its pipe's
earlier ops, re-issuing an op makes it unknown again, loops iterate to a fixpoint, branches
meet), so chains like MTE2 -> V -> MTE3 need no direct MTE2 -> MTE3 pair, a wait already
implied by earlier syncs is not added, and a barrier is only added where it orders something.
Once the consumers of one top-level item (an op, or a whole ``scf.for``/``scf.if``) are ordered,
every sync inserted for them that later ones made redundant is removed again.

**Cost** (near-linear in the ops): the pairs come from per-location, per-pipe last-writer /
last-reader tables (an earlier access of the same pipe to the same location is ordered with the
last one: a pipe's ops become known in issue order), not from all pairs; the data-flow advances
one top-level item at a time from a checkpoint, re-walking only from the earliest item a new
sync touches (a set after an earlier op is folded into the checkpoint directly); loops are
fixed points over their bodies.

**Events.**  Ids ``EVENT_ID0``..``EVENT_ID7`` per (src, dst) pipe pair; two inserted pairs on
the same pipe pair get different ids while both are outstanding (set..wait ranges, a
loop-carried pair's range being the whole loop), ids are reused once free.  An id the user
uses on a pipe pair is never used by this pass on that pair, and pairs with ``PIPE_S`` never
use ``EVENT_ID0`` (the lowering's V<->S brackets inside one op use it, as the headers do).
More than the free ids at once is a located error.

**User syncs** (``pto.set_flag``/``wait_flag``, ``pto.record_event``/``wait_event``
(TLOAD = MTE2, TVEC = V, TSTORE_VEC = MTE3), ``pto.barrier``/``barrier_sync``) are kept and
count as ordering, so the pass never doubles them; each user ``wait_flag``/``wait_event``
must have a matching set earlier on every path (a must-count of outstanding sets per event),
else a located error.  The pass is idempotent.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import NamedTuple

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from pto_compiler.diagnostics import location_of, op_error
from pto_compiler.dialects import a2a3, pto
from pto_compiler.passes.tile_access import (
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_V,
    PIPES,
    constant_int,
    gm_reads,
    gm_writes,
    pipe_of,
    tile_reads,
    IN_ORDER,
    tile_range,
    tile_writes,
    uses_scratch,
)
from pto_compiler.passes.tmp_strategy import resolve_target
from pto_compiler.targets import Target

S, V, MTE2, MTE3 = range(4)
PIPE_INDEX = {name: i for i, name in enumerate(PIPES)}
NP = len(PIPES)
_IN_ORDER = frozenset(PIPE_INDEX[p] for p in IN_ORDER)
N_EVENTS = 8

EVENT_TYPE_PIPE = {"TLOAD": PIPE_MTE2, "TSTORE_VEC": PIPE_MTE3, "TSTORE": PIPE_MTE3, "TVEC": PIPE_V,
                   "TVECTOR": PIPE_V, "TVECWAIT_EVENT": PIPE_V, "TMOV_M2V": PIPE_V, "TSTORE_ACC": "PIPE_FIX",
                   "TMOV_M2L": "PIPE_MTE1", "TMOV_M2B": "PIPE_MTE1", "TMOV_M2S": "PIPE_FIX",
                   "TMOV_V2M": "PIPE_FIX", "TMATMUL": "PIPE_M"}
"""PTOAS pipe_event_type -> pipe (ptoas_peer.md §1.5 ``PTOSyncUtils.cpp``); others are not modelled."""

_UB_ALL = ("ub", 0, 1 << 62)


# --------------------------------------------------------------------------------------
# The structured program: accesses, user syncs, loops, ifs
# --------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Item:
    op: Operation
    kind: str  # "access", "sync", "loop", "if", "region"
    block: _Block | None = None
    index: int = 0
    start: int = 0
    end: int = 0
    ancestors: list[_Item] = field(default_factory=list)  # enclosing loop/if/region items, outermost first
    # access
    pipe: int = -1
    bit: int = 0
    reads: list[tuple] = field(default_factory=list)
    writes: list[tuple] = field(default_factory=list)
    # sync: ("set"|"wait"|"barrier"|"none", src, dst, key)
    sync: tuple | None = None
    # loop / if / region
    blocks: list[_Block] = field(default_factory=list)


@dataclass(eq=False)
class _Block:
    id: int
    items: list[_Item] = field(default_factory=list)
    parent: _Item | None = None


class _Slot(NamedTuple):
    """A place for syncs: before or after item ``index`` of block ``block`` (a tuple: the flow looks
    one up per item)."""
    block: int
    index: int
    where: str  # "before" | "after"


@dataclass(eq=False)
class _Unit:
    """One inserted sync: a set/wait pair, a loop-carried set/wait/set/wait group, or a barrier."""

    kind: str  # "flag" | "barrier"
    src: int
    dst: int
    places: list[tuple[_Slot, str, Operation]]  # (slot, "set"|"wait"|"barrier", op for the location)
    span: tuple[int, int]
    consumer: Operation
    event: int = -1

    def signature(self) -> tuple:
        return (self.kind, self.src, self.dst, tuple((p[0], p[1]) for p in self.places))


class _Program:
    """The function as a tree of items, with the access analysis."""

    def __init__(self, fn: func.FuncOp, target: Target):
        self.fn = fn
        self.target = target
        self.blocks: list[_Block] = []
        self.accesses: list[_Item] = []
        self.user_syncs: list[_Item] = []
        self.counter = 0
        self.locals: dict = {}
        self.root = self._block(fn.body.block, None, [])

    # ---- building ----------------------------------------------------------------------
    def _block(self, block: Block, parent: _Item | None, ancestors: list[_Item]) -> _Block:
        b = _Block(len(self.blocks), parent=parent)
        self.blocks.append(b)
        for op in block.ops:
            item = self._item(op, ancestors)
            if item is None:
                continue
            item.block, item.index = b, len(b.items)
            b.items.append(item)
        return b

    def _item(self, op: Operation, ancestors: list[_Item]) -> _Item | None:
        if isinstance(op, pto.TileOp):  # most ops: no region, no sync
            return self._access(op, ancestors)
        if isinstance(op, scf.ForOp):
            item = _Item(op, "loop", ancestors=list(ancestors))
            item.start = self._tick()
            item.blocks = [self._block(op.body.block, item, ancestors + [item])]
            item.end = self.counter
            return item
        if isinstance(op, scf.IfOp):
            item = _Item(op, "if", ancestors=list(ancestors))
            item.start = self._tick()
            item.blocks = [self._block(r.block, item, ancestors + [item]) for r in op.regions if r.blocks]
            item.end = self.counter
            return item
        if isinstance(op, scf.WhileOp):
            # a loop whose body is the do region: exact while the condition region holds no tile op or
            # sync (then a trip is "condition; body" and the exit is at the head, as for scf.for)
            item = _Item(op, "loop", ancestors=list(ancestors))
            item.start = self._tick()
            cond = self._block(op.before_region.block, item, ancestors + [item])
            if cond.items:
                raise op_error(cond.items[0].op, "is in the condition region of an scf.while, which "
                                                 "pto-insert-sync does not support (move it into the do region)")
            item.blocks = [self._block(op.after_region.block, item, ancestors + [item])]
            item.end = self.counter
            return item
        if op.regions:
            item = _Item(op, "region", ancestors=list(ancestors))
            item.start = self._tick()
            item.blocks = [self._block(b, item, ancestors + [item]) for r in op.regions for b in r.blocks]
            item.end = self.counter
            return item
        sync = self._user_sync(op)
        if sync is not None:
            item = _Item(op, "sync", sync=sync, ancestors=list(ancestors))
            item.start = item.end = self._tick()
            self.user_syncs.append(item)
            return item
        return self._access(op, ancestors)

    def _access(self, op: Operation, ancestors: list[_Item]) -> _Item | None:
        """The item of an op that reads or writes tiles or GM (None: it touches neither)."""
        if isinstance(op, pto.TileOp) and op.res and not op.outs:
            if any(isinstance(r.type, pto.TileType) for r in op.res):
                raise op_error(op, "is an L1 (SSA) tile op; run pto-bufferize and pto-plan-memory before "
                                   "pto-insert-sync")
        pipe = pipe_of(op)
        if pipe is None:
            return None
        reads = [self._local(v) for v in tile_reads(op) if self._is_local(v)] + [self._gm(v) for v in gm_reads(op)]
        writes = [self._local(v) for v in tile_writes(op) if self._is_local(v)] \
            + [self._gm(v) for v in gm_writes(op)]
        if uses_scratch(op) and self.target.scratch_bytes:
            scratch = ("ub", self.target.scratch_offset, self.target.scratch_offset + self.target.scratch_bytes)
            reads.append(scratch)
            writes.append(scratch)
        if not reads and not writes:
            return None
        item = _Item(op, "access", pipe=PIPE_INDEX[pipe], reads=reads, writes=writes, ancestors=list(ancestors))
        item.start = item.end = self._tick()
        item.bit = 1 << len(self.accesses)
        self.accesses.append(item)
        return item

    def _tick(self) -> int:
        self.counter += 1
        return self.counter

    @staticmethod
    def _is_local(v: SSAValue) -> bool:
        return isinstance(v.type, pto.TileBufType)

    def _local(self, v: SSAValue) -> tuple:
        """(memory, lo, hi): the tile's bytes in the memory of its loc (UB: "ub"); worked out once per
        tile value (a kernel's ops name a few tiles many times)."""
        got = self.locals.get(v)
        if got is None:
            loc = v.type.loc.data
            space = "ub" if loc == "vec" else loc
            r = tile_range(v)
            got = self.locals[v] = (space, r[0], r[1]) if r is not None else (space, *_UB_ALL[1:])
        return got

    def _gm(self, v: SSAValue) -> tuple:
        owner = v.owner
        offsets = sizes = None
        view = v
        if isinstance(owner, pto.PartitionViewOp):
            offsets = [constant_int(o) for o in owner.offsets]
            sizes = [constant_int(z) for z in owner.sizes]
            view = owner.source[0]
        tv = view.owner
        if not isinstance(tv, pto.MakeTensorViewOp):
            return ("gm", self._root(view), None, None)
        root = self._root(tv.ptr[0])
        strides = [constant_int(s) for s in tv.strides_]
        if offsets is None:
            offsets = [0] * len(strides)
            sizes = [constant_int(s) for s in tv.shape_]
        vals = [*offsets, *sizes, *strides]
        if root is None or None in vals or len(offsets) != len(strides) or len(sizes) != len(strides):
            return ("gm", root, None, None)
        esize = pto.element_bytes(tv.result.type.element_type)
        lo = sum(o * s for o, s in zip(offsets, strides))
        hi = sum((o + z - 1) * s for o, z, s in zip(offsets, sizes, strides)) + 1
        return ("gm", root, lo * esize, max(hi, lo) * esize)

    @staticmethod
    def _root(ptr: SSAValue):
        root = pto.view_root(ptr)
        return root if isinstance(root, BlockArgument) else None

    @staticmethod
    def _pipe_attr(attr) -> str | None:
        body = getattr(getattr(attr, "body", None), "data", None)
        if body is None:
            return None
        name = getattr(attr, "name", "")
        if name == "pto.pipe":
            return body if body in PIPE_INDEX or body == "PIPE_ALL" else "?" + body
        if name in ("pto.pipe_event_type", "pto.sync_op_type"):
            return EVENT_TYPE_PIPE.get(body, "?" + body)
        return None

    def _user_sync(self, op: Operation) -> tuple | None:
        if not isinstance(op, pto._BracketAttrsOp):
            return None
        args = list(op.args.data)
        name = op.name
        if name in ("pto.set_flag", "pto.wait_flag", "pto.record_event", "pto.wait_event"):
            if len(args) < 3:
                return ("none", None, None, None)
            src, dst = self._pipe_attr(args[0]), self._pipe_attr(args[1])
            event = getattr(getattr(args[2], "body", None), "data", str(args[2]))
            kind = "set" if name in ("pto.set_flag", "pto.record_event") else "wait"
            return (kind, src, dst, ("user", src, dst, event))
        if name in ("pto.set_flag_dyn", "pto.wait_flag_dyn"):
            src = self._pipe_attr(args[0]) if args else None
            dst = self._pipe_attr(args[1]) if len(args) > 1 else None
            return ("dyn", src, dst, None)
        if name in ("pto.barrier", "pto.barrier_sync"):
            pipe = self._pipe_attr(args[0]) if args else None
            return ("barrier", pipe, pipe, None)
        return ("none", None, None, None)

    # ---- pairs -------------------------------------------------------------------------
    def relation(self, p: _Item, c: _Item):
        """(forward, pk, ck, innermost common loop or None).

        pk and ck are the items holding p and c in the deepest block holding both (the same
        item when p is c, or when p and c sit in different branches of one scf.if)."""
        ap, ac = p.ancestors + [p], c.ancestors + [c]
        k = 0
        while k < min(len(ap), len(ac)) - 1 and ap[k] is ac[k]:
            k += 1
        if ap[k] is not ac[k] and ap[k].block is not ac[k].block:
            k -= 1  # different blocks of the common ancestor ap[k-1]: an scf.if's branches
        pk, ck = ap[k], ac[k]
        forward = pk is not ck and pk.index < ck.index
        loop = None
        for a in ap[:k]:
            if a.kind == "loop":
                loop = a
        return forward, pk, ck, loop

    def hazard_pairs(self) -> list[tuple[_Item, _Item]]:
        """The conflicting pairs (p, c) where p can run before c, pruned to those that matter:
        per location (a distinct UB interval or GM range) and pipe, the last writers and the
        readers since them that reach c (sets, because branches meet; loops iterate to a fixed
        point, the back edge giving the carried pairs).  An earlier access of the same pipe to the
        same location is ordered whenever the reaching one is: a pipe's ops are known complete
        in issue order."""
        overlaps = _overlap_index({r for a in self.accesses for r in (*a.reads, *a.writes)})
        pairs: set = set()

        def access(a: _Item, tab: dict) -> None:
            for kind, ranges in ((0, a.reads), (1, a.writes)):
                for r in ranges:
                    for o in overlaps[r]:
                        slot = tab.get(o)
                        if slot is None:
                            continue
                        for pipe, (writers, readers) in slot.items():
                            if pipe == S and a.pipe == S:
                                continue
                            pairs.update((p, a) for p in writers)
                            if kind and pipe != a.pipe:
                                pairs.update((p, a) for p in readers)
            for r in a.reads:
                slot = tab.setdefault(r, {})
                writers, _ = slot.get(a.pipe, ((), ()))
                slot[a.pipe] = (writers, (a,))
            for r in a.writes:
                tab.setdefault(r, {})[a.pipe] = ((a,), (a,) if r in a.reads else ())

        def join(x: dict, y: dict) -> dict:
            out = {k: dict(v) for k, v in x.items()}
            for r, slot in y.items():
                mine = out.setdefault(r, {})
                for pipe, (w, rd) in slot.items():
                    w0, r0 = mine.get(pipe, ((), ()))
                    mine[pipe] = (w0 + tuple(i for i in w if i not in w0), r0 + tuple(i for i in rd if i not in r0))
            return out

        def block(b: _Block, tab: dict) -> dict:
            for item in b.items:
                if item.kind == "access":
                    access(item, tab)
                elif item.kind == "loop":
                    head = tab
                    for _ in range(1000):
                        out = block(item.blocks[0], {k: dict(v) for k, v in head.items()})
                        new = join(tab, out)
                        if new == head:
                            break
                        head = new
                    tab = head
                elif item.kind == "if":
                    outs = [block(x, {k: dict(v) for k, v in tab.items()}) for x in item.blocks]
                    merged = outs[0] if len(outs) == 2 else tab
                    for o in outs[1:] if len(outs) == 2 else outs:
                        merged = join(merged, o)
                    tab = merged
                elif item.kind == "region":
                    for x in item.blocks:
                        tab = block(x, tab)
            return tab

        block(self.root, {})
        return sorted(pairs, key=lambda pc: (pc[1].start, -pc[0].start))


def _overlap_index(ranges: set) -> dict:
    """range -> the ranges of the set it overlaps (itself included), by a sweep per space/root."""
    groups: dict = {}
    for r in ranges:
        groups.setdefault(r[1] if r[0] == "gm" else ("mem", r[0]), []).append(r)
    out: dict = {r: [] for r in ranges}
    wild = groups.get(None, [])  # GM ranges of an unknown pointer meet every GM range
    for root, rs in groups.items():
        local = isinstance(root, tuple)
        lo = (lambda r: r[1]) if local else (lambda r: -1 if r[2] is None else r[2])
        hi = (lambda r: r[2]) if local else (lambda r: 1 << 62 if r[3] is None else r[3])
        rs.sort(key=lo)
        active: list = []
        for r in rs:
            active = [a for a in active if hi(a) > lo(r)]
            for a in active:
                out[a].append(r)
                out[r].append(a)
            out[r].append(r)
            active.append(r)
        if not local and root is not None:
            for r in rs:
                out[r].extend(wild)
                for w in wild:
                    out[w].append(r)
    return out


# --------------------------------------------------------------------------------------
# The knowledge data-flow
# --------------------------------------------------------------------------------------


class _State:
    __slots__ = ("k", "snap")

    def __init__(self, k: list[int], snap: dict):
        self.k = k
        self.snap = snap

    def copy(self) -> _State:
        return _State(list(self.k), dict(self.snap))

    def meet(self, other: _State) -> _State:
        return _State([a & b for a, b in zip(self.k, other.k)],
                      {key: v & other.snap[key] for key, v in self.snap.items() if key in other.snap})

    def __eq__(self, other) -> bool:
        return self.k == other.k and self.snap == other.snap


class _Flow:
    def __init__(self, prog: _Program):
        self.prog = prog
        self.all_bits = (1 << len(prog.accesses)) - 1  # every access's bit
        self.pipe_bits = [0] * NP
        for a in prog.accesses:
            self.pipe_bits[a.pipe] |= a.bit
        self.at: dict[_Slot, list[tuple[str, tuple]]] = {}
        self.states: dict[_Item, list[int]] = {}  # access -> K before it (keyed by the item: a bit of
        # thousands of accesses is an integer as long, slow to hash)

    def add(self, u: _Unit) -> None:
        for slot, what, _ in u.places:
            self.at.setdefault(slot, []).append((what, (u.src, u.dst, ("unit", id(u)))))

    def remove(self, u: _Unit) -> None:
        for slot, what, _ in u.places:
            self.at[slot].remove((what, (u.src, u.dst, ("unit", id(u)))))

    def start(self) -> _State:
        return _State([self.all_bits] * NP, {})

    def _apply(self, st: _State, what: str, src: int, dst: int, key) -> None:
        if what == "set":
            v = st.k[src] | self.pipe_bits[src]
            st.snap[key] = st.snap[key] & v if key in st.snap else v
        elif what == "wait":
            st.k[dst] |= st.snap.pop(key, 0)
        elif what == "barrier":
            st.k[src] |= self.pipe_bits[src]
        elif what == "barrier_all":
            for q in range(NP):
                st.k[q] |= self.pipe_bits[q]

    def _slot(self, st: _State, block: _Block, index: int, where: str) -> None:
        for what, (src, dst, key) in self.at.get(_Slot(block.id, index, where), ()):
            self._apply(st, what, src, dst, key)

    def _block(self, block: _Block, st: _State) -> _State:
        for i, item in enumerate(block.items):
            st = self.item(block, i, st)
        return st

    def item(self, block: _Block, i: int, st: _State) -> _State:
        """The state after item i of the block (with the syncs in its before/after slots)."""
        item = block.items[i]
        self._slot(st, block, i, "before")
        if item.kind == "access":
            self.states[item] = list(st.k)
            b = ~item.bit
            for q in range(NP):
                if not (item.pipe == q and q in _IN_ORDER):
                    st.k[q] &= b
            for key in st.snap:
                st.snap[key] &= b
        elif item.kind == "sync":
            self._user(st, item.sync)
        elif item.kind == "loop":
            entry = st
            head = entry.copy()
            for _ in range(1000):
                out = self._block(item.blocks[0], head.copy())
                new_head = entry.meet(out)
                if new_head == head:
                    break
                head = new_head
            st = head
        elif item.kind == "if":
            outs = [self._block(b, st.copy()) for b in item.blocks]
            if len(outs) < 2:
                outs.append(st)
            merged = outs[0]
            for o in outs[1:]:
                merged = merged.meet(o)
            st = merged
        else:  # region: runs once
            for b in item.blocks:
                st = self._block(b, st)
        self._slot(st, block, i, "after")
        return st

    def _user(self, st: _State, sync: tuple) -> None:
        kind, src, dst, key = sync
        if kind == "barrier":
            if src == "PIPE_ALL":
                self._apply(st, "barrier_all", 0, 0, None)
            elif src in PIPE_INDEX:
                self._apply(st, "barrier", PIPE_INDEX[src], 0, None)
        elif kind in ("set", "wait") and src in PIPE_INDEX and dst in PIPE_INDEX:
            self._apply(st, kind, PIPE_INDEX[src], PIPE_INDEX[dst], key)


# --------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------


class _Inserter:
    def __init__(self, fn: func.FuncOp, target: Target):
        self.prog = _Program(fn, target)
        self.units: list[_Unit] = []

    @staticmethod
    def ordered(states: dict, p: _Item, c: _Item) -> bool:
        return bool(states[c][c.pipe] & p.bit)

    def unit_for(self, p: _Item, c: _Item) -> _Unit:
        forward, pk, ck, loop = self.prog.relation(p, c)
        block = pk.block
        same = p.pipe == c.pipe
        if forward:
            if same:
                return _Unit("barrier", p.pipe, p.pipe, [(_Slot(block.id, ck.index, "before"), "barrier", c.op)],
                             (2 * ck.start - 1, 2 * ck.start - 1), c.op)
            return _Unit("flag", p.pipe, c.pipe,
                         [(_Slot(block.id, pk.index, "after"), "set", p.op),
                          (_Slot(block.id, ck.index, "before"), "wait", c.op)],
                         (2 * pk.end + 1, 2 * ck.start - 1), c.op)
        assert loop is not None
        # carried: ck is before pk in the block, or they are the same item (another branch of
        # one scf.if, or the op itself on the next trip)
        if same:
            return _Unit("barrier", p.pipe, p.pipe, [(_Slot(block.id, ck.index, "before"), "barrier", c.op)],
                         (2 * ck.start - 1, 2 * ck.start - 1), c.op)
        outer = loop.block
        return _Unit("flag", p.pipe, c.pipe,
                     [(_Slot(outer.id, loop.index, "before"), "set", loop.op),
                      (_Slot(block.id, ck.index, "before"), "wait", c.op),
                      (_Slot(block.id, pk.index, "after"), "set", p.op),
                      (_Slot(outer.id, loop.index, "after"), "wait", loop.op)],
                     (2 * loop.start - 1, 2 * loop.end + 1), c.op)

    def check_user_events(self) -> None:
        """Every user wait has a matching set on every path (must-count of outstanding sets)."""
        def walk(block: _Block, st: dict) -> dict:
            for item in block.items:
                if item.kind == "sync":
                    kind, _, _, key = item.sync
                    if kind == "set":
                        st[key] = st.get(key, 0) + 1
                    elif kind == "wait":
                        if st.get(key, 0) <= 0:
                            _, src, dst, ev = key
                            raise op_error(item.op, f"waits for {src} -> {dst} {ev}, but no matching set "
                                                    "(pto.set_flag / pto.record_event) comes before it on every "
                                                    "path, so it would wait forever")
                        st[key] -= 1
                elif item.kind == "loop":
                    entry = dict(st)
                    head = dict(entry)
                    for _ in range(64):
                        out = walk(item.blocks[0], dict(head))
                        new = {k: min(v, out.get(k, 0)) for k, v in entry.items()}
                        if new == head:
                            break
                        head = new
                    st = head
                elif item.kind == "if":
                    outs = [walk(b, dict(st)) for b in item.blocks]
                    if len(outs) < 2:
                        outs.append(st)
                    keys = set().union(*outs)
                    st = {k: min(o.get(k, 0) for o in outs) for k in keys}
                elif item.kind == "region":
                    for b in item.blocks:
                        st = walk(b, st)
            return st

        walk(self.prog.root, {})

    def run(self) -> None:
        prog = self.prog
        self.check_user_events()
        pairs = prog.hazard_pairs()
        if not pairs:
            return
        flow = _Flow(prog)
        tops = prog.root.items
        self.top_of = {prog.root.id: None}
        for i, item in enumerate(tops):
            self._mark_top(item, i)
        first_bit = [0] * (len(tops) + 1)  # accesses (in bit order) before top-level item i
        for a in prog.accesses:
            first_bit[(a.ancestors[0] if a.ancestors else a).index + 1] += 1
        for i in range(len(tops)):
            first_bit[i + 1] += first_bit[i]
        # checkpoints[i]: the state before top-level item i; valid for i <= self.frontier
        self.checkpoints = [flow.start()] + [None] * len(tops)
        self.frontier = 0

        def advance(to: int) -> None:
            while self.frontier <= to:
                i = self.frontier
                self.checkpoints[i + 1] = flow.item(prog.root, i, self.checkpoints[i].copy())
                self.frontier = i + 1

        def top_index(c: _Item) -> int:
            return (c.ancestors[0] if c.ancestors else c).index

        def top(slot: _Slot) -> int:
            t = self.top_of[slot.block]
            return slot.index if t is None else t

        def add(u: _Unit, ci: int) -> None:
            flow.add(u)
            places = [(top(slot), slot, what) for slot, what, _ in u.places]
            early = [pl for pl in places if pl[0] < ci]
            if all(slot.block == prog.root.id and slot.where == "after" and what == "set" for _, slot, what in early) \
                    and len(early) <= 1 and ci < self.frontier:
                if early:  # a set after an earlier top-level item: its snapshot as the flow would carry it
                    a = early[0][0]
                    v = self.checkpoints[a + 1].k[u.src] | flow.pipe_bits[u.src]
                    v &= ~(((1 << first_bit[ci]) - 1) ^ ((1 << first_bit[a + 1]) - 1))
                    self.checkpoints[ci] = self.checkpoints[ci].copy()
                    self.checkpoints[ci].snap[("unit", id(u))] = v
                self.frontier = min(self.frontier, ci)
            else:
                self.frontier = min(self.frontier, min(pl[0] for pl in places))

        def prune(group: list, created: list) -> None:
            """Drop the syncs of one top-level item's consumers that later ones made redundant."""
            if len(created) < 2:
                return
            ci = max(top_index(c) for _, c in group)
            for unit in reversed(created):
                flow.remove(unit)
                self.frontier = min(self.frontier, min(top(slot) for slot, _, _ in unit.places))
                advance(ci)
                if all(self.ordered(flow.states, p, c) for p, c in group):
                    self.units.remove(unit)
                else:
                    add(unit, ci)

        seen: set = set()
        group: list = []
        created: list = []
        for p, c in pairs:
            ci = top_index(c)
            if group and top_index(group[-1][1]) != ci:
                prune(group, created)
                group, created = [], []
            group.append((p, c))
            advance(ci)
            if self.ordered(flow.states, p, c):
                continue
            unit = self.unit_for(p, c)
            sig = unit.signature()
            if sig in seen:  # pragma: no cover - a unit always orders its own pair
                raise op_error(c.op, "internal error: pto-insert-sync could not order this op after "
                                     f"'{p.op.name}' at line {location_of(p.op)[1]}")
            seen.add(sig)
            self.units.append(unit)
            created.append(unit)
            add(unit, ci)
        prune(group, created)
        self.allocate_events()
        self.emit()

    def _mark_top(self, item: _Item, i: int) -> None:
        for b in item.blocks:
            self.top_of[b.id] = i
            for x in b.items:
                self._mark_top(x, i)

    def allocate_events(self) -> None:
        reserved: dict[tuple[int, int], set[int]] = {}
        for item in self.prog.user_syncs:
            kind, src, dst, key = item.sync
            if src in PIPE_INDEX and dst in PIPE_INDEX:
                pair = (PIPE_INDEX[src], PIPE_INDEX[dst])
                if kind == "dyn":
                    reserved.setdefault(pair, set()).update(range(N_EVENTS))
                elif kind in ("set", "wait"):
                    ev = key[3]
                    if isinstance(ev, str) and ev.startswith("EVENT_ID") and ev[8:].isdigit():
                        reserved.setdefault(pair, set()).add(int(ev[8:]))
        by_pair: dict[tuple[int, int], list[_Unit]] = {}
        for u in self.units:
            if u.kind == "flag":
                by_pair.setdefault((u.src, u.dst), []).append(u)
        for pair, units in by_pair.items():
            banned = set(reserved.get(pair, set()))
            if S in pair:
                banned.add(0)
            active: list[_Unit] = []
            for u in sorted(units, key=lambda u: u.span):
                active = [a for a in active if a.span[1] >= u.span[0]]
                used = {a.event for a in active} | banned
                free = [e for e in range(N_EVENTS) if e not in used]
                if not free:
                    raise op_error(u.consumer, f"needs more than the {N_EVENTS - len(banned)} free event ids of "
                                               f"{PIPES[pair[0]]} -> {PIPES[pair[1]]} outstanding at once")
                u.event = free[0]
                active.append(u)

    def emit(self) -> None:
        prog = self.prog
        by_slot: dict[_Slot, list[tuple[str, _Unit, Operation]]] = {}
        for u in self.units:
            for slot, what, loc_op in u.places:
                by_slot.setdefault(slot, []).append((what, u, loc_op))
        for slot, entries in by_slot.items():
            anchor = prog.blocks[slot.block].items[slot.index].op
            block = anchor.parent_block()
            assert block is not None
            prev = anchor
            for what, u, loc_op in entries:
                new = self._op(what, u, loc_op.location)
                if slot.where == "before":
                    block.insert_op_before(new, anchor)
                else:
                    block.insert_op_after(new, prev)
                    prev = new

    @staticmethod
    def _op(what: str, u: _Unit, location) -> Operation:
        if what == "barrier":
            return a2a3.new_op(pto.BarrierOp, (), _sync_props(PIPES[u.src]), None, location)
        props = _sync_props(PIPES[u.src], PIPES[u.dst], f"EVENT_ID{u.event}")
        return a2a3.new_op(pto.SetFlagOp if what == "set" else pto.WaitFlagOp, (), props, None, location)


@functools.cache
def _args(words: tuple) -> ArrayAttr:
    """The ``args`` of a sync op naming ``words`` (pipes, then an event), as its builder shares them."""
    return pto._args_attr(tuple([pto.raw_attr("pipe", w) for w in words[:2]] +
                                [pto.raw_attr("event", w) for w in words[2:]]))


def _sync_props(*words: str) -> dict:
    """The properties of a sync op naming ``words`` (what its builder makes of them)."""
    return {"args": _args(words)}


@dataclass(frozen=True)
class InsertSyncPass(ModulePass):
    name = "pto-insert-sync"

    target: str = "a2a3"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(self.target)
        for fn in op.walk():
            if isinstance(fn, func.FuncOp) and fn.body.blocks:
                _Inserter(fn, target).run()
