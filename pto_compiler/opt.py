"""``ptoc-opt``: run any list of passes over printed IR, like ``mlir-opt`` (DESIGN.md §3, §5).

    ptoc-opt file.mlir -p 'pto-bufferize,pto-plan-memory{...}' [--target T] [-o out.mlir]
    ptoc-opt kernel.pto -p ...        (a .pto file is read with ptoc's own PTO-AS front end)

An ``xDSLOptMain`` subclass (reference/xdsl_guide.md §4.2). On top of ``xdsl-opt``:

* dialects ``pto`` (``pto_compiler.dialects.pto.PTO``), ``vf``
  (``pto_compiler.dialects.vf.VF``) and ``a2a3`` (``pto_compiler.dialects.a2a3.A2A3``) are registered lazily, each only if its module exists;
* passes come from ``pto_compiler.passes.get_all_passes()`` (name -> zero-argument factory
  returning the pass class), if that function exists;
* ``--target T`` (a ptoc target or alias: a2a3, ascend950, a5, ...) is handed to every pass
  in the pipeline that has a ``target`` option, as the canonical name, unless the pass spec
  sets it itself (``pto-plan-memory{target=a2a3}`` wins). xDSL's own ``-t`` keeps its
  meaning: the output format (``-t mlir``);
* every user-facing error is one ``ptoc-opt: error: ...`` report without a traceback:
  parse errors keep xDSL's located message, verifier and pass failures print their
  message, a bad ``-p`` string or an unknown pass or option too; exit 1. Unreadable
  files and bad flags exit 2. Anything else is an internal error (exit 70, traceback
  only with ``--debug``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence

from xdsl.utils.arg_spec import ArgSpecParseError, parse_pipeline
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from pto_compiler.cli import __version__, command, kept_until_exit

PROG = "ptoc-opt"

# (dialect name, module, attribute holding the xdsl Dialect)
_DIALECTS = (
    ("pto", "pto_compiler.dialects.pto", "PTO"),
    ("vf", "pto_compiler.dialects.vf", "VF"),
    ("a2a3", "pto_compiler.dialects.a2a3", "A2A3"),
)


def _module_exists(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _dialect_factory(module: str, attr: str) -> Callable[[], object]:
    def load():
        import importlib

        return getattr(importlib.import_module(module), attr)

    return load


def ptoc_passes() -> dict[str, Callable[[], type]]:
    """``pto_compiler.passes.get_all_passes()``, or ``{}`` while no pass exists yet."""
    import pto_compiler.passes as passes_pkg

    get_all = getattr(passes_pkg, "get_all_passes", None)
    if get_all is None:
        return {}
    return dict(get_all())


class _UsageExit(Exception):
    """A bad flag: one ``ptoc-opt: error:`` line, exit 2."""


def _target_type(text: str) -> str:
    """Canonical target name for ``--target`` (case-insensitive aliases)."""
    from pto_compiler.targets import ALIASES, lookup_target

    target = lookup_target(text)
    if target is None:
        raise argparse.ArgumentTypeError(
            f"unknown target '{text}' (choose from {', '.join(ALIASES)})")
    return target.name


class PtocOptMain(xDSLOptMain):
    version_format = f"{PROG} {__version__} (xdsl {{xdsl_version}})"

    def __init__(self, description: str = "ptoc-opt: run xDSL passes over pto/vf IR",
                 args: Sequence[str] | None = None):
        super().__init__(description, args)

    # ---- registration -------------------------------------------------------------
    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        registered = set(self.ctx.registered_dialect_names)
        for name, module, attr in _DIALECTS:
            if name not in registered and _module_exists(module):
                self.ctx.register_dialect(name, _dialect_factory(module, attr))

    def register_all_passes(self) -> None:
        super().register_all_passes()  # canonicalize, cse, dce, ...
        for name, factory in ptoc_passes().items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()  # "mlir": xDSL's parser

        def parse_pto(io):
            from pto_compiler import api

            return api.parse(io.read().decode("utf-8"), self.get_input_name())

        self.available_frontends["pto"] = parse_pto

        def parse_mlir(io):
            from pto_compiler import api

            return api.parse_printed(io.read().decode("utf-8"), self.get_input_name(), self.ctx)

        self.available_frontends["mlir"] = parse_mlir

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)

        def one_line_error(message: str):
            raise _UsageExit(message)

        arg_parser.error = one_line_error  # type: ignore[method-assign]
        arg_parser.prog = PROG
        # xDSL's "-t/--target" is the output format; keep "-t" for it and give "--target"
        # the meaning it has in ptoc: the hardware target.
        # (a "resolve" group takes "--target" away from xDSL's action and leaves it "-t").
        ptoc_group = arg_parser.add_argument_group("ptoc options", conflict_handler="resolve")
        ptoc_group.add_argument(
            "--target", dest="pto_target", type=_target_type, default=None, metavar="T",
            help="ptoc target (a2a3, ascend950 or an alias) for every pass with a "
                 "'target' option (an explicit pass{target=...} wins); "
                 "-t selects the output format")
        ptoc_group.add_argument("--debug", action="store_true",
                                help="show the Python traceback of internal errors")
        ptoc_group.add_argument("--mlir-print-debuginfo", dest="print_debuginfo", action="store_true",
                                help="print each op's loc(...) (mlir-opt's spelling of --print-debuginfo)")

    # ---- input and diagnostics ------------------------------------------------------
    input_text: str | None = None

    def get_input_stream(self):
        """xDSL's stream, read once and kept, so diagnostics can quote the input (also stdin)."""
        import io

        f, ext = super().get_input_stream()
        data = f.read()
        if f is not sys.stdin.buffer:
            f.close()
        self.input_text = data.decode("utf-8", errors="replace")
        return io.BytesIO(data), ext

    def diagnostics_of(self, e: BaseException) -> list:
        """``e``'s located diagnostics, quoting the input (or a file a ``loc(...)`` names)."""
        from pto_compiler.diagnostics import PtocError, quote_from_files

        diags = _diagnostics(e, self.get_input_name())
        if self.input_text is not None:
            diags = PtocError(diags).quote({self.get_input_name(): self.input_text}).diagnostics
        return quote_from_files(diags)

    def verify_diagnostics(self) -> int:
        """``--verify-diagnostics``: the errors produced must be exactly the input's
        ``// expected-error {{...}}`` annotations (mlir-opt's rules; see pto_compiler/expected.py)."""
        from pto_compiler.expected import check_expected

        produced = []
        self.args.verify_diagnostics = False  # xDSL's run would print the error and carry on
        try:
            self.run()
        except (DiagnosticException, ParseError) as e:
            produced = self.diagnostics_of(e)
        problems = check_expected(self.input_text or "", self.get_input_name(), produced)
        from pto_compiler.diagnostics import format_diagnostic

        for diag in problems:
            sys.stderr.write(format_diagnostic(diag) + "\n")
        return 1 if problems else 0

    # ---- pipeline -----------------------------------------------------------------
    def setup_pipeline(self) -> None:
        from pto_compiler.diagnostics import did_you_mean

        for spec in parse_pipeline(self.args.passes):
            if spec.name not in self.available_passes:
                raise _PassError(f"unknown pass '{spec.name}'{did_you_mean(spec.name, self.available_passes)}")
        super().setup_pipeline()
        self.pipeline = dataclasses.replace(self.pipeline, callback=_verify_located(self.pipeline.callback))
        target = getattr(self.args, "pto_target", None)
        if target is None or not self.pipeline.passes:
            return
        specs = list(parse_pipeline(self.args.passes))
        passes = []
        for pass_, spec in zip(self.pipeline.passes, specs, strict=True):
            given = {k.replace("-", "_") for k in spec.parameters}
            if (dataclasses.is_dataclass(pass_)
                    and "target" in {f.name for f in dataclasses.fields(pass_)}
                    and "target" not in given):
                pass_ = dataclasses.replace(pass_, target=target)
            passes.append(pass_)
        self.pipeline = dataclasses.replace(self.pipeline, passes=tuple(passes))


