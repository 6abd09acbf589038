"""Sync mutation testing of every example's emitted program on both targets (issue 15).

tests/test_sync_proof.py shows for the softmax a2a3 program that every flag pair and barrier is
needed.  Here, for every example and target: each set_flag/wait_flag pair (the k-th set of a
(src, dst, event) key with its k-th wait, in program order, loops and branches included) and each
pipe_barrier is deleted, one at a time; and each sync is moved, one at a time (:func:`sync_moves`:
a wait past its first dependent, a set before its producer, a barrier past the first instruction
it orders).  The mutant is either *flagged* (the executor reports a
race or a deadlock) or shown *benign*: it runs with no finding under every legal pipe schedule
the executor has (executor.SCHEDULES) and computes bit for bit what the intact program computes.
A mutant that runs without a finding but computes something else under some schedule is *missed*
(a race the hazard checker did not see): there must be none.  Over the 8 examples on 2 targets:
deletions 100 flagged / 12 benign / 0 missed, moves 151 flagged / 13 benign / 0 missed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pto_compiler import api, pipeline
from pto_compiler.runtime.executor import SCHEDULES, execute
from pto_compiler.runtime.program import If, Instr, Loop, Program
from test_sync_proof import _without

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["vadd", "vadd_synced", "softmax", "layernorm", "rowclamp_manual", "rowscale300", "matmul",
            "mixed_matmul_softmax"]
TARGETS = ("a2a3", "ascend950")


def sync_mutations(program) -> list[tuple[str, set]]:
    """(description, ids of the instructions to delete) per flag pair and per barrier."""
    sets, waits, out = {}, {}, []
    for ins, _ in program.walk():
        if not isinstance(ins, Instr):
            continue
        if ins.opcode in ("set_flag", "wait_flag"):
            key = tuple(str(ins.args[k]) for k in ("src_pipe", "dst_pipe", "event_id"))
            (sets if ins.opcode == "set_flag" else waits).setdefault(key, []).append(ins)
        elif ins.opcode == "pipe_barrier":
            out.append((f"barrier {ins.args['pipe']} ({_where(ins)})", {id(ins)}))
    for key, ss in sets.items():
        for s, w in zip(ss, waits.get(key, [])):
            out.append((f"flag pair {'->'.join(key[:2])} id={key[2]} ({_where(s)}, {_where(w)})", {id(s), id(w)}))
    return out


_SYNC = ("set_flag", "wait_flag", "pipe_barrier")


def sync_moves(program) -> list[tuple[str, tuple]]:
    """(description, (id of the sync, index in its block to move it to)) per set/wait pair and
    barrier: each wait_flag moved past the first instruction of its pipe after it that touches
    memory (its first dependent), each set_flag moved before the last such instruction of its
    pipe before it (its producer), each pipe_barrier past the next such instruction of its pipe
    (the first it orders).  A node is an instruction or a whole loop or branch (one holding such
    an instruction counts as one).  A sync with nothing to pass in its block has no move."""
    out = []
    for nodes in (b for body in _bodies(program) for b in _blocks(body)):
        for i, n in enumerate(nodes):
            if not isinstance(n, Instr) or n.opcode not in _SYNC:
                continue
            later = range(i + 1, len(nodes))
            j = next((j for j in (reversed(range(i)) if n.opcode == "set_flag" else later)
                      if _on(nodes[j], n.pipe)), None)
            if j is None:
                continue
            key = (n.args["pipe"] if n.opcode == "pipe_barrier"
                   else "->".join(str(n.args[k]) for k in ("src_pipe", "dst_pipe")))
            out.append((f"{n.opcode} {key} ({_where(n)}) moved {'after' if j > i else 'before'} "
                        f"{_name(nodes[j])}", (id(n), j)))
    return out


def _bodies(program) -> list:
    """The instruction bodies of a program: one, or each core's of a mixed kernel."""
    return [p.body for _, p in program.agents] if hasattr(program, "agents") else [program.body]


def _blocks(nodes):
    yield nodes
    for n in nodes:
        if isinstance(n, Loop):
            yield from _blocks(n.body)
        elif isinstance(n, If):
            yield from _blocks(n.then_body)
            yield from _blocks(n.else_body)


def _on(node, pipe: str) -> bool:
    """``node`` is, or holds, an instruction of ``pipe`` that reads or writes memory."""
    if isinstance(node, Instr):
        return node.pipe == pipe and (node.opcode == "vf_call" or any(
            k in ("ub", "ub_elem", "gm") for k in node.spec.kinds.values()) or bool(node.spec.spaces))
    return any(_on(m, pipe) for b in _blocks([node]) for m in b if isinstance(m, Instr))


