"""Library API (DESIGN.md §7): what ``ptoc`` does, as Python calls for other front ends.

    module = api.parse(text, "k.pto")             # or KernelBuilder(...).finish()
    program = api.compile(module, "a2a3")          # level="pto" | "placed" | "vf" | "program"
    result = api.run(program, inputs)              # outputs, stats, findings (races, deadlocks)
    check = api.check(module, "a2a3", inputs)      # --run: compile, run, compare with the golden model
    want = api.reference(module, inputs)           # the golden model alone

Every error is a :class:`PtocError` carrying located diagnostics (each quotes its source line);
an unexpected failure inside ptoc is a PtocError too, with exit code 70 and the original exception
as ``__cause__``.  The CLI (pto_compiler/cli.py) calls these same functions.  Nothing here keeps
state between calls: a module carries its own source texts, so threads may compile and run
different kernels at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pto_compiler.builder import KernelBuilder  # noqa: F401  (re-exported)
from pto_compiler.diagnostics import Diagnostic, PtocError, add_sources, api_boundary as _boundary, sources_of
from pto_compiler.targets import Target

LEVELS = ("pto", "placed", "vf", "program")
"""What :func:`compile` returns: the verified module, the placed module, the VF module (ascend950),
or the micro-instruction Program (``ptoc --emit`` levels)."""


def _usage(message: str) -> PtocError:
    return PtocError([Diagnostic(message)], exit_code=2)


# ---- reading and printing ---------------------------------------------------------------------


@_boundary
def parse(text: str, filename: str = "<stdin>"):
    """PTO-AS text -> xDSL ``ModuleOp`` (ops carry FileLineColLoc), PTOAS's memref form raised
    (passes/raise_memref.py).  What ``ptoc --emit`` and
    ``ptoc-opt`` print (``builtin.module``, the generic form, a ``.mlir`` file) is read with xDSL's
    parser instead, keeping printed ``loc(...)`` locations."""
    if _is_printed_ir(text, filename):
        return parse_printed(text, filename)
    from pto_compiler.frontend import parse_module
    from pto_compiler.passes.raise_memref import raise_module

    module = parse_module(text, filename)
    raise_module(module)  # PTOAS's lowered memref form, in ptoc's tile model (one model downstream)
    return module


def _is_printed_ir(text: str, filename: str) -> bool:
    """xDSL's printed forms start with ``builtin.module`` or a quoted generic op name; PTO-AS files
    start with ``module {``, ``func.func`` or bare statements."""
    if filename.endswith(".mlir"):
        return True
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("//"):
            return line.startswith(("builtin.module", '"'))
    return False


def parse_printed(text: str, filename: str = "<ir>", ctx=None):
    """Read back what :func:`print_module` printed (xDSL's parser, as ptoc-opt does); an op
    printed without ``loc(...)`` is located where it starts in ``text``, as mlir-opt locates it."""
    from xdsl.utils.exceptions import ParseError

    from pto_compiler.diagnostics import error_at

    _check_string_literals(text, filename)
    try:
        module = _locating_parser(ctx or context(), text, filename).parse_module()
    except ParseError as e:
        loc = e.span.get_location()
        raise error_at(e.msg, filename, loc.line, loc.col).quote({filename: text}) from None
    add_sources(module, {filename: text})
    return module


_STRING_OR_COMMENT = re.compile(r'//[^\n]*+|"(?:[^"\\\n\v\f]++|\\.)*+(?P<close>")?|[^"/]++|/')


def _check_string_literals(text: str, filename: str) -> None:
    """An unterminated string literal is a located error before xDSL's lexer sees it: the lexer's
    string regex nests quantifiers (``(?:[^"...]+|...)*``), so an unclosed ``"`` backtracks
    exponentially in the length of its line (a 95-character line took minutes).  Same rule
    as the lexer (a string ends at ``"`` and cannot cross a newline), matched with possessive
    quantifiers, so the scan is linear."""
    from pto_compiler.diagnostics import error_at

    for m in _STRING_OR_COMMENT.finditer(text):
        if m.group(0).startswith('"') and m.group("close") is None:
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            raise error_at("unterminated string literal (no closing '\"' on its line)", filename, line, col) \
                .quote({filename: text})


def _locating_parser(ctx, text: str, filename: str):
    from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr, UnknownLoc
    from xdsl.parser import Parser

    class LocatingParser(Parser):
        def parse_operation(self):
            start = self._current_token.span.get_location()
            op = super().parse_operation()
            if isinstance(op.location, UnknownLoc):
                op.location = FileLineColLoc(StringAttr(filename), IntAttr(start.line), IntAttr(start.col))
            return op

    return LocatingParser(ctx, text, filename)


def print_module(module, debuginfo: bool = False) -> str:
    """The module as ptoc prints it; ``debuginfo`` appends each op's ``loc(...)``
    (``--mlir-print-debuginfo``), which :func:`parse` reads back."""
    from io import StringIO

    from xdsl.printer import Printer

    out = StringIO()
    Printer(stream=out, print_debuginfo=debuginfo).print_op(module)
    return out.getvalue() + "\n"


def context():
    """An xDSL Context with every dialect ptoc prints (:func:`pto_compiler.dialects.context`)."""
    from pto_compiler.dialects import context as dialects_context

    return dialects_context()


def module_target_arch(module) -> str | None:
    """The module's ``pto.target_arch`` attribute ("a3", "a5", ...), if any."""
    attr = module.attributes.get("pto.target_arch")
    return getattr(attr, "data", None)


def target_of(module, target: Target | str | None = None) -> Target:
    """``target`` (a Target or a name/alias), else the module's ``pto.target_arch``, else a2a3."""
    from pto_compiler.diagnostics import did_you_mean, error_at
    from pto_compiler.targets import ALIASES, DEFAULT_TARGET, lookup_target

    if isinstance(target, Target):
        return target
    if target is not None:
        found = lookup_target(target)
        if found is None:
            raise _usage(f"unknown target '{target}'{did_you_mean(str(target).lower(), ALIASES)} "
                         f"(choose from {', '.join(ALIASES)})")
        return found
    arch = module_target_arch(module)
    if arch is None:
        return DEFAULT_TARGET
    found = lookup_target(arch)
    if found is None:
        raise error_at(f"unknown pto.target_arch \"{arch}\" (expected \"a2a3\", \"a3\" or \"a5\"); "
                       "use --target to override", next(iter(sources_of(module)), "<unknown>"))
    return found


@_boundary
def verify(module, target: Target | str | None = None) -> None:
    """Every op verifier, then the target's checks (pto-verify-target)."""
    from pto_compiler.verify import verify_module

    verify_module(module, target_of(module, target))


# ---- compiling -----------------------------------------------------------------------------------


@_boundary
def compile(module, target: Target | str | None = None, level: str = "program", *, entry: str | None = None,
            manual: bool = False, insert_sync: bool = True, vf_opt: str | None = None,
            scalars: dict | None = None, times=None, observe=None, decode: bool = False, in_place: bool = False):
    """``module`` through the default pipeline up to ``level`` (:data:`LEVELS`): a ModuleOp, or for
    "program" the :class:`~pto_compiler.runtime.program.Program` of the entry function
    (``program.to_text()`` is ``ptoc --emit program``).  ``module`` is not changed, unless
    ``in_place``: the passes then change it instead of a copy (for a caller that gives it away).

    ``manual``: every tile placed by hand (``--manual``); ``insert_sync=False`` runs the kernel's own
    set_flag/wait_flag (``--no-insert-sync``); ``vf_opt="none"`` skips the VF optimisations;
    ``scalars`` (integer kernel scalars by name) size GM arguments whose views depend on them;
    ``times`` (:class:`~pto_compiler.timing.HostTimes`) collects host time per pass;
    ``observe(pass_name, module)`` sees the IR after every pass; ``decode``: decode the program for
    the executor now (a run follows; else the first run does)."""
    from pto_compiler import pipeline

    if level not in LEVELS:
        raise _usage(f"unknown level '{level}' (choose from {', '.join(LEVELS)})")
    out = pipeline.compile_module(module, target_of(module, target), entry, manual=manual,
                                  stop_after=None if level == "program" else level, scalars=scalars,
                                  vf_opt=vf_opt, insert_sync=insert_sync, times=times, observe=observe,
                                  decode=decode, in_place=in_place)
    add_sources(out, sources_of(module))
    return out


@_boundary
def emit(module, target: Target | str | None = None, level: str = "program", *, entry: str | None = None,
         debuginfo: bool = False, **options) -> str:
    """The text ``ptoc --emit LEVEL`` prints: the module at ``level`` ("pto": as given; verify it
    first), or the program listing, of every function with a body when there are several, none is
    marked ``pto.entry`` and no ``entry`` is given.  ``options`` are :func:`compile`'s."""
    from pto_compiler import pipeline

    if level == "pto":
        return print_module(module, debuginfo)
    t = target_of(module, target)
    if level != "program":
        return print_module(compile(module, t, level, entry=entry, **options), debuginfo)
    kernels = _all_kernels(module) if entry is None else []
    if len(kernels) > 1:
        placed = compile(module, t, "vf" if t.has_vf else "placed", **options)
        return "\n".join(pipeline.lower_placed(placed, t, name).to_text() for name in kernels)
    return compile(module, t, entry=entry, **options).to_text()


def _all_kernels(module) -> list[str]:
    """The kernels a whole-file compile emits, as PTOAS compiles a file: every function marked
    ``pto.entry`` when several are, every function when none is (a run takes one: ``--entry``)."""
    funcs = [op for op in module.walk() if op.name == "func.func" and op.body.blocks]
    marked = [f for f in funcs if "pto.entry" in f.attributes]
    kernels = marked if marked else funcs
    return [f.sym_name.data for f in kernels] if len(kernels) > 1 else []


# ---- inputs ------------------------------------------------------------------------------------


@_boundary
def make_inputs(module, given: dict | None = None, seed: int = 0, *, entry: str | None = None,
                max_gm_bytes: int | None = None) -> dict:
    """Every kernel argument's input: the ``given`` ones, the others seeded random per argument
    (``ptoc --seed N --input ...``; integer scalars must be given).  Checked as :func:`reference`
    checks them."""
    from pto_compiler.runtime import reference as golden

    values = golden.make_inputs(module, seed, entry, dict(given or {}), max_gm_bytes)
    golden.check_inputs(module, values, entry)
    return values


@_boundary
def load_inputs(module, pairs, seed: int = 0, *, entry: str | None = None, max_gm_bytes: int | None = None) -> dict:
    """``--input NAME=FILE.npy`` / ``NAME=VALUE`` pairs -> every argument's input (the rest seeded)."""
    from pto_compiler.runtime import reference as golden

    return make_inputs(module, golden.load_inputs(module, pairs, entry, max_gm_bytes), seed, entry=entry,
                       max_gm_bytes=max_gm_bytes)


# ---- running -------------------------------------------------------------------------------------


@dataclass
class RunResult:
    outputs: dict
    """GM arrays by argument name after the run (shaped as the kernel views them)."""
    stats: object
    """The cycle model's :class:`~pto_compiler.runtime.cycles.CycleStats` (None with ``stats=False``)."""
    findings: list = field(default_factory=list)
    """Races, deadlocks and invalid accesses the hazard checker found
    (:class:`~pto_compiler.runtime.executor.Finding`, each located at its instruction's source)."""
    diagnostics: list = field(default_factory=list)
    """The findings as located diagnostics quoting their source lines (what ``ptoc --run`` prints,
    exit 4)."""


@_boundary
def run(program, inputs: dict, *, blocks: int = 1, max_steps: int | None = None, stats: bool = True,
        check: bool = True) -> RunResult:
    """Execute ``program`` on the NumPy executor.  ``inputs`` gives every GM argument (an array of
    its element type and element count) and every scalar argument by name; a missing or unknown
    name, another element type or count is a PtocError (exit 2), as ``ptoc --input`` refuses them.
    Races and deadlocks are returned in ``findings``, not raised."""
    import pto_compiler.pipeline as pipeline
    import pto_compiler.runtime.executor as X

    gm, scalars = pipeline.program_inputs(program, inputs)
    try:
        res = pipeline.run_program(program, gm, scalars, blocks=blocks, check=check, stats=stats,
                                   max_steps=max_steps, checked=True)
        outputs, st, findings = res.outputs, res.stats, res.findings
    except X.ExecutionError as e:  # a deadlock or an invalid access: the run stopped there
        outputs, st, findings = (dict(e.result.outputs) if e.result is not None else {}), None, list(e.findings)
    diagnostics = X.ExecutionError(findings).quote(sources_of(program)).diagnostics if findings else []
    return RunResult(outputs, st, findings, diagnostics)


@_boundary
def reference(module, inputs: dict, *, entry: str | None = None, blocks: int = 1,
              max_steps: int | None = None, target: Target | str | None = None) -> dict:
    """The golden model's outputs (GM outputs by name, then ``resultN``) on ``inputs``, checked as
    :func:`run` checks them (:func:`make_inputs` fills in seeded ones); ``max_steps`` bounds it as
    it bounds :func:`run`."""
    from pto_compiler import pipeline

    return pipeline.golden_outputs(module, inputs, entry, blocks, max_steps, target_of(module, target).name)


@dataclass
class CheckResult:
    """``ptoc --run``: the program, what it computed, the golden model's outputs, one comparison
    per output (bit-exact, or the float-sum tolerance), the cycle model's stats and the findings."""
    program: object
    inputs: dict
    outputs: dict
    reference: dict
    comparisons: list
    """Empty when the run stopped early (a deadlock or an invalid access in ``findings``)."""
    stats: object
    findings: list
    diagnostics: list

    @property
    def ok(self) -> bool:
        return not self.findings and all(c.ok for c in self.comparisons)


@_boundary
def check(module, target: Target | str | None = None, inputs: dict | None = None, *, seed: int = 0,
          entry: str | None = None, blocks: int = 1, max_steps: int | None = None,
          max_gm_bytes: int | None = None, times=None, **options) -> CheckResult:
    """Compile ``module`` for ``target``, run it on ``inputs`` (the missing ones seeded random with
    ``seed``, as ``ptoc --run --seed`` does) and compare with the golden model: its outputs, and
    what each ``pto.tprint`` printed.  ``options`` are :func:`compile`'s."""
    from pto_compiler import pipeline
    from pto_compiler.passes import tile_harness
    from pto_compiler.passes.lower_a2a3 import float_sum_outputs
    from pto_compiler.runtime import elementwise as E
    from pto_compiler.timing import HostTimes

    times = times or HostTimes()
    values = make_inputs(module, inputs, seed, entry=entry, max_gm_bytes=max_gm_bytes)
    run_module = tile_harness.harnessed(module, entry)  # a kernel that writes no GM: its tiles
    if run_module is not module:
        module = run_module
        values = make_inputs(module, values, seed, entry=entry, max_gm_bytes=max_gm_bytes)
    scalars = pipeline.kernel_scalars(module, values, entry)
    program = compile(module, target, entry=entry, scalars=scalars, times=times, decode=True, **options)
    with times.phase("execute"), E.recording_prints() as got_prints:
        res = run(program, {**pipeline.gm_inputs(values), **scalars}, blocks=blocks, max_steps=max_steps)
    with times.phase("golden"), E.recording_prints() as want_prints:
        want = reference(module, values, entry=entry, blocks=blocks, max_steps=max_steps, target=target)
    with times.phase("compare"):
        complete = all(f.kind in ("race", "sync") for f in res.findings)
        tolerant = float_sum_outputs(module, entry)
        comparisons = (pipeline.compare_outputs(res.outputs, want, tolerant)
                       + pipeline.compare_prints(got_prints, want_prints, tolerant)) if complete else []
    return CheckResult(program, values, res.outputs, want, comparisons, res.stats, res.findings, res.diagnostics)