class _PassError(Exception):
    """An unknown pass in ``-p``: one ``ptoc-opt: error:`` line, exit 1."""


def _verify_located(callback):
    """xDSL's pipeline callback verifies with ``module.verify()``, which says neither where nor
    which op; verify first with ptoc's located verifier (every failing op, each at its loc)."""

    def verify_then(previous, module, next_pass) -> None:
        from pto_compiler.diagnostics import PtocError
        from pto_compiler.dialects.verify_tables import unchanged_ir
        from pto_compiler.verify import op_diagnostics

        diags = op_diagnostics(module)
        if diags:
            raise PtocError(diags)
        if callback is not None:
            with unchanged_ir():  # xDSL's module.verify()
                callback(previous, module, next_pass)

    return verify_then


def _error(message: str) -> None:
    sys.stderr.write(f"{PROG}: error: {message.rstrip()}\n")


def _internal_error(exc: BaseException, debug: bool) -> int:
    lines = str(exc).strip().splitlines()
    sys.stderr.write(f"{PROG}: internal error: {type(exc).__name__}: {lines[0] if lines else ''}\n")
    if debug:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    else:
        sys.stderr.write(f"{PROG}: rerun with --debug for the traceback\n")
    sys.stderr.write(f"{PROG}: this is a bug in ptoc {__version__}; please report this bug\n")
    return 70