def _name(node) -> str:
    return node.opcode if isinstance(node, Instr) else type(node).__name__.lower()


def _moved(prog: Program, move: tuple) -> Program:
    """``prog`` with the node ``move[0]`` moved to just past (after or before) the node at index
    ``move[1]`` of its block."""
    if hasattr(prog, "agents"):  # a mixed kernel: the node is in one core's program
        return replace(prog, agents=[(kind, _moved(p, move)) for kind, p in prog.agents])
    nid, j = move

    def body(nodes):
        out = []
        for n in nodes:
            if isinstance(n, Loop):
                n = replace(n, body=body(n.body))
            elif isinstance(n, If):
                n = replace(n, then_body=body(n.then_body), else_body=body(n.else_body))
            out.append(n)
        for i, n in enumerate(out):
            if id(n) == nid:
                rest = out[:i] + out[i + 1:]
                rest.insert(j, n)  # past node j: after it when j > i, before it otherwise
                return rest
        return out

    return replace(prog, body=body(prog.body))


def _where(ins) -> str:
    o = ins.origin
    return f"line {o.line} {o.op}" if o is not None else "no origin"


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(np.ascontiguousarray(a[k]).view(np.uint8), np.ascontiguousarray(b[k]).view(np.uint8)) for k in a)


def classify(program, gm: dict, scalars: dict, want: dict) -> str:
    r = execute(program, gm, scalars, raise_on_findings=False, trace=False)
    if {f.kind for f in r.findings} & {"race", "deadlock"}:
        return "flagged"
    for schedule in SCHEDULES:
        r = execute(program, gm, scalars, raise_on_findings=False, trace=False, schedule=schedule)
        if r.findings or not _same(r.outputs, want):
            return "missed"
    return "benign"


def _compiled(name: str, target: str):
    module = api.parse((REPO / "examples" / f"{name}.pto").read_text(), f"{name}.pto")
    values = api.make_inputs(module, seed=0)
    scalars = pipeline.kernel_scalars(module, values)
    program = api.compile(module, target, scalars=scalars)
    return program, pipeline.gm_inputs(values), scalars


def mutation_table(name: str, target: str, kind: str = "delete") -> dict[str, list[str]]:
    """flagged / benign / missed mutants of one example's program: each sync deleted (``kind``
    "delete") or moved ("move")."""
    program, gm, scalars = _compiled(name, target)
    base = execute(program, gm, scalars, raise_on_findings=False, trace=False)
    assert not base.findings, [str(f) for f in base.findings]
    want = {k: np.array(v, copy=True) for k, v in base.outputs.items()}
    table: dict[str, list[str]] = {"flagged": [], "benign": [], "missed": []}
    mutants = ([(what, _without(program, drop)) for what, drop in sync_mutations(program)] if kind == "delete"
               else [(what, _moved(program, move)) for what, move in sync_moves(program)])
    for what, mutant in mutants:
        table[classify(mutant, gm, scalars, want)].append(what)
    return table


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_deleted_sync_is_flagged_or_benign(name, target):
    table = mutation_table(name, target)
    assert not table["missed"], f"{name} on {target}: no finding, different outputs: {table['missed']}"
    assert table["flagged"], f"{name} on {target}: no deletion was flagged ({table})"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_moved_sync_is_flagged_or_benign(name, target):
    table = mutation_table(name, target, "move")
    assert not table["missed"], f"{name} on {target}: no finding, different outputs: {table['missed']}"
    assert table["flagged"], f"{name} on {target}: no move was flagged ({table})"


@pytest.mark.parametrize("target", TARGETS)
def test_intact_programs_compute_the_same_under_every_schedule(target):
    program, gm, scalars = _compiled("softmax", target)
    runs = [execute(program, gm, scalars, trace=False, schedule=s) for s in SCHEDULES]
    assert all(not r.findings and _same(r.outputs, runs[0].outputs) for r in runs)


def test_a_race_shows_under_some_schedule():
    """The schedules differ where it matters: vadd without its MTE2->V pair computes something
    else under the lazy schedule (the add reads the tiles before the loads land)."""
    program, gm, scalars = _compiled("vadd", "a2a3")
    want = execute(program, gm, scalars, trace=False).outputs
    pair = next(drop for what, drop in sync_mutations(program) if "MTE2->V" in what)
    mutant = _without(program, pair)
    outs = [execute(mutant, gm, scalars, raise_on_findings=False, trace=False, schedule=s).outputs
            for s in SCHEDULES]
    assert any(not _same(o, want) for o in outs)
