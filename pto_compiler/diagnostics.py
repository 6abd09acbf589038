"""MLIR-shaped diagnostics: ``file:line:col: error: message``, the source line and a caret.

Every user-facing failure in ptoc is a :class:`PtocError` carrying one or more
:class:`Diagnostic` records.  The CLI formats them with :func:`format_diagnostic`;
library users get the exception and can format or inspect it themselves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from xdsl.utils.exceptions import DiagnosticException


@dataclass(frozen=True)
class Diagnostic:
    message: str
    filename: str = "<unknown>"
    line: int = 0
    column: int = 0
    severity: str = "error"
    source_line: str | None = None
    """The text of ``line`` in ``filename``, quoted under the message: the diagnostic carries its
    source (no process-wide table of every text seen), filled in by :func:`quoting`."""

    @property
    def located(self) -> bool:
        return self.line > 0


@dataclass
class PtocError(DiagnosticException):
    """One class for every error ptoc reports about its input (DESIGN.md §7).

    A DiagnosticException, so xDSL's own drivers (ptoc-opt) report it as a diagnostic too.
    """

    diagnostics: list[Diagnostic] = field(default_factory=list)
    exit_code: int = 1

    def __post_init__(self) -> None:
        super().__init__(self.diagnostics[0].message if self.diagnostics else "error")

    def __str__(self) -> str:
        return "\n".join(format_diagnostic(d) for d in self.diagnostics)

    def quote(self, sources: Mapping[str, str]) -> PtocError:
        """Give each located diagnostic of a file in ``sources`` (name -> text) its source line."""
        split: dict[str, list[str]] = {}
        for i, d in enumerate(self.diagnostics):
            text = sources.get(d.filename)
            if d.source_line is None and d.located and text is not None:
                lines = split.setdefault(d.filename, text.split("\n"))
                if d.line <= len(lines):
                    self.diagnostics[i] = replace(d, source_line=lines[d.line - 1])
        return self


def warn(op, message: str, given: set) -> None:
    """A located warning at ``op`` on stderr, quoting its source line (legal code PTOAS accepts
    whose result is likely not what was meant), unless ``given`` holds it already."""
    import sys

    filename, line, col = location_of(op)
    if (filename, line, col, message) in given:
        return
    given.add((filename, line, col, message))
    diag, = quote_from_files([Diagnostic(f"'{op.name}' op {message}", filename, line, col, severity="warning")])
    sys.stderr.write(format_diagnostic(diag) + "\n")


def error_at(message: str, filename: str = "<unknown>", line: int = 0, column: int = 0) -> PtocError:
    return PtocError([Diagnostic(message, filename, line, column)])


def location_of(op) -> tuple[str, int, int]:
    """(file, line, col) of an xDSL op whose location the front end set, else ("<unknown>", 0, 0)."""
    loc = getattr(op, "location", None)
    loc = getattr(loc, "location", loc)  # a NameLoc (the origin of a lowered op) wraps one
    filename = getattr(loc, "filename", None)
    if filename is None:
        return ("<unknown>", 0, 0)
    return (filename.data, loc.line.data, loc.column.data)


def cube_space_message(v, loc: str) -> str:
    """A vector op given a tile outside UB (mat/left/right/acc/bias/scaling: the cube half)."""
    return (f"tile {value_name(v)} is in the cube space (loc={loc}), not in the vector unit's UB: "
            "this operation reads and writes vec tiles (loc=vec) only")


def op_error(op, message: str) -> PtocError:
    """A diagnostic located at ``op``, worded as MLIR does: ``'pto.tadd' op message``."""
    filename, line, col = location_of(op)
    return error_at(f"'{op.name}' op {message}", filename, line, col)


def value_name(value) -> str:
    """An SSA value as the source names it (``%x``), never an object repr."""
    if getattr(value, "name_hint", None):
        return f"%{value.name_hint}"
    owner = getattr(value, "owner", None)
    if hasattr(owner, "name") and hasattr(value, "index"):
        return f"result #{value.index} of '{owner.name}'"
    return f"argument #{getattr(value, 'index', '?')}"


@contextmanager
def quoting(sources: Mapping[str, str]):
    """A PtocError raised inside quotes the lines of ``sources`` (file name -> text)."""
    try:
        yield
    except PtocError as e:
        e.quote(sources)
        raise


def api_boundary(fn):
    """The API's error contract (pto_compiler.api, KernelBuilder): a PtocError quotes the sources
    of the module, program or builder it came from; an xDSL diagnostic becomes a PtocError;
    anything else is an internal error (exit 70, the exception as ``__cause__``)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        sources = sources_of(args[0]) if args else {}
        try:
            return fn(*args, **kwargs)
        except PtocError as e:  # (as :func:`quoting` does, without a generator and a context manager per call)
            e.quote(sources)
            raise
        except Exception as e:  # noqa: BLE001 - the one place that turns every other exception into PtocError
            from xdsl.utils.exceptions import DiagnosticException

            if isinstance(e, DiagnosticException):
                raise PtocError([Diagnostic(str(e).strip().split("\n")[0])]) from e
            first = (str(e).strip().splitlines() or [""])[0]
            raise PtocError([Diagnostic(f"internal error: {type(e).__name__}: {first}")], exit_code=70) from e

    return wrapper


