"""A first cycle model of a2a3 programs, per pipe (DESIGN.md §6, "Cycle model").

Input: the trace of executed instructions the executor records (``ExecResult.trace``; loop
bodies appear once per trip).  Output: per-pipe busy cycles, the makespan, instruction
counts (:class:`CycleStats`: ``to_dict()`` for ``--stats json``, ``to_text()`` for the table)
and the schedule itself (``events``, ``chrome_trace()`` for Perfetto).

Model
=====

* The scalar unit issues instructions in program order, ``dispatch`` cycles each; it runs
  S instructions itself (loop trips cost ``loop_trip``) and queues the rest to their pipe.
* Each pipe starts its instructions in order.  An instruction issued at ``t`` starts at
  ``max(t, pipe free)``, keeps the pipe **busy** for ``issue + per_unit * units`` cycles
  (units: repeats for vector instructions, bytes for copies, see :class:`OpCost`) and its
  result is **complete** ``latency`` cycles after that.  The next instruction of the same
  pipe may start when the previous one stops being busy (pipelined), so a dependency chain
  only shows as a bubble where the program has a ``pipe_barrier``.
* ``pipe_barrier(P)`` waits until every earlier P instruction is complete; ``ALL`` waits for
  every pipe.  ``set_flag(P1, P2)`` signals when every earlier P1 instruction is complete
  (without stalling P1); ``wait_flag`` on P2 starts no earlier than that signal plus
  ``flag_latency``; a ``wait_flag`` on S stalls the issue of everything after it.
* Pipes overlap: the makespan is the last completion time; busy cycles per pipe are the sums
  of the busy times (the S pipe's include the ``dispatch`` cycles of every instruction).  Blocks run on different cores in parallel: each block is scheduled on
  its own and the makespan is the longest block.

Where the numbers come from
===========================

reference/vector_isa.md and pto_isa.md give the *units* the costs scale with, not cycle
counts: one repeat processes 256 B = 8 blocks of 32 B (vector_isa.md §1.1, pto_isa.md §5), so
one repeat per cycle is the natural throughput of the simple vector ops; copies move
``n_burst * len_burst`` bytes (§1.10); REPEAT_MAX = 255.  No source read gives a2a3 cycle
counts, so every number in :data:`CYCLE_TABLES` below is a **placeholder**, marked ``[P]``
with its reasoning; they exist so that relative comparisons (fewer repeats, fewer barriers,
overlapping MTE2 with V) move the total in the right direction.  Replace them with measured
values in this one table.
"""

from __future__ import annotations

import json
import math
import sys
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import filterfalse, islice, repeat
from operator import add, attrgetter, mul, sub

from xdsl.ir import OpResult

from pto_compiler.dialects.a2a3 import IN_ORDER_PIPES, OPCODES, PIPES, OpCost

PIPE_ORDER = PIPES


def _a2a3_table() -> dict:
    """The a2a3 costs of the a2a3 dialect's opcode table, plus a scalar loop trip."""
    t = {op: spec.cost for op, spec in OPCODES.items() if spec.cost is not None}
    t["loop_trip"] = OpCost(issue=2, unit="none")  # [P] compare, branch, increment
    return t


@dataclass(frozen=True)
class CycleTable:
    target: str
    ops: dict
    dispatch: float = 1.0
    """[P] cycles the scalar unit spends issuing one instruction."""
    flag_latency: float = 4.0
    """[P] cycles from a set_flag's signal to the waiting pipe seeing it."""
    clock_ghz: float = 1.8
    """[P] for converting cycles to time in reports."""


VF_PARAMS = {
    # name: (value, source).  "fitted": a grid search over the 25 variants of bench/study/ without
    # a scalar UB read minimising the worst |model / study - 1| of PUSHQ VF, then `sload` on
    # tail_axis_1 (the one variant with one); bench/study_fit.py prints the result.
    "launch": (8.0, "fitted"),
    "push_pb": (4.0, "study: PUSH_PB sum_cycles per push, 68/17, 68/17, 96/24, 32/8 per launch"),
    "pb_regs": (9, "fitted: scalar registers one PB push carries (see pb_pushes); all 10 PUSH_PB figures"),
    "dispatch_width": (3.0, "fitted"),
    "window": (32, "fitted: how far an instruction may overtake a stalled one"),
    "loop_entry": (4.0, "fitted: front-end bubble of each hardware loop instance entered"),
    "rveclp": (1.0, "study: RVECLP sum_cycles = loop instances entered (mid_axis 24/96/32/33/97)"),
    "rvecsu": (1.0, "study: RVECSU sum_cycles = events (tail 34/35, head 34/13/35, mid 48/104/56/49/97)"),
    "lat_load": (4.0, "fitted"),
    "lat_mask": (1.0, "fitted"),
    "lat_max": (1.6, "fitted: reduce_max ra baseline, 312 chained vmax in ~506 cycles"),
    "lat_add": (3.0, "fitted: reduce_sum ra baseline, 312 chained vadd in ~716 cycles"),
    "lat_mul": (3.0, "fitted (as add)"),
    "lat_reduce": (8.0, "fitted"),
    "occ_reduce_max": (1.5, "fitted: vcmax/vcmin hold the EX unit (reduce_max ar unroll)"),
    "occ_reduce_sum": (2.0, "fitted: vcadd holds the EX unit (reduce_sum ar unroll, binary)"),
    "lat_other": (2.0, "fitted"),
    "sload": (38.0, "fitted: tail_axis_1_naive_getvalue (aLocal.GetValue(j) before each launch), "
                    "PUSHQ VF 1247 against its VF bodies' ~600: a Main Scalar UB read waits for the VF "
                    "in flight, and the next launch's PB push waits for its value"),
}
"""The parameters of :func:`vf_timing`, each with where it comes from."""


def _ascend950_table() -> dict:
    t = _a2a3_table()
    # The VF launch: its V-pipe time is the PUSHQ VF time that :func:`vf_timing` computes from
    # the executed VF stream (per-unit issue, latencies, loop costs) with VF_PARAMS below.
    t["vf_call"] = OpCost(issue=0, unit="none")
    # GM <-> UB copies, fitted to the study's MTE2/MTE3 sum_cycles (seeds/001: elemwise MTE2 2343
    # for two 78,000-byte copies, MTE3 1099 for one; reduce MTE2 ~5,300 for 78 row bursts of
    # 1,000 bytes, MTE3 ~300 for 312 or 1,000 bytes): a fixed ~290 cycles per copy, 53 per extra
    # row burst, 88 B/cycle in and 96 B/cycle out.  [fitted]
    t["copy_gm_to_ubuf"] = OpCost(issue=290 - 53, per_unit=1 / 88, unit="byte", per_burst=53)
    t["copy_ubuf_to_gm"] = OpCost(issue=290 - 53, per_unit=1 / 96, unit="byte", per_burst=53)
    # A Main Scalar read of UB (pto.tgetval): issued in one cycle, its value ready `sload` cycles
    # later; it starts when no VF is in flight (_Scheduler.exec).
    t["ld_ub"] = OpCost(issue=1, unit="none", latency=VF_PARAMS["sload"][0])
    return t


CYCLE_TABLES = {
    "a2a3": CycleTable("a2a3", _a2a3_table()),
    # ascend950: the flags and scalar costs of a2a3 [P], the fitted copies and the VF launch.
    "ascend950": CycleTable("ascend950", _ascend950_table()),
}


# ---------------------------------------------------------------------------------------------
# ascend950 vector functions: the counters of the SIMD VF study (seeds/001)
# ---------------------------------------------------------------------------------------------


VF_EVENT_CYCLES = {
    # RVECLD/RVECEX/RVECST sum_cycles per instruction: the study's "key instruction" columns
    # (count/sum_cycles), seeds/001: RV_VLD 312/2808, RV_VADD 312/2184, RV_VMAX 312/1872,
    # RV_VMULS 305/2440, RV_VCADD 78/1716, RV_VCMAX 78/1248, RV_VST 305/4950, RV_VSTUI 78/635;
    # RV_PLT (update_mask) 6: head_axis RVECEX 2431 = 17 x 11 x (6 + 7).  [study]
    "vf.load_align": 9, "vf.load_unalign": 9, "vf.add": 7, "vf.sub": 7, "vf.adds": 7,
    "vf.max": 6, "vf.min": 6, "vf.maxs": 6, "vf.mins": 6, "vf.mul": 8, "vf.muls": 8,
    "vf.reduce_sum": 22, "vf.reduce_max": 16, "vf.reduce_min": 16, "vf.update_mask": 6,
    "vf.store_align": 16, "vf.store_unalign": 8, "vf.store_unalign_post": 8,
}

_VF_UNIT = {"vf.load_align": "LD", "vf.load_unalign": "LD", "vf.store_align": "ST",
            "vf.store_unalign": "ST", "vf.store_unalign_post": "ST", "vf.update_mask": "MSK",
            "vf.create_mask": "MSK"}
