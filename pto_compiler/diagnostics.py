"""MLIR-shaped diagnostics: ``file:line:col: error: message``, the source line and a caret.

Every user-facing failure in ptoc is a :class:`PtocError` carrying one or more
:class:`Diagnostic` records.  The CLI formats them with :func:`format_diagnostic`;
library users get the exception and can format or inspect it themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.utils.exceptions import DiagnosticException


@dataclass(frozen=True)
class Diagnostic:
    message: str
    filename: str = "<unknown>"
    line: int = 0
    column: int = 0
    severity: str = "error"

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


def op_error(op, message: str) -> PtocError:
    """A diagnostic located at ``op``, worded as MLIR does: ``'pto.tadd' op message``."""
    filename, line, col = location_of(op)
    return error_at(f"'{op.name}' op {message}", filename, line, col)


_SOURCES: dict[str, list[str]] = {}


def register_source(filename: str, text: str) -> None:
    """Remember a file's text so later diagnostics can quote its line."""
    _SOURCES[filename] = text.split("\n")


_QUOTE_BLANKS = str.maketrans({c: " " for c in "\r\f\v\x1c\x1d\x1e\x85\u2028\u2029"})
"""Characters str.splitlines() would break at but the lexer does not: shown as a space, so the
quoted line and the caret column agree with the lexer's (which counts only \\n)."""


def format_diagnostic(diag: Diagnostic, source_lines: list[str] | None = None) -> str:
    if not diag.located:
        return f"{diag.filename}: {diag.severity}: {diag.message}" if diag.filename != "<unknown>" \
            else f"{diag.severity}: {diag.message}"
    head = f"{diag.filename}:{diag.line}:{diag.column}: {diag.severity}: {diag.message}"
    lines = source_lines if source_lines is not None else _SOURCES.get(diag.filename)
    if not lines or diag.line > len(lines):
        return head
    text = lines[diag.line - 1].expandtabs(1).translate(_QUOTE_BLANKS)
    return f"{head}\n{text}\n{' ' * max(diag.column - 1, 0)}^"


def did_you_mean(name: str, choices) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices``, or ``""``."""
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
