"""Sync mutation testing of every example's emitted program on both targets (issue 15).

tests/test_sync_proof.py shows for the softmax a2a3 program that every flag pair and barrier is
needed.  Here, for every example and target: each set_flag/wait_flag pair (the k-th set of a
(src, dst, event) key with its k-th wait, in program order, loops and branches included) and each
pipe_barrier is deleted, one at a time.  The mutant is either *flagged* (the executor reports a
race or a deadlock) or shown *benign*: it runs with no finding under every legal pipe schedule
the executor has (executor.SCHEDULES) and computes bit for bit what the intact program computes.
A mutant that runs without a finding but computes something else under some schedule is *missed*
(a race the hazard checker did not see): there must be none.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pto_compiler import api, pipeline
from pto_compiler.runtime.executor import SCHEDULES, execute
from pto_compiler.runtime.program import Instr
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


def mutation_table(name: str, target: str) -> dict[str, list[str]]:
    program, gm, scalars = _compiled(name, target)
    base = execute(program, gm, scalars, raise_on_findings=False, trace=False)
    assert not base.findings, [str(f) for f in base.findings]
    want = {k: np.array(v, copy=True) for k, v in base.outputs.items()}
    table: dict[str, list[str]] = {"flagged": [], "benign": [], "missed": []}
    for what, drop in sync_mutations(program):
        table[classify(_without(program, drop), gm, scalars, want)].append(what)
    return table


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_deleted_sync_is_flagged_or_benign(name, target):
    table = mutation_table(name, target)
    assert not table["missed"], f"{name} on {target}: no finding, different outputs: {table['missed']}"
    assert table["flagged"], f"{name} on {target}: no deletion was flagged ({table})"


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
