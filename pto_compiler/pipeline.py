"""The default pass pipeline per target, and running a compiled program against the golden model.

a2a3 (DESIGN.md §2, §5)::

    verify -> pto-inline-calls (modules with func.call) -> pto-bufferize (L1 functions only)
           -> pto-fold-view-yields (scf.if yielding GM views only) -> pto-set-validshape (when used)
           -> pto-select-expand-mode -> pto-tmp-strategy
           -> pto-plan-memory -> pto-insert-sync -> pto-lower-a2a3 -> a2a3-complete-barriers
    (a2a3 ops; the program is their listing)

ascend950: the same passes (plan memory at 256 KiB, no broadcast scratch), then ``pto-lower-vf``
(one ``vf.func`` + ``vf.call`` per vector tile op; ``stop_after="vf"`` returns that module, what
``ptoc --emit vf`` prints) and the program emission of passes/lower_vf.py (``vf_call`` on V).

:func:`compile_module` returns the module at a level (``"pto"``: verified, unchanged;
``"placed"``: after pto-plan-memory and pto-insert-sync, what ``ptoc --emit placed`` prints) or,
by default, the a2a3 :class:`~pto_compiler.runtime.program.Program`.  The input module is never
changed (the passes run on a clone), so the golden model can still run the original.

:func:`run_program` executes a program on the NumPy executor and schedules its trace on the
cycle model; :func:`compare_outputs` applies the comparison rule of ``ptoc --run`` (issue 4):
bit-exact, except outputs that depend on a float sum (TROWSUM/TCOLSUM of a float type,
:func:`~pto_compiler.passes.lower_a2a3.float_sum_outputs`), which pass when
``|got - want| <= rtol * (|want| + 1)`` with rtol per type from ``reference.FLOAT_SUM_RTOL``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

from pto_compiler.diagnostics import Diagnostic, PtocError
from pto_compiler.targets import A2A3, Target
from pto_compiler.timing import HostTimes

LEVELS = ("pto", "placed", "vf", "program")

# ascend950: the VF optimisation passes after pto-lower-vf (DESIGN.md §5 item 8), unless --vf-opt=none.
VF_OPT_PASSES = ("vf-fuse-launches", "vf-loop-order", "vf-pairwise-fold", "vf-multi-accumulator")

PIPELINES = {
    "a2a3": ("pto-select-expand-mode", "pto-tmp-strategy", "pto-plan-memory", "pto-insert-sync"),
    "ascend950": ("pto-select-expand-mode", "pto-tmp-strategy", "pto-plan-memory", "pto-insert-sync"),
}
"""The passes after bufferization, per target (each gets ``target=`` and, for the planner, ``manual=``
when it has such an option)."""


def _usage(message: str) -> PtocError:
    return PtocError([Diagnostic(message)], exit_code=2)


def _make_pass(name: str, target: Target, manual: bool):
    from pto_compiler.passes import get_all_passes

    factory = get_all_passes().get(name)
    try:
        cls = factory() if factory is not None else None
    except ImportError:
        cls = None
    if cls is None:
        raise _usage(f"pass '{name}' is not available in this build of ptoc")
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    kwargs = {}
    if "target" in fields:
        kwargs["target"] = target.name
    if "manual" in fields:
        kwargs["manual"] = manual
    return cls(**kwargs)


def is_mixed(module) -> bool:
    from pto_compiler.runtime.pipes import is_mixed

    return is_mixed(module)


def has_reserve(module) -> bool:
    from pto_compiler.runtime.pipes import has_reserve

    return has_reserve(module)


def has_calls(module) -> bool:
    from xdsl.dialects import func

    return any(isinstance(op, func.CallOp) for op in module.walk())


def _has_l1(module) -> bool:
    from xdsl.dialects import func

    from pto_compiler.passes.bufferize import _is_l1

    return any(isinstance(op, func.FuncOp) and op.body.blocks and _is_l1(op) for op in module.walk())


def pass_names(module, target: Target, stop_after: str | None = None, vf_opt: str | None = None,
               insert_sync: bool = True) -> list[str]:
    """The passes :func:`compile_module` runs, in order (``ptoc --print-pipeline``)."""
    from pto_compiler.passes.fold_view_yields import has_view_results
    from pto_compiler.passes.set_validshape import has_set_validshape

    names = ["verify"]
    if stop_after == "pto":
        return names
    names += ["pto-inline-calls"] if has_calls(module) else []
    names += ["pto-bufferize"] if _has_l1(module) else []
    names += ["pto-fold-view-yields"] if has_view_results(module) else []
    names += ["pto-set-validshape"] if has_set_validshape(module) else []
    names += [n for n in PIPELINES[target.name] if insert_sync or n != "pto-insert-sync"]
    if is_mixed(module) or has_reserve(module):  # the pipe's slot buffers, once the tiles are placed
        names.insert(names.index("pto-plan-memory") + 1, "pto-resolve-reserved-buffers")
    if stop_after == "placed":
        return names
    if target.has_vf:
        return names + ["pto-lower-vf", *(VF_OPT_PASSES if vf_opt != "none" else ())]
    return names + ["pto-lower-a2a3", "a2a3-complete-barriers"]


def compile_module(module, target: Target = A2A3, entry: str | None = None, manual: bool = False,
                   stop_after: str | None = None, scalars: dict | None = None, vf_opt: str | None = None,
                   insert_sync: bool = True, times: HostTimes | None = None, observe=None, decode: bool = False,
                   in_place: bool = False):
    """Run the default pipeline on a clone of ``module`` (on ``module`` itself with ``in_place``: a
    caller that gives it away, as ptoc does, saves the copy).

    ``stop_after``: ``"pto"`` (verified module), ``"placed"`` (after placement and sync) or None /
    ``"program"`` (the a2a3 Program).  ``vf_opt`` (ascend950): ``"none"`` skips the VF optimisation
    passes (VF_OPT_PASSES), the default runs them.  ``insert_sync=False`` skips pto-insert-sync: the
    kernel's own set_flag/wait_flag run as written (PTOAS without --enable-insert-sync).  ``scalars``
    (integer kernel scalars by name) size GM arguments whose views depend on them.  ``times``
    collects the host time per pass and of the program emission; ``observe(pass_name, module)`` is
    called after every pass (``--print-ir-after``).  ``decode``: a run follows, so the program is also
    decoded for the executor (runtime/executor.py ``plan_of``, timed as emission: a compile
    that only prints the program does not pay it).  Errors are located ``PtocError`` s."""
    from xdsl.passes import PassPipeline

    from pto_compiler import api

    if stop_after not in (None, *LEVELS):
        raise ValueError(f"unknown level '{stop_after}' (expected one of {', '.join(LEVELS)})")
    if stop_after == "vf" and not target.has_vf:
        raise _usage(f"the vf level exists only on ascend950 (--emit vf needs --target ascend950, "
                     f"not {target.name})")
    times = times or HostTimes()
    from pto_compiler.verify import verified

    if stop_after in (None, "program") and is_mixed(module) and AGENT_ATTR not in module.attributes:
        return _compile_agents(module, target, entry, manual, scalars, vf_opt, insert_sync, times, observe)
    names = pass_names(module, target, stop_after, vf_opt, insert_sync)
    if not verified(module, target):  # ptoc has verified this very module already
        with times.pass_("verify"):
            api.verify(module, target)
    module = module if in_place else module.clone()
    if observe is not None:
        observe("verify", module)
    if stop_after == "pto":
        return module
    if stop_after != "placed":
        _reject_memref_form(module)
    xdsl_passes = [n for n in names if n not in ("verify", "pto-lower-a2a3", "a2a3-complete-barriers")]
    passes = tuple(_make_pass(name, target, manual) for name in xdsl_passes)
    if observe is None and "vf-fuse-launches" in xdsl_passes:  # nothing sees pto-lower-vf's own output
        passes = tuple(dataclasses.replace(p, fuse=True) if p.name == "pto-lower-vf" else p for p in passes)
    PassPipeline(passes, times.pipeline_callback(observe)).apply(api.context(), module)
    if stop_after in ("placed", "vf"):
        return module
    if target.has_vf:
        from pto_compiler.passes import lower_vf

        with times.phase("emit"):  # on our clone
            return _decoded(lower_vf.lower_module_to_a2a3(module, target, entry, scalars), decode)
    from pto_compiler.passes import lower_a2a3

    with times.pass_("pto-lower-a2a3"):
        lower_a2a3.lower_module(module, target, entry)  # on our clone
    if observe is not None:
        observe("pto-lower-a2a3", module)
    with times.pass_("a2a3-complete-barriers"):  # the program is decoded on the way
        program = lower_a2a3.completed_program(module, target, entry, scalars)
    if observe is not None:
        observe("a2a3-complete-barriers", module)
    with times.phase("emit"):
        return _decoded(program, decode)


def _decoded(program, decode: bool):
    """``program``, decoded for the executor once (runtime/executor.py ``plan_of``) if ``decode``."""
    if decode:
        from pto_compiler.runtime.executor import plan_of

        plan_of(program)
    return program


AGENT_ATTR = "ptoc.agent"
"""Marks the module of one core of a mixed kernel (runtime/pipes.py ``agent_plans``)."""


def _compile_agents(module, target: Target, entry, manual, scalars, vf_opt, insert_sync, times, observe):
    """A mixed kernel: each core's part through the whole pipeline, one program per core kind
    (runtime/pipes.py ``AgentsProgram``; the executor runs them concurrently)."""
    from xdsl.dialects.builtin import StringAttr

    from pto_compiler import api
    from pto_compiler.runtime import pipes
    from pto_compiler.runtime.kernel_interface import select_entry
    from pto_compiler.verify import verified

    if not verified(module, target):
        api.verify(module, target)
    plans = pipes.agent_plans(module, select_entry(module, entry))
    programs = []
    for plan in plans:
        plan.module.attributes[AGENT_ATTR] = StringAttr(plan.kind)
        programs.append(compile_module(plan.module, target, plan.root, manual=manual, scalars=scalars,
                                       vf_opt=vf_opt, insert_sync=insert_sync, times=times, observe=observe))
    return pipes.agents_program(plans, programs, target.name)


def _reject_memref_form(module) -> None:
    """PTOAS's memref form that pto-raise-memref could not raise is parsed and verified (the corpus
    uses it) but has no tile types to lower from: say why at the first such op."""
    from xdsl.dialects import func

    from pto_compiler.passes.raise_memref import has_memref_form, memref_form_error

    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.body.blocks and has_memref_form(op):
            raise memref_form_error(op)


def lower_placed(module, target: Target, entry: str | None = None, scalars: dict | None = None):
    """The program of a placed module (a2a3) or of a module after pto-lower-vf (ascend950)."""
    if target.has_vf:
        from pto_compiler.passes.lower_vf import lower_to_program

        return lower_to_program(module, target, entry, scalars=scalars)
    from pto_compiler.passes.lower_a2a3 import lower_to_program

    return lower_to_program(module, target, entry, scalars=scalars)


# --------------------------------------------------------------------------------------------
# Running and comparing
# --------------------------------------------------------------------------------------------

@dataclass
class Comparison:
    name: str
    ok: bool
    max_abs_err: float
    mismatch: tuple | None = None
    """(index, got, want) of the first mismatching element."""
    rule: str = "exact"

    def line(self, ill_conditioned: str | None = None) -> str:
        """``PASS``/``FAIL`` and the first mismatch; ``ILL-CONDITIONED`` and why when
        :func:`order_decided` says the summation order decides every failing element."""
        err = _fmt(self.max_abs_err)
        if self.ok:
            return f"PASS {self.name} {err}"
        idx, got, want = self.mismatch
        where = "(" + ", ".join(str(i) for i in idx) + ")"
        head = "ILL-CONDITIONED" if ill_conditioned else "FAIL"
        tail = f" ({ill_conditioned})" if ill_conditioned else ""
        return f"{head} {self.name} {err} first mismatch at {where}: got {_fmt(got)} want {_fmt(want)}{tail}"


def _fmt(x) -> str:
    import numpy as np

    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isnan(x) or math.isinf(x):
            return str(x)
        return f"{x:.6g}"
    return str(x)


def mismatches(g, w, tolerant: bool) -> tuple:
    """(the elements where ``g`` differs from ``w`` under the rule, the largest absolute error, the
    rule's name) for one output of ``w``'s shape: bit-exact, or the float-sum tolerance when
    ``tolerant`` and the type is a float (module doc)."""
    import numpy as np

    from pto_compiler.runtime import reference as golden

    gf, wf = g.astype(np.float64), w.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(gf - wf)
    both_nan = np.isnan(gf) & np.isnan(wf)
    same_inf = np.isinf(gf) & np.isinf(wf) & (gf == wf)
    diff = np.where(both_nan | same_inf, 0.0, diff)
    finite = diff[np.isfinite(diff)]
    max_err = float(finite.max()) if finite.size else 0.0
    if np.isnan(diff).any() or np.isinf(diff).any():
        max_err = math.inf
    if tolerant and (w.dtype.kind == "f" or w.dtype.name == "bfloat16"):
        rtol = golden.FLOAT_SUM_RTOL[w.dtype.name]
        bad = ~((diff <= rtol * (np.abs(wf) + 1)) | both_nan | same_inf)
        return bad, max_err, f"float sum, rtol {rtol:g}"
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[w.dtype.itemsize]
    return np.ascontiguousarray(g).view(u) != np.ascontiguousarray(w).view(u), max_err, "exact"


def compare_outputs(got: dict, want: dict, tolerant: set | frozenset = frozenset()) -> list[Comparison]:
    """One :class:`Comparison` per golden output (see the module doc for the rule)."""
    import numpy as np

    out = []
    for name, w in want.items():
        w = np.asarray(w)
        g = got.get(name)
        if g is None:
            out.append(Comparison(name, False, math.inf, ((), "missing", "an output"), "exact"))
            continue
        g = np.asarray(g).reshape(w.shape) if np.asarray(g).size == w.size else np.asarray(g)
        if g.shape != w.shape:
            out.append(Comparison(name, False, math.inf, ((), f"shape {g.shape}", f"shape {w.shape}")))
            continue
        bad, max_err, rule = mismatches(g, w, name in tolerant)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            gv, wv = g[idx], w[idx]
            out.append(Comparison(name, False, max_err, (idx, gv.item() if hasattr(gv, "item") else gv,
                                                         wv.item() if hasattr(wv, "item") else wv), rule))
        else:
            out.append(Comparison(name, True, max_err, None, rule))
    return out


def order_decided(module, res, target: str, entry: str | None = None, blocks: int = 1) -> dict[str, str]:
    """The outputs of a ``--run`` (``res``: :func:`pto_compiler.api.check`'s result) that FAIL only
    where the float summation order decides, each with why: every element failing the float-sum
    tolerance leaves it too when the golden model sums TROWSUM/TCOLSUM in another legal order
    (``E.SUM_ORDERS``).  A sum followed by cancellation can amplify the order's freedom beyond the
    tolerance: such an output is ill-conditioned, neither a PASS nor a miscompilation.  An output
    compared bit for bit, a mismatch at an element every order agrees on, or a run with findings
    never is."""
    import numpy as np

    from pto_compiler.passes.lower_a2a3 import float_sum_outputs
    from pto_compiler.runtime import elementwise as E

    tolerant = float_sum_outputs(module, entry)
    failed = [c.name for c in res.comparisons if not c.ok and c.name in tolerant and c.name in res.reference
              and np.asarray(res.outputs.get(c.name, ())).size == np.asarray(res.reference[c.name]).size]
    if res.findings or not failed:
        return {}
    orders = [o for o in E.SUM_ORDERS if o != "exact"]
    others = [golden_outputs(module, res.inputs, entry, blocks, None, target, sum_order=o) for o in orders]
    why = {}
    for name in failed:
        want = np.asarray(res.reference[name])
        got = np.asarray(res.outputs[name]).reshape(want.shape)
        bad, _, rule = mismatches(got, want, True)
        moved = np.logical_or.reduce([mismatches(o[name], want, True)[0] for o in others])
        if (bad & ~moved).any():
            continue
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        values = ", ".join(f"{o} {float(other[name][at]):.6g}" for o, other in zip(orders, others))
        why[name] = (f"all {int(bad.sum())} element(s) failing '{rule}' leave it when the golden model sums in "
                     f"another order; at {at}: ptoc {float(got[at]):.6g}, golden exact {float(want[at]):.6g}, "
                     f"{values}")
    return why


def compare_prints(got: list, want: list, tolerant: set | frozenset = frozenset()) -> list[Comparison]:
    """The TPRINTs of the executor's run against the golden model's, as outputs named
    ``tprint@FILE:LINE:COL`` (``#k`` for the k-th print of a place printed more than once), compared
    in order per place as :func:`compare_outputs` compares outputs (a place in ``tolerant``, which
    prints a float sum, with the float-sum tolerance); a print only one run made fails."""
    def named(prints: list) -> dict:
        count: dict = {}
        for where, _ in prints:
            count[where] = count.get(where, 0) + 1
        out, seen = {}, {}
        for where, values in prints:
            seen[where] = seen.get(where, 0) + 1
            out[f"tprint@{where}" + (f"#{seen[where]}" if count[where] > 1 else "")] = values
        return out

    g, w = named(got), named(want)
    extra = [Comparison(name, False, math.inf, ((), "a print", "none")) for name in g if name not in w]
    return compare_outputs(g, w, {name for name in w if re.sub(r"#\d+$", "", name) in tolerant}) + extra


@dataclass
class RunResult:
    outputs: dict
    stats: object
    """:class:`~pto_compiler.runtime.cycles.CycleStats` of the run."""
    findings: list
    exec_result: object = None


def run_program(program, inputs: dict, scalars: dict | None = None, blocks: int = 1, check: bool = True,
                stats: bool = True, max_steps: int | None = None, checked: bool = False) -> RunResult:
    """Execute ``program`` (hazard checking on); races are returned in ``findings`` (not raised);
    a deadlock or an invalid access raises ``ExecutionError``; a run longer than ``max_steps``
    (default: the executor's) is a usage error (exit 2).  ``checked``: ``inputs`` are
    :func:`program_inputs`'s GM arrays (not checked again)."""
    import pto_compiler.runtime.executor as X  # (no ``from``: a from-import of a name costs more per call)

    gm = inputs if checked else {g.name: inputs[g.name] for g in program.gm_args if g.name in inputs}
    try:
        r = X.execute(program, gm, scalars or {}, blocks=blocks, check=check, trace=stats,
                      max_steps=max_steps or X.DEFAULT_MAX_STEPS, checked_inputs=checked)
        findings = list(r.findings)
    except X.StepLimitError as e:
        raise _usage(str(e)) from None
    except X.ExecutionError as e:
        if e.result is None or any(f.kind not in ("race", "sync") for f in e.findings):
            raise
        r, findings = e.result, list(e.findings)
    st = r.cycle_stats(program.target) if stats else None
    return RunResult(dict(r.outputs), st, findings, r)


def program_inputs(program, inputs: dict) -> tuple[dict, dict]:
    """(GM arrays, scalars) of ``program`` from ``inputs`` by name, refused (exit 2) as ``ptoc
    --input`` refuses them: a missing or unknown name, another element type or element count.
    The ``resultN`` buffers pto-bufferize adds for an L1 kernel's results may be left out."""
    import numpy as np

    import pto_compiler.runtime.elementwise as E

    gm_args, scalar_args = program.gm_args, program.scalar_args
    found, missing = 0, []
    for a in (*gm_args, *scalar_args):
        if a.name in inputs:
            found += 1
        # (a string test, not a regex: compiling one costs more than the rest of a small run)
        elif not (a.name[:6] == "result" and a.name[6:].isdecimal()):
            missing.append(a.name)
    if found != len(inputs):
        names = [g.name for g in gm_args] + [s.name for s in scalar_args]
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise _usage(f"no kernel argument named {', '.join(map(repr, unknown))} "
                         f"(arguments: {', '.join(names) or 'none'})")
    if missing:
        raise _usage(f"missing input for argument(s) {', '.join(missing)}")
    gm = {}
    for g in gm_args:
        if g.name in inputs:
            v = inputs[g.name]
            npd = E.np_dtype(g.dtype)
            if not (type(v) is np.ndarray and v.dtype == npd and v.shape == g.shape and v.flags.c_contiguous):
                v = _checked_array(g.name, npd, v, g.shape)
            gm[g.name] = v  # (an array of the argument's type and shape: what checking would return)
    scalars = {}
    for s in scalar_args:
        v = inputs[s.name]
        v = v.item() if isinstance(v, np.ndarray) and v.ndim == 0 or isinstance(v, np.generic) else v
        if not isinstance(v, (int, float)) or (isinstance(v, float) and s.dtype[0] in "iu" and not v.is_integer()):
            raise _usage(f"input '{s.name}': expected a number{' (an integer)' if s.dtype[0] in 'iu' else ''}, "
                         f"got {v!r}")
        scalars[s.name] = v
    return gm, scalars


def _checked_array(name: str, npd, value, shape: tuple):
    """``value`` as GM argument ``name``'s array, checked as ``ptoc --input`` checks it
    (reference.check_array: its element type, or raw bf16 bits, and its element count)."""
    from types import SimpleNamespace

    from pto_compiler.runtime import reference as golden

    return golden.check_array(SimpleNamespace(name=name, dtype=npd), value, shape)


def kernel_scalars(module, values: dict, entry: str | None = None) -> dict:
    """The scalar kernel arguments among golden-model input ``values``, as plain numbers."""
    from pto_compiler.runtime import reference as golden

    fn = golden.select_entry(module, entry)
    out = {}
    for s in golden.kernel_args(fn):
        if s.kind == "scalar" and s.name in values:
            v = values[s.name]
            out[s.name] = v.item() if hasattr(v, "item") else v
    return out


def gm_inputs(values: dict) -> dict:
    import numpy as np

    return {k: v for k, v in values.items() if isinstance(v, np.ndarray) and v.ndim > 0}


def golden_outputs(module, values: dict, entry: str | None = None, blocks: int = 1,
                   max_steps: int | None = None, target: str | None = None, sum_order: str = "exact") -> dict:
    """The golden model's outputs for ``--run``: the kernel evaluated once per block, in turn, on
    one GM, as the executor runs it (float sums in ``sum_order``, ``E.SUM_ORDERS``)."""
    from pto_compiler.runtime import reference as golden

    current = dict(values)
    out: dict = {}
    for b in range(blocks):
        out = golden.evaluate(module, current, entry, block_idx=b, block_num=blocks, max_steps=max_steps,
                              target=target, sum_order=sum_order)
        for name, arr in out.items():
            if name in current and not name.startswith("result"):
                current[name] = arr
    return out
