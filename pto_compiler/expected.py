"""``ptoc-opt --verify-diagnostics``: check produced errors against ``expected-error`` annotations.

mlir-opt's rules: ``// expected-error {{MESSAGE}}`` expects an error on its own line whose
message contains MESSAGE; ``@+N`` / ``@-N`` move the expected line N lines down / up, ``@above`` /
``@below`` one line.  Every annotation must be matched by one produced error and every produced
error by one annotation; each miss is reported at the annotation or the error, as mlir-opt words it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pto_compiler.diagnostics import Diagnostic, PtocError

_ANNOTATION = re.compile(r"expected-(error|warning|note|remark)(?:@(above|below|[+-]\d+))?\s*\{\{(.*?)\}\}")
_OFFSETS = {"above": -1, "below": 1}


@dataclass(frozen=True)
class Expected:
    severity: str
    message: str
    line: int
    """The line the diagnostic is expected on."""
    at: tuple[int, int]
    """(line, column) of the annotation itself."""


def expectations(text: str) -> list[Expected]:
    out = []
    for number, line in enumerate(text.split("\n"), 1):
        comment = line.find("//")
        if comment < 0:
            continue
        for m in _ANNOTATION.finditer(line, comment):
            offset = m.group(2)
            shift = (_OFFSETS[offset] if offset in _OFFSETS else int(offset)) if offset else 0
            out.append(Expected(m.group(1), m.group(3), number + shift, (number, m.start() + 1)))
    return out


def check_expected(text: str, filename: str, produced: list[Diagnostic]) -> list[Diagnostic]:
    """The problems (empty when every annotation and every produced diagnostic match)."""
    left = list(produced)
    problems = []
    for exp in expectations(text):
        hit = next((d for d in left if d.severity == exp.severity and d.filename == filename
                    and d.line == exp.line and exp.message in d.message), None)
        if hit is not None:
            left.remove(hit)
        else:
            problems.append(Diagnostic(f'expected {exp.severity} "{exp.message}" was not produced', filename,
                                       *exp.at))
    for d in left:
        problems.append(Diagnostic(f"unexpected {d.severity}: {d.message}", d.filename, d.line, d.column,
                                   source_line=d.source_line))
    return PtocError(problems).quote({filename: text}).diagnostics if problems else []