"""Issue units; the rest is EX.  Masks have their own unit (fitted: with update_mask on EX the
elemwise loop, 3 EX ops per trip, could not run at the 2 cycles per trip its 2 loads allow)."""
_VF_LAT = {"vf.load_align": "lat_load", "vf.load_unalign": "lat_load", "vf.update_mask": "lat_mask",
           "vf.create_mask": "lat_mask", "vf.max": "lat_max", "vf.min": "lat_max", "vf.maxs": "lat_max",
           "vf.mins": "lat_max", "vf.add": "lat_add", "vf.sub": "lat_add", "vf.adds": "lat_add",
           "vf.mul": "lat_mul", "vf.muls": "lat_mul", "vf.reduce_sum": "lat_reduce",
           "vf.reduce_max": "lat_reduce", "vf.reduce_min": "lat_reduce"}
_VF_OCC = {"vf.reduce_sum": "occ_reduce_sum", "vf.reduce_max": "occ_reduce_max", "vf.reduce_min": "occ_reduce_max"}

assert all(type(v) is int for v in VF_EVENT_CYCLES.values())  # (summed in any order: _VfTimer._compile)

VF_COUNTERS = ("vf_count", "pushq_vf", "push_pb", "rvecsu", "rveclp", "rvecld", "rvecex", "rvecst")
"""The study's counter names (VF count, PUSHQ VF, PUSH_PB, RVECSU, RVECLP, RVECLD/EX/ST sum_cycles)."""


def vf_timing(log: list, params: dict | None = None) -> dict:
    """The study's counters of one VF launch from its executed stream (``VfCallResult.log``).

    The front end dispatches ``dispatch_width`` instructions per cycle in program order; an
    instruction issues on its unit (LD, ST, MSK, EX: one per cycle; a vcadd/vcmax holds EX for
    ``occ_reduce_*`` cycles) in the first free slot after its register operands are ready (issue +
    latency) and no earlier than the instruction ``window`` places before it issued.  So a chain
    ``acc = max(acc, x)`` waits for each result, and independent accumulators (or the next trip of
    an elementwise loop) fill the gaps.  Each hardware loop instance entered costs ``loop_entry``
    front-end cycles; address arithmetic is folded into the loop's address registers (free).
    PUSHQ VF = ``launch`` + the time until the last instruction completes.  The trips of a
    ``LOG_LOOP`` run one by one until STEADY_TRIPS of them moved every clock alike; the rest
    are extrapolated."""
    P = {**_PARAMS, **params} if params else _PARAMS
    decoded = _DECODES[0]
    t = _VfTimer(P)
    t.stream(log)
    c = t.c
    c["vf_count"] = 1
    c["pushq_vf"] = P["launch"] + max(t.end, t.front)
    fn = _vf_func(log)
    got = getattr(fn, "_vf_offsets", None)
    if got is not None and got[0] > decoded:  # (fn decoded by this call: its offsets are the IR's now)
        pushes = _pb_pushes(fn, got[1], got[2], P["pb_regs"])
    else:
        pushes = pb_pushes(fn, P["pb_regs"])
    c["push_pb"] = P["push_pb"] * pushes
    return c


_PARAMS = {k: v for k, (v, _src) in VF_PARAMS.items()}
""":data:`VF_PARAMS`' values (read only)."""


def _vf_func(log: list):
    for _kind, x in log[:1]:
        op = x[0] if isinstance(x, tuple) else x
        while op is not None and op.name != "vf.func":
            op = _parent_op(op)
        return op
    return None


def _parent_op(op):
    """``op.parent_op()``: xDSL's links of an op to its block, of a block to its region and of a
    region to its op, read without its three calls."""
    block = op.parent
    region = block.parent if block is not None else None
    return region.parent if region is not None else None


def pb_pushes(fn, pb_regs: float) -> int:
    """PB pushes of one launch of ``fn``: its parameters plus one register per distinct loop
    stride of its addresses (the increments the VF's address registers step by), ``pb_regs`` a
    push.  Fitted to seeds/001, whose only two-push variants (8 cycles) are the ones addressing
    with three strides: tail_axis_2 (row, chunk, and the BRC load's one element), mid_axis_4/5
    (m row block, row, chunk); two strides (head_axis_2/3, mid_axis_2/3) or one (the naive
    variants) take one push with 5 to 7 parameters.  An index parameter only ever added to
    addresses is the study's pointer arithmetic (``xUb + offset``): it rides in its pointer."""
    if fn is None:
        return 1
    offsets: list = []
    forms: dict = {}
    for op in _nested_ops(fn, []):
        name = op.name
        off = getattr(op, "dyn_offset", None) if name.startswith("vf.") else None
        if off is not None:
            offsets.append(off)
        elif name in _LINEAR:
            _linear(op, name, forms)
    return _pb_pushes(fn, offsets, forms, pb_regs)


def _pb_pushes(fn, offsets: list, forms: dict, pb_regs: float) -> int:
    """:func:`pb_pushes` of ``fn`` given the offset operands of its memory ops and the linear
    forms of its index values (:func:`_linear`)."""
    strides: set = set()
    for off in offsets:
        for c in forms.get(id(off), _NO_FORM).values():
            if c[0]:
                strides.add(c)
    regs = len(strides)
    for a in fn.args:
        if not _offset_only(a):
            regs += 1
    return max(1, math.ceil(regs / pb_regs))


def _nested_ops(op, out: list) -> list:
    """The ops inside ``op``'s regions, at every depth, in program order (xDSL's walk, without its
    generators: a block's ops followed by their links)."""
    for region in op.regions:
        for block in region.blocks:
            o = block.first_op
            while o is not None:
                out.append(o)
                if o.regions:
                    _nested_ops(o, out)
                o = o.next_op
    return out


def _offset_only(v) -> bool:
    """``v`` only ever ends up added into the offset operand of a vf memory op (xDSL's use list
    walked as ``v.uses`` walks it)."""
    u = v.first_use
    if u is None:
        return False
    while u is not None:
        op = u._operation
        name = op.name
        if name.startswith("vf."):
            if u._index != 1:
                return False
        elif name != "arith.addi" or not _offset_only(op.results[0]):
            return False
        u = u._next_use
    return True


def _linear(op, name: str, forms: dict) -> None:
    """Record in ``forms`` (id of a value -> {id of a loop induction variable: coefficient}) the
    linear form of what ``op`` (named ``name``, one of :data:`_LINEAR`) defines, its operands'
    forms recorded before (ops in program order; a value with none has the empty form): an
    ``scf.for`` defines its induction variable, ``arith.addi``/``arith.muli`` an index expression
    (+, * of constants, loop variables and parameters).  A coefficient is (integer factor, ids of
    the symbolic factors)."""
    if name == "scf.for":
        iv = op.regions[0].first_block.args[0]
        forms[id(iv)] = {id(iv): (1, ())}
        return
    lhs, rhs = op._operands
    a, b = forms.get(id(lhs), _NO_FORM), forms.get(id(rhs), _NO_FORM)
    if name == "arith.addi":
        out = dict(a)
        for k, c in b.items():
            out[k] = (out[k][0] + c[0], c[1]) if k in out and out[k][1] == c[1] else c
    else:
        lin, other = (a, rhs) if a else (b, lhs)
        if not lin:
            return
        f, syms = _factor(other)
        out = {k: (c[0] * f, tuple(sorted(c[1] + syms))) for k, c in lin.items()}
    if out:
        forms[id(op.results[0])] = out


_LINEAR = frozenset({"scf.for", "arith.addi", "arith.muli"})
"""The ops :func:`_linear` reads."""
_NO_FORM: dict = {}


def _factor(v) -> tuple:
    """A loop-invariant index value as a coefficient factor: its constant, else itself."""
    name = v.op.name if type(v) is OpResult else None
    if name == "arith.constant":
        return v.op.properties["value"].value.data, ()
    if name == "arith.muli":
        lhs, rhs = v.op._operands
        a, b = _factor(lhs), _factor(rhs)
        return a[0] * b[0], tuple(sorted(a[1] + b[1]))
    return 1, (id(v),)


_YIELD, _VF, _FREE, _ENTER, _TRIP, _EXIT, _LOOP, _COUNT, _FIRST, _NEXT, _LAST, _ZERO, _FOR = range(13)
_VF_FREE = frozenset({"vf.bitcast"})
"""VF ops that issue no instruction: ``vf.bitcast`` reads the same register as another element
type (the A5 headers' RegTensor reinterpret_cast, dialects/vf.py), so its result is ready with
its operand and it occupies no unit and no dispatch slot."""

