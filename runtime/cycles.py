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
from dataclasses import dataclass, field

from pto_compiler.dialects.a2a3 import OPCODES, OpCost

PIPE_ORDER = ("S", "V", "MTE2", "MTE3")


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


def _ascend950_table() -> dict:
    t = _a2a3_table()
    # [P] One VF launch (vf_call, asc_vf_call): the PUSHQ VF hand-over of the launch (~70 cycles
    # per launch: seeds/001's naive tail_axis case, 1247 PUSHQ VF cycles for 17 launches), then
    # one cycle per executed VF register instruction (loads, stores, compute: the executor counts
    # them, loop bodies per trip; TraceEntry.repeats) and a pipeline before the results land.
    # The study's per-counter numbers (RVECLD/RVECEX/RVECST/PUSH_PB) are not fitted yet.
    t["vf_call"] = OpCost(issue=70, per_unit=1, latency=16)
    return t


CYCLE_TABLES = {
    "a2a3": CycleTable("a2a3", _a2a3_table()),
    # ascend950: the copies, flags and scalar costs of a2a3 [P], plus the VF launch (vf_call).
    "ascend950": CycleTable("ascend950", _ascend950_table()),
}


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
    """(block, pipe, opcode, start, busy_end, complete, origin) per instruction."""
    clock_ghz: float = 1.8

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "total_cycles": round(self.total_cycles, 2),
            "blocks": self.blocks,
            "per_block_cycles": [round(c, 2) for c in self.per_block_cycles],
            "pipes": {p: {"busy_cycles": round(s.busy, 2), "instructions": s.instructions,
                          "utilization": round(s.busy / self.total_cycles, 4) if self.total_cycles else 0.0}
                      for p, s in self.pipes.items()},
            "instruction_counts": {k: v for k, v in sorted(self.counts.items()) if k != "loop_trip"},
            "instructions": sum(v for k, v in self.counts.items() if k != "loop_trip"),
            "loop_trips": self.counts.get("loop_trip", 0),
            "model": "a first per-pipe model; placeholder costs (runtime/cycles.py)",
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        lines = [f"cycle model ({self.target}): total {self.total_cycles:,.0f} cycles"
                 f" (~{self.total_cycles / self.clock_ghz / 1000:.2f} us at {self.clock_ghz} GHz)"
                 + (f", {self.blocks} blocks in parallel" if self.blocks > 1 else "")]
        lines.append(f"{'pipe':<6}{'busy':>12}{'util':>8}{'instrs':>9}")
        for p, s in self.pipes.items():
            u = s.busy / self.total_cycles if self.total_cycles else 0.0
            lines.append(f"{p:<6}{s.busy:>12,.0f}{u:>8.1%}{s.instructions:>9}")
        lines.append("instructions: " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())
                                                  if k != "loop_trip"))
        if self.counts.get("loop_trip"):
            lines.append(f"loop trips: {self.counts['loop_trip']}")
        return "\n".join(lines)

    def chrome_trace(self) -> dict:
        """Chrome trace events (one thread per pipe, 1 us = 1 cycle) for Perfetto."""
        tids = {p: i for i, p in enumerate(PIPE_ORDER)}
        ev = []
        for blk, pipe, op, start, end, _complete, origin in self.events:
            e = {"name": op, "ph": "X", "pid": blk, "tid": tids.get(pipe, 9), "ts": start,
                 "dur": max(end - start, 0.01)}
            if origin is not None:
                e["args"] = {"origin": str(origin)}
            ev.append(e)
        for blk in range(self.blocks):
            for p, i in tids.items():
                ev.append({"name": "thread_name", "ph": "M", "pid": blk, "tid": i, "args": {"name": p}})
        return {"traceEvents": ev, "displayTimeUnit": "ns"}


def _units(cost: OpCost, e) -> float:
    if cost.unit == "repeat":
        return e.repeats
    if cost.unit == "byte":
        return e.nbytes
    if cost.unit == "burst":
        return e.bursts
    return 0


