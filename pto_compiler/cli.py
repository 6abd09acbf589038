"""``ptoc``: the PTO-AS compiler driver (DESIGN.md §7).

    ptoc FILE|- [--target T] [--emit {pto,placed,vf,program}] [-o FILE] ...

Exit codes: 0 success, 1 a diagnostic in the input, 2 a usage or I/O error,
3 ``--run`` differs from the golden model, 4 the executor found a race or deadlock, 5 ``--run``
differs only where the float summation order decides (ill-conditioned),
70 an internal error (a bug in ptoc; the traceback is printed only with ``--debug``).

Imports are lazy on purpose: ``ptoc --version`` and usage errors must not pay for
importing xDSL, Lark or NumPy (~0.2 s). Only the standard library's ``argparse``,
``os`` and ``sys`` are loaded at module import time.
"""

from __future__ import annotations

import argparse
import os
import sys

__version__ = "0.1.0"
"""Must match ``version`` in pyproject.toml (tests/test_cli.py checks it)."""

PROG = "ptoc"

EXIT_OK = 0
EXIT_DIAGNOSTIC = 1
EXIT_USAGE = 2
EXIT_MISMATCH = 3
EXIT_HAZARD = 4
EXIT_ILL_CONDITIONED = 5
EXIT_INTERNAL = 70  # EX_SOFTWARE from sysexits.h

EMIT_LEVELS = ("pto", "placed", "vf", "program")
IMPLEMENTED_EMIT = ("pto", "placed", "vf", "program")
DEFAULT_EMIT = "program"

# Canonical target names and their aliases, duplicated here (and checked against
# pto_compiler.targets by tests/test_cli.py) so that building the parser does not
# import anything beyond argparse.
TARGET_CHOICES = ("ascend950", "a2a3", "a5", "950pr", "950dt", "a2", "a3")