# What the VF timer needs of one op, read once into its ``_vft`` (values by ``id``: xDSL hashes in
# Python), a tuple whose first three items are its kind, the ids of the operands whose ready times
# can matter and of its results:
#   (_VF, vreads, outs, unit, occupancy parameter, latency parameter, counter, event cycles, reads)
#   (_FREE, reads, outs, hidden)     arith, vf.bitcast, other ops: ready with their operands
#   (_YIELD, ins, (), id of its loop)
#   (_FOR, reads, outs, id of the op, carried ins, ids of the body's arguments, RVECSU events)
#   _AT_ZERO                         results ready at 0 in every trip: never run
# ``reads``: the operands not ready at 0 (one ready at 0 never delays an op: the front and every
# clock are >= 0); ``vreads``: a VF op's reads but those ready no later than the front whenever it
# issues (a loop's induction variable is ready at its trip's start, and arithmetic on those and on
# values ready at 0 with its operands); ``hidden``: such arithmetic in the body of an innermost
# loop whose results no op reads but VF ops and other hidden arithmetic: where no snapshot of the
# clocks reads its results either (a loop's trips written out, :meth:`_VfTimer._compile`), it is
# not run.
_AT_ZERO = (_ZERO, (), ())


def _decode_vf(fn) -> None:
    """Decode every op of ``fn`` (a ``vf.func``, else the op the stream starts from) into its
    ``_vft`` in one pass in program order: a value is ready at 0 whenever an op reads it when it
    is a parameter of the VF (never timed) or a result of an op ready at 0, and SSA defines it
    before any op that reads it.  The offsets of its memory ops go to ``fn._vf_offsets`` for
    :func:`pb_pushes` with the linear forms of its index values (:func:`_linear`) and the
    decode's serial number (see :func:`vf_timing`)."""
    offsets: list = []
    forms: dict = {}
    early: set = set()
    arith: list = []
    seen: set = set()
    if fn.name == "vf.func":
        zero = set(map(id, fn.args))
        for region in fn.regions:  # (xDSL's first_block, first_op, next_block read without their calls)
            block = region._first_block
            while block is not None:
                _decode_ops(block._first_op, fn, zero, early, offsets, forms, arith, seen)
                block = block._next_block
    else:  # (a stream outside a vf.func: its outermost op and what it holds)
        _decode_ops(fn, fn.parent_op(), set(), early, offsets, forms, arith, seen, alone=True)
    for a in reversed(arith):  # (readers before the ops they read)
        op, reads, outs, inner = a
        hidden = inner and seen.isdisjoint(outs)
        if not hidden:
            seen.update(reads)
        op._vft = (_FREE, reads, outs, hidden)
    _DECODES[0] += 1
    fn._vf_offsets = (_DECODES[0], offsets, forms)


_DECODES = [0]
"""How many VFs :func:`_decode_vf` decoded so far (a serial number per decoding)."""


def _decode_ops(op, parent, zero: set, early: set, offsets: list, forms: dict, arith: list, seen: set,
                alone: bool = False) -> bool:
    """Decode the ops of a block of ``parent`` from ``op`` on (``alone``: ``op`` only), nested ones
    after the op holding them (program order); True when one of them is an ``scf.for``.  ``early``:
    the values ready no later than the front whenever an op reads them (``vreads``); ``arith``:
    [op, reads, outs, in an innermost loop] of the arithmetic on them, in program order (its
    ``_vft`` made once ``hidden`` is known, :func:`_decode_vf`); ``seen``: the values read by an op
    that is neither a VF op nor such arithmetic."""
    loops = False
    while op is not None:
        group, vf_timing_, linear = _CLASSES.get(type(op)) or _classify(op)
        ins = tuple(map(id, op._operands))  # (a tuple: xDSL's operands view reads it one item at a time)
        reads = tuple(filterfalse(zero.__contains__, ins)) if ins else ()
        if group == _G_ARITH:
            if not reads:
                op._vft = _AT_ZERO
                zero.update(map(id, op.results))
            else:
                outs = tuple(map(id, op.results))
                if early.issuperset(reads):
                    early.update(outs)
                    arith.append([op, reads, outs, False])
                else:
                    seen.update(reads)
                    op._vft = (_FREE, reads, outs, False)
                if linear:  # (an op on values ready at 0 has the empty form: skipped above)
                    _linear(op, linear, forms)
        elif vf_timing_ is not None:  # a VF op that issues an instruction
            op._vft = (_VF, tuple(filterfalse(early.__contains__, reads)), tuple(map(id, op.results)),
                       *vf_timing_, reads)
            if group == _G_MEM:
                off = op.dyn_offset
                if off is not None:
                    offsets.append(off)
        elif group == _G_FOR:
            seen.update(reads)
            loops = True
            body = op.regions[0]._first_block
            args = tuple(map(id, body._args))
            iv = args[0]
            early.add(iv)
            forms[iv] = {iv: (1, ())}  # (:func:`_linear` of an scf.for)
            n = len(arith)
            innermost = not _decode_ops(body._first_op, op, zero, early, offsets, forms, arith, seen)
            if innermost:
                for a in islice(arith, n, None):
                    a[3] = True
            top = parent is not None and parent.name == "vf.func"
            scalars = sum(1 for v in islice(op._operands, 3, None) if not v._type.name.startswith("vf."))
            op._vft = (_FOR, reads, tuple(map(id, op.results)), id(op), ins[3:], args, (innermost or top) + scalars)
            if alone:
                return loops
        else:
            seen.update(reads)
            if group == _G_YIELD:
                op._vft = (_YIELD, ins, (), id(parent))
            else:
                op._vft = (_FREE, reads, tuple(map(id, op.results)), False)
                if op.regions:  # (another op holding ops: decoded after it)
                    for region in op.regions:
                        block = region._first_block
                        while block is not None:
                            _decode_ops(block._first_op, op, zero, early, offsets, forms, arith, seen)
                            block = block._next_block
        if alone:
            break
        op = op._next_op  # (xDSL's next_op, without its property call)
    return loops


_G_ARITH, _G_VF, _G_MEM, _G_FOR, _G_YIELD, _G_OTHER = range(6)
"""What :func:`_decode_ops` does with an op of a class: arith (ready at 0 when its operands are),
a vf op (they hold no ops), a vf memory op (its ``dyn_offset``: :func:`pb_pushes`), an
``scf.for``, an ``scf.yield``, another op (it may hold ops)."""
_CLASSES: dict = {}
"""Op class -> (its group, the timing of a VF op issuing an instruction (unit, occupancy parameter,
latency parameter, counter, event cycles) else None, its name if :func:`_linear` reads it):
:func:`_classify` (xDSL's op names are class constants)."""
_COUNTER = {"LD": "rvecld", "ST": "rvecst", "MSK": "rvecex", "EX": "rvecex"}
"""The study's counter of each issue unit's events (masks count as EX)."""


def _classify(op) -> tuple:
    """:data:`_CLASSES` of ``op``'s class, from the tables above."""
    t, name = type(op), op.name
    timing = linear = None
    if name.startswith("vf."):
        unit = _VF_UNIT.get(name, "EX")
        group = _G_MEM if unit == "LD" or unit == "ST" else _G_VF  # (the ops with a dyn_offset)
        if name not in _VF_FREE:
            timing = (unit, _VF_OCC.get(name), _VF_LAT.get(name, "lat_other"), _COUNTER[unit],
                      VF_EVENT_CYCLES.get(name, 1))
    elif name.startswith("arith."):
        group = _G_ARITH
        if name in _LINEAR:
            linear = name
    else:
        group = _G_FOR if name == "scf.for" else _G_YIELD if name == "scf.yield" else _G_OTHER
    got = _CLASSES[t] = (group, timing, linear)
    return got


def _entered_next(stream: list, i: int, op, loop: int, enter: int) -> bool:
    """Is ``stream[i]`` (the op ``op``) followed by its loop (``loop``: LOG_LOOP, ``enter``: LOG_ENTER)?"""
    if i + 1 >= len(stream):
        return False
    kind, x = stream[i + 1]
    return (kind == loop and x[0] is op) or (kind == enter and x is op)


def _entered(d: tuple, P: dict) -> tuple:
    """A loop (its ``_vft``) entered: the counters it adds, its front-end bubble, the values its
    trips carry."""
    return _ENTER, d[3], d[4], P["rveclp"], P["rvecsu"] * d[6], P["loop_entry"]


def _tripped(d: tuple) -> tuple:
    """A trip started: its induction variable and the values carried into it."""
    return _TRIP, d[3], d[5][0], d[5][1:]


def _exited(d: tuple) -> tuple:
    """A loop left: its results take the values its last trip carried out."""
    return _EXIT, d[3], d[2]