def main(argv: Sequence[str] | None = None) -> int:
    """The ``ptoc-opt`` command (:func:`command`)."""
    return command(_main, argv)


def _main(argv: list[str]) -> int:
    debug = "--debug" in argv
    opt = None
    try:
        opt = PtocOptMain(args=argv)
        debug = opt.args.debug
        if opt.args.verify_diagnostics:
            return opt.verify_diagnostics()
        opt.run()
        kept_until_exit()  # what it made lives until it exits: the final collection need not walk it
        return 0
    except SystemExit as e:  # --help, --version
        return e.code if isinstance(e.code, int) else 0
    except _UsageExit as e:
        _error(str(e))
        return 2
    except OSError as e:  # the input or -o file cannot be opened
        name = f" '{e.filename}'" if e.filename else ""
        _error(f"cannot open{name}: {e.strerror or e}")
        return 2
    except (DiagnosticException, ParseError) as e:  # PtocError, VerifyException, PassFailedException, ...
        from pto_compiler.diagnostics import format_diagnostic

        for diag in opt.diagnostics_of(e) if opt is not None else _diagnostics(e, "<unknown>"):
            if diag.located:
                sys.stderr.write(format_diagnostic(diag) + "\n")
            else:
                _error(diag.message)
        return getattr(e, "exit_code", 1)
    except (ValueError, _PassError) as e:  # unknown pass, bad pass option, unknown file extension
        _error(str(e))
        return 1
    except ArgSpecParseError as e:  # a BaseException: bad -p string
        _error(str(e))
        return 1
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except Exception as e:  # noqa: BLE001
        return _internal_error(e, debug)


def _diagnostics(e: BaseException, filename: str) -> list:
    """The located diagnostics of a failure: ptoc's own, xDSL's parse error at its position, or
    the first line of an xDSL diagnostic (not its dump of the whole module)."""
    from pto_compiler.diagnostics import Diagnostic, PtocError

    if isinstance(e, PtocError):
        return list(e.diagnostics)
    if isinstance(e, ParseError):
        loc = e.span.get_location()
        return [Diagnostic(e.msg, filename, loc.line, loc.col)]
    lines = str(e).strip().splitlines()
    return [Diagnostic(lines[0] if lines else type(e).__name__)]


if __name__ == "__main__":
    sys.exit(main())