class UsageError(Exception):
    """A usage or I/O problem: printed as one ``ptoc: error: ...`` line, exit 2."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line and never call ``sys.exit`` themselves."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message)


def _dist_version(name: str) -> str:
    """An installed distribution's version, without importing it.

    ``importlib.metadata`` costs ~70 ms on a cold start, so look for the package's
    ``NAME-VERSION.dist-info`` directory beside it first.
    """
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        site = os.path.dirname(list(spec.submodule_search_locations)[0])
        prefix = f"{name}-"
        try:
            entries = os.listdir(site)
        except OSError:
            entries = []
        for entry in entries:
            if entry.startswith(prefix) and entry.endswith(".dist-info"):
                return entry[len(prefix):-len(".dist-info")]
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001 - a version string must never crash ptoc
        return "not installed"


class _VersionAction(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print the ptoc and xDSL versions and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(version_string() + "\n")
        sys.stdout.flush()
        raise SystemExit(0)


def version_string() -> str:
    return f"ptoc {__version__} (xdsl {_dist_version('xdsl')})"


def _target_name(text: str) -> str:
    name = text.strip().lower()
    if name not in TARGET_CHOICES:
        from pto_compiler.diagnostics import did_you_mean

        raise argparse.ArgumentTypeError(
            f"unknown target '{text}'{did_you_mean(name, TARGET_CHOICES)} (choose from {', '.join(TARGET_CHOICES)})")
    return name



def _positive_int(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


MAX_BLOCKS = 4096
"""``--blocks`` bound: blocks run in turn, so more only multiplies the run time."""


def _blocks(text: str) -> int:
    value = _positive_int(text)
    if value > MAX_BLOCKS:
        raise argparse.ArgumentTypeError(f"at most {MAX_BLOCKS} blocks, got {value}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'")
    return value


def _named_input(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE.npy, got '{text}'")
    return name, path


def build_parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(
        prog=PROG,
        description="Compile a PTO-AS kernel for one target; with --run, execute the emitted "
                    "program on the bundled NumPy executor and check it against the golden model.",
        epilog="exit codes: 0 ok, 1 diagnostic in the input, 2 usage or I/O error, "
               "3 --run mismatch, 4 data race or deadlock, 5 --run ill-conditioned (only the float summation "
               "order decides the mismatch), 70 internal error",
    )
    p.add_argument("file", metavar="FILE", help="PTO-AS source file, or - for standard input")
    p.add_argument("--target", type=_target_name, metavar="{" + ",".join(TARGET_CHOICES) + "}",
                   help="target (default: the module's pto.target_arch, else a2a3); "
                        "wins over pto.target_arch")
    p.add_argument("--pto-arch", dest="target", type=_target_name, metavar="T", help="PTOAS's spelling of --target")
    p.add_argument("--emit", choices=EMIT_LEVELS, default=None,
                   help=f"IR level to print (default: {DEFAULT_EMIT})")
    p.add_argument("-o", "--output", metavar="FILE", help="write the output here instead of stdout")
    p.add_argument("--entry", metavar="NAME", help="the kernel function to compile/run")
    p.add_argument("--blocks", type=_blocks, metavar="N",
                   help=f"run block_idx 0..N-1 in turn on one GM (N <= {MAX_BLOCKS})")
    p.add_argument("--max-steps", type=_positive_int, metavar="N",
                   help="stop a run after N instructions plus loop trips (default 5,000,000)")
    p.add_argument("--max-gm-bytes", type=_positive_int, metavar="N",
                   help="refuse a run whose GM arguments total more than N bytes (default 64 MiB)")
    p.add_argument("--run", action="store_true",
                   help="execute and compare against the golden model (exit 3 on mismatch)")
    p.add_argument("--reference", action="store_true", help="run the golden reference model only")
    p.add_argument("--seed", type=_seed, metavar="N", help="seed for random inputs")
    p.add_argument("--input", type=_named_input, action="append", metavar="NAME=FILE.npy",
                   help="input for argument NAME (repeatable): FILE.npy for a GM, tile or vector argument; "
                        "NAME=NUMBER for a scalar; NAME=V0,V1,... (its lanes) for a vector")
    p.add_argument("--save-outputs", metavar="DIR", help="write each output as DIR/NAME.npy")
    p.add_argument("--stats", choices=("text", "json"), metavar="[json]",
                   help="print cycle-model counters (--stats or --stats json)")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome trace (Perfetto) of the run")
    p.add_argument("--vf-opt", choices=("none", "default"),
                   help="VF optimisation passes (ascend950)")
    p.add_argument("--manual", action="store_true",
                   help="manual placement: every tile must be bound by pto.tassign/addr=")
    p.add_argument("--pto-level", choices=("level1", "level2", "level3"),
                   help="PTOAS's spelling: level3 is --manual, level1 and level2 the default")
    sync = p.add_mutually_exclusive_group()
    sync.add_argument("--enable-insert-sync", action="store_true",
                      help="insert set_flag/wait_flag/pipe_barrier (ptoc's default; PTOAS's spelling)")
    sync.add_argument("--no-insert-sync", dest="insert_sync", action="store_false", default=True,
                      help="run the kernel's own set_flag/wait_flag as written; --run checks them")
    p.add_argument("--print-pipeline", action="store_true",
                   help="print the passes run, in order, on stderr")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass on stderr")
    p.add_argument("--print-ir-after", metavar="PASS", action="append", default=[],
                   help="print the IR after PASS on stderr (repeatable)")
    p.add_argument("--mlir-print-debuginfo", action="store_true",
                   help="print each op's loc(\"file\":line:col) with --emit pto/placed/vf; ptoc reads it back")
    p.add_argument("--quiet", action="store_true",
                   help="no progress line on stderr (shown on a terminal for runs longer than about a second)")
    p.add_argument("--debug", action="store_true",
                   help="show Python tracebacks of internal errors")
    p.add_argument("--version", action=_VersionAction)
    return p


def _normalise_argv(argv: list[str]) -> list[str]:
    """``--stats`` takes an optional word: rewrite ``--stats json`` -> ``--stats=json``
    and a bare ``--stats`` -> ``--stats=text``, so ``ptoc --stats k.pto`` never reads
    the file name as the format."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg == "--stats":
            if i + 1 < len(argv) and argv[i + 1] in ("json", "text"):
                out.append(f"--stats={argv[i + 1]}")
                i += 2
                continue
            out.append("--stats=text")
        else:
            out.append(arg)
        i += 1
    return out


# Options that only make sense when something runs (--run, --reference, --stats, --trace).
_RUN_OPTIONS = (("input", "--input"), ("seed", "--seed"), ("save_outputs", "--save-outputs"),
                ("blocks", "--blocks"), ("max_steps", "--max-steps"), ("max_gm_bytes", "--max-gm-bytes"))