def _written_out(d: tuple, P: dict, steps: list, trips: int) -> list | None:
    """The entries of a loop (``d``) written out, ``trips`` times ``steps`` (a trip but its start),
    with what its entering, its trips' starts, its yields and its exit hand over fused: the loop
    entered and its first trip started (:data:`_FIRST`), its yield's values carried into the next
    trip (:data:`_NEXT`) or out of the loop (:data:`_LAST`), without the loop's carried values in
    the timer's ``pend`` (no snapshot is taken inside a trip when no loop in it is extrapolated).
    None (not fused) when it runs no trip, or when a trip carrying values ends elsewhere than at
    its own yield."""
    if not trips:
        return None
    _, _, outs, key, ins, args, su = d
    if steps and steps[-1][0] == _YIELD and steps[-1][1] == key:
        yins, steps = steps[-1][2], steps[:-1]
    elif ins or len(args) > 1 or outs:
        return None
    else:  # (a loop carrying no values: no yield entry, nothing out)
        yins = None
    iv, args = args[0], args[1:]
    out = [(_FIRST, P["rveclp"], P["rvecsu"] * su, P["loop_entry"], ins, iv, args), *steps]
    nxt = (_NEXT, yins or (), iv, args)
    for _ in range(trips - 1):
        out.append(nxt)
        out += steps
    if yins is not None:
        out.append((_LAST, yins, outs))
    return out


def _decoded(op) -> tuple:
    d = getattr(op, "_vft", None)
    if d is None:  # the first op of its VF the timer meets: the whole VF is decoded
        _decode_vf(_enclosing_vf(op))
        d = op._vft
    return d


def _enclosing_vf(op):
    """The ``vf.func`` around ``op`` (else its outermost parent op)."""
    while op.name != "vf.func":
        parent = _parent_op(op)
        if parent is None:
            break
        op = parent
    return op


class _VfTimer:
    def __init__(self, P: dict):
        self.P = P
        self.step = 1.0 / P["dispatch_width"]
        self.window = int(P["window"])
        self.busy: dict = {u: [] for u in ("LD", "ST", "MSK", "EX")}
        """Per issue unit, its busy intervals in one sorted list ``[start, end, start, end, ...]``
        (one list to search, insert into and drop from, not two; kept for the timer's life: a
        compiled instruction holds its unit's, :meth:`_compile`)."""
        self.units = list(self.busy.values())
        self.issued: list = [0.0] * self.window
        """The issue times, after ``window`` zeros: the instruction ``window`` places back is always
        there (a zero bounds nothing: every instruction issues after the front, > 0)."""
        self.ready: dict = {}
        self.pend: dict = {}
        self.front = self.end = 0.0
        self.c = dict.fromkeys(VF_COUNTERS, 0.0)
        self.loops: dict = {}
        """id of a loop's per-trip stream -> the values whose ready times :meth:`_clocks` reads,
        and the stream compiled with a trip's start in front."""

    def stream(self, log) -> None:
        self._run(self._compile(log))

    def loop(self, op, per_trip: list, trips: int) -> None:
        """A hardware loop whose every trip ran ``per_trip`` (more trips than ever need
        scheduling: the rest may be extrapolated).  After each trip, the snapshot of every clock
        (:meth:`_clocks`) and what the trip advanced each by; once the last STEADY_TRIPS trips,
        from snapshots of one layout, advanced every clock alike (:func:`_close_flat`), the rest
        of the trips are extrapolated from the last snapshot by the last trip's advance."""
        d = _decoded(op)
        self._run((_entered(d, self.P),))
        got = self.loops.get(id(per_trip))
        if got is None:
            body = [_tripped(d), *self._compile(per_trip)]
            got = self.loops[id(per_trip)] = (self._values(op, per_trip), body, any(e[0] == _VF for e in body))
        values, body, grows = got
        run, clocks, units, w = self._run, self._clocks, self.units, self.window
        layout = last = None
        if not grows or len(self.issued) >= 2 * w:
            layout, last = clocks(values)
        deltas: list = []
        """Per trip since the layout last changed, what it advanced every clock by (a snapshot
        while fewer than ``window`` instructions issued is not taken when the trip issues some:
        the next one holds more of them, another layout)."""
        for k in range(trips):
            if len(deltas) >= STEADY_TRIPS:
                first = deltas[-STEADY_TRIPS]
                for x in deltas[1 - STEADY_TRIPS:]:
                    if not _close_flat(first, x):
                        break
                else:
                    self._extrapolate(values, layout, last, deltas[-1], trips - k)
                    break
            run(body)
            if len(self.issued) < 2 * w:
                if grows:
                    layout = None
                    continue
            elif max(map(len, units)) > 2 * w:
                self._forget()
            now, flat = clocks(values)
            if now != layout:
                deltas = []
                layout = now
            else:
                deltas.append(list(map(sub, flat, last)))
            last = flat
        self._run((_exited(d),))

    def _forget(self) -> None:
        """Once a unit holds more than ``window`` busy intervals (a unit that is the bottleneck
        runs ever further ahead of the front, so they pile up and no two trips look alike;
        :meth:`loop` calls it then), drop those no later instruction can meet: each issues no
        earlier than the front, nor than the instruction ``window`` places before it, so no earlier
        than the oldest of the last ``window`` issues, and an interval ending by then is passed over."""
        issued, w = self.issued, self.window
        horizon = max(self.front, min(issued[-w:]))
        for b in self.units:
            del b[:bisect_right(b, horizon) & -2]

    @staticmethod
    def _values(op, per_trip: list) -> list:
        """The values whose ready times :meth:`_clocks` reads for a loop running ``per_trip``."""
        from pto_compiler.runtime.vf_executor import LOG_LOOP, LOG_OP

        values = list(_decoded(op)[5])
        loops = []
        for kind, x in per_trip:
            if kind == LOG_OP:
                values += (getattr(x, "_vft", None) or _decoded(x))[2]
            elif kind == LOG_LOOP:
                loops += (getattr(x[0], "_vft", None) or _decoded(x[0]))[2]
        return values + loops

    def _compile(self, stream: list, inner: bool = False, counts: dict | None = None) -> list:
        """A stream as :meth:`_run` runs it: per op what its timing reads (operand and result
        ids, unit, occupancy, latency, counter), looked up once (a loop's trips run it many
        times); a loop of at most STEADY_TRIPS + 1 trips (never extrapolated) written out.  The
        event counters of the VF ops add up in one entry before each loop that may be extrapolated
        and at the end (whole numbers: their sum is the same in any order, and every snapshot of
        the counters, :meth:`_clocks`, is taken there).  An ``scf.for`` entered next runs no entry of
        its own (its results are the loop's exit values, :data:`_EXIT`), nor a yield of no values.
        ``inner``: ``stream`` is the trip of a loop written out (no snapshot reads its values:
        ``hidden`` arithmetic is left out, :func:`_decode_ops`); ``counts``: the counters add up there
        (the caller's, else an entry at the end)."""
        from pto_compiler.runtime.vf_executor import LOG_ENTER, LOG_LOOP, LOG_OP, LOG_TRIP

        P, body = self.P, []
        own = counts is None
        if own:
            counts = {}
        for i, (kind, x) in enumerate(stream):
            if kind == LOG_OP:
                d = getattr(x, "_vft", None) or _decoded(x)
                kind = d[0]
                if kind == _VF:
                    _, vreads, outs, unit, occ, lat, counter, cycles, _reads = d
                    body.append((_VF, vreads, outs, self.busy[unit], P[occ] if occ else 1.0, P[lat]))
                    counts[counter] = counts.get(counter, 0) + cycles
                elif kind == _FREE:
                    if not (inner and d[3]):
                        body.append((_FREE, d[1], d[2]))
                elif kind == _YIELD:
                    if d[1]:  # (a loop carrying no values: nothing to hand on)
                        body.append((_YIELD, d[3], d[1]))
                elif kind == _FOR and not _entered_next(stream, i, x, LOG_LOOP, LOG_ENTER):
                    body.append((_FREE, d[1], d[2]))
            elif kind == LOG_LOOP:
                op, per_trip, trips = x
                if trips > STEADY_TRIPS + 1:
                    if counts:
                        body.append((_COUNT, tuple(counts.items())))
                        counts.clear()
                    body.append((_LOOP, op, per_trip, trips))
                else:
                    d = _decoded(op)
                    sub: dict = {}
                    trip = [_tripped(d), *self._compile(per_trip, True, sub)]
                    if any(e[0] == _LOOP for e in trip):  # (its snapshots count what ran before)
                        if counts:
                            body.append((_COUNT, tuple(counts.items())))
                            counts.clear()
                        if sub:
                            trip.append((_COUNT, tuple(sub.items())))
                    else:
                        for k, n in sub.items():
                            counts[k] = counts.get(k, 0) + n * trips
                        fused = _written_out(d, P, trip[1:], trips)
                        if fused is not None:
                            body += fused
                            continue
                    body += [_entered(d, P), *trip * trips, _exited(d)]
            else:
                d = _decoded(x)
                body.append(_entered(d, P) if kind == LOG_ENTER else _tripped(d) if kind == LOG_TRIP
                            else _exited(d))
        if own and counts:
            body.append((_COUNT, tuple(counts.items())))
        return body

    def _run(self, body) -> None:
        """Time a compiled stream (:meth:`_compile`).  A VF op issues in the first free slot of its
        unit (:func:`vf_timing`); arith (address and count arithmetic) and reinterpretations are
        ready with their operands; a yield hands its values to the loop's next trip; a loop
        entered costs ``loop_entry`` front-end cycles and a trip starts at the front.  The clocks
        live in local variables between extrapolated loops (this is the hot loop of the model)."""
        ready, c, pend, window, step = self.ready, self.c, self.pend, self.window, self.step
        get, zeros = ready.get, repeat(0.0)  # (map(get, values, zeros): what get(v, 0.0) gives each)
        front, end, issued = self.front, self.end, self.issued
        w = -window
        for e in body:
            kind = e[0]
            if kind == _VF:
                _, ins, outs, b, occ, lat = e
                front += step
                t = front
                for v in ins:
                    r = get(v, 0.0)
                    if r > t:
                        t = r
                r = issued[w]
                if r > t:
                    t = r
                if b and b[1] <= front:  # the intervals over by the front dropped
                    del b[:bisect_right(b, front) & -2]
                if b and b[-1] > t:  # the first free slot of the unit (else: from t on)
                    i = bisect_right(b, t) & -2
                    n = len(b)
                    while i < n and b[i] < t + occ:
                        if b[i + 1] > t:
                            t = b[i + 1]
                        i += 2
                    stop = t + occ
                    b[i:i] = t, stop
                else:
                    stop = t + occ
                    b += t, stop
                issued.append(t)
                done = t + lat
                for r in outs:
                    ready[r] = done
                if done > end:
                    end = done
                if stop > end:
                    end = stop
            elif kind == _FREE:
                t = 0.0
                for v in e[1]:
                    r = get(v, 0.0)
                    if r > t:
                        t = r
                for r in e[2]:
                    ready[r] = t
            elif kind == _NEXT:  # (a loop written out: its yield's values read before any is written)
                ts = list(map(get, e[1], zeros))
                ready[e[2]] = front
                for a, t in zip(e[3], ts):
                    ready[a] = t
            elif kind == _TRIP:
                ready[e[2]] = front
                for a, t in zip(e[3], pend[e[1]]):
                    ready[a] = t
            elif kind == _COUNT:
                for k, n in e[1]:
                    c[k] += n
            elif kind == _FIRST:
                _, lp, su, entry, ins, iv, args = e
                c["rveclp"] += lp
                c["rvecsu"] += su
                front += entry
                ts = list(map(get, ins, zeros))
                ready[iv] = front
                for a, t in zip(args, ts):
                    ready[a] = t
            elif kind == _LAST:
                for r, t in zip(e[2], list(map(get, e[1], zeros))):
                    ready[r] = t
            elif kind == _YIELD:
                if e[1] in pend:
                    pend[e[1]] = list(map(get, e[2], zeros))
            elif kind == _ENTER:
                _, key, ins, lp, su, entry = e
                c["rveclp"] += lp
                c["rvecsu"] += su
                front += entry
                pend[key] = list(map(get, ins, zeros))
            elif kind == _EXIT:
                for r, t in zip(e[2], pend.pop(e[1])):
                    ready[r] = t
            else:  # a loop whose trips may be extrapolated
                self.front, self.end = front, end
                self.loop(*e[1:])
                front, end, issued = self.front, self.end, self.issued
        self.front, self.end = front, end

    def _clocks(self, values) -> tuple:
        """The timer's clocks and counters as (their layout, one flat list): the front, the end,
        the ready times of ``values``, the loops' carried values, the last ``window`` issues, each
        unit's busy intervals, the counters (the same keys always)."""
        w = self.window
        flat = [self.front, self.end, *map(self.ready.get, values, repeat(0.0))]
        for ts in self.pend.values():
            flat += ts
        issued = self.issued[max(w, len(self.issued) - w):]
        flat += issued
        lens = [len(self.pend), len(flat), len(issued)]
        for b in self.units:
            flat += b
            lens.append(len(b))
        flat += self.c.values()
        return tuple(lens), flat

    def _extrapolate(self, values, layout: tuple, last: list, delta: list, n: int) -> None:
        """Every clock and counter ``n`` more trips on from the snapshot ``last`` (of ``layout``),
        each moving by its ``delta`` per trip (a value not ready yet stays at 0: ``ready.get``'s
        default)."""
        x = list(map(add, last, map(mul, repeat(float(n)), delta)))  # (float * float: no int operand to convert per item)
        self.front, self.end = x[0], x[1]
        k = 2 + len(values)
        self.ready.update(zip(values, x[2:k]))
        for key, ts in self.pend.items():
            self.pend[key] = x[k:k + len(ts)]
            k += len(ts)
        h = layout[2]
        self.issued = [0.0] * self.window + x[k:k + h]
        k += h
        for b, h in zip(self.units, layout[3:]):
            b[:] = x[k:k + h]
            k += h
        self.c.update(zip(VF_COUNTERS, x[k:]))