SOURCES_ATTR = "_ptoc_sources"
"""The Python attribute of a ModuleOp holding the texts it was parsed or built from (file name ->
text): the module carries its sources, so errors found later (verifier, passes, executor) quote them."""


def sources_of(obj) -> dict[str, str]:
    return getattr(obj, SOURCES_ATTR, None) or {}


def add_sources(obj, sources: Mapping[str, str]) -> None:
    setattr(obj, SOURCES_ATTR, {**sources_of(obj), **sources})


def quote_from_files(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics located in a file the input only names (``loc("k.pto":3:5)`` in what
    ``ptoc --emit pto --mlir-print-debuginfo`` printed) quote that file's line if it can be read."""
    import os

    texts = {}
    for d in diagnostics:
        if d.located and d.source_line is None and d.filename not in texts and os.path.isfile(d.filename):
            try:
                with open(d.filename, encoding="utf-8") as f:
                    texts[d.filename] = f.read()
            except (OSError, UnicodeDecodeError):
                pass
    return PtocError(list(diagnostics)).quote(texts).diagnostics


_QUOTE_BLANKS = str.maketrans({c: " " for c in "\r\f\v\x1c\x1d\x1e\x85\u2028\u2029"})
"""Characters str.splitlines() would break at but the lexer does not: shown as a space, so the
quoted line and the caret column agree with the lexer's (which counts only \\n)."""


def argument_location(op, name: str, sources: Mapping[str, str]) -> tuple[str, int, int]:
    """Where ``%name:`` is declared in the signature that starts at ``op``'s line (block arguments
    carry no location of their own), found in ``sources`` (file name -> text), else ``op``'s location."""
    filename, line, col = location_of(op)
    lines = sources.get(filename, "").split("\n")
    pattern = re.compile(rf"%{re.escape(name)}\s*:")
    for k in range(max(line - 1, 0), min(line + 19, len(lines))):
        m = pattern.search(lines[k], col - 1 if k == line - 1 else 0)
        if m:
            return (filename, k + 1, m.start() + 1)
    return (filename, line, col)


def format_diagnostic(diag: Diagnostic, source_lines: list[str] | None = None) -> str:
    if not diag.located:
        return f"{diag.filename}: {diag.severity}: {diag.message}" if diag.filename != "<unknown>" \
            else f"{diag.severity}: {diag.message}"
    head = f"{diag.filename}:{diag.line}:{diag.column}: {diag.severity}: {diag.message}"
    if source_lines is not None:
        text = source_lines[diag.line - 1] if diag.line <= len(source_lines) else None
    else:
        text = diag.source_line
    if text is None:
        return head
    text = text.expandtabs(1).translate(_QUOTE_BLANKS)
    return f"{head}\n{text}\n{' ' * max(diag.column - 1, 0)}^"


def did_you_mean(name: str, choices) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices``, or ``""``."""
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
