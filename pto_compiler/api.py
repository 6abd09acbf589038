"""Library API (DESIGN.md §7): parse, verify, print, reference, lower, run.

Errors are raised as :class:`pto_compiler.diagnostics.PtocError`.
"""

from __future__ import annotations

from pto_compiler.diagnostics import PtocError  # noqa: F401  (re-exported)
from pto_compiler.targets import Target


def parse(text: str, filename: str = "<stdin>"):
    """PTO-AS text -> verified-structure xDSL ``ModuleOp`` (ops carry FileLineColLoc).  What
    ``ptoc --emit`` and ``ptoc-opt`` print (``builtin.module``, the generic form, a ``.mlir`` file)
    is read with xDSL's parser instead (:func:`parse_printed`)."""
    if _is_printed_ir(text, filename):
        return parse_printed(text, filename)
    from pto_compiler.frontend import parse_module

    return parse_module(text, filename)


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


def module_target_arch(module) -> str | None:
    """The module's ``pto.target_arch`` attribute ("a3", "a5", ...), if any."""
    attr = module.attributes.get("pto.target_arch")
    return getattr(attr, "data", None)


def verify(module, target: Target) -> None:
    """Run every op verifier, then the target's checks (pto-verify-target). Raises PtocError."""
    from pto_compiler.verify import verify_module

    verify_module(module, target)


def print_module(module) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def context():
    """An xDSL Context with every dialect ptoc prints (:func:`pto_compiler.dialects.context`)."""
    from pto_compiler.dialects import context as dialects_context

    return dialects_context()


def parse_printed(text: str, filename: str = "<ir>"):
    """Read back what :func:`print_module` printed (xDSL's own parser, as ptoc-opt does)."""
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError

    from pto_compiler.diagnostics import error_at

    try:
        return Parser(context(), text, filename).parse_module()
    except ParseError as e:
        loc = e.span.get_location()
        raise error_at(e.msg, filename, loc.line, loc.col) from None


def reference(module, seed: int = 0, inputs=(), entry: str | None = None, save_dir: str | None = None):
    """Run the golden model: returns (outputs by name, one summary line per output).

    ``inputs`` are ``(NAME, FILE.npy or scalar text)`` pairs as ``--input`` gives them, or a dict
    of arrays/scalars; everything not given is seeded random (integer scalars must be given).
    """
    from pto_compiler.runtime import reference as golden

    if isinstance(inputs, dict):
        values = golden.make_inputs(module, seed, entry, dict(inputs))
    else:
        values = golden.prepare_inputs(module, seed, list(inputs), entry)
    outputs = golden.evaluate(module, values, entry)
    if save_dir is not None:
        golden.save_outputs(outputs, save_dir)
    return outputs, golden.describe_outputs(outputs)


def lower(module, target: Target | str = "a2a3", entry: str | None = None, manual: bool = False,
          scalars: dict | None = None):
    """The a2a3 micro-instruction :class:`~pto_compiler.runtime.program.Program` of ``module``'s
    entry function, through the default pipeline (verify, pto-bufferize for L1, expand mode, tmp
    strategy, plan memory, insert sync, pto-lower-a2a3; see pto_compiler.pipeline).  ``module`` is
    not changed.  ``scalars`` (integer kernel scalars by name) size GM arguments whose views depend
    on them.  ``program.to_text()`` is what ``ptoc --emit program`` prints."""
    from pto_compiler import pipeline
    from pto_compiler.diagnostics import Diagnostic
    from pto_compiler.targets import lookup_target

    if isinstance(target, str):
        t = lookup_target(target)
        if t is None:
            raise PtocError([Diagnostic(f"unknown target '{target}'")], exit_code=2)
        target = t
    return pipeline.compile_module(module, target, entry, manual=manual, scalars=scalars)


def run(program, inputs: dict, scalars: dict | None = None, blocks: int = 1, check: bool = True):
    """Execute ``program`` on the NumPy executor: returns ``(outputs, stats)``, the GM arrays by
    argument name after the run and the cycle model's
    :class:`~pto_compiler.runtime.cycles.CycleStats`.  A data race or deadlock found by the hazard
    checker (``check``) raises :class:`~pto_compiler.runtime.executor.ExecutionError` (a PtocError,
    exit code 4) carrying the findings."""
    from pto_compiler import pipeline
    from pto_compiler.runtime.executor import ExecutionError

    res = pipeline.run_program(program, inputs, scalars, blocks=blocks, check=check)
    if res.findings:
        raise ExecutionError(res.findings, res.exec_result)
    return res.outputs, res.stats