def vf_static_cycles(fn, known: dict | None = None) -> float | None:
    """PUSHQ VF of one launch of ``vf.func`` ``fn`` without running it: the executed stream built
    from the loops' constant bounds, a bound that is parameter k taking ``known[k]`` (what every
    launch passes; None when a bound is neither).  The VF optimisation passes ask this to choose
    between forms."""
    from pto_compiler.runtime.vf_executor import LOG_LOOP, LOG_OP

    params = {a: k for k, a in enumerate(fn.args)}

    def const(v):
        op = v.owner
        if getattr(op, "name", None) == "arith.constant":
            return op.value.value.data
        return (known or {}).get(params.get(v))

    def walk(block) -> list | None:
        log: list = []
        for op in block.ops:
            log.append((LOG_OP, op))
            if op.name == "scf.for":
                b = [const(v) for v in (op.lb, op.ub, op.step)]
                inner = None if None in b else walk(op.body.blocks[0])
                if inner is None:
                    return None
                log.append((LOG_LOOP, (op, inner, len(range(*b)))))
        return log

    log = walk(fn.body.blocks[0])
    return None if log is None else vf_timing(log)["pushq_vf"]


@dataclass
class PipeStats:
    busy: float = 0.0
    instructions: int = 0
    last_complete: float = 0.0