def simulate(trace: list, target: str = "a2a3", keep_events: bool = True) -> CycleStats:
    """Schedule an executed trace (``ExecResult.trace``) on the pipes of ``target``."""
    table = CYCLE_TABLES.get(target)
    if table is None:
        raise ValueError(f"no cycle table for target '{target}'")
    pipes = {p: PipeStats() for p in PIPE_ORDER}
    counts: dict[str, int] = {}
    events: list = []
    per_block: list[float] = []
    blocks = sorted({e.block for e in trace}) or [0]
    for b in blocks:
        entries = sorted((e for e in trace if e.block == b), key=lambda e: e.seq)
        per_block.append(_schedule_block(entries, table, pipes, counts, events if keep_events else None, b))
    return CycleStats(target, max(per_block) if per_block else 0.0, pipes, counts, len(blocks),
                      per_block, events, table.clock_ghz)


def _schedule_block(entries, table: CycleTable, pipes, counts, events, block) -> float:
    free = dict.fromkeys(PIPE_ORDER, 0.0)       # pipe can start its next instruction
    complete = dict.fromkeys(PIPE_ORDER, 0.0)   # every started instruction of the pipe complete
    signals: dict = {}
    queues = {p: [] for p in PIPE_ORDER if p != "S"}
    heads = dict.fromkeys(queues, 0)
    s_clock = 0.0
    end = 0.0

    def cost_of(e) -> OpCost:
        c = table.ops.get(e.opcode)
        return c if c is not None else OpCost(issue=1, unit="none")

    def run(e, pipe, t_issue) -> bool:
        nonlocal end
        c = cost_of(e)
        start = max(t_issue, free[pipe])
        if e.opcode == "wait_flag":
            q = signals.get(e.flag)
            if not q:
                return False
            start = max(start, q.pop(0) + table.flag_latency)
        elif e.opcode == "pipe_barrier":
            target = e.flag[0] if e.flag else pipe
            if target == "ALL":
                start = max([start] + list(complete.values()))
            else:
                start = max(start, complete[target])
        busy = c.issue + c.per_unit * _units(c, e) + c.per_burst * (e.bursts if c.unit == "byte" else 0)
        stop = start + busy
        done = stop + c.latency
        if e.opcode == "set_flag":
            signals.setdefault(e.flag, []).append(max(stop, complete[pipe]))
        if e.opcode == "pipe_barrier" and e.flag and e.flag[0] == "ALL":
            for p in PIPE_ORDER:
                free[p] = max(free[p], stop)
        free[pipe] = stop
        complete[pipe] = max(complete[pipe], done)
        ps = pipes[pipe]
        ps.busy += busy
        if e.opcode != "loop_trip":
            ps.instructions += 1
        counts[e.opcode] = counts.get(e.opcode, 0) + 1
        end = max(end, done)
        if events is not None:
            events.append((block, pipe, e.opcode, start, stop, done, e.origin))
        return True

    def pump():
        progress = True
        while progress:
            progress = False
            for p, q in queues.items():
                while heads[p] < len(q):
                    e, t = q[heads[p]]
                    if not run(e, p, t):
                        break
                    heads[p] += 1
                    progress = True

    for e in entries:
        pipe = e.pipe
        t_issue = s_clock
        if e.opcode != "loop_trip":
            s_clock += table.dispatch
            pipes["S"].busy += table.dispatch  # the scalar unit issues every instruction
        if pipe == "S":
            if e.opcode == "wait_flag" and not signals.get(e.flag):
                pump()
            if e.opcode == "pipe_barrier" and e.flag and e.flag[0] == "ALL":
                pump()
            if run(e, "S", t_issue):
                s_clock = max(s_clock, free["S"])
            else:  # the executor reported this deadlock; skip the wait
                counts[e.opcode] = counts.get(e.opcode, 0) + 1
        else:
            queues[pipe].append((e, t_issue))
            pump()
    pump()
    return max([end, s_clock] + list(complete.values()))


def estimate(program, inputs: dict | None = None, scalars: dict | None = None, *, blocks: int = 1,
             target: str | None = None) -> CycleStats:
    """Run ``program`` (without hazard checking) and schedule its trace."""
    from .executor import execute
    r = execute(program, inputs, scalars, blocks=blocks, target=target, check=False,
                raise_on_findings=False)
    return simulate(r.trace, target or program.target)