def _check_implemented(args: argparse.Namespace) -> None:
    if args.emit is not None and args.emit not in IMPLEMENTED_EMIT:
        raise UsageError(f"--emit {args.emit} is not implemented yet")
    runs = args.run or args.reference or args.stats or args.trace
    for dest, flag in _RUN_OPTIONS:
        if getattr(args, dest) not in (None, False) and not runs:
            raise UsageError(f"{flag} needs --run, --reference, --stats or --trace")
    if args.reference and (args.run or args.stats or args.trace or args.blocks):
        raise UsageError("--reference runs only the golden model; it cannot be combined with "
                         "--run, --stats, --trace or --blocks")
    if args.file != "-":
        for flag, path in (("-o", args.output), ("--trace", args.trace)):
            if path not in (None, "-") and os.path.exists(path) and os.path.samefile(path, args.file):
                raise UsageError(f"{flag} '{path}' is the input file; refusing to overwrite the source")


def _read_input(path: str) -> tuple[str, str]:
    """(filename for diagnostics, text)."""
    if path == "-":
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        filename = "<stdin>"
    else:
        if os.path.isdir(path):
            raise UsageError(f"cannot read '{path}': is a directory")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise UsageError(f"cannot read '{path}': {e.strerror or e}") from None
        filename = path
    if isinstance(data, str):
        return filename, data
    try:
        return filename, data.decode("utf-8")
    except UnicodeDecodeError as e:
        from pto_compiler.diagnostics import error_at

        line_start = data.rfind(b"\n", 0, e.start) + 1
        column = len(data[line_start:e.start].decode("utf-8", errors="replace")) + 1
        raise error_at(f"input is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})",
                       filename, data.count(b"\n", 0, e.start) + 1, column).quote(
            {filename: data.decode("utf-8", errors="replace")}) from None


def _write_output(args: argparse.Namespace, text: str) -> None:
    """Write the result to ``-o`` or stdout (the progress line is erased first)."""
    progress = getattr(args, "progress", None)
    if progress is not None:
        progress.stop()
    path = args.output
    if path is None or path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise UsageError(f"cannot write '{path}': {e.strerror or e}") from None


def _warn(message: str, filename: str | None = None) -> None:
    prefix = f"{filename}: " if filename else f"{PROG}: "
    sys.stderr.write(f"{prefix}warning: {message}\n")


def select_target(cli_target: str | None, module, filename: str):
    """DESIGN.md §7: ``--target`` wins; else the module's ``pto.target_arch``; else a2a3
    (:func:`pto_compiler.api.target_of`).  Warns (one line) when both are given and disagree; a
    ``pto.target_arch`` that names no target is an input error unless ``--target`` overrides it."""
    from pto_compiler import api
    from pto_compiler.targets import lookup_target

    if cli_target is None:
        return api.target_of(module)
    target = api.target_of(module, cli_target)
    module_arch = api.module_target_arch(module)
    module_target = lookup_target(module_arch) if module_arch is not None else None
    if module_arch is not None and (module_target is None or module_target.name != target.name):
        _warn(f"--target {cli_target} overrides the module's pto.target_arch = "
              f"\"{module_arch}\"; compiling for {target.name}", filename)
    return target


def _find_function(module, name: str) -> bool:
    for op in module.walk():
        if op.name == "func.func":
            sym = getattr(op, "sym_name", None)
            if getattr(sym, "data", None) == name:
                return True
    return False


def few_collections() -> None:
    """Python's cyclic collector, at its default thresholds, re-walks the whole IR every few
    thousand allocations: a third of a 1,000-op compile and a share that grows with the kernel.
    What is alive now is frozen out of its view and it runs every 250,000 new objects (a compile's
    garbage is mostly freed by reference counting; cycles are still collected): a 1,000-op kernel's
    parse or passes keep fewer alive, so none of the IR they build is walked (at 100,000, two
    collections walked it: 30 ms of the 1,000-op ascend950 compile).  ptoc calls it again once
    the module is parsed and before it writes its output: the imports, the module and the program
    live until ptoc exits, and frozen, neither a later collection nor the interpreter's final one
    at exit walks them (0.1 s of a 1,000-op compile, 0.08 s of a one-line one)."""
    import gc

    gc.freeze()
    gc.set_threshold(250_000, 50, 100)


_OWN_PROCESS = False
"""True while ptoc runs as its process's command (:func:`command`)."""