@dataclass
class CycleStats:
    target: str
    total_cycles: float
    pipes: dict
    counts: dict
    """Executed instructions per opcode."""
    blocks: int = 1
    per_block_cycles: list = field(default_factory=list)
    events: list = field(default_factory=list)
    """(block, pipe, name, start, busy_end, complete, origin) per instruction."""
    clock_ghz: float = 1.8
    vf: dict = field(default_factory=dict)
    """ascend950: the study's counters summed over the VF launches (:data:`VF_COUNTERS`)."""
    flows: list = field(default_factory=list)
    """(set_flag event index, wait_flag event index) per flag that was waited on, and (push, pop)
    per pipe hand-off across cores."""
    repeats: list = field(default_factory=list)
    """(first event, end event, cycles per pipe, times) per extrapolated run of trips: events
    ``[first, end)`` (one trip) happen ``times`` more times, each its pipe's cycles later."""
    pipe_waits: dict = field(default_factory=dict)
    """A mixed kernel: per core, the cycles its pipe ops waited for the other cores (``push``: a
    full FIFO until a free made room; ``pop``: an empty slot until the push that fills it)."""

    def utilization(self, s: PipeStats) -> float:
        """Busy share of the blocks' time: each block's pipe runs within that block's makespan."""
        span = sum(self.per_block_cycles) or self.total_cycles
        return s.busy / span if span else 0.0

    def to_dict(self) -> dict:
        cycles = {"total": round(self.total_cycles, 2),
                  "pipes": {p: round(s.busy, 2) for p, s in self.pipes.items()}}
        cycles.update({k: round(v, 2) for k, v in self.vf.items()})
        return {
            "target": self.target,
            "total_cycles": round(self.total_cycles, 2),
            "cycles": cycles,
            "clock_ghz": self.clock_ghz,
            "blocks": self.blocks,
            "per_block_cycles": [round(c, 2) for c in self.per_block_cycles],
            "pipes": {p: {"busy_cycles": round(s.busy, 2), "instructions": s.instructions,
                          "utilization": round(self.utilization(s), 4)}
                      for p, s in self.pipes.items()},
            "instruction_counts": {k: v for k, v in sorted(self.counts.items()) if k != "loop_trip"},
            "instructions": sum(v for k, v in self.counts.items() if k != "loop_trip"),
            "loop_trips": self.counts.get("loop_trip", 0),
            **({"pipe_wait_cycles": self.pipe_waits} if self.pipe_waits else {}),
            "model": "per-pipe model (runtime/cycles.py); ascend950 VF costs fitted to seeds/001",
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        lines = [f"cycle model ({self.target}): total {self.total_cycles:,.0f} cycles"
                 f" (~{self.total_cycles / self.clock_ghz / 1000:.2f} us at {self.clock_ghz} GHz)"
                 + (f", {self.blocks} blocks in parallel" if self.blocks > 1 else "")]
        lines.append(f"{'pipe':<6}{'busy':>12}{'util':>8}{'instrs':>9}")
        for p, s in self.pipes.items():
            lines.append(f"{p:<6}{s.busy:>12,.0f}{self.utilization(s):>8.1%}{s.instructions:>9}")
        if self.vf:
            lines.append("VF (study counters): " + ", ".join(
                f"{_VF_LABEL[k]} {v:,.0f}" for k, v in self.vf.items()))
        lines.append("instructions: " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())
                                                  if k != "loop_trip"))
        if self.counts.get("loop_trip"):
            lines.append(f"loop trips: {self.counts['loop_trip']}")
        if self.pipe_waits:
            lines.append("pipe waits (cycles; push: FIFO full, pop: FIFO empty): " + ", ".join(
                f"{core} push {w['push']:,.0f} pop {w['pop']:,.0f}" for core, w in self.pipe_waits.items()))
        return "\n".join(lines)

    def chrome_trace(self) -> dict:
        """Chrome trace events for Perfetto: one process per block, one thread per pipe,
        timestamps in microseconds at ``clock_ghz``, flow arrows from set_flag to wait_flag."""
        tids = {p: i for i, p in enumerate(PIPE_ORDER)}
        us = 1.0 / (self.clock_ghz * 1000.0)
        ev = []
        events, flows = list(self.events), list(self.flows)
        for lo, hi, shift, times in self.repeats:  # the extrapolated trips, with their flag arrows
            n = hi - lo
            pairs = [(a - lo, b - lo) for a, b in self.flows if lo - n <= a < hi and lo <= b < hi]
            prev = lo
            for k in range(1, times + 1):
                base = len(events)
                events += [(blk, pipe, name, start + k * shift[pipe], end + k * shift[pipe],
                            done + k * shift[pipe], origin)
                           for blk, pipe, name, start, end, done, origin in self.events[lo:hi]]
                flows += [(base + a if a >= 0 else prev + n + a, base + b) for a, b in pairs]
                prev = base
        for blk, pipe, name, start, end, _complete, origin in events:
            e = {"name": name, "ph": "X", "pid": blk, "tid": tids.get(pipe, 9), "ts": start * us,
                 "dur": max(end - start, 0.01) * us, "args": {"cycles": round(end - start, 2)}}
            if origin is not None:
                e["args"]["origin"] = str(origin)
            ev.append(e)
        for k, (a, b) in enumerate(flows):
            for ph, i in (("s", a), ("f", b)):
                blk, pipe, _n, start, end, _c, _o = events[i]
                f = {"name": "flag", "cat": "sync", "ph": ph, "id": k, "pid": blk,
                     "tid": tids.get(pipe, 9), "ts": (end if ph == "s" else start) * us}
                if ph == "f":
                    f["bp"] = "e"
                ev.append(f)
        for blk in range(self.blocks):
            ev.append({"name": "process_name", "ph": "M", "pid": blk, "args": {"name": f"block {blk}"}})
            for p, i in tids.items():
                ev.append({"name": "thread_name", "ph": "M", "pid": blk, "tid": i, "args": {"name": p}})
        return {"traceEvents": ev, "displayTimeUnit": "ns",
                "otherData": {"clock_ghz": self.clock_ghz, "timestamps": "microseconds"}}


_NO_COST = OpCost(issue=1, unit="none")
"""An opcode the table has no row for."""
_SYNC_OPS = frozenset({"wait_flag", "set_flag", "pipe_barrier", "ld_ub"})
"""The opcodes :meth:`_Scheduler.exec` times specially (ld_ub: on ascend950)."""
_SLOW_OPS = frozenset({"wait_flag", "pipe_barrier", "ld_ub", "loop_trip"})
"""What :func:`_alone` leaves to :meth:`_Scheduler.issue`: a wait_flag while its flag is not set, a
pipe_barrier on ALL, ld_ub, loop_trip (not issued by dispatch, not an instruction)."""

_VF_LABEL = {"vf_count": "VF count", "pushq_vf": "PUSHQ VF", "push_pb": "PUSH_PB", "rvecsu": "RVECSU",
             "rveclp": "RVECLP", "rvecld": "RVECLD", "rvecex": "RVECEX", "rvecst": "RVECST"}


_UNITS = {"repeat": "repeats", "byte": "nbytes", "burst": "bursts"}
"""OpCost.unit -> the trace entry's field counting them (other units: none)."""


def _cost_row(c: OpCost) -> tuple:
    """(issue, per_unit, the entry's field counting units or None, per_burst, latency) of ``c``:
    busy = issue + per_unit * units + per_burst * (bursts of a byte copy, else 0)."""
    return c.issue, c.per_unit, _UNITS.get(c.unit), c.per_burst, c.latency


def _busy(row: tuple, e) -> float:
    """The cycles trace entry ``e`` holds its pipe (its :func:`_cost_row` ``row``), a VF launch's
    own time apart."""
    issue, per_unit, units, per_burst, _latency = row
    return (issue + per_unit * (0 if units is None else getattr(e, units))
            + per_burst * (e.bursts if units == "nbytes" else 0))


def _cost_rows(table: CycleTable) -> dict:
    """:func:`_cost_row` of each opcode of ``table`` (a frozen table: made once per table)."""
    got = _COST_ROWS.get(id(table))
    if got is None or got[0] is not table:
        got = _COST_ROWS[id(table)] = (table, {op: _cost_row(c) for op, c in table.ops.items()})
    return got[1]


_COST_ROWS: dict = {}
"""id of a cycle table -> (the table, :func:`_cost_rows`)."""
_NO_ROW = _cost_row(_NO_COST)
for _t in CYCLE_TABLES.values():
    _cost_rows(_t)


def simulate(trace: list, target: str = "a2a3", keep_events: bool = True, cores: list | None = None) -> CycleStats:
    """Schedule an executed trace (``ExecResult.trace``) on the pipes of ``target``.  ``cores``
    (``ExecResult.cores``, a mixed kernel): the cores of one block are scheduled together, a pipe
    op waiting for the other core's entries it depends on (``TraceEntry.deps``), and the time it
    waits is that core's pipe wait."""
    table = CYCLE_TABLES.get(target)
    if table is None:
        raise ValueError(f"no cycle table for target '{target}'")
    pipe_busy, instrs = _ZEROS.copy(), _NONE_RUN.copy()  # (the PipeStats made at the end: of the pipes kept)
    counts, events, per_block, vfc, flows, repeats, waits = {}, [], [], {}, [], [], {}
    blocks = sorted(set(map(_BLOCK, trace))) or [0]
    n = len(cores) if cores else 1
    if not cores:  # one core per block: each block alone
        for b in blocks:
            entries = sorted(trace if len(blocks) == 1 else [e for e in trace if e.block == b], key=_SEQ)
            per_block.append(_alone(table, pipe_busy, instrs, counts, events if keep_events else None, b, vfc,
                                    flows, repeats, entries, trace))
        blocks = ()
    for g in range(0, len(blocks), n):
        group, done_at = {}, {}
        for b in blocks[g:g + n]:
            entries = sorted(trace if len(blocks) == 1 else [e for e in trace if e.block == b], key=_SEQ)
            sched = _Scheduler(table, pipe_busy, instrs, counts, events if keep_events else None, b, vfc, flows,
                               repeats, done_at)
            group[b] = (sched, sched.feed(entries, trace))
        _run_together(group)  # (one core: fed without waits)
        for b, (sched, _) in group.items():
            per_block.append(sched.finish())
            name = cores[b % n] if len(blocks) == n else f"block {b // n} {cores[b % n]}"
            waits[name] = {k: round(v, 2) for k, v in sched.pipe_wait.items()}
    pipes = {p: PipeStats(pipe_busy[p], instrs[p]) for p in PIPE_ORDER
             if instrs[p] or p not in IN_ORDER_PIPES}  # cube pipes: if used
    return CycleStats(target, max(per_block) if per_block else 0.0, pipes, counts, len(per_block),
                      per_block, events, table.clock_ghz, vfc, flows, repeats, waits)


_BLOCK, _SEQ = attrgetter("block"), attrgetter("seq")
_EXECUTOR = __name__.rpartition(".")[0] + ".executor"
"""The executor's module name (it imports this one: read from sys.modules)."""


def _run_together(group: dict) -> None:
    """Feed the cores of one block round-robin until each has issued its trace; when none can go
    on (a deadlock the executor reported), the waits give way."""
    if len(group) == 1:  # one core: nothing to wait for across cores
        for sched, feed in group.values():
            sched.stuck = True
            for _ in feed:
                pass
        return
    live = dict(group)
    while live:
        progress = False
        for b, (sched, feed) in list(live.items()):
            progress |= sched.pump()
            try:
                progress |= next(feed)
            except StopIteration:
                del live[b]
                progress = True
        if not progress:
            for sched, _ in live.values():
                sched.stuck = True