def command(run, argv):
    """``run(argv)``.  With ``argv`` None ptoc is the process (its console script): what a run keeps
    lives until the exit, so :func:`kept_until_exit` freezes it.  Given ``argv``, a program that
    lives on calls ptoc in-process (tests, bench/fuzz.py): frozen, every module it compiled would
    stay in memory (bench/fuzz.py grew by 1.3 GB in 5 minutes), so its collector is left alone."""
    global _OWN_PROCESS
    if argv is not None:
        return run(list(argv))
    _OWN_PROCESS = True
    try:
        return run(sys.argv[1:])
    finally:
        _OWN_PROCESS = False


def kept_until_exit() -> None:
    """:func:`few_collections` when ptoc is the process (:func:`command`)."""
    if _OWN_PROCESS:
        few_collections()


def _compile(args: argparse.Namespace) -> int:
    from pto_compiler.diagnostics import quoting
    from pto_compiler.timing import HostTimes

    kept_until_exit()
    filename, text = _read_input(args.file)
    times = HostTimes()
    with quoting({filename: text}), Progress(times, not args.quiet and sys.stderr.isatty()) as args.progress:
        return _compile_text(args, filename, text, times)


class Progress:
    """``ptoc: PHASE... Ns`` on stderr, rewritten in place every quarter second once a run has
    taken more than :attr:`AFTER` seconds, and erased at the end; only when ``enabled`` (stderr is
    a terminal and no ``--quiet``)."""

    AFTER = 1.0

    def __init__(self, times, enabled: bool):
        import threading

        self.times, self.enabled, self.shown = times, enabled, False
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True) if enabled else None

    def line(self, elapsed: float) -> str:
        return f"\r{PROG}: {self.times.current or 'starting'}... {elapsed:.0f}s\x1b[K"

    def _loop(self) -> None:
        import time

        start = time.monotonic()
        while not self.done.wait(0.25):
            elapsed = time.monotonic() - start
            if elapsed > self.AFTER:
                sys.stderr.write(self.line(elapsed))
                sys.stderr.flush()
                self.shown = True

    def __enter__(self):
        if self.thread is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop and erase the line (before ptoc prints its result)."""
        if self.thread is not None and not self.done.is_set():
            self.done.set()
            self.thread.join()
            if self.shown:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()


def _compile_text(args: argparse.Namespace, filename: str, text: str, times) -> int:
    from pto_compiler import api

    from pto_compiler.diagnostics import add_sources

    with times.phase("parse"):
        module = api.parse(text, filename)
    kept_until_exit()
    add_sources(module, {filename: text})  # api.parse does too; errors about the module name its file
    target = select_target(args.target, module, filename)
    with times.pass_("verify"):
        api.verify(module, target)
        if args.pto_level is not None:
            from pto_compiler.verify import verify_pto_level

            verify_pto_level(module, args.pto_level, args.enable_insert_sync)
    if args.entry is not None and not _find_function(module, args.entry):
        raise UsageError(f"--entry: no function named '{args.entry}' in {filename}")
    if args.print_pipeline or args.print_ir_after:
        _check_pipeline(args, module, target)
    if args.reference:
        return _reference(args, module)
    if args.run or args.stats or args.trace:
        return _execute(args, module, target, times)
    listing = api.emit(module, target, args.emit or DEFAULT_EMIT, entry=args.entry,
                       debuginfo=args.mlir_print_debuginfo, in_place=True, **_options(args))  # printed, then dropped
    kept_until_exit()
    _write_output(args, listing)
    return EXIT_OK


def _check_pipeline(args: argparse.Namespace, module, target) -> None:
    """``--print-pipeline``, and ``--print-ir-after`` naming a pass of the pipeline."""
    from pto_compiler import pipeline
    from pto_compiler.diagnostics import did_you_mean

    stop = "pto" if args.reference else (None if args.run or args.stats or args.trace else args.emit)
    names = pipeline.pass_names(module, target, stop, args.vf_opt, args.insert_sync)
    for name in args.print_ir_after:
        if name not in names:
            raise UsageError(f"--print-ir-after: '{name}' is not a pass of this pipeline"
                             f"{did_you_mean(name, names)} (passes: {', '.join(names)})")
    if args.print_pipeline:
        sys.stderr.write(f"{PROG}: pipeline ({target.name}): {','.join(names)}\n")


def _options(args: argparse.Namespace) -> dict:
    """The pipeline options of the command line (:func:`pto_compiler.api.compile` keywords)."""
    return {"manual": args.manual or args.pto_level == "level3", "vf_opt": args.vf_opt,
            "insert_sync": args.insert_sync, "observe": _ir_printer(args)}


def _ir_printer(args: argparse.Namespace):
    """``--print-ir-after-all`` / ``--print-ir-after=PASS``: print the module after those passes on
    stderr, headed as mlir-opt heads them."""
    if not (args.print_ir_after_all or args.print_ir_after):
        return None
    from pto_compiler import api

    def observe(name: str, module) -> None:
        if args.print_ir_after_all or name in args.print_ir_after:
            sys.stderr.write(f"// -----// IR Dump After {name} //----- //\n"
                             f"{api.print_module(module, args.mlir_print_debuginfo)}\n")

    return observe


def _execute(args: argparse.Namespace, module, target, times) -> int:
    """``--run`` / ``--stats`` / ``--trace``: compile, execute on seeded or given inputs, compare
    with the golden model (``--run``), report the cycle model and where the host time went."""
    import json

    from pto_compiler import api, pipeline
    from pto_compiler.diagnostics import format_diagnostic
    from pto_compiler.runtime import reference as golden
    # the executor's modules load before the timed phases (host_seconds.execute is the run alone)
    from pto_compiler.runtime import cycles, executor, vf_executor  # noqa: F401

    if args.run:  # a kernel that writes no GM runs in the harness: its tiles are inputs and outputs
        from pto_compiler.passes.tile_harness import harnessed

        module = harnessed(module, args.entry)
    values = api.load_inputs(module, args.input or (), args.seed or 0, entry=args.entry,
                             max_gm_bytes=args.max_gm_bytes)
    if target.has_vf and _uses_vf(module) and (args.run or args.reference):
        return _execute_vf_kernel(args, module, target, values)
    run_options = {"blocks": args.blocks or 1, "max_steps": args.max_steps}
    out: list[str] = []
    code = EXIT_OK
    if args.run:
        res = api.check(module, target, values, entry=args.entry, times=times, max_gm_bytes=args.max_gm_bytes,
                        **run_options, **_options(args))
        program, findings, saved = res.program, res.findings, res.outputs
        ill = {} if res.ok else pipeline.order_decided(module, res, target.name, args.entry, args.blocks or 1)
        out.extend(c.line(ill.get(c.name)) + "\n" for c in res.comparisons)
        if any(not c.ok and c.name not in ill for c in res.comparisons):
            code = EXIT_MISMATCH
        elif ill:
            code = EXIT_ILL_CONDITIONED
        saved = {name: res.outputs[name] for name in res.reference if name in res.outputs}
    else:
        scalars = pipeline.kernel_scalars(module, values, args.entry)
        program = api.compile(module, target, entry=args.entry, scalars=scalars, times=times, decode=True,
                              **_options(args))
        with times.phase("execute"):
            res = api.run(program, {**pipeline.gm_inputs(values), **scalars}, **run_options)
        findings, saved = res.findings, res.outputs
    if args.emit is not None:
        out.insert(0, program.to_text())
    if args.save_outputs:
        golden.save_outputs(saved, args.save_outputs)
    if res.stats is not None and args.stats == "json":
        out.append(json.dumps({**res.stats.to_dict(), "host_seconds": times.to_dict()}, indent=2) + "\n")
    elif res.stats is not None and args.stats:
        out.append(res.stats.to_text() + "\n" + times.to_text() + "\n")
    if args.trace and res.stats is not None:
        try:
            with open(args.trace, "w", encoding="utf-8") as f:
                json.dump(res.stats.chrome_trace(), f)
        except OSError as e:
            raise UsageError(f"cannot write '{args.trace}': {e.strerror or e}") from None
    kept_until_exit()
    _write_output(args, "".join(out))
    if findings:
        from pto_compiler.diagnostics import quote_from_files

        for diag in quote_from_files(res.diagnostics):
            sys.stderr.write(format_diagnostic(diag) + "\n")
        code = EXIT_HAZARD
    return code


def _uses_vf(module) -> bool:
    from pto_compiler.runtime.vf_executor import uses_vf

    return uses_vf(module)


def _execute_vf_kernel(args: argparse.Namespace, module, target, values) -> int:
    """``--run`` of a kernel written with ``vf`` ops (no tile-level golden model): run it with
    ``run_vf_kernel``, summarise and save its outputs, compare nothing (exit 0; 4 on a race)."""
    from pto_compiler.diagnostics import format_diagnostic
    from pto_compiler.runtime import reference as golden
    from pto_compiler.runtime import vf_executor as vx
    from pto_compiler.runtime.executor import ExecutionError

    if args.stats or args.trace or (args.blocks or 1) > 1:
        raise UsageError("--run with --stats, --trace or --blocks is not available for kernels written in vf"
                         " (--stats alone runs the compiled program)")
    if args.emit is not None:
        raise UsageError("--emit with --run is not available for kernels written in vf")
    code = EXIT_OK
    try:
        res = vx.run_vf_kernel_result(module, values, target, entry=args.entry)
        findings = []
    except ExecutionError as e:
        if e.result is None:
            raise
        res, findings = e.result, e.findings
        code = EXIT_HAZARD
    out = [line + "\n" for line in golden.describe_outputs(res.outputs)]
    out.append("nothing compared: a kernel written in vf has no tile-level golden model "
               "(outputs above were computed by the VF executor)\n")
    if args.save_outputs:
        golden.save_outputs(res.outputs, args.save_outputs)
    _write_output(args, "".join(out))
    if findings:
        for diag in ExecutionError(findings).diagnostics:
            sys.stderr.write(format_diagnostic(diag) + "\n")
    return code


def _reference(args: argparse.Namespace, module) -> int:
    """``--reference``: run the golden model on seeded or given inputs; summarise and save outputs."""
    from pto_compiler import api
    from pto_compiler.runtime import reference as golden

    values = api.load_inputs(module, args.input or (), args.seed or 0, entry=args.entry)
    outputs = api.reference(module, values, entry=args.entry, max_steps=args.max_steps)
    if args.save_outputs:
        golden.save_outputs(outputs, args.save_outputs)
    _write_output(args, "".join(line + "\n" for line in golden.describe_outputs(outputs)))
    return EXIT_OK


def _print_ptoc_error(err) -> None:
    from pto_compiler.diagnostics import format_diagnostic, quote_from_files

    if not err.diagnostics:
        sys.stderr.write("error: " + (str(err.args[0]) if err.args else "error") + "\n")
        return
    if err.exit_code == EXIT_USAGE and all(not d.located and d.filename == "<unknown>" for d in err.diagnostics):
        for diag in err.diagnostics:  # a usage error raised by the library: one `ptoc: error:` line
            sys.stderr.write(f"{PROG}: error: {diag.message}\n")
        return
    for diag in quote_from_files(err.diagnostics):
        sys.stderr.write(format_diagnostic(diag) + "\n")


def _internal_error(exc: BaseException, debug: bool) -> int:
    msg = str(exc).strip().splitlines()
    first = msg[0] if msg else ""
    sys.stderr.write(f"{PROG}: internal error: {type(exc).__name__}: {first}\n")
    if debug:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    else:
        sys.stderr.write(f"{PROG}: rerun with --debug for the traceback\n")
    sys.stderr.write(f"{PROG}: this is a bug in ptoc {__version__}; please report this bug "
                     "with the input file and the command line\n")
    return EXIT_INTERNAL


def main(argv: list[str] | None = None) -> int:
    """The ``ptoc`` command (:func:`command`)."""
    return command(_main, argv)


def _main(argv: list[str]) -> int:
    debug = "--debug" in argv
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(_normalise_argv(argv))
        except SystemExit as e:  # --help / --version
            return e.code if isinstance(e.code, int) else EXIT_OK
        debug = args.debug
        _check_implemented(args)
        return _compile(args)
    except UsageError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except BrokenPipeError:
        # the reader of our stdout went away (`ptoc k.pto | head`): not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stop the interpreter's flush
        except OSError:
            pass
        return EXIT_OK
    except Exception as e:  # noqa: BLE001 - the one place that turns bugs into exit 70
        from pto_compiler.diagnostics import PtocError

        if isinstance(e, PtocError) and e.exit_code == EXIT_INTERNAL and e.__cause__ is not None:
            return _internal_error(e.__cause__, debug)  # the API's wrapping of a bug in ptoc
        if isinstance(e, PtocError):
            _print_ptoc_error(e)
            return e.exit_code
        return _internal_error(e, debug)
    except BaseException as e:  # noqa: BLE001 - e.g. xDSL's ArgSpecParseError; never SystemExit here
        if isinstance(e, SystemExit):
            raise
        return _internal_error(e, debug)


if __name__ == "__main__":
    sys.exit(main())