_ZEROS, _NONE_RUN = dict.fromkeys(PIPE_ORDER, 0.0), dict.fromkeys(PIPE_ORDER, 0)

def _alone(table: CycleTable, pipe_busy, instrs, counts, events, block, vfc, flows, repeats, entries, trace) -> float:
    """Schedule ``entries`` in order, the only core of ``block``, and return its makespan: what
    :meth:`_Scheduler.feed` does as :func:`_run_together` drives one core (the waits give way).
    The usual entry (nothing queued, its flag already set) is :meth:`_Scheduler.issue` +
    :meth:`_Scheduler.exec` inline with the clocks in locals (a short trace's cost is its lines
    and objects, not its work); the first other entry makes the :class:`_Scheduler` of these
    clocks, which issues it."""
    executor = sys.modules.get(_EXECUTOR)  # (not imported: no TraceRepeat exists; an import costs more)
    TraceRepeat = executor.TraceRepeat if executor is not None else ()
    got = _COST_ROWS.get(id(table))
    rows, dispatch = got[1] if got is not None and got[0] is table else _cost_rows(table), table.dispatch
    free, complete, signals, vf_times = _ZEROS.copy(), _ZEROS.copy(), {}, {}
    s_clock = end = 0.0
    sched = None
    for e in entries:
        if isinstance(e, TraceRepeat) or sched is not None and sched.queued or e.deps is not None or (
                e.opcode in _SLOW_OPS and (not signals.get(e.flag) if e.opcode == "wait_flag"
                                           else e.opcode != "pipe_barrier" or not e.flag or e.flag[0] == "ALL")):
            if sched is None:
                sched = _Scheduler(table, pipe_busy, instrs, counts, events, block, vfc, flows, repeats, None,
                                   (free, complete, signals, vf_times))
                sched.stuck = True
            sched.s_clock, sched.end = s_clock, end
            if isinstance(e, TraceRepeat):
                sched.repeat(sorted(trace[e.start:e.start + e.length], key=_SEQ), e.times)
            else:
                sched.issue(e)
            s_clock, end, free, complete = sched.s_clock, sched.end, sched.free, sched.complete
            continue
        op, pipe = e.opcode, e.pipe
        t_issue = s_clock
        s_clock = t_issue + dispatch
        pipe_busy["S"] += dispatch  # the scalar unit issues every instruction
        row = rows.get(op) or _NO_ROW
        latency = row[4]
        t = free[pipe]
        start = t if t > t_issue else t_issue
        if op == "wait_flag":
            t_sig, setter = signals[e.flag].pop(0)
            t = t_sig + table.flag_latency
            if t > start:
                start = t
            if events is not None:
                flows.append((setter, len(events)))
        elif op == "pipe_barrier":  # (on one pipe: _SLOW_OPS)
            start = max(start, complete[e.flag[0]])
        busy = _busy(row, e)
        name = op
        log = e.vf_log
        if log is not None:
            busy, name = _vf_launch(e, log, start, busy, complete["S"], vf_times, vfc, pipe_busy)
        stop = start + busy
        done = stop + latency
        if op == "set_flag":
            t = complete[pipe]
            signals.setdefault(e.flag, []).append((t if t > stop else stop,
                                                   len(events) if events is not None else 0))
        free[pipe] = stop
        if done > complete[pipe]:
            complete[pipe] = done
        pipe_busy[pipe] += busy
        instrs[pipe] += 1
        counts[op] = counts.get(op, 0) + 1
        if done > end:
            end = done
        if events is not None:
            events.append((block, pipe, name, start, stop, done, e.origin))
        if pipe == "S" and stop > s_clock:
            s_clock = stop
    if sched is None:
        return max([end, s_clock] + list(complete.values()))
    sched.s_clock, sched.end = s_clock, end
    return sched.finish()


def _vf_launch(e, log, start, busy, s_complete, vf_times, vfc, pipe_busy) -> tuple:
    """(busy, event name) of the VF launch ``e`` starting at ``start``: its V-pipe time and study
    counters (:func:`vf_timing`), the scalar unit's PB pushes."""
    v = vf_times.get(id(log))
    if v is None:  # the trips of a batched loop share their VF's log (runtime/loop_batch.py)
        v = vf_times[id(log)] = vf_timing(log)
    for k, x in v.items():
        vfc[k] = vfc.get(k, 0.0) + x
    wait = max(0.0, s_complete - start)  # its PB push reads a register S is still loading
    vfc["pushq_vf"] += wait
    pipe_busy["S"] += v["push_pb"]  # the scalar unit pushes the parameters
    return busy + (v["pushq_vf"] + wait), getattr(e, "vf_callee", e.opcode)


STEADY_TRIPS = 3
"""A repeated trip (``TraceRepeat``) is extrapolated once this many consecutive trips advanced
every clock of the schedule by the same amount (each clock its own: a pipe that is the
bottleneck drifts away from the scalar unit's issue clock at a constant rate)."""


class _Scheduler:
    """The schedule of one block (module docstring, "Model")."""

    stuck = False
    """No core of the block can go on (a deadlock the executor reported): waits give way."""
    queued = 0
    """Entries queued to a pipe and not run yet."""
    queues = heads = None
    """Pipe -> its queue and its head's index (made by the first entry queued: most traces queue none)."""
    s_clock = end = 0.0

    def __init__(self, table: CycleTable, pipe_busy, instrs, counts, events, block, vfc, flows, repeats, done_at=None,
                 clocks: tuple | None = None):
        self.table, self.pipe_busy, self.instrs, self.counts, self.events = table, pipe_busy, instrs, counts, events
        self.rows = _cost_rows(table)
        self.dispatch = table.dispatch
        self.block, self.vfc, self.flows, self.repeats = block, vfc, flows, repeats
        self.done_at: dict = {} if done_at is None else done_at
        """id(trace entry) -> (complete time, event index) of the pipe ops of every core of the block."""
        self.pipe_wait = {"push": 0.0, "pop": 0.0}
        if clocks is None:  # (:func:`_alone` hands over its clocks)
            clocks = _ZEROS.copy(), _ZEROS.copy(), {}, {}
        self.free, self.complete, self.signals, self.vf_times = clocks
        """When each pipe can start its next instruction, when every started instruction of each
        pipe is complete, the flags set and not waited for, the VF timings (id of a log ->)."""

    def feed(self, entries, trace):
        """Issue ``entries`` in order, yielding True after each and False while one has to wait
        for another core (:func:`_run_together` drives the cores of a block)."""
        from pto_compiler.runtime.executor import TraceRepeat  # (absolute: no package resolution)

        for e in entries:
            if isinstance(e, TraceRepeat):
                while not self.stuck and self.queued:
                    yield False  # a period starts from settled queues (_clocks)
                self.repeat(sorted(trace[e.start:e.start + e.length], key=lambda x: x.seq), e.times)
            else:
                while not self.issue(e):
                    yield False
            yield True

    def finish(self) -> float:
        if self.queued:
            self.pump()
        return max([self.end, self.s_clock] + list(self.complete.values()))

    def _ready(self, e):
        """When the other cores' entries ``e`` waits for are complete (0 if none), or None while one
        has not run yet."""
        t = 0.0
        for x in e.deps:
            got = self.done_at.get(id(x)) if x is not None else (0.0, None)
            if got is None:
                if not self.stuck:
                    return None
                continue
            t = max(t, got[0])
        return t

    def exec(self, e, pipe, t_issue) -> bool:
        """Run ``e`` on ``pipe`` (issued at ``t_issue``); False when it has to wait (a flag not set
        yet, another core's entry).  (``b if b > a else a`` is ``max(a, b)``, without its call.)"""
        free, complete = self.free, self.complete
        op = e.opcode
        row = self.rows.get(op) or _NO_ROW
        latency = row[4]
        t = free[pipe]
        start = t if t > t_issue else t_issue
        setter = None
        deps = e.deps  # (TraceEntry's fields default in its class: no failed lookups)
        if deps is not None:  # a pipe op of a mixed kernel
            ready = self._ready(e)
            if ready is None:
                return False
            kind = OPCODES[e.opcode].family.removeprefix("pipe_")
            if kind in self.pipe_wait:
                self.pipe_wait[kind] += max(0.0, ready - start)
            start = max(start, ready)
            if self.events is not None:
                self.flows += [(self.done_at[id(x)][1], len(self.events)) for x in deps
                               if x is not None and id(x) in self.done_at and kind == "pop"]
        sync = op in _SYNC_OPS
        if sync:
            if op == "wait_flag":
                q = self.signals.get(e.flag)
                if not q:
                    return False
                t_sig, setter = q.pop(0)
                t = t_sig + self.table.flag_latency
                if t > start:
                    start = t
            elif op == "ld_ub" and "vf_call" in self.rows:
                start = max(start, complete["V"])  # ascend950: a scalar UB read waits for the VF in flight
            elif op == "pipe_barrier":
                target = e.flag[0] if e.flag else pipe
                if target == "ALL":
                    start = max([start] + list(complete.values()))
                else:
                    start = max(start, complete[target])
        busy = _busy(row, e)
        name = op
        log = e.vf_log
        if log is not None:
            busy, name = _vf_launch(e, log, start, busy, complete["S"], self.vf_times, self.vfc, self.pipe_busy)
        stop = start + busy
        done = stop + latency
        events = self.events
        if events is not None and setter is not None:
            self.flows.append((setter, len(events)))
        if sync and op == "set_flag":
            t = complete[pipe]
            self.signals.setdefault(e.flag, []).append((t if t > stop else stop,
                                                        len(events) if events is not None else 0))
        elif sync and op == "pipe_barrier" and e.flag and e.flag[0] == "ALL":
            for p in PIPE_ORDER:
                free[p] = max(free[p], stop)
        free[pipe] = stop
        if done > complete[pipe]:
            complete[pipe] = done
        self.pipe_busy[pipe] += busy
        if op != "loop_trip":
            self.instrs[pipe] += 1
        self.counts[op] = self.counts.get(op, 0) + 1
        if done > self.end:
            self.end = done
        if deps is not None:
            self.done_at[id(e)] = (done, len(events) if events is not None else None)
        if events is not None:
            events.append((self.block, pipe, name, start, stop, done, e.origin))
        return True

    def pump(self) -> bool:
        """Run what the queued pipes can; True when something ran."""
        progress, any_run = True, False
        while progress and self.queued:
            progress = False
            for p, q in self.queues.items():
                while self.heads[p] < len(q):
                    e, t = q[self.heads[p]]
                    if not self.exec(e, p, t):
                        break
                    self.heads[p] += 1
                    self.queued -= 1
                    progress = any_run = True
        return any_run

    def _s_must_wait(self, e) -> bool:
        """An S instruction that cannot issue yet because what it waits for sits behind another
        core: a wait_flag whose signal, a barrier whose pipes, a free whose pop is still queued."""
        if e.opcode == "wait_flag":
            self.pump()
            return not self.signals.get(e.flag)
        if e.opcode == "pipe_barrier" and e.flag and e.flag[0] == "ALL":
            self.pump()
            return self.queued > 0
        return getattr(e, "deps", None) is not None and self._ready(e) is None

    def issue(self, e) -> bool:
        """Issue ``e``; False (nothing done) when it has to wait for another core first."""
        pipe = e.pipe
        if pipe == "S" and not self.stuck and self._s_must_wait(e):
            return False
        t_issue = self.s_clock
        if e.opcode != "loop_trip":
            self.s_clock = t_issue + self.dispatch
            self.pipe_busy["S"] += self.dispatch  # the scalar unit issues every instruction
        if pipe == "S":
            if e.opcode == "wait_flag" and not self.signals.get(e.flag):
                self.pump()
            if e.opcode == "pipe_barrier" and e.flag and e.flag[0] == "ALL":
                self.pump()
            if self.exec(e, "S", t_issue):
                t = self.free["S"]
                if t > self.s_clock:
                    self.s_clock = t
            else:  # the executor reported this deadlock; skip the wait
                self.counts[e.opcode] = self.counts.get(e.opcode, 0) + 1
        elif self.queued or not self.exec(e, pipe, t_issue):  # (nothing queued: it runs now or waits)
            if self.queues is None:
                self.queues = {p: [] for p in PIPE_ORDER if p != "S"}
                self.heads = dict.fromkeys(self.queues, 0)
            self.queues[pipe].append((e, t_issue))
            self.queued += 1
            self.pump()
        return True

    # ---- repeated trips -------------------------------------------------------------------
    def _clocks(self):
        """Every clock of the schedule and every accumulated figure, or None while an
        instruction waits in a queue (then the trip is not a period of the schedule)."""
        if self.queued:
            return None
        sig = {k: [t for t, _ in q] for k, q in self.signals.items() if q}
        return ([self.s_clock, self.end, *self.free.values(), *self.complete.values()], sig,
                list(zip(self.pipe_busy.values(), self.instrs.values())), dict(self.counts), dict(self.vfc),
                len(self.events) if self.events is not None else 0)

    def repeat(self, period: list, times: int) -> None:
        """``times`` trips of ``period``: scheduled one by one until STEADY_TRIPS trips advanced
        every clock alike, then the rest extrapolated (events: ``CycleStats.repeats``)."""
        snaps = [self._clocks()]
        for k in range(times):
            deltas = _steady(snaps[-STEADY_TRIPS - 1:]) if len(snaps) > STEADY_TRIPS else None
            if deltas is not None:
                self._extrapolate(snaps[-2], snaps[-1], times - k)
                return
            for e in period:
                self.issue(e)
            snaps.append(self._clocks())

    def _extrapolate(self, a, b, n: int) -> None:
        (ca, sa, pa, na, va, ea), (cb, sb, pb, nb, vb, eb) = a, b
        clocks = [y + n * (y - x) for x, y in zip(ca, cb)]
        self.s_clock, self.end = clocks[0], clocks[1]
        k = len(PIPE_ORDER)
        self.free = dict(zip(PIPE_ORDER, clocks[2:2 + k]))
        self.complete = dict(zip(PIPE_ORDER, clocks[2 + k:]))
        for key, q in self.signals.items():
            if q:
                self.signals[key] = [(y + n * (y - x), ev) for x, (y, ev) in zip(sa[key], q)]
        for p, (ba, ia), (bb, ib) in zip(PIPE_ORDER, pa, pb):
            self.pipe_busy[p], self.instrs[p] = bb + n * (bb - ba), ib + n * (ib - ia)
        for key, v in nb.items():
            self.counts[key] = v + n * (v - na.get(key, 0))
        for key, v in vb.items():
            self.vfc[key] = v + n * (v - va.get(key, 0.0))
        if self.events is not None:
            self.repeats.append((ea, eb, dict(zip(PIPE_ORDER, (y - x for x, y in zip(ca[2:], cb[2:])))), n))


def _steady(snaps) -> tuple | None:
    """What each of the consecutive trips between ``snaps`` advanced every clock, flag signal and
    figure by, if it is the same for all of them (else None)."""
    if any(s is None for s in snaps):
        return None
    first = None
    for a, b in zip(snaps, snaps[1:]):
        (ca, sa, pa, na, va, _), (cb, sb, pb, nb, vb, _) = a, b
        if len(ca) != len(cb) or sa.keys() != sb.keys() or any(len(sa[k]) != len(sb[k]) for k in sa) or na.keys() != nb.keys():
            return None
        d = ([y - x for x, y in zip(ca, cb)], [y - x for k in sa for x, y in zip(sa[k], sb[k])],
             [(y[0] - x[0], y[1] - x[1]) for x, y in zip(pa, pb)], [nb[k] - na[k] for k in na],
             [vb.get(k, 0.0) - va.get(k, 0.0) for k in vb])
        if first is None:
            first = d
        elif not _close(first, d):
            return None
    return first


def _apart(x, y) -> bool:
    """Do the numbers ``x`` and ``y`` differ by more than 1e-6 relative?"""
    return abs(x - y) > 1e-6 * max(1.0, abs(x), abs(y))


def _close(a, b) -> bool:
    """Numbers, or lists/tuples of them nested alike, equal to 1e-6 relative (one call per list:
    the steady-trip tests compare every clock of a trip, every trip)."""
    if not isinstance(a, (list, tuple)):
        return not _apart(a, b)
    if len(a) != len(b):
        return False
    if a == b:  # (the usual steady trip: one comparison in C)
        return True
    for x, y in zip(a, b):
        if isinstance(x, (list, tuple)):
            if not _close(x, y):
                return False
        elif not -1e-6 <= x - y <= 1e-6 and _apart(x, y):  # (closer than 1e-6: close at once)
            return False
    return True


def _close_flat(a: list, b: list) -> bool:
    """:func:`_close` of two lists of numbers of one length (the VF timer's snapshots).  Trips of
    one steady loop differ by rounding (a clock advanced by thirds: 7.000000000000021 vs
    6.999999999999993), so all within 1e-6 is answered without a loop in Python."""
    if a == b or max(map(abs, map(sub, a, b))) <= 1e-6:
        return True
    for x, y in zip(a, b):
        if not -1e-6 <= x - y <= 1e-6 and _apart(x, y):
            return False
    return True


def estimate(program, inputs: dict | None = None, scalars: dict | None = None, *, blocks: int = 1,
             target: str | None = None) -> CycleStats:
    """Run ``program`` (without hazard checking) and schedule its trace."""
    from .executor import execute
    r = execute(program, inputs, scalars, blocks=blocks, target=target, check=False,
                raise_on_findings=False)
    return simulate(r.trace, target or program.target)
